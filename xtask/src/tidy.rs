//! Tidy tests: the invariants of ARCHITECTURE.md that a test can check, run by `cargo test`.
//!
//! Each test reads the repository as text (no parser, no build) and fails with every offending
//! file and line and what to do about it. Where today's code does not hold an invariant yet, the
//! test is a ratchet: an allowlist of today's offenders, each of which must go, that fails on a
//! new offender and also when an offender is fixed (so that the list is lowered with the fix).
//! Module cycles inside a crate are checked by `module_graph.rs`.
#![cfg(test)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

// Dependency direction.

/// Every playsim crate, bottom first, with the playsim crates it may depend on: first as a
/// normal (or build) dependency, then as a dev-dependency. Each names only crates above it in
/// this table, so the table is a layering; it is today's edges exactly, so that a new edge has to
/// be argued here (and in ARCHITECTURE.md) rather than slip in.
const DEPENDENCY_LAYERS: &[(&str, &[&str], &[&str])] = &[
    // Types and traits; no I/O, no runtime.
    ("playsim-core", &[], &[]),
    // Above core: the report models, the transports, the codecs.
    ("playsim-report", &["playsim-core"], &[]),
    ("playsim-storage", &["playsim-core"], &[]),
    ("playsim-rdma", &["playsim-core", "playsim-storage"], &[]),
    ("playsim-dpx", &["playsim-core"], &[]),
    ("playsim-exr", &["playsim-core"], &[]),
    ("playsim-tiff", &["playsim-core"], &[]),
    ("playsim-ffmpeg", &["playsim-core"], &["playsim-storage"]),
    // The one format registry, above storage and the codecs.
    (
        "playsim-media",
        &["playsim-core", "playsim-dpx", "playsim-exr", "playsim-ffmpeg", "playsim-storage", "playsim-tiff"],
        &[],
    ),
    // The pipeline: core and the report models only; its tests play real storage and video.
    ("playsim-engine", &["playsim-core", "playsim-report"], &["playsim-ffmpeg", "playsim-storage"]),
    (
        "playsim-settings",
        &["playsim-core", "playsim-engine", "playsim-exr", "playsim-media", "playsim-storage"],
        &[],
    ),
    // playsim-cluster depends on the engine only for its start barrier (`StartBarrier`).
    ("playsim-cluster", &["playsim-core", "playsim-engine"], &[]),
    // What playsim does with storage: play, capacity, matrix, record, frametest, the scenario
    // runner, and the registration of the transports.
    (
        "playsim-ops",
        &[
            "playsim-cluster",
            "playsim-core",
            "playsim-dpx",
            "playsim-engine",
            "playsim-exr",
            "playsim-ffmpeg",
            "playsim-media",
            "playsim-rdma",
            "playsim-report",
            "playsim-settings",
            "playsim-storage",
            "playsim-tiff",
        ],
        &[],
    ),
    ("playsim-dashboard", &["playsim-core"], &[]),
    ("playsim-testserver", &[], &[]),
    // The command line's arguments: each subcommand's clap struct and its flags' parsers.
    (
        "playsim-args",
        &[
            "playsim-core",
            "playsim-engine",
            "playsim-exr",
            "playsim-media",
            "playsim-ops",
            "playsim-report",
            "playsim-settings",
            "playsim-storage",
        ],
        &[],
    ),
    // The facade and the CLI, at the top.
    (
        "playsim",
        &[
            "playsim-args",
            "playsim-cluster",
            "playsim-core",
            "playsim-dashboard",
            "playsim-dpx",
            "playsim-engine",
            "playsim-exr",
            "playsim-ffmpeg",
            "playsim-media",
            "playsim-ops",
            "playsim-rdma",
            "playsim-report",
            "playsim-settings",
            "playsim-storage",
            "playsim-tiff",
        ],
        &["playsim-testserver"],
    ),
    // The fuzz targets, above the facade: `transport_reply` reaches the transports through its registry.
    (
        "playsim-fuzz",
        &[
            "playsim",
            "playsim-core",
            "playsim-dpx",
            "playsim-exr",
            "playsim-ffmpeg",
            "playsim-media",
            "playsim-report",
            "playsim-settings",
            "playsim-storage",
            "playsim-tiff",
        ],
        &[],
    ),
    ("xtask", &["playsim-core", "playsim-report", "playsim-testserver"], &[]),
];

