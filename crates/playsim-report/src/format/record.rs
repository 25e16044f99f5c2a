//! `playsim record`'s result as text (the summary), JSON (the figures) and the per-frame
//! timeline CSV; the model is [`crate::model::record`].

use std::fmt::Write as _;

use crate::model::record::*;

/// Every frame's times as CSV, one line a frame in stream and position order: its stream and
/// position, each stage's time in milliseconds from the run's start (empty for a stage it never
/// reached), its bytes, outcome, cause and error. The timeline a capture engineer plots to see
/// where a stall began.
pub fn timeline_csv(result: &RecordResult) -> String {
    let mut out = String::from(
        "stream,position,due_ms,encode_started_ms,encoded_ms,write_started_ms,written_ms,synced_ms,done_ms,bytes,outcome,cause,error\n",
    );
    let ms = |ns: Option<u64>| ns.map_or_else(String::new, |ns| format!("{:.3}", ns as f64 / 1e6));
    let mut records: Vec<&RecordFrame> = result.run.records.iter().collect();
    records.sort_by_key(|r| (r.stream, r.position));
    for r in records {
        let outcome = match r.outcome {
            RecordOutcome::Written => "written",
            RecordOutcome::Dropped => "dropped",
            RecordOutcome::Failed => "failed",
        };
        let error = r.error.as_deref().map(|e| format!("\"{}\"", e.replace('"', "\"\""))).unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{outcome},{},{error}",
            r.stream,
            r.position,
            ms(Some(r.due_ns)),
            ms(r.encode_started_ns),
            ms(r.encoded_ns),
            ms(r.write_started_ns),
            ms(r.written_ns),
            ms(r.synced_ns),
            ms(r.done_ns),
            r.bytes,
            r.cause.map_or("", RecordCause::name),
        );
    }
    out
}

/// The capacity result as text.
pub fn capacity_summary(c: &RecordCapacity) -> String {
    let mut out = String::new();
    let what = match c.by {
        RecordCapacityBy::Streams => format!("streams at {} fps", c.fps.unwrap_or(0.0)),
        RecordCapacityBy::Fps => "fps of one stream".to_owned(),
    };
    let _ = writeln!(
        out,
        "Record capacity: {} {}, {} to {}",
        c.info.format, c.info.size, what, c.info.destination
    );
    let _ = writeln!(
        out,
        "  {} s a trial, {} trial(s) a candidate, at most {}; written as {}",
        c.window_s, c.trials_per_candidate, c.max, c.info.storage
    );
    let _ = writeln!(
        out,
        "  candidate  passed  written/arrived  encode  storage  input  failed      fps     MB/s"
    );
    for t in &c.trials {
        let _ = writeln!(
            out,
            "  {:>9}  {:>6}  {:>15}  {:>6}  {:>7}  {:>5}  {:>6}  {:>7.2}  {:>7.1}",
            t.candidate,
            if t.passed { "yes" } else { "no" },
            format!("{}/{}", t.frames_written, t.frames_arrived),
            t.dropped_encode,
            t.dropped_storage,
            t.dropped_input,
            t.frames_failed,
            t.fps,
            t.mb_per_s
        );
    }
    let unit = match c.by {
        RecordCapacityBy::Streams => "stream(s)",
        RecordCapacityBy::Fps => "fps",
    };
    match c.limit {
        Some(limit) => {
            let _ = writeln!(out, "Capacity: {} {unit}; beyond it, frames drop on {}", c.best, limit.name());
        }
        None => {
            let _ = writeln!(out, "Capacity: {} {unit} or more (the most tried, --max, passed)", c.best);
        }
    }
    out
}

