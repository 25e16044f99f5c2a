//! A real video file, read only through a scripted storage, played by the real engine
//! and decoded by FFmpeg: a slow server shows up as storage drops, not as decode time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{FrameRate, Pacing, Storage};
use playsim_engine::{EngineConfig, OutputStage, Simulation, StreamSpec};
use playsim_report::Report;
use playsim_storage::scripted::{ScriptedObject, ScriptedStorage};

/// Where the clip seems to be: nowhere on local disk, so every byte FFmpeg and the
/// engine get must come through the storage.
const EXPORT_PATH: &str = "/export/nowhere-on-disk/prores-422hq-tiny.mov";

fn clip_bytes() -> Arc<[u8]> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/video/prores-422hq-tiny.mov");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).into()
}

/// Opens the clip through `index_storage`, then plays its 12 frames at 23.976 fps from
/// `play_storage`, one read at a time, with no output stage.
async fn play(index_storage: ScriptedStorage, play_storage: ScriptedStorage) -> Report {
    let path = PathBuf::from(EXPORT_PATH);
    let source = playsim_ffmpeg::open(&path, Arc::new(index_storage), &Default::default()).await.unwrap();
    let config = EngineConfig {
        pacing: Pacing::Rate(FrameRate::new(24000, 1001).unwrap()),
        preroll: 1,
        prefetch: 4,
        io_depth: 1,
        decode_threads: 2,
        output: OutputStage::None,
        ..EngineConfig::default()
    };
    let storage: Arc<dyn Storage> = Arc::new(play_storage);
    Simulation::builder()
        .config(config)
        .stream(StreamSpec::new("stream 0", Arc::new(source), storage))
        .build()
        .unwrap()
        .run()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_storage_shows_as_storage_drops_not_decode_time() {
    let bytes = clip_bytes();
    let index = ScriptedStorage::new(ScriptedObject::with_content(Arc::clone(&bytes), Duration::ZERO));
    // 200 ms a read, one at a time: after the first window's 4 frames (read, in whatever
    // order their tasks start, before t0), each packet arrives 200 ms after the one before,
    // while frames fall due every 41.7 ms: all of them miss, for storage.
    let slow = ScriptedStorage::new(ScriptedObject::with_content(bytes, Duration::from_millis(200)));
    let report = play(index.clone(), slow.clone()).await;
    let s = &report.streams[0];
    assert_eq!(s.source.decode_mode, "independent");
    assert!(s.source.index.as_deref().unwrap_or("").contains("container's tables"), "{:?}", s.source.index);
    assert_eq!((s.dropped.decode, s.dropped.output, s.dropped.unreadable), (0, 0, 0), "{:?}", s.dropped);
    // On a quiet machine 3 frames make it (frame 0, then those due after a 200 ms read that
    // the reader could still start in time: about one in five); the schedule is on the wall
    // clock, and on a loaded one (CI runs 2 cores flat out) a later start lets a frame or two
    // more through. Most frames must still miss, and only for storage.
    assert!(s.dropped.storage >= 6, "{:?}", s.dropped);
    assert_eq!(s.presented + s.dropped.storage, 12);
    // The reads took the storage's time; the decodes of the frames that were read did not.
    assert!(s.latency.read.p50_ms >= 200.0, "{:?}", s.latency.read);
    assert!(s.latency.decode.max_ms < 200.0, "{:?}", s.latency.decode);
    // The demuxer read the container's tables through the index storage; the engine
    // read the packets through the stream's storage, byte for byte what it reports.
    use playsim_core::Storage as _;
    assert!(index.stats().n_reads > 0);
    assert_eq!(slow.stats().bytes, s.bytes_read);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_clip_from_a_fast_storage_plays_clean() {
    let bytes = clip_bytes();
    let fast = ScriptedStorage::new(ScriptedObject::with_content(bytes, Duration::from_millis(2)));
    let report = play(fast.clone(), fast).await;
    let s = &report.streams[0];
    assert_eq!((s.presented, s.dropped.total()), (12, 0), "{:?} {:?}", s.dropped, s.unreadable);
    assert_eq!(s.source.pixel_format, "yuv422p10le");
    assert_eq!((s.source.width, s.source.height), (256, 144));
    // The file is opened once for the stream, as a player opens it, and closed at its end:
    // not once per packet.
    assert_eq!((s.latency.open.count, s.latency.close.count), (1, 1), "{:?}", s.latency);
    assert_eq!(s.latency.read.count, 12);
}
