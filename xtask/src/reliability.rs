//! `cargo xtask reliability [--short] [--time S]`: how playsim stands up to hostile input,
//! hostile servers and faults, as one table each, in `target/reliability/report.md`.
//!
//! - **Fuzz targets:** every target of `crates/playsim-fuzz` (the cheap ones with `--short`)
//!   under libFuzzer, as `cargo xtask fuzz` runs them: executions, time, crashes, corpus size,
//!   the executions over every run on this machine, and the crash inputs kept as regressions.
//!   SKIPPED, with the reason, where there is no nightly toolchain or cargo-fuzz.
//! - **Faults** (real servers, the path to them, local files changed mid-run) and **hostile
//!   replies** (the misbehaving NFS server of `playsim-testserver`): the integration tests that
//!   do them each record a row (tests/util.rs, `record_reliability`) in
//!   `$PLAYSIM_RELIABILITY_DIR/rows.jsonl` before they assert.
//!
//! Standalone, the command runs those tests itself. In `cargo xtask test` the `test` step has
//! already run them with the variable set, so the `reliability` step only fuzzes (short) and
//! writes the report. Either way it fails if a test failed or a target crashed, after writing
//! the report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::fuzz::{self, FuzzArgs, FuzzRun};
use crate::process::{self, cargo};

/// The integration-test modules that do faults and hostile replies, as `cargo test` filters.
const FAULT_TESTS: &[&str] =
    &["nfs::", "faults::", "hostile_nfs::", "hostile_nfs_record::", "hostile_smb::", "smb::"];

/// `cargo xtask reliability`'s arguments.
#[derive(clap::Args)]
pub struct ReliabilityArgs {
    /// CI's short mode: only the cheap fuzz targets, 10 s each unless --time says otherwise.
    #[arg(long)]
    short: bool,
    /// Seconds of fuzzing per target [default: 60, or 10 with --short].
    #[arg(long)]
    time: Option<u64>,
}

/// The directory the report and the rows go in: `target/reliability`.
pub fn report_dir() -> Result<PathBuf> {
    Ok(std::env::current_dir()?.join(crate::target_dir()?).join("reliability"))
}

/// Where the tests append their rows: what `PLAYSIM_RELIABILITY_DIR` is set to. Emptied first.
pub fn fresh_rows_dir() -> Result<PathBuf> {
    let rows = report_dir()?.join("rows");
    if rows.exists() {
        std::fs::remove_dir_all(&rows).with_context(|| format!("cannot empty {}", rows.display()))?;
    }
    std::fs::create_dir_all(&rows)?;
    Ok(rows)
}

/// `cargo xtask reliability`: runs the fault and hostile-reply tests, then the fuzz targets,
/// and writes the report.
pub fn run(args: &ReliabilityArgs) -> Result<()> {
    let rows = fresh_rows_dir()?;
    let mut test = cargo();
    test.args(["test", "--workspace", "--features", "playsim/mpi", "--test", "integration", "--"]);
    test.args(FAULT_TESTS).env("PLAYSIM_RELIABILITY_DIR", &rows).env("PLAYSIM_XTASK_TEST", "1");
    let tests_passed = process::run_status(&mut test)?.success();
    report(args, &rows, tests_passed)
}

/// The `reliability` step of `cargo xtask test`: the `test` step ran the tests into
/// [`fresh_rows_dir`]; fuzz the cheap targets briefly and write the report.
pub fn test_step() -> Result<()> {
    let rows = report_dir()?.join("rows");
    report(&ReliabilityArgs { short: true, time: None }, &rows, true)
}

fn report(args: &ReliabilityArgs, rows_dir: &Path, tests_passed: bool) -> Result<()> {
    let time = args.time.unwrap_or(if args.short { 10 } else { 60 });
    let fuzzed = fuzz::fuzz(&FuzzArgs::new(time, args.short))?;
    let rows = read_rows(&rows_dir.join("rows.jsonl"))?;
    let text = render(&fuzzed, &rows, tests_passed, args.short, time);
    let path = report_dir()?.join("report.md");
    std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("{text}");
    println!("reliability: wrote {}", path.display());
    if let FuzzRun::Ran(outcomes) = &fuzzed {
        fuzz::ensure_no_crash(outcomes)?;
    }
    if !tests_passed {
        bail!("reliability: a fault or hostile-reply test failed (its row, if it got that far, is in the report)");
    }
    let not_survived: Vec<&str> = rows.iter().filter(|r| !r.survived).map(|r| r.name.as_str()).collect();
    if !not_survived.is_empty() {
        bail!("reliability: not survived: {}", not_survived.join("; "));
    }
    Ok(())
}

