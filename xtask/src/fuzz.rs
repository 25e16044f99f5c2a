//! `cargo xtask fuzz [TARGET...] [--time S]`: runs playsim's fuzz targets (crates/playsim-fuzz)
//! under libFuzzer with cargo-fuzz on a nightly toolchain, and prints a line per target:
//! executions, time, crashes and corpus size.
//!
//! Each target starts from its committed corpus (`crates/playsim-fuzz/corpus/TARGET`, read
//! only) and grows a scratch one in `target/fuzz/corpus/TARGET`; crash inputs land in
//! `target/fuzz/crashes/TARGET/`. Without a nightly toolchain or cargo-fuzz it prints SKIPPED
//! with the reason and succeeds: the committed corpora are replayed on stable by
//! `cargo test` either way (crates/playsim-fuzz/tests/replay.rs).
//!
//! Any single allocation over 256 MiB is a finding (`-malloc_limit_mb=256`, reported with its
//! stack): with only the 2 GB RSS limit, a 541 MB claim showed as memory exhausted some inputs
//! later, blamed on whichever input ran then. Each run adds its executions to
//! `target/fuzz/stats/TARGET.json`, so the total on a machine accumulates. A crash is fixed in the
//! parser and its input kept in `crashes/TARGET/` under a name that says what it was; the replay
//! then fails on the old code and passes on the new.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::process;

/// The targets' names and costs, from the fuzz crate's dependency-free list: xtask must build
/// before the system libraries the parsers link are installed.
#[path = "../../crates/playsim-fuzz/src/catalog.rs"]
mod fuzz_catalog;

/// `cargo xtask fuzz`'s arguments.
#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Targets to run [default: all, or the cheap ones with --cheap]: dpx_header, dpx_decode,
    /// url, transport_reply, scenario_toml, report_json, exr_decode, tiff_decode,
    /// mxf_index, sequence_pattern (crates/playsim-fuzz's TARGETS).
    targets: Vec<String>,
    /// Seconds of fuzzing per target.
    #[arg(long, default_value_t = 60)]
    time: u64,
    /// Only the targets that are cheap per input (headers, URLs, TOML, JSON; no whole frames).
    #[arg(long)]
    cheap: bool,
}

impl FuzzArgs {
    /// Every target (or the cheap ones), `time` seconds each.
    pub fn new(time: u64, cheap: bool) -> FuzzArgs {
        FuzzArgs { targets: Vec::new(), time, cheap }
    }
}

/// Why fuzzing cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    let nightly = Command::new("cargo").args(["+nightly", "--version"]).output();
    if !nightly.is_ok_and(|o| o.status.success()) {
        return Some("no nightly toolchain (rustup toolchain install nightly)".into());
    }
    let fuzz = Command::new("cargo").args(["+nightly", "fuzz", "--version"]).output();
    if !fuzz.is_ok_and(|o| o.status.success()) {
        return Some("no cargo-fuzz (cargo install cargo-fuzz)".into());
    }
    None
}

/// One target's run.
pub struct Outcome {
    /// The target's name.
    pub name: &'static str,
    /// libFuzzer's executions in this run.
    pub executions: u64,
    /// Wall time of this run, build included for the first target.
    pub seconds: f64,
    /// Crash inputs this run found.
    pub crashes: Vec<PathBuf>,
    /// Inputs in the committed and the scratch corpus after the run.
    pub corpus: usize,
    /// Executions over every run of this target on this machine (`target/fuzz/stats/`).
    pub executions_total: u64,
}

/// What a fuzz run did: skipped, with the reason, or ran these targets.
pub enum FuzzRun {
    /// No nightly toolchain or no cargo-fuzz here.
    Skipped(String),
    /// Every target run, crashes or not.
    Ran(Vec<Outcome>),
}

pub fn run(args: &FuzzArgs) -> Result<ExitCode> {
    let outcomes = match fuzz(args)? {
        FuzzRun::Skipped(reason) => {
            println!("fuzz: SKIPPED: {reason}; the committed corpora are still replayed by `cargo test`");
            return Ok(ExitCode::SUCCESS);
        }
        FuzzRun::Ran(outcomes) => outcomes,
    };
    println!("\n| target | executions | seconds | crashes | corpus | executions on this machine |");
    println!("|---|---|---|---|---|---|");
    for o in &outcomes {
        println!(
            "| {} | {} | {:.0} | {} | {} | {} |",
            o.name,
            o.executions,
            o.seconds,
            o.crashes.len(),
            o.corpus,
            o.executions_total
        );
    }
    ensure_no_crash(&outcomes)?;
    Ok(ExitCode::SUCCESS)
}

