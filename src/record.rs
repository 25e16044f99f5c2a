//! `playsim record`: frames arrive at a rate from the generator, are encoded for real on a
//! pool and written into a local directory, each under a hidden temporary name
//! (`.NAME.%07d.EXT.partial`) and renamed when complete. The drop rule is the engine's
//! ([`playsim_engine::record`]); this module checks the destination, builds the encoder and the
//! sink, and runs it.
//!
//! ```no_run
//! use playsim::record::{prepare_record, RecordRequest};
//! use playsim::engine::record::{OnError, RecordConfig, SyncPolicy};
//! use playsim::media::GenerateFormat;
//!
//! # #[tokio::main] async fn main() -> anyhow::Result<()> {
//! let config = RecordConfig {
//!     n_frames: 48, rate: playsim::FrameRate::new(24, 1).ok(), queue: 4, encoders: 2, writers: 2,
//!     sync: SyncPolicy::None, on_error: OnError::Stop,
//! };
//! let format = GenerateFormat::parse("dpx", &[])?;
//! let request = RecordRequest::new("/tmp/capture", format, playsim::FramePreset::Hd, config);
//! let result = prepare_record(&request).await?.run().await;
//! println!("{}", playsim::report::record::summary(&result));
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use playsim_core::{Clock, DecodedFrame, FramePreset, StorageError};
use playsim_engine::frametest::IoFuture;
use playsim_engine::record::{RecordConfig, RecordSink, Recorder, SyncPolicy, WrittenFrame};
use playsim_engine::{CancelToken, EncodePool, FrameMaker, PreciseClock};
use playsim_media::GenerateFormat;
use playsim_report::record::{RecordInfo, RecordResult};
use playsim_storage::transport::TransportOptions;
use playsim_storage::write::{Stability, WriteFile, WriteStorage};

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
    /// Reserve each frame's space before writing it, where the storage can.
    pub preallocate: bool,
    /// The transports' settings (playsim's NFS and SMB clients).
    pub transport: TransportOptions,
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
            preallocate: false,
            transport: TransportOptions::new(),
        }
    }

    /// The real name of frame `position`'s file: `frame.0000012.dpx`.
    pub fn file_name(&self, position: u64) -> String {
        format!("{}.{position:07}.{}", self.name, self.format.extension())
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
        per_frame.saturating_mul(self.config.n_frames)
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
        format!(
            "--fps {rate} --frames {} -q {} --encoders {} --writers {} --sync {sync}{}",
            c.n_frames,
            c.queue,
            c.encoders,
            c.writers,
            if self.direct { " --direct" } else { "" }
        ) + if self.preallocate { " --preallocate" } else { "" }
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

/// A record run ready to go: the destination checked, the encoder's threads started.
pub struct PreparedRecord {
    recorder: Recorder,
    info: RecordInfo,
    /// Stale partial files of an earlier run that were removed.
    pub removed_partials: Vec<String>,
}

impl PreparedRecord {
    /// The token that stops the run (Ctrl-C).
    pub fn canceller(&self) -> Arc<CancelToken> {
        self.recorder.canceller()
    }

    /// Records every frame; the result holds every frame's times.
    pub async fn run(self) -> RecordResult {
        RecordResult { info: self.info, run: self.recorder.run().await }
    }
}

/// Checks the destination (made if missing, where its transport can make it; refused if it
/// holds files, without `--force`; refused if it lacks the space), removes the partial files an
/// interrupted run left, and starts the encoder's threads. The destination is a local path or
/// a URL of a transport that writes (`nfs://`, `smb://`).
pub async fn prepare_record(request: &RecordRequest) -> Result<PreparedRecord, RecordError> {
    request.config.validate().map_err(RecordError::Settings)?;
    let shown = request.destination.display().to_string();
    let clock: Arc<dyn Clock> = Arc::new(PreciseClock::new());
    let location = crate::location::open(&request.destination, request.transport.clone(), &clock)
        .await
        .map_err(|e| RecordError::Destination(e.to_string()))?;
    let storage = location.writer_storage(request.direct).await.ok_or_else(|| {
        RecordError::Destination(format!(
            "{shown}: this transport only reads; record to a local path, a mount, an nfs:// or an smb:// URL"
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
    let maker = GeneratorMaker { format: request.format.clone(), size, alpha: request.alpha };
    let pool = EncodePool::new(request.config.encoders, Arc::new(maker))
        .map_err(|e| RecordError::Destination(format!("cannot start the encoders: {e}")))?;
    let info = RecordInfo {
        destination: shown,
        format: format!("{} {}", request.format.name(), request.format.encoder().describe(request.alpha)),
        size: format!("{}x{}", size.0, size.1),
        parameters: request.parameters(),
        fps: request.config.rate.map_or(0.0, |r| r.as_f64()),
        storage: storage.describe(),
    };
    let sink = StorageRecordSink { storage, dir, request: request.clone() };
    let recorder = Recorder::new(request.config.clone(), Arc::new(pool), Arc::new(sink), clock)
        .map_err(RecordError::Settings)?;
    Ok(PreparedRecord { recorder, info, removed_partials })
}

/// Whether `name` is a partial file record mode writes: `.NAME.partial`.
fn is_partial(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".partial") && name.len() > ".partial".len() + 1
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

fn storage_error(e: playsim_storage::write::WriteError) -> StorageError {
    StorageError::from(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_names_are_hidden_and_end_in_partial() {
        assert!(is_partial(".frame.0000001.dpx.partial"));
        assert!(!is_partial("frame.0000001.dpx"));
        assert!(!is_partial(".partial"));
        assert!(!is_partial("frame.partial"));
    }
}
