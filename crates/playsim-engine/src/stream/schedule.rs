//! Scheduling between streams: a decode pool's threads go to the waiting frame with the
//! earliest deadline, whichever stream it belongs to.
//!
//! First come, first served let one stream's backlog take a shared pool from the others:
//! under overload the stream whose frames happened to queue first kept the threads, and the
//! others dropped. Earliest deadline first gives every stream of equal rate an equal share,
//! and a frame due sooner is never kept waiting behind one due later. The pool also says
//! what is queued ahead of a deadline, which the admission rule (`admit.rs`) uses to judge
//! whether a frame about to be read could still be decoded in time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// A frame's place in the pool's order, earliest first: its stream's virtual deadline, then its
/// own deadline, then first come, first served.
///
/// The virtual deadline is the deadline of the stream's frame numbered by how many decodes the
/// stream has had: `t0 + due_offset(decodes)`. While every frame is decoded, that is the
/// frame's own deadline, and the pool serves earliest deadline first. Under overload, a
/// stream the pool served less has an earlier virtual deadline and goes first, each stream in
/// proportion to its rate. Plain deadlines were not fair there: streams skip different
/// frames, so their deadlines differ; a stream pushed to later frames found more frames
/// ahead of it, rejected more, and fell further behind: four streams at 3× what their pool
/// sustains presented 250 to 342 frames each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct DeadlineKey {
    /// The stream's virtual deadline, in nanoseconds on the run's clock.
    pub virtual_ns: u64,
    /// The frame's own deadline.
    pub due_ns: u64,
}

impl DeadlineKey {
    /// Behind every frame with a deadline: `--fps max`.
    pub(crate) const NONE: DeadlineKey = DeadlineKey { virtual_ns: u64::MAX, due_ns: u64::MAX };

    #[cfg(test)]
    fn due(due_ns: u64) -> DeadlineKey {
        DeadlineKey { virtual_ns: due_ns, due_ns }
    }
}

/// `capacity` slots handed to waiters in deadline order.
pub(crate) struct DeadlineSlots {
    capacity: usize,
    /// Slots handed out so far: the pool's decodes.
    granted: std::sync::atomic::AtomicU64,
    state: Mutex<SlotsState>,
}

#[derive(Default)]
struct SlotsState {
    free: usize,
    next_seq: u64,
    /// Waiting frames by (deadline, arrival).
    waiting: BTreeMap<(DeadlineKey, u64), Arc<Waiter>>,
}

#[derive(Default)]
struct Waiter {
    /// Set, under the lock, when a slot is handed to this waiter.
    granted: AtomicBool,
    wake: Notify,
}

/// A slot of a [`DeadlineSlots`], given back (to the earliest waiter) when dropped.
pub(crate) struct DeadlineSlot {
    slots: Arc<DeadlineSlots>,
}

impl Drop for DeadlineSlot {
    fn drop(&mut self) {
        self.slots.release();
    }
}

impl DeadlineSlots {
    /// A pool of `capacity` slots.
    pub(crate) fn new(capacity: usize) -> DeadlineSlots {
        DeadlineSlots {
            capacity,
            granted: std::sync::atomic::AtomicU64::new(0),
            state: Mutex::new(SlotsState { free: capacity, ..SlotsState::default() }),
        }
    }

    /// Its size.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots handed out so far.
    pub(crate) fn granted(&self) -> u64 {
        self.granted.load(Ordering::Relaxed)
    }

    /// Waits for a slot; among waiters the one with the earliest `deadline` is served first.
    /// Dropping the future gives up its place (or the slot, if it was just handed over).
    pub(crate) async fn acquire(self: &Arc<Self>, deadline: DeadlineKey) -> DeadlineSlot {
        let slot = self.wait_for_slot(deadline).await;
        self.granted.fetch_add(1, Ordering::Relaxed);
        slot
    }

    async fn wait_for_slot(self: &Arc<Self>, deadline: DeadlineKey) -> DeadlineSlot {
        let (key, waiter) = {
            let mut st = self.lock();
            if st.free > 0 {
                st.free -= 1;
                return DeadlineSlot { slots: Arc::clone(self) };
            }
            let key = (deadline, st.next_seq);
            st.next_seq += 1;
            let waiter = Arc::new(Waiter::default());
            st.waiting.insert(key, Arc::clone(&waiter));
            (key, waiter)
        };
        let mut place = Place { slots: self, key, waiter, served: false };
        loop {
            if place.waiter.granted.load(Ordering::Acquire) {
                place.served = true;
                return DeadlineSlot { slots: Arc::clone(self) };
            }
            // `notify_one` stores its wake-up, so one sent before this await is not lost.
            place.waiter.wake.notified().await;
        }
    }

