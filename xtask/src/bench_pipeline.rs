//! The whole pipeline (`cargo xtask bench pipeline`, issue 8 points 5 and 6) on a 4K DCI DPX
//! sequence from the page cache, read, decoded and packed to v210 by `playsim play`:
//!
//! - **memory**: the process's peak RSS (the report's `memory.peak_rss_bytes`) against the
//!   issue's bound, computed from the run's own settings as its report states them, paced at
//!   a rate the machine keeps up with and at `--fps max`;
//! - **throughput**: the highest rate played with no drop against decode alone on every core,
//!   with the CPU each stage spends per frame and the physical limit they set; and against that
//!   limit, which is what pacing and the engine waste.
//!
//! Every figure comes from playsim's own JSON reports, but for the minor page faults per frame,
//! which each run's process is measured for from outside (`process::run_measured`); each run's
//! report is kept in `<target>/bench/pipeline-*.json`.

use std::fs;
use std::num::NonZeroUsize;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use playsim_report::RunStatus;

use crate::bench::{Bench, BenchRow};
use crate::process;

/// Frames in the sequence; every run loops over them. 24 4K DCI frames are 850 MB of page cache.
const N_FRAMES: u32 = 24;
/// The issue's allowance on top of the frame buffers (code, libraries, runtime, histograms): 64 MB.
const SLACK_BYTES: u64 = 64_000_000;
/// Decoded frames a stream may hold besides those on a decode thread or in the output stage
/// (the issue's "+ 2": the frame just decoded and the next one to output).
const SPARE_DECODED_PER_STREAM: u64 = 2;
/// The pipeline's window: 16 frames (145 ms at 110 fps) with 12 ready before the first falls
/// due. With the default 8 (73 ms at 110 fps) a 2-core machine whose cores are all busy loses a
/// frame now and then to a scheduling hiccup well below its throughput: at 110 fps, 2 and 5
/// drops in 10 s against none with 16, and the highest clean rate was 91 fps against 110. A
/// player that plays at such rates keeps a deeper buffer; the memory rows' bound grows with it.
const WINDOW_ARGS: [&str; 4] = ["--prefetch", "16", "--preroll", "12"];
/// The issue's target for the pipeline against decode alone.
const PIPELINE_TARGET: f64 = 0.9;
/// How many times the bisection halves its low end looking for a rate that plays with no drop.
const MAX_HALVINGS: u32 = 5;
/// How many times the bisection raises its high end by a quarter while it plays with no drop.
const MAX_RAISES: u32 = 4;

