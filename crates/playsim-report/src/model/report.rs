//! The report's data model. Its JSON shape is pinned by `schema/report.schema.json`.
//!
//! Later versions add fields; they never rename or remove one. Every time is
//! in nanoseconds from the start of the run unless its name says otherwise.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The version of the JSON shape. Bumped only for a change that is not an addition.
pub const SCHEMA_VERSION: u32 = 1;

/// One run of playsim: settings, environment, per-stream results and totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Always [`SCHEMA_VERSION`] for reports written by this version.
    pub schema_version: u32,
    /// Whether the run completed.
    pub status: RunStatus,
    /// Why the run failed or stopped early, when it did.
    pub error: Option<String>,
    /// The playsim version that wrote the report.
    pub playsim_version: String,
    /// Wall-clock start of the run, seconds since the Unix epoch.
    pub started_at_unix_s: u64,
    /// Wall time from the start of the run to its end, in seconds.
    pub duration_s: f64,
    /// The machine and the libraries in use.
    pub environment: Environment,
    /// The settings the run used.
    pub settings: Settings,
    /// Sums over all streams.
    pub totals: Totals,
    /// CPU use of the process, its stages and the whole system.
    pub cpu: CpuReport,
    /// The process's resident memory and the part the frame buffers account for.
    #[serde(default)]
    pub memory: MemoryReport,
    /// One entry per stream.
    pub streams: Vec<StreamReport>,
    /// The wall-clock time of the run's origin, the instant every `*_ns` time of the report
    /// counts from, in nanoseconds since the Unix epoch (0 in reports of earlier versions). In a
    /// merged report: the earliest client's origin, in rank 0's wall time.
    #[serde(default)]
    pub origin_unix_ns: u64,
    /// The run-wide latency percentiles over every stream, from the streams' histograms merged
    /// (not averaged from their percentiles). In a merged report, over every client's streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<StageLatency>,
    /// The histograms `latency` was summarised from, in a lossless compact form, so that
    /// another process (a merge of several clients) can merge them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histograms: Option<LatencyHistograms>,
    /// In a merged report of several clients (`mpirun -np N playsim ...`), one row per
    /// client, in rank order; empty for a run of one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientReport>,
    /// In a merged report, the figures of the cluster as a whole: clients, lost clients,
    /// start skew, clock offsets and the window the totals are taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
}

/// The non-empty buckets of a histogram of non-negative nanoseconds, as `[value, count]`
/// pairs in ascending order of value; the value is the bucket's highest equivalent value (as
/// hdrhistogram's `iter_recorded` gives it). Recording `count` of each `value` into an empty
/// histogram of [`crate::HISTOGRAM_SIGFIG`] digits gives back the same histogram.
pub type Buckets = Vec<[u64; 2]>;

/// The buckets of a histogram of signed nanoseconds: the magnitudes of the values below zero,
/// and the values at or above zero.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignedBuckets {
    /// Magnitudes of the negative values.
    #[serde(default)]
    pub below_zero: Buckets,
    /// Values of zero and above.
    #[serde(default)]
    pub at_or_above_zero: Buckets,
}

/// Per-stage latency histograms in nanoseconds, in a lossless compact form: what a run's
/// [`StageLatency`] was summarised from, kept so that reports can be merged exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyHistograms {
    /// Opening a frame's file.
    #[serde(default)]
    pub open: Buckets,
    /// Reading a frame's bytes.
    #[serde(default)]
    pub read: Buckets,
    /// Closing a frame's file.
    #[serde(default)]
    pub close: Buckets,
    /// Decoding a frame.
    #[serde(default)]
    pub decode: Buckets,
    /// The output stage's work on a frame.
    #[serde(default)]
    pub output: Buckets,
    /// Deadline minus output done, for frames presented.
    #[serde(default)]
    pub slack: SignedBuckets,
    /// Actual minus due presentation time, for frames presented.
    #[serde(default)]
    pub pacing_error: SignedBuckets,
}

