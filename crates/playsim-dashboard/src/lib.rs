//! The live dashboard of a run (`playsim play --tui`, issue 23): what the engine counts, drawn
//! on the terminal while it runs.
//!
//! The dashboard shows, for each stream, the frames presented and dropped by cause with Flame's
//! names for its debug counters (`video disk` for storage, `CPU/GPU` for decode, `broadcast` for
//! output, `unreadable`), the data and frame rates, a gauge of the frames buffered against the
//! read-ahead window and a sparkline of the recent slack to the deadline (late frames marked
//! `!`); then each pipeline stage's CPU use and p99 latency, a row per client (MPI rank) in a
//! run on several, a status line, and the keys.
//!
//! This crate knows nothing of the engine: its input is a [`DashboardView`], plain data that the
//! caller fills from the live counters each time the dashboard asks. [`draw`] draws a view into
//! a ratatui frame, at any size (what does not fit is cut, least important first), and
//! [`plain_text`] writes it as aligned text.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod draw;
mod fmt;
mod plain;
#[cfg(test)]
mod testutil;
mod view;

pub use draw::{draw, render};
pub use plain::plain_text;
pub use view::{ClientView, DashboardView, Drops, StageView, StreamView};
