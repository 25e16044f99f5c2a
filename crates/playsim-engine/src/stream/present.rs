//! The presenter: the start gate, the paced loop (on its own thread with the wall clock),
//! and the drop rule applied at each deadline.
//!
//! # Pacing (moved from ARCHITECTURE.md)
//!
//! Frame k is due at `t0 + stall + floor(k·den·10⁹/num)` ns, computed from k each time: no
//! accumulated float. `t0` is when the first `--preroll` frames of every stream are ready:
//! several streams share one clock and one t0, as multicam playback does. A stream may differ
//! from the run (`StreamSpec`): its own rate, a decode pool of its own, and a start offset; a
//! stream with an offset does not hold the start gate, but waits for the common t0, then its
//! offset, then plays once its own preroll is in (a client pressing play later).
//!
//! tokio's timer has 1 ms granularity, too coarse for 59.94 fps. With the wall clock
//! (`PreciseClock`, whose `Clock::can_block` is true) a paced stream presents on a thread of its
//! own, `playsim-present` (`PresentThread`): it runs the whole paced loop, `nanosleep`s until
//! 150 µs before each deadline, spins for the rest, and applies the drop rule the moment it
//! wakes, at SCHED_FIFO priority 10 where the system allows it, else at nice -10, else at the
//! normal priority (`priority.rs`; the report's `presenter_priority` says which). The first
//! design woke a presenter task on the tokio runtime, and the runtime's scheduling delay, largest
//! when the pipeline is busiest, went into every presentation (p99 4.2 ms at 59.94 fps beside a
//! busy decode pool on 2 cores); deciding on the woken thread brought p99 to 0.04 ms. A timerfd
//! would wake the same thread no sooner than `nanosleep`. A no-drop wait for a late frame goes
//! through the runtime, and a cancelled run stops within one frame period. Under tokio's paused
//! clock, which cannot block, the same loop runs as an async task.
//!
//! With `--no-drop` the presenter waits for a late frame and shifts the rest of the schedule by
//! the wait (the report's stall); with `--fps max` each frame is due when it is ready.

use super::*;

/// Holds every stream's presenter until all of them have their preroll, so that all
/// streams start together: one clock, one t0, as multicam playback needs.
///
/// Streams with a start offset do not hold the gate: they wait for it to open, then for
/// their offset, and start from there (a client pressing play later).
///
/// With a [`StartBarrier`] (a client of several), the last stream to arrive asks it for the
/// common start, and the gate opens at that instant for every stream: a scheduled start.
pub(crate) struct StartGate {
    waiting: Mutex<(usize, Option<Opened>)>,
    opened: Notify,
    barrier: Option<Arc<dyn StartBarrier>>,
    /// The run's origin on the clock: the barrier speaks in clock time, the gate in run time.
    origin: Duration,
}

/// When the gate opened, in run time, and whether that instant was scheduled ahead by a
/// [`StartBarrier`] (then the presenter needs no lead of its own).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opened {
    pub t0: Duration,
    pub scheduled: bool,
}

impl StartGate {
    /// A gate for `n_streams` streams; with none to wait for, it is open at the run's start
    /// (and the barrier, having no stream to start, is not asked).
    pub fn new(n_streams: usize, barrier: Option<Arc<dyn StartBarrier>>, origin: Duration) -> StartGate {
        let opened_at = (n_streams == 0).then_some(Opened { t0: Duration::ZERO, scheduled: false });
        StartGate { waiting: Mutex::new((n_streams, opened_at)), opened: Notify::new(), barrier, origin }
    }

