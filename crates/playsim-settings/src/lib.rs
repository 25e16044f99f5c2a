//! playsim's settings: the one list of run knobs (each a command-line flag and a scenario key,
//! with its parser, default and range), the play request they make, and the scenario file.
//!
//! The list is [`knobs`]: one `macro_rules!` table that generates clap's flag groups (which
//! `play`, `capacity` and `decode` flatten), the scenario file's keys, the merge of a stream
//! over its run over the file, and the [`PlayRequest`] with every default applied. A knob is
//! added by one row there.
//!
//! ```
//! use playsim_settings::scenario::Scenario;
//! let text = "prefetch = 12\n[[stream]]\nsource = \"media/shot\"\nfps = 25\n";
//! let scenario = Scenario::parse(text, "demo.toml".as_ref()).expect("a valid scenario");
//! assert_eq!(scenario.runs[0].request.engine.prefetch, 12);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod knobs;
pub mod order;
pub mod parse;
pub mod request;
pub mod scenario;
#[cfg(test)]
mod testutil;
mod transport_knobs;
/// Byte sizes and durations as flags take them (in playsim-core, where transports' knobs parse them too).
pub use playsim_core::units;

pub use knobs::{DecoderKnobs, Knob, LocalReadKnobs, PlayKnobs, Settings};
pub use order::{FrameRange, PlayOrder};
pub use request::{PlayRequest, SourceSettings};
pub use transport_knobs::TransportKnobs;
