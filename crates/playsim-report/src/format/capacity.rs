//! The result of `playsim capacity` as text (printed) and as JSON (`--json`); the model is
//! [`crate::model::capacity`].

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use crate::model::capacity::*;
use crate::rendering::{write_atomic, RenderError, Renderer, WriteError};

/// The result as text, a line per trial and then the answer: the `text` renderer, which
/// `playsim capacity` prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct CapacityText;

impl Renderer<Capacity> for CapacityText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, found: &Capacity, out: &mut dyn Write) -> Result<(), RenderError> {
        Ok(out.write_all(text(found).as_bytes())?)
    }
}

/// The result as text: a line per trial, then the answer.
pub fn text(found: &Capacity) -> String {
    // Under mpirun every client plays the candidate's streams.
    let what = match (found.by, found.clients) {
        (CapacityBy::Streams, Some(_)) => "streams a client",
        (by, _) => by.as_str(),
    };
    let mut out = String::new();
    for t in &found.trials {
        let d = &t.dropped;
        let _ = writeln!(
            out,
            "trial {:>4} {what}: {} (dropped storage {} decode {} output {} unreadable {} of {} due; worst slack {:.1} ms)",
            t.candidate,
            if d.total() == 0 { "pass" } else { "FAIL" },
            d.storage,
            d.decode,
            d.output,
            d.unreadable,
            t.frames_due,
            t.worst_slack_ms
        );
    }
    let margin = found.margin_ms.map_or_else(|| "-".to_owned(), |m| format!("{m:.1} ms"));
    let window = Duration::try_from_secs_f64(found.window_s).unwrap_or_default();
    let first = found.first_drop.as_ref().map_or_else(String::new, |f| {
        format!(" (first on client {} ({}), {} at {:.2} s)", f.client, f.host, f.cause.word(), f.at_s)
    });
    if let Some(why) = &found.interrupted {
        let failed = found.trials.iter().filter(|t| !t.passed).map(|t| t.candidate).min();
        let _ = writeln!(
            out,
            "capacity: stopped ({why}) before the search ended: at least {} {what} with no drop over {window:?}{}; margin {margin}",
            found.best,
            match (failed, found.limit) {
                (Some(failed), Some(limit)) => format!(", fewer than {failed} ({failed} failed for {})", limit.word()),
                _ => String::new(),
            }
        );
        return out;
    }
    let _ = match found.limit {
        Some(limit) => writeln!(
            out,
            "capacity: {} {what} with no drop over {window:?} ({} trials each); {} failed for {}{first}; margin (worst slack at {}) {margin}",
            found.best,
            found.trials_per_candidate,
            found.best + 1,
            limit.word(),
            found.best
        ),
        None => writeln!(
            out,
            "capacity: at least {} {what} (the --max) with no drop over {window:?}; margin {margin}",
            found.best
        ),
    };
    out
}

/// The result as pretty JSON: the `json` renderer (`capacity --json`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CapacityJson;

impl Renderer<Capacity> for CapacityJson {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["json"]
    }

    fn render(&self, found: &Capacity, out: &mut dyn Write) -> Result<(), RenderError> {
        // Through a `Value`, whose maps keep their keys sorted: the file has always been written
        // that way. A number that is not finite becomes `null`.
        let value = serde_json::to_value(found).map_err(io::Error::from)?;
        serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?;
        Ok(out.write_all(b"\n")?)
    }
}

