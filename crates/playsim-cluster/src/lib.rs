//! Several playsim clients in one run, on MPI (`mpirun -np N playsim play ...`): each rank is
//! a client that plays its own streams with the ordinary engine; rank 0 lines up their start
//! and gathers their counts.
//!
//! - [`launcher`]: whether a launcher started this process (read before MPI is touched, so
//!   that a plain run never is).
//! - [`clock_sync`]: each client's clock offset against rank 0's, from round trips.
//! - [`Cluster`]: this process as a client, on a thread of its own that makes every MPI call
//!   (behind the `mpi` feature). It gives the engine a [`StartBarrier`], carries snapshots of
//!   the counts to rank 0 a few times a second, and at the end the clients' reports.
//!
//! The protocol uses point-to-point messages only, each tested for before it is received, so
//! that no rank ever blocks on a peer that may be dead: Debian's OpenMPI has no fault
//! tolerance, and when a rank dies mpirun sends SIGTERM to the others and SIGKILL a second
//! later. [`Cluster::terminate`] makes every wait give up at once, and rank 0 keeps the
//! latest snapshot of every client ([`Cluster::peers`]) to write the merged report from.
//!
//! The start: every client opens its sources and fills its preroll, then tells rank 0 it is
//! ready (or why it could not open its source, which aborts the run for all). Once all are
//! ready, rank 0 measures each client's clock offset over round trips, picks a start
//! [`START_MARGIN`] ahead on its own clock, and sends each client that instant on the
//! client's clock. Every client's frame 0 falls due then.
//!
//! # Detail (moved from ARCHITECTURE.md)
//!
//! - **Rounds.** `play` is one round, `capacity` one per trial, `run` one per pass. Clients send a
//!   `Snapshot` of their counts every 250 ms and their whole report at the end; rank 0 merges
//!   (`playsim_report::merge`) and sends `Done` with an exit code and a payload (a capacity
//!   trial's verdict, so every rank's search takes the same next step). A rank with nothing to
//!   play in a round still takes part, idle.
//! - **Clocks.** Rank 0 makes 16 round trips with each client, keeps the shortest, and takes the
//!   offset against its midpoint, as NTP does. Wall times are the run's one clock's
//!   (`Clock::wall_origin() + now()`).
//! - **Faults.** On SIGTERM a client cancels its run and writes its partial report beside the
//!   merged one; rank 0 writes the merged report from what it has: a client whose snapshots
//!   stopped more than three intervals before the freshest is lost, and so is one silent for 3 s
//!   in a round. MPI is not finalised after a SIGTERM.
//! - **Placement.** `play` gives every client the same command line (mpirun's MPMD form gives them
//!   different ones); `capacity` varies streams a client, the rate, or the clients
//!   (`--by clients`); `run` places each scenario run on its `client = K`, else on `i mod N`.
//! - **The feature.** `mpi` is off by default: it links libmpi, which a workstation that never
//!   runs under a launcher need not have. Without it the launcher's variables are still read
//!   ([`launcher`]), so `mpirun -np 3 playsim play ...` gets one refusal from rank 0, exit status
//!   2, naming the feature, rather than three runs that would each claim to be the whole.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use playsim_core::Clock;
use playsim_engine::{StartBarrier, StartFuture};
use thiserror::Error;

pub mod clock_sync;
pub mod launcher;
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod protocol;
#[cfg(feature = "mpi")]
mod world;

pub use clock_sync::ClockOffset;
pub use launcher::Launcher;

/// How far ahead of the moment every client is ready rank 0 schedules the start: time for
/// the start message to reach every client and for its presenter to wake.
pub const START_MARGIN: Duration = Duration::from_millis(100);

/// How often a client sends rank 0 its running counts.
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_millis(250);

/// A client not heard from for this long is taken as lost.
pub const LOST_AFTER: Duration = Duration::from_secs(3);

/// The run's one clock as wall time, in ns since the Unix epoch (`wall_origin() + now()`):
/// the time every client and rank 0 speak in.
pub fn wall_ns(clock: &dyn Clock) -> u64 {
    u64::try_from((clock.wall_origin() + clock.now()).as_nanos()).unwrap_or(u64::MAX)
}

