//! Record mode's paced runner: frames arrive on the clock, as from a capture card, are encoded
//! on a pool and written through a [`RecordSink`], and a frame that arrives while the queue is
//! full is dropped and charged to the stage that holds the oldest queued frame.
//!
//! The rule, for a run of `n` frames at positions `k = 0..n`:
//! - with a rate, frame `k` arrives at `rate.due_offset(k)` from the start, computed from `k`
//!   each time; without one, frames arrive as fast as the queue takes them and none is dropped;
//! - `queue` (`-q`, frametest's rule) is the most frames queued: arrived and not yet done
//!   (published under their real name, or failed);
//! - a frame that arrives while the queue is full is **dropped**: never encoded, never
//!   written. It is charged to the stage in which the queued frames have spent the most time so
//!   far, added over every queued frame:
//!
//!   | a queued frame's time counts for | from                  | to                          |
//!   |----------------------------------|-----------------------|-----------------------------|
//!   | `encode`                         | its arrival           | its encode's end (or now)   |
//!   | `storage`                        | its encode's end      | now                         |
//!
//!   (waiting for an encoder counts as encode's, waiting for a writer as storage's; a tie is
//!   storage's). A frame the source could not supply in time is an `input` drop; the
//!   generator always supplies, so only a transport source can have them.
//!
//!   Why not the stage of the oldest queued frame alone, as issue 22 first put it: the oldest
//!   frame is the one that leaves next, so in a pipeline it is nearly always in the last stage.
//!   Recording 4K DCI DPX at 24 fps here (2 encoders of 104 ms a frame, 2 writers of 57 ms, a
//!   queue of 4) lost 10 frames in 48, every one charged to storage by that rule, although the
//!   encoders (19 fps at most) were what could not keep up: 104 of each frame's 170 ms in the
//!   queue were encode's. Added over the queue, the time says which stage holds it;
//! - `encoders` frames are encoded at once, `writers` written at once; a frame keeps its queue
//!   slot from arrival until it is done;
//! - a frame whose write fails is `failed`, charged to storage, with the error; with
//!   [`OnError::Stop`] (the default, as capture software does) the run stops there: no frame
//!   arrives after it, and the frames in flight finish.
//!
//! Every timestamp is read from the [`Clock`] by this module, around the calls into the
//! [`EncodeExecutor`] and the [`RecordSink`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use playsim_core::{BufPool, Clock, DecodedFrame, FrameRate, PooledBuf, StorageError};
/// The run's records are the report model's: the engine fills them, the report renders them.
pub use playsim_report::record::{RecordCause, RecordFrame, RecordOutcome, RecordRun};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::cancel::CancelToken;
use crate::exec::{EncodeExecutor, EncodeJob};
use crate::frametest::{acquire, duration_ns, keep, IoFuture, Positioned};

/// The most frames one run may have: every frame keeps a record of its times.
pub const MAX_RECORD_FRAMES: u64 = 10_000_000;
/// The most frames queued, encoders or writers.
pub const MAX_RECORD_SLOTS: u32 = 4096;

/// When written data must be durable (`--sync`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Never asked for: the page cache (or the server) decides.
    #[default]
    None,
    /// Each frame is synced before it is published.
    Frame,
    /// Everything is synced once, after the last frame.
    End,
}

/// What a failed write does to the run (`--on-error`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// The run stops after the first failed write, as capture software does.
    #[default]
    Stop,
    /// The frame is counted, and the run goes on.
    Continue,
}

/// The settings of a record run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordConfig {
    /// Frames that arrive, dropped ones included.
    pub n_frames: u64,
    /// The rate frames arrive at; `None` for as fast as the queue takes them.
    pub rate: Option<FrameRate>,
    /// Frames queued (arrived, not done) at most.
    pub queue: u32,
    /// Frames encoded at once (the encode pool's threads).
    pub encoders: u32,
    /// Frames written at once.
    pub writers: u32,
    /// When data must be durable.
    pub sync: SyncPolicy,
    /// What a failed write does to the run.
    pub on_error: OnError,
}

