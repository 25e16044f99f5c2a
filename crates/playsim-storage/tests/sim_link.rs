//! The simulated link under tokio's paused clock, where every time is exact: bandwidth
//! alone and shared, late arrivals, latency and seeded jitter, unreadable objects.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{Clock, IoBuf, SleepFuture, Storage, StorageErrorKind};
use playsim_storage::sim::{JitterDist, LinkParams, SimLink, SimObject, SimStorage};

/// tokio's clock, which `start_paused` tests advance only when every task waits.
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }

    fn sleep_until(&self, deadline: Duration) -> SleepFuture {
        Box::pin(tokio::time::sleep_until(self.0 + deadline))
    }
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(TokioClock(tokio::time::Instant::now()))
}

const MB: u64 = 1_000_000;
/// 1 GB/s: 8 Gbit/s.
const GB_PER_S: u64 = 8_000_000_000;

fn link_of(bits_per_s: Option<u64>) -> LinkParams {
    LinkParams { bits_per_s, ..LinkParams::default() }
}

fn path(frame: u64) -> PathBuf {
    PathBuf::from(format!("sim://lan/frame.{frame:07}.raw"))
}

/// `n` objects of `size` bytes with no content, read in 1 MB blocks.
fn frames(n: u64, size: u64) -> SimStorage {
    SimStorage::new((0..n).map(|f| (path(f), SimObject::sized(size))).collect(), 1 << 20)
}

/// Reads frames 0..n one after another; gives the clock's time after each read.
async fn play(storage: &SimStorage, clock: &Arc<dyn Clock>, n: u64) -> Vec<Duration> {
    let mut buf = IoBuf::default();
    let mut times = Vec::new();
    for f in 0..n {
        let file = storage.open(&path(f)).await.unwrap();
        let size = file.size() as usize;
        assert_eq!(file.read_at(0, size, &mut buf).await.unwrap(), size);
        file.close().await.unwrap();
        times.push(clock.now());
    }
    times
}

/// MB/s of `bytes` moved in `elapsed`.
fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / MB as f64 / elapsed.as_secs_f64()
}

#[tokio::test(start_paused = true)]
async fn one_stream_moves_at_the_links_bandwidth() {
    let clock = clock();
    let link = SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap();
    let storage = frames(10, 100 * MB).reader(link);
    let times = play(&storage, &clock, 10).await;
    // 100 MB at 1 GB/s is 100 ms a frame, exactly.
    let want: Vec<Duration> = (1..=10).map(|i| Duration::from_millis(100 * i)).collect();
    assert_eq!(times, want);
    assert_eq!(mb_per_s(storage.stats().bytes, times[9]), 1000.0);
    // 100 MB in 1 MiB blocks is 96 requests a frame.
    assert_eq!(storage.stats().n_reads, 10 * 96);
    assert_eq!(storage.stats().bytes, 1000 * MB);
}

#[tokio::test(start_paused = true)]
async fn two_streams_on_one_link_each_get_half() {
    let clock = clock();
    let objects = frames(10, 100 * MB);
    let a = objects.reader(SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap());
    let b = objects.reader(SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap());
    let (ta, tb) = tokio::join!(play(&a, &clock, 10), play(&b, &clock, 10));
    let want: Vec<Duration> = (1..=10).map(|i| Duration::from_millis(200 * i)).collect();
    assert_eq!((&ta, &tb), (&want, &want));
    assert_eq!(mb_per_s(a.stats().bytes, ta[9]), 500.0);
    assert_eq!(mb_per_s(b.stats().bytes, tb[9]), 500.0);
}

#[tokio::test(start_paused = true)]
async fn streams_on_different_links_each_get_the_full_bandwidth() {
    let clock = clock();
    let objects = frames(10, 100 * MB);
    let a = objects.reader(SimLink::shared("a", link_of(Some(GB_PER_S)), &clock).unwrap());
    let b = objects.reader(SimLink::shared("b", link_of(Some(GB_PER_S)), &clock).unwrap());
    // A link of one stream's own is not shared either.
    let c = objects.reader(SimLink::new("", link_of(Some(GB_PER_S)), Arc::clone(&clock)));
    let (ta, tb, tc) = tokio::join!(play(&a, &clock, 10), play(&b, &clock, 10), play(&c, &clock, 10));
    for times in [ta, tb, tc] {
        assert_eq!(times[9], Duration::from_secs(1));
    }
}

