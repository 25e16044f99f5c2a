//! A scenario's tally (`playsim run`): one line per run over its timed repetitions, with the
//! mean frame rate (and its range), the mean data rate and the drops by cause summed over them;
//! failed and interrupted repetitions are counted apart.
//!
//! The facade builds the small [`Tally`] model from the scenario's passes and their reports;
//! this module only renders it.

use std::fmt::Write as _;
use std::io::Write;

use crate::model::{Drops, Report, RunStatus};
use crate::renderer::{RenderError, Renderer, Renderers};

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
            dropped: vec![
                ("storage", d.storage),
                ("decode", d.decode),
                ("output", d.output),
                ("unreadable", d.unreadable),
            ],
            failed: 0,
            status: report.status,
        }
    }
}

impl From<&crate::record::RecordFigures> for Repetition {
    fn from(f: &crate::record::RecordFigures) -> Repetition {
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

/// Registers the tally's renderers, one line per format: its text, and with the `render`
/// feature its HTML page.
pub fn register_tally_renderers(renderers: &mut Renderers<Tally>) {
    renderers.register(TallyText);
    #[cfg(feature = "render")]
    renderers.register(crate::html::Html);
}

impl Renderers<Tally> {
    /// The tally's renderers ([`register_tally_renderers`]).
    pub fn tally() -> Self {
        let mut renderers = Renderers::new();
        register_tally_renderers(&mut renderers);
        renderers
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
        let figures = |encode: u64, failed: u64| crate::record::RecordFigures {
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
