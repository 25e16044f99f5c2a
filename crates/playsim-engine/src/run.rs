//! A simulation run: streams on one clock, and the report assembled at the end.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{Clock, FrameIndexReader, Pacing, PixelFormat, Source, Storage, DIRECT_IO_ALIGN};
use playsim_report::{
    ColdCache, CpuReport, FrameRecord, LatencyHistograms, MemoryReport, MountReport, PoolBuffers, Report,
    RunStatus, Settings, SourceReport, StageCpu, StageLatency, StageUtilisation, StorageReport, StreamReport,
    Totals, WarningReport, SCHEMA_VERSION,
};

use crate::cancel::CancelToken;
use crate::exec::{DecodeExecutor, DecodePool, OutputExecutor, V210Output};
use crate::live::LiveCounters;
use crate::probe::{self, CodecThreadsCpu, ProcessCpu, ProcessMemory, SystemCpuSnapshot};
use crate::start::StartBarrier;
use crate::stream::{
    duration_ns, ByteBudget, DeadlineSlots, Shared, StartGate, StreamCtx, StreamState, Verdict,
};
use crate::{EngineConfig, OutputStage};

/// One stream to play: what, from where.
pub struct StreamSpec {
    /// A name for the report.
    pub name: String,
    /// The frames.
    pub source: Arc<dyn Source>,
    /// Where their bytes are read from.
    pub storage: Arc<dyn Storage>,
    /// What `--cold` achieved before the run, if it was asked for.
    pub cold: ColdCache,
    /// Frame size for the report, when known before decoding.
    pub dimensions: Option<(u32, u32)>,
    /// This stream's frame rate, when not the run's (`EngineConfig::pacing`).
    pub pacing: Option<Pacing>,
    /// How long after the common start this stream starts reading; it begins playing once
    /// its own preroll is ready. Streams with no offset start together.
    pub start_offset: Duration,
    /// A decode pool of the stream's own (streams given clones share it), instead of the
    /// run's shared pool.
    pub decode_pool: Option<OwnDecodePool>,
}

impl StreamSpec {
    /// A stream of `source` read from `storage`, with the run's settings.
    pub fn new(name: impl Into<String>, source: Arc<dyn Source>, storage: Arc<dyn Storage>) -> StreamSpec {
        StreamSpec {
            name: name.into(),
            source,
            storage,
            cold: ColdCache::default(),
            dimensions: None,
            pacing: None,
            start_offset: Duration::ZERO,
            decode_pool: None,
        }
    }
}

/// A decode pool that some streams have to themselves. Clones are the same pool.
#[derive(Clone)]
pub struct OwnDecodePool {
    executor: Arc<dyn DecodeExecutor>,
    slots: Arc<DeadlineSlots>,
    threads: u32,
}

impl OwnDecodePool {
    /// Starts a pool of `threads` decode threads.
    pub fn start(threads: u32) -> Result<OwnDecodePool, String> {
        if threads == 0 {
            return Err("a decode pool needs at least 1 thread (for example decode_threads = 4)".into());
        }
        let pool = DecodePool::new(threads).map_err(|e| format!("cannot start the decode threads: {e}"))?;
        Ok(OwnDecodePool::with_executor(Arc::new(pool), threads))
    }

    /// A pool over `executor`, running at most `threads` frames at once (tests inject a
    /// scripted executor).
    pub fn with_executor(executor: Arc<dyn DecodeExecutor>, threads: u32) -> OwnDecodePool {
        OwnDecodePool { executor, slots: Arc::new(DeadlineSlots::new(threads as usize)), threads }
    }

    /// Its size.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    fn same_pool(&self, other: &OwnDecodePool) -> bool {
        Arc::ptr_eq(&self.slots, &other.slots)
    }
}

/// Builds a [`Simulation`].
#[derive(Default)]
pub struct SimulationBuilder {
    config: EngineConfig,
    streams: Vec<StreamSpec>,
    clock: Option<Arc<dyn Clock>>,
    decode: Option<Arc<dyn DecodeExecutor>>,
    output: Option<Option<Arc<dyn OutputExecutor>>>,
    libraries: BTreeMap<String, String>,
    frame_index: Option<FrameIndexReader>,
    start_barrier: Option<Arc<dyn StartBarrier>>,
}