#[test]
fn dependencies_point_down_the_layers() {
    let mut errors = Vec::new();
    for (idx, (krate, deps, dev)) in DEPENDENCY_LAYERS.iter().enumerate() {
        let below: Vec<&str> = DEPENDENCY_LAYERS[..idx].iter().map(|(name, ..)| *name).collect();
        for dep in deps.iter().chain(dev.iter()).filter(|dep| !below.contains(dep)) {
            errors.push(format!(
                "xtask/src/tidy.rs: DEPENDENCY_LAYERS lets {krate} depend on {dep}, which is not below it \
                 in the table: reorder the table or drop the edge"
            ));
        }
    }

    let mut manifests: Vec<PathBuf> = vec!["Cargo.toml".into(), "xtask/Cargo.toml".into()];
    for dir in sorted_entries(&root().join("crates")) {
        if dir.file_name().is_some_and(|name| name != "smb2") && dir.join("Cargo.toml").is_file() {
            manifests.push(relative(&dir.join("Cargo.toml")).into());
        }
    }
    let mut found: BTreeMap<String, Vec<Dependency>> = BTreeMap::new();
    for manifest in &manifests {
        let text = read(&root().join(manifest));
        let (krate, deps) = playsim_dependencies(&text);
        let krate = krate.unwrap_or_else(|| panic!("{}: no [package] name", manifest.display()));
        let Some((_, allowed, allowed_dev)) = DEPENDENCY_LAYERS.iter().find(|(name, ..)| *name == krate)
        else {
            errors.push(format!(
                "{}: {krate} is not in xtask/src/tidy.rs's DEPENDENCY_LAYERS: add it at its layer",
                manifest.display()
            ));
            continue;
        };
        for dep in &deps {
            let allowed = if dep.dev { allowed_dev } else { allowed };
            if !allowed.contains(&dep.name.as_str()) {
                errors.push(format!(
                    "{}:{}: {krate} depends on {}{}, which DEPENDENCY_LAYERS in xtask/src/tidy.rs does not \
                     allow: move the code it needs below {krate}, or if the layering really changes, change \
                     the table and ARCHITECTURE.md",
                    manifest.display(),
                    dep.line,
                    dep.name,
                    if dep.dev { " (dev)" } else { "" },
                ));
            }
        }
        found.insert(krate, deps);
    }
    // The table is today's edges exactly: one that went away is taken out of it too.
    for (krate, deps, dev) in DEPENDENCY_LAYERS {
        let Some(found) = found.get(*krate) else {
            errors
                .push(format!("xtask/src/tidy.rs: DEPENDENCY_LAYERS names {krate}, which has no Cargo.toml"));
            continue;
        };
        for (names, is_dev) in [(deps, false), (dev, true)] {
            for dep in names.iter().filter(|dep| !found.iter().any(|d| d.name == **dep && d.dev == is_dev)) {
                errors.push(format!(
                    "xtask/src/tidy.rs: DEPENDENCY_LAYERS lets {krate} depend on {dep}{}, which it no longer \
                     does: remove it from the table",
                    if is_dev { " (dev)" } else { "" },
                ));
            }
        }
    }
    assert_tidy("dependency direction", errors);
}

struct Dependency {
    name: String,
    dev: bool,
    line: usize,
}

