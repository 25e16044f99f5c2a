//! A scenario's tally (`playsim run`): one line per run over its timed repetitions, with the
//! mean frame rate (and its range), the mean data rate and the drops by cause summed over them;
//! failed and interrupted repetitions are counted apart.
//!
//! The facade builds the small [`Tally`] model from the scenario's passes and their reports;
//! [`crate::format::tally`] renders it.

use crate::model::{Drops, Report, RunStatus};

/// Every run of a scenario, in the order of the file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// The runs.
    pub runs: Vec<TallyRun>,
}

/// One run and its timed repetitions (warm-ups left out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TallyRun {
    /// The run's name in the scenario.
    pub name: String,
    /// Its timed repetitions, in the order played; none when it was not played.
    pub timed: Vec<Repetition>,
}

/// The figures of one timed repetition that the tally sums.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Repetition {
    /// Frames presented (or, recording, written) per second.
    pub fps: f64,
    /// Megabytes (10^6 bytes) read (or written) per second.
    pub mb_per_s: f64,
    /// Frames dropped, by cause, in the order shown: playback's storage, decode, output and
    /// unreadable; record's input, encode and storage.
    pub dropped: Vec<(&'static str, u64)>,
    /// Frames whose write failed (a record run's).
    pub failed: u64,
    /// How the repetition ended.
    pub status: RunStatus,
}

impl From<&Report> for Repetition {
    fn from(report: &Report) -> Repetition {
        let d: Drops = report.totals.dropped;
        Repetition {
            fps: report.totals.fps,
            mb_per_s: report.totals.mb_per_s,
            dropped: d.iter().map(|(cause, n)| (cause.word(), n)).collect(),
            failed: 0,
            status: report.status,
        }
    }
}

impl From<&crate::model::record::RecordFigures> for Repetition {
    fn from(f: &crate::model::record::RecordFigures) -> Repetition {
        Repetition {
            fps: f.fps,
            mb_per_s: f.mb_per_s,
            dropped: vec![
                ("input", f.dropped_input),
                ("encode", f.dropped_encode),
                ("storage", f.dropped_storage),
            ],
            failed: f.frames_failed,
            status: if f.failure.is_some() && f.frames_arrived == 0 {
                RunStatus::Failed
            } else if f.interrupted {
                RunStatus::Partial
            } else {
                RunStatus::Complete
            },
        }
    }
}

/// A run's figures over its timed repetitions, as the text and the page give them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary<'a> {
    /// The mean of the repetitions' fps.
    pub mean_fps: f64,
    /// The lowest fps of a repetition.
    pub low_fps: f64,
    /// The highest fps of a repetition.
    pub high_fps: f64,
    /// The mean of the repetitions' MB/s.
    pub mean_mb_per_s: f64,
    /// Drops by cause over every repetition, each cause in the order first met.
    pub drops: Vec<(&'a str, u64)>,
    /// Repetitions that failed.
    pub failed: usize,
    /// Repetitions interrupted.
    pub partial: usize,
    /// Frames that failed to write (a record run's).
    pub failed_frames: u64,
}

impl TallyRun {
    /// Its figures over its timed repetitions (all zero when it has none).
    pub fn summary(&self) -> RunSummary<'_> {
        let timed = &self.timed;
        if timed.is_empty() {
            return RunSummary::default();
        }
        let n = timed.len() as f64;
        let (low_fps, high_fps) =
            timed.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), r| (l.min(r.fps), h.max(r.fps)));
        let mut drops: Vec<(&str, u64)> = Vec::new();
        for (cause, n) in timed.iter().flat_map(|r| &r.dropped) {
            match drops.iter_mut().find(|(c, _)| c == cause) {
                Some((_, sum)) => *sum += n,
                None => drops.push((cause, *n)),
            }
        }
        RunSummary {
            mean_fps: timed.iter().map(|r| r.fps).sum::<f64>() / n,
            low_fps,
            high_fps,
            mean_mb_per_s: timed.iter().map(|r| r.mb_per_s).sum::<f64>() / n,
            drops,
            failed: timed.iter().filter(|r| r.status == RunStatus::Failed).count(),
            partial: timed.iter().filter(|r| r.status == RunStatus::Partial).count(),
            failed_frames: timed.iter().map(|r| r.failed).sum(),
        }
    }
}
