//! Wiring sources (local or `nfs://`) to the engine: source, storage, cold cache, frame rate, simulation.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{Clock, FrameExtent, Pacing, Source, Storage, WithoutDecode};
use playsim_engine::{EngineConfig, OwnDecodePool, PreciseClock, Simulation, StreamSpec};
use playsim_media::DecodeOptions;
use playsim_report::{ColdCache, Report, RunStatus, SCHEMA_VERSION};
use playsim_storage::nfs::NfsOptions;
use playsim_storage::{IoEngine, LocalOptions, LocalStorage, UringOptions};

use crate::location::{NamedSource, Place, Reader};
use crate::order::{FrameRange, PlayOrder};
use crate::Error;

/// What to play and how: sources on local disk or NFS, each by one or more streams on one clock.
#[derive(Clone, Debug)]
pub struct PlayRequest {
    /// Directories, patterns (`shot.%07d.dpx`, `shot.####.dpx`) or files of sequences,
    /// or video files (`.mov`, `.mp4`, `.mxf`, ...): local paths or `nfs://` URLs.
    pub sources: Vec<PathBuf>,
    /// Independent streams reading each source (`--streams N`), like N clients or multicam angles.
    pub streams_per_source: u32,
    /// Engine settings.
    pub engine: EngineConfig,
    /// Bytes per read request.
    pub block_size: usize,
    /// O_DIRECT reads.
    pub direct: bool,
    /// How local files are read: pread, or io_uring (which falls back to pread, saying why,
    /// where it is not available).
    pub io_engine: IoEngine,
    /// Drop the sequence's pages from the page cache before the run.
    pub cold: bool,
    /// Decoder settings (EXR backend, threads inside a frame, layer).
    pub decode: DecodeOptions,
    /// Play at the sources' own frame rate where they state one (video files), instead of
    /// `engine.pacing`; `--fps` on the command line turns this off.
    pub rate_from_source: bool,
    /// Settings of playsim's NFS client, for `nfs://` sources.
    pub nfs: NfsOptions,
    /// The order frames are played in.
    pub order: PlayOrder,
    /// The frame numbers to play, when not all.
    pub range: Option<FrameRange>,
    /// Read the frames and do not decode them (`--no-decode`, frametest's and fio's load):
    /// a frame is ready when its bytes are in, and there is no output stage.
    pub skip_decode: bool,
    /// Settings of each source's streams that differ from the request's (scenario files):
    /// empty, or one entry per source, in the order of `sources`.
    pub per_source: Vec<SourceSettings>,
}

/// Settings of one source's streams that differ from the request's; `None` keeps the
/// request's. All streams still share one clock and start together (after their offset).
#[derive(Clone, Debug, Default)]
pub struct SourceSettings {
    /// Streams reading this source [default: the request's `streams_per_source`].
    pub streams: Option<u32>,
    /// This source's frame rate or `Max` [default: the request's pacing].
    pub pacing: Option<Pacing>,
    /// How long after the run's start this source's first frame falls due.
    pub start_offset: Duration,
    /// A decode pool of this many threads for this source's streams alone
    /// [default: the pool all streams share].
    pub decode_threads: Option<u32>,
    /// Bytes per read request from local files [default: the request's].
    pub block_size: Option<usize>,
    /// O_DIRECT reads [default: the request's].
    pub direct: Option<bool>,
    /// How local files are read [default: the request's].
    pub io_engine: Option<IoEngine>,
    /// playsim's NFS client settings for an `nfs://` source [default: the request's].
    pub nfs: Option<NfsOptions>,
    /// Read this source's frames without decoding them [default: the request's].
    pub skip_decode: Option<bool>,
}

impl PlayRequest {
    /// Default settings for one stream of `source`.
    pub fn new(source: impl Into<PathBuf>) -> PlayRequest {
        PlayRequest {
            sources: vec![source.into()],
            streams_per_source: 1,
            engine: EngineConfig::default(),
            block_size: playsim_storage::DEFAULT_BLOCK_SIZE,
            direct: false,
            io_engine: IoEngine::Pread,
            cold: false,
            decode: DecodeOptions::default(),
            rate_from_source: false,
            nfs: NfsOptions::default(),
            order: PlayOrder::Forward,
            range: None,
            skip_decode: false,
            per_source: Vec::new(),
        }
    }
}

