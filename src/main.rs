//! The `playsim` command line: argument parsing, progress, output files and exit codes.

mod cli;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use playsim::engine::{default_decode_threads, LiveCounters};
use playsim::media::{GenerateFormat, GenerateOptions};
use playsim::report::capacity::{CapacityJson, CapacityText};
use playsim::report::renderer::{self, Renderer};
use playsim::report::{json, live_csv, render, Report, RunStatus};
use playsim::{units, EngineConfig, FramePreset, OutputStage, Pacing, PlayRequest};

/// Exit status when a run completed with more drops than --max-drops allows.
const EXIT_TOO_MANY_DROPS: u8 = 3;
/// Exit status when a run was interrupted (Ctrl-C); the report is marked partial.
const EXIT_INTERRUPTED: u8 = 130;
/// The rate an image sequence plays at when `--fps` is not given (it states none of its own).
const DEFAULT_FPS: playsim::FrameRate = playsim::FrameRate::FILM;

#[derive(Parser)]
#[command(name = "playsim", version, about = "Playback simulator with real decode load, for media storage")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play a sequence in real time, decoding every frame, and count dropped frames by cause.
    Play(Box<PlayArgs>),
    /// Decode every frame and print the md5 of its canonical pixels (for bit-exact checks).
    Decode(DecodeArgs),
    /// Write a synthetic sequence (gradient, noise, moving pattern, frame index in the pixels).
    Generate(GenerateArgs),
    /// Find the most streams (or the highest frame rate) that play with no drop over a window:
    /// doubling, then bisection, each candidate tried more than once.
    Capacity(Box<CapacityArgs>),
    /// Benchmark storage as frametest does: -w/-r 2k -n -t -f -q -b DIR, its drop rule and summary.
    Frametest(Box<cli::frametest::FrametestArgs>),
    /// Show runs side by side from their JSON reports: fps, drops by cause, MB/s, latency,
    /// CPU per GB; each later run marked against the first.
    Compare(CompareArgs),
    /// Play a scenario file (TOML): runs of streams, each repeated with a cold or warm cache,
    /// a JSON report per repetition, then the runs side by side (see examples/).
    Run(cli::run::RunArgs),
}

