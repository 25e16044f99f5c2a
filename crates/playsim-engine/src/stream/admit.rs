//! Admission and skip policy: whether a frame can still be ready by its deadline before
//! each stage starts work on it, judged from the stages' recent times.
//!
//! # Early drops (moved from ARCHITECTURE.md)
//!
//! Work spent on frames that are dropped anyway is taken from frames that could still make it, so
//! the engine decides as early as the evidence allows and charges each early drop to the stage
//! that is the limit.
//!
//! - **Read-ahead waits for the decode pool** (`room_to_read_ahead`). A frame starts its read only
//!   when it is the earliest waiting to, and its stream's frames read and waiting for the pool,
//!   plus its reads in flight and the one it would start, weighed by their CPU against a
//!   decode's, come to at most the pool's threads. A read's weight is its CPU over a decode's, at
//!   most 1 (CPU against CPU: wall times stretch under contention). Reads that only wait (a
//!   link's latency) weigh nothing and hide that latency with `--io-depth`. A frame dropped while
//!   it waits here is charged to the oldest frame ahead of it on the read side (`storage` while
//!   that one is read, `decode` once it waits for the pool). Without it, two page-cache reads
//!   sharing the spare core with one decode made 4K DPX at `--fps max` 12–15% slower.
//! - **Admission judges the queues ahead** (`admission`). Before a frame is read, and again when
//!   it has an I/O slot, its ready time is predicted: the typical (median) read; the overrun of
//!   stalled reads in flight (no read finished since they began) and of a stall that ended less
//!   than a window's time before it falls due, as storage time; its wait at the decode pool (the
//!   frames ahead of it in the pool's order × the typical decode ÷ threads) and its decode; its
//!   wait at the output stage and its output. It is read only if that is at least a margin before
//!   its deadline: one pipeline period plus the median of how late recent predictions were. The
//!   median, not the worst: a margin learned from a one-off stall rejected the next 40 frames.
//! - **The rule for early drops.** A frame rejected at admission (`read_skipped`) is charged to
//!   the stage it would have spent the most time in, its wait there included (on a tie, the later
//!   stage). A frame found unable to make it when a decode thread (`decode_skipped`) or an output
//!   thread (`output_skipped`) is free for it is judged on the times it actually spent; a frame
//!   that reached a free decode thread too late because its read ran long is `storage`. These
//!   last-moment checks use the fastest of the stage's last 16 times, so a frame that might still
//!   make it is tried. With `--no-drop`, `--fps max` and before t0 nothing is decided early.
//! - **Utilisation.** Each stream reports how busy each stage was (`utilisation`, 0 to 1) and its
//!   busiest stage as its `bottleneck`, even with no drop; the run's `totals.bottleneck` is the
//!   cause of most drops, else the busiest stage of any stream.
//!
//! Tested by `src/tests/overload.rs` on simulated cores (`sim_cpu.rs`, processor sharing) under
//! tokio's paused clock: each case measures S at `--fps max`, plays at k = 1.1, 1.25, 1.5, 2 and 3,
//! and holds the presented count within 2% of S × the span, every drop charged to the short stage
//! and at most 5% of the work wasted; at 0.8 and 0.9 nothing drops.

use super::*;

/// Whether a frame about to be read is worth reading (see [`StreamCtx::admission`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admission {
    Admit,
    /// It could not be ready in time: it is not read, and is dropped for `cause`, the stage
    /// it would have spent the most time in, when it falls due.
    Reject(DropCause),
}

impl StreamCtx {
    /// Frame `idx`'s deadline, when a frame that cannot make it may be skipped: paced
    /// playback once it has started, without `--no-drop` (which waits for every frame).
    pub(super) fn skippable_due(&self, st: &StreamState, idx: u64) -> Option<Duration> {
        let Pacing::Rate(rate) = self.cfg.pacing else { return None };
        if self.cfg.no_drop {
            return None;
        }
        Some(Duration::from_nanos(st.t0_ns?) + rate.due_offset(idx))
    }

