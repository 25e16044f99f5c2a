//! Engine tests under tokio's paused clock: a scripted storage, a synthetic
//! decoder and output stage whose costs are tokio sleeps, so counts are exact.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use std::collections::VecDeque;
use std::sync::Mutex;

use playsim_core::{
    Clock, DecodeError, DecodedFrame, Decoder, FrameExtent, FrameRate, InOrderDecoder, Pacing, PixelFormat,
    Source, SourceInfo, Storage,
};
use playsim_report::{DropCauseName, Report};
use playsim_storage::scripted::{ScriptedObject, ScriptedStorage};

use crate::{
    DecodeExecutor, DecodeJob, EngineConfig, InOrderJob, JobFuture, OutputExecutor, OutputJob, OutputStage,
    OwnDecodePool, PreciseClock, Simulation, StreamSpec, TokioClock,
};

mod overload;
mod sim_cpu;

const MS: Duration = Duration::from_millis(1);

/// A sequence of `n` frames at `/scripted/frame.%07d.raw`, with optional gaps.
struct ScriptedSource {
    n: u64,
    gaps: HashSet<u64>,
    /// Long-GOP: the decoder is fed in order and gives pictures this many packets late.
    long_gop: Option<Arc<GopScript>>,
}

/// What the scripted long-GOP decoder does, and what it saw.
#[derive(Default)]
struct GopScript {
    delay: usize,
    /// Packets (counted from 0 since the last reset) the decoder rejects.
    corrupt: HashSet<u64>,
    /// Every packet it was sent, counted across resets.
    packets_sent: Mutex<u64>,
    /// A keyframe every this many frames (0: only the first).
    keyframe_every: u64,
}

fn frame_path(idx: u64) -> PathBuf {
    PathBuf::from(format!("/scripted/frame.{idx:07}.raw"))
}

struct NullDecoder;

impl Decoder for NullDecoder {
    fn name(&self) -> &'static str {
        "null"
    }
    fn decode(&self, _encoded: &[u8], _out: &mut DecodedFrame) -> Result<(), DecodeError> {
        Ok(())
    }
}

/// Pictures come out `delay` packets after their packet, numbered in order; a corrupt
/// packet gives an error and no picture. A real FFmpeg decoder does the same.
struct GopDecoder {
    script: Arc<GopScript>,
    sent: u64,
    queue: VecDeque<u64>,
    ended: bool,
}

impl InOrderDecoder for GopDecoder {
    fn max_delay(&self) -> u32 {
        self.script.delay as u32
    }
    fn send(&mut self, packet: Option<&[u8]>) -> Result<(), DecodeError> {
        let Some(_) = packet else {
            self.ended = true;
            return Ok(());
        };
        *self.script.packets_sent.lock().unwrap() += 1;
        let n = self.sent;
        self.sent += 1;
        if self.script.corrupt.contains(&n) {
            return Err(DecodeError::malformed(format!("scripted corrupt packet {n}")));
        }
        self.queue.push_back(n);
        Ok(())
    }
    fn receive(&mut self, out: &mut DecodedFrame) -> Result<bool, DecodeError> {
        if self.queue.len() > self.script.delay || (self.ended && !self.queue.is_empty()) {
            let n = self.queue.pop_front().unwrap();
            out.reset(2, 2, PixelFormat::Rgb48Le);
            out.data[0] = n as u8;
            return Ok(true);
        }
        Ok(false)
    }
    fn reset(&mut self) {
        (self.sent, self.ended) = (0, false);
        self.queue.clear();
    }
}

struct GopCodec(Arc<GopScript>);

impl Decoder for GopCodec {
    fn name(&self) -> &'static str {
        "gop"
    }
    fn decode(&self, _encoded: &[u8], _out: &mut DecodedFrame) -> Result<(), DecodeError> {
        Err(DecodeError::unsupported("long-GOP frames decode in order"))
    }
    fn in_order(&self) -> Option<Box<dyn InOrderDecoder>> {
        let script = Arc::clone(&self.0);
        Some(Box::new(GopDecoder { script, sent: 0, queue: VecDeque::new(), ended: false }))
    }
}

impl Source for ScriptedSource {
    fn info(&self) -> SourceInfo {
        SourceInfo {
            location: "/scripted".into(),
            pattern: "frame.%07d.raw".into(),
            format: "raw".into(),
            first_frame: 0,
            last_frame: self.n.saturating_sub(1),
            n_frames: self.n,
            gaps: self.gaps.iter().copied().collect(),
            frame_rate: None,
            index: None,
        }
    }
    fn n_frames(&self) -> u64 {
        self.n
    }
    fn frame_number(&self, idx: u64) -> u64 {
        idx
    }
    fn extent(&self, idx: u64) -> FrameExtent {
        if self.gaps.contains(&idx) {
            FrameExtent::Missing { expected: frame_path(idx) }
        } else {
            FrameExtent::File { path: frame_path(idx) }
        }
    }
    fn is_keyframe(&self, idx: u64) -> bool {
        match &self.long_gop {
            Some(script) if script.keyframe_every > 0 => idx.is_multiple_of(script.keyframe_every),
            Some(_) => idx == 0,
            None => true,
        }
    }
    fn decoder(&self) -> Arc<dyn Decoder> {
        match &self.long_gop {
            Some(script) => Arc::new(GopCodec(Arc::clone(script))),
            None => Arc::new(NullDecoder),
        }
    }
}

/// Decode or output work whose cost is a tokio sleep per frame, or CPU time on simulated
/// cores shared with other work.
#[derive(Default, Clone)]
struct ScriptedWork {
    normal: Duration,
    slow: HashMap<u64, Duration>,
    corrupt: HashSet<u64>,
    cpu: Option<Arc<sim_cpu::SimCpu>>,
    /// CPU the work took on `cpu`, in nanoseconds.
    spent_ns: Arc<std::sync::atomic::AtomicU64>,
}

impl ScriptedWork {
    fn new(normal: Duration) -> ScriptedWork {
        ScriptedWork { normal, ..Default::default() }
    }
    fn slow(mut self, frames: impl IntoIterator<Item = u64>, cost: Duration) -> Self {
        self.slow.extend(frames.into_iter().map(|f| (f, cost)));
        self
    }
    fn corrupt(mut self, frames: impl IntoIterator<Item = u64>) -> Self {
        self.corrupt.extend(frames);
        self
    }
    /// The work runs as CPU time on `cpu`'s cores, shared with whatever else runs there.
    fn on(mut self, cpu: &Arc<sim_cpu::SimCpu>) -> Self {
        self.cpu = Some(Arc::clone(cpu));
        self
    }
    fn cost(&self, idx: u64) -> Duration {
        self.slow.get(&idx).copied().unwrap_or(self.normal)
    }
    /// Does `idx`'s work: a sleep, or its CPU time on the simulated cores.
    fn work(&self, idx: u64) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (cost, cpu, spent) = (self.cost(idx), self.cpu.clone(), Arc::clone(&self.spent_ns));
        async move {
            match cpu {
                Some(cpu) => {
                    cpu.run(cost).await;
                    spent.fetch_add(cost.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                }
                None => tokio::time::sleep(cost).await,
            }
        }
    }
}

