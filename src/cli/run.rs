//! `playsim run SCENARIO.toml`: plays a scenario file's runs, each repeated, writes a JSON
//! report per repetition, and prints the runs side by side.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use playsim::engine::CancelToken;
use playsim::report::renderer::{self, Renderer, Renderers};
use playsim::report::{compare, Report, RunStatus};
use playsim::scenario::{Pass, Repetition, Scenario};
pub use playsim_args::run::RunArgs;

/// Runs `playsim run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::load(&args.scenario)?;
    // Every record run's table, parsed by record's command line before anything runs.
    let mut record_requests = std::collections::HashMap::new();
    for (index, run) in scenario.runs.iter().enumerate() {
        if let Some(record) = &run.record {
            record_requests.insert(index, super::record::scenario_request(&scenario, record)?);
        }
    }
    if args.check {
        print!("{}", playsim::scenario::plan(&scenario));
        println!(
            "scenario {} is valid ({} run(s), {} play(s))",
            scenario.name,
            scenario.runs.len(),
            scenario.passes().len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // The scenario's page is written at the end of what may be a long run: refused now if it
    // cannot be.
    if let Some(code) = super::refuse_unwritable_outputs(args.html.iter().map(|p| ("--html", p.as_path()))) {
        return Ok(code);
    }
    let clock: Arc<dyn playsim::core::Clock> = playsim::engine::RunClock::default().get();
    match super::cluster::join(&clock) {
        Err(code) => return Ok(code),
        Ok(Some(cluster)) => {
            let watch = super::cluster::WatchSpec {
                tui: args.tui,
                quiet: args.quiet,
                title: format!("playsim run {}", scenario.path.display()),
                planned: None,
                fps: None,
            };
            return super::cluster::Client::new(cluster, clock)?
                .watched(watch)
                .run_scenario(&args, &scenario);
        }
        Ok(None) => {}
    }
    print!("{}", playsim::scenario::plan(&scenario));
    scenario.ensure_media(&mut |line| eprintln!("playsim: {line}"))?;
    let dir = args.json_dir.clone().unwrap_or_else(|| PathBuf::from("target/scenarios").join(&scenario.name));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let current: Arc<Mutex<Option<Arc<CancelToken>>>> = Arc::default();
    let interrupted = Arc::new(AtomicBool::new(false));
    let ctrl_c = {
        let (current, interrupted) = (Arc::clone(&current), Arc::clone(&interrupted));
        runtime.spawn(async move {
            let mut signals = super::StopSignals::new();
            while let Some(why) = signals.next().await {
                eprintln!("\nplaysim: {why}; finishing this run's report and stopping the scenario");
                interrupted.store(true, Ordering::SeqCst);
                if let Some(cancel) = current.lock().ok().and_then(|c| c.clone()) {
                    cancel.cancel();
                }
            }
        })
    };
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let use_dashboard = super::dashboard::wanted(args.tui, args.quiet);
    let renderers = Renderers::<Report>::enabled();

    let mut outcomes: Vec<(Pass, Report)> = Vec::new();
    let mut recorded: Vec<(Pass, playsim::report::record::RecordFigures)> = Vec::new();
    let mut not_started: Vec<usize> = Vec::new();
    for pass in scenario.passes() {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        let run = &scenario.runs[pass.run];
        if not_started.contains(&pass.run) {
            continue;
        }
        let label = match pass.repetition {
            Repetition::Warmup => "warm-up (untimed)".to_owned(),
            Repetition::Timed(n) => format!("repetition {n} of {}", scenario.repeat),
        };
        println!("\n== {} run {}: {label} ==", scenario.name, run.name);
        if let (Some(record), Some(request)) = (&run.record, record_requests.get(&pass.run)) {
            let earlier = recorded.iter().any(|(p, _)| p.run == pass.run);
            let result = record_pass(&runtime, request, earlier, record.keep, &current, &interrupted)?;
            let figures = playsim::report::record::figures(&result);
            let path = dir.join(scenario.report_name(&pass));
            std::fs::write(&path, playsim::report::record::json(&result))
                .with_context(|| format!("writing the report to {}", path.display()))?;
            eprintln!("playsim: report written to {}", path.display());
            if figures.frames_arrived == 0 && figures.failure.is_some() {
                eprintln!("playsim: run {} could not start; its other repetitions are skipped", run.name);
                not_started.push(pass.run);
            }
            recorded.push((pass, figures));
            continue;
        }
        let mut progress = None;
        // One dashboard a run, so that each run's summary lands on the normal screen.
        let slot = super::dashboard::LiveSlot::default();
        let dashboard = use_dashboard.then(|| {
            let title = format!("playsim run {}: {} ({label})", scenario.name, run.name);
            super::dashboard::start(title, slot.clone(), None, None)
        });
        let show_progress = show_progress && dashboard.is_none();
        let report = runtime.block_on(playsim::scenario::play(&scenario, &pass, |sim| {
            slot.show(sim.live());
            let cancel = sim.canceller();
            if interrupted.load(Ordering::SeqCst) {
                cancel.cancel();
            }
            if let Ok(mut slot) = current.lock() {
                *slot = Some(cancel);
            }
            if show_progress {
                progress = Some(super::spawn_progress(sim.live()));
            }
        }));
        super::dashboard::stop(dashboard.flatten());
        if let Ok(mut slot) = current.lock() {
            *slot = None;
        }
        if let Some((bar, task)) = progress {
            task.abort();
            bar.finish_and_clear();
        }
        // The report is written even when the summary cannot be (standard output closed).
        let printed = renderers.by_name("text")?.render(&report, &mut std::io::stdout().lock());
        for warning in playsim::storage_warnings(&report) {
            eprintln!("playsim: warning: {warning}");
        }
        let path = dir.join(scenario.report_name(&pass));
        renderer::write_atomic(renderers.by_name("json")?, &report, &path)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        printed?;
        eprintln!("playsim: report written to {}", path.display());
        if args.html.is_some() {
            let page = path.with_extension("html");
            renderer::write_atomic(renderers.by_name("html")?, &report, &page)?;
            eprintln!("playsim: report as HTML written to {}", page.display());
        }
        if report.status == RunStatus::Failed && report.streams.is_empty() {
            // A run that could not start (a missing source, a refused setting) would fail the
            // same way every time.
            eprintln!("playsim: run {} could not start; its other repetitions are skipped", run.name);
            not_started.push(pass.run);
        }
        outcomes.push((pass, report));
    }
    ctrl_c.abort();

    let names: Vec<String> = outcomes
        .iter()
        .map(|(pass, _)| format!("{} #{}", scenario.runs[pass.run].name, pass.repetition))
        .collect();
    let timed: Vec<compare::Run<'_>> = outcomes
        .iter()
        .zip(&names)
        .filter(|((pass, _), _)| matches!(pass.repetition, Repetition::Timed(_)))
        .map(|((_, report), name)| compare::Run { name, report })
        .collect();
    if timed.len() >= 2 {
        println!("\n== {}: every repetition, against the first ==", scenario.name);
        compare::CompareText.render(&timed, &mut std::io::stdout().lock())?;
    }
    if let Some(html) = &args.html {
        match (timed.len(), outcomes.first()) {
            (2.., _) => renderer::write_atomic(Renderers::compare().by_name("html")?, &timed, html)?,
            (_, Some((_, report))) => renderer::write_atomic(renderers.by_name("html")?, report, html)?,
            (_, None) => {}
        }
        if !outcomes.is_empty() {
            eprintln!("playsim: scenario as HTML written to {}", html.display());
        }
    }
    let record_names: Vec<String> = recorded
        .iter()
        .map(|(pass, _)| format!("{} #{}", scenario.runs[pass.run].name, pass.repetition))
        .collect();
    let timed_records: Vec<compare::Run<'_, playsim::report::record::RecordFigures>> = recorded
        .iter()
        .zip(&record_names)
        .filter(|((pass, _), _)| matches!(pass.repetition, Repetition::Timed(_)))
        .map(|((_, figures), name)| compare::Run { name, report: figures })
        .collect();
    if timed_records.len() >= 2 {
        println!("\n== {}: every recording, against the first ==", scenario.name);
        compare::CompareText.render(&timed_records, &mut std::io::stdout().lock())?;
    }
    println!("\n== {}: each run over its repetitions ==", scenario.name);
    print!("{}", playsim::scenario::tally(&scenario, &outcomes, &recorded));

    Ok(if interrupted.load(Ordering::SeqCst) {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else if outcomes.iter().any(|(_, r)| r.status == RunStatus::Failed)
        || recorded.iter().any(|(_, f)| f.failure.is_some())
    {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Records one repetition of a record run and returns its figures, a failed run's when it could
/// not start. `earlier`: an earlier repetition of the run wrote into the destination, so its
/// files are removed first and this one may write over what is left (its stream directories).
/// Unless `keep`, this repetition's files are removed after it.
fn record_pass(
    runtime: &tokio::runtime::Runtime,
    request: &playsim::record::RecordRequest,
    earlier: bool,
    keep: bool,
    current: &Mutex<Option<Arc<CancelToken>>>,
    interrupted: &AtomicBool,
) -> anyhow::Result<playsim::report::record::RecordResult> {
    use playsim::record::{prepare_record, remove_written};
    use playsim::report::record;
    let mut request = request.clone();
    if earlier {
        if keep {
            runtime.block_on(remove_written(&request))?;
        }
        request.force = true;
    }
    let result = match runtime.block_on(prepare_record(&request)) {
        Ok(prepared) => {
            for name in &prepared.removed_partials {
                eprintln!("playsim: removed {name}, a partial frame an interrupted run left");
            }
            for warning in &prepared.warnings {
                eprintln!("playsim: warning: {warning}");
            }
            let cancel = prepared.canceller();
            if interrupted.load(Ordering::SeqCst) {
                cancel.cancel();
            }
            if let Ok(mut slot) = current.lock() {
                *slot = Some(cancel);
            }
            let result = runtime.block_on(prepared.run());
            if let Ok(mut slot) = current.lock() {
                *slot = None;
            }
            result
        }
        Err(e) => {
            eprintln!("playsim: {e}");
            let mut failed = record::RecordResult::default();
            failed.info.destination = request.destination.display().to_string();
            failed.info.parameters = request.parameters();
            failed.run.failure = Some(e.to_string());
            return Ok(failed);
        }
    };
    print!("{}", record::summary(&result));
    if !keep {
        let removed = runtime.block_on(remove_written(&request))?;
        eprintln!("playsim: removed the {removed} file(s) it wrote (keep = true keeps them)");
    }
    Ok(result)
}
