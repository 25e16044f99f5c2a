//! playsim's developer tasks, run as `cargo xtask <cmd>` (the alias is in `.cargo/config.toml`).
//!
//! Every task works from the repository root, prints each command it runs as `$ cmd args`, and needs
//! nothing but Rust on a Debian-like machine: `deps` installs the rest.

mod bench;
mod bench_engine;
mod bench_fidelity;
mod bench_io;
mod bench_mpi;
mod bench_nfs;
mod bench_pipeline;
mod bench_record;
mod bench_smb;
mod bench_unpack;
mod deps;
mod fixtures;
mod fuzz;
mod module_graph;
mod process;
mod progress;
mod reliability;
mod tidy;
mod vendor;
mod vm;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::process::cargo;

#[derive(Parser)]
#[command(name = "xtask", bin_name = "cargo xtask", about = "playsim's developer tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install the Debian packages the project needs (does nothing when all are present).
    Deps,
    /// deps, then `cargo fmt --check`, clippy with `-D warnings`, every test in the workspace, the
    /// vendored smb2 checked against the published crate and its patch (and its own unit tests), the
    /// pure-Rust build (`--no-default-features`: clippy, the tests of the crates the features
    /// change, and `ldd` on the binary: no FFmpeg, no OpenEXR), the guest tier (`vm`) when this
    /// machine can boot the guest (PLAYSIM_SKIP_VM=1 skips it), and the bench suite in its short
    /// mode (`bench --short`: ratios printed, not asserted).
    Test,
    /// Build playsim, generate a DPX sequence under target/demo/ and play it at 24 fps; then
    /// record two seconds of the same frame size at 24 fps.
    Demo(DemoArgs),
    /// Measure against the anchors: DPX and video decode against FFmpeg, DPX unpack against memcpy,
    /// EXR against a plain OpenEXR reader, local reads against fio, NFS reads against libnfs, the
    /// engine's own cost and pacing, memory and the whole pipeline, and fidelity (what playback
    /// presents when asked for more than it sustains); writes target/bench/report.{md,json}.
    Bench(bench::BenchArgs),
    /// Boot a qemu guest with Linux's NFS server and soft-RoCE and play sequences from NFS
    /// mounts over TCP and over RDMA, and from the host with playsim's own NFS client; print
    /// the runs side by side. The guest image is cached (--cache-dir, $PLAYSIM_VM_CACHE).
    Vm(vm::VmArgs),
    /// Fuzz every parser that sees outside bytes with libFuzzer (cargo-fuzz, nightly):
    /// `cargo xtask fuzz [TARGET...] [--time S] [--cheap]`. SKIPPED, with the reason, where
    /// there is no nightly toolchain or no cargo-fuzz.
    Fuzz(fuzz::FuzzArgs),
    /// Fuzz every target, run the fault and hostile-server tests, and write the tables to
    /// target/reliability/report.md: `cargo xtask reliability [--short] [--time S]`.
    Reliability(reliability::ReliabilityArgs),
    /// Write video test media with ffmpeg: UHD clips into target/fixtures/video/, or with `--tiny` the
    /// committed tiny clips and their md5s in fixtures/video/.
    Fixtures(fixtures::FixturesArgs),
    /// `test`'s `vendor` step alone: vendor/smb2 against the published smb2 0.39.0 and
    /// PLAYSIM.patch (the crate cached in ~/.cache/playsim/vendor/), then its own unit tests.
    Vendor,
}

