//! The `playsim` command line: argument parsing, progress, output files and exit codes.

mod cli;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use playsim::engine::LiveCounters;
use playsim::media::{GenerateFormat, GenerateOptions};
use playsim::report::capacity::{CapacityJson, CapacityText};
use playsim::report::renderer::{self, Renderer};
use playsim::report::{live_csv, render, Report, RunStatus};
use playsim::settings::{parse, DecoderKnobs, LocalReadKnobs, PlayKnobs, Settings, TransportKnobs};
use playsim::{units, FramePreset, PlayRequest};

/// Exit status when a run completed with more drops than --max-drops allows.
const EXIT_TOO_MANY_DROPS: u8 = 3;
/// Exit status when a run was interrupted (Ctrl-C); the report is marked partial.
const EXIT_INTERRUPTED: u8 = 130;

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
    /// Record at a frame rate: generated frames encoded for real (DPX, EXR, TIFF, each renamed
    /// into place when complete; or ProRes into one fragmented MOV) and written; frames dropped
    /// by cause (encode, storage).
    Record(Box<cli::record::RecordArgs>),
    /// Show runs side by side from their JSON reports: fps, drops by cause, MB/s, latency,
    /// CPU per GB; each later run marked against the first.
    Compare(CompareArgs),
    /// Will it play? Formats by frame rates, each cell the most streams that play with no drop
    /// (a capacity search), its limiting cause and margin; media generated where missing.
    Matrix(Box<cli::matrix::MatrixArgs>),
    /// Play a scenario file (TOML): runs of streams, each repeated with a cold or warm cache,
    /// a JSON report per repetition, then the runs side by side (see examples/).
    Run(cli::run::RunArgs),
}

#[derive(Args)]
struct CapacityArgs {
    /// What to vary: streams of the sources at --fps, the frame rate of one stream each, or
    /// (under mpirun) the clients playing the sources, each at --fps and --streams.
    #[arg(long, value_enum, default_value_t = ByArg::Streams)]
    by: ByArg,
    /// Playback time of each trial (10 s or more for an answer that means something).
    #[arg(long, default_value = "10s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    window: Duration,
    /// Trials per candidate: it passes only when every one has no drop.
    #[arg(long, default_value_t = 2, value_parser = parse::count, allow_hyphen_values = true)]
    trials: u32,
    /// The largest candidate tried.
    #[arg(long, default_value_t = 64, value_parser = parse::count, allow_hyphen_values = true)]
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
    /// More clients, under mpirun (the ranks beyond the candidate sit idle).
    Clients,
}

