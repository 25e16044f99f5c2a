//! The engine's scheduler hot path: what a frame costs the engine itself, with storage and
//! decode that do no work.
//!
//! Each iteration plays a run of [`N_FRAMES`] frames at `--fps max` through the whole engine:
//! admission into the window, the frame task, the storage call, the decode pool's hand-off
//! (in `null_decode`), the drop rule and the timeline. Storage answers from memory at once and
//! the decoder writes a 1×1 picture, so the time per frame is the engine's own cost. Issue 8's
//! budget is 1% of a core per stream at 60 fps: 167 µs a frame.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use playsim::core::{
    BytesOnly, DecodeError, DecodedFrame, Decoder, FrameExtent, IoBuf, PixelFormat, Source, SourceInfo,
    Storage, StorageError, StorageFile, StorageInfo, StorageStats,
};
use playsim::engine::{StreamSpec, TokioClock};
use playsim::{EngineConfig, OutputStage, Pacing, Simulation};

/// Frames per measured run: enough that building the run and its report is a small share.
const N_FRAMES: u64 = 2000;
/// Bytes of each frame: small, so that copying them is not what is measured.
const FRAME_BYTES: u64 = 4096;

/// Every path is a file of [`FRAME_BYTES`] zeros, served at once.
struct MemoryStorage;

struct MemoryFile;

#[async_trait::async_trait]
impl Storage for MemoryStorage {
    fn info(&self) -> StorageInfo {
        StorageInfo { transport: "memory".into(), ..StorageInfo::default() }
    }

    async fn open(&self, _path: &Path) -> Result<Box<dyn StorageFile>, StorageError> {
        Ok(Box::new(MemoryFile))
    }

    fn stats(&self) -> StorageStats {
        StorageStats::default()
    }
}

#[async_trait::async_trait]
impl StorageFile for MemoryFile {
    fn size(&self) -> u64 {
        FRAME_BYTES
    }

    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError> {
        let n = FRAME_BYTES.saturating_sub(offset).min(len as u64) as usize;
        buf.prepare(n);
        Ok(n)
    }

    async fn close(self: Box<Self>) -> Result<(), StorageError> {
        Ok(())
    }
}

/// A decoder that decodes: a 1×1 picture, on the decode pool like a real one.
struct NullDecoder;

impl Decoder for NullDecoder {
    fn name(&self) -> &'static str {
        "null"
    }

    fn decode(&self, _encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError> {
        out.reset(1, 1, PixelFormat::Rgb48Le);
        Ok(())
    }
}

struct NullSource {
    decodes: bool,
}

impl Source for NullSource {
    fn info(&self) -> SourceInfo {
        SourceInfo {
            location: "memory".into(),
            pattern: "frame.%07d.raw".into(),
            format: "raw".into(),
            first_frame: 0,
            last_frame: N_FRAMES - 1,
            n_frames: N_FRAMES,
            ..SourceInfo::default()
        }
    }

    fn n_frames(&self) -> u64 {
        N_FRAMES
    }

    fn frame_number(&self, idx: u64) -> u64 {
        idx
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        FrameExtent::File { path: PathBuf::from(format!("/memory/frame.{idx:07}.raw")) }
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        if self.decodes {
            Arc::new(NullDecoder)
        } else {
            Arc::new(BytesOnly)
        }
    }
}

/// One run of [`N_FRAMES`] frames at `--fps max`; the frames presented.
async fn play(decodes: bool) -> u64 {
    let config = EngineConfig {
        pacing: Pacing::Max,
        prefetch: 8,
        io_depth: 4,
        decode_threads: 1,
        output: OutputStage::None,
        ..EngineConfig::default()
    };
    let simulation = Simulation::builder()
        .config(config)
        .clock(Arc::new(TokioClock::new()))
        .stream(StreamSpec::new("bench", Arc::new(NullSource { decodes }), Arc::new(MemoryStorage)))
        .build()
        .expect("the bench's settings are valid");
    simulation.run().await.totals.presented
}

fn engine_hot_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    for decodes in [false, true] {
        assert_eq!(runtime.block_on(play(decodes)), N_FRAMES, "every frame is presented");
    }

    // `cargo xtask bench --short` (CI) measures for less time.
    let measure = if std::env::var_os("PLAYSIM_BENCH_SHORT").is_some() { 2 } else { 6 };
    let mut group = c.benchmark_group("engine_hot_path");
    group.sample_size(10).measurement_time(Duration::from_secs(measure)).warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(N_FRAMES));
    group.bench_function("read_only", |b| b.iter(|| runtime.block_on(play(black_box(false)))));
    group.bench_function("null_decode", |b| b.iter(|| runtime.block_on(play(black_box(true)))));
    group.finish();
}

criterion_group!(benches, engine_hot_path);
criterion_main!(benches);
