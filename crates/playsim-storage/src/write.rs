//! Writing frame files: create, write at an offset, sync, rename into place, remove; and the
//! directories they go in.
//!
//! The read path's [`Storage`](playsim_core::Storage) has a write-side twin here,
//! [`WriteStorage`], shaped after NFSv3's calls so that playsim's NFS client
//! ([`crate::nfs::NfsWriter`]) implements it as they stand (and an SMB client can):
//!
//! | call | local files | NFSv3 | SMB2/3 |
//! |------|-------------|-------|--------|
//! | [`WriteStorage::create`] | `open(O_CREAT\|O_TRUNC)` | CREATE (UNCHECKED), or SETATTR size 0 | CREATE (OVERWRITE_IF) |
//! | [`WriteFile::write_at`] | `pwrite`, then `fdatasync`/`fsync` for a stable write; with io_uring, 1 MiB IORING_OP_WRITEs all in flight, then IORING_OP_FSYNC | WRITE with `stable_how` | WRITE, WRITE_THROUGH when stable |
//! | [`WriteFile::sync`] | `fdatasync`; with io_uring, IORING_OP_FSYNC with DATASYNC | COMMIT | FLUSH |
//! | [`WriteStorage::rename`] | `rename` | RENAME | SET_INFO FileRenameInformation |
//! | [`WriteStorage::remove`] | `unlink` | REMOVE | SET_INFO FileDispositionInformation |
//! | [`WriteStorage::create_dir_all`] | `mkdir -p` | LOOKUP, MKDIR | CREATE (FILE_DIRECTORY_FILE) |
//! | [`WriteStorage::remove_dir`] | `rmdir` | RMDIR | CREATE (FILE_DIRECTORY_FILE) + SET_INFO FileDispositionInformation + CLOSE |
//!
//! The bytes of a write are shared ([`WriteBytes`], an `Arc<[u8]>`), so one image can go to
//! many files without a copy, and an NFS client can keep its UNSTABLE writes' bytes until
//! COMMIT and send them again, still without a copy, when the server's write verifier
//! changed in between (the server restarted and lost them).
//!
//! A finished frame is published atomically by writing it under a temporary name and
//! renaming it into place (what a record mode does, so that a reader never sees half a
//! frame); frametest writes in place, as frametest does. Writes are positional and take
//! `&self`, so one file's blocks can be in flight at once, as a frame's reads are.
//!
//! Local files are written either on tokio's blocking pool (`pwrite`) or through io_uring
//! ([`LocalWriteOptions::io_engine`], the `io-uring` feature): a `write_at` is cut into 1 MiB
//! WRITEs submitted at once on the storage's ring thread (`playsim-uring-w`, the read engine's
//! ring (`uring/sys.rs`) and thread loop), its bytes held by the ring until the last
//! completes, a short write's rest submitted again. Create, rename, remove, mkdir and rmdir
//! stay on the blocking pool. Where io_uring cannot be set up the storage writes with `pwrite` and
//! says why ([`WriteStorage::warnings`]); [`WriteStorage::describe`] names the engine used.
//!
//! Every failure is a [`WriteError`] naming the call and the file. Each storage counts its
//! writes, bytes, syncs and the CPU time of the threads doing them ([`WriteStats`]), as the
//! read path counts its reads; like the read path, it never reads the clock (the caller
//! times the calls).
//!
//! ```
//! use std::sync::Arc;
//! use playsim_storage::write::{LocalWriteOptions, LocalWriteStorage, Stability, WriteStorage};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let storage: Arc<dyn WriteStorage> = Arc::new(LocalWriteStorage::new(LocalWriteOptions::default()));
//! let partial = dir.path().join("frame000000.dpx.partial");
//! let file = storage.create(&partial).await?;
//! file.write_at(0, Arc::from(&b"header"[..]), Stability::Unstable).await?;
//! file.write_at(6, Arc::from(&b" and image"[..]), Stability::Unstable).await?;
//! file.sync().await?;
//! file.close().await?;
//! let done = dir.path().join("frame000000.dpx");
//! storage.rename(&partial, &done).await?;
//! assert_eq!(std::fs::read(&done)?, b"header and image");
//! assert_eq!((storage.stats().n_writes, storage.stats().bytes), (2, 16));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use playsim_core::{IoBuf, StorageError, StorageErrorKind, StorageWarning, DIRECT_IO_ALIGN};
use rustix::fs::OFlags;

