//! The fidelity section of `cargo xtask bench` (issue 16, point 7): does playsim present what
//! the machine can sustain when asked for more?
//!
//! Each row measures the sustainable rate S (the `fps_achieved` of `playsim play SRC --fps max
//! --loop --frames 240` with the row's flags and a warm cache, summed over streams, median of
//! 3; 48 frames for the slow EXR row), then plays at k·S for k = 1.1, 1.25, 1.5, 2 and 3
//! (`--fps k·S --loop --duration 6s`, the same flags; a longer window where fewer than 20
//! frames would fall due after the preroll at k = 1.1), the runs alternating between the k
//! values, 3 rounds, and keeps the run with the median presented rate. The presented rate is
//! the frames presented ÷ (last due time − first due time) from the report's timeline, each
//! stream's preroll left out (those frames are ready before t0 by construction), summed over
//! streams. Target: presented ÷ S ≥ 0.9 for every k: a player asked for more than it can do
//! should still show about all it can.
//!
//! The storage-short rows read raw frames (`frame_bytes=`) from a `sim://` link, so S is known
//! exactly, bandwidth ÷ frame bytes (`--fps max` runs check it); their target is the drop
//! fraction within 1.1× of the ideal 1 − 1/k, with at least 600 frames due after the preroll.
//!
//! Every run's report is kept in `<target>/bench/fidelity/`, and the section's table (a row per
//! source, a column per k) in `<target>/bench/fidelity.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use playsim_core::DropCounters;
use playsim_report::RunStatus;
use playsim_testserver::NfsServer;

use crate::bench::{median, read_through_page_cache, Bench, BenchRow};
use crate::process;

/// The k: the rate asked ÷ S.
const KS: [f64; 5] = [1.1, 1.25, 1.5, 2.0, 3.0];
/// The short mode's (CI's): one mild and one strong overload.
const KS_SHORT: [f64; 2] = [1.25, 2.0];
/// Presented ÷ S must reach this at every k.
const PRESENTED_TARGET: f64 = 0.9;
/// A storage-short row's drop fraction may be at most this many times the ideal 1 − 1/k.
const DROP_SLACK: f64 = 1.1;
/// Frames a storage-short row's paced runs must have due after the preroll, at the lowest k.
const MIN_FRAMES_DUE: f64 = 600.0;
/// The same for the other rows: enough that one frame is 5% of the figure. A row whose S is a
/// few fps (PIZ EXR on 2 cores) plays longer windows than 6 s.
const MIN_FRAMES_DUE_MEASURED: f64 = 20.0;
/// playsim's default `--preroll`, which every row keeps: the frames before those counted.
const PREROLL: f64 = 5.0;
/// Frames of the `--fps max` run that measures S (the definition).
const S_FRAMES: u32 = 240;
/// The EXR row's: 4 passes of its 12 frames. It decodes at 2–5 fps on 2 cores, where 240
/// frames took 2–3 minutes a run.
const EXR_S_FRAMES: u32 = 48;
/// Paced window, in seconds (the issue's `--duration 6s`); the short mode's.
const WINDOW_S: f64 = 6.0;
const WINDOW_S_SHORT: f64 = 3.0;
/// Runs of S, and rounds of paced runs (each round plays every k once).
const RUNS: usize = 3;
/// DPX frames: the pipeline section's sequence (24 4K DCI frames, 850 MB), reused.
const DPX_N_FRAMES: u32 = 24;
const DPX_DIR: &str = "pipeline-4k-dci";
/// 4K DCI half RGBA PIZ EXR frames, looped.
const EXR_N_FRAMES: u32 = 12;
/// The UHD clips of `cargo xtask fixtures`.
const PRORES_CLIP: &str = "prores-422hq-uhd.mov";
const H264_CLIP: &str = "h264-uhd.mp4";

