//! `playsim frametest`'s result as frametest's summary ([`summary`]), the per-frame CSV
//! ([`csv`], `-x`) and the figures as JSON ([`json`], `--json`); the model is
//! [`crate::model::frametest`].

use std::fmt::Write as _;
use std::path::Path;
use std::{fmt, io};

use crate::model::frametest::*;
use crate::rendering::{RenderError, Renderer};

/// `--json`: [`figures`] as pretty JSON ending with a newline, its keys in the order of a
/// `serde_json::Value` (as playsim has always written them).
pub fn json(result: &FrametestResult) -> String {
    // Plain numbers, strings and maps always serialise; the fallbacks keep this panic-free.
    let value = serde_json::to_value(figures(result)).unwrap_or_default();
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// frametest's summary as a renderer (`text`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FrametestText;

impl Renderer<FrametestResult> for FrametestText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, result: &FrametestResult, out: &mut dyn io::Write) -> Result<(), RenderError> {
        Ok(out.write_all(summary(result).as_bytes())?)
    }
}

/// `--csv`, the time of every frame, as a renderer (`csv`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FrametestCsv;

impl Renderer<FrametestResult> for FrametestCsv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn render(&self, result: &FrametestResult, out: &mut dyn io::Write) -> Result<(), RenderError> {
        Ok(out.write_all(csv(result).as_bytes())?)
    }

    fn failure(&self, path: &Path, reason: &dyn fmt::Display) -> String {
        format!("writing the frame times to {}: {reason}", path.display())
    }
}

/// `--json`, the figures, as a renderer (`json`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FrametestJson;

impl Renderer<FrametestResult> for FrametestJson {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["json"]
    }

    fn render(&self, result: &FrametestResult, out: &mut dyn io::Write) -> Result<(), RenderError> {
        Ok(out.write_all(json(result).as_bytes())?)
    }

    fn failure(&self, path: &Path, reason: &dyn fmt::Display) -> String {
        format!("writing the result to {}: {reason}", path.display())
    }
}

