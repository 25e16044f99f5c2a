//! A scenario's tally as text (the `text` renderer); the model is [`crate::model::tally`].

use std::fmt::Write as _;
use std::io::Write;

use crate::model::tally::*;
use crate::rendering::{RenderError, Renderer};

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
        let RunSummary {
            mean_fps,
            low_fps: low,
            high_fps: high,
            mean_mb_per_s: mean_mb,
            drops,
            failed,
            partial,
            failed_frames,
        } = run.summary();
        let by_cause: Vec<String> = drops.iter().map(|(cause, n)| format!("{cause} {n}")).collect();
        let _ = write!(
            out,
            "run {}: {} repetition(s), mean {mean_fps:.2} fps ({low:.2} to {high:.2}), mean {mean_mb:.1} MB/s; \
             dropped {} in all ({})",
            run.name,
            timed.len(),
            drops.iter().map(|(_, n)| n).sum::<u64>(),
            by_cause.join(", ")
        );
        if failed_frames > 0 {
            let _ = write!(out, "; {failed_frames} frame(s) failed to write");
        }
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
    use crate::model::{Drops, Report, RunStatus};

    fn repetition(fps: f64, storage: u64, status: RunStatus) -> Repetition {
        let mut report = Report::default();
        report.totals.fps = fps;
        report.totals.mb_per_s = 10.0;
        report.totals.dropped = Drops { storage, ..Drops::default() };
        report.status = status;
        Repetition::from(&report)
    }

    #[test]
    fn a_record_run_sums_its_own_causes_and_failed_writes() {
        let figures = |encode: u64, failed: u64| crate::model::record::RecordFigures {
            fps: 24.0,
            mb_per_s: 300.0,
            frames_arrived: 48,
            dropped_encode: encode,
            dropped_storage: 1,
            frames_failed: failed,
            ..Default::default()
        };
        let tally = Tally {
            runs: vec![TallyRun {
                name: "capture".into(),
                timed: vec![Repetition::from(&figures(2, 0)), Repetition::from(&figures(3, 1))],
            }],
        };
        assert_eq!(
            text(&tally),
            "run capture: 2 repetition(s), mean 24.00 fps (24.00 to 24.00), mean 300.0 MB/s; dropped 7 in all \
             (input 0, encode 5, storage 2); 1 frame(s) failed to write\n"
        );
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
