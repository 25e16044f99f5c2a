//! Where the decode and output work runs: real thread pools, or scripted costs in tests.
//!
//! The engine owns the queues and the concurrency limits (semaphores); an
//! executor only runs one job per call. So the same scheduling and drop
//! attribution serve real decoders and a synthetic decoder under a paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use playsim_core::{BufPool, DecodeError, DecodedFrame, Decoder, InOrderDecoder, IoBuf, PooledBuf};

use crate::probe::thread_cpu_now;
use crate::v210;

/// A boxed future of an executor.
pub type JobFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One frame to decode, with the buffers it reads from and writes into.
pub struct DecodeJob {
    /// Position of the frame in its stream.
    pub frame_idx: u64,
    /// The decoder for the frame's format.
    pub decoder: Arc<dyn Decoder>,
    /// The encoded bytes.
    pub encoded: PooledBuf<IoBuf>,
    /// Where the canonical pixels go.
    pub decoded: PooledBuf<DecodedFrame>,
    /// Set by the executor.
    pub result: Result<(), DecodeError>,
}

/// One packet of a long-GOP stream, fed to the stream's own decoder in decode order.
pub struct InOrderJob {
    /// Position of the packet's frame in its stream.
    pub frame_idx: u64,
    /// The stream's decoder; one job at a time uses it.
    pub decoder: Arc<Mutex<Box<dyn InOrderDecoder>>>,
    /// The packet's bytes, or why they could not be read.
    pub encoded: Result<PooledBuf<IoBuf>, String>,
    /// After this packet, drain the decoder and reset it (the source's last packet, or the run's).
    pub end_of_stream: bool,
    /// Before this packet, a keyframe, drain the decoder and reset it: the stream skipped the
    /// rest of a GOP it could not decode in time.
    pub restart: bool,
    /// Set by the executor with `restart`: the pictures the drain gave, for frames fed before
    /// the skip, in presentation order.
    pub drained: Vec<Result<PooledBuf<DecodedFrame>, String>>,
    /// Where the pictures' buffers come from.
    pub pool: BufPool<DecodedFrame>,
    /// Set by the executor: the pictures that came out, in presentation order, an
    /// error standing in for each picture that could not be decoded.
    pub pictures: Vec<Result<PooledBuf<DecodedFrame>, String>>,
}

impl InOrderJob {
    /// Feeds the packet (and, at the end of the stream, the drain) and collects the pictures.
    pub fn run(&mut self) {
        let decoder = Arc::clone(&self.decoder);
        let mut decoder = decoder.lock().unwrap_or_else(|p| p.into_inner());
        if self.restart {
            if let Err(e) = decoder.send(None) {
                self.pictures.push(Err(e.to_string()));
            }
            self.receive_all(decoder.as_mut());
            self.drained = std::mem::take(&mut self.pictures);
            decoder.reset();
        }
        match &self.encoded {
            Ok(packet) => {
                if let Err(e) = decoder.send(Some(packet)) {
                    self.pictures.push(Err(e.to_string()));
                }
            }
            Err(e) => self.pictures.push(Err(e.clone())),
        }
        self.receive_all(decoder.as_mut());
        if self.end_of_stream {
            if let Err(e) = decoder.send(None) {
                self.pictures.push(Err(e.to_string()));
            }
            self.receive_all(decoder.as_mut());
            decoder.reset();
        }
    }

    fn receive_all(&mut self, decoder: &mut dyn InOrderDecoder) {
        loop {
            let mut picture = self.pool.get();
            match decoder.receive(&mut picture) {
                Ok(true) => self.pictures.push(Ok(picture)),
                Ok(false) => return,
                Err(e) => return self.pictures.push(Err(e.to_string())),
            }
        }
    }
}

/// One frame through the output stage.
pub struct OutputJob {
    /// Position of the frame in its stream.
    pub frame_idx: u64,
    /// The decoded frame.
    pub decoded: PooledBuf<DecodedFrame>,
    /// Where the output (v210) bytes go: a buffer of the stream's encoded pool, taken once
    /// the frame's encoded bytes went back there (a v210 frame is smaller than the frame it
    /// was decoded from), so one pool holds both and stays within the prefetch window.
    pub packed: PooledBuf<IoBuf>,
}

/// Runs decode jobs.
pub trait DecodeExecutor: Send + Sync + 'static {
    /// Decodes one frame; the job comes back with its result, or `None` if the
    /// worker was lost (a decoder that panicked), which the engine counts as unreadable.
    fn decode(&self, job: DecodeJob) -> JobFuture<Option<DecodeJob>>;
    /// Feeds one packet to a long-GOP stream's decoder ([`InOrderJob::run`]); `None` if the
    /// worker was lost.
    fn decode_in_order(&self, job: InOrderJob) -> JobFuture<Option<InOrderJob>>;
    /// CPU time spent decoding so far.
    fn cpu_time(&self) -> Duration;
}

/// Runs output jobs.
pub trait OutputExecutor: Send + Sync + 'static {
    /// Does one frame's output work; `None` if the worker was lost.
    fn output(&self, job: OutputJob) -> JobFuture<Option<OutputJob>>;
    /// CPU time spent on output so far.
    fn cpu_time(&self) -> Duration;
}

type Task = Box<dyn FnOnce() + Send + 'static>;

/// A fixed set of named OS threads running jobs from one queue, timing each job's thread CPU.
struct WorkerPool {
    sender: Mutex<Option<mpsc::Sender<Task>>>,
    cpu_ns: Arc<AtomicU64>,
}