/// The package's name and its `playsim*` dependencies, from a Cargo.toml's text: the keys of its
/// `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]` and `[target.*.…]` tables, or
/// the name of a `[dependencies.NAME]` table (not `[workspace.dependencies]`).
fn playsim_dependencies(manifest: &str) -> (Option<String>, Vec<Dependency>) {
    let (mut package, mut deps) = (None, Vec::new());
    let mut table = "";
    for (line_idx, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            table = header.trim();
            if let Some((kind, name)) = table.split_once("dependencies.") {
                if kind != "workspace." && name.starts_with("playsim") {
                    deps.push(Dependency {
                        name: name.to_owned(),
                        dev: kind.ends_with("dev-"),
                        line: line_idx + 1,
                    });
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim().trim_matches('"');
        if table == "package" && key == "name" && package.is_none() {
            package = Some(value.trim().trim_matches('"').to_owned());
        }
        let is_deps_table = table.ends_with("dependencies") && table != "workspace.dependencies";
        let name = key.split('.').next().unwrap_or(key);
        if is_deps_table && name.starts_with("playsim") {
            deps.push(Dependency {
                name: name.to_owned(),
                dev: table.ends_with("dev-dependencies"),
                line: line_idx + 1,
            });
        }
    }
    (package, deps)
}

// No I/O in core.

/// What playsim-core's code may not name: files, sockets, processes, threads, a runtime, the
/// environment, the C library.
const CORE_IO: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::os::",
    "std::thread",
    "tokio",
    "File::",
    "TcpStream",
    "UdpSocket",
    "Command::",
    "libc::",
];

/// The one exception: `malloc::keep_scratch_in_heap` sets glibc's allocator thresholds with two
/// `mallopt` calls (ARCHITECTURE.md, playsim-core), which read and write nothing.
const CORE_IO_ALLOWED: &[(&str, &str)] = &[("crates/playsim-core/src/malloc.rs", "libc::")];

#[test]
fn core_does_no_io() {
    let mut errors = Vec::new();
    for source in production_sources(&["playsim-core"], &[]) {
        for (line_idx, line) in source.code.lines().enumerate() {
            for pattern in CORE_IO.iter().filter(|p| line.contains(**p)) {
                if !CORE_IO_ALLOWED.contains(&(source.path.as_str(), *pattern)) {
                    errors.push(format!(
                        "{}:{}: playsim-core names `{pattern}`; core is types and traits with no I/O and no \
                         runtime: do the I/O in the crate that owns it (storage, engine, the CLI)",
                        source.path,
                        line_idx + 1
                    ));
                }
            }
        }
    }
    assert_tidy("no I/O in core", errors);
}

// Unsafe code.

/// The files that may hold `unsafe`: where Rust meets the C library or the kernel. Each
/// `unsafe` block and `unsafe impl` in them has a `// SAFETY:` comment on the lines before it.
const UNSAFE_FILES: &[&str] = &[
    // Two `mallopt` calls.
    "crates/playsim-core/src/malloc.rs",
    // The presentation thread's `sched_setscheduler`.
    "crates/playsim-engine/src/priority.rs",
    // The OpenEXR shim.
    "crates/playsim-exr/src/openexr.rs",
    // What ffmpeg-the-third does not wrap.
    "crates/playsim-ffmpeg/src/ffi.rs",
    // Registering memory for RDMA (the promise `ProtectionDomain::register` asks).
    "crates/playsim-rdma/src/registry.rs",
    // The verbs and RDMA CM FFI.
    "crates/playsim-rdma/src/verbs.rs",
    // io_uring submissions and the registered-buffer table.
    "crates/playsim-storage/src/uring/sys.rs",
];

#[test]
fn unsafe_only_in_listed_files_each_with_a_safety_comment() {
    let mut errors = Vec::new();
    let mut seen = Vec::new();
    for source in all_sources() {
        let lines: Vec<&str> = source.text.lines().collect();
        for (line_idx, line) in source.skeleton.lines().enumerate() {
            let Some(after) = after_word(line, "unsafe") else { continue };
            if !UNSAFE_FILES.contains(&source.path.as_str()) {
                errors.push(format!(
                    "{}:{}: `unsafe` outside the files listed in xtask/src/tidy.rs's UNSAFE_FILES: find a safe \
                     way, or move it into a small module of its own that the crate allows `unsafe_code` in, \
                     and list it (and in ARCHITECTURE.md's invariants)",
                    source.path,
                    line_idx + 1
                ));
            }
            seen.push(source.path.clone());
            let after = after.trim_start();
            if (after.starts_with('{') || after.starts_with("impl")) && !has_safety_comment(&lines, line_idx)
            {
                errors.push(format!(
                    "{}:{}: an `unsafe` block or impl without a `// SAFETY:` comment: say on the line(s) \
                     before it why it is sound",
                    source.path,
                    line_idx + 1
                ));
            }
        }
    }
    for file in UNSAFE_FILES.iter().filter(|file| !seen.iter().any(|seen| seen == *file)) {
        errors.push(format!(
            "{file}: has no `unsafe` any more: take it out of UNSAFE_FILES in xtask/src/tidy.rs"
        ));
    }

    // Every library says so itself: `forbid`, or `deny` with an `allow` on the listed modules.
    let mut libs = vec![root().join("src/lib.rs")];
    for dir in sorted_entries(&root().join("crates")) {
        if dir.file_name().is_some_and(|name| name != "smb2") && dir.join("src/lib.rs").is_file() {
            libs.push(dir.join("src/lib.rs"));
        }
    }
    for lib in libs {
        let text = read(&lib);
        if !text.contains("#![forbid(unsafe_code)]") && !text.contains("#![deny(unsafe_code)]") {
            errors.push(format!(
                "{}: neither `#![forbid(unsafe_code)]` nor `#![deny(unsafe_code)]`: add `#![forbid(unsafe_code)]`",
                relative(&lib)
            ));
        }
    }
    assert_tidy("unsafe code", errors);
}

/// Whether the `unsafe` on line `line_idx` has a comment naming SAFETY on its line or in the
/// comments and attributes just above it (above the statement's first line when `unsafe` starts a
/// line that continues it, as in `let raw =\n    unsafe { … }`).
fn has_safety_comment(lines: &[&str], line_idx: usize) -> bool {
    if lines[line_idx].contains("SAFETY") {
        return true;
    }
    let mut continues = lines[line_idx].trim_start().starts_with("unsafe");
    for line in lines[..line_idx].iter().rev().map(|line| line.trim()) {
        if line.starts_with("//") {
            if line.contains("SAFETY") {
                return true;
            }
        } else if !line.starts_with("#[") {
            if !(continues && (line.ends_with('=') || line.ends_with('('))) {
                return false;
            }
            continues = false;
        }
    }
    false
}

// The clock.

/// Reading the clock: only the engine does, through the injected `Clock` (ARCHITECTURE.md).
const CLOCK_READS: &[&str] = &["Instant::now", "SystemTime::now", "PreciseClock::new"];

/// Today's clock reads outside the engine, tests, benches, examples, xtask, testserver and
/// playsim-fuzz: (file, lines). Each must go, or be argued as a named exception in
/// ARCHITECTURE.md: the clock is the engine's, made once and handed down. Lower a count when you
/// remove one; never raise it.
const CLOCK_READS_ALLOWED: &[(&str, usize)] = &[
    // The live view's repaint timer and its lock's wait: they time the terminal, not a frame.
    ("crates/playsim-dashboard/src/dashboard.rs", 7),
    ("crates/playsim-dashboard/src/tty.rs", 2),
    // ARCHITECTURE.md's named exceptions: the NFS client's bounded waits on tokio's timer and its
    // first XID from the wall clock (over RDMA too: the connect time-out and the XID).
    ("crates/playsim-rdma/src/connection.rs", 3),
    ("crates/playsim-storage/src/nfs/client.rs", 2),
    ("crates/playsim-storage/src/nfs/rpc.rs", 1),
];

#[test]
fn no_clock_outside_the_engine() {
    let found = count_lines(
        &production_sources(&[], &["playsim-engine", "playsim-testserver", "playsim-fuzz"]),
        CLOCK_READS,
    );
    let errors = ratchet(
        "CLOCK_READS_ALLOWED",
        CLOCK_READS_ALLOWED,
        &found,
        "reads the clock outside the engine: take the time from the engine's `Clock` (or the report) instead",
    );
    assert_tidy("no clock outside the engine", errors);
}

// The size of src/.

/// Lines of `src/**/*.rs` that are neither blank nor `//` comments (what
/// `cat src/**/*.rs | grep -v '^\s*$' | grep -v '^\s*//' | wc -l` counts). `src/` is wiring and
/// the CLI only (the commands' arguments are `playsim-args`, what they do `playsim-ops`): at
/// most 2,500 lines.
const SRC_LINES_CEILING: usize = 2500;

#[test]
fn src_stays_small() {
    let n_lines: usize = rust_files(&root().join("src"))
        .iter()
        .map(|path| {
            read(path)
                .lines()
                .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with("//"))
                .count()
        })
        .sum();
    assert!(
        n_lines <= SRC_LINES_CEILING,
        "src/ has {n_lines} lines of code, more than SRC_LINES_CEILING ({SRC_LINES_CEILING}) in xtask/src/tidy.rs: \
         src/ is wiring and the CLI; put the logic in the crate it belongs to"
    );
}

