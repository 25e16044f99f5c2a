//! `play`, `capacity` and `run` as one client of several, under an MPI launcher
//! (`mpirun -np N playsim play ...`).
//!
//! The rounds themselves (what a client plays, the reports it writes and sends, rank 0's merge)
//! are `playsim_ops::rounds`; this module prints, draws and exits.
//!
//! With `--tui`, rank 0 draws the dashboard on its controlling terminal, behind mpirun: its own
//! streams and stages, and a row per client from those snapshots. The other ranks draw nothing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use playsim::cluster::Cluster;
use playsim::core::Clock;
use playsim::engine::LiveCounters;
use playsim::report::merge::ClientSnapshot;
use playsim::report::renderer::Renderer;
use playsim::report::{json, render, Report, RunStatus};
use playsim::rounds::{client_as_report, Outputs, RoundEnd, RoundWatch, Rounds};
use playsim::scenario::{Repetition, Scenario};
use playsim::{CapacityRequest, PlayRequest};

use playsim_dashboard::{Dashboard, Target};

use super::dashboard::{ClientCounts, ClientFeed, LiveSlot};
use crate::PlayArgs;

/// Joins the run when an MPI launcher started this process. A binary built without MPI
/// says so in one line (from the first rank only) instead of running N copies.
pub fn join(clock: &Arc<dyn Clock>) -> Result<Option<Cluster>, ExitCode> {
    match Cluster::join(Arc::clone(clock)) {
        Ok(cluster) => Ok(cluster),
        Err(e) => {
            if playsim::cluster::Launcher::from_env().is_none_or(|l| l.is_first()) {
                eprintln!("playsim: error: {e}");
            }
            Err(ExitCode::from(2))
        }
    }
}

/// This process's part in a run of several clients.
pub struct Client {
    cluster: Arc<Cluster>,
    rounds: Rounds,
    runtime: tokio::runtime::Runtime,
    /// Rank 0's dashboard, with `--tui` and a terminal to draw on.
    watch: Option<Arc<Watch>>,
}

/// Rank 0's dashboard: where it draws, what it shows, and the dashboard itself while it is up
/// (shared with the SIGTERM handler, which puts the terminal back before mpirun's SIGKILL).
struct Watch {
    target: Target,
    title: String,
    planned: Option<Duration>,
    fps: Option<f64>,
    slot: LiveSlot,
    /// The clients' rows, as the slot shows them.
    feed: ClientFeed,
    shown: Arc<Mutex<Option<Dashboard>>>,
}

/// What the dashboard of a run on several clients shows: its title, the run's planned length
/// and rate when known (see [`super::dashboard::start`]).
pub struct WatchSpec {
    pub tui: bool,
    pub quiet: bool,
    pub title: String,
    pub planned: Option<Duration>,
    pub fps: Option<f64>,
}

impl Client {
    /// This process as a client, with the run's one clock.
    pub fn new(cluster: Cluster, clock: Arc<dyn Clock>) -> anyhow::Result<Client> {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
        let cluster = Arc::new(cluster);
        let events = playsim::Events::to(|event| eprintln!("playsim: {event}"));
        let stop: playsim::rounds::StopSignal = Arc::new(|| Box::pin(terminated()));
        let rounds = Rounds::new(Arc::clone(&cluster), clock, events, stop);
        Ok(Client { cluster, rounds, runtime, watch: None })
    }

    /// With `--tui`, rank 0 gets the dashboard (when it has a terminal to draw on); the other
    /// ranks ignore the flag.
    pub fn watched(mut self, spec: WatchSpec) -> Client {
        if !self.cluster.is_root() {
            return self;
        }
        let Some(target) = super::dashboard::launcher_target(spec.tui, spec.quiet) else { return self };
        let slot = LiveSlot::default();
        let feed = client_feed(Arc::clone(&self.cluster));
        slot.clients(Arc::clone(&feed));
        slot.status(format!(
            "{} clients under mpirun: the streams and stages are rank 0's, the clients' rows every \
             client's",
            self.cluster.size()
        ));
        let watch = Arc::new(Watch {
            target,
            title: spec.title,
            planned: spec.planned,
            fps: spec.fps,
            slot,
            feed,
            shown: Arc::default(),
        });
        self.rounds = self.rounds.watched(Arc::clone(&watch) as Arc<dyn RoundWatch>);
        self.watch = Some(watch);
        self
    }

