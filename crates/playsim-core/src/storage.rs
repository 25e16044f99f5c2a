//! The storage seam: positional reads from local disk, NFS, or a test script.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::IoBuf;

/// What went wrong in a storage call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StorageErrorKind {
    /// The object does not exist.
    NotFound,
    /// It exists but is not something that can be read as a frame (a directory).
    NotAFile,
    /// The transport failed (I/O error, connection lost).
    Io,
    /// The request is malformed for this transport (unaligned O_DIRECT read).
    Invalid,
    /// The transport gave up: its server did not answer within its time limit, through
    /// reconnects. Every later call would fail the same way, so the run ends.
    Unavailable,
    /// The transport cannot do this (a storage with no directory listing).
    Unsupported,
}

/// A storage call failed. The message names the path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StorageError {
    /// The kind of failure.
    pub kind: StorageErrorKind,
    /// Lower-case; names the path and, for reads, the offset.
    pub message: String,
}

impl StorageError {
    /// Builds an error of `kind`.
    pub fn new(kind: StorageErrorKind, message: impl Into<String>) -> StorageError {
        StorageError { kind, message: message.into() }
    }

    /// Maps an `io::Error` on `path`, keeping NotFound distinct.
    pub fn from_io(err: &std::io::Error, what: &str, path: &Path) -> StorageError {
        let kind = match err.kind() {
            std::io::ErrorKind::NotFound => StorageErrorKind::NotFound,
            std::io::ErrorKind::IsADirectory => StorageErrorKind::NotAFile,
            std::io::ErrorKind::InvalidInput => StorageErrorKind::Invalid,
            _ => StorageErrorKind::Io,
        };
        StorageError::new(kind, format!("cannot {what} {}: {err}", path.display()))
    }
}

/// The largest frame playsim reads into memory (4 GiB); a larger file or range is refused as
/// unreadable before anything is allocated for it.
pub const MAX_FRAME_BYTES: u64 = 4 << 30;

/// The length of a frame of `len` bytes at `path`, checked against [`MAX_FRAME_BYTES`]:
/// every reader of frames asks this before it allocates.
pub fn frame_len(path: &Path, len: u64) -> Result<usize, StorageError> {
    let too_large = || {
        StorageError::new(
            StorageErrorKind::Invalid,
            format!("{} is {len} bytes, more than the {MAX_FRAME_BYTES}-byte frame limit", path.display()),
        )
    };
    if len > MAX_FRAME_BYTES {
        return Err(too_large());
    }
    usize::try_from(len).map_err(|_| too_large())
}

/// `n` bytes read of the `want` asked for at `offset` of `path`: all of them, or a short-read
/// error naming the file and the offset.
pub fn whole_read(path: &Path, offset: u64, n: usize, want: u64) -> Result<u64, StorageError> {
    if (n as u64) < want {
        return Err(StorageError::new(
            StorageErrorKind::Io,
            format!("{}: short read, {n} of {want} bytes at offset {offset}", path.display()),
        ));
    }
    Ok(n as u64)
}

/// A description of a transport and its settings, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageInfo {
    /// "local", "nfs", "scripted", ...
    pub transport: String,
    /// Bytes per read request.
    pub block_size: usize,
    /// True when reads bypass the page cache (O_DIRECT).
    pub direct: bool,
    /// Transport-specific settings (mount options, server, ...), as key/value pairs.
    pub options: Vec<(String, String)>,
    /// The kernel mount the files are on, for local paths when it was looked up:
    /// how a "local" read actually travels (NFS over TCP or RDMA, SMB, a local disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<MountLabel>,
    /// What a user should know about how the reads went (io_uring not available, buffers
    /// not registered), as values a front end shows as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<StorageWarning>,
}

/// Something a user should know about how a storage read: one line that says what
/// happened, why, and what to change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageWarning {
    /// A stable name of its kind, e.g. `io_uring_unavailable`: what front ends group by.
    pub kind: String,
    /// The line to show.
    pub message: String,
}

impl StorageWarning {
    /// A warning of `kind` saying `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> StorageWarning {
        StorageWarning { kind: kind.into(), message: message.into() }
    }
}

impl std::fmt::Display for StorageWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The kernel mount under a local path, as the report shows it. The storage crate
/// fills it from /proc/self/mountinfo; this crate only carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountLabel {
    /// Where the filesystem is mounted, e.g. "/mnt/isilon".
    pub mount_point: String,
    /// The filesystem type, e.g. "nfs4", "cifs", "ext4".
    pub fstype: String,
    /// What is mounted, e.g. "10.0.0.5:/ifs/media" or "/dev/nvme0n1p2".
    pub source: String,
    /// How the bytes travel, e.g. "nfs over rdma", "nfs over tcp", "smb direct (rdma)", "local (ext4)".
    pub transport: String,
    /// The options that matter for reading (vers, proto, rsize, nconnect, hard, ...), in a
    /// fixed order; a flag without a value (hard, soft, rdma) has an empty value.
    pub options: Vec<(String, String)>,
}

/// Cumulative counters a transport keeps while it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageStats {
    /// Read requests issued (each up to one block).
    pub n_reads: u64,
    /// Bytes delivered.
    pub bytes: u64,
    /// CPU time spent by the threads doing the reads, in nanoseconds, where measurable.
    pub cpu_ns: u64,
}

/// What a path names, as a directory listing or a lookup reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A file (or anything else that is not a directory).
    File,
    /// A directory.
    Dir,
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (not a path); names that are not UTF-8 are left out of listings.
    pub name: String,
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes, as listed.
    pub size: u64,
}

/// A transport that frames are read from.
///
/// Paths are those of the transport's namespace: absolute local paths, or
/// paths inside an NFS export. The engine times every call, so a transport
/// never reads the clock.
#[async_trait::async_trait]
pub trait Storage: Send + Sync + 'static {
    /// The transport's description for the report.
    fn info(&self) -> StorageInfo;

    /// Opens one object (a frame file, or a video file read by ranges).
    async fn open(&self, path: &Path) -> Result<Box<dyn StorageFile>, StorageError>;

    /// Counters so far.
    fn stats(&self) -> StorageStats;

    /// What `path` is, or `None` when nothing is there. Sequence discovery asks this.
    async fn kind(&self, path: &Path) -> Result<Option<EntryKind>, StorageError> {
        Err(StorageError::new(
            StorageErrorKind::Unsupported,
            format!(
                "cannot look up {}: the {} transport has no lookup",
                path.display(),
                self.info().transport
            ),
        ))
    }

    /// The entries of directory `dir`, in no particular order, without `.` and `..`.
    async fn list_dir(&self, dir: &Path) -> Result<Vec<DirEntry>, StorageError> {
        Err(StorageError::new(
            StorageErrorKind::Unsupported,
            format!(
                "cannot list {}: the {} transport has no directory listing",
                dir.display(),
                self.info().transport
            ),
        ))
    }
}

/// An open object on a [`Storage`].
#[async_trait::async_trait]
pub trait StorageFile: Send + Sync {
    /// Size in bytes, as known at open.
    fn size(&self) -> u64;

    /// Reads `len` bytes at `offset` into `buf` (resized to hold them), in
    /// requests of the transport's block size. Returns the bytes read, fewer
    /// only at the end of the object. On error `buf`'s contents are unspecified.
    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError>;

    /// Closes the object.
    async fn close(self: Box<Self>) -> Result<(), StorageError>;
}