// A transport's names.

/// A transport's option and URL types, which belong in its own module; its type, schemes and
/// knob group are found in the code (`declared_transport_names`).
const TRANSPORT_NAMES: &[&str] = &[
    "nfs://",
    "smb://",
    "nfs+rdma://",
    "sim://",
    "NfsOptions",
    "SmbOptions",
    "SimOptions",
    "NfsKnobs",
    "SmbKnobs",
    "NFS_KNOBS",
    "SMB_KNOBS",
    "NfsTransport",
    "SmbTransport",
    "NfsRdmaTransport",
    "SimTransport",
    "NfsUrl",
    "SmbUrl",
    "SimUrl",
];

/// The transports' own modules, where their names belong.
const TRANSPORT_MODULES: &[&str] = &[
    "crates/playsim-storage/src/nfs/",
    "crates/playsim-storage/src/smb/",
    "crates/playsim-storage/src/transport/nfs.rs",
    "crates/playsim-storage/src/transport/smb.rs",
    "crates/playsim-rdma/",
    "crates/playsim-storage/src/sim/",
    "crates/playsim-media/src/sim_transport.rs",
    "crates/playsim-media/src/sim.rs",
];

/// The lines naming a transport outside its module (not counting comments and tests):
/// (file, lines). Only a crate root's re-exports and the registration may stay; the rest must
/// go behind the transport registry. Lower a count when you remove one; never raise it.
const TRANSPORT_NAMES_ALLOWED: &[(&str, usize)] = &[
    // A crate's root re-exporting its transport modules' items: the modules' own lines.
    ("crates/playsim-media/src/lib.rs", 2),
    ("crates/playsim-storage/src/transport/mod.rs", 2),
    // The registration: `register_enabled_transports`, a line (or a cfg pair) a transport.
    ("crates/playsim-ops/src/location.rs", 8),
];

