//! What every writer shares and the io_uring engine needs too, below both (as `read_plan.rs`
//! is for the readers): the bytes of a write and the counters. `write` re-exports them; they
//! live here so that `uring` does not import `write`, which imports it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes to write, shared so that one image can go into many files without a copy.
pub type WriteBytes = Arc<[u8]>;

/// Counters of a [`WriteStorage`](crate::write::WriteStorage), over all its files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// [`WriteFile::write_at`](crate::write::WriteFile::write_at) calls that succeeded.
    pub n_writes: u64,
    /// Bytes written by them.
    pub bytes: u64,
    /// Syncs: [`WriteFile::sync`](crate::write::WriteFile::sync) calls and stable writes.
    pub n_syncs: u64,
    /// CPU time of the threads doing the writes and syncs, in nanoseconds, where measurable.
    pub cpu_ns: u64,
}

/// The counters behind [`WriteStats`], shared by a storage's files.
#[derive(Debug, Default)]
pub(crate) struct WriteCounters {
    pub(crate) n_writes: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) n_syncs: AtomicU64,
    pub(crate) cpu_ns: AtomicU64,
}

impl WriteCounters {
    /// The counts so far.
    pub(crate) fn stats(&self) -> WriteStats {
        WriteStats {
            n_writes: self.n_writes.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            n_syncs: self.n_syncs.load(Ordering::Relaxed),
            cpu_ns: self.cpu_ns.load(Ordering::Relaxed),
        }
    }
}