/// The section's rows: every source in the full suite; the DPX page-cache row at
/// `--decode-threads 1 --output-stage none` and one `sim://` row, at k = 1.25 and 2, one run
/// each, in the short mode.
pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    let started = Instant::now();
    let plan = Plan::new(bench.short);
    let runs_dir = bench.out_dir.join("fidelity");
    fs::create_dir_all(&runs_dir).with_context(|| format!("cannot create {}", runs_dir.display()))?;
    let runner = Runner { playsim: &bench.playsim, dir: &runs_dir, plan: &plan };
    let mut results = Vec::new();

    let dpx_dir = bench.out_dir.join(DPX_DIR);
    crate::ensure_sequence(&bench.playsim, "4k-dci", DPX_N_FRAMES, &dpx_dir)?;
    let dpx_files = sequence_files(&dpx_dir)?;
    let one_thread = args(&["--decode-threads", "1", "--output-stage", "none"]);
    let page_cache = |id: &str, label: &str, flags: &[String]| Row {
        id: id.to_owned(),
        label: format!("4K DCI DPX, page cache, {label}"),
        source: dpx_dir.as_os_str().to_owned(),
        args: flags.to_vec(),
        n_streams: 1,
        s_frames: S_FRAMES,
        warm: dpx_files.clone(),
        exact_s: None,
    };
    results.push(runner.row(&page_cache("dpx-1t", "--decode-threads 1 --output-stage none", &one_thread))?);
    if !bench.short {
        let defaults = page_cache("dpx", "defaults (v210, all threads)", &[]);
        results.push(runner.row(&defaults)?);
        let direct = |id: &str, label: &str, flags: &[String]| Row {
            label: format!("4K DCI DPX, O_DIRECT, {label}"),
            args: [args(&["--direct"]), flags.to_vec()].concat(),
            warm: Vec::new(),
            ..page_cache(id, label, flags)
        };
        results.push(runner.row(&direct(
            "dpx-direct-1t",
            "--decode-threads 1 --output-stage none",
            &one_thread,
        ))?);
        results.push(runner.row(&direct("dpx-direct", "defaults (v210, all threads)", &[]))?);
        results.extend(nfs_rows(&runner, &dpx_dir, &one_thread)?);
        results.push(runner.row(&exr_row(bench)?)?);
        let clips = crate::fixtures::ensure_full()?;
        for (id, label, clip) in
            [("prores", "UHD ProRes 422 HQ", PRORES_CLIP), ("h264", "UHD H.264", H264_CLIP)]
        {
            let file = clips.join(clip);
            results.push(runner.row(&Row {
                id: id.to_owned(),
                label: format!("{label}, page cache, defaults"),
                source: file.as_os_str().to_owned(),
                args: Vec::new(),
                n_streams: 1,
                s_frames: S_FRAMES,
                warm: vec![file],
                exact_s: None,
            })?);
        }
        for n_streams in [2, 4] {
            results.push(runner.row(&Row {
                id: format!("dpx-{n_streams}-streams"),
                label: format!("4K DCI DPX, page cache, {n_streams} streams on one pool, defaults"),
                n_streams,
                ..defaults.clone()
            })?);
        }
    }
    for sim in sim_rows(bench.short) {
        results.push(runner.row(&sim)?);
    }

    let table = render_table(&results, &plan);
    let table_path = bench.out_dir.join("fidelity.md");
    fs::write(&table_path, &table).with_context(|| format!("cannot write {}", table_path.display()))?;
    println!("\n{table}");
    println!(
        "fidelity: {} rows in {:.0} s (reports in {}, table in {})",
        results.len(),
        started.elapsed().as_secs_f64(),
        runs_dir.display(),
        table_path.display()
    );
    Ok(results.iter().flat_map(RowResult::bench_rows).collect())
}

/// How much each row measures: the full suite's or the short mode's.
struct Plan {
    ks: Vec<f64>,
    s_runs: usize,
    rounds: usize,
    window_s: f64,
}

impl Plan {
    fn new(short: bool) -> Plan {
        if short {
            Plan { ks: KS_SHORT.to_vec(), s_runs: 1, rounds: 1, window_s: WINDOW_S_SHORT }
        } else {
            Plan { ks: KS.to_vec(), s_runs: RUNS, rounds: RUNS, window_s: WINDOW_S }
        }
    }

    /// The paced window of a row with sustainable rate `s`: the plan's, or longer (in tenths of
    /// a second) where the lowest k would otherwise have fewer than `min_frames_due` frames due
    /// after the preroll.
    fn window_s(&self, min_frames_due: f64, s: f64) -> f64 {
        let k_min = self.ks.iter().copied().fold(f64::INFINITY, f64::min);
        self.window_s.max(((min_frames_due + PREROLL) / (k_min * s) * 10.0).ceil() / 10.0)
    }
}

/// One source with the flags both its S run and its paced runs get.
#[derive(Clone, Debug)]
struct Row {
    /// Names the row's report files.
    id: String,
    label: String,
    /// A path or a URL.
    source: std::ffi::OsString,
    args: Vec<String>,
    n_streams: u32,
    /// Frames of each `--fps max` run that measures S.
    s_frames: u32,
    /// Files read through the page cache before the row's runs (none for O_DIRECT and sim://).
    warm: Vec<PathBuf>,
    /// A storage-short row's S: bandwidth ÷ frame bytes.
    exact_s: Option<f64>,
}

/// The DPX rows over `nfs://` from NFS-Ganesha on loopback: the sequence hard-linked into the
/// export, read by playsim's own client.
fn nfs_rows(runner: &Runner, dpx_dir: &Path, one_thread: &[String]) -> Result<Vec<RowResult>> {
    let server = NfsServer::start().context("cannot start NFS-Ganesha for the fidelity rows")?;
    let export_seq = server.export_dir().join("fidelity-dpx");
    crate::bench_nfs::link_sequence(dpx_dir, &export_seq)?;
    let row = |id: &str, label: &str, flags: &[String]| Row {
        id: id.to_owned(),
        label: format!("4K DCI DPX, nfs:// (Ganesha, loopback), {label}"),
        source: server.url("fidelity-dpx/").into(),
        args: flags.to_vec(),
        n_streams: 1,
        s_frames: S_FRAMES,
        // The export's files are the local ones, so this warms the server's page cache.
        warm: sequence_files(&export_seq).unwrap_or_default(),
        exact_s: None,
    };
    let rows = [
        row("nfs-1t", "--decode-threads 1 --output-stage none", one_thread),
        row("nfs", "defaults (v210, all threads)", &[]),
    ];
    rows.iter().map(|r| runner.row(r)).collect()
}

