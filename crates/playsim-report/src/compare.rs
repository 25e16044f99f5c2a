//! Runs side by side: `playsim compare A.json B.json ...`.
//!
//! The first run is the baseline. Every later run's figures carry their difference from it
//! and their ratio to it, and, where one direction is better (more fps, fewer drops, less
//! CPU per GB), whether the change is better or worse.

use crate::model::{DropCauseName, Report, StreamReport};
use crate::renderer::{RenderError, Renderer};

/// One run to compare: the name it is shown under (its file, say) and its report.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    /// The column's heading.
    pub name: &'a str,
    /// The run's report.
    pub report: &'a Report,
}

/// The runs side by side as a table ([`compare`]'s text): the `text` renderer of a comparison.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompareText;

impl<'a> Renderer<[Run<'a>]> for CompareText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, runs: &[Run<'a>], out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        Ok(out.write_all(compare(runs).as_bytes())?)
    }
}

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Better {
    Higher,
    Lower,
}

/// A number read from a run's report: the one place the table and the plot
/// (`compare_plot`) take their figures from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    Fps,
    Presented,
    Dropped,
    DroppedBy(DropCauseName),
    MbPerS,
    ReadP99,
    DecodeP99,
    OutputP99,
    CpuUser,
    CpuSys,
    CpuSoftirq,
    CpuTotal,
}

impl Measure {
    /// The measure's value in `report`.
    pub(crate) fn of(self, report: &Report) -> f64 {
        let totals = &report.totals;
        match self {
            Measure::Fps => totals.fps,
            Measure::Presented => totals.presented as f64,
            Measure::Dropped => totals.dropped.total() as f64,
            Measure::DroppedBy(DropCauseName::Storage) => totals.dropped.storage as f64,
            Measure::DroppedBy(DropCauseName::Decode) => totals.dropped.decode as f64,
            Measure::DroppedBy(DropCauseName::Output) => totals.dropped.output as f64,
            Measure::DroppedBy(DropCauseName::Unreadable) => totals.dropped.unreadable as f64,
            Measure::MbPerS => totals.mb_per_s,
            Measure::ReadP99 => worst(report, |s| s.latency.read.p99_ms),
            Measure::DecodeP99 => worst(report, |s| s.latency.decode.p99_ms),
            Measure::OutputP99 => worst(report, |s| s.latency.output.p99_ms),
            Measure::CpuUser => report.cpu.user_s_per_gb,
            Measure::CpuSys => report.cpu.sys_s_per_gb,
            Measure::CpuSoftirq => report.cpu.softirq_s_per_gb,
            Measure::CpuTotal => report.cpu.total_s_per_gb,
        }
    }

    /// How the measure is shown.
    // Only the comparison plot asks, so a build without `render` leaves it unused.
    #[cfg_attr(not(feature = "render"), allow(dead_code))]
    pub(crate) fn figure(self) -> &'static Figure {
        // Every measure has its row; the fallback is never taken.
        FIGURES.iter().find(|f| f.measure == self).unwrap_or(&FIGURES[0])
    }
}

/// A figure of a run, and how to show it.
pub(crate) struct Figure {
    pub(crate) measure: Measure,
    label: &'static str,
    pub(crate) decimals: usize,
    pub(crate) better: Better,
}

const fn fig(measure: Measure, label: &'static str, decimals: usize, better: Better) -> Figure {
    Figure { measure, label, decimals, better }
}

/// Figures, in the order they are listed.
const FIGURES: &[Figure] = &[
    fig(Measure::Fps, "fps", 2, Better::Higher),
    fig(Measure::Presented, "frames presented", 0, Better::Higher),
    fig(Measure::Dropped, "dropped", 0, Better::Lower),
    fig(Measure::DroppedBy(DropCauseName::Storage), "  storage", 0, Better::Lower),
    fig(Measure::DroppedBy(DropCauseName::Decode), "  decode", 0, Better::Lower),
    fig(Measure::DroppedBy(DropCauseName::Output), "  output", 0, Better::Lower),
    fig(Measure::DroppedBy(DropCauseName::Unreadable), "  unreadable", 0, Better::Lower),
    fig(Measure::MbPerS, "MB/s", 1, Better::Higher),
    fig(Measure::ReadP99, "read p99 ms", 2, Better::Lower),
    fig(Measure::DecodeP99, "decode p99 ms", 2, Better::Lower),
    fig(Measure::OutputP99, "output p99 ms", 2, Better::Lower),
    fig(Measure::CpuUser, "cpu user s/GB", 2, Better::Lower),
    fig(Measure::CpuSys, "cpu sys s/GB", 2, Better::Lower),
    fig(Measure::CpuSoftirq, "cpu softirq s/GB", 2, Better::Lower),
    fig(Measure::CpuTotal, "cpu total s/GB", 2, Better::Lower),
];