impl DecodeExecutor for ScriptedWork {
    fn decode(&self, mut job: DecodeJob) -> JobFuture<Option<DecodeJob>> {
        let work = self.work(job.frame_idx);
        let corrupt = self.corrupt.contains(&job.frame_idx);
        Box::pin(async move {
            work.await;
            if corrupt {
                job.result = Err(DecodeError::malformed("scripted corruption"));
            }
            Some(job)
        })
    }
    fn decode_in_order(&self, mut job: InOrderJob) -> JobFuture<Option<InOrderJob>> {
        let work = self.work(job.frame_idx);
        Box::pin(async move {
            work.await;
            job.run();
            Some(job)
        })
    }
    fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.spent_ns.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl OutputExecutor for ScriptedWork {
    fn output(&self, job: OutputJob) -> JobFuture<Option<OutputJob>> {
        let work = self.work(job.frame_idx);
        Box::pin(async move {
            work.await;
            Some(job)
        })
    }
    fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.spent_ns.load(std::sync::atomic::Ordering::Relaxed))
    }
}

struct Scenario {
    config: EngineConfig,
    n_frames: u64,
    gaps: HashSet<u64>,
    long_gop: Option<Arc<GopScript>>,
    storage: ScriptedStorage,
    decode: ScriptedWork,
    output: Option<ScriptedWork>,
    /// The run's clock; tokio's (paused in most tests) when `None`.
    clock: Option<Arc<dyn Clock>>,
}

impl Scenario {
    /// 10 fps, a window of 4, 2 reads in flight, 2 decode threads; frames read
    /// in 2 ms, decode in 5 ms and output in 1 ms unless scripted otherwise.
    fn new(n_frames: u64) -> Scenario {
        Scenario {
            config: EngineConfig {
                pacing: Pacing::Rate(FrameRate::new(10, 1).unwrap()),
                preroll: 4,
                prefetch: 4,
                io_depth: 2,
                decode_threads: 2,
                output: OutputStage::V210,
                ..EngineConfig::default()
            },
            n_frames,
            gaps: HashSet::new(),
            long_gop: None,
            storage: ScriptedStorage::new(ScriptedObject::new(1000, 2 * MS)),
            decode: ScriptedWork::new(5 * MS),
            output: Some(ScriptedWork::new(MS)),
            clock: None,
        }
    }

    fn slow_reads(mut self, frames: impl IntoIterator<Item = u64>, latency: Duration) -> Self {
        for f in frames {
            self.storage = self.storage.with_object(frame_path(f), ScriptedObject::new(1000, latency));
        }
        self
    }

    async fn run(self) -> Report {
        self.simulation().run().await
    }

    /// The scenario's one-stream simulation, built and ready to run.
    fn simulation(self) -> Simulation {
        let storage: Arc<dyn Storage> = Arc::new(self.storage);
        Simulation::builder()
            .config(self.config)
            .clock(self.clock.unwrap_or_else(|| Arc::new(TokioClock::new())))
            .decode_executor(Arc::new(self.decode))
            .output_executor(self.output.map(|o| Arc::new(o) as Arc<dyn OutputExecutor>))
            .stream(StreamSpec::new(
                "stream 0",
                Arc::new(ScriptedSource { n: self.n_frames, gaps: self.gaps, long_gop: self.long_gop }),
                storage,
            ))
            .build()
            .unwrap()
    }
}

fn dropped_frames(report: &Report, cause: DropCauseName) -> Vec<u64> {
    report.streams[0].timeline.iter().filter(|f| f.cause == Some(cause)).map(|f| f.frame_idx).collect()
}

#[tokio::test(start_paused = true)]
async fn clean_run_presents_every_frame_on_time() {
    let report = Scenario::new(50).run().await;
    let s = &report.streams[0];
    assert_eq!(report.status, playsim_report::RunStatus::Complete);
    assert_eq!((s.frames_due, s.presented, s.dropped.total()), (50, 50, 0));
    assert_eq!(s.bytes_read, 50 * 1000);
    assert_eq!(s.span_ns, 5_000_000_000);
    assert!((s.fps_achieved - 10.0).abs() < 1e-9, "{}", s.fps_achieved);
    // After the preroll, frames were ready long before they fell due.
    assert!(s.latency.slack.p50_ms > 300.0, "{:?}", s.latency.slack);
    assert!(s.latency.slack.min_ms > 0.0, "{:?}", s.latency.slack);
    for (i, f) in s.timeline.iter().enumerate() {
        assert_eq!(f.due_ns, s.t0_ns + i as u64 * 100_000_000);
        assert!(f.presented_ns.is_some());
    }
}