#[tokio::test(start_paused = true)]
async fn a_streams_reads_cross_in_turn_and_streams_share() {
    let clock = clock();
    let objects = frames(4, 100 * MB);
    let link = SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap();
    let (a, b) = (objects.reader(Arc::clone(&link)), objects.reader(link));
    let read = |storage: &SimStorage, frame: u64| {
        let (storage, clock) = (storage.clone(), Arc::clone(&clock));
        async move {
            let file = storage.open(&path(frame)).await.unwrap();
            file.read_at(0, 100 * MB as usize, &mut IoBuf::default()).await.unwrap();
            clock.now()
        }
    };
    // A asks for three frames at once (an I/O depth of 3), B for one: A's first and B's
    // share the link (200 ms), then A's others cross alone, one after the other.
    let (a1, a2, a3, b1) = tokio::join!(read(&a, 0), read(&a, 1), read(&a, 2), read(&b, 3));
    let ms = Duration::from_millis;
    assert_eq!((a1, a2, a3, b1), (ms(200), ms(300), ms(400), ms(200)));
}

#[tokio::test(start_paused = true)]
async fn a_late_arrival_shares_from_when_it_arrives() {
    let clock = clock();
    let objects = frames(2, 100 * MB);
    let link = SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap();
    let (a, b) = (objects.reader(Arc::clone(&link)), objects.reader(link));
    let read = |storage: SimStorage, frame: u64, start_ms: u64| {
        let clock = Arc::clone(&clock);
        async move {
            clock.sleep_until(Duration::from_millis(start_ms)).await;
            let file = storage.open(&path(frame)).await.unwrap();
            file.read_at(0, 100 * MB as usize, &mut IoBuf::default()).await.unwrap();
            clock.now()
        }
    };
    // A alone for 50 ms (50 MB); both at 500 MB/s until A's other 50 MB are over (100 ms
    // later); B's last 50 MB alone.
    let (ta, tb) = tokio::join!(read(a, 0, 0), read(b, 1, 50));
    assert_eq!((ta, tb), (Duration::from_millis(150), Duration::from_millis(200)));
}

