//! The local-read rows of `cargo xtask bench` (section `io`): playsim reading a 4K DPX sequence
//! with `play --no-decode` (the load frametest and fio put on storage: read, no decode) against
//! fio reading the same files with the same block size and the same reads in flight, in one run.
//!
//! Six cases, cold and warm page cache × buffered `pread`, O_DIRECT `pread` and io_uring
//! (O_DIRECT, the engine's design point), each with two rows: throughput (MB/s, playsim at least
//! 0.95× fio) and CPU seconds per GB (playsim at most fio's: the ratio fio / playsim at least 1.0).
//!
//! The figures are taken the same way on both sides:
//! - Throughput is each program's own: playsim's report (bytes over its playback span, which with
//!   `--fps max` runs from the start to the last frame in) and fio's JSON (bytes over the longest
//!   job's runtime, fio's group aggregate). Neither counts process start-up; the MB/s over the
//!   wall time around the process, which does, is kept as an extra.
//! - CPU is user + system time of the child and its threads, measured from outside
//!   ([`process::run_measured`]), so set-up (fio registering its buffers, playsim listing the
//!   sequence) counts on both sides.
//! - Each measurement is repeated (3 runs, 1 in the short mode), the two programs taking turns
//!   (fio first on even repetitions, playsim on odd ones), and the median of each figure kept.
//!
//! Cold: playsim's `--cold` and fio's `invalidate=1` both drop the files' pages with
//! `posix_fadvise(DONTNEED)` before reading. Warm: the files are read once (buffered) before the
//! case, fio has `invalidate=0`, and `fincore` says how much of them was resident before and after.
//! A warm run reads the sequence several times over (playsim `--loop`, fio `loops=`) so that it
//! lasts long enough for 10 ms CPU ticks, and long against the one-time first touch of playsim's
//! frame buffers, which falls inside its span while fio sets its buffers up before its clock
//! starts (see [`Case::passes`]).
//!
//! fio reads whole blocks only: at `bs=1M` it leaves out the last 0.75 MiB of each 33.75 MiB frame,
//! 2.2% of the bytes, which playsim reads. Every figure is per byte (MB/s, CPU s/GB), so this does
//! not tilt them; the bytes each side read are checked against what it should have read.
//!
//! The physical limits: cold, the disk (here a virtio disk), whose rate through each path fio's
//! figure is; warm and buffered, the kernel's copy from the page cache into the reader's buffer,
//! bounded by memory bandwidth (the DPX rows measure memcpy); O_DIRECT reads the disk whatever the
//! page cache holds, so its warm rows measure what its cold rows do. Warm and buffered, fio has the
//! edge of a destination that stays in cache: each job reads every block into one 1 MiB buffer,
//! while playsim fills a 35 MB frame buffer, as a player must, whose stores go out to memory
//! (4 threads of 1 MiB `pread`s here: ~10 GB/s into one 1 MiB buffer, ~7 GB/s through a frame-sized
//! one). No fio job gives the same 1 MiB reads a frame-sized destination: psync keeps one buffer
//! per job, and a whole-frame `bs` or a buffered io_uring job is slower than playsim for reasons of
//! its own (8-9 GB/s against playsim's 12), so the anchor stays psync with `bs=1M`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use playsim_report::RunStatus;

use crate::bench::{median, Bench, BenchRow};
use crate::bench_nfs::resident_fraction;
use crate::process::{self, ChildCost};

mod fio;
use fio::{fio_job, fio_shares, run_fio};

/// The sequence's preset, and the bytes of one of its frames as `playsim generate` writes them:
/// 4096 × 2160 × 4 bytes of 10-bit RGB and a 2,048-byte header.
const PRESET: &str = "4k-dci";
const FRAME_BYTES: u64 = 35_391_488;
/// Bytes per read request on both sides: playsim's default `--block-size`.
const BLOCK_SIZE: u64 = 1 << 20;
/// Frames in flight on the playsim side: its default `--io-depth`.
const IO_DEPTH: u32 = 4;
/// The targets: throughput at least 0.95× fio's; CPU per GB no more than fio's.
const THROUGHPUT_TARGET: f64 = 0.95;
const CPU_TARGET: f64 = 1.0;
/// Free space to leave on the disk beyond the sequence.
const SPACE_MARGIN: u64 = 1_000_000_000;

