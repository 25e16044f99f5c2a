//! Where a source lives: a local path (or kernel mount), or an `nfs://` URL read with
//! playsim's own NFS client. Each gives the path the storage knows the source by.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::{Clock, Decoder, FrameExtent, FrameRate, Source, SourceInfo, Storage};
use playsim_storage::nfs::{NfsOptions, NfsStorage, NfsUrl};
use playsim_storage::{LocalOptions, LocalStorage};

use crate::Error;

/// A source's place: the storage to find it through, and its path on that storage.
pub(crate) enum Place {
    /// A local path, read through the kernel.
    Local { path: PathBuf, options: LocalOptions },
    /// A path on an NFS server, read by playsim's client; `index` found the source.
    Nfs { path: PathBuf, index: Arc<NfsStorage> },
}

impl Place {
    /// Connects to the server when `location` is an `nfs://` URL, so that a bad URL, host,
    /// port, export or path is refused here, naming the part at fault.
    pub async fn find(
        location: &Path,
        local: LocalOptions,
        nfs: &NfsOptions,
        _clock: &Arc<dyn Clock>,
    ) -> Result<Place, Error> {
        let text = location.to_string_lossy();
        if !NfsUrl::is_nfs_url(&text) {
            return Ok(Place::Local { path: location.to_owned(), options: local });
        }
        let url = NfsUrl::parse(&text).map_err(Error::Storage)?;
        let storage = NfsStorage::connect(&url, nfs).await.map_err(Error::Storage)?;
        Ok(Place::Nfs { path: PathBuf::from(url.path()), index: Arc::new(storage) })
    }

    /// The path of the source on its storage.
    pub fn path(&self) -> &Path {
        match self {
            Place::Local { path, .. } | Place::Nfs { path, .. } => path,
        }
    }

    /// The storage that finds the source (lists the sequence, indexes the container).
    pub fn index_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        match self {
            Place::Local { options, path } => {
                Ok(Arc::new(LocalStorage::new(*options).map_err(Error::Storage)?.label_mount_of(path)))
            }
            Place::Nfs { index, .. } => Ok(Arc::clone(index) as Arc<dyn Storage>),
        }
    }

    /// A storage of one reader's own: a new local storage, or a new NFS client with its own
    /// connections (and the index's handle cache, so no reader pays LOOKUPs).
    pub async fn reader_storage(&self) -> Result<Reader, Error> {
        match self {
            Place::Local { options, path } => {
                Ok(Reader::Local(LocalStorage::new(*options).map_err(Error::Storage)?.label_mount_of(path)))
            }
            Place::Nfs { index, .. } => {
                Ok(Reader::Nfs(index.another_client().await.map_err(Error::Storage)?))
            }
        }
    }
}

/// One reader's storage.
pub(crate) enum Reader {
    Local(LocalStorage),
    Nfs(NfsStorage),
}

impl Reader {
    pub fn into_storage(self) -> Arc<dyn Storage> {
        match self {
            Reader::Local(s) => Arc::new(s),
            Reader::Nfs(s) => Arc::new(s),
        }
    }
}

/// A source found on an NFS server, named in reports by the URL it was given as rather than
/// by its path on the server.
pub(crate) struct NamedSource {
    inner: Arc<dyn Source>,
    location: String,
}

impl NamedSource {
    /// `source`, named `location` when the place is an NFS URL; otherwise `source` itself.
    pub fn wrap(source: Arc<dyn Source>, place: &Place, location: &Path) -> Arc<dyn Source> {
        match place {
            Place::Local { .. } => source,
            Place::Nfs { .. } => {
                Arc::new(NamedSource { inner: source, location: location.to_string_lossy().into_owned() })
            }
        }
    }
}

impl Source for NamedSource {
    fn info(&self) -> SourceInfo {
        SourceInfo { location: self.location.clone(), ..self.inner.info() }
    }

    fn n_frames(&self) -> u64 {
        self.inner.n_frames()
    }

    fn frame_number(&self, idx: u64) -> u64 {
        self.inner.frame_number(idx)
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        self.inner.extent(idx)
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        self.inner.decoder()
    }

    fn frame_rate(&self) -> Option<FrameRate> {
        self.inner.frame_rate()
    }
}
