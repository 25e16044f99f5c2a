//! A hand-built report shared by the tests of the renderers.

use std::collections::BTreeMap;

use crate::model::merge::{ClientInput, ClientSnapshot};
use crate::model::*;

/// 4096x2160 10-bit DPX: 4 bytes a pixel plus an 8 KiB header.
pub const FRAME_BYTES: u64 = 4096 * 2160 * 4 + 8192;

/// One encoded buffer of [`FRAME_BYTES`]: whole 4096-byte pages plus one for the alignment.
const POOLED_ENCODED_BYTES: u64 = FRAME_BYTES.div_ceil(4096) * 4096 + 4096;

/// One stream of 240 4K DPX frames over NFS at 24 fps, with 6 drops.
pub fn sample_report() -> Report {
    let frames_read = 238;
    let bytes_read = frames_read * FRAME_BYTES;
    let latency = StageLatency {
        open: p(238, [0.081, 0.12, 0.25, 0.9, 1.2, 1.5]),
        read: p(238, [12.345, 20.1, 30.0, 55.0, 80.0, 88.1]),
        close: p(238, [0.004, 0.006, 0.011, 0.05, 0.061, 0.061]),
        decode: p(237, [9.5, 14.2, 17.9, 25.31, 31.0, 31.0]),
        output: p(236, [2.1, 2.4, 2.9, 3.3, 3.4, 3.4]),
        slack: p(234, [-12.0, 21.3, 35.7, 39.4, 40.1, 41.0]),
        pacing_error: p(234, [-0.05, 0.012, 0.098, 0.41, 1.75, 2.3]),
    };
    let dropped = Drops { storage: 3, decode: 1, output: 0, unreadable: 2 };
    let stream = StreamReport {
        name: "stream 0".into(),
        client: None,
        source: SourceReport {
            location: "/mnt/nfs/shot".into(),
            pattern: "shot.%07d.dpx".into(),
            format: "dpx".into(),
            decoder: "dpx".into(),
            decode_mode: "independent".into(),
            frame_rate: None,
            index: None,
            output_path: "v210 from rgb48le: BT.709 RGB to YCbCr 4:2:2 in fixed point".into(),
            pixel_format: "rgb48le".into(),
            width: 4096,
            height: 2160,
            first_frame: 1001,
            last_frame: 1240,
            n_frames: 240,
            gaps: vec![1100],
        },
        storage: StorageReport {
            transport: "nfs".into(),
            block_size: 1 << 20,
            direct: true,
            options: BTreeMap::from([("server".to_owned(), "10.0.0.5:/export".to_owned())]),
            cold: ColdCache { requested: true, files_dropped: 239, message: None },
            n_reads: frames_read * 34,
            mount: None,
            warnings: Vec::new(),
        },
        fps: "24".into(),
        start_offset_s: 0.0,
        decode_pool_threads: None,
        presenter_priority: None,
        t0_ns: 250_000_000,
        span_ns: 10_000_000_000,
        frames_due: 240,
        presented: 234,
        dropped,
        late_frames: 4,
        decode_skipped: 0,
        read_skipped: 0,
        output_skipped: 0,
        early_drops: Drops { storage: 1, decode: 1, output: 0, unreadable: 0 },
        gops_skipped: 0,
        utilisation: StageUtilisation { storage: 0.42, decode: 0.91, output: 0.12 },
        bottleneck: "decode".into(),
        bytes_read,
        fps_achieved: 23.4,
        mb_per_s: bytes_read as f64 / 1e6 / 10.0,
        stall_ms: 0.0,
        latency,
        pool_buffers: PoolBuffers {
            encoded: 8,
            decoded: 2,
            output: 3,
            encoded_bytes: 8 * POOLED_ENCODED_BYTES,
            decoded_bytes: 2 * 4096 * 2160 * 6,
            output_bytes: 3 * 11_008 * 2160,
        },
        unreadable: vec![
            UnreadableFrame {
                frame_idx: 99,
                frame_number: 1100,
                path: "/mnt/nfs/shot/shot.0001100.dpx".into(),
                message: "frame 1100: /mnt/nfs/shot/shot.0001100.dpx: no such file".into(),
            },
            UnreadableFrame {
                frame_idx: 150,
                frame_number: 1151,
                path: "/mnt/nfs/shot/shot.0001151.dpx".into(),
                message: "frame 1151: /mnt/nfs/shot/shot.0001151.dpx: bad magic 0x00000000 at offset 0"
                    .into(),
            },
        ],
        timeline: vec![
            FrameRecord {
                frame_idx: 0,
                frame_number: 1001,
                due_ns: 250_000_000,
                read_start_ns: Some(1_000_000),
                read_done_ns: Some(21_000_000),
                decode_done_ns: Some(35_000_000),
                output_done_ns: Some(38_000_000),
                presented_ns: Some(250_010_000),
                cause: None,
                bytes: FRAME_BYTES,
            },
            FrameRecord {
                frame_idx: 1,
                frame_number: 1002,
                due_ns: 291_666_666,
                read_start_ns: Some(2_000_000),
                read_done_ns: None,
                decode_done_ns: None,
                output_done_ns: None,
                presented_ns: None,
                cause: Some(DropCauseName::Storage),
                bytes: FRAME_BYTES / 2,
            },
        ],
    };
    Report {
        schema_version: SCHEMA_VERSION,
        status: RunStatus::Complete,
        error: None,
        playsim_version: "0.1.0".into(),
        started_at_unix_s: 1_767_225_600,
        duration_s: 10.5,
        environment: Environment {
            hostname: "render7".into(),
            kernel: "Linux 6.1.0-18-amd64".into(),
            cpus: 16,
            libraries: BTreeMap::from([("ffmpeg".to_owned(), "7.1".to_owned())]),
        },
        settings: Settings {
            fps: "24".into(),
            preroll: 4,
            prefetch: 8,
            io_depth: 4,
            decode_threads: 8,
            output_stage: "v210".into(),
            output_threads: 1,
            block_size: 1 << 20,
            direct: true,
            cold: true,
            no_drop: false,
            loop_playback: false,
            frames: None,
            duration_s: None,
            max_drops: Some(10),
            verify: false,
            codec_threads: 1,
            order: "forward".into(),
            seed: None,
            range: None,
            max_buffer_bytes: 2 << 30,
        },
        totals: Totals {
            frames_due: 240,
            presented: 234,
            dropped,
            bytes_read,
            fps: 23.4,
            mb_per_s: bytes_read as f64 / 1e6 / 10.0,
            stall_ms: 0.0,
            early_drops: Drops { storage: 1, decode: 1, output: 0, unreadable: 0 },
            bottleneck: "storage".into(),
        },
        cpu: CpuReport {
            process_user_s: 41.25,
            process_sys_s: 6.5,
            user_s_per_gb: 41.25 / (bytes_read as f64 / 1e9),
            sys_s_per_gb: 6.5 / (bytes_read as f64 / 1e9),
            softirq_s_per_gb: 2.75 / (bytes_read as f64 / 1e9),
            total_s_per_gb: (41.25 + 6.5 + 2.75) / (bytes_read as f64 / 1e9),
            stages: StageCpu { read_s: 5.75, decode_s: 38.0, output_s: 3.125 },
            system: SystemCpu {
                user_s: 42.0,
                nice_s: 0.0,
                system_s: 9.25,
                idle_s: 115.0,
                iowait_s: 1.5,
                irq_s: 0.0,
                softirq_s: 2.75,
                steal_s: 0.0,
            },
        },
        memory: MemoryReport {
            peak_rss_bytes: 784_793 * 1024,
            rss_bytes: 512_044 * 1024,
            pool_bytes: 8 * POOLED_ENCODED_BYTES + 2 * 4096 * 2160 * 6 + 3 * 11_008 * 2160,
        },
        streams: vec![stream],
        origin_unix_ns: 1_767_225_600_000_000_000,
        latency: None,
        latency_histograms: None,
        clients: Vec::new(),
        cluster: None,
    }
}