#[derive(Args)]
struct DemoArgs {
    /// Number of frames to generate.
    #[arg(long, default_value_t = 96, value_parser = clap::value_parser!(u32).range(1..))]
    frames: u32,
    /// Frame size preset for `playsim generate`; it also names the directory (dpx-<preset>).
    #[arg(long, default_value = "4k-dci")]
    preset: String,
    /// Extra arguments for `playsim play`, after `--` (e.g. `-- --fps max`).
    #[arg(last = true)]
    play_args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.task) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    std::env::set_current_dir(project_root()?).context("cannot enter the project root")?;
    match task {
        Task::Deps => deps::run().map(|()| ExitCode::SUCCESS),
        Task::Test => test(),
        Task::Demo(args) => demo(args),
        Task::Bench(args) => bench::run(&args).map(|()| ExitCode::SUCCESS),
        Task::Fixtures(args) => fixtures::run(args).map(|()| ExitCode::SUCCESS),
        Task::Fuzz(args) => fuzz::run(&args),
        Task::Reliability(args) => reliability::run(&args).map(|()| ExitCode::SUCCESS),
        Task::Vm(args) => vm::run(&args).map(|()| ExitCode::SUCCESS),
        Task::Vendor => vendor::test_step().map(|()| ExitCode::SUCCESS),
    }
}