/// The 4K PIZ EXR row, on a sequence generated once under `<target>/bench/fidelity-exr-4k-dci`.
fn exr_row(bench: &Bench) -> Result<Row> {
    let dir = bench.out_dir.join("fidelity-exr-4k-dci");
    let files: Vec<PathBuf> = (0..EXR_N_FRAMES).map(|i| dir.join(format!("frame.{i:07}.exr"))).collect();
    if files.iter().all(|f| fs::metadata(f).is_ok_and(|m| m.len() > 0)) {
        println!("reusing the {EXR_N_FRAMES} frames in {}", dir.display());
    } else {
        if dir.exists() {
            fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
        }
        let n_frames = EXR_N_FRAMES.to_string();
        let gen = ["generate", "--preset", "4k-dci", "--format", "exr", "--compression", "piz", "--frames"];
        process::run(Command::new(&bench.playsim).args(gen).arg(&n_frames).arg(&dir))?;
    }
    Ok(Row {
        id: "exr-piz".to_owned(),
        label: "4K DCI half RGBA PIZ EXR, page cache, defaults".to_owned(),
        source: dir.into_os_string(),
        args: Vec::new(),
        n_streams: 1,
        s_frames: EXR_S_FRAMES,
        warm: files,
        exact_s: None,
    })
}

/// The storage-short link: 1000 MB/s (SI) for raw frames of 10 MB, so S = 100 fps exactly, and
/// 6 s at k = 1.1 have 660 frames due. The link adds 1 ms of latency to every frame read.
const SIM_BW_MB_PER_S: u64 = 1000;
const SIM_FRAME_BYTES: u64 = 10_000_000;

/// The storage-short rows: raw frames over a modelled link, S = bandwidth ÷ frame bytes exactly.
/// `--no-decode`: a raw frame is ready when its bytes are in.
fn sim_rows(short: bool) -> Vec<Row> {
    let row = |id: &str, label: &str, keys: &str, n_streams: u32| Row {
        id: id.to_owned(),
        label: format!(
            "sim:// raw {} MB frames, {SIM_BW_MB_PER_S} MB/s, {label}",
            SIM_FRAME_BYTES / 1_000_000
        ),
        source: format!(
            "sim://fidelity?bw={SIM_BW_MB_PER_S}MB/s&frame_bytes={SIM_FRAME_BYTES}&frames=240&lat=1ms{keys}"
        )
        .into(),
        args: args(&["--no-decode"]),
        n_streams,
        s_frames: S_FRAMES,
        warm: Vec::new(),
        exact_s: Some(sim_exact_s(SIM_BW_MB_PER_S as f64 * 1e6, SIM_FRAME_BYTES as f64)),
    };
    let mut rows = vec![row("sim", "lat 1 ms", "", 1)];
    if !short {
        rows.push(row("sim-jitter", "lat 1 ms, jitter 2 ms exp (seed 1)", "&jitter=2ms&dist=exp&seed=1", 1));
        // Two streams of one URL share its link: S is the link's, split between them.
        rows.push(row("sim-2-streams", "lat 1 ms, 2 streams sharing the link", "", 2));
    }
    rows
}

/// S of raw frames over a link: bandwidth ÷ frame bytes.
fn sim_exact_s(bw_bytes_per_s: f64, frame_bytes: f64) -> f64 {
    bw_bytes_per_s / frame_bytes
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// The frame files of a directory, in name order.
fn sequence_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    Ok(files)
}

/// Runs `playsim play` for the rows, each run writing its report into `dir`.
struct Runner<'a> {
    playsim: &'a Path,
    dir: &'a Path,
    plan: &'a Plan,
}

