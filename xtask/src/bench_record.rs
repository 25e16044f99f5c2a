//! The write rows of `cargo xtask bench` (section `record`): `playsim record --encode off`
//! writing 4K DCI DPX frames (frame 0's bytes for every frame, encoded once: the storage's side
//! alone) against fio writing the same number of files of the same size, in one run.
//!
//! Three cases, each a throughput row (MB/s, playsim at least 0.95× fio), with CPU seconds per
//! GB of each side kept as extras:
//! - **O_DIRECT**: playsim `--direct --writers W -q W` writes W frames at once, each with one
//!   `pwrite` of the whole frame through its aligned buffer (the last block padded, the file cut
//!   back to its size at close), then renames it into place. fio runs W `psync` jobs with
//!   `direct=1`, each writing its share of the files, one whole-file write each (`bs` = the
//!   file's size rounded down to 4096: fio writes whole blocks only, 2,048 bytes short of a
//!   frame, 0.006%). Rates are each side's own: playsim's figures (bytes over its span) and
//!   fio's JSON (bytes over the longest job's runtime).
//! - **O_DIRECT through io_uring**: playsim `--direct --io-engine io_uring --writers W -q W`
//!   cuts each frame into 1 MiB WRITEs, all in flight at once on one ring of 128 entries (127
//!   writes in flight at most). fio runs W `io_uring` jobs with `direct=1`, `bs=1M` and
//!   `iodepth` = 128 / W, so the same block size and the same writes in flight in all; its
//!   files are whole 1 MiB blocks, 33 MiB (fio writes no partial block, so 2.2% less than a
//!   frame; each side's rate is its own bytes over its own time, as above).
//! - **Buffered, long**: several GB (8.5 GB in the full suite), so that the kernel's dirty-page
//!   throttling (`dirty_ratio`) sets the pace and the figure is the disk's, not the page
//!   cache's; both sides end with a sync of everything written (playsim `--sync end`, a
//!   `syncfs`; fio `end_fsync=1`). The rate is bytes over each process's wall time, sync
//!   included, since fio's runtime leaves out its end fsync.
//!
//! Each measurement is repeated (3 runs, 1 in the short mode), the sides taking turns, and the
//! median kept; the files are removed after each run, so the disk holds one run at a time.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::bench::{median, Bench, BenchRow};
use crate::process::{self, ChildCost};

/// 4K DCI 10-bit RGB DPX, as `playsim generate` writes it: 4096 × 2160 × 4 bytes and a 2,048-byte
/// header.
const PRESET: &str = "4k-dci";
const FRAME_BYTES: u64 = 35_391_488;
/// fio's file size: the frame rounded down to whole 4096-byte blocks.
const FIO_FILE_BYTES: u64 = FRAME_BYTES / 4096 * 4096;
/// The io_uring case's block: playsim's `WRITE_CHUNK` (1 MiB), fio's `bs`.
const URING_BLOCK_BYTES: u64 = 1 << 20;
/// fio's file size in the io_uring case: the frame rounded down to whole blocks.
const FIO_URING_FILE_BYTES: u64 = FRAME_BYTES / URING_BLOCK_BYTES * URING_BLOCK_BYTES;
/// playsim's ring depth (`DEFAULT_RING_ENTRIES`), shared by fio's jobs as their `iodepth`.
const RING_ENTRIES: u32 = 128;
/// Frames written at once on both sides.
const WRITERS: u32 = 4;
/// The issue's target: throughput at least 0.95× fio's.
const THROUGHPUT_TARGET: f64 = 0.95;
/// Free space to leave beyond one run's files.
const SPACE_MARGIN: u64 = 2_000_000_000;

/// A case: O_DIRECT (pwrite, or io_uring), or buffered long enough to pass the dirty-page
/// throttling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Direct,
    DirectUring,
    BufferedLong,
}

impl Case {
    fn key(self) -> &'static str {
        match self {
            Case::Direct => "direct",
            Case::DirectUring => "direct-io_uring",
            Case::BufferedLong => "buffered-long",
        }
    }

    /// The size of each file fio writes.
    fn fio_file_bytes(self) -> u64 {
        match self {
            Case::DirectUring => FIO_URING_FILE_BYTES,
            Case::Direct | Case::BufferedLong => FIO_FILE_BYTES,
        }
    }
}