    /// Waits for the gate to open without holding it; the common t0, or `None` if the run
    /// is cancelled first.
    pub(super) async fn opened(&self, cancel: &CancelToken) -> Option<Opened> {
        loop {
            let opened = self.opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            if let Some(at) = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).1 {
                return Some(at);
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = &mut opened => {}
            }
        }
    }

    /// Called by a stream whose preroll is ready at `now`; returns the common t0 once
    /// every stream has arrived (and the barrier, if any, has opened), or `None` if the run
    /// is cancelled first. A barrier that refuses to open fails the run with its reason.
    pub(super) async fn arrive(&self, now: Duration, cancel: &CancelToken) -> Option<Opened> {
        let last = {
            let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            w.0 = w.0.saturating_sub(1);
            w.0 == 0 && w.1.is_none()
        };
        if last {
            let opened = match &self.barrier {
                None => Some(Opened { t0: now, scheduled: false }),
                Some(barrier) => {
                    let start = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => None,
                        start = barrier.open(self.origin + now) => Some(start),
                    };
                    match start {
                        Some(Ok(start)) => {
                            Some(Opened { t0: start.saturating_sub(self.origin).max(now), scheduled: true })
                        }
                        Some(Err(reason)) => {
                            cancel.fail(reason);
                            None
                        }
                        None => None,
                    }
                }
            };
            if let Some(opened) = opened {
                self.waiting.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(opened);
                self.opened.notify_waiters();
            }
        }
        self.opened(cancel).await
    }
}

