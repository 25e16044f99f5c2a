//! Live counters that workers bump and a progress reporter samples once a second.

use std::sync::atomic::{AtomicU64, Ordering};

use playsim_core::{DropCause, DropCounters};

/// Counters over all streams, updated as frames fall due.
#[derive(Debug, Default)]
pub struct LiveCounters {
    presented: AtomicU64,
    dropped: [AtomicU64; 4],
    bytes_read: AtomicU64,
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

fn slot(cause: DropCause) -> usize {
    match cause {
        DropCause::Storage => 0,
        DropCause::Decode => 1,
        DropCause::Output => 2,
        DropCause::Unreadable => 3,
    }
}

impl LiveCounters {
    pub(crate) fn presented(&self) {
        self.presented.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped(&self, cause: DropCause) {
        self.dropped[slot(cause)].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn bytes(&self, n: u64) {
        self.bytes_read.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> LiveSnapshot {
        let mut dropped = DropCounters::default();
        for cause in DropCause::ALL {
            let n = self.dropped[slot(cause)].load(Ordering::Relaxed);
            match cause {
                DropCause::Storage => dropped.storage = n,
                DropCause::Decode => dropped.decode = n,
                DropCause::Output => dropped.output = n,
                DropCause::Unreadable => dropped.unreadable = n,
            }
        }
        LiveSnapshot {
            presented: self.presented.load(Ordering::Relaxed),
            dropped,
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
        }
    }
}
