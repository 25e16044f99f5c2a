//! The result of `playsim capacity`: every trial, the answer, what stopped the next candidate,
//! the margin and what was searched; rendered as text (printed) and as JSON (`--json`).
//!
//! The JSON shape is pinned by `schema/capacity.schema.json` (see [`crate::schema`]) and only
//! grows, as the run report's does.
//!
//! ```
//! use playsim_report::capacity::{Capacity, CapacityBy, CapacityText, Trial};
//! use playsim_report::renderer::Renderer;
//! use playsim_report::Drops;
//!
//! let capacity = Capacity {
//!     by: CapacityBy::Streams,
//!     best: 1,
//!     trials: vec![Trial::new(1, Drops::default(), 240, 12.5, 300.0)],
//!     ..Capacity::new(env!("CARGO_PKG_VERSION"))
//! };
//! let mut out = Vec::new();
//! CapacityText.render(&capacity, &mut out)?;
//! assert!(String::from_utf8_lossy(&out).starts_with("trial    1 streams: pass"));
//! # Ok::<(), playsim_report::renderer::RenderError>(())
//! ```

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::model::{DropCauseName, Drops};
use crate::renderer::{RenderError, Renderer, Renderers};

/// The version of the capacity JSON's shape, written as `playsim_capacity`.
pub const CAPACITY_SCHEMA_VERSION: u32 = 1;

/// What a capacity search varies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacityBy {
    /// Streams of the sources, at the request's frame rate.
    #[default]
    Streams,
    /// Whole frames per second, one stream per source.
    Fps,
    /// Clients of a run under mpirun (the ranks beyond the candidate sit idle), each playing
    /// its sources at the request's rate and streams.
    Clients,
}

impl CapacityBy {
    /// The word for a candidate: `streams` or `fps`.
    pub fn as_str(self) -> &'static str {
        match self {
            CapacityBy::Streams => "streams",
            CapacityBy::Fps => "fps",
            CapacityBy::Clients => "clients",
        }
    }
}

/// The result of a capacity search, with what was searched (`capacity --json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    /// The JSON shape's version, [`CAPACITY_SCHEMA_VERSION`].
    pub playsim_capacity: u32,
    /// The version of playsim that searched.
    pub playsim_version: String,
    /// The sources played, as given.
    pub sources: Vec<String>,
    /// What was varied.
    pub by: CapacityBy,
    /// The frame rate of every trial, when streams were varied (`24`, `24000/1001`, `max`).
    pub fps: Option<String>,
    /// Playback time of each trial, seconds.
    pub window_s: f64,
    /// Trials per candidate; a candidate passes only when every trial has no drop.
    pub trials_per_candidate: u32,
    /// The largest candidate that could be tried.
    pub max: u32,
    /// The largest candidate that passed every trial; 0 when even 1 failed.
    pub best: u32,
    /// What stopped the next candidate: the cause with the most drops in its failed trial, or
    /// none when `max` passed.
    pub limit: Option<DropCauseName>,
    /// The worst slack of a presented frame over `best`'s trials, ms.
    pub margin_ms: Option<f64>,
    /// Under mpirun: the first frame dropped in the trial that failed at `best + 1`, naming
    /// the client that dropped it and why ("the third client's stream made it drop").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_drop: Option<FirstDrop>,
    /// Under mpirun: the clients of the run (`mpirun -np`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// Every trial, in the order run.
    pub trials: Vec<Trial>,
    /// Why the search stopped before its answer (`interrupted`, `terminated`), when it did:
    /// `best` is then the largest candidate that passed so far, a lower bound, and `limit` the
    /// cause of the smallest that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// The first frame a trial of several clients dropped: which client, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FirstDrop {
    /// The client's rank.
    pub client: u32,
    /// Its host.
    pub host: String,
    /// The cause the drop was charged to.
    pub cause: DropCauseName,
    /// When the frame fell due, in seconds from the trial's first start.
    pub at_s: f64,
}

impl Capacity {
    /// An empty result of the current shape, from playsim `version`.
    pub fn new(version: &str) -> Capacity {
        Capacity {
            playsim_capacity: CAPACITY_SCHEMA_VERSION,
            playsim_version: version.to_owned(),
            ..Capacity::default()
        }
    }
}