/// Whether a client of a merged run reported to its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientState {
    /// Its final report (or final snapshot) arrived.
    #[default]
    Reported,
    /// It stopped reporting (died, or was killed); its row holds its last snapshot's counts.
    Lost,
    /// It had nothing to play in this run (a rank beyond `capacity --by clients`' candidate,
    /// a scenario's client with no run in this pass), and took part only in the start.
    Idle,
}

/// One client (one MPI rank) of a merged run: what it played and how it went.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientReport {
    /// Its MPI rank.
    pub rank: u32,
    /// The host it ran on.
    pub host: String,
    /// Whether it reported to its end.
    pub state: ClientState,
    /// When it was last heard from, in seconds from the merged report's origin: always for a
    /// lost client, and may be for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heard_s: Option<f64>,
    /// Whether its run completed.
    pub status: RunStatus,
    /// Why its run failed or stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its streams' transports, distinct, joined with ", " ("nfs", "sim", "local").
    pub transport: String,
    /// Its first stream's kernel mount, `<mount transport> at <mount point>`, when it read
    /// through one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    /// Streams it played.
    pub streams: u32,
    /// Frames that fell due, over its streams.
    pub frames_due: u64,
    /// Frames presented, over its streams.
    pub presented: u64,
    /// Frames dropped, by cause, over its streams.
    pub dropped: Drops,
    /// Bytes read, over its streams.
    pub bytes_read: u64,
    /// Frames presented per second of its own playback.
    pub fps: f64,
    /// Megabytes (10^6 bytes) read per second of its own playback.
    pub mb_per_s: f64,
    /// Its CPU seconds per gigabyte read (its `cpu.total_s_per_gb`).
    pub cpu_s_per_gb: f64,
    /// Its process's peak resident memory, in bytes.
    pub peak_rss_bytes: u64,
    /// How its first stream's presentation thread was scheduled, when it was paced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presenter_priority: Option<String>,
    /// Its wall clock minus rank 0's, in milliseconds (0 for rank 0).
    pub clock_offset_ms: f64,
    /// The round trip the offset was measured with, in milliseconds.
    pub clock_rtt_ms: f64,
    /// When its first frame fell due, in ns from the merged report's origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<u64>,
    /// The end of its last stream's span, in ns from the merged report's origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_ns: Option<u64>,
    /// Its own report (`R.client-K.json`), when it wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_path: Option<String>,
}

/// The figures of a merged run of several clients as a whole.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterReport {
    /// The MPI launcher, e.g. "openmpi 4.1.4".
    pub launcher: String,
    /// Clients in the run.
    pub n_clients: u32,
    /// Clients that stopped reporting.
    pub n_lost: u32,
    /// The spread (max - min) of the clients' first-frame presentation instants, in rank 0's
    /// time (frame 0's presented time when it was presented, else its due time), in
    /// milliseconds.
    pub start_skew_ms: f64,
    /// The largest |clock offset| of a client against rank 0, in milliseconds.
    pub max_clock_offset_ms: f64,
    /// The earliest client start (its first stream's first frame due), in ns from the merged
    /// report's origin: the start of the window the totals' rates are taken over.
    pub first_start_ns: u64,
    /// The latest client end (the end of its last stream's span), in ns from the merged
    /// report's origin: the end of that window.
    pub last_end_ns: u64,
}

/// Whether a run finished.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every frame fell due and was presented or dropped.
    #[default]
    Complete,
    /// Stopped early (Ctrl-C); the figures cover what ran.
    Partial,
    /// An error ended the run; the figures cover what ran before it.
    Failed,
}

/// The machine the run was made on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// Host name.
    pub hostname: String,
    /// Kernel name and release, e.g. "Linux 6.1.0-18-amd64".
    pub kernel: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Versions of the libraries linked in, by name (e.g. "ffmpeg", "openexr").
    pub libraries: BTreeMap<String, String>,
}