impl RecordConfig {
    /// Checks the settings; the error names the setting as the command line spells it, with a
    /// valid example.
    pub fn validate(&self) -> Result<(), String> {
        if self.n_frames == 0 || self.n_frames > MAX_RECORD_FRAMES {
            return Err(format!(
                "--frames {} is out of range: 1 to {MAX_RECORD_FRAMES} (for example --frames 240)",
                self.n_frames
            ));
        }
        for (flag, value) in [("-q", self.queue), ("--encoders", self.encoders), ("--writers", self.writers)]
        {
            if value == 0 || value > MAX_RECORD_SLOTS {
                return Err(format!(
                    "{flag} {value} is out of range: 1 to {MAX_RECORD_SLOTS} (for example {flag} 4)"
                ));
            }
        }
        Ok(())
    }
}

/// Where record mode's frames go: written under a temporary name, then published.
pub trait RecordSink: Send + Sync + 'static {
    /// The real name of frame `position`'s file, for messages.
    fn name(&self, position: u64) -> String;

    /// Creates frame `position`'s file under its temporary name and writes `bytes` into it.
    fn write(
        &self,
        position: u64,
        bytes: Arc<[u8]>,
    ) -> IoFuture<'_, Result<Box<dyn WrittenFrame>, StorageError>>;

    /// Makes everything written durable, once, after the last frame (`--sync end`).
    fn sync_all(&self) -> IoFuture<'_, Result<(), StorageError>>;

    /// Whether frames must reach [`RecordSink::write`] in position order, one at a time: a
    /// clip (one file holding every frame, as a MOV) appends them. Then a frame waits for its
    /// turn, after every earlier frame is written, failed or dropped, before it takes a
    /// writer; that wait is storage's time.
    fn ordered(&self) -> bool {
        false
    }

    /// Ends the run's output, after the last frame and before the end sync: a clip writes its
    /// index and closes its file. A failure is the run's.
    fn finish(&self) -> IoFuture<'_, Result<(), StorageError>> {
        Box::pin(async { Ok(()) })
    }

    /// CPU time its writes and syncs have taken so far, where it can be measured.
    fn cpu_time(&self) -> Duration {
        Duration::ZERO
    }
}

/// Where frames come from when they are not generated: a source read through a transport and
/// decoded ahead of the clock, as a capture card's input or an ingest's read side. A frame it
/// has not decoded when the frame is due is an `input` drop.
pub trait FrameFeed: Send + Sync + 'static {
    /// Frame `position`, decoded, moved into `into` (whose buffer the feed may keep), if it is
    /// ready now; false when the source could not supply it in time. Called once per position,
    /// in order, at the frame's arrival; the feed need not keep a frame it was not asked for
    /// in time.
    fn take(&self, position: u64, into: &mut DecodedFrame) -> bool;

    /// Waits until frame `position` is ready, or known never to be (it could not be read or
    /// decoded): a run without a rate takes frames as fast as the source gives them, and drops
    /// none for being late.
    fn wait_for(&self, _position: u64) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// CPU time the feed's reads and decodes have taken so far.
    fn cpu_time(&self) -> Duration {
        Duration::ZERO
    }
}

/// A frame's file, written under its temporary name.
pub trait WrittenFrame: Send + Sync {
    /// Makes its data durable (`--sync frame`).
    fn sync(&self) -> IoFuture<'_, Result<(), StorageError>>;

    /// Closes it and renames it to its real name.
    fn publish(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>>;
}

/// The record runner: see the [module](self) for the rule.
pub struct Recorder {
    config: RecordConfig,
    feed: Option<Arc<dyn FrameFeed>>,
    encoder: Arc<dyn EncodeExecutor>,
    sink: Arc<dyn RecordSink>,
    clock: Arc<dyn Clock>,
    cancel: Arc<CancelToken>,
}

impl Recorder {
    /// A run of `config`, encoding on `encoder` and writing to `sink`, timed by `clock`.
    pub fn new(
        config: RecordConfig,
        encoder: Arc<dyn EncodeExecutor>,
        sink: Arc<dyn RecordSink>,
        clock: Arc<dyn Clock>,
    ) -> Result<Recorder, String> {
        config.validate()?;
        Ok(Recorder { config, feed: None, encoder, sink, clock, cancel: Arc::default() })
    }

    /// The run, its frames taken from `feed` at their arrival (a frame not ready then is an
    /// `input` drop) and given to the encoder as they are, instead of rendered in the encode.
    pub fn with_feed(self, feed: Arc<dyn FrameFeed>) -> Recorder {
        Recorder { feed: Some(feed), ..self }
    }