    /// Puts the dashboard up, if there is one and it is not up already.
    fn show_dashboard(&self) {
        let Some(watch) = &self.watch else { return };
        let mut shown = watch.shown.lock().unwrap_or_else(PoisonError::into_inner);
        if shown.is_none() {
            *shown = super::dashboard::start_on(
                watch.target.clone(),
                watch.title.clone(),
                watch.slot.clone(),
                watch.planned,
                watch.fps,
            );
        }
    }

    /// Takes the dashboard down (its last counters stay on the terminal), before rank 0 prints.
    fn hide_dashboard(&self) {
        if let Some(watch) = &self.watch {
            hide(&watch.shown);
        }
    }

    /// Sets the dashboard's status line.
    fn status(&self, status: String) {
        if let Some(watch) = &self.watch {
            watch.slot.status(status);
        }
    }

    /// `play`: one round; rank 0 prints and writes the merged report.
    pub fn play(self, args: &PlayArgs, request: &PlayRequest) -> anyhow::Result<ExitCode> {
        let outputs = Outputs { merged_json: args.json.clone() };
        self.show_dashboard();
        let end = self.round(Some(request), &outputs, args.max_drops);
        let code = match end {
            RoundEnd::Client(own, done) => {
                done.map_or_else(|| crate::exit_code_of(&own, args.max_drops), |d| d.0)
            }
            RoundEnd::Root(merged) => {
                self.hide_dashboard();
                let code = crate::exit_code_of(&merged, args.max_drops);
                render::SummaryText.render(&merged, &mut std::io::stdout().lock())?;
                for warning in playsim::storage_warnings(&merged) {
                    eprintln!("playsim: warning: {warning}");
                }
                let written = crate::finish_report(&merged, args);
                self.cluster.done(code, String::new());
                written?;
                code
            }
        };
        self.close();
        Ok(ExitCode::from(code))
    }

    /// `capacity`: every rank runs the same search; a trial is a round, whose verdict rank 0
    /// merges and sends every client, so that all take the same next step.
    pub fn capacity(self, args: &crate::CapacityArgs, request: &CapacityRequest) -> anyhow::Result<ExitCode> {
        let size = self.cluster.size();
        let mut request = request.clone();
        if request.by == playsim::CapacityBy::Clients {
            request.max = request.max.min(size);
        }
        let rank = self.cluster.rank();
        self.show_dashboard();
        let most = super::most_trials(request.max) * request.trials;
        let started = std::sync::atomic::AtomicU32::new(0);
        let found = {
            let this = &self;
            let request = &request;
            let started = &started;
            let trial = |candidate: u32| async move {
                let k = started.fetch_add(1, Ordering::SeqCst) + 1;
                this.status(format!(
                    "capacity on {size} clients: trial {k} of at most {most}: {candidate} {}",
                    super::capacity_noun(request.by)
                ));
                this.rounds.capacity_trial(request, candidate).await
            };
            self.runtime.block_on(playsim::capacity_with(request, trial))
        };
        self.hide_dashboard();
        let result = match found {
            Ok(mut found) => {
                found.clients = Some(size);
                found
            }
            Err(e) => return Ok(self.fail(&e.to_string())),
        };
        if rank == 0 {
            crate::finish_capacity(&result, args)?;
        }
        self.close();
        Ok(ExitCode::SUCCESS)
    }

