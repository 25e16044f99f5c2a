//! The play request: what to play and how, as the command line and scenario files make it
//! and the facade's `prepare` wires it.

use std::path::PathBuf;
use std::time::Duration;

use playsim_core::Pacing;
use playsim_engine::EngineConfig;
use playsim_media::DecodeOptions;
use playsim_storage::transport::TransportOptions;
use playsim_storage::{IoEngine, LocalOptions, UringOptions};

use crate::order::{FrameRange, PlayOrder};

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
    /// Every transport's own options (playsim's NFS and SMB clients', ...), each read by its
    /// transport; the local reads' are the fields above.
    pub transport: TransportOptions,
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
    /// The transports' options for this source, when its table gives a transport's knob
    /// (`nconnect = 4` for an `nfs://` source) [default: the request's].
    pub transport: Option<TransportOptions>,
    /// Read this source's frames without decoding them [default: the request's].
    pub skip_decode: Option<bool>,
}

impl PlayRequest {
    /// The typed options every transport reads its own from, for a source with `settings`.
    pub fn transport_options(&self, settings: &SourceSettings) -> TransportOptions {
        let local = LocalOptions {
            block_size: settings.block_size.unwrap_or(self.block_size),
            direct: settings.direct.unwrap_or(self.direct),
            io_engine: settings.io_engine.unwrap_or(self.io_engine),
            uring: UringOptions::default(),
        };
        settings
            .transport
            .clone()
            .unwrap_or_else(|| self.transport.clone())
            .with(local)
            .with(self.decode.clone())
            .with(playsim_media::VerifyFrames(self.engine.verify))
    }

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
            transport: TransportOptions::new(),
            order: PlayOrder::Forward,
            range: None,
            skip_decode: false,
            per_source: Vec::new(),
        }
    }
}
