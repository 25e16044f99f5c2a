//! `playsim record`: frames arrive at a rate from the generator (or a `--source`), are encoded
//! for real on a pool and written through the destination's transport (local files, `nfs://`,
//! `smb://`), each under a hidden temporary name (`.NAME.%07d.EXT.partial`) and renamed when
//! complete (a clip format writes one file under its real name). The drop rule is the engine's
//! ([`playsim_engine::record`]); this module checks the destination, builds the encoder and the
//! sink, and runs it.
//!
//! ```no_run
//! use playsim_ops::record::{prepare_record, RecordRequest};
//! use playsim_engine::record::{OnError, RecordConfig, SyncPolicy};
//! use playsim_media::GenerateFormat;
//!
//! # #[tokio::main] async fn main() -> anyhow::Result<()> {
//! let config = RecordConfig {
//!     n_frames: 48, rate: playsim_ops::FrameRate::new(24, 1).ok(), queue: 4, encoders: 2, writers: 2,
//!     sync: SyncPolicy::None, on_error: OnError::Stop,
//! };
//! let format = GenerateFormat::parse("dpx", &[])?;
//! let request = RecordRequest::new("/tmp/capture", format, playsim_ops::FramePreset::Hd, config);
//! let result = prepare_record(&request).await?.run().await;
//! println!("{}", playsim_report::record::summary(&result));
//! # Ok(()) }
//! ```
//!
//! # Detail (moved from ARCHITECTURE.md)
//!
//! - **Frames arrive on the clock** from the generator (the test picture with `k` in its pixels);
//!   the render runs in the encode job, so the encode stage's time and CPU include it. `--source`
//!   feeds decoded frames instead (`record/source.rs`).
//! - **Encode is real**, on the engine's `EncodePool` (`--encoders`): each format's
//!   `FrameEncoder`, the writers `generate` uses (EXR through OpenEXR with the `openexr`
//!   feature, else the exr crate; both store the same halves; ProRes through FFmpeg).
//! - **The destination's transport writes**: `Location::writer_storage` (local files, `nfs://`,
//!   `smb://`). A missing destination is made (`CreateMissing` among the location's options, so
//!   a transport with a server checks only the export or share at open); one holding files is
//!   refused unless `--force`; the bytes the run may write are checked against the free space.
//! - **A clip format** (`prores`) writes one `NAME.mov`: FFmpeg's `prores_ks` from the generator's
//!   RGB converted to 10-bit 4:2:2 in fixed point, muxed as fragmented MOV cut after every frame,
//!   so a file cut anywhere plays up to its last whole fragment. `ClipRecordSink` asks for its
//!   writes in position order (`RecordSink::ordered`), appends each fragment, and writes under
//!   the real name: what a crashed capture leaves must be kept.
//! - **Sequence files** are written as `.NAME.%07d.EXT.partial`, synced with `--sync frame`,
//!   closed and renamed; a failed write removes the partial file, and the next run removes any
//!   left by a crash. `--direct` pads the last block and cuts the file back at close;
//!   `--io-engine io_uring` goes to the destination's `LocalOptions` only. `--preallocate`
//!   reserves each frame's bytes (`fallocate`; SET_INFO over SMB; nothing over NFSv3).
//!   `--sync end` is one `syncfs` after the last frame, timed.
//! - **Streams** (`--streams N`): N recorders on one clock into `DEST/stream-NN`, one
//!   `EncodePool`, one cancel token; their runs merge (`RecordRun::merge`).
//! - **Capacity** (`--capacity streams|fps`): `capacity`'s search over record runs into
//!   `DEST/capacity-trial`, removed after each trial, so `DEST` is left as it was found
//!   (`RecordCapacity`, `schema/record-capacity.schema.json`).
//! - **The result** is `playsim_report::record` (`schema/record.schema.json`, `--timeline`,
//!   `--plot`); `playsim compare` takes record JSONs on record's figures.

use std::path::PathBuf;
use std::sync::Arc;

use playsim_core::{Clock, DecodedFrame, FramePreset, FrameRate, StorageError, StorageErrorKind};
use playsim_engine::frametest::IoFuture;
use playsim_engine::record::{RecordConfig, RecordSink, Recorder, SyncPolicy, WrittenFrame};
use playsim_engine::{CancelToken, EncodeExecutor, EncodeJob, EncodePool, FrameMaker, JobFuture};
use playsim_media::{ClipMuxer, GenerateFormat};

mod source;
use playsim_report::record::{
    RecordCapacity, RecordCapacityBy, RecordInfo, RecordResult, RecordRun, RecordTrial,
};
use playsim_storage::transport::TransportOptions;
use playsim_storage::write::{Stability, WriteFile, WriteStorage};
use playsim_storage::{IoEngine, LocalOptions};