    /// The token that stops the run (Ctrl-C): no frame arrives after it, and the run ends
    /// once the frames in flight are done.
    pub fn canceller(&self) -> Arc<CancelToken> {
        Arc::clone(&self.cancel)
    }

    /// The run, stopped by `cancel` instead of a token of its own: streams recorded at once
    /// share one, so that Ctrl-C, or a failed write with [`OnError::Stop`], stops them all.
    pub fn with_canceller(self, cancel: Arc<CancelToken>) -> Recorder {
        Recorder { cancel, ..self }
    }

    /// Runs every frame and returns their records. Must run inside a tokio runtime.
    pub async fn run(self) -> RecordRun {
        let Recorder { config, feed, encoder, sink, clock, cancel } = self;
        let origin = clock.now();
        let order = sink.ordered().then(Order::default);
        let shared = Arc::new(Shared {
            order,
            encoder,
            sink,
            clock: Arc::clone(&clock),
            origin,
            encoders: Arc::new(Semaphore::new(config.encoders as usize)),
            writers: Arc::new(Semaphore::new(config.writers as usize)),
            scratch: BufPool::new(),
            queued: Mutex::new(BTreeMap::new()),
            sync: config.sync,
            on_error: config.on_error,
            cancel: Arc::clone(&cancel),
        });
        let queue = Arc::new(Semaphore::new(config.queue as usize));
        let n = config.n_frames;
        let mut records: Vec<Option<RecordFrame>> = vec![None; usize::try_from(n).unwrap_or(0)];
        let mut tasks = JoinSet::new();
        let mut failure = None;
        let mut k = 0u64;
        while k < n && !cancel.is_cancelled() {
            let permit = match config.rate {
                Some(rate) => {
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => break,
                        _ = clock.sleep_until(origin + rate.due_offset(k)) => {}
                    }
                    Arc::clone(&queue).try_acquire_owned().ok()
                }
                None => match acquire(&queue, &cancel).await {
                    Some(permit) => {
                        if let Some(feed) = &feed {
                            tokio::select! {
                                biased;
                                _ = cancel.cancelled() => break,
                                _ = feed.wait_for(k) => {}
                            }
                        }
                        Some(permit)
                    }
                    None => break,
                },
            };
            let mut rec = RecordFrame { position: k, due_ns: shared.now_ns(), ..RecordFrame::default() };
            // The source's frame, when there is a source: not ready now is an input drop, whatever
            // the queue.
            let mut fed = None;
            if let Some(feed) = &feed {
                let mut frame = shared.scratch.get();
                if feed.take(k, &mut frame) {
                    fed = Some(frame);
                } else {
                    rec.cause = Some(RecordCause::Input);
                }
            }
            match permit {
                Some(permit) if rec.cause.is_none() => {
                    shared.mark(k, rec.due_ns, false);
                    tasks.spawn(Arc::clone(&shared).frame(rec, fed, permit));
                }
                _ => {
                    if rec.cause.is_none() {
                        rec.cause = Some(shared.charged_stage(rec.due_ns));
                    }
                    shared.done_with(k);
                    if let Some(slot) = usize::try_from(k).ok().and_then(|i| records.get_mut(i)) {
                        *slot = Some(rec);
                    }
                }
            }
            while let Some(done) = tasks.try_join_next() {
                keep(&mut records, &mut failure, done);
            }
            k += 1;
        }
        while let Some(done) = tasks.join_next().await {
            keep(&mut records, &mut failure, done);
        }
        if let Err(e) = shared.sink.finish().await {
            failure.get_or_insert(format!("cannot finish the recording: {}", e.message));
        }
        let mut end_sync_ns = None;
        if shared.sync == SyncPolicy::End {
            let start = shared.now_ns();
            let synced = shared.sink.sync_all().await;
            end_sync_ns = Some(shared.now_ns().saturating_sub(start));
            if let Err(e) = synced {
                failure.get_or_insert(format!("the end sync failed: {}", e.message));
            }
        }
        RecordRun {
            records: records.into_iter().flatten().collect(),
            end_ns: shared.now_ns(),
            end_sync_ns,
            interrupted: k < n,
            failure: cancel.failure().or(failure),
            encode_cpu_ns: duration_ns(shared.encoder.cpu_time()),
            input_cpu_ns: feed.as_ref().map_or(0, |f| duration_ns(f.cpu_time())),
            write_cpu_ns: duration_ns(shared.sink.cpu_time()),
        }
    }
}

