//! Rounds of several clients under an MPI launcher (`mpirun -np N playsim play ...`): what each
//! client plays, the reports it writes and sends, and rank 0's merge.
//!
//! A run of several clients is made of rounds (`playsim_cluster`): `play` is one, a capacity
//! search one per trial, a scenario one per pass. In a round every rank prepares its own
//! streams (or sits idle) and plays them with the ordinary engine; the start barrier lines the
//! ranks up; rank 0 merges the clients' reports. Every rank writes its own report beside the
//! merged one (`R.client-K.json` for `--json R.json`), so that nothing is lost if rank 0 dies.
//! A snapshot of the counts goes to rank 0 a few times a second: on a stop (SIGTERM, mpirun's
//! answer to a dead rank or to Ctrl-C) rank 0 writes the merged report from them at once, well
//! within the second before mpirun's SIGKILL.
//!
//! The CLI draws and prints; this module plays: a [`RoundWatch`] is told what to show, and
//! what a client says goes to its [`Events`].

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use playsim_cluster::{wall_ns, Cluster, Finished, PeerRecord, SNAPSHOT_INTERVAL};
use playsim_core::Clock;
use playsim_engine::probe::{ProcessCpu, ProcessMemory};
use playsim_engine::{CancelToken, LiveCounters};
use playsim_report::merge::{self, ClientInput, ClientSnapshot};
use playsim_report::{json, Report, RunStatus};

use crate::{CapacityBy, CapacityRequest, Error, Events, PlayRequest, Trial};

/// What rank 0's dashboard is told of a round (the other ranks have none).
pub trait RoundWatch: Send + Sync {
    /// This client's run of the round has started: its live counters.
    fn started(&self, live: Arc<LiveCounters>);
    /// The process is being stopped: put the terminal back before mpirun's SIGKILL.
    fn stopping(&self);
    /// Rank 0 is ending a round: take the clients' last snapshots of it, which the next
    /// round's would replace.
    fn latch(&self);
}

/// A stop of the whole run (SIGTERM from mpirun, or Ctrl-C): made once a round.
pub type StopSignal = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Where a round's reports go: the merged one (rank 0), and each client's beside it.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The merged report's path; each client's is beside it ([`client_report_path`]).
    pub merged_json: Option<PathBuf>,
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
pub enum RoundEnd {
    /// Rank 0: the merged report (the clients' word not yet sent: see [`Cluster::done`]).
    Root(Report),
    /// Another rank: its own report, and rank 0's exit code and payload, if they came.
    Client(Report, Option<(u8, String)>),
}

/// This process's rounds: the cluster, the run's one clock, where its words go, what stops
/// it, and rank 0's dashboard when it has one.
pub struct Rounds {
    cluster: Arc<Cluster>,
    clock: Arc<dyn Clock>,
    events: Events,
    stop: StopSignal,
    watch: Option<Arc<dyn RoundWatch>>,
}

impl Rounds {
    /// Rounds of `cluster` on `clock`, stopped by `stop`, saying what goes wrong to `events`.
    pub fn new(cluster: Arc<Cluster>, clock: Arc<dyn Clock>, events: Events, stop: StopSignal) -> Rounds {
        Rounds { cluster, clock, events, stop, watch: None }
    }

    /// With rank 0's dashboard.
    pub fn watched(mut self, watch: Arc<dyn RoundWatch>) -> Rounds {
        self.watch = Some(watch);
        self
    }

    /// The cluster.
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// Ends the rounds: the cluster back, to be closed (or terminated, if a round still holds it).
    pub fn into_cluster(self) -> Arc<Cluster> {
        self.cluster
    }