/// Fails, naming every crash input and how to reproduce it, if any target crashed.
pub fn ensure_no_crash(outcomes: &[Outcome]) -> Result<()> {
    let crashes: Vec<&PathBuf> = outcomes.iter().flat_map(|o| &o.crashes).collect();
    if !crashes.is_empty() {
        bail!(
            "fuzz: {} crash input(s); reproduce with `cargo +nightly fuzz run --fuzz-dir crates/playsim-fuzz/fuzz \
             TARGET FILE`, fix, and keep each in crates/playsim-fuzz/crashes/TARGET/:\n  {}",
            crashes.len(),
            crashes.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join("\n  ")
        );
    }
    Ok(())
}

/// Runs the targets `args` names (or all, or the cheap ones) and returns what each did.
pub fn fuzz(args: &FuzzArgs) -> Result<FuzzRun> {
    if let Some(reason) = missing_tools() {
        return Ok(FuzzRun::Skipped(reason));
    }
    let mut targets = Vec::new();
    for name in &args.targets {
        targets.push(fuzz_catalog::entry(name).with_context(|| {
            let names: Vec<&str> = fuzz_catalog::CATALOG.iter().map(|t| t.name).collect();
            format!(
                "no fuzz target {name}: there are {} (for example cargo xtask fuzz url)",
                names.join(", ")
            )
        })?);
    }
    if targets.is_empty() {
        targets = fuzz_catalog::CATALOG.iter().filter(|t| t.cheap || !args.cheap).collect();
    }
    let root = std::env::current_dir()?;
    let fuzz_dir = root.join("crates/playsim-fuzz/fuzz");
    let work = crate::target_dir()?.join("fuzz");
    let mut outcomes = Vec::new();
    // Each target runs for the time asked (its first build aside).
    let mut progress = crate::progress::Progress::fixed(
        "fuzz",
        targets.iter().map(|t| t.name.to_owned()).collect(),
        Some(std::time::Duration::from_secs(args.time)),
    );
    for target in targets {
        progress.start(target.name);
        let mut outcome = fuzz_one(target.name, &root, &fuzz_dir, &work, args.time)?;
        outcome.executions_total = add_to_stats(&work, &outcome)?;
        outcomes.push(outcome);
    }
    progress.done();
    Ok(FuzzRun::Ran(outcomes))
}

/// Adds a run's executions and time to `target/fuzz/stats/NAME.json` and returns the
/// executions over every run of the target on this machine.
fn add_to_stats(work: &Path, outcome: &Outcome) -> Result<u64> {
    let dir = work.join("stats");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}.json", outcome.name));
    let old: serde_json::Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let executions = old["executions"].as_u64().unwrap_or(0) + outcome.executions;
    let stats = serde_json::json!({
        "executions": executions,
        "seconds": old["seconds"].as_f64().unwrap_or(0.0) + outcome.seconds,
        "runs": old["runs"].as_u64().unwrap_or(0) + 1,
        "crashes": old["crashes"].as_u64().unwrap_or(0) + outcome.crashes.len() as u64,
    });
    std::fs::write(&path, format!("{stats:#}\n")).with_context(|| format!("writing {}", path.display()))?;
    Ok(executions)
}

fn fuzz_one(name: &'static str, root: &Path, fuzz_dir: &Path, work: &Path, seconds: u64) -> Result<Outcome> {
    let scratch = work.join("corpus").join(name);
    let artifacts = work.join("crashes").join(name);
    std::fs::create_dir_all(&scratch)?;
    std::fs::create_dir_all(&artifacts)?;
    let before = files_in(&artifacts).len();
    let seeds = root.join("crates/playsim-fuzz/corpus").join(name);
    let mut cmd = Command::new("cargo");
    cmd.args(["+nightly", "fuzz", "run", "--fuzz-dir"]).arg(fuzz_dir);
    cmd.arg("--target-dir").arg(work.join("build"));
    cmd.args(["-O", name]).arg(&scratch).arg(&seeds).arg("--");
    cmd.arg(format!("-max_total_time={seconds}"));
    cmd.arg(format!("-artifact_prefix={}/", artifacts.display()));
    // One allocation over 256 MiB is a finding in itself, reported with its stack: without
    // the limit, a 541 MB attribute claim showed only as RSS past 2 GB some inputs later,
    // blamed on whichever input ran then.
    cmd.args(["-print_final_stats=1", "-timeout=10", "-rss_limit_mb=2048", "-malloc_limit_mb=256"]);
    let started = Instant::now();
    let output = process::run_capture_status(&mut cmd)?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let executions = stderr
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let crashes: Vec<PathBuf> = files_in(&artifacts).into_iter().skip(before).collect();
    if !output.status.success() && crashes.is_empty() {
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        bail!(
            "fuzz {name} failed without a crash input:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    let corpus = files_in(&scratch).len() + files_in(&seeds).len();
    println!(
        "fuzz {name}: {executions} executions in {seconds:.0} s, {} crash(es), corpus {corpus}",
        crashes.len()
    );
    Ok(Outcome { name, executions, seconds, crashes, corpus, executions_total: executions })
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH), e.path()))
        .collect();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}