impl SimulationBuilder {
    /// Makes this run one client of several: once every stream has its preroll, playback
    /// starts when `barrier` says (see [`StartBarrier`]).
    pub fn start_barrier(mut self, barrier: Arc<dyn StartBarrier>) -> Self {
        self.start_barrier = Some(barrier);
        self
    }

    /// How `verify` reads the index a decoded frame carries in its pixels
    /// (`playsim_media::read_frame_index` for playsim's synthetic media). Needed only with
    /// `EngineConfig::verify`.
    pub fn frame_index_reader(mut self, reader: FrameIndexReader) -> Self {
        self.frame_index = Some(reader);
        self
    }

    /// The engine settings.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds a stream.
    pub fn stream(mut self, stream: StreamSpec) -> Self {
        self.streams.push(stream);
        self
    }

    /// The clock; by default the precise wall clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Replaces the decode pool (tests inject a scripted one).
    pub fn decode_executor(mut self, exec: Arc<dyn DecodeExecutor>) -> Self {
        self.decode = Some(exec);
        self
    }

    /// Replaces the output stage (tests inject a scripted one); `None` for no output work.
    pub fn output_executor(mut self, exec: Option<Arc<dyn OutputExecutor>>) -> Self {
        self.output = Some(exec);
        self
    }

    /// Records a linked library's version in the report.
    pub fn library(mut self, name: &str, version: &str) -> Self {
        self.libraries.insert(name.to_owned(), version.to_owned());
        self
    }

    /// Checks the settings and starts the worker pools.
    pub fn build(self) -> Result<Simulation, String> {
        self.config.validate().map_err(|e| e.to_string())?;
        if self.config.verify && self.frame_index.is_none() {
            return Err(
                "verify needs a frame index reader: give Simulation::builder().frame_index_reader(...), \
                 for example playsim_media::read_frame_index"
                    .into(),
            );
        }
        if self.streams.is_empty() {
            return Err("no stream to play (give a SOURCE, for example target/demo/dpx-4k-dci)".into());
        }
        let decode = match self.decode {
            Some(d) => d,
            None => Arc::new(
                DecodePool::new(self.config.decode_threads)
                    .map_err(|e| format!("cannot start the decode threads: {e}"))?,
            ),
        };
        let output = match (self.output, self.config.output) {
            (Some(o), _) => o,
            (None, OutputStage::None) => None,
            (None, OutputStage::V210) => {
                let streams = u32::try_from(self.streams.len()).unwrap_or(u32::MAX);
                let n = streams.saturating_mul(self.config.output_threads);
                let pool = V210Output::new(n).map_err(|e| format!("cannot start the output threads: {e}"))?;
                Some(Arc::new(pool) as Arc<dyn OutputExecutor>)
            }
        };
        let clock = self.clock.unwrap_or_else(|| Arc::new(crate::PreciseClock::new()));
        Ok(Simulation {
            config: Arc::new(self.config),
            streams: self.streams,
            clock,
            decode,
            output,
            libraries: self.libraries,
            frame_index: self.frame_index,
            live: Arc::default(),
            cancel: Arc::default(),
            start_barrier: self.start_barrier,
        })
    }
}

/// A configured run, ready to play.
pub struct Simulation {
    config: Arc<EngineConfig>,
    streams: Vec<StreamSpec>,
    clock: Arc<dyn Clock>,
    decode: Arc<dyn DecodeExecutor>,
    output: Option<Arc<dyn OutputExecutor>>,
    libraries: BTreeMap<String, String>,
    frame_index: Option<FrameIndexReader>,
    live: Arc<LiveCounters>,
    cancel: Arc<CancelToken>,
    start_barrier: Option<Arc<dyn StartBarrier>>,
}

impl Simulation {
    /// Starts building a simulation.
    pub fn builder() -> SimulationBuilder {
        SimulationBuilder::default()
    }

    /// Counters a progress reporter can sample while the run goes.
    pub fn live(&self) -> Arc<LiveCounters> {
        Arc::clone(&self.live)
    }

    /// A handle that stops the run early (Ctrl-C); the report is then marked partial.
    pub fn canceller(&self) -> Arc<CancelToken> {
        Arc::clone(&self.cancel)
    }