/// What to record, and where.
#[derive(Clone, Debug)]
pub struct RecordRequest {
    /// The directory the frames go into.
    pub destination: PathBuf,
    /// The file format and its encoder's options.
    pub format: GenerateFormat,
    /// The frame size.
    pub preset: FramePreset,
    /// RGBA instead of RGB (EXR is always RGBA).
    pub alpha: bool,
    /// The files' name stem: `NAME.%07d.EXT`.
    pub name: String,
    /// The runner's settings.
    pub config: RecordConfig,
    /// Write into a destination that holds files already.
    pub force: bool,
    /// Write with O_DIRECT, bypassing the page cache.
    pub direct: bool,
    /// How a local destination's files are written: pwrite on the blocking pool, or io_uring
    /// (`--io-engine io_uring`: a frame's 1 MiB writes all in flight at once), which falls
    /// back to pwrite, saying why, where it cannot be set up. Other transports ignore it.
    pub io_engine: IoEngine,
    /// Reserve each frame's space before writing it, where the storage can.
    pub preallocate: bool,
    /// The transports' settings (playsim's NFS and SMB clients).
    pub transport: TransportOptions,
    /// Streams recorded at once, each at the rate into `stream-NN` in the destination, all
    /// through one encode pool; 1 records into the destination itself.
    pub streams: u32,
    /// Encode every frame (the default); false writes frame 0's bytes for every frame, encoded
    /// once before the run (`--encode off`): the storage's side alone, as frametest's blank
    /// frames, through record's files, names and renames.
    pub encode: bool,
    /// Frames from this sequence or video, read through its transport and decoded ahead of the
    /// clock (`--source`), instead of the generator: an ingest or a transcode. Their size is
    /// the source's.
    pub source: Option<PathBuf>,
    /// Where what it says while it records goes (a source frame it could not read): nowhere
    /// unless the caller gives a sink.
    pub events: crate::Events,
    /// The run's clock: the source, the destination and the runner are timed by it.
    pub clock: playsim_engine::RunClock,
}

impl RecordRequest {
    /// A request with the defaults: RGB (RGBA for EXR), files named `frame.%07d.EXT`, and a
    /// destination that must be empty.
    pub fn new(
        destination: impl Into<PathBuf>,
        format: GenerateFormat,
        preset: FramePreset,
        config: RecordConfig,
    ) -> RecordRequest {
        let alpha = format.writer().rgba_by_default;
        RecordRequest {
            destination: destination.into(),
            format,
            preset,
            alpha,
            name: "frame".to_owned(),
            config,
            force: false,
            direct: false,
            io_engine: IoEngine::Pread,
            preallocate: false,
            transport: TransportOptions::new(),
            streams: 1,
            encode: true,
            source: None,
            events: crate::Events::none(),
            clock: playsim_engine::RunClock::default(),
        }
    }

    /// The directory stream `stream` records into: the destination with one stream, its
    /// `stream-NN` (from 01) with several.
    pub fn stream_dir(&self, dest: &std::path::Path, stream: u32) -> PathBuf {
        if self.streams > 1 {
            dest.join(format!("stream-{:02}", stream + 1))
        } else {
            dest.to_path_buf()
        }
    }

    /// The real name of frame `position`'s file: `frame.0000012.dpx`; for a clip format, the
    /// one file's: `frame.mov`.
    pub fn file_name(&self, position: u64) -> String {
        if self.format.writer().clip {
            format!("{}.{}", self.name, self.format.extension())
        } else {
            format!("{}.{position:07}.{}", self.name, self.format.extension())
        }
    }

    /// The bytes the run will write at most: every frame at its known size, or at the
    /// encoder's bound before compression.
    pub fn estimated_bytes(&self) -> u64 {
        let size = self.preset.dimensions();
        let encoder = self.format.encoder();
        let per_frame = encoder.file_bytes(size, self.alpha).unwrap_or_else(|| {
            let samples = encoder.sample_bytes(size);
            if self.alpha {
                samples / 3 * 4
            } else {
                samples
            }
        });
        per_frame.saturating_mul(self.config.n_frames).saturating_mul(u64::from(self.streams.max(1)))
    }

    /// The settings as flags, for the report.
    pub fn parameters(&self) -> String {
        let c = &self.config;
        let rate = c.rate.map_or_else(|| "max".to_owned(), |r| r.to_string());
        let sync = match c.sync {
            SyncPolicy::None => "none",
            SyncPolicy::Frame => "frame",
            SyncPolicy::End => "end",
        };
        let mut streams =
            if self.streams > 1 { format!(" --streams {}", self.streams) } else { String::new() };
        if !self.encode {
            streams.push_str(" --encode off");
        }
        let engine = match self.io_engine {
            IoEngine::Pread => String::new(),
            engine => format!(" --io-engine {engine}"),
        };
        format!(
            "--fps {rate} --frames {} -q {} --encoders {} --writers {} --sync {sync}{}",
            c.n_frames,
            c.queue,
            c.encoders,
            c.writers,
            if self.direct { " --direct" } else { "" }
        ) + &engine
            + if self.preallocate { " --preallocate" } else { "" }
            + &streams
    }
}

/// Why a record run cannot start: each names the destination and says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The destination holds files, and `--force` was not given.
    #[error("{dir} is not empty ({n_files} entries, for example {example}); give an empty or new directory, or --force to write into it")]
    NotEmpty {
        /// The destination.
        dir: String,
        /// Entries in it.
        n_files: usize,
        /// One of them.
        example: String,
    },
    /// The destination lacks the space the run needs.
    #[error("{dir} has {available} bytes free and the run may write {needed} ({n_frames} frames); free some space, or record fewer frames with --frames")]
    NoSpace {
        /// The destination.
        dir: String,
        /// Bytes free.
        available: u64,
        /// Bytes the run may write.
        needed: u64,
        /// Frames asked for.
        n_frames: u64,
    },
    /// The destination cannot be opened, made, listed or written; the message names it.
    #[error("{0}")]
    Destination(String),
    /// The settings are out of range.
    #[error("{0}")]
    Settings(String),
}