    /// `run SCENARIO` under mpirun: the scenario's runs play at once, each on its client
    /// ([`Scenario::placement`]); a client with several plays them in waves. Each repetition
    /// of a wave is a round, with one merged report; the tally gives each run from its
    /// client's row.
    pub fn run_scenario(self, args: &super::run::RunArgs, scenario: &Scenario) -> anyhow::Result<ExitCode> {
        let rank = self.cluster.rank();
        let is_root = self.cluster.is_root();
        let placement = match scenario.placement(self.cluster.size()) {
            Ok(p) => p,
            Err(e) => return Ok(self.fail(&e.to_string())),
        };
        if let Some(run) = scenario.runs.iter().find(|run| run.record.is_some()) {
            return Ok(self.fail(&format!(
                "run '{}' of {} records, and record runs are not placed on mpirun's clients yet: run \
                 this scenario without mpirun, or put its record runs in a file of their own",
                run.name,
                scenario.path.display()
            )));
        }
        let dir =
            args.json_dir.clone().unwrap_or_else(|| PathBuf::from("target/scenarios").join(&scenario.name));
        // Rank 0 makes the media, once; the others wait for it in an idle round.
        let media = if is_root {
            print!("{}", playsim::scenario::plan(scenario));
            scenario
                .ensure_media(&mut |line| eprintln!("playsim: {line}"))
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
                })
        } else {
            Ok(())
        };
        match self.runtime.block_on(self.rounds.idle_round(media.err())) {
            RoundEnd::Root(merged) if merged.status == RunStatus::Failed => {
                self.cluster.done(1, String::new());
                return Ok(self.fail(&merged.error.unwrap_or_default()));
            }
            RoundEnd::Root(_) => self.cluster.done(0, String::new()),
            RoundEnd::Client(_, Some((0, _))) => {}
            RoundEnd::Client(own, done) => {
                // Rank 0 says why when its word came; when it did not, this client says so.
                if done.is_none() {
                    let own = own.error.map(|e| format!(" (its own: {e})")).unwrap_or_default();
                    eprintln!(
                        "playsim: client {rank}: stopping before the first run: rank 0's word on the setup never came{own}"
                    );
                }
                return Ok(self.fail(""));
            }
        }
        let waves = placement.iter().map(Vec::len).max().unwrap_or(0);
        let repetitions: Vec<Repetition> =
            scenario.passes().iter().filter(|p| p.run == 0).map(|p| p.repetition).collect();
        let mut outcomes: Vec<(playsim::scenario::Pass, Report)> = Vec::new();
        let mut failed = false;
        'waves: for wave in 0..waves {
            let runs: Vec<usize> = placement.iter().filter_map(|runs| runs.get(wave).copied()).collect();
            let label: Vec<&str> = runs.iter().map(|&r| scenario.runs[r].name.as_str()).collect();
            for &repetition in &repetitions {
                let mine = placement[rank as usize].get(wave).copied();
                let request =
                    mine.and_then(|run| scenario.request(&playsim::scenario::Pass { run, repetition }));
                let name = format!("{}-{}-{repetition}.json", scenario.name, label.join("+"));
                let outputs = Outputs { merged_json: Some(dir.join(&name)) };
                if is_root {
                    println!(
                        "\n== {} runs {} on {} clients: {repetition} ==",
                        scenario.name,
                        label.join(", "),
                        placement.len()
                    );
                }
                self.status(format!(
                    "{}: {} on {} clients, {repetition}: the streams are rank 0's",
                    scenario.name,
                    label.join(", "),
                    placement.len()
                ));
                self.show_dashboard();
                let end = self.round(request.as_ref(), &outputs, None);
                self.hide_dashboard();
                match end {
                    RoundEnd::Root(merged) => {
                        render::SummaryText.render(&merged, &mut std::io::stdout().lock())?;
                        if let Some(path) = &outputs.merged_json {
                            json::write_atomic(&merged, path)
                                .with_context(|| format!("writing the report to {}", path.display()))?;
                            eprintln!("playsim: report written to {}", path.display());
                        }
                        let stop = merged.status != RunStatus::Complete;
                        failed |= merged.status == RunStatus::Failed;
                        self.cluster.done(u8::from(stop), String::new());
                        // Each run's figures are its client's row of the merged report.
                        for (client, runs) in placement.iter().enumerate() {
                            let Some(&run) = runs.get(wave) else { continue };
                            let row = merged.clients.iter().find(|c| c.rank as usize == client);
                            outcomes.push((
                                playsim::scenario::Pass { run, repetition },
                                client_as_report(row, &merged),
                            ));
                        }
                        if stop {
                            break 'waves;
                        }
                    }
                    RoundEnd::Client(_, Some((0, _))) => {}
                    RoundEnd::Client(..) => break 'waves,
                }
            }
        }
        if is_root {
            println!("\n== {}: each run over its repetitions, from its client ==", scenario.name);
            print!("{}", playsim::scenario::tally(scenario, &outcomes, &[]));
        }
        self.close();
        Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
    }

    /// Ends a run that cannot go on, which every rank has found (a refused placement, a failed
    /// setup): rank 0 prints `error`, the others nothing, and all exit with status 1. Rank 0
    /// prints before MPI is finalised: the clients' MPI_Finalize waits for it (OpenMPI's
    /// finalize is a fence), and once a client exits non-zero mpirun may kill rank 0 before a
    /// message printed later reaches the terminal (the mpi test saw it lost under load).
    fn fail(self, error: &str) -> ExitCode {
        self.hide_dashboard();
        if self.cluster.is_root() && !error.is_empty() {
            eprintln!("playsim: error: {error}");
        }
        self.close();
        ExitCode::FAILURE
    }

    /// Ends this process's part in the run: MPI is finalised (unless a peer may be dead).
    fn close(self) {
        self.hide_dashboard();
        let Client { cluster, rounds, runtime, watch } = self;
        // The dashboard's feed and the rounds hold the cluster too.
        drop(watch);
        drop(rounds);
        runtime.shutdown_timeout(Duration::from_secs(1));
        match Arc::try_unwrap(cluster) {
            Ok(cluster) => cluster.close(),
            Err(cluster) => cluster.terminate(),
        }
    }

    fn round(&self, request: Option<&PlayRequest>, outputs: &Outputs, max_drops: Option<u64>) -> RoundEnd {
        self.runtime.block_on(self.rounds.round(request, outputs, max_drops))
    }
}