/// Opens the sources and storage and builds the simulation, ready to run.
///
/// Every stream gets its own storage, so its reads and their counters are its own,
/// as an independent reader's would be; all streams share the clock and the decode pool.
/// A video file's container is read at open through a storage of its own, so the
/// index reads are not counted as any stream's.
///
/// Must run inside a tokio runtime.
pub async fn prepare(request: &PlayRequest) -> Result<Simulation, Error> {
    if request.sources.is_empty() {
        return Err(Error::Engine("no source to play (for example target/demo/dpx-4k-dci)".into()));
    }
    if request.streams_per_source == 0 {
        return Err(Error::Engine("--streams must be at least 1 (for example --streams 4)".into()));
    }
    if !request.per_source.is_empty() && request.per_source.len() != request.sources.len() {
        return Err(Error::Engine(format!(
            "{} per-source settings for {} sources: give one per source, or none",
            request.per_source.len(),
            request.sources.len()
        )));
    }
    let default_settings = SourceSettings::default();
    let settings_of = |i: usize| request.per_source.get(i).unwrap_or(&default_settings);
    // The one clock of the run: the engine paces by it, and simulated storage (`sim://`)
    // times its transfers by it.
    let clock: Arc<dyn Clock> = Arc::new(PreciseClock::new());
    let mut sources = Vec::with_capacity(request.sources.len());
    for (i, location) in request.sources.iter().enumerate() {
        let settings = settings_of(i);
        let options = LocalOptions {
            block_size: settings.block_size.unwrap_or(request.block_size),
            direct: settings.direct.unwrap_or(request.direct),
            io_engine: settings.io_engine.unwrap_or(request.io_engine),
            uring: UringOptions::default(),
        };
        let nfs = settings.nfs.as_ref().unwrap_or(&request.nfs);
        let place = Place::find(location, options, nfs, &clock).await?;
        let source = place.open_source(&request.decode, request.engine.verify).await?;
        let source = NamedSource::wrap(source, &place, location);
        let source = crate::order::reorder(source, request.order, request.range)?;
        let source = if settings.skip_decode.unwrap_or(request.skip_decode) {
            if request.engine.verify {
                return Err(Error::Engine(
                    "--verify checks decoded pixels, and --no-decode decodes none: drop one of them \
                     (for example --no-decode alone)"
                        .into(),
                ));
            }
            Arc::new(WithoutDecode(source)) as Arc<dyn Source>
        } else {
            source
        };
        sources.push((place, source));
    }
    let mut engine = request.engine.clone();
    if request.rate_from_source {
        if let Some(rate) = source_rate(sources.iter().map(|(_, s)| s))? {
            engine.pacing = Pacing::Rate(rate);
        }
    }
    let mut builder = Simulation::builder().config(engine).clock(clock);
    if let Some(version) = playsim_exr::openexr_version() {
        builder = builder.library("openexr", &version);
    }
    if sources.iter().any(|(_, s)| s.info().index.is_some()) {
        builder = builder.library("ffmpeg", &playsim_ffmpeg::ffmpeg_version());
    }
    let mut n_streams = 0;
    for (i, (place, source)) in sources.into_iter().enumerate() {
        let settings = settings_of(i);
        let dimensions = probe_dimensions(source.as_ref(), place.index_storage()?.as_ref()).await;
        let decode_pool =
            settings.decode_threads.map(OwnDecodePool::start).transpose().map_err(Error::Engine)?;
        let n_readers = settings.streams.unwrap_or(request.streams_per_source);
        if n_readers == 0 {
            return Err(Error::Engine(format!(
                "source {} has 0 streams: give at least 1 (for example count = 2)",
                source.info().location
            )));
        }
        for reader in 0..n_readers {
            let storage = place.reader_storage().await?;
            // One reader drops the source's cached pages; the others would only repeat it.
            let cold = match (&storage, request.cold && reader == 0) {
                (Reader::Local(local), true) => drop_cache(local, source.as_ref()),
                (Reader::Nfs(_), true) => ColdCache {
                    requested: true,
                    files_dropped: 0,
                    message: Some(
                        "nfs: playsim's own client caches nothing, and the server's cache is the server's"
                            .into(),
                    ),
                },
                (Reader::Sim(_), true) => ColdCache {
                    requested: true,
                    files_dropped: 0,
                    message: Some("sim: the frames are served from memory; there is no cache to drop".into()),
                },
                (_, false) => ColdCache { requested: request.cold, ..ColdCache::default() },
            };
            let storage = storage.into_storage();
            let name = format!("stream {n_streams}");
            builder = builder.stream(StreamSpec {
                cold,
                dimensions,
                pacing: settings.pacing,
                start_offset: settings.start_offset,
                decode_pool: decode_pool.clone(),
                ..StreamSpec::new(name, Arc::clone(&source), storage)
            });
            n_streams += 1;
        }
    }
    builder.build().map_err(Error::Engine)
}