/// The rows of every case in [`CASES`].
pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    if !process::on_path("fio") {
        bail!("no fio on PATH; `cargo xtask deps` installs it (Debian package fio)");
    }
    let n_frames = bench.pick(64, 16);
    let seq_dir = bench.out_dir.join(format!("dpx-{PRESET}-io{n_frames}"));
    check_space(&bench.out_dir, &seq_dir, n_frames)?;
    crate::ensure_sequence(&bench.playsim, PRESET, n_frames, &seq_dir)?;
    let dir = fs::canonicalize(&seq_dir).with_context(|| format!("cannot resolve {}", seq_dir.display()))?;
    let (files, file_bytes) = list_frames(&dir)?;
    let work_dir = bench.out_dir.join("io");
    fs::create_dir_all(&work_dir).with_context(|| format!("cannot create {}", work_dir.display()))?;

    let fio_version = process::read(Command::new("fio").arg("--version"))?;
    let mut base = Workload {
        dir,
        files,
        file_bytes,
        block_size: BLOCK_SIZE,
        io_depth: IO_DEPTH,
        passes: 1,
        ring_entries: None,
    };
    sync_files(&base)?;
    let uring = playsim_io_uring(&bench.playsim, &base, &work_dir.join("io_uring-probe.json"));
    // fio's io_uring job takes playsim's ring (its reads in flight) and registers its buffers
    // when playsim did; without a playsim run to ask, when the memlock limit allows it.
    let fixedbufs = match &uring {
        Ok(probe) => {
            base.ring_entries = probe.ring_entries;
            match probe.registered_buffers.as_deref() {
                Some(summary) => summary.starts_with("yes") || summary.starts_with("partly"),
                None => fixed_buffers_allowed(base.io_uring_depth() * base.block_size)?,
            }
        }
        Err(reason) => {
            println!("io_uring rows: playsim not measured: {reason}");
            fixed_buffers_allowed(base.io_uring_depth() * base.block_size)?
        }
    };
    let n_runs = bench.pick(3, 1);
    println!(
        "\nlocal reads: {} frames of {file_bytes} B, {BLOCK_SIZE} B blocks, {IO_DEPTH} frames in flight; \
         {n_runs} run(s) of each side per case, alternating, median kept",
        base.files.len()
    );
    let mut rows = Vec::new();
    for case in CASES {
        let work = Workload { passes: case.passes(bench.short), ..base.clone() };
        let setup = CaseSetup { fio_version: &fio_version, fixedbufs, uring: uring.as_ref().err(), n_runs };
        rows.extend(measure_case(bench, case, &work, &work_dir, &setup)?);
    }
    Ok(rows)
}

/// Whether the page cache is dropped before each run or filled before the case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cache {
    Cold,
    Warm,
}

/// How both programs read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `pread` through the page cache.
    Buffered,
    /// `pread` with O_DIRECT.
    Direct,
    /// io_uring with O_DIRECT: playsim's `--io-engine io_uring`, fio's io_uring engine.
    IoUring,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Case {
    cache: Cache,
    mode: Mode,
}

/// Cold first: the warm cases fill the page cache that a cold run would drop.
const CASES: [Case; 6] = [
    Case { cache: Cache::Cold, mode: Mode::Buffered },
    Case { cache: Cache::Cold, mode: Mode::Direct },
    Case { cache: Cache::Cold, mode: Mode::IoUring },
    Case { cache: Cache::Warm, mode: Mode::Buffered },
    Case { cache: Cache::Warm, mode: Mode::Direct },
    Case { cache: Cache::Warm, mode: Mode::IoUring },
];

impl Case {
    /// The name of its files in `target/bench/io/`, e.g. `cold-buffered`.
    fn key(self) -> String {
        format!("{}-{}", self.cache_word(), self.mode_word())
    }

    /// How a row names it, e.g. `cold, O_DIRECT pread`.
    fn label(self) -> String {
        let how = match self.mode {
            Mode::Buffered => "buffered pread",
            Mode::Direct => "O_DIRECT pread",
            Mode::IoUring => "io_uring O_DIRECT",
        };
        format!("{}, {how}", self.cache_word())
    }

    fn cache_word(self) -> &'static str {
        match self.cache {
            Cache::Cold => "cold",
            Cache::Warm => "warm",
        }
    }

    fn mode_word(self) -> &'static str {
        match self.mode {
            Mode::Buffered => "buffered",
            Mode::Direct => "direct",
            Mode::IoUring => "io_uring",
        }
    }

    fn direct(self) -> bool {
        self.mode != Mode::Buffered
    }

    /// How many times a run reads the sequence (of 64 frames, 16 in the short mode). A warm run
    /// must be long against what playsim does once, inside its span, and fio before its clock
    /// starts: the first touch of playsim's frame buffers (`--io-depth` of them, 35 MB each,
    /// ~8,600 page faults each: ~0.1 s for the four here, their registration with io_uring as
    /// much), while fio's buffers are 1 MiB per job, or registered in its set-up. So a warm
    /// buffered run reads at least 256 frames (about 1 s at 10 GB/s) and a warm O_DIRECT one 64
    /// (about 2 s at 1 GB/s); a cold run reads the sequence once, as a second pass would find
    /// it in the page cache.
    fn passes(self, short: bool) -> u32 {
        match (self.cache, self.mode, short) {
            (Cache::Cold, _, _) => 1,
            (Cache::Warm, Mode::Buffered, false) => 6,
            (Cache::Warm, Mode::Buffered, true) => 16,
            (Cache::Warm, _, false) => 1,
            (Cache::Warm, _, true) => 4,
        }
    }
}

/// What both sides read in one run: `files` of `dir`, `passes` times over.
#[derive(Clone, Debug, PartialEq)]
struct Workload {
    /// An absolute path, so the job file reads the same from anywhere.
    dir: PathBuf,
    /// File names in frame order.
    files: Vec<String>,
    /// The size of every file.
    file_bytes: u64,
    block_size: u64,
    /// playsim's frames in flight.
    io_depth: u32,
    passes: u32,
    /// The submission queue entries of playsim's io_uring ring, which bound its reads in
    /// flight (one entry is kept for its wake-up poll), when a playsim run said.
    ring_entries: Option<u64>,
}

impl Workload {
    /// Read requests per frame on the playsim side (the last one short).
    fn blocks_per_file(&self) -> u64 {
        self.file_bytes.div_ceil(self.block_size)
    }

