//! `cargo xtask test`'s `vendor` step: `vendor/smb2` must be the published smb2 0.39.0 with
//! `PLAYSIM.patch` applied and the paths in `REMOVED` gone, and nothing else; then the vendored
//! crate's own unit tests run, on the features playsim builds it with, less those listed in
//! `SKIPPED-TESTS`.
//!
//! The published `.crate` comes through cargo itself (a throwaway package outside this workspace,
//! so without its `[patch.crates-io]`, that depends on `smb2 = "=0.39.0"`), is checked against
//! the SHA-256 crates.io's index gives, and is kept in `~/.cache/playsim/vendor/`: from then on
//! the check runs offline.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};

use crate::process::{self, cargo};

/// The vendored crate's directory, relative to the project root.
const DIR: &str = "vendor/smb2";
const NAME: &str = "smb2";
const VERSION: &str = "0.39.0";
/// The SHA-256 of `smb2-0.39.0.crate`, as crates.io's index gives it.
const CRATE_SHA256: &str = "fdf2efe6ebfe83abf0813ef2de818ed1095cb36a19e7b2f6d44b3226238b202f";
/// playsim's own files in the vendored directory: not part of the published crate, nor of the patch.
const OWN_FILES: &[&str] = &["PLAYSIM.patch", "PLAYSIM-PATCH.md", "REMOVED", "SKIPPED-TESTS"];
/// The features the workspace builds smb2 with (its `smb2` dependency in the root Cargo.toml):
/// the vendored tests run on the same code.
const TEST_FEATURES: &str = "tokio";

/// The `vendor` step: the tree check, then the vendored crate's unit tests, each timed.
pub fn test_step() -> Result<()> {
    let started = Instant::now();
    let n_files = check_tree()?;
    println!(
        "vendor: {DIR} is {NAME} {VERSION} with PLAYSIM.patch, less REMOVED ({n_files} files, {:.1}s)",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let n_skipped = run_tests()?;
    println!(
        "vendor: {NAME}'s unit tests passed, {n_skipped} skipped as SKIPPED-TESTS says ({:.1}s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Rebuilds the vendored tree from the published crate and compares it with `DIR`, file by file;
/// returns the number of files compared.
fn check_tree() -> Result<usize> {
    let vendored = Path::new(DIR);
    let removed = parse_paths(&read(&vendored.join("REMOVED"))?).context("in vendor/smb2/REMOVED")?;
    let crate_file = published_crate()?;

    let work = crate::target_dir()?.join("vendor-check");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("cannot clear {}", work.display()))?;
    }
    fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    process::run(Command::new("tar").arg("-xzf").arg(&crate_file).arg("-C").arg(&work))?;
    let upstream = work.join(format!("{NAME}-{VERSION}"));
    for path in &removed {
        let file = upstream.join(path);
        ensure!(file.is_file(), "{DIR}/REMOVED lists {path}, which the published crate does not have");
        fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
    }
    // `patch -d` enters the directory first, so the patch's own path must not be relative.
    let patch = std::env::current_dir()?.join(vendored).join("PLAYSIM.patch");
    process::run(
        Command::new("patch")
            .args(["-p1", "--batch", "--quiet", "--no-backup-if-mismatch", "--reject-file=-", "-d"])
            .arg(&upstream)
            .arg("-i")
            .arg(&patch),
    )
    .context("PLAYSIM.patch does not apply to the published crate")?;

    let expected = list_files(&upstream, &[])?;
    let actual = list_files(vendored, OWN_FILES)?;
    let differences = differences(&expected, &actual, |path| {
        Ok(read_bytes(&upstream.join(path))? == read_bytes(&vendored.join(path))?)
    })?;
    if !differences.is_empty() {
        let list: Vec<String> = differences.iter().map(|d| format!("  {d}")).collect();
        bail!(
            "{DIR} is not {NAME} {VERSION} with PLAYSIM.patch, less REMOVED ({} paths differ; \
             rebuilt in {}):\n{}",
            differences.len(),
            upstream.display(),
            list.join("\n")
        );
    }
    Ok(expected.len())
}

/// Runs the vendored crate's unit tests in a target directory of their own, and returns how many
/// tests were skipped.
fn run_tests() -> Result<usize> {
    let skipped = parse_skipped(&read(&Path::new(DIR).join("SKIPPED-TESTS"))?)
        .context("in vendor/smb2/SKIPPED-TESTS")?;
    let mut test = cargo();
    // `--locked`: the dependencies are upstream's own Cargo.lock, the set its tests were run with.
    test.args(["test", "--locked", "--manifest-path"])
        .arg(Path::new(DIR).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(crate::target_dir()?.join("vendor-smb2"))
        .args(["--no-default-features", "--features", TEST_FEATURES, "--lib", "--", "--exact"])
        // Line tables only, as the workspace's dependencies get (its `[profile.dev.package."*"]`
        // does not reach this package, a workspace of its own): CI's disk is short.
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    for (name, _reason) in &skipped {
        test.args(["--skip", name]);
    }
    process::run(&mut test)?;
    Ok(skipped.len())
}

/// The published `.crate`, from the cache, else from cargo's own cache, else fetched by cargo.
fn published_crate() -> Result<PathBuf> {
    let cache_dir = cache_dir()?;
    let cached = cache_dir.join(format!("{NAME}-{VERSION}.crate"));
    if cached.is_file() {
        if sha256(&cached)? == CRATE_SHA256 {
            return Ok(cached);
        }
        println!("vendor: {} has the wrong SHA-256; fetching it again", cached.display());
    }
    let fetched = match in_cargo_cache()? {
        Some(file) => file,
        None => {
            fetch_with_cargo()?;
            in_cargo_cache()?.with_context(|| {
                format!("cargo fetched {NAME} {VERSION}, but its .crate is not in cargo's registry cache")
            })?
        }
    };
    let sha = sha256(&fetched)?;
    ensure!(sha == CRATE_SHA256, "{} has SHA-256 {sha}, not crates.io's {CRATE_SHA256}", fetched.display());
    fs::create_dir_all(&cache_dir).with_context(|| format!("cannot create {}", cache_dir.display()))?;
    // Through a temporary name, so that an interrupted copy is never taken for the crate.
    let partial = cached.with_extension("crate.part");
    fs::copy(&fetched, &partial).with_context(|| format!("cannot write {}", partial.display()))?;
    fs::rename(&partial, &cached).with_context(|| format!("cannot write {}", cached.display()))?;
    println!("vendor: cached {}", cached.display());
    Ok(cached)
}

/// `~/.cache/playsim/vendor`.
fn cache_dir() -> Result<PathBuf> {
    let home = std::env::var_os("HOME").context("no $HOME for the cache of published crates")?;
    Ok(PathBuf::from(home).join(".cache/playsim/vendor"))
}

/// The `.crate` in cargo's registry cache (`$CARGO_HOME/registry/cache/<registry>/`), if there.
fn in_cargo_cache() -> Result<Option<PathBuf>> {
    let cargo_home = match std::env::var_os("CARGO_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("no $HOME nor $CARGO_HOME")?).join(".cargo"),
    };
    let registries = cargo_home.join("registry").join("cache");
    let Ok(entries) = fs::read_dir(&registries) else {
        return Ok(None);
    };
    for entry in entries {
        let file = entry?.path().join(format!("{NAME}-{VERSION}.crate"));
        if file.is_file() {
            return Ok(Some(file));
        }
    }
    Ok(None)
}

/// Has cargo download the published crate: `cargo fetch` for a throwaway package that depends
/// on it, in a temporary directory outside this workspace (so no `[patch]` applies).
fn fetch_with_cargo() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("playsim-vendor-fetch-{}", std::process::id()));
    fs::create_dir_all(dir.join("src")).with_context(|| format!("cannot create {}", dir.display()))?;
    let manifest = format!(
        "[package]\nname = \"playsim-vendor-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [dependencies]\n{NAME} = {{ version = \"={VERSION}\", default-features = false }}\n\n\
         [workspace]\n"
    );
    fs::write(dir.join("Cargo.toml"), manifest)?;
    fs::write(dir.join("src").join("lib.rs"), "")?;
    let result = process::run(cargo().arg("fetch").arg("--manifest-path").arg(dir.join("Cargo.toml")));
    // A leftover throwaway package in the temporary directory is harmless: not worth an error.
    let _ = fs::remove_dir_all(&dir);
    result.with_context(|| format!("cannot fetch {NAME} {VERSION} from crates.io"))
}

