//! `playsim record`'s result: every frame's times through the write side (arrival, encode,
//! write, sync, publish), the drops by cause, and the summary and JSON figures over them.
//!
//! The engine's record runner ([`playsim_engine::record`]) fills a [`RecordRun`]; the facade
//! adds a [`RecordInfo`] (destination, format, settings) and hands both here as a
//! [`RecordResult`]. The shape of `--json` ([`RecordFigures`]) is pinned by
//! `schema/record.schema.json`.
//!
//! ```
//! use playsim_report::record::{self, RecordInfo, RecordResult, RecordRun};
//!
//! let result = RecordResult { info: RecordInfo::default(), run: RecordRun::default() };
//! assert!(record::summary(&result).contains("Frames written: 0"));
//! assert_eq!(record::figures(&result).frames_written, 0);
//! ```
//!
//! [`playsim_engine::record`]: https://docs.rs/playsim-engine

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The stage a dropped frame is charged to: the write side's drop rule (ARCHITECTURE.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RecordCause {
    /// The source could not supply the frame in time.
    Input,
    /// The oldest queued frame was waiting for, or in, the encoder.
    Encode,
    /// The oldest queued frame was being written, synced or published (or waiting to be).
    Storage,
}

/// The causes, in the order the legend and the comparison list them.
#[cfg_attr(not(feature = "render"), allow(dead_code))]
pub(crate) const RECORD_CAUSES: [RecordCause; 3] =
    [RecordCause::Input, RecordCause::Encode, RecordCause::Storage];

impl RecordCause {
    /// Its name: `input`, `encode`, `storage`.
    pub fn name(self) -> &'static str {
        match self {
            RecordCause::Input => "input",
            RecordCause::Encode => "encode",
            RecordCause::Storage => "storage",
        }
    }
}

/// What became of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RecordOutcome {
    /// Encoded, written and published under its real name.
    Written,
    /// It arrived while the queue was full, and was never encoded (see the record's cause).
    #[default]
    Dropped,
    /// Its encode or write failed (see the record's cause and error); no file is left under its
    /// real name.
    Failed,
}

/// One frame's times, in nanoseconds from the start of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecordFrame {
    /// The stream it belongs to, from 0 (`--streams`: each stream records into a directory of
    /// its own).
    #[serde(default)]
    pub stream: u32,
    /// Its position in the run (its frame number), from 0.
    pub position: u64,
    /// When it arrived, on the clock.
    pub due_ns: u64,
    /// When its encode started (it had an encoder).
    pub encode_started_ns: Option<u64>,
    /// When its encode returned.
    pub encoded_ns: Option<u64>,
    /// When its write started (it had a writer).
    pub write_started_ns: Option<u64>,
    /// When its bytes were written, under the temporary name.
    pub written_ns: Option<u64>,
    /// When its sync returned (`--sync frame`).
    pub synced_ns: Option<u64>,
    /// When it was published under its real name, and left the queue.
    pub done_ns: Option<u64>,
    /// Bytes of its file.
    pub bytes: u64,
    /// What became of it.
    pub outcome: RecordOutcome,
    /// The stage a dropped or failed frame is charged to.
    pub cause: Option<RecordCause>,
    /// Why it failed: the frame, the file and the error.
    pub error: Option<String>,
}

/// What the runner measured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecordRun {
    /// One record per frame that arrived, by position.
    pub records: Vec<RecordFrame>,
    /// When the last frame was done (and the end sync, with `--sync end`).
    pub end_ns: u64,
    /// How long the end sync took (`--sync end`).
    pub end_sync_ns: Option<u64>,
    /// The run stopped (Ctrl-C, or a storage error with `--on-error stop`) before every frame
    /// arrived.
    pub interrupted: bool,
    /// Why the run stopped early, when an error stopped it.
    pub failure: Option<String>,
    /// CPU time the encodes took (the generator's render included).
    pub encode_cpu_ns: u64,
    /// CPU time a source's reads and decodes took (`--source`); 0 for the generator.
    #[serde(default)]
    pub input_cpu_ns: u64,
    /// CPU time of the threads doing the writes and syncs, where the storage measures it.
    pub write_cpu_ns: u64,
}