/// The names every `impl Transport for T` declares, found in the code rather than listed: the
/// type `T`, each scheme of its `fn schemes` (`"nfs"` gives `nfs://`) and the knob group its
/// `fn knobs` returns (`Some(&NFS_KNOBS)`); with the files those impls are in, which are the
/// transports' own.
fn declared_transport_names(sources: &[Source]) -> (Vec<String>, Vec<String>) {
    let (mut names, mut homes) = (Vec::new(), Vec::new());
    for source in sources {
        for (at, _) in source.code.match_indices("Transport for ") {
            let rest = &source.code[at + "Transport for ".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.is_empty() || !source.code[..at].trim_end().ends_with("impl") {
                continue;
            }
            names.push(name);
            homes.push(source.path.clone());
            // `schemes`' body, as written (its literals are blanked in `code`).
            if let Some(body) = source.text.split("fn schemes").nth(1).and_then(|b| b.split('}').next()) {
                names.extend(body.split('"').skip(1).step_by(2).map(|scheme| format!("{scheme}://")));
            }
            if let Some(body) = source.code.split("fn knobs").nth(1).and_then(|b| b.split('}').next()) {
                if let Some(group) = body.split("Some(&").nth(1) {
                    let group: String =
                        group.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    names.push(group);
                }
            }
        }
    }
    names.sort();
    names.dedup();
    (names, homes)
}

#[test]
fn transport_names_stay_in_their_module() {
    let all = production_sources(&[], &["playsim-testserver", "playsim-fuzz"]);
    let (declared, homes) = declared_transport_names(&all);
    for expected in ["NfsTransport", "nfs://", "nfs+rdma://", "smb://", "sim://", "NFS_KNOBS", "SMB_KNOBS"] {
        assert!(declared.iter().any(|n| n == expected), "{expected} was not found among {declared:?}");
    }
    let sources: Vec<Source> = all
        .into_iter()
        .filter(|source| !TRANSPORT_MODULES.iter().any(|module| source.path.starts_with(module)))
        .filter(|source| !homes.contains(&source.path))
        .collect();
    let mut names: Vec<&str> = TRANSPORT_NAMES.to_vec();
    // Plain paths' transport has no scheme and no name of its own to keep in.
    names.extend(declared.iter().map(String::as_str).filter(|n| *n != "LocalTransport"));
    let found = count_lines(&sources, &names);
    let errors = ratchet(
        "TRANSPORT_NAMES_ALLOWED",
        TRANSPORT_NAMES_ALLOWED,
        &found,
        "names a transport outside its module: ask the transport registry (playsim_storage::transport) instead",
    );
    assert_tidy("a transport's names stay in its module", errors);
}

#[test]
fn our_crates_are_ours_and_third_party_code_is_under_vendor() {
    let mut errors = Vec::new();
    for dir in sorted_entries(&root().join("crates")) {
        let name = dir.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
        if dir.is_dir() && !name.starts_with("playsim-") {
            errors.push(format!(
                "crates/{name}: crates/ holds playsim's own crates (playsim-*); third-party code we patch \
                 goes in vendor/, checked against its published release by `cargo xtask vendor`"
            ));
        }
    }
    assert_tidy("third-party code is under vendor/", errors);
}

// Helpers.

/// A Rust file as these checks see it, each view with the same lines as the file: `text` as
/// written, `code` with comments blanked, `skeleton` with string and char literals blanked too.
struct Source {
    /// Relative to the repository root, with `/`.
    path: String,
    text: String,
    code: String,
    skeleton: String,
}

impl Source {
    fn read(path: &Path) -> Source {
        let text = read(path);
        let (code, skeleton) = blank_comments_and_literals(&text);
        Source { path: relative(path), text, code, skeleton }
    }

    /// The same file with every `#[cfg(test)]` item blanked from `code` and `skeleton`.
    fn without_tests(mut self) -> Source {
        let ranges = cfg_test_items(&self.skeleton);
        for view in [&mut self.code, &mut self.skeleton] {
            let mut bytes = std::mem::take(view).into_bytes();
            for range in &ranges {
                blank(&mut bytes[range.clone()]);
            }
            *view = String::from_utf8(bytes).expect("whole characters blanked");
        }
        self
    }
}

/// Every Rust file of the repository but third-party code (`crates/smb2`, `vendor/`) and builds.
fn all_sources() -> Vec<Source> {
    rust_files(root()).iter().map(|path| Source::read(path)).collect()
}

/// The library and binary code of `src/` and `crates/*/src/` (only `crates` when given, less
/// `skip`), without tests: no `#[cfg(test)]` item, and no file that only tests use (`tests.rs`,
/// `*_tests.rs`, `testutil.rs`).
fn production_sources(crates: &[&str], skip: &[&str]) -> Vec<Source> {
    let mut dirs = Vec::new();
    if crates.is_empty() {
        dirs.push(root().join("src"));
    }
    for dir in sorted_entries(&root().join("crates")) {
        let name = dir.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
        let wanted = crates.is_empty() || crates.contains(&name.as_str());
        if wanted && name != "smb2" && !skip.contains(&name.as_str()) {
            dirs.push(dir.join("src"));
        }
    }
    dirs.iter()
        .flat_map(|dir| rust_files(dir))
        .filter(|path| {
            let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default();
            stem != "tests" && stem != "testutil" && !stem.ends_with("_tests")
        })
        .map(|path| Source::read(&path).without_tests())
        .collect()
}

/// The `.rs` files under `dir`, sorted, leaving out builds, hidden directories and third-party
/// code.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in sorted_entries(dir) {
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        let rel = relative(&path);
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && rel != "vendor" && rel != "crates/smb2" {
                files.extend(rust_files(&path));
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
    files
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries.map(|entry| entry.expect("a directory entry").path()).collect();
    paths.sort();
    paths
}

/// For each file, the lines (1-based) of its code (comments left out) that contain any of `patterns`.
fn count_lines(sources: &[Source], patterns: &[&str]) -> BTreeMap<String, Vec<usize>> {
    let mut found = BTreeMap::new();
    for source in sources {
        let lines: Vec<usize> = (source.code.lines().enumerate())
            .filter(|(_, line)| patterns.iter().any(|pattern| line.contains(pattern)))
            .map(|(line_idx, _)| line_idx + 1)
            .collect();
        if !lines.is_empty() {
            found.insert(source.path.clone(), lines);
        }
    }
    found
}

/// Checks `found` against an allowlist of (file, lines) named `list`: a file not in the list or
/// with more lines fails, and so does one with fewer (the list is lowered with the fix).
fn ratchet(
    list: &str,
    allowed: &[(&str, usize)],
    found: &BTreeMap<String, Vec<usize>>,
    what: &str,
) -> Vec<String> {
    let mut errors = Vec::new();
    for (path, lines) in found {
        let n_allowed = allowed.iter().find(|(file, _)| file == path).map_or(0, |(_, n)| *n);
        if lines.len() > n_allowed {
            let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
            errors.push(format!(
                "{path}:{}: {what} ({} lines where {list} in xtask/src/tidy.rs allows {n_allowed})",
                lines.join(","),
                lines.len()
            ));
        }
    }
    for (path, n_allowed) in allowed {
        let n_found = found.get(*path).map_or(0, Vec::len);
        if n_found < *n_allowed {
            errors.push(format!(
                "{path}: {n_found} lines where {list} allows {n_allowed}: good, lower its count in \
                 xtask/src/tidy.rs to {n_found}{}",
                if n_found == 0 { " (remove the entry)" } else { "" }
            ));
        }
    }
    errors
}

fn assert_tidy(invariant: &str, errors: Vec<String>) {
    assert!(errors.is_empty(), "{invariant} (ARCHITECTURE.md, Invariants):\n{}", errors.join("\n"));
}

/// The text after the first `word` in `line` that stands alone (not part of a longer name).
fn after_word<'a>(line: &'a str, word: &str) -> Option<&'a str> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).find_map(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = &line[at + word.len()..];
        (!before.is_some_and(is_ident) && !after.chars().next().is_some_and(is_ident)).then_some(after)
    })
}