    /// A round in which this client has nothing to play (or could not set up, `error`).
    pub async fn idle_round(&self, error: Option<String>) -> RoundEnd {
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
    pub async fn round(
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
            (self.stop)(),
            Arc::clone(cluster),
            Arc::clone(&current),
            outputs.clone(),
            Arc::clone(&merged_written),
            self.watch.clone(),
            self.events.clone(),
        ));
        let barrier = cluster.start_barrier();
        let mut own = match crate::prepare_on(request, Arc::clone(&self.clock), Some(barrier)).await {
            Ok(sim) => {
                *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(sim.canceller());
                if let Some(watch) = &self.watch {
                    watch.started(sim.live());
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
                crate::note_request(request, &mut report);
                report
            }
            Err(e) => {
                let own = e.to_string();
                let reason = cluster.fail_to_start(own.clone()).await;
                let mut report = crate::failed_report(request, &own);
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

    /// A capacity trial of `candidate` as a round: every rank runs the same search, rank 0
    /// merges the trial and sends its verdict to every client, so that all take the same next
    /// step, or all stop.
    pub async fn capacity_trial(&self, request: &CapacityRequest, candidate: u32) -> Result<Trial, Error> {
        let play = crate::trial_request(request, candidate)?;
        let plays = request.by != CapacityBy::Clients || self.cluster.rank() < candidate;
        let verdict = match self.round(plays.then_some(&play), &Outputs::default(), None).await {
            RoundEnd::Root(merged) => {
                let verdict = if merged.status == RunStatus::Failed {
                    Verdict::Failed(format!(
                        "a trial of {candidate} failed: {}",
                        merged.error.unwrap_or_default()
                    ))
                } else {
                    Verdict::Trial(crate::trial_of(candidate, &merged))
                };
                if let Some(watch) = &self.watch {
                    watch.latch();
                }
                self.cluster.done(0, serde_json::to_string(&verdict).unwrap_or_default());
                verdict
            }
            RoundEnd::Client(_, Some((_, payload))) => serde_json::from_str::<Verdict>(&payload)
                .unwrap_or_else(|e| Verdict::Failed(format!("rank 0's verdict does not parse: {e}"))),
            RoundEnd::Client(own, None) => Verdict::Failed(format!(
                "rank 0 stopped before the trial of {candidate} was merged{}",
                own.error.map(|e| format!(" ({e})")).unwrap_or_default()
            )),
        };
        match verdict {
            Verdict::Trial(trial) => Ok(trial),
            Verdict::Failed(error) => Err(Error::Engine(error)),
        }
    }

    /// Writes this client's own report, sends it to rank 0, and on rank 0 merges them all.
    async fn finish(&self, own: Report, outputs: &Outputs) -> RoundEnd {
        let rank = self.cluster.rank();
        if let Some(path) = outputs.client_json(rank) {
            if let Err(e) = json::write_atomic(&own, &path) {
                self.events
                    .warn(format!("client {rank}: cannot write its report to {}: {e}", path.display()));
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
        schema_version: playsim_report::SCHEMA_VERSION,
        playsim_version: env!("CARGO_PKG_VERSION").to_owned(),
        origin_unix_ns: wall_ns(clock),
        environment: playsim_engine::probe::environment(),
        ..Report::default()
    }
}

fn failed_idle(own: &str, reason: &str) -> Report {
    Report {
        schema_version: playsim_report::SCHEMA_VERSION,
        status: RunStatus::Failed,
        error: Some(if reason.contains(own) { reason.to_owned() } else { format!("{own} ({reason})") }),
        playsim_version: env!("CARGO_PKG_VERSION").to_owned(),
        environment: playsim_engine::probe::environment(),
        ..Report::default()
    }
}

/// On `stop` (SIGTERM from mpirun, or Ctrl-C): stops this client's run and, on rank 0, writes
/// the merged report from the snapshots at once: mpirun sends SIGKILL soon after. A client whose
/// snapshots stopped well before the others' is lost (mpirun sends SIGTERM a second after a
/// rank dies). The round's own end writes the report again if it gets that far.
async fn on_termination(
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    cluster: Arc<Cluster>,
    current: Arc<Mutex<Option<Arc<CancelToken>>>>,
    outputs: Outputs,
    merged_written: Arc<AtomicBool>,
    watch: Option<Arc<dyn RoundWatch>>,
    events: Events,
) {
    stop.await;
    // The terminal first: mpirun's SIGKILL would leave it on the alternate screen.
    if let Some(watch) = &watch {
        watch.stopping();
    }
    events.warn(format!("client {}: stopping; finishing the report", cluster.rank()));
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
pub fn client_as_report(row: Option<&playsim_report::ClientReport>, merged: &Report) -> Report {
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
pub fn client_report_path(merged: &Path, rank: u32) -> PathBuf {
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