    /// playsim's reads in flight with io_uring: it submits every block of a frame at once, for
    /// `io_depth` frames, as far as its ring holds them.
    fn io_uring_depth(&self) -> u64 {
        let all = u64::from(self.io_depth) * self.blocks_per_file();
        self.ring_entries.map_or(all, |entries| all.min(entries.saturating_sub(1).max(1)))
    }

    fn n_frames(&self) -> u64 {
        self.files.len() as u64 * u64::from(self.passes)
    }

    /// Bytes playsim reads: every byte of every file, each pass.
    fn playsim_bytes(&self) -> u64 {
        self.n_frames() * self.file_bytes
    }

    /// Bytes fio reads: whole blocks only, so each file's short tail is left out.
    fn fio_bytes(&self) -> u64 {
        self.n_frames() * (self.file_bytes / self.block_size * self.block_size)
    }
}

/// The flags of playsim's run of `case` (after `play DIR`, before `--json FILE`).
fn playsim_flags(case: Case, work: &Workload) -> Vec<String> {
    let mut flags: Vec<String> = ["--no-decode", "--fps", "max"].map(String::from).to_vec();
    flags.extend(["--io-depth".to_owned(), work.io_depth.to_string()]);
    // Twice the reads in flight, so that a slow frame at the head of the window does not stop the
    // next ones from starting (fio's jobs do not wait on one another).
    flags.extend(["--prefetch".to_owned(), (2 * work.io_depth).to_string()]);
    flags.extend(["--block-size".to_owned(), work.block_size.to_string()]);
    if case.direct() {
        flags.push("--direct".to_owned());
    }
    if case.mode == Mode::IoUring {
        flags.extend(["--io-engine".to_owned(), "io_uring".to_owned()]);
    }
    if case.cache == Cache::Cold {
        flags.push("--cold".to_owned());
    }
    if work.passes > 1 {
        flags.extend(["--loop".to_owned(), "--frames".to_owned(), work.n_frames().to_string()]);
    }
    flags.push("--quiet".to_owned());
    flags
}

/// One run of either program.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    bytes: u64,
    /// The program's own rate: bytes over its I/O phase.
    mb_per_s: f64,
    /// Measured from outside: wall, user and system time of the process.
    cost: ChildCost,
    /// Read requests issued.
    n_reads: u64,
    /// fio: the mean completion time of a block; playsim: the mean read time of a frame.
    latency_ms: f64,
}

impl Run {
    fn per_gb(&self, seconds: f64) -> f64 {
        seconds / (self.bytes as f64 / 1e9)
    }

    fn print(&self, side: &str) {
        println!(
            "  {side}: {:.0} MB/s ({:.0} over the process's wall time), {:.3} CPU s/GB (user {:.3}, sys {:.3})",
            self.mb_per_s,
            self.bytes as f64 / 1e6 / self.cost.wall_s,
            self.per_gb(self.cost.cpu_s()),
            self.per_gb(self.cost.user_s),
            self.per_gb(self.cost.sys_s),
        );
    }
}

/// The median of each figure of several runs, on its own.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Figures {
    mb_per_s: f64,
    mb_per_s_min: f64,
    mb_per_s_max: f64,
    /// Bytes over the wall time around the process, start-up included.
    wall_mb_per_s: f64,
    cpu_s_per_gb: f64,
    user_s_per_gb: f64,
    sys_s_per_gb: f64,
    /// CPU seconds per second of wall time: how many CPUs the process kept busy.
    cpus: f64,
    reads_per_frame: f64,
    latency_ms: f64,
    /// Requests in flight on average, by Little's law (rate × mean time): frames for playsim,
    /// blocks for fio, given the request size.
    in_flight: f64,
}

impl Figures {
    /// `request_bytes`: a frame's for playsim, a block's for fio (for [`Figures::in_flight`]).
    fn median(runs: &[Run], n_frames: u64, request_bytes: u64) -> Figures {
        let of = |figure: &dyn Fn(&Run) -> f64| median(runs.iter().map(figure).collect());
        // f64::min and f64::max pass over NaN, so it starts the fold.
        let fold = |pick: fn(f64, f64) -> f64| runs.iter().map(|run| run.mb_per_s).fold(f64::NAN, pick);
        Figures {
            mb_per_s: of(&|run| run.mb_per_s),
            mb_per_s_min: fold(f64::min),
            mb_per_s_max: fold(f64::max),
            wall_mb_per_s: of(&|run| run.bytes as f64 / 1e6 / run.cost.wall_s),
            cpu_s_per_gb: of(&|run| run.per_gb(run.cost.cpu_s())),
            user_s_per_gb: of(&|run| run.per_gb(run.cost.user_s)),
            sys_s_per_gb: of(&|run| run.per_gb(run.cost.sys_s)),
            cpus: of(&|run| run.cost.cpu_s() / run.cost.wall_s),
            reads_per_frame: of(&|run| run.n_reads as f64 / n_frames as f64),
            latency_ms: of(&|run| run.latency_ms),
            in_flight: of(&|run| run.mb_per_s * 1e6 / request_bytes as f64 * run.latency_ms / 1e3),
        }
    }
}

/// What is the same for every case.
struct CaseSetup<'a> {
    fio_version: &'a str,
    fixedbufs: bool,
    /// Why playsim's io_uring runs cannot be made, when they cannot.
    uring: Option<&'a String>,
    n_runs: usize,
}

