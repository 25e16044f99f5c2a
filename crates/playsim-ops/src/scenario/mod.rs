//! Scenario files: several runs of several streams, repeated, described in TOML in the spirit
//! of fio's job files (`playsim run scenario.toml`).
//!
//! The file's shape, its checks and the [`Scenario`] it makes are in `playsim-settings`
//! (re-exported here); this module plays a scenario's passes through [`crate::prepare`],
//! says how each stream's transport reads in the plan, and tallies the runs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use playsim_ops::scenario::Scenario;
//! let scenario = Scenario::load("examples/onefs-prores-hd.toml".as_ref())?;
//! print!("{}", playsim_ops::scenario::plan(&scenario));
//! scenario.ensure_media(&mut |line| eprintln!("{line}"))?;
//! for pass in scenario.passes() {
//!     let report = playsim_ops::scenario::play(&scenario, &pass, |_| {}).await;
//!     println!("{}", playsim_report::render::summary(&report));
//! }
//! # Ok(()) }
//! ```
//!
//! Each play prints the run's summary and writes `DIR/SCENARIO-RUN-REPETITION.json` atomically (a
//! run that could not start writes its failed report once, and its other repetitions are
//! skipped). At the end `compare` prints every timed repetition against the first, and one line per
//! run gives the mean fps, MB/s and drops by cause (record runs: their own causes and failed
//! writes). Under mpirun the runs play at once, one per client, one merged report per pass. Exit
//! status: 1 when a play failed, 130 on Ctrl-C (the current report partial), else 0.

use std::path::PathBuf;

use playsim_engine::Simulation;
use playsim_report::Report;

pub use playsim_settings::scenario::*;

use crate::PlayRequest;

/// Plays `pass` of `scenario` and returns its report: a failed one when the run could not
/// start. `on_start` sees the simulation before it runs (for a canceller or live counters).
/// Must run inside a tokio runtime.
pub async fn play(scenario: &Scenario, pass: &Pass, on_start: impl FnOnce(&Simulation)) -> Report {
    if scenario.runs.get(pass.run).is_some_and(|run| run.record.is_some()) {
        let request = PlayRequest::new(PathBuf::new());
        return crate::failed_report(
            &request,
            &format!(
                "run {} of scenario {} records: it is run by `playsim run`, not played",
                pass.run, scenario.name
            ),
        );
    }
    let Some(request) = scenario.request(pass) else {
        let request = PlayRequest::new(PathBuf::new());
        return crate::failed_report(
            &request,
            &format!("scenario {} has no run {}", scenario.name, pass.run),
        );
    };
    match crate::prepare(&request).await {
        Ok(simulation) => {
            on_start(&simulation);
            let mut report = simulation.run().await;
            crate::note_request(&request, &mut report);
            report
        }
        Err(e) => crate::failed_report(&request, &e.to_string()),
    }
}

/// What `run --check` prints: the runs, their streams and settings (with how each stream's
/// transport reads), and whether each stream's media is there.
pub fn plan(scenario: &Scenario) -> String {
    scenario.plan(&|given, options| {
        crate::location::transports().find(given).ok().map(|transport| transport.describe_options(options))
    })
}

/// One line per run over its timed repetitions: mean fps (and range), mean MB/s, and the
/// drops by cause summed over them; failed and interrupted repetitions are counted apart.
/// `played` are the play runs' reports, `recorded` the record runs' figures.
pub fn tally(
    scenario: &Scenario,
    played: &[(Pass, Report)],
    recorded: &[(Pass, playsim_report::record::RecordFigures)],
) -> String {
    use playsim_report::tally::{Repetition as Figures, Tally, TallyRun};
    let timed = |p: &Pass, index: usize| p.run == index && matches!(p.repetition, Repetition::Timed(_));
    let runs = scenario.runs.iter().enumerate().map(|(index, run)| TallyRun {
        name: run.name.clone(),
        timed: played
            .iter()
            .filter(|(p, _)| timed(p, index))
            .map(|(_, r)| Figures::from(r))
            .chain(recorded.iter().filter(|(p, _)| timed(p, index)).map(|(_, f)| Figures::from(f)))
            .collect(),
    });
    playsim_report::tally::text(&Tally { runs: runs.collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, std::path::Path::new("/s/t.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn tally_means_over_timed_repetitions_only() {
        let s = scenario("[[stream]]\nsource = \"x\"\n");
        let report = |fps: f64, storage: u64| {
            let mut r = Report::default();
            r.totals.fps = fps;
            r.totals.mb_per_s = 10.0;
            r.totals.dropped.storage = storage;
            r
        };
        let outcomes = vec![
            (Pass { run: 0, repetition: Repetition::Warmup }, report(1.0, 100)),
            (Pass { run: 0, repetition: Repetition::Timed(1) }, report(24.0, 0)),
            (Pass { run: 0, repetition: Repetition::Timed(2) }, report(22.0, 3)),
        ];
        let text = tally(&s, &outcomes, &[]);
        assert_eq!(
            text,
            "run run1: 2 repetition(s), mean 23.00 fps (22.00 to 24.00), mean 10.0 MB/s; dropped 3 in all \
             (storage 3, decode 0, output 0, unreadable 0)\n"
        );
    }

    #[test]
    #[cfg(feature = "nfs")]
    fn the_plan_says_what_is_missing() {
        let s = scenario(
            "io_engine = \"io_uring\"\n[[stream]]\nsource = \"/nonexistent/shot\"\nfps = 30\ncount = 15\n\
             start_offset = \"1s\"\ndirect = true\n[[stream]]\nsource = \"nfs://filer/x\"\nnconnect = 4\n",
        );
        let plan = plan(&s);
        assert!(plan.contains("15x /nonexistent/shot at 30 fps, starting 1s in"), "{plan}");
        assert!(plan.contains("O_DIRECT, io_uring"), "a local stream says how it reads: {plan}");
        assert_eq!(plan.matches("io_uring").count(), 1, "an nfs:// stream has no io engine: {plan}");
        assert!(plan.contains("NOT RUNNABLE HERE: /nonexistent/shot does not exist"), "{plan}");
        assert!(plan.contains("nconnect 4") && plan.contains("remote"), "{plan}");
        assert!(plan.contains("run run1: 16 stream(s)"), "{plan}");
    }
}