/// What the summary says about a run besides its records.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordInfo {
    /// The destination, as given.
    pub destination: String,
    /// The format and its encoder, e.g. `dpx 10-bit rgb`.
    pub format: String,
    /// The frame size, e.g. `2048x1556`.
    pub size: String,
    /// The settings, as flags: `--fps 24 -q 4 --encoders 2 --writers 2 --sync none`.
    pub parameters: String,
    /// The frame rate, in frames per second (0 for as fast as possible).
    pub fps: f64,
    /// How the files are written: `local files (page cache)`, `nfs:// export /srv (...)`.
    pub storage: String,
    /// Streams recorded at once, each at the rate into a directory of its own (`--streams`);
    /// 1 for one.
    #[serde(default = "one")]
    pub streams: u32,
}

fn one() -> u32 {
    1
}

/// A record run with what was run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordResult {
    /// What was run.
    pub info: RecordInfo,
    /// What was measured.
    pub run: RecordRun,
}

/// Latency percentiles of a stage, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageLatency {
    /// Frames measured.
    pub n: u64,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The longest.
    pub max_ms: f64,
}

/// The figures of a run, as `--json` writes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordFigures {
    /// What was run.
    pub info: RecordInfo,
    /// Frames that arrived.
    pub frames_arrived: u64,
    /// Frames written and published.
    pub frames_written: u64,
    /// Frames dropped, all causes.
    pub frames_dropped: u64,
    /// Dropped because the source was late.
    pub dropped_input: u64,
    /// Dropped because the encoder held the oldest queued frame.
    pub dropped_encode: u64,
    /// Dropped because storage held the oldest queued frame.
    pub dropped_storage: u64,
    /// Frames whose encode or write failed.
    pub frames_failed: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Seconds from the first arrival to the last frame done.
    pub elapsed_s: f64,
    /// Frames written per second.
    pub fps: f64,
    /// Megabytes (10^6 bytes) written per second.
    pub mb_per_s: f64,
    /// Arrival to encode start.
    pub queue_wait: StageLatency,
    /// Encode (render included).
    pub encode: StageLatency,
    /// Write: writer start to written.
    pub write: StageLatency,
    /// Sync, per frame (`--sync frame`).
    pub sync: StageLatency,
    /// Arrival to published.
    pub total: StageLatency,
    /// The end sync, in milliseconds (`--sync end`).
    pub end_sync_ms: Option<f64>,
    /// Encode CPU seconds per GB written.
    pub encode_cpu_s_per_gb: f64,
    /// A source's read and decode CPU seconds per GB written (`--source`).
    #[serde(default)]
    pub input_cpu_s_per_gb: f64,
    /// Write CPU seconds per GB written (the writing threads', where measured).
    pub write_cpu_s_per_gb: f64,
    /// The stop's reason, when the run stopped early.
    pub failure: Option<String>,
    /// Whether the run stopped before every frame arrived.
    pub interrupted: bool,
    /// Each stream's counts, with `--streams` above 1 (empty for one stream).
    #[serde(default)]
    pub per_stream: Vec<StreamFigures>,
}

/// One stream's counts, when several record at once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamFigures {
    /// The stream, from 0.
    pub stream: u32,
    /// Frames written and published.
    pub frames_written: u64,
    /// Frames dropped, all causes.
    pub frames_dropped: u64,
    /// Frames whose encode or write failed.
    pub frames_failed: u64,
}

/// What `record --capacity` varies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RecordCapacityBy {
    /// Streams recorded at once, each at the rate.
    #[default]
    Streams,
    /// The rate of one stream, in whole frames per second.
    Fps,
}