#[tokio::test(start_paused = true)]
async fn each_injected_fault_is_counted_once_under_its_own_cause() {
    // Each stall is sized to miss only its own deadline (by about 50 ms of a
    // 100 ms frame interval) and they are a second apart, so the pipeline recovers.
    let storage_stalls = [30, 70, 110];
    let decode_stalls = [40, 80, 120, 160];
    let output_stalls = [50, 90, 130];
    let corrupt = [60, 100];
    let mut sc = Scenario::new(200).slow_reads(storage_stalls, 450 * MS);
    sc.decode = ScriptedWork::new(5 * MS).slow(decode_stalls, 450 * MS).corrupt(corrupt);
    sc.output = Some(ScriptedWork::new(MS).slow(output_stalls, 450 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!(dropped_frames(&report, DropCauseName::Storage), storage_stalls);
    assert_eq!(dropped_frames(&report, DropCauseName::Decode), decode_stalls);
    assert_eq!(dropped_frames(&report, DropCauseName::Output), output_stalls);
    assert_eq!(dropped_frames(&report, DropCauseName::Unreadable), corrupt);
    assert_eq!((s.dropped.storage, s.dropped.decode, s.dropped.output, s.dropped.unreadable), (3, 4, 3, 2));
    assert_eq!(s.presented, 200 - 12);
    assert_eq!(report.totals.dropped.total(), 12);
    // 200 frames through a window of 4: buffers are recycled, not allocated per frame.
    let pools = s.pool_buffers;
    assert!(pools.encoded <= 4 && pools.decoded <= 4 && pools.output <= 4, "{pools:?}");
    // The stalled frames were in flight at their deadline; they completed late.
    assert_eq!(s.late_frames, 10);
    let messages: Vec<&str> = s.unreadable.iter().map(|u| u.message.as_str()).collect();
    assert!(messages[0].contains("frame 60 (index 60)"), "{messages:?}");
    assert!(messages[0].contains("/scripted/frame.0000060.raw"), "{messages:?}");
    assert!(messages[0].contains("scripted corruption"), "{messages:?}");
}

#[tokio::test(start_paused = true)]
async fn a_decode_backlog_is_blamed_on_decode_not_storage() {
    // One decode thread at 150 ms a frame cannot keep 10 fps: the backlog fills
    // the window, so later frames are never even read in time.
    let mut sc = Scenario::new(100);
    sc.config.decode_threads = 1;
    sc.decode = ScriptedWork::new(5 * MS).slow(20..60, 150 * MS);
    let report = sc.run().await;
    let s = &report.streams[0];
    assert!(s.dropped.decode >= 10, "{:?}", s.dropped);
    assert_eq!((s.dropped.storage, s.dropped.output, s.dropped.unreadable), (0, 0, 0));
    assert_eq!(s.presented + s.dropped.decode, 100);
}

#[tokio::test(start_paused = true)]
async fn frames_never_admitted_are_blamed_on_the_oldest_slot_holder() {
    // A window of 2 held by two frames decoding for 350 ms: the frames behind
    // them cannot start reading, yet storage is not at fault.
    let mut sc = Scenario::new(60);
    sc.config.prefetch = 2;
    sc.config.preroll = 2;
    sc.decode = ScriptedWork::new(5 * MS).slow(20..40, 350 * MS);
    let report = sc.run().await;
    let s = &report.streams[0];
    let never_read = s.timeline.iter().filter(|f| f.cause.is_some() && f.read_start_ns.is_none()).count();
    assert!(never_read > 0, "the rule for unadmitted frames was not exercised");
    assert_eq!(s.dropped.storage, 0, "{:?}", s.dropped);
    assert!(s.dropped.decode > 0);
}

#[tokio::test(start_paused = true)]
async fn slow_storage_is_blamed_on_storage() {
    // Every read takes 250 ms with 2 in flight: 8 fps of reads for a 10 fps stream.
    let mut sc = Scenario::new(80);
    sc.storage = ScriptedStorage::new(ScriptedObject::new(1000, 250 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert!(s.dropped.storage > 5, "{:?}", s.dropped);
    assert_eq!(s.dropped.output, 0);
    // The rule goes by the state at the deadline: a frame whose last byte came
    // in less than a decode time (5 ms) before it was due is a decode drop.
    for f in s.timeline.iter().filter(|f| f.cause == Some(DropCauseName::Decode)) {
        let read_done = f.read_done_ns.unwrap();
        assert!(read_done <= f.due_ns && f.due_ns - read_done < 5_000_000, "{f:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn gaps_and_failed_reads_are_unreadable_with_the_file_named() {
    let mut sc = Scenario::new(30);
    sc.gaps = [7].into();
    sc.storage = sc.storage.with_object(
        frame_path(12),
        ScriptedObject { read_error: Some("input/output error".into()), ..ScriptedObject::new(1000, MS) },
    );
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!(s.dropped.unreadable, 2);
    assert_eq!(s.presented, 28);
    assert!(s.unreadable[0].message.contains("frame 7 (index 7)"));
    assert!(s.unreadable[0].message.contains("frame.0000007.raw is missing from the sequence"));
    assert!(s.unreadable[1].message.contains("frame.0000012.raw"));
    assert!(s.unreadable[1].message.contains("input/output error"));
}

#[tokio::test(start_paused = true)]
async fn no_drop_waits_and_reports_the_stall() {
    let mut sc = Scenario::new(40).slow_reads([20], 650 * MS);
    sc.config.no_drop = true;
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (40, 0));
    // Admitted 400 ms ahead, read in 650 ms: about 250 ms late.
    assert!(s.stall_ms > 240.0 && s.stall_ms < 260.0, "{}", s.stall_ms);
    assert_eq!(s.span_ns, 4_000_000_000 + (s.stall_ms * 1e6).round() as u64);
}

/// The wall clock can block, so the stream presents on its own thread (`PresentThread`);
/// the drop rule and no-drop's wait must work there as on the runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_wall_clock_frames_are_presented_from_the_present_thread() {
    let mut sc = Scenario::new(12).slow_reads([6], 650 * MS);
    sc.config.no_drop = true;
    sc.clock = Some(Arc::new(PreciseClock::new()));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.frames_due, s.presented, s.dropped.total()), (12, 12, 0));
    assert!(s.stall_ms > 0.0, "frame 6 was read late, so the schedule waited: {}", s.stall_ms);
    let priority = s.presenter_priority.as_deref();
    assert!(matches!(priority, Some("real-time" | "nice -10" | "normal")), "{priority:?}");
    for f in &s.timeline {
        let (due, presented) = (f.due_ns, f.presented_ns.expect("every frame presented"));
        assert!(presented >= due, "frame {} presented before it was due", f.frame_idx);
    }

    // Without no-drop, the late frame is dropped on storage and the rest play on time.
    let mut sc = Scenario::new(12).slow_reads([6], 650 * MS);
    sc.clock = Some(Arc::new(PreciseClock::new()));
    let report = sc.run().await;
    let dropped: Vec<_> = report.streams[0].timeline.iter().filter(|f| f.cause.is_some()).collect();
    assert_eq!(dropped_frames(&report, DropCauseName::Storage), [6], "{dropped:#?}");
    assert_eq!(report.streams[0].presented, 11);
}

#[tokio::test(start_paused = true)]
async fn fps_max_runs_as_fast_as_the_slowest_stage() {
    // Two decode threads at 10 ms a frame: 200 fps.
    let mut sc = Scenario::new(400);
    sc.config.pacing = Pacing::Max;
    sc.config.prefetch = 8;
    sc.decode = ScriptedWork::new(10 * MS);
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (400, 0));
    assert!(s.fps_achieved > 195.0 && s.fps_achieved <= 200.0, "{}", s.fps_achieved);
}

#[tokio::test(start_paused = true)]
async fn frame_35999_at_59_94_is_due_exactly_600_583_seconds_after_t0() {
    let mut sc = Scenario::new(36_000);
    sc.config.pacing = Pacing::Rate("59.94".parse().unwrap());
    sc.config.prefetch = 8;
    sc.config.preroll = 5;
    sc.storage = ScriptedStorage::new(ScriptedObject::new(10, MS));
    sc.decode = ScriptedWork::new(MS);
    sc.output = None;
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (36_000, 0));
    assert_eq!(s.timeline[35_999].due_ns - s.t0_ns, 600_583_316_666);
    assert_eq!(s.span_ns, 600_600_000_000);
}

#[tokio::test(start_paused = true)]
async fn duration_and_loop_bound_the_run() {
    let mut sc = Scenario::new(10);
    sc.config.loop_playback = true;
    sc.config.duration = Some(Duration::from_secs(3));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.frames_due, s.presented), (30, 30));
    assert_eq!(s.timeline[25].frame_number, 5);
}