    /// Slots in use, and waiters served before a frame with key `key` would be: the work it
    /// would find ahead of it.
    pub(crate) fn ahead_of(&self, key: DeadlineKey) -> usize {
        let st = self.lock();
        let busy = self.capacity - st.free;
        busy + st.waiting.range(..(key, u64::MAX)).count()
    }

    fn release(&self) {
        let mut st = self.lock();
        Self::hand_on(&mut st);
    }

    /// A slot came free: hand it to the earliest waiter, or keep it.
    fn hand_on(st: &mut SlotsState) {
        match st.waiting.pop_first() {
            Some((_, waiter)) => {
                waiter.granted.store(true, Ordering::Release);
                waiter.wake.notify_one();
            }
            None => st.free += 1,
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotsState> {
        // A poisoned lock only means a task panicked mid-update; the counts are still whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A waiter's place in the queue; leaving it without being served gives it up, and leaving it
/// once served but before the slot was taken passes the slot on.
struct Place<'a> {
    slots: &'a DeadlineSlots,
    key: (DeadlineKey, u64),
    waiter: Arc<Waiter>,
    served: bool,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        let mut st = self.slots.lock();
        if st.waiting.remove(&self.key).is_none() && self.waiter.granted.load(Ordering::Acquire) {
            DeadlineSlots::hand_on(&mut st);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiters_are_served_earliest_deadline_first() {
        let slots = Arc::new(DeadlineSlots::new(1));
        let held = slots.acquire(DeadlineKey::due(0)).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Arrive in the order 30, 10, 20; served 10, 20, 30.
        for deadline in [30, 10, 20] {
            let (slots, order) = (Arc::clone(&slots), Arc::clone(&order));
            tasks.push(tokio::spawn(async move {
                let slot = slots.acquire(DeadlineKey::due(deadline)).await;
                order.lock().unwrap().push(deadline);
                tokio::time::sleep(Duration::from_millis(1)).await;
                drop(slot);
            }));
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.ahead_of(DeadlineKey::due(15)), 2, "the held slot and the waiter due at 10");
        assert_eq!(slots.ahead_of(DeadlineKey::NONE), 4);
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [10, 20, 30]);
        assert_eq!(slots.ahead_of(DeadlineKey::NONE), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_stream_served_least_goes_first() {
        let slots = Arc::new(DeadlineSlots::new(1));
        let held = slots.acquire(DeadlineKey::due(0)).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Three streams' frames, due at 300, 200 and 100, from streams whose virtual deadlines
        // (how far the pool has served them) are 50, 90 and 70.
        for (virtual_ns, due_ns) in [(50, 300), (90, 100), (70, 200)] {
            let (slots, order) = (Arc::clone(&slots), Arc::clone(&order));
            let key = DeadlineKey { virtual_ns, due_ns };
            tasks.push(tokio::spawn(async move {
                drop(slots.acquire(key).await);
                order.lock().unwrap().push(due_ns);
            }));
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.ahead_of(DeadlineKey { virtual_ns: 60, due_ns: 0 }), 2);
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [300, 200, 100]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_that_gives_up_loses_no_slot() {
        let slots = Arc::new(DeadlineSlots::new(1));
        let held = slots.acquire(DeadlineKey::due(0)).await;
        // One waiter gives up while queued, another is handed the slot and dropped before it
        // ran: either way the slot must come back.
        let gone = tokio::time::timeout(Duration::from_millis(5), slots.acquire(DeadlineKey::due(5))).await;
        assert!(gone.is_err());
        let mut handed = Box::pin(slots.acquire(DeadlineKey::due(7)));
        assert!(futures_poll_once(handed.as_mut()).await.is_none());
        drop(held); // hands the slot to the waiter due at 7
        drop(handed); // which leaves without taking it
        let again = tokio::time::timeout(Duration::from_millis(5), slots.acquire(DeadlineKey::due(9))).await;
        assert!(again.is_ok(), "the slot was lost");
        assert_eq!(slots.ahead_of(DeadlineKey::NONE), 1);
    }

    /// Polls `fut` once: its output if it was ready.
    async fn futures_poll_once<F: std::future::Future + Unpin>(fut: F) -> Option<F::Output> {
        let mut fut = fut;
        std::future::poll_fn(|cx| match std::pin::Pin::new(&mut fut).poll(cx) {
            std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
            std::task::Poll::Pending => std::task::Poll::Ready(None),
        })
        .await
    }
}