#[derive(Args)]
struct CapacityArgs {
    /// What to vary: streams of the sources at --fps, or the frame rate of one stream each.
    #[arg(long, value_enum, default_value_t = ByArg::Streams)]
    by: ByArg,
    /// Playback time of each trial (10 s or more for an answer that means something).
    #[arg(long, default_value = "10s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    window: Duration,
    /// Trials per candidate: it passes only when every one has no drop.
    #[arg(long, default_value_t = 2, value_parser = parse_count, allow_hyphen_values = true)]
    trials: u32,
    /// The largest candidate tried.
    #[arg(long, default_value_t = 64, value_parser = parse_count, allow_hyphen_values = true)]
    max: u32,
    /// The run to scale (--frames, --duration and --loop are set by the search; --json writes
    /// the search's result: every trial, the answer, the limit and the margin).
    #[command(flatten)]
    play: PlayArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ByArg {
    /// More streams of the sources.
    Streams,
    /// A higher frame rate.
    Fps,
}

#[derive(Args)]
struct CompareArgs {
    /// Two or more reports written by `play --json`, the first being the baseline.
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// Also draw the runs side by side, as an SVG or a PNG by the extension (cmp.svg,
    /// cmp.png): fps, drops by cause, MB/s, p99 latency per stage, CPU s per GB.
    #[arg(long, value_parser = playsim::report::plot::parse_path)]
    plot: Option<PathBuf>,
}

#[derive(Args)]
struct PlayArgs {
    /// Directories, patterns (shot.%07d.dpx, shot.####.dpx) or files of sequences; several
    /// play together on one clock, like multicam or several clients.
    #[arg(required = true, num_args = 1..)]
    sources: Vec<PathBuf>,
    /// Independent streams reading each source.
    #[arg(long, default_value_t = 1, value_parser = parse_count, allow_hyphen_values = true)]
    streams: u32,
    /// Frame rate: 24, 23.976, 25, 29.97, 59.94, 60000/1001, ... or max (no pacing)
    /// [default: a video file's own rate, else 24].
    #[arg(long, value_parser = parse_pacing, allow_hyphen_values = true)]
    fps: Option<Pacing>,
    /// Frames to play (with --loop, the source repeats until then).
    #[arg(long, value_parser = parse_positive, conflicts_with = "duration", allow_hyphen_values = true)]
    frames: Option<u64>,
    /// Playback time, e.g. 10s, 1.5m, 600.
    #[arg(long, value_parser = units::parse_duration, allow_hyphen_values = true)]
    duration: Option<Duration>,
    /// Start again at the first frame after the last.
    #[arg(long = "loop")]
    loop_playback: bool,
    /// Play order: forward, reverse, or random (a shuffle, repeatable with --seed).
    #[arg(long, value_enum, default_value_t = OrderArg::Forward)]
    order: OrderArg,
    /// The random order's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Play only these frame numbers, e.g. 100-199.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true)]
    range: Option<playsim::FrameRange>,
    /// Frames that must be ready before playback starts (frametest -b).
    #[arg(long, default_value_t = 5, value_parser = parse_preroll, allow_hyphen_values = true)]
    preroll: u32,
    /// Frames the pipeline may hold ahead of presentation.
    #[arg(long, default_value_t = 8, value_parser = parse_count, allow_hyphen_values = true)]
    prefetch: u32,
    /// Frame reads in flight at once.
    #[arg(long, default_value_t = 4, value_parser = parse_count, allow_hyphen_values = true)]
    io_depth: u32,
    /// Decode threads [default: all cores].
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    decode_threads: Option<u32>,
    /// Work done per frame before its deadline.
    #[arg(long, value_enum, default_value_t = OutputArg::V210)]
    output_stage: OutputArg,
    /// Output threads a stream: frames it packs at once.
    #[arg(long, default_value_t = 1, value_parser = parse_count, allow_hyphen_values = true)]
    output_threads: u32,
    /// Bytes per read request from local files, e.g. 1M, 512K, 4096 (nfs:// sources use --rsize).
    #[arg(long, default_value = "1M", value_parser = units::parse_bytes, allow_hyphen_values = true)]
    block_size: usize,
    /// Read local files with O_DIRECT, bypassing the page cache (playsim's NFS client has no cache).
    #[arg(long)]
    direct: bool,
    /// How local files are read: pread (one block after another, a thread per frame) or
    /// io_uring (all of a frame's blocks in flight at once, into registered buffers; falls
    /// back to pread, saying why, where io_uring is disabled).
    #[arg(long, value_enum, default_value_t = IoEngineArg::Pread)]
    io_engine: IoEngineArg,
    /// Drop the sequence from the page cache before the run.
    #[arg(long)]
    cold: bool,
    /// Wait for late frames instead of dropping them, and report the stall time.
    #[arg(long)]
    no_drop: bool,
    /// Read the frames and do not decode them (the load frametest and fio put on storage):
    /// a frame is ready when read, and there is no output stage.
    #[arg(long)]
    no_decode: bool,
    /// Check every decoded frame against the frame index in its pixels (generated media).
    #[arg(long)]
    verify: bool,
    /// Write the report as JSON (atomically; also when the run fails or is interrupted).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the per-frame timeline as CSV: one row per frame per stream (times in ms).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Append one row of counters per second while the run goes (elbencho's live CSV).
    #[arg(long)]
    live_csv: Option<PathBuf>,
    /// Draw the run as an SVG or a PNG, by the file's extension (run.svg, run.png): the
    /// per-frame timeline (slack to deadline per stage, drops marked by cause) and a latency
    /// histogram per stage. A PNG's text needs a font (Debian: fonts-dejavu-core).
    #[arg(long, value_parser = playsim::report::plot::parse_path)]
    plot: Option<PathBuf>,
    /// Exit with status 3 when more frames than this are dropped.
    #[arg(long, value_parser = parse_whole, allow_hyphen_values = true)]
    max_drops: Option<u64>,
    /// No live progress line.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    decoder: DecoderArgs,
    #[command(flatten)]
    nfs: NfsArgs,
}

/// Settings of playsim's own NFS client, for `nfs://` sources (play and decode).
#[derive(Args)]
struct NfsArgs {
    /// TCP connections to the NFS server per stream, like Linux's nconnect mount option.
    #[arg(long, default_value_t = 1, value_parser = parse_nconnect, allow_hyphen_values = true)]
    nconnect: u32,
    /// Bytes per NFS READ, e.g. 1M, 256K (capped by the server's largest).
    #[arg(long, default_value = "1M", value_parser = parse_rsize, allow_hyphen_values = true)]
    rsize: usize,
    /// How long an NFS call may go unanswered, through reconnects, before the run ends, e.g. 30s.
    #[arg(long, default_value = "30s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    nfs_timeout: Duration,
}

impl NfsArgs {
    fn options(&self) -> playsim::storage::nfs::NfsOptions {
        playsim::storage::nfs::NfsOptions {
            nconnect: self.nconnect,
            rsize: self.rsize,
            timeout: self.nfs_timeout,
            ..Default::default()
        }
    }
}

/// Decoder settings shared by `play` and `decode`.
#[derive(Args)]
struct DecoderArgs {
    /// EXR decoding library: openexr (the C++ library the applications use) or exrs (pure Rust)
    /// [default: openexr when the library was found at build time].
    #[arg(long, value_parser = parse_exr_backend)]
    exr_backend: Option<playsim::exr::Backend>,
    /// Threads inside one frame's decode (OpenEXR's per-file threads, exrs' block decompression).
    #[arg(long, default_value_t = 1, value_parser = parse_count, allow_hyphen_values = true)]
    codec_threads: u32,
    /// The EXR layer to decode: NAME picks channels NAME.R, NAME.G, ...
    #[arg(long)]
    exr_layer: Option<String>,
}

impl DecoderArgs {
    fn options(&self) -> playsim::DecodeOptions {
        playsim::DecodeOptions {
            exr: playsim::exr::ExrOptions {
                backend: self.exr_backend.unwrap_or_else(playsim::exr::Backend::default_available),
                codec_threads: self.codec_threads,
                layer: self.exr_layer.clone(),
            },
            video: playsim::VideoOptions { codec_threads: self.codec_threads },
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum IoEngineArg {
    /// One pread per block, on a thread per frame.
    Pread,
    /// io_uring: every block of a frame submitted at once.
    #[value(name = "io_uring", alias = "io-uring")]
    IoUring,
}

impl From<IoEngineArg> for playsim::storage::IoEngine {
    fn from(arg: IoEngineArg) -> Self {
        match arg {
            IoEngineArg::Pread => playsim::storage::IoEngine::Pread,
            IoEngineArg::IoUring => playsim::storage::IoEngine::IoUring,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OrderArg {
    /// First to last.
    Forward,
    /// Last to first.
    Reverse,
    /// A shuffle, the same for the same --seed.
    Random,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputArg {
    /// Pack to 10-bit 4:2:2 v210, as an SDI output driver does.
    V210,
    /// No output work.
    None,
}

#[derive(Args)]
struct DecodeArgs {
    /// A directory, a pattern or one file of the sequence, or a video file; a local path or an
    /// nfs:// URL.
    source: PathBuf,
    /// Print the md5 of each frame's canonical pixels (the only mode for now).
    #[arg(long, required = true)]
    md5: bool,
    /// Decode at most this many frames.
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    frames: Option<u64>,
    #[command(flatten)]
    decoder: DecoderArgs,
    #[command(flatten)]
    nfs: NfsArgs,
}

#[derive(Args)]
struct GenerateArgs {
    /// The directory to write into.
    dir: PathBuf,
    /// Frame size: hd, uhd, 2k, 4k, 2k-dci, 4k-dci, 6k, 8k-dci, 8k-uhd or WxH.
    #[arg(long, default_value = "4k-dci", value_parser = parse_preset)]
    preset: FramePreset,
    /// File format.
    #[arg(long, value_enum, default_value_t = FormatArg::Dpx)]
    format: FormatArg,
    /// Frames to write.
    #[arg(long, default_value_t = 96, value_parser = parse_positive, allow_hyphen_values = true)]
    frames: u64,
    /// EXR compression: none, rle, zips, zip, piz, pxr24, b44 or b44a.
    #[arg(long, default_value = "piz", value_parser = parse_compression)]
    compression: playsim::exr::Compression,
    /// Bits per sample: DPX 8, 10 or 16 [default: 10]; TIFF 8 or 16 [default: 16].
    #[arg(long, value_parser = parse_bit_depth, allow_hyphen_values = true)]
    bit_depth: Option<u8>,
    /// Byte order [default: big for DPX, little for TIFF].
    #[arg(long, value_enum)]
    endian: Option<EndianArg>,
    /// Write RGBA instead of RGB (DPX; EXR is always RGBA).
    #[arg(long)]
    alpha: bool,
    /// Number of the first frame.
    #[arg(long, default_value_t = 0, value_parser = parse_whole, allow_hyphen_values = true)]
    start: u64,
    /// File name stem: files are NAME.%07d.dpx.
    #[arg(long, default_value = "frame")]
    name: String,
    /// Writer threads [default: all cores].
    #[arg(long, default_value_t = 0, value_parser = parse_whole_usize, allow_hyphen_values = true)]
    threads: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    /// SMPTE 268M DPX.
    Dpx,
    /// OpenEXR, half RGBA with film-grain noise.
    Exr,
    /// TIFF, uncompressed strips.
    Tiff,
}

#[derive(Clone, Copy, ValueEnum)]
enum EndianArg {
    /// SDPX.
    Big,
    /// XPDS.
    Little,
}

fn parse_pacing(s: &str) -> Result<Pacing, String> {
    s.parse().map_err(|e: playsim::ParseError| e.to_string())
}

fn parse_preset(s: &str) -> Result<FramePreset, String> {
    s.parse().map_err(|e: playsim::ParseError| e.to_string())
}

fn parse_positive(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive whole number (for example 96)")),
    }
}

fn parse_exr_backend(s: &str) -> Result<playsim::exr::Backend, String> {
    s.parse()
}

fn parse_compression(s: &str) -> Result<playsim::exr::Compression, String> {
    s.parse()
}

fn parse_whole(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| format!("'{s}' is not a whole number (for example 0 or 10)"))
}

fn parse_whole_usize(s: &str) -> Result<usize, String> {
    s.trim().parse::<usize>().map_err(|_| format!("'{s}' is not a whole number (for example 0 or 4)"))
}

fn parse_preroll(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("'{s}' is not a whole number (for example 5, or 0 to start at once)"))
}

fn parse_range(s: &str) -> Result<playsim::FrameRange, String> {
    s.parse()
}

fn parse_nconnect(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 1..=64) => Ok(n),
        _ => Err(format!("'{s}' is not a connection count from 1 to 64 (for example --nconnect 4)")),
    }
}

fn parse_rsize(s: &str) -> Result<usize, String> {
    let bytes = units::parse_bytes(s)?;
    if (4096..=64 << 20).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!("read size '{s}' is out of range: 4K to 64M (for example --rsize 1M)"))
    }
}

fn parse_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        Ok(_) => Err(format!("'{s}' must be at least 1 (for example 8)")),
        Err(_) => Err(format!("'{s}' is not a positive whole number (for example 8)")),
    }
}