use crate::read_plan::thread_cpu_ns;
#[cfg(feature = "io-uring")]
use crate::uring::UringWriter;
pub(crate) use crate::write_parts::WriteCounters;
pub use crate::write_parts::{WriteBytes, WriteStats};
use crate::{IoEngine, UringOptions};

/// How far a write must have gone before it returns: NFSv3's `stable_how`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stability {
    /// Into the server's (or the kernel's) cache; a later [`WriteFile::sync`] makes it
    /// stable. The fastest, and what a frame written whole then synced once wants.
    #[default]
    Unstable,
    /// The data, and the metadata needed to read it back, on stable storage.
    DataSync,
    /// The data and all the file's metadata on stable storage.
    FileSync,
}

/// The call a [`WriteError`] happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteOp {
    /// Creating (or truncating) a file.
    Create,
    /// Creating a directory and its parents.
    CreateDir,
    /// Writing at an offset.
    Write,
    /// Making earlier writes stable.
    Sync,
    /// Closing the file.
    Close,
    /// Renaming a file.
    Rename,
    /// Removing a file.
    Remove,
    /// Removing an empty directory.
    RemoveDir,
}

impl WriteOp {
    /// The call as a verb, for messages: "create", "write", ...
    pub fn verb(self) -> &'static str {
        match self {
            WriteOp::Create => "create",
            WriteOp::CreateDir => "create the directory",
            WriteOp::Write => "write",
            WriteOp::Sync => "sync",
            WriteOp::Close => "close",
            WriteOp::Rename => "rename",
            WriteOp::Remove => "remove",
            WriteOp::RemoveDir => "remove the directory",
        }
    }
}

impl fmt::Display for WriteOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.verb())
    }
}

/// A write-side call failed: which call, on which file, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot {op} {}: {reason}", path.display())]
pub struct WriteError {
    /// What kind of failure, as the read path classes them (`Unavailable` ends a run).
    pub kind: StorageErrorKind,
    /// The call.
    pub op: WriteOp,
    /// The file (for a rename, the file being renamed).
    pub path: PathBuf,
    /// Why, in one line.
    pub reason: String,
}

impl WriteError {
    /// An error of `kind` in `op` on `path`.
    pub fn new(kind: StorageErrorKind, op: WriteOp, path: &Path, reason: impl Into<String>) -> WriteError {
        WriteError { kind, op, path: path.to_path_buf(), reason: reason.into() }
    }

    /// Maps an `io::Error` of `op` on `path`, keeping NotFound apart.
    pub fn from_io(err: &io::Error, op: WriteOp, path: &Path) -> WriteError {
        let kind = match err.kind() {
            io::ErrorKind::NotFound => StorageErrorKind::NotFound,
            io::ErrorKind::IsADirectory => StorageErrorKind::NotAFile,
            io::ErrorKind::InvalidInput => StorageErrorKind::Invalid,
            _ => StorageErrorKind::Io,
        };
        WriteError::new(kind, op, path, err.to_string())
    }
}

impl From<WriteError> for StorageError {
    fn from(err: WriteError) -> StorageError {
        StorageError::new(err.kind, err.to_string())
    }
}

/// Where frame files are written: local files, playsim's NFS client; a transport hands its
/// own out through `Location::writer_storage`.
/// Used as an `Arc<dyn WriteStorage>`; every call names its file in its error.
#[async_trait::async_trait]
pub trait WriteStorage: Send + Sync {
    /// How files are written, in words, for summaries: `local files (page cache)`.
    fn describe(&self) -> String;

    /// Creates `dir` and any missing parents; an existing directory is fine.
    async fn create_dir_all(&self, dir: &Path) -> Result<(), WriteError>;