/// One side's run: bytes written, its rate as the module says, and its cost.
#[derive(Clone, Copy, Debug)]
struct Run {
    bytes: u64,
    mb_per_s: f64,
    cost: ChildCost,
}

/// The rows of both cases.
pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    if !process::on_path("fio") {
        bail!("no fio on PATH; `cargo xtask deps` installs it (Debian package fio)");
    }
    let dir = bench.out_dir.join("record");
    let mut rows = Vec::new();
    for (case, n_frames) in [
        (Case::Direct, bench.pick(64, 16)),
        (Case::DirectUring, bench.pick(64, 16)),
        (Case::BufferedLong, bench.pick(240, 32)),
    ] {
        let n_frames = fit_to_disk(&bench.out_dir, n_frames)?;
        rows.push(measure(bench, &dir, case, n_frames)?);
    }
    Ok(rows)
}

/// The frames a case writes: `wanted`, or fewer when the disk lacks the space for them (said).
fn fit_to_disk(out_dir: &Path, wanted: u64) -> Result<u64> {
    fs::create_dir_all(out_dir)?;
    let df = process::read(Command::new("df").args(["--output=avail", "-B1"]).arg(out_dir))?;
    let avail: u64 = df
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .with_context(|| format!("cannot parse df's output: {df}"))?;
    let fits = avail.saturating_sub(SPACE_MARGIN) / FRAME_BYTES;
    if fits < u64::from(WRITERS) {
        bail!(
            "the record rows need {:.1} GB free under {}; df says {:.1} GB",
            (u64::from(WRITERS) * FRAME_BYTES + SPACE_MARGIN) as f64 / 1e9,
            out_dir.display(),
            avail as f64 / 1e9
        );
    }
    if fits < wanted {
        println!("bench record: {wanted} frames do not fit on the disk; writing {fits}");
    }
    Ok(wanted.min(fits))
}

fn measure(bench: &Bench, dir: &Path, case: Case, n_frames: u64) -> Result<BenchRow> {
    let reps = bench.pick(3, 1);
    let (mut playsim_runs, mut fio_runs) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        // Taking turns: fio first on even repetitions, playsim on odd ones.
        for fio_side in if rep % 2 == 0 { [true, false] } else { [false, true] } {
            let out = dir.join(format!("{}-{}", case.key(), if fio_side { "fio" } else { "playsim" }));
            remove(&out)?;
            let measured = if fio_side {
                run_fio(case, &out, n_frames).map(|r| fio_runs.push(r))
            } else {
                run_playsim(&bench.playsim, case, &out, n_frames).map(|r| playsim_runs.push(r))
            };
            remove(&out)?;
            measured?;
        }
    }
    let rate = |runs: &[Run]| median(runs.iter().map(|r| r.mb_per_s).collect());
    let cpu_per_gb =
        |runs: &[Run]| median(runs.iter().map(|r| r.cost.cpu_s() / (r.bytes as f64 / 1e9)).collect());
    let (what, anchor) = match case {
        Case::Direct => (
            format!("Local write throughput, {n_frames} 4K DCI DPX frames, O_DIRECT, {WRITERS} at once (record --encode off)"),
            format!("fio, {WRITERS} psync jobs, direct=1, one whole-file write each, its own runtime"),
        ),
        Case::DirectUring => (
            format!(
                "Local write throughput, {n_frames} 4K DCI DPX frames, O_DIRECT through io_uring, {WRITERS} at once, 1 MiB writes (record --encode off --io-engine io_uring)"
            ),
            format!(
                "fio, {WRITERS} io_uring jobs, direct=1, bs=1M, iodepth={} ({RING_ENTRIES} in all), its own runtime",
                RING_ENTRIES / WRITERS
            ),
        ),
        Case::BufferedLong => (
            format!(
                "Local write throughput, {n_frames} 4K DCI DPX frames ({:.1} GB), buffered, sync at the end (record --encode off --sync end)",
                (n_frames * FRAME_BYTES) as f64 / 1e9
            ),
            format!("fio, {WRITERS} psync jobs, buffered, end_fsync=1; both over wall time"),
        ),
    };
    let spread = |runs: &[Run]| {
        let rates: Vec<f64> = runs.iter().map(|r| r.mb_per_s).collect();
        let max = rates.iter().copied().fold(f64::MIN, f64::max);
        let min = rates.iter().copied().fold(f64::MAX, f64::min);
        max - min
    };
    Ok(BenchRow::rate(&what, "MB/s", rate(&playsim_runs), &anchor, rate(&fio_runs))
        .target(THROUGHPUT_TARGET)
        .extra("playsim_cpu_s_per_gb", cpu_per_gb(&playsim_runs))
        .extra("fio_cpu_s_per_gb", cpu_per_gb(&fio_runs))
        .extra("playsim_mb_per_s_spread", spread(&playsim_runs))
        .extra("fio_mb_per_s_spread", spread(&fio_runs))
        .extra("repetitions", reps as f64))
}

