//! frametest's paced runner: frames issued on the clock, I/Os bounded by threads, and
//! frametest's drop rule (a frame that falls due while the queue is full is skipped).
//!
//! This is not the playback pipeline of [`Simulation`](crate::Simulation): there is no
//! presenter and no deadline at the end of a frame. It measures what frametest measures,
//! with frametest's rule, on the engine's injectable clock.
//!
//! The rule, for a run of `n` frames at positions `k = 0..n`:
//! - `threads` (`-t`) is the most frame I/Os (open, transfer, close) in flight at once;
//! - `queue` (`-q`) is the most frames *queued*: issued and not yet completed. A frame is
//!   completed when it is closed, or, when the run decodes, when it is decoded. Queued
//!   frames beyond `threads` wait for a thread;
//! - with a rate (`-f`): the first `preroll` frames (`-b`) are issued at once, each as soon
//!   as the queue has room, and `t0` is the time the last of them completes. Frame `k`
//!   (`k >= preroll`) falls due at `t0 + rate.due_offset(k)`, computed from `k` each time.
//!   At its due time it is issued if the queue has room, else it is skipped and counted as
//!   **dropped**, never issued later. That is frametest's rule, not playsim's deadline rule:
//!   a frame that is issued is never dropped, however late it completes;
//! - without a rate, frames are issued in order as fast as the queue allows (no preroll,
//!   `t0` is the start) and none is dropped.
//!
//! The order maps a position to a file index: forward `0, 1, ..`, reverse, or a repeatable
//! shuffle; with more frames than files the order starts again (`-l`).
//!
//! Every timestamp is read from the [`Clock`] by this module, around the calls into
//! [`FrameIo`], so reads through a [`Storage`] and the facade's writes are timed the same way.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{
    frame_len, whole_read, BufPool, Clock, DecodedFrame, Decoder, FrameRate, IoBuf, Storage, StorageError,
    StorageErrorKind, StorageFile,
};
/// The run's records are the report model's: the engine fills them, the report renders them.
pub use playsim_report::frametest::{FrameOutcome, FrameRecord, FrametestRun};
use playsim_report::frametest::{FrameSize, NamePattern};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::cancel::CancelToken;
use crate::exec::{DecodeExecutor, DecodeJob};

/// The most frames one run may have (`-n`): every frame keeps a record of its times.
pub const MAX_FRAMETEST_FRAMES: u64 = 1_000_000;
/// The most threads, and frames queued, a frametest run takes: each queued frame is a task
/// with its buffer, each thread an OS thread (frametest's own `-t` stops at the same).
pub const MAX_FRAMETEST_THREADS: u64 = 4096;

/// A boxed future of a [`FrameIo`] call.
pub type IoFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One direction of frametest's I/O: reading frame files, or writing them.
///
/// The runner calls `open`, [`FrameFile::transfer`] and [`FrameFile::close`] on a thread
/// slot and times each call, so an implementation never reads the clock.
pub trait FrameIo: Send + Sync + 'static {
    /// The name of the file with index `file_idx`, for messages (its path).
    fn name(&self, file_idx: u64) -> String;

    /// Opens (to read) or creates (to write) the file with index `file_idx`.
    fn open(&self, file_idx: u64) -> IoFuture<'_, Result<Box<dyn FrameFile>, StorageError>>;
}

/// An open frame file.
pub trait FrameFile: Send + Sync {
    /// Moves the frame's bytes: reads the whole file into `buf`, or writes the frame (and
    /// leaves `buf` alone). Returns the bytes moved.
    fn transfer<'a>(&'a self, buf: &'a mut IoBuf) -> IoFuture<'a, Result<u64, StorageError>>;

    /// Closes the file.
    fn close(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>>;
}

/// Reads whole files through a [`Storage`]: file index `i` is `paths[i]`.
pub struct StorageReads {
    storage: Arc<dyn Storage>,
    paths: Vec<PathBuf>,
}

impl StorageReads {
    /// Reads `paths` (by file index) from `storage`.
    pub fn new(storage: Arc<dyn Storage>, paths: Vec<PathBuf>) -> StorageReads {
        StorageReads { storage, paths }
    }
}

impl FrameIo for StorageReads {
    fn name(&self, file_idx: u64) -> String {
        self.path(file_idx).map_or_else(|| format!("file index {file_idx}"), |p| p.display().to_string())
    }

    fn open(&self, file_idx: u64) -> IoFuture<'_, Result<Box<dyn FrameFile>, StorageError>> {
        Box::pin(async move {
            let path = self.path(file_idx).ok_or_else(|| {
                StorageError::new(
                    StorageErrorKind::NotFound,
                    format!("file index {file_idx} is past the {} files of the run", self.paths.len()),
                )
            })?;
            let file = self.storage.open(path).await?;
            Ok(Box::new(ReadFile { file, path: path.clone() }) as Box<dyn FrameFile>)
        })
    }
}

impl StorageReads {
    fn path(&self, file_idx: u64) -> Option<&PathBuf> {
        usize::try_from(file_idx).ok().and_then(|i| self.paths.get(i))
    }
}