    /// The fastest of the stream's recent outputs (zero without an output stage).
    pub(super) fn fastest_output(&self, st: &StreamState) -> Duration {
        if self.output.is_some() {
            st.recent_output.fastest().unwrap_or_default()
        } else {
            Duration::ZERO
        }
    }

    /// True when frame `idx`, about to start decoding at `now`, cannot be decoded and output
    /// before it falls due even as fast as the fastest of the stream's recent decodes and
    /// outputs: a frame that might still make it is always tried.
    pub(super) fn cannot_make_it(&self, idx: u64, now: Duration) -> bool {
        let st = self.lock();
        let (Some(due), Some(decode)) = (self.skippable_due(&st, idx), st.recent_decode.fastest()) else {
            return false;
        };
        now + decode + self.fastest_output(&st) > due
    }

    /// True when frame `idx`, about to start its output at `now`, cannot finish it before it
    /// falls due even as fast as the fastest of the stream's recent outputs. Without this, an
    /// output stage at its limit that falls one frame behind stays behind: each output
    /// finishes just after its frame's deadline, and nearly every frame drops.
    pub(super) fn cannot_output_in_time(&self, idx: u64, now: Duration) -> bool {
        let st = self.lock();
        let (Some(due), Some(output)) = (self.skippable_due(&st, idx), st.recent_output.fastest()) else {
            return false;
        };
        now + output > due
    }

    /// Whether frame `idx`, about to start its read at `now`, could still be read, decoded and
    /// output before it falls due, judged by the queues ahead of it and not only by the
    /// stages' own times: the frame would wait at the decode pool behind every frame queued
    /// there with an earlier deadline, the frames decoding, and this stream's frames still
    /// being read ahead of it; then at the stream's output stage behind this stream's
    /// earlier frames. Each wait is the frames ahead × the stage's typical (median) recent
    /// time ÷ its threads.
    ///
    /// Reading a frame that will be dropped anyway takes bandwidth and, when reads cost CPU
    /// (page-cache copies, TCP receive), the CPU the frames that can still make it need to
    /// decode: a pipeline a little over its CPU then presented a fraction of what it
    /// sustains. A rejected frame is charged to the stage it would have spent the most time
    /// in, queue included: the decode pool when it is saturated, even though the drop is
    /// decided before the read; storage when reads are the limit; the output when it is.
    ///
    /// A frame is read only when it would be ready a margin before it falls due: one pipeline
    /// period (the slowest stage's time ÷ its threads), plus how late recent predictions
    /// typically were (see [`PredictionErrors`]). Under overload the frame admitted is
    /// always the first that clears the bar, so without a margin half of them were late by a
    /// hair and their work wasted; the margin costs no throughput, since the pipeline stays
    /// full, and nothing at a sustainable rate, where frames are read a whole window ahead.
    pub(super) fn admission(&self, idx: u64, now: Duration) -> Admission {
        let mut st = self.lock();
        let (Some(due), Some(read)) = (self.skippable_due(&st, idx), st.recent_read.typical()) else {
            return Admission::Admit;
        };
        let io_depth = self.cfg.io_depth.max(1);
        let mut period = read / io_depth;
        // A read ahead that has run past the typical time (a server stalled or gone) is
        // storage's time, not the later stages' queues: when the frame is rejected, it counts
        // for storage. It does not delay this frame's own read, though: the replies lost may
        // be only those of the reads ahead (a server that dropped three calls), and a frame
        // rejected for them would leave no read to find out, so that every frame within a
        // window of the stalled ones was dropped. Against a server that has really stopped,
        // this read stalls too and drops on storage at its deadline, as the rejection would.
        let stalled = self.stalled_reads_ahead(&st, idx, now, read) + self.recent_stall(&st, due);
        let mut time_in = vec![(DropCause::Storage, read + stalled)];
        let mut ready = now + read;
        if self.decoder.decodes() {
            let decode = st.recent_decode.typical().unwrap_or_default();
            let threads = u32::try_from(self.decode_slots.capacity()).unwrap_or(u32::MAX).max(1);
            let own_ahead = self.count_ahead(&st, idx, |p| {
                matches!(p, Phase::ReadQueued | Phase::Reading | Phase::DecodedSlotQueued)
            });
            let ahead = own_ahead + self.decode_slots.ahead_of(self.deadline_key(&st, idx));
            let start = ready.max(now + decode * u32::try_from(ahead).unwrap_or(u32::MAX) / threads);
            time_in.push((DropCause::Decode, start - ready + decode));
            ready = start + decode;
            period = period.max(decode / threads);
            if self.output.is_some() {
                let output = st.recent_output.typical().unwrap_or_default();
                let threads = self.cfg.output_threads.max(1);
                let ahead = self.count_ahead(&st, idx, Phase::in_pipeline);
                let start = ready.max(now + output * u32::try_from(ahead).unwrap_or(u32::MAX) / threads);
                time_in.push((DropCause::Output, start - ready + output));
                ready = start + output;
                period = period.max(output / threads);
            }
        }
        if ready + period + st.prediction_errors.bias() <= due {
            st.entry(idx).predicted_ready_ns = Some(duration_ns(ready));
            return Admission::Admit;
        }
        // The stage the frame would spend the most time in; on a tie, the later one.
        let cause = time_in.iter().rev().max_by_key(|(_, t)| *t).map_or(DropCause::Storage, |(c, _)| *c);
        Admission::Reject(cause)
    }

