//! `play`, `capacity` and `run` as one client of several, under an MPI launcher
//! (`mpirun -np N playsim play ...`).
//!
//! A run of several clients is made of rounds (`playsim_cluster`): `play` is one, a capacity
//! search one per trial, a scenario one per pass. In a round every rank prepares its own
//! streams (or sits idle) and plays them with the ordinary engine; the start barrier lines the
//! ranks up; rank 0 merges the clients' reports. Every rank writes its own report beside the
//! merged one (`R.client-K.json` for `--json R.json`), so that nothing is lost if rank 0 dies.
//! A snapshot of the counts goes to rank 0 a few times a second: on SIGTERM (mpirun's answer
//! to a dead rank, or to Ctrl-C) rank 0 writes the merged report from them at once, and again
//! half a second later with the clients that sent nothing more marked lost, well within the
//! second before mpirun's SIGKILL.
//!
//! With `--tui`, rank 0 draws the dashboard on its controlling terminal, behind mpirun: its own
//! streams and stages, and a row per client from those snapshots. The other ranks draw nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use playsim::cluster::{wall_ns, Cluster, Finished, PeerRecord, SNAPSHOT_INTERVAL};
use playsim::core::Clock;
use playsim::engine::probe::{ProcessCpu, ProcessMemory};
use playsim::engine::{CancelToken, LiveCounters};
use playsim::report::merge::{self, ClientInput, ClientSnapshot};
use playsim::report::renderer::Renderer;
use playsim::report::{json, render, Report, RunStatus};
use playsim::scenario::{Repetition, Scenario};
use playsim::{CapacityRequest, PlayRequest, Trial};

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
    clock: Arc<dyn Clock>,
    runtime: tokio::runtime::Runtime,
    /// Rank 0's dashboard, with `--tui` and a terminal to draw on.
    watch: Option<Watch>,
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

/// Where a round's reports go: the merged one (rank 0), and each client's beside it.
#[derive(Clone, Default)]
struct Outputs {
    merged_json: Option<PathBuf>,
}

impl Outputs {
    fn client_json(&self, rank: u32) -> Option<PathBuf> {
        self.merged_json.as_deref().map(|p| client_report_path(p, rank))
    }
}

/// Rank 0's word on a capacity trial, sent to every client.
#[derive(serde::Serialize, serde::Deserialize)]
enum Verdict {
    /// The trial's figures, for the search's next step.
    Trial(Trial),
    /// The trial could not be played: the search stops on every rank.
    Failed(String),
}

/// How a round ended for this client.
enum RoundEnd {
    /// Rank 0: the merged report (the clients' word not yet sent: see [`Cluster::done`]).
    Root(Report),
    /// Another rank: rank 0's exit code and payload, if they came.
    Client(Report, Option<(u8, String)>),
}

impl Client {
    /// This process as a client, with the run's one clock.
    pub fn new(cluster: Cluster, clock: Arc<dyn Clock>) -> anyhow::Result<Client> {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
        Ok(Client { cluster: Arc::new(cluster), clock, runtime, watch: None })
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
        self.watch = Some(Watch {
            target,
            title: spec.title,
            planned: spec.planned,
            fps: spec.fps,
            slot,
            feed,
            shown: Arc::default(),
        });
        self
    }

