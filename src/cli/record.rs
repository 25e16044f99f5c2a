//! `playsim record DEST --fps 24 --format dpx`: frames from the generator, encoded for real on a
//! pool and written at a rate, with drops by cause; prints the summary, writes `--json`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use playsim::engine::record::{OnError, RecordConfig, SyncPolicy};
use playsim::record::{prepare_record, record_capacity, RecordCapacityRequest, RecordRequest};
use playsim::report::record;
use playsim::report::record::RecordCapacityBy;
use playsim::settings::{parse, Settings, TransportKnobs};
use playsim::{FramePreset, FrameRate};

/// Exit status when a storage error stopped the run (`--on-error stop`).
const EXIT_STOPPED: u8 = 1;

/// `playsim record`'s arguments.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
    playsim record /tmp/capture --fps 24 --frames 240 --preset 2k          10-bit DPX, 10 s at 24 fps\n  \
    playsim record /tmp/render --format exr --compression piz --fps 24     PIZ EXR render-out\n  \
    playsim record /tmp/capture --fps 60 -q 2 --sync frame --json r.json  sync every frame\n\n\
    Frame k arrives k/FPS after the start, from the generator (a moving picture with k in it).\n\
    It is encoded on --encoders threads and written by --writers, under .NAME.partial, then\n\
    renamed. A frame that arrives while -q frames are queued is dropped, and charged to the\n\
    stage of the oldest queued frame: encode (waiting for or in the encoder) or storage.")]
