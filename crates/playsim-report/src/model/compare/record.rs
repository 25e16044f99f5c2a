//! A record run's figures for `playsim compare`: what the table lists of a [`RecordFigures`]
//! (`playsim record --json`) and how each is read.

use super::{fig, Better, Compared, Describe, Figure, Run};
use crate::model::record::{RecordCause, RecordFigures};

/// A number read from a record run's figures: the one place the table and the plot
/// (`compare_plot`) take them from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordMeasure {
    /// Frames written per second.
    Fps,
    /// Frames written and published.
    Written,
    /// Frames dropped, every cause.
    Dropped,
    /// Frames dropped for one cause.
    DroppedBy(RecordCause),
    /// Frames whose encode or write failed.
    Failed,
    /// Megabytes written per second.
    MbPerS,
    /// Arrival to encode start, p99 in ms.
    QueueWaitP99,
    /// Encode, p99 in ms.
    EncodeP99,
    /// Write, p99 in ms.
    WriteP99,
    /// Sync per frame, p99 in ms.
    SyncP99,
    /// Arrival to published, p99 in ms.
    TotalP99,
    /// Encode CPU seconds per GB written.
    CpuEncode,
    /// A source's read and decode CPU seconds per GB written.
    CpuInput,
    /// The writing threads' CPU seconds per GB written.
    CpuWrite,
    /// The end sync (`--sync end`), in ms; 0 without one.
    EndSyncMs,
}

/// Figures, in the order they are listed.
const FIGURES: &[Figure<RecordMeasure>] = &[
    fig(RecordMeasure::Fps, "fps", 2, Better::Higher),
    fig(RecordMeasure::Written, "frames written", 0, Better::Higher),
    fig(RecordMeasure::Dropped, "dropped", 0, Better::Lower),
    fig(RecordMeasure::DroppedBy(RecordCause::Input), "  input", 0, Better::Lower),
    fig(RecordMeasure::DroppedBy(RecordCause::Encode), "  encode", 0, Better::Lower),
    fig(RecordMeasure::DroppedBy(RecordCause::Storage), "  storage", 0, Better::Lower),
    fig(RecordMeasure::Failed, "failed", 0, Better::Lower),
    fig(RecordMeasure::MbPerS, "MB/s", 1, Better::Higher),
    fig(RecordMeasure::QueueWaitP99, "queue wait p99 ms", 2, Better::Lower),
    fig(RecordMeasure::EncodeP99, "encode p99 ms", 2, Better::Lower),
    fig(RecordMeasure::WriteP99, "write p99 ms", 2, Better::Lower),
    fig(RecordMeasure::SyncP99, "sync p99 ms", 2, Better::Lower),
    fig(RecordMeasure::TotalP99, "total p99 ms", 2, Better::Lower),
    fig(RecordMeasure::CpuEncode, "cpu encode s/GB", 3, Better::Lower),
    fig(RecordMeasure::CpuInput, "cpu input s/GB", 3, Better::Lower),
    fig(RecordMeasure::CpuWrite, "cpu write s/GB", 3, Better::Lower),
    fig(RecordMeasure::EndSyncMs, "end sync ms", 2, Better::Lower),
];

/// What a run was, row by row: the table's first rows and the plot's key.
const DESCRIPTION: &[(&str, Describe<RecordFigures>)] = &[
    ("status", status),
    ("destination", |f| f.info.destination.clone()),
    ("format", |f| f.info.format.clone()),
    ("size", |f| f.info.size.clone()),
    ("settings", |f| f.info.parameters.clone()),
    ("storage", |f| f.info.storage.clone()),
    ("streams", |f| f.info.streams.to_string()),
];

impl super::sealed::Sealed for RecordFigures {}

impl Compared for RecordFigures {
    type Measure = RecordMeasure;

    const KIND: &'static str = "record report";

    const FIGURES: &'static [Figure<RecordMeasure>] = FIGURES;