/// One step of `cargo xtask test`.
type Step = (&'static str, fn() -> Result<()>);

fn test() -> Result<ExitCode> {
    let steps: [Step; 11] = [
        ("deps", deps::run),
        ("fmt", || process::run(cargo().args(["fmt", "--all", "--", "--check"]))),
        ("clippy", || {
            process::run(
                cargo()
                    .args(["clippy", "--workspace", "--all-targets", "--features", "playsim/mpi"])
                    .args(["--", "-D", "warnings"]),
            )
        }),
        // Every test but the MPI tier's, which is the next step, on the same build. The fault
        // and hostile-server tests record their rows for the `reliability` step's report.
        ("test", || {
            process::run(
                cargo()
                    .args(["test", "--workspace", "--features", "playsim/mpi", "--", "--skip", "mpi::"])
                    .args(["--skip", "html::"])
                    .env("PLAYSIM_RELIABILITY_DIR", reliability::fresh_rows_dir()?)
                    .env("PLAYSIM_XTASK_TEST", "1"),
            )
        }),
        // vendor/smb2 against the published crate and PLAYSIM.patch, then its own unit tests.
        ("vendor", vendor::test_step),
        // Several clients in one run: `mpirun --oversubscribe -np 3` on this machine, against
        // sim:// links and NFS-Ganesha on loopback.
        ("mpi", || {
            let mut test = cargo();
            test.args(["test", "--workspace", "--features", "playsim/mpi", "--test", "integration", "mpi::"]);
            process::run(mpi_switches(&mut test).env("PLAYSIM_XTASK_TEST", "1"))
        }),
        // The one-file HTML reports in headless Chromium (from Debian's packages, installed by
        // `deps`): a DOM check of the numbers on each page against its JSON, and a screenshot.
        ("browser", || {
            let mut test = cargo();
            test.args([
                "test",
                "--workspace",
                "--features",
                "playsim/mpi",
                "--test",
                "integration",
                "html::",
            ]);
            process::run(test.env("PLAYSIM_REQUIRE_CHROMIUM", "1").env("PLAYSIM_XTASK_TEST", "1"))
        }),
        // The pure-Rust build, without the native libraries: what the cargo features change.
        ("no-default-features", test_without_default_features),
        // Kernel NFS over TCP and RDMA in a qemu guest, when this machine can boot one.
        ("vm", vm::test_tier),
        // A short live run of the cheap fuzz targets where nightly and cargo-fuzz are (SKIPPED
        // elsewhere; the committed corpora and crash inputs were replayed in `test`), and the
        // reliability report from it and the rows `test` and `vm` recorded: target/reliability/report.md.
        ("reliability", reliability::test_step),
        // The bench suite in its short mode, so it cannot rot: it prints its ratios, and fails
        // only when a measurement cannot be made at all.
        ("bench", || bench::run(&bench::BenchArgs::short())),
    ];
    let start = Instant::now();
    let mut times = Vec::new();
    for (name, step) in steps {
        let step_start = Instant::now();
        let result = step();
        times.push(format!("{name} {:.1}s", step_start.elapsed().as_secs_f64()));
        // CI's disk has run out mid-build: each step says what it left.
        println!("xtask test: step `{name}` done; {}", free_disk());
        if let Err(err) = result {
            eprintln!("error: {err:#}");
            eprintln!("xtask test: FAILED at step `{name}` ({})", times.join(", "));
            return Ok(ExitCode::FAILURE);
        }
    }
    println!("xtask test: ok ({}; total {:.1}s)", times.join(", "), start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// The disk space left where the build writes, as `df` prints it, for the step log.
fn free_disk() -> String {
    let target = target_dir().unwrap_or_else(|_| PathBuf::from("."));
    let dir = if target.exists() { target } else { PathBuf::from(".") };
    match Command::new("df").args(["-h", "--output=avail"]).arg(&dir).output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let avail = text.lines().nth(1).unwrap_or("?").trim().to_owned();
            format!("{avail} free on the disk of {}", dir.display())
        }
        _ => "free disk space unknown (no df)".to_owned(),
    }
}

/// OpenMPI's switches for this machine, for every mpirun under `cmd` (the tests give them as
/// flags too): more ranks than cores, root (CI runs as root), and no single-copy shared memory,
/// which needs ptrace rights a container may not give.
fn mpi_switches(cmd: &mut Command) -> &mut Command {
    cmd.env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
}

/// The crates whose code changes with the cargo features (`ffmpeg`, `openexr`, `io-uring`,
/// `nfs`): those the `no-default-features` step tests again. The others (core, dpx, tiff,
/// report, engine, testserver, xtask) build the same either way, so the `test` step has
/// already run their tests.
const FEATURE_CRATES: &[&str] = &[
    "playsim",
    "playsim-storage",
    "playsim-exr",
    "playsim-ffmpeg",
    "playsim-media",
    "playsim-settings",
    "playsim-ops",
    "playsim-cluster",
];

/// Libraries the pure-Rust build must not link: FFmpeg's and OpenEXR's (with its own Iex and
/// IlmThread), as `ldd` names them.
const NATIVE_LIBRARIES: &[&str] = &[
    "libmpi",
    "libavcodec",
    "libavformat",
    "libavutil",
    "libswscale",
    "libswresample",
    "libOpenEXR",
    "libIex",
    "libIlmThread",
];

/// `--no-default-features`: clippy over every crate and target (the features' `cfg`s must leave
/// no dead code), the tests of [`FEATURE_CRATES`] (DPX, EXR through exrs, TIFF, local files and
/// `sim://`; the tests of a missing feature are compiled out), and `ldd` on the `playsim`
/// binary those tests built and ran, which must link none of [`NATIVE_LIBRARIES`].
fn test_without_default_features() -> Result<()> {
    process::run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--no-default-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    let mut test = cargo();
    test.args(["test", "--no-default-features", "--lib", "--bins", "--tests"]);
    for package in FEATURE_CRATES {
        test.args(["-p", package]);
    }
    process::run(test.env("PLAYSIM_XTASK_TEST", "1"))?;
    // The integration tests ran this binary, built by the same command without the default
    // features: no second build (a plain `cargo build` resolves features apart from the tests'
    // and would compile several crates again).
    let binary = target_dir()?.join("debug").join(format!("playsim{}", std::env::consts::EXE_SUFFIX));
    let ldd = process::read(Command::new("ldd").arg(&binary))?;
    let n_libraries = links_no_native_library(&ldd)
        .with_context(|| format!("{} was built with --no-default-features", binary.display()))?;
    println!("ldd {}: {n_libraries} libraries, none of FFmpeg's or OpenEXR's", binary.display());
    Ok(())
}

/// Checks `ldd`'s output for [`NATIVE_LIBRARIES`]; returns how many libraries it lists.
fn links_no_native_library(ldd: &str) -> Result<usize> {
    let libraries: Vec<&str> = ldd.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    let native: Vec<&str> = libraries
        .iter()
        .copied()
        .filter(|line| NATIVE_LIBRARIES.iter().any(|lib| line.contains(lib)))
        .collect();
    if !native.is_empty() {
        bail!("it links native libraries it must not:\n  {}", native.join("\n  "));
    }
    if !libraries.iter().any(|line| line.contains("libc.so")) {
        bail!("ldd lists no libc, so its output cannot be read as a list of libraries:\n{ldd}");
    }
    Ok(libraries.len())
}

fn demo(args: DemoArgs) -> Result<ExitCode> {
    check_preset(&args.preset)?;
    deps::run()?;
    let target = target_dir()?;
    let playsim = build_playsim(&target)?;
    let dir = target.join("demo").join(format!("dpx-{}", args.preset));
    ensure_sequence(&playsim, &args.preset, args.frames, &dir)?;

    let mut play = Command::new(&playsim);
    play.arg("play").arg(&dir);
    // Defaults go only where the user gave none: playsim rejects a flag given twice.
    if !has_flag(&args.play_args, "--fps") {
        play.args(["--fps", "24"]);
    }
    if !has_flag(&args.play_args, "--json") {
        play.arg("--json").arg(target.join("demo").join("report.json"));
    }
    play.args(&args.play_args);
    let status = process::run_status(&mut play)?;
    if !status.success() {
        return Ok(exit_code(status));
    }
    // Then the write side: two seconds of recording the same frame size at 24 fps, encoded
    // for real, with the drops by cause.
    let mut record = Command::new(&playsim);
    record
        .arg("record")
        .arg(target.join("demo").join(format!("record-{}", args.preset)))
        .args(["--fps", "24", "--frames", "48", "--preset", &args.preset, "--force", "--json"])
        .arg(target.join("demo").join("record.json"));
    Ok(exit_code(process::run_status(&mut record)?))
}

/// The repository root: xtask lives one level below it.
fn project_root() -> Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map(Path::to_path_buf).context("xtask's manifest directory has no parent")
}