pub struct RecordArgs {
    /// The directory to record into: a local path (made if missing), or an nfs:// or smb:// URL
    /// of an existing directory, written by playsim's own NFS or SMB client; it must be empty,
    /// unless --force.
    dest: PathBuf,
    /// Frame rate: 24, 23.976, 25, 29.97, 59.94, 60000/1001, or max (as fast as the queue takes
    /// frames; nothing is dropped).
    #[arg(long, default_value = "24", value_parser = parse_rate)]
    fps: Rate,
    /// Frames to record [default: 10 seconds' worth at --fps, 240 with max].
    #[arg(long, value_parser = parse::positive, allow_hyphen_values = true)]
    frames: Option<u64>,
    /// File format: any format playsim can write (dpx, exr, tiff; prores, one fragmented MOV
    /// holding every frame, NAME.mov).
    #[arg(long, default_value = "dpx", value_parser = crate::parse_generate_format)]
    format: &'static str,
    /// Frame size: hd, uhd, 2k, 4k, 2k-dci, 4k-dci, 6k, 8k-dci, 8k-uhd or WxH.
    #[arg(long, default_value = "2k-dci", value_parser = parse::preset)]
    preset: FramePreset,
    /// EXR compression: none, rle, zips, zip, piz, pxr24, b44 or b44a [default: piz].
    #[arg(long, value_parser = crate::parse_compression)]
    compression: Option<String>,
    /// ProRes profile: proxy, lt, standard or hq [default: hq].
    #[arg(long)]
    profile: Option<String>,
    /// ProRes through FFmpeg's prores_ks (rate-controlled to Apple's sizes) or prores_aw (about
    /// 8 times faster, frames up to twice the size) [default: prores_ks].
    #[arg(long)]
    ffmpeg_encoder: Option<String>,
    /// Bits per sample: DPX 8, 10 or 16 [default: 10]; TIFF 8 or 16 [default: 16].
    #[arg(long, value_parser = parse::bit_depth, allow_hyphen_values = true)]
    bit_depth: Option<u8>,
    /// Byte order [default: big for DPX, little for TIFF].
    #[arg(long, value_enum)]
    endian: Option<crate::EndianArg>,
    /// Write RGBA instead of RGB (DPX; EXR is always RGBA).
    #[arg(long)]
    alpha: bool,
    /// File name stem: files are NAME.%07d.EXT.
    #[arg(long, default_value = "frame")]
    name: String,
    /// The most frames queued (arrived, not yet written), frametest's -q.
    #[arg(short = 'q', long = "queue", default_value_t = 4, value_parser = parse_slots)]
    queue: u32,
    /// Frames encoded at once: the encode pool's threads [default: the cores].
    #[arg(long, value_parser = parse_slots)]
    encoders: Option<u32>,
    /// Frames written at once.
    #[arg(long, default_value_t = 2, value_parser = parse_slots)]
    writers: u32,
    /// When data must be durable: none (the page cache decides), frame (each frame before it
    /// is renamed into place) or end (once, after the last frame).
    #[arg(long, default_value = "none", value_parser = parse_sync)]
    sync: SyncPolicy,
    /// What a failed write does: stop the run (as capture software does) or continue.
    #[arg(long, default_value = "stop", value_parser = parse_on_error)]
    on_error: OnError,
    /// Write into a destination that already holds files.
    #[arg(long)]
    force: bool,
    /// Write with O_DIRECT, bypassing the page cache. A DPX's size is rarely a multiple of
    /// 4096: its last block is written padded with zeros, and the file cut back to its size.
    /// Either engine (--io-engine) writes through an aligned copy of the frame.
    #[arg(long)]
    direct: bool,
    /// How local files are written: pread (pwrite, one frame's write on a blocking thread,
    /// the name shared with play's reads) or io_uring (a frame cut into 1 MiB writes, all in
    /// flight at once on one ring thread; syncs as IORING_OP_FSYNC). io_uring falls back to
    /// pwrite, saying why, where it cannot be set up; the summary's storage line names the
    /// engine used. nfs:// and smb:// destinations ignore it.
    #[arg(long = "io-engine", default_value = "pread", value_parser = parse::io_engine)]
    io_engine: playsim::storage::IoEngine,
    /// Reserve each frame's space before writing it (fallocate; over smb://, SET_INFO
    /// FileAllocationInformation), as capture software does, so that a full disk fails the
    /// frame at once. NFSv3 cannot: there it does nothing.
    #[arg(long)]
    preallocate: bool,
    /// Frames from this sequence or video (a local path or a URL: nfs://, smb://, ...), read
    /// and decoded ahead of the clock, instead of the generator: an ingest (DPX to DPX) or a
    /// transcode (DPX or H.264 to ProRes; long-GOP video is decoded in order). A frame not
    /// decoded when due is an input drop. With --streams, each stream reads it on its own.
    #[arg(long, value_name = "SOURCE")]
    source: Option<PathBuf>,
    /// Encode every frame (on), or write frame 0's bytes for every frame, encoded once before
    /// the run (off): the storage's side alone, as frametest's blank frames.
    #[arg(long, default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    encode: bool,
    /// Streams recorded at once, each at --fps into DEST/stream-NN, through one encode pool of
    /// --encoders threads.
    #[arg(long, default_value_t = 1, value_parser = parse_slots)]
    streams: u32,
    /// Search this machine's capacity instead of one run: the most streams at --fps
    /// (streams), or the highest rate of one stream (fps), that record with no frame dropped
    /// or failed. Trials record into DEST/capacity-trial, removed after each.
    #[arg(long, value_parser = parse_capacity_by)]
    capacity: Option<RecordCapacityBy>,
    /// Recording time of each capacity trial.
    #[arg(long, default_value = "10s", value_parser = playsim::settings::units::parse_duration, allow_hyphen_values = true)]
    window: std::time::Duration,
    /// Capacity trials a candidate must pass.
    #[arg(long, default_value_t = 2, value_parser = parse::count, allow_hyphen_values = true)]
    trials: u32,
    /// The largest capacity candidate tried.
    #[arg(long, default_value_t = 64, value_parser = parse::count, allow_hyphen_values = true)]
    max: u32,
    /// Write the figures as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write every frame's times as CSV (stream, position, each stage in ms from the start,
    /// bytes, outcome, cause, error).
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Draw the run as an SVG or a PNG, by the file's extension (rec.svg, rec.png): each
    /// frame's time through queue wait, encode, write and sync, the frame period, drops and
    /// failures marked by cause, and a latency histogram per stage; with --streams, the stream
    /// that dropped the most. A PNG's text needs a font (Debian: fonts-dejavu-core). Not with
    /// --capacity.
    #[arg(long, value_name = "FILE", value_parser = playsim::report::plot::parse_path)]
    plot: Option<PathBuf>,
    /// Write the run as one HTML file that opens anywhere, with no network: the summary, the
    /// plot inline, per-stream figures. Not with --capacity.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Every transport's own knobs, for an nfs:// or smb:// destination (`--nconnect`,
    /// `--smb-credentials`, ...), as `play` has them.
    #[command(flatten)]
    transport: TransportKnobs,
}

