//! What playsim does with storage, over the transports this build registers: play a
//! request ([`prepare`]), search the most streams or the highest rate that play with no drop
//! ([`capacity`]), fill a will-it-play matrix ([`matrix`]), record ([`record`]), frametest's
//! reads and writes ([`frametest`]), hash every decoded frame ([`decode_md5`]), and play a
//! scenario file's runs ([`scenario`]).
//!
//! The engine (`playsim-engine`) plays one run on one clock; this crate turns what the user
//! asked for into runs: it opens locations through the transport registry
//! ([`register_enabled_transports`], one line a transport), finds sources, sizes the searches
//! and writes what record makes. The facade (`playsim`) re-exports it, and its CLI renders what
//! it returns.
//!
//! ```no_run
//! # async fn demo() -> Result<(), playsim_ops::Error> {
//! use playsim_ops::{PlayRequest, EngineConfig, Pacing};
//! let request = PlayRequest {
//!     engine: EngineConfig { pacing: "24".parse::<Pacing>()?, ..EngineConfig::default() },
//!     ..PlayRequest::new("target/demo/dpx-4k-dci")
//! };
//! let report = playsim_ops::prepare(&request).await?.run().await;
//! println!("{}", playsim_report::render::summary(&report));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod capacity;
mod decode;
mod events;
pub mod frametest;
mod inventory;
mod location;
pub mod matrix;
mod order;
mod play;
pub mod record;
pub mod rounds;
pub mod scenario;

pub use capacity::{
    capacity, capacity_watched, capacity_with, trial_of, trial_request, Capacity, CapacityBy,
    CapacityRequest, FirstDrop, Trial, TrialWatch,
};
pub use decode::{decode_md5, DecodeSummary};
pub use events::{Event, Events};
pub use inventory::inventory;
pub use location::{register_enabled_transports, transports};
pub use play::{failed_report, note_request, prepare, prepare_on, storage_warnings};
pub use playsim_core::{FramePreset, FrameRate, Pacing, ParseError};
pub use playsim_engine::{EngineConfig, OutputStage, Simulation};
pub use playsim_ffmpeg::VideoOptions;
pub use playsim_media::DecodeOptions;
pub use playsim_settings::{units, FrameRange, PlayOrder, PlayRequest, SourceSettings};

/// An error before a run could start: a source, storage or setting that cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A value given by the user was refused.
    Parse(ParseError),
    /// The source could not be opened.
    Source(playsim_media::Error),
    /// The storage could not be set up.
    Storage(playsim_storage::Error),
    /// The engine refused the settings.
    Engine(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Parse(e) => e.fmt(f),
            Error::Source(e) => e.fmt(f),
            Error::Storage(e) => e.fmt(f),
            Error::Engine(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Error {}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Error {
        Error::Parse(e)
    }
}

#[cfg(test)]
mod tests {
    /// playsim-ffmpeg names FFmpeg's threads what the engine looks for (neither crate depends
    /// on the other, so the name is written in both).
    #[test]
    fn ffmpeg_names_its_threads_as_the_engine_counts_them() {
        assert_eq!(playsim_ffmpeg::CODEC_THREAD_NAME, playsim_engine::probe::CODEC_THREAD_NAME);
    }
}