/// Percentiles from `[min, p50, p90, p99, p99.9, max]`; the mean is the median.
fn p(count: u64, v: [f64; 6]) -> Percentiles {
    Percentiles {
        count,
        min_ms: v[0],
        mean_ms: v[1],
        p50_ms: v[1],
        p90_ms: v[2],
        p99_ms: v[3],
        p999_ms: v[4],
        max_ms: v[5],
    }
}

/// One stream of a synthetic client: `presented` frames and `dropped` drops, from `t0_ns` for
/// `span_ns`, `bytes_each` a frame read. Its timeline has frame 0, presented `present_late_ns`
/// after it fell due, and frame 1, dropped for storage when anything dropped.
pub struct SyntheticStream {
    pub t0_ns: u64,
    pub span_ns: u64,
    pub presented: u64,
    pub dropped: Drops,
    pub early_drops: Drops,
    pub bytes_each: u64,
    pub transport: &'static str,
    pub present_late_ns: u64,
}

impl Default for SyntheticStream {
    fn default() -> SyntheticStream {
        SyntheticStream {
            t0_ns: 100_000_000,
            span_ns: 10_000_000_000,
            presented: 240,
            dropped: Drops::default(),
            early_drops: Drops::default(),
            bytes_each: 1_000_000,
            transport: "sim",
            present_late_ns: 0,
        }
    }
}