/// Runs `playsim record`.
pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    if let Some(refused) = crate::cli::refuse_unwritable_outputs(
        args.json
            .iter()
            .map(|p| ("--json", p.as_path()))
            .chain(args.timeline.iter().map(|p| ("--timeline", p.as_path())))
            .chain(args.plot.iter().map(|p| ("--plot", p.as_path())))
            .chain(args.html.iter().map(|p| ("--html", p.as_path()))),
    ) {
        return Ok(refused);
    }
    let request = request_of(&args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    if let Some(by) = args.capacity {
        for (flag, given) in [("--plot", args.plot.is_some()), ("--html", args.html.is_some())] {
            if given {
                anyhow::bail!(
                    "{flag} shows one record run, and --capacity runs many trials: drop {flag} (the \
                     search's result is its table and --json), or show one run of the answer without --capacity"
                );
            }
        }
        let search = RecordCapacityRequest {
            record: request,
            by,
            window: args.window,
            trials: args.trials,
            max: args.max,
        };
        let found = runtime.block_on(record_capacity(&search, |t| {
            eprintln!(
                "playsim: trial of {}: {} ({} of {} written, {:.2} fps)",
                t.candidate,
                if t.passed { "passed" } else { "dropped" },
                t.frames_written,
                t.frames_arrived,
                t.fps
            );
        }))?;
        print!("{}", record::capacity_summary(&found));
        if let Some(path) = &args.json {
            std::fs::write(path, record::capacity_json(&found))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let prepared = runtime.block_on(prepare_record(&request))?;
    for name in &prepared.removed_partials {
        eprintln!("playsim: removed {name}, a partial frame an interrupted run left");
    }
    for warning in &prepared.warnings {
        eprintln!("playsim: warning: {warning}");
    }
    let cancel = prepared.canceller();
    let ctrl_c = runtime.spawn(async move {
        if let Some(why) = super::StopSignals::new().next().await {
            eprintln!("\nplaysim: {why}; finishing the frames in flight");
            cancel.cancel();
        }
    });
    let result = runtime.block_on(prepared.run());
    ctrl_c.abort();
    print!("{}", record::summary(&result));
    // A plot that cannot be drawn (no font for a PNG, say) still leaves the JSON and the CSV.
    let plotted = args.plot.as_deref().map(|plot| {
        playsim::report::renderer::Renderers::record().write_for_path(&result, plot).map(|()| plot)
    });
    if let Some(path) = &args.json {
        std::fs::write(path, record::json(&result))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.timeline {
        std::fs::write(path, record::timeline_csv(&result))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(plotted) = plotted {
        eprintln!("playsim: plot written to {}", plotted?.display());
    }
    if let Some(path) = &args.html {
        let renderers = playsim::report::renderer::Renderers::record();
        playsim::report::renderer::write_atomic(renderers.by_name("html")?, &result, path)?;
        eprintln!("playsim: record run as HTML written to {}", path.display());
    }
    Ok(exit_code(&result))
}

/// The exit status of a finished run: 1 when a storage error stopped it, 130 when Ctrl-C did.
pub fn exit_code(result: &record::RecordResult) -> ExitCode {
    if result.run.failure.is_some() {
        ExitCode::from(EXIT_STOPPED)
    } else if result.run.interrupted {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    }
}

/// The request `args` describe: the format and its writer's options checked, the counts
/// defaulted from the rate and the machine.
fn request_of(args: &RecordArgs) -> anyhow::Result<RecordRequest> {
    let (format, writer) = crate::writer_format(
        args.format,
        args.bit_depth,
        args.endian,
        args.compression.as_deref(),
        args.profile.as_deref(),
        args.ffmpeg_encoder.as_deref(),
        "playsim record DEST",
    )?;
    let n_frames = args.frames.unwrap_or_else(|| {
        args.fps.0.map_or(240, |rate| rate.frames_in(std::time::Duration::from_secs(10)).max(1))
    });
    let encoders = args.encoders.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
    });
    let config = RecordConfig {
        n_frames,
        rate: args.fps.0,
        queue: args.queue,
        encoders,
        writers: args.writers,
        sync: args.sync,
        on_error: args.on_error,
    };
    let mut settings = Settings::default();
    args.transport.apply(&mut settings);
    let request = RecordRequest {
        transport: settings.transport_options(),
        alpha: args.alpha || writer.rgba_by_default,
        name: args.name.clone(),
        force: args.force,
        direct: args.direct,
        io_engine: args.io_engine,
        preallocate: args.preallocate,
        streams: args.streams,
        encode: args.encode,
        source: args.source.clone(),
        events: playsim::Events::to(|event| eprintln!("playsim: {event}")),
        ..RecordRequest::new(&args.dest, format, args.preset, config)
    };
    Ok(request)
}

/// Record's command line, for a scenario's record table.
#[derive(clap::Parser)]
#[command(name = "record")]
struct RecordLine {
    #[command(flatten)]
    args: RecordArgs,
}

/// Flags a scenario's record table does not take, and why.
const NOT_IN_A_SCENARIO: &[(&str, &str)] = &[
    ("json", "each repetition's JSON goes to the scenario's --json-dir"),
    ("timeline", "give it on `playsim record`; a scenario writes each repetition's JSON"),
    ("plot", "give it on `playsim record`; a scenario writes each repetition's JSON"),
    ("capacity", "a capacity search is `playsim record --capacity`, not a scenario run"),
    ("window", "it is a --capacity setting, which a scenario run has not"),
    ("trials", "it is a --capacity setting, which a scenario run has not"),
    ("max", "it is a --capacity setting, which a scenario run has not"),
    ("help", "it prints record's help"),
];

/// The request of a scenario's record run: its table's keys turned into record's flags and
/// parsed by record's own command line, so a key means what the flag means. A refusal names
/// the file, the line and the key.
pub fn scenario_request(
    scenario: &playsim::scenario::Scenario,
    record: &playsim::scenario::ScenarioRecord,
) -> Result<RecordRequest, playsim::scenario::ScenarioError> {
    use clap::{CommandFactory, Parser};
    use playsim::scenario::{RecordValue, ScenarioError, ScenarioRecord};
    let text = std::fs::read_to_string(&scenario.path).unwrap_or_default();
    let refuse = |offset: usize, message: String| {
        if text.is_empty() {
            ScenarioError { path: scenario.path.clone(), position: None, message }
        } else {
            ScenarioError::at(&scenario.path, &text, offset, message)
        }
    };
    let command = RecordLine::command();
    let longs: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|long| !NOT_IN_A_SCENARIO.iter().any(|(key, _)| key == long))
        .collect();
    for flag in &record.flags {
        let long = ScenarioRecord::flag_of(&flag.key);
        let long = long.trim_start_matches('-');
        if let Some((_, why)) = NOT_IN_A_SCENARIO.iter().find(|(key, _)| *key == long) {
            return Err(refuse(
                flag.offset,
                format!("record's {} is not taken in a scenario: {why}", flag.key),
            ));
        }
        if flag.key.contains('-') || !longs.contains(&long) {
            let mut keys: Vec<String> = longs.iter().map(|l| l.replace('-', "_")).collect();
            keys.sort();
            return Err(refuse(
                flag.offset,
                format!(
                    "record has no key '{}': its keys are record's flags, with _ for - ({}, and \
                     destination); for example bit_depth = 10",
                    flag.key,
                    keys.join(", ")
                ),
            ));
        }
    }
    let is_switch = |flag: &str| {
        command
            .get_arguments()
            .find(|a| a.get_long() == flag.strip_prefix("--"))
            .is_some_and(|a| matches!(a.get_action(), clap::ArgAction::SetTrue))
    };
    for flag in &record.flags {
        if matches!(flag.value, RecordValue::Text(_)) && is_switch(&ScenarioRecord::flag_of(&flag.key)) {
            return Err(refuse(
                flag.offset,
                format!("record's {} is true or false (for example {} = true)", flag.key, flag.key),
            ));
        }
    }
    let mut argv = vec!["record".to_owned(), record.destination.display().to_string()];
    argv.extend(record.args(&is_switch));
    let line = RecordLine::try_parse_from(&argv).map_err(|e| {
        let flag = match e.get(clap::error::ContextKind::InvalidArg) {
            Some(clap::error::ContextValue::String(arg)) => arg.split_whitespace().next().map(str::to_owned),
            _ => None,
        };
        let key = flag.as_deref().and_then(|f| f.strip_prefix("--")).map(|f| f.replace('-', "_"));
        let offset = key
            .as_ref()
            .and_then(|key| record.flags.iter().find(|f| &f.key == key))
            .map_or(record.offset, |f| f.offset);
        let rendered = e.render().to_string();
        let first = rendered.lines().next().unwrap_or("").trim_start_matches("error: ").to_owned();
        // "invalid value 'x' for '--bit-depth <BIT_DEPTH>'" names the key instead.
        let first = match (e.get(clap::error::ContextKind::InvalidArg), &key) {
            (Some(arg), Some(key)) => first.replace(&format!("'{arg}'"), &format!("record's {key}")),
            _ => first,
        };
        refuse(offset, first)
    })?;
    request_of(&line.args).map_err(|e| refuse(record.offset, format!("record: {e:#}")))
}

/// `--fps`: a rate, or `max` (none).
#[derive(Clone, Copy, Debug)]
struct Rate(Option<FrameRate>);

fn parse_rate(s: &str) -> Result<Rate, String> {
    if s.trim().eq_ignore_ascii_case("max") {
        return Ok(Rate(None));
    }
    s.parse::<FrameRate>().map(|r| Rate(Some(r))).map_err(|e| format!("{e} (or max; for example --fps 24)"))
}

fn parse_slots(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=playsim::engine::record::MAX_RECORD_SLOTS).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}' is not a count from 1 to {} (for example 4)",
            playsim::engine::record::MAX_RECORD_SLOTS
        )),
    }
}

fn parse_sync(s: &str) -> Result<SyncPolicy, String> {
    match s.trim() {
        "none" => Ok(SyncPolicy::None),
        "frame" => Ok(SyncPolicy::Frame),
        "end" => Ok(SyncPolicy::End),
        _ => Err(format!("'{s}' is not none, frame or end (for example --sync frame)")),
    }
}

fn parse_on_error(s: &str) -> Result<OnError, String> {
    match s.trim() {
        "stop" => Ok(OnError::Stop),
        "continue" => Ok(OnError::Continue),
        _ => Err(format!("'{s}' is not stop or continue (for example --on-error continue)")),
    }
}

fn parse_capacity_by(s: &str) -> Result<RecordCapacityBy, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "streams" => Ok(RecordCapacityBy::Streams),
        "fps" => Ok(RecordCapacityBy::Fps),
        _ => Err(format!(
            "'{s}' is not what --capacity varies: streams or fps (for example --capacity streams --fps 24)"
        )),
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{s}' is on or off (for example --encode off)")),
    }
}