fn run_playsim(playsim: &Path, case: Case, out: &Path, n_frames: u64) -> Result<Run> {
    let json = out.with_extension("json");
    let mut cmd = Command::new(playsim);
    cmd.arg("record").arg(out);
    cmd.args(["--preset", PRESET, "--fps", "max", "--frames", &n_frames.to_string(), "--encode", "off"]);
    cmd.args(["--writers", &WRITERS.to_string(), "-q", &WRITERS.to_string(), "--json"]).arg(&json);
    match case {
        Case::Direct => cmd.arg("--direct"),
        Case::DirectUring => cmd.args(["--direct", "--io-engine", "io_uring"]),
        Case::BufferedLong => cmd.args(["--sync", "end"]),
    };
    let (_, cost) = process::run_measured(&mut cmd)?;
    let text = fs::read_to_string(&json).with_context(|| format!("playsim wrote no {}", json.display()))?;
    let _ = fs::remove_file(&json);
    let figures: Value = serde_json::from_str(&text)?;
    let written = figures["frames_written"].as_u64().unwrap_or(0);
    if written != n_frames {
        bail!("playsim record wrote {written} of {n_frames} frames: {text}");
    }
    if case == Case::DirectUring {
        // A fallback to pwrite would measure the other row again.
        let storage = figures["info"]["storage"].as_str().unwrap_or("");
        if !storage.ends_with("through io_uring") {
            bail!("playsim record did not write through io_uring: {storage}");
        }
    }
    let bytes = figures["bytes"].as_u64().context("no bytes in playsim's figures")?;
    let mb_per_s = match case {
        Case::Direct | Case::DirectUring => {
            figures["mb_per_s"].as_f64().context("no mb_per_s in playsim's figures")?
        }
        Case::BufferedLong => bytes as f64 / 1e6 / cost.wall_s,
    };
    Ok(Run { bytes, mb_per_s, cost })
}

/// fio's job file: `WRITERS` jobs, job j writing files j, j + W, ...: psync, one whole-file
/// write each, O_DIRECT or buffered with an fsync at the end; or io_uring, O_DIRECT, 1 MiB
/// blocks with the ring's depth shared among the jobs.
fn fio_job(case: Case, out: &Path, n_frames: u64) -> String {
    let mut job = String::new();
    let _ = writeln!(job, "; cargo xtask bench record, case {}: fio's side", case.key());
    let engine = if case == Case::DirectUring { "io_uring" } else { "psync" };
    let _ = writeln!(job, "[global]\nthread\nrw=write\nioengine={engine}\nfile_service_type=sequential");
    job.push_str("create_on_open=1\nfallocate=none\n");
    let _ = writeln!(job, "directory={}", out.display().to_string().replace(':', "\\:"));
    let file_bytes = case.fio_file_bytes();
    let bs = if case == Case::DirectUring { URING_BLOCK_BYTES } else { file_bytes };
    let _ = writeln!(job, "bs={bs}\nfilesize={file_bytes}");
    match case {
        Case::Direct => job.push_str("direct=1\n"),
        Case::DirectUring => {
            let _ = writeln!(job, "direct=1\niodepth={}", RING_ENTRIES / WRITERS);
        }
        Case::BufferedLong => job.push_str("direct=0\nend_fsync=1\n"),
    }
    for writer in 0..u64::from(WRITERS) {
        let files: Vec<String> =
            (writer..n_frames).step_by(WRITERS as usize).map(|k| format!("frame.{k:07}.dpx")).collect();
        if !files.is_empty() {
            let _ = write!(job, "\n[writer{writer}]\nfilename={}\n", files.join(":"));
        }
    }
    job
}