/// Cargo's target directory, relative to the root when it is inside it (so printed paths are short).
/// Asking cargo, rather than assuming `target/`, keeps us right under `CARGO_TARGET_DIR` too.
pub fn target_dir() -> Result<PathBuf> {
    let metadata = process::read(cargo().args(["metadata", "--format-version", "1", "--no-deps"]))?;
    let metadata: serde_json::Value =
        serde_json::from_str(&metadata).context("cannot parse cargo metadata")?;
    let target = metadata["target_directory"].as_str().context("cargo metadata has no target_directory")?;
    let target = Path::new(target);
    let root = std::env::current_dir()?;
    Ok(target.strip_prefix(&root).unwrap_or(target).to_path_buf())
}

/// Builds the release `playsim` binary and returns its path.
pub fn build_playsim(target: &Path) -> Result<PathBuf> {
    // With MPI, for the bench's `mpi` section (the guest's payload is built without it).
    process::run(cargo().args(["build", "--release", "--bin", "playsim", "--features", "mpi"]))?;
    Ok(target.join("release").join(format!("playsim{}", std::env::consts::EXE_SUFFIX)))
}

/// Makes `dir` hold exactly `frame.0000000.dpx` .. `frame.<n_frames - 1>.dpx`: reuses what is there when
/// it already does, otherwise removes the directory and runs `playsim generate` into it.
pub fn ensure_sequence(playsim: &Path, preset: &str, n_frames: u32, dir: &Path) -> Result<()> {
    if is_complete_sequence(dir, n_frames)? {
        println!("reusing the {n_frames} frames in {}", dir.display());
        return Ok(());
    }
    if dir.exists() {
        println!("{} does not hold exactly {n_frames} frames; generating them anew", dir.display());
        fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let n_frames_arg = n_frames.to_string();
    let args = ["generate", "--preset", preset, "--format", "dpx", "--frames", &n_frames_arg];
    process::run(Command::new(playsim).args(args).arg(dir))?;
    if !is_complete_sequence(dir, n_frames)? {
        bail!(
            "`playsim generate` did not leave exactly {} .. {} in {}",
            frame_name(0),
            frame_name(n_frames - 1),
            dir.display()
        );
    }
    Ok(())
}

/// The file name of frame `frame_idx`, as `playsim generate` writes it.
pub fn frame_name(frame_idx: u32) -> String {
    format!("frame.{frame_idx:07}.dpx")
}

/// Whether `dir` holds exactly the frames `0..n_frames` and nothing else, all of one non-zero size (a
/// generation cut short leaves a missing or short file).
fn is_complete_sequence(dir: &Path, n_frames: u32) -> Result<bool> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err).with_context(|| format!("cannot list {}", dir.display())),
    };
    let mut names = BTreeSet::new();
    let mut sizes = BTreeSet::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        names.insert(entry.file_name().to_string_lossy().into_owned());
        sizes.insert(entry.metadata()?.len());
    }
    let expected: BTreeSet<String> = (0..n_frames).map(frame_name).collect();
    Ok(names == expected && sizes.len() == 1 && !sizes.contains(&0))
}