/// One trial of one candidate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trial {
    /// Streams, or frames per second.
    pub candidate: u32,
    /// No drop, and at least one frame fell due.
    pub passed: bool,
    /// Frames that fell due.
    pub frames_due: u64,
    /// Frames dropped, by cause.
    pub dropped: Drops,
    /// The worst slack of a presented frame, ms (how close the run came to a drop); `null` in
    /// the JSON when no frame was presented.
    #[serde(deserialize_with = "number_or_null")]
    #[schemars(with = "Option<f64>")]
    pub worst_slack_ms: f64,
    /// Megabytes (10^6 bytes) read per second of playback, over all streams; `null` in the
    /// JSON when it could not be worked out.
    #[serde(deserialize_with = "number_or_null")]
    #[schemars(with = "Option<f64>")]
    pub mb_per_s: f64,
    /// Under mpirun: the first frame dropped, its client and cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_drop: Option<FirstDrop>,
}

impl Trial {
    /// A trial's figures; it passed when nothing dropped and some frame fell due.
    pub fn new(candidate: u32, dropped: Drops, frames_due: u64, worst_slack_ms: f64, mb_per_s: f64) -> Trial {
        Trial {
            candidate,
            passed: dropped.total() == 0 && frames_due > 0,
            frames_due,
            dropped,
            worst_slack_ms,
            mb_per_s,
            first_drop: None,
        }
    }
}

impl FirstDrop {
    /// The first frame dropped in a merged report of several clients (the earliest due, on
    /// the merged time line), with its client; `None` when nothing dropped or the report is
    /// not a merged one.
    pub fn of(merged: &crate::model::Report) -> Option<FirstDrop> {
        let first_start = merged.cluster.as_ref().map_or(0, |c| c.first_start_ns);
        let (client, frame) = merged
            .streams
            .iter()
            .filter_map(|s| Some((s.client?, s)))
            .flat_map(|(client, s)| s.timeline.iter().filter(|f| f.cause.is_some()).map(move |f| (client, f)))
            .min_by_key(|(client, f)| (f.due_ns, *client))?;
        let host =
            merged.clients.iter().find(|c| c.rank == client).map(|c| c.host.clone()).unwrap_or_default();
        Some(FirstDrop {
            client,
            host,
            cause: frame.cause?,
            at_s: frame.due_ns.saturating_sub(first_start) as f64 / 1e9,
        })
    }
}

impl DropCauseName {
    /// The cause as a word: `storage`, `decode`, `output` or `unreadable`.
    pub fn word(self) -> &'static str {
        cause_word(self)
    }
}

/// A number the JSON writes as `null` when it is not finite; read back as NaN.
fn number_or_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

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

/// Registers the capacity result's renderers, one line per format: its text and its JSON, and
/// with the `render` feature its HTML page.
pub fn register_capacity_renderers(renderers: &mut Renderers<Capacity>) {
    renderers.register(CapacityText);
    renderers.register(CapacityJson);
    #[cfg(feature = "render")]
    renderers.register(crate::html::Html);
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
        format!(" (first on client {} ({}), {} at {:.2} s)", f.client, f.host, cause_word(f.cause), f.at_s)
    });
    if let Some(why) = &found.interrupted {
        let failed = found.trials.iter().filter(|t| !t.passed).map(|t| t.candidate).min();
        let _ = writeln!(
            out,
            "capacity: stopped ({why}) before the search ended: at least {} {what} with no drop over {window:?}{}; margin {margin}",
            found.best,
            match (failed, found.limit) {
                (Some(failed), Some(limit)) => format!(", fewer than {failed} ({failed} failed for {})", cause_word(limit)),
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
            cause_word(limit),
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

/// Reads a capacity result back from its JSON.
pub fn from_str(text: &str) -> Result<Capacity, crate::Error> {
    Ok(serde_json::from_str(text)?)
}

/// Writes the result as JSON to `path`, atomically.
pub fn write_json_atomic(found: &Capacity, path: &Path) -> Result<(), crate::renderer::WriteError> {
    crate::renderer::write_atomic(&CapacityJson, found, path)
}

/// The drop cause as the text names it.
fn cause_word(cause: DropCauseName) -> &'static str {
    match cause {
        DropCauseName::Storage => "storage",
        DropCauseName::Decode => "decode",
        DropCauseName::Output => "output",
        DropCauseName::Unreadable => "unreadable",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