fn run_fio(case: Case, out: &Path, n_frames: u64) -> Result<Run> {
    fs::create_dir_all(out)?;
    let job_file = out.with_extension("fio");
    let json = out.with_extension("fio.json");
    fs::write(&job_file, fio_job(case, out, n_frames))?;
    let mut cmd = Command::new("fio");
    cmd.arg("--output-format=json").arg(format!("--output={}", json.display())).arg(&job_file);
    let (_, cost) = process::run_measured(&mut cmd)?;
    let text = fs::read_to_string(&json).with_context(|| format!("fio wrote no {}", json.display()))?;
    let _ = fs::remove_file(&json);
    let (bytes, runtime_s) = parse_fio_writes(&text)?;
    if bytes != n_frames * case.fio_file_bytes() {
        bail!("fio wrote {bytes} bytes, expected {}", n_frames * case.fio_file_bytes());
    }
    let mb_per_s = match case {
        Case::Direct | Case::DirectUring => bytes as f64 / 1e6 / runtime_s,
        Case::BufferedLong => bytes as f64 / 1e6 / cost.wall_s,
    };
    Ok(Run { bytes, mb_per_s, cost })
}

/// fio's JSON: the bytes its jobs wrote, and the longest job's runtime in seconds.
fn parse_fio_writes(text: &str) -> Result<(u64, f64)> {
    let start = text.find('{').context("fio's output holds no JSON")?;
    let report: Value = serde_json::from_str(&text[start..]).context("fio's output is not JSON")?;
    let jobs = report["jobs"].as_array().filter(|j| !j.is_empty()).context("fio's JSON has no jobs")?;
    let (mut bytes, mut runtime_s) = (0, 0.0f64);
    for job in jobs {
        if job["error"].as_u64() != Some(0) {
            bail!("fio job {} ended with error {}", job["jobname"], job["error"]);
        }
        bytes += job["write"]["io_bytes"].as_u64().context("fio job without write.io_bytes")?;
        runtime_s =
            runtime_s.max(job["write"]["runtime"].as_f64().context("fio job without write.runtime")? / 1e3);
    }
    if runtime_s <= 0.0 {
        bail!("fio's jobs ran for 0 ms, too short to give a rate");
    }
    Ok((bytes, runtime_s))
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_job_gives_each_writer_every_fourth_frame_whole() {
        let job = fio_job(Case::Direct, Path::new("/b/out"), 6);
        assert!(job.contains("rw=write\nioengine=psync\n"), "{job}");
        assert!(job.contains("bs=35389440\nfilesize=35389440\ndirect=1\n"), "{job}");
        assert!(job.contains("[writer0]\nfilename=frame.0000000.dpx:frame.0000004.dpx\n"), "{job}");
        assert!(job.ends_with("[writer3]\nfilename=frame.0000003.dpx\n"), "{job}");
        let buffered = fio_job(Case::BufferedLong, Path::new("/b/out"), 4);
        assert!(buffered.contains("direct=0\nend_fsync=1\n"), "{buffered}");
        let uring = fio_job(Case::DirectUring, Path::new("/b/out"), 4);
        assert!(uring.contains("ioengine=io_uring\n"), "{uring}");
        assert!(uring.contains("bs=1048576\nfilesize=34603008\ndirect=1\niodepth=32\n"), "{uring}");
    }

    #[test]
    fn fios_write_json_is_summed_over_jobs() {
        let text = r#"{"jobs":[{"jobname":"writer0","error":0,"write":{"io_bytes":100,"runtime":500}},
            {"jobname":"writer1","error":0,"write":{"io_bytes":50,"runtime":1000}}]}"#;
        assert_eq!(parse_fio_writes(text).unwrap_or_default(), (150, 1.0));
    }
}