/// The capacity result as JSON.
pub fn capacity_json(c: &RecordCapacity) -> String {
    serde_json::to_string_pretty(c).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The figures as JSON.
pub fn json(result: &RecordResult) -> String {
    serde_json::to_string_pretty(&figures(result)).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The summary, as text.
pub fn summary(result: &RecordResult) -> String {
    let f = figures(result);
    let mut out = String::new();
    let _ = writeln!(out, "Record: {} to {}", f.info.format, f.info.destination);
    let _ = writeln!(out, "  size {}, {}", f.info.size, f.info.parameters);
    if !f.info.storage.is_empty() {
        let _ = writeln!(out, "  written as {}", f.info.storage);
    }
    if !f.per_stream.is_empty() {
        let each: Vec<String> = f
            .per_stream
            .iter()
            .map(|s| {
                format!("{} ({} dropped, {} failed)", s.frames_written, s.frames_dropped, s.frames_failed)
            })
            .collect();
        let _ = writeln!(
            out,
            "  {} streams at once; written per stream: {}",
            f.per_stream.len(),
            each.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "Frames written: {} of {} ({:.3} MB) in {:.3} s: {:.2} fps, {:.1} MB/s",
        f.frames_written,
        f.frames_arrived,
        f.bytes as f64 / 1e6,
        f.elapsed_s,
        f.fps,
        f.mb_per_s
    );
    let _ = writeln!(
        out,
        "Frames dropped: {} (input {}, encode {}, storage {}); failed: {}",
        f.frames_dropped, f.dropped_input, f.dropped_encode, f.dropped_storage, f.frames_failed
    );
    let _ = writeln!(out, "Latency ms        n      p50      p99      max");
    for (name, l) in [
        ("queue wait", &f.queue_wait),
        ("encode", &f.encode),
        ("write", &f.write),
        ("sync", &f.sync),
        ("total", &f.total),
    ] {
        if l.n > 0 {
            let _ = writeln!(
                out,
                "  {name:<12} {:>6} {:>8.2} {:>8.2} {:>8.2}",
                l.n, l.p50_ms, l.p99_ms, l.max_ms
            );
        }
    }
    if let Some(ms) = f.end_sync_ms {
        let _ = writeln!(out, "End sync: {ms:.2} ms");
    }
    let input = if f.input_cpu_s_per_gb > 0.0 {
        format!("input {:.3} s, ", f.input_cpu_s_per_gb)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "CPU per GB written: {input}encode {:.3} s, write {:.3} s",
        f.encode_cpu_s_per_gb, f.write_cpu_s_per_gb
    );
    let failed: Vec<&str> = result.run.records.iter().filter_map(|r| r.error.as_deref()).take(5).collect();
    for error in &failed {
        let _ = writeln!(out, "  {error}");
    }
    if let Some(failure) = &f.failure {
        let _ = writeln!(out, "Stopped: {failure}");
    } else if f.interrupted {
        let _ = writeln!(out, "Stopped before every frame arrived (interrupted)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(position: u64, outcome: RecordOutcome, cause: Option<RecordCause>) -> RecordFrame {
        let due = position * 40_000_000;
        let written = outcome == RecordOutcome::Written;
        RecordFrame {
            stream: 0,
            position,
            due_ns: due,
            encode_started_ns: written.then_some(due + 1_000_000),
            encoded_ns: written.then_some(due + 11_000_000),
            write_started_ns: written.then_some(due + 11_000_000),
            written_ns: written.then_some(due + 31_000_000),
            synced_ns: None,
            done_ns: written.then_some(due + 32_000_000),
            bytes: if written { 1_000_000 } else { 0 },
            outcome,
            cause,
            error: None,
        }
    }

    #[test]
    fn streams_recorded_at_once_merge_into_one_run_counted_per_stream() {
        let a = RecordRun {
            records: vec![frame(0, RecordOutcome::Written, None), frame(1, RecordOutcome::Written, None)],
            end_ns: 80_000_000,
            encode_cpu_ns: 5,
            ..RecordRun::default()
        };
        let b = RecordRun {
            records: vec![
                frame(0, RecordOutcome::Written, None),
                frame(1, RecordOutcome::Dropped, Some(RecordCause::Encode)),
            ],
            end_ns: 90_000_000,
            encode_cpu_ns: 7,
            failure: Some("stopped".into()),
            ..RecordRun::default()
        };
        let run = RecordRun::merge(vec![a, b]);
        assert_eq!(run.records.iter().map(|r| r.stream).collect::<Vec<_>>(), [0, 0, 1, 1]);
        assert_eq!((run.end_ns, run.encode_cpu_ns, run.failure.as_deref()), (90_000_000, 7, Some("stopped")));
        let info = RecordInfo { streams: 2, ..RecordInfo::default() };
        let f = figures(&RecordResult { info, run });
        assert_eq!((f.frames_written, f.dropped_encode), (3, 1));
        assert_eq!(
            f.per_stream.iter().map(|s| (s.frames_written, s.frames_dropped)).collect::<Vec<_>>(),
            [(2, 0), (1, 1)]
        );
        let trial = RecordTrial::of(2, &f);
        assert!(!trial.passed);
        assert_eq!(trial.limit(), RecordCause::Encode);
        let mut failed = frame(2, RecordOutcome::Failed, Some(RecordCause::Storage));
        failed.error = Some("frame 2 (a \"b\"): no space".into());
        let csv = timeline_csv(&RecordResult {
            info: RecordInfo::default(),
            run: RecordRun {
                records: vec![failed, frame(0, RecordOutcome::Written, None)],
                ..RecordRun::default()
            },
        });
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1], "0,0,0.000,1.000,11.000,11.000,31.000,,32.000,1000000,written,,");
        assert_eq!(lines[2], "0,2,80.000,,,,,,,0,failed,storage,\"frame 2 (a \"\"b\"\"): no space\"");
    }

    #[test]
    fn figures_count_drops_by_cause_and_time_each_stage() {
        let run = RecordRun {
            records: vec![
                frame(0, RecordOutcome::Written, None),
                frame(1, RecordOutcome::Dropped, Some(RecordCause::Storage)),
                frame(2, RecordOutcome::Dropped, Some(RecordCause::Encode)),
                frame(3, RecordOutcome::Written, None),
            ],
            end_ns: 3 * 40_000_000 + 32_000_000,
            encode_cpu_ns: 20_000_000,
            ..RecordRun::default()
        };
        let f = figures(&RecordResult { info: RecordInfo::default(), run });
        assert_eq!((f.frames_arrived, f.frames_written, f.frames_dropped), (4, 2, 2));
        assert_eq!((f.dropped_input, f.dropped_encode, f.dropped_storage), (0, 1, 1));
        assert_eq!(f.bytes, 2_000_000);
        assert_eq!((f.encode.n, f.encode.p50_ms, f.write.max_ms), (2, 10.0, 20.0));
        assert_eq!(f.total.max_ms, 32.0);
        assert!((f.elapsed_s - 0.152).abs() < 1e-9);
        assert!((f.encode_cpu_s_per_gb - 10.0).abs() < 1e-9);
    }
}