impl RoundWatch for Watch {
    fn started(&self, live: Arc<LiveCounters>) {
        self.slot.show(live);
    }

    fn stopping(&self) {
        hide(&self.shown);
    }

    fn latch(&self) {
        (self.feed)();
    }
}

/// Stops the dashboard in `shown`, if it is up.
fn hide(shown: &Mutex<Option<Dashboard>>) {
    let dashboard = shown.lock().unwrap_or_else(PoisonError::into_inner).take();
    super::dashboard::stop(dashboard);
}

/// The clients' rows of rank 0's dashboard: each client's latest snapshot, or between rounds
/// (when rank 0 holds none) the last one seen.
fn client_feed(cluster: Arc<Cluster>) -> ClientFeed {
    let seen: Mutex<std::collections::BTreeMap<u32, ClientCounts>> = Mutex::default();
    Arc::new(move || {
        let now: Vec<ClientCounts> = cluster
            .snapshots()
            .into_iter()
            .filter_map(|peer| {
                let snapshot: ClientSnapshot = serde_json::from_str(peer.snapshot.as_deref()?).ok()?;
                Some(ClientCounts {
                    rank: peer.rank,
                    host: peer.host,
                    run: snapshot.origin_unix_ns,
                    elapsed: Duration::from_nanos(snapshot.elapsed_ns),
                    presented: snapshot.presented,
                    dropped: snapshot.dropped,
                    bytes_read: snapshot.bytes_read,
                })
            })
            .collect();
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.extend(now.into_iter().map(|c| (c.rank, c)));
        seen.values().cloned().collect()
    })
}

/// SIGTERM (from mpirun) or Ctrl-C.
async fn terminated() {
    if super::StopSignals::new().next().await.is_none() {
        std::future::pending::<()>().await;
    }
}