#[tokio::test(start_paused = true)]
async fn cancelling_yields_a_partial_report() {
    let mut sc = Scenario::new(10);
    sc.config.loop_playback = true;
    sc.output = None;
    let sim = sc.simulation();
    let cancel = sim.canceller();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        cancel.cancel();
    });
    let report = sim.run().await;
    assert_eq!(report.status, playsim_report::RunStatus::Partial);
    assert!(report.error.as_deref().unwrap_or("").contains("interrupted"));
    assert!(report.streams[0].presented >= 45, "{}", report.streams[0].presented);
}

/// The report's start time comes from the run's clock: its wall origin plus its time at the start.
#[tokio::test(start_paused = true)]
async fn the_start_time_is_the_clocks() {
    let mut sc = Scenario::new(10);
    let origin = Duration::from_secs(1_767_225_600);
    tokio::time::advance(Duration::from_secs(3)).await;
    sc.clock = Some(Arc::new(TokioClock::new().with_wall_origin(origin)));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(sc.run().await.started_at_unix_s, 1_767_225_602);
}

/// `verify` needs to be told how a frame carries its index: the engine knows no media.
#[test]
fn verify_without_a_frame_index_reader_is_refused() {
    let sc = Scenario::new(2);
    let config = EngineConfig { verify: true, ..sc.config };
    let source = Arc::new(ScriptedSource { n: 2, gaps: HashSet::new(), long_gop: None });
    let storage: Arc<dyn Storage> = Arc::new(sc.storage);
    let refused = Simulation::builder().config(config).stream(StreamSpec::new("s", source, storage)).build();
    assert!(refused.err().unwrap_or_default().contains("frame_index_reader"));
}

/// Stream `i`: 60 scripted frames, each read in 2 ms.
fn scripted_stream(i: u32) -> StreamSpec {
    let storage: Arc<dyn Storage> = Arc::new(ScriptedStorage::new(ScriptedObject::new(1000, 2 * MS)));
    StreamSpec::new(
        format!("stream {i}"),
        Arc::new(ScriptedSource { n: 60, gaps: HashSet::new(), long_gop: None }),
        storage,
    )
}

/// Two 10 fps streams on one clock, sharing a decode pool of `decode_threads` at 60 ms a frame.
async fn two_streams(decode_threads: u32) -> Report {
    let config = EngineConfig { decode_threads, ..Scenario::new(0).config };
    let mut builder = Simulation::builder()
        .config(config)
        .clock(Arc::new(TokioClock::new()))
        .decode_executor(Arc::new(ScriptedWork::new(60 * MS)))
        .output_executor(Some(Arc::new(ScriptedWork::new(MS))));
    for i in 0..2 {
        builder = builder.stream(scripted_stream(i));
    }
    builder.build().unwrap().run().await
}

#[tokio::test(start_paused = true)]
async fn the_run_wide_latency_is_the_streams_histograms_merged() {
    let report = two_streams(2).await;
    let histograms = report.latency_histograms.clone().unwrap();
    let latency = report.latency.clone().unwrap();
    assert_eq!(latency, histograms.percentiles(), "the figures are the histograms'");
    let [a, b] = [&report.streams[0].latency, &report.streams[1].latency];
    for (stage, run, one, other) in [
        ("read", &latency.read, &a.read, &b.read),
        ("decode", &latency.decode, &a.decode, &b.decode),
        ("slack", &latency.slack, &a.slack, &b.slack),
        ("pacing error", &latency.pacing_error, &a.pacing_error, &b.pacing_error),
    ] {
        assert_eq!(run.count, one.count + other.count, "{stage}");
        assert!(run.count > 0, "{stage}");
        assert_eq!(run.max_ms, one.max_ms.max(other.max_ms), "{stage}");
        assert_eq!(run.min_ms, one.min_ms.min(other.min_ms), "{stage}");
    }
    // The test clock's wall origin is the epoch; the origin still agrees with the start.
    assert_eq!(report.origin_unix_ns / 1_000_000_000, report.started_at_unix_s);
}

#[tokio::test(start_paused = true)]
async fn streams_share_the_decode_pool_and_the_clock() {
    // Two threads give 33 decodes a second for 20 frames a second due: both streams play.
    let report = two_streams(2).await;
    assert_eq!(report.streams.len(), 2);
    for s in &report.streams {
        assert_eq!((s.presented, s.dropped.total()), (60, 0), "{}", s.name);
    }
    assert_eq!(report.streams[0].t0_ns, report.streams[1].t0_ns, "one clock, one start");
    assert_eq!((report.totals.presented, report.totals.frames_due), (120, 120));
    // One thread gives 16.7 decodes a second for 20 due: frames drop, only for decode. Frames
    // that could not be ready in time are not decoded, so the thread spends itself on frames
    // that can: 100 decodes in the 6 s, plus the preroll's, are presented. (Which stream's
    // frames drop follows the pool's queue, not a fair share.)
    let report = two_streams(1).await;
    let t = &report.totals;
    assert!(t.dropped.decode > 0, "{:?}", t.dropped);
    assert_eq!(t.dropped.total(), t.dropped.decode, "{:?}", t.dropped);
    assert!(t.presented >= 100, "presented {} of 120", t.presented);
    let skipped = t.early_drops.decode;
    assert!(skipped > 0 && skipped <= t.dropped.decode, "{skipped} dropped early");
    assert_eq!(
        report.totals.dropped.decode,
        report.streams[0].dropped.decode + report.streams[1].dropped.decode
    );
}

#[tokio::test(start_paused = true)]
async fn streams_keep_their_own_rate_and_start_offset_on_one_clock() {
    // Stream 0 plays 20 frames at the run's 10 fps; stream 1 plays 20 frames at 25 fps,
    // starting 3 s after the common start: it begins reading then and plays once its own
    // preroll is in, so its t0 is 3 s plus the preroll's reads and decodes.
    let config = EngineConfig { frames: Some(20), ..Scenario::new(0).config };
    let late = StreamSpec {
        pacing: Some(Pacing::Rate(FrameRate::new(25, 1).unwrap())),
        start_offset: Duration::from_secs(3),
        ..scripted_stream(1)
    };
    let report = Simulation::builder()
        .config(config)
        .clock(Arc::new(TokioClock::new()))
        .decode_executor(Arc::new(ScriptedWork::new(5 * MS)))
        .output_executor(Some(Arc::new(ScriptedWork::new(MS))))
        .stream(scripted_stream(0))
        .stream(late)
        .build()
        .unwrap()
        .run()
        .await;
    let (first, second) = (&report.streams[0], &report.streams[1]);
    for s in [first, second] {
        assert_eq!((s.presented, s.dropped.total()), (20, 0), "{}", s.name);
    }
    assert_eq!((first.fps.as_str(), second.fps.as_str()), ("10", "25"));
    assert_eq!((first.start_offset_s, second.start_offset_s), (0.0, 3.0));
    let offset = second.t0_ns - first.t0_ns;
    assert!(
        (3_000_000_000..3_100_000_000).contains(&offset),
        "second stream started {offset} ns after the first"
    );
    // Each stream's frames fall due at its own rate from its own t0: frame 19 at 19/25 s.
    let due_19 = second.timeline[19].due_ns - second.t0_ns;
    assert_eq!(due_19, 760_000_000);
    assert_eq!(first.timeline[19].due_ns - first.t0_ns, 1_900_000_000);
}