    /// Rank 0, before it ends a round: takes the clients' last snapshots of the round into the
    /// dashboard's rows, which the next round's would replace (the dashboard may not have
    /// looked since they came).
    fn latch_clients(&self) {
        if let Some(watch) = &self.watch {
            (watch.feed)();
        }
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
        let outputs = Outputs::default();
        self.show_dashboard();
        let most = super::most_trials(request.max) * request.trials;
        let started = std::sync::atomic::AtomicU32::new(0);
        let found = {
            let this = &self;
            let request = &request;
            let started = &started;
            let trial = |candidate: u32| {
                let outputs = outputs.clone();
                async move {
                    let k = started.fetch_add(1, Ordering::SeqCst) + 1;
                    this.status(format!(
                        "capacity on {size} clients: trial {k} of at most {most}: {candidate} {}",
                        super::capacity_noun(request.by)
                    ));
                    let play = playsim::trial_request(request, candidate)?;
                    let plays = request.by != playsim::CapacityBy::Clients || rank < candidate;
                    let verdict = match this.round_async(plays.then_some(&play), &outputs, None).await {
                        RoundEnd::Root(merged) => {
                            let verdict = if merged.status == RunStatus::Failed {
                                Verdict::Failed(format!(
                                    "a trial of {candidate} failed: {}",
                                    merged.error.unwrap_or_default()
                                ))
                            } else {
                                Verdict::Trial(playsim::trial_of(candidate, &merged))
                            };
                            this.latch_clients();
                            this.cluster.done(0, serde_json::to_string(&verdict).unwrap_or_default());
                            verdict
                        }
                        RoundEnd::Client(_, Some((_, payload))) => serde_json::from_str::<Verdict>(&payload)
                            .unwrap_or_else(|e| {
                                Verdict::Failed(format!("rank 0's verdict does not parse: {e}"))
                            }),
                        RoundEnd::Client(own, None) => Verdict::Failed(format!(
                            "rank 0 stopped before the trial of {candidate} was merged{}",
                            own.error.map(|e| format!(" ({e})")).unwrap_or_default()
                        )),
                    };
                    // Every rank gets the same verdict, so every rank's search takes the same
                    // next step, or stops.
                    match verdict {
                        Verdict::Trial(trial) => Ok(trial),
                        Verdict::Failed(error) => Err(playsim::Error::Engine(error)),
                    }
                }
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
        match self.runtime.block_on(self.idle_round(media.err())) {
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
        let Client { cluster, runtime, watch, .. } = self;
        // The dashboard's feed holds the cluster too.
        drop(watch);
        runtime.shutdown_timeout(Duration::from_secs(1));
        match Arc::try_unwrap(cluster) {
            Ok(cluster) => cluster.close(),
            Err(cluster) => cluster.terminate(),
        }
    }

    fn round(&self, request: Option<&PlayRequest>, outputs: &Outputs, max_drops: Option<u64>) -> RoundEnd {
        self.runtime.block_on(self.round_async(request, outputs, max_drops))
    }

    /// A round in which this client has nothing to play (or could not set up, `error`).
    async fn idle_round(&self, error: Option<String>) -> RoundEnd {
        let own = match error {
            Some(error) => {
                let reason = self.cluster.fail_to_start(error.clone()).await;
                failed_idle(&error, &reason)
            }
            None => match self.cluster.start_barrier().open(self.clock.now()).await {
                Ok(_) => idle_report(self.clock.as_ref()),
                Err(reason) => failed_idle(&reason, &reason),
            },
        };
        self.finish(own, &Outputs::default()).await
    }

    /// One round: this client plays `request` (or sits idle, with none), writes its own
    /// report, and sends it to rank 0, which merges.
    async fn round_async(
        &self,
        request: Option<&PlayRequest>,
        outputs: &Outputs,
        max_drops: Option<u64>,
    ) -> RoundEnd {
        let Some(request) = request else { return self.idle_round(None).await };
        let cluster = &self.cluster;
        let origin_unix_ns = wall_ns(self.clock.as_ref());
        let current: Arc<Mutex<Option<Arc<CancelToken>>>> = Arc::default();
        let merged_written = Arc::new(AtomicBool::new(false));
        let signals = tokio::spawn(on_termination(
            Arc::clone(cluster),
            Arc::clone(&current),
            outputs.clone(),
            Arc::clone(&merged_written),
            self.watch.as_ref().map(|w| Arc::clone(&w.shown)),
        ));
        let barrier = cluster.start_barrier();
        let mut own = match playsim::prepare_on(request, Arc::clone(&self.clock), Some(barrier)).await {
            Ok(sim) => {
                *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(sim.canceller());
                if let Some(watch) = &self.watch {
                    watch.slot.show(sim.live());
                }
                let snapshots = spawn_snapshots(
                    Arc::clone(cluster),
                    sim.live(),
                    Arc::clone(&self.clock),
                    origin_unix_ns,
                    request,
                );
                let mut report = sim.run().await;
                snapshots.abort();
                playsim::note_request(request, &mut report);
                report
            }
            Err(e) => {
                let own = e.to_string();
                let reason = cluster.fail_to_start(own.clone()).await;
                let mut report = playsim::failed_report(request, &own);
                if !reason.contains(&own) {
                    report.error = Some(format!("{own} ({reason})"));
                }
                report
            }
        };
        own.settings.max_drops = max_drops;
        // The last snapshot says how the client ended, for a rank 0 that never gets the report.
        cluster.send_snapshot(snapshot_json(&ClientSnapshot::of_report(&own)));
        let end = self.finish(own, outputs).await;
        merged_written.store(true, Ordering::SeqCst);
        signals.abort();
        end
    }

    /// Writes this client's own report, sends it to rank 0, and on rank 0 merges them all.
    async fn finish(&self, own: Report, outputs: &Outputs) -> RoundEnd {
        let rank = self.cluster.rank();
        if let Some(path) = outputs.client_json(rank) {
            if let Err(e) = json::write_atomic(&own, &path) {
                eprintln!("playsim: client {rank}: cannot write its report to {}: {e}", path.display());
            }
        }
        match self.cluster.finish(json::to_string_pretty(&own)).await {
            Finished::Client(done) => RoundEnd::Client(own, done),
            Finished::Root(peers) => RoundEnd::Root(merge_peers(&self.cluster, &peers, outputs)),
        }
    }
}

/// The report of a client that had nothing to play this round.
fn idle_report(clock: &dyn Clock) -> Report {
    Report {
        schema_version: playsim::report::SCHEMA_VERSION,
        playsim_version: env!("CARGO_PKG_VERSION").to_owned(),
        origin_unix_ns: wall_ns(clock),
        environment: playsim::engine::probe::environment(),
        ..Report::default()
    }
}

fn failed_idle(own: &str, reason: &str) -> Report {
    Report {
        schema_version: playsim::report::SCHEMA_VERSION,
        status: RunStatus::Failed,
        error: Some(if reason.contains(own) { reason.to_owned() } else { format!("{own} ({reason})") }),
        playsim_version: env!("CARGO_PKG_VERSION").to_owned(),
        environment: playsim::engine::probe::environment(),
        ..Report::default()
    }
}

/// On SIGTERM (from mpirun) or Ctrl-C: stops this client's run and, on rank 0, writes the
/// merged report from the snapshots at once: mpirun sends SIGKILL soon after. A client whose
/// snapshots stopped well before the others' is lost (mpirun sends SIGTERM a second after a
/// rank dies). The round's own end writes the report again if it gets that far.
async fn on_termination(
    cluster: Arc<Cluster>,
    current: Arc<Mutex<Option<Arc<CancelToken>>>>,
    outputs: Outputs,
    merged_written: Arc<AtomicBool>,
    dashboard: Option<Arc<Mutex<Option<Dashboard>>>>,
) {
    terminated().await;
    // The terminal first: mpirun's SIGKILL would leave it on the alternate screen.
    if let Some(dashboard) = &dashboard {
        hide(dashboard);
    }
    eprintln!("playsim: client {}: stopping; finishing the report", cluster.rank());
    cluster.terminate();
    if let Some(cancel) = current.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
        cancel.cancel();
    }
    let Some(path) = outputs.merged_json.clone().filter(|_| cluster.is_root()) else { return };
    if !merged_written.load(Ordering::SeqCst) {
        let merged = merge_peers(&cluster, &cluster.peers(), &outputs);
        let _ = json::write_atomic(&merged, &path);
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
                let d = snapshot.dropped;
                Some(ClientCounts {
                    rank: peer.rank,
                    host: peer.host,
                    run: snapshot.origin_unix_ns,
                    elapsed: Duration::from_nanos(snapshot.elapsed_ns),
                    presented: snapshot.presented,
                    dropped: playsim_dashboard::Drops {
                        storage: d.storage,
                        decode: d.decode,
                        output: d.output,
                        unreadable: d.unreadable,
                    },
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

/// The client's counts to rank 0, every [`SNAPSHOT_INTERVAL`].
fn spawn_snapshots(
    cluster: Arc<Cluster>,
    live: Arc<LiveCounters>,
    clock: Arc<dyn Clock>,
    origin_unix_ns: u64,
    request: &PlayRequest,
) -> tokio::task::JoinHandle<()> {
    let transport = transport_of(request);
    let streams = u32::try_from(request.sources.len() as u64 * u64::from(request.streams_per_source.max(1)))
        .unwrap_or(u32::MAX);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SNAPSHOT_INTERVAL);
        loop {
            tick.tick().await;
            let counts = live.snapshot();
            let now = wall_ns(clock.as_ref());
            let cpu = ProcessCpu::now();
            let snapshot = ClientSnapshot {
                origin_unix_ns,
                t0_ns: cluster.start_wall_ns().map(|s| s.saturating_sub(origin_unix_ns)),
                elapsed_ns: now.saturating_sub(origin_unix_ns),
                streams,
                presented: counts.presented,
                dropped: counts.dropped,
                bytes_read: counts.bytes_read,
                cpu_s: (cpu.user + cpu.sys).as_secs_f64(),
                peak_rss_bytes: ProcessMemory::read().map(|m| m.peak_rss_bytes).unwrap_or(0),
                transport: transport.clone(),
                status: RunStatus::Partial,
            };
            cluster.send_snapshot(snapshot_json(&snapshot));
        }
    })
}

fn snapshot_json(snapshot: &ClientSnapshot) -> String {
    serde_json::to_string(snapshot).unwrap_or_default()
}

/// The transport the request's first source names: the scheme of a URL, or "local".
fn transport_of(request: &PlayRequest) -> String {
    let first = request.sources.first().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    match first.split_once("://") {
        Some((scheme, _)) => scheme.to_owned(),
        None => "local".to_owned(),
    }
}

/// The merged report from rank 0's records of the clients: each one's report, or its last
/// snapshot; lost, those that [`is_lost`] says.
fn merge_peers(cluster: &Cluster, peers: &[PeerRecord], outputs: &Outputs) -> Report {
    let freshest = peers.iter().filter_map(|p| p.last_heard_wall_ns).max();
    let inputs = peers
        .iter()
        .map(|peer| ClientInput {
            rank: peer.rank,
            host: peer.host.clone(),
            report: peer.report.as_deref().and_then(|j| json::from_str(j).ok()),
            snapshot: peer.snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok()),
            lost: is_lost(peer, freshest),
            last_heard_unix_ns: peer.last_heard_wall_ns,
            clock_offset_ns: peer.clock.offset_ns,
            clock_rtt_ns: peer.clock.rtt_ns,
            report_path: outputs.client_json(peer.rank).map(|p| p.display().to_string()),
        })
        .collect();
    merge::merge(inputs, cluster.library())
}

/// A client is lost when it sent no report and went quiet: rank 0 already judged it so
/// ([`LOST_AFTER`] of silence during the round), or its last word came more than three
/// snapshot intervals before the freshest client's (the state rank 0 finds on SIGTERM, which
/// mpirun sends a second after a rank dies), or it was never heard at all.
fn is_lost(peer: &PeerRecord, freshest_wall_ns: Option<u64>) -> bool {
    if peer.report.is_some() {
        return false;
    }
    let stale_after = 3 * SNAPSHOT_INTERVAL.as_nanos() as u64;
    match (peer.last_heard_wall_ns, freshest_wall_ns) {
        (Some(heard), Some(freshest)) => peer.lost || freshest.saturating_sub(heard) > stale_after,
        _ => true,
    }
}

/// A scenario run's figures for the tally, from its client's row of the merged report.
fn client_as_report(row: Option<&playsim::report::ClientReport>, merged: &Report) -> Report {
    let mut report = Report { status: merged.status, ..Report::default() };
    if let Some(row) = row {
        report.status = row.status;
        report.totals.fps = row.fps;
        report.totals.mb_per_s = row.mb_per_s;
        report.totals.dropped = row.dropped;
    }
    report
}

/// `R.client-K.json` beside `R.json`.
fn client_report_path(merged: &Path, rank: u32) -> PathBuf {
    let stem =
        merged.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    let extension =
        merged.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_else(|| "json".into());
    merged.with_file_name(format!("{stem}.client-{rank}.{extension}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_reports_sit_beside_the_merged_one() {
        assert_eq!(client_report_path(Path::new("out/run.json"), 2), Path::new("out/run.client-2.json"));
        assert_eq!(client_report_path(Path::new("run"), 0), Path::new("run.client-0.json"));
    }

    #[test]
    fn a_client_without_a_report_is_lost_when_it_went_quiet_before_the_others() {
        let ms = 1_000_000;
        let heard = |at_ms: u64| PeerRecord { last_heard_wall_ns: Some(at_ms * ms), ..PeerRecord::default() };
        let freshest = Some(10_000 * ms);
        // Killed a second before mpirun's SIGTERM: quiet for 1 s while the others were not.
        assert!(is_lost(&heard(9_000), freshest));
        // Stopped by the SIGTERM itself, its last snapshot a moment old: not lost.
        assert!(!is_lost(&heard(9_800), freshest));
        // Its report came: never lost, however old.
        assert!(!is_lost(&PeerRecord { report: Some("{}".into()), ..heard(1) }, freshest));
        // Rank 0 judged it lost during the round, or it was never heard at all.
        assert!(is_lost(&PeerRecord { lost: true, ..heard(9_900) }, freshest));
        assert!(is_lost(&PeerRecord::default(), freshest));
    }

    #[test]
    fn the_transport_of_a_request_is_its_scheme() {
        assert_eq!(transport_of(&PlayRequest::new("nfs://server/export/shot")), "nfs");
        assert_eq!(transport_of(&PlayRequest::new("nfs+rdma://server/export/shot")), "nfs+rdma");
        assert_eq!(transport_of(&PlayRequest::new("/mnt/media/shot")), "local");
    }
}
