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

/// A setting of [`EngineConfig`] that [`EngineConfig::validate`] can refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigField {
    /// [`EngineConfig::preroll`].
    Preroll,
    /// [`EngineConfig::prefetch`].
    Prefetch,
    /// [`EngineConfig::io_depth`].
    IoDepth,
    /// [`EngineConfig::decode_threads`].
    DecodeThreads,
    /// [`EngineConfig::output_threads`].
    OutputThreads,
    /// [`EngineConfig::codec_threads`].
    CodecThreads,
}

impl ConfigField {
    /// The field's name in [`EngineConfig`].
    pub fn name(self) -> &'static str {
        match self {
            ConfigField::Preroll => "preroll",
            ConfigField::Prefetch => "prefetch",
            ConfigField::IoDepth => "io_depth",
            ConfigField::DecodeThreads => "decode_threads",
            ConfigField::OutputThreads => "output_threads",
            ConfigField::CodecThreads => "codec_threads",
        }
    }

    /// A valid value, shown in refusals.
    pub fn example(self) -> u32 {
        match self {
            ConfigField::Preroll => 5,
            ConfigField::Prefetch => 8,
            ConfigField::IoDepth => 4,
            ConfigField::DecodeThreads => 4,
            ConfigField::OutputThreads | ConfigField::CodecThreads => 2,
        }
    }
}

/// Settings the engine refuses: a field, its value and the limit it broke. Its `Display`
/// names fields as [`EngineConfig`] does; [`ConfigError::spelt`] names them as the user
/// wrote them (`--prefetch 8` on the command line, `prefetch = 8` in a scenario).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A count that must be 1 or more is 0.
    #[error("{}", self.spelt(&plain_spelling))]
    BelowOne {
        /// The field at 0.
        field: ConfigField,
    },
    /// `field` is `value`, more than `limit_field`'s `limit` allows.
    #[error("{}", self.spelt(&plain_spelling))]
    Exceeds {
        /// The field too large.
        field: ConfigField,
        /// Its value.
        value: u32,
        /// The field that bounds it.
        limit_field: ConfigField,
        /// That field's value.
        limit: u32,
    },
}

impl ConfigError {
    /// The field at fault (the first to change).
    pub fn field(&self) -> ConfigField {
        match self {
            ConfigError::BelowOne { field } | ConfigError::Exceeds { field, .. } => *field,
        }
    }

    /// The other field involved, if any.
    pub fn limit_field(&self) -> Option<ConfigField> {
        match self {
            ConfigError::BelowOne { .. } => None,
            ConfigError::Exceeds { limit_field, .. } => Some(*limit_field),
        }
    }

    /// The message, each field spelt by `spell`: `spell(field, None)` is its name alone,
    /// `spell(field, Some(8))` the name given a value (`--prefetch 8`, `prefetch = 8`).
    pub fn spelt(&self, spell: &dyn Fn(ConfigField, Option<u32>) -> String) -> String {
        match *self {
            ConfigError::BelowOne { field } => format!(
                "{} must be at least 1 (for example {})",
                spell(field, None),
                spell(field, Some(field.example()))
            ),
            ConfigError::Exceeds { field, value, limit_field, limit } => format!(
                "{} cannot exceed {}: the {} frames must fit in the window (for example {} and {})",
                spell(field, Some(value)),
                spell(limit_field, Some(limit)),
                field.name(),
                spell(field, Some(field.example().min(limit_field.example()))),
                spell(limit_field, Some(limit_field.example()))
            ),
        }
    }
}

/// A field as [`EngineConfig`] names it: `prefetch`, `prefetch 8`.
fn plain_spelling(field: ConfigField, value: Option<u32>) -> String {
    match value {
        Some(value) => format!("{} {value}", field.name()),
        None => field.name().to_owned(),
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
    /// Bytes the frames in the run's prefetch windows (from their read until presented or
    /// dropped) may hold at once, over all streams: reads wait while more would be held. A
    /// stream's frame next due always reads, so a frame larger than this still plays.
    pub max_buffer: u64,
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
            max_buffer: default_max_buffer(),
        }
    }
}

/// The least [`default_max_buffer`] gives, however little memory is free.
pub const MIN_DEFAULT_MAX_BUFFER: u64 = 256 << 20;
/// The most [`default_max_buffer`] gives, however much memory is free.
pub const MAX_DEFAULT_MAX_BUFFER: u64 = 4 << 30;

/// A quarter of the memory available when first asked (`MemAvailable` of /proc/meminfo), at
/// least 256 MiB and at most 4 GiB; 1 GiB where /proc/meminfo cannot be read. Worked out once
/// per process, so every run (and every request made from the same settings) gets the same.
pub fn default_max_buffer() -> u64 {
    static DEFAULT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| {
        crate::probe::meminfo_bytes("MemAvailable").map_or(1 << 30, |available| {
            (available / 4).clamp(MIN_DEFAULT_MAX_BUFFER, MAX_DEFAULT_MAX_BUFFER)
        })
    })
}

/// All online CPUs.
pub fn default_decode_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

impl EngineConfig {
    /// Checks each setting's range and the settings against each other; the error names the
    /// field, its value and the limit, for the caller to spell as the user wrote it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [
            (ConfigField::Prefetch, self.prefetch),
            (ConfigField::IoDepth, self.io_depth),
            (ConfigField::DecodeThreads, self.decode_threads),
            (ConfigField::OutputThreads, self.output_threads),
            (ConfigField::CodecThreads, self.codec_threads),
        ] {
            if value == 0 {
                return Err(ConfigError::BelowOne { field });
            }
        }
        if self.preroll > self.prefetch {
            return Err(ConfigError::Exceeds {
                field: ConfigField::Preroll,
                value: self.preroll,
                limit_field: ConfigField::Prefetch,
                limit: self.prefetch,
            });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_field_its_value_and_the_limit() {
        let bad = EngineConfig { preroll: 9, prefetch: 8, ..EngineConfig::default() };
        let error = bad.validate().err();
        let expected = ConfigError::Exceeds {
            field: ConfigField::Preroll,
            value: 9,
            limit_field: ConfigField::Prefetch,
            limit: 8,
        };
        assert_eq!(error, Some(expected.clone()));
        assert!(expected.to_string().starts_with("preroll 9 cannot exceed prefetch 8"), "{expected}");
        assert!(expected.to_string().contains("for example preroll 5 and prefetch 8"), "{expected}");
        let bad = EngineConfig { io_depth: 0, ..EngineConfig::default() };
        assert_eq!(bad.validate(), Err(ConfigError::BelowOne { field: ConfigField::IoDepth }));
        let flags = |field: ConfigField, value: Option<u32>| {
            let flag = format!("--{}", field.name().replace('_', "-"));
            value.map_or_else(|| flag.clone(), |v| format!("{flag} {v}"))
        };
        let spelt = EngineConfig { output_threads: 0, ..EngineConfig::default() }
            .validate()
            .err()
            .map(|e| e.spelt(&flags));
        assert_eq!(
            spelt.as_deref(),
            Some("--output-threads must be at least 1 (for example --output-threads 2)")
        );
        assert!(EngineConfig::default().validate().is_ok());
    }
}
