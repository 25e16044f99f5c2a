//! `playsim matrix LOCATION`: "will it play?", formats by frame rates, each cell the most
//! streams that play with no drop (ARCHITECTURE.md, "Matrix"). Media is generated into
//! `LOCATION/matrix-media/` where missing, after saying how much and how long, and only with
//! `--yes` when that is large.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use playsim::engine::record::{OnError, RecordConfig, SyncPolicy};
use playsim::matrix::{
    MatrixProgress, MatrixRequest, MatrixRowSpec, WriteMatrix, DEFAULT_ROWS, DEFAULT_WRITE_ROWS,
};
use playsim::record::RecordRequest;
use playsim::report::matrix::MatrixText;
use playsim::report::renderer::{self, Renderer, Renderers};
use playsim::settings::Settings;
use playsim::PlayRequest;
pub use playsim_args::matrix::MatrixArgs;

/// Media larger than this is generated only with `--yes`.
const LARGE_BYTES: u64 = 20_000_000_000;
/// Media estimated to take longer than this to generate is generated only with `--yes`.
const LARGE_SECONDS: f64 = 300.0;

/// The default rows: every format to play, or those record can write.
fn default_rows(write: bool) -> Vec<MatrixRowSpec> {
    let names = if write { DEFAULT_WRITE_ROWS } else { DEFAULT_ROWS };
    names.split(',').filter_map(|name| name.parse().ok()).collect()
}

