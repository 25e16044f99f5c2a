//! A playback run's figures for `playsim compare`: what the table lists of a [`Report`] and
//! how each is read.

use super::{distinct, fig, Better, Compared, Describe, Figure, Run};
use crate::model::{DropCauseName, Report, StreamReport};

/// A number read from a playback report: the one place the table and the plot
/// (`compare_plot`) take its figures from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Frames presented per second.
    Fps,
    /// Frames presented.
    Presented,
    /// Frames dropped, every cause.
    Dropped,
    /// Frames dropped for one cause.
    DroppedBy(DropCauseName),
    /// Megabytes read per second.
    MbPerS,
    /// The worst stream's read p99, in ms.
    ReadP99,
    /// The worst stream's decode p99, in ms.
    DecodeP99,
    /// The worst stream's output p99, in ms.
    OutputP99,
    /// User CPU seconds per GB read.
    CpuUser,
    /// System CPU seconds per GB read.
    CpuSys,
    /// Softirq CPU seconds per GB read.
    CpuSoftirq,
    /// All CPU seconds per GB read.
    CpuTotal,
}

/// Figures, in the order they are listed.
const FIGURES: &[Figure<Measure>] = &[
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

/// What a run was, row by row: the table's first rows and the plot's key.
const DESCRIPTION: &[(&str, Describe<Report>)] = &[
    ("status", |r| format!("{:?}", r.status).to_lowercase()),
    ("source", |r| distinct(r.streams.iter().map(|s| s.source.location.clone()))),
    ("transport", transport),
    ("read size", read_size),
    ("pacing", |r| distinct(r.streams.iter().map(|s| s.fps.clone()))),
    ("streams", |r| r.streams.len().to_string()),
    ("clients", |r| r.clients.len().max(1).to_string()),
];

impl super::sealed::Sealed for Report {}

impl Compared for Report {
    type Measure = Measure;

    const KIND: &'static str = "playback report";

    const FIGURES: &'static [Figure<Measure>] = FIGURES;

    fn value(&self, measure: Measure) -> f64 {
        let totals = &self.totals;
        match measure {
            Measure::Fps => totals.fps,
            Measure::Presented => totals.presented as f64,
            Measure::Dropped => totals.dropped.total() as f64,
            Measure::DroppedBy(cause) => totals.dropped.get(cause) as f64,
            Measure::MbPerS => totals.mb_per_s,
            Measure::ReadP99 => worst(self, |s| s.latency.read.p99_ms),
            Measure::DecodeP99 => worst(self, |s| s.latency.decode.p99_ms),
            Measure::OutputP99 => worst(self, |s| s.latency.output.p99_ms),
            Measure::CpuUser => self.cpu.user_s_per_gb,
            Measure::CpuSys => self.cpu.sys_s_per_gb,
            Measure::CpuSoftirq => self.cpu.softirq_s_per_gb,
            Measure::CpuTotal => self.cpu.total_s_per_gb,
        }
    }

    /// The clients row only when a run is a merged report of several clients (a single run is
    /// one client, and its table stays as it was).
    fn description(runs: &[Run<'_, Report>]) -> Vec<(&'static str, Describe<Report>)> {
        let merged = runs.iter().any(|run| !run.report.clients.is_empty());
        DESCRIPTION.iter().filter(|(label, _)| merged || *label != "clients").copied().collect()
    }

    #[cfg(feature = "render")]
    fn panels() -> Vec<super::Panel<Measure>> {
        super::panel::play_panels()
    }

    #[cfg(feature = "render")]
    fn json(&self) -> serde_json::Value {
        play_json(self)
    }

    #[cfg(feature = "render")]
    fn pointer(&self, measure: Measure) -> Option<String> {
        play_pointer(self, measure)
    }
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

/// A playback report's JSON form, as `play --json` writes it.
#[cfg(feature = "render")]
fn play_json(report: &Report) -> serde_json::Value {
    serde_json::to_value(crate::model::wire::finite(report)).unwrap_or(serde_json::Value::Null)
}

/// Where a playback report's figure is in its JSON: the totals, the CPU, or the worst
/// stream's p99; none for a sum (all drops).
#[cfg(feature = "render")]
fn play_pointer(report: &Report, measure: Measure) -> Option<String> {
    let worst = |figure: fn(&StreamReport) -> f64, path: &str| {
        let most = report.streams.iter().map(figure).fold(0.0, f64::max);
        let i = report.streams.iter().position(|s| figure(s) == most)?;
        Some(format!("/streams/{i}/latency/{path}/p99_ms"))
    };
    Some(match measure {
        Measure::Fps => "/totals/fps".to_owned(),
        Measure::Presented => "/totals/presented".to_owned(),
        Measure::Dropped => return None,
        Measure::DroppedBy(cause) => format!("/totals/dropped/{}", cause.word()),
        Measure::MbPerS => "/totals/mb_per_s".to_owned(),
        Measure::ReadP99 => return worst(|s| s.latency.read.p99_ms, "read"),
        Measure::DecodeP99 => return worst(|s| s.latency.decode.p99_ms, "decode"),
        Measure::OutputP99 => return worst(|s| s.latency.output.p99_ms, "output"),
        Measure::CpuUser => "/cpu/user_s_per_gb".to_owned(),
        Measure::CpuSys => "/cpu/sys_s_per_gb".to_owned(),
        Measure::CpuSoftirq => "/cpu/softirq_s_per_gb".to_owned(),
        Measure::CpuTotal => "/cpu/total_s_per_gb".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::compare::compare;
    use crate::testutil::sample_report;

    #[test]
    fn a_merged_report_compares_as_a_single_one_with_its_clients_counted() {
        let single = sample_report();
        let merged = crate::testutil::merged_sample();
        // Read back from JSON, as `playsim compare` reads it.
        let merged = crate::format::json::from_str(&crate::format::json::to_string_pretty(&merged))
            .unwrap_or_default();
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