#[tokio::test(start_paused = true)]
async fn a_read_given_up_on_still_occupies_the_link() {
    let clock = clock();
    let objects = frames(2, 100 * MB);
    let link = SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap();
    let (a, b) = (objects.reader(Arc::clone(&link)), objects.reader(link));
    let file = a.open(&path(0)).await.unwrap();
    let mut buf = IoBuf::default();
    let given_up =
        tokio::time::timeout(Duration::from_millis(10), file.read_at(0, 100 * MB as usize, &mut buf));
    assert!(given_up.await.is_err());
    clock.sleep_until(Duration::from_millis(20)).await;
    // A's transfer goes on: 20 MB alone, then 80 MB shared with B at 500 MB/s (160 ms),
    // then B's last 20 MB alone.
    let file = b.open(&path(1)).await.unwrap();
    file.read_at(0, 100 * MB as usize, &mut buf).await.unwrap();
    assert_eq!(clock.now(), Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn bandwidth_and_latency_add_up_to_the_nanosecond() {
    let clock = clock();
    let params = LinkParams {
        bits_per_s: Some(100_000_000_000),
        latency: Duration::from_micros(300),
        ..LinkParams::default()
    };
    let link = SimLink::shared("lan", params, &clock).unwrap();
    // An 8K DCI 10-bit DPX frame's pixels at 100 Gbit/s: 11,324,620.8 ns, rounded up, then 300 µs.
    let one = Duration::from_nanos(11_324_621 + 300_000);
    let done = link.request(0, 141_557_760, 0).await;
    assert_eq!(done, one);
    // tokio's timer wakes on whole milliseconds; the link's own times stay exact.
    assert_eq!(clock.now(), Duration::from_millis(12));
    // Two streams share the link; one stream's requests cross one after the other.
    let (a, b) = tokio::join!(link.request(1, 141_557_760, 1), link.request(2, 141_557_760, 2));
    assert_eq!((a, b), (Duration::from_millis(12) + one * 2 - params.latency, a));
    let start = clock.now();
    let (a, b) = tokio::join!(link.request(1, 141_557_760, 3), link.request(1, 141_557_760, 4));
    assert_eq!((a, b), (start + one, start + one * 2 - params.latency));
}

/// The delay of each of 200 requests over a link with no bandwidth limit, one after another.
async fn delays(dist: JitterDist, seed: u64) -> Vec<Duration> {
    let clock = clock();
    let params = LinkParams {
        bits_per_s: None,
        latency: Duration::from_micros(300),
        jitter: Duration::from_millis(1),
        dist,
        seed,
    };
    let link = SimLink::new("", params, Arc::clone(&clock));
    let mut delays = Vec::new();
    for key in 0..200 {
        let start = clock.now();
        delays.push(link.request(0, 1000, key).await - start);
    }
    delays
}

#[tokio::test(start_paused = true)]
async fn latency_and_jitter_are_repeatable_with_a_seed() {
    for dist in [JitterDist::Exp, JitterDist::Uniform] {
        let first = delays(dist, 42).await;
        assert_eq!(first, delays(dist, 42).await, "{dist:?}");
        assert_ne!(first, delays(dist, 43).await, "{dist:?}");
        assert!(first.iter().all(|d| *d >= Duration::from_micros(300)), "{dist:?}: {first:?}");
        let distinct: std::collections::HashSet<_> = first.iter().collect();
        assert!(distinct.len() > 150, "{dist:?}: jitter varies from request to request");
    }
    let uniform = delays(JitterDist::Uniform, 42).await;
    assert!(uniform.iter().all(|d| *d <= Duration::from_micros(1300)), "{uniform:?}");
    // An exponential tail passes the uniform's bound now and then.
    let exp = delays(JitterDist::Exp, 42).await;
    assert!(exp.iter().any(|d| *d > Duration::from_micros(1300)), "{exp:?}");
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_object_names_its_frame_and_path_after_crossing_the_link() {
    let clock = clock();
    let objects = HashMap::from([(
        path(9),
        SimObject::sized(100 * MB).unreadable("frame 9 is corrupt (corrupt_every=10)"),
    )]);
    let storage = SimStorage::new(objects, 1 << 20)
        .reader(SimLink::shared("lan", link_of(Some(GB_PER_S)), &clock).unwrap());
    let file = storage.open(&path(9)).await.unwrap();
    let err = file.read_at(0, 100 * MB as usize, &mut IoBuf::default()).await.unwrap_err();
    assert_eq!(err.kind, StorageErrorKind::Io);
    assert!(err.message.contains("sim://lan/frame.0000009.raw"), "{}", err.message);
    assert!(err.message.contains("frame 9"), "{}", err.message);
    assert_eq!(clock.now(), Duration::from_millis(100));
    assert_eq!(storage.stats().bytes, 0);
    let missing = storage.open(&path(3)).await.err().unwrap();
    assert_eq!(missing.kind, StorageErrorKind::NotFound);
    assert!(missing.message.contains("sim://lan/frame.0000003.raw"), "{}", missing.message);
}

#[tokio::test(start_paused = true)]
async fn reads_return_the_objects_bytes() {
    let content: Arc<[u8]> = (0..=255u8).cycle().take(3000).collect::<Vec<u8>>().into();
    let storage = SimStorage::new(HashMap::from([(path(0), SimObject::bytes(content))]), 1024);
    let file = storage.open(&path(0)).await.unwrap();
    let mut buf = IoBuf::default();
    assert_eq!(file.read_at(2900, 500, &mut buf).await.unwrap(), 100);
    assert_eq!(&buf[..3], &[2900 % 256, 2901 % 256, 2902 % 256].map(|v| v as u8));
    assert_eq!(storage.stats().n_reads, 1);
    let listed = storage.list_dir("sim://lan".as_ref()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].name.as_str(), listed[0].size), ("frame.0000000.raw", 3000));
}

#[tokio::test(start_paused = true)]
async fn one_name_is_one_link_within_a_run_and_no_further() {
    let (run, other_run) = (clock(), clock());
    let params = link_of(Some(GB_PER_S));
    let a = SimLink::shared("lan", params, &run).unwrap();
    assert!(Arc::ptr_eq(&a, &SimLink::shared("lan", params, &run).unwrap()));
    assert!(!Arc::ptr_eq(&a, &SimLink::shared("wan", params, &run).unwrap()));
    assert!(!Arc::ptr_eq(&a, &SimLink::shared("lan", params, &other_run).unwrap()));
    let err = SimLink::shared("lan", link_of(Some(GB_PER_S / 2)), &run).unwrap_err().to_string();
    assert!(err.contains("'lan'") && err.contains("1 GB/s") && err.contains("500 MB/s"), "{err}");
    // Once no run holds it, the name is free again.
    drop(a);
    assert!(SimLink::shared("lan", link_of(Some(GB_PER_S / 2)), &run).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_copies_leave_the_worker_thread_and_arrive_whole() {
    // 8 MB: above the size whose copy moves off the runtime's worker (block_in_place).
    let content: Arc<[u8]> = (0..8_000_000u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into();
    let storage =
        SimStorage::new(HashMap::from([(path(0), SimObject::bytes(Arc::clone(&content)))]), 1 << 20);
    let file = storage.open(&path(0)).await.unwrap();
    let mut buf = IoBuf::default();
    assert_eq!(file.read_at(1000, 8_000_000, &mut buf).await.unwrap(), 7_999_000);
    assert!(buf[..] == content[1000..]);
    assert_eq!(storage.stats().n_reads, 8);
}
