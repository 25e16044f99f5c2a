//! The result of `playsim matrix` ("will it play?"): a grid of formats by frame rates, each
//! cell the most streams that played with no drop (a capacity search), what stopped the next
//! one and the margin; rendered as text (printed), JSON (`--json`) and CSV (`--csv`, a line a
//! cell).
//!
//! The JSON shape is pinned by `schema/matrix.schema.json` (see [`crate::model::schema`]) and only
//! grows, as the other reports' do.
//!
//! ```
//! use playsim_report::matrix::{Matrix, MatrixCause, MatrixCell, MatrixRow, MatrixText};
//! use playsim_report::renderer::Renderer;
//!
//! let matrix = Matrix {
//!     rates: vec!["24".into()],
//!     max: 4,
//!     rows: vec![MatrixRow {
//!         name: "dpx-2k".into(),
//!         cells: vec![MatrixCell { fps: "24".into(), best_streams: 3, limit: Some(MatrixCause::Decode), ..MatrixCell::default() }],
//!         ..MatrixRow::default()
//!     }],
//!     ..Matrix::new(env!("CARGO_PKG_VERSION"))
//! };
//! let mut out = Vec::new();
//! MatrixText.render(&matrix, &mut out)?;
//! assert!(String::from_utf8_lossy(&out).contains("3 (decode)"));
//! # Ok::<(), playsim_report::renderer::RenderError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::capacity::Trial;
use crate::model::record::{RecordCause, RecordTrial};
use crate::model::DropCauseName;

/// What limited a cell: a playback drop cause, or for a write matrix (`--write`) a record
/// cause. Written as its name, as the reports write causes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatrixCause {
    /// Playback: not read in time; recording: not written, synced or published in time, or
    /// failed to write.
    Storage,
    /// Playback: not decoded in time.
    Decode,
    /// Playback: not through the output stage in time.
    Output,
    /// Playback: could not be read or decoded at all.
    Unreadable,
    /// Recording: not encoded in time.
    Encode,
    /// Recording: the source could not give the frame in time.
    Input,
}

impl MatrixCause {
    /// Its name: `storage`, `decode`, `output`, `unreadable`, `encode`, `input`.
    pub fn word(self) -> &'static str {
        match self {
            MatrixCause::Storage => "storage",
            MatrixCause::Decode => "decode",
            MatrixCause::Output => "output",
            MatrixCause::Unreadable => "unreadable",
            MatrixCause::Encode => "encode",
            MatrixCause::Input => "input",
        }
    }
}

impl From<DropCauseName> for MatrixCause {
    fn from(cause: DropCauseName) -> MatrixCause {
        match cause {
            DropCauseName::Storage => MatrixCause::Storage,
            DropCauseName::Decode => MatrixCause::Decode,
            DropCauseName::Output => MatrixCause::Output,
            DropCauseName::Unreadable => MatrixCause::Unreadable,
        }
    }
}

impl From<RecordCause> for MatrixCause {
    fn from(cause: RecordCause) -> MatrixCause {
        match cause {
            RecordCause::Storage => MatrixCause::Storage,
            RecordCause::Encode => MatrixCause::Encode,
            RecordCause::Input => MatrixCause::Input,
        }
    }
}

/// The version of the matrix JSON's shape, written as `playsim_matrix`.
pub const MATRIX_SCHEMA_VERSION: u32 = 1;

/// A format-by-rate matrix, with what was searched (`matrix --json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Matrix {
    /// The JSON shape's version, [`MATRIX_SCHEMA_VERSION`].
    pub playsim_matrix: u32,
    /// The version of playsim that searched.
    pub playsim_version: String,
    /// The location searched, as given (a directory or a URL).
    pub location: String,
    /// The cells record instead of play (`--write`): each is the most streams recorded at the
    /// rate with no frame dropped or failed, its cause a record cause.
    #[serde(default)]
    pub write: bool,
    /// The frame rates of the columns, as given (`23.976`, `25`, ...), ascending.
    pub rates: Vec<String>,
    /// Playback time of each trial, seconds.
    pub window_s: f64,
    /// Trials per candidate; a candidate passes only when every trial has no drop.
    pub trials_per_candidate: u32,
    /// The most streams a cell could find (`--max`; 1 makes a yes/no table).
    pub max: u32,
    /// How reads were kept cold, in words (what was dropped from the page cache and when,
    /// and which rows loop over frames that may then come from it).
    pub cold: String,
    /// Wall time of the whole matrix, seconds (media generation not included).
    pub elapsed_s: f64,
    /// One row per format.
    pub rows: Vec<MatrixRow>,
    /// Why the matrix stopped before every cell was searched (`interrupted`, `terminated`),
    /// when it did: its rows then hold the cells done, and the rest were not searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// One format of the matrix: its media and a cell per rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MatrixRow {
    /// The row's short name (`dpx-4k-dci`, `prores-hq-uhd`, `dpx:256x144`).
    pub name: String,
    /// The format played (`dpx`, `exr`, `prores`, `h264`, `dnxhr`, ...).
    pub format: String,
    /// Frame size, `WxH`.
    pub size: String,
    /// The media played: a directory, a clip or a `sim://` URL.
    pub media: String,
    /// Frames in the media, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u64>,
    /// Whether a trial at the highest rate loops over the media within its window (after the
    /// first loop its frames may come from the page cache).
    pub loops: bool,
    /// One cell per rate, in the order of [`Matrix::rates`].
    pub cells: Vec<MatrixCell>,
}