fn sha256(file: &Path) -> Result<String> {
    let line = process::read(Command::new("sha256sum").arg(file))?;
    Ok(line.split_whitespace().next().unwrap_or_default().to_owned())
}

fn read(file: &Path) -> Result<String> {
    fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))
}

fn read_bytes(file: &Path) -> Result<Vec<u8>> {
    fs::read(file).with_context(|| format!("cannot read {}", file.display()))
}

/// Every file under `root`, as a path relative to it with `/` between components, leaving out
/// the names in `skip` at the top level.
fn list_files(root: &Path, skip: &[&str]) -> Result<BTreeSet<String>> {
    let mut files = BTreeSet::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if prefix.is_empty() && skip.contains(&name.as_str()) {
                continue;
            }
            let relative = format!("{prefix}{name}");
            if entry.file_type()?.is_dir() {
                dirs.push((entry.path(), format!("{relative}/")));
            } else {
                files.insert(relative);
            }
        }
    }
    Ok(files)
}

/// How the vendored tree departs from the rebuilt one at one path.
#[derive(Debug, PartialEq, Eq)]
enum Difference {
    /// In the published crate with the patch applied, not in the vendored tree.
    Missing(String),
    /// In the vendored tree only.
    Extra(String),
    /// In both, with different contents.
    Changed(String),
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Missing(path) => write!(f, "missing from {DIR}: {path}"),
            Difference::Extra(path) => write!(f, "only in {DIR}: {path}"),
            Difference::Changed(path) => write!(f, "differs: {path}"),
        }
    }
}