struct ReadFile {
    file: Box<dyn StorageFile>,
    path: PathBuf,
}

impl FrameFile for ReadFile {
    fn transfer<'a>(&'a self, buf: &'a mut IoBuf) -> IoFuture<'a, Result<u64, StorageError>> {
        Box::pin(async move {
            let size = self.file.size();
            let len = frame_len(&self.path, size)?;
            let n = self.file.read_at(0, len, buf).await?;
            whole_read(&self.path, 0, n, size)
        })
    }

    fn close(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>> {
        Box::pin(async move { self.file.close().await })
    }
}

/// The order files are visited in (`-v` reverse, `-m` random).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrametestOrder {
    /// File 0, 1, 2, ...
    #[default]
    Forward,
    /// The last file first.
    Reverse,
    /// A shuffle of the files, the same for the same seed (the shuffle `play --order random`
    /// uses, so the same seed visits the same order). With a loop every pass repeats it.
    Random {
        /// The shuffle's seed.
        seed: u64,
    },
}

/// The settings of a run, in frametest's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrametestConfig {
    /// Frames to transfer in all (`-n`), dropped ones included.
    pub n_frames: u64,
    /// Files the order runs through; fewer than `n_frames` loops over them (`-l`).
    pub n_files: u64,
    /// The order of the files.
    pub order: FrametestOrder,
    /// Frame I/Os in flight at once (`-t`).
    pub threads: u32,
    /// The rate frames fall due at (`-f`); `None` issues them as fast as the queue allows.
    pub rate: Option<FrameRate>,
    /// Frames queued (issued, not completed) at most (`-q`).
    pub queue: u32,
    /// Frames completed before the clock starts (`-b`), with a rate only.
    pub preroll: u32,
}

impl FrametestConfig {
    /// Checks the settings; the error names the field at fault, for the front end to
    /// name as the user spelled it.
    pub fn validate(&self) -> Result<(), FrametestError> {
        if self.n_frames == 0 || self.n_frames > MAX_FRAMETEST_FRAMES {
            return Err(FrametestError::OutOfRange {
                field: FrametestField::Frames,
                value: self.n_frames,
                min: 1,
                max: MAX_FRAMETEST_FRAMES,
            });
        }
        if self.n_files == 0 {
            return Err(FrametestError::NoFiles);
        }
        for (field, value) in [(FrametestField::Threads, self.threads), (FrametestField::Queue, self.queue)] {
            if value == 0 {
                return Err(FrametestError::Zero { field });
            }
            if u64::from(value) > MAX_FRAMETEST_THREADS {
                return Err(FrametestError::OutOfRange {
                    field,
                    value: u64::from(value),
                    min: 1,
                    max: MAX_FRAMETEST_THREADS,
                });
            }
        }
        Ok(())
    }

    /// The file indices of one pass over the files, in the run's order.
    pub fn file_order(&self) -> Vec<u64> {
        let mut files: Vec<u64> = (0..self.n_files.min(MAX_FRAMETEST_FRAMES)).collect();
        match self.order {
            FrametestOrder::Forward => {}
            FrametestOrder::Reverse => files.reverse(),
            FrametestOrder::Random { seed } => playsim_core::shuffle(&mut files, seed),
        }
        files
    }
}

/// A setting of [`FrametestConfig`], named for messages; a front end names it as its user
/// spells it (frametest's command line as `-n`, `-t`, `-q`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrametestField {
    /// [`FrametestConfig::n_frames`].
    Frames,
    /// [`FrametestConfig::threads`].
    Threads,
    /// [`FrametestConfig::queue`].
    Queue,
}

impl FrametestField {
    /// The field's name in [`FrametestConfig`].
    pub fn name(self) -> &'static str {
        match self {
            FrametestField::Frames => "n_frames",
            FrametestField::Threads => "threads",
            FrametestField::Queue => "queue",
        }
    }

    /// A valid value, for messages.
    pub fn example(self) -> u64 {
        match self {
            FrametestField::Frames => 2000,
            FrametestField::Threads | FrametestField::Queue => 4,
        }
    }

    /// What its value counts: `frame`, `thread`.
    fn unit(self) -> &'static str {
        match self {
            FrametestField::Threads => "thread",
            FrametestField::Frames | FrametestField::Queue => "frame",
        }
    }
}

/// Settings a run cannot have. [`Display`](std::fmt::Display) names the field as
/// [`FrametestField::name`] does; [`FrametestError::message_with`] names it as the front end
/// spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrametestError {
    /// A count of 0 where at least 1 is needed.
    Zero {
        /// The field.
        field: FrametestField,
    },
    /// A count outside `min..=max`.
    OutOfRange {
        /// The field.
        field: FrametestField,
        /// The value given.
        value: u64,
        /// The smallest it may be.
        min: u64,
        /// The largest it may be.
        max: u64,
    },
    /// There are no files to go over.
    NoFiles,
}

