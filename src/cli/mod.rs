//! Subcommands of the `playsim` binary that are big enough for a file of their own.
//! Each holds its clap arguments and its handler; `main.rs` dispatches to them and
//! keeps the value parsers they share.

pub mod frametest;
pub mod run;
