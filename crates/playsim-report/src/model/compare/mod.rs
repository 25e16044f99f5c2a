//! Runs side by side: `playsim compare A.json B.json ...`.
//!
//! The first run is the baseline. Every later run's figures carry their difference from it
//! and their ratio to it, and, where one direction is better (more fps, fewer drops, less
//! CPU per GB), whether the change is better or worse.
//!
//! The runs are of one kind ([`Compared`]): playback reports (`play --json`, [`play`]'s
//! figures) or record runs (`record --json`, [`record`]'s figures). [`read`] tells the kind of
//! each file and refuses a mix.

#[cfg(feature = "render")]
mod panel;
mod play;
mod record;

#[cfg(feature = "render")]
pub(crate) use panel::{Bars, Panel, Part, Swatch};
pub use play::Measure;
pub use record::RecordMeasure;

use crate::model::record::RecordFigures;
use crate::model::Report;

/// One run to compare: the name it is shown under (its file, say) and its report, a playback
/// [`Report`] unless said.
#[derive(Debug)]
pub struct Run<'a, T = Report> {
    /// The column's heading.
    pub name: &'a str,
    /// The run's report.
    pub report: &'a T,
}

// By hand: a derive would ask `T: Copy`, and a run only holds references.
impl<T> Clone for Run<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Run<'_, T> {}

/// Reports read from files, all of one kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Reports {
    /// Playback reports (`playsim play --json`), each with its name.
    Play(Vec<(String, Report)>),
    /// Record runs' figures (`playsim record --json`), each with its name.
    Record(Vec<(String, RecordFigures)>),
}

/// Files that `compare` cannot put side by side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// A file is neither a playback report nor a record report: the error of reading it as a
    /// playback report.
    #[error("{name} is not a playsim report (write one with `playsim play SOURCE --json run.json`)")]
    NotAReport {
        /// The file.
        name: String,
        /// Why it is not a playback report.
        #[source]
        source: crate::Error,
    },
    /// Playback reports and record reports together.
    #[error(
        "cannot compare playback and record reports together: {} {} (playsim play --json), {} {} (playsim record --json); compare each kind on its own",
        list(play), if play.len() == 1 { "is a playback report" } else { "are playback reports" },
        list(record), if record.len() == 1 { "is a record report" } else { "are record reports" },
    )]
    Mixed {
        /// The playback reports.
        play: Vec<String>,
        /// The record reports.
        record: Vec<String>,
    },
}

fn list(names: &[String]) -> String {
    names.join(", ")
}

/// Reads `files` (each a name and its text) as reports of one kind: playback reports or record
/// reports, never a mix.
///
/// ```
/// use playsim_report::compare::{read, Reports};
/// use playsim_report::{json, Report, SCHEMA_VERSION};
/// let a = json::to_string_pretty(&Report { schema_version: SCHEMA_VERSION, ..Report::default() });
/// let reports = read(vec![("a.json".into(), a.clone()), ("b.json".into(), a)])?;
/// assert!(matches!(reports, Reports::Play(runs) if runs.len() == 2));
/// # Ok::<(), playsim_report::compare::ReadError>(())
/// ```
pub fn read(files: Vec<(String, String)>) -> Result<Reports, ReadError> {
    let mut play = Vec::new();
    let mut record = Vec::new();
    for (name, text) in files {
        match crate::model::wire::from_str(&text) {
            Ok(report) => play.push((name, report)),
            // A record run's figures have none of a report's fields, and a report none of theirs.
            Err(source) => match serde_json::from_str::<RecordFigures>(&text) {
                Ok(figures) => record.push((name, figures)),
                Err(_) => return Err(ReadError::NotAReport { name, source }),
            },
        }
    }
    match (play.is_empty(), record.is_empty()) {
        (false, false) => Err(ReadError::Mixed {
            play: play.into_iter().map(|(name, _)| name).collect(),
            record: record.into_iter().map(|(name, _)| name).collect(),
        }),
        (true, false) => Ok(Reports::Record(record)),
        _ => Ok(Reports::Play(play)),
    }
}

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// More is better (fps, MB/s).
    Higher,
    /// Less is better (drops, latency, CPU per GB).
    Lower,
}

/// A figure of a run, and how to show it: a row of the table, a bar of the plot.
#[derive(Clone, Copy, Debug)]
pub struct Figure<M> {
    pub(crate) measure: M,
    pub(crate) label: &'static str,
    pub(crate) decimals: usize,
    pub(crate) better: Better,
}

pub(crate) const fn fig<M>(measure: M, label: &'static str, decimals: usize, better: Better) -> Figure<M> {
    Figure { measure, label, decimals, better }
}

/// A text cell of a run: one row of what the run was.
pub type Describe<T> = fn(&T) -> String;

/// A kind of run that `compare` puts side by side: a playback [`Report`] or a record run's
/// [`RecordFigures`]. Each kind lists its figures once ([`Compared::FIGURES`]) and reads each
/// through its own `Measure`, so the table and the plot (`compare_plot`) cannot disagree; the
/// table's machinery is the same for every kind.
///
/// The trait is sealed: the kinds are this crate's models.
pub trait Compared: sealed::Sealed + Sized {
    /// A figure's name, read by [`Compared::value`].
    type Measure: Copy + PartialEq + std::fmt::Debug + 'static;

    /// What a file of this kind is called in messages: `playback report`, `record report`.
    const KIND: &'static str;

    /// The figures, in the order the table lists them.
    const FIGURES: &'static [Figure<Self::Measure>];

    /// The measure's value in this run.
    fn value(&self, measure: Self::Measure) -> f64;

    /// What each run was, row by row (the table's first rows, the plot's key), for `runs`.
    fn description(runs: &[Run<'_, Self>]) -> Vec<(&'static str, Describe<Self>)>;

    /// The comparison figure's panels.
    #[cfg(feature = "render")]
    #[doc(hidden)]
    fn panels() -> Vec<Panel<Self::Measure>>;

    /// The run's JSON form, as its file holds it: what the HTML page's figures are read from.
    #[cfg(feature = "render")]
    #[doc(hidden)]
    fn json(&self) -> serde_json::Value;

    /// Where the measure's value is in [`Compared::json`] (an RFC 6901 pointer), when it is one
    /// value of it (not a sum).
    #[cfg(feature = "render")]
    #[doc(hidden)]
    fn pointer(&self, measure: Self::Measure) -> Option<String>;
}

pub(crate) mod sealed {
    /// Only this crate's models are compared.
    pub trait Sealed {}
}

/// How `measure` is shown, from its kind's figures.
// Only the comparison plot asks, so a build without `render` leaves it unused.
#[cfg_attr(not(feature = "render"), allow(dead_code))]
pub(crate) fn figure_of<T: Compared>(measure: T::Measure) -> Option<&'static Figure<T::Measure>> {
    T::FIGURES.iter().find(|f| f.measure == measure)
}

/// The distinct values, in order, joined; `-` when there are none.
pub(crate) fn distinct(values: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    if seen.is_empty() {
        "-".to_owned()
    } else {
        seen.join(", ")
    }
}