/// The settings of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Settings {
    /// The frame rate as given ("24", "24000/1001") or "max".
    pub fps: String,
    /// Frames that must be ready before playback starts.
    pub preroll: u32,
    /// Frames the pipeline may hold ahead of presentation.
    pub prefetch: u32,
    /// Frame reads in flight at once.
    pub io_depth: u32,
    /// Threads in the decode pool.
    pub decode_threads: u32,
    /// The output stage: "v210" or "none".
    pub output_stage: String,
    /// Output threads a stream (frames in its output stage at once).
    #[serde(default = "one")]
    pub output_threads: u32,
    /// Bytes per read request.
    pub block_size: u64,
    /// O_DIRECT reads.
    pub direct: bool,
    /// Page cache dropped before the run.
    pub cold: bool,
    /// Wait for late frames instead of dropping them.
    pub no_drop: bool,
    /// Loop the source until `frames` or `duration_s`.
    #[serde(rename = "loop")]
    pub loop_playback: bool,
    /// Frames to play per stream, when limited.
    pub frames: Option<u64>,
    /// Seconds to play, when limited.
    pub duration_s: Option<f64>,
    /// Drops above which the run exits with status 3.
    pub max_drops: Option<u64>,
    /// Decoded frames checked against the frame index in their pixels.
    pub verify: bool,
    /// Threads used inside one frame's decode (`--codec-threads`).
    pub codec_threads: u32,
    /// Play order: "forward", "reverse" or "random".
    #[serde(default)]
    pub order: String,
    /// The random order's seed, when the order is random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The frame numbers played, "A-B", when a range was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// Bytes the frames in the prefetch windows of all streams (read, not yet presented) may
    /// hold at once (`--max-buffer`); 0 in reports of versions without the knob.
    #[serde(default)]
    pub max_buffer_bytes: u64,
}

/// Dropped frames by cause: the report's name for playsim-core's one drop-counts type, which
/// its schema calls `Drops`.
pub use playsim_core::DropCounters as Drops;

/// How busy each stage was over a stream's run: the time its frames spent in the stage's
/// work over the time the stage's capacity (reads in flight, decode threads, output threads)
/// was there, from 0 to 1. The decode figure is the whole pool's, shared with the other
/// streams on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageUtilisation {
    /// Reads in flight over `--io-depth`.
    pub storage: f64,
    /// Decode threads at work over the pool's threads.
    pub decode: f64,
    /// Output threads at work over the stream's `--output-threads`.
    pub output: f64,
}

impl StageUtilisation {
    /// The busiest stage, named as a drop cause ("storage", "decode", "output"): what would
    /// break first if the rate went up, or what did. Empty when no stage did any work.
    pub fn busiest(&self) -> &'static str {
        let stages = [("storage", self.storage), ("decode", self.decode), ("output", self.output)];
        stages
            .into_iter()
            .filter(|(_, u)| *u > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("", |(name, _)| name)
    }
}

/// Sums over all streams.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Totals {
    /// Frames that fell due (presented + dropped).
    pub frames_due: u64,
    /// Frames presented on time (or, with no-drop, at all).
    pub presented: u64,
    /// Frames dropped, by cause.
    pub dropped: Drops,
    /// Bytes read from storage.
    pub bytes_read: u64,
    /// Frames presented per second of playback, over all streams.
    pub fps: f64,
    /// Megabytes (10^6 bytes) read per second of playback.
    pub mb_per_s: f64,
    /// Time spent waiting for late frames with no-drop, in milliseconds.
    pub stall_ms: f64,
    /// Of the drops, those decided before the frame's work was done, by cause (see
    /// `StreamReport::early_drops`).
    #[serde(default)]
    pub early_drops: Drops,
    /// The stage that limits the run: the cause of most drops, or with none, the busiest
    /// stage of any stream ("storage", "decode", "output"; empty when nothing ran).
    #[serde(default)]
    pub bottleneck: String,
}