    /// Creates `path` for writing, empty: a file already there is truncated.
    async fn create(&self, path: &Path) -> Result<Box<dyn WriteFile>, WriteError>;

    /// Renames `from` to `to` atomically, replacing `to` if it exists: how a finished
    /// frame is published.
    async fn rename(&self, from: &Path, to: &Path) -> Result<(), WriteError>;

    /// Removes the file `path`.
    async fn remove(&self, path: &Path) -> Result<(), WriteError>;

    /// Removes the directory `dir`, which must be empty: never what is in it. One that holds
    /// anything is refused, and stays as it is.
    async fn remove_dir(&self, dir: &Path) -> Result<(), WriteError>;

    /// Bytes free to this writer on the file system of `dir`, where the storage can tell.
    async fn free_bytes(&self, dir: &Path) -> Result<Option<u64>, WriteError>;

    /// Makes everything written under `dir` durable, once (a recording's `--sync end`).
    async fn sync_all(&self, dir: &Path) -> Result<(), WriteError>;

    /// The counters so far.
    fn stats(&self) -> WriteStats;

    /// What a user should know about how this storage writes, in full sentences (an engine
    /// asked for and not available, and why); empty when the writes go as asked.
    fn warnings(&self) -> Vec<StorageWarning> {
        Vec::new()
    }
}

/// A file open for writing.
#[async_trait::async_trait]
pub trait WriteFile: Send + Sync {
    /// The file, as it was created.
    fn path(&self) -> &Path;

    /// Writes all of `data` at `offset`, as stable as `stability` asks; returns the bytes
    /// written.
    async fn write_at(&self, offset: u64, data: WriteBytes, stability: Stability) -> Result<u64, WriteError>;

    /// Reserves the file's first `len` bytes on the storage before they are written, as
    /// capture software does so that a full disk fails the frame at once; returns `false`
    /// where the storage cannot (NFSv3 has no ALLOCATE).
    async fn preallocate(&self, len: u64) -> Result<bool, WriteError>;

    /// Makes every earlier write stable: the data and the metadata needed to read it back.
    async fn sync(&self) -> Result<(), WriteError>;

    /// Closes the file; writes not synced may still be in a cache.
    async fn close(self: Box<Self>) -> Result<(), WriteError>;
}

/// Options of [`LocalWriteStorage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalWriteOptions {
    /// Open files with O_DIRECT, so that writes bypass the page cache. Each write then
    /// starts at a multiple of [`DIRECT_IO_ALIGN`]; its bytes are copied through an aligned
    /// buffer (the copy counts in `cpu_ns`), and a write whose length is not a multiple is
    /// padded with zeros, which the file's length drops again at the next sync or close. So
    /// only a file's last write may have such a length.
    pub direct: bool,
    /// How writes and syncs are issued: `pwrite` (and `fdatasync`) on tokio's blocking pool,
    /// or through io_uring ([`IoEngine::IoUring`]: a write cut into 1 MiB WRITEs, all in
    /// flight at once, on the storage's ring thread; a sync an FSYNC). io_uring falls back to
    /// pwrite, saying why ([`WriteStorage::warnings`]), where it cannot be set up.
    pub io_engine: IoEngine,
    /// The io_uring engine's settings (its ring depth; writes register no buffers); unused
    /// with pwrite.
    pub uring: UringOptions,
}

/// Writes local files through the kernel: each call on tokio's blocking pool, or writes and
/// syncs through the storage's io_uring ring ([`LocalWriteOptions::io_engine`]).
#[derive(Debug, Default)]
pub struct LocalWriteStorage {
    options: LocalWriteOptions,
    counters: Arc<WriteCounters>,
    engine: WriteEngine,
}

/// The engine a [`LocalWriteStorage`] actually writes with.
#[derive(Clone, Debug, Default)]
enum WriteEngine {
    /// pwrite on the blocking pool, as asked.
    #[default]
    Pwrite,
    /// pwrite, because io_uring was asked for and cannot be used here: why.
    Fallback(String),
    /// The storage's ring and its thread, shared with its files.
    #[cfg(feature = "io-uring")]
    Uring(Arc<UringWriter>),
}

