//! The fio adapter of the io section: the job file that puts fio's load beside a playsim
//! run, running fio, and reading its JSON.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{playsim_flags, remove_stale, Cache, Case, Mode, Run, Workload};
use crate::process;

/// fio's job file for `case`, with the playsim command it stands beside in its header.
///
/// playsim with `--io-depth D` has D frames in flight, each read by one blocking task with one
/// `pread` of a block after another, and the next frame starts when one is done. For `pread`
/// (buffered and O_DIRECT) the nearest fio load is D `psync` jobs (threads of one process, as
/// playsim's readers are, so one process's CPU is measured), each reading whole files one after
/// another, block after block (`file_service_type=sequential`), job j taking frames j, j + D,
/// j + 2D, …: the D jobs move through the sequence side by side, as playsim's window does, and
/// no file is read twice. fio's jobs do not wait for one another, so when one finishes early the
/// tail of the run has fewer reads in flight; the aggregate rate (bytes over the longest job's
/// runtime) counts that against fio.
///
/// With io_uring playsim submits every block of a frame at once, D frames at a time: D ×
/// blocks-per-frame reads in flight, as far as its ring holds them (127 of 136 with its
/// default 128 entries, one kept for its wake-up poll). The fio load is one io_uring job over all
/// the files in order with that `iodepth`; it refills each block as it completes, which keeps
/// at least as many reads in flight as playsim does. `fixedbufs` registers fio's buffers when
/// playsim registered its pool's.
///
/// Buffered jobs keep fio's default `fadvise_hint=1` (POSIX_FADV_SEQUENTIAL on each file, which
/// doubles read-ahead; playsim gives no such advice), written out so it is seen.
pub(super) fn fio_job(case: Case, work: &Workload, fixedbufs: bool) -> String {
    let mut job = String::new();
    let _ = writeln!(job, "; cargo xtask bench io, case {}: fio's side of", case.key());
    let _ = writeln!(job, ";   playsim play {} {}", work.dir.display(), playsim_flags(case, work).join(" "));
    job.push_str("[global]\nthread\nrw=read\n");
    let _ = writeln!(job, "bs={}", work.block_size);
    let _ = writeln!(job, "directory={}", fio_escape(&work.dir.to_string_lossy()));
    job.push_str("file_service_type=sequential\n");
    let _ = writeln!(job, "invalidate={}", u8::from(case.cache == Cache::Cold));
    let _ = writeln!(job, "direct={}", u8::from(case.direct()));
    if !case.direct() {
        job.push_str("fadvise_hint=1\n");
    }
    let _ = writeln!(job, "loops={}", work.passes);
    if case.mode == Mode::IoUring {
        job.push_str("ioengine=io_uring\n");
        let _ = writeln!(job, "iodepth={}", work.io_uring_depth());
        let _ = writeln!(job, "fixedbufs={}", u8::from(fixedbufs));
        let names: Vec<&str> = work.files.iter().map(String::as_str).collect();
        let _ = write!(job, "\n[reader]\nfilename={}\n", fio_file_list(&names));
    } else {
        job.push_str("ioengine=psync\n");
        for (job_idx, share) in fio_shares(&work.files, work.io_depth).iter().enumerate() {
            let _ = write!(job, "\n[reader{job_idx}]\nfilename={}\n", fio_file_list(share));
        }
    }
    job
}

/// Files `j, j + n, j + 2n, …` for job `j` of `n` (fewer jobs when there are fewer files).
pub(super) fn fio_shares(files: &[String], n_jobs: u32) -> Vec<Vec<&str>> {
    let n_jobs = (n_jobs as usize).clamp(1, files.len().max(1));
    let mut shares = vec![Vec::new(); n_jobs];
    for (file_idx, name) in files.iter().enumerate() {
        shares[file_idx % n_jobs].push(name.as_str());
    }
    shares
}

/// fio's `filename=` list: names joined by `:`, each `:` inside a name escaped.
fn fio_file_list(names: &[&str]) -> String {
    names.iter().map(|name| fio_escape(name)).collect::<Vec<_>>().join(":")
}

fn fio_escape(text: &str) -> String {
    text.replace(':', "\\:")
}

/// Runs fio on `job` and checks it read every whole block of every file.
pub(super) fn run_fio(job: &Path, json: &Path, work: &Workload) -> Result<Run> {
    remove_stale(json)?;
    let mut cmd = Command::new("fio");
    cmd.args(["--readonly", "--output-format=json"]).arg(format!("--output={}", json.display())).arg(job);
    let (_, cost) = process::run_measured(&mut cmd)?;
    let text = fs::read_to_string(json).with_context(|| format!("fio wrote no {}", json.display()))?;
    let fio = parse_fio(&text).with_context(|| format!("in {}", json.display()))?;
    if fio.bytes != work.fio_bytes() {
        bail!("fio read {} bytes with {}, expected {}", fio.bytes, job.display(), work.fio_bytes());
    }
    Ok(Run {
        bytes: fio.bytes,
        mb_per_s: fio.bytes as f64 / 1e6 / fio.runtime_s,
        cost,
        n_reads: fio.n_ios,
        latency_ms: fio.clat_mean_ms,
    })
}

/// What fio's JSON says about all its jobs together.
#[derive(Clone, Copy, Debug, PartialEq)]
struct FioFigures {
    bytes: u64,
    /// The longest job's runtime: the jobs start together, so this is the group's.
    runtime_s: f64,
    n_ios: u64,
    /// Completion latency of one block, averaged over every block of every job.
    clat_mean_ms: f64,
}

