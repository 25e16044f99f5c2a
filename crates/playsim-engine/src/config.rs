//! The engine's settings, with the defaults and the checks that keep them coherent.

use std::time::Duration;

use playsim_core::Pacing;

/// The work the output stage does per frame before its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputStage {
    /// Pack to 10-bit 4:2:2 v210 at the stream's resolution, as an SDI card's driver does.
    #[default]
    V210,
    /// No output work: a frame is ready when it is decoded.
    None,
}

impl OutputStage {
    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            OutputStage::V210 => "v210",
            OutputStage::None => "none",
        }
    }
}

/// How a run is paced and bounded, and how big each stage is.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// The frame rate, or `Max` for no pacing.
    pub pacing: Pacing,
    /// Frames that must be ready before frame 0 falls due (frametest's `-b`).
    pub preroll: u32,
    /// Frames the pipeline may hold between admission and presentation.
    pub prefetch: u32,
    /// Frame reads in flight at once, per stream.
    pub io_depth: u32,
    /// Frames decoding at once, over all streams: the decode pool's size.
    pub decode_threads: u32,
    /// The output stage's work.
    pub output: OutputStage,
    /// Frames each stream's output stage works on at once: its output threads.
    pub output_threads: u32,
    /// Frames to play per stream; `None` plays the source once (or forever with `loop_playback`).
    pub frames: Option<u64>,
    /// Playback time per stream; the frames due within it are played.
    pub duration: Option<Duration>,
    /// Start again at the source's first frame after its last.
    pub loop_playback: bool,
    /// Wait for late frames instead of dropping them, and report the stall.
    pub no_drop: bool,
    /// Check each decoded frame against the frame index in its pixels (synthetic media).
    pub verify: bool,
    /// Threads inside one frame's decode, for codecs that can use them (recorded in the report;
    /// the decoder is built with it).
    pub codec_threads: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            pacing: Pacing::Max,
            preroll: 5,
            prefetch: 8,
            io_depth: 4,
            decode_threads: default_decode_threads(),
            output: OutputStage::V210,
            output_threads: 1,
            frames: None,
            duration: None,
            loop_playback: false,
            no_drop: false,
            verify: false,
            codec_threads: 1,
        }
    }
}

/// All online CPUs.
pub fn default_decode_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

impl EngineConfig {
    /// Checks the settings against each other; the message shows valid values.
    pub fn validate(&self) -> Result<(), String> {
        if self.prefetch == 0 {
            return Err("--prefetch must be at least 1 (for example --prefetch 8)".into());
        }
        if self.io_depth == 0 {
            return Err("--io-depth must be at least 1 (for example --io-depth 4)".into());
        }
        if self.decode_threads == 0 {
            return Err("--decode-threads must be at least 1 (for example --decode-threads 4)".into());
        }
        if self.output_threads == 0 {
            return Err("--output-threads must be at least 1 (for example --output-threads 2)".into());
        }
        if self.codec_threads == 0 {
            return Err("--codec-threads must be at least 1 (for example --codec-threads 2)".into());
        }
        if self.preroll > self.prefetch {
            return Err(format!(
                "--preroll {} cannot exceed --prefetch {}: the preroll frames must fit in the window \
                 (for example --preroll 5 --prefetch 8)",
                self.preroll, self.prefetch
            ));
        }
        Ok(())
    }

    /// Frames one stream plays from a source of `source_frames` frames; `None` is unbounded.
    pub fn frames_to_play(&self, source_frames: u64) -> Option<u64> {
        let by_duration = match (self.duration, self.pacing) {
            (Some(d), Pacing::Rate(rate)) => Some(rate.frames_in(d)),
            _ => None,
        };
        let limit = match (self.frames, by_duration) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.loop_playback {
            limit
        } else {
            Some(limit.map_or(source_frames, |l| l.min(source_frames)))
        }
    }
}
