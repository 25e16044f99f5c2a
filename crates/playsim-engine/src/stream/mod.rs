//! One stream's pipeline: admission into the prefetch window, the per-frame task
//! (read, decode, output), and the presenter that applies the drop rule at each deadline.
//!
//! The drop rule, by the state of frame k when its deadline passes:
//! - output done: presented;
//! - the read or decode failed: `unreadable`;
//! - admitted but its bytes not all read (in flight, or queued for an I/O slot): `storage`;
//! - read but not decoded (queued for or on a decode thread): `decode`;
//! - read and waiting for one of the stream's decoded-frame slots, which only the output
//!   stage frees: `output`;
//! - decoded but its output work not finished: `output`;
//! - never admitted, because every prefetch slot was held: the stage of the
//!   oldest slot holder, so a CPU backlog is not mistaken for slow storage.
//!
//! A dropped frame's queued work is cancelled; work already running completes
//! (a read or a decode cannot be recalled), then the frame's buffers and slot are freed.
//!
//! A frame that cannot be decoded and output before it falls due, judged when a decode
//! thread is free for it by the stream's recent decode and output times, is not started:
//! it is `skipped`, dropped as `decode` when it falls due, and the thread goes to a
//! frame that can still make it, as a player drops late frames before decoding them.
//! Without that, a pool slower than real time spends itself on frames that are all late.
//! The read side does the same when an I/O slot is free for a frame, by the recent read,
//! decode and output times: a frame that cannot be read in time is `read_skipped` and
//! dropped as `storage` (as `decode`, skipped, when its decode and output alone are too
//! slow), so a link a few percent short of the rate loses a few percent of the frames.
//! And the output stage: a frame whose output cannot finish in time when the output thread
//! is free for it is `output_skipped`, dropped as `output`, and the thread takes the next.
//!
//! A long-GOP stream (a decoder with an [`in_order`](playsim_core::Decoder::in_order)
//! form) cannot skip a packet, since later frames reference it: every packet is read
//! and fed to the stream's one decoder in decode order, dropped frame or not, and a
//! dropped frame's picture is discarded when it comes out. Pictures come out in
//! presentation order, some packets later (reordering, frame threads): frame k's task
//! sends packet k and then waits, in the decode stage, for the k-th picture.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use playsim_core::{
    frame_len, whole_read, BufPool, Clock, DecodedFrame, Decoder, DropCause, DropCounters, FrameExtent,
    FrameIndexReader, FrameRate, InOrderDecoder, IoBuf, Pacing, PooledBuf, Source, Storage, StorageError,
    StorageErrorKind, StorageFile,
};
use playsim_report::{SignedHistogram, UnreadableFrame};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::cancel::CancelToken;
use crate::exec::{DecodeExecutor, DecodeJob, InOrderJob, OutputExecutor, OutputJob};
use crate::live::LiveCounters;
use crate::start::StartBarrier;
use crate::EngineConfig;

mod admit;
mod held;
mod in_order;
mod present;
mod schedule;

use admit::{Admission, RecentTimes};
pub(crate) use held::ByteBudget;
use held::{HeldCount, HeldOne, Reservation};
use in_order::{Picture, PictureBudget, PictureToken};
pub(crate) use present::{Opened, StartGate};
pub(crate) use schedule::DeadlineSlots;
use schedule::{DeadlineKey, DeadlineSlot};

pub use playsim_core::MAX_FRAME_BYTES;

/// Time spent working in each stage, summed over frames.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StageBusy {
    pub read: Duration,
    pub decode: Duration,
    pub output: Duration,
}

/// Where a frame is in the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    NotAdmitted,
    /// In the window, waiting for the decode pool to take the frames read ahead of it (see
    /// `StreamCtx::room_to_read_ahead`).
    ReadAheadQueued,
    ReadQueued,
    Reading,
    /// Read, waiting for a decoded-frame slot: the stream's decoded frames are all in the
    /// output stage or queued for it (see `StreamCtx::decoded_slots`).
    DecodedSlotQueued,
    DecodeQueued,
    /// Not read: it could not have been read, decoded and output in time (see
    /// [`StreamCtx::admission`]); dropped for the stage it would have spent the most time in.
    Rejected(DropCause),
    /// Not decoded: it could not have been ready in time; dropped for the stage it spent the
    /// most time in (see [`StreamCtx::late_stage`]).
    Skipped(DropCause),
    /// Decoded, but not output: its output could not have finished in time; dropped for the
    /// stage it spent the most time in.
    OutputSkipped(DropCause),
    Decoding,
    OutputQueued,
    Outputting,
    Ready,
    Failed,
    Done,
}

impl Phase {
    /// The stage to blame if the frame is not presentable at its deadline.
    fn blame(self) -> DropCause {
        match self {
            Phase::Rejected(cause) | Phase::Skipped(cause) | Phase::OutputSkipped(cause) => cause,
            Phase::NotAdmitted | Phase::ReadQueued | Phase::Reading => DropCause::Storage,
            Phase::ReadAheadQueued | Phase::DecodeQueued | Phase::Decoding => DropCause::Decode,
            Phase::DecodedSlotQueued | Phase::OutputQueued | Phase::Outputting | Phase::Ready => {
                DropCause::Output
            }
            Phase::Failed | Phase::Done => DropCause::Unreadable,
        }
    }

    /// True when the frame was dropped before its work was done: not read, not decoded or
    /// not output because it could not have been ready in time.
    fn dropped_early(self) -> bool {
        matches!(self, Phase::Rejected(_) | Phase::Skipped(_) | Phase::OutputSkipped(_))
    }

    /// True while the frame is on its way through the read, decode and output stages.
    fn in_pipeline(self) -> bool {
        matches!(
            self,
            Phase::ReadAheadQueued
                | Phase::ReadQueued
                | Phase::Reading
                | Phase::DecodedSlotQueued
                | Phase::DecodeQueued
                | Phase::Decoding
                | Phase::OutputQueued
                | Phase::Outputting
        )
    }