    fn value(&self, measure: RecordMeasure) -> f64 {
        match measure {
            RecordMeasure::Fps => self.fps,
            RecordMeasure::Written => self.frames_written as f64,
            RecordMeasure::Dropped => self.frames_dropped as f64,
            RecordMeasure::DroppedBy(RecordCause::Input) => self.dropped_input as f64,
            RecordMeasure::DroppedBy(RecordCause::Encode) => self.dropped_encode as f64,
            RecordMeasure::DroppedBy(RecordCause::Storage) => self.dropped_storage as f64,
            RecordMeasure::Failed => self.frames_failed as f64,
            RecordMeasure::MbPerS => self.mb_per_s,
            RecordMeasure::QueueWaitP99 => self.queue_wait.p99_ms,
            RecordMeasure::EncodeP99 => self.encode.p99_ms,
            RecordMeasure::WriteP99 => self.write.p99_ms,
            RecordMeasure::SyncP99 => self.sync.p99_ms,
            RecordMeasure::TotalP99 => self.total.p99_ms,
            RecordMeasure::CpuEncode => self.encode_cpu_s_per_gb,
            RecordMeasure::CpuInput => self.input_cpu_s_per_gb,
            RecordMeasure::CpuWrite => self.write_cpu_s_per_gb,
            RecordMeasure::EndSyncMs => self.end_sync_ms.unwrap_or(0.0),
        }
    }

    fn description(_runs: &[Run<'_, RecordFigures>]) -> Vec<(&'static str, Describe<RecordFigures>)> {
        DESCRIPTION.to_vec()
    }

    #[cfg(feature = "render")]
    fn panels() -> Vec<super::Panel<RecordMeasure>> {
        super::panel::record_panels()
    }

    #[cfg(feature = "render")]
    fn json(&self) -> serde_json::Value {
        record_json(self)
    }

    #[cfg(feature = "render")]
    fn pointer(&self, measure: RecordMeasure) -> Option<String> {
        record_pointer(self, measure)
    }
}

/// `complete`, `stopped: REASON` (an error stopped it) or `interrupted`.
fn status(f: &RecordFigures) -> String {
    match (&f.failure, f.interrupted) {
        (Some(reason), _) => format!("stopped: {reason}"),
        (None, true) => "interrupted".to_owned(),
        (None, false) => "complete".to_owned(),
    }
}

/// A record run's JSON form, as `record --json` writes it.
#[cfg(feature = "render")]
fn record_json(figures: &RecordFigures) -> serde_json::Value {
    serde_json::to_value(figures).unwrap_or(serde_json::Value::Null)
}

/// Where a record run's figure is in its JSON; none for the end sync of a run without one.
#[cfg(feature = "render")]
fn record_pointer(figures: &RecordFigures, measure: RecordMeasure) -> Option<String> {
    let key = match measure {
        RecordMeasure::Fps => "fps",
        RecordMeasure::Written => "frames_written",
        RecordMeasure::Dropped => "frames_dropped",
        RecordMeasure::DroppedBy(RecordCause::Input) => "dropped_input",
        RecordMeasure::DroppedBy(RecordCause::Encode) => "dropped_encode",
        RecordMeasure::DroppedBy(RecordCause::Storage) => "dropped_storage",
        RecordMeasure::Failed => "frames_failed",
        RecordMeasure::MbPerS => "mb_per_s",
        RecordMeasure::QueueWaitP99 => "queue_wait/p99_ms",
        RecordMeasure::EncodeP99 => "encode/p99_ms",
        RecordMeasure::WriteP99 => "write/p99_ms",
        RecordMeasure::SyncP99 => "sync/p99_ms",
        RecordMeasure::TotalP99 => "total/p99_ms",
        RecordMeasure::CpuEncode => "encode_cpu_s_per_gb",
        RecordMeasure::CpuInput => "input_cpu_s_per_gb",
        RecordMeasure::CpuWrite => "write_cpu_s_per_gb",
        RecordMeasure::EndSyncMs => {
            figures.end_sync_ms?;
            "end_sync_ms"
        }
    };
    Some(format!("/{key}"))
}

#[cfg(test)]
mod tests {
    use super::super::{read, ReadError, Reports};
    use super::*;
    use crate::format::compare::compare;
    use crate::model::record::{RecordInfo, StageLatency};

