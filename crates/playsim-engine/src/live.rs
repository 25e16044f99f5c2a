//! Live counters that workers bump and a progress reporter samples once a second, and the
//! fuller [`LiveView`] a dashboard draws a few times a second.
//!
//! The counters are atomics bumped on the hot path. The view is read only when asked for: it
//! takes each stream's lock for as long as copying its counters takes, so a dashboard costs
//! the run nothing between its frames and never runs on the presenter's thread.
//!
//! A [`LiveView`] holds the run's elapsed time on its own clock; per stream the frames presented,
//! drops by cause, bytes read, frames in the window against its size, the slack of the last 120
//! frames presented and the frames planned; per stage the CPU so far and the p99 of its latency
//! over every stream. It comes from the running simulation's probe (`RunProbe` in `run.rs`);
//! when the run ends the probe is replaced by the last view, so a view taken after the end gives
//! the report's counters, and `LiveView::ended` makes a dashboard's rates the whole run's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use playsim_core::{DropCause, DropCounters};

/// Counters over all streams, updated as frames fall due.
#[derive(Default)]
pub struct LiveCounters {
    presented: AtomicU64,
    dropped: [AtomicU64; 4],
    bytes_read: AtomicU64,
    /// The running simulation's probe, while it runs; then the view at its end.
    probe: Mutex<Probe>,
}

/// Where a [`LiveCounters::view`] comes from.
#[derive(Default)]
enum Probe {
    /// No simulation has run.
    #[default]
    None,
    /// A simulation runs.
    Running(Arc<dyn LiveProbe>),
    /// It ended: its last view (its streams are gone).
    Ended(LiveView),
}

impl std::fmt::Debug for LiveCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveCounters").field("snapshot", &self.snapshot()).finish_non_exhaustive()
    }
}

/// The run as it is now, for a live display.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveView {
    /// Time since the run's start, on the run's clock.
    pub elapsed: Duration,
    /// Each stream, in the run's order.
    pub streams: Vec<LiveStream>,
    /// Each stage (read, decode, output): CPU so far and latency.
    pub stages: Vec<LiveStage>,
    /// The run had ended: these are its counters at the end.
    pub ended: bool,
}

/// One stream now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStream {
    /// Its name, as in the report.
    pub name: String,
    /// Frames presented.
    pub presented: u64,
    /// Frames dropped, by cause.
    pub dropped: DropCounters,
    /// Bytes read.
    pub bytes_read: u64,
    /// Frames in its window now: read ahead, decoding or waiting to be presented.
    pub buffered: usize,
    /// The window's size: the prefetch, plus a long-GOP decoder's delay.
    pub window: usize,
    /// The slack to their deadline of the frames presented last, oldest first (negative:
    /// ready after it).
    pub recent_slack: Vec<i64>,
    /// Frames it will play, when known (not for `--loop` until cancelled).
    pub frames_planned: Option<u64>,
}

/// One stage now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStage {
    /// `read`, `decode` or `output`.
    pub name: &'static str,
    /// CPU time the stage has used since the run started.
    pub cpu: Duration,
    /// The 99th percentile of its latency over the run so far, over every stream.
    pub p99: Option<Duration>,
}

/// What a running simulation gives a [`LiveCounters::view`].
pub(crate) trait LiveProbe: Send + Sync {
    fn view(&self) -> LiveView;
}

/// A copy of the [`LiveCounters`] at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveSnapshot {
    /// Frames presented.
    pub presented: u64,
    /// Frames dropped, by cause.
    pub dropped: DropCounters,
    /// Bytes read.
    pub bytes_read: u64,
}

impl LiveCounters {
    pub(crate) fn presented(&self) {
        self.presented.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped(&self, cause: DropCause) {
        self.dropped[cause.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn bytes(&self, n: u64) {
        self.bytes_read.fetch_add(n, Ordering::Relaxed);
    }

    /// The run's streams and stages now; once it ended, as they were at its end (the counters
    /// its report gives); `None` before it starts (or for counters no simulation uses).
    pub fn view(&self) -> Option<LiveView> {
        let running = match &*self.probe.lock().unwrap_or_else(|e| e.into_inner()) {
            Probe::None => return None,
            Probe::Running(probe) => Arc::clone(probe),
            Probe::Ended(view) => return Some(view.clone()),
        };
        Some(running.view())
    }

    /// Makes `probe` answer [`LiveCounters::view`] until [`LiveCounters::ended`].
    pub(crate) fn attach(&self, probe: Arc<dyn LiveProbe>) {
        *self.probe.lock().unwrap_or_else(|e| e.into_inner()) = Probe::Running(probe);
    }

    /// The run ended: its last view answers from now on, and its streams are let go.
    pub(crate) fn ended(&self) {
        let mut probe = self.probe.lock().unwrap_or_else(|e| e.into_inner());
        if let Probe::Running(running) = &*probe {
            *probe = Probe::Ended(LiveView { ended: true, ..running.view() });
        }
    }

    /// The counters now.
    pub fn snapshot(&self) -> LiveSnapshot {
        let dropped = DropCounters::from_fn(|cause| self.dropped[cause.index()].load(Ordering::Relaxed));
        LiveSnapshot {
            presented: self.presented.load(Ordering::Relaxed),
            dropped,
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
        }
    }
}