    fn in_progress(self) -> bool {
        matches!(self, Phase::Reading | Phase::Decoding | Phase::Outputting)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pending,
    Presented,
    Dropped(DropCause),
}

/// What a ready frame holds until it is presented.
enum Held {
    Decoded(#[allow(dead_code)] PooledBuf<DecodedFrame>),
    /// The v210 output, in a buffer of the encoded pool, counted as the output side's.
    Packed(#[allow(dead_code)] PooledBuf<IoBuf>, #[allow(dead_code)] HeldOne),
}

pub(crate) struct FrameEntry {
    pub phase: Phase,
    pub verdict: Verdict,
    holds_slot: bool,
    slot: Option<OwnedSemaphorePermit>,
    held: Option<Held>,
    /// The frame's bytes of the run's `--max-buffer`, held until it leaves the window.
    reservation: Option<Reservation>,
    /// A long-GOP frame's place in the picture budget, until it is presented or dropped.
    token: Option<PictureToken>,
    cancel: Arc<Notify>,
    pub due_ns: Option<u64>,
    pub read_start_ns: Option<u64>,
    pub read_done_ns: Option<u64>,
    pub decode_done_ns: Option<u64>,
    pub output_done_ns: Option<u64>,
    pub presented_ns: Option<u64>,
    pub bytes: u64,
    pub failure: Option<String>,
    /// When admission predicted the frame would be ready (see [`StreamCtx::admission`]).
    predicted_ready_ns: Option<u64>,
}

impl Default for FrameEntry {
    fn default() -> Self {
        FrameEntry {
            phase: Phase::NotAdmitted,
            verdict: Verdict::Pending,
            holds_slot: false,
            slot: None,
            held: None,
            reservation: None,
            token: None,
            cancel: Arc::new(Notify::new()),
            due_ns: None,
            read_start_ns: None,
            read_done_ns: None,
            decode_done_ns: None,
            output_done_ns: None,
            presented_ns: None,
            bytes: 0,
            failure: None,
            predicted_ready_ns: None,
        }
    }
}

/// Latency distributions of one stream, in nanoseconds.
pub(crate) struct Histograms {
    pub open: LatencyHistogram,
    pub read: LatencyHistogram,
    pub close: LatencyHistogram,
    pub decode: LatencyHistogram,
    pub output: LatencyHistogram,
    pub slack: SignedHistogram,
    pub pacing_error: SignedHistogram,
}

/// How many of the last frames' slack a stream keeps for a live view (a few seconds' worth).
pub(crate) const RECENT_SLACK_LEN: usize = 120;

/// A latency histogram in nanoseconds, auto-resizing, three significant figures.
///
/// `Histogram::new` fails only for a precision above 5 digits; holding an
/// `Option` keeps that impossible case panic-free.
pub(crate) struct LatencyHistogram(Option<Histogram<u64>>);

impl LatencyHistogram {
    fn new() -> LatencyHistogram {
        LatencyHistogram(Histogram::new(playsim_report::HISTOGRAM_SIGFIG).ok())
    }

    fn record(&mut self, d: Duration) {
        if let Some(h) = &mut self.0 {
            let _ = h.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2).max(1));
        }
    }

    pub fn percentiles(&self) -> playsim_report::Percentiles {
        self.0.as_ref().map(playsim_report::Percentiles::from_histogram_ns).unwrap_or_default()
    }

    /// Adds its counts to `into` (made on first use), for a percentile over several streams.
    pub fn add_to(&self, into: &mut Option<Histogram<u64>>) {
        let Some(h) = &self.0 else { return };
        match into {
            Some(sum) => {
                let _ = sum.add(h);
            }
            None => *into = Some(h.clone()),
        }
    }

    /// Its non-empty buckets, in the report's compact form.
    pub fn buckets(&self) -> playsim_report::Buckets {
        self.0.as_ref().map(playsim_report::histograms::buckets).unwrap_or_default()
    }
}

impl Histograms {
    /// Every stage's histogram in the report's compact form, which merges exactly.
    pub fn compact(&self) -> playsim_report::LatencyHistograms {
        playsim_report::LatencyHistograms {
            open: self.open.buckets(),
            read: self.read.buckets(),
            close: self.close.buckets(),
            decode: self.decode.buckets(),
            output: self.output.buckets(),
            slack: self.slack.buckets(),
            pacing_error: self.pacing_error.buckets(),
        }
    }
}

impl Default for Histograms {
    fn default() -> Self {
        Histograms {
            open: LatencyHistogram::new(),
            read: LatencyHistogram::new(),
            close: LatencyHistogram::new(),
            decode: LatencyHistogram::new(),
            output: LatencyHistogram::new(),
            slack: SignedHistogram::new(),
            pacing_error: SignedHistogram::new(),
        }
    }
}

/// Why a frame left the output stage without its output.
enum OutputEnd {
    /// It was dropped at its deadline meanwhile.
    Dropped,
    /// It could not have been output in time (see [`StreamCtx::cannot_output_in_time`]); the
    /// stage it spent the most time in.
    Skipped(DropCause),
    /// The output work failed.
    Failed(String),
}

/// One frame's bytes read, the time spent before the read faulting in a new buffer for them
/// (see [`IoBuf::prefault`]) or waiting for room in the run's `--max-buffer`, and the bytes
/// it holds of that budget until it leaves the window.
struct FrameRead {
    bytes: u64,
    faulting: Duration,
    waiting: Duration,
    reservation: Option<Reservation>,
    /// The buffer read into, taken from the encoded pool once the reservation was made.
    buf: PooledBuf<IoBuf>,
}

/// Everything the presenter and the frame tasks share, behind one lock.
#[derive(Default)]
pub(crate) struct StreamState {
    pub frames: Vec<FrameEntry>,
    next_admit: u64,
    pub(super) oldest_holder: u64,
    pub hist: Histograms,
    pub drops: DropCounters,
    pub presented: u64,
    pub late_frames: u64,
    pub bytes_read: u64,
    pub stall: Duration,
    pub unreadable: Vec<UnreadableFrame>,
    pub t0_ns: Option<u64>,
    /// How the stream's presentation thread was scheduled, once it started.
    pub present_priority: Option<crate::priority::PresentPriority>,
    pub end_ns: Option<u64>,
    pub frames_due: u64,
    /// Width, height and pixel format of the first frame decoded.
    pub decoded_geometry: Option<(u32, u32, &'static str)>,
    /// The pixel format of the first frame decoded.
    pub decoded_format: Option<playsim_core::PixelFormat>,
    /// Whether the first frame decoded had its pixels in the frame's own buffer, not in the
    /// decoder's: then the decoded pool's buffers are worth faulting in ahead.
    decoded_in_own_buffer: bool,
    /// The slack of the frames presented last (at most [`RECENT_SLACK_LEN`]), for a live view.
    pub recent_slack: std::collections::VecDeque<i64>,
    /// Recent read, decode and output times, to tell a frame that cannot be ready in time.
    recent_read: RecentTimes,
    recent_decode: RecentTimes,
    recent_output: RecentTimes,
    /// How much later than admission predicted recent frames were ready.
    prediction_errors: admit::PredictionErrors,
    /// The frame the presenter decides next: every earlier one was presented or dropped.
    next_due: u64,
    /// Frames not decoded because they could not have been ready in time.
    pub skipped: u64,
    /// Frames whose read was never started: they could not have been ready in time.
    pub read_skipped: u64,
    /// Frames sent to the decode pool so far (the stream's virtual deadline, see `DeadlineKey`).
    decodes_started: u64,
    /// Frames dropped before their work was done (rejected at admission, or skipped at the
    /// decode or the output stage), by the cause charged: a subset of `drops`.
    pub early_drops: DropCounters,
    /// Time the stream's frames spent in each stage's work (reads, decodes, outputs), for
    /// the stages' utilisation.
    pub busy: StageBusy,
    /// Frames decoded but never output: the output could not have finished in time.
    pub output_skipped: u64,
    /// Long-GOP streams: the next packet to feed the decoder (packets go in in order).
    next_packet: u64,
    /// Long-GOP streams: the frame the next picture out of the decoder belongs to.
    next_picture: u64,
    /// Long-GOP streams: the keyframe the decoder restarts at (drained and reset before its
    /// packet), after skipping the rest of a GOP.
    gop_restart: Option<u64>,
    /// When the stream's last read finished, on the run's clock.
    last_read_done_ns: u64,
    /// The storage's last stall (see `StreamCtx::note_stall`): when it ended, on the run's
    /// clock, and how long its read ran past the typical read.
    last_stall: Option<(u64, Duration)>,
    /// Reads finished (for the CPU a read costs, see `read_cpu_share`).
    reads_done: u64,
    /// Long-GOP streams: GOPs the decoder skipped the rest of.
    pub gops_skipped: u64,
    /// Long-GOP streams: packets in the decoder with no picture out yet, after its last job.
    decoder_delay: u64,
    /// Long-GOP streams: pictures out of the decoder, waiting for their frame's task.
    pictures: BTreeMap<u64, (Picture, PictureToken)>,
}

impl StreamState {
    fn entry(&mut self, idx: u64) -> &mut FrameEntry {
        let i = usize::try_from(idx).unwrap_or(usize::MAX);
        if i >= self.frames.len() {
            self.frames.resize_with(i + 1, FrameEntry::default);
        }
        &mut self.frames[i]
    }

