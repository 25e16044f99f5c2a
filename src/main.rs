//! The `playsim` command line: argument parsing, progress, output files and exit codes.

mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use playsim::engine::LiveCounters;
use playsim::media::{GenerateFormat, GenerateOptions};
use playsim::report::capacity::{CapacityJson, CapacityText};
use playsim::report::renderer::{self, Renderer};
use playsim::report::{live_csv, render, Report, RunStatus};
use playsim::settings::Settings;
use playsim::PlayRequest;
use playsim_args::play::{ByArg, CapacityArgs, CompareArgs, DecodeArgs, EndianArg, GenerateArgs, PlayArgs};

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
    /// What this build has: its transports, formats, decoders, renderers and cargo features.
    List,
}

/// The binary's cargo features and whether each is on, for `playsim list` (a test keeps this
/// list and Cargo.toml's `[features]` the same).
const FEATURES: &[(&str, bool)] = &[
    ("ffmpeg", cfg!(feature = "ffmpeg")),
    ("openexr", cfg!(feature = "openexr")),
    ("io-uring", cfg!(feature = "io-uring")),
    ("nfs", cfg!(feature = "nfs")),
    ("rdma", cfg!(feature = "rdma")),
    ("smb", cfg!(feature = "smb")),
    ("mpi", cfg!(feature = "mpi")),
];

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
        Command::List => {
            print!("{}", playsim::inventory(FEATURES));
            Ok(ExitCode::SUCCESS)
        }
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
    let clock: Arc<dyn playsim::core::Clock> = playsim::engine::RunClock::default().get();
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
    let clock: Arc<dyn playsim::core::Clock> = playsim::engine::RunClock::default().get();
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

#[cfg(test)]
mod tests {
    #[test]
    fn playsim_list_names_every_cargo_feature() {
        let manifest = include_str!("../Cargo.toml");
        let section = manifest.split("\n[features]\n").nth(1).unwrap_or_default();
        let section = section.split("\n[").next().unwrap_or_default();
        let mut declared: Vec<&str> = section
            .lines()
            .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
            .filter(|name| !name.starts_with('#') && *name != "default")
            .collect();
        let mut listed: Vec<&str> = super::FEATURES.iter().map(|(name, _)| *name).collect();
        declared.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, declared);
    }
}
