//! `playsim record DEST --fps 24 --format dpx`: frames from the generator, encoded for real on a
//! pool and written at a rate, with drops by cause; prints the summary, writes `--json`.

use std::process::ExitCode;

use anyhow::Context;
use playsim::engine::record::RecordConfig;
use playsim::record::{prepare_record, record_capacity, RecordCapacityRequest, RecordRequest};
use playsim::report::record;
use playsim::settings::Settings;
pub use playsim_args::record::RecordArgs;

/// Exit status when a storage error stopped the run (`--on-error stop`).
const EXIT_STOPPED: u8 = 1;

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
