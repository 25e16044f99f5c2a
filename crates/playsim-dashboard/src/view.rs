//! The dashboard's input: plain data that the caller fills from the live engine at each refresh.

use std::time::Duration;

/// Everything one frame of the dashboard shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DashboardView {
    /// The first line, e.g. `playsim play nfs://host/export/seq  DPX 4K 24 fps  2 streams`.
    pub title: String,
    /// Time since the run started.
    pub elapsed: Duration,
    /// The run's planned length, when known: the header then shows a progress gauge and the time
    /// left.
    pub planned: Option<Duration>,
    /// One entry per stream.
    pub streams: Vec<StreamView>,
    /// The pipeline's stages (read, decode, output, ...).
    pub stages: Vec<StageView>,
    /// The clients (MPI ranks) of a run on several clients; empty for one client, and then the
    /// clients' table is left out.
    pub clients: Vec<ClientView>,
    /// A line about the run as a whole, e.g. `matrix: dpx-4k @ 50 fps, trial 3 of 41, 2 streams`.
    pub status: Option<String>,
    /// The bottom line, which says what the keys do; `None` for the usual
    /// `q hides the dashboard, Ctrl-C stops the run` (a dashboard behind a launcher sets its own).
    pub key_hint: Option<String>,
}

/// Dropped frames by cause, as Flame counts them: playsim-core's one drop-counts type.
///
/// The fields are playsim's causes; Flame's debug counters name them `video disk` (storage),
/// `CPU/GPU` (decode), `broadcast` (output) and `unreadable`.
pub use playsim_core::DropCounters as Drops;

/// One stream's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamView {
    /// The stream's name (a file pattern, a clip name, ...).
    pub name: String,
    /// Frames presented on time.
    pub presented: u64,
    /// Frames dropped, by cause.
    pub dropped: Drops,
    /// Frames read (and decoded) ahead of the playhead now.
    pub buffered: u32,
    /// The most frames the stream may hold ahead: `buffered` is drawn against it.
    pub window: u32,
    /// Recent slack to the deadline in milliseconds, oldest first: how long before its deadline
    /// each frame was ready. Negative means late.
    pub slack_ms: Vec<f64>,
    /// Data rate, in MB/s (10^6 bytes a second).
    pub mb_per_s: f64,
    /// Frames presented a second.
    pub fps: f64,
}

/// One pipeline stage's load.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageView {
    /// The stage's name: `read`, `decode`, `output`, ...
    pub name: String,
    /// CPU time used, in percent of one core (so above 100 for a stage on several threads).
    pub cpu_percent: f64,
    /// The 99th percentile of the stage's latency per frame, when there are samples.
    pub p99_ms: Option<f64>,
}

/// One client's (MPI rank's) counters, over all its streams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientView {
    /// The MPI rank.
    pub rank: u32,
    /// The host the rank runs on.
    pub host: String,
    /// Frames presented on time.
    pub presented: u64,
    /// Frames dropped, by cause.
    pub dropped: Drops,
    /// Frames presented a second.
    pub fps: f64,
    /// Data rate, in MB/s.
    pub mb_per_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_add_up_by_cause_and_in_total() {
        let a = Drops { storage: 1, decode: 2, output: 3, unreadable: 4 };
        let b = Drops { storage: 10, decode: 20, output: 30, unreadable: u64::MAX };
        assert_eq!(a.total(), 10);
        assert_eq!(a.by_cause(), [1, 2, 3, 4]);
        let mut sum = a;
        sum += b;
        assert_eq!(sum.by_cause(), [11, 22, 33, u64::MAX]);
        assert_eq!(sum.total(), u64::MAX, "saturates instead of overflowing");
    }
}
