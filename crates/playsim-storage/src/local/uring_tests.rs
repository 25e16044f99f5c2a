//! `LocalStorage` reading through the io_uring engine, against real files: the same bytes as
//! pread, buffered and with O_DIRECT, registered and not, many frames at once, dropped reads,
//! and the fallbacks.
//!
//! Where io_uring cannot be set up on the machine running the tests, the tests that need
//! a real ring say so on stderr and check the pread fallback instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::{IoBuf, Storage};

use crate::testutil::{pattern, write_file};
use crate::{IoEngine, LocalOptions, LocalStorage, UringOptions};

fn options(block_size: usize, direct: bool, uring: UringOptions) -> LocalOptions {
    LocalOptions { block_size, direct, io_engine: IoEngine::IoUring, uring }
}

/// A storage reading through io_uring, or, where the machine cannot set a ring up, the
/// pread fallback, said on stderr with the reason (the checks then run against it).
fn uring_storage(options: LocalOptions) -> LocalStorage {
    let storage = LocalStorage::new(options).expect("valid options");
    if storage.io_engine() != IoEngine::IoUring {
        let warnings = storage.warnings();
        eprintln!("io_uring is not available on this machine; checking the pread fallback: {warnings:?}");
        assert!(!warnings.is_empty(), "a fallback must say why");
    }
    storage
}

fn pread_storage(block_size: usize, direct: bool) -> LocalStorage {
    LocalStorage::builder().block_size(block_size).direct(direct).build().expect("valid options")
}

/// Reads `len` at `offset` of `path` through `storage`.
async fn read(storage: &LocalStorage, path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let file = storage.open(path).await.expect("open");
    let mut buf = IoBuf::default();
    let n = file.read_at(offset, len, &mut buf).await.expect("read");
    file.close().await.expect("close");
    assert_eq!(n, buf.len());
    buf.to_vec()
}

fn option(storage: &LocalStorage, key: &str) -> Option<String> {
    storage.info().options.into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

#[tokio::test]
async fn same_bytes_as_pread_buffered_and_direct() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Not a multiple of any block size below, nor of the O_DIRECT alignment.
    let data = pattern(300_001);
    let path = write_file(dir.path(), "frame.0001.dpx", &data);
    // (offset, len): the whole file, a range inside it, unaligned both ends, the tail
    // shorter than a block, past the end, at the end, and far beyond it.
    let ranges: [(u64, usize); 7] = [
        (0, data.len()),
        (12_345, 100_000),
        (4096, 8192),
        (299_000, 1_001),
        (250_000, 1 << 20),
        (300_001, 10),
        (u64::MAX - 5, usize::MAX),
    ];
    for direct in [false, true] {
        let sizes: &[usize] =
            if direct { &[4096, 65_536, 1 << 20] } else { &[1000, 4096, 65_536, 300_001, 1 << 20] };
        for &block_size in sizes {
            let uring = uring_storage(options(block_size, direct, UringOptions::default()));
            let pread = pread_storage(block_size, direct);
            for (offset, len) in ranges {
                let got = read(&uring, &path, offset, len).await;
                let expected = read(&pread, &path, offset, len).await;
                let what = format!("block {block_size}, direct {direct}, {len} at {offset}");
                assert_eq!(got.len(), expected.len(), "{what}");
                assert!(got == expected, "{what}: the bytes differ from pread's");
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(data.len());
                assert!(
                    got[..] == data[start..start + got.len()],
                    "{what}: the bytes differ from the file's"
                );
            }
            // The same number of requests as pread, and the same bytes.
            let (u, p) = (uring.stats(), pread.stats());
            assert_eq!((u.n_reads, u.bytes), (p.n_reads, p.bytes), "block {block_size}, direct {direct}");
            if uring.io_engine() == IoEngine::IoUring {
                assert_eq!(option(&uring, "io_engine").as_deref(), Some("io_uring"));
                let registered = option(&uring, "registered_buffers").unwrap_or_default();
                assert!(registered.starts_with("yes: "), "{registered}");
                assert!(uring.warnings().is_empty(), "{:?}", uring.warnings());
            }
        }
    }
}