fn parse_bit_depth(s: &str) -> Result<u8, String> {
    match s.trim() {
        "8" => Ok(8),
        "10" => Ok(10),
        "16" => Ok(16),
        _ => Err(format!("bit depth '{s}' is not supported (for example 10; also 8 or 16)")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Play(args) => play(*args),
        Command::Decode(args) => decode(args),
        Command::Generate(args) => generate(args),
        Command::Compare(args) => compare(args),
        Command::Capacity(args) => capacity(*args),
        Command::Frametest(args) => cli::frametest::run(*args),
        Command::Run(args) => cli::run::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("playsim: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The library's request for `play`'s flags.
fn request_of(args: &PlayArgs) -> PlayRequest {
    let engine = EngineConfig {
        pacing: args.fps.unwrap_or(Pacing::Rate(DEFAULT_FPS)),
        preroll: args.preroll,
        prefetch: args.prefetch,
        io_depth: args.io_depth,
        decode_threads: args.decode_threads.unwrap_or_else(default_decode_threads),
        output: match args.output_stage {
            OutputArg::V210 => OutputStage::V210,
            OutputArg::None => OutputStage::None,
        },
        output_threads: args.output_threads,
        frames: args.frames,
        duration: args.duration,
        loop_playback: args.loop_playback,
        no_drop: args.no_drop,
        verify: args.verify,
        codec_threads: args.decoder.codec_threads,
    };
    PlayRequest {
        sources: args.sources.clone(),
        streams_per_source: args.streams,
        engine,
        block_size: args.block_size,
        direct: args.direct,
        io_engine: args.io_engine.into(),
        cold: args.cold,
        decode: args.decoder.options(),
        rate_from_source: args.fps.is_none(),
        nfs: args.nfs.options(),
        order: match args.order {
            OrderArg::Forward => playsim::PlayOrder::Forward,
            OrderArg::Reverse => playsim::PlayOrder::Reverse,
            OrderArg::Random => playsim::PlayOrder::Random { seed: args.seed },
        },
        range: args.range,
        skip_decode: args.no_decode,
        per_source: Vec::new(),
    }
}

fn play(args: PlayArgs) -> anyhow::Result<ExitCode> {
    let request = request_of(&args);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let mut report = match runtime.block_on(playsim::prepare(&request)) {
        Ok(sim) => {
            let live_csv = match &args.live_csv {
                Some(path) => Some(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create the live csv {}", path.display()))?,
                ),
                None => None,
            };
            runtime.block_on(run_with_progress(sim, !args.quiet && std::io::stderr().is_terminal(), live_csv))
        }
        Err(e) => {
            let mut report = playsim::failed_report(&request, &e.to_string());
            report.settings.max_drops = args.max_drops;
            finish_report(&report, args.json.as_deref(), args.csv.as_deref(), args.plot.as_deref())?;
            return Err(anyhow::anyhow!(e));
        }
    };
    report.settings.max_drops = args.max_drops;
    playsim::note_request(&request, &mut report);
    render::SummaryText.render(&report, &mut std::io::stdout().lock())?;
    for warning in playsim::storage_warnings(&report) {
        eprintln!("playsim: warning: {warning}");
    }
    finish_report(&report, args.json.as_deref(), args.csv.as_deref(), args.plot.as_deref())?;
    Ok(match report.status {
        RunStatus::Failed => ExitCode::FAILURE,
        RunStatus::Partial => ExitCode::from(EXIT_INTERRUPTED),
        RunStatus::Complete if args.max_drops.is_some_and(|m| report.totals.dropped.total() > m) => {
            eprintln!(
                "playsim: {} frames dropped, more than --max-drops {}",
                report.totals.dropped.total(),
                args.max_drops.unwrap_or(0)
            );
            ExitCode::from(EXIT_TOO_MANY_DROPS)
        }
        RunStatus::Complete => ExitCode::SUCCESS,
    })
}

fn capacity(args: CapacityArgs) -> anyhow::Result<ExitCode> {
    let by = match args.by {
        ByArg::Streams => playsim::CapacityBy::Streams,
        ByArg::Fps => playsim::CapacityBy::Fps,
    };
    let request = playsim::CapacityRequest {
        play: request_of(&args.play),
        by,
        window: args.window,
        trials: args.trials,
        max: args.max,
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let found = runtime.block_on(playsim::capacity(&request))?;
    CapacityText.render(&found, &mut std::io::stdout().lock())?;
    if let Some(path) = &args.play.json {
        renderer::write_atomic(&CapacityJson, &found, path)?;
        eprintln!("playsim: capacity result written to {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    if args.reports.len() < 2 {
        anyhow::bail!("compare needs two reports or more, for example `playsim compare tcp.json rdma.json`");
    }
    let mut reports = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let report = json::from_str(&text).with_context(|| {
            format!(
                "{} is not a playsim report (write one with `playsim play SOURCE --json run.json`)",
                path.display()
            )
        })?;
        let name =
            path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        reports.push((name, report));
    }
    let runs: Vec<playsim::report::compare::Run<'_>> =
        reports.iter().map(|(name, report)| playsim::report::compare::Run { name, report }).collect();
    let renderers = renderer::Renderers::compare();
    renderers.by_name("text")?.render(&runs, &mut std::io::stdout().lock())?;
    if let Some(plot) = &args.plot {
        renderers.write_for_path(&runs, plot)?;
        eprintln!("playsim: comparison plot written to {}", plot.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn finish_report(
    report: &Report,
    path: Option<&std::path::Path>,
    csv: Option<&std::path::Path>,
    plot: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let renderers = renderer::Renderers::<Report>::enabled();
    // A plot that cannot be drawn (no font for a PNG, say) still leaves the CSV and the report.
    let plotted = plot.map(|plot| renderers.write_for_path(report, plot).map(|()| plot));
    if let Some(csv) = csv {
        renderer::write_atomic(renderers.by_name("csv")?, report, csv)?;
        eprintln!("playsim: timeline written to {}", csv.display());
    }
    if let Some(path) = path {
        renderer::write_atomic(renderers.by_name("json")?, report, path)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        eprintln!("playsim: report written to {}", path.display());
    }
    if let Some(plotted) = plotted {
        eprintln!("playsim: plot written to {}", plotted?.display());
    }
    Ok(())
}

async fn run_with_progress(
    sim: playsim::Simulation,
    show_progress: bool,
    live_csv: Option<std::fs::File>,
) -> Report {
    let cancel = sim.canceller();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nplaysim: interrupted; finishing the report");
            cancel.cancel();
        }
    });
    let progress = show_progress.then(|| cli::spawn_progress(sim.live()));
    let live_rows = live_csv.map(|file| spawn_live_csv(sim.live(), file));
    let report = sim.run().await;
    ctrl_c.abort();
    if let Some(task) = live_rows {
        task.abort();
    }
    if let Some((bar, task)) = progress {
        task.abort();
        bar.finish_and_clear();
    }
    report
}

/// One CSV row of counters a second: the second, the frames presented and the MB read in it,
/// and the running totals. Rows are flushed as they are written, so a run that is killed
/// still leaves them. Seconds are counted by the tick, not read from a clock.
fn spawn_live_csv(live: Arc<LiveCounters>, file: std::fs::File) -> tokio::task::JoinHandle<()> {
    use std::io::Write;
    tokio::spawn(async move {
        let mut out = std::io::LineWriter::new(file);
        if writeln!(out, "{}", live_csv::HEADER).is_err() {
            return;
        }
        let mut last = live.snapshot();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        for second in 1u64.. {
            tick.tick().await;
            let now = live.snapshot();
            let row = live_csv::LiveRow {
                second,
                presented_in_second: now.presented - last.presented,
                bytes_in_second: now.bytes_read - last.bytes_read,
                presented: now.presented,
                bytes_read: now.bytes_read,
                dropped: now.dropped.into(),
            };
            if out.write_all(live_csv::row(&row).as_bytes()).is_err() {
                return;
            }
            last = now;
        }
    })
}

fn decode(args: DecodeArgs) -> anyhow::Result<ExitCode> {
    let _ = args.md5;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let summary = runtime.block_on(playsim::decode_md5(
        &args.source,
        &args.decoder.options(),
        &args.nfs.options(),
        args.frames,
        &mut stdout.lock(),
        &mut stderr.lock(),
    ))?;
    if summary.n_unreadable > 0 {
        eprintln!(
            "playsim: {} of {} frames unreadable",
            summary.n_unreadable,
            summary.n_unreadable + summary.n_decoded
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn generate(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let format = match args.format {
        FormatArg::Dpx => GenerateFormat::Dpx {
            bit_depth: args.bit_depth.unwrap_or(10),
            endian: match args.endian.unwrap_or(EndianArg::Big) {
                EndianArg::Big => playsim::dpx::Endian::Big,
                EndianArg::Little => playsim::dpx::Endian::Little,
            },
        },
        FormatArg::Exr => GenerateFormat::Exr { compression: args.compression },
        FormatArg::Tiff => GenerateFormat::Tiff {
            bit_depth: args.bit_depth.unwrap_or(16),
            endian: match args.endian.unwrap_or(EndianArg::Little) {
                EndianArg::Big => playsim::tiff::Endian::Big,
                EndianArg::Little => playsim::tiff::Endian::Little,
            },
        },
    };
    let opts = GenerateOptions {
        name: args.name,
        start_frame: args.start,
        format,
        // EXR sequences are half RGBA, as the seeds' Resolve tests played; DPX is RGB unless asked.
        alpha: args.alpha || matches!(args.format, FormatArg::Exr),
        threads: args.threads,
        ..GenerateOptions::new(&args.dir, args.preset, args.frames)
    };
    let bar = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(opts.n_frames)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let summary = playsim::media::generate_sequence(&opts, |n| bar.set_position(n))?;
    bar.finish_and_clear();
    println!(
        "wrote {} frames of {} ({} bytes, {:.1} MB per frame) to {}",
        summary.n_frames,
        opts.preset,
        summary.bytes_written,
        summary.mean_frame_bytes as f64 / 1e6,
        summary.pattern.display()
    );
    Ok(ExitCode::SUCCESS)
}