impl StreamCtx {
    pub(super) async fn present(self: Arc<Self>) {
        let settled = |st: &StreamState, idx: u64| matches!(st.phase(idx), Phase::Ready | Phase::Failed);
        // Preroll buffers against the clock; with no pacing there is no clock to
        // buffer against, and waiting would overstate the throughput measured from t0.
        let preroll = match self.cfg.pacing {
            Pacing::Rate(_) => u64::from(self.cfg.preroll).min(self.n_frames.unwrap_or(u64::MAX)),
            Pacing::Max => 0,
        };
        if !self.wait_for(|st| (0..preroll).all(|i| settled(st, i))).await {
            return self.finish_presenting(0);
        }
        // Started before t0, so that it is up and at its priority when frame 0 falls due.
        let present_thread = match self.cfg.pacing {
            Pacing::Rate(rate) if self.clock.can_block() => PresentThread::start(&self, rate),
            _ => None,
        };
        let opened = if self.start_offset.is_zero() {
            self.start.arrive(self.now(), &self.cancel).await
        } else {
            // A late starter begins when its own preroll is ready.
            Some(Opened { t0: self.now(), scheduled: false })
        };
        let Some(Opened { mut t0, scheduled }) = opened else {
            return self.finish_presenting(0);
        };
        // A scheduled start lies ahead already; one that is now needs the lead.
        if present_thread.is_some() && !scheduled {
            t0 += PRESENT_LEAD;
        }
        self.lock().t0_ns = Some(duration_ns(t0));
        if let Some(thread) = present_thread {
            if let Some(frames_due) = thread.play_from(t0).await {
                return self.finish_presenting(frames_due);
            }
        }
        let mut stall = Duration::ZERO;
        let mut k = 0u64;
        while self.n_frames.is_none_or(|n| k < n) && !self.cancel.is_cancelled() {
            match self.cfg.pacing {
                Pacing::Rate(rate) => {
                    let due = t0 + stall + rate.due_offset(k);
                    tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => break,
                        _ = self.clock.sleep_until(self.origin + due) => {}
                    }
                    if !self.decide(k, due, self.now(), self.cfg.no_drop) {
                        // No-drop: wait for the frame, and shift the schedule by the stall.
                        if !self.wait_for(|st| settled(st, k)).await {
                            break;
                        }
                        self.present_after_stall(k, due, &mut stall);
                    }
                }
                Pacing::Max => {
                    if self.cfg.duration.is_some_and(|d| self.now().saturating_sub(t0) >= d) {
                        break;
                    }
                    if !self.wait_for(|st| settled(st, k)).await {
                        break;
                    }
                    let now = self.now();
                    self.decide(k, now, now, false);
                }
            }
            k += 1;
        }
        self.finish_presenting(k);
    }

    /// No-drop: frame `k`, due at `due`, is ready late; present it now and shift the rest of
    /// the schedule by the wait.
    pub(super) fn present_after_stall(&self, k: u64, due: Duration, stall: &mut Duration) {
        let now = self.now();
        let waited = now.saturating_sub(due);
        *stall += waited;
        self.lock().stall += waited;
        self.decide(k, now, now, false);
    }

    /// The paced loop of [`PresentThread`], on that thread: each deadline waited for on the
    /// blocking clock and decided the moment it passes; a no-drop wait for a late frame goes
    /// through `runtime`. Returns the frames that fell due.
    pub(super) fn present_paced_blocking(
        &self,
        t0: Duration,
        rate: FrameRate,
        runtime: &tokio::runtime::Handle,
    ) -> u64 {
        let settled = |st: &StreamState, idx: u64| matches!(st.phase(idx), Phase::Ready | Phase::Failed);
        let mut stall = Duration::ZERO;
        let mut k = 0u64;
        while self.n_frames.is_none_or(|n| k < n) && !self.cancel.is_cancelled() {
            let due = t0 + stall + rate.due_offset(k);
            self.clock.block_until(self.origin + due);
            if self.cancel.is_cancelled() {
                break;
            }
            if !self.decide(k, due, self.now(), self.cfg.no_drop) {
                if !runtime.block_on(self.wait_for(|st| settled(st, k))) {
                    break;
                }
                self.present_after_stall(k, due, &mut stall);
            }
            k += 1;
        }
        k
    }

    pub(super) fn finish_presenting(&self, frames_due: u64) {
        let end = self.now_ns();
        let mut st = self.lock();
        st.frames_due = frames_due;
        st.end_ns = Some(end);
        drop(st);
        // Frames admitted beyond the last one due are no longer wanted.
        self.window.close();
    }

    /// Applies the drop rule to frame `k` at its deadline. Returns false only
    /// when `wait` is set and the frame is not presentable yet.
    pub(super) fn decide(&self, k: u64, due: Duration, now: Duration, wait: bool) -> bool {
        let due_ns = duration_ns(due);
        let now_ns = duration_ns(now);
        let mut st = self.lock();
        let phase = st.phase(k);
        let entry = st.entry(k);
        entry.due_ns = Some(due_ns);
        match phase {
            Phase::Ready => {
                entry.verdict = Verdict::Presented;
                entry.presented_ns = Some(now_ns);
                entry.phase = Phase::Done;
                entry.holds_slot = false;
                let output_done = entry.output_done_ns.unwrap_or(now_ns);
                drop(entry.slot.take());
                drop(entry.held.take());
                drop(entry.reservation.take());
                drop(entry.token.take());
                st.hist.pacing_error.record(signed_ns(now_ns, due_ns));
                st.hist.slack.record(signed_ns(due_ns, output_done));
                if st.recent_slack.len() == super::RECENT_SLACK_LEN {
                    st.recent_slack.pop_front();
                }
                st.recent_slack.push_back(signed_ns(due_ns, output_done));
                st.presented += 1;
                self.live.presented();
            }
            Phase::Failed => {
                entry.verdict = Verdict::Dropped(DropCause::Unreadable);
                entry.phase = Phase::Done;
                let message = entry.failure.clone().unwrap_or_default();
                let (frame_number, path) = self.describe_frame(k);
                st.unreadable.push(UnreadableFrame { frame_idx: k, frame_number, path, message });
                st.drops.add(DropCause::Unreadable);
                self.live.dropped(DropCause::Unreadable);
            }
            _ if wait => return false,
            _ => {
                let cause = if phase == Phase::NotAdmitted {
                    match st.oldest_slot_holder() {
                        Some((holder, Phase::ReadAheadQueued)) => self.read_ahead_blame(&st, holder),
                        Some((_, holder_phase)) => holder_phase.blame(),
                        None => DropCause::Storage,
                    }
                } else if phase == Phase::ReadAheadQueued {
                    self.read_ahead_blame(&st, k)
                } else if self.in_order.is_some() && matches!(phase, Phase::DecodeQueued | Phase::Decoding) {
                    // A long-GOP frame waiting on the decoder waits, in the end, for the
                    // packet the decoder needs next: blame that packet's stage.
                    match st.phase(st.next_packet) {
                        // Skipping to a keyframe, or skipped past before its turn: the decoder
                        // was the limit.
                        _ if st.gop_restart.is_some()
                            || (phase == Phase::DecodeQueued && st.next_packet > k) =>
                        {
                            DropCause::Decode
                        }
                        // Its read in flight or waiting for an I/O slot. A packet not yet
                        // admitted waits for room in the window, which the frames held by
                        // the decoder fill: the decoder is the limit.
                        Phase::ReadQueued | Phase::Reading => DropCause::Storage,
                        _ => DropCause::Decode,
                    }
                } else {
                    phase.blame()
                };
                let entry = st.entry(k);
                entry.verdict = Verdict::Dropped(cause);
                entry.cancel.notify_one();
                if phase == Phase::NotAdmitted {
                    entry.phase = Phase::Done;
                }
                if phase.in_progress() {
                    st.late_frames += 1;
                }

                st.drops.add(cause);
                if phase.dropped_early() {
                    st.early_drops.add(cause);
                }
                self.live.dropped(cause);
                if matches!(phase, Phase::ReadQueued | Phase::Reading | Phase::DecodedSlotQueued) {
                    // A frame waiting for read-ahead room counted this one ahead of it.
                    drop(st);
                    self.left_read_side.notify_waiters();
                    st = self.lock();
                }
            }
        }
        // Frame k+1 is now the one next due: it may read past `--max-buffer` if it must.
        st.next_due = st.next_due.max(k + 1);
        drop(st);
        self.budget.wake();
        true
    }
}

