//! FFmpeg's demuxer reading through playsim's [`Storage`]: a blocking `Read + Seek`
//! over an async [`StorageFile`], run on a blocking thread of the tokio runtime.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use playsim_core::{IoBuf, StorageFile};
use tokio::runtime::Handle;

/// The open file and the counters of what the demuxer read, shared between the
/// reader FFmpeg owns and the opener that closes the file afterwards.
pub(crate) struct SharedFile {
    file: Mutex<Option<Box<dyn StorageFile>>>,
    /// Read requests the demuxer made.
    pub reads: AtomicU64,
    /// Bytes they delivered.
    pub bytes: AtomicU64,
}

impl SharedFile {
    pub fn new(file: Box<dyn StorageFile>) -> Arc<SharedFile> {
        Arc::new(SharedFile {
            file: Mutex::new(Some(file)),
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    /// Reads up to `len` bytes at `offset` into `buf`, waiting for the storage on this
    /// (blocking) thread, and counts the read. Returns the bytes now at the start of `buf`.
    fn read_into(&self, handle: &Handle, offset: u64, len: usize, buf: &mut IoBuf) -> io::Result<usize> {
        let guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let Some(file) = guard.as_ref() else {
            return Err(io::Error::other("the file is already closed"));
        };
        let n = handle.block_on(file.read_at(offset, len, buf)).map_err(|e| io::Error::other(e.message))?;
        let n = n.min(len).min(buf.len());
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    /// Reads up to `len` bytes at `offset`, outside FFmpeg's reader (which keeps its position).
    pub fn read_at(&self, handle: &Handle, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = IoBuf::default();
        let n = self.read_into(handle, offset, len, &mut buf)?;
        Ok(buf[..n].to_vec())
    }

    /// Takes the file back once FFmpeg is done with it, to close it.
    pub fn take(&self) -> Option<Box<dyn StorageFile>> {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A blocking reader at a position over a [`SharedFile`].
///
/// Every `read` is one [`StorageFile::read_at`], awaited with [`Handle::block_on`]:
/// it must run on a thread outside the runtime's async context (a blocking task).
pub(crate) struct StorageReader {
    shared: Arc<SharedFile>,
    handle: Handle,
    size: u64,
    pos: u64,
    buf: IoBuf,
}

impl StorageReader {
    pub fn new(shared: Arc<SharedFile>, size: u64, handle: Handle) -> StorageReader {
        StorageReader { shared, handle, size, pos: 0, buf: IoBuf::default() }
    }
}

impl Read for StorageReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let want = usize::try_from(self.size.saturating_sub(self.pos)).unwrap_or(usize::MAX).min(out.len());
        if want == 0 {
            return Ok(0);
        }
        let n = self.shared.read_into(&self.handle, self.pos, want, &mut self.buf)?;
        out[..n].copy_from_slice(&self.buf[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for StorageReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let Some(target) = target else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "seek before the start of the file"));
        };
        self.pos = target;
        Ok(target)
    }
}