    fn phase(&self, idx: u64) -> Phase {
        usize::try_from(idx).ok().and_then(|i| self.frames.get(i)).map_or(Phase::NotAdmitted, |e| e.phase)
    }

    fn entry_verdict(&self, idx: u64) -> Verdict {
        usize::try_from(idx).ok().and_then(|i| self.frames.get(i)).map_or(Verdict::Pending, |e| e.verdict)
    }

    /// The oldest frame holding a prefetch slot, and its phase.
    fn oldest_slot_holder(&mut self) -> Option<(u64, Phase)> {
        while self.oldest_holder < self.next_admit {
            let phase_if_holding = {
                let e = self.entry(self.oldest_holder);
                e.holds_slot.then_some(e.phase)
            };
            if let Some(phase) = phase_if_holding {
                return Some((self.oldest_holder, phase));
            }
            self.oldest_holder += 1;
        }
        None
    }
}

/// One stream, shared by its admitter, frame tasks and presenter.
pub(crate) struct StreamCtx {
    pub name: String,
    pub source: Arc<dyn Source>,
    pub storage: Arc<dyn Storage>,
    decoder: Arc<dyn Decoder>,
    cfg: Arc<EngineConfig>,
    clock: Arc<dyn Clock>,
    origin: Duration,
    decode: Arc<dyn DecodeExecutor>,
    decode_slots: Arc<DeadlineSlots>,
    output: Option<Arc<dyn OutputExecutor>>,
    output_slots: Arc<Semaphore>,
    /// With an output stage, the decoded frames the stream may hold at once: its decode
    /// pool's threads + output slots + 2. A permit is taken before a frame's decoded buffer
    /// and given back with it, once the output stage packed it, so the decoded pool stays
    /// at that size even when frames queue for a slow output stage (`--fps max`). Without an
    /// output stage ready frames hold their decoded frames, and the window bounds them.
    decoded_slots: Option<Arc<Semaphore>>,
    io_slots: Arc<Semaphore>,
    window: Arc<Semaphore>,
    /// The window's size: frames in flight are all within this many of the newest.
    window_len: usize,
    /// Encoded bytes, then the same frame's v210 output (see [`OutputJob::packed`]).
    encoded_pool: BufPool<IoBuf>,
    decoded_pool: BufPool<DecodedFrame>,
    /// The encoded pool's buffers held by the output side: packed, not yet presented.
    output_held: Arc<HeldCount>,
    /// The run's `--max-buffer`: bytes the frames in the window may hold (see [`ByteBudget`]).
    budget: Arc<ByteBudget>,
    state: Mutex<StreamState>,
    /// The file frames are read from by byte range (a video file), kept open for the stream.
    open_file: tokio::sync::Mutex<Option<OpenFile>>,
    changed: Notify,
    /// The storage's CPU figure when the stream started (see `read_cpu_share`).
    read_cpu_at_start: u64,
    /// A frame started decoding or left the pipeline: room for another read ahead.
    left_read_side: Notify,
    live: Arc<LiveCounters>,
    cancel: Arc<CancelToken>,
    start: Arc<StartGate>,
    /// How long after the common start this stream begins.
    start_offset: Duration,
    /// How `verify` reads a decoded frame's index.
    frame_index: Option<FrameIndexReader>,
    /// Frames to play; `None` until cancelled.
    pub n_frames: Option<u64>,
    source_len: u64,
    /// A long-GOP stream's own decoder, fed in decode order.
    in_order: Option<Arc<Mutex<Box<dyn InOrderDecoder>>>>,
    pictures: Arc<PictureBudget>,
}

/// What the run shares with every stream.
/// What a stream shares with the run; `cfg`, `decode` and `decode_slots` may be the
/// stream's own (its rate, its own decode pool), and `start_offset` is always its own.
#[derive(Clone)]
pub(crate) struct Shared {
    pub cfg: Arc<EngineConfig>,
    pub clock: Arc<dyn Clock>,
    pub origin: Duration,
    pub decode: Arc<dyn DecodeExecutor>,
    pub decode_slots: Arc<DeadlineSlots>,
    /// The threads of the decode pool behind `decode_slots`.
    pub decode_threads: u32,
    pub output: Option<Arc<dyn OutputExecutor>>,
    pub live: Arc<LiveCounters>,
    pub cancel: Arc<CancelToken>,
    pub start: Arc<StartGate>,
    pub start_offset: Duration,
    /// How `verify` reads a decoded frame's index (see `SimulationBuilder::frame_index_reader`).
    pub frame_index: Option<FrameIndexReader>,
    /// The run's `--max-buffer`, shared by every stream.
    pub budget: Arc<ByteBudget>,
}

impl StreamCtx {
    pub fn new(
        name: String,
        source: Arc<dyn Source>,
        storage: Arc<dyn Storage>,
        shared: &Shared,
    ) -> StreamCtx {
        let source_len = source.n_frames();
        let read_cpu_at_start = storage.stats().cpu_ns;
        let n_frames = if source_len == 0 { Some(0) } else { shared.cfg.frames_to_play(source_len) };
        let decoder = source.decoder();
        let decodes = decoder.decodes();
        let in_order = decoder.in_order();
        // A long-GOP frame waits in the window for its picture while later packets go in;
        // the window holds those packets on top of the prefetch, so it can never run dry.
        // Pictures themselves stay within the prefetch (see `frame_task_in_order`).
        let window = shared.cfg.prefetch as usize + in_order.as_ref().map_or(0, |d| d.max_delay() as usize);
        // A stream that does not decode has nothing to output.
        let output = shared.output.clone().filter(|_| decodes);
        let output_threads = shared.cfg.output_threads.max(1) as usize;
        let decoded_slots = output
            .as_ref()
            .map(|_| Arc::new(Semaphore::new(shared.decode_threads as usize + output_threads + 2)));
        StreamCtx {
            name,
            decoder,
            source,
            storage,
            cfg: Arc::clone(&shared.cfg),
            clock: Arc::clone(&shared.clock),
            origin: shared.origin,
            decode: Arc::clone(&shared.decode),
            decode_slots: Arc::clone(&shared.decode_slots),
            output,
            output_slots: Arc::new(Semaphore::new(output_threads)),
            decoded_slots,
            io_slots: Arc::new(Semaphore::new(shared.cfg.io_depth as usize)),
            window: Arc::new(Semaphore::new(window)),
            window_len: window,
            encoded_pool: BufPool::new(),
            decoded_pool: BufPool::new(),
            output_held: Arc::default(),
            budget: Arc::clone(&shared.budget),
            state: Mutex::new(StreamState::default()),
            open_file: tokio::sync::Mutex::new(None),
            changed: Notify::new(),
            left_read_side: Notify::new(),
            read_cpu_at_start,
            live: Arc::clone(&shared.live),
            cancel: Arc::clone(&shared.cancel),
            start: Arc::clone(&shared.start),
            start_offset: shared.start_offset,
            frame_index: shared.frame_index,
            n_frames,
            source_len,
            in_order: in_order.map(|d| Arc::new(Mutex::new(d))),
            pictures: Arc::default(),
        }
    }