    /// Two record runs: the second encodes nothing (`--encode off`) and drops on storage.
    pub(crate) fn two_runs() -> (RecordFigures, RecordFigures) {
        let info = RecordInfo {
            destination: "/tmp/capture".into(),
            format: "dpx 10-bit rgb".into(),
            size: "2048x1080".into(),
            parameters: "--fps 24 -q 4 --encoders 2 --writers 2 --sync none".into(),
            fps: 24.0,
            storage: "local files (page cache)".into(),
            streams: 1,
        };
        let latency =
            |p99_ms: f64| StageLatency { n: 240, p50_ms: p99_ms / 2.0, p99_ms, max_ms: p99_ms * 1.5 };
        let a = RecordFigures {
            info: info.clone(),
            frames_arrived: 240,
            frames_written: 240,
            fps: 24.0,
            mb_per_s: 212.4,
            queue_wait: latency(1.0),
            encode: latency(20.0),
            write: latency(8.0),
            total: latency(30.0),
            encode_cpu_s_per_gb: 2.5,
            write_cpu_s_per_gb: 0.4,
            ..RecordFigures::default()
        };
        let b = RecordFigures {
            info: RecordInfo { parameters: format!("{} --encode off", info.parameters), ..info },
            frames_written: 230,
            frames_dropped: 10,
            dropped_storage: 10,
            fps: 23.0,
            encode: latency(0.0),
            encode_cpu_s_per_gb: 0.0,
            write: latency(16.0),
            failure: Some("frame 230: no space left on device".into()),
            ..a.clone()
        };
        (a, b)
    }

    #[test]
    fn record_runs_are_compared_with_records_figures_each_marked_against_the_first() {
        let (a, b) = two_runs();
        let text = compare(&[Run { name: "a.json", report: &a }, Run { name: "b.json", report: &b }]);
        // A row with its cells' padding squeezed to one space.
        let line = |label: &str| {
            let row = text.lines().find(|l| l.starts_with(label)).unwrap_or_default();
            row.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        assert!(line("fps").contains("24.00 23.00 -1.00 0.96x worse"), "{text}");
        assert!(line("frames written").contains("240 230 -10 0.96x worse"), "{text}");
        assert!(line("  storage").ends_with("0 10 +10 - worse"), "{text}");
        assert!(line("  encode").ends_with("0 0 +0 - same"), "{text}");
        assert!(line("write p99 ms").contains("16.00 +8.00 2.00x worse"), "{text}");
        assert!(line("encode p99 ms").ends_with("better"), "{text}");
        assert!(line("cpu encode s/GB").contains("2.500 0.000 -2.500 0.00x better"), "{text}");
        assert!(line("status").contains("complete stopped: frame 230: no space"), "{text}");
        assert!(line("settings").contains("--encode off"), "{text}");
        for label in ["  input", "failed", "MB/s", "queue wait p99 ms", "sync p99 ms", "total p99 ms"] {
            assert!(!line(label).is_empty(), "no `{label}` row:\n{text}");
        }
        assert!(line("cpu input s/GB").contains("0.000"), "{text}");
        assert!(line("end sync ms").contains("0.00"), "{text}");
        assert!(!text.contains("presented"), "a playback figure in a record comparison:\n{text}");
    }

    #[test]
    fn files_are_read_by_kind_and_a_mix_is_refused_naming_each() {
        let (a, b) = two_runs();
        let record = |f: &RecordFigures| serde_json::to_string_pretty(f).unwrap_or_default();
        let play = crate::format::json::to_string_pretty(&crate::testutil::sample_report());
        let reports = read(vec![("a.json".into(), record(&a)), ("b.json".into(), record(&b))]);
        assert!(
            matches!(&reports, Ok(Reports::Record(runs)) if runs.len() == 2 && runs[1].1 == b),
            "{reports:?}"
        );
        let reports = read(vec![("p.json".into(), play.clone()), ("q.json".into(), play.clone())]);
        assert!(matches!(&reports, Ok(Reports::Play(runs)) if runs.len() == 2), "{reports:?}");

        let mixed = read(vec![
            ("p.json".into(), play.clone()),
            ("a.json".into(), record(&a)),
            ("q.json".into(), play.clone()),
        ])
        .map(|_| ())
        .unwrap_err();
        assert!(matches!(mixed, ReadError::Mixed { .. }));
        assert_eq!(
            mixed.to_string(),
            "cannot compare playback and record reports together: p.json, q.json are playback \
             reports (playsim play --json), a.json is a record report (playsim record --json); \
             compare each kind on its own"
        );

        let neither = read(vec![("a.json".into(), record(&a)), ("notes.json".into(), "{\"x\": 1}".into())])
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            neither.to_string(),
            "notes.json is not a playsim report (write one with `playsim play SOURCE --json run.json`)"
        );
        let source = std::error::Error::source(&neither).map(ToString::to_string).unwrap_or_default();
        assert!(source.starts_with("malformed report: missing field"), "{source}");
    }
}