/// Removes the files a record run of `request` writes (each frame's real name, or its clip's,
/// in each stream's directory), through its transport, and nothing else: what a scenario does
/// between its repetitions, so that it needs one repetition's space. A file already gone is
/// no error. Returns how many it removed.
pub async fn remove_written(request: &RecordRequest) -> Result<u64, RecordError> {
    let failed = |e: String| RecordError::Destination(format!("cannot remove the recorded files: {e}"));
    let clock: Arc<dyn Clock> = request.clock.get();
    let location = crate::location::open(&request.destination, request.transport.clone(), &clock)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let Some(storage) = location.writer_storage(false).await else { return Ok(0) };
    let storage = storage.map_err(|e| failed(e.to_string()))?;
    let dir = location.path().to_path_buf();
    let positions = if request.format.writer().clip { 1 } else { request.config.n_frames };
    let mut removed = 0;
    for stream in 0..request.streams.max(1) {
        let stream_dir = request.stream_dir(&dir, stream);
        for position in 0..positions {
            match storage.remove(&stream_dir.join(request.file_name(position))).await {
                Ok(()) => removed += 1,
                Err(e) if e.kind == StorageErrorKind::NotFound => {}
                Err(e) => return Err(failed(e.to_string())),
            }
        }
    }
    Ok(removed)
}

/// How the files are written, for the summary: the writer's words, and for a local path the
/// mount it is on when that is not a local disk (`local files (page cache), nfs over rdma on
/// /mnt/rdma`), so a run into a kernel NFS or SMB mount says which.
fn describe_writes(storage: &dyn WriteStorage, given: &std::path::Path, dir: &std::path::Path) -> String {
    let how = storage.describe();
    if playsim_storage::transport::scheme_of(&given.to_string_lossy()).is_some() {
        return how;
    }
    match playsim_storage::mountinfo::mount_of(dir) {
        Some(mount) if mount.is_nfs() || mount.is_smb() => {
            format!("{how}, {} on {}", mount.label(), mount.mount_point.display())
        }
        _ => how,
    }
}

/// A record run ready to go: the destination checked, the encoder's threads started.
pub struct PreparedRecord {
    /// One a stream, sharing the cancel token.
    recorders: Vec<Recorder>,
    /// Each stream's feed, with `--source`: the run starts once every window is full.
    feeds: Vec<Arc<source::SourceFeed>>,
    cancel: Arc<CancelToken>,
    info: RecordInfo,
    /// Stale partial files of an earlier run that were removed.
    pub removed_partials: Vec<String>,
    /// What the user should know about how the files are written (io_uring asked for and not
    /// available, and why), one line each.
    pub warnings: Vec<String>,
}

impl PreparedRecord {
    /// The token that stops the run (Ctrl-C).
    pub fn canceller(&self) -> Arc<CancelToken> {
        Arc::clone(&self.cancel)
    }

    /// Records every frame of every stream at once; the result holds every frame's times.
    pub async fn run(self) -> RecordResult {
        for feed in &self.feeds {
            feed.preroll().await;
        }
        let mut streams = tokio::task::JoinSet::new();
        for (stream, recorder) in self.recorders.into_iter().enumerate() {
            streams.spawn(async move { (stream, recorder.run().await) });
        }
        let n = streams.len();
        let mut runs: Vec<RecordRun> = (0..n)
            .map(|stream| RecordRun {
                failure: Some(format!("stream {} ended without its figures (its task panicked)", stream + 1)),
                ..RecordRun::default()
            })
            .collect();
        while let Some(done) = streams.join_next().await {
            if let Ok((stream, run)) = done {
                runs[stream] = run;
            }
        }
        RecordResult { info: self.info, run: RecordRun::merge(runs) }
    }
}