    /// Plays every stream on one clock and returns the report. It never fails:
    /// what went wrong is in the report's status and error.
    pub async fn run(self) -> Report {
        // From the run's clock, like every other time of the run.
        let started_at_unix_s = (self.clock.wall_origin() + self.clock.now()).as_secs();
        let cpu_before = ProcessCpu::now();
        let codec_before = CodecThreadsCpu::now();
        let system_before = SystemCpuSnapshot::read().ok();
        let origin = self.clock.now();
        // The instant every `*_ns` time of the report counts from, on the wall clock, so that
        // the reports of several clients can be put on one time line.
        let origin_unix_ns = duration_ns(self.clock.wall_origin() + origin);
        let shared = Shared {
            cfg: Arc::clone(&self.config),
            clock: Arc::clone(&self.clock),
            origin,
            decode: Arc::clone(&self.decode),
            decode_slots: Arc::new(DeadlineSlots::new(self.config.decode_threads as usize)),
            decode_threads: self.config.decode_threads,
            output: self.output.clone(),
            live: Arc::clone(&self.live),
            cancel: Arc::clone(&self.cancel),
            start: Arc::new(StartGate::new(
                self.streams.iter().filter(|s| s.start_offset.is_zero()).count(),
                self.start_barrier.clone(),
                origin,
            )),
            start_offset: Duration::ZERO,
            frame_index: self.frame_index,
            budget: Arc::new(ByteBudget::new(self.config.max_buffer)),
        };
        let ctxs: Vec<Arc<StreamCtx>> = self
            .streams
            .iter()
            .map(|s| {
                let mut own = shared.clone();
                own.start_offset = s.start_offset;
                if let Some(pacing) = s.pacing {
                    own.cfg = Arc::new(EngineConfig { pacing, ..(*self.config).clone() });
                }
                if let Some(pool) = &s.decode_pool {
                    own.decode = Arc::clone(&pool.executor);
                    own.decode_slots = Arc::clone(&pool.slots);
                    own.decode_threads = pool.threads;
                }
                Arc::new(StreamCtx::new(s.name.clone(), Arc::clone(&s.source), Arc::clone(&s.storage), &own))
            })
            .collect();
        self.live.attach(Arc::new(RunProbe {
            streams: ctxs.clone(),
            storages: self.streams.iter().map(|s| Arc::clone(&s.storage)).collect(),
            decoders: self.decode_executors(),
            output: self.output.clone(),
            codec_before: codec_before.clone(),
            clock: Arc::clone(&self.clock),
            origin,
        }));
        let handles: Vec<_> = ctxs.iter().map(|c| tokio::spawn(Arc::clone(c).run())).collect();
        let mut error = None;
        for h in handles {
            if let Err(e) = h.await {
                error = Some(format!("a stream's task failed: {e}"));
            }
        }
        self.live.ended();
        let duration = self.clock.now().saturating_sub(origin);
        let cpu_after = ProcessCpu::now();
        // Read while the streams (and so their decoders and FFmpeg's threads) are alive.
        let codec_threads_cpu = CodecThreadsCpu::now().since(&codec_before);
        let system = match (system_before, SystemCpuSnapshot::read().ok()) {
            (Some(a), Some(b)) => a.delta(&b),
            _ => Default::default(),
        };

        let streams: Vec<StreamReport> = ctxs
            .iter()
            .zip(&self.streams)
            .map(|(ctx, spec)| {
                let cfg = EngineConfig {
                    pacing: spec.pacing.unwrap_or(self.config.pacing),
                    ..(*self.config).clone()
                };
                let utilisation = utilisation(ctx, &ctxs, &cfg, duration);
                stream_report(ctx, spec, &cfg, utilisation)
            })
            .collect();
        let totals = totals(&streams);
        let latency_histograms = run_histograms(&ctxs);
        let read_cpu_ns: u64 = self.streams.iter().map(|s| s.storage.stats().cpu_ns).sum();
        let user = cpu_after.user.saturating_sub(cpu_before.user).as_secs_f64();
        let sys = cpu_after.sys.saturating_sub(cpu_before.sys).as_secs_f64();
        let gb = totals.bytes_read as f64 / 1e9;
        let per_gb = |s: f64| if gb > 0.0 { s / gb } else { 0.0 };
        // Softirq is system-wide: the network receive work for this client's reads is
        // done there and charged to no process, so the client's cost of a GB counts it.
        let softirq = system.softirq_s;
        let cpu = CpuReport {
            process_user_s: user,
            process_sys_s: sys,
            user_s_per_gb: per_gb(user),
            sys_s_per_gb: per_gb(sys),
            softirq_s_per_gb: per_gb(softirq),
            total_s_per_gb: per_gb(user + sys + softirq),
            stages: StageCpu {
                read_s: Duration::from_nanos(read_cpu_ns).as_secs_f64(),
                decode_s: (self.decode_cpu() + codec_threads_cpu).as_secs_f64(),
                output_s: self.output.as_ref().map_or(0.0, |o| o.cpu_time().as_secs_f64()),
            },
            system,
        };
        // The peak is the kernel's high-water mark, read once at the end: it misses no
        // moment, where sampling would.
        let process_memory = ProcessMemory::read().unwrap_or_default();
        let memory = MemoryReport {
            peak_rss_bytes: process_memory.peak_rss_bytes,
            rss_bytes: process_memory.rss_bytes,
            pool_bytes: streams.iter().map(|s| s.pool_buffers.bytes()).sum(),
        };
        let mut environment = probe::environment();
        environment.libraries = self.libraries.clone();
        let error = error.or_else(|| self.cancel.failure());
        let status = match (&error, self.cancel.is_cancelled()) {
            (Some(_), _) => RunStatus::Failed,
            (None, true) => RunStatus::Partial,
            (None, false) => RunStatus::Complete,
        };
        let error = error
            .or_else(|| self.cancel.is_cancelled().then(|| "stopped before the end (interrupted)".into()));
        Report {
            schema_version: SCHEMA_VERSION,
            status,
            error,
            playsim_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at_unix_s,
            duration_s: duration.as_secs_f64(),
            environment,
            settings: settings(&self.config, &self.streams),
            totals,
            cpu,
            memory,
            streams,
            origin_unix_ns,
            latency: Some(latency_histograms.percentiles()),
            latency_histograms: Some(latency_histograms),
            clients: Vec::new(),
            cluster: None,
        }
    }
}

