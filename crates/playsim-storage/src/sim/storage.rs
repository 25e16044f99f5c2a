//! [`SimStorage`]: objects held in memory, read over a [`SimLink`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use playsim_core::{
    splitmix64, DirEntry, EntryKind, IoBuf, Storage, StorageError, StorageErrorKind, StorageFile,
    StorageInfo, StorageStats,
};

use super::link::SimLink;

/// One object of a [`SimStorage`]: its bytes (or only a size), and whether reading it fails.
#[derive(Clone, Debug)]
pub struct SimObject {
    size: u64,
    content: Option<Arc<[u8]>>,
    fault: Option<String>,
}

impl SimObject {
    /// An object holding `content`; objects may share one allocation.
    pub fn bytes(content: Arc<[u8]>) -> SimObject {
        SimObject { size: content.len() as u64, content: Some(content), fault: None }
    }

    /// An object of `size` bytes whose contents are unspecified: reads cross the link and
    /// fill the buffer's length without copying anything (raw frames nobody decodes).
    pub fn sized(size: u64) -> SimObject {
        SimObject { size, content: None, fault: None }
    }

    /// Makes every read of the object fail, after its bytes have crossed the link, with
    /// `reason` (which should name what is wrong, e.g. the frame index).
    pub fn unreadable(mut self, reason: impl Into<String>) -> SimObject {
        self.fault = Some(reason.into());
        self
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// A [`Storage`] over objects held in memory. Reads through [`SimStorage::reader`] cross a
/// [`SimLink`]: they take the time the link's bandwidth, latency and jitter give them, on
/// the link's clock. The storage itself (with no link) answers at once, for finding and
/// probing a source without counting against any stream.
///
/// Every reader counts its own requests (one per block of `block_size`) and bytes.
#[derive(Clone)]
pub struct SimStorage {
    objects: Arc<HashMap<PathBuf, SimObject>>,
    link: Option<(Arc<SimLink>, u64)>,
    block_size: usize,
    options: Vec<(String, String)>,
    n_reads: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl SimStorage {
    /// A storage of `objects`, by path, counting one read per `block_size` bytes (at least 1).
    pub fn new(objects: HashMap<PathBuf, SimObject>, block_size: usize) -> SimStorage {
        SimStorage {
            objects: Arc::new(objects),
            link: None,
            block_size: block_size.max(1),
            options: Vec::new(),
            n_reads: Arc::default(),
            bytes: Arc::default(),
        }
    }

    /// Adds settings for the report's storage options (after the link's own), e.g. what
    /// the objects are.
    pub fn with_options(mut self, options: Vec<(String, String)>) -> SimStorage {
        self.options = options;
        self
    }

    /// A storage of one stream's own over the same objects, reading over `link`, with
    /// counters of its own. Its jitter draws are keyed by the order it joined the link in.
    pub fn reader(&self, link: Arc<SimLink>) -> SimStorage {
        let stream = link.next_stream();
        SimStorage {
            objects: Arc::clone(&self.objects),
            link: Some((link, stream)),
            block_size: self.block_size,
            options: self.options.clone(),
            n_reads: Arc::default(),
            bytes: Arc::default(),
        }
    }

    /// The link reads cross, if any.
    pub fn link(&self) -> Option<&Arc<SimLink>> {
        self.link.as_ref().map(|(link, _)| link)
    }
}

#[async_trait::async_trait]
impl Storage for SimStorage {
    fn info(&self) -> StorageInfo {
        let mut options = Vec::new();
        match &self.link {
            Some((link, _)) => {
                let name = if link.name().is_empty() { "(this stream's own)" } else { link.name() };
                options.push(("link".to_owned(), name.to_owned()));
                options.extend(link.params().describe());
            }
            None => options.push(("link".to_owned(), "none (instant)".to_owned())),
        }
        options.extend(self.options.iter().cloned());
        StorageInfo {
            transport: "sim".into(),
            block_size: self.block_size,
            direct: false,
            options,
            mount: None,
            warnings: Vec::new(),
        }
    }

    async fn open(&self, path: &Path) -> Result<Box<dyn StorageFile>, StorageError> {
        let Some(object) = self.objects.get(path) else {
            return Err(StorageError::new(
                StorageErrorKind::NotFound,
                format!("cannot open {}: no such simulated object", path.display()),
            ));
        };
        Ok(Box::new(SimFile { path: path.to_owned(), object: object.clone(), storage: self.clone() }))
    }

    fn stats(&self) -> StorageStats {
        StorageStats {
            n_reads: self.n_reads.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            cpu_ns: 0,
        }
    }

    async fn kind(&self, path: &Path) -> Result<Option<EntryKind>, StorageError> {
        if self.objects.contains_key(path) {
            return Ok(Some(EntryKind::File));
        }
        let is_dir = self.objects.keys().any(|p| p.parent() == Some(path));
        Ok(is_dir.then_some(EntryKind::Dir))
    }

    async fn list_dir(&self, dir: &Path) -> Result<Vec<DirEntry>, StorageError> {
        let entries: Vec<DirEntry> = self
            .objects
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .filter_map(|(p, o)| {
                let name = p.file_name()?.to_str()?.to_owned();
                Some(DirEntry { name, kind: EntryKind::File, size: o.size })
            })
            .collect();
        if entries.is_empty() {
            return Err(StorageError::new(
                StorageErrorKind::NotFound,
                format!("cannot list {}: no such simulated directory", dir.display()),
            ));
        }
        Ok(entries)
    }
}

struct SimFile {
    path: PathBuf,
    object: SimObject,
    storage: SimStorage,
}

#[async_trait::async_trait]
impl StorageFile for SimFile {
    fn size(&self) -> u64 {
        self.object.size
    }

    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError> {
        let available = self.object.size.saturating_sub(offset);
        let n = usize::try_from(available).unwrap_or(usize::MAX).min(len);
        if let Some((link, stream)) = &self.storage.link {
            let key = splitmix64(*stream) ^ splitmix64(path_hash(&self.path) ^ splitmix64(offset));
            link.request(*stream, n as u64, key).await;
        }
        let blocks = (n as u64).div_ceil(self.storage.block_size as u64);
        self.storage.n_reads.fetch_add(blocks, Ordering::Relaxed);
        if let Some(reason) = &self.object.fault {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                format!("cannot read {} at offset {offset}: {reason}", self.path.display()),
            ));
        }
        buf.prepare(n);
        if let Some(content) = &self.object.content {
            // `offset < size` whenever `n > 0`, and the content is `size` bytes long.
            let start = usize::try_from(offset).unwrap_or(usize::MAX).min(content.len());
            let end = start.saturating_add(n).min(content.len());
            let mut copy = || buf[..end - start].copy_from_slice(&content[start..end]);
            // A large frame's copy (an 8K DPX frame is 141 MB: tens of milliseconds) is the
            // work a real transport's copy out of the socket or page cache does; off the
            // runtime's worker threads it cannot delay a presenter waking for its deadline.
            let multi_thread = tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
            if multi_thread && n >= BIG_COPY {
                tokio::task::block_in_place(copy);
            } else {
                copy();
            }
        }
        self.storage.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    async fn close(self: Box<Self>) -> Result<(), StorageError> {
        Ok(())
    }
}

/// Copies of at least this many bytes leave the runtime's worker thread.
const BIG_COPY: usize = 4 << 20;

/// FNV-1a of the path's bytes: a hash that is the same in every process, unlike std's.
fn path_hash(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}