/// When a queued frame arrived and left the encoder, in nanoseconds from the start.
#[derive(Clone, Copy, Debug)]
struct QueuedTimes {
    arrived_ns: u64,
    encoded_ns: Option<u64>,
}

/// The write order of an ordered sink ([`RecordSink::ordered`]): the next position to write,
/// and the later ones already done with (dropped, failed, or written).
#[derive(Default)]
struct Order {
    state: Mutex<(u64, std::collections::BTreeSet<u64>)>,
    turn: tokio::sync::Notify,
}

impl Order {
    /// Waits until every frame before `position` is done with.
    async fn wait_for_turn(&self, position: u64) {
        loop {
            let notified = self.turn.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).0 >= position {
                return;
            }
            notified.await;
        }
    }

    /// Notes that `position` is done with, and moves the turn past every position done.
    fn done_with(&self, position: u64) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (next, done) = &mut *state;
        if position < *next {
            return;
        }
        done.insert(position);
        while done.remove(next) {
            *next += 1;
        }
        drop(state);
        self.turn.notify_waiters();
    }
}

/// What the frame tasks share.
struct Shared {
    /// The write order, for an ordered sink.
    order: Option<Order>,
    encoder: Arc<dyn EncodeExecutor>,
    sink: Arc<dyn RecordSink>,
    clock: Arc<dyn Clock>,
    origin: Duration,
    encoders: Arc<Semaphore>,
    writers: Arc<Semaphore>,
    scratch: BufPool<DecodedFrame>,
    /// Every queued frame's times, by position.
    queued: Mutex<BTreeMap<u64, QueuedTimes>>,
    sync: SyncPolicy,
    on_error: OnError,
    cancel: Arc<CancelToken>,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        duration_ns(self.clock.now().saturating_sub(self.origin))
    }

    /// Notes that queued frame `position` entered the queue, or (with `encoded`) left the
    /// encoder, at `at_ns`.
    fn mark(&self, position: u64, at_ns: u64, encoded: bool) {
        let mut queued = self.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if encoded {
            if let Some(times) = queued.get_mut(&position) {
                times.encoded_ns = Some(at_ns);
            }
        } else {
            queued.insert(position, QueuedTimes { arrived_ns: at_ns, encoded_ns: None });
        }
    }

    /// Notes that frame `position` will not be written (again), for an ordered sink's turn.
    fn done_with(&self, position: u64) {
        if let Some(order) = &self.order {
            order.done_with(position);
        }
    }

    /// Takes frame `position` out of the queue.
    fn leave(&self, position: u64) {
        self.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&position);
    }

    /// The stage a frame arriving on a full queue at `now_ns` is charged to: the one in which
    /// the queued frames have spent the most time, added over them (see the module's rule).
    fn charged_stage(&self, now_ns: u64) -> RecordCause {
        let queued = self.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (mut encode, mut storage) = (0u64, 0u64);
        for times in queued.values() {
            let encoded = times.encoded_ns.unwrap_or(now_ns).min(now_ns);
            encode += encoded.saturating_sub(times.arrived_ns);
            storage += now_ns.saturating_sub(encoded);
        }
        if encode > storage {
            RecordCause::Encode
        } else {
            RecordCause::Storage
        }
    }

    /// One frame: an encoder, the encode, a writer, the write, the sync, the publish. Its
    /// queue slot is released when it is done.
    async fn frame(
        self: Arc<Self>,
        mut rec: RecordFrame,
        fed: Option<PooledBuf<DecodedFrame>>,
        queue_slot: OwnedSemaphorePermit,
    ) -> RecordFrame {
        let position = rec.position;
        let rec = async {
            let Ok(encoder) = Arc::clone(&self.encoders).acquire_owned().await else {
                return self.failed(rec, RecordCause::Encode, "no encoder was left to run it".into());
            };
            rec.encode_started_ns = Some(self.now_ns());
            let scratch = fed.unwrap_or_else(|| self.scratch.get());
            let job = EncodeJob { position, scratch, result: Err(String::new()) };
            let done = self.encoder.encode(job).await;
            rec.encoded_ns = Some(self.now_ns());
            drop(encoder);
            let bytes = match done.map(|job| job.result) {
                Some(Ok(bytes)) => bytes,
                Some(Err(e)) => return self.failed(rec, RecordCause::Encode, format!("cannot encode: {e}")),
                None => {
                    let why = "the encode worker was lost (an encoder panicked)".to_owned();
                    return self.failed(rec, RecordCause::Encode, why);
                }
            };
            if let Some(at) = rec.encoded_ns {
                self.mark(position, at, true);
            }
            if let Some(order) = &self.order {
                order.wait_for_turn(position).await;
            }
            let Ok(writer) = Arc::clone(&self.writers).acquire_owned().await else {
                return self.failed(rec, RecordCause::Storage, "no writer was left to run it".into());
            };
            rec.write_started_ns = Some(self.now_ns());
            rec.bytes = bytes.len() as u64;
            let stored = async {
                let written = self.sink.write(position, bytes).await;
                rec.written_ns = Some(self.now_ns());
                let file = written?;
                if self.sync == SyncPolicy::Frame {
                    file.sync().await?;
                    rec.synced_ns = Some(self.now_ns());
                }
                file.publish().await
            }
            .await;
            drop(writer);
            match stored {
                Ok(()) => {
                    rec.outcome = RecordOutcome::Written;
                    rec.done_ns = Some(self.now_ns());
                    rec
                }
                Err(e) => {
                    if self.on_error == OnError::Stop {
                        let name = self.sink.name(position);
                        self.cancel
                            .fail(format!("frame {position} ({name}): {} (--on-error stop)", e.message));
                    }
                    self.failed(rec, RecordCause::Storage, e.message)
                }
            }
        }
        .await;
        self.done_with(position);
        self.leave(position);
        drop(queue_slot);
        rec
    }

    fn failed(&self, mut rec: RecordFrame, cause: RecordCause, error: String) -> RecordFrame {
        rec.outcome = RecordOutcome::Failed;
        rec.cause = Some(cause);
        rec.done_ns = Some(self.now_ns());
        rec.error = Some(format!("frame {} ({}): {error}", rec.position, self.sink.name(rec.position)));
        rec
    }
}