    /// Waits until frame `idx` may start its read: when it is the earliest frame waiting, and
    /// this stream's frames read and waiting for the decode pool, plus its reads in flight and
    /// this one weighted by their CPU against a decode's ([`StreamCtx::read_cpu_share`]), come
    /// to at most its decode pool's threads (the frames waiting alone to fewer). Judges
    /// the frame by [`StreamCtx::admission`] each time it looks, so a frame that can no longer
    /// make it leaves the window at once. `None` if the frame is dropped or the run cancelled.
    ///
    /// Reading further ahead than the decode pool can take adds nothing to throughput, and
    /// when reads cost CPU (page-cache copies, TCP receive) it takes cores from the decodes
    /// of frames due sooner: every read in flight slowed every decode, the stages' times
    /// swung with the load, and frames admitted on their strength came in late. Reads that
    /// mostly wait (a link's latency, a disk) cost little CPU and hide that latency only when
    /// several are in flight, so they count for their CPU alone: counted in full, a
    /// 2 GB/s link with 1 ms latency and one decode thread dropped 40% of a rate it nearly
    /// carries, against 9% without the bound. Read-ahead is still what the window is for:
    /// frames wait for room here without holding an I/O slot or a buffer, and a decode pool
    /// that keeps up leaves the bound slack. A frame dropped while it waits here is charged
    /// to the stage of the oldest frame ahead of it on the read side. Streams that do not
    /// decode, or decode in order (long-GOP), are not bound.
    pub(super) async fn room_to_read_ahead(&self, idx: u64, dropped: &Notify) -> Option<Admission> {
        if !self.decoder.decodes() || self.in_order.is_some() {
            return Some(Admission::Admit);
        }
        let threads = self.decode_slots.capacity().max(1);
        self.lock().entry(idx).phase = Phase::ReadAheadQueued;
        // Admitted to the window, the frame counted as a read in flight until now: a frame
        // ahead of it that is waiting may have room.
        self.left_read_side.notify_waiters();
        loop {
            let room = self.left_read_side.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let st = self.lock();
                if st.entry_verdict(idx) != Verdict::Pending {
                    return None;
                }
                // A frame looks at the frames ahead of it only, so that the earliest frame
                // never waits for later ones (which may wait for it to be presented); so the
                // earliest waiting frame goes first: waiting frames wake together, and a later
                // frame that started its read first would take the room all the same.
                let backlog = self
                    .count_ahead(&st, idx, |p| matches!(p, Phase::DecodedSlotQueued | Phase::DecodeQueued));
                let reading = self.count_ahead(&st, idx, |p| matches!(p, Phase::ReadQueued | Phase::Reading));
                let first_in_line = self.count_ahead(&st, idx, |p| p == Phase::ReadAheadQueued) == 0;
                let share = self.read_cpu_share(&st);
                drop(st);
                let admission = self.admission(idx, self.now());
                if admission != Admission::Admit {
                    return Some(admission);
                }
                // The read this frame would start counts too: two page-cache reads at 0.75 of
                // a decode's CPU each started together while one decode thread worked (each
                // was under the bound before the other began), shared the spare core, and
                // came in late for the decoder, which then idled (S 12% lower than with no
                // bound). Counted with it, they go one at a time.
                let threads = threads as f64;
                let room =
                    backlog as f64 + (reading + 1) as f64 * share <= threads && (backlog as f64) < threads;
                if first_in_line && room {
                    let _ = self.advance(idx, Phase::ReadQueued, |_| {});
                    // The next frame in line may have room too.
                    self.left_read_side.notify_waiters();
                    return Some(admission);
                }
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return None,
                _ = dropped.notified() => return None,
                _ = &mut room => {}
            }
        }
    }

    /// The stage frame `idx`, found at `now` unable to make its deadline when a decode or
    /// output thread was free for it, spent the most time in since its read started: its read,
    /// its wait for and work in decode, or its wait for the output stage. A frame that reached
    /// a free decode thread too late because its read ran long is a storage drop, not a decode
    /// one: the same rule as admission's.
    pub(super) fn late_stage(&self, idx: u64, now: Duration) -> DropCause {
        let mut st = self.lock();
        let e = st.entry(idx);
        let now = duration_ns(now);
        let (Some(read_start), Some(read_done)) = (e.read_start_ns, e.read_done_ns) else {
            return DropCause::Decode;
        };
        let read = read_done.saturating_sub(read_start);
        let stages = match e.decode_done_ns {
            None => [
                (DropCause::Storage, read),
                (DropCause::Decode, now.saturating_sub(read_done)),
                (DropCause::Output, 0),
            ],
            Some(decode_done) => [
                (DropCause::Storage, read),
                (DropCause::Decode, decode_done.saturating_sub(read_done)),
                (DropCause::Output, now.saturating_sub(decode_done)),
            ],
        };
        // On a tie, the later stage: the one the frame is in.
        stages.iter().rev().max_by_key(|(_, t)| *t).map_or(DropCause::Decode, |(c, _)| *c)
    }

    /// How much a read in flight weighs against the decode pool: its CPU (a copy, a TCP
    /// receive), from the storage's CPU figure, over a decode's CPU, from the pool's, at most 1.
    /// A read that only waits (a link, a disk's DMA) weighs nothing. CPU against CPU, not
    /// against wall time: under contention a CPU-bound read or decode waits for a core, and
    /// weighing by wall time let more reads start as they slowed, which slowed them further
    /// (0.66 of S at 2 × S). 0 until a read and a decode have finished; a storage or pool
    /// shared with other streams counts their CPU and decodes too.
    fn read_cpu_share(&self, st: &StreamState) -> f64 {
        let decodes = self.decode_slots.granted();
        if st.reads_done == 0 || decodes == 0 {
            return 0.0;
        }
        let read_cpu =
            self.storage.stats().cpu_ns.saturating_sub(self.read_cpu_at_start) as f64 / st.reads_done as f64;
        let decode_cpu = self.decode.cpu_time().as_nanos() as f64 / decodes as f64;
        match (read_cpu > 0.0, decode_cpu > 0.0) {
            (false, _) => 0.0,
            // A decoder whose CPU cannot be measured: a read that costs CPU counts in full.
            (true, false) => 1.0,
            (true, true) => (read_cpu / decode_cpu).min(1.0),
        }
    }

    /// The typical time a frame that has just left `phase` (its work there done, or its wait
    /// there ended) would still have taken to be ready: the stages after it, and for a wait,
    /// the stage waited for.
    pub(super) fn typical_time_left(&self, st: &StreamState, phase: Phase) -> Duration {
        let decode = if self.decoder.decodes() {
            st.recent_decode.typical().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        let output = if self.output.is_some() {
            st.recent_output.typical().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        match phase {
            Phase::ReadQueued => st.recent_read.typical().unwrap_or_default() + decode + output,
            Phase::Reading | Phase::DecodedSlotQueued | Phase::DecodeQueued => decode + output,
            Phase::Decoding | Phase::OutputQueued => output,
            _ => Duration::ZERO,
        }
    }

    /// How long the longest-running read ahead of frame `idx` has run past the typical read
    /// time `read`, when no read has finished since it began: the storage has stalled (a
    /// server stopped), not merely served one read slowly. Zero otherwise.
    ///
    /// Every read still in flight counts, however far behind: against a server gone for
    /// seconds, the reads that stalled belong to frames dropped long ago, whose slots they
    /// still hold (the oldest slot holder is no later than the oldest of them), while the
    /// frames now looking for room are a window or more later. Looking at one window only, a
    /// 5.5 s outage at 24 fps charged 30 of its 130 drops to decode.
    fn stalled_reads_ahead(&self, st: &StreamState, idx: u64, now: Duration, read: Duration) -> Duration {
        let now = duration_ns(now);
        (st.oldest_holder.min(idx.saturating_sub(self.window_len as u64))..idx)
            .filter_map(|i| {
                let e = st.frames.get(usize::try_from(i).ok()?)?;
                let start = e.read_start_ns?;
                (e.phase == Phase::Reading && st.last_read_done_ns < start).then_some(start)
            })
            .map(|start| Duration::from_nanos(now.saturating_sub(start)).saturating_sub(read))
            .max()
            .unwrap_or_default()
    }

    /// The time the window covers at the stream's rate: how long a stall the prefetch hides.
    fn window_time(&self) -> Option<Duration> {
        let Pacing::Rate(rate) = self.cfg.pacing else { return None };
        Some(rate.due_offset(self.window_len as u64))
    }

    /// Notes a stall of the storage when a read that began at `start` ends at `end` after
    /// `read_time`: no other read finished while it ran, and it ran past the typical read by
    /// more than the window covers (and 250 ms): a server gone and back, not a read slowed by
    /// a busy core.
    pub(super) fn note_stall(
        &self,
        st: &mut StreamState,
        start: Duration,
        end: Duration,
        read_time: Duration,
    ) {
        let (Some(window), Some(typical)) = (self.window_time(), st.recent_read.typical()) else { return };
        let overrun = read_time.saturating_sub(typical);
        if st.last_read_done_ns < duration_ns(start) && overrun > window.max(Duration::from_millis(250)) {
            st.last_stall = Some((duration_ns(end), overrun));
        }
    }

    /// The storage's time a frame due at `due` has already lost to a stall that ended less
    /// than a window before it falls due: the frames due just after a server came back are
    /// late because it was gone, not because of the queues its burst of replies filled. Zero
    /// otherwise.
    fn recent_stall(&self, st: &StreamState, due: Duration) -> Duration {
        match (st.last_stall, self.window_time()) {
            (Some((end, overrun)), Some(window)) if due <= Duration::from_nanos(end) + window => overrun,
            _ => Duration::ZERO,
        }
    }

    /// The stage a frame waiting for read-ahead room at its deadline waits on: that of the
    /// oldest of this stream's frames ahead of it on the read side: `storage` while that one is
    /// still being read (a stalled server), `decode` once it waits for the decode pool.
    pub(super) fn read_ahead_blame(&self, st: &StreamState, idx: u64) -> DropCause {
        (idx.saturating_sub(self.window_len as u64)..idx)
            .map(|i| st.phase(i))
            .find(|p| {
                matches!(
                    p,
                    Phase::ReadQueued | Phase::Reading | Phase::DecodedSlotQueued | Phase::DecodeQueued
                )
            })
            .map_or(DropCause::Decode, Phase::blame)
    }

    /// This stream's frames before `idx`, still wanted, in a phase for which `pred` holds.
    /// Frames in flight are all within one window of the newest. A frame dropped already is
    /// not counted: its work stops at the next stage (a read in flight is not called back,
    /// but it is never decoded), so it is in no later frame's way.
    fn count_ahead(&self, st: &StreamState, idx: u64, pred: impl Fn(Phase) -> bool) -> usize {
        (idx.saturating_sub(self.window_len as u64)..idx)
            .filter(|&i| st.entry_verdict(i) == Verdict::Pending && pred(st.phase(i)))
            .count()
    }

    /// Frame `idx`'s place in the decode pool's order (see [`DeadlineKey`]): its stream's
    /// virtual deadline and its own, on the run's clock (before the stream's t0 is known, in
    /// the preroll, as if t0 were its start); at `--fps max`, none.
    pub(super) fn deadline_key(&self, st: &StreamState, idx: u64) -> DeadlineKey {
        match self.cfg.pacing {
            Pacing::Rate(rate) => {
                let t0 = st.t0_ns.unwrap_or_else(|| duration_ns(self.start_offset));
                DeadlineKey {
                    virtual_ns: t0.saturating_add(rate.due_offset_ns(st.decodes_started)),
                    due_ns: t0.saturating_add(rate.due_offset_ns(idx)),
                }
            }
            Pacing::Max => DeadlineKey::NONE,
        }
    }
}

/// The last `N` values of something, oldest first.
pub(super) struct Recent<T, const N: usize>(std::collections::VecDeque<T>);

impl<T, const N: usize> Default for Recent<T, N> {
    fn default() -> Self {
        Recent(std::collections::VecDeque::with_capacity(N))
    }
}

impl<T: Copy + Ord, const N: usize> Recent<T, N> {
    pub(super) fn push(&mut self, value: T) {
        if self.0.len() == N {
            self.0.pop_front();
        }
        self.0.push_back(value);
    }

    fn sorted(&self) -> Vec<T> {
        let mut values: Vec<T> = self.0.iter().copied().collect();
        values.sort_unstable();
        values
    }
}

/// The last few times of a stage.
pub(super) type RecentTimes = Recent<Duration, 16>;

impl RecentTimes {
    pub(super) fn fastest(&self) -> Option<Duration> {
        self.0.iter().min().copied()
    }

    /// The median: what the stage takes now, neither its luckiest nor its worst moment.
    pub(super) fn typical(&self) -> Option<Duration> {
        let times = self.sorted();
        times.get(times.len() / 2).copied()
    }
}

/// How much later than predicted recent admitted frames were ready, in signed nanoseconds (a
/// frame dropped on its way counts as ready when its work stopped plus the stages it had left).
///
/// The stages' times are medians of the recent past, and on a real machine they move with the
/// load. When predictions are late as a rule, admission adds their typical lateness, the
/// median error, to its margin. The median and not the worst: one read stalled for half a
/// second is nothing admission could have foreseen, and a margin learned from it rejected
/// frames that would have played (a one-off stall cost the next 40 frames at 10 fps).
pub(super) type PredictionErrors = Recent<i64, 64>;

impl PredictionErrors {
    /// The median recent error when predictions were late, else zero.
    pub(super) fn bias(&self) -> Duration {
        let errors = self.sorted();
        let median = errors.get(errors.len() / 2).copied().unwrap_or(0);
        Duration::from_nanos(u64::try_from(median).unwrap_or(0))
    }
}
