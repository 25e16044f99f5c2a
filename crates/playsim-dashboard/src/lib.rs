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
//! caller fills from the live counters each time the dashboard asks. It has three parts:
//!
//! - [`draw`] draws a view into a ratatui frame, at any size (what does not fit is cut, least
//!   important first), and [`plain_text`] writes it as aligned text;
//! - [`Dashboard`] takes over a terminal ([`Target`]: standard output's, or a tty by its path)
//!   in raw mode on its alternate screen, and draws on a thread of its own, every refresh, until
//!   it is stopped, put away with `q` or Esc, or Ctrl-C (which it turns into the `SIGINT` raw
//!   mode holds back); the terminal is put back on every path, panics included, and the last
//!   counters are printed as text. Rank 0 under `mpirun` draws on its controlling terminal
//!   behind the launcher ([`Target::Launched`]), leaving the terminal's modes and Ctrl-C to
//!   `mpirun`;
//! - [`is_terminal_available`] (and [`check_terminal`], which says why not) says whether there
//!   is a terminal to draw on. The caller shows the dashboard only when asked (`--tui`), not
//!   with `--quiet`, and only when there is one: with output to a file or a pipe, or as a
//!   background job, it stays off.
//!
//! ```
//! use std::time::Duration;
//!
//! use playsim_dashboard::{draw, DashboardView, Drops, StreamView};
//! use ratatui::backend::TestBackend;
//! use ratatui::Terminal;
//!
//! let view = DashboardView {
//!     title: "playsim play /media/seq  DPX 4K 24 fps  1 stream".into(),
//!     elapsed: Duration::from_secs(90),
//!     planned: Some(Duration::from_secs(600)),
//!     streams: vec![StreamView {
//!         name: "seq".into(),
//!         presented: 2156,
//!         dropped: Drops { storage: 4, ..Drops::default() },
//!         buffered: 7,
//!         window: 8,
//!         slack_ms: vec![12.0, 9.5, -1.2, 15.0],
//!         mb_per_s: 1185.0,
//!         fps: 24.0,
//!     }],
//!     ..DashboardView::default()
//! };
//! let mut terminal = Terminal::new(TestBackend::new(80, 24))?;
//! terminal.draw(|frame| draw(frame, &view))?;
//! let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
//! assert!(screen.contains("video disk"));
//! assert!(screen.contains("2156"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! On a real terminal, with the view filled from the engine's live counters:
//!
//! ```no_run
//! use playsim_dashboard::{is_terminal_available, Dashboard, DashboardView, Target, DEFAULT_REFRESH};
//!
//! let target = Target::Stdout;
//! if is_terminal_available(&target) {
//!     let dashboard = Dashboard::start(target, DEFAULT_REFRESH, || DashboardView::default())?;
//!     // ... the run ...
//!     dashboard.stop()?;
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod backend;
mod dashboard;
mod draw;
mod fmt;
mod plain;
#[cfg(test)]
mod testutil;
mod tty;
mod view;

pub use dashboard::{Dashboard, DashboardBuilder, DEFAULT_REFRESH, MIN_REFRESH};
pub use draw::{draw, render};
pub use plain::plain_text;
pub use tty::{check_terminal, is_terminal_available, Target};
pub use view::{ClientView, DashboardView, Drops, StageView, StreamView};