/// frametest's summary: frames transferred and dropped, fastest and slowest frame,
/// averages, data and frame rate, and a histogram of frame times. MB = 10^6 bytes.
pub fn summary(result: &FrametestResult) -> String {
    let info = &result.info;
    let run = &result.run;
    let s = FrametestStats::of(run);
    let duration = result.duration();
    let mut out = String::new();
    let verb = if info.write { "write" } else { "read" };
    let size = info.size.as_ref().map_or_else(|| "frames of varying size".to_owned(), FrameSize::describe);
    let _ = writeln!(out, "playsim frametest: {verb} {size}");
    let _ = writeln!(out, "Test parameters:    {}", info.parameters);
    let _ = writeln!(
        out,
        "Location:           {} ({}, {} files; {})",
        info.location, info.pattern, info.n_files, info.transport
    );
    let queue = plural(u64::from(info.queue), "frame");
    let pacing = match &info.fps {
        Some(rate) => {
            format!("{rate} fps, queue of {queue}, clock started at {:.3} s", run.t0_ns as f64 / 1e9)
        }
        None => format!("as fast as possible, queue of {queue}"),
    };
    let _ = writeln!(out, "Pacing:             {}, {pacing}", plural(u64::from(info.threads), "thread"));
    let _ = writeln!(out, "Test duration:      {:.3} s", duration.as_secs_f64());
    let _ = writeln!(out, "Frames transferred: {} ({:.3} MB)", s.transferred, s.bytes as f64 / 1e6);
    let _ = writeln!(out, "Frames dropped:     {}", s.dropped);
    if s.failed > 0 {
        let _ = writeln!(out, "Frames failed:      {}", s.failed);
    }
    for (label, frame) in [("Fastest frame:", s.fastest), ("Slowest frame:", s.slowest)] {
        if let Some((t, bytes)) = frame {
            let _ = writeln!(out, "{label:<20}{:.3} ms ({:.2} MB/s)", ms(t), mb_per_s(bytes, t));
        }
    }
    let _ = writeln!(out, "Averaged details:");
    let _ = writeln!(
        out,
        "{:>13}{:>13}{:>13}{:>13}{:>13}{:>15}{:>12}",
        "", "Open", "I/O", "Close", "Frame", "Data rate", "Frame rate"
    );
    let _ = writeln!(
        out,
        "{:>13}{:>10.3} ms{:>10.3} ms{:>10.3} ms{:>10.3} ms{:>10.2} MB/s{:>8.2} fps",
        "Overall:",
        ms(s.average(s.open)),
        ms(s.average(s.io)),
        ms(s.average(s.close)),
        ms(s.average(s.frame)),
        mb_per_s(s.bytes, duration),
        frame_rate(s.transferred, duration)
    );
    if let Some(threads) = info.decode_threads {
        let _ = writeln!(
            out,
            "Decode:             {} frames, average {:.3} ms, slowest {:.3} ms, {:.3} CPU s on {}",
            s.decoded,
            ms(s.average_decode()),
            ms(s.decode_max),
            run.decode_cpu.as_secs_f64(),
            plural(u64::from(threads), "thread")
        );
    }
    let used: Vec<usize> = (0..s.histogram.len()).filter(|&i| s.histogram[i] > 0).collect();
    if let (Some(&first), Some(&last)) = (used.first(), used.last()) {
        let _ = writeln!(out, "Histogram of frame times (open + I/O + close):");
        let most = s.histogram.iter().copied().max().unwrap_or(1).max(1);
        for (i, &n) in s.histogram.iter().enumerate().take(last + 1).skip(first) {
            let bar = "#".repeat(usize::try_from(n * 40 / most).unwrap_or(0).max(usize::from(n > 0)));
            let _ = writeln!(out, "{:>17} {n:>8} |{bar}", bucket_label(i));
        }
    }
    for note in &info.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    for error in result.errors().take(10) {
        let _ = writeln!(out, "Failed: {error}");
    }
    if s.failed > 10 {
        let _ = writeln!(out, "Failed: ... and {} more (see -x)", s.failed - 10);
    }
    if let Some(failure) = &run.failure {
        let _ = writeln!(out, "Stopped: {failure}");
    } else if run.interrupted {
        let _ = writeln!(out, "Stopped: interrupted before every frame was due");
    }
    let _ = writeln!(out, "MB = 10^6 bytes; MB/s = 10^6 bytes per second.");
    out
}

/// `-x`: one row per frame. Times are in ms; `due`, `issued`, `start` and `done` from the
/// start of the run, `open`, `io`, `close`, `decode` and `frame` as durations.
pub fn csv(result: &FrametestResult) -> String {
    let mut out = String::from(
        "frame,file,due_ms,issued_ms,start_ms,open_ms,io_ms,close_ms,decode_ms,done_ms,frame_ms,bytes,outcome,error\n",
    );
    let at = |t: Option<u64>| t.map_or_else(String::new, |ns| format!("{:.3}", ns as f64 / 1e6));
    let span = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.3}", b.saturating_sub(a) as f64 / 1e6),
        _ => String::new(),
    };
    for r in &result.run.records {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.position,
            csv_field(&result.info.pattern.name(r.file_idx)),
            at(r.due_ns),
            at(r.issued_ns),
            at(r.started_ns),
            span(r.started_ns, r.opened_ns),
            span(r.opened_ns, r.transferred_ns),
            span(r.transferred_ns, r.closed_ns),
            span(r.closed_ns, r.decoded_ns),
            at(r.done_ns),
            span(r.started_ns, r.closed_ns),
            r.bytes,
            r.outcome.name(),
            csv_field(r.error.as_deref().unwrap_or(""))
        );
    }
    out
}

fn bucket_label(i: usize) -> String {
    match (i.checked_sub(1).and_then(|j| BUCKETS_MS.get(j)), BUCKETS_MS.get(i)) {
        (None, Some(hi)) => format!("< {hi} ms"),
        (Some(lo), Some(hi)) => format!("{lo} - {hi} ms"),
        (Some(lo), None) => format!(">= {lo} ms"),
        (None, None) => String::new(),
    }
}

