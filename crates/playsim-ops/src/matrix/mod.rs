//! `playsim matrix`: "will it play?", a grid of formats by frame rates, each cell a capacity
//! search (the most streams with no drop over a window) of the row's media at the column's
//! rate. What one cell teaches the next is reused: a row's rates are searched in ascending
//! order, a rate's maximum is the answer of the rate below (capacity cannot grow with the
//! rate), and a row that found 0 at one rate is 0 at every higher rate without a search.
//!
//! # Detail (moved from ARCHITECTURE.md)
//!
//! `playsim matrix LOCATION [--formats ...] [--media ROW=PATH]... [--rates ...] [--window 5s]
//! [--trials 1] [--max 16] [--streams 1] [--write] [--yes]` answers "will it play?" as
//! Blackmagic's Disk Speed Test table does, but by playing. Each cell is `CapacityBy::Streams`:
//! the most streams, the cause of the first failing candidate (`limit`) and the worst slack at
//! the answer (`margin_ms`). `--streams 1` makes it the yes/no table. When a lowered maximum
//! passes, the cell keeps the rate below's limit (`plan_cell`); a row found 0 is marked
//! `inherited_from` at higher rates.
//!
//! - **Media.** A transport that makes its frames gives each row's location through
//!   `Transport::made_media` (`sim://` sets `format=`, `preset=`, `frames=`); otherwise media is
//!   generated under `LOCATION/matrix-media/ROW` (`media.rs`), or staged locally and copied
//!   through the transport's writer for a server (`upload.rs`). A clip encodes 48 distinct frames
//!   and repeats them stream-copied to its length (prores_ks and dnxhd take about 0.7 s of CPU a
//!   UHD frame). Before generating, the command prints the space and a rough time, and refuses
//!   when the file system lacks the space or, without `--yes`, above 20 GB or 5 minutes. `--fps`,
//!   `--frames`, `--duration` and `--loop` are refused: the matrix sets them.
//! - **Cold reads.** Every trial's request is `cold`. Each row gets window × the top rate frames
//!   unless that passes 1.5 GB (`ROW_BYTES_CAP`); a row that loops reads from the page cache after
//!   its first loop, and `Matrix.cold` names those rows. Local media is read with O_DIRECT unless
//!   `--page-cache` (through the cache only the first reader of a frame reached storage); the
//!   transport's `cache_note` says what a server's client caches.
//! - **Write side.** `--write` (`WriteMatrix`, `plan_write_rows`) records each row's format (DPX,
//!   TIFF, EXR PIZ, ProRes HQ; H.264 and DNxHR rows are refused) into `LOCATION/matrix-write/ROW`,
//!   each cell `record_capacity` by streams, its `limit` a `MatrixCause` (playback's causes and
//!   record's), with no margins; each trial's files are removed after it. Refused where the
//!   transport holds no files.
//! - **Outputs.** Text, `--json` (`schema/matrix.schema.json`), `--csv`, `--plot` (a coloured grid:
//!   each cell's answer, cause and margin, carried cells lighter, unsearched grey), `--html`,
//!   `--tui`.

mod media;
mod upload;

use std::time::Duration;

use playsim_core::FramePreset;
use playsim_core::{FrameRate, Pacing};
use playsim_engine::record::SyncPolicy;
use playsim_media::GenerateFormat;
use playsim_report::matrix::{Matrix, MatrixCause, MatrixCell, MatrixRow};
use playsim_report::record::{RecordCapacity, RecordCapacityBy};

pub use media::{
    plan_media, plan_write_rows, MatrixMedia, MatrixRowSpec, MediaPlan, DEFAULT_ROWS, DEFAULT_WRITE_ROWS,
    ROW_BYTES_CAP,
};
pub use upload::Upload;

use crate::capacity::{run_trial, TrialWatch};
use crate::record::{RecordCapacityRequest, RecordRequest};
use crate::{CapacityBy, CapacityRequest, Error, PlayRequest};

