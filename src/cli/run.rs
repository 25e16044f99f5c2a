//! `playsim run SCENARIO.toml`: plays a scenario file's runs, each repeated, writes a JSON
//! report per repetition, and prints the runs side by side.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use clap::Args;
use playsim::engine::CancelToken;
use playsim::report::renderer::{self, Renderer, Renderers};
use playsim::report::{compare, Report, RunStatus};
use playsim::scenario::{Pass, Repetition, Scenario};

/// Exit status when Ctrl-C stopped the scenario; the current run's report is marked partial.
const EXIT_INTERRUPTED: u8 = 130;

/// `playsim run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// The scenario file (TOML): runs of streams, repeated; see examples/ for every key.
    /// Relative sources in it are taken from the file's own directory.
    pub scenario: PathBuf,
    /// Where the JSON reports go, one per repetition of each run, named
    /// SCENARIO-RUN-REPETITION.json [default: target/scenarios/SCENARIO].
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
    /// Check the scenario and print its plan (and what media is missing) without generating
    /// or playing anything.
    #[arg(long)]
    pub check: bool,
    /// No live progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `playsim run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::load(&args.scenario)?;
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
    let clock: Arc<dyn playsim::core::Clock> = Arc::new(playsim::engine::PreciseClock::new());
    match super::cluster::join(&clock) {
        Err(code) => return Ok(code),
        Ok(Some(cluster)) => {
            return super::cluster::Client::new(cluster, clock)?.run_scenario(&args, &scenario)
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
            while tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\nplaysim: interrupted; finishing this run's report and stopping the scenario");
                interrupted.store(true, Ordering::SeqCst);
                if let Some(cancel) = current.lock().ok().and_then(|c| c.clone()) {
                    cancel.cancel();
                }
            }
        })
    };
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let renderers = Renderers::<Report>::enabled();

    let mut outcomes: Vec<(Pass, Report)> = Vec::new();
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
        let mut progress = None;
        let report = runtime.block_on(playsim::scenario::play(&scenario, &pass, |sim| {
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
        if let Ok(mut slot) = current.lock() {
            *slot = None;
        }
        if let Some((bar, task)) = progress {
            task.abort();
            bar.finish_and_clear();
        }
        renderers.by_name("text")?.render(&report, &mut std::io::stdout().lock())?;
        for warning in playsim::storage_warnings(&report) {
            eprintln!("playsim: warning: {warning}");
        }
        let path = dir.join(scenario.report_name(&pass));
        renderer::write_atomic(renderers.by_name("json")?, &report, &path)
            .with_context(|| format!("writing the report to {}", path.display()))?;
        eprintln!("playsim: report written to {}", path.display());
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
    println!("\n== {}: each run over its repetitions ==", scenario.name);
    print!("{}", playsim::scenario::tally(&scenario, &outcomes));

    Ok(if interrupted.load(Ordering::SeqCst) {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if outcomes.iter().any(|(_, r)| r.status == RunStatus::Failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