/// Parses `fio --output-format=json`: per job `error`, `read.io_bytes`, `read.runtime` (ms),
/// `read.total_ios` and `read.clat_ns.{mean,N}`. fio may print notes before the JSON.
fn parse_fio(text: &str) -> Result<FioFigures> {
    let start = text.find('{').context("fio's output holds no JSON")?;
    let report: Value = serde_json::from_str(&text[start..]).context("fio's output is not JSON")?;
    let jobs = report["jobs"].as_array().filter(|jobs| !jobs.is_empty()).context("fio's JSON has no jobs")?;
    let mut figures = FioFigures { bytes: 0, runtime_s: 0.0, n_ios: 0, clat_mean_ms: 0.0 };
    let mut clat_sum_ns = 0.0;
    let mut n_clat = 0u64;
    for job in jobs {
        let name = job["jobname"].as_str().unwrap_or("?");
        let whole = |value: &Value, what: &str| {
            value.as_u64().with_context(|| format!("fio job {name} has no whole number {what}"))
        };
        let error = whole(&job["error"], "error")?;
        if error != 0 {
            bail!("fio job {name} ended with error {error}");
        }
        let read = &job["read"];
        figures.bytes += whole(&read["io_bytes"], "read.io_bytes")?;
        figures.n_ios += whole(&read["total_ios"], "read.total_ios")?;
        let runtime_s = whole(&read["runtime"], "read.runtime")? as f64 / 1e3;
        figures.runtime_s = figures.runtime_s.max(runtime_s);
        let n = whole(&read["clat_ns"]["N"], "read.clat_ns.N")?;
        let mean = read["clat_ns"]["mean"]
            .as_f64()
            .with_context(|| format!("fio job {name} has no read.clat_ns.mean"))?;
        clat_sum_ns += mean * n as f64;
        n_clat += n;
    }
    if figures.runtime_s <= 0.0 {
        bail!("fio's jobs ran for 0 ms, too short to give a rate");
    }
    figures.clat_mean_ms = if n_clat == 0 { f64::NAN } else { clat_sum_ns / n_clat as f64 / 1e6 };
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::super::tests::workload;
    use super::*;

    #[test]
    fn psync_job_gives_each_job_every_fourth_frame() {
        let case = Case { cache: Cache::Cold, mode: Mode::Buffered };
        let job = fio_job(case, &workload(6, 1), false);
        let expected = "; cargo xtask bench io, case cold-buffered: fio's side of\n\
            ;   playsim play /b/seq:1 --no-decode --fps max --io-depth 4 --prefetch 8 --block-size 1048576 --cold --quiet\n\
            [global]\nthread\nrw=read\nbs=1048576\ndirectory=/b/seq\\:1\nfile_service_type=sequential\n\
            invalidate=1\ndirect=0\nfadvise_hint=1\nloops=1\nioengine=psync\n\
            \n[reader0]\nfilename=frame.0000000.dpx:frame.0000004.dpx\n\
            \n[reader1]\nfilename=frame.0000001.dpx:frame.0000005.dpx\n\
            \n[reader2]\nfilename=frame.0000002.dpx\n\
            \n[reader3]\nfilename=frame.0000003.dpx\n";
        assert_eq!(job, expected);
    }

    #[test]
    fn io_uring_job_has_every_block_of_four_frames_in_flight() {
        let case = Case { cache: Cache::Warm, mode: Mode::IoUring };
        let job = fio_job(case, &workload(3, 1), true);
        assert!(
            job.contains("\ninvalidate=0\ndirect=1\nloops=1\nioengine=io_uring\niodepth=136\nfixedbufs=1\n"),
            "{job}"
        );
        assert!(
            job.ends_with("\n[reader]\nfilename=frame.0000000.dpx:frame.0000001.dpx:frame.0000002.dpx\n"),
            "{job}"
        );
        assert!(!job.contains("fadvise_hint"), "{job}");
        assert!(job.contains("--direct --io-engine io_uring --quiet"), "{job}");
    }

    #[test]
    fn shares_never_exceed_the_files_and_colons_are_escaped() {
        let files: Vec<String> = ["a", "b"].map(String::from).to_vec();
        assert_eq!(fio_shares(&files, 4), vec![vec!["a"], vec!["b"]]);
        assert_eq!(fio_file_list(&["x:y", "z"]), "x\\:y:z");
    }

    const FIO_JSON: &str = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"fio version":"fio-3.33","jobs":[
 {"jobname":"reader0","error":0,"read":{"io_bytes":2000000000,"runtime":1000,"total_ios":1000,
  "clat_ns":{"N":1000,"mean":1000000.0}}},
 {"jobname":"reader1","error":0,"read":{"io_bytes":1000000000,"runtime":1250,"total_ios":500,
  "clat_ns":{"N":500,"mean":4000000.0}}}]}"#;

    #[test]
    fn parses_fios_json_as_the_group_aggregate() {
        let fio = parse_fio(FIO_JSON).unwrap();
        assert_eq!(fio, FioFigures { bytes: 3_000_000_000, runtime_s: 1.25, n_ios: 1500, clat_mean_ms: 2.0 });
        let failed = FIO_JSON.replacen(r#""error":0"#, r#""error":5"#, 1);
        assert!(parse_fio(&failed).unwrap_err().to_string().contains("reader0 ended with error 5"));
        let no_runtime = FIO_JSON.replace(r#""runtime""#, r#""other""#);
        assert!(parse_fio(&no_runtime).unwrap_err().to_string().contains("read.runtime"));
        assert!(parse_fio("fio: no jobs").is_err());
    }
}