/// Settings of a matrix.
#[derive(Clone, Debug)]
pub struct MatrixRequest {
    /// The location searched, as given (for the report).
    pub location: String,
    /// The rows: each a format's media, ready to play.
    pub rows: Vec<MatrixMedia>,
    /// The columns: each rate with its label as given (`23.976`), in any order (searched
    /// ascending).
    pub rates: Vec<(String, FrameRate)>,
    /// Playback time of each trial.
    pub window: Duration,
    /// Trials per candidate.
    pub trials: u32,
    /// The most streams a cell tries (1: a yes/no table).
    pub max: u32,
    /// Drop each trial's files from the page cache before it.
    pub cold: bool,
    /// The run every trial scales: its settings (decode threads, reads, ...); its sources,
    /// rate and streams are set per trial.
    pub play: PlayRequest,
    /// Record instead of play (`--write`): each cell is `record --capacity streams` of its
    /// row's format at its rate into the row's `media`.
    pub write: Option<WriteMatrix>,
}

/// What a write matrix records.
#[derive(Clone, Debug)]
pub struct WriteMatrix {
    /// The recording every trial scales (queue, encoders, writers, sync, O_DIRECT, the
    /// transport's options); its destination, format, size and rate are set per cell.
    pub base: RecordRequest,
    /// Each row's format and size, in the order of [`MatrixRequest::rows`].
    pub formats: Vec<(GenerateFormat, FramePreset)>,
}

/// What the matrix is doing, for a progress line.
#[derive(Debug)]
pub enum MatrixProgress<'a> {
    /// Cell `k` of `n` (from 1) starts: its row and rate, and the most streams it will try.
    Cell {
        /// The cell's number, from 1.
        k: usize,
        /// Cells in the matrix.
        n: usize,
        /// The row's name.
        row: &'a str,
        /// The rate's label.
        fps: &'a str,
        /// Its maximum.
        max: u32,
    },
    /// A trial of `candidate` streams starts in the current cell.
    Candidate(u32),
    /// Cell `k` of `n` is done (searched or inherited), `elapsed` after the matrix began.
    CellDone {
        /// The cell's number, from 1.
        k: usize,
        /// Cells in the matrix.
        n: usize,
        /// Its answer.
        cell: &'a MatrixCell,
        /// Time since the matrix began.
        elapsed: Duration,
    },
}

/// How a cell is filled, given the cell of the rate below in its row (reuse rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CellPlan {
    /// Search up to `max` streams.
    Search {
        /// The most streams tried.
        max: u32,
    },
    /// Not searched: the rate below found 0, so this one is 0 too.
    Inherit,
}

/// The reuse rule: the lowest rate searches up to the matrix's maximum; a higher rate up to
/// the answer of the rate below; and after a 0, nothing is searched.
pub(crate) fn plan_cell(max: u32, below: Option<&MatrixCell>) -> CellPlan {
    match below {
        None => CellPlan::Search { max },
        Some(below) if below.best_streams == 0 => CellPlan::Inherit,
        Some(below) => CellPlan::Search { max: below.best_streams.min(max) },
    }
}

/// A cell from its search's answer: when its maximum was lowered to the rate below's answer
/// and passed, the next candidate failed at that rate, so the limit is that rate's.
pub(crate) fn searched_cell(
    fps: &str,
    max: u32,
    found: crate::Capacity,
    below: Option<&MatrixCell>,
) -> MatrixCell {
    let limit = found.limit.map(MatrixCause::from).or_else(|| below.and_then(|b| b.limit));
    MatrixCell {
        fps: fps.to_owned(),
        best_streams: found.best,
        limit,
        max,
        margin_ms: found.margin_ms,
        inherited_from: None,
        trials: found.trials,
        write_trials: Vec::new(),
    }
}

/// A write cell from its record search's answer, as [`searched_cell`] for playback; a
/// recording has no slack, so no margin.
pub(crate) fn recorded_cell(
    fps: &str,
    max: u32,
    found: RecordCapacity,
    below: Option<&MatrixCell>,
) -> MatrixCell {
    MatrixCell {
        fps: fps.to_owned(),
        best_streams: found.best,
        limit: found.limit.map(MatrixCause::from).or_else(|| below.and_then(|b| b.limit)),
        max,
        margin_ms: None,
        inherited_from: None,
        trials: Vec::new(),
        write_trials: found.trials,
    }
}