/// One trial of a `record --capacity` search: a record run of the candidate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordTrial {
    /// Streams, or frames per second, tried.
    pub candidate: u32,
    /// Every frame written: none dropped, none failed.
    pub passed: bool,
    /// Frames that arrived, over every stream.
    pub frames_arrived: u64,
    /// Frames written.
    pub frames_written: u64,
    /// Dropped because the source was late.
    pub dropped_input: u64,
    /// Dropped with encode the stage that held the queue.
    pub dropped_encode: u64,
    /// Dropped with storage the stage that held the queue.
    pub dropped_storage: u64,
    /// Frames whose encode or write failed.
    pub frames_failed: u64,
    /// Frames written per second, over every stream.
    pub fps: f64,
    /// Megabytes (10^6 bytes) written per second.
    pub mb_per_s: f64,
}

impl RecordTrial {
    /// The trial of `candidate` from its run's figures.
    pub fn of(candidate: u32, f: &RecordFigures) -> RecordTrial {
        RecordTrial {
            candidate,
            passed: f.frames_dropped == 0 && f.frames_failed == 0 && f.failure.is_none(),
            frames_arrived: f.frames_arrived,
            frames_written: f.frames_written,
            dropped_input: f.dropped_input,
            dropped_encode: f.dropped_encode,
            dropped_storage: f.dropped_storage,
            frames_failed: f.frames_failed,
            fps: f.fps,
            mb_per_s: f.mb_per_s,
        }
    }

    /// The stage with the most drops (failed writes count as storage's).
    pub fn limit(&self) -> RecordCause {
        let causes = [
            (RecordCause::Storage, self.dropped_storage + self.frames_failed),
            (RecordCause::Encode, self.dropped_encode),
            (RecordCause::Input, self.dropped_input),
        ];
        causes.iter().max_by_key(|(_, n)| *n).map_or(RecordCause::Storage, |(cause, _)| *cause)
    }
}

/// The result of `record --capacity`: the most streams at the rate, or the highest rate of one
/// stream, that recorded with no frame dropped or failed, and what stopped the next.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordCapacity {
    /// The run that was scaled (its destination, format, size, settings).
    pub info: RecordInfo,
    /// What was varied.
    pub by: RecordCapacityBy,
    /// The rate of each stream, when streams were varied.
    pub fps: Option<f64>,
    /// Seconds of recording in each trial.
    pub window_s: f64,
    /// Trials a candidate must pass.
    pub trials_per_candidate: u32,
    /// The largest candidate tried.
    pub max: u32,
    /// The answer: the largest candidate that passed, 0 for none.
    pub best: u32,
    /// What dropped frames in the first candidate that failed; none when `max` passed.
    pub limit: Option<RecordCause>,
    /// Every trial, in the order run.
    pub trials: Vec<RecordTrial>,
}