/// The measured runs of one case, alternating between fio and playsim, and its rows.
fn measure_case(
    bench: &Bench,
    case: Case,
    work: &Workload,
    work_dir: &Path,
    setup: &CaseSetup,
) -> Result<Vec<BenchRow>> {
    let job_path = work_dir.join(format!("{}.fio", case.key()));
    let fio_json = work_dir.join(format!("{}-fio.json", case.key()));
    let playsim_json = work_dir.join(format!("{}-playsim.json", case.key()));
    fs::write(&job_path, fio_job(case, work, setup.fixedbufs))
        .with_context(|| format!("cannot write {}", job_path.display()))?;
    println!("\n{}: {} frames a run, job file {}", case.label(), work.n_frames(), job_path.display());

    let mut resident = None;
    if case.cache == Cache::Warm {
        read_all(work)?;
        let fraction = resident_fraction(&work.dir)?.min(1.0);
        println!("page cache holds {:.1}% of the sequence", fraction * 100.0);
        resident = Some(fraction);
    }
    let mut not_measured =
        if case.mode == Mode::IoUring { setup.uring.map(|reason| reason.to_owned()) } else { None };
    let mut fio_runs = Vec::new();
    let mut playsim_runs = Vec::new();
    let mut fio_failed = false;
    for run_idx in 0..setup.n_runs {
        for fio_turn in [run_idx % 2 == 0, run_idx % 2 == 1] {
            if fio_turn {
                if fio_failed {
                    continue;
                }
                match run_fio(&job_path, &fio_json, work) {
                    Ok(run) => {
                        run.print("fio");
                        fio_runs.push(run);
                    }
                    // io_uring may be refused here (a container's seccomp profile, the sysctl).
                    Err(err) if case.mode == Mode::IoUring => {
                        println!("  fio: io_uring run failed: {err:#}");
                        not_measured = Some(format!("fio failed: {}", first_line(&format!("{err:#}"))));
                        fio_failed = true;
                    }
                    Err(err) => return Err(err),
                }
            } else if not_measured.is_none() {
                match run_playsim(&bench.playsim, case, work, &playsim_json) {
                    Ok(run) => {
                        run.print("playsim");
                        playsim_runs.push(run);
                    }
                    // A failed io_uring run is a row not measured; a failed pread run is a fault.
                    Err(err) if case.mode == Mode::IoUring => {
                        println!("  playsim: io_uring run failed: {err:#}");
                        not_measured = Some(first_line(&format!("{err:#}")));
                    }
                    Err(err) => return Err(err),
                }
            }
        }
    }
    if let Some(before) = resident {
        let after = resident_fraction(&work.dir)?.min(1.0);
        if after < 0.99 {
            println!("warning: only {:.1}% of the sequence stayed in the page cache", after * 100.0);
        }
        resident = Some(before.min(after));
    }
    let anchor = format!("{} (median of {})", anchor_name(case, work, setup), setup.n_runs);
    let fio = (!fio_runs.is_empty()).then(|| Figures::median(&fio_runs, work.n_frames(), work.block_size));
    let (Some(fio), None) = (fio, &not_measured) else {
        let reason = not_measured.unwrap_or_default();
        return Ok(vec![not_measured_row(case, work, &anchor, fio.as_ref(), &reason)]);
    };
    let playsim = Figures::median(&playsim_runs, work.n_frames(), work.file_bytes);
    let rows = case_rows(case, work, &anchor, &playsim, &fio, resident);
    if rows.iter().any(|row| !row.pass) {
        println!("{}: off target; the limit here: {}", case.label(), limit_note(case));
    }
    Ok(rows)
}

/// What the anchor is, for the rows.
fn anchor_name(case: Case, work: &Workload, setup: &CaseSetup) -> String {
    let version = setup.fio_version;
    let (cache, direct) = (u8::from(case.cache == Cache::Cold), u8::from(case.direct()));
    match case.mode {
        Mode::IoUring => format!(
            "{version} io_uring, 1 job, iodepth={} ({} frames × {} blocks{}), direct=1 fixedbufs={} \
             invalidate={cache}",
            work.io_uring_depth(),
            work.io_depth,
            work.blocks_per_file(),
            work.ring_entries.map(|entries| format!(", playsim's ring of {entries}")).unwrap_or_default(),
            u8::from(setup.fixedbufs),
        ),
        Mode::Buffered | Mode::Direct => {
            let n_jobs = fio_shares(&work.files, work.io_depth).len();
            format!(
                "{version} psync, {n_jobs} jobs (job j reads frames j, j+{n_jobs}, …), direct={direct} \
                 invalidate={cache}"
            )
        }
    }
}

/// "4K DPX, 1 MiB blocks, 4 frames in flight, cold, buffered pread".
fn what(case: Case, work: &Workload) -> String {
    let block = if work.block_size.is_multiple_of(1 << 20) {
        format!("{} MiB", work.block_size >> 20)
    } else {
        format!("{} KiB", work.block_size >> 10)
    };
    format!("4K DPX, {block} blocks, {} frames in flight, {}", work.io_depth, case.label())
}