#[tokio::test]
async fn the_report_names_the_engine_and_the_ring() {
    let storage =
        uring_storage(options(1 << 20, false, UringOptions { entries: 100, ..UringOptions::default() }));
    assert_eq!(pread_storage(4096, false).info().options, [("io_engine".to_owned(), "pread".to_owned())]);
    if storage.io_engine() != IoEngine::IoUring {
        return;
    }
    // The kernel rounds the depth up to a power of two.
    assert_eq!(option(&storage, "ring_entries").as_deref(), Some("128"));
    assert_eq!(option(&storage, "registered_buffers").as_deref(), Some("yes: none yet"));
}

#[tokio::test]
async fn a_file_shorter_than_at_open_ends_the_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = pattern(200_000);
    let path = write_file(dir.path(), "cut.dpx", &data);
    for direct in [false, true] {
        let storage = uring_storage(options(16_384, direct, UringOptions::default()));
        let file = storage.open(&path).await.expect("open");
        assert_eq!(file.size(), 200_000);
        // Cut the file after it was opened: the blocks past the new end read nothing.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(70_000))
            .expect("truncate");
        let mut buf = IoBuf::default();
        let n = file.read_at(1_000, 200_000, &mut buf).await.expect("read");
        assert_eq!(n, 69_000, "direct {direct}");
        assert!(buf[..] == data[1_000..70_000], "direct {direct}");
        file.close().await.expect("close");
        std::fs::write(&path, &data).expect("restore the file");
    }
}