impl Totals {
    /// The stage that limits a run of `streams` that dropped `dropped`: the cause of most
    /// drops (unreadable frames aside), or with none, the busiest stage of any stream
    /// ("storage", "decode", "output"; empty when nothing ran). A tie goes to the later
    /// stage.
    pub fn limiting_stage(dropped: &Drops, streams: &[StreamReport]) -> &'static str {
        let causes = dropped.iter().filter(|&(cause, n)| cause != DropCauseName::Unreadable && n > 0);
        if let Some((cause, _)) = causes.max_by_key(|&(_, n)| n) {
            return cause.word();
        }
        let busiest = streams.iter().map(|s| s.utilisation).reduce(|a, b| StageUtilisation {
            storage: a.storage.max(b.storage),
            decode: a.decode.max(b.decode),
            output: a.output.max(b.output),
        });
        busiest.map_or("", |u| u.busiest())
    }
}

/// CPU use during the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuReport {
    /// User CPU seconds of the process.
    pub process_user_s: f64,
    /// System CPU seconds of the process.
    pub process_sys_s: f64,
    /// User CPU seconds per gigabyte (10^9 bytes) read.
    pub user_s_per_gb: f64,
    /// System CPU seconds per gigabyte read.
    pub sys_s_per_gb: f64,
    /// System-wide softirq seconds per gigabyte read: mostly the network receive work the
    /// kernel does for this client (NFS over TCP), which is not charged to the process.
    /// It includes whatever else the machine was doing, so read it on a quiet machine.
    #[serde(default)]
    pub softirq_s_per_gb: f64,
    /// The client's CPU seconds per gigabyte read: process user + process system +
    /// system-wide softirq.
    #[serde(default)]
    pub total_s_per_gb: f64,
    /// CPU seconds (user + system) of each stage's threads.
    pub stages: StageCpu,
    /// System-wide CPU seconds from /proc/stat over the run; softirq holds the
    /// network receive work that is not charged to the process.
    pub system: SystemCpu,
}

/// The process's resident memory (RSS), and the bytes of the streams' frame buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryReport {
    /// The most physical memory the process held at any moment, in bytes: `VmHWM` of
    /// /proc/self/status, read at the end of the run. It counts from the start of the
    /// process, so where one process plays several runs (`playsim run`, `capacity`) it
    /// covers the earlier ones too. 0 when it could not be read.
    pub peak_rss_bytes: u64,
    /// The physical memory the process held at the end of the run (`VmRSS`), in bytes.
    pub rss_bytes: u64,
    /// Bytes of every stream's frame buffer pools, the sum of their `pool_buffers`
    /// bytes: the part of the peak that playsim's own frame buffers account for (the
    /// pools keep what they create, so this is their peak too).
    pub pool_bytes: u64,
}

/// CPU seconds spent by each stage's threads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageCpu {
    /// Threads doing storage reads.
    pub read_s: f64,
    /// Decode pool threads.
    pub decode_s: f64,
    /// Output stage threads.
    pub output_s: f64,
}

/// System-wide CPU seconds by kind, summed over all CPUs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemCpu {
    /// User mode.
    pub user_s: f64,
    /// User mode at low priority.
    pub nice_s: f64,
    /// Kernel mode.
    pub system_s: f64,
    /// Idle.
    pub idle_s: f64,
    /// Idle while I/O was outstanding.
    pub iowait_s: f64,
    /// Hard interrupts.
    pub irq_s: f64,
    /// Soft interrupts (network receive, block completion).
    pub softirq_s: f64,
    /// Stolen by the hypervisor.
    pub steal_s: f64,
}