impl FrametestError {
    /// The message with each field named by `spell` (as a flag, on the command line), and
    /// a valid example.
    pub fn message_with(&self, spell: impl Fn(FrametestField) -> String) -> String {
        match *self {
            FrametestError::Zero { field } => {
                let name = spell(field);
                format!("{name} must be at least 1 {} (for example {name} {})", field.unit(), field.example())
            }
            FrametestError::OutOfRange { field, value, min, max } => {
                let name = spell(field);
                format!(
                    "{name} {value} is out of range: {min} to {max} {}s (for example {name} {})",
                    field.unit(),
                    field.example()
                )
            }
            FrametestError::NoFiles => {
                format!(
                    "there are no files to transfer (for example {} 24 with 24 files)",
                    spell(FrametestField::Frames)
                )
            }
        }
    }
}

impl std::fmt::Display for FrametestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message_with(|field| field.name().to_owned()))
    }
}

impl std::error::Error for FrametestError {}

/// The frame files a read goes over, found in a directory's listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameFiles {
    /// Their names.
    pub pattern: NamePattern,
    /// Frames to read (`n_frames` as asked, or one per file found).
    pub n_frames: u64,
    /// The files, by index: file 0 up to as many as the run needs (a loop reads them again).
    pub names: Vec<String>,
    /// Their size: the one asked for, else the size all of them share when it is one of
    /// frametest's; `None` when they differ.
    pub size: Option<FrameSize>,
}

/// Why a listing holds no frames to read. [`Display`](std::fmt::Display) names no flag; a
/// front end words it for its user.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameFilesError {
    /// No pattern was given and neither of frametest's first files is there.
    NoFrametestFrames,
    /// The pattern's file 0 is not there.
    NoFirstFrame {
        /// Its name.
        name: String,
    },
    /// More frames are asked for than there are files, without a loop.
    TooFew {
        /// Files found, from file 0 on.
        n_found: u64,
        /// Frames asked for.
        n_frames: u64,
        /// The first file's name.
        first: String,
        /// The last file's name.
        last: String,
    },
    /// A file does not have the size asked for.
    WrongSize {
        /// The file.
        name: String,
        /// Its size.
        bytes: u64,
        /// The size asked for.
        expected: FrameSize,
    },
}

impl std::fmt::Display for FrameFilesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameFilesError::NoFrametestFrames => {
                f.write_str("no frametest frames (frame000000.dpx or frame000000.tst)")
            }
            FrameFilesError::NoFirstFrame { name } => write!(f, "no {name} for frame 0"),
            FrameFilesError::TooFew { n_found, n_frames, first, last } => {
                write!(f, "{n_found} frames ({first} to {last}) and {n_frames} asked for")
            }
            FrameFilesError::WrongSize { name, bytes, expected } => {
                write!(f, "{name} is {bytes} bytes, not the {} of {}", expected.file_bytes, expected.name)
            }
        }
    }
}

impl std::error::Error for FrameFilesError {}

impl FrameFiles {
    /// The files of a read among `listing` (file name → size): named by `pattern`, else by
    /// playsim's or frametest's own names, whichever has file 0; numbered from 0 up to the
    /// first gap. `n_frames` (default: one per file) may exceed the files only with
    /// `loop_files`; with `expect`, every file read must have its size.
    pub fn find(
        listing: &HashMap<String, u64>,
        pattern: Option<&NamePattern>,
        n_frames: Option<u64>,
        loop_files: bool,
        expect: Option<&FrameSize>,
    ) -> Result<FrameFiles, FrameFilesError> {
        let pattern = match pattern {
            Some(p) => p.clone(),
            None => [NamePattern::playsim(), NamePattern::frametest()]
                .into_iter()
                .find(|p| listing.contains_key(&p.name(0)))
                .ok_or(FrameFilesError::NoFrametestFrames)?,
        };
        let n_found = (0u64..).take_while(|&i| listing.contains_key(&pattern.name(i))).count() as u64;
        if n_found == 0 {
            return Err(FrameFilesError::NoFirstFrame { name: pattern.name(0) });
        }
        let n = n_frames.unwrap_or(n_found);
        if n > n_found && !loop_files {
            let (first, last) = (pattern.name(0), pattern.name(n_found - 1));
            return Err(FrameFilesError::TooFew { n_found, n_frames: n, first, last });
        }
        let names: Vec<String> = (0..n.min(n_found)).map(|i| pattern.name(i)).collect();
        let size_of = |name: &String| listing.get(name).copied().unwrap_or(0);
        if let Some(expected) = expect {
            if let Some(name) = names.iter().find(|name| size_of(name) != expected.file_bytes) {
                let (name, bytes, expected) = (name.clone(), size_of(name), expected.clone());
                return Err(FrameFilesError::WrongSize { name, bytes, expected });
            }
        }
        let first_size = names.first().map_or(0, size_of);
        let size = expect.cloned().or_else(|| {
            names
                .iter()
                .all(|name| size_of(name) == first_size)
                .then(|| FrameSize::guess(first_size))
                .flatten()
        });
        Ok(FrameFiles { pattern, n_frames: n, names, size })
    }
}

/// What the run does with a frame's bytes after reading them (`--decode`).
#[derive(Clone)]
pub struct FrametestDecode {
    /// The decoder of the files' format.
    pub decoder: Arc<dyn Decoder>,
    /// Where decodes run (a [`DecodePool`](crate::DecodePool), or a scripted one in tests).
    pub executor: Arc<dyn DecodeExecutor>,
}