impl Simulation {
    /// CPU time of the shared decode pool and of every pool some streams have to themselves.
    fn decode_cpu(&self) -> Duration {
        self.decode_executors().iter().map(|d| d.cpu_time()).sum()
    }

    /// The shared decode pool and every pool some streams have to themselves, each once.
    fn decode_executors(&self) -> Vec<Arc<dyn DecodeExecutor>> {
        let mut pools: Vec<&OwnDecodePool> = Vec::new();
        for pool in self.streams.iter().filter_map(|s| s.decode_pool.as_ref()) {
            if !pools.iter().any(|p| p.same_pool(pool)) {
                pools.push(pool);
            }
        }
        let mut executors: Vec<Arc<dyn DecodeExecutor>> =
            pools.iter().map(|p| Arc::clone(&p.executor)).collect();
        executors.push(Arc::clone(&self.decode));
        executors
    }
}

/// Answers [`LiveCounters::view`] while a simulation runs: each stream's counters and window
/// under its lock, each stage's CPU as the report counts it.
struct RunProbe {
    streams: Vec<Arc<StreamCtx>>,
    storages: Vec<Arc<dyn Storage>>,
    decoders: Vec<Arc<dyn DecodeExecutor>>,
    output: Option<Arc<dyn OutputExecutor>>,
    codec_before: CodecThreadsCpu,
    clock: Arc<dyn Clock>,
    origin: Duration,
}

impl crate::live::LiveProbe for RunProbe {
    fn view(&self) -> crate::LiveView {
        let mut latencies = [None, None, None];
        let streams = self.streams.iter().map(|s| s.live(&mut latencies)).collect();
        let p99 = |h: &Option<hdrhistogram::Histogram<u64>>| {
            h.as_ref().filter(|h| !h.is_empty()).map(|h| Duration::from_nanos(h.value_at_quantile(0.99)))
        };
        let read_cpu: u64 = self.storages.iter().map(|s| s.stats().cpu_ns).sum();
        let decode_cpu: Duration = self.decoders.iter().map(|d| d.cpu_time()).sum::<Duration>()
            + CodecThreadsCpu::now().since(&self.codec_before);
        let output_cpu = self.output.as_ref().map_or(Duration::ZERO, |o| o.cpu_time());
        crate::LiveView {
            elapsed: self.clock.now().saturating_sub(self.origin),
            streams,
            stages: vec![
                crate::LiveStage {
                    name: "read",
                    cpu: Duration::from_nanos(read_cpu),
                    p99: p99(&latencies[0]),
                },
                crate::LiveStage { name: "decode", cpu: decode_cpu, p99: p99(&latencies[1]) },
                crate::LiveStage { name: "output", cpu: output_cpu, p99: p99(&latencies[2]) },
            ],
            ended: false,
        }
    }
}

