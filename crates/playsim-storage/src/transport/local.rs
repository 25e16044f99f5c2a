//! The `local` transport: plain paths, read through the kernel (a local disk, or a kernel
//! NFS or SMB mount, which the report labels from mountinfo).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::Storage;

use super::{size_text, Location, OpenContext, Transport, TransportOptions};
use crate::write::{LocalWriteOptions, LocalWriteStorage, WriteStorage};
use crate::{ColdOutcome, Error, IoEngine, LocalOptions, LocalStorage};

/// Plain paths; options: [`LocalOptions`].
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalTransport;

#[async_trait::async_trait]
impl Transport for LocalTransport {
    fn name(&self) -> &'static str {
        "local"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &[]
    }

    fn example(&self) -> &'static str {
        "/mnt/nas/shot"
    }

    fn describe_options(&self, options: &TransportOptions) -> String {
        let local = options.get::<LocalOptions>();
        let mut text = format!("block {}", size_text(local.block_size));
        if local.direct {
            text.push_str(", O_DIRECT");
        }
        if local.io_engine == IoEngine::IoUring {
            text.push_str(", io_uring");
        }
        text
    }

    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        let options = context.options.get::<LocalOptions>();
        options.validate()?;
        Ok(Arc::new(LocalLocation { path: PathBuf::from(location), options }))
    }
}

/// A local path and how to read it.
#[derive(Debug)]
struct LocalLocation {
    path: PathBuf,
    options: LocalOptions,
}

#[async_trait::async_trait]
impl Location for LocalLocation {
    fn path(&self) -> &Path {
        &self.path
    }

    /// Found with pread whatever the readers use: the few small reads of a listing or an
    /// index are not worth a ring and its thread.
    fn index_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        let options = LocalOptions { io_engine: IoEngine::Pread, ..self.options };
        Ok(Arc::new(LocalStorage::new(options)?.label_mount_of(&self.path)))
    }

    async fn reader_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        Ok(Arc::new(LocalStorage::new(self.options)?.label_mount_of(&self.path)))
    }

    fn drop_cache(&self, paths: &[PathBuf]) -> ColdOutcome {
        match LocalStorage::new(self.options) {
            Ok(storage) => storage.drop_cache(paths),
            Err(e) => ColdOutcome { files_dropped: 0, message: Some(format!("cannot drop the cache: {e}")) },
        }
    }

    /// Writes with the engine of this location's [`LocalOptions`] (`io_engine`, `uring`):
    /// pwrite, or io_uring where it can be set up.
    async fn writer_storage(&self, direct: bool) -> Option<Result<Arc<dyn WriteStorage>, Error>> {
        let options =
            LocalWriteOptions { direct, io_engine: self.options.io_engine, uring: self.options.uring };
        Some(Ok(Arc::new(LocalWriteStorage::new(options))))
    }

    fn describe(&self, reader: &dyn Storage) -> String {
        let info = reader.info();
        let uring = info.options.iter().any(|(k, v)| k == "io_engine" && v == IoEngine::IoUring.name());
        let how = match (info.direct, uring) {
            (false, false) => "",
            (true, false) => " with O_DIRECT",
            (false, true) => " through io_uring",
            (true, true) => " with O_DIRECT through io_uring",
        };
        let mount =
            info.mount.map_or_else(String::new, |m| format!(", {} on {}", m.transport, m.mount_point));
        format!("local files{how}{mount}")
    }
}
