//! Where a source lives: a local path (or kernel mount), an `nfs://` URL read with
//! playsim's own NFS client, or a `sim://` URL whose frames are made in memory and read
//! over a simulated link. Each gives the path the storage knows the source by.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use playsim_core::{Clock, Decoder, FrameExtent, FrameRate, Source, SourceInfo, Storage};
use playsim_media::{DecodeOptions, SimDist, SimFrames, SimUrl};
use playsim_storage::nfs::{NfsOptions, NfsStorage, NfsUrl};
use playsim_storage::sim::{JitterDist, LinkParams, SimLink, SimObject, SimStorage};
use playsim_storage::{IoEngine, LocalOptions, LocalStorage};

use crate::Error;

/// A source's place: the storage to find it through, and its path on that storage.
pub(crate) enum Place {
    /// A local path, read through the kernel.
    Local { path: PathBuf, options: LocalOptions },
    /// A path on an NFS server, read by playsim's client; `index` found the source.
    Nfs { path: PathBuf, index: Arc<NfsStorage> },
    /// Frames made in memory (`sim://`): `index` serves them at once; each reader reads
    /// them over `link`, the run's link of that name, or over a link of its own when the
    /// URL names none (`params`, timed by `clock`).
    Sim {
        pattern: PathBuf,
        frames: Arc<SimFrames>,
        index: SimStorage,
        link: Option<Arc<SimLink>>,
        params: LinkParams,
        clock: Arc<dyn Clock>,
    },
}

impl Place {
    /// Connects to the server when `location` is an `nfs://` URL, so that a bad URL, host,
    /// port, export or path is refused here, naming the part at fault. Makes the frames of a
    /// `sim://` URL, and finds its link: the sources of one run (which share `clock`) that
    /// name the same link share it.
    pub async fn find(
        location: &Path,
        local: LocalOptions,
        nfs: &NfsOptions,
        clock: &Arc<dyn Clock>,
    ) -> Result<Place, Error> {
        let text = location.to_string_lossy();
        if SimUrl::is_sim_url(&text) {
            return Place::sim(&text, local.block_size, clock).await;
        }
        if !NfsUrl::is_nfs_url(&text) {
            return Ok(Place::Local { path: location.to_owned(), options: local });
        }
        let url = NfsUrl::parse(&text).map_err(Error::Storage)?;
        let storage = NfsStorage::connect(&url, nfs).await.map_err(Error::Storage)?;
        Ok(Place::Nfs { path: PathBuf::from(url.path()), index: Arc::new(storage) })
    }

    /// The `sim://` place of `text`: its frames made in memory (on a blocking thread; each
    /// of the distinct frames is rendered and encoded once), its link found or made.
    async fn sim(text: &str, block_size: usize, clock: &Arc<dyn Clock>) -> Result<Place, Error> {
        let url = SimUrl::parse(text)?;
        let params = LinkParams {
            bits_per_s: url.bits_per_s,
            latency: url.latency,
            jitter: url.jitter,
            dist: match url.dist {
                SimDist::Exp => JitterDist::Exp,
                SimDist::Uniform => JitterDist::Uniform,
            },
            seed: url.seed.unwrap_or_else(run_seed),
        };
        let link = match url.link.as_str() {
            "" => None,
            name => Some(SimLink::shared(name, params, clock).map_err(Error::Storage)?),
        };
        let pattern = url.pattern_path();
        let frames = tokio::task::spawn_blocking(move || SimFrames::generate(&url))
            .await
            .map_err(|e| Error::Engine(format!("the frame generator for {text} stopped: {e}")))?
            .map_err(Error::Source)?;
        let objects: HashMap<PathBuf, SimObject> = (0..frames.n_frames())
            .map(|idx| {
                let frame = frames.frame(idx);
                let object = match frame.content {
                    Some(bytes) => SimObject::bytes(bytes),
                    None => SimObject::sized(frame.size),
                };
                let object = match frame.fault {
                    Some(reason) => object.unreadable(reason),
                    None => object,
                };
                (frame.path, object)
            })
            .collect();
        let index = SimStorage::new(objects, block_size).with_options(frames.url().describe());
        Ok(Place::Sim { pattern, frames: Arc::new(frames), index, link, params, clock: Arc::clone(clock) })
    }