/// The section's four rows. The full suite repeats the unpaced runs 3 times over 480 frames and
/// tries each candidate rate twice over 10 s; the short mode (CI's) runs each once, over 96
/// frames and 3 s windows, and stops the bisection at 4% instead of 1%: about 30 s in all.
pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    let n_cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let n_cpus = u32::try_from(n_cpus).unwrap_or(u32::MAX);
    let dir = bench.out_dir.join("pipeline-4k-dci");
    crate::ensure_sequence(&bench.playsim, "4k-dci", N_FRAMES, &dir)?;
    let encoded_bytes = warm_page_cache(&dir)?;
    let runner = Runner { playsim: &bench.playsim, dir: &dir, out_dir: &bench.out_dir };

    // Decode alone on every core: the anchor (see `decode_only_fps`). Of several runs the one
    // with the least decode CPU per frame is kept: the highest anchor, the strictest.
    let frames = bench.pick(480, 96).to_string();
    let threads = n_cpus.to_string();
    let decode_only_args =
        ["--fps", "max", "--output-stage", "none", "--decode-threads", &threads, "--frames", &frames];
    let decode_only =
        repeat(bench.pick(3, 1), |i| runner.play(&format!("decode-only-{i}"), &decode_only_args))?;
    let decode_only = best(&decode_only, |f| decode_only_fps(f, n_cpus))?;

    // The whole pipeline as fast as it goes: its throughput and where the CPU goes (the run
    // with the highest fps, the least disturbed by the rest of the machine), and its memory
    // (the highest peak of the runs).
    // As many output threads as cores, as a player that converts on the CPU would use: with the
    // default one, the stream's single output thread, slowed by sharing its core with the
    // decode and read threads, was the pipeline's limit, with cores idle.
    let output_threads = n_cpus.to_string();
    let max_args = [
        ["--fps", "max", "--output-stage", "v210", "--output-threads", &output_threads, "--frames", &frames]
            .as_slice(),
        &WINDOW_ARGS,
    ]
    .concat();
    let max_runs = repeat(bench.pick(3, 1), |i| runner.play(&format!("max-{i}"), &max_args))?;
    let at_max = best(&max_runs, |f| f.fps)?;
    let max_memory = best(&max_runs, |f| f.peak_rss_bytes as f64)?;

    // The highest rate with no drop, bracketed by the throughput at --fps max.
    let window_s = bench.pick(10, 3);
    let trials = bench.pick(2, 1);
    let resolution = if bench.short { 0.04 } else { 0.01 };
    let mut paced: Vec<(u32, Figures)> = Vec::new();
    let search = bisect(
        centi(at_max.fps * 0.75),
        centi(at_max.fps * 1.05).max(2),
        centi(at_max.fps * resolution).max(1),
        |rate| {
            for trial in 0..trials {
                let fps = format!("{rate}/100");
                let window = format!("{window_s}s");
                let name = format!("paced-{rate}-{trial}");
                let args = [
                    "--fps",
                    &fps,
                    "--duration",
                    &window,
                    "--output-stage",
                    "v210",
                    "--output-threads",
                    &output_threads,
                ];
                let figures = runner.play(&name, &[args.as_slice(), &WINDOW_ARGS].concat())?;
                let passed = figures.played_clean();
                println!(
                    "pipeline at {:.2} fps: {} of {} presented, {} dropped",
                    f64::from(rate) / 100.0,
                    figures.frames_due.saturating_sub(figures.dropped),
                    figures.frames_due,
                    figures.dropped
                );
                paced.push((rate, figures));
                if !passed {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )?;
    let zero_drop_fps = search.best.map_or(0.0, |r| f64::from(r) / 100.0);

    // The memory of a paced run: the worst peak at the best rate found (or, when no rate
    // played clean, at the lowest rate tried: still a paced run).
    let paced_rate = search.best.or_else(|| paced.iter().map(|(r, _)| *r).min()).context("no paced run")?;
    let paced_run = paced
        .iter()
        .filter(|(r, _)| *r == paced_rate)
        .map(|(_, f)| f)
        .max_by_key(|f| f.peak_rss_bytes)
        .context("no paced run at the rate found")?;

    Ok(vec![
        memory_row(&format!("paced at {:.2} fps", f64::from(paced_rate) / 100.0), paced_run, encoded_bytes)?,
        memory_row("--fps max", max_memory, encoded_bytes)?,
        pipeline_row(decode_only, at_max, zero_drop_fps, &search, n_cpus, window_s),
        limit_row(at_max, zero_drop_fps, n_cpus, window_s),
    ])
}

/// Peak RSS against the issue's bound for one run.
fn memory_row(label: &str, run: &Figures, encoded_bytes: u64) -> Result<BenchRow> {
    let decoded_bytes = run.decoded_frame_bytes()?;
    let bound = run.settings.memory_bound(encoded_bytes, decoded_bytes);
    let mb = |b: u64| b as f64 / 1e6;
    let s = &run.settings;
    let per_stream = if s.streams == 1 { String::new() } else { format!("{} streams × ", s.streams) };
    let anchor = format!(
        "bound: {per_stream}(prefetch {} + io depth {}) × {:.1} MB encoded + (decode threads {} + output slots {} \
         + {}) × {:.1} MB decoded + 64 MB",
        s.prefetch,
        s.io_depth,
        mb(encoded_bytes),
        s.decode_threads,
        s.output_slots,
        SPARE_DECODED_PER_STREAM * s.streams,
        mb(decoded_bytes)
    );
    println!(
        "pipeline memory, {label}: peak RSS {:.1} MB against a bound of {:.1} MB",
        mb(run.peak_rss_bytes),
        mb(bound)
    );
    // The v210 output is packed into the encoded pool's buffers; its own pool stays empty.
    let [encoded, decoded, _] = run.pools;
    Ok(BenchRow::time(
        &format!("memory: peak RSS, 4K DCI DPX, decode + v210 output, {label}"),
        "MB",
        mb(run.peak_rss_bytes),
        &anchor,
        mb(bound),
    )
    .extra("encoded (then v210) buffers", encoded.count as f64)
    .extra("encoded (then v210) buffers MB", mb(encoded.bytes))
    .extra("decoded buffers", decoded.count as f64)
    .extra("decoded buffers MB", mb(decoded.bytes))
    .extra("RSS beyond the buffers MB", mb(run.peak_rss_bytes.saturating_sub(run.pool_bytes())))
    .extra("fps", run.fps)
    .extra("dropped", run.dropped as f64)
    .extra(PLAYSIM_FAULTS, run.minor_faults_per_frame()))
}

/// The name of the extra that gives a run's minor page faults per decoded frame, the whole
/// process's over the whole run.
const PLAYSIM_FAULTS: &str = "playsim minor faults/frame";
const ANCHOR_FAULTS: &str = "anchor (decode alone) minor faults/frame";

/// The fps the pipeline plays with no drop against decode alone on every core, with where the
/// CPU goes at `--fps max` and the limit that sets.
fn pipeline_row(
    decode_only: &Figures,
    at_max: &Figures,
    zero_drop_fps: f64,
    search: &Search,
    n_cpus: u32,
    window_s: u32,
) -> BenchRow {
    let anchor = decode_only_fps(decode_only, n_cpus);
    let cost = at_max.cpu_per_frame();
    let limit = cost.limit(n_cpus, at_max.settings.output_slots);
    println!(
        "pipeline: {zero_drop_fps:.2} fps with no drop; decode alone on {n_cpus} cores {anchor:.1} fps; \
         per frame read {:.1} + decode {:.1} + output {:.1} ms CPU, limit {:.1} fps",
        cost.read_s * 1e3,
        cost.decode_s * 1e3,
        cost.output_s * 1e3,
        limit
    );
    // When every rate tried played clean, the answer is only a lower bound.
    let at_least = if search.first_fail.is_none() { "at least " } else { "" };
    let mut row = BenchRow::rate(
        &format!(
            "pipeline: 4K DCI DPX from page cache, read + decode + v210, {at_least}fps with no drop \
             ({window_s} s windows)"
        ),
        "fps",
        zero_drop_fps,
        &format!(
            "decode alone on all {n_cpus} cores: {n_cpus} / decode CPU per frame (output none, --fps max)"
        ),
        anchor,
    )
    .target(PIPELINE_TARGET)
    .extra("decode-only play fps (page-cache reads included)", decode_only.fps)
    .extra("decode ms CPU/frame, decode alone", decode_only.cpu_per_frame().decode_s * 1e3)
    .extra("pipeline fps at --fps max", at_max.fps)
    .extra("read ms CPU/frame", cost.read_s * 1e3)
    .extra("decode ms CPU/frame", cost.decode_s * 1e3)
    .extra("output ms CPU/frame", cost.output_s * 1e3)
    .extra("other ms CPU/frame (engine, page faults)", cost.other_s * 1e3)
    .extra("limit by all cores at read + decode + output CPU fps", cost.limit_by_cores(n_cpus))
    .extra("limit by the output threads fps", cost.limit_by_output(at_max.settings.output_slots))
    .extra("output threads", at_max.settings.output_slots as f64)
    .extra("physical limit fps", limit)
    .extra(
        "highest ratio possible (physical limit / anchor)",
        if anchor > 0.0 { limit / anchor } else { 0.0 },
    )
    .extra("ratio to the physical limit", if limit > 0.0 { zero_drop_fps / limit } else { 0.0 })
    .extra(&format!("{PLAYSIM_FAULTS} at --fps max"), at_max.minor_faults_per_frame())
    .extra(ANCHOR_FAULTS, decode_only.minor_faults_per_frame());
    if let Some(fail) = search.first_fail {
        row = row.extra("lowest fps tried that dropped", f64::from(fail) / 100.0);
    }
    row
}

/// The fps the pipeline plays with no drop against the limit its own stages' CPU sets (the
/// issue's "the pipeline wastes no capacity"): what pacing, queueing and the engine lose, with
/// the work itself as it is. The decode-alone row asks more: that reading and output cost
/// nothing.
fn limit_row(at_max: &Figures, zero_drop_fps: f64, n_cpus: u32, window_s: u32) -> BenchRow {
    let cost = at_max.cpu_per_frame();
    let limit = cost.limit(n_cpus, at_max.settings.output_slots);
    BenchRow::rate(
        &format!(
            "pipeline: 4K DCI DPX from page cache, read + decode + v210, fps with no drop \
             ({window_s} s windows), against its own CPU limit"
        ),
        "fps",
        zero_drop_fps,
        &format!(
            "the lower of {n_cpus} cores / (read + decode + output CPU per frame) and the output \
             threads / output CPU per frame, at --fps max"
        ),
        limit,
    )
    .target(PIPELINE_TARGET)
    .extra(&format!("{PLAYSIM_FAULTS} at --fps max"), at_max.minor_faults_per_frame())
}

/// The anchor: `n_cpus` divided by the decode CPU time of one frame, measured on the decode
/// threads of a run that decodes the same frames on every core with no output stage and no
/// pacing — the frames per second the cores give when they decode and do nothing else.
///
/// Why this and not the frames per second of that run: the run also reads every frame out of
/// the page cache (a 35 MB copy in the kernel, on the same cores), and its wall time carries the
/// engine and whatever else the shared machine was doing; those are costs of the pipeline, which
/// the anchor must not pay. The decode time is each job's thread CPU time
/// (`CLOCK_THREAD_CPUTIME_ID`), taken while every core decodes, so memory bandwidth shared
/// between the decode threads is in it, and time stolen by other processes is not. Criterion's
/// one-thread figure × cores would assume the cores scale perfectly; this measures them together.
/// The run's own wall fps is kept as an extra.
fn decode_only_fps(run: &Figures, n_cpus: u32) -> f64 {
    let per_frame = run.cpu_per_frame().decode_s;
    if per_frame > 0.0 {
        f64::from(n_cpus) / per_frame
    } else {
        0.0
    }
}

/// Runs `run` `n` times (at least once).
fn repeat(n: u32, run: impl FnMut(u32) -> Result<Figures>) -> Result<Vec<Figures>> {
    (0..n.max(1)).map(run).collect()
}

/// The run with the highest `key`.
fn best(runs: &[Figures], key: impl Fn(&Figures) -> f64) -> Result<&Figures> {
    runs.iter().max_by(|a, b| key(a).total_cmp(&key(b))).context("no run")
}

/// Reads every file of `dir` once so that the runs find them in the page cache; returns the
/// size of the first frame (all are the same size).
fn warm_page_cache(dir: &Path) -> Result<u64> {
    let mut size = None;
    for frame_idx in 0..N_FRAMES {
        let n = crate::bench::read_through_page_cache(&dir.join(crate::frame_name(frame_idx)))?;
        size.get_or_insert(n);
    }
    size.context("no frames")
}

/// Runs `playsim play` on the sequence, each run writing its report beside the bench's.
struct Runner<'a> {
    playsim: &'a Path,
    dir: &'a Path,
    out_dir: &'a Path,
}

impl Runner<'_> {
    /// `playsim play DIR --quiet --loop --json <out>/pipeline-NAME.json ARGS`, and its report's figures.
    fn play(&self, name: &str, args: &[&str]) -> Result<Figures> {
        let json = self.out_dir.join(format!("pipeline-{name}.json"));
        let mut cmd = Command::new(self.playsim);
        cmd.arg("play").arg(self.dir).args(["--quiet", "--loop", "--json"]).arg(&json).args(args);
        let (_, cost) = process::run_measured(&mut cmd)?;
        let text = fs::read_to_string(&json).with_context(|| format!("no report {}", json.display()))?;
        let figures = Figures::parse(&text).with_context(|| format!("reading {}", json.display()))?;
        Ok(Figures { minor_faults: cost.minor_faults, ..figures })
    }
}