impl Runner<'_> {
    /// S, then the paced runs alternating between the k values, `plan.rounds` times.
    fn row(&self, row: &Row) -> Result<RowResult> {
        let started = Instant::now();
        println!("\nfidelity: {}", row.label);
        for file in &row.warm {
            read_through_page_cache(file)?;
        }
        let frames = row.s_frames.to_string();
        let s_runs = (0..self.plan.s_runs.max(1))
            .map(|i| self.play(row, &format!("s{i}"), &["--fps", "max", "--frames", &frames]))
            .collect::<Result<Vec<_>>>()?;
        let measured_s: Vec<f64> = s_runs.iter().map(|r| r.fps_achieved).collect();
        let s = row.exact_s.unwrap_or_else(|| median(measured_s.clone()));
        if !(s.is_finite() && s > 0.0) {
            bail!("{}: S is {s} fps: nothing was presented at --fps max", row.label);
        }
        match row.exact_s {
            Some(exact) => println!(
                "  S = {exact:.2} fps exactly (bandwidth ÷ frame bytes); --fps max measured {:.2} ({:.3} of it)",
                median(measured_s.clone()),
                median(measured_s.clone()) / exact
            ),
            None => println!("  S = {s:.2} fps (median of {:?})", rounded(&measured_s)),
        }
        let min_frames_due = if row.exact_s.is_some() { MIN_FRAMES_DUE } else { MIN_FRAMES_DUE_MEASURED };
        let window_s = self.plan.window_s(min_frames_due, s);
        let window = format!("{window_s}s");
        let mut paced: Vec<Vec<RunFigures>> = vec![Vec::new(); self.plan.ks.len()];
        for round in 0..self.plan.rounds.max(1) {
            for (k, runs) in self.plan.ks.iter().zip(&mut paced) {
                let per_stream = fps_arg(k * s / f64::from(row.n_streams));
                let name = format!("k{k}-{round}");
                let run = self.play(row, &name, &["--fps", &per_stream, "--duration", &window])?;
                if !run.presented_fps().is_finite() {
                    bail!(
                        "{}: the run at k = {k} had fewer than two frames due after its preroll",
                        row.label
                    );
                }
                println!(
                    "  k {k}: presented ÷ S {:.3}, {} of {} due presented, drops {}",
                    run.presented_fps() / s,
                    run.presented,
                    run.frames_due,
                    describe(&run.dropped)
                );
                runs.push(run);
            }
        }
        let ks = self.plan.ks.iter().zip(paced).map(|(&k, runs)| KResult::new(k, s, runs)).collect();
        println!("  {} s for the row", started.elapsed().as_secs());
        Ok(RowResult { row: row.clone(), s, measured_s, window_s, ks })
    }

    /// `playsim play SOURCE [--streams N] ARGS --quiet --loop --json <dir>/ID-NAME.json RUN_ARGS`.
    fn play(&self, row: &Row, name: &str, run_args: &[&str]) -> Result<RunFigures> {
        let json = self.dir.join(format!("{}-{name}.json", row.id));
        let mut cmd = Command::new(self.playsim);
        cmd.arg("play").arg(&row.source);
        if row.n_streams > 1 {
            cmd.args(["--streams", &row.n_streams.to_string()]);
        }
        cmd.args(&row.args).args(["--quiet", "--loop", "--json"]).arg(&json).args(run_args);
        process::run_capture(&mut cmd)?;
        let text = fs::read_to_string(&json).with_context(|| format!("no report {}", json.display()))?;
        RunFigures::parse(&text).with_context(|| format!("reading {}", json.display()))
    }
}

