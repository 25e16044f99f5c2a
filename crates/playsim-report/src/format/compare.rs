//! Runs side by side as a table: the `text` renderer of a comparison (`playsim compare A.json
//! B.json ...`); what is compared is [`crate::model::compare`].

use crate::model::compare::{Better, Compared, Figure, Run};
use crate::rendering::{RenderError, Renderer};

/// The runs side by side as a table ([`compare`]'s text): the `text` renderer of a comparison.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompareText;

impl<'a, T: Compared> Renderer<[Run<'a, T>]> for CompareText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, runs: &[Run<'a, T>], out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        Ok(out.write_all(compare(runs).as_bytes())?)
    }
}

/// Width of the label column.
const LABEL: usize = 18;

/// The runs side by side, as plain text: first what each run was (source, transport, rate),
/// then its figures, each later run's marked against the first.
///
/// ```
/// use playsim_report::compare::{compare, Run};
/// let mut a = playsim_report::Report::default();
/// a.totals.fps = 24.0;
/// let mut b = a.clone();
/// b.totals.fps = 12.0;
/// let text = compare(&[Run { name: "tcp", report: &a }, Run { name: "rdma", report: &b }]);
/// assert!(text.contains("12.00 -12.00 0.50x worse"), "{text}");
/// ```
pub fn compare<T: Compared>(runs: &[Run<'_, T>]) -> String {
    let Some(first) = runs.first() else {
        return "no runs to compare\n".to_owned();
    };
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for (label, cell) in T::description(runs) {
        rows.push((label.to_owned(), runs.iter().map(|run| cell(run.report)).collect()));
    }
    for figure in T::FIGURES {
        let base = first.report.value(figure.measure);
        let cells = runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                let value = run.report.value(figure.measure);
                let shown = format!("{value:.prec$}", prec = figure.decimals);
                if i == 0 {
                    shown
                } else {
                    format!("{shown} {}", mark(figure, base, value))
                }
            })
            .collect();
        rows.push((figure.label.to_owned(), cells));
    }
    let widths: Vec<usize> = (0..runs.len())
        .map(|i| rows.iter().map(|(_, cells)| cells[i].len()).chain([runs[i].name.len()]).max().unwrap_or(0))
        .collect();
    let mut lines = Vec::with_capacity(rows.len() + 2);
    let mut heading = format!("{:<LABEL$}", "");
    for (run, width) in runs.iter().zip(&widths) {
        heading.push_str(&format!("  {:<width$}", run.name));
    }
    lines.push(heading);
    for (label, cells) in rows {
        let mut line = format!("{label:<LABEL$}");
        for (cell, width) in cells.iter().zip(&widths) {
            line.push_str(&format!("  {cell:<width$}"));
        }
        lines.push(line);
    }
    let mut out: String = lines.iter().map(|l| l.trim_end()).collect::<Vec<_>>().join("\n");
    out.push_str(&format!(
        "\n(later runs: value, difference from {}, ratio, and better or worse where one way is better)\n",
        first.name
    ));
    out
}

/// `+1.50 1.25x better`: the difference from the baseline, the ratio, and the verdict.
fn mark<M>(figure: &Figure<M>, base: f64, value: f64) -> String {
    let diff = value - base;
    let ratio = if base != 0.0 { format!("{:.2}x", value / base) } else { "-".to_owned() };
    let verdict = if diff.abs() < 10f64.powi(-(figure.decimals as i32)) / 2.0 {
        "same"
    } else if (diff > 0.0) == (figure.better == Better::Higher) {
        "better"
    } else {
        "worse"
    };
    format!("{diff:+.prec$} {ratio} {verdict}", prec = figure.decimals)
}