impl LocalWriteStorage {
    /// A storage writing local files with `options`. With [`IoEngine::IoUring`] this sets up
    /// the storage's ring and starts the thread that drives it (`playsim-uring-w`); where
    /// io_uring cannot be set up (a kernel without it, the `kernel.io_uring_disabled` sysctl,
    /// a container's seccomp profile, a build without the `io-uring` feature) the storage
    /// writes with pwrite instead: [`LocalWriteStorage::io_engine`] says which engine is
    /// used, [`WriteStorage::warnings`] why.
    pub fn new(options: LocalWriteOptions) -> LocalWriteStorage {
        let counters = Arc::<WriteCounters>::default();
        let engine = match options.io_engine {
            IoEngine::Pread => WriteEngine::Pwrite,
            IoEngine::IoUring => uring_engine(&options.uring, &counters),
        };
        LocalWriteStorage { options, counters, engine }
    }

    /// The engine the writes actually use: [`IoEngine::Pread`] (pwrite) when io_uring was
    /// asked for and could not be set up.
    pub fn io_engine(&self) -> IoEngine {
        match self.engine {
            WriteEngine::Pwrite | WriteEngine::Fallback(_) => IoEngine::Pread,
            #[cfg(feature = "io-uring")]
            WriteEngine::Uring(_) => IoEngine::IoUring,
        }
    }
}

/// The engine for [`IoEngine::IoUring`]: a ring and its thread, or pwrite where io_uring
/// cannot be set up, saying why.
#[cfg(feature = "io-uring")]
fn uring_engine(options: &UringOptions, counters: &Arc<WriteCounters>) -> WriteEngine {
    if let Err(e) = options.validate() {
        return WriteEngine::Fallback(e.to_string());
    }
    match UringWriter::start(options, Arc::clone(counters)) {
        Ok(writer) => WriteEngine::Uring(Arc::new(writer)),
        Err(why) => WriteEngine::Fallback(why),
    }
}

/// The engine for [`IoEngine::IoUring`] in a build without the `io-uring` feature: pwrite,
/// saying why, as on a kernel without io_uring.
#[cfg(not(feature = "io-uring"))]
fn uring_engine(_options: &UringOptions, _counters: &Arc<WriteCounters>) -> WriteEngine {
    WriteEngine::Fallback(crate::local::WITHOUT_THE_FEATURE.to_owned())
}

#[async_trait::async_trait]
impl WriteStorage for LocalWriteStorage {
    /// `local files (page cache)`, `local files with O_DIRECT`, either followed by `through
    /// io_uring`, or by `through pwrite (io_uring is not available)` when it fell back.
    fn describe(&self) -> String {
        let files =
            if self.options.direct { "local files with O_DIRECT" } else { "local files (page cache)" };
        match self.engine {
            WriteEngine::Pwrite => files.to_owned(),
            WriteEngine::Fallback(_) => format!("{files} through pwrite (io_uring is not available)"),
            #[cfg(feature = "io-uring")]
            WriteEngine::Uring(_) => format!("{files} through io_uring"),
        }
    }

    async fn create_dir_all(&self, dir: &Path) -> Result<(), WriteError> {
        let owned = dir.to_path_buf();
        blocking(WriteOp::CreateDir, dir, move || std::fs::create_dir_all(owned)).await
    }

    async fn create(&self, path: &Path) -> Result<Box<dyn WriteFile>, WriteError> {
        let direct = self.options.direct;
        let owned = path.to_path_buf();
        let file = blocking(WriteOp::Create, path, move || {
            let flags = if direct { OFlags::DIRECT } else { OFlags::empty() };
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(flags.bits() as i32)
                .open(owned)
        })
        .await
        .map_err(|e| refused_direct(e, direct))?;
        Ok(Box::new(LocalWriteFile {
            file: Arc::new(file),
            path: path.to_path_buf(),
            direct,
            end: Arc::new(AtomicU64::new(0)),
            padded: Arc::new(AtomicBool::new(false)),
            counters: Arc::clone(&self.counters),
            engine: self.engine.clone(),
        }))
    }