impl WorkerPool {
    fn new(name: &str, n_threads: u32) -> std::io::Result<WorkerPool> {
        let (sender, receiver) = mpsc::channel::<Task>();
        let receiver = Arc::new(Mutex::new(receiver));
        for i in 0..n_threads.max(1) {
            let receiver = Arc::clone(&receiver);
            std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || loop {
                let task = match receiver.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                match task {
                    // A panicking job loses only itself: its reply channel is dropped
                    // and the engine counts the frame as unreadable.
                    Ok(task) => {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                    }
                    Err(_) => return,
                }
            })?;
        }
        Ok(WorkerPool { sender: Mutex::new(Some(sender)), cpu_ns: Arc::default() })
    }

    /// Runs `work` on a worker and resolves to its result; `None` if the pool is gone.
    fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> JobFuture<Option<T>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let cpu_ns = Arc::clone(&self.cpu_ns);
        let task: Task = Box::new(move || {
            let start = thread_cpu_now();
            let out = work();
            let spent = thread_cpu_now().saturating_sub(start);
            cpu_ns.fetch_add(u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
            let _ = tx.send(out);
        });
        let sent = self.sender.lock().ok().and_then(|s| s.as_ref().map(|s| s.send(task).is_ok()));
        Box::pin(async move {
            if sent != Some(true) {
                return None;
            }
            rx.await.ok()
        })
    }

    fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed))
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Closing the channel ends the workers once their current job is done.
        if let Ok(mut s) = self.sender.lock() {
            s.take();
        }
    }
}

/// The real decode pool: `n` threads calling each frame's [`Decoder`].
pub struct DecodePool {
    pool: WorkerPool,
}

impl DecodePool {
    /// Starts `n_threads` decode threads.
    pub fn new(n_threads: u32) -> std::io::Result<DecodePool> {
        Ok(DecodePool { pool: WorkerPool::new("decode", n_threads)? })
    }
}

impl DecodeExecutor for DecodePool {
    fn decode(&self, job: DecodeJob) -> JobFuture<Option<DecodeJob>> {
        self.pool.run(move || {
            let mut job = job;
            job.result = job.decoder.decode(&job.encoded, &mut job.decoded);
            job
        })
    }

    fn decode_in_order(&self, job: InOrderJob) -> JobFuture<Option<InOrderJob>> {
        self.pool.run(move || {
            let mut job = job;
            job.run();
            job
        })
    }

    fn cpu_time(&self) -> Duration {
        self.pool.cpu_time()
    }
}

/// Makes frame `position`'s file bytes for record mode: renders its input (the generator's
/// picture with the frame's number in it, standing in for a capture card's frame) into
/// `scratch` and encodes it into `out` (cleared first).
pub trait FrameMaker: Send + Sync + 'static {
    /// Renders and encodes frame `position`; the error says why, for the frame's record.
    fn make(&self, position: u64, scratch: &mut DecodedFrame, out: &mut Vec<u8>) -> Result<(), String>;
}

/// One frame to encode in record mode.
pub struct EncodeJob {
    /// Position of the frame in the run.
    pub position: u64,
    /// Scratch for the rendered input.
    pub scratch: PooledBuf<DecodedFrame>,
    /// The encoded file's bytes, set by the executor.
    pub result: Result<Arc<[u8]>, String>,
}

/// Runs record mode's encodes: a pool of threads, or scripted costs in tests.
pub trait EncodeExecutor: Send + Sync + 'static {
    /// Encodes one frame; `None` if the worker was lost (the encoder panicked).
    fn encode(&self, job: EncodeJob) -> JobFuture<Option<EncodeJob>>;
    /// CPU time the encodes have taken so far.
    fn cpu_time(&self) -> Duration;
}

/// The real encode pool: `n` threads calling a [`FrameMaker`].
pub struct EncodePool {
    pool: WorkerPool,
    maker: Arc<dyn FrameMaker>,
}

impl EncodePool {
    /// Starts `n_threads` encode threads making frames with `maker`.
    pub fn new(n_threads: u32, maker: Arc<dyn FrameMaker>) -> std::io::Result<EncodePool> {
        Ok(EncodePool { pool: WorkerPool::new("encode", n_threads)?, maker })
    }
}

impl EncodeExecutor for EncodePool {
    fn encode(&self, job: EncodeJob) -> JobFuture<Option<EncodeJob>> {
        let maker = Arc::clone(&self.maker);
        self.pool.run(move || {
            let mut job = job;
            let mut out = Vec::new();
            job.result = maker.make(job.position, &mut job.scratch, &mut out).map(|()| Arc::from(out));
            job
        })
    }

    fn cpu_time(&self) -> Duration {
        self.pool.cpu_time()
    }
}

/// The real output stage: v210 packing on `n` threads (one per stream).
pub struct V210Output {
    pool: WorkerPool,
}

impl V210Output {
    /// Starts `n_threads` output threads.
    pub fn new(n_threads: u32) -> std::io::Result<V210Output> {
        Ok(V210Output { pool: WorkerPool::new("output", n_threads)? })
    }
}

impl OutputExecutor for V210Output {
    fn output(&self, job: OutputJob) -> JobFuture<Option<OutputJob>> {
        self.pool.run(move || {
            let mut job = job;
            v210::pack(&job.decoded, &mut job.packed);
            job
        })
    }

    fn cpu_time(&self) -> Duration {
        self.pool.cpu_time()
    }
}