/// Writes the result as JSON to `path`, atomically.
pub fn write_json_atomic(found: &Capacity, path: &Path) -> Result<(), WriteError> {
    write_atomic(&CapacityJson, found, path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{DropCauseName, Drops};

    fn sample() -> Capacity {
        let trial = |candidate: u32, decode: u64| {
            Trial::new(
                candidate,
                Drops { decode, ..Drops::default() },
                240,
                40.0 / f64::from(candidate),
                100.0,
            )
        };
        Capacity {
            sources: vec!["shot".into()],
            by: CapacityBy::Streams,
            fps: Some("24".into()),
            window_s: 10.0,
            trials_per_candidate: 2,
            max: 64,
            best: 1,
            limit: Some(DropCauseName::Decode),
            margin_ms: Some(40.0),
            trials: vec![trial(1, 0), trial(1, 0), trial(2, 3)],
            ..Capacity::new("0.1.0")
        }
    }

    fn json(found: &Capacity) -> String {
        let mut out = Vec::new();
        CapacityJson.render(found, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_has_a_line_per_trial_and_the_answer() {
        let text = text(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "trial    1 streams: pass (dropped storage 0 decode 0 output 0 unreadable 0 of 240 due; worst slack 40.0 ms)"
        );
        assert!(lines[2].contains("2 streams: FAIL (dropped storage 0 decode 3"), "{text}");
        assert_eq!(
            lines[3],
            "capacity: 1 streams with no drop over 10s (2 trials each); 2 failed for decode; margin (worst slack at 1) 40.0 ms"
        );
        let all = Capacity { limit: None, margin_ms: None, best: 64, ..sample() };
        assert!(text_of(&all)
            .ends_with("capacity: at least 64 streams (the --max) with no drop over 10s; margin -\n"));
    }

    fn text_of(found: &Capacity) -> String {
        text(found)
    }

    #[test]
    fn json_has_the_documented_fields_sorted_and_reads_back() {
        let found = sample();
        let text = json(&found);
        assert!(text.ends_with("}\n"));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["playsim_capacity"], 1);
        assert_eq!(
            (value["by"].as_str(), value["fps"].as_str(), value["limit"].as_str()),
            (Some("streams"), Some("24"), Some("decode"))
        );
        assert_eq!(value["trials"][2]["passed"], false);
        assert_eq!(value["trials"][2]["dropped"]["decode"], 3);
        assert_eq!(value["window_s"].as_f64(), Some(10.0));
        // Keys sorted, as the file has always had them.
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert!(text.find("\"best\"").unwrap() < text.find("\"by\"").unwrap());
        assert_eq!(from_str(&text).unwrap(), found);
    }

    #[test]
    fn numbers_that_are_not_finite_are_null_and_read_back() {
        let mut found = Capacity { by: CapacityBy::Fps, fps: None, limit: None, margin_ms: None, ..sample() };
        found.trials[0].worst_slack_ms = f64::INFINITY;
        let text = json(&found);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(value["fps"].is_null() && value["limit"].is_null() && value["margin_ms"].is_null(), "{text}");
        assert!(value["trials"][0]["worst_slack_ms"].is_null(), "{text}");
        let back = from_str(&text).unwrap();
        assert!(back.trials[0].worst_slack_ms.is_nan());
        assert_eq!(back.trials[1], found.trials[1]);
    }

    #[test]
    fn the_first_drop_of_a_merged_report_names_its_client_and_cause() {
        use crate::model::{ClientReport, ClusterReport, FrameRecord, Report, StreamReport};
        let frame = |due_ms: u64, cause: Option<DropCauseName>| FrameRecord {
            due_ns: due_ms * 1_000_000,
            cause,
            ..FrameRecord::default()
        };
        let stream = |client: u32, timeline: Vec<FrameRecord>| StreamReport {
            client: Some(client),
            timeline,
            ..StreamReport::default()
        };
        let merged = Report {
            streams: vec![
                stream(0, vec![frame(1_000, None), frame(1_500, Some(DropCauseName::Decode))]),
                stream(2, vec![frame(1_000, None), frame(1_250, Some(DropCauseName::Storage))]),
            ],
            clients: [0, 2]
                .map(|rank| ClientReport { rank, host: format!("ws{rank}"), ..ClientReport::default() })
                .to_vec(),
            cluster: Some(ClusterReport { first_start_ns: 1_000_000_000, ..ClusterReport::default() }),
            ..Report::default()
        };
        let first = FirstDrop::of(&merged).unwrap();
        assert_eq!((first.client, first.host.as_str(), first.cause), (2, "ws2", DropCauseName::Storage));
        assert!((first.at_s - 0.25).abs() < 1e-9, "{}", first.at_s);
        // A single run's streams have no client: no first drop to name.
        let single =
            Report { streams: vec![StreamReport { client: None, ..merged.streams[1].clone() }], ..merged };
        assert_eq!(FirstDrop::of(&single), None);

        let found = Capacity {
            clients: Some(3),
            first_drop: Some(first),
            limit: Some(DropCauseName::Storage),
            ..sample()
        };
        let text = text_of(&found);
        assert!(text.contains("trial    1 streams a client: pass"), "{text}");
        assert!(text.contains("2 failed for storage (first on client 2 (ws2), storage at 0.25 s)"), "{text}");
    }
}
