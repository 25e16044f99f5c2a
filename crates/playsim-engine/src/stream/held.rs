//! What frames hold between stages, counted: the bytes of the frames in the prefetch windows
//! against the run's `--max-buffer` ([`ByteBudget`]), and the buffers the output side holds
//! ([`HeldCount`]).
//!
//! # Memory (moved from ARCHITECTURE.md)
//!
//! Each stream holds at most `--prefetch` frames between admission and presentation, and every
//! frame buffer comes from a per-stream pool and is recycled: steady state allocates nothing per
//! frame.
//!
//! - The encoded pool (`BufPool<IoBuf>`): a frame's encoded bytes, then the same frame's v210
//!   output, packed into a buffer from the same pool; a frame holds at most one at a time.
//! - The decoded pool (`BufPool<DecodedFrame>`): with an output stage a stream holds at most its
//!   decode threads + output threads + 2 decoded frames (`decoded_slots`, taken after the read,
//!   given back once the output stage has packed the frame); a read frame waiting for a slot waits
//!   on the output stage, and is dropped as `output` there (`Phase::DecodedSlotQueued`). Long-GOP
//!   streams are bounded by their picture budget instead.
//! - `--max-buffer` (run-wide; by default a quarter of MemAvailable, 256 MiB to 4 GiB, refused
//!   above MemTotal) bounds the bytes of the frames in every window ([`ByteBudget`]). A frame
//!   reserves its bytes after the open, giving its I/O slot back while it waits; a stream's frame
//!   next due always reads, so playback never deadlocks. A frame larger than the whole budget is
//!   unreadable before any buffer is taken. Long-GOP packets are outside the budget.
//! - A buffer that must grow gets `IoBuf::grown_capacity(len)` (a sixteenth more from 1 MiB up),
//!   so a sequence whose frames grow by a few kB does not replace its buffers every frame.
//!
//! The report's `pool_buffers` gives each pool's buffers and bytes (an upper estimate),
//! `memory.peak_rss_bytes` the process's `VmHWM`. A 4K DCI DPX stream with the defaults stays
//! within issue 8's bound of (prefetch + io depth) × encoded + (decode threads + output slots + 2)
//! × decoded + 64 MB (583.5 MB against 754.1 MB).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::cancel::CancelToken;

/// The bytes the frames of the run's prefetch windows may hold at once, shared by every
/// stream: a frame reserves its bytes before its read and gives them back when it leaves the
/// window (presented, dropped or failed), so frames read ahead of their decode, and frames
/// decoded and packed ahead of their deadline, are all within it. A stream's frame next due
/// may always read (its stream cannot go on without it; the frames holding the bytes wait for
/// it to be presented), and so may any frame when nothing is held. A frame larger than the
/// whole budget is refused before its buffer is taken ([`StreamCtx::refuse_oversized`]): its
/// size comes from a file or a server, and no such claim may allocate past `--max-buffer`.
pub(crate) struct ByteBudget {
    limit: u64,
    held: Mutex<u64>,
    peak: AtomicU64,
    freed: Notify,
}

impl ByteBudget {
    pub fn new(limit: u64) -> ByteBudget {
        ByteBudget { limit: limit.max(1), held: Mutex::new(0), peak: AtomicU64::new(0), freed: Notify::new() }
    }

    /// Reserves `bytes` as soon as they fit (or nothing else is held), or at once, beyond the
    /// limit, when `next_due` says the frame is its stream's next due (asked again whenever
    /// bytes are freed or a presenter moves on). `None` if the run was cancelled first: the
    /// frame then goes on unreserved, to be wound up by the cancellation.
    pub async fn reserve(
        self: &Arc<Self>,
        bytes: u64,
        cancel: &CancelToken,
        next_due: impl Fn() -> bool,
    ) -> Option<Reservation> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(reservation) = self.try_reserve(bytes) {
                return Some(reservation);
            }
            if next_due() {
                return Some(self.overdraw(bytes));
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = &mut freed => {}
            }
        }
    }

    /// The most bytes the frames may hold at once: `--max-buffer`.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Reserves `bytes` if they fit now, or if nothing else is held.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if *held > 0 && held.saturating_add(bytes) > self.limit {
            return None;
        }
        *held = held.saturating_add(bytes);
        self.peak.fetch_max(*held, Ordering::Relaxed);
        Some(Reservation { budget: Arc::clone(self), bytes })
    }

    /// Reserves `bytes` whether they fit or not.
    fn overdraw(self: &Arc<Self>, bytes: u64) -> Reservation {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        *held = held.saturating_add(bytes);
        self.peak.fetch_max(*held, Ordering::Relaxed);
        Reservation { budget: Arc::clone(self), bytes }
    }

    /// Wakes the frames waiting for room, to ask again whether they are next due.
    pub fn wake(&self) {
        self.freed.notify_waiters();
    }

    /// The most bytes held at once so far.
    #[cfg(test)]
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    fn release(&self, bytes: u64) {
        {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            *held = held.saturating_sub(bytes);
        }
        self.freed.notify_waiters();
    }
}

/// Bytes of a [`ByteBudget`] a frame holds, given back when dropped.
pub(crate) struct Reservation {
    budget: Arc<ByteBudget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// Things held at once, now and at the most: the output side's buffers.
#[derive(Default)]
pub(crate) struct HeldCount {
    now: AtomicU64,
    peak: AtomicU64,
}

impl HeldCount {
    /// One more held, until the returned guard is dropped.
    pub fn hold(self: &Arc<Self>) -> HeldOne {
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
        HeldOne(Arc::clone(self))
    }

    /// The most held at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// One thing of a [`HeldCount`], counted until dropped.
pub(crate) struct HeldOne(Arc<HeldCount>);

impl Drop for HeldOne {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_lets_one_frame_through_and_holds_the_rest_to_its_limit() {
        let budget = Arc::new(ByteBudget::new(100));
        let huge = budget.try_reserve(500).expect("the first frame always goes");
        assert!(budget.try_reserve(1).is_none(), "nothing more while over the limit");
        drop(huge);
        let a = budget.try_reserve(60);
        let b = budget.try_reserve(40);
        assert!(a.is_some() && b.is_some());
        assert!(budget.try_reserve(1).is_none());
        drop(a);
        assert!(budget.try_reserve(60).is_some());
        assert_eq!(budget.peak(), 500);
    }

    #[test]
    fn a_count_keeps_its_peak() {
        let count = Arc::new(HeldCount::default());
        let (a, b) = (count.hold(), count.hold());
        drop((a, b));
        let _c = count.hold();
        assert_eq!(count.peak(), 2);
    }
}