#[derive(Args)]
struct CompareArgs {
    /// Two or more reports, the first being the baseline: all written by `play --json`, or all
    /// by `record --json` (compared on record's figures: fps, drops by cause, failures, MB/s
    /// written, p99 per write-side stage, CPU s per GB written). A mix is refused.
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// Also draw the runs side by side, as an SVG or a PNG by the extension (cmp.svg,
    /// cmp.png): fps, drops by cause, MB/s, p99 latency per stage, CPU s per GB.
    #[arg(long, value_parser = playsim::report::plot::parse_path)]
    plot: Option<PathBuf>,
    /// Also write the comparison as one HTML file that opens anywhere, with no network: the
    /// table and the plot inline.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

#[derive(Args)]
struct PlayArgs {
    /// Directories, patterns (shot.%07d.dpx, shot.####.dpx) or files of sequences; several
    /// play together on one clock, like multicam or several clients.
    #[arg(required = true, num_args = 1..)]
    sources: Vec<PathBuf>,
    /// Independent streams reading each source.
    #[arg(long, default_value_t = 1, value_parser = parse::count, allow_hyphen_values = true)]
    streams: u32,
    /// The run's knobs: each also a scenario key (the settings list, playsim-settings).
    #[command(flatten)]
    knobs: PlayKnobs,
    /// How local files are read (the local transport's knobs, also scenario keys).
    #[command(flatten)]
    local: LocalReadKnobs,
    /// Drop the sequence from the page cache before the run.
    #[arg(long)]
    cold: bool,
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
    /// Write the report as one HTML file that opens anywhere, with no network: the summary,
    /// the timeline and histograms, per-stream and per-client tables (capacity: its trials).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write the report to FILE in the format its extension names, through the report's
    /// renderers: .json (the report), .csv (the timeline), .svg or .png (the plot), .txt (the
    /// summary); repeat it for several, e.g. --output run.json --output run.svg.
    #[arg(long, value_name = "FILE", value_parser = parse_output)]
    output: Vec<PathBuf>,
    /// Exit with status 3 when more frames than this are dropped.
    #[arg(long, value_parser = parse::whole, allow_hyphen_values = true)]
    max_drops: Option<u64>,
    /// No live progress line.
    #[arg(long, short)]
    quiet: bool,
    /// A live dashboard instead of the progress line: per stream Flame's drop counters, the
    /// frames buffered against the window, the slack to each deadline, MB/s and fps; per stage
    /// CPU and p99 latency. q hides it, Ctrl-C stops the run. Off with --quiet or without a
    /// terminal.
    #[arg(long)]
    tui: bool,
    #[command(flatten)]
    decoder: DecoderArgs,
    /// Every transport's own knobs (playsim's NFS and SMB clients', ...), from the registry.
    #[command(flatten)]
    transport: TransportKnobs,
}

/// Decoder settings shared by `play` and `decode`.
#[derive(Args)]
struct DecoderArgs {
    #[command(flatten)]
    knobs: DecoderKnobs,
    /// The EXR layer to decode: NAME picks channels NAME.R, NAME.G, ... (not a scenario key).
    #[arg(long)]
    exr_layer: Option<String>,
}

impl DecoderArgs {
    fn options(&self) -> playsim::DecodeOptions {
        let mut settings = Settings::default();
        self.knobs.apply(&mut settings);
        settings.decode_options(self.exr_layer.clone())
    }
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
    #[arg(long, value_parser = parse::positive, allow_hyphen_values = true)]
    frames: Option<u64>,
    #[command(flatten)]
    decoder: DecoderArgs,
    /// Every transport's own knobs (playsim's NFS and SMB clients', ...), from the registry.
    #[command(flatten)]
    transport: TransportKnobs,
}

#[derive(Args)]
struct GenerateArgs {
    /// The directory to write into.
    dir: PathBuf,
    /// Frame size: hd, uhd, 2k, 4k, 2k-dci, 4k-dci, 6k, 8k-dci, 8k-uhd or WxH.
    #[arg(long, default_value = "4k-dci", value_parser = parse::preset)]
    preset: FramePreset,
    /// File format: any format playsim can write (dpx, exr, tiff).
    #[arg(long, default_value = "dpx", value_parser = parse_generate_format)]
    format: &'static str,
    /// Frames to write.
    #[arg(long, default_value_t = 96, value_parser = parse::positive, allow_hyphen_values = true)]
    frames: u64,
    /// EXR compression: none, rle, zips, zip, piz, pxr24, b44 or b44a [default: piz].
    #[arg(long, value_parser = parse_compression)]
    compression: Option<String>,
    /// Bits per sample: DPX 8, 10 or 16 [default: 10]; TIFF 8 or 16 [default: 16].
    #[arg(long, value_parser = parse::bit_depth, allow_hyphen_values = true)]
    bit_depth: Option<u8>,
    /// Byte order [default: big for DPX, little for TIFF].
    #[arg(long, value_enum)]
    endian: Option<EndianArg>,
    /// Write RGBA instead of RGB (DPX; EXR is always RGBA).
    #[arg(long)]
    alpha: bool,
    /// Number of the first frame.
    #[arg(long, default_value_t = 0, value_parser = parse::whole, allow_hyphen_values = true)]
    start: u64,
    /// File name stem: files are NAME.%07d.dpx.
    #[arg(long, default_value = "frame")]
    name: String,
    /// Writer threads [default: all cores].
    #[arg(long, default_value_t = 0, value_parser = parse_writer_threads, allow_hyphen_values = true)]
    threads: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum EndianArg {
    /// SDPX.
    Big,
    /// XPDS.
    Little,
}

/// `generate --threads`: 0 (every core) up to [`parse::MAX_THREADS`].
fn parse_writer_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= parse::MAX_THREADS => Ok(n as usize),
        _ => Err(format!(
            "'{s}' is not a thread count from 0 (every core) to {} (for example --threads 4)",
            parse::MAX_THREADS
        )),
    }
}

/// `--compression`: a compression's name, refused at once (a bad flag) when no format knows it;
/// whether the chosen format takes it, and can write it, its writer says.
pub(crate) fn parse_compression(s: &str) -> Result<String, String> {
    s.parse::<playsim::exr::Compression>()?;
    Ok(s.to_owned())
}