/// A candidate rate in hundredths of a frame per second, so that every rate tried is exact on the
/// command line (`--fps 2937/100`).
fn centi(fps: f64) -> u32 {
    let c = (fps * 100.0).round();
    if c.is_finite() && c >= 0.0 {
        c.min(f64::from(u32::MAX)) as u32
    } else {
        0
    }
}

/// What a bisection found, rates in hundredths of a frame per second.
#[derive(Debug, PartialEq)]
struct Search {
    /// The highest rate that played with no drop; none when every rate tried dropped.
    best: Option<u32>,
    /// The lowest rate that dropped; none when every rate tried played clean.
    first_fail: Option<u32>,
    /// Every rate tried, in order, and whether it passed.
    tried: Vec<(u32, bool)>,
}

/// The highest rate with no drop, by bisection. `hi` is tried first; while it passes it becomes
/// the low end and the high end is raised by a quarter (at most [`MAX_RAISES`] times: then the
/// last rate is the answer, a lower bound). Otherwise `lo` is tried, halved until a rate passes
/// (at most [`MAX_HALVINGS`] times). Then the bracket is halved until it is no wider than
/// `resolution`.
///
/// Not `playsim capacity --by fps`: it tries whole frames per second only (one is 3% or more of
/// this pipeline's figure here, too coarse against a 0.9× target) and doubles up from 1 fps,
/// spending a window on each of 1, 2, 4, 8 and 16 fps; a bracket from the `--fps max` throughput
/// costs fewer windows. Like capacity's, the answer leans high by up to about `preroll / window`
/// fps: a rate slightly too fast eats the preroll's head start before it drops a frame (5 frames
/// over a 3 s window is 1.7 fps; over 10 s, 0.5).
fn bisect(lo: u32, hi: u32, resolution: u32, mut passes: impl FnMut(u32) -> Result<bool>) -> Result<Search> {
    let mut tried = Vec::new();
    let mut attempt = |rate: u32, tried: &mut Vec<(u32, bool)>| -> Result<bool> {
        let ok = passes(rate)?;
        tried.push((rate, ok));
        Ok(ok)
    };
    let mut high = hi.max(1);
    let mut found = None;
    let mut raises = 0;
    while attempt(high, &mut tried)? {
        found = Some(high);
        if raises == MAX_RAISES {
            return Ok(Search { best: found, first_fail: None, tried });
        }
        raises += 1;
        high = high.saturating_add((high / 4).max(1));
    }
    if found.is_none() {
        let mut low = lo.min(high - 1);
        for _ in 0..=MAX_HALVINGS {
            if low == 0 {
                break;
            }
            if attempt(low, &mut tried)? {
                found = Some(low);
                break;
            }
            high = low;
            low /= 2;
        }
    }
    let Some(mut low) = found else {
        return Ok(Search { best: None, first_fail: Some(high), tried });
    };
    while high - low > resolution.max(1) {
        let middle = low + (high - low) / 2;
        if attempt(middle, &mut tried)? {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(Search { best: Some(low), first_fail: Some(high), tried })
}

/// The settings that size the frame buffers, as a report states them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct BufferSettings {
    streams: u64,
    prefetch: u64,
    io_depth: u64,
    decode_threads: u64,
    output_slots: u64,
}

impl BufferSettings {
    /// Issue 8's bound on peak RSS: (prefetch + reads in flight) × an encoded frame for each
    /// stream, + (decodes in flight + output slots + 2 a stream) × a decoded frame, + 64 MB.
    fn memory_bound(&self, encoded_bytes: u64, decoded_bytes: u64) -> u64 {
        let encoded = self.streams * (self.prefetch + self.io_depth);
        let decoded = self.decode_threads + self.output_slots + SPARE_DECODED_PER_STREAM * self.streams;
        encoded * encoded_bytes + decoded * decoded_bytes + SLACK_BYTES
    }
}

/// One kind of a run's frame buffers, summed over its streams.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Pool {
    count: u64,
    bytes: u64,
}