/// Checks the destination (made if missing, where its transport can make it; refused if it
/// holds files, without `--force`; refused if it lacks the space), removes the partial files an
/// interrupted run left, and starts the encoder's threads. The destination is a local path or
/// a URL of a transport that writes (`nfs://`, `smb://`).
pub async fn prepare_record(request: &RecordRequest) -> Result<PreparedRecord, RecordError> {
    request.config.validate().map_err(RecordError::Settings)?;
    // One clock for the run: the source is opened on the one its destination writes by.
    let clock: Arc<dyn Clock> = request.clock.get();
    let source = match &request.source {
        Some(path) => Some(open_record_source(request, path, &clock).await?),
        None => None,
    };
    let sized;
    let request = match &source {
        Some(opened) => {
            sized = RecordRequest {
                preset: FramePreset::Custom { width: opened.size.0, height: opened.size.1 },
                ..request.clone()
            };
            &sized
        }
        None => request,
    };
    let shown = request.destination.display().to_string();
    // The destination's local options carry the write engine (a --source keeps its own).
    let mut destination = writing(&request.transport);
    destination.set(LocalOptions { io_engine: request.io_engine, ..destination.get::<LocalOptions>() });
    let location = crate::location::open(&request.destination, destination, &clock)
        .await
        .map_err(|e| RecordError::Destination(e.to_string()))?;
    let storage = location.writer_storage(request.direct).await.ok_or_else(|| {
        RecordError::Destination(format!(
            "{shown}: this transport only reads; record to a local path, a mount, or a URL such as {}",
            crate::transports().file_url_examples()
        ))
    })?;
    let storage = storage.map_err(|e| RecordError::Destination(e.to_string()))?;
    let dir = location.path().to_path_buf();
    let write_failed = |e: playsim_storage::write::WriteError| RecordError::Destination(e.to_string());
    storage.create_dir_all(&dir).await.map_err(write_failed)?;
    let index = location.index_storage().map_err(|e| RecordError::Destination(e.to_string()))?;
    let listing = index.list_dir(&dir).await.map_err(|e| RecordError::Destination(e.message))?;
    let mut removed_partials = Vec::new();
    let mut others = Vec::new();
    for entry in listing {
        if is_partial(&entry.name) {
            storage.remove(&dir.join(&entry.name)).await.map_err(write_failed)?;
            removed_partials.push(entry.name);
        } else {
            others.push(entry.name);
        }
    }
    if !others.is_empty() && !request.force {
        others.sort();
        return Err(RecordError::NotEmpty { dir: shown, n_files: others.len(), example: others[0].clone() });
    }
    let needed = request.estimated_bytes();
    if let Some(available) = storage.free_bytes(&dir).await.map_err(write_failed)? {
        if needed > available {
            return Err(RecordError::NoSpace {
                dir: shown,
                available,
                needed,
                n_frames: request.config.n_frames,
            });
        }
    }
    let size = request.preset.dimensions();
    let maker: Arc<dyn FrameMaker> = match &source {
        // The source's frames come decoded: the encode stage only encodes.
        Some(_) => Arc::new(EncodeOnly { format: request.format.clone() }),
        None => Arc::new(GeneratorMaker { format: request.format.clone(), size, alpha: request.alpha }),
    };
    // One pool for every stream: --encoders is the machine's encode threads, as play's decode
    // pool is shared by its streams.
    let pool: Arc<EncodePool> = Arc::new(
        EncodePool::new(request.config.encoders, maker)
            .map_err(|e| RecordError::Destination(format!("cannot start the encoders: {e}")))?,
    );
    let info = RecordInfo {
        destination: shown,
        format: format!("{} {}", request.format.name(), request.format.encoder().describe(request.alpha)),
        size: format!("{}x{}", size.0, size.1),
        parameters: request.parameters(),
        fps: request.config.rate.map_or(0.0, |r| r.as_f64()),
        storage: describe_writes(storage.as_ref(), &request.destination, &dir),
        streams: request.streams.max(1),
    };
    let pre_encoded = if request.encode {
        None
    } else {
        let maker = GeneratorMaker { format: request.format.clone(), size, alpha: request.alpha };
        let (mut scratch, mut bytes) = (DecodedFrame::default(), Vec::new());
        maker
            .make(0, &mut scratch, &mut bytes)
            .map_err(|e| RecordError::Settings(format!("cannot encode frame 0: {e}")))?;
        Some(Arc::new(EncodedOnce { bytes: Arc::from(bytes) }))
    };
    // One feed a stream, each reading and decoding the source on its own, as each capture
    // input (or each ingest) would: frames decoded ahead, the queue's worth and one more.
    let window = u64::from(request.config.queue) + 1;
    let feeds: Vec<Arc<source::SourceFeed>> = match &source {
        Some(opened) => (0..request.streams.max(1))
            .map(|_| {
                let (source, storage) = (Arc::clone(&opened.source), Arc::clone(&opened.storage));
                source::SourceFeed::start(
                    source,
                    storage,
                    request.config.n_frames,
                    window,
                    request.events.clone(),
                )
            })
            .collect(),
        None => Vec::new(),
    };
    let cancel = Arc::new(CancelToken::default());
    let mut recorders = Vec::new();
    for stream in 0..request.streams.max(1) {
        let stream_dir = request.stream_dir(&dir, stream);
        if stream_dir != dir {
            storage.create_dir_all(&stream_dir).await.map_err(write_failed)?;
        }
        let sink: Arc<dyn RecordSink> = if request.format.writer().clip {
            Arc::new(ClipRecordSink::create(Arc::clone(&storage), &stream_dir, request).await?)
        } else {
            Arc::new(StorageRecordSink {
                storage: Arc::clone(&storage),
                dir: stream_dir,
                request: request.clone(),
            })
        };
        let encoder: Arc<dyn EncodeExecutor> = match &pre_encoded {
            Some(once) => Arc::clone(once) as Arc<dyn EncodeExecutor>,
            None => pool.clone(),
        };
        let recorder = Recorder::new(request.config.clone(), encoder, sink, Arc::clone(&clock))
            .map_err(RecordError::Settings)?
            .with_canceller(Arc::clone(&cancel));
        let recorder = match feeds.get(stream as usize) {
            Some(feed) => recorder.with_feed(Arc::clone(feed) as Arc<dyn playsim_engine::record::FrameFeed>),
            None => recorder,
        };
        recorders.push(recorder);
    }
    let warnings = storage.warnings().into_iter().map(|w| w.message).collect();
    Ok(PreparedRecord { recorders, feeds, cancel, info, removed_partials, warnings })
}

/// `transport` for a destination that may not exist yet (made by the writer).
pub(crate) fn writing(transport: &TransportOptions) -> TransportOptions {
    transport.clone().with(playsim_storage::transport::CreateMissing(true))
}