/// `text` with comments blanked, and with comments and string and char literals blanked; both
/// keep every newline and every other byte's offset.
fn blank_comments_and_literals(text: &str) -> (String, String) {
    let bytes = text.as_bytes();
    let (mut code, mut skeleton) = (bytes.to_vec(), bytes.to_vec());
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        let rest = &bytes[at..];
        if rest.starts_with(b"//") {
            at += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            blank(&mut code[start..at]);
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while at < bytes.len() {
                if bytes[at..].starts_with(b"/*") {
                    (depth, at) = (depth + 1, at + 2);
                } else if bytes[at..].starts_with(b"*/") {
                    (depth, at) = (depth - 1, at + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    at += 1;
                }
            }
            blank(&mut code[start..at]);
        } else if rest[0] == b'r'
            && (at == 0
                || !is_ident(bytes[at - 1])
                || (bytes[at - 1] == b'b' && (at < 2 || !is_ident(bytes[at - 2]))))
            && rest[1..].iter().find(|&&b| b != b'#') == Some(&b'"')
        {
            // A raw string: r"…", r#"…"#, br"…".
            let hashes = rest[1..].iter().take_while(|&&b| b == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            at += 2 + hashes;
            at += bytes[at..].windows(close.len()).position(|w| w == close).unwrap_or(bytes.len() - at)
                + close.len();
            at = at.min(bytes.len());
        } else if rest[0] == b'"' {
            at += 1;
            while at < bytes.len() && bytes[at] != b'"' {
                at += if bytes[at] == b'\\' { 2 } else { 1 };
            }
            at = (at + 1).min(bytes.len());
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\''), or else a lifetime or label ('a).
            let char_len = text[at + 1..].chars().next().map_or(0, char::len_utf8);
            if rest.get(1) == Some(&b'\\') {
                at += 3;
                while at < bytes.len() && bytes[at] != b'\'' {
                    at += 1;
                }
                at = (at + 1).min(bytes.len());
            } else if rest.get(1 + char_len) == Some(&b'\'') {
                at += 2 + char_len;
            } else {
                at += 1;
                continue;
            }
        } else {
            at += 1;
            continue;
        }
        blank(&mut skeleton[start..at]);
    }
    let to_string = |bytes: Vec<u8>| String::from_utf8(bytes).expect("whole characters blanked");
    (to_string(code), to_string(skeleton))
}

/// The byte ranges of the items marked `#[cfg(test)]` (or `#[cfg(all(test, …))]`) in a
/// skeleton: from the attribute to the item's `;` or closing brace.
fn cfg_test_items(skeleton: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = skeleton.as_bytes();
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(found) = ["#[cfg(test)]", "#[cfg(all(test,"]
        .iter()
        .filter_map(|attr| skeleton[from..].find(attr).map(|at| from + at))
        .min()
    {
        let attr_end = found + skeleton[found..].find(']').expect("an attribute's end") + 1;
        let mut depth = 0;
        let mut end = bytes.len();
        for (at, &b) in bytes.iter().enumerate().skip(attr_end) {
            match b {
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' => depth -= 1,
                // The end of the item, or (a field's, a variant's) of what holds it.
                b'}' if depth == 0 => {
                    end = at;
                    break;
                }
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + 1;
                        break;
                    }
                }
                b';' | b',' if depth == 0 => {
                    end = at + 1;
                    break;
                }
                _ => {}
            }
        }
        ranges.push(found..end);
        from = end;
    }
    ranges
}