/// Why this process cannot be a client of a run.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// Started by an MPI launcher, but built without MPI.
    #[error(
        "started by an MPI launcher as {0} ({1} is set), but this playsim was built without the `mpi` \
         feature, so it would run as N independent copies: rebuild it with `cargo build --release \
         --features mpi` (as `cargo xtask` does), or run it without mpirun"
    )]
    NotBuilt(String, &'static str),
    /// MPI would not start.
    #[error("MPI did not start: {0}")]
    Init(String),
}

/// What rank 0 knows of one client (itself included, as rank 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeerRecord {
    /// The client's rank.
    pub rank: u32,
    /// Its host, once it said.
    pub host: String,
    /// Its clock against rank 0's (zero for rank 0).
    pub clock: ClockOffset,
    /// Why it could not open its source, when it could not.
    pub open_error: Option<String>,
    /// Its latest snapshot, as it sent it.
    pub snapshot: Option<String>,
    /// Its report, once it sent it.
    pub report: Option<String>,
    /// When it was last heard from, in ns since the epoch on rank 0's clock.
    pub last_heard_wall_ns: Option<u64>,
    /// Not heard from for [`LOST_AFTER`], or not at all when the run ended.
    pub lost: bool,
}

/// One client's latest snapshot, as rank 0 holds it: see [`Cluster::snapshots`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeerSnapshot {
    /// The client's rank.
    pub rank: u32,
    /// Its host, once it said.
    pub host: String,
    /// Its latest snapshot this round, as it sent it.
    pub snapshot: Option<String>,
}

/// How a client's part of the run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Finished {
    /// Rank 0: every client's record, in rank order.
    Root(Vec<PeerRecord>),
    /// Another rank: rank 0's exit code and payload for the round, or `None` when none came.
    Client(Option<(u8, String)>),
}

/// This process as a client of a run of several: see the crate's documentation.
pub struct Cluster {
    /// The run's one clock.
    clock: Arc<dyn Clock>,
    #[cfg(feature = "mpi")]
    inner: world::World,
    #[cfg(not(feature = "mpi"))]
    never: std::convert::Infallible,
}

impl Cluster {
    /// Joins the run when an MPI launcher started this process, on the run's `clock`;
    /// `Ok(None)` when none did (a plain run, with MPI never touched).
    pub fn join(clock: Arc<dyn Clock>) -> Result<Option<Cluster>, ClusterError> {
        let Some(launcher) = Launcher::from_env() else { return Ok(None) };
        Cluster::join_under(&launcher, clock).map(Some)
    }

    #[cfg(feature = "mpi")]
    fn join_under(_launcher: &Launcher, clock: Arc<dyn Clock>) -> Result<Cluster, ClusterError> {
        Ok(Cluster { inner: world::World::start(Arc::clone(&clock))?, clock })
    }

    #[cfg(not(feature = "mpi"))]
    fn join_under(launcher: &Launcher, _clock: Arc<dyn Clock>) -> Result<Cluster, ClusterError> {
        Err(ClusterError::NotBuilt(launcher.describe(), launcher.variable))
    }