/// The JSON schema of [`RecordCapacity`] (`record --capacity --json`), pinned by
/// `schema/record-capacity.schema.json`.
pub fn capacity_schema() -> String {
    let schema = schemars::schema_for!(RecordCapacity);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The run's figures.
pub fn figures(result: &RecordResult) -> RecordFigures {
    let run = &result.run;
    let count = |pred: &dyn Fn(&RecordFrame) -> bool| run.records.iter().filter(|r| pred(r)).count() as u64;
    let dropped =
        |cause: RecordCause| count(&|r| r.outcome == RecordOutcome::Dropped && r.cause == Some(cause));
    let bytes: u64 =
        run.records.iter().filter(|r| r.outcome == RecordOutcome::Written).map(|r| r.bytes).sum();
    let first_due = run.records.first().map_or(0, |r| r.due_ns);
    let elapsed = Duration::from_nanos(run.end_ns.saturating_sub(first_due));
    let written = count(&|r| r.outcome == RecordOutcome::Written);
    let span = |from: fn(&RecordFrame) -> Option<u64>, to: fn(&RecordFrame) -> Option<u64>| {
        latency(run.records.iter().filter_map(|r| Some(to(r)?.saturating_sub(from(r)?))).collect())
    };
    let secs = elapsed.as_secs_f64();
    RecordFigures {
        info: result.info.clone(),
        frames_arrived: run.records.len() as u64,
        frames_written: written,
        frames_dropped: count(&|r| r.outcome == RecordOutcome::Dropped),
        dropped_input: dropped(RecordCause::Input),
        dropped_encode: dropped(RecordCause::Encode),
        dropped_storage: dropped(RecordCause::Storage),
        frames_failed: count(&|r| r.outcome == RecordOutcome::Failed),
        bytes,
        elapsed_s: secs,
        fps: if secs > 0.0 { written as f64 / secs } else { 0.0 },
        mb_per_s: if secs > 0.0 { bytes as f64 / 1e6 / secs } else { 0.0 },
        queue_wait: span(|r| Some(r.due_ns), |r| r.encode_started_ns),
        encode: span(|r| r.encode_started_ns, |r| r.encoded_ns),
        write: span(|r| r.write_started_ns, |r| r.written_ns),
        sync: span(|r| r.written_ns, |r| r.synced_ns),
        total: span(
            |r| Some(r.due_ns),
            |r| if r.outcome == RecordOutcome::Written { r.done_ns } else { None },
        ),
        end_sync_ms: run.end_sync_ns.map(|ns| ns as f64 / 1e6),
        encode_cpu_s_per_gb: per_gb(run.encode_cpu_ns, bytes),
        input_cpu_s_per_gb: per_gb(run.input_cpu_ns, bytes),
        write_cpu_s_per_gb: per_gb(run.write_cpu_ns, bytes),
        failure: run.failure.clone(),
        interrupted: run.interrupted,
        per_stream: if result.info.streams > 1 {
            (0..result.info.streams)
                .map(|stream| StreamFigures {
                    stream,
                    frames_written: count(&|r| r.stream == stream && r.outcome == RecordOutcome::Written),
                    frames_dropped: count(&|r| r.stream == stream && r.outcome == RecordOutcome::Dropped),
                    frames_failed: count(&|r| r.stream == stream && r.outcome == RecordOutcome::Failed),
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}

impl RecordRun {
    /// The runs of streams recorded at once, as one: every frame's record, marked with its
    /// stream; the last end; the first failure. The CPU figures are the largest, since the
    /// streams share one encode pool and one storage, which count for all of them.
    pub fn merge(runs: Vec<RecordRun>) -> RecordRun {
        let mut merged = RecordRun::default();
        for (stream, run) in runs.into_iter().enumerate() {
            let stream = u32::try_from(stream).unwrap_or(u32::MAX);
            merged.records.extend(run.records.into_iter().map(|r| RecordFrame { stream, ..r }));
            merged.end_ns = merged.end_ns.max(run.end_ns);
            merged.end_sync_ns = merged.end_sync_ns.max(run.end_sync_ns);
            merged.interrupted |= run.interrupted;
            merged.failure = merged.failure.or(run.failure);
            merged.encode_cpu_ns = merged.encode_cpu_ns.max(run.encode_cpu_ns);
            merged.input_cpu_ns = merged.input_cpu_ns.max(run.input_cpu_ns);
            merged.write_cpu_ns = merged.write_cpu_ns.max(run.write_cpu_ns);
        }
        merged
    }
}

/// CPU seconds per GB (10^9 bytes) written.
fn per_gb(cpu_ns: u64, bytes: u64) -> f64 {
    if bytes == 0 {
        return 0.0;
    }
    cpu_ns as f64 / bytes as f64
}

fn latency(mut ns: Vec<u64>) -> StageLatency {
    if ns.is_empty() {
        return StageLatency::default();
    }
    ns.sort_unstable();
    let at = |q: f64| {
        let i = ((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len()) - 1;
        ns[i] as f64 / 1e6
    };
    StageLatency { n: ns.len() as u64, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) }
}

/// The JSON schema of [`RecordFigures`] (`record --json`), pinned by
/// `schema/record.schema.json`.
pub fn figures_schema() -> String {
    let schema = schemars::schema_for!(RecordFigures);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