/// One fault or hostile reply as a test recorded it.
struct Row {
    table: String,
    name: String,
    survived: bool,
    frames_lost: Option<u64>,
    bound: Option<u64>,
    recover_s: Option<f64>,
    outcome: String,
}

fn read_rows(path: &Path) -> Result<Vec<Row>> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(Vec::new()) };
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{} line {}: not a JSON row", path.display(), i + 1))?;
        rows.push(Row {
            table: v["table"].as_str().unwrap_or_default().to_owned(),
            name: v["name"].as_str().unwrap_or_default().to_owned(),
            survived: v["survived"].as_bool().unwrap_or(false),
            frames_lost: v["frames_lost"].as_u64(),
            bound: v["bound"].as_u64(),
            recover_s: v["recover_s"].as_f64(),
            outcome: v["outcome"].as_str().unwrap_or_default().to_owned(),
        });
    }
    rows.sort_by(|a, b| (&a.table, &a.name).cmp(&(&b.table, &b.name)));
    Ok(rows)
}

/// The crash inputs kept as regressions for `target` (replayed by every `cargo test`).
fn regressions(target: &str) -> usize {
    let dir = Path::new("crates/playsim-fuzz/crashes").join(target);
    std::fs::read_dir(dir).map(|d| d.flatten().filter(|e| e.path().is_file()).count()).unwrap_or(0)
}

fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| v.to_string())
}

/// A table cell: no pipe or newline can break the row.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn render(fuzzed: &FuzzRun, rows: &[Row], tests_passed: bool, short: bool, time: u64) -> String {
    let commit = process::read(std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]))
        .unwrap_or_else(|_| "unknown".into());
    let mut md = format!(
        "# playsim reliability\n\nCommit {commit}, {} mode, {} logical CPUs.\n\n",
        if short { "short" } else { "full" },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let _ =
        writeln!(md, "## Fuzz targets ({time} s each{})\n", if short { ", cheap targets only" } else { "" });
    match fuzzed {
        FuzzRun::Skipped(reason) => {
            let _ = writeln!(md, "SKIPPED: {reason}. The committed corpora and crash inputs are still replayed by `cargo test`.\n");
        }
        FuzzRun::Ran(outcomes) => {
            md.push_str("| target | executions | seconds | crashes | corpus | executions on this machine | regressions kept |\n");
            md.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
            for o in outcomes {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {} | {} | {} | {} |",
                    o.name,
                    o.executions,
                    o.seconds,
                    o.crashes.len(),
                    o.corpus,
                    o.executions_total,
                    regressions(o.name)
                );
            }
            md.push('\n');
        }
    }
    let tests = if tests_passed { "passed" } else { "FAILED" };
    let _ = writeln!(
        md,
        "## Faults\n\nThe integration tests that do them ({}): {tests}. In `cargo xtask test`, the guest \
         tier's faults join them (`guest:`).\n",
        FAULT_TESTS.join(" ")
    );
    table(&mut md, rows.iter().filter(|r| r.table == "fault"), true);
    md.push_str("## Hostile replies\n\n");
    table(&mut md, rows.iter().filter(|r| r.table == "hostile_reply"), false);
    md
}

fn table<'a>(md: &mut String, rows: impl Iterator<Item = &'a Row>, frames: bool) {
    let rows: Vec<&Row> = rows.collect();
    if rows.is_empty() {
        md.push_str("No rows: the tests did not run here, or recorded none.\n\n");
        return;
    }
    if frames {
        md.push_str("| fault | survived | frames lost | bound | recovery (s) | outcome |\n|---|---|---:|---:|---:|---|\n");
    } else {
        md.push_str("| reply | survived | frames lost | outcome |\n|---|---|---:|---|\n");
    }
    for r in rows {
        let survived = if r.survived { "yes" } else { "**no**" };
        if frames {
            let _ = writeln!(
                md,
                "| {} | {survived} | {} | {} | {} | {} |",
                cell(&r.name),
                or_dash(r.frames_lost),
                or_dash(r.bound),
                or_dash(r.recover_s.map(|s| format!("{s:.2}"))),
                cell(&r.outcome)
            );
        } else {
            let _ = writeln!(
                md,
                "| {} | {survived} | {} | {} |",
                cell(&r.name),
                or_dash(r.frames_lost),
                cell(&r.outcome)
            );
        }
    }
    md.push('\n');
}
