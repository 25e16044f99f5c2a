//! The live dashboard of a run (`playsim play --tui`, issue 23): what the engine counts, drawn
//! on the terminal while it runs.
//!
//! This crate knows nothing of the engine: its input is a [`DashboardView`], plain data that the
//! caller fills from the live counters each time the dashboard asks.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod view;

pub use view::{ClientView, DashboardView, Drops, StageView, StreamView};