/// CPU seconds per frame, by stage.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CpuPerFrame {
    read_s: f64,
    decode_s: f64,
    output_s: f64,
    /// The process's CPU time beyond the three stages: the runtime, the presenter, page faults.
    other_s: f64,
}

impl CpuPerFrame {
    /// The frames per second all the cores allow, each frame costing the three stages' CPU.
    fn limit_by_cores(&self, n_cpus: u32) -> f64 {
        finite_or_zero(f64::from(n_cpus) / (self.read_s + self.decode_s + self.output_s))
    }

    /// The frames per second `output_threads` output threads allow, in all.
    fn limit_by_output(&self, output_threads: u64) -> f64 {
        finite_or_zero(output_threads as f64 / self.output_s)
    }

    /// The physical limit: the lower of the two (0 when neither binds, with no CPU measured).
    fn limit(&self, n_cpus: u32, output_threads: u64) -> f64 {
        let (by_cores, by_output) = (self.limit_by_cores(n_cpus), self.limit_by_output(output_threads));
        if by_cores == 0.0 {
            by_output
        } else if by_output == 0.0 {
            by_cores
        } else {
            by_cores.min(by_output)
        }
    }
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// What the bench reads from a `playsim play` report.
#[derive(Clone, Debug, PartialEq)]
struct Figures {
    status: RunStatus,
    /// Frames presented per second of playback, all streams.
    fps: f64,
    frames_due: u64,
    dropped: u64,
    /// Frames decoded and output (samples of the decode and output latencies), all streams.
    decoded: u64,
    read_s: f64,
    decode_s: f64,
    output_s: f64,
    process_s: f64,
    peak_rss_bytes: u64,
    /// Encoded, decoded and output buffers.
    pools: [Pool; 3],
    settings: BufferSettings,
    width: u64,
    height: u64,
    pixel_format: String,
    /// The process's minor page faults, measured from outside (0 in a report read on its own).
    minor_faults: u64,
}

impl Figures {
    fn parse(text: &str) -> Result<Figures> {
        let report = crate::bench::parse_playsim_report(text)?;
        let streams = &report.streams;
        let first = crate::bench::stream(&report, 0)?;
        let sum = |figure: fn(&playsim_report::StreamReport) -> u64| streams.iter().map(figure).sum::<u64>();
        let n_streams = streams.len() as u64;
        // Output threads a stream (`--output-threads`); reports from before it read as 1.
        let output_threads = u64::from(report.settings.output_threads);
        let output_slots = match report.settings.output_stage.as_str() {
            "none" => 0,
            "v210" => output_threads * n_streams,
            other => bail!("unknown output stage {other:?} in the report's settings"),
        };
        let (cpu, settings) = (&report.cpu, &report.settings);
        Ok(Figures {
            status: report.status,
            fps: report.totals.fps,
            frames_due: report.totals.frames_due,
            dropped: report.totals.dropped.total(),
            decoded: sum(|s| s.latency.decode.count),
            read_s: cpu.stages.read_s,
            decode_s: cpu.stages.decode_s,
            output_s: cpu.stages.output_s,
            process_s: cpu.process_user_s + cpu.process_sys_s,
            peak_rss_bytes: report.memory.peak_rss_bytes,
            pools: [
                Pool { count: sum(|s| s.pool_buffers.encoded), bytes: sum(|s| s.pool_buffers.encoded_bytes) },
                Pool { count: sum(|s| s.pool_buffers.decoded), bytes: sum(|s| s.pool_buffers.decoded_bytes) },
                Pool { count: sum(|s| s.pool_buffers.output), bytes: sum(|s| s.pool_buffers.output_bytes) },
            ],
            settings: BufferSettings {
                streams: n_streams,
                prefetch: u64::from(settings.prefetch),
                io_depth: u64::from(settings.io_depth),
                decode_threads: u64::from(settings.decode_threads),
                output_slots,
            },
            width: u64::from(first.source.width),
            height: u64::from(first.source.height),
            pixel_format: first.source.pixel_format.clone(),
            minor_faults: 0,
        })
    }

