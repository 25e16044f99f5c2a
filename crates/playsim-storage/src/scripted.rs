//! A scripted storage for engine tests: per-object sizes, latencies and failures,
//! timed with tokio's clock so tests run under a paused clock, exactly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{IoBuf, Storage, StorageError, StorageErrorKind, StorageFile, StorageInfo, StorageStats};

/// How one object behaves when opened and read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptedObject {
    /// Size in bytes.
    pub size: u64,
    /// Time `open` takes.
    pub open_latency: Duration,
    /// Time a whole `read_at` takes, however many bytes it asks for.
    pub read_latency: Duration,
    /// When set, `read_at` fails with this message after its latency.
    pub read_error: Option<String>,
    /// When set, `open` fails with this message.
    pub open_error: Option<String>,
    /// The bytes reads return; zeros when `None`.
    pub content: Option<Arc<[u8]>>,
}

impl ScriptedObject {
    /// An object of `size` bytes that reads in `read_latency`.
    pub fn new(size: u64, read_latency: Duration) -> ScriptedObject {
        ScriptedObject {
            size,
            open_latency: Duration::ZERO,
            read_latency,
            read_error: None,
            open_error: None,
            content: None,
        }
    }

    /// An object holding `content` (a real file's bytes, say) that reads in `read_latency`.
    pub fn with_content(content: Arc<[u8]>, read_latency: Duration) -> ScriptedObject {
        ScriptedObject {
            size: content.len() as u64,
            content: Some(content),
            ..ScriptedObject::new(0, read_latency)
        }
    }
}

/// A [`Storage`] whose every object follows a script. Reads return the object's
/// content, or zeros.
#[derive(Clone)]
pub struct ScriptedStorage {
    default: ScriptedObject,
    objects: Arc<HashMap<PathBuf, ScriptedObject>>,
    n_reads: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl ScriptedStorage {
    /// Every path not named otherwise behaves as `default`.
    pub fn new(default: ScriptedObject) -> ScriptedStorage {
        ScriptedStorage {
            default,
            objects: Arc::new(HashMap::new()),
            n_reads: Arc::default(),
            bytes: Arc::default(),
        }
    }

    /// Scripts one path.
    pub fn with_object(mut self, path: impl Into<PathBuf>, object: ScriptedObject) -> ScriptedStorage {
        Arc::make_mut(&mut self.objects).insert(path.into(), object);
        self
    }

    fn object(&self, path: &Path) -> &ScriptedObject {
        self.objects.get(path).unwrap_or(&self.default)
    }
}

#[async_trait::async_trait]
impl Storage for ScriptedStorage {
    fn info(&self) -> StorageInfo {
        StorageInfo {
            transport: "scripted".into(),
            block_size: 1 << 20,
            direct: false,
            options: Vec::new(),
            mount: None,
            warnings: Vec::new(),
        }
    }

    async fn open(&self, path: &Path) -> Result<Box<dyn StorageFile>, StorageError> {
        let object = self.object(path).clone();
        tokio::time::sleep(object.open_latency).await;
        if let Some(msg) = &object.open_error {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                format!("cannot open {}: {msg}", path.display()),
            ));
        }
        Ok(Box::new(ScriptedFile {
            path: path.to_owned(),
            object,
            n_reads: Arc::clone(&self.n_reads),
            bytes: Arc::clone(&self.bytes),
        }))
    }

    fn stats(&self) -> StorageStats {
        StorageStats {
            n_reads: self.n_reads.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            cpu_ns: 0,
        }
    }
}

struct ScriptedFile {
    path: PathBuf,
    object: ScriptedObject,
    n_reads: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl StorageFile for ScriptedFile {
    fn size(&self) -> u64 {
        self.object.size
    }

    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError> {
        tokio::time::sleep(self.object.read_latency).await;
        if let Some(msg) = &self.object.read_error {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                format!("cannot read {} at offset {offset}: {msg}", self.path.display()),
            ));
        }
        let available = self.object.size.saturating_sub(offset);
        let n = usize::try_from(available).unwrap_or(usize::MAX).min(len);
        buf.prepare(n);
        if let Some(content) = &self.object.content {
            let start = usize::try_from(offset).unwrap_or(usize::MAX).min(content.len());
            buf[..n].copy_from_slice(&content[start..start + n]);
        }
        self.n_reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    async fn close(self: Box<Self>) -> Result<(), StorageError> {
        Ok(())
    }
}