/// frametest's runner: see the [module](self) for the rule.
pub struct Frametest {
    config: FrametestConfig,
    io: Arc<dyn FrameIo>,
    clock: Arc<dyn Clock>,
    decode: Option<FrametestDecode>,
    cancel: Arc<CancelToken>,
}

impl Frametest {
    /// A run of `config` over `io`, timed by `clock`; the settings are checked first.
    pub fn new(
        config: FrametestConfig,
        io: Arc<dyn FrameIo>,
        clock: Arc<dyn Clock>,
    ) -> Result<Frametest, FrametestError> {
        config.validate()?;
        Ok(Frametest { config, io, clock, decode: None, cancel: Arc::default() })
    }

    /// Decodes every frame read, after its I/O and before it completes (`--decode`).
    pub fn decode(mut self, decode: FrametestDecode) -> Frametest {
        self.decode = Some(decode);
        self
    }

    /// The token that stops the run (Ctrl-C): no frame is issued after it, and the run
    /// ends once the frames in flight complete.
    pub fn canceller(&self) -> Arc<CancelToken> {
        Arc::clone(&self.cancel)
    }

    /// Runs every frame and returns their records. Must run inside a tokio runtime.
    pub async fn run(self) -> FrametestRun {
        let Frametest { config, io, clock, decode, cancel } = self;
        let origin = clock.now();
        let order = config.file_order();
        let pass = order.len() as u64;
        let file_of =
            |k: u64| usize::try_from(k % pass).ok().and_then(|i| order.get(i).copied()).unwrap_or(0);
        let shared = Arc::new(Shared {
            io,
            decode,
            clock: Arc::clone(&clock),
            origin,
            threads: Arc::new(Semaphore::new(config.threads as usize)),
            encoded: BufPool::new(),
            decoded: BufPool::new(),
            cancel: Arc::clone(&cancel),
        });
        let queue = Arc::new(Semaphore::new(config.queue as usize));
        let n = config.n_frames;
        let mut records: Vec<Option<FrameRecord>> = Vec::new();
        records.resize(usize::try_from(n).unwrap_or(0), None);
        let mut tasks = JoinSet::new();
        let mut failure = None;
        let issue = |tasks: &mut JoinSet<FrameRecord>, k: u64, due_ns: Option<u64>, permit| {
            let mut rec = FrameRecord::new(k, file_of(k), due_ns);
            rec.issued_ns = Some(shared.now_ns());
            tasks.spawn(Arc::clone(&shared).frame(rec, permit));
        };

        // The preroll: issued as the queue allows, and the clock starts when all are done.
        let preroll = if config.rate.is_some() { u64::from(config.preroll).min(n) } else { 0 };
        let mut k = 0u64;
        while k < preroll {
            let Some(permit) = acquire(&queue, &cancel).await else { break };
            issue(&mut tasks, k, None, permit);
            k += 1;
        }
        while let Some(done) = tasks.join_next().await {
            keep(&mut records, &mut failure, done);
        }
        let t0 = shared.now();
        while k < n && !cancel.is_cancelled() {
            match config.rate {
                Some(rate) => {
                    let due = t0 + rate.due_offset(k);
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => break,
                        _ = clock.sleep_until(origin + due) => {}
                    }
                    let due_ns = Some(duration_ns(due));
                    match Arc::clone(&queue).try_acquire_owned() {
                        Ok(permit) => issue(&mut tasks, k, due_ns, permit),
                        Err(_) => {
                            if let Some(slot) = usize::try_from(k).ok().and_then(|i| records.get_mut(i)) {
                                *slot = Some(FrameRecord::new(k, file_of(k), due_ns));
                            }
                        }
                    }
                }
                None => {
                    let Some(permit) = acquire(&queue, &cancel).await else { break };
                    issue(&mut tasks, k, None, permit);
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
        let end_ns = shared.now_ns();
        let decode_cpu = shared.decode.as_ref().map_or(Duration::ZERO, |d| d.executor.cpu_time());
        FrametestRun {
            records: records.into_iter().flatten().collect(),
            t0_ns: duration_ns(t0),
            end_ns,
            interrupted: k < n,
            failure: cancel.failure().or(failure),
            decode_cpu,
        }
    }
}

/// What the frame tasks share.
struct Shared {
    io: Arc<dyn FrameIo>,
    decode: Option<FrametestDecode>,
    clock: Arc<dyn Clock>,
    origin: Duration,
    threads: Arc<Semaphore>,
    encoded: BufPool<IoBuf>,
    decoded: BufPool<DecodedFrame>,
    cancel: Arc<CancelToken>,
}

impl Shared {
    fn now(&self) -> Duration {
        self.clock.now().saturating_sub(self.origin)
    }

    fn now_ns(&self) -> u64 {
        duration_ns(self.now())
    }

    /// One frame: a thread, open, transfer, close, then the decode; its queue slot is
    /// released when it completes.
    async fn frame(self: Arc<Self>, mut rec: FrameRecord, queue_slot: OwnedSemaphorePermit) -> FrameRecord {
        let name = self.io.name(rec.file_idx);
        let Ok(thread) = Arc::clone(&self.threads).acquire_owned().await else {
            // The semaphore is never closed; kept so that nothing here can panic.
            return self.failed(rec, "no thread was left to run it".into());
        };
        rec.started_ns = Some(self.now_ns());
        let mut buf = self.encoded.get();
        let opened = self.io.open(rec.file_idx).await;
        rec.opened_ns = Some(self.now_ns());
        let moved = match opened {
            Ok(file) => {
                let moved = file.transfer(&mut buf).await;
                rec.transferred_ns = Some(self.now_ns());
                let closed = file.close().await;
                rec.closed_ns = Some(self.now_ns());
                moved.and_then(|n| closed.map(|()| n))
            }
            Err(e) => Err(e),
        };
        drop(thread);
        match moved {
            Ok(n) => rec.bytes = n,
            Err(e) => {
                if e.kind == StorageErrorKind::Unavailable {
                    self.cancel.fail(format!("storage unavailable: {}", e.message));
                }
                drop(queue_slot);
                return self.failed(rec, e.message);
            }
        }
        if let Some(decode) = &self.decode {
            let job = DecodeJob {
                frame_idx: rec.position,
                decoder: Arc::clone(&decode.decoder),
                encoded: buf,
                decoded: self.decoded.get(),
                result: Ok(()),
            };
            let done = decode.executor.decode(job).await;
            rec.decoded_ns = Some(self.now_ns());
            let error = match done {
                Some(job) => job.result.err().map(|e| format!("{name}: cannot decode: {e}")),
                None => Some(format!("{name}: the decode worker was lost (a decoder panicked)")),
            };
            if let Some(error) = error {
                drop(queue_slot);
                return self.failed(rec, error);
            }
        }
        rec.outcome = FrameOutcome::Transferred;
        rec.done_ns = Some(self.now_ns());
        drop(queue_slot);
        rec
    }

    fn failed(&self, mut rec: FrameRecord, error: String) -> FrameRecord {
        rec.outcome = FrameOutcome::Failed;
        rec.done_ns = Some(self.now_ns());
        rec.error = Some(format!("frame {} (file index {}): {error}", rec.position, rec.file_idx));
        rec
    }
}

/// A queue slot, waiting for one; `None` if the run is cancelled first.
pub(crate) async fn acquire(queue: &Arc<Semaphore>, cancel: &CancelToken) -> Option<OwnedSemaphorePermit> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        permit = Arc::clone(queue).acquire_owned() => permit.ok(),
    }
}