impl Positioned for RecordFrame {
    fn position(&self) -> u64 {
        self.position
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use playsim_core::StorageErrorKind;

    use super::*;
    use crate::{JobFuture, TokioClock};

    const MS: Duration = Duration::from_millis(1);
    const MS_NS: u64 = 1_000_000;

    /// Encodes in `cost` of the clock's time (`slow` for the frames listed), 1000 bytes a frame.
    struct ScriptedEncoder {
        cost: Duration,
        slow: Vec<(u64, Duration)>,
        n_encoded: AtomicU64,
    }

    impl EncodeExecutor for ScriptedEncoder {
        fn encode(&self, job: EncodeJob) -> JobFuture<Option<EncodeJob>> {
            self.n_encoded.fetch_add(1, Ordering::Relaxed);
            let cost = self.slow.iter().find(|(k, _)| *k == job.position).map_or(self.cost, |(_, c)| *c);
            Box::pin(async move {
                tokio::time::sleep(cost).await;
                let mut job = job;
                // A fed frame (see ScriptedFeed) gives its width in bytes; a generated one 1000.
                let len = if job.scratch.width > 0 { job.scratch.width as usize } else { 1000 };
                job.result = Ok(Arc::from(vec![7u8; len]));
                Some(job)
            })
        }

        fn cpu_time(&self) -> Duration {
            self.cost * u32::try_from(self.n_encoded.load(Ordering::Relaxed)).unwrap_or(0)
        }
    }

    /// Writes in `cost` of the clock's time (`slow` for the frames listed; `fail` fails).
    struct ScriptedSink {
        cost: Duration,
        slow: Vec<(u64, Duration)>,
        fail: Vec<u64>,
        published: Mutex<Vec<u64>>,
        /// Whether it asks for its writes in order, as a clip does.
        ordered: bool,
        /// How many published frames there were when `finish` was called, each time.
        finished: Mutex<Vec<usize>>,
    }

    struct ScriptedFrame {
        position: u64,
        sink: Arc<ScriptedSink>,
    }

    impl RecordSink for Arc<ScriptedSink> {
        fn name(&self, position: u64) -> String {
            format!("frame.{position:07}.dpx")
        }

        fn write(
            &self,
            position: u64,
            _bytes: Arc<[u8]>,
        ) -> IoFuture<'_, Result<Box<dyn WrittenFrame>, StorageError>> {
            let cost = self.slow.iter().find(|(k, _)| *k == position).map_or(self.cost, |(_, c)| *c);
            Box::pin(async move {
                tokio::time::sleep(cost).await;
                if self.fail.contains(&position) {
                    return Err(StorageError::new(
                        StorageErrorKind::Io,
                        "No space left on device (os error 28)",
                    ));
                }
                Ok(Box::new(ScriptedFrame { position, sink: Arc::clone(self) }) as Box<dyn WrittenFrame>)
            })
        }

        fn sync_all(&self) -> IoFuture<'_, Result<(), StorageError>> {
            Box::pin(async move {
                tokio::time::sleep(50 * MS).await;
                Ok(())
            })
        }