/// The throughput row and the CPU row of a measured case.
fn case_rows(
    case: Case,
    work: &Workload,
    anchor: &str,
    playsim: &Figures,
    fio: &Figures,
    resident: Option<f64>,
) -> Vec<BenchRow> {
    let what = what(case, work);
    let mut throughput = BenchRow::rate(
        &format!("Local read throughput, {what}"),
        "MB/s",
        playsim.mb_per_s,
        &format!("{anchor}, its own runtime"),
        fio.mb_per_s,
    )
    .target(THROUGHPUT_TARGET)
    .extra("playsim_mb_per_s_min", playsim.mb_per_s_min)
    .extra("playsim_mb_per_s_max", playsim.mb_per_s_max)
    .extra("fio_mb_per_s_min", fio.mb_per_s_min)
    .extra("fio_mb_per_s_max", fio.mb_per_s_max)
    .extra("playsim_wall_mb_per_s", playsim.wall_mb_per_s)
    .extra("fio_wall_mb_per_s", fio.wall_mb_per_s)
    .extra("playsim_frame_read_mean_ms", playsim.latency_ms)
    .extra("fio_block_clat_mean_ms", fio.latency_ms)
    .extra("playsim_frames_in_flight", playsim.in_flight)
    .extra("fio_blocks_in_flight", fio.in_flight);
    if let Some(fraction) = resident {
        throughput = throughput.extra("page_cache_resident_fraction", fraction);
    }
    // "No more CPU per GB": lower is better, so the ratio is fio's over playsim's.
    let cpu = BenchRow::time(
        &format!("Local read CPU, {what}"),
        "CPU s/GB",
        playsim.cpu_s_per_gb,
        &format!("{anchor}, user + system CPU of the process"),
        fio.cpu_s_per_gb,
    )
    .target(CPU_TARGET)
    .extra("playsim_user_s_per_gb", playsim.user_s_per_gb)
    .extra("playsim_sys_s_per_gb", playsim.sys_s_per_gb)
    .extra("fio_user_s_per_gb", fio.user_s_per_gb)
    .extra("fio_sys_s_per_gb", fio.sys_s_per_gb)
    .extra("playsim_cpus", playsim.cpus)
    .extra("fio_cpus", fio.cpus)
    .extra("playsim_reads_per_frame", playsim.reads_per_frame)
    .extra("fio_reads_per_frame", fio.reads_per_frame);
    vec![throughput, cpu]
}

/// One row for a case that could not be measured (io_uring refused or fallen back): fio's
/// figures when it ran, and why.
fn not_measured_row(
    case: Case,
    work: &Workload,
    anchor: &str,
    fio: Option<&Figures>,
    reason: &str,
) -> BenchRow {
    let row = BenchRow::rate(
        &format!("Local read throughput, {}: NOT MEASURED ({reason})", what(case, work)),
        "MB/s",
        f64::NAN,
        &format!("{anchor}, its own runtime"),
        fio.map_or(f64::NAN, |fio| fio.mb_per_s),
    )
    .target(THROUGHPUT_TARGET);
    match fio {
        Some(fio) => {
            row.extra("fio_cpu_s_per_gb", fio.cpu_s_per_gb).extra("fio_block_clat_mean_ms", fio.latency_ms)
        }
        None => row,
    }
}

/// What bounds a case, said when playsim misses.
fn limit_note(case: Case) -> &'static str {
    match (case.cache, case.mode) {
        (Cache::Warm, Mode::Buffered) => {
            "the kernel's copy from the page cache into the reader's buffer (memory bandwidth; the DPX \
             rows measure memcpy), into a 35 MB frame buffer for playsim and a 1 MiB one that stays in \
             cache for fio"
        }
        (Cache::Cold, Mode::Buffered) => {
            "the disk through the kernel's read-ahead, and the copy out of the page cache (fio's figure \
             is what this path gives)"
        }
        (Cache::Cold, _) => "the disk at this many reads in flight, which is what fio's figure measures",
        (Cache::Warm, Mode::Direct) => {
            "the disk: O_DIRECT reads it whatever the page cache holds, as in the cold case; for CPU, each \
             O_DIRECT pread pins its block's pages (get_user_pages), which costs more across a 35 MB frame \
             buffer than in fio's one 1 MiB buffer (io_uring's registered buffers are pinned once)"
        }
        (Cache::Warm, _) => "the disk: O_DIRECT reads it whatever the page cache holds, as in the cold case",
    }
}

/// Runs `playsim play` for `case` and checks its report: complete, every byte read, the cache
/// dropped when cold.
fn run_playsim(playsim: &Path, case: Case, work: &Workload, json: &Path) -> Result<Run> {
    remove_stale(json)?;
    let mut cmd = Command::new(playsim);
    cmd.arg("play").arg(&work.dir).args(playsim_flags(case, work)).arg("--json").arg(json);
    let (_, cost) = process::run_measured(&mut cmd)?;
    let text = fs::read_to_string(json).with_context(|| format!("playsim wrote no {}", json.display()))?;
    let report = parse_playsim(&text).with_context(|| format!("in {}", json.display()))?;
    if report.bytes != work.playsim_bytes() {
        bail!(
            "playsim read {} bytes of {}, expected {}",
            report.bytes,
            work.dir.display(),
            work.playsim_bytes()
        );
    }
    if case.cache == Cache::Cold && report.files_dropped < work.files.len() as u64 {
        println!(
            "warning: --cold dropped {} of {} files from the page cache ({})",
            report.files_dropped,
            work.files.len(),
            report.cold_message.as_deref().unwrap_or("no reason given")
        );
    }
    if case.mode == Mode::IoUring {
        if let Some(engine) = report.io_engine.as_deref().filter(|engine| *engine != "io_uring") {
            bail!("playsim read with {engine}, not io_uring (it fell back)");
        }
        if let Some(summary) = report.registered_buffers.as_deref().filter(|s| !s.starts_with("yes")) {
            println!("  playsim's registered buffers: {summary}");
        }
    }
    Ok(Run {
        bytes: report.bytes,
        mb_per_s: report.mb_per_s,
        cost,
        n_reads: report.n_reads,
        latency_ms: report.read_mean_ms,
    })
}

