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