/// Whether `name` is a partial file record mode writes: `.NAME.partial`.
fn is_partial(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".partial") && name.len() > ".partial".len() + 1
}

/// A `--source` opened: its frames, the storage they are read through, and their size.
struct OpenedSource {
    source: Arc<dyn playsim_core::Source>,
    storage: Arc<dyn playsim_core::Storage>,
    size: (u32, u32),
}

/// Opens `path` as record's source and checks, on its first frame, that the destination's
/// format can encode what it decodes to.
async fn open_record_source(
    request: &RecordRequest,
    path: &std::path::Path,
    clock: &Arc<dyn Clock>,
) -> Result<OpenedSource, RecordError> {
    let shown = path.display();
    let refuse = |why: String| RecordError::Settings(format!("--source {shown}: {why}"));
    if !request.encode {
        return Err(refuse(
            "--encode off writes the generator's frame 0; a source's frames are encoded: leave --encode on"
                .into(),
        ));
    }
    let options = playsim_media::DecodeOptions::default();
    let location = crate::location::open(path, request.transport.clone().with(options.clone()), clock)
        .await
        .map_err(|e| refuse(e.to_string()))?;
    let storage = location.index_storage().map_err(|e| refuse(e.to_string()))?;
    let source =
        crate::location::open_source(location.as_ref(), &options).await.map_err(|e| refuse(e.to_string()))?;
    if source.n_frames() == 0 {
        return Err(refuse("it has no frames".into()));
    }
    let frame = first_picture(source.as_ref(), storage.as_ref())
        .await
        .map_err(|e| refuse(format!("its first frame: {e}")))?;
    let mut out = Vec::new();
    request.format.encoder().encode_frame(&frame, &mut out).map_err(|e| {
        refuse(format!(
            "its frames decode to {:?}, which --format {} cannot encode: {e}",
            frame.format,
            request.format.name()
        ))
    })?;
    Ok(OpenedSource { source, storage, size: (frame.width, frame.height) })
}

/// The source's first picture: its frame 0 decoded alone, or for long-GOP video the first
/// picture its in-order decoder gives, within the packets its delay may hold back.
async fn first_picture(
    source: &dyn playsim_core::Source,
    storage: &dyn playsim_core::Storage,
) -> Result<DecodedFrame, String> {
    let decoder = source.decoder();
    let mut encoded = playsim_core::IoBuf::default();
    let mut frame = DecodedFrame::default();
    let Some(mut in_order) = decoder.in_order() else {
        crate::decode::read_extent(storage, &source.extent(0), &mut encoded).await?;
        decoder.decode(&encoded, &mut frame).map_err(|e| e.to_string())?;
        return Ok(frame);
    };
    let packets = source.n_frames().min(u64::from(in_order.max_delay()) + 16);
    for idx in 0..packets {
        crate::decode::read_extent(storage, &source.extent(idx), &mut encoded).await?;
        in_order.send(Some(&encoded)).map_err(|e| e.to_string())?;
        if in_order.receive(&mut frame).map_err(|e| e.to_string())? {
            return Ok(frame);
        }
    }
    in_order.send(None).map_err(|e| e.to_string())?;
    if in_order.receive(&mut frame).map_err(|e| e.to_string())? {
        return Ok(frame);
    }
    Err(format!("no picture came out of its first {packets} packets"))
}

/// A source's frames, which come decoded: encoded by the format's writer, as they are.
struct EncodeOnly {
    format: GenerateFormat,
}

impl FrameMaker for EncodeOnly {
    fn make(&self, _position: u64, frame: &mut DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        self.format.encoder().encode_frame(frame, out)
    }
}

/// The generator's frames, encoded by the format's writer.
struct GeneratorMaker {
    format: GenerateFormat,
    size: (u32, u32),
    alpha: bool,
}

impl FrameMaker for GeneratorMaker {
    fn make(&self, position: u64, scratch: &mut DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        self.format.encoder().encode(position, self.size, self.alpha, scratch, out)
    }
}

/// `--encode off`: every frame is frame 0's bytes, encoded once before the run; a job costs
/// nothing but handing them over (shared, not copied).
struct EncodedOnce {
    bytes: Arc<[u8]>,
}

impl EncodeExecutor for EncodedOnce {
    fn encode(&self, mut job: EncodeJob) -> JobFuture<Option<EncodeJob>> {
        job.result = Ok(Arc::clone(&self.bytes));
        Box::pin(std::future::ready(Some(job)))
    }