    async fn rename(&self, from: &Path, to: &Path) -> Result<(), WriteError> {
        let (owned_from, owned_to) = (from.to_path_buf(), to.to_path_buf());
        blocking(WriteOp::Rename, from, move || std::fs::rename(owned_from, owned_to))
            .await
            .map_err(|e| WriteError { reason: format!("to {}: {}", to.display(), e.reason), ..e })
    }

    async fn remove(&self, path: &Path) -> Result<(), WriteError> {
        let owned = path.to_path_buf();
        blocking(WriteOp::Remove, path, move || std::fs::remove_file(owned)).await
    }

    /// `rmdir`: the kernel refuses a directory that is not empty (ENOTEMPTY).
    async fn remove_dir(&self, dir: &Path) -> Result<(), WriteError> {
        let owned = dir.to_path_buf();
        blocking(WriteOp::RemoveDir, dir, move || std::fs::remove_dir(owned)).await
    }

    async fn free_bytes(&self, dir: &Path) -> Result<Option<u64>, WriteError> {
        let owned = dir.to_path_buf();
        let stat =
            blocking(WriteOp::CreateDir, dir, move || rustix::fs::statvfs(&owned).map_err(io::Error::from))
                .await?;
        Ok(Some(stat.f_bavail.saturating_mul(stat.f_frsize)))
    }

    /// One `syncfs` of the file system that holds `dir`.
    async fn sync_all(&self, dir: &Path) -> Result<(), WriteError> {
        let owned = dir.to_path_buf();
        blocking(WriteOp::Sync, dir, move || {
            let fd = File::open(&owned)?;
            rustix::fs::syncfs(&fd).map_err(io::Error::from)
        })
        .await
    }

    fn stats(&self) -> WriteStats {
        self.counters.stats()
    }

    fn warnings(&self) -> Vec<StorageWarning> {
        match &self.engine {
            WriteEngine::Fallback(why) => vec![StorageWarning::new(
                "io_uring_unavailable",
                format!("io_uring is not available, so the writes used pwrite: {why}"),
            )],
            _ => Vec::new(),
        }
    }
}

struct LocalWriteFile {
    file: Arc<File>,
    path: PathBuf,
    direct: bool,
    /// The end of the furthest write: the file's length once O_DIRECT padding is dropped.
    end: Arc<AtomicU64>,
    /// An O_DIRECT write was padded past its data.
    padded: Arc<AtomicBool>,
    counters: Arc<WriteCounters>,
    engine: WriteEngine,
}