/// The differences between the `expected` files and the `actual` ones, in path order;
/// `same(path)` compares the contents of a path both have.
fn differences(
    expected: &BTreeSet<String>,
    actual: &BTreeSet<String>,
    mut same: impl FnMut(&str) -> Result<bool>,
) -> Result<Vec<Difference>> {
    let mut found = Vec::new();
    for path in expected.union(actual) {
        let difference = match (expected.contains(path), actual.contains(path)) {
            (true, false) => Difference::Missing(path.clone()),
            (false, true) => Difference::Extra(path.clone()),
            _ if same(path)? => continue,
            _ => Difference::Changed(path.clone()),
        };
        found.push(difference);
    }
    Ok(found)
}

/// The paths of a list file (`REMOVED`): one a line, relative to the crate's root; blank lines
/// and `#` comments left out. A path that could leave the tree is refused.
fn parse_paths(text: &str) -> Result<Vec<String>> {
    let mut paths = Vec::new();
    for (line_idx, line) in list_lines(text) {
        ensure!(
            !line.starts_with('/') && !line.split('/').any(|part| part == ".." || part.is_empty()),
            "line {}: `{line}` is not a plain path inside the crate",
            line_idx + 1
        );
        paths.push(line.to_owned());
    }
    Ok(paths)
}

/// The tests of `SKIPPED-TESTS`: a test's full path, then why it is skipped, one a line; blank
/// lines and `#` comments left out.
fn parse_skipped(text: &str) -> Result<Vec<(String, String)>> {
    let mut skipped = Vec::new();
    for (line_idx, line) in list_lines(text) {
        let (name, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let reason = reason.trim();
        ensure!(!reason.is_empty(), "line {}: `{name}` is skipped without a reason", line_idx + 1);
        skipped.push((name.to_owned(), reason.to_owned()));
    }
    Ok(skipped)
}

/// The meaningful lines of a list file, trimmed, with their indices.
fn list_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().map(str::trim).enumerate().filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn differences_names_missing_extra_and_changed_paths_in_order() {
        let expected = set(&["Cargo.toml", "src/a.rs", "src/b.rs", "src/c.rs"]);
        let actual = set(&["Cargo.toml", "src/b.rs", "src/c.rs", "target/x"]);
        let found = differences(&expected, &actual, |path| Ok(path != "src/c.rs")).unwrap();
        assert_eq!(
            found,
            vec![
                Difference::Missing("src/a.rs".into()),
                Difference::Changed("src/c.rs".into()),
                Difference::Extra("target/x".into()),
            ]
        );
        assert_eq!(found[0].to_string(), "missing from vendor/smb2: src/a.rs");
    }

    #[test]
    fn differences_compares_only_paths_both_trees_have() {
        let mut compared = Vec::new();
        let found = differences(&set(&["a", "b"]), &set(&["b", "c"]), |path| {
            compared.push(path.to_owned());
            Ok(true)
        })
        .unwrap();
        assert_eq!(compared, ["b"]);
        assert_eq!(found, [Difference::Missing("a".into()), Difference::Extra("c".into())]);
    }

    #[test]
    fn identical_trees_have_no_differences() {
        let files = set(&["Cargo.toml", "src/lib.rs"]);
        assert_eq!(differences(&files, &files, |_| Ok(true)).unwrap(), []);
    }

    #[test]
    fn a_failed_comparison_is_an_error() {
        let files = set(&["src/lib.rs"]);
        assert!(differences(&files, &files, |_| bail!("unreadable")).is_err());
    }

    #[test]
    fn list_files_skips_own_files_at_the_top_only() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("src/REMOVED")).unwrap();
        for file in ["REMOVED", "Cargo.toml", "src/lib.rs", "src/REMOVED/x.rs"] {
            fs::write(tmp.path().join(file), "").unwrap();
        }
        let files = list_files(tmp.path(), OWN_FILES).unwrap();
        assert_eq!(files, set(&["Cargo.toml", "src/REMOVED/x.rs", "src/lib.rs"]));
    }

    #[test]
    fn parse_paths_leaves_out_comments_and_blank_lines() {
        let text = "# why\n\nsrc/a/CLAUDE.md\n  src/b.rs  \n";
        assert_eq!(parse_paths(text).unwrap(), ["src/a/CLAUDE.md", "src/b.rs"]);
    }

    #[test]
    fn parse_paths_refuses_paths_leaving_the_tree() {
        for bad in ["/etc/passwd", "../Cargo.toml", "src/../../x", "src//a"] {
            let err = parse_paths(bad).unwrap_err();
            assert!(err.to_string().contains("line 1"), "{bad}: {err}");
        }
    }

    #[test]
    fn parse_skipped_splits_name_and_reason() {
        let text = "# name reason\ntransport::tests::a   needs a NAS on the author's network\n";
        assert_eq!(
            parse_skipped(text).unwrap(),
            [("transport::tests::a".to_owned(), "needs a NAS on the author's network".to_owned())]
        );
    }

    #[test]
    fn parse_skipped_wants_a_reason() {
        let err = parse_skipped("\nclient::tests::b\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: `client::tests::b` is skipped without a reason");
    }
}