    fn cpu_time(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

/// Writes frames into a directory through a transport's [`WriteStorage`].
struct StorageRecordSink {
    storage: Arc<dyn WriteStorage>,
    dir: PathBuf,
    request: RecordRequest,
}

impl StorageRecordSink {
    fn paths(&self, position: u64) -> (PathBuf, PathBuf) {
        let name = self.request.file_name(position);
        (self.dir.join(format!(".{name}.partial")), self.dir.join(name))
    }
}

impl RecordSink for StorageRecordSink {
    fn name(&self, position: u64) -> String {
        self.paths(position).1.display().to_string()
    }

    fn write(
        &self,
        position: u64,
        bytes: Arc<[u8]>,
    ) -> IoFuture<'_, Result<Box<dyn WrittenFrame>, StorageError>> {
        Box::pin(async move {
            let (partial, done) = self.paths(position);
            let file = self.storage.create(&partial).await.map_err(storage_error)?;
            let reserved = if self.request.preallocate {
                file.preallocate(bytes.len() as u64).await.map(|_| ())
            } else {
                Ok(())
            };
            let written = match reserved {
                Ok(()) => file.write_at(0, bytes, Stability::Unstable).await.map(|_| ()),
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                let _ = file.close().await;
                let _ = self.storage.remove(&partial).await;
                return Err(storage_error(e));
            }
            let storage = Arc::clone(&self.storage);
            Ok(Box::new(Written { file, partial, done, storage }) as Box<dyn WrittenFrame>)
        })
    }

    fn sync_all(&self) -> IoFuture<'_, Result<(), StorageError>> {
        Box::pin(async move { self.storage.sync_all(&self.dir).await.map_err(storage_error) })
    }

    fn cpu_time(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.storage.stats().cpu_ns)
    }
}

/// A frame written under its partial name.
struct Written {
    file: Box<dyn WriteFile>,
    partial: PathBuf,
    done: PathBuf,
    storage: Arc<dyn WriteStorage>,
}

impl WrittenFrame for Written {
    fn sync(&self) -> IoFuture<'_, Result<(), StorageError>> {
        Box::pin(async move { self.file.sync().await.map_err(storage_error) })
    }

    fn publish(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>> {
        Box::pin(async move {
            let Written { file, partial, done, storage } = *self;
            if let Err(e) = file.close().await {
                let _ = storage.remove(&partial).await;
                return Err(storage_error(e));
            }
            storage.rename(&partial, &done).await.map_err(storage_error)
        })
    }
}

/// The alignment of O_DIRECT writes (`LocalWriteOptions::direct`).
const DIRECT_ALIGN: usize = 4096;

/// Writes every frame into one clip file (`NAME.mov`), appended in position order as the
/// format's muxer gives it (a fragment a frame). The file is written under its real name, not
/// a partial one: a fragmented MOV cut anywhere plays up to its last whole fragment, which is
/// what a capture that crashed must keep, and the next run must not remove.
///
/// With `--direct`, writes must start on 4096-byte boundaries: each frame writes the whole
/// blocks it completes, and the rest waits for the next frame; the last write, at the end,
/// is the only short one.
struct ClipRecordSink {
    storage: Arc<dyn WriteStorage>,
    path: PathBuf,
    file: ClipFile,
    state: std::sync::Mutex<ClipState>,
    preallocate: bool,
    align: usize,
}

/// The clip's file, shared with the frames written into it (for `--sync frame`); `None` once
/// closed.
type ClipFile = Arc<tokio::sync::Mutex<Option<Box<dyn WriteFile>>>>;

struct ClipState {
    muxer: Box<dyn ClipMuxer>,
    /// Bytes muxed and not yet written (with `--direct`, less than a block), and the file
    /// offset they start at.
    carry: Vec<u8>,
    offset: u64,
}

impl ClipRecordSink {
    /// Creates the clip's file and its muxer (which gives the header, written with the first
    /// frame).
    async fn create(
        storage: Arc<dyn WriteStorage>,
        dir: &std::path::Path,
        request: &RecordRequest,
    ) -> Result<ClipRecordSink, RecordError> {
        // A clip needs a rate: with --fps max, its frames are timed at 24 fps.
        let rate = match request.config.rate {
            Some(rate) => rate,
            None => FrameRate::new(24, 1).map_err(|e| RecordError::Settings(e.to_string()))?,
        };
        let size = request.preset.dimensions();
        let muxer = match request.format.encoder().clip_muxer(size, rate) {
            Some(Ok(muxer)) => muxer,
            Some(Err(e)) => return Err(RecordError::Destination(format!("cannot set up the clip: {e}"))),
            None => return Err(RecordError::Settings(format!("{} writes no clip", request.format.name()))),
        };
        let path = dir.join(request.file_name(0));
        let file = storage.create(&path).await.map_err(|e| RecordError::Destination(e.to_string()))?;
        let carry = muxer.header().to_vec();
        Ok(ClipRecordSink {
            storage,
            path,
            file: Arc::new(tokio::sync::Mutex::new(Some(file))),
            state: std::sync::Mutex::new(ClipState { muxer, carry, offset: 0 }),
            preallocate: request.preallocate,
            align: if request.direct { DIRECT_ALIGN } else { 1 },
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ClipState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `bytes` after what is carried: the whole blocks of it (all of it, unless
    /// `last` is false and writes are aligned), keeping the rest.
    async fn append(&self, bytes: &[u8], last: bool) -> Result<(), StorageError> {
        let (offset, out) = {
            let mut state = self.state();
            state.carry.extend_from_slice(bytes);
            let n = if last { state.carry.len() } else { state.carry.len() / self.align * self.align };
            let rest = state.carry.split_off(n);
            let out = std::mem::replace(&mut state.carry, rest);
            (state.offset, out)
        };
        if out.is_empty() {
            return Ok(());
        }
        let len = out.len() as u64;
        let file = self.file.lock().await;
        let Some(file) = file.as_ref() else {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                format!("{} is closed", self.path.display()),
            ));
        };
        let out: Arc<[u8]> = Arc::from(out);
        let written = async {
            if self.preallocate {
                file.preallocate(offset + len).await?;
            }
            file.write_at(offset, Arc::clone(&out), Stability::Unstable).await
        }
        .await;
        match written {
            Ok(_) => {
                self.state().offset = offset + len;
                Ok(())
            }
            Err(e) => {
                // Not written: carried again, so that the next frame's write covers it (a copy,
                // on this failure path only).
                let mut state = self.state();
                let mut again = out.to_vec();
                again.extend_from_slice(&state.carry);
                state.carry = again;
                Err(storage_error(e))
            }
        }
    }
}

impl RecordSink for ClipRecordSink {
    fn name(&self, _position: u64) -> String {
        self.path.display().to_string()
    }

    fn write(
        &self,
        position: u64,
        bytes: Arc<[u8]>,
    ) -> IoFuture<'_, Result<Box<dyn WrittenFrame>, StorageError>> {
        Box::pin(async move {
            let fragment = self.state().muxer.frame(position, &bytes);
            let fragment = fragment.map_err(|e| StorageError::new(StorageErrorKind::Io, e))?;
            self.append(&fragment, false).await?;
            Ok(Box::new(ClipFrame { file: Arc::clone(&self.file) }) as Box<dyn WrittenFrame>)
        })
    }

    fn sync_all(&self) -> IoFuture<'_, Result<(), StorageError>> {
        Box::pin(async move {
            self.storage.sync_all(self.path.parent().unwrap_or(&self.path)).await.map_err(storage_error)
        })
    }

