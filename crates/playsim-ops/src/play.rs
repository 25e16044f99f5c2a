//! Wiring sources (local or `nfs://`) to the engine: source, storage, cold cache, frame rate, simulation.

use std::path::PathBuf;
use std::sync::Arc;

use playsim_core::{Clock, FrameExtent, Pacing, Source, WithoutDecode};
use playsim_engine::{OwnDecodePool, Simulation, StartBarrier, StreamSpec};
use playsim_report::{ColdCache, Report, RunStatus, SCHEMA_VERSION};

use crate::{Error, PlayOrder, PlayRequest, SourceSettings};

/// Opens the sources and storage and builds the simulation, ready to run.
///
/// Every stream gets its own storage, so its reads and their counters are its own,
/// as an independent reader's would be; all streams share the clock and the decode pool.
/// A video file's container is read at open through a storage of its own, so the
/// index reads are not counted as any stream's.
///
/// Must run inside a tokio runtime.
pub async fn prepare(request: &PlayRequest) -> Result<Simulation, Error> {
    prepare_on(request, playsim_engine::RunClock::default().get(), None).await
}

/// [`prepare`] on a given clock, as one client of several when a `start_barrier` is given:
/// then playback starts when the barrier says, once this client's preroll is in.
///
/// Must run inside a tokio runtime.
pub async fn prepare_on(
    request: &PlayRequest,
    clock: Arc<dyn Clock>,
    start_barrier: Option<Arc<dyn StartBarrier>>,
) -> Result<Simulation, Error> {
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
    // `clock` is the one clock of the run: the engine paces by it, and simulated storage
    // (`sim://`) times its transfers by it.
    let mut sources = Vec::with_capacity(request.sources.len());
    for (i, path) in request.sources.iter().enumerate() {
        let settings = settings_of(i);
        let location = crate::location::open(path, request.transport_options(settings), &clock).await?;
        let source = crate::location::open_source(location.as_ref(), &request.decode).await?;
        if request.engine.verify && source.info().index.is_some() {
            return Err(Error::Engine(verify_refusal(&source.info().location)));
        }
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
        sources.push((location, source));
    }
    let mut engine = request.engine.clone();
    if request.rate_from_source {
        if let Some(rate) = source_rate(sources.iter().map(|(_, s)| s))? {
            engine.pacing = Pacing::Rate(rate);
        }
    }
    let mut builder =
        Simulation::builder().config(engine).clock(clock).frame_index_reader(playsim_media::read_frame_index);
    if let Some(barrier) = start_barrier {
        builder = builder.start_barrier(barrier);
    }
    if let Some(version) = playsim_exr::openexr_version() {
        builder = builder.library("openexr", &version);
    }
    #[cfg(feature = "ffmpeg")]
    if sources.iter().any(|(_, s)| s.info().index.is_some()) {
        builder = builder.library("ffmpeg", &playsim_ffmpeg::ffmpeg_version());
    }
    let mut n_streams = 0;
    for (i, (location, source)) in sources.into_iter().enumerate() {
        let settings = settings_of(i);
        let index = location.index_storage().map_err(Error::Storage)?;
        let dimensions = playsim_media::probe_dimensions(source.as_ref(), index.as_ref()).await;
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
            let storage = location.reader_storage().await.map_err(Error::Storage)?;
            // One reader drops the source's cached pages; the others would only repeat it.
            let cold = if request.cold && reader == 0 {
                let outcome = location.drop_cache(&source_paths(source.as_ref()));
                ColdCache { requested: true, files_dropped: outcome.files_dropped, message: outcome.message }
            } else {
                ColdCache { requested: request.cold, ..ColdCache::default() }
            };
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

/// Why `--verify` cannot check a video file: only the image sequences playsim generates carry
/// a frame index in their pixels (a video's pictures are the encoder's, and a lossy one would
/// blur the code anyway), so every frame would count as unreadable.
fn verify_refusal(location: &str) -> String {
    format!(
        "--verify (verify = true) checks the frame index playsim generate draws into an image \
         sequence's pixels, and the video file {location} carries none, so every frame would be \
         unreadable: play it without --verify, or verify a generated sequence (for example \
         playsim generate /tmp/seq --preset 2k --frames 48, then playsim play /tmp/seq --verify)"
    )
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

/// The files of `source`'s frames, each once: what a cold run drops from the cache.
fn source_paths(source: &dyn Source) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = (0..source.n_frames())
        .filter_map(|i| match source.extent(i) {
            FrameExtent::File { path } | FrameExtent::Range { path, .. } => Some(path),
            FrameExtent::Missing { .. } => None,
        })
        .collect();
    // A video file is one path for all its frames.
    paths.dedup();
    paths
}

/// What the user should know about how the run's storage read, one line each, without
/// repeats: io_uring asked for and not available (why, and the sysctl or profile to change),
/// or buffers it could not register (the locked-memory limit, and how to raise it). Read
/// from the report, so it covers what happened during the run.
pub fn storage_warnings(report: &Report) -> Vec<String> {
    let mut warnings: Vec<String> = Vec::new();
    for warning in report.streams.iter().flat_map(|s| &s.storage.warnings) {
        if !warnings.contains(&warning.message) {
            warnings.push(warning.message.clone());
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
    use playsim_report::{StorageReport, StreamReport, WarningReport};

    use super::*;

    fn stream(warnings: &[(&str, &str)]) -> StreamReport {
        StreamReport {
            storage: StorageReport {
                warnings: warnings
                    .iter()
                    .map(|(kind, message)| WarningReport {
                        kind: kind.to_string(),
                        message: message.to_string(),
                    })
                    .collect(),
                ..StorageReport::default()
            },
            ..StreamReport::default()
        }
    }

    #[test]
    fn storage_warnings_are_said_once_for_all_streams() {
        let fallback = [(
            "io_uring_unavailable",
            "io_uring is not available, so the reads used pread: io_uring_setup failed with EPERM",
        )];
        let memlock = [(
            "buffers_unregistered",
            "io_uring read into unregistered buffers: registering failed with ENOMEM",
        )];
        let report = Report {
            streams: vec![stream(&fallback), stream(&fallback), stream(&memlock), stream(&[])],
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