    /// How this stream decodes: `none` (bytes only), `in_order` (long-GOP: one decoder, packets in decode
    /// order) or `independent` (every frame on its own, across the pool).
    pub fn decode_mode(&self) -> &'static str {
        if !self.decoder.decodes() {
            "none"
        } else if self.in_order.is_some() {
            "in_order"
        } else {
            "independent"
        }
    }

    /// The stream now, for a live view; adds its read, decode and output latencies to
    /// `stages` (in that order).
    pub fn live(&self, stages: &mut [Option<Histogram<u64>>; 3]) -> crate::LiveStream {
        let buffered = self.window_len.saturating_sub(self.window.available_permits());
        let st = self.lock();
        st.hist.read.add_to(&mut stages[0]);
        st.hist.decode.add_to(&mut stages[1]);
        st.hist.output.add_to(&mut stages[2]);
        crate::LiveStream {
            name: self.name.clone(),
            presented: st.presented,
            dropped: st.drops,
            bytes_read: st.bytes_read,
            buffered,
            window: self.window_len,
            recent_slack: st.recent_slack.iter().copied().collect(),
            frames_planned: self.n_frames,
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, StreamState> {
        // A poisoned lock only means a task panicked mid-update; the counts are still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> Duration {
        self.clock.now().saturating_sub(self.origin)
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.now().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Buffers this stream's pools have created, encoded (which also hold the v210 output)
    /// and decoded: the steady-state memory bound.
    pub fn buffers_created(&self) -> (usize, usize) {
        (self.encoded_pool.created(), self.decoded_pool.created())
    }

    /// The most encoded-pool buffers the output side held at once (packed, not yet presented).
    pub fn output_buffers_peak(&self) -> u64 {
        self.output_held.peak()
    }

    /// The decode pool's slots the stream's frames take (shared, or a pool of its own).
    pub fn decode_pool(&self) -> &Arc<DeadlineSlots> {
        &self.decode_slots
    }

    /// True when the stream packs its frames to v210 (into its encoded pool).
    pub fn packs(&self) -> bool {
        self.output.is_some()
    }

    /// Plays the stream: admits frames, runs their tasks and presents them, then
    /// waits for every frame's work to finish.
    pub async fn run(self: Arc<Self>) {
        if !self.start_offset.is_zero() {
            // Nothing is read before the stream's own start.
            let Some(Opened { t0, .. }) = self.start.opened(&self.cancel).await else {
                return self.finish_presenting(0);
            };
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return self.finish_presenting(0),
                _ = self.clock.sleep_until(self.origin + t0 + self.start_offset) => {}
            }
        }
        let mut tasks = JoinSet::new();
        let presenter = tokio::spawn(Arc::clone(&self).present());
        loop {
            let permit = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                p = Arc::clone(&self.window).acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let Some(idx) = self.next_to_admit() else { break };
            if self.in_order.is_some() {
                tasks.spawn(Arc::clone(&self).frame_task_in_order(idx, permit));
            } else {
                tasks.spawn(Arc::clone(&self).frame_task(idx, permit));
            }
            // Reap finished frame tasks so a long run keeps only the window's worth.
            while tasks.try_join_next().is_some() {}
        }
        let _ = presenter.await;
        // Work still in flight finishes on its own; on cancellation, give it a grace period.
        let drain = async { while tasks.join_next().await.is_some() {} };
        if self.cancel.is_cancelled() {
            let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
            tasks.abort_all();
        } else {
            drain.await;
        }
        self.close_open_file().await;
    }

    fn next_to_admit(&self) -> Option<u64> {
        let mut st = self.lock();
        loop {
            let idx = st.next_admit;
            if self.n_frames.is_some_and(|n| idx >= n) {
                return None;
            }
            st.next_admit += 1;
            let in_order = self.in_order.is_some();
            let e = st.entry(idx);
            // A long-GOP packet is read and decoded even when its frame was dropped already.
            if e.verdict == Verdict::Pending || in_order {
                e.phase = Phase::ReadQueued;
                e.holds_slot = true;
                return Some(idx);
            }
        }
    }

    /// Moves frame `idx` to `phase`; returns false if it was dropped meanwhile.
    fn advance(&self, idx: u64, phase: Phase, update: impl FnOnce(&mut FrameEntry)) -> bool {
        let mut st = self.lock();
        let e = st.entry(idx);
        update(e);
        if e.verdict != Verdict::Pending {
            return false;
        }
        e.phase = phase;
        drop(st);
        if phase == Phase::Decoding {
            self.left_read_side.notify_waiters();
        }
        true
    }

    /// Frame `idx` will not be read (`Rejected`), decoded (`Skipped`) or output
    /// (`OutputSkipped`): free its slot; it is dropped as `storage`, `decode` or `output` when
    /// it falls due.
    fn skip(&self, idx: u64, slot: OwnedSemaphorePermit, skipped: Phase) {
        let mut st = self.lock();
        let e = st.entry(idx);
        e.holds_slot = false;
        if e.verdict == Verdict::Pending {
            e.phase = skipped;
            match skipped {
                Phase::Rejected(_) => st.read_skipped += 1,
                Phase::OutputSkipped(_) => st.output_skipped += 1,
                _ => st.skipped += 1,
            }
        } else {
            e.phase = Phase::Done;
        }
        drop(slot);
        drop(st);
        self.left_read_side.notify_waiters();
    }

    /// A dropped frame's work has stopped: free its slot. An admitted frame that missed its
    /// deadline tells admission how far off its prediction was: it would have been ready no
    /// sooner than now plus the typical times of the stages it had left.
    fn retire(&self, idx: u64, slot: OwnedSemaphorePermit) {
        let now = self.now();
        let mut st = self.lock();
        let phase = st.phase(idx);
        if let Some(predicted) = st.entry(idx).predicted_ready_ns.take() {
            let left = self.typical_time_left(&st, phase);
            st.prediction_errors.push(signed_ns(duration_ns(now + left), predicted));
        }
        let e = st.entry(idx);
        e.phase = Phase::Done;
        e.holds_slot = false;
        drop(slot);
        drop(st);
        self.left_read_side.notify_waiters();
    }

    fn fail(&self, idx: u64, slot: OwnedSemaphorePermit, message: String) {
        {
            let mut st = self.lock();
            let e = st.entry(idx);
            e.holds_slot = false;
            e.failure = Some(message);
            e.phase = if e.verdict == Verdict::Pending { Phase::Failed } else { Phase::Done };
            drop(slot);
        }
        self.changed.notify_waiters();
        self.left_read_side.notify_waiters();
    }

    /// Frame `idx` is ready: it holds `held` and its bytes of `--max-buffer` until presented.
    fn ready(
        &self,
        idx: u64,
        slot: OwnedSemaphorePermit,
        done_ns: u64,
        held: Held,
        reservation: Option<Reservation>,
    ) {
        self.ready_holding(idx, slot, done_ns, (held, reservation), None);
    }

    /// [`ready`](Self::ready), keeping a long-GOP picture's token until the frame is presented.
    fn ready_holding(
        &self,
        idx: u64,
        slot: OwnedSemaphorePermit,
        done_ns: u64,
        (held, reservation): (Held, Option<Reservation>),
        token: Option<PictureToken>,
    ) {
        {
            let mut st = self.lock();
            let e = st.entry(idx);
            e.output_done_ns = Some(done_ns);
            if let Some(predicted) = e.predicted_ready_ns.take() {
                st.prediction_errors.push(signed_ns(done_ns, predicted));
            }
            let e = st.entry(idx);
            if e.verdict == Verdict::Pending {
                e.phase = Phase::Ready;
                e.slot = Some(slot);
                e.held = Some(held);
                e.reservation = reservation;
                e.token = token;
            } else {
                e.phase = Phase::Done;
                e.holds_slot = false;
                drop(slot);
            }
        }
        self.changed.notify_waiters();
    }

    /// Where frame `idx` of the stream is in its source, worked out once per frame task:
    /// for the read and for any message about it.
    fn locate(&self, idx: u64) -> FrameAt {
        let src_idx = idx % self.source_len.max(1);
        let extent = self.source.extent(src_idx);
        let path = extent.path().display().to_string();
        FrameAt { idx, src_idx, frame_number: self.source.frame_number(src_idx), extent, path }
    }

    fn describe_frame(&self, idx: u64) -> (u64, String) {
        let at = self.locate(idx);
        (at.frame_number, at.path)
    }

    async fn frame_task(self: Arc<Self>, idx: u64, slot: OwnedSemaphorePermit) {
        let cancel = Arc::clone(&self.lock().entry(idx).cancel);
        let at = self.locate(idx);
        let (extent, frame_number) = (&at.extent, at.frame_number);
        let unreadable = |detail: String| at.unreadable(&detail);

        // Read, when the decode pool can take the frame soon (see `room_to_read_ahead`), and
        // only if it can still be ready in time (see `admission`).
        match self.room_to_read_ahead(idx, &cancel).await {
            Some(Admission::Admit) => {}
            Some(Admission::Reject(cause)) => return self.skip(idx, slot, Phase::Rejected(cause)),
            None => return self.retire(idx, slot),
        }
        let Some(io) = acquire_unless_dropped(&self.io_slots, &cancel).await else {
            return self.retire(idx, slot);
        };
        let mut io = Some(io);
        let read_start = self.now();
        if let Admission::Reject(cause) = self.admission(idx, read_start) {
            return self.skip(idx, slot, Phase::Rejected(cause));
        }
        let t = duration_ns(read_start);
        if !self.advance(idx, Phase::Reading, |e| e.read_start_ns = Some(t)) {
            return self.retire(idx, slot);
        }
        let read = self.read_frame(extent, Some((idx, &mut io))).await;
        drop(io);
        let FrameRead { bytes, faulting, waiting, reservation, buf: encoded } = match read {
            Ok(read) => read,
            Err(detail) => return self.fail(idx, slot, unreadable(detail)),
        };
        self.live.bytes(bytes);
        let read_end = self.now();
        {
            // The read's time without its buffer's first faults, which the next reads into
            // the recycled buffer do not pay, nor its wait for room in `--max-buffer`.
            let read_time = read_end.saturating_sub(read_start).saturating_sub(faulting + waiting);
            let mut st = self.lock();
            self.note_stall(&mut st, read_start, read_end, read_time);
            st.recent_read.push(read_time);
            st.busy.read += read_time;
            st.last_read_done_ns = duration_ns(read_end);
            st.reads_done += 1;
        }
        let t = duration_ns(read_end);
        let next = if self.decoded_slots.is_some() { Phase::DecodedSlotQueued } else { Phase::DecodeQueued };
        let ok = self.advance(idx, next, |e| {
            e.read_done_ns = Some(t);
            e.bytes = bytes;
        });
        self.lock().bytes_read += bytes;
        if !ok {
            return self.retire(idx, slot);
        }
        if !self.decoder.decodes() {
            // Bytes only (frametest's semantics): the frame is ready when read.
            drop(encoded);
            return self.ready(idx, slot, t, Held::Decoded(self.decoded_pool.get()), None);
        }

        // A decoded-frame slot, before a decode thread: a frame waiting on the output stage
        // does not hold a thread other streams could use.
        let decoded_slot = match &self.decoded_slots {
            Some(slots) => {
                let Some(permit) = acquire_unless_dropped(slots, &cancel).await else {
                    return self.retire(idx, slot);
                };
                if !self.advance(idx, Phase::DecodeQueued, |_| {}) {
                    return self.retire(idx, slot);
                }
                Some(permit)
            }
            None => None,
        };

        // Decode.
        let key = self.deadline_key(&self.lock(), idx);
        let Some(permit) = acquire_slot_unless_dropped(&self.decode_slots, key, &cancel).await else {
            return self.retire(idx, slot);
        };
        let decoded = self.prefaulted_decoded();
        let start = self.now();
        if self.cannot_make_it(idx, start) {
            let cause = self.late_stage(idx, start);
            return self.skip(idx, slot, Phase::Skipped(cause));
        }
        if !self.advance(idx, Phase::Decoding, |_| {}) {
            return self.retire(idx, slot);
        }
        self.lock().decodes_started += 1;
        let job = DecodeJob {
            frame_idx: idx,
            decoder: Arc::clone(&self.decoder),
            encoded,
            decoded,
            result: Ok(()),
        };
        let job = self.decode.decode(job).await;
        drop(permit);
        let end = self.now();
        self.note_decode_time(end.saturating_sub(start));
        let Some(job) = job else {
            return self.fail(
                idx,
                slot,
                unreadable("the decoder failed without a result (it panicked)".into()),
            );
        };
        if let Err(e) = &job.result {
            return self.fail(idx, slot, unreadable(e.to_string()));
        }
        if let Some(read_index) = self.frame_index.filter(|_| self.cfg.verify) {
            if let Err(detail) = verify_frame_index(read_index, &job.decoded, frame_number) {
                return self.fail(idx, slot, unreadable(detail));
            }
        }
        // The encoded buffer goes back to the pool here, for the output stage to pack into
        // (a field left in a partly moved `job` would be dropped only at the task's end).
        let DecodeJob { decoded, encoded, .. } = job;
        give_back_read_buffer(encoded, bytes);
        self.note_geometry(&decoded);
        let t = u64::try_from(end.as_nanos()).unwrap_or(u64::MAX);
        match self.output_stage(idx, &cancel, (decoded, decoded_slot), t).await {
            Ok(held) => self.ready(idx, slot, duration_ns(self.now()), held, reservation),
            Err(OutputEnd::Dropped) => self.retire(idx, slot),
            Err(OutputEnd::Skipped(cause)) => self.skip(idx, slot, Phase::OutputSkipped(cause)),
            Err(OutputEnd::Failed(detail)) => self.fail(idx, slot, unreadable(detail)),
        }
    }

    /// Records one decode's time: its histogram, the recent times admission reads, the
    /// stage's busy time.
    fn note_decode_time(&self, time: Duration) {
        let mut st = self.lock();
        st.hist.decode.record(time);
        st.recent_decode.push(time);
        st.busy.decode += time;
    }

    fn note_geometry(&self, decoded: &DecodedFrame) {
        let mut st = self.lock();
        if st.decoded_geometry.is_none() {
            let format = decoded.format.map_or("", |f| f.name());
            st.decoded_geometry = Some((decoded.width, decoded.height, format));
            st.decoded_format = decoded.format;
            st.decoded_in_own_buffer = decoded.external.is_none() && !decoded.data.is_empty();
        }
    }

    /// A decoded frame from the pool, its pages faulted in at the stream's frame size when it
    /// is new, so the decode that fills it first is timed like the rest (see
    /// [`IoBuf::prefault`]). Frames decoded into the decoder's own buffers are left empty.
    fn prefaulted_decoded(&self) -> PooledBuf<DecodedFrame> {
        let mut decoded = self.decoded_pool.get();
        let geometry = {
            let st = self.lock();
            st.decoded_geometry.zip(st.decoded_format).filter(|_| st.decoded_in_own_buffer)
        };
        if let Some(((width, height, _), format)) = geometry {
            decoded.prefault(width, height, format);
        }
        decoded
    }

    /// The output stage for a decoded frame (with its decoded-frame slot, if the stream caps
    /// them): what the frame holds until it is presented, or why it has no output (see
    /// [`OutputEnd`]). The decoded frame and its slot go back as soon as it is packed.
    async fn output_stage(
        &self,
        idx: u64,
        cancel: &Notify,
        (decoded, decoded_slot): (PooledBuf<DecodedFrame>, Option<OwnedSemaphorePermit>),
        decode_done_ns: u64,
    ) -> Result<Held, OutputEnd> {
        let Some(output) = self.output.clone() else {
            let _ = self.advance(idx, Phase::Ready, |e| e.decode_done_ns = Some(decode_done_ns));
            return Ok(Held::Decoded(decoded));
        };
        if !self.advance(idx, Phase::OutputQueued, |e| e.decode_done_ns = Some(decode_done_ns)) {
            return Err(OutputEnd::Dropped);
        }
        let Some(permit) = acquire_unless_dropped(&self.output_slots, cancel).await else {
            return Err(OutputEnd::Dropped);
        };
        // The output packs v210 into a buffer of the encoded pool: a new one is faulted in
        // before the output's time starts, as a read's and a decode's are.
        let mut packed = self.encoded_pool.get();
        let counted = self.output_held.hold();
        packed.prefault(crate::v210::stride(decoded.width) * decoded.height as usize);
        let start = self.now();
        if self.cannot_output_in_time(idx, start) {
            return Err(OutputEnd::Skipped(self.late_stage(idx, start)));
        }
        if !self.advance(idx, Phase::Outputting, |_| {}) {
            return Err(OutputEnd::Dropped);
        }
        let job = OutputJob { frame_idx: idx, decoded, packed };
        let job = output.output(job).await;
        drop(permit);
        let job = job.map(|OutputJob { packed, .. }| packed);
        drop(decoded_slot);
        let end = self.now();
        {
            let mut st = self.lock();
            st.hist.output.record(end.saturating_sub(start));
            st.recent_output.push(end.saturating_sub(start));
            st.busy.output += end.saturating_sub(start);
        }
        match job {
            Some(packed) => Ok(Held::Packed(packed, counted)),
            None => Err(OutputEnd::Failed("the output stage failed without a result".into())),
        }
    }

    /// Reads one frame's bytes into a buffer of the encoded pool, timing open, read and close.
    /// The error names the path. With `budgeted` (frame `idx` and its I/O slot), the read
    /// first reserves the frame's bytes of the run's `--max-buffer` (see
    /// [`StreamCtx::reserve`]), and only then takes its buffer: a frame waiting for room holds
    /// no buffer, which would otherwise grow to the frame's size when it is read, so the
    /// pool's big buffers are the frames' within the budget.
    async fn read_frame(
        &self,
        extent: &FrameExtent,
        budgeted: Option<Budgeted<'_>>,
    ) -> Result<FrameRead, String> {
        match extent {
            FrameExtent::File { path } => self.read_file(path, budgeted).await,
            FrameExtent::Range { path, offset, len } => {
                self.refuse_oversized(path, *len)?;
                let t = self.now();
                let reservation = match budgeted {
                    Some((idx, io)) => self.reserve(idx, *len, io).await,
                    None => None,
                };
                let reserved = self.now();
                let mut buf = self.encoded_pool.get();
                buf.prefault(usize::try_from((*len).min(MAX_FRAME_BYTES)).unwrap_or(0));
                let faulted = self.now();
                let bytes = self.read_range(path, *offset, *len, &mut buf).await?;
                Ok(FrameRead {
                    bytes,
                    faulting: faulted.saturating_sub(reserved),
                    waiting: reserved.saturating_sub(t),
                    reservation,
                    buf,
                })
            }
            FrameExtent::Missing { expected } => {
                Err(format!("{} is missing from the sequence (a gap)", expected.display()))
            }
        }
    }

    /// Reads a whole frame file: open, read, close, each timed. A read buffer too small for
    /// the file is grown and faulted in between the open and the read (see
    /// [`IoBuf::prefault`]): the frames the preroll reads all at once, before any size is
    /// known, would otherwise fault in their buffers inside their reads.
    async fn read_file(&self, path: &Path, budgeted: Option<Budgeted<'_>>) -> Result<FrameRead, String> {
        let t = self.now();
        let file = self.storage.open(path).await.map_err(|e| self.storage_failure(e))?;
        let opened = self.now();
        self.lock().hist.open.record(opened.saturating_sub(t));
        let want = file.size();
        let want_usize = match frame_len(path, want) {
            Ok(len) => len,
            Err(e) => {
                let _ = file.close().await;
                return Err(e.message);
            }
        };
        if let Err(refused) = self.refuse_oversized(path, want) {
            let _ = file.close().await;
            return Err(refused);
        }
        let reservation = match budgeted {
            Some((idx, io)) => self.reserve(idx, want, io).await,
            None => None,
        };
        let reserved = self.now();
        let mut buf = self.encoded_pool.get();
        buf.prefault(want_usize);
        let faulted = self.now();
        let read = file.read_at(0, want_usize, &mut buf).await;
        let read_done = self.now();
        let closed = file.close().await;
        let close_done = self.now();
        {
            let mut st = self.lock();
            st.hist.read.record(read_done.saturating_sub(faulted));
            st.hist.close.record(close_done.saturating_sub(read_done));
        }
        let n = read.map_err(|e| self.storage_failure(e))?;
        closed.map_err(|e| self.storage_failure(e))?;
        let bytes = whole_read(path, 0, n, want).map_err(|e| e.message)?;
        Ok(FrameRead {
            bytes,
            faulting: faulted.saturating_sub(reserved),
            waiting: reserved.saturating_sub(opened),
            reservation,
            buf,
        })
    }

    /// Refuses a frame whose size (from its file's attributes or a server's reply) is more
    /// than the whole of `--max-buffer`, before any buffer is taken for it: the frame is
    /// unreadable, with a message naming the file, its size and the limit.
    fn refuse_oversized(&self, path: &Path, len: u64) -> Result<(), String> {
        let limit = self.budget.limit();
        if len > limit {
            // The size is the server's claim, where there is one: name it.
            let info = self.storage.info();
            let server = info.options.iter().find(|(key, _)| key == "server");
            let by = server
                .map_or_else(String::new, |(_, addr)| format!(" (so says {} server {addr})", info.transport));
            return Err(format!(
                "{}{by} is {len} bytes, more than --max-buffer ({limit} bytes) may hold: raise \
                 --max-buffer (for example --max-buffer {}M) to read a frame this large",
                path.display(),
                len.div_ceil(1 << 20).saturating_mul(2)
            ));
        }
        Ok(())
    }

    /// Reserves `bytes` of the run's `--max-buffer` for frame `idx`'s read. While it waits the
    /// frame is `ReadAheadQueued`, as a frame waiting for the decode pool is (the memory it
    /// waits for is held by frames read ahead), and gives its I/O slot back, so that the
    /// frame next due, which may always read, is not kept from reading by frames waiting here.
    async fn reserve(
        &self,
        idx: u64,
        bytes: u64,
        io: &mut Option<OwnedSemaphorePermit>,
    ) -> Option<Reservation> {
        if let Some(reservation) = self.budget.try_reserve(bytes) {
            return Some(reservation);
        }
        let _ = self.advance(idx, Phase::ReadAheadQueued, |_| {});
        drop(io.take());
        let next_due = || self.lock().next_due >= idx;
        let reservation = self.budget.reserve(bytes, &self.cancel, next_due).await;
        let _ = self.advance(idx, Phase::ReadQueued, |_| {});
        *io = Arc::clone(&self.io_slots).acquire_owned().await.ok();
        // The read starts now: a read that seemed to start before the wait would look stalled
        // to admission (see `stalled_reads_ahead`), and the frames behind it be refused.
        let t = self.now_ns();
        let _ = self.advance(idx, Phase::Reading, |e| e.read_start_ns = Some(t));
        reservation
    }

    /// Reads a frame's byte range of a file the stream keeps open: a video file is opened once
    /// per stream, as a player opens it, not once per packet (see [`StreamCtx::open_file`]).
    async fn read_range(&self, path: &Path, offset: u64, len: u64, buf: &mut IoBuf) -> Result<u64, String> {
        let want_usize = frame_len(path, len).map_err(|e| e.message)?;
        let file = self.open_file(path).await?;
        let t = self.now();
        let read = file.read_at(offset, want_usize, buf).await;
        self.lock().hist.read.record(self.now().saturating_sub(t));
        let n = read.map_err(|e| self.storage_failure(e))?;
        whole_read(path, offset, n, len).map_err(|e| e.message)
    }

    /// The stream's open handle on `path`, opened (and timed) the first time; a handle on
    /// another path is closed first. Frame tasks read through it at once (`read_at` takes
    /// `&self`); [`StreamCtx::close_open_file`] closes it when the stream ends.
    async fn open_file(&self, path: &Path) -> Result<Arc<Box<dyn StorageFile>>, String> {
        let mut open = self.open_file.lock().await;
        if let Some((open_path, file)) = open.as_ref() {
            if open_path == path {
                return Ok(Arc::clone(file));
            }
        }
        if let Some((_, old)) = open.take() {
            self.close_shared(old).await;
        }
        let t = self.now();
        let file = Arc::new(self.storage.open(path).await.map_err(|e| self.storage_failure(e))?);
        self.lock().hist.open.record(self.now().saturating_sub(t));
        *open = Some((path.to_owned(), Arc::clone(&file)));
        Ok(file)
    }

    /// Closes the file the stream kept open, if any, once no frame task reads through it.
    async fn close_open_file(&self) {
        let open = self.open_file.lock().await.take();
        if let Some((_, file)) = open {
            self.close_shared(file).await;
        }
    }

    /// Closes a kept-open file when this is its last handle (a task still reading holds
    /// another; the file is then dropped, unclosed, when that read ends).
    async fn close_shared(&self, file: Arc<Box<dyn StorageFile>>) {
        let Some(file) = Arc::into_inner(file) else { return };
        let t = self.now();
        let closed = file.close().await;
        self.lock().hist.close.record(self.now().saturating_sub(t));
        if let Err(e) = closed {
            let _ = self.storage_failure(e);
        }
    }

    /// The message of a failed storage call. A transport that gave up ends the run: every
    /// later frame would fail the same way, and the report should say why once, not per frame.
    fn storage_failure(&self, error: StorageError) -> String {
        if error.kind == StorageErrorKind::Unavailable {
            self.cancel.fail(format!("storage unavailable: {}", error.message));
        }
        error.message
    }

    /// Waits until `cond` holds; false if the run was cancelled first.
    async fn wait_for(&self, cond: impl Fn(&StreamState) -> bool) -> bool {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if cond(&self.lock()) {
                return true;
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return false,
                _ = &mut notified => {}
            }
        }
    }
}

/// Where one frame of a stream is: its position in the source, number, extent and path.
struct FrameAt {
    idx: u64,
    src_idx: u64,
    frame_number: u64,
    extent: FrameExtent,
    path: String,
}

impl FrameAt {
    /// The unreadable-frame message: the frame number, index and file, then `detail`.
    fn unreadable(&self, detail: &str) -> String {
        format!("frame {} (index {}) in {}: {detail}", self.frame_number, self.idx, self.path)
    }
}

/// A slot of the decode pool, in deadline order (`key`), or `None` if the frame is dropped
/// while it waits.
async fn acquire_slot_unless_dropped(
    slots: &Arc<DeadlineSlots>,
    key: DeadlineKey,
    dropped: &Notify,
) -> Option<DeadlineSlot> {
    tokio::select! {
        biased;
        _ = dropped.notified() => None,
        slot = slots.acquire(key) => Some(slot),
    }
}

/// A permit of `stage`, or `None` if the frame is dropped while it waits.
async fn acquire_unless_dropped(stage: &Arc<Semaphore>, dropped: &Notify) -> Option<OwnedSemaphorePermit> {
    tokio::select! {
        biased;
        _ = dropped.notified() => None,
        permit = Arc::clone(stage).acquire_owned() => permit.ok(),
    }
}

/// Gives a read buffer back to its pool after the decode, or frees its memory first when it is
/// far larger than the frame it held (more than twice, and over 1 MiB): a buffer grown by an
/// outsized frame of a sequence whose frames vary wildly would otherwise stay resident in the
/// pool, under every small frame read into it, beyond `--max-buffer`. Frames of one size
/// (within the sixteenth a buffer grows ahead) keep their buffers, as before.
fn give_back_read_buffer(mut buf: PooledBuf<IoBuf>, frame_bytes: u64) {
    let capacity = buf.capacity() as u64;
    if capacity > (1 << 20) && capacity > frame_bytes.saturating_mul(2) {
        *buf = IoBuf::default();
    }
}

/// A frame read within `--max-buffer`: its index, and its I/O slot, given back while it waits.
type Budgeted<'a> = (u64, &'a mut Option<OwnedSemaphorePermit>);

/// A file a stream keeps open, and its path.
type OpenFile = (std::path::PathBuf, Arc<Box<dyn StorageFile>>);

fn verify_frame_index(
    read_index: FrameIndexReader,
    frame: &DecodedFrame,
    frame_number: u64,
) -> Result<(), String> {
    match read_index(frame) {
        Some(found) if found == frame_number => Ok(()),
        Some(found) => Err(format!("decoded pixels carry frame index {found}, expected {frame_number}")),
        None => Err("decoded pixels carry no frame index (not playsim synthetic media?)".into()),
    }
}

pub(crate) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn signed_ns(a: u64, b: u64) -> i64 {
    let diff = i128::from(a) - i128::from(b);
    i64::try_from(diff).unwrap_or(if diff < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_is_blamed_on_the_stage_it_waits_for() {
        use DropCause::*;
        let table = [
            (Phase::NotAdmitted, Storage),
            (Phase::ReadAheadQueued, Decode),
            (Phase::ReadQueued, Storage),
            (Phase::Reading, Storage),
            // Only the output stage frees decoded frames.
            (Phase::DecodedSlotQueued, Output),
            (Phase::DecodeQueued, Decode),
            (Phase::Decoding, Decode),
            (Phase::OutputQueued, Output),
            (Phase::Outputting, Output),
            (Phase::Rejected(Storage), Storage),
            (Phase::Rejected(Decode), Decode),
            (Phase::Rejected(Output), Output),
            (Phase::Skipped(Decode), Decode),
            (Phase::Skipped(Storage), Storage),
            (Phase::OutputSkipped(Output), Output),
            (Phase::Failed, Unreadable),
        ];
        for (phase, cause) in table {
            assert_eq!(phase.blame(), cause, "{phase:?}");
        }
        assert!(Phase::Rejected(Decode).dropped_early() && !Phase::DecodeQueued.dropped_early());
    }
}