fn settings(cfg: &EngineConfig, streams: &[StreamSpec]) -> Settings {
    let info = streams.first().map(|s| s.storage.info()).unwrap_or_default();
    Settings {
        block_size: info.block_size as u64,
        direct: info.direct,
        cold: streams.iter().any(|s| s.cold.requested),
        ..report_settings(cfg)
    }
}

/// The report's settings section for `cfg` (storage fields left at their defaults).
pub fn report_settings(cfg: &EngineConfig) -> Settings {
    Settings {
        fps: cfg.pacing.to_string(),
        preroll: cfg.preroll,
        prefetch: cfg.prefetch,
        io_depth: cfg.io_depth,
        decode_threads: cfg.decode_threads,
        output_stage: cfg.output.name().to_owned(),
        output_threads: cfg.output_threads,
        no_drop: cfg.no_drop,
        loop_playback: cfg.loop_playback,
        frames: cfg.frames,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        verify: cfg.verify,
        codec_threads: cfg.codec_threads,
        max_buffer_bytes: cfg.max_buffer,
        // The engine plays the frames it is given in their order; a reordering front end
        // (the facade's `--order`) writes its own.
        order: "forward".to_owned(),
        ..Settings::default()
    }
}

/// How busy `ctx`'s stages were over the run's `wall` time: its reads over `--io-depth`, its
/// outputs over its output threads, and its decode pool's decodes (every stream's on that
/// pool) over the pool's threads.
fn utilisation(
    ctx: &StreamCtx,
    all: &[Arc<StreamCtx>],
    cfg: &EngineConfig,
    wall: Duration,
) -> StageUtilisation {
    let wall = wall.as_secs_f64();
    let share = |busy: Duration, servers: usize| {
        if wall > 0.0 && servers > 0 {
            (busy.as_secs_f64() / (servers as f64 * wall)).min(1.0)
        } else {
            0.0
        }
    };
    let pool = ctx.decode_pool();
    let pool_busy: Duration =
        all.iter().filter(|c| Arc::ptr_eq(c.decode_pool(), pool)).map(|c| c.lock().busy.decode).sum();
    let busy = ctx.lock().busy;
    StageUtilisation {
        storage: share(busy.read, cfg.io_depth as usize),
        decode: share(pool_busy, pool.capacity()),
        output: share(busy.output, cfg.output_threads as usize),
    }
}