#[tokio::test]
async fn registered_and_unregistered_buffers_read_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = pattern(1_500_000);
    let path = write_file(dir.path(), "f.dpx", &data);
    let unregistered = UringOptions { register_buffers: false, ..UringOptions::default() };
    let capped = UringOptions { max_registered_bytes: Some(1_000_000), ..UringOptions::default() };
    // 1.5 MB of data, in a buffer that grew by a sixteenth (`IoBuf::grown_capacity`): 1.6 MB.
    for (uring, expected) in [
        (UringOptions::default(), "yes: 1 buffer, 1.6 MB"),
        (unregistered, "off"),
        (capped, "no: registering a 1.6 MB buffer would pass the cap of 1.0 MB"),
    ] {
        let storage = uring_storage(options(65_536, true, uring));
        // One buffer, reused as the engine's pool reuses them: registered once.
        let file = storage.open(&path).await.expect("open");
        let mut buf = IoBuf::default();
        for offset in [0u64, 4096, 777_777] {
            let n = file.read_at(offset, data.len(), &mut buf).await.expect("read");
            let start = offset as usize;
            assert!(buf[..n] == data[start..], "{expected}: at {offset}");
        }
        if storage.io_engine() != IoEngine::IoUring {
            continue;
        }
        let registered = option(&storage, "registered_buffers").unwrap_or_default();
        assert!(registered.starts_with(expected), "{registered}");
        if expected.starts_with("no: ") {
            let warnings = storage.warnings();
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].message.contains("unregistered buffers") && warnings[0].message.contains("cap"),
                "{warnings:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_new_buffer_at_an_old_address_is_registered_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = pattern(3 * 65_536);
    let path = write_file(dir.path(), "f.dpx", &data);
    let storage = uring_storage(options(65_536, false, UringOptions::default()));
    let file = storage.open(&path).await.expect("open");
    // Buffers freed and allocated again, likely at the addresses just freed: each is read
    // through its own registration, never through a stale one.
    for round in 0..20u64 {
        let mut buf = IoBuf::with_capacity(data.len());
        let offset = round * 1000;
        let n = file.read_at(offset, data.len(), &mut buf).await.expect("read");
        assert!(buf[..n] == data[offset as usize..], "round {round}");
    }
    if storage.io_engine() == IoEngine::IoUring {
        let registered = option(&storage, "registered_buffers").unwrap_or_default();
        assert!(registered.starts_with("yes: 20 buffers"), "{registered}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_frames_at_once_through_a_small_ring() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files: Vec<(PathBuf, Vec<u8>)> = (0..8)
        .map(|i| {
            let data: Vec<u8> =
                pattern(400_000 + i * 4_099).into_iter().map(|b| b.wrapping_add(i as u8)).collect();
            (write_file(dir.path(), &format!("f.{i:04}.dpx"), &data), data)
        })
        .collect();
    for direct in [false, true] {
        // 40 frames of ~100 blocks each through 8 entries: most blocks wait for room.
        let storage = Arc::new(uring_storage(options(
            4096,
            direct,
            UringOptions { entries: 8, ..UringOptions::default() },
        )));
        let mut tasks = Vec::new();
        for k in 0..40usize {
            let storage = Arc::clone(&storage);
            let (path, data) = files[k % files.len()].clone();
            tasks.push(tokio::spawn(async move {
                let offset = (k * 333) as u64;
                let got = read(&storage, &path, offset, data.len()).await;
                assert!(got[..] == data[offset as usize..], "frame {k}, direct {direct}");
            }));
        }
        for task in tasks {
            task.await.expect("a reading task");
        }
    }
}

#[tokio::test]
async fn a_dropped_read_leaves_the_ring_working() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = pattern(8 << 20);
    let path = write_file(dir.path(), "big.dpx", &data);
    let storage =
        uring_storage(options(4096, false, UringOptions { entries: 16, ..UringOptions::default() }));
    let file = storage.open(&path).await.expect("open");
    for _ in 0..10 {
        let mut buf = IoBuf::with_capacity(data.len());
        let pending;
        {
            // Sent to the ring by the first poll, then dropped with 2,048 blocks to read.
            let mut read = file.read_at(0, data.len(), &mut buf);
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            pending = read.as_mut().poll(&mut cx).is_pending();
        }
        if pending {
            // The ring owns the buffer until its reads complete, and then frees it.
            assert_eq!(buf.capacity(), 0, "the dropped read keeps the buffer");
        }
    }
    let got = read(&storage, &path, 5, 100_000).await;
    assert!(got[..] == data[5..100_005]);
    file.close().await.expect("close");
    drop(storage);
}

#[tokio::test]
async fn a_disabled_io_uring_falls_back_to_pread_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = pattern(50_000);
    let path = write_file(dir.path(), "f.dpx", &data);
    for (errno, cause) in [(libc::EPERM, "kernel.io_uring_disabled"), (libc::ENOSYS, "CONFIG_IO_URING")] {
        let uring = UringOptions { fail_setup: Some(errno), ..UringOptions::default() };
        let storage = LocalStorage::new(options(4096, false, uring)).expect("options");
        assert_eq!(storage.io_engine(), IoEngine::Pread);
        assert_eq!(option(&storage, "io_engine").as_deref(), Some("pread"));
        let why = option(&storage, "io_uring").expect("the report says why");
        assert!(why.starts_with("not available: io_uring_setup failed with"), "{why}");
        assert!(why.contains(cause), "{why}");
        let warnings = storage.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].message.starts_with("io_uring is not available, so the reads used pread: "),
            "{warnings:?}"
        );
        if errno == libc::EPERM {
            assert!(why.contains("seccomp") && why.contains("sysctl -w kernel.io_uring_disabled=0"), "{why}");
        }
        // The same warnings in the storage's description, as the report carries them.
        assert_eq!(storage.info().warnings, warnings);
        assert!(read(&storage, &path, 100, 1_000).await[..] == data[100..1_100]);
    }
}

#[test]
fn ring_depth_is_checked() {
    for entries in [0, 1, 40_000] {
        let uring = UringOptions { entries, ..UringOptions::default() };
        let err = LocalStorage::new(options(4096, false, uring)).expect_err("out of range");
        assert!(err.to_string().contains("for example 128"), "{err}");
    }
    // With pread the io_uring settings are not used, so not checked.
    let uring = UringOptions { entries: 0, ..UringOptions::default() };
    assert!(LocalStorage::new(LocalOptions { uring, ..LocalOptions::default() }).is_ok());
}

#[test]
fn io_engine_names_parse() {
    assert_eq!("io_uring".parse::<IoEngine>(), Ok(IoEngine::IoUring));
    assert_eq!("io-uring".parse::<IoEngine>(), Ok(IoEngine::IoUring));
    assert_eq!("pread".parse::<IoEngine>(), Ok(IoEngine::Pread));
    let err = "uring2".parse::<IoEngine>().expect_err("unknown");
    assert!(err.contains("for example --io-engine io_uring"), "{err}");
    assert_eq!(IoEngine::IoUring.to_string(), "io_uring");
}