    fn ordered(&self) -> bool {
        true
    }

    /// Writes the muxer's trailer and what is carried, and closes the file.
    fn finish(&self) -> IoFuture<'_, Result<(), StorageError>> {
        Box::pin(async move {
            let trailer = self.state().muxer.trailer();
            let trailer = trailer.map_err(|e| StorageError::new(StorageErrorKind::Io, e))?;
            let appended = self.append(&trailer, true).await;
            let file = self.file.lock().await.take();
            let closed = match file {
                Some(file) => file.close().await.map_err(storage_error),
                None => Ok(()),
            };
            appended.and(closed)
        })
    }

    fn cpu_time(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.storage.stats().cpu_ns)
    }
}

/// A frame appended to the clip: already in the file; a sync syncs the file.
struct ClipFrame {
    file: ClipFile,
}

impl WrittenFrame for ClipFrame {
    fn sync(&self) -> IoFuture<'_, Result<(), StorageError>> {
        Box::pin(async move {
            let file = self.file.lock().await;
            match file.as_ref() {
                Some(file) => file.sync().await.map_err(storage_error),
                None => Ok(()),
            }
        })
    }

    fn publish(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>> {
        Box::pin(async { Ok(()) })
    }
}

fn storage_error(e: playsim_storage::write::WriteError) -> StorageError {
    StorageError::from(e)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_trial_directory_goes_inside_a_urls_path_before_its_query() {
        let join = |d: &str| super::destination_join(std::path::Path::new(d), "capacity-trial");
        assert_eq!(join("/mnt/m"), std::path::PathBuf::from("/mnt/m/capacity-trial"));
        assert_eq!(
            join("nfs://h/x/?nfsport=2049&mountport=20048"),
            std::path::PathBuf::from("nfs://h/x/capacity-trial?nfsport=2049&mountport=20048")
        );
        assert_eq!(
            join("smb://h:445/share/d"),
            std::path::PathBuf::from("smb://h:445/share/d/capacity-trial")
        );
    }

    use super::*;

    #[test]
    fn partial_names_are_hidden_and_end_in_partial() {
        assert!(is_partial(".frame.0000001.dpx.partial"));
        assert!(!is_partial("frame.0000001.dpx"));
        assert!(!is_partial(".partial"));
        assert!(!is_partial("frame.partial"));
    }
}

/// A `record --capacity` search: what to vary, how long each trial records, how many trials a
/// candidate must pass, and the largest candidate.
#[derive(Clone, Debug)]
pub struct RecordCapacityRequest {
    /// The run to scale: its destination (trials record into `capacity-trial` in it), format,
    /// size and settings. With `by` streams, its rate is each stream's.
    pub record: RecordRequest,
    /// Streams at the rate, or the rate of one stream.
    pub by: RecordCapacityBy,
    /// Recording time of each trial.
    pub window: std::time::Duration,
    /// Trials a candidate must pass.
    pub trials: u32,
    /// The largest candidate.
    pub max: u32,
}

impl crate::capacity::Attempt for RecordTrial {
    fn passed(&self) -> bool {
        self.passed
    }
}