/// The rate the sources state, if any does; sources that state different rates are refused.
fn source_rate<'a>(
    sources: impl Iterator<Item = &'a Arc<dyn Source>>,
) -> Result<Option<playsim_core::FrameRate>, Error> {
    let stated: Vec<(String, playsim_core::FrameRate)> =
        sources.filter_map(|s| Some((s.info().location, s.frame_rate()?))).collect();
    let Some(&(_, first)) = stated.first() else { return Ok(None) };
    if stated.iter().all(|(_, r)| *r == first) {
        return Ok(Some(first));
    }
    let listed: Vec<String> = stated.iter().map(|(l, r)| format!("{l} at {r}")).collect();
    Err(Error::Engine(format!(
        "the sources play at different rates ({}); choose one with --fps, for example --fps {first}",
        listed.join(", ")
    )))
}

fn drop_cache(storage: &LocalStorage, source: &dyn Source) -> ColdCache {
    let mut paths: Vec<PathBuf> = (0..source.n_frames())
        .filter_map(|i| match source.extent(i) {
            FrameExtent::File { path } | FrameExtent::Range { path, .. } => Some(path),
            FrameExtent::Missing { .. } => None,
        })
        .collect();
    // A video file is one path for all its frames.
    paths.dedup();
    let outcome = storage.drop_cache(&paths);
    ColdCache { requested: true, files_dropped: outcome.files_dropped, message: outcome.message }
}

/// The frame size from the first readable frame header, when the format allows it cheaply,
/// read through the source's own storage (an `nfs://` source's paths are the server's).
async fn probe_dimensions(source: &dyn Source, storage: &dyn Storage) -> Option<(u32, u32)> {
    for i in 0..source.n_frames().min(16) {
        let FrameExtent::File { path } = source.extent(i) else { continue };
        let Ok(file) = storage.open(&path).await else { continue };
        let mut head = playsim_core::IoBuf::default();
        let read = file.read_at(0, file.size().min(2048) as usize, &mut head).await;
        let _ = file.close().await;
        if read.is_err() {
            continue;
        }
        if let Ok(header) = playsim_dpx::DpxHeader::parse(&head) {
            return Some((header.width, header.height));
        }
    }
    None
}

/// What the user should know about how the run's local files were read, one line each,
/// without repeats: io_uring asked for and not available (why, and the sysctl or profile
/// to change), or buffers it could not register (the locked-memory limit, and how to
/// raise it). Read from the report, so it covers what happened during the run.
pub fn storage_warnings(report: &Report) -> Vec<String> {
    let mut warnings: Vec<String> = Vec::new();
    for stream in &report.streams {
        let options = stream.storage.options.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        for warning in playsim_storage::local_warnings(options) {
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    warnings
}

/// Writes the request's play order and range into the report's settings (the engine knows
/// only the frames it was given).
pub fn note_request(request: &PlayRequest, report: &mut Report) {
    report.settings.order = request.order.name().to_owned();
    report.settings.seed = match request.order {
        PlayOrder::Random { seed } => Some(seed),
        _ => None,
    };
    report.settings.range = request.range.map(|r| r.to_string());
}

/// The report of a run that could not start, so that `--json` still gets one.
pub fn failed_report(request: &PlayRequest, error: &str) -> Report {
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        status: RunStatus::Failed,
        error: Some(error.to_owned()),
        playsim_version: env!("CARGO_PKG_VERSION").to_owned(),
        environment: playsim_engine::probe::environment(),
        settings: playsim_report::Settings {
            block_size: request.block_size as u64,
            direct: request.direct,
            cold: request.cold,
            ..playsim_engine::report_settings(&request.engine)
        },
        ..Default::default()
    };
    note_request(request, &mut report);
    report
}

#[cfg(test)]
mod tests {
    use playsim_report::{StorageReport, StreamReport};

    use super::*;

    fn stream(options: &[(&str, &str)]) -> StreamReport {
        StreamReport {
            storage: StorageReport {
                options: options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                ..StorageReport::default()
            },
            ..StreamReport::default()
        }
    }

    #[test]
    fn storage_warnings_are_said_once_for_all_streams() {
        let fallback =
            [("io_engine", "pread"), ("io_uring", "not available: io_uring_setup failed with EPERM")];
        let memlock =
            [("io_engine", "io_uring"), ("registered_buffers", "no: registering failed with ENOMEM")];
        let fine = [("io_engine", "io_uring"), ("registered_buffers", "yes: 4 buffers, 141.6 MB")];
        let report = Report {
            streams: vec![stream(&fallback), stream(&fallback), stream(&memlock), stream(&fine), stream(&[])],
            ..Report::default()
        };
        assert_eq!(
            storage_warnings(&report),
            [
                "io_uring is not available, so the reads used pread: io_uring_setup failed with EPERM",
                "io_uring read into unregistered buffers: registering failed with ENOMEM",
            ]
        );
    }
}