/// Replaces every byte but newlines with a space.
fn blank(bytes: &mut [u8]) {
    for b in bytes.iter_mut().filter(|b| **b != b'\n') {
        *b = b' ';
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask is one level below the root")
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The helpers above on the cases that tripped them or could: these tests are only as good as
/// their reading of the code.
#[test]
fn the_checks_read_code_as_code() {
    let text = "let a = \"// not a comment\"; // unsafe { in a comment }\n\
                let b = r#\"unsafe { \"in\" a raw string }\"#; let c = '\"'; fn f<'a>(x: &'a u8) {}\n\
                /* unsafe {\n} */ let d = b'\\'';\n";
    let (code, skeleton) = blank_comments_and_literals(text);
    assert_eq!(code.lines().count(), text.lines().count());
    assert!(code.contains("\"// not a comment\"") && !code.contains("in a comment"));
    assert!(after_word(&skeleton, "unsafe").is_none(), "{skeleton}");
    assert!(skeleton.contains("fn f<'a>(x: &'a u8) {}") && skeleton.contains("let d ="), "{skeleton}");

    let text =
        "fn kept() {}\n#[cfg(test)]\n#[cfg(target_os = \"linux\")]\nmod tests {\n    fn gone() {}\n}\n\
                struct S {\n    #[cfg(test)]\n    gone: u8,\n    kept: u8,\n}\n#[cfg(test)]\nuse gone;\n";
    let source = Source { path: String::new(), text: text.into(), code: text.into(), skeleton: text.into() };
    let code = source.without_tests().code;
    assert!(code.contains("fn kept") && code.contains("kept: u8,\n}") && !code.contains("gone"), "{code}");

    let lines = [
        "    // SAFETY: the PD is alive.",
        "    let raw =",
        "        unsafe { f() };",
        "    unsafe { g() };",
    ];
    assert!(has_safety_comment(&lines, 2));
    assert!(!has_safety_comment(&lines, 3));
    let lines = ["// SAFETY: sound.", "#[allow(unsafe_code)]", "unsafe impl Send for X {}"];
    assert!(has_safety_comment(&lines, 2));
}