/// A client's report, as the engine would fill it, from its streams: totals over its own
/// span, CPU per GB over its bytes, and latency histograms of the `read_ns` and `slack_ns`
/// samples (every other stage empty).
pub fn client_report(
    origin_unix_ns: u64,
    streams: &[SyntheticStream],
    read_ns: &[u64],
    slack_ns: &[i64],
) -> Report {
    let streams: Vec<StreamReport> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let frames_due = s.presented + s.dropped.total();
            let bytes_read = frames_due * s.bytes_each;
            let span_s = s.span_ns as f64 / 1e9;
            let frame = |idx: u64, presented: bool| FrameRecord {
                frame_idx: idx,
                frame_number: idx,
                due_ns: s.t0_ns + idx * 41_666_666,
                read_start_ns: Some(s.t0_ns.saturating_sub(50_000_000) + idx * 41_666_666),
                read_done_ns: presented.then_some(s.t0_ns.saturating_sub(10_000_000) + idx * 41_666_666),
                decode_done_ns: None,
                output_done_ns: None,
                presented_ns: presented.then_some(s.t0_ns + idx * 41_666_666 + s.present_late_ns),
                cause: (!presented).then_some(DropCauseName::Storage),
                bytes: s.bytes_each,
            };
            let mut timeline = vec![frame(0, true)];
            if s.dropped.total() > 0 {
                timeline.push(frame(1, false));
            }
            StreamReport {
                name: format!("stream {i}"),
                source: SourceReport {
                    location: format!("/media/{}/shot{i}", s.transport),
                    pattern: "shot.%07d.dpx".into(),
                    format: "dpx".into(),
                    ..SourceReport::default()
                },
                storage: StorageReport { transport: s.transport.into(), ..StorageReport::default() },
                fps: "24".into(),
                t0_ns: s.t0_ns,
                span_ns: s.span_ns,
                frames_due,
                presented: s.presented,
                dropped: s.dropped,
                early_drops: s.early_drops,
                bytes_read,
                fps_achieved: s.presented as f64 / span_s,
                mb_per_s: bytes_read as f64 / 1e6 / span_s,
                stall_ms: 1.5,
                timeline,
                ..StreamReport::default()
            }
        })
        .collect();
    let mut totals = Totals::default();
    let mut span_s: f64 = 0.0;
    for s in &streams {
        totals.frames_due += s.frames_due;
        totals.presented += s.presented;
        totals.bytes_read += s.bytes_read;
        totals.stall_ms += s.stall_ms;
        for (into, from) in [(&mut totals.dropped, &s.dropped), (&mut totals.early_drops, &s.early_drops)] {
            into.storage += from.storage;
            into.decode += from.decode;
            into.output += from.output;
            into.unreadable += from.unreadable;
        }
        span_s = span_s.max(s.span_ns as f64 / 1e9);
    }
    totals.fps = totals.presented as f64 / span_s;
    totals.mb_per_s = totals.bytes_read as f64 / 1e6 / span_s;
    totals.bottleneck = Totals::limiting_stage(&totals.dropped, &streams).to_owned();
    let gb = totals.bytes_read as f64 / 1e9;
    let mut read = hdrhistogram::Histogram::<u64>::new(crate::HISTOGRAM_SIGFIG).expect("3 digits");
    for &ns in read_ns {
        read.record(ns).expect("a small value");
    }
    let mut slack = crate::SignedHistogram::new();
    for &ns in slack_ns {
        slack.record(ns);
    }
    let latency_histograms = LatencyHistograms {
        read: crate::model::histograms::buckets(&read),
        slack: slack.buckets(),
        ..LatencyHistograms::default()
    };
    Report {
        schema_version: SCHEMA_VERSION,
        playsim_version: "0.1.0".into(),
        started_at_unix_s: origin_unix_ns / 1_000_000_000,
        origin_unix_ns,
        duration_s: span_s + 0.5,
        cpu: CpuReport {
            process_user_s: 2.0,
            process_sys_s: 1.0,
            user_s_per_gb: 2.0 / gb,
            sys_s_per_gb: 1.0 / gb,
            softirq_s_per_gb: 0.5 / gb,
            total_s_per_gb: 3.5 / gb,
            stages: StageCpu { read_s: 0.25, decode_s: 1.5, output_s: 0.5 },
            system: SystemCpu { softirq_s: 0.5, user_s: 4.0, ..SystemCpu::default() },
        },
        memory: MemoryReport { peak_rss_bytes: 100 << 20, rss_bytes: 80 << 20, pool_bytes: 10 << 20 },
        latency: Some(latency_histograms.percentiles()),
        latency_histograms: Some(latency_histograms),
        settings: sample_report().settings,
        totals,
        streams,
        ..Report::default()
    }
}

