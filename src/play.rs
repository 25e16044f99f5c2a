//! Wiring a local sequence to the engine: source, storage, cold cache, simulation.

use std::path::PathBuf;
use std::sync::Arc;

use playsim_core::{FrameExtent, Source, Storage};
use playsim_engine::{EngineConfig, Simulation, StreamSpec};
use playsim_media::DecodeOptions;
use playsim_report::{ColdCache, Report, RunStatus, SCHEMA_VERSION};
use playsim_storage::{LocalOptions, LocalStorage};

use crate::Error;

/// What to play and how: one source on local storage.
#[derive(Clone, Debug)]
pub struct PlayRequest {
    /// A directory, a pattern (`shot.%07d.dpx`, `shot.####.dpx`) or one file of a sequence.
    pub source: PathBuf,
    /// Engine settings.
    pub engine: EngineConfig,
    /// Bytes per read request.
    pub block_size: usize,
    /// O_DIRECT reads.
    pub direct: bool,
    /// Drop the sequence's pages from the page cache before the run.
    pub cold: bool,
    /// Decoder settings (EXR backend, threads inside a frame, layer).
    pub decode: DecodeOptions,
}

impl PlayRequest {
    /// Default settings for `source`.
    pub fn new(source: impl Into<PathBuf>) -> PlayRequest {
        PlayRequest {
            source: source.into(),
            engine: EngineConfig::default(),
            block_size: playsim_storage::DEFAULT_BLOCK_SIZE,
            direct: false,
            cold: false,
            decode: DecodeOptions::default(),
        }
    }
}

/// Opens the source and storage and builds the simulation, ready to run.
pub fn prepare(request: &PlayRequest) -> Result<Simulation, Error> {
    let source = playsim_media::open_source_with(&request.source, &request.decode).map_err(Error::Source)?;
    let storage = LocalStorage::new(LocalOptions { block_size: request.block_size, direct: request.direct })
        .map_err(Error::Storage)?;
    let cold = if request.cold { drop_cache(&storage, source.as_ref()) } else { ColdCache::default() };
    let dimensions = probe_dimensions(source.as_ref());
    let storage: Arc<dyn Storage> = Arc::new(storage);
    let mut builder = Simulation::builder();
    if let Some(version) = playsim_exr::openexr_version() {
        builder = builder.library("openexr", &version);
    }
    builder
        .config(request.engine.clone())
        .stream(StreamSpec { name: "stream 0".into(), source, storage, cold, dimensions })
        .build()
        .map_err(Error::Engine)
}

fn drop_cache(storage: &LocalStorage, source: &dyn Source) -> ColdCache {
    let paths: Vec<PathBuf> = (0..source.n_frames())
        .filter_map(|i| match source.extent(i) {
            FrameExtent::File { path } | FrameExtent::Range { path, .. } => Some(path),
            FrameExtent::Missing { .. } => None,
        })
        .collect();
    let outcome = storage.drop_cache(&paths);
    ColdCache { requested: true, files_dropped: outcome.files_dropped, message: outcome.message }
}

/// The frame size from the first readable frame header, when the format allows it cheaply.
fn probe_dimensions(source: &dyn Source) -> Option<(u32, u32)> {
    use std::io::Read;
    (0..source.n_frames().min(16)).find_map(|i| {
        let FrameExtent::File { path } = source.extent(i) else { return None };
        let mut head = Vec::with_capacity(2048);
        std::fs::File::open(path).ok()?.take(2048).read_to_end(&mut head).ok()?;
        let header = playsim_dpx::DpxHeader::parse(&head).ok()?;
        Some((header.width, header.height))
    })
}

/// The report of a run that could not start, so that `--json` still gets one.
pub fn failed_report(request: &PlayRequest, error: &str) -> Report {
    Report {
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
    }
}