/// A cell not searched, after the rate below found 0.
pub(crate) fn inherited_cell(fps: &str, below: &MatrixCell) -> MatrixCell {
    MatrixCell {
        fps: fps.to_owned(),
        best_streams: 0,
        limit: below.limit,
        max: below.max,
        margin_ms: None,
        inherited_from: Some(below.inherited_from.clone().unwrap_or_else(|| below.fps.clone())),
        trials: Vec::new(),
        write_trials: Vec::new(),
    }
}

/// Fills the matrix, row by row, each row's rates in ascending order, reusing what a cell
/// teaches the next ([`plan_cell`]). `progress` hears each cell and candidate. Must run inside
/// a tokio runtime.
pub async fn matrix(
    request: &MatrixRequest,
    progress: &mut (dyn FnMut(MatrixProgress<'_>) + Send),
) -> Result<Matrix, Error> {
    matrix_watched(request, progress, None, std::future::pending()).await
}

/// [`matrix`], with `watch` told of each trial as it starts (a dashboard's source), until
/// `stop` gives a reason to stop (Ctrl-C): the search in progress is dropped, and the matrix
/// comes back with the cells done so far and that reason ([`Matrix::interrupted`]).
pub async fn matrix_watched(
    request: &MatrixRequest,
    progress: &mut (dyn FnMut(MatrixProgress<'_>) + Send),
    watch: Option<TrialWatch>,
    stop: impl std::future::Future<Output = String> + Send,
) -> Result<Matrix, Error> {
    if request.rows.is_empty() || request.rates.is_empty() {
        return Err(Error::Engine(
            "a matrix needs a row and a rate at least (for example --formats dpx-2k --rates 24)".into(),
        ));
    }
    let mut stop = std::pin::pin!(stop);
    let mut rates = request.rates.clone();
    rates.sort_by(|a, b| a.1.as_f64().total_cmp(&b.1.as_f64()));
    // The search's own time, on the run's clock (its trials' runs take theirs).
    let clock = playsim_engine::RunClock::default().get();
    let started = clock.now();
    let n = request.rows.len() * rates.len();
    let mut rows = Vec::with_capacity(request.rows.len());
    let mut interrupted = None;
    let mut k = 0;
    for (r, row) in request.rows.iter().enumerate() {
        let mut cells: Vec<MatrixCell> = Vec::with_capacity(rates.len());
        for (label, rate) in &rates {
            k += 1;
            let below = cells.last();
            let cell = match plan_cell(request.max, below) {
                CellPlan::Inherit => inherited_cell(label, below.unwrap_or(&MatrixCell::default())),
                CellPlan::Search { max } => {
                    progress(MatrixProgress::Cell { k, n, row: &row.name, fps: label, max });
                    let cell = Cell { row: r, label, rate: *rate, max, below };
                    tokio::select! {
                        found = search_cell(request, row, &cell, &mut *progress, watch.clone()) => found?,
                        why = &mut stop => {
                            interrupted = Some(why);
                            break;
                        }
                    }
                }
            };
            progress(MatrixProgress::CellDone {
                k,
                n,
                cell: &cell,
                elapsed: clock.now().saturating_sub(started),
            });
            cells.push(cell);
        }
        if interrupted.is_none() || !cells.is_empty() {
            rows.push(MatrixRow {
                name: row.name.clone(),
                format: row.format.clone(),
                size: row.size.clone(),
                media: row.media.clone(),
                frames: row.frames,
                loops: row.loops_at(request.window, rates.last().map(|r| r.1)),
                cells,
            });
        }
        if interrupted.is_some() {
            break;
        }
    }
    Ok(Matrix {
        location: request.location.clone(),
        rates: rates.into_iter().map(|(label, _)| label).collect(),
        window_s: request.window.as_secs_f64(),
        trials_per_candidate: request.trials,
        max: request.max,
        write: request.write.is_some(),
        cold: String::new(),
        elapsed_s: clock.now().saturating_sub(started).as_secs_f64(),
        rows,
        interrupted,
        ..Matrix::new(env!("CARGO_PKG_VERSION"))
    })
    .map(|mut m| {
        m.cold = cold_note(request, &m);
        m
    })
}

/// The cell a search is for: its row's index, its rate (label and value), its maximum, and the
/// answer of the rate below in its row.
struct Cell<'a> {
    row: usize,
    label: &'a str,
    rate: FrameRate,
    max: u32,
    below: Option<&'a MatrixCell>,
}

/// One cell's capacity search: played, or recorded for a write matrix.
async fn search_cell(
    request: &MatrixRequest,
    row: &MatrixMedia,
    cell: &Cell<'_>,
    progress: &mut (dyn FnMut(MatrixProgress<'_>) + Send),
    watch: Option<TrialWatch>,
) -> Result<MatrixCell, Error> {
    let label = cell.label;
    if let Some(write) = &request.write {
        let (format, preset) = write
            .formats
            .get(cell.row)
            .cloned()
            .ok_or_else(|| Error::Engine(format!("no format to record for row {}", row.name)))?;
        let mut record = write.base.clone();
        record.destination = row.media.clone().into();
        record.alpha = format.writer().rgba_by_default;
        record.format = format;
        record.preset = preset;
        record.config.rate = Some(cell.rate);
        let search = RecordCapacityRequest {
            record,
            by: RecordCapacityBy::Streams,
            window: request.window,
            trials: request.trials,
            max: cell.max,
        };
        let found = crate::record::record_capacity(&search, |_| {})
            .await
            .map_err(|e| Error::Engine(format!("{} at {label} fps: {e}", row.name)))?;
        return Ok(recorded_cell(label, cell.max, found, cell.below));
    }
    let capacity = cell_request(request, row, cell.rate, cell.max);
    let found = crate::capacity_with(&capacity, |candidate| {
        progress(MatrixProgress::Candidate(candidate));
        run_trial(&capacity, candidate, watch.clone())
    })
    .await
    .map_err(|e| Error::Engine(format!("{} at {label} fps: {e}", row.name)))?;
    Ok(searched_cell(label, cell.max, found, cell.below))
}

/// The capacity search of one cell: the row's media at the rate, up to `max` streams, each
/// trial cold when asked.
fn cell_request(request: &MatrixRequest, row: &MatrixMedia, rate: FrameRate, max: u32) -> CapacityRequest {
    let mut play = request.play.clone();
    play.sources = vec![row.media.clone().into()];
    play.cold = request.cold;
    play.engine.pacing = Pacing::Rate(rate);
    CapacityRequest { play, by: CapacityBy::Streams, window: request.window, trials: request.trials, max }
}

/// How reads were kept cold, in words, with the rows that loop.
fn cold_note(request: &MatrixRequest, matrix: &Matrix) -> String {
    if let Some(write) = &request.write {
        let how = if write.base.direct {
            "with O_DIRECT, so every frame reaches storage"
        } else if crate::transports().find(&request.location).is_ok_and(|t| t.cache_note().is_some()) {
            "through playsim's own client, which keeps no cache"
        } else {
            "through the page cache (--page-cache), which may absorb them"
        };
        return format!(
            "each trial records frames from playsim's generator, encoded for real, into \
             matrix-write/ROW/capacity-trial, {how}, sync {}; it is removed after each trial",
            match write.base.config.sync {
                SyncPolicy::None => "none (the storage decides when data is durable)",
                SyncPolicy::Frame => "each frame before it is renamed into place",
                SyncPolicy::End => "once at the end",
            }
        );
    }
    if let Some(note) = crate::transports().find(&request.location).ok().and_then(|t| t.cache_note()) {
        return note.to_owned();
    }
    if request.play.direct {
        let mut note =
            "local reads use O_DIRECT: every read of every stream reaches storage, none comes from \
                        the page cache"
                .to_owned();
        if matrix.rows.iter().any(|r| r.loops) {
            note.push_str(
                "; rows shorter than window x rate loop over their frames, still read from storage",
            );
        }
        return note;
    }
    let mut note = if request.cold {
        "each trial drops its files' pages from the page cache before it starts (posix_fadvise \
         DONTNEED on every frame file or clip; a kernel NFS or SMB mount may keep its own cache), \
         so a trial's first pass over the media reads storage, but the streams of a trial read the \
         same files, so all but the first reader of a frame may be served from the page cache"
            .to_owned()
    } else {
        "not kept cold (--warm): frames may come from the page cache".to_owned()
    };
    let looping: Vec<String> = matrix
        .rows
        .iter()
        .filter(|r| r.loops)
        .map(|r| format!("{} ({} frames)", r.name, r.frames.unwrap_or(0)))
        .collect();
    let unknown: Vec<&str> =
        matrix.rows.iter().filter(|r| r.frames.is_none()).map(|r| r.name.as_str()).collect();
    if looping.is_empty() {
        note.push_str("; every generated row holds window x rate frames, so no trial loops");
    } else {
        note.push_str(&format!(
            "; rows shorter than window x rate loop, and after their first loop frames may come from \
             the page cache (the disk space cap kept them short): {}",
            looping.join(", ")
        ));
    }
    if !unknown.is_empty() {
        note.push_str(&format!("; media given with --media, not checked for length: {}", unknown.join(", ")));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use playsim_report::{DropCauseName, Drops};

    /// A capacity answer of `best` out of `max`: limited by storage unless `max` passed.
    fn found(best: u32, max: u32) -> crate::Capacity {
        crate::Capacity {
            best,
            limit: (best < max).then_some(DropCauseName::Storage),
            margin_ms: (best > 0).then_some(5.0),
            trials: vec![crate::Trial::new(best.max(1), Drops::default(), 24, 5.0, 1.0)],
            ..crate::Capacity::new("0")
        }
    }

    /// Fills one row with the reuse rule over a model where a rate of `r` fps fits
    /// `budget / r` streams, and returns the cells and the maximum each search was given.
    fn row(max: u32, budget: u32, rates: &[u32]) -> (Vec<MatrixCell>, Vec<u32>) {
        let mut cells: Vec<MatrixCell> = Vec::new();
        let mut searched = Vec::new();
        for rate in rates {
            let label = rate.to_string();
            let below = cells.last();
            let cell = match plan_cell(max, below) {
                CellPlan::Inherit => inherited_cell(&label, below.unwrap_or(&MatrixCell::default())),
                CellPlan::Search { max: cell_max } => {
                    searched.push(cell_max);
                    searched_cell(&label, cell_max, found((budget / rate).min(cell_max), cell_max), below)
                }
            };
            cells.push(cell);
        }
        (cells, searched)
    }

    #[test]
    fn a_rate_searches_up_to_what_the_rate_below_found() {
        let (cells, searched) = row(16, 96, &[24, 30, 48]);
        assert_eq!(searched, vec![16, 4, 3]);
        let best: Vec<u32> = cells.iter().map(|c| c.best_streams).collect();
        assert_eq!(best, vec![4, 3, 2]);
        assert!(cells.iter().all(|c| c.limit == Some(MatrixCause::Storage) && c.inherited_from.is_none()));
    }

    #[test]
    fn a_lowered_maximum_that_passes_keeps_the_limit_of_the_rate_below() {
        // 24 fits 4 of 16 (5 failed for storage); 25 fits 4 too, its maximum: still storage.
        let (cells, searched) = row(16, 100, &[24, 25]);
        assert_eq!(searched, vec![16, 4]);
        assert_eq!((cells[1].best_streams, cells[1].limit), (4, Some(MatrixCause::Storage)));
        assert!(!cells[1].max_passed());
        // The matrix's maximum passing at both rates leaves no limit: `16+`.
        let (cells, _) = row(16, 10_000, &[24, 25]);
        assert_eq!(cells[1].label(false), "16+");
    }

    #[test]
    fn after_a_zero_higher_rates_are_inherited_without_a_search() {
        let (cells, searched) = row(16, 20, &[24, 25, 30]);
        assert_eq!(searched, vec![16]);
        assert_eq!(cells[1].inherited_from.as_deref(), Some("24"));
        assert_eq!(cells[2].inherited_from.as_deref(), Some("24"));
        assert_eq!((cells[2].best_streams, cells[2].limit), (0, Some(MatrixCause::Storage)));
        assert_eq!(cells[2].label(false), "0 (storage)*");
        assert!(cells[2].trials.is_empty());
    }
}