/// One format at one rate: a capacity search's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MatrixCell {
    /// The rate, as in [`Matrix::rates`].
    pub fps: String,
    /// The most streams that played with no drop; 0 when even one dropped.
    pub best_streams: u32,
    /// The cause with the most drops in the first candidate that failed; when the cell's
    /// maximum was lowered to the rate below's answer and passed, that rate's limit (its next
    /// candidate failed there, so it fails here too); none when the matrix's maximum passed.
    pub limit: Option<MatrixCause>,
    /// The largest candidate this cell could try: the matrix's maximum, or the answer of the
    /// rate below (capacity cannot grow with the rate).
    pub max: u32,
    /// The worst slack of a presented frame over the answer's trials, ms.
    pub margin_ms: Option<f64>,
    /// Set when the cell was not searched: a lower rate (this one) already found 0 streams,
    /// so this one is 0 too, with that cell's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited_from: Option<String>,
    /// Every trial of the cell's search, in the order run (none when inherited, or when the
    /// matrix records: then [`MatrixCell::write_trials`]).
    pub trials: Vec<Trial>,
    /// A write matrix's trials: every record trial of the cell's search, in the order run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_trials: Vec<RecordTrial>,
}

impl Matrix {
    /// An empty matrix of the current shape, from playsim `version`.
    pub fn new(version: &str) -> Matrix {
        Matrix {
            playsim_matrix: MATRIX_SCHEMA_VERSION,
            playsim_version: version.to_owned(),
            ..Matrix::default()
        }
    }

    /// Whether the matrix is a yes/no table (a maximum of one stream).
    pub fn yes_no(&self) -> bool {
        self.max == 1
    }
}

impl MatrixCell {
    /// Whether the cell's search stopped at its maximum without a failure (`8+`).
    pub fn max_passed(&self) -> bool {
        self.limit.is_none() && self.inherited_from.is_none()
    }

    /// The cell as the grid shows it: `3 (decode)`, `0 (storage)`, `8+` (its maximum passed),
    /// or with a maximum of one, `yes` or `no (decode)`; `*` marks a cell not searched.
    pub fn label(&self, yes_no: bool) -> String {
        let cause = self.limit.map(|c| format!(" ({})", c.word())).unwrap_or_default();
        let mut label = match (yes_no, self.limit) {
            (true, None) => "yes".to_owned(),
            (true, Some(_)) if self.best_streams >= 1 => "yes".to_owned(),
            (true, Some(_)) => format!("no{cause}"),
            (false, None) => format!("{}+", self.best_streams),
            (false, Some(_)) => format!("{}{cause}", self.best_streams),
        };
        if self.inherited_from.is_some() {
            label.push('*');
        }
        label
    }
}

/// What a cell's search found, as its colour tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "render"), allow(dead_code))]
pub(crate) enum CellState {
    /// Its maximum played with no drop (`8+`; in a yes/no matrix, yes).
    MaxPassed,
    /// Its search failed at one stream more than its answer, mostly for the cause.
    Limited(MatrixCause),
    /// Its maximum, lowered to the rate below's answer, passed: the limit is the rate below's.
    Carried(MatrixCause),
    /// Not searched: a lower rate found 0, with this cause when it named one.
    NotSearched(Option<MatrixCause>),
}

#[cfg_attr(not(feature = "render"), allow(dead_code))]
impl CellState {
    /// The state of `cell` in `matrix`.
    pub(crate) fn of(matrix: &Matrix, cell: &MatrixCell) -> CellState {
        if cell.inherited_from.is_some() {
            return CellState::NotSearched(cell.limit);
        }
        match cell.limit {
            None => CellState::MaxPassed,
            // One stream played in a yes/no matrix: that is its maximum.
            Some(_) if matrix.yes_no() && cell.best_streams >= 1 => CellState::MaxPassed,
            // Every trial of its own passed: what limits it was found at the rate below.
            Some(cause) if own_trials_all_passed(cell) => CellState::Carried(cause),
            Some(cause) => CellState::Limited(cause),
        }
    }

    /// A class name for the state, for the HTML page's cells: `passed`, `limited-storage`,
    /// `carried-decode`, `not-searched`.
    pub(crate) fn class(self) -> String {
        match self {
            CellState::MaxPassed => "passed".to_owned(),
            CellState::Limited(cause) => format!("limited-{}", cause.word()),
            CellState::Carried(cause) => format!("carried-{}", cause.word()),
            CellState::NotSearched(_) => "not-searched".to_owned(),
        }
    }
}

/// Whether a cell ran trials of its own and every one passed.
#[cfg_attr(not(feature = "render"), allow(dead_code))]
fn own_trials_all_passed(cell: &MatrixCell) -> bool {
    if cell.write_trials.is_empty() {
        !cell.trials.is_empty() && cell.trials.iter().all(|t| t.passed)
    } else {
        cell.write_trials.iter().all(|t| t.passed)
    }
}

/// Reads a matrix back from its JSON.
pub fn from_str(text: &str) -> Result<Matrix, crate::Error> {
    Ok(serde_json::from_str(text)?)
}