/// How long after the start gate opens a stream with a [`PresentThread`] presents its first
/// frame: the first tick of its output clock. The gate's news reaches the thread through the
/// runtime, which on a busy machine took up to 5 ms; without the lead, frame 0 alone was late
/// by that much. Every such stream gets the same lead, so streams keep one t0.
pub(super) const PRESENT_LEAD: Duration = Duration::from_millis(10);

/// The thread a paced stream presents on when its clock can block (the wall clock).
///
/// It runs the whole paced loop: it sleeps until each frame's deadline, spins the last
/// stretch (see `PreciseClock`), and applies the drop rule the moment it wakes, at a
/// real-time scheduling priority where the system allows it (see `priority.rs`). That is the
/// role of a video card's output clock, which does not slow down when the CPU is busy. The
/// async presenter it replaces woke on the runtime, whose scheduling delay was added to every
/// presentation exactly when the pipeline was busiest: p99 4.2 ms beside a busy decode pool
/// on 2 cores. A cancelled run stops within one frame period, since a wait in progress is
/// not interrupted.
pub(super) struct PresentThread {
    /// Takes t0; dropping it unstarted ends the thread.
    start: std::sync::mpsc::Sender<Duration>,
    /// The frames that fell due, when the loop ends.
    done: tokio::sync::oneshot::Receiver<u64>,
}

impl PresentThread {
    /// Starts the stream's presentation thread, waiting for t0; `None` when no thread can
    /// be started (the stream then presents on the runtime, less precisely).
    pub(super) fn start(ctx: &Arc<StreamCtx>, rate: FrameRate) -> Option<PresentThread> {
        let (start, t0) = std::sync::mpsc::channel();
        let (frames_due, done) = tokio::sync::oneshot::channel();
        let ctx = Arc::clone(ctx);
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("playsim-present".into())
            .spawn(move || {
                let priority = crate::priority::raise_presentation_thread();
                ctx.lock().present_priority = Some(priority);
                if let Ok(t0) = t0.recv() {
                    let _ = frames_due.send(ctx.present_paced_blocking(t0, rate, &runtime));
                }
            })
            .ok()?;
        Some(PresentThread { start, done })
    }

    /// Presents the stream from `t0`; the frames that fell due, or `None` when the thread is
    /// gone before it started (the caller then presents on the runtime).
    pub(super) async fn play_from(self, t0: Duration) -> Option<u64> {
        self.start.send(t0).ok()?;
        // The thread always answers, unless it panicked: then no frame is due any more.
        Some(self.done.await.unwrap_or(0))
    }
}