    /// Minor page faults per decoded frame (NaN when nothing was decoded).
    fn minor_faults_per_frame(&self) -> f64 {
        if self.decoded == 0 {
            f64::NAN
        } else {
            self.minor_faults as f64 / self.decoded as f64
        }
    }

    /// Complete, with frames due and none dropped.
    fn played_clean(&self) -> bool {
        self.status == RunStatus::Complete && self.frames_due > 0 && self.dropped == 0
    }

    fn pool_bytes(&self) -> u64 {
        self.pools.iter().map(|p| p.bytes).sum()
    }

    /// One decoded frame in the canonical format the report names (DPX decodes to rgb48le,
    /// or rgba64le with alpha).
    fn decoded_frame_bytes(&self) -> Result<u64> {
        let bytes_per_pixel = match self.pixel_format.as_str() {
            "rgb48le" => 6,
            "rgba64le" => 8,
            other => bail!(
                "the bound is for DPX decoded to rgb48le or rgba64le, and this run decoded to {other:?}"
            ),
        };
        Ok(self.width * self.height * bytes_per_pixel)
    }

    /// CPU per decoded frame by stage (zero when nothing was decoded).
    fn cpu_per_frame(&self) -> CpuPerFrame {
        let per = |s: f64| if self.decoded > 0 { s / self.decoded as f64 } else { 0.0 };
        let stages = self.read_s + self.decode_s + self.output_s;
        CpuPerFrame {
            read_s: per(self.read_s),
            decode_s: per(self.decode_s),
            output_s: per(self.output_s),
            other_s: per((self.process_s - stages).max(0.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `playsim play` report with the figures of a real one that the bench reads (one 4K DCI
    /// DPX stream at --fps max), changed by `edit`.
    fn report(edit: impl FnOnce(&mut playsim_report::Report)) -> String {
        crate::bench::playsim_report_json(|r| {
            let settings = &mut r.settings;
            settings.fps = "max".into();
            (settings.prefetch, settings.io_depth, settings.decode_threads) = (8, 4, 2);
            (settings.output_stage, settings.output_threads) = ("v210".into(), 1);
            (r.totals.frames_due, r.totals.presented, r.totals.fps) = (96, 96, 30.5);
            r.totals.dropped.output = 1;
            (r.cpu.process_user_s, r.cpu.process_sys_s) = (4.0, 1.0);
            (r.cpu.stages.read_s, r.cpu.stages.decode_s, r.cpu.stages.output_s) = (0.75, 0.625, 2.875);
            (r.memory.peak_rss_bytes, r.memory.rss_bytes, r.memory.pool_bytes) =
                (803_628_032, 512_000_000, 700_000_000);
            let mut stream = playsim_report::StreamReport::default();
            (stream.source.width, stream.source.height) = (4096, 2160);
            stream.source.pixel_format = "rgb48le".into();
            stream.latency.decode.count = 125;
            let pools = &mut stream.pool_buffers;
            (pools.encoded, pools.decoded, pools.output) = (6, 7, 2);
            (pools.encoded_bytes, pools.decoded_bytes, pools.output_bytes) =
                (212_385_792, 371_589_120, 47_554_560);
            r.streams.push(stream);
            edit(r);
        })
    }

    #[test]
    fn reads_a_report() {
        let f = Figures::parse(&report(|_| {})).unwrap();
        assert_eq!(
            f.settings,
            BufferSettings { streams: 1, prefetch: 8, io_depth: 4, decode_threads: 2, output_slots: 1 }
        );
        assert_eq!((f.frames_due, f.dropped, f.decoded, f.peak_rss_bytes), (96, 1, 125, 803_628_032));
        assert_eq!(f.pools[1], Pool { count: 7, bytes: 371_589_120 });
        assert_eq!(f.pool_bytes(), 212_385_792 + 371_589_120 + 47_554_560);
        assert_eq!(f.decoded_frame_bytes().unwrap(), 4096 * 2160 * 6);
        assert!(!f.played_clean(), "one frame dropped");
        let cost = f.cpu_per_frame();
        let ms = [cost.read_s, cost.decode_s, cost.output_s, cost.other_s].map(|s| (s * 1e6).round() / 1e3);
        assert_eq!(ms, [6.0, 5.0, 23.0, 6.0], "ms per frame: 0.75, 0.625, 2.875 and 0.75 s over 125 frames");

        let two = report(|r| r.settings.output_threads = 2);
        assert_eq!(Figures::parse(&two).unwrap().settings.output_slots, 2);

        let none = report(|r| {
            r.settings.output_stage = "none".into();
            r.totals.dropped.output = 0;
        });
        let f = Figures::parse(&none).unwrap();
        assert_eq!(f.settings.output_slots, 0);
        assert!(f.played_clean());

        // The faults come from outside the report: per decoded frame once the runner sets them.
        assert_eq!(f.minor_faults, 0);
        let measured = Figures { minor_faults: 250_000, ..f };
        assert_eq!(measured.minor_faults_per_frame(), 2000.0, "250,000 faults over 125 frames");
        assert!(Figures { decoded: 0, ..measured }.minor_faults_per_frame().is_nan());
    }

    #[test]
    fn refuses_reports_it_cannot_read() {
        let old = report(|_| {}).replace("\"cpu\"", "\"cpu_later\"");
        let err = format!("{:#}", Figures::parse(&old).unwrap_err());
        assert!(err.contains("cpu"), "{err}");
        let odd = report(|r| r.settings.output_stage = "sdi".into());
        assert!(format!("{:#}", Figures::parse(&odd).unwrap_err()).contains("\"sdi\""));
        let yuv =
            Figures::parse(&report(|r| r.streams[0].source.pixel_format = "yuv422p10le".into())).unwrap();
        assert!(yuv.decoded_frame_bytes().unwrap_err().to_string().contains("yuv422p10le"));
        assert!(Figures::parse("[]").is_err());
        assert!(Figures::parse(&report(|r| r.streams.clear())).is_err(), "a report with no stream");
    }

    #[test]
    fn the_issues_memory_bound() {
        let s = BufferSettings { streams: 1, prefetch: 8, io_depth: 4, decode_threads: 2, output_slots: 1 };
        // 4K DCI 10-bit DPX: 35,391,488 bytes of pixels + a 2048-byte header; rgb48 53,084,160 bytes.
        let (encoded, decoded) = (35_393_536, 53_084_160);
        assert_eq!(s.memory_bound(encoded, decoded), 12 * encoded + 5 * decoded + 64_000_000);
        // Two streams double the window and the output slots, not the shared decode pool.
        let two = BufferSettings { streams: 2, output_slots: 2, ..s };
        assert_eq!(two.memory_bound(encoded, decoded), 24 * encoded + 8 * decoded + 64_000_000);
    }

    #[test]
    fn the_limit_is_the_cores_or_the_output_threads() {
        let cost = CpuPerFrame { read_s: 0.006, decode_s: 0.007, output_s: 0.029, other_s: 0.001 };
        // 2 cores / 42 ms = 47.6 fps, but one output thread at 29 ms a frame gives 34.5.
        assert!((cost.limit(2, 1) - 1.0 / 0.029).abs() < 1e-9);
        assert!((cost.limit(1, 1) - 1.0 / 0.042).abs() < 1e-9);
        let no_output = CpuPerFrame { output_s: 0.0, ..cost };
        assert!((no_output.limit(2, 1) - 2.0 / 0.013).abs() < 1e-9);
        assert_eq!(CpuPerFrame { read_s: 0.0, decode_s: 0.0, output_s: 0.0, other_s: 0.0 }.limit(2, 1), 0.0);
        // Two output threads (two streams, or --output-threads 2); then the cores bind.
        assert!((cost.limit_by_output(2) - 2.0 / 0.029).abs() < 1e-9);
        assert!((cost.limit(2, 2) - cost.limit_by_cores(2)).abs() < 1e-9);
        assert_eq!(no_output.limit_by_output(1), 0.0, "no output stage, no output limit");
    }

    #[test]
    fn bisection_finds_the_highest_clean_rate() {
        // Passes up to 29.37 fps.
        let search = bisect(1500, 3150, 10, |rate| Ok(rate <= 2937)).unwrap();
        let (best, fail) = (search.best.unwrap(), search.first_fail.unwrap());
        assert!(best <= 2937 && fail > 2937 && fail - best <= 10, "{search:?}");
        let rates: Vec<u32> = search.tried.iter().map(|(r, _)| *r).collect();
        assert_eq!(&rates[..3], &[3150, 1500, 2325]);
        assert!(search.tried.iter().all(|&(r, ok)| ok == (r <= 2937)));
        // Halving a bracket of 1650 down to 10 takes 8 more tries.
        assert_eq!(search.tried.len(), 2 + 8, "{search:?}");

        // hi passes: the bracket moves up by quarters until a rate drops.
        let search = bisect(1500, 3000, 10, |rate| Ok(rate <= 4000)).unwrap();
        assert_eq!(search.tried[..3], [(3000, true), (3750, true), (4687, false)]);
        let (best, fail) = (search.best.unwrap(), search.first_fail.unwrap());
        assert!(best <= 4000 && fail > 4000 && fail - best <= 10, "{search:?}");

        // Everything passes: after the last raise, that rate is the answer, with no failure.
        let search = bisect(1500, 3150, 10, |_| Ok(true)).unwrap();
        assert_eq!((search.first_fail, search.tried.len()), (None, 1 + MAX_RAISES as usize));
        assert_eq!(search.best, search.tried.last().map(|t| t.0));

        // lo fails: it is halved until a rate passes.
        let search = bisect(1500, 3150, 10, |rate| Ok(rate <= 400)).unwrap();
        assert_eq!(search.tried[..4], [(3150, false), (1500, false), (750, false), (375, true)]);
        let (best, fail) = (search.best.unwrap(), search.first_fail.unwrap());
        assert!(best <= 400 && fail > 400 && fail - best <= 10, "{search:?}");

        // Nothing passes: no answer, and the halving stops.
        let search = bisect(1500, 3150, 10, |_| Ok(false)).unwrap();
        assert_eq!(search.best, None);
        assert_eq!(search.tried.len(), 2 + MAX_HALVINGS as usize);

        // A trial that fails to run ends the search with its error.
        assert!(bisect(1500, 3150, 10, |_| bail!("playsim did not start")).is_err());
    }

    #[test]
    fn rates_are_whole_hundredths() {
        assert_eq!(centi(29.374), 2937);
        assert_eq!(centi(29.375), 2938);
        assert_eq!([centi(-1.0), centi(f64::NAN), centi(f64::INFINITY), centi(1e12)], [0, 0, 0, u32::MAX]);
    }
}