    /// The path of the source on its storage.
    pub fn path(&self) -> &Path {
        match self {
            Place::Local { path, .. } | Place::Nfs { path, .. } => path,
            Place::Sim { pattern, .. } => pattern,
        }
    }

    /// Opens the source: a `sim://` URL's frames as they were made, anything else by
    /// [`playsim_media::open_location`] through the index storage.
    ///
    /// `--verify` checks the index in each frame's pixels, so a `sim://` source whose frames
    /// repeat (fewer `distinct` than `frames`) is refused with it, saying how to allow it.
    pub async fn open_source(&self, decode: &DecodeOptions, verify: bool) -> Result<Arc<dyn Source>, Error> {
        let Place::Sim { frames, .. } = self else {
            return playsim_media::open_location(self.path(), decode, self.index_storage()?)
                .await
                .map_err(Error::Source);
        };
        let url = frames.url();
        if verify && (url.distinct < url.frames || url.extension() == "raw") {
            let why = if url.extension() == "raw" {
                "raw frames (frame_bytes) have no pixels to check".to_owned()
            } else {
                format!(
                    "only {} distinct frames are made and frame k is copy k mod {}, so the index in \
                     the pixels is not k; give distinct=N equal to frames=N (for example \
                     sim://lan?preset=hd&frames=48&distinct=48), or leave --verify out",
                    url.distinct, url.distinct
                )
            };
            return Err(Error::Engine(format!("--verify cannot check {}: {why}", url.url)));
        }
        Ok(frames.source(decode))
    }

    /// The storage that finds the source (lists the sequence, indexes the container).
    /// Local sources are found with pread whatever the readers use: the few small reads of
    /// a listing or an index are not worth a ring and its thread.
    pub fn index_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        match self {
            Place::Local { options, path } => {
                let options = LocalOptions { io_engine: IoEngine::Pread, ..*options };
                Ok(Arc::new(LocalStorage::new(options).map_err(Error::Storage)?.label_mount_of(path)))
            }
            Place::Nfs { index, .. } => Ok(Arc::clone(index) as Arc<dyn Storage>),
            Place::Sim { index, .. } => Ok(Arc::new(index.clone())),
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
            Place::Sim { index, link, params, clock, .. } => {
                let link = match link {
                    Some(shared) => Arc::clone(shared),
                    None => SimLink::new("", *params, Arc::clone(clock)),
                };
                Ok(Reader::Sim(index.reader(link)))
            }
        }
    }
}

/// The jitter seed of `sim://` URLs that give none: drawn once per process, so that the
/// URLs naming one link agree on it, and shown in the report so a run can be repeated.
fn run_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().build_hasher().finish())
}

/// One reader's storage.
pub(crate) enum Reader {
    Local(LocalStorage),
    Nfs(NfsStorage),
    Sim(SimStorage),
}

impl Reader {
    pub fn into_storage(self) -> Arc<dyn Storage> {
        match self {
            Reader::Local(s) => Arc::new(s),
            Reader::Nfs(s) => Arc::new(s),
            Reader::Sim(s) => Arc::new(s),
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
            // A `sim://` source is already named by its URL.
            Place::Local { .. } | Place::Sim { .. } => source,
            Place::Nfs { .. } => {
                Arc::new(NamedSource { inner: source, location: location.to_string_lossy().into_owned() })
            }
        }
    }
}

impl Source for NamedSource {
    fn is_keyframe(&self, idx: u64) -> bool {
        self.inner.is_keyframe(idx)
    }

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