/// Rank 0's origin, ns since the epoch.
pub const T: u64 = 1_800_000_000_000_000_000;
pub const S: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;

pub fn read_samples(rank: u64) -> Vec<u64> {
    (1..=500 + rank * 300).map(|i| i * (997 + rank * 1_013)).collect()
}

pub fn slack_samples(rank: u64) -> Vec<i64> {
    (0..400_i64).map(|i| (i - 40 * rank as i64) * 51_234).collect()
}

pub fn client_input(rank: u32, host: &str, report: Report, clock_offset_ns: i64) -> ClientInput {
    ClientInput {
        rank,
        host: host.into(),
        report: Some(report),
        clock_offset_ns,
        clock_rtt_ns: 40_000,
        report_path: Some(format!("run.client-{rank}.json")),
        ..ClientInput::default()
    }
}

/// Three clients. Client 0 (rank 0's clock) starts at T; client 1's clock is 0.5 s ahead
/// and its run starts 2 s after T in rank 0's time; client 2's clock is 0.25 s behind and
/// its run starts 1 s after T.
pub fn three_clients() -> Vec<ClientInput> {
    let c0 = client_report(
        T,
        &[
            SyntheticStream::default(),
            SyntheticStream {
                presented: 230,
                dropped: Drops { storage: 10, ..Drops::default() },
                early_drops: Drops { storage: 4, ..Drops::default() },
                ..SyntheticStream::default()
            },
        ],
        &read_samples(0),
        &slack_samples(0),
    );
    let c1 = client_report(
        T + 2 * S + 500 * MS,
        &[SyntheticStream {
            t0_ns: 200 * MS,
            presented: 200,
            dropped: Drops { decode: 30, output: 10, ..Drops::default() },
            early_drops: Drops { decode: 7, ..Drops::default() },
            bytes_each: 2_000_000,
            transport: "nfs",
            ..SyntheticStream::default()
        }],
        &read_samples(1),
        &slack_samples(1),
    );
    let c2 = client_report(
        T + S - 250 * MS,
        &[SyntheticStream {
            span_ns: 12 * S,
            presented: 288,
            dropped: Drops { unreadable: 2, ..Drops::default() },
            transport: "local",
            ..SyntheticStream::default()
        }],
        &read_samples(2),
        &slack_samples(2),
    );
    // Given out of order: the merge orders by rank.
    vec![
        client_input(2, "hostc", c2, -250 * MS as i64),
        client_input(0, "hosta", c0, 0),
        client_input(1, "hostb", c1, 500 * MS as i64),
    ]
}

/// A client lost 4.6 s after the start, known by its last snapshot.
pub fn lost_client() -> ClientInput {
    ClientInput {
        rank: 3,
        host: "hostd".into(),
        report: None,
        snapshot: Some(ClientSnapshot {
            origin_unix_ns: T + 500 * MS,
            t0_ns: Some(100 * MS),
            elapsed_ns: 4_100 * MS,
            streams: 2,
            presented: 96,
            dropped: Drops { storage: 3, ..Drops::default() },
            bytes_read: 99_000_000,
            cpu_s: 1.25,
            peak_rss_bytes: 300 << 20,
            transport: "sim".into(),
            status: RunStatus::Partial,
        }),
        lost: true,
        last_heard_unix_ns: Some(T + 4_600 * MS),
        ..ClientInput::default()
    }
}

/// The merged report of [`three_clients`] and [`lost_client`].
pub fn merged_sample() -> Report {
    let mut clients = three_clients();
    clients.push(lost_client());
    crate::model::merge::merge(clients, "openmpi 4.1.4")
}
