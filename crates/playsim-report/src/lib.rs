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

// The layers, each importing only from those above it in this list (the crate's docs say
// more): models, renderer infrastructure, formats, and the one registry.
mod format;
mod model;
mod registry;
mod rendering;
#[cfg(test)]
mod testutil;

// The public paths: each re-exports a layer's module, or joins a model with its formats and
// its registration where one path has always held both.
pub use format::csv;
pub use format::json;
pub use format::live_csv;
pub use format::text as render;
#[cfg(feature = "render")]
pub use format::{compare_plot, html, matrix_plot, plot, record_plot};
pub use model::{histograms, merge, schema};

pub mod capacity {
    //! The result of `playsim capacity`: its model ([`Capacity`]) and its text and JSON.
    pub use crate::format::capacity::*;
    pub use crate::model::capacity::*;
    pub use crate::registry::register_capacity_renderers;
}

pub mod compare {
    //! Runs side by side (`playsim compare A.json B.json ...`): the runs' kinds
    //! ([`Compared`]), reading them ([`read`]), and the table ([`compare()`]).
    pub use crate::format::compare::*;
    pub use crate::model::compare::*;
}

pub mod frametest {
    //! `playsim frametest`'s result: its model, summary, CSV and JSON.
    pub use crate::format::frametest::*;
    pub use crate::model::frametest::*;
    pub use crate::registry::register_frametest_renderers;
}

pub mod matrix {
    //! The result of `playsim matrix`: its grid ([`Matrix`]) and its text, JSON and CSV.
    pub use crate::format::matrix::*;
    pub use crate::model::matrix::*;
    pub use crate::registry::register_matrix_renderers;
}

pub mod record {
    //! `playsim record`'s result: its model, figures, summary, JSON and timeline CSV.
    pub use crate::format::record::*;
    pub use crate::model::record::*;
}

pub mod tally {
    //! A scenario's tally: its model ([`Tally`]) and its text.
    pub use crate::format::tally::*;
    pub use crate::model::tally::*;
    pub use crate::registry::register_tally_renderers;
}

pub mod renderer {
    //! One trait for every output ([`Renderer`]), the registries of each model's renderers,
    //! and an atomic write of a model to a file through a renderer ([`write_atomic`]).
    pub use crate::registry::{
        register_compare_renderers, register_enabled_renderers, register_record_renderers,
    };
    pub use crate::rendering::*;
}

pub use model::error::Error;
pub use model::percentiles::{SignedHistogram, HISTOGRAM_SIGFIG};
pub use model::report::*;