/// What the bench uses of a `playsim play` report.
#[derive(Clone, Debug, PartialEq)]
struct PlaysimFigures {
    bytes: u64,
    mb_per_s: f64,
    n_reads: u64,
    /// The mean time to read a frame.
    read_mean_ms: f64,
    files_dropped: u64,
    cold_message: Option<String>,
    /// The storage options `io_engine` (`pread`, `io_uring`), `ring_entries` and
    /// `registered_buffers` (`yes: ...`, `partly: ...`, `no: ...`, `off`), when the report gives them.
    io_engine: Option<String>,
    ring_entries: Option<u64>,
    registered_buffers: Option<String>,
}

fn parse_playsim(text: &str) -> Result<PlaysimFigures> {
    let report = crate::bench::parse_playsim_report(text)?;
    if report.status != RunStatus::Complete {
        bail!(
            "playsim's run is {}, not complete: {}",
            crate::bench::status_name(report.status),
            report.error.as_deref().unwrap_or("no reason given")
        );
    }
    let [stream] = report.streams.as_slice() else {
        bail!("playsim's report has {} streams, expected 1", report.streams.len());
    };
    let storage = &stream.storage;
    let option = |name: &str| storage.options.get(name).cloned();
    Ok(PlaysimFigures {
        bytes: report.totals.bytes_read,
        mb_per_s: report.totals.mb_per_s,
        n_reads: storage.n_reads,
        read_mean_ms: stream.latency.read.mean_ms,
        files_dropped: storage.cold.files_dropped,
        cold_message: storage.cold.message.clone(),
        io_engine: option("io_engine"),
        ring_entries: option("ring_entries").and_then(|text| text.parse().ok()),
        registered_buffers: option("registered_buffers"),
    })
}

/// What a one-frame io_uring run of playsim said about its ring.
#[derive(Clone, Debug, PartialEq)]
struct UringProbe {
    ring_entries: Option<u64>,
    registered_buffers: Option<String>,
}

/// Whether this playsim can read with io_uring here: it has `--io-engine`, and a one-frame run
/// with it succeeds without falling back. Err says why not.
fn playsim_io_uring(playsim: &Path, work: &Workload, json: &Path) -> Result<UringProbe, String> {
    let help = Command::new(playsim)
        .args(["play", "--help"])
        .output()
        .map_err(|err| format!("cannot run {} play --help: {err}", playsim.display()))?;
    if !String::from_utf8_lossy(&help.stdout).contains("--io-engine") {
        return Err("this playsim has no --io-engine flag: the io_uring engine has not landed".to_owned());
    }
    let probe = Workload { files: work.files.iter().take(1).cloned().collect(), passes: 1, ..work.clone() };
    let mut cmd = Command::new(playsim);
    let case = Case { cache: Cache::Warm, mode: Mode::IoUring };
    cmd.arg("play")
        .arg(&work.dir)
        .args(playsim_flags(case, &probe))
        .args(["--frames", "1", "--json"])
        .arg(json);
    println!("$ {}", process::display(&cmd));
    let output = cmd.output().map_err(|err| format!("cannot run playsim: {err}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let last = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("no message");
        return Err(format!("playsim --io-engine io_uring failed: {}", last.trim()));
    }
    let text = fs::read_to_string(json).map_err(|err| format!("no report {}: {err}", json.display()))?;
    let report = parse_playsim(&text).map_err(|err| format!("{err:#}"))?;
    match report.io_engine.as_deref() {
        Some("io_uring") | None => {
            println!(
                "playsim's io_uring: ring of {:?} entries, registered buffers: {}",
                report.ring_entries,
                report.registered_buffers.as_deref().unwrap_or("not reported")
            );
            Ok(UringProbe {
                ring_entries: report.ring_entries,
                registered_buffers: report.registered_buffers,
            })
        }
        Some(other) => Err(format!("playsim fell back to {other}: {}", first_line(&stderr))),
    }
}

/// Whether fio may register `bytes` of buffers: root (CAP_IPC_LOCK) or a memlock limit that
/// holds them.
fn fixed_buffers_allowed(bytes: u64) -> Result<bool> {
    let is_root = process::read(Command::new("id").arg("-u"))? == "0";
    let limits = fs::read_to_string("/proc/self/limits").context("cannot read /proc/self/limits")?;
    let limit = parse_memlock(&limits).context("no `Max locked memory` in /proc/self/limits")?;
    let allowed = is_root || limit.is_none_or(|limit| limit >= bytes);
    if !allowed {
        println!("fio's io_uring job: fixedbufs=0, {bytes} B of buffers exceed the memlock limit");
    }
    Ok(allowed)
}

/// The soft `Max locked memory` of `/proc/PID/limits` in bytes; None for unlimited.
fn parse_memlock(limits: &str) -> Option<Option<u64>> {
    let rest = limits.lines().find_map(|line| line.strip_prefix("Max locked memory"))?;
    match rest.split_whitespace().next()? {
        "unlimited" => Some(None),
        soft => soft.parse().ok().map(Some),
    }
}

/// The frame files of `dir` in name order, and their one size.
fn list_frames(dir: &Path) -> Result<(Vec<String>, u64)> {
    let mut files = Vec::new();
    let mut sizes = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let name =
            entry.file_name().into_string().map_err(|name| anyhow::anyhow!("odd file name {name:?}"))?;
        sizes.push(entry.metadata()?.len());
        files.push(name);
    }
    files.sort();
    sizes.dedup();
    match sizes.as_slice() {
        [size] if *size > 0 => Ok((files, *size)),
        _ => bail!("{} holds no frames, or frames of different sizes ({sizes:?})", dir.display()),
    }
}