/// A text cell of a run's report.
pub(crate) type Describe = fn(&Report) -> String;

/// What a run was, row by row: the table's first rows and the plot's key.
pub(crate) const DESCRIPTION: &[(&str, Describe)] = &[
    ("status", |r| format!("{:?}", r.status).to_lowercase()),
    ("source", |r| distinct(r.streams.iter().map(|s| s.source.location.clone()))),
    ("transport", transport),
    ("read size", read_size),
    ("pacing", |r| distinct(r.streams.iter().map(|s| s.fps.clone()))),
    ("streams", |r| r.streams.len().to_string()),
    ("clients", |r| r.clients.len().max(1).to_string()),
];

/// The description rows shown for `runs`: the clients row only when a run is a merged report
/// of several clients (a single run is one client, and its table stays as it was).
pub(crate) fn description(runs: &[Run<'_>]) -> impl Iterator<Item = &'static (&'static str, Describe)> {
    let merged = runs.iter().any(|run| !run.report.clients.is_empty());
    DESCRIPTION.iter().filter(move |(label, _)| merged || *label != "clients")
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
pub fn compare(runs: &[Run<'_>]) -> String {
    let Some(first) = runs.first() else {
        return "no runs to compare\n".to_owned();
    };
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for (label, cell) in description(runs) {
        rows.push(((*label).to_owned(), runs.iter().map(|run| cell(run.report)).collect()));
    }
    for figure in FIGURES {
        let base = figure.measure.of(first.report);
        let cells = runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                let value = figure.measure.of(run.report);
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
fn mark(figure: &Figure, base: f64, value: f64) -> String {
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

/// The worst (largest) of a figure over a run's streams.
fn worst(report: &Report, figure: fn(&StreamReport) -> f64) -> f64 {
    report.streams.iter().map(figure).fold(0.0, f64::max)
}

/// The transport: a kernel mount's label (`kernel nfs over rdma`), or the transport's name.
fn transport(report: &Report) -> String {
    distinct(report.streams.iter().map(|s| match &s.storage.mount {
        Some(mount) if !mount.transport.starts_with("local") => format!("kernel {}", mount.transport),
        _ => s.storage.transport.clone(),
    }))
}

/// The read size: a kernel mount's rsize, else the transport's request size.
fn read_size(report: &Report) -> String {
    distinct(report.streams.iter().map(|s| {
        let rsize = s.storage.mount.as_ref().and_then(|m| m.options.get("rsize"));
        rsize.cloned().unwrap_or_else(|| s.storage.block_size.to_string())
    }))
}

/// The distinct values, in order, joined; `-` when there are none.
fn distinct(values: impl Iterator<Item = String>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::sample_report;

    #[test]
    fn a_merged_report_compares_as_a_single_one_with_its_clients_counted() {
        let single = sample_report();
        let merged = crate::testutil::merged_sample();
        // Read back from JSON, as `playsim compare` reads it.
        let merged = crate::json::from_str(&crate::json::to_string_pretty(&merged)).unwrap_or_default();
        let text = compare(&[
            Run { name: "one.json", report: &single },
            Run { name: "three.json", report: &merged },
        ]);
        let line = |label: &str| text.lines().find(|l| l.starts_with(label)).unwrap_or_default().to_owned();
        assert_eq!(line("clients").split_whitespace().collect::<Vec<_>>(), ["clients", "1", "4"], "{text}");
        assert_eq!(line("streams").split_whitespace().collect::<Vec<_>>(), ["streams", "1", "4"], "{text}");
        assert!(line("frames presented").contains("1054 +820"), "{text}");
        assert!(line("  decode").contains("30 +29"), "{text}");
        assert!(line("fps").contains("81.08"), "{text}");
        // Two single runs have no clients row.
        let alone = compare(&[Run { name: "a", report: &single }, Run { name: "b", report: &single }]);
        assert!(!alone.contains("clients"), "{alone}");
    }

    #[test]
    fn later_runs_are_marked_against_the_first() {
        let a = sample_report();
        let mut b = sample_report();
        b.totals.fps = a.totals.fps * 2.0;
        b.totals.dropped.storage = a.totals.dropped.storage + 3;
        b.cpu.sys_s_per_gb = a.cpu.sys_s_per_gb / 2.0;
        let text = compare(&[Run { name: "a.json", report: &a }, Run { name: "b.json", report: &b }]);
        let line = |label: &str| text.lines().find(|l| l.starts_with(label)).unwrap_or_default().to_owned();
        assert!(line("fps").contains("2.00x better"), "{text}");
        assert!(line("  storage").contains("+3") && line("  storage").ends_with("worse"), "{text}");
        assert!(line("cpu sys s/GB").contains("0.50x better"), "{text}");
        assert!(line("MB/s").contains("+0.0 1.00x same"), "{text}");
        assert!(text.lines().next().unwrap_or_default().contains("a.json"), "{text}");
    }
}
