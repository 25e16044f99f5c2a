//! Every output playsim writes: the run's [`Report`] and the other models, each rendered
//! through one [`renderer::Renderer`] trait.
//!
//! The engine fills a [`Report`] at the end of a run (and on Ctrl-C or an
//! error, with [`RunStatus::Partial`] or [`RunStatus::Failed`]). Everything
//! else reads that one value, through the renderers that
//! [`renderer::register_enabled_renderers`] lists (looked up by name or by a file's extension,
//! and written atomically by [`renderer::write_atomic`]):
//!
//! - [`render::summary`] is the plain-text summary printed at the end of a run:
//!   dropped frames by cause as Flame counts them (video disk, CPU/GPU,
//!   broadcast, unreadable), frame and data rates as frametest reports them,
//!   per-stage latency percentiles and CPU use.
//! - [`json`] writes the report as JSON (atomically, to a file) and reads it back.
//! - [`schema`] gives the JSON schemas; `schema/` holds one file per JSON shape, and a
//!   test fails when a model and its file disagree.
//! - [`frametest`] (`playsim frametest`'s result: its model, summary, CSV and JSON),
//!   [`capacity`] (`playsim capacity`'s result), [`matrix`] (`playsim matrix`'s grid of formats
//!   by rates), [`tally`] (a scenario's runs over their
//!   repetitions), [`live_csv`] (a row of counters a second), [`record`] (`playsim record`'s
//!   result) and [`compare`] (runs side by side, playback or record) are the other models,
//!   each with its renderers.
//! - [`merge`] makes the reports of several clients (MPI ranks) one report on one time line,
//!   with a row per client; [`histograms`] keeps a run's latency histograms in the report in a
//!   compact form that merges exactly.
//! - `plot` and `compare_plot` draw the timeline and the comparison as SVG or PNG,
//!   `record_plot` a record run's timeline and `matrix_plot` the matrix's grid, behind the
//!   `render` feature (on by default), so that a crate that fills reports (the engine) does not
//!   compile plotters and resvg.
//! - `html` writes every model above as one self-contained HTML page (tables, the figures as
//!   inline SVG, the text summary), each figure tagged with its JSON pointer and value for a
//!   machine to check; also behind `render`.
//!
//! Latencies are gathered in hdrhistogram histograms of nanoseconds, one per
//! worker, merged at the end and summarised with
//! [`Percentiles::from_histogram_ns`]. Slack and pacing error can be negative,
//! so they go in a [`SignedHistogram`].
//!
//! ```
//! use playsim_report::{json, render, Report, SignedHistogram, SCHEMA_VERSION};
//!
//! let mut slack = SignedHistogram::new();
//! for ns in [-2_000_000, 5_000_000, 8_000_000] {
//!     slack.record(ns);
//! }
//! let mut report = Report { schema_version: SCHEMA_VERSION, ..Default::default() };
//! report.streams.push(Default::default());
//! report.streams[0].latency.slack = slack.percentiles();
//! // Within the histograms' 0.1 %, rounded away from zero.
//! let min_ms = report.streams[0].latency.slack.min_ms;
//! assert!(min_ms <= -2.0 && min_ms > -2.002, "{min_ms}");
//!
//! let text = render::summary(&report);
//! assert!(text.contains("dropped frames"));
//! let back = json::from_str(&json::to_string_pretty(&report))?;
//! assert_eq!(back, report);
//! # Ok::<(), playsim_report::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod error;
mod model;
mod percentiles;
#[cfg(test)]
mod testutil;

pub mod capacity;
pub mod compare;
#[cfg(feature = "render")]
pub mod compare_plot;
pub mod csv;
pub mod frametest;
pub mod histograms;
#[cfg(feature = "render")]
pub mod html;
pub mod json;
pub mod live_csv;
pub mod matrix;
#[cfg(feature = "render")]
pub mod matrix_plot;
pub mod merge;
#[cfg(feature = "render")]
pub mod plot;
pub mod record;
#[cfg(feature = "render")]
pub mod record_plot;
pub mod render;
pub mod renderer;
pub mod schema;
pub mod tally;

pub use error::Error;
pub use model::*;
pub use percentiles::{SignedHistogram, HISTOGRAM_SIGFIG};