/// One stream's results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamReport {
    /// Stream name ("stream 0", or as given; "client K/stream 0" in a merged report).
    pub name: String,
    /// The rank of the client that played the stream, in a merged report of several clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u32>,
    /// What was played.
    pub source: SourceReport,
    /// Where it was read from.
    pub storage: StorageReport,
    /// The pacing: a rate such as "24000/1001", or "max".
    pub fps: String,
    /// How long after the common start the stream started reading, in seconds (scenario
    /// files stagger streams); it played once its own preroll was ready.
    #[serde(default)]
    pub start_offset_s: f64,
    /// The size of the decode pool the stream had to itself (shared by the streams of its
    /// source), or none when it used the run's shared pool.
    #[serde(default)]
    pub decode_pool_threads: Option<u32>,
    /// How the stream's presentation thread was scheduled, when it was paced on the wall
    /// clock: "real-time" (SCHED_FIFO), "nice -10", or "normal" when the system allowed
    /// neither (no root, CAP_SYS_NICE or RLIMIT_RTPRIO); then the pacing error can include a
    /// busy machine's scheduling delays. None at `--fps max` and on a test clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presenter_priority: Option<String>,
    /// When playback started (frame 0 due), in ns from the start of the run.
    pub t0_ns: u64,
    /// The playback span in ns: from t0 to the end of the last due frame's
    /// display interval when paced (stalls included), to the last presentation with `--fps max`.
    pub span_ns: u64,
    /// Frames that fell due.
    pub frames_due: u64,
    /// Frames presented.
    pub presented: u64,
    /// Frames dropped, by cause.
    pub dropped: Drops,
    /// Frames that completed after their deadline (dropped or, with no-drop, waited for).
    pub late_frames: u64,
    /// Decode drops that were never decoded: when a decode thread was free for them, the
    /// stream's recent decode and output times said they could not be ready in time.
    #[serde(default)]
    pub decode_skipped: u64,
    /// Drops whose read was never started: when an I/O slot was free for them, the queues
    /// ahead and the stages' recent times said they could not be ready in time. Each is
    /// charged to the stage it would have spent the most time in (`early_drops`).
    #[serde(default)]
    pub read_skipped: u64,
    /// Output drops that were never output: when the output stage was free for them, the
    /// stream's recent output times said they could not be ready in time.
    #[serde(default)]
    pub output_skipped: u64,
    /// Of the drops, those decided before the frame's work was done, by the cause charged:
    /// rejected before the read (`read_skipped`), or skipped when a decode or output thread
    /// was free for it (`decode_skipped`, `output_skipped`). Always within `dropped`, cause
    /// by cause; the rest of the drops were frames still in a stage at their deadline.
    #[serde(default)]
    pub early_drops: Drops,
    /// Long-GOP streams: GOPs whose rest the decoder skipped when it was too late for their
    /// next frame, restarting at a later keyframe (their frames are `decode_skipped`).
    #[serde(default)]
    pub gops_skipped: u64,
    /// How busy each stage was.
    #[serde(default)]
    pub utilisation: StageUtilisation,
    /// The stage that limits this stream: its busiest ("storage", "decode", "output"), named
    /// even when nothing dropped, as what would break first.
    #[serde(default)]
    pub bottleneck: String,
    /// Bytes read.
    pub bytes_read: u64,
    /// Frames presented per second of playback.
    pub fps_achieved: f64,
    /// Megabytes (10^6 bytes) read per second of playback.
    pub mb_per_s: f64,
    /// Time waited for late frames with no-drop, in milliseconds.
    pub stall_ms: f64,
    /// Latency percentiles per stage, in milliseconds.
    pub latency: StageLatency,
    /// Buffers each of the stream's pools created over the whole run. They are
    /// recycled, so these stay within the prefetch window however long the run.
    pub pool_buffers: PoolBuffers,
    /// Frames that could not be read or decoded, with the reason.
    pub unreadable: Vec<UnreadableFrame>,
    /// One record per frame that fell due, in order.
    pub timeline: Vec<FrameRecord>,
}

/// How many buffers a stream's pools created, and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PoolBuffers {
    /// Encoded-frame (read) buffers the output side did not hold at its peak: the pool's
    /// buffers less `output`.
    pub encoded: u64,
    /// Decoded-frame buffers.
    pub decoded: u64,
    /// Buffers the output side held at once at its peak: frames packed (or being packed) to
    /// v210 and not yet presented or dropped. They are buffers of the encoded pool (the
    /// output is packed into a read buffer), counted here and not in `encoded`; 0 without
    /// an output stage.
    pub output: u64,
    /// Bytes of the encoded-frame buffers: `encoded` × the larger of the largest frame read
    /// and a v210 frame, rounded up to whole 4096-byte pages plus one (the alignment O_DIRECT
    /// needs).
    #[serde(default)]
    pub encoded_bytes: u64,
    /// Bytes of the decoded-frame buffers: `decoded` × one frame in the canonical pixel
    /// format (for video decoded by FFmpeg the pictures are FFmpeg's own buffers, of
    /// about that size each).
    #[serde(default)]
    pub decoded_bytes: u64,
    /// Bytes of the output buffers: `output` × the encoded pool's buffer size (see
    /// `encoded_bytes`), so that the three add up to the pools' bytes.
    #[serde(default)]
    pub output_bytes: u64,
}