/// "1 thread", "4 threads".
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A CSV field, quoted when it needs to be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    use super::*;

    #[test]
    fn presets_are_frametests_sizes() {
        let h = DEFAULT_HEADER_BYTES;
        let size = |name| FrameSize::preset(name, h).unwrap();
        assert_eq!(size("2k").file_bytes, 2048 * 1556 * 4 + 65_536);
        assert_eq!(size("2K").file_bytes / 1024, 12_512);
        assert_eq!(size("4k").file_bytes, 4096 * 3112 * 4 + 65_536);
        assert_eq!(size("4k").file_bytes / 1024, 49_856);
        assert_eq!((size("hd").width, size("hd").height), (1920, 1080));
        assert_eq!((size("sd").width, size("sd").height), (720, 480));
        assert_eq!(FrameSize::parse("12512", h).unwrap().file_bytes, size("2k").file_bytes);
        assert_eq!(size("2k").describe(), "2k: 12,812,288 bytes (2048x1556 10-bit rgb dpx at offset 65,536)");
        for bad in ["5k", "", "-3", "0", "2k2"] {
            assert!(FrameSize::parse(bad, h).unwrap_err().to_string().contains("for example"), "{bad}");
        }
        assert!(FrameSize::custom_kb(64, h).unwrap_err().to_string().contains("no room"));
        assert!(FrameSize::custom_kb(2 << 20, h).unwrap_err().to_string().contains("for example"));
        assert!(header_bytes_of_kb(1).unwrap_err().to_string().contains("for example"));
    }

    #[test]
    fn custom_sizes_fit_whole_lines_and_pad() {
        let s = FrameSize::custom_kb(1000, DEFAULT_HEADER_BYTES).unwrap();
        assert_eq!(s.file_bytes, 1_024_000);
        assert_eq!((s.width, s.height), (4096, (1_024_000 - 65_536) / 4 / 4096));
        assert!(s.image_bytes() <= s.file_bytes - s.header_bytes);
        let tiny = FrameSize::custom_kb(65, DEFAULT_HEADER_BYTES).unwrap();
        assert_eq!((tiny.width, tiny.height), (256, 1));
    }

    #[test]
    fn sizes_are_guessed_from_file_bytes() {
        let two_k = FrameSize::preset("2k", DEFAULT_HEADER_BYTES).unwrap();
        assert_eq!(FrameSize::guess(two_k.file_bytes), Some(two_k.clone()));
        assert_eq!(two_k.flag_value(), "2k");
        let custom = FrameSize::guess(1_024_000).unwrap();
        assert_eq!((custom.name.as_str(), custom.flag_value()), ("1000 KB", "1000".to_owned()));
        assert_eq!(FrameSize::guess(1_000_001), None);
    }

    #[test]
    fn name_patterns() {
        let p: NamePattern = DEFAULT_NAME.parse().unwrap();
        assert_eq!(p, NamePattern::playsim());
        assert_eq!(FRAMETEST_NAME.parse::<NamePattern>().unwrap(), NamePattern::frametest());
        assert_eq!(p.name(0), "frame000000.dpx");
        assert_eq!(p.name(1_234_567), "frame1234567.dpx");
        assert_eq!(p.to_string(), DEFAULT_NAME);
        let p: NamePattern = "shot_%d.tst".parse().unwrap();
        assert_eq!((p.name(42), p.to_string()), ("shot_42.tst".to_owned(), "shot_%d.tst".to_owned()));
        for bad in ["frame.dpx", "a/%06d.dpx", "%06d%d", "%06x.dpx", "%099d"] {
            assert!(bad.parse::<NamePattern>().unwrap_err().to_string().contains("for example"), "{bad}");
        }
        assert_eq!(serde_json::to_value(&p).unwrap(), "shot_%d.tst");
        assert!(serde_json::from_value::<NamePattern>("frame.dpx".into()).is_err());
    }

    #[test]
    fn thousands_and_csv_fields() {
        assert_eq!(
            (thousands(0), thousands(999), thousands(1000)),
            ("0".into(), "999".into(), "1,000".into())
        );
        assert_eq!(thousands(12_812_288), "12,812,288");
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    fn record(position: u64, outcome: FrameOutcome, start_ms: u64, frame_ms: u64, bytes: u64) -> FrameRecord {
        let ns = |ms: u64| Some(ms * 1_000_000);
        FrameRecord {
            position,
            file_idx: position,
            due_ns: None,
            issued_ns: ns(start_ms),
            started_ns: ns(start_ms),
            opened_ns: ns(start_ms),
            transferred_ns: ns(start_ms + frame_ms),
            closed_ns: ns(start_ms + frame_ms),
            decoded_ns: None,
            done_ns: ns(start_ms + frame_ms),
            bytes,
            outcome,
            error: None,
        }
    }

    fn four_frames() -> FrametestResult {
        let size = FrameSize::preset("2k", DEFAULT_HEADER_BYTES).unwrap();
        let b = size.file_bytes;
        let dropped = FrameRecord::new(2, 2, None);
        let run = FrametestRun {
            records: vec![
                record(0, FrameOutcome::Transferred, 0, 10, b),
                record(1, FrameOutcome::Transferred, 10, 30, b),
                dropped,
                record(3, FrameOutcome::Transferred, 40, 3, b),
            ],
            t0_ns: 0,
            end_ns: 1_000_000_000,
            ..FrametestRun::default()
        };
        let info = FrametestInfo {
            write: false,
            parameters: "-r 2k -n 4 -t 1".into(),
            location: "/tmp/ft".into(),
            pattern: NamePattern::playsim(),
            n_files: 4,
            size: Some(size),
            threads: 1,
            queue: 1,
            fps: None,
            decode_threads: None,
            transport: "local files".into(),
            notes: Vec::new(),
        };
        FrametestResult { info, run }
    }

    #[test]
    fn the_summary_has_frametests_figures() {
        let result = four_frames();
        let b = result.info.size.as_ref().unwrap().file_bytes;
        let text = summary(&result);
        for line in [
            "Test parameters:    -r 2k -n 4 -t 1",
            "Frames transferred: 3 (38.437 MB)",
            "Frames dropped:     1",
            "Fastest frame:      3.000 ms (4270.76 MB/s)",
            "Slowest frame:      30.000 ms (427.08 MB/s)",
            "MB = 10^6 bytes",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
        assert!(text.contains("14.333 ms     38.44 MB/s    3.00 fps"), "{text}");
        assert!(text.contains("2 - 4 ms        1 |"), "{text}");
        assert!(text.contains("8 - 16 ms        1 |"), "{text}");
        assert!(!text.contains("Frames failed"), "{text}");
        let csv = csv(&result);
        assert_eq!(csv.lines().count(), 5);
        assert_eq!(csv.lines().nth(3), Some("2,frame000002.dpx,,,,,,,,,,0,dropped,"));
        assert!(csv
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("1,frame000001.dpx,,10.000,10.000,0.000,30.000,0.000,,40.000,30.000,"));
        let json: serde_json::Value = serde_json::from_str(&json(&result)).unwrap();
        assert_eq!(
            (json["frames_transferred"].as_u64(), json["frames_dropped"].as_u64()),
            (Some(3), Some(1))
        );
        assert_eq!(json["frame_size"]["file_bytes"].as_u64(), Some(b));
        assert_eq!(json["histogram"][13]["to_ms"], serde_json::Value::Null);
        let back: FrametestFigures = serde_json::from_value(json).unwrap();
        assert_eq!(back, figures(&result));
    }

    #[test]
    fn the_result_round_trips_through_json() {
        let result = four_frames();
        let back: FrametestResult = serde_json::from_str(&serde_json::to_string(&result).unwrap()).unwrap();
        assert_eq!(back, result);
    }

    #[test]
    fn the_schema_describes_what_json_writes() {
        let schema: serde_json::Value = serde_json::from_str(&figures_schema()).unwrap();
        assert_eq!(schema["title"], "FrametestFigures");
        let written: serde_json::Value = serde_json::from_str(&json(&four_frames())).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        let keys = written.as_object().unwrap().keys();
        assert!(keys.clone().all(|k| properties.contains_key(k)), "{written}");
        assert_eq!(keys.count(), properties.len());
        assert!(schema["definitions"]["FrameSize"]["properties"]["header_bytes"].is_object());
    }
}
