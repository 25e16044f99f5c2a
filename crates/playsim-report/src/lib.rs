//! Every output playsim writes: the run's [`Report`] and the other models, each rendered
//! through one [`renderer::Renderer`] trait.
//!
//! The engine fills a [`Report`] at the end of a run (and on Ctrl-C or an
//! error, with [`RunStatus::Partial`] or [`RunStatus::Failed`]). Everything
//! else reads that one value, through its renderers.
//!
//! # Layers
//!
//! The crate is four layers, each module importing only from its own layer and those below
//! (a tidy test in `xtask/src/module_graph.rs` fails on any module cycle; test code may reach
//! across):
//!
//! 1. **Models** (`src/model/`): what each command's result is, knowing nothing of how it is
//!    written. The run's [`Report`] and its parts (`report.rs`), the merge of several clients'
//!    reports ([`merge`]), the histograms ([`histograms`], `percentiles.rs`), the JSON schemas
//!    ([`schema`]), the report as JSON holds it (`wire.rs`: read back with the version check,
//!    numbers made finite), and the other results: [`capacity`], [`matrix`] (with what each
//!    cell's search found, `CellState`), [`record`], [`frametest`], [`tally`], and what
//!    [`compare`] compares (the kinds of run, their figures, and the panels of the comparison
//!    figure, each part naming what it stands for rather than a colour).
//! 2. **Renderer infrastructure** (`src/rendering/`): the [`renderer::Renderer`] trait, the
//!    [`renderer::Renderers`] of a model (looked up by name or by a file's extension), the
//!    atomic write ([`renderer::write_atomic`]), and the helpers the drawn and marked-up formats
//!    share (XML/HTML escaping, colours as CSS writes them).
//! 3. **Formats** (`src/format/`): each renders models through the trait. The text summary
//!    ([`render::summary`]: dropped frames by cause as Flame counts them, frame and data rates
//!    as frametest reports them, per-stage latency percentiles and CPU use), [`json`], the
//!    per-frame [`csv`], [`live_csv`], each other model's text, JSON and CSV, and behind the
//!    `render` feature (on by default, so that a crate that fills reports, the engine, does not
//!    compile plotters and resvg) the plots (`plot`, `record_plot`, `compare_plot`,
//!    `matrix_plot`: SVG, or PNG rendered from it) and `html`, a self-contained page per model
//!    whose every figure is tagged with its JSON pointer and value. A format may draw with
//!    another's pieces (the page shows the plots inline) but never names the registry.
//! 4. **The registry** (`src/registry.rs`): the only module that names formats. Every
//!    `register_*` function ([`renderer::register_enabled_renderers`] for the run report,
//!    [`capacity::register_capacity_renderers`], ...) and the `Renderers::enabled()`,
//!    `::matrix()`, `::record()`, `::tally()`, `::compare()` shortcuts are there; a new format
//!    is a type in `format/` and one line here.
//!
//! The public paths are re-exports in this file: a path that has always held a model and its
//! formats together (`playsim_report::capacity`, `::matrix`, `::record`, `::frametest`,
//! `::tally`, `::compare`) joins the model's module, the format's and its registration, and
//! `renderer` joins the infrastructure with the registry's functions.
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