impl LocalWriteFile {
    /// Runs `task` on the blocking pool and counts its thread's CPU time.
    async fn counted<T: Send + 'static>(
        &self,
        op: WriteOp,
        task: impl FnOnce(&File) -> io::Result<T> + Send + 'static,
    ) -> Result<T, WriteError> {
        let (file, counters) = (Arc::clone(&self.file), Arc::clone(&self.counters));
        blocking(op, &self.path, move || {
            let cpu_start = thread_cpu_ns();
            let result = task(&file);
            counters.cpu_ns.fetch_add(thread_cpu_ns().saturating_sub(cpu_start), Ordering::Relaxed);
            result
        })
        .await
    }

    /// Drops the zeros an O_DIRECT write padded past the file's data.
    fn trim(file: &File, end: &AtomicU64, padded: &AtomicBool) -> io::Result<()> {
        if padded.swap(false, Ordering::AcqRel) {
            file.set_len(end.load(Ordering::Acquire))?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl WriteFile for LocalWriteFile {
    fn path(&self) -> &Path {
        &self.path
    }

    async fn write_at(&self, offset: u64, data: WriteBytes, stability: Stability) -> Result<u64, WriteError> {
        if self.direct && !offset.is_multiple_of(DIRECT_IO_ALIGN as u64) {
            return Err(WriteError::new(
                StorageErrorKind::Invalid,
                WriteOp::Write,
                &self.path,
                format!("offset {offset} is not a multiple of {DIRECT_IO_ALIGN}, which O_DIRECT needs"),
            ));
        }
        let len = data.len() as u64;
        let (direct, end, padded) = (self.direct, Arc::clone(&self.end), Arc::clone(&self.padded));
        match &self.engine {
            WriteEngine::Pwrite | WriteEngine::Fallback(_) => {
                self.counted(WriteOp::Write, move |file| {
                    if direct {
                        write_direct(file, offset, &data, &padded)?;
                    } else {
                        file.write_all_at(&data, offset)?;
                    }
                    end.fetch_max(offset + len, Ordering::AcqRel);
                    match stability {
                        Stability::Unstable => Ok(()),
                        Stability::DataSync => file.sync_data(),
                        Stability::FileSync => file.sync_all(),
                    }
                })
                .await?;
            }
            #[cfg(feature = "io-uring")]
            WriteEngine::Uring(ring) => {
                let failed = |e: io::Error| WriteError::from_io(&e, WriteOp::Write, &self.path);
                if direct && !data.len().is_multiple_of(DIRECT_IO_ALIGN) {
                    // Set before the write: should it fail part way, the padding may be there.
                    padded.store(true, Ordering::Release);
                }
                ring.write(Arc::clone(&self.file), offset, data, direct).await.map_err(failed)?;
                end.fetch_max(offset + len, Ordering::AcqRel);
                match stability {
                    Stability::Unstable => {}
                    Stability::DataSync => ring.sync(Arc::clone(&self.file), true).await.map_err(failed)?,
                    Stability::FileSync => ring.sync(Arc::clone(&self.file), false).await.map_err(failed)?,
                }
            }
        }
        self.counters.n_writes.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes.fetch_add(len, Ordering::Relaxed);
        if stability != Stability::Unstable {
            self.counters.n_syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(len)
    }

    /// `fallocate` of `len` bytes from the start: the blocks are the file's, and its size is
    /// `len` (a write then fills them).
    async fn preallocate(&self, len: u64) -> Result<bool, WriteError> {
        self.counted(WriteOp::Write, move |file| {
            rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len).map_err(io::Error::from)
        })
        .await?;
        Ok(true)
    }

    async fn sync(&self) -> Result<(), WriteError> {
        let (end, padded) = (Arc::clone(&self.end), Arc::clone(&self.padded));
        match &self.engine {
            WriteEngine::Pwrite | WriteEngine::Fallback(_) => {
                self.counted(WriteOp::Sync, move |file| {
                    LocalWriteFile::trim(file, &end, &padded)?;
                    file.sync_data()
                })
                .await?;
            }
            #[cfg(feature = "io-uring")]
            WriteEngine::Uring(ring) => {
                // The length is set on the blocking pool (only after a padded O_DIRECT
                // write: a file's last), the sync is an FSYNC with DATASYNC on the ring.
                if self.padded.load(Ordering::Acquire) {
                    self.counted(WriteOp::Sync, move |file| LocalWriteFile::trim(file, &end, &padded))
                        .await?;
                }
                ring.sync(Arc::clone(&self.file), true)
                    .await
                    .map_err(|e| WriteError::from_io(&e, WriteOp::Sync, &self.path))?;
            }
        }
        self.counters.n_syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn close(self: Box<Self>) -> Result<(), WriteError> {
        let LocalWriteFile { file, path, end, padded, counters, .. } = *self;
        blocking(WriteOp::Close, &path, move || {
            let cpu_start = thread_cpu_ns();
            let result = LocalWriteFile::trim(&file, &end, &padded);
            // The descriptor closes here, on the blocking thread: a close can wait (an NFS
            // mount flushes the file's dirty pages at close).
            drop(file);
            counters.cpu_ns.fetch_add(thread_cpu_ns().saturating_sub(cpu_start), Ordering::Relaxed);
            result
        })
        .await
    }
}

/// Bytes an O_DIRECT write copies through its aligned buffer at a time.
const DIRECT_CHUNK: usize = 1 << 20;

/// Writes `data` at the aligned `offset` with O_DIRECT, through an aligned buffer; a last
/// chunk whose length is not aligned is padded with zeros (and `padded` set).
fn write_direct(file: &File, offset: u64, data: &[u8], padded: &AtomicBool) -> io::Result<()> {
    let mut buf = IoBuf::with_capacity(DIRECT_CHUNK.min(data.len()));
    let mut at = offset;
    for chunk in data.chunks(DIRECT_CHUNK) {
        let aligned = chunk.len().next_multiple_of(DIRECT_IO_ALIGN);
        buf.prepare(aligned);
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[chunk.len()..].fill(0);
        if aligned != chunk.len() {
            padded.store(true, Ordering::Release);
        }
        file.write_all_at(&buf, at)?;
        at += chunk.len() as u64;
    }
    Ok(())
}

/// Runs `task` on tokio's blocking pool; errors name `op` and `path`.
async fn blocking<T: Send + 'static>(
    op: WriteOp,
    path: &Path,
    task: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, WriteError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
        WriteError::new(StorageErrorKind::Io, op, path, format!("not inside a tokio runtime ({e})"))
    })?;
    match runtime.spawn_blocking(task).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(WriteError::from_io(&e, op, path)),
        Err(e) => {
            Err(WriteError::new(StorageErrorKind::Io, op, path, format!("the blocking task failed ({e})")))
        }
    }
}