fn stream_report(
    ctx: &StreamCtx,
    spec: &StreamSpec,
    cfg: &EngineConfig,
    utilisation: StageUtilisation,
) -> StreamReport {
    let st = ctx.lock();
    let info = ctx.source.info();
    let storage_info = ctx.storage.info();
    let storage_stats = ctx.storage.stats();
    let t0_ns = st.t0_ns.unwrap_or(0);
    let end_ns = st.end_ns.unwrap_or(t0_ns);
    // The playback span: to the end of the last frame's display interval when
    // paced, to the last presentation when not.
    let span_ns = match cfg.pacing {
        Pacing::Rate(rate) => rate.due_offset_ns(st.frames_due) + duration_ns(st.stall),
        Pacing::Max => end_ns.saturating_sub(t0_ns),
    };
    let span_s = span_ns as f64 / 1e9;
    let rate = |n: f64| if span_s > 0.0 { n / span_s } else { 0.0 };
    let n_due = usize::try_from(st.frames_due).unwrap_or(usize::MAX);
    let timeline = st
        .frames
        .iter()
        .take(n_due)
        .enumerate()
        .map(|(i, e)| {
            let idx = i as u64;
            let src_idx = idx % ctx.source.n_frames().max(1);
            FrameRecord {
                frame_idx: idx,
                frame_number: ctx.source.frame_number(src_idx),
                due_ns: e.due_ns.unwrap_or(0),
                read_start_ns: e.read_start_ns,
                read_done_ns: e.read_done_ns,
                decode_done_ns: e.decode_done_ns,
                output_done_ns: e.output_done_ns,
                presented_ns: e.presented_ns,
                cause: match e.verdict {
                    Verdict::Dropped(c) => Some(c),
                    _ => None,
                },
                bytes: e.bytes,
            }
        })
        .collect();
    let decoded = st.decoded_geometry;
    let (width, height) = spec.dimensions.or(decoded.map(|(w, h, _)| (w, h))).unwrap_or((0, 0));
    StreamReport {
        name: ctx.name.clone(),
        client: None,
        source: SourceReport {
            location: info.location,
            pattern: info.pattern,
            format: info.format,
            decoder: ctx.source.decoder().describe(),
            decode_mode: ctx.decode_mode().to_owned(),
            frame_rate: info.frame_rate,
            index: info.index,
            output_path: match (&cfg.output, st.decoded_format) {
                (OutputStage::V210, Some(format)) => crate::v210::path(format),
                _ => String::new(),
            },
            pixel_format: decoded.map(|(_, _, f)| f.to_owned()).unwrap_or_default(),
            width,
            height,
            first_frame: info.first_frame,
            last_frame: info.last_frame,
            n_frames: info.n_frames,
            gaps: info.gaps,
        },
        storage: StorageReport {
            transport: storage_info.transport,
            block_size: storage_info.block_size as u64,
            direct: storage_info.direct,
            options: storage_info.options.into_iter().collect(),
            cold: spec.cold.clone(),
            n_reads: storage_stats.n_reads,
            mount: storage_info.mount.map(MountReport::from),
            warnings: storage_info
                .warnings
                .into_iter()
                .map(|w| WarningReport { kind: w.kind, message: w.message })
                .collect(),
        },
        fps: cfg.pacing.to_string(),
        start_offset_s: spec.start_offset.as_secs_f64(),
        decode_pool_threads: spec.decode_pool.as_ref().map(OwnDecodePool::threads),
        presenter_priority: st.present_priority.map(|p| p.name().to_owned()),
        t0_ns,
        span_ns,
        frames_due: st.frames_due,
        presented: st.presented,
        dropped: st.drops,
        late_frames: st.late_frames,
        decode_skipped: st.skipped,
        read_skipped: st.read_skipped,
        output_skipped: st.output_skipped,
        early_drops: st.early_drops,
        gops_skipped: st.gops_skipped,
        bottleneck: utilisation.busiest().to_owned(),
        utilisation,
        bytes_read: st.bytes_read,
        fps_achieved: rate(st.presented as f64),
        mb_per_s: rate(st.bytes_read as f64 / 1e6),
        stall_ms: st.stall.as_secs_f64() * 1e3,
        latency: StageLatency {
            open: st.hist.open.percentiles(),
            read: st.hist.read.percentiles(),
            close: st.hist.close.percentiles(),
            decode: st.hist.decode.percentiles(),
            output: st.hist.output.percentiles(),
            slack: st.hist.slack.percentiles(),
            pacing_error: st.hist.pacing_error.percentiles(),
        },
        pool_buffers: pool_buffers(ctx, &st),
        unreadable: st.unreadable.clone(),
        timeline,
    }
}

/// Every stream's latency histograms merged, bucket by bucket: the run-wide figures, exact
/// (not averaged from the streams' percentiles).
fn run_histograms(ctxs: &[Arc<StreamCtx>]) -> LatencyHistograms {
    let mut all = LatencyHistograms::default();
    for ctx in ctxs {
        all.merge(&ctx.lock().hist.compact());
    }
    all
}

/// The buffers the stream's pools created, and their bytes.
fn pool_buffers(ctx: &StreamCtx, st: &StreamState) -> PoolBuffers {
    let largest_read = st.frames.iter().map(|e| e.bytes).max().unwrap_or(0);
    let geometry = st.decoded_geometry.map(|(w, h, _)| (w, h));
    let (encoded, decoded) = ctx.buffers_created();
    let created =
        PoolCounts { encoded: encoded as u64, decoded: decoded as u64, output: ctx.output_buffers_peak() };
    size_pools(created, largest_read, geometry, st.decoded_format, ctx.packs())
}

/// Buffers the stream's pools created, encoded and decoded, and how many of the encoded ones
/// the output side held at once at the most.
struct PoolCounts {
    encoded: u64,
    decoded: u64,
    output: u64,
}