#[tokio::test(start_paused = true)]
async fn a_stream_with_its_own_decode_pool_is_not_slowed_by_the_shared_one() {
    // The shared pool has one thread at 60 ms a frame: two 10 fps streams on it drop for
    // decode (see above). Give the second stream a pool of its own with two threads, and
    // only the first, alone on the shared thread (16.7 decodes a second for 10 due), plays clean too.
    let config = EngineConfig { decode_threads: 1, ..Scenario::new(0).config };
    let own = OwnDecodePool::with_executor(Arc::new(ScriptedWork::new(60 * MS)), 2);
    let report = Simulation::builder()
        .config(config)
        .clock(Arc::new(TokioClock::new()))
        .decode_executor(Arc::new(ScriptedWork::new(60 * MS)))
        .output_executor(Some(Arc::new(ScriptedWork::new(MS))))
        .stream(scripted_stream(0))
        .stream(StreamSpec { decode_pool: Some(own), ..scripted_stream(1) })
        .build()
        .unwrap()
        .run()
        .await;
    for s in &report.streams {
        assert_eq!((s.presented, s.dropped.total()), (60, 0), "{}", s.name);
    }
    assert_eq!(report.streams[0].decode_pool_threads, None);
    assert_eq!(report.streams[1].decode_pool_threads, Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_bytes_only_stream_never_waits_for_the_decode_pool_or_the_output() {
    // Decode and output would take 1 s a frame: any frame that went through them at 10 fps
    // would drop. Read in 2 ms and not decoded, every frame is presented, and the frame is
    // ready the moment its bytes are in.
    let sc = Scenario {
        decode: ScriptedWork::new(1000 * MS),
        output: Some(ScriptedWork::new(1000 * MS)),
        ..Scenario::new(0)
    };
    let storage: Arc<dyn Storage> = Arc::new(sc.storage);
    let source = playsim_core::WithoutDecode(Arc::new(ScriptedSource {
        n: 30,
        gaps: HashSet::from([7]),
        long_gop: None,
    }));
    let report = Simulation::builder()
        .config(sc.config)
        .clock(Arc::new(TokioClock::new()))
        .decode_executor(Arc::new(sc.decode))
        .output_executor(sc.output.map(|o| Arc::new(o) as Arc<dyn OutputExecutor>))
        .stream(StreamSpec::new("bytes", Arc::new(source), storage))
        .build()
        .unwrap()
        .run()
        .await;
    let s = &report.streams[0];
    assert_eq!(s.source.decode_mode, "none");
    assert_eq!((s.presented, s.dropped.unreadable, s.dropped.total()), (29, 1, 1));
    assert_eq!(s.bytes_read, 29 * 1000);
    assert_eq!(s.latency.decode.count, 0);
    assert_eq!(s.latency.output.count, 0);
    let f = &s.timeline[3];
    assert_eq!((f.output_done_ns, f.decode_done_ns), (f.read_done_ns, None));
}

fn long_gop(delay: usize, corrupt: impl IntoIterator<Item = u64>) -> Arc<GopScript> {
    Arc::new(GopScript { delay, corrupt: corrupt.into_iter().collect(), ..Default::default() })
}

#[tokio::test(start_paused = true)]
async fn a_long_gop_stream_feeds_its_packets_in_order_and_presents_every_picture() {
    // Pictures come out 5 packets late, more than the prefetch of 2: the window
    // makes room for the delay, so the stream neither stalls nor drops.
    let script = long_gop(5, []);
    let mut sc = Scenario::new(40);
    sc.config.prefetch = 2;
    sc.config.preroll = 2;
    sc.long_gop = Some(Arc::clone(&script));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (40, 0), "{:?}", s.dropped);
    assert_eq!(s.source.decode_mode, "in_order");
    assert_eq!(*script.packets_sent.lock().unwrap(), 40);
    // Decoding stops while the prefetch's worth of pictures waits to be presented; only
    // at the end of the stream, when the decoder gives out the pictures it held back,
    // do the buffers go beyond the prefetch, by the delay.
    let pools = s.pool_buffers;
    assert!(pools.decoded <= 2 + 5 && pools.output <= 2 + 5, "{pools:?}");
}

#[tokio::test(start_paused = true)]
async fn a_long_gop_stream_still_decodes_dropped_frames_and_blames_the_slow_read() {
    // Packet 20 takes 1.2 s to read. Pictures come out 2 packets late, so picture 18
    // is the first to wait for it: frames from 18 on miss their deadlines, all for
    // storage, and every packet still reaches the decoder.
    let script = long_gop(2, []);
    let mut sc = Scenario::new(60).slow_reads([20], 1200 * MS);
    sc.long_gop = Some(Arc::clone(&script));
    let report = sc.run().await;
    let s = &report.streams[0];
    // Frame 26 falls due the moment packet 20 arrives, with the backlog still to decode.
    assert_eq!(dropped_frames(&report, DropCauseName::Storage), (18..=25).collect::<Vec<_>>());
    assert_eq!(dropped_frames(&report, DropCauseName::Decode), [26]);
    assert_eq!((s.dropped.output, s.dropped.unreadable), (0, 0), "{:?}", s.dropped);
    assert_eq!(s.presented, 60 - 9);
    assert_eq!(*script.packets_sent.lock().unwrap(), 60);
}

#[tokio::test(start_paused = true)]
async fn a_slow_long_gop_decoder_is_blamed_on_decode() {
    let mut sc = Scenario::new(40);
    sc.config.decode_threads = 1;
    sc.decode = ScriptedWork::new(5 * MS).slow(10..20, 250 * MS);
    sc.long_gop = Some(long_gop(2, []));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert!(s.dropped.decode >= 5, "{:?}", s.dropped);
    assert_eq!((s.dropped.storage, s.dropped.output, s.dropped.unreadable), (0, 0, 0), "{:?}", s.dropped);
}

#[tokio::test(start_paused = true)]
async fn a_corrupt_long_gop_packet_is_one_unreadable_frame_and_looping_resets_the_decoder() {
    // 12 packets played twice with --loop; packet 4 is corrupt each time round.
    let script = long_gop(2, [4]);
    let mut sc = Scenario::new(12);
    sc.config.loop_playback = true;
    sc.config.frames = Some(24);
    sc.long_gop = Some(Arc::clone(&script));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!(s.dropped.unreadable, 2, "{:?}", s.unreadable);
    assert_eq!((s.presented, s.dropped.total()), (22, 2));
    assert!(s.unreadable[0].message.contains("scripted corrupt packet 4"), "{:?}", s.unreadable);
    assert_eq!(*script.packets_sent.lock().unwrap(), 24);
}

#[tokio::test(start_paused = true)]
async fn a_pool_slower_than_real_time_skips_frames_it_cannot_finish_in_time() {
    // One thread at 150 ms a frame for 10 fps: at most 2 frames in 3 can be decoded. Frames
    // that could not be ready by their deadline are not started, so every decode that runs
    // is presented, instead of the thread falling behind and finishing every frame late.
    let mut sc = Scenario::new(90);
    sc.config.decode_threads = 1;
    sc.decode = ScriptedWork::new(150 * MS);
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!(s.dropped.total(), s.dropped.decode, "{:?}", s.dropped);
    assert!(s.presented >= 55, "presented {} of 90: {:?}", s.presented, s.dropped);
    // Frames the thread could not finish in time are dropped before their work, now before
    // they are even read, and charged to decode, the stage that could not keep up.
    assert!(s.early_drops.decode >= 25, "{:?} dropped early", s.early_drops);
    assert_eq!(s.early_drops.decode, s.read_skipped + s.decode_skipped, "{s:?}");
    // Once the estimate has settled, a frame whose decode starts is ready in time.
    assert!(s.late_frames <= 2, "{} late", s.late_frames);
    // --no-drop waits for every frame instead: nothing is skipped.
    let mut sc = Scenario::new(20);
    sc.config.decode_threads = 1;
    sc.config.no_drop = true;
    sc.decode = ScriptedWork::new(150 * MS);
    let report = sc.run().await;
    assert_eq!((report.streams[0].presented, report.streams[0].decode_skipped), (20, 0));
}

#[tokio::test(start_paused = true)]
async fn storage_slower_than_real_time_skips_reads_that_cannot_finish_in_time() {
    // One read in flight at 150 ms a frame for 10 fps: at most 2 frames in 3 can be read.
    // A read that could not finish (and the frame be decoded and output) by the frame's
    // deadline is not started, so the storage's time goes to frames that can still make
    // it; without that, every read finishes a little late and almost nothing is presented.
    let mut sc = Scenario::new(90);
    sc.config.io_depth = 1;
    sc.storage = ScriptedStorage::new(ScriptedObject::new(1000, 150 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!(s.dropped.total(), s.dropped.storage, "{:?}", s.dropped);
    assert!(s.presented >= 55, "presented {} of 90: {:?}", s.presented, s.dropped);
    assert!(s.read_skipped >= 25, "{} reads skipped", s.read_skipped);
    assert_eq!(s.decode_skipped, 0);
    // Once the estimate has settled, a frame whose read starts is ready in time.
    assert!(s.late_frames <= 2, "{} late", s.late_frames);
    // Every frame read was a frame presented, bar those late ones: no bandwidth was spent
    // on frames that were bound to be dropped.
    assert!(s.bytes_read <= (s.presented + s.late_frames) * 1000, "{} bytes", s.bytes_read);
    // --no-drop waits for every frame instead: every frame is read.
    let mut sc = Scenario::new(20);
    sc.config.io_depth = 1;
    sc.config.no_drop = true;
    sc.storage = ScriptedStorage::new(ScriptedObject::new(1000, 150 * MS));
    let report = sc.run().await;
    assert_eq!((report.streams[0].presented, report.streams[0].read_skipped), (20, 0));
}

#[tokio::test(start_paused = true)]
async fn an_output_stage_slower_than_real_time_skips_outputs_that_cannot_finish_in_time() {
    // One output thread at 110 ms a frame for 10 fps: at most 10 frames in 11 can be output.
    // An output that could not finish by its frame's deadline is not started, so the thread
    // goes to the next frame; without that, once it falls one frame behind every output
    // finishes just after its deadline and nearly every frame drops.
    let mut sc = Scenario::new(100);
    sc.output = Some(ScriptedWork::new(110 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!(s.dropped.total(), s.dropped.output, "{:?}", s.dropped);
    assert!(s.presented >= 80, "presented {} of 100: {:?}", s.presented, s.dropped);
    // Frames the output thread could not finish in time are dropped before their work (before
    // their read, now) and charged to the output.
    assert!(s.early_drops.output >= 5, "{:?} dropped early", s.early_drops);
    assert_eq!(s.early_drops.output, s.read_skipped + s.output_skipped, "{s:?}");
    assert_eq!((s.early_drops.storage, s.early_drops.decode, s.decode_skipped), (0, 0, 0));
    assert!(s.late_frames <= 2, "{} late", s.late_frames);
    // Two output threads a stream pack two frames at once: 110 ms each keeps up with 10 fps.
    let mut sc = Scenario::new(100);
    sc.config.output_threads = 2;
    sc.output = Some(ScriptedWork::new(110 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (100, 0), "{:?}", s.dropped);
    assert_eq!(report.settings.output_threads, 2);
}

#[tokio::test(start_paused = true)]
async fn a_slow_output_stage_holds_no_more_decoded_frames_than_threads_plus_three() {
    // At --fps max, decode (2 threads at 5 ms: 400 fps) outruns the one output thread
    // (20 ms: 50 fps), so decoded frames queue for it; a window of 16 would let 16 queue.
    let mut sc = Scenario::new(200);
    sc.config.pacing = Pacing::Max;
    sc.config.prefetch = 16;
    sc.output = Some(ScriptedWork::new(20 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (200, 0));
    assert!(s.fps_achieved > 49.0 && s.fps_achieved <= 50.0, "{}", s.fps_achieved);
    let pools = s.pool_buffers;
    // Decode threads + output slots + 2 decoded frames; the v210 output shares the
    // encoded pool, which stays within the window: its buffers the output side held at
    // once (one packing, one waiting to be presented) are counted as `output`.
    assert!(pools.decoded <= 2 + 1 + 2, "{pools:?}");
    assert!(pools.encoded + pools.output <= 16, "{pools:?}");
    assert!((1..=2).contains(&pools.output), "{pools:?}");
}

#[tokio::test(start_paused = true)]
async fn a_frame_starved_of_a_decoded_slot_by_a_slow_output_is_dropped_as_output() {
    // The stream's 5 decoded slots (2 threads + 1 output slot + 2): frame 20 holds one in a
    // 2.5 s output, frames 21 and 22 two in 2.5 s decodes, and frames 24 and 25, read while
    // frame 23's read took 600 ms, the last two. Frame 23, read, waits for a slot past its
    // deadline: it waits on the output stage, which frees decoded frames, not on decode.
    let mut sc = Scenario::new(80).slow_reads([23], 600 * MS);
    sc.config.prefetch = 10;
    sc.config.preroll = 10;
    sc.decode = ScriptedWork::new(5 * MS).slow([21, 22], 2500 * MS);
    sc.output = Some(ScriptedWork::new(MS).slow([20], 2500 * MS));
    let report = sc.run().await;
    let s = &report.streams[0];
    let frame = |idx: usize| &s.timeline[idx];
    assert_eq!(frame(23).cause, Some(DropCauseName::Output), "{:?}", frame(23));
    assert!(frame(23).read_done_ns.is_some() && frame(23).decode_done_ns.is_none(), "{:?}", frame(23));
    assert_eq!(
        (frame(20).cause, frame(21).cause),
        (Some(DropCauseName::Output), Some(DropCauseName::Decode))
    );
    assert_eq!((s.dropped.storage, s.dropped.unreadable), (0, 0), "{:?}", s.dropped);
    assert!(s.pool_buffers.decoded <= 5, "{:?}", s.pool_buffers);
    assert_eq!(s.presented + s.dropped.total(), 80);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_storage_is_charged_to_storage_not_to_the_frames_queued_behind_it() {
    // Frames 30 to 33 take 2.5 s to read, as when a server stops for a while. The frames behind
    // the first stalled reads wait for read-ahead room, or are judged by admission with stalled
    // reads ahead of them: either way they wait on storage, and every drop is charged to it.
    let mut sc = Scenario::new(120).slow_reads(30..34, 2500 * MS);
    sc.config.prefetch = 8;
    sc.config.io_depth = 4;
    let report = sc.run().await;
    let s = &report.streams[0];
    let behind = s.timeline.iter().filter(|f| f.cause.is_some() && f.read_start_ns.is_none()).count();
    assert!(behind > 0, "no frame waited behind the stalled reads: {:?}", s.dropped);
    // The stalled frames (those of 30 to 33 whose reads had started) and the frames behind
    // them, which never started theirs, are all the drops.
    let stalled = s.timeline.iter().filter(|f| f.cause.is_some() && f.read_start_ns.is_some()).count();
    assert!((1..=4).contains(&stalled), "{stalled} stalled reads");
    assert_eq!(s.dropped.storage, (stalled + behind) as u64, "{:?}", s.dropped);
    assert_eq!(s.dropped.total(), s.dropped.storage, "{:?}", s.dropped);
    assert_eq!(s.presented + s.dropped.total(), 120);
}

/// A barrier that opens a fixed time after the clients are ready, or refuses.
struct FixedBarrier {
    after: Duration,
    refuse: Option<&'static str>,
    asked_at: Mutex<Option<Duration>>,
}

impl crate::StartBarrier for FixedBarrier {
    fn open(&self, ready_at: Duration) -> crate::StartFuture {
        *self.asked_at.lock().unwrap() = Some(ready_at);
        let answer = match self.refuse {
            Some(reason) => Err(reason.to_owned()),
            None => Ok(ready_at + self.after),
        };
        Box::pin(async move { answer })
    }
}

#[tokio::test(start_paused = true)]
async fn a_start_barrier_schedules_frame_0_of_every_stream_at_its_answer() {
    let barrier =
        Arc::new(FixedBarrier { after: Duration::from_secs(2), refuse: None, asked_at: Mutex::new(None) });
    let config = EngineConfig { frames: Some(10), ..Scenario::new(0).config };
    let report = Simulation::builder()
        .config(config)
        .clock(Arc::new(TokioClock::new()))
        .decode_executor(Arc::new(ScriptedWork::new(5 * MS)))
        .output_executor(Some(Arc::new(ScriptedWork::new(MS))))
        .stream(scripted_stream(0))
        .stream(scripted_stream(1))
        .start_barrier(Arc::clone(&barrier) as Arc<dyn crate::StartBarrier>)
        .build()
        .unwrap()
        .run()
        .await;
    assert_eq!(report.status, playsim_report::RunStatus::Complete);
    let asked_at = barrier.asked_at.lock().unwrap().expect("the barrier was asked once the preroll was in");
    // The run's origin is the clock's 0 here, so the barrier's clock time is run time; the
    // start it scheduled is frame 0's due time exactly, with no presenter lead on top.
    for s in &report.streams {
        assert_eq!(
            s.t0_ns,
            u64::try_from((asked_at + Duration::from_secs(2)).as_nanos()).unwrap(),
            "{}",
            s.name
        );
        assert_eq!(s.timeline[0].due_ns, s.t0_ns);
        assert_eq!((s.presented, s.dropped.total()), (10, 0), "{}", s.name);
    }
}

#[tokio::test(start_paused = true)]
async fn a_start_barrier_that_refuses_fails_the_run_with_its_reason() {
    let barrier = Arc::new(FixedBarrier {
        after: Duration::ZERO,
        refuse: Some("client 2 (host-b) could not open its source: no such file"),
        asked_at: Mutex::new(None),
    });
    let config = EngineConfig { frames: Some(10), ..Scenario::new(0).config };
    let report = Simulation::builder()
        .config(config)
        .clock(Arc::new(TokioClock::new()))
        .decode_executor(Arc::new(ScriptedWork::new(5 * MS)))
        .output_executor(Some(Arc::new(ScriptedWork::new(MS))))
        .stream(scripted_stream(0))
        .start_barrier(barrier as Arc<dyn crate::StartBarrier>)
        .build()
        .unwrap()
        .run()
        .await;
    assert_eq!(report.status, playsim_report::RunStatus::Failed);
    assert_eq!(report.error.as_deref(), Some("client 2 (host-b) could not open its source: no such file"));
    assert_eq!(report.totals.frames_due, 0, "no frame falls due before the start");
}

/// The most bytes that frames read and not yet decoded held at once, from the timeline: a
/// frame holds its bytes at least from the end of its read to the end of its decode.
fn read_ahead_peak_bytes(report: &Report) -> u64 {
    let mut events: Vec<(u64, i128)> = Vec::new();
    for f in report.streams.iter().flat_map(|s| &s.timeline) {
        if let (Some(read), Some(decoded)) = (f.read_done_ns, f.decode_done_ns) {
            events.push((read, i128::from(f.bytes)));
            events.push((decoded, -i128::from(f.bytes)));
        }
    }
    // At the same instant, frees before takes: a decode that ends as a read ends.
    events.sort_by_key(|&(t, delta)| (t, delta));
    let (mut held, mut peak) = (0i128, 0i128);
    for (_, delta) in events {
        held += delta;
        peak = peak.max(held);
    }
    peak as u64
}

/// The most bytes that frames in the window held at once, from the timeline: from the end of
/// the read to the presentation.
fn window_peak_bytes(report: &Report) -> u64 {
    let mut events: Vec<(u64, i128)> = Vec::new();
    for f in report.streams.iter().flat_map(|s| &s.timeline) {
        if let (Some(read), Some(presented)) = (f.read_done_ns, f.presented_ns) {
            events.push((read, i128::from(f.bytes)));
            events.push((presented, -i128::from(f.bytes)));
        }
    }
    events.sort_by_key(|&(t, delta)| (t, delta));
    let (mut held, mut peak) = (0i128, 0i128);
    for (_, delta) in events {
        held += delta;
        peak = peak.max(held);
    }
    peak as u64
}

/// 60 frames of 1000 bytes but for two runs of 10 MB ones (10..=17 and 40..=45) that
/// decode slowly, so reads run ahead of the decode pool with a window of 8.
fn frames_of_wildly_different_sizes(max_buffer: u64) -> Scenario {
    const HUGE: [std::ops::RangeInclusive<u64>; 2] = [10..=17, 40..=45];
    let mut sc = Scenario::new(60);
    sc.config.pacing = Pacing::Max;
    (sc.config.prefetch, sc.config.preroll, sc.config.io_depth) = (8, 4, 4);
    sc.config.max_buffer = max_buffer;
    for f in HUGE.into_iter().flatten() {
        sc.storage = sc.storage.with_object(frame_path(f), ScriptedObject::new(10_000_000, 2 * MS));
    }
    sc.decode = ScriptedWork::new(5 * MS).slow(HUGE.into_iter().flatten(), 50 * MS);
    sc
}

#[tokio::test(start_paused = true)]
async fn read_ahead_frames_hold_no_more_bytes_than_max_buffer() {
    // Without a byte bound the window of 8 fills with 10 MB frames waiting for the decode.
    let unbounded = frames_of_wildly_different_sizes(u64::MAX).run().await;
    assert!(read_ahead_peak_bytes(&unbounded) > 50_000_000, "{}", read_ahead_peak_bytes(&unbounded));
    let report = frames_of_wildly_different_sizes(25_000_000).run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (60, 0));
    assert!(read_ahead_peak_bytes(&report) <= 25_000_000, "{}", read_ahead_peak_bytes(&report));
    assert_eq!(report.settings.max_buffer_bytes, 25_000_000);
}

#[tokio::test(start_paused = true)]
async fn a_frame_larger_than_the_whole_max_buffer_is_unreadable_and_the_others_play() {
    // The 14 frames of 10 MB are refused before a buffer is taken for them, naming their size
    // and the limit (a size a file or a server claims may not allocate past --max-buffer).
    let report = frames_of_wildly_different_sizes(1_000_000).run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.unreadable, s.dropped.total()), (46, 14, 14));
    for frame in &s.unreadable {
        assert!(
            frame.message.contains("is 10000000 bytes, more than --max-buffer (1000000 bytes)"),
            "{}",
            frame.message
        );
    }
    assert!(read_ahead_peak_bytes(&report) <= 1_000_000, "{}", read_ahead_peak_bytes(&report));
}

#[tokio::test(start_paused = true)]
async fn paced_frames_ready_ahead_of_their_deadline_count_in_max_buffer_too() {
    // At 10 fps the window of 8 fills with frames ready early; their bytes count until they
    // are presented, but for the frame next due, which may always read (one 10 MB frame over).
    let mut sc = frames_of_wildly_different_sizes(25_000_000);
    sc.config.pacing = Pacing::Rate(FrameRate::new(10, 1).unwrap());
    let report = sc.run().await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (60, 0));
    assert!(window_peak_bytes(&report) <= 35_000_000, "{}", window_peak_bytes(&report));
    let mut unbounded = frames_of_wildly_different_sizes(u64::MAX);
    unbounded.config.pacing = Pacing::Rate(FrameRate::new(10, 1).unwrap());
    let unbounded = unbounded.run().await;
    assert!(window_peak_bytes(&unbounded) >= 70_000_000, "{}", window_peak_bytes(&unbounded));
}

/// A live view taken mid-run shows each stream's counters as the presenter left them, its
/// window, the slack of recent frames and the stages' latency; after the run, the counters its
/// report gives.
// The live view's and the report's drops are the same type now (playsim-core's DropCounters);
// the assertion below still converts the one into the other, as it did when they were two.
#[allow(clippy::useless_conversion)]
#[tokio::test(start_paused = true)]
async fn the_live_view_mid_run_shows_each_streams_counters_and_the_stages() {
    let mut sc = Scenario::new(60);
    sc.gaps = [7].into();
    let sim = sc.simulation();
    let live = sim.live();
    assert_eq!(live.view(), None, "no view before the run starts");
    let watcher = Arc::clone(&live);
    let sampled = tokio::spawn(async move {
        // Frame k is due at 0.4 s (the preroll) + k / 10 s; at 3.05 s frames 0..=26 are due.
        tokio::time::sleep(Duration::from_millis(3050)).await;
        watcher.view()
    });
    let report = sim.run().await;
    let view = sampled.await.unwrap().expect("a view while the run goes");
    let last = live.view().expect("after the run, its end");
    assert_eq!(last.streams[0].presented, report.streams[0].presented);
    assert_eq!(playsim_report::Drops::from(last.streams[0].dropped), report.streams[0].dropped);
    assert_eq!(view.streams.len(), 1);
    let s = &view.streams[0];
    assert_eq!(s.name, report.streams[0].name);
    assert_eq!(s.dropped.unreadable, 1, "frame 7 was missing: {s:?}");
    assert!(s.presented > 10 && s.presented < 60, "{s:?}");
    assert_eq!(s.frames_planned, Some(60));
    assert_eq!(s.window, 4);
    assert!(s.buffered <= s.window, "{s:?}");
    assert_eq!(s.recent_slack.len() as u64, s.presented, "fewer than the ring holds");
    assert!(s.recent_slack.iter().all(|&ns| ns > 0), "a clean run has slack: {s:?}");
    let names: Vec<&str> = view.stages.iter().map(|st| st.name).collect();
    assert_eq!(names, ["read", "decode", "output"]);
    // Reads take 2 ms and decodes 5 ms under the paused clock, within the histograms' 0.1 %.
    let p99_ms = |i: usize| view.stages[i].p99.map(|d| d.as_secs_f64() * 1e3);
    assert!(p99_ms(0).is_some_and(|ms| (ms - 2.0).abs() < 0.01), "{:?}", view.stages);
    assert!(p99_ms(1).is_some_and(|ms| (ms - 5.0).abs() < 0.01), "{:?}", view.stages);
    assert!(view.elapsed >= Duration::from_secs(3) && view.elapsed < Duration::from_secs(4), "{view:?}");
    // The end of the run agrees with the report.
    assert_eq!(live.snapshot().presented, report.streams[0].presented);
}