/// Tells an O_DIRECT that the filesystem refuses (EINVAL at open) apart from other errors.
fn refused_direct(err: WriteError, direct: bool) -> WriteError {
    // Linux answers EINVAL to O_DIRECT on a filesystem without direct I/O (tmpfs before 6.6,
    // some FUSE filesystems).
    if direct && err.kind == StorageErrorKind::Invalid {
        return WriteError {
            reason: format!("O_DIRECT is not supported on its filesystem ({})", err.reason),
            ..err
        };
    }
    err
}

#[cfg(all(test, feature = "io-uring"))]
mod uring_tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn bytes(data: &[u8]) -> WriteBytes {
        Arc::from(data)
    }

    #[tokio::test]
    async fn writes_at_offsets_syncs_renames_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn WriteStorage> = Arc::new(LocalWriteStorage::default());
        let nested = dir.path().join("a/b");
        storage.create_dir_all(&nested).await.unwrap();
        storage.create_dir_all(&nested).await.unwrap();
        let partial = nested.join("f.partial");
        std::fs::write(&partial, vec![9u8; 100]).unwrap();
        let file = storage.create(&partial).await.unwrap();
        assert_eq!(file.path(), partial);
        // Out of order, one of them stable: the file is the bytes at their offsets.
        assert_eq!(file.write_at(4, bytes(b"5678"), Stability::FileSync).await.unwrap(), 4);
        assert_eq!(file.write_at(0, bytes(b"1234"), Stability::Unstable).await.unwrap(), 4);
        file.sync().await.unwrap();
        file.close().await.unwrap();
        let done = nested.join("f");
        storage.rename(&partial, &done).await.unwrap();
        assert_eq!(std::fs::read(&done).unwrap(), b"12345678");
        assert!(!partial.exists());
        let stats = storage.stats();
        assert_eq!((stats.n_writes, stats.bytes, stats.n_syncs), (2, 8, 2));
        storage.remove(&done).await.unwrap();
        assert!(!done.exists());
        assert_eq!(storage.describe(), "local files (page cache)");
    }

    #[tokio::test]
    async fn errors_name_the_call_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let storage = LocalWriteStorage::default();
        let missing = dir.path().join("no/such/dir/f");
        let err = storage.create(&missing).await.err().unwrap();
        assert_eq!((err.kind, err.op), (StorageErrorKind::NotFound, WriteOp::Create));
        assert!(err.to_string().starts_with(&format!("cannot create {}: ", missing.display())), "{err}");
        let err = storage.remove(&missing).await.unwrap_err();
        assert!(err.to_string().starts_with("cannot remove "), "{err}");
        let err = storage.rename(&missing, &dir.path().join("g")).await.unwrap_err();
        assert!(err.to_string().contains("to ") && err.to_string().contains("/g"), "{err}");
        let as_storage: StorageError = err.into();
        assert_eq!(as_storage.kind, StorageErrorKind::NotFound);
        let err = storage.create(dir.path()).await.err().unwrap();
        assert!(err.to_string().contains(&dir.path().display().to_string()), "{err}");
    }

    #[tokio::test]
    async fn remove_dir_removes_an_empty_directory_and_refuses_one_that_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn WriteStorage> = Arc::new(LocalWriteStorage::default());
        let empty = dir.path().join("empty");
        storage.create_dir_all(&empty).await.unwrap();
        storage.remove_dir(&empty).await.unwrap();
        assert!(!empty.exists());

        // Never recursive: a directory holding a file is refused, and both stay.
        let full = dir.path().join("full");
        let file = full.join("frame.0000000.dpx");
        storage.create_dir_all(&full).await.unwrap();
        std::fs::write(&file, b"frame").unwrap();
        let err = storage.remove_dir(&full).await.unwrap_err();
        assert_eq!(err.op, WriteOp::RemoveDir);
        let prefix = format!("cannot remove the directory {}: ", full.display());
        assert!(err.to_string().starts_with(&prefix), "{err}");
        assert!(err.reason.to_lowercase().contains("not empty"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"frame");

        // A file is not a directory, and a missing directory is NotFound, as a missing file
        // is to `remove`.
        let err = storage.remove_dir(&file).await.unwrap_err();
        assert!(err.to_string().starts_with("cannot remove the directory "), "{err}");
        assert!(file.exists());
        let err = storage.remove_dir(&empty).await.unwrap_err();
        assert_eq!((err.kind, err.op), (StorageErrorKind::NotFound, WriteOp::RemoveDir));
    }

    #[test]
    fn outside_a_runtime_is_an_error_not_a_panic() {
        let storage = LocalWriteStorage::default();
        let done = futures_util::FutureExt::now_or_never(storage.create(Path::new("/tmp/x")));
        let err = done.unwrap().err().unwrap();
        assert!(err.reason.contains("not inside a tokio runtime"), "{err}");
    }

    #[tokio::test]
    async fn direct_writes_are_aligned_padded_and_trimmed() {
        // The target directory is on a disk filesystem, which has direct I/O; procfs and old
        // tmpfs have none, and their refusal is checked instead.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let storage =
            LocalWriteStorage::new(LocalWriteOptions { direct: true, ..LocalWriteOptions::default() });
        assert_eq!(storage.describe(), "local files with O_DIRECT");
        let path = dir.path().join("direct");
        let file = match storage.create(&path).await {
            Ok(file) => file,
            Err(err) => {
                assert_eq!(err.kind, StorageErrorKind::Invalid, "{err}");
                assert!(err.reason.contains("O_DIRECT is not supported"), "{err}");
                return;
            }
        };
        let head: Vec<u8> = (0..8192u32).map(|i| i as u8).collect();
        let tail: Vec<u8> = (0..(DIRECT_CHUNK as u32 + 1000)).map(|i| (i % 251) as u8).collect();
        file.write_at(0, bytes(&head), Stability::Unstable).await.unwrap();
        let err = file.write_at(100, bytes(b"x"), Stability::Unstable).await.unwrap_err();
        assert!(err.to_string().contains("offset 100 is not a multiple of 4096"), "{err}");
        file.write_at(8192, bytes(&tail), Stability::DataSync).await.unwrap();
        file.close().await.unwrap();
        let written = std::fs::read(&path).unwrap();
        assert_eq!(written.len(), head.len() + tail.len());
        assert!(written[..8192] == head[..] && written[8192..] == tail[..]);
        let stats = storage.stats();
        assert_eq!((stats.n_writes, stats.bytes, stats.n_syncs), (2, written.len() as u64, 1));
    }
}