    /// This client's rank; rank 0 merges the report.
    pub fn rank(&self) -> u32 {
        #[cfg(feature = "mpi")]
        return self.inner.rank;
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// The number of clients.
    pub fn size(&self) -> u32 {
        #[cfg(feature = "mpi")]
        return self.inner.size;
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// This client's host name, as MPI names it.
    pub fn host(&self) -> &str {
        #[cfg(feature = "mpi")]
        return &self.inner.host;
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// The MPI library and its version, e.g. "Open MPI v4.1.4".
    pub fn library(&self) -> &str {
        #[cfg(feature = "mpi")]
        return &self.inner.library;
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// Whether this is rank 0, which merges the report.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// The engine's start barrier for this client's run.
    pub fn start_barrier(self: &Arc<Self>) -> Arc<dyn StartBarrier> {
        Arc::new(ClusterStart(Arc::clone(self)))
    }

    /// Tells rank 0 this client could not open its source, and waits for the run to be
    /// called off (rank 0 answers every client's readiness, so this ends).
    pub async fn fail_to_start(&self, error: String) -> String {
        match self.ready(Some(error)).await {
            Ok(_) => "the run started without this client".to_owned(),
            Err(reason) => reason,
        }
    }

    /// Readiness to rank 0; the common start, in ns since the epoch on this client's clock.
    async fn ready(&self, error: Option<String>) -> Result<u64, String> {
        #[cfg(feature = "mpi")]
        return self.inner.ready(error).await;
        #[cfg(not(feature = "mpi"))]
        {
            let _ = error;
            match self.never {}
        }
    }

    /// This client's clock against rank 0's, once the start has been given.
    pub fn clock_offset(&self) -> ClockOffset {
        #[cfg(feature = "mpi")]
        return self.inner.clock_offset();
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// The common start on this client's clock, in ns since the epoch, once rank 0 gave it.
    pub fn start_wall_ns(&self) -> Option<u64> {
        #[cfg(feature = "mpi")]
        return self.inner.start_wall_ns();
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// Sends rank 0 this client's running counts (rank 0 keeps its own); never blocks.
    pub fn send_snapshot(&self, json: String) {
        #[cfg(feature = "mpi")]
        self.inner.send_snapshot(json);
        #[cfg(not(feature = "mpi"))]
        {
            let _ = json;
            match self.never {}
        }
    }

    /// Rank 0: what it knows of every client now (for a report written on SIGTERM).
    pub fn peers(&self) -> Vec<PeerRecord> {
        #[cfg(feature = "mpi")]
        return self.inner.peers();
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// Rank 0: every client's latest snapshot this round (none before its first, or between
    /// rounds), with its rank and host: what a live view of the clients shows. Cheaper than
    /// [`Cluster::peers`], which copies the reports too.
    pub fn snapshots(&self) -> Vec<PeerSnapshot> {
        #[cfg(feature = "mpi")]
        return self.inner.snapshots();
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }

    /// Ends this client's part of the round: sends rank 0 its report, and waits, on rank 0
    /// for every client's report (or for it to be lost), elsewhere for rank 0's word
    /// ([`Cluster::done`]). Each round is: ready (the start barrier, or
    /// [`Cluster::fail_to_start`]), snapshots, finish, done.
    pub async fn finish(&self, report_json: String) -> Finished {
        #[cfg(feature = "mpi")]
        return self.inner.finish(report_json).await;
        #[cfg(not(feature = "mpi"))]
        {
            let _ = report_json;
            match self.never {}
        }
    }

    /// Rank 0: tells every client still heard from that the round is merged, with the exit
    /// code of the run and a `payload` every client gets (a capacity trial's verdict), and
    /// starts the next round.
    pub fn done(&self, exit_code: u8, payload: String) {
        #[cfg(feature = "mpi")]
        self.inner.done(exit_code, payload);
        #[cfg(not(feature = "mpi"))]
        {
            let _ = (exit_code, payload);
            match self.never {}
        }
    }

    /// Ends this process's part in the run: MPI is finalised, unless the run was terminated
    /// (then a peer may be dead, and finalising would wait for it).
    pub fn close(self) {
        drop(self);
    }

    /// SIGTERM or Ctrl-C: every wait gives up now, and MPI is not finalised (a peer may be
    /// dead, and finalising would wait for it).
    pub fn terminate(&self) {
        #[cfg(feature = "mpi")]
        self.inner.terminate();
        #[cfg(not(feature = "mpi"))]
        match self.never {}
    }
}

/// The engine's start barrier, answered by rank 0.
struct ClusterStart(Arc<Cluster>);

impl StartBarrier for ClusterStart {
    fn open(&self, _ready_at: Duration) -> StartFuture {
        let cluster = Arc::clone(&self.0);
        Box::pin(async move {
            let start_wall_ns = cluster.ready(None).await?;
            // The start on this client's clock, as time since the clock's origin.
            Ok(Duration::from_nanos(start_wall_ns).saturating_sub(cluster.clock.wall_origin()))
        })
    }
}