/// `generate --format`: a registered format that has a writer.
pub(crate) fn parse_generate_format(s: &str) -> Result<&'static str, String> {
    playsim::media::writers()
        .map(|writer| writer.name)
        .find(|name| name.eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| {
            format!(
                "'{s}' is not a format playsim can write: {} (for example --format exr)",
                playsim::media::writable_names(|_| true)
            )
        })
}

fn main() -> ExitCode {
    // The transports' flags come from the registry: it is made before the flags are parsed.
    playsim::transports();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Play(args) => match cli::refuse_unwritable_outputs(outputs_of(&args)) {
            Some(code) => Ok(code),
            None => refuse_settings(&args).unwrap_or_else(|| play(*args)),
        },
        Command::Decode(args) => decode(args),
        Command::Generate(args) => generate(args),
        Command::Compare(args) => compare(args),
        Command::Capacity(args) => match cli::refuse_unwritable_outputs(outputs_of(&args.play)) {
            Some(code) => Ok(code),
            None => match request_of(&args.play).engine.validate() {
                Err(e) => Err(anyhow::anyhow!(playsim::settings::knobs::as_flags(&e))),
                Ok(()) => capacity(*args),
            },
        },
        Command::Frametest(args) => cli::frametest::run(*args),
        Command::Record(args) => cli::record::run(*args),
        Command::Matrix(args) => cli::matrix::run(*args),
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

/// The files `play` (or `capacity`) writes when the run ends, each with the flag that named it.
fn outputs_of(args: &PlayArgs) -> Vec<(&'static str, &std::path::Path)> {
    let named = [
        ("--json", &args.json),
        ("--csv", &args.csv),
        ("--live-csv", &args.live_csv),
        ("--plot", &args.plot),
        ("--html", &args.html),
    ];
    let mut outputs: Vec<_> = named.into_iter().filter_map(|(flag, p)| Some((flag, p.as_deref()?))).collect();
    outputs.extend(args.output.iter().map(|p| ("--output", p.as_path())));
    outputs
}

/// The library's request for `play`'s flags.
fn request_of(args: &PlayArgs) -> PlayRequest {
    let settings = Settings::from_flags(&args.knobs, &args.local, &args.decoder.knobs, &args.transport);
    PlayRequest {
        streams_per_source: args.streams,
        cold: args.cold,
        decode: settings.decode_options(args.decoder.exr_layer.clone()),
        ..settings.request(args.sources.clone())
    }
}

/// `play`'s settings refused, spelt as their flags (`--preroll 9 cannot exceed --prefetch 8`),
/// with the failed report written where asked, as a run that cannot start writes it.
fn refuse_settings(args: &PlayArgs) -> Option<anyhow::Result<ExitCode>> {
    let request = request_of(args);
    let message = playsim::settings::knobs::as_flags(&request.engine.validate().err()?);
    let mut report = playsim::failed_report(&request, &message);
    report.settings.max_drops = args.max_drops;
    Some(finish_report(&report, args).and_then(|()| Err(anyhow::anyhow!(message))))
}

fn play(args: PlayArgs) -> anyhow::Result<ExitCode> {
    let request = request_of(&args);
    // The run's one clock: the engine paces by it, and clients of several line up on it.
    let clock: Arc<dyn playsim::core::Clock> = Arc::new(playsim::engine::PreciseClock::new());
    let cluster = match cli::cluster::join(&clock) {
        Ok(cluster) => cluster,
        Err(code) => return Ok(code),
    };
    if let Some(cluster) = cluster {
        let (planned, fps) = planned_length(&request);
        let watch = cli::cluster::WatchSpec {
            tui: args.tui,
            quiet: args.quiet,
            title: dashboard_title("play", &request),
            planned,
            fps,
        };
        return cli::cluster::Client::new(cluster, clock)?.watched(watch).play(&args, &request);
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let mut report = match runtime.block_on(playsim::prepare_on(&request, clock, None)) {
        Ok(sim) => {
            let live_csv = match &args.live_csv {
                Some(path) => Some(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create the live csv {}", path.display()))?,
                ),
                None => None,
            };
            let display = if cli::dashboard::wanted(args.tui, args.quiet) {
                Display::Dashboard(dashboard_title("play", &request))
            } else if !args.quiet && std::io::stderr().is_terminal() {
                Display::Line
            } else {
                Display::None
            };
            runtime.block_on(run_with_progress(sim, display, live_csv, &request))
        }
        Err(e) => {
            let mut report = playsim::failed_report(&request, &e.to_string());
            report.settings.max_drops = args.max_drops;
            finish_report(&report, &args)?;
            return Err(anyhow::anyhow!(e));
        }
    };
    report.settings.max_drops = args.max_drops;
    playsim::note_request(&request, &mut report);
    // The report is written even when the summary cannot be (standard output closed: `| head`,
    // a terminal that hung up).
    let printed = render::SummaryText.render(&report, &mut std::io::stdout().lock());
    for warning in playsim::storage_warnings(&report) {
        eprintln!("playsim: warning: {warning}");
    }
    finish_report(&report, &args)?;
    printed?;
    Ok(ExitCode::from(exit_code_of(&report, args.max_drops)))
}

/// The exit status of a run: 1 failed, 130 interrupted, 3 more drops than `--max-drops`.
fn exit_code_of(report: &Report, max_drops: Option<u64>) -> u8 {
    match report.status {
        RunStatus::Failed => 1,
        RunStatus::Partial => EXIT_INTERRUPTED,
        RunStatus::Complete if max_drops.is_some_and(|m| report.totals.dropped.total() > m) => {
            eprintln!(
                "playsim: {} frames dropped, more than --max-drops {}",
                report.totals.dropped.total(),
                max_drops.unwrap_or(0)
            );
            EXIT_TOO_MANY_DROPS
        }
        RunStatus::Complete => 0,
    }
}

fn capacity(args: CapacityArgs) -> anyhow::Result<ExitCode> {
    let by = match args.by {
        ByArg::Streams => playsim::CapacityBy::Streams,
        ByArg::Fps => playsim::CapacityBy::Fps,
        ByArg::Clients => playsim::CapacityBy::Clients,
    };
    let request = playsim::CapacityRequest {
        play: request_of(&args.play),
        by,
        window: args.window,
        trials: args.trials,
        max: args.max,
    };
    let clock: Arc<dyn playsim::core::Clock> = Arc::new(playsim::engine::PreciseClock::new());
    match cli::cluster::join(&clock) {
        Err(code) => return Ok(code),
        Ok(Some(cluster)) => {
            let watch = cli::cluster::WatchSpec {
                tui: args.play.tui,
                quiet: args.play.quiet,
                title: dashboard_title("capacity", &request.play),
                planned: Some(request.window),
                fps: None,
            };
            return cli::cluster::Client::new(cluster, clock)?.watched(watch).capacity(&args, &request);
        }
        Ok(None) => {}
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let dashboard = cli::dashboard::wanted(args.play.tui, args.play.quiet).then(|| {
        let slot = cli::dashboard::LiveSlot::default();
        let title = dashboard_title("capacity", &request.play);
        (cli::dashboard::start(title, slot.clone(), Some(request.window), None), slot)
    });
    let watch = match &dashboard {
        Some((_, slot)) => {
            Some(cli::dashboard::trial_watch(slot.clone(), "capacity", request.max, request.trials))
        }
        None => (!args.play.quiet).then(|| cli::capacity_progress(&request)),
    };
    let found = runtime.block_on(playsim::capacity_watched(&request, watch, cli::stop_signal()));
    cli::dashboard::stop(dashboard.and_then(|(d, _)| d));
    let found = found?;
    finish_capacity(&found, &args)?;
    if let Some(why) = &found.interrupted {
        eprintln!("playsim: capacity: {why}; the result is what the trials done showed");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A capacity search's result: its text on stdout, and the files its flags ask for.
pub(crate) fn finish_capacity(found: &playsim::Capacity, args: &CapacityArgs) -> anyhow::Result<()> {
    CapacityText.render(found, &mut std::io::stdout().lock())?;
    if let Some(path) = &args.play.json {
        renderer::write_atomic(&CapacityJson, found, path)?;
        eprintln!("playsim: capacity result written to {}", path.display());
    }
    let mut renderers = renderer::Renderers::new();
    playsim::report::capacity::register_capacity_renderers(&mut renderers);
    if let Some(path) = &args.play.html {
        renderer::write_atomic(renderers.by_name("html")?, found, path)?;
        eprintln!("playsim: capacity result as HTML written to {}", path.display());
    }
    for path in &args.play.output {
        renderers.write_for_path(found, path)?;
        eprintln!("playsim: capacity result written to {}", path.display());
    }
    Ok(())
}

fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    use playsim::report::compare::{self, Compared, Reports, Run};
    if args.reports.len() < 2 {
        anyhow::bail!("compare needs two reports or more, for example `playsim compare tcp.json rdma.json`");
    }
    let mut files = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        files.push((path.display().to_string(), text));
    }
    // Read by the path as given, so that a refusal names it; shown by the file's name.
    let name = |path: &str| {
        let path = std::path::Path::new(path);
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
    };
    fn show<T: Compared>(reports: &[(String, T)], args: &CompareArgs) -> anyhow::Result<()> {
        let runs: Vec<Run<'_, T>> = reports.iter().map(|(name, report)| Run { name, report }).collect();
        let renderers = renderer::Renderers::compare();
        renderers.by_name("text")?.render(&runs, &mut std::io::stdout().lock())?;
        if let Some(plot) = &args.plot {
            renderers.write_for_path(&runs, plot)?;
            eprintln!("playsim: comparison plot written to {}", plot.display());
        }
        if let Some(html) = &args.html {
            renderer::write_atomic(renderers.by_name("html")?, &runs, html)?;
            eprintln!("playsim: comparison as HTML written to {}", html.display());
        }
        Ok(())
    }
    match compare::read(files)? {
        Reports::Play(reports) => {
            let reports: Vec<_> = reports.into_iter().map(|(path, r)| (name(&path), r)).collect();
            show(&reports, &args)?;
        }
        Reports::Record(reports) => {
            let reports: Vec<_> = reports.into_iter().map(|(path, r)| (name(&path), r)).collect();
            show(&reports, &args)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A `--output` file: refused at once when no renderer of the report writes its extension.
fn parse_output(arg: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(arg);
    renderer::Renderers::<Report>::enabled().for_path(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Writes the report where `args` ask: `--plot`, `--csv`, `--json`, then every `--output`.
fn finish_report(report: &Report, args: &PlayArgs) -> anyhow::Result<()> {
    let (path, csv, plot) = (args.json.as_deref(), args.csv.as_deref(), args.plot.as_deref());
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
    if let Some(html) = &args.html {
        renderer::write_atomic(renderers.by_name("html")?, report, html)?;
        eprintln!("playsim: report as HTML written to {}", html.display());
    }
    for path in &args.output {
        renderers.write_for_path(report, path)?;
        eprintln!("playsim: report as {} written to {}", renderers.for_path(path)?.name(), path.display());
    }
    Ok(())
}

/// What a run shows while it goes.
enum Display {
    /// Nothing.
    None,
    /// The progress line.
    Line,
    /// The dashboard, with this title.
    Dashboard(String),
}

/// The dashboard's title for `command` playing `request`: its sources, rate and streams.
fn dashboard_title(command: &str, request: &PlayRequest) -> String {
    let sources: Vec<String> = request.sources.iter().map(|s| s.display().to_string()).collect();
    format!(
        "playsim {command} {}  {} fps  {} stream(s) a source",
        sources.join(" "),
        request.engine.pacing,
        request.streams_per_source
    )
}

/// The run's length when its flags say it (`--duration`; `--frames` at a rate).
fn planned_length(request: &PlayRequest) -> (Option<Duration>, Option<f64>) {
    let fps = match request.engine.pacing {
        playsim::Pacing::Rate(rate) => Some(rate.as_f64()),
        _ => None,
    };
    let planned = request.engine.duration.or_else(|| {
        let frames = request.engine.frames? as f64;
        fps.filter(|f| *f > 0.0).map(|f| Duration::from_secs_f64(frames / f))
    });
    (planned, fps)
}

async fn run_with_progress(
    sim: playsim::Simulation,
    display: Display,
    live_csv: Option<std::fs::File>,
    request: &PlayRequest,
) -> Report {
    let cancel = sim.canceller();
    let mut signals = cli::StopSignals::new();
    let ctrl_c = tokio::spawn(async move {
        if let Some(why) = signals.next().await {
            eprintln!("\nplaysim: {why}; finishing the report");
            cancel.cancel();
        }
    });
    let dashboard = match &display {
        Display::Dashboard(title) => {
            let slot = cli::dashboard::LiveSlot::default();
            slot.show(sim.live());
            let (planned, fps) = planned_length(request);
            cli::dashboard::start(title.clone(), slot, planned, fps)
        }
        _ => None,
    };
    let progress = matches!(display, Display::Line).then(|| cli::spawn_progress(sim.live()));
    let live_rows = live_csv.map(|file| spawn_live_csv(sim.live(), file));
    let report = sim.run().await;
    cli::dashboard::stop(dashboard);
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
                dropped: now.dropped,
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
    let mut settings = Settings::default();
    args.transport.apply(&mut settings);
    let transports = settings.transport_options();
    let summary = runtime.block_on(playsim::decode_md5(
        &args.source,
        &args.decoder.options(),
        transports,
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

/// The writer of `--format` with its options from the flags shared by `generate` and
/// `record` (`--bit-depth`, `--endian`, `--compression`); a flag the format does not take is
/// refused with an example of `command`.
pub(crate) fn writer_format(
    format: &'static str,
    bit_depth: Option<u8>,
    endian: Option<EndianArg>,
    compression: Option<&str>,
    profile: Option<&str>,
    ffmpeg_encoder: Option<&str>,
    command: &str,
) -> anyhow::Result<(GenerateFormat, &'static playsim::media::FrameWriter)> {
    let bit_depth = bit_depth.map(|b| b.to_string());
    let endian = endian.map(|e| match e {
        EndianArg::Big => "big",
        EndianArg::Little => "little",
    });
    // Each flag is one of the format writers' options, by the same name.
    let flags = [
        ("--bit-depth", "bit_depth", bit_depth.as_deref()),
        ("--endian", "endian", endian),
        ("--compression", "compression", compression),
        ("--profile", "profile", profile),
        ("--ffmpeg-encoder", "encoder", ffmpeg_encoder),
    ];
    let writer = playsim::media::writers()
        .find(|writer| writer.name == format)
        .context("--format names no writable format")?;
    let mut options = Vec::new();
    for (flag, key, value) in flags {
        let Some(value) = value else { continue };
        if writer.option(key).is_none() {
            let takes: Vec<String> = writer.options.iter().map(|o| flag_of(o.key)).collect();
            anyhow::bail!(
                "{flag} does not apply to --format {} ({} takes {}; for example: {command} --format {} {})",
                format,
                format,
                if takes.is_empty() {
                    "none of --bit-depth, --endian, --compression, --profile".to_owned()
                } else {
                    takes.join(", ")
                },
                format,
                writer.options.first().map_or(String::new(), |o| format!("{} {}", flag_of(o.key), o.example)),
            );
        }
        options.push((key, value));
    }
    let format = GenerateFormat::parse(format, &options).map_err(|e| match e {
        playsim::media::GenerateFormatError::Value { format, error, example } => {
            let flag = flag_of(&error.key);
            anyhow::anyhow!(
                "{flag} '{}' with --format {format}: {} (for example {flag} {example})",
                error.value,
                error.reason
            )
        }
        other => anyhow::anyhow!("{other}"),
    })?;
    Ok((format, writer))
}

/// The command-line flag of a writer's option: `bit_depth` is `--bit-depth`; ProRes's
/// `encoder` is `--ffmpeg-encoder` (`--encoders` is record's encode threads).
fn flag_of(key: &str) -> String {
    match key {
        "encoder" => "--ffmpeg-encoder".to_owned(),
        key => format!("--{}", key.replace('_', "-")),
    }
}

fn generate(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let (format, writer) = writer_format(
        args.format,
        args.bit_depth,
        args.endian,
        args.compression.as_deref(),
        None,
        None,
        "playsim generate DIR",
    )?;
    if writer.clip {
        anyhow::bail!(
            "--format {} writes one clip, not a file a frame: record it, as fast as it encodes, with playsim record {} --format {} --fps max --frames {}",
            writer.name,
            args.dir.display(),
            writer.name,
            args.frames
        );
    }
    let opts = GenerateOptions {
        name: args.name,
        start_frame: args.start,
        format,
        // EXR sequences are half RGBA, as the seeds' Resolve tests played; DPX is RGB unless asked.
        alpha: args.alpha || writer.rgba_by_default,
        threads: args.threads,
        ..GenerateOptions::new(&args.dir, args.preset, args.frames)
    };
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(opts.n_frames);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "generating {bar:40} {pos}/{len} frames, {per_sec}, {elapsed} in, about {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
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