/// Searches the most streams at the rate, or the highest rate of one stream, that record with
/// no frame dropped or failed: candidates 1, 2, 4, ... then bisection, as `capacity` does for
/// playback. Each trial records `window` into `capacity-trial` in the destination, which is
/// removed after it (its files, its stream directories, then itself), so the search needs the
/// space of one trial only and leaves the destination as it found it. `progress` is told of
/// each trial as it ends.
pub async fn record_capacity(
    request: &RecordCapacityRequest,
    progress: impl Fn(&RecordTrial),
) -> Result<RecordCapacity, RecordError> {
    let base = &request.record;
    if request.window < std::time::Duration::from_secs(1) || request.trials == 0 || request.max == 0 {
        return Err(RecordError::Settings(
            "--capacity needs a --window of at least 1 s, --trials 1 or more and --max 1 or more (for example --capacity streams --window 10s --trials 2 --max 16)".into(),
        ));
    }
    let rate = match (request.by, base.config.rate) {
        (RecordCapacityBy::Streams, None) => {
            return Err(RecordError::Settings(
                "--capacity streams needs each stream's rate: give --fps, for example --capacity streams --fps 24".into(),
            ))
        }
        (_, rate) => rate,
    };
    let trial_dir = destination_join(&base.destination, "capacity-trial");
    let info = std::sync::Mutex::new(None);
    let trial = |candidate: u32| {
        let mut run = base.clone();
        run.destination = trial_dir.clone();
        run.force = true;
        let rate = match request.by {
            RecordCapacityBy::Streams => {
                run.streams = candidate;
                rate
            }
            RecordCapacityBy::Fps => FrameRate::new(candidate, 1).ok(),
        };
        run.config.rate = rate;
        run.config.n_frames = rate.map_or(1, |r| r.frames_in(request.window).max(1));
        let (info, progress) = (&info, &progress);
        async move {
            let prepared = prepare_record(&run).await.map_err(|e| crate::Error::Engine(e.to_string()))?;
            let result = prepared.run().await;
            let figures = playsim_report::record::figures(&result);
            remove_recorded(&run).await.map_err(|e| crate::Error::Engine(e.to_string()))?;
            let trial = RecordTrial::of(candidate, &figures);
            progress(&trial);
            info.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(result.info);
            Ok(trial)
        }
    };
    let searched = crate::capacity::search_by(request.max, request.trials, trial)
        .await
        .map_err(|e| RecordError::Destination(e.to_string()))?;
    let mut info = info.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).unwrap_or_default();
    info.destination = base.destination.display().to_string();
    info.streams = base.streams.max(1);
    Ok(RecordCapacity {
        info,
        by: request.by,
        fps: match request.by {
            RecordCapacityBy::Streams => rate.map(|r| r.as_f64()),
            RecordCapacityBy::Fps => None,
        },
        window_s: request.window.as_secs_f64(),
        trials_per_candidate: request.trials,
        max: request.max,
        best: searched.best,
        limit: searched.failed_at.map(|(_, t)| t.limit()),
        trials: searched.trials.into_iter().map(|(_, t)| t).collect(),
    })
}

/// `name` inside the destination `dest`: a path joined as a path, a URL's path before its
/// query (`nfs://h/x?nfsport=2049` gives `nfs://h/x/name?nfsport=2049`).
fn destination_join(dest: &std::path::Path, name: &str) -> PathBuf {
    let text = dest.to_string_lossy();
    match text.split_once('?') {
        Some((path, query)) if text.contains("://") => {
            PathBuf::from(format!("{}/{name}?{query}", path.trim_end_matches('/')))
        }
        _ => dest.join(name),
    }
}

/// Removes what a capacity trial of `request` wrote, through its transport: the files in its
/// destination (the trial directory, `capacity-trial`, which the search made) or in its stream
/// directories, then each stream directory and the trial directory itself, so that the search
/// leaves the destination it was given as it found it. A directory that holds anything the
/// trial did not write (a subdirectory) is left, with what is in it; one already gone is fine.
async fn remove_recorded(request: &RecordRequest) -> Result<(), RecordError> {
    let failed = |e: String| RecordError::Destination(format!("cannot clear the trial's files: {e}"));
    let clock: Arc<dyn Clock> = request.clock.get();
    let location = crate::location::open(&request.destination, request.transport.clone(), &clock)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let Some(storage) = location.writer_storage(false).await else { return Ok(()) };
    let storage = storage.map_err(|e| failed(e.to_string()))?;
    let index = location.index_storage().map_err(|e| failed(e.to_string()))?;
    let dir = location.path().to_path_buf();
    let is_file = |e: &playsim_core::DirEntry| e.kind == playsim_core::EntryKind::File;
    for stream in 0..request.streams.max(1) {
        let stream_dir = request.stream_dir(&dir, stream);
        let entries = index.list_dir(&stream_dir).await.map_err(|e| failed(e.message))?;
        for entry in entries.iter().filter(|e| is_file(e)) {
            // A file already gone (a REMOVE retried across a reconnect, whose first try took
            // effect, answers NOENT) is what was wanted.
            match storage.remove(&stream_dir.join(&entry.name)).await {
                Err(e) if e.kind != StorageErrorKind::NotFound => return Err(failed(e.to_string())),
                _ => {}
            }
        }
        // With one stream its directory is the trial's, removed below.
        if stream_dir != dir && entries.iter().all(is_file) {
            remove_empty_dir(storage.as_ref(), &stream_dir).await.map_err(failed)?;
        }
    }
    if index.list_dir(&dir).await.map_err(|e| failed(e.message))?.is_empty() {
        remove_empty_dir(storage.as_ref(), &dir).await.map_err(failed)?;
    }
    Ok(())
}

/// Removes the empty directory `dir`; one already gone (a retry's first try took effect) is
/// what was wanted.
async fn remove_empty_dir(storage: &dyn WriteStorage, dir: &std::path::Path) -> Result<(), String> {
    match storage.remove_dir(dir).await {
        Err(e) if e.kind != StorageErrorKind::NotFound => Err(e.to_string()),
        _ => Ok(()),
    }
}
