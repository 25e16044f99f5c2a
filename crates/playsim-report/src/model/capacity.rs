//! The result of `playsim capacity`: every trial, the answer, what stopped the next candidate,
//! the margin and what was searched; rendered as text (printed) and as JSON (`--json`).
//!
//! The JSON shape is pinned by `schema/capacity.schema.json` (see [`crate::model::schema`]) and only
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

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::model::{DropCauseName, Drops};

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

/// A number the JSON writes as `null` when it is not finite; read back as NaN.
fn number_or_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

/// Reads a capacity result back from its JSON.
pub fn from_str(text: &str) -> Result<Capacity, crate::Error> {
    Ok(serde_json::from_str(text)?)
}
