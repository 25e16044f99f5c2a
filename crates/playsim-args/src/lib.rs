//! The `playsim` command line's arguments: each subcommand's clap struct and the value parsers
//! its flags use, so that the binary (`src/`) holds the wiring and nothing else. Every flag's
//! help is its doc comment here; a run knob that is also a scenario key is a row of the
//! settings list (`playsim-settings`), and a transport's own knobs come from the registry
//! (`TransportKnobs`).
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used)]

pub mod frametest;
pub mod matrix;
pub mod play;
pub mod record;
pub mod run;