/// A frame's record that knows its position in the run.
pub(crate) trait Positioned {
    /// Its position, from 0.
    fn position(&self) -> u64;
}

impl Positioned for FrameRecord {
    fn position(&self) -> u64 {
        self.position
    }
}

/// Files a finished frame task's record by its position; a task that panicked is noted as the
/// run's failure.
pub(crate) fn keep<R: Positioned>(
    records: &mut [Option<R>],
    failure: &mut Option<String>,
    done: Result<R, tokio::task::JoinError>,
) {
    match done {
        Ok(rec) => {
            if let Some(slot) = usize::try_from(rec.position()).ok().and_then(|i| records.get_mut(i)) {
                *slot = Some(rec);
            }
        }
        Err(e) => {
            failure.get_or_insert_with(|| format!("a frame task failed: {e}"));
        }
    }
}

pub(crate) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use playsim_core::DecodeError;
    use playsim_storage::scripted::{ScriptedObject, ScriptedStorage};

    use super::*;
    use crate::{InOrderJob, JobFuture, TokioClock};

    const MS: Duration = Duration::from_millis(1);
    const MS_NS: u64 = 1_000_000;

    fn path(i: u64) -> PathBuf {
        PathBuf::from(format!("/ft/frame{i:06}.dpx"))
    }

    /// `n` frames over `n` files, forward, with `threads`, `queue` and an optional rate; no preroll.
    fn config(n: u64, threads: u32, queue: u32, fps: Option<u32>) -> FrametestConfig {
        FrametestConfig {
            n_frames: n,
            n_files: n,
            order: FrametestOrder::Forward,
            threads,
            rate: fps.map(|f| FrameRate::new(f, 1).unwrap()),
            queue,
            preroll: 0,
        }
    }

    /// Every file is 1000 bytes and reads in `latency`.
    fn storage(latency: Duration) -> ScriptedStorage {
        ScriptedStorage::new(ScriptedObject::new(1000, latency))
    }

    async fn read(config: FrametestConfig, storage: ScriptedStorage) -> FrametestRun {
        run_with(config, storage, None).await
    }

    async fn run_with(
        config: FrametestConfig,
        storage: ScriptedStorage,
        decode: Option<FrametestDecode>,
    ) -> FrametestRun {
        let io = Arc::new(StorageReads::new(Arc::new(storage), (0..config.n_files).map(path).collect()));
        let mut ft = Frametest::new(config, io, Arc::new(TokioClock::new())).unwrap();
        if let Some(d) = decode {
            ft = ft.decode(d);
        }
        ft.run().await
    }

    fn positions(run: &FrametestRun, outcome: FrameOutcome) -> Vec<u64> {
        run.records.iter().filter(|r| r.outcome == outcome).map(|r| r.position).collect()
    }

    fn due_ns(fps: u64, k: u64) -> u64 {
        k * 1_000_000_000 / fps
    }

    #[tokio::test(start_paused = true)]
    async fn storage_that_keeps_up_drops_nothing_and_each_frame_is_issued_when_due() {
        let cfg = FrametestConfig { preroll: 5, ..config(48, 1, 1, Some(25)) };
        let run = read(cfg, storage(30 * MS)).await;
        assert_eq!(run.records.len(), 48);
        assert_eq!(positions(&run, FrameOutcome::Transferred).len(), 48);
        assert!(!run.interrupted && run.failure.is_none());
        // The preroll: five reads of 30 ms one after another, then the clock starts.
        assert_eq!(run.t0_ns, 150 * MS_NS);
        for r in &run.records {
            assert_eq!(r.bytes, 1000);
            assert_eq!(r.io_time(), Some(30 * MS));
            if r.position < 5 {
                assert_eq!((r.due_ns, r.issued_ns), (None, Some(r.position * 30 * MS_NS)));
            } else {
                let due = run.t0_ns + due_ns(25, r.position);
                assert_eq!((r.due_ns, r.issued_ns), (Some(due), Some(due)), "frame {}", r.position);
                assert_eq!(r.done_ns, Some(due + 30 * MS_NS));
            }
        }
        assert_eq!(run.end_ns, run.t0_ns + due_ns(25, 47) + 30 * MS_NS);
    }

    #[tokio::test(start_paused = true)]
    async fn storage_slower_than_the_rate_drops_exactly_the_frames_due_on_a_full_queue() {
        // 25 fps is a frame every 40 ms; each read takes 100 ms. No completion ties a due time
        // (tokio's timer rounds wake-ups up to whole milliseconds, so these tests use whole ones).
        // One thread, a queue of one: a frame is issued, the next two fall due while it reads.
        let run1 = read(config(24, 1, 1, Some(25)), storage(100 * MS)).await;
        let kept: Vec<u64> = (0..24).filter(|k| k % 3 == 0).collect();
        assert_eq!(positions(&run1, FrameOutcome::Transferred), kept);
        assert_eq!(positions(&run1, FrameOutcome::Dropped).len(), 16);
        // Two threads, a queue of two: one frame in three finds both busy.
        let run2 = read(config(24, 2, 2, Some(25)), storage(100 * MS)).await;
        let lost: Vec<u64> = (0..24).filter(|k| k % 3 == 2).collect();
        assert_eq!(positions(&run2, FrameOutcome::Dropped), lost);
        // One thread, a queue of two, 75 ms reads: queued frames wait for the thread, which
        // never idles, so 8 reads end at 8 x 75 ms.
        let run3 = read(config(14, 1, 2, Some(25)), storage(75 * MS)).await;
        assert_eq!(positions(&run3, FrameOutcome::Dropped), [3, 5, 7, 9, 11, 13]);
        assert_eq!(run3.end_ns, 8 * 75 * MS_NS);
        for r in &run3.records {
            if r.outcome == FrameOutcome::Dropped {
                assert_eq!((r.issued_ns, r.started_ns, r.bytes), (None, None, 0));
                assert_eq!(r.due_ns, Some(due_ns(25, r.position)));
            }
        }
        let waited = run3.records.iter().find(|r| r.position == 1).unwrap();
        assert_eq!((waited.issued_ns, waited.started_ns), (Some(due_ns(25, 1)), Some(75 * MS_NS)));
    }

    #[tokio::test(start_paused = true)]
    async fn preroll_frames_are_never_dropped_and_start_the_clock() {
        // Reads of 100 ms against 40 ms frames, a queue of one: the three preroll frames
        // wait for the queue instead of being dropped, and the clock starts when they are in.
        let cfg = FrametestConfig { preroll: 3, ..config(9, 1, 1, Some(25)) };
        let run = read(cfg, storage(100 * MS)).await;
        assert_eq!(run.t0_ns, 300 * MS_NS);
        assert_eq!(positions(&run, FrameOutcome::Transferred), [0, 1, 2, 3, 6]);
        assert_eq!(positions(&run, FrameOutcome::Dropped), [4, 5, 7, 8]);
        let third = &run.records[3];
        assert_eq!(third.issued_ns, Some(420 * MS_NS));
        // -b larger than -n: the whole run is preroll.
        let cfg = FrametestConfig { preroll: 50, ..config(4, 1, 1, Some(25)) };
        let all = read(cfg, storage(100 * MS)).await;
        assert_eq!((positions(&all, FrameOutcome::Transferred).len(), all.t0_ns), (4, 400 * MS_NS));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_rate_frames_go_as_fast_as_threads_and_queue_allow() {
        let run1 = read(config(20, 4, 4, None), storage(100 * MS)).await;
        assert_eq!((positions(&run1, FrameOutcome::Transferred).len(), run1.end_ns), (20, 500 * MS_NS));
        let run2 = read(config(20, 2, 8, None), storage(100 * MS)).await;
        assert_eq!(run2.end_ns, 1000 * MS_NS);
        // The queue bounds the threads in use.
        let run3 = read(config(20, 4, 1, None), storage(100 * MS)).await;
        assert_eq!(run3.end_ns, 2000 * MS_NS);
        // -b means nothing without a clock.
        let run4 = read(FrametestConfig { preroll: 5, ..config(4, 1, 1, None) }, storage(MS)).await;
        assert_eq!((run4.t0_ns, run4.records[0].due_ns), (0, None));
        assert!(run1.records.iter().all(|r| r.due_ns.is_none()));
    }

    /// A storage whose file `i` is `1000 + i` bytes, so each record's bytes show which
    /// file was really read.
    fn sized_storage(n_files: u64) -> ScriptedStorage {
        (0..n_files).fold(storage(MS), |s, i| s.with_object(path(i), ScriptedObject::new(1000 + i, MS)))
    }

    async fn files_read(order: FrametestOrder, n_frames: u64, n_files: u64) -> Vec<u64> {
        let cfg = FrametestConfig { order, n_files, ..config(n_frames, 2, 2, None) };
        let run = read(cfg, sized_storage(n_files)).await;
        assert_eq!(run.records.len() as u64, n_frames);
        run.records
            .iter()
            .map(|r| {
                assert_eq!(r.bytes, 1000 + r.file_idx, "frame {} read another file", r.position);
                r.file_idx
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn orders_visit_the_files_forward_reverse_shuffled_and_loop() {
        assert_eq!(files_read(FrametestOrder::Forward, 4, 4).await, [0, 1, 2, 3]);
        assert_eq!(files_read(FrametestOrder::Reverse, 4, 4).await, [3, 2, 1, 0]);
        // -l: ten frames over four files.
        assert_eq!(files_read(FrametestOrder::Forward, 10, 4).await, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
        assert_eq!(files_read(FrametestOrder::Reverse, 6, 4).await, [3, 2, 1, 0, 3, 2]);
        // -m: a permutation, the same for the same seed, another for another seed, and
        // repeated on each pass of a loop.
        let a = files_read(FrametestOrder::Random { seed: 7 }, 16, 16).await;
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..16).collect::<Vec<u64>>());
        assert_ne!(a, sorted, "a shuffle of 16 left them in order");
        assert_eq!(files_read(FrametestOrder::Random { seed: 7 }, 16, 16).await, a);
        assert_ne!(files_read(FrametestOrder::Random { seed: 8 }, 16, 16).await, a);
        let looped = files_read(FrametestOrder::Random { seed: 7 }, 40, 16).await;
        assert_eq!((&looped[..16], &looped[16..32], &looped[32..]), (&a[..], &a[..], &a[..8]));
    }

    /// Decodes whose cost is a tokio sleep; frames in `corrupt` fail.
    struct ScriptedDecode {
        cost: Duration,
        corrupt: Vec<u64>,
    }

    impl DecodeExecutor for ScriptedDecode {
        fn decode(&self, mut job: DecodeJob) -> JobFuture<Option<DecodeJob>> {
            let (cost, corrupt) = (self.cost, self.corrupt.contains(&job.frame_idx));
            Box::pin(async move {
                tokio::time::sleep(cost).await;
                if corrupt {
                    job.result = Err(DecodeError::malformed("scripted corruption"));
                }
                Some(job)
            })
        }
        fn decode_in_order(&self, _job: InOrderJob) -> JobFuture<Option<InOrderJob>> {
            Box::pin(async { None })
        }
        fn cpu_time(&self) -> Duration {
            Duration::ZERO
        }
    }

    struct NoDecode;

    impl Decoder for NoDecode {
        fn name(&self) -> &'static str {
            "none"
        }
        fn decode(&self, _encoded: &[u8], _out: &mut DecodedFrame) -> Result<(), DecodeError> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_decoding_frame_holds_its_queue_slot_until_decoded() {
        // 10 ms reads and 90 ms decodes: each frame is queued for 100 ms, as the 100 ms reads
        // above, and drops the same frames, though the thread is free after 10 ms.
        let decode = FrametestDecode {
            decoder: Arc::new(NoDecode),
            executor: Arc::new(ScriptedDecode { cost: 90 * MS, corrupt: vec![9] }),
        };
        let run = run_with(config(24, 1, 1, Some(25)), storage(10 * MS), Some(decode)).await;
        assert_eq!(positions(&run, FrameOutcome::Transferred), [0, 3, 6, 12, 15, 18, 21]);
        assert_eq!(positions(&run, FrameOutcome::Failed), [9]);
        assert_eq!(positions(&run, FrameOutcome::Dropped).len(), 16);
        for r in run.records.iter().filter(|r| r.outcome != FrameOutcome::Dropped) {
            let (closed, decoded) = (r.closed_ns.unwrap(), r.decoded_ns.unwrap());
            assert_eq!((r.io_time(), decoded - closed), (Some(10 * MS), 90 * MS_NS));
        }
        let error = run.records[9].error.as_deref().unwrap();
        assert!(error.contains("frame 9 (file index 9)") && error.contains("/ft/frame000009.dpx"), "{error}");
        assert!(error.contains("scripted corruption"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_frame_is_named_and_the_run_goes_on() {
        let bad = ScriptedObject { read_error: Some("scripted eio".into()), ..ScriptedObject::new(1000, MS) };
        let storage = storage(MS).with_object(path(2), bad);
        let run = read(config(5, 2, 2, None), storage).await;
        assert_eq!(positions(&run, FrameOutcome::Failed), [2]);
        assert_eq!(positions(&run, FrameOutcome::Transferred), [0, 1, 3, 4]);
        let error = run.records[2].error.as_deref().unwrap();
        assert!(error.starts_with("frame 2 (file index 2): cannot read /ft/frame000002.dpx"), "{error}");
        assert_eq!(run.records[2].bytes, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_run_issues_nothing_more() {
        let io = Arc::new(StorageReads::new(Arc::new(storage(MS)), (0..10).map(path).collect()));
        let ft = Frametest::new(config(10, 1, 1, Some(25)), io, Arc::new(TokioClock::new())).unwrap();
        ft.canceller().cancel();
        let run = ft.run().await;
        assert!(run.interrupted);
        assert!(run.records.is_empty());
    }

    #[test]
    fn frame_files_are_found_from_file_zero_to_the_first_gap() {
        let two_k = FrameSize::preset("2k", playsim_report::frametest::DEFAULT_HEADER_BYTES).unwrap();
        let listing = |names: &[&str], bytes: u64| -> HashMap<String, u64> {
            names.iter().map(|n| (n.to_string(), bytes)).collect()
        };
        let tst = listing(&["frame000000.tst", "frame000001.tst", "frame000003.tst", "x"], two_k.file_bytes);
        let found = FrameFiles::find(&tst, None, None, false, None).unwrap();
        assert_eq!((found.pattern, found.n_frames), (NamePattern::frametest(), 2));
        assert_eq!(found.names, ["frame000000.tst", "frame000001.tst"]);
        assert_eq!(found.size, Some(two_k.clone()));
        // A loop reads the two files again; without one, four frames are too many.
        let looped = FrameFiles::find(&tst, None, Some(5), true, None).unwrap();
        assert_eq!((looped.n_frames, looped.names.len()), (5, 2));
        let too_few = FrameFiles::find(&tst, None, Some(4), false, None).unwrap_err();
        assert!(matches!(too_few, FrameFilesError::TooFew { n_found: 2, n_frames: 4, .. }), "{too_few}");
        let one = FrameFiles::find(&tst, None, Some(1), false, None).unwrap();
        assert_eq!(one.names, ["frame000000.tst"]);
        // Files of differing sizes have none; a size asked for is checked on each.
        let mut mixed = listing(&["frame000000.dpx", "frame000001.dpx"], 1000);
        mixed.insert("frame000001.dpx".into(), 2000);
        assert_eq!(FrameFiles::find(&mixed, None, None, false, None).unwrap().size, None);
        let wrong = FrameFiles::find(&mixed, None, None, false, Some(&two_k)).unwrap_err();
        assert!(
            matches!(&wrong, FrameFilesError::WrongSize { name, bytes: 1000, .. } if name == "frame000000.dpx")
        );
        let empty = HashMap::new();
        assert_eq!(
            FrameFiles::find(&empty, None, None, false, None),
            Err(FrameFilesError::NoFrametestFrames)
        );
        let shot: NamePattern = "shot_%d.dpx".parse().unwrap();
        let missing = FrameFiles::find(&mixed, Some(&shot), None, false, None).unwrap_err();
        assert_eq!(missing, FrameFilesError::NoFirstFrame { name: "shot_0.dpx".into() });
    }

    #[test]
    fn bad_settings_are_refused_naming_the_field_with_an_example() {
        let cases = [
            (
                config(0, 1, 1, None),
                "n_frames",
                "-n 0 is out of range: 1 to 1000000 frames (for example -n 2000)",
            ),
            (config(4, 0, 1, None), "threads", "-t must be at least 1 thread (for example -t 4)"),
            (config(4, 1, 0, None), "queue", "-q must be at least 1 frame (for example -q 4)"),
        ];
        for (cfg, field, as_flag) in cases {
            let io = Arc::new(StorageReads::new(Arc::new(storage(MS)), Vec::new()));
            let err = Frametest::new(cfg, io, Arc::new(crate::PreciseClock::new())).err().unwrap();
            assert!(err.to_string().starts_with(field), "{err}");
            let flag = |f| match f {
                FrametestField::Frames => "-n".to_owned(),
                FrametestField::Threads => "-t".to_owned(),
                FrametestField::Queue => "-q".to_owned(),
            };
            assert_eq!(err.message_with(flag), as_flag);
        }
        let no_files = FrametestConfig { n_files: 0, ..config(4, 1, 1, None) };
        assert_eq!(no_files.validate(), Err(FrametestError::NoFiles));
    }
}