impl PoolBuffers {
    /// Bytes of all three pools.
    pub fn bytes(&self) -> u64 {
        self.encoded_bytes + self.decoded_bytes + self.output_bytes
    }
}

/// The source of a stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceReport {
    /// What the user named.
    pub location: String,
    /// The frame file pattern, e.g. `shot.%07d.dpx`.
    pub pattern: String,
    /// The format, e.g. "dpx".
    pub format: String,
    /// The decoder and its settings, e.g. "exr: openexr 3.1.5, 1 codec thread".
    pub decoder: String,
    /// How frames were decoded: "independent" (each frame on its own, across the decode
    /// pool: image sequences, intra-only video) or "in_order" (long-GOP video: every
    /// packet in decode order through the stream's one decoder) or "none" (bytes read and
    /// not decoded: `--no-decode`, frametest's semantics).
    pub decode_mode: String,
    /// The source's own frame rate (video containers), e.g. "24000/1001".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_rate: Option<String>,
    /// How a video file's packet index was built, and what it cost in reads at open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// What the output stage did with the decoded pixels, e.g. "v210 from yuv422p10le
    /// planes: repacked as is, no RGB detour" (empty with no output stage or no frame decoded).
    pub output_path: String,
    /// The canonical pixel format of the decoded frames, e.g. "rgbaf32le" (empty if none decoded).
    pub pixel_format: String,
    /// Frame size, when known.
    pub width: u32,
    /// Frame size, when known.
    pub height: u32,
    /// First frame number.
    pub first_frame: u64,
    /// Last frame number.
    pub last_frame: u64,
    /// Frames in first..=last, gaps included.
    pub n_frames: u64,
    /// Frame numbers with no file.
    pub gaps: Vec<u64>,
}

/// The storage of a stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StorageReport {
    /// "local", "nfs", ...
    pub transport: String,
    /// Bytes per read request.
    pub block_size: u64,
    /// O_DIRECT.
    pub direct: bool,
    /// Transport settings (mount options, server, ...).
    pub options: BTreeMap<String, String>,
    /// Whether a cold cache was asked for, and whether it was had.
    pub cold: ColdCache,
    /// Read requests issued.
    pub n_reads: u64,
    /// The kernel mount a local path is on (NFS over TCP or RDMA, SMB, a local disk),
    /// when it was looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<MountReport>,
    /// What a user should know about how the reads went: io_uring not available, buffers
    /// not registered. Each says what happened, why, and what to change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<WarningReport>,
}

/// Something a user should know about a stage of the run, in one line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WarningReport {
    /// A stable name of its kind, e.g. `io_uring_unavailable`.
    pub kind: String,
    /// What happened, why, and what to change.
    pub message: String,
}

/// The kernel mount under a local path, from /proc/self/mountinfo.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MountReport {
    /// Where the filesystem is mounted, e.g. "/mnt/isilon".
    pub mount_point: String,
    /// The filesystem type, e.g. "nfs4", "cifs", "ext4".
    pub fstype: String,
    /// What is mounted, e.g. "10.0.0.5:/ifs/media".
    pub source: String,
    /// How the bytes travel: "nfs over rdma", "nfs over tcp", "smb direct (rdma)", "smb",
    /// "local (ext4)", ...
    pub transport: String,
    /// The mount options that matter for reading (vers, proto, rsize, wsize, nconnect,
    /// hard or soft, timeo, sec, ...); a flag such as `hard` has an empty value.
    pub options: BTreeMap<String, String>,
}