/// Refuses to start when the sequence would not fit with [`SPACE_MARGIN`] to spare.
fn check_space(out_dir: &Path, seq_dir: &Path, n_frames: u32) -> Result<()> {
    let present: u64 = match fs::read_dir(seq_dir) {
        Ok(entries) => entries.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum(),
        Err(_) => 0,
    };
    let needed = (u64::from(n_frames) * FRAME_BYTES).saturating_sub(present) + SPACE_MARGIN;
    let df = process::read(Command::new("df").args(["--output=avail", "-B1"]).arg(out_dir))?;
    let avail = parse_df_avail(&df).with_context(|| format!("cannot parse df's output: {df}"))?;
    if avail < needed {
        bail!(
            "the io rows need {:.1} GB free under {} ({n_frames} frames of {FRAME_BYTES} B and 1 GB to spare); \
             df says {:.1} GB. Free some space, or run `cargo xtask bench --short io` (16 frames)",
            needed as f64 / 1e9,
            out_dir.display(),
            avail as f64 / 1e9
        );
    }
    Ok(())
}

/// The number under `Avail` in `df --output=avail -B1`.
fn parse_df_avail(text: &str) -> Option<u64> {
    text.lines().last()?.trim().parse().ok()
}

/// Writes the files' dirty pages to the disk. Both sides' cold runs drop the files' pages with
/// `posix_fadvise(DONTNEED)`, which leaves dirty pages in memory, and a sequence just generated
/// is dirty: its first cold runs would read much of it from memory.
fn sync_files(work: &Workload) -> Result<()> {
    for name in &work.files {
        let path = work.dir.join(name);
        let file = fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        file.sync_all().with_context(|| format!("cannot sync {}", path.display()))?;
    }
    Ok(())
}

/// Reads every file once, buffered, so that the warm runs find it in the page cache.
fn read_all(work: &Workload) -> Result<()> {
    for name in &work.files {
        crate::bench::read_through_page_cache(&work.dir.join(name))?;
    }
    Ok(())
}