pub fn run(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    let outputs =
        [("--json", &args.json), ("--csv", &args.csv), ("--plot", &args.plot), ("--html", &args.html)];
    if let Some(code) =
        super::refuse_unwritable_outputs(outputs.iter().filter_map(|(flag, p)| Some((*flag, p.as_deref()?))))
    {
        return Ok(code);
    }
    for (row, _) in &args.media {
        if !args.formats.as_ref().is_some_and(|f| f.iter().any(|f| f.name == *row)) {
            anyhow::bail!(
                "--media {row}=...: no row is called {row} (the rows: {}; for example --formats dpx-4k-dci --media dpx-4k-dci=/mnt/nas/shot)",
                args.formats.iter().flatten().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
    }
    let max = args.streams.unwrap_or(args.max);
    let top = args.rates.iter().map(|(_, r)| *r).max_by(|a, b| a.as_f64().total_cmp(&b.as_f64()));
    let frames = top.map_or(1, |r| r.frames_in(args.window)).max(1);
    let settings = Settings::from_flags(&args.knobs, &args.local, &args.decoder, &args.transport);
    for (flag, given) in [
        ("--fps", settings.fps.is_some()),
        ("--frames", settings.frames.is_some()),
        ("--duration", settings.duration.is_some()),
        ("--loop", settings.loop_playback.is_some()),
    ] {
        if given {
            anyhow::bail!(
                "{flag}: the matrix sets each trial's rate and length itself; give the rates as columns and \
                 the window instead (for example --rates 25,50 --window 5s)"
            );
        }
    }
    let mut play = PlayRequest { decode: settings.decode_options(None), ..settings.request(Vec::new()) };
    // Local media is read with O_DIRECT unless asked otherwise: a trial's streams share its
    // files, and through the page cache only the first reader of a frame would reach storage.
    if !args.location.contains("://") && !args.page_cache {
        play.direct = true;
    }
    let transport = play.transport_options(&Default::default());
    let formats = args.formats.clone().unwrap_or_else(|| default_rows(args.write));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let (rows, write) = if args.write {
        if !args.media.is_empty() {
            anyhow::bail!(
                "--media gives media to play, and --write records: drop one (for example playsim matrix {} --write)",
                args.location
            );
        }
        let (rows, formats) = playsim::matrix::plan_write_rows(&args.location, &formats)?;
        let base = write_base(&args, transport, formats.first().cloned())?;
        (rows, Some(WriteMatrix { base, formats }))
    } else {
        (read_media(&args, &formats, frames, &transport, &runtime)?, None)
    };
    let request = MatrixRequest {
        location: args.location.clone(),
        rows,
        rates: args.rates.clone(),
        window: args.window,
        trials: args.trials,
        max,
        cold: true,
        play,
        write,
    };
    let quiet = args.quiet;
    if args.tui && args.write {
        eprintln!("playsim: --tui shows playback; a --write matrix shows its progress lines instead");
    }
    let dashboard = super::dashboard::wanted(args.tui && !args.write, args.quiet).then(|| {
        let slot = super::dashboard::LiveSlot::default();
        let title = format!(
            "playsim matrix {}  {} rows x {} rates",
            args.location,
            request.rows.len(),
            request.rates.len()
        );
        (super::dashboard::start(title, slot.clone(), Some(request.window), None), slot)
    });
    let slot = dashboard.as_ref().map(|(_, slot)| slot.clone());
    let watch: Option<playsim::TrialWatch> =
        slot.clone().map(|slot| Arc::new(move |_, live| slot.show(live)) as playsim::TrialWatch);
    let mut cell_line = String::new();
    let mut progress = move |event: MatrixProgress<'_>| {
        if quiet {
            return;
        }
        let line = match event {
            MatrixProgress::Cell { k, n, row, fps, max } => {
                cell_line = format!("cell {k} of {n}: {row} at {fps} fps, up to {max} streams");
                cell_line.clone()
            }
            MatrixProgress::Candidate(candidate) => format!("  trying {candidate} stream(s)"),
            MatrixProgress::CellDone { k, n, cell, elapsed } => {
                let eta = elapsed.as_secs_f64() / k as f64 * (n - k) as f64;
                format!(
                    "cell {k} of {n} done: {}{}",
                    cell.label(max == 1),
                    if k < n { format!("; about {} left", human_time(eta)) } else { String::new() }
                )
            }
        };
        match &slot {
            // The dashboard's status line, where stderr would write over it.
            Some(slot) => slot.status(format!("matrix: {cell_line}; {}", line.trim())),
            None => eprintln!("playsim: {line}"),
        }
    };
    // Ctrl-C or SIGTERM stops the search in progress; the cells done are rendered and written
    // as asked, with why the matrix stopped.
    let found = runtime.block_on(playsim::matrix::matrix_watched(
        &request,
        &mut progress,
        watch,
        super::stop_signal(),
    ));
    super::dashboard::stop(dashboard.and_then(|(d, _)| d));
    let found = found?;
    MatrixText.render(&found, &mut std::io::stdout().lock())?;
    let renderers = Renderers::matrix();
    for (name, path) in [("json", &args.json), ("csv", &args.csv), ("html", &args.html)] {
        if let Some(path) = path {
            renderer::write_atomic(renderers.by_name(name)?, &found, path)?;
            eprintln!("playsim: matrix as {name} written to {}", path.display());
        }
    }
    if let Some(path) = &args.plot {
        renderers.write_for_path(&found, path)?;
        eprintln!("playsim: matrix grid written to {}", path.display());
    }
    if let Some(why) = &found.interrupted {
        eprintln!("playsim: matrix: {why}; the table holds the cells done before it");
        return Ok(ExitCode::from(crate::EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The media of a playback matrix's rows: planned, checked on a server, and made (and copied)
/// where missing, after saying how much and how long.
fn read_media(
    args: &MatrixArgs,
    formats: &[MatrixRowSpec],
    frames: u64,
    transport: &playsim::storage::transport::TransportOptions,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Vec<playsim::matrix::MatrixMedia>> {
    let mut plans =
        playsim::matrix::plan_media(&args.location, formats, &args.media, frames, &args.stage, transport)?;
    for plan in &mut plans {
        runtime.block_on(plan.check_server())?;
    }
    let to_make: Vec<_> = plans.iter().filter(|p| p.bytes > 0).collect();
    if !to_make.is_empty() {
        let bytes: u64 = to_make.iter().map(|p| p.bytes).sum();
        let seconds: f64 = to_make.iter().map(|p| p.seconds).sum();
        let names: Vec<String> = to_make
            .iter()
            .map(|p| format!("{} ({} frames)", p.row.name, p.row.frames.unwrap_or(0)))
            .collect();
        let on_server = to_make.iter().any(|p| p.upload.is_some());
        eprintln!(
            "playsim: the matrix will generate {} of media into {}/matrix-media ({}), about {} by a rough estimate{}",
            human_bytes(bytes),
            args.location.split('?').next().unwrap_or_default().trim_end_matches('/'),
            names.join(", "),
            human_time(seconds),
            if on_server {
                format!(", made in {} first and copied there through playsim's client", args.stage.display())
            } else {
                String::new()
            }
        );
        let local = if on_server { args.stage.as_path() } else { Path::new(&args.location) };
        if let Some(free) = free_bytes(local) {
            if free < bytes + bytes / 10 {
                anyhow::bail!(
                    "{} has {} free, too little for {} of media: free some space, point rows at existing \
                     media (--media ROW=PATH), or choose fewer rows (for example --formats dpx-2k,prores-hq-uhd)",
                    local.display(),
                    human_bytes(free),
                    human_bytes(bytes)
                );
            }
        }
        if (bytes > LARGE_BYTES || seconds > LARGE_SECONDS) && !args.yes {
            anyhow::bail!(
                "that is more than 20 GB or 5 minutes: add --yes to generate it (for example playsim matrix {} --yes), \
                 or choose fewer rows with --formats",
                args.location
            );
        }
    }
    for (k, plan) in plans.iter().enumerate() {
        let n = plans.len();
        let mut log = |line: &str| {
            if !args.quiet {
                eprintln!("playsim: row {} of {n}: {line}", k + 1);
            }
        };
        plan.ensure(&mut log)?;
        runtime.block_on(plan.copy(&mut log))?;
    }
    Ok(plans.into_iter().map(|p| p.row).collect())
}

/// The recording a write matrix's trials scale: record's defaults (a queue of 4, an encoder a
/// core, 2 writers, no sync), with O_DIRECT on local storage unless `--page-cache`, into a
/// destination that may hold files.
fn write_base(
    args: &MatrixArgs,
    transport: playsim::storage::transport::TransportOptions,
    first: Option<(playsim::media::GenerateFormat, playsim::FramePreset)>,
) -> anyhow::Result<RecordRequest> {
    let (format, preset) = first.context("--write: no row to record")?;
    let encoders = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1));
    let config = RecordConfig {
        n_frames: 1,
        rate: None,
        queue: 4,
        encoders,
        writers: 2,
        sync: SyncPolicy::None,
        on_error: OnError::Stop,
    };
    let mut base = RecordRequest::new(&args.location, format, preset, config);
    base.transport = transport;
    base.force = true;
    base.direct = !args.location.contains("://") && !args.page_cache;
    Ok(base)
}

/// Free bytes for an unprivileged user on the file system that holds `path` (or its nearest
/// existing parent).
fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let stat = rustix::fs::statvfs(existing).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b => format!("{:.0} MB", (b as f64 / 1e6).max(1.0)),
    }
}

fn human_time(seconds: f64) -> String {
    let seconds = seconds.round() as u64;
    match seconds {
        s if s >= 60 => format!("{}m {:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}