impl From<playsim_core::MountLabel> for MountReport {
    fn from(m: playsim_core::MountLabel) -> MountReport {
        MountReport {
            mount_point: m.mount_point,
            fstype: m.fstype,
            source: m.source,
            transport: m.transport,
            options: m.options.into_iter().collect(),
        }
    }
}

/// The outcome of `--cold`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ColdCache {
    /// `--cold` was given.
    pub requested: bool,
    /// Files whose cached pages were dropped.
    pub files_dropped: u64,
    /// Why it could not be done fully, when it could not.
    pub message: Option<String>,
}

/// Latency percentiles for each stage, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageLatency {
    /// Opening a frame's file.
    pub open: Percentiles,
    /// Reading a frame's bytes, from the first request to the last byte.
    pub read: Percentiles,
    /// Closing a frame's file.
    pub close: Percentiles,
    /// Decoding a frame, on a decode thread.
    pub decode: Percentiles,
    /// The output stage's work on a frame.
    pub output: Percentiles,
    /// Deadline minus output done, for frames presented (negative is late).
    pub slack: Percentiles,
    /// Actual minus due presentation time, for frames presented.
    pub pacing_error: Percentiles,
}

/// A latency distribution summary, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// A frame that could not be read or decoded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnreadableFrame {
    /// Position in the stream (0-based, in play order).
    pub frame_idx: u64,
    /// Frame number on disk.
    pub frame_number: u64,
    /// The file.
    pub path: String,
    /// What went wrong; names the file and the frame.
    pub message: String,
}

/// One frame's path through the pipeline. Times are ns from the start of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameRecord {
    /// Position in the stream (0-based, in play order).
    pub frame_idx: u64,
    /// Frame number on disk.
    pub frame_number: u64,
    /// When the frame fell due.
    pub due_ns: u64,
    /// Read issued.
    pub read_start_ns: Option<u64>,
    /// Last byte read.
    pub read_done_ns: Option<u64>,
    /// Decode finished.
    pub decode_done_ns: Option<u64>,
    /// Output stage finished.
    pub output_done_ns: Option<u64>,
    /// Presented (absent when dropped).
    pub presented_ns: Option<u64>,
    /// Why it was dropped, when it was.
    pub cause: Option<DropCauseName>,
    /// Bytes read for it.
    pub bytes: u64,
}

/// The drop cause, as written in reports: the report's name for playsim-core's drop cause, which
/// its schema calls `DropCauseName`.
pub use playsim_core::DropCause as DropCauseName;

/// serde's default for counts that were 1 before the report had them.
fn one() -> u32 {
    1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::testutil::sample_report;

    #[test]
    fn a_cause_is_written_as_its_word() {
        for cause in super::DropCauseName::ALL {
            assert_eq!(serde_json::to_value(cause).unwrap(), cause.word());
        }
    }

    #[test]
    fn memory_figures_are_written_and_older_reports_still_read() {
        let report = sample_report();
        let text = crate::format::json::to_string_pretty(&report);
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["memory"]["peak_rss_bytes"], 784_793 * 1024);
        assert_eq!(value["streams"][0]["pool_buffers"]["output_bytes"], 3 * 11_008 * 2160);
        assert_eq!(
            value["memory"]["pool_bytes"].as_u64(),
            Some(report.streams[0].pool_buffers.bytes()),
            "the process's pool bytes are the streams' sum"
        );

        // A report written before these figures: no `memory`, pools counted but not sized,
        // and one output thread a stream.
        value.as_object_mut().unwrap().remove("memory");
        value["settings"].as_object_mut().unwrap().remove("output_threads");
        let pools = value["streams"][0]["pool_buffers"].as_object_mut().unwrap();
        for key in ["encoded_bytes", "decoded_bytes", "output_bytes"] {
            pools.remove(key);
        }
        let back = crate::format::json::from_str(&value.to_string()).unwrap();
        assert_eq!(back.memory, super::MemoryReport::default());
        assert_eq!(back.settings.output_threads, 1);
        let p = back.streams[0].pool_buffers;
        assert_eq!((p.encoded, p.decoded, p.output, p.bytes()), (8, 2, 3, 0));
    }
}