/// `--fps` for a rate: a decimal with up to 3 places (`141.6`), or `N/1000` above the 1000 fps
/// the decimal form accepts; never 0.
fn fps_arg(fps: f64) -> String {
    let milli = (fps * 1000.0).round().max(1.0) as u64;
    if milli > 1_000_000 {
        return format!("{milli}/1000");
    }
    let text = format!("{}.{:03}", milli / 1000, milli % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn rounded(values: &[f64]) -> Vec<f64> {
    values.iter().map(|v| (v * 100.0).round() / 100.0).collect()
}

/// `storage 3, decode 0, output 1, unreadable 0`, or `none`.
fn describe(drops: &DropCounters) -> String {
    if drops.total() == 0 {
        return "none".to_owned();
    }
    let parts: Vec<String> = drops.iter().map(|(cause, n)| format!("{} {n}", cause.word())).collect();
    parts.join(", ")
}

/// `s3 d0 o1 u0` for the table.
fn terse(drops: &DropCounters) -> String {
    format!("s{} d{} o{} u{}", drops.storage, drops.decode, drops.output, drops.unreadable)
}

/// A frame of a stream's timeline that fell due.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DueFrame {
    frame_idx: u64,
    due_ns: u64,
    presented: bool,
}

/// A stream's presented rate: frames presented ÷ (last due − first due), leaving out the first
/// `preroll` frames, which are ready before t0 by construction. `None` with fewer than two
/// frames due after them.
fn presented_rate(frames: &[DueFrame], preroll: u64) -> Option<f64> {
    let after: Vec<&DueFrame> = frames.iter().filter(|f| f.frame_idx >= preroll).collect();
    let first = after.iter().map(|f| f.due_ns).min()?;
    let last = after.iter().map(|f| f.due_ns).max()?;
    if last <= first {
        return None;
    }
    let presented = after.iter().filter(|f| f.presented).count() as f64;
    Some(presented / ((last - first) as f64 / 1e9))
}

/// What the section reads from a `playsim play` report.
#[derive(Clone, Debug, PartialEq)]
struct RunFigures {
    /// `streams[].fps_achieved`, summed.
    fps_achieved: f64,
    /// Each stream's presented rate ([`presented_rate`]).
    stream_rates: Vec<f64>,
    /// Frames due and presented after the preroll, all streams.
    frames_due: u64,
    presented: u64,
    /// Drops by cause after the preroll (from the timeline), all streams.
    dropped: DropCounters,
    /// `streams[].early_drops`, summed, when the report has them.
    early_drops: Option<DropCounters>,
    /// `streams[].utilisation` (storage, decode, output), the mean over streams, when present.
    utilisation: Option<[f64; 3]>,
    /// `totals.bottleneck`, else the first stream's, when the report names one.
    bottleneck: Option<String>,
}

impl RunFigures {
    fn parse(text: &str) -> Result<RunFigures> {
        let report = crate::bench::parse_playsim_report(text)?;
        if report.status != RunStatus::Complete {
            let status = crate::bench::status_name(report.status);
            bail!("the run is {status}: {}", report.error.as_deref().unwrap_or("no reason given"));
        }
        let preroll = u64::from(report.settings.preroll);
        if report.streams.is_empty() {
            bail!("no streams in the report");
        }
        let mut figures = RunFigures {
            fps_achieved: 0.0,
            stream_rates: Vec::new(),
            frames_due: 0,
            presented: 0,
            dropped: DropCounters::default(),
            early_drops: Some(DropCounters::default()),
            utilisation: Some([0.0; 3]),
            bottleneck: Some(report.totals.bottleneck.clone()).filter(|b| !b.is_empty()),
        };
        for stream in &report.streams {
            figures.fps_achieved += stream.fps_achieved;
            let mut due = Vec::with_capacity(stream.timeline.len());
            for record in &stream.timeline {
                let frame = DueFrame {
                    frame_idx: record.frame_idx,
                    due_ns: record.due_ns,
                    presented: record.presented_ns.is_some(),
                };
                if frame.frame_idx >= preroll {
                    figures.frames_due += 1;
                    if frame.presented {
                        figures.presented += 1;
                    } else {
                        figures.dropped.add(record.cause.context("a dropped frame with no cause")?);
                    }
                }
                due.push(frame);
            }
            // A paced run needs two frames due after the preroll; a --fps max run is read for
            // its fps_achieved only.
            figures.stream_rates.push(presented_rate(&due, preroll).unwrap_or(f64::NAN));
            if let Some(early) = &mut figures.early_drops {
                *early += stream.early_drops;
            }
            let u = &stream.utilisation;
            figures.utilisation =
                figures.utilisation.map(|sum| [sum[0] + u.storage, sum[1] + u.decode, sum[2] + u.output]);
            if figures.bottleneck.is_none() {
                figures.bottleneck = Some(stream.bottleneck.clone()).filter(|b| !b.is_empty());
            }
        }
        let n = report.streams.len() as f64;
        figures.utilisation = figures.utilisation.map(|u| u.map(|x| x / n));
        Ok(figures)
    }

    /// The presented rate of all streams.
    fn presented_fps(&self) -> f64 {
        self.stream_rates.iter().sum()
    }

    fn drop_fraction(&self) -> f64 {
        if self.frames_due == 0 {
            f64::NAN
        } else {
            self.dropped.total() as f64 / self.frames_due as f64
        }
    }

    /// How far apart the streams' presented rates are: max ÷ min − 1, in percent (0 for one stream).
    fn spread_pct(&self) -> f64 {
        let max = self.stream_rates.iter().copied().fold(f64::NAN, f64::max);
        let min = self.stream_rates.iter().copied().fold(f64::NAN, f64::min);
        (max / min - 1.0) * 100.0
    }
}

/// One k of a row: every run, and the median one.
#[derive(Clone, Debug)]
struct KResult {
    k: f64,
    /// The rate asked, all streams.
    asked_fps: f64,
    /// presented ÷ S of each run, in the order played.
    ratios: Vec<f64>,
    /// The run with the median presented rate: its figures are the row's.
    median: RunFigures,
    /// How many runs named each bottleneck.
    bottlenecks: BTreeMap<String, usize>,
}

impl KResult {
    fn new(k: f64, s: f64, runs: Vec<RunFigures>) -> KResult {
        let ratios: Vec<f64> = runs.iter().map(|r| r.presented_fps() / s).collect();
        let mut bottlenecks = BTreeMap::new();
        for bottleneck in runs.iter().filter_map(|r| r.bottleneck.clone()) {
            *bottlenecks.entry(bottleneck).or_insert(0) += 1;
        }
        let median = median_run(runs);
        KResult { k, asked_fps: k * s, ratios, median, bottlenecks }
    }

    fn ratio(&self) -> f64 {
        median(self.ratios.clone())
    }
}

/// The run with the median presented rate (the lower middle one of an even number).
fn median_run(mut runs: Vec<RunFigures>) -> RunFigures {
    runs.sort_by(|a, b| a.presented_fps().total_cmp(&b.presented_fps()));
    let mid = (runs.len().max(1) - 1) / 2;
    runs.swap_remove(mid)
}

/// The ideal drop fraction when asked k times what the storage gives: 1 − 1/k.
fn ideal_drop_fraction(k: f64) -> f64 {
    1.0 - 1.0 / k
}

/// A storage-short row's target: drops at most [`DROP_SLACK`] × the ideal.
fn drops_within_target(drop_fraction: f64, k: f64) -> bool {
    drop_fraction <= DROP_SLACK * ideal_drop_fraction(k)
}

/// A row's S and its k results.
struct RowResult {
    row: Row,
    s: f64,
    /// `fps_achieved` of each `--fps max` run.
    measured_s: Vec<f64>,
    window_s: f64,
    ks: Vec<KResult>,
}

impl RowResult {
    /// A bench row per k: presented ÷ S against 0.9, or for a storage-short row the drop
    /// fraction against 1.1 × (1 − 1/k).
    fn bench_rows(&self) -> Vec<BenchRow> {
        self.ks.iter().map(|k| self.bench_row(k)).collect()
    }

    fn bench_row(&self, kr: &KResult) -> BenchRow {
        let run = &kr.median;
        let n_runs = kr.ratios.len();
        let name = format!(
            "fidelity: {}, k = {} ({:.2} fps asked, {} s windows)",
            self.row.label, kr.k, kr.asked_fps, self.window_s
        );
        let mut row = match self.row.exact_s {
            Some(exact) => {
                let ideal = ideal_drop_fraction(kr.k);
                // Lower is better: the ratio is ideal ÷ drops, and drops may be 1.1 × the ideal.
                BenchRow::time(
                    &name,
                    "drop fraction",
                    run.drop_fraction(),
                    &format!(
                        "ideal 1 − 1/k, with S = {exact:.2} fps = bandwidth ÷ frame bytes; ratio ideal ÷ drops, \
                         at least 1/{DROP_SLACK} when drops ≤ {DROP_SLACK} × ideal; the run with the median \
                         presented rate of {n_runs}"
                    ),
                    ideal,
                )
                .target(1.0 / DROP_SLACK)
                .extra("presented ÷ S", kr.ratio())
                .extra("S measured at --fps max fps", median(self.measured_s.clone()))
            }
            None => BenchRow::rate(
                &name,
                "fps",
                run.presented_fps(),
                &format!(
                    "S = fps_achieved at --fps max --frames {}, median of {}; presented rate: the run \
                     with the median of {n_runs}",
                    self.row.s_frames,
                    self.measured_s.len()
                ),
                self.s,
            )
            .target(PRESENTED_TARGET),
        };
        // The bench row's ratio is the median run's; keep the spread of all runs beside it.
        let fold = |pick: fn(f64, f64) -> f64| kr.ratios.iter().copied().fold(f64::NAN, pick);
        row = row
            .extra("presented ÷ S min", fold(f64::min))
            .extra("presented ÷ S max", fold(f64::max))
            .extra("frames due (after preroll)", run.frames_due as f64)
            .extra("S min fps", self.measured_s.iter().copied().fold(f64::NAN, f64::min))
            .extra("S max fps", self.measured_s.iter().copied().fold(f64::NAN, f64::max));
        for (cause, n) in run.dropped.iter() {
            row = row.extra(&format!("dropped {}", cause.word()), n as f64);
        }
        if self.row.n_streams > 1 {
            row = row.extra("spread between streams %", run.spread_pct());
        }
        if let Some(early) = run.early_drops {
            for (cause, n) in early.iter() {
                row = row.extra(&format!("early drops {}", cause.word()), n as f64);
            }
        }
        if let Some(u) = run.utilisation {
            for (stage, x) in ["storage", "decode", "output"].iter().zip(u) {
                row = row.extra(&format!("utilisation {stage}"), x);
            }
        }
        for (bottleneck, n) in &kr.bottlenecks {
            row = row.extra(&format!("runs with bottleneck {bottleneck}"), *n as f64);
        }
        row
    }

    /// Whether k's figures meet the row's target.
    fn passes(&self, kr: &KResult) -> bool {
        match self.row.exact_s {
            Some(_) => drops_within_target(kr.median.drop_fraction(), kr.k),
            None => kr.ratio() >= PRESENTED_TARGET,
        }
    }
}

/// The table: a row per source, a column per k, each cell presented ÷ S (for a
/// storage-short row, the drop fraction against the ideal) with the drops by cause.
fn render_table(results: &[RowResult], plan: &Plan) -> String {
    let mut md = String::from("# fidelity\n\n");
    let _ = writeln!(
        md,
        "Each cell: presented ÷ S (median of {} runs) and the median run's drops by cause (s storage, d decode, \
         o output, u unreadable); storage-short rows: the drop fraction / the ideal 1 − 1/k. Target: \
         presented ÷ S ≥ {PRESENTED_TARGET}; drops ≤ {DROP_SLACK} × ideal.\n",
        plan.rounds
    );
    md.push_str("| row | S fps |");
    for k in &plan.ks {
        let _ = write!(md, " k = {k} |");
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(plan.ks.len()));
    md.push('\n');
    for result in results {
        let _ = write!(md, "| {} | {:.1} |", result.row.label, result.s);
        for kr in &result.ks {
            let verdict = if result.passes(kr) { "" } else { " OFF" };
            let figure = match result.row.exact_s {
                Some(_) => format!("{:.3} / {:.3}", kr.median.drop_fraction(), ideal_drop_fraction(kr.k)),
                None => format!("{:.2}", kr.ratio()),
            };
            let spread = if result.row.n_streams > 1 {
                format!(", spread {:.1}%", kr.median.spread_pct())
            } else {
                String::new()
            };
            let bottleneck = kr.median.bottleneck.as_deref().map(|b| format!(", {b}")).unwrap_or_default();
            let _ = write!(md, " {figure}{verdict} ({}{spread}{bottleneck}) |", terse(&kr.median.dropped));
        }
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests {
    use playsim_report::{DropCauseName, Drops};

    use super::*;

    fn frame(frame_idx: u64, presented: bool) -> DueFrame {
        // 100 fps from t0 = 1 s.
        DueFrame { frame_idx, due_ns: 1_000_000_000 + frame_idx * 10_000_000, presented }
    }

    #[test]
    fn the_presented_rate_leaves_out_the_preroll() {
        // 605 frames due, the first 5 the preroll: 600 after it over 5.99 s.
        let all: Vec<DueFrame> = (0..605).map(|i| frame(i, true)).collect();
        let rate = presented_rate(&all, 5).unwrap();
        assert!((rate - 600.0 / 5.99).abs() < 1e-9, "{rate}");
        // Every other frame after the preroll dropped: half the rate; the preroll's frames do not count.
        let half: Vec<DueFrame> = (0..605).map(|i| frame(i, i < 5 || i % 2 == 1)).collect();
        assert!((presented_rate(&half, 5).unwrap() - 300.0 / 5.99).abs() < 1e-9);
        // Nothing to measure over.
        assert_eq!(presented_rate(&all[..6], 5), None);
        assert_eq!(presented_rate(&[], 0), None);
    }

    #[test]
    fn fps_args_are_exact_decimals() {
        assert_eq!(fps_arg(141.6), "141.6");
        assert_eq!(fps_arg(110.0), "110");
        assert_eq!(fps_arg(1.25 * 113.37), "141.713");
        assert_eq!(fps_arg(0.0), "0.001", "never 0");
        assert_eq!(fps_arg(1500.25), "1500250/1000", "above 1000 fps the decimal form is refused");
    }

    #[test]
    fn the_storage_short_target_is_near_the_ideal() {
        assert!((ideal_drop_fraction(2.0) - 0.5).abs() < 1e-12);
        assert!((ideal_drop_fraction(1.25) - 0.2).abs() < 1e-12);
        assert!(drops_within_target(0.21, 1.25));
        assert!(drops_within_target(0.0, 1.25), "fewer drops than the ideal is within it");
        assert!(!drops_within_target(0.23, 1.25), "0.23 > 1.1 × 0.2");
        assert!(drops_within_target(0.55, 2.0) && !drops_within_target(0.551, 2.0));
        assert!((sim_exact_s(1e9, 10e6) - 100.0).abs() < 1e-12);
        for row in sim_rows(false) {
            assert_eq!(row.exact_s, Some(100.0), "{}: 1000 MB/s ÷ 10 MB", row.label);
            assert!(row.source.to_string_lossy().contains("bw=1000MB/s&frame_bytes=10000000&"));
        }
    }

    #[test]
    fn windows_are_long_enough_for_the_frames_due() {
        for short in [false, true] {
            let plan = Plan::new(short);
            let exact_s = sim_rows(short)[0].exact_s.unwrap();
            let window_s = plan.window_s(MIN_FRAMES_DUE, exact_s);
            for k in &plan.ks {
                let due = (k * exact_s * window_s).floor();
                assert!(due - PREROLL >= MIN_FRAMES_DUE, "short {short}: k {k}, {window_s} s");
            }
            assert_eq!(plan.window_s(MIN_FRAMES_DUE_MEASURED, 60.0), plan.window_s, "DPX at 60 fps");
        }
        // A slow link gets a longer window: 605 frames at 1.1 × 10 fps take 55 s.
        assert!((Plan::new(false).window_s(MIN_FRAMES_DUE, 10.0) - 55.0).abs() < 1e-9);
        // The short mode's k = 1.25 on 100 fps: 605 frames take 4.84 s, so 4.9.
        assert!((Plan::new(true).window_s(MIN_FRAMES_DUE, 100.0) - 4.9).abs() < 1e-9);
        // EXR at 2 fps: 25 frames at 2.2 fps take 11.4 s.
        assert!((Plan::new(false).window_s(MIN_FRAMES_DUE_MEASURED, 2.0) - 11.4).abs() < 1e-9);
    }

    /// A `playsim play` report as the section reads it: two streams at 100 fps, preroll 2, each
    /// dropping frame 4 (for storage, then decode); `edit` changes it before it is written.
    fn report(edit: impl FnOnce(&mut playsim_report::Report)) -> String {
        crate::bench::playsim_report_json(|r| {
            r.settings.preroll = 2;
            for (dropped_cause, fps) in [(DropCauseName::Storage, 90.0), (DropCauseName::Decode, 80.0)] {
                let timeline = (0..6u64)
                    .map(|i| {
                        let due_ns = 1_000_000_000 + i * 10_000_000;
                        playsim_report::FrameRecord {
                            frame_idx: i,
                            due_ns,
                            presented_ns: (i != 4).then_some(due_ns),
                            cause: (i == 4).then_some(dropped_cause),
                            ..Default::default()
                        }
                    })
                    .collect();
                r.streams.push(playsim_report::StreamReport {
                    fps_achieved: fps,
                    timeline,
                    ..Default::default()
                });
            }
            edit(r);
        })
    }

    #[test]
    fn reads_a_report() {
        let figures = RunFigures::parse(&report(|_| {})).unwrap();
        assert!((figures.fps_achieved - 170.0).abs() < 1e-9);
        // Frames 2..=5 after the preroll, over 30 ms; one dropped in each stream.
        assert_eq!((figures.frames_due, figures.presented), (8, 6));
        assert_eq!(figures.dropped, Drops { storage: 1, decode: 1, output: 0, unreadable: 0 });
        assert!((figures.presented_fps() - 2.0 * 3.0 / 0.03).abs() < 1e-6);
        assert!((figures.drop_fraction() - 0.25).abs() < 1e-12);
        assert!(figures.spread_pct().abs() < 1e-9);
        // Fields a report leaves at their defaults read as zeros, and an empty bottleneck as none.
        assert_eq!(
            (figures.early_drops, figures.utilisation, figures.bottleneck),
            (Some(Drops::default()), Some([0.0; 3]), None)
        );
    }

    #[test]
    fn reads_the_newer_fields_when_present() {
        let extra = |r: &mut playsim_report::Report| {
            for stream in &mut r.streams {
                stream.early_drops =
                    playsim_report::Drops { storage: 3, decode: 1, output: 0, unreadable: 0 };
                stream.utilisation =
                    playsim_report::StageUtilisation { storage: 0.5, decode: 1.0, output: 0.25 };
                stream.bottleneck = "decode".into();
            }
        };
        let figures = RunFigures::parse(&report(|r| {
            extra(r);
            r.totals.bottleneck = "storage".into();
        }))
        .unwrap();
        assert_eq!(figures.early_drops, Some(Drops { storage: 6, decode: 2, output: 0, unreadable: 0 }));
        assert_eq!(figures.utilisation, Some([0.5, 1.0, 0.25]));
        assert_eq!(figures.bottleneck.as_deref(), Some("storage"), "the totals' bottleneck first");
        let figures = RunFigures::parse(&report(extra)).unwrap();
        assert_eq!(figures.bottleneck.as_deref(), Some("decode"), "else the first stream's");
        let none = RunFigures::parse(&report(|r| {
            extra(r);
            r.streams[0].bottleneck.clear();
            r.streams[1].bottleneck.clear();
        }));
        assert_eq!(none.unwrap().bottleneck, None, "empty means none");
    }

    #[test]
    fn refuses_reports_it_cannot_read() {
        let partial = report(|r| r.status = playsim_report::RunStatus::Partial);
        assert!(format!("{:#}", RunFigures::parse(&partial).unwrap_err()).contains("partial"));
        let odd = report(|_| {}).replace("\"cause\": \"storage\"", "\"cause\": \"gremlins\"");
        assert!(format!("{:#}", RunFigures::parse(&odd).unwrap_err()).contains("gremlins"));
        let old = report(|_| {}).replace("fps_achieved", "fps_later");
        assert!(format!("{:#}", RunFigures::parse(&old).unwrap_err()).contains("fps_achieved"));
    }

    #[test]
    fn spread_and_median_run() {
        let run = |rates: &[f64]| RunFigures {
            fps_achieved: 0.0,
            stream_rates: rates.to_vec(),
            frames_due: 10,
            presented: 10,
            dropped: Drops::default(),
            early_drops: None,
            utilisation: None,
            bottleneck: Some("decode".to_owned()),
        };
        assert!((run(&[50.0, 40.0, 45.0]).spread_pct() - 25.0).abs() < 1e-9);
        let runs = vec![run(&[30.0, 30.0]), run(&[10.0, 10.0]), run(&[20.0, 25.0])];
        assert_eq!(median_run(runs.clone()).stream_rates, [20.0, 25.0]);
        let kr = KResult::new(2.0, 50.0, runs);
        assert_eq!(kr.ratios, [1.2, 0.4, 0.9]);
        assert!((kr.ratio() - 0.9).abs() < 1e-12 && (kr.asked_fps - 100.0).abs() < 1e-12);
        assert_eq!(kr.bottlenecks.get("decode"), Some(&3));
    }
}
