//! The `sim` transport: `sim://` URLs, whose frames are made in memory (see [`SimFrames`]) and
//! read over a simulated link (see [`playsim_storage::sim`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use playsim_core::{Clock, Source, Storage};
use playsim_storage::sim::{JitterDist, LinkParams, SimLink, SimObject, SimStorage};
use playsim_storage::transport::{Location, MediaAsked, OpenContext, Transport};
use playsim_storage::{ColdOutcome, Error, LocalOptions};

use crate::{DecodeOptions, SimDist, SimFrames, SimUrl, SIM_EXAMPLE};

/// Whether the run checks the index in each frame's pixels (`--verify`), which `sim://`
/// frames that repeat cannot pass: a typed option of the `sim` transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyFrames(pub bool);

/// `sim://link?bw=&lat=&jitter=&format=&preset=...`; options: [`DecodeOptions`] (the frames'
/// decoder), [`VerifyFrames`], and [`LocalOptions`]'s block size (the link's request size).
#[derive(Clone, Copy, Debug, Default)]
pub struct SimTransport;

#[async_trait::async_trait]
impl Transport for SimTransport {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["sim"]
    }

    fn example(&self) -> &'static str {
        SIM_EXAMPLE
    }

    fn cache_note(&self) -> Option<&'static str> {
        Some("sim:// frames are made in memory and cross the simulated link on every read: no page cache")
    }

    fn holds_files(&self) -> bool {
        false
    }

    /// `location` with the media's format, size and frames in its query (frames only when the
    /// location names none); only the matrix variants `sim://` serves
    /// ([`crate::MatrixVariant::sim_writer`]).
    fn made_media(&self, location: &str, asked: &MediaAsked<'_>) -> Option<Result<String, Error>> {
        Some(sim_media_url(location, asked))
    }

    /// Makes the frames (on a blocking thread; each distinct frame is rendered and encoded
    /// once) and finds the link: the sources of one run (which share the clock) that name
    /// the same link share it.
    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        let url = SimUrl::parse(location).map_err(|e| Error::Location(e.to_string()))?;
        let verify = context.options.get::<VerifyFrames>().0;
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
            return Err(Error::Location(format!("--verify cannot check {}: {why}", url.url)));
        }
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
            name => Some(SimLink::shared(name, params, &context.clock)?),
        };
        let pattern = url.pattern_path();
        let text = location.to_owned();
        let frames = tokio::task::spawn_blocking(move || SimFrames::generate(&url))
            .await
            .map_err(|e| Error::Location(format!("the frame generator for {text} stopped: {e}")))?
            .map_err(|e| Error::Location(e.to_string()))?;
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
        let block_size = context.options.get::<LocalOptions>().block_size;
        let index = SimStorage::new(objects, block_size).with_options(frames.url().describe());
        Ok(Arc::new(SimLocation {
            pattern,
            frames: Arc::new(frames),
            decode: context.options.get::<DecodeOptions>(),
            index,
            link,
            params,
            clock: Arc::clone(&context.clock),
        }))
    }
}

/// Frames made in memory: `index` serves them at once; each reader reads them over `link`,
/// the run's link of that name, or over a link of its own when the URL names none (`params`,
/// timed by `clock`).
struct SimLocation {
    pattern: PathBuf,
    frames: Arc<SimFrames>,
    decode: DecodeOptions,
    index: SimStorage,
    link: Option<Arc<SimLink>>,
    params: LinkParams,
    clock: Arc<dyn Clock>,
}

#[async_trait::async_trait]
impl Location for SimLocation {
    fn path(&self) -> &Path {
        &self.pattern
    }

    fn index_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        Ok(Arc::new(self.index.clone()))
    }

    async fn reader_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        let link = match &self.link {
            Some(shared) => Arc::clone(shared),
            None => SimLink::new("", self.params, Arc::clone(&self.clock)),
        };
        Ok(Arc::new(self.index.reader(link)))
    }

    fn drop_cache(&self, _paths: &[PathBuf]) -> ColdOutcome {
        ColdOutcome {
            files_dropped: 0,
            message: Some("sim: the frames are served from memory; there is no cache to drop".into()),
        }
    }

    fn describe(&self, _reader: &dyn Storage) -> String {
        format!("a simulated link ({})", self.frames.url().url)
    }

    fn own_source(&self) -> Option<Result<Arc<dyn Source>, Error>> {
        Some(Ok(self.frames.source(&self.decode)))
    }
}

/// The jitter seed of `sim://` URLs that give none: drawn once per process, so that the
/// URLs naming one link agree on it, and shown in the report so a run can be repeated.
fn run_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().build_hasher().finish())
}

/// The `sim://` URL that makes `asked` at `location` (see [`SimTransport::made_media`]): the
/// row's matrix variant (by its name, else its format's word) made by the writer that
/// `sim://` serves it with, options at their writer's default left out.
fn sim_media_url(location: &str, asked: &MediaAsked<'_>) -> Result<String, Error> {
    let variant = crate::parse_matrix_row(asked.name)
        .map(|(variant, _)| variant)
        .ok()
        .or_else(|| crate::matrix_variants().find(|v| v.word == asked.format));
    let Some((settings, writer)) = variant.and_then(|v| v.sim_writer()).and_then(|s| Some((s, s.writer()?)))
    else {
        let served: Vec<String> =
            crate::writers().filter(|w| w.in_sim && !w.clip).map(|w| w.name.to_uppercase()).collect();
        return Err(Error::Location(format!(
            "sim:// serves {} frames only: row {} cannot be simulated (for example --formats \
             dpx-4k-dci,exr-piz-uhd)",
            and_list(&served),
            asked.name
        )));
    };
    let options: Vec<(&str, &str)> = (settings.options.iter().copied())
        .filter(|(key, value)| writer.option(key).is_some_and(|o| o.default != *value))
        .collect();
    let mut format = format!("format={}", settings.name);
    for (key, value) in &options {
        format.push_str(&format!("&{key}={value}"));
    }
    let query = location.split_once('?').map_or("", |(_, q)| q);
    for key in ["format", "preset", "frame_bytes"].into_iter().chain(options.iter().map(|(k, _)| *k)) {
        if query.split('&').any(|pair| pair.split('=').next() == Some(key)) {
            return Err(Error::Location(format!(
                "the matrix sets {key}= of a sim:// location per row: leave it out (for example \
                 sim://lan?bw=10Gbit&lat=300us)"
            )));
        }
    }
    let separator = if location.contains('?') { '&' } else { '?' };
    let frames = if query.split('&').any(|pair| pair.starts_with("frames=")) {
        String::new()
    } else {
        format!("&frames={}", asked.frames)
    };
    Ok(format!("{location}{separator}{format}&preset={}x{}{frames}", asked.width, asked.height))
}

/// `items` joined by ", ", the last by " and ".
fn and_list(items: &[String]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.join(", "),
    }
}