/// Removes an output of an earlier run, so that a run that writes none is not read as this one.
fn remove_stale(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// The first line of a message, at most 160 characters, for a row's name.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
    line.chars().take(160).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn workload(n_files: usize, passes: u32) -> Workload {
        Workload {
            dir: PathBuf::from("/b/seq:1"),
            files: (0..n_files).map(|i| format!("frame.{i:07}.dpx")).collect(),
            file_bytes: FRAME_BYTES,
            block_size: BLOCK_SIZE,
            io_depth: 4,
            passes,
            ring_entries: None,
        }
    }

    #[test]
    fn a_frame_is_34_blocks_of_which_fio_reads_33() {
        let work = workload(16, 2);
        assert_eq!(work.blocks_per_file(), 34);
        assert_eq!(work.io_uring_depth(), 136);
        // playsim's default ring of 128 entries keeps one for its wake-up poll.
        assert_eq!(Workload { ring_entries: Some(128), ..work.clone() }.io_uring_depth(), 127);
        assert_eq!(Workload { ring_entries: Some(256), ..work.clone() }.io_uring_depth(), 136);
        assert_eq!(work.playsim_bytes(), 32 * FRAME_BYTES);
        assert_eq!(work.fio_bytes(), 32 * 33 * (1 << 20));
    }

    #[test]
    fn warm_runs_are_long_against_the_buffers_first_touch_and_cold_runs_read_once() {
        let passes = |cache, mode, short| Case { cache, mode }.passes(short);
        for mode in [Mode::Buffered, Mode::Direct, Mode::IoUring] {
            assert_eq!((passes(Cache::Cold, mode, false), passes(Cache::Cold, mode, true)), (1, 1));
        }
        // Frames a run: 64 in the full suite, 16 in the short mode, times the passes.
        assert_eq!(
            (64 * passes(Cache::Warm, Mode::Buffered, false), 16 * passes(Cache::Warm, Mode::Buffered, true)),
            (384, 256)
        );
        for mode in [Mode::Direct, Mode::IoUring] {
            assert_eq!(
                (64 * passes(Cache::Warm, mode, false), 16 * passes(Cache::Warm, mode, true)),
                (64, 64)
            );
        }
    }

    #[test]
    fn warm_buffered_playsim_loops_over_the_passes() {
        let case = Case { cache: Cache::Warm, mode: Mode::Buffered };
        let flags = playsim_flags(case, &workload(16, 4)).join(" ");
        assert_eq!(
            flags,
            "--no-decode --fps max --io-depth 4 --prefetch 8 --block-size 1048576 --loop --frames 64 --quiet"
        );
        assert!(fio_job(case, &workload(16, 4), false).contains("\nloops=4\n"));
    }

    #[test]
    fn parses_playsims_report() {
        let report = |edit: &dyn Fn(&mut playsim_report::Report)| {
            crate::bench::playsim_report_json(|r| {
                (r.totals.bytes_read, r.totals.mb_per_s) = (566_263_808, 1234.5);
                let mut stream = playsim_report::StreamReport::default();
                stream.storage.n_reads = 544;
                (stream.storage.cold.requested, stream.storage.cold.files_dropped) = (true, 16);
                stream.latency.read.mean_ms = 25.5;
                r.streams.push(stream);
                edit(r);
            })
        };
        let expected = PlaysimFigures {
            bytes: 566_263_808,
            mb_per_s: 1234.5,
            n_reads: 544,
            read_mean_ms: 25.5,
            files_dropped: 16,
            cold_message: None,
            io_engine: None,
            ring_entries: None,
            registered_buffers: None,
        };
        assert_eq!(parse_playsim(&report(&|_| {})).unwrap(), expected);
        let uring = parse_playsim(&report(&|r| {
            let options =
                [("io_engine", "io_uring"), ("ring_entries", "128"), ("registered_buffers", "yes: 8")];
            r.streams[0].storage.options = options.map(|(k, v)| (k.to_owned(), v.to_owned())).into();
        }))
        .unwrap();
        assert_eq!(uring.io_engine.as_deref(), Some("io_uring"));
        assert_eq!(uring.ring_entries, Some(128));
        assert_eq!(uring.registered_buffers.as_deref(), Some("yes: 8"));
        let failed = report(&|r| r.status = RunStatus::Failed);
        assert!(parse_playsim(&failed).unwrap_err().to_string().contains("not complete"));
    }

    fn run(mb_per_s: f64, user_s: f64, sys_s: f64) -> Run {
        let bytes = 2_000_000_000;
        let wall_s = bytes as f64 / 1e6 / mb_per_s + 0.5;
        Run {
            bytes,
            mb_per_s,
            cost: ChildCost { wall_s, user_s, sys_s, minor_faults: 0 },
            n_reads: 2040,
            latency_ms: 3.0,
        }
    }

    #[test]
    fn rows_take_the_median_and_hold_playsim_to_the_targets() {
        let work = workload(60, 1);
        let case = Case { cache: Cache::Cold, mode: Mode::Direct };
        let runs = [run(1000.0, 0.1, 0.3), run(960.0, 0.1, 0.5), run(900.0, 0.1, 0.1)];
        let playsim = Figures::median(&runs, 60, FRAME_BYTES);
        let runs = [run(1000.0, 0.1, 0.3), run(1010.0, 0.1, 0.3), run(990.0, 0.1, 0.3)];
        let fio = Figures::median(&runs, 60, BLOCK_SIZE);
        assert_eq!((playsim.mb_per_s, playsim.mb_per_s_min, playsim.mb_per_s_max), (960.0, 900.0, 1000.0));
        assert!((playsim.cpu_s_per_gb - 0.2).abs() < 1e-9, "{playsim:?}");
        assert!((playsim.reads_per_frame - 34.0).abs() < 1e-9);
        // Little's law: 1000 MB/s of 1 MiB blocks, each 3 ms in flight.
        assert!((fio.in_flight - 1e9 / 1_048_576.0 * 0.003).abs() < 1e-9, "{fio:?}");
        let rows = case_rows(case, &work, "fio", &playsim, &fio, None);
        let [throughput, cpu] = rows.as_slice() else { panic!("two rows") };
        assert_eq!(
            throughput.name,
            "Local read throughput, 4K DPX, 1 MiB blocks, 4 frames in flight, cold, O_DIRECT pread"
        );
        assert!((throughput.ratio - 0.96).abs() < 1e-9 && throughput.pass, "{}", throughput.ratio);
        // 0.2 CPU s/GB against fio's 0.2: ratio 1.0, the ceiling itself passes.
        assert!((cpu.ratio - 1.0).abs() < 1e-9 && cpu.pass, "{}", cpu.ratio);
        let slower = Figures { mb_per_s: 940.0, cpu_s_per_gb: 0.25, ..playsim };
        let rows = case_rows(case, &work, "fio", &slower, &fio, Some(1.0));
        assert!(!rows[0].pass && !rows[1].pass);
        assert_eq!(rows[0].extra.get("page_cache_resident_fraction"), Some(&1.0));
    }

    #[test]
    fn a_row_not_measured_says_why_and_fails() {
        let fio = Figures::median(&[run(1000.0, 0.1, 0.3)], 60, BLOCK_SIZE);
        let case = Case { cache: Cache::Cold, mode: Mode::IoUring };
        let row = not_measured_row(case, &workload(60, 1), "fio", Some(&fio), "no --io-engine");
        assert!(row.name.ends_with("io_uring O_DIRECT: NOT MEASURED (no --io-engine)"), "{}", row.name);
        assert!(row.playsim.is_nan() && !row.pass);
        assert_eq!(row.anchor, 1000.0);
        assert_eq!(row.extra.get("fio_cpu_s_per_gb"), Some(&0.2));
        let row = not_measured_row(case, &workload(60, 1), "fio", None, "fio failed: EPERM");
        assert!(row.anchor.is_nan() && row.extra.is_empty() && !row.pass);
    }

    #[test]
    fn parses_memlock_and_df() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
            Max locked memory         8388608              8388608              bytes     \n";
        assert_eq!(parse_memlock(limits), Some(Some(8_388_608)));
        let unlimited = limits.replace("8388608              8388608", "unlimited            unlimited");
        assert_eq!(parse_memlock(&unlimited), Some(None));
        assert_eq!(parse_memlock("Max open files 1024 1024 files\n"), None);
        assert_eq!(parse_df_avail("      Avail\n37580963840\n"), Some(37_580_963_840));
        assert_eq!(parse_df_avail("Avail\n"), None);
    }
}