        fn ordered(&self) -> bool {
            self.ordered
        }

        fn finish(&self) -> IoFuture<'_, Result<(), StorageError>> {
            let published = self.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len();
            self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(published);
            Box::pin(async { Ok(()) })
        }
    }

    impl WrittenFrame for ScriptedFrame {
        fn sync(&self) -> IoFuture<'_, Result<(), StorageError>> {
            Box::pin(async move {
                tokio::time::sleep(5 * MS).await;
                Ok(())
            })
        }

        fn publish(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>> {
            Box::pin(async move {
                self.sink
                    .published
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(self.position);
                Ok(())
            })
        }
    }

    fn config(n: u64, fps: Option<u32>, queue: u32) -> RecordConfig {
        RecordConfig {
            n_frames: n,
            rate: fps.map(|f| FrameRate::new(f, 1).expect("a valid rate")),
            queue,
            encoders: 1,
            writers: 1,
            sync: SyncPolicy::None,
            on_error: OnError::Stop,
        }
    }

    fn encoder(cost: Duration, slow: Vec<(u64, Duration)>) -> Arc<ScriptedEncoder> {
        Arc::new(ScriptedEncoder { cost, slow, n_encoded: AtomicU64::new(0) })
    }

    fn sink(cost: Duration, slow: Vec<(u64, Duration)>, fail: Vec<u64>) -> Arc<ScriptedSink> {
        Arc::new(ScriptedSink {
            cost,
            slow,
            fail,
            published: Mutex::default(),
            ordered: false,
            finished: Mutex::default(),
        })
    }

    async fn record(
        config: RecordConfig,
        encoder: Arc<ScriptedEncoder>,
        sink: Arc<ScriptedSink>,
    ) -> RecordRun {
        let sink: Arc<dyn RecordSink> = Arc::new(sink);
        Recorder::new(config, encoder, sink, Arc::new(TokioClock::new())).expect("valid settings").run().await
    }

    fn positions(run: &RecordRun, outcome: RecordOutcome, cause: Option<RecordCause>) -> Vec<u64> {
        let of = |r: &&RecordFrame| r.outcome == outcome && r.cause == cause;
        run.records.iter().filter(of).map(|r| r.position).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn an_encoder_and_storage_that_keep_up_write_every_frame_on_time() {
        // 25 fps (40 ms); encode 10 ms, write 20 ms: each frame is done 30 ms after it arrives.
        let (enc, out) = (encoder(10 * MS, vec![]), sink(20 * MS, vec![], vec![]));
        let run = record(config(25, Some(25), 2), enc, Arc::clone(&out)).await;
        assert_eq!(positions(&run, RecordOutcome::Written, None), (0..25).collect::<Vec<_>>());
        for r in &run.records {
            let due = r.position * 40 * MS_NS;
            assert_eq!(r.due_ns, due);
            assert_eq!((r.encode_started_ns, r.encoded_ns), (Some(due), Some(due + 10 * MS_NS)));
            assert_eq!((r.written_ns, r.done_ns), (Some(due + 30 * MS_NS), Some(due + 30 * MS_NS)));
            assert_eq!(r.bytes, 1000);
        }
        assert_eq!(out.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len(), 25);
        assert!(!run.interrupted && run.failure.is_none());
        assert_eq!(run.end_ns, 24 * 40 * MS_NS + 30 * MS_NS);
    }

    /// A source whose frames `missing` are not decoded in time; every other frame is given
    /// with its position + 100 as its width.
    struct ScriptedFeed {
        missing: Vec<u64>,
    }

    impl FrameFeed for ScriptedFeed {
        fn take(&self, position: u64, into: &mut DecodedFrame) -> bool {
            into.width = u32::try_from(position).unwrap_or(0) + 100;
            !self.missing.contains(&position)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_the_source_has_not_ready_is_an_input_drop_and_fed_frames_are_encoded() {
        let (enc, out) = (encoder(10 * MS, vec![]), sink(5 * MS, vec![], vec![]));
        let sink_dyn: Arc<dyn RecordSink> = Arc::new(Arc::clone(&out));
        let feed = Arc::new(ScriptedFeed { missing: vec![3, 4, 9] });
        let run = Recorder::new(config(12, Some(25), 4), enc, sink_dyn, Arc::new(TokioClock::new()))
            .expect("valid settings")
            .with_feed(feed)
            .run()
            .await;
        assert_eq!(positions(&run, RecordOutcome::Dropped, Some(RecordCause::Input)), [3, 4, 9]);
        assert_eq!(positions(&run, RecordOutcome::Written, None).len(), 9);
        // The encoder got the source's frame, not a rendered one.
        assert!(run
            .records
            .iter()
            .filter(|r| r.outcome == RecordOutcome::Written)
            .all(|r| r.bytes == r.position + 100));
    }

    #[tokio::test(start_paused = true)]
    async fn an_ordered_sink_gets_its_frames_in_order_past_slow_encodes_and_drops() {
        // A clip: 2 encoders, frame 2's encode takes 150 ms, so frames 3 and 4 are encoded
        // first and wait for their turn, and the queue of 3 fills: frames that arrive then are
        // dropped, and the turn moves past them. Every write comes in position order, and
        // `finish` comes once, after the last.
        let mut cfg = config(20, Some(25), 3);
        (cfg.encoders, cfg.writers) = (2, 2);
        let out = Arc::new(ScriptedSink {
            ordered: true,
            ..Arc::into_inner(sink(5 * MS, vec![], vec![])).expect("one owner")
        });
        let run = record(cfg, encoder(10 * MS, vec![(2, 150 * MS)]), Arc::clone(&out)).await;
        let published = out.published.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        assert!(published.windows(2).all(|w| w[0] < w[1]), "{published:?}");
        let dropped = positions(&run, RecordOutcome::Dropped, Some(RecordCause::Encode));
        let dropped_storage = positions(&run, RecordOutcome::Dropped, Some(RecordCause::Storage));
        assert!(!dropped.is_empty() || !dropped_storage.is_empty(), "nothing dropped");
        assert_eq!(published.len() + dropped.len() + dropped_storage.len(), 20);
        assert_eq!(published.last(), Some(&19));
        assert_eq!(
            *out.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
            [published.len()]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_write_costs_storage_drops_once_the_queue_is_full() {
        // Frame 5's write takes 300 ms. A queue of 3: frames 6 and 7 queue behind it (encoded,
        // waiting for the one writer); frames 8 to 12 arrive on a full queue, whose oldest frame
        // (5) is in storage. Frame 5 is done at 200 + 10 + 300 = 510 ms; 6 and 7 follow, 20 ms
        // each, and frame 13 (520 ms) finds room.
        let (enc, out) = (encoder(10 * MS, vec![]), sink(20 * MS, vec![(5, 300 * MS)], vec![]));
        let run = record(config(20, Some(25), 3), enc, out).await;
        assert_eq!(positions(&run, RecordOutcome::Dropped, Some(RecordCause::Storage)), [8, 9, 10, 11, 12]);
        assert!(positions(&run, RecordOutcome::Dropped, Some(RecordCause::Encode)).is_empty());
        assert_eq!(positions(&run, RecordOutcome::Written, None).len(), 15);
        let dropped = &run.records[8];
        assert_eq!((dropped.due_ns, dropped.encode_started_ns, dropped.bytes), (320 * MS_NS, None, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn an_encoder_slower_than_the_rate_costs_encode_drops() {
        // One encoder of 100 ms at 25 fps, a queue of 2, writes of 5 ms: the oldest queued frame
        // is always in the encoder when a frame finds the queue full.
        let (enc, out) = (encoder(100 * MS, vec![]), sink(5 * MS, vec![], vec![]));
        let run = record(config(30, Some(25), 2), enc, out).await;
        let encode_drops = positions(&run, RecordOutcome::Dropped, Some(RecordCause::Encode));
        assert!(!encode_drops.is_empty());
        assert!(positions(&run, RecordOutcome::Dropped, Some(RecordCause::Storage)).is_empty());
        let written = positions(&run, RecordOutcome::Written, None).len();
        assert_eq!(written + encode_drops.len(), 30);
        // The encoder never idles once the queue fills: 100 ms a frame, so 12 written in 1.2 s.
        assert!((11..=13).contains(&written), "{written} written");
    }

    #[tokio::test(start_paused = true)]
    async fn encoders_too_slow_for_the_rate_are_charged_even_when_the_oldest_frame_is_writing() {
        // The 4K DCI DPX recording of this machine: 2 encoders of 104 ms (19 fps at most), 2
        // writers of 57 ms (35 fps), a queue of 4, 24 fps. When the queue is full its oldest frame
        // is usually being written, but 104 of each frame's ~170 ms in the queue are encode's.
        let mut cfg = config(48, Some(24), 4);
        (cfg.encoders, cfg.writers) = (2, 2);
        let run = record(cfg, encoder(104 * MS, vec![]), sink(57 * MS, vec![], vec![])).await;
        let encode_drops = positions(&run, RecordOutcome::Dropped, Some(RecordCause::Encode));
        assert!(encode_drops.len() >= 5, "{encode_drops:?}");
        assert!(positions(&run, RecordOutcome::Dropped, Some(RecordCause::Storage)).is_empty());
        // When each drop came, the oldest queued frame was in storage at least once.
        let writing_at_a_drop = encode_drops.iter().any(|&k| {
            let due = run.records[k as usize].due_ns;
            let oldest =
                run.records.iter().find(|r| r.outcome == RecordOutcome::Written && r.done_ns > Some(due));
            oldest.is_some_and(|r| r.encoded_ns <= Some(due))
        });
        assert!(writing_at_a_drop);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_write_stops_the_run_by_default_and_not_with_continue() {
        let run =
            record(config(20, Some(25), 2), encoder(10 * MS, vec![]), sink(20 * MS, vec![], vec![4])).await;
        assert_eq!(positions(&run, RecordOutcome::Failed, Some(RecordCause::Storage)), [4]);
        let failure = run.failure.clone().unwrap_or_default();
        assert!(
            failure.contains("frame 4 (frame.0000004.dpx)") && failure.contains("os error 28"),
            "{failure}"
        );
        assert!(run.interrupted && run.records.len() < 20);
        let error = run.records[4].error.clone().unwrap_or_default();
        assert!(error.starts_with("frame 4 (frame.0000004.dpx): No space left"), "{error}");

        let go_on = RecordConfig { on_error: OnError::Continue, ..config(20, Some(25), 2) };
        let run = record(go_on, encoder(10 * MS, vec![]), sink(20 * MS, vec![], vec![4])).await;
        assert_eq!(positions(&run, RecordOutcome::Written, None).len(), 19);
        assert!(!run.interrupted && run.failure.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn sync_per_frame_is_timed_and_sync_at_the_end_once() {
        let per_frame = RecordConfig { sync: SyncPolicy::Frame, ..config(4, Some(25), 2) };
        let run = record(per_frame, encoder(10 * MS, vec![]), sink(20 * MS, vec![], vec![])).await;
        for r in &run.records {
            assert_eq!(r.synced_ns.zip(r.written_ns).map(|(s, w)| s - w), Some(5 * MS_NS));
        }
        let at_end = RecordConfig { sync: SyncPolicy::End, ..config(4, Some(25), 2) };
        let run = record(at_end, encoder(10 * MS, vec![]), sink(20 * MS, vec![], vec![])).await;
        assert_eq!(run.end_sync_ns, Some(50 * MS_NS));
        assert!(run.records.iter().all(|r| r.synced_ns.is_none()));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_rate_frames_arrive_as_the_queue_takes_them_and_none_drops() {
        let run = record(config(10, None, 2), encoder(10 * MS, vec![]), sink(20 * MS, vec![], vec![])).await;
        assert_eq!(positions(&run, RecordOutcome::Written, None).len(), 10);
        // The writer is the bottleneck: 10 writes of 20 ms after the first encode.
        assert_eq!(run.end_ns, 10 * MS_NS + 10 * 20 * MS_NS);
    }

    #[test]
    fn settings_out_of_range_are_refused_with_an_example() {
        let err = RecordConfig { queue: 0, ..config(10, None, 2) }.validate().unwrap_err();
        assert_eq!(err, "-q 0 is out of range: 1 to 4096 (for example -q 4)");
        assert!(config(0, None, 2).validate().unwrap_err().contains("--frames 240"));
    }
}