/// Pools of `created` (encoded, decoded) buffers, each kind at the size of the stream's
/// largest frame of that kind (the pools keep their buffers, and a buffer grows to the largest
/// frame it held): a decoded buffer is a frame of the decoded format, an encoded one the larger
/// of the largest read and, with an output stage (`packs`), a v210 frame (the output is packed
/// into the encoded pool), in whole pages plus one page for the alignment (`IoBuf`). The
/// encoded buffers the output side held at its peak are counted as `output`, the rest as
/// `encoded`: the same buffers, so both at the encoded size, and the three add up to the pools.
fn size_pools(
    created: PoolCounts,
    largest_read: u64,
    geometry: Option<(u32, u32)>,
    format: Option<PixelFormat>,
    packs: bool,
) -> PoolBuffers {
    let output = created.output.min(created.encoded);
    let (encoded, decoded) = (created.encoded - output, created.decoded);
    let (width, height) = geometry.unwrap_or((0, 0));
    let v210_each = if packs { (crate::v210::stride(width) * height as usize) as u64 } else { 0 };
    let largest = largest_read.max(v210_each);
    let align = DIRECT_IO_ALIGN as u64;
    let encoded_each = if largest > 0 { largest.div_ceil(align) * align + align } else { 0 };
    let decoded_each = format.map_or(0, |f| f.frame_len(width, height) as u64);
    PoolBuffers {
        encoded,
        decoded,
        output,
        encoded_bytes: encoded * encoded_each,
        decoded_bytes: decoded * decoded_each,
        output_bytes: output * encoded_each,
    }
}

fn totals(streams: &[StreamReport]) -> Totals {
    let mut t = Totals::default();
    let mut span_s: f64 = 0.0;
    for s in streams {
        t.frames_due += s.frames_due;
        t.presented += s.presented;
        t.dropped += s.dropped;
        t.early_drops += s.early_drops;
        t.bytes_read += s.bytes_read;
        t.stall_ms += s.stall_ms;
        span_s = span_s.max(s.span_ns as f64 / 1e9);
    }
    t.bottleneck = Totals::limiting_stage(&t.dropped, streams).to_owned();
    if span_s > 0.0 {
        t.fps = t.presented as f64 / span_s;
        t.mb_per_s = t.bytes_read as f64 / 1e6 / span_s;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_are_sized_by_their_largest_frame() {
        // 4K DCI 10-bit DPX (35,391,488 bytes) decoded to rgb48le and packed to v210.
        // The v210 output shares the encoded pool: no pool of its own.
        let pools =
            size_pools(counts(8, 5, 0), 35_391_488, Some((4096, 2160)), Some(PixelFormat::Rgb48Le), true);
        assert_eq!((pools.encoded, pools.decoded, pools.output), (8, 5, 0));
        assert_eq!(pools.encoded_bytes, 8 * (8641 * 4096 + 4096), "8640.5 pages, rounded up, plus one");
        assert_eq!(pools.decoded_bytes, 5 * 4096 * 2160 * 6);
        assert_eq!(pools.output_bytes, 0);
        assert_eq!(pools.bytes(), pools.encoded_bytes + pools.decoded_bytes);
        // Frames smaller than their v210 output (8-bit video): the encoded buffers grow to it.
        let small =
            size_pools(counts(2, 1, 0), 1_000_000, Some((1920, 1080)), Some(PixelFormat::Rgb48Le), true);
        assert_eq!(
            small.encoded_bytes,
            2 * (5120 * 1080 + 4096),
            "a 1080p v210 frame (whole pages) plus one page"
        );
        // Nothing read or decoded (a run that failed at once, --no-decode): counts, no bytes.
        let empty = size_pools(counts(1, 1, 0), 0, None, None, false);
        assert_eq!((empty.encoded, empty.decoded, empty.bytes()), (1, 1, 0));
    }

    #[test]
    fn the_output_sides_buffers_are_counted_apart_and_the_bytes_still_add_up() {
        // 8 encoded buffers, 3 of which held packed frames at once at the peak.
        let all =
            size_pools(counts(8, 5, 0), 35_391_488, Some((4096, 2160)), Some(PixelFormat::Rgb48Le), true);
        let split =
            size_pools(counts(8, 5, 3), 35_391_488, Some((4096, 2160)), Some(PixelFormat::Rgb48Le), true);
        assert_eq!((split.encoded, split.output), (5, 3));
        assert_eq!(split.output_bytes, 3 * (8641 * 4096 + 4096));
        assert_eq!(split.bytes(), all.bytes());
    }

    fn counts(encoded: u64, decoded: u64, output: u64) -> PoolCounts {
        PoolCounts { encoded, decoded, output }
    }
}
