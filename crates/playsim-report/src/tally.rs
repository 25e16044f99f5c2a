//! A scenario's tally (`playsim run`): one line per run over its timed repetitions, with the
//! mean frame rate (and its range), the mean data rate and the drops by cause summed over them;
//! failed and interrupted repetitions are counted apart.
//!
//! The facade builds the small [`Tally`] model from the scenario's passes and their reports;
//! this module only renders it.

use std::fmt::Write as _;
use std::io::Write;

use crate::model::{Drops, Report, RunStatus};
use crate::renderer::{RenderError, Renderer};

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
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Repetition {
    /// Frames presented per second.
    pub fps: f64,
    /// Megabytes (10^6 bytes) read per second.
    pub mb_per_s: f64,
    /// Frames dropped, by cause.
    pub dropped: Drops,
    /// How the repetition ended.
    pub status: RunStatus,
}

impl From<&Report> for Repetition {
    fn from(report: &Report) -> Repetition {
        Repetition {
            fps: report.totals.fps,
            mb_per_s: report.totals.mb_per_s,
            dropped: report.totals.dropped,
            status: report.status,
        }
    }
}

/// The tally as text: the `text` renderer.
#[derive(Clone, Copy, Debug, Default)]
pub struct TallyText;

impl Renderer<Tally> for TallyText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, tally: &Tally, out: &mut dyn Write) -> Result<(), RenderError> {
        Ok(out.write_all(text(tally).as_bytes())?)
    }
}

/// The tally as text, a line per run.
///
/// ```
/// use playsim_report::tally::{text, Repetition, Tally, TallyRun};
/// let tally = Tally { runs: vec![TallyRun { name: "hd".into(), timed: vec![] }] };
/// assert_eq!(text(&tally), "run hd: not played\n");
/// ```
pub fn text(tally: &Tally) -> String {
    let mut out = String::new();
    for run in &tally.runs {
        let timed = &run.timed;
        if timed.is_empty() {
            let _ = writeln!(out, "run {}: not played", run.name);
            continue;
        }
        let n = timed.len() as f64;
        let mean_fps = timed.iter().map(|r| r.fps).sum::<f64>() / n;
        let (low, high) =
            timed.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), r| (l.min(r.fps), h.max(r.fps)));
        let mean_mb = timed.iter().map(|r| r.mb_per_s).sum::<f64>() / n;
        let mut drops = Drops::default();
        for r in timed {
            let d = r.dropped;
            drops.storage += d.storage;
            drops.decode += d.decode;
            drops.output += d.output;
            drops.unreadable += d.unreadable;
        }
        let failed = timed.iter().filter(|r| r.status == RunStatus::Failed).count();
        let partial = timed.iter().filter(|r| r.status == RunStatus::Partial).count();
        let _ = write!(
            out,
            "run {}: {} repetition(s), mean {mean_fps:.2} fps ({low:.2} to {high:.2}), mean {mean_mb:.1} MB/s; \
             dropped {} in all (storage {}, decode {}, output {}, unreadable {})",
            run.name,
            timed.len(),
            drops.total(),
            drops.storage,
            drops.decode,
            drops.output,
            drops.unreadable
        );
        if failed > 0 {
            let _ = write!(out, "; {failed} failed");
        }
        if partial > 0 {
            let _ = write!(out, "; {partial} interrupted");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repetition(fps: f64, storage: u64, status: RunStatus) -> Repetition {
        Repetition { fps, mb_per_s: 10.0, dropped: Drops { storage, ..Drops::default() }, status }
    }

    #[test]
    fn means_ranges_and_drops_over_the_repetitions() {
        let tally = Tally {
            runs: vec![
                TallyRun {
                    name: "run1".into(),
                    timed: vec![
                        repetition(24.0, 0, RunStatus::Complete),
                        repetition(22.0, 3, RunStatus::Complete),
                    ],
                },
                TallyRun {
                    name: "run2".into(),
                    timed: vec![
                        repetition(0.0, 0, RunStatus::Failed),
                        repetition(12.0, 1, RunStatus::Partial),
                    ],
                },
                TallyRun { name: "run3".into(), timed: vec![] },
            ],
        };
        assert_eq!(
            text(&tally),
            "run run1: 2 repetition(s), mean 23.00 fps (22.00 to 24.00), mean 10.0 MB/s; dropped 3 in all \
             (storage 3, decode 0, output 0, unreadable 0)\n\
             run run2: 2 repetition(s), mean 6.00 fps (0.00 to 12.00), mean 10.0 MB/s; dropped 1 in all \
             (storage 1, decode 0, output 0, unreadable 0); 1 failed; 1 interrupted\n\
             run run3: not played\n"
        );
    }
}