/// Presets name a directory that may be removed, so they must be a plain name.
fn check_preset(preset: &str) -> Result<()> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if preset.is_empty() || !preset.chars().all(plain) {
        bail!("preset `{preset}` is not a preset name (lower-case letters, digits and `-`)");
    }
    Ok(())
}

fn has_flag(args: &[String], flag: &str) -> bool {
    args.iter().any(|arg| arg == flag || arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')))
}

/// playsim's own exit code, so `cargo xtask demo` fails exactly when playsim does.
fn exit_code(status: ExitStatus) -> ExitCode {
    match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pure_rust_binary_links_no_ffmpeg_and_no_openexr() {
        let pure = "\tlinux-vdso.so.1 (0x00007fbc86de3000)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007fbc86daf000)\n\
                    \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007fbc86ccf000)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fbc8501e000)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007fbc86de5000)";
        assert_eq!(links_no_native_library(pure).unwrap(), 5);
        let native = format!(
            "{pure}\n\tlibavcodec.so.59 => /lib/x86_64-linux-gnu/libavcodec.so.59 (0x1)\n\
             \tlibOpenEXR-3_1.so.30 => /lib/x86_64-linux-gnu/libOpenEXR-3_1.so.30 (0x2)"
        );
        let err = links_no_native_library(&native).unwrap_err().to_string();
        assert!(err.contains("libavcodec.so.59") && err.contains("libOpenEXR-3_1"), "{err}");
        assert!(links_no_native_library("not a dynamic executable").is_err());
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["xtask", "demo", "--frames", "8", "--", "--fps", "max"]).unwrap();
        let Task::Demo(args) = cli.task else { panic!("not demo") };
        assert_eq!((args.frames, args.preset.as_str()), (8, "4k-dci"));
        assert_eq!(args.play_args, ["--fps", "max"]);
        assert!(Cli::try_parse_from(["xtask", "demo", "--frames", "0"]).is_err());
    }

    #[test]
    fn flags_given_by_the_user_are_found() {
        let args: Vec<String> = ["--fps=max", "--jsonx", "x"].map(String::from).into();
        assert!(has_flag(&args, "--fps"));
        assert!(!has_flag(&args, "--json"));
    }

    #[test]
    fn presets_must_be_plain_names() {
        assert!(check_preset("4k-dci").is_ok());
        assert!(check_preset("../x").is_err());
        assert!(check_preset("").is_err());
    }

    #[test]
    fn sequence_must_be_exact() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("seq");
        assert!(!is_complete_sequence(&dir, 3).unwrap());
        fs::create_dir_all(&dir).unwrap();
        for frame_idx in 0..3 {
            fs::write(dir.join(frame_name(frame_idx)), b"dpx!").unwrap();
        }
        assert!(is_complete_sequence(&dir, 3).unwrap());
        assert!(!is_complete_sequence(&dir, 2).unwrap(), "an extra frame");
        assert!(!is_complete_sequence(&dir, 4).unwrap(), "a missing frame");
        fs::write(dir.join(frame_name(2)), b"dp").unwrap();
        assert!(!is_complete_sequence(&dir, 3).unwrap(), "a short frame");
    }
}
