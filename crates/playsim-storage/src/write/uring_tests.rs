//! `LocalWriteStorage` writing through the io_uring engine, against real files: the same bytes
//! as pwrite, buffered and with O_DIRECT, many writes in flight through a small ring, a full
//! file system's ENOSPC named as pwrite names it, and the fallback.
//!
//! Where io_uring cannot be set up on the machine running the tests, the tests that need a
//! real ring say so on stderr and check the pwrite fallback instead.

use std::path::Path;
use std::sync::Arc;

use playsim_core::StorageErrorKind;

use super::{LocalWriteOptions, LocalWriteStorage, Stability, WriteBytes, WriteError, WriteOp, WriteStorage};
use crate::testutil::pattern;
use crate::uring::WRITE_CHUNK;
use crate::{IoEngine, UringOptions};

fn uring_options(direct: bool, uring: UringOptions) -> LocalWriteOptions {
    LocalWriteOptions { direct, io_engine: IoEngine::IoUring, uring }
}

/// A storage writing through io_uring, or, where the machine cannot set a ring up, the
/// pwrite fallback, said on stderr with the reason (the checks then run against it).
fn uring_storage(direct: bool, uring: UringOptions) -> LocalWriteStorage {
    let storage = LocalWriteStorage::new(uring_options(direct, uring));
    if storage.io_engine() != IoEngine::IoUring {
        let warnings = storage.warnings();
        eprintln!("io_uring is not available on this machine; checking the pwrite fallback: {warnings:?}");
        assert!(!warnings.is_empty(), "a fallback must say why");
    }
    storage
}

fn bytes(data: &[u8]) -> WriteBytes {
    Arc::from(data)
}

/// Writes `pieces` (offset, bytes) into `path` through `storage`, all at once, then syncs
/// and closes the file.
async fn write_pieces(storage: &LocalWriteStorage, path: &Path, pieces: &[(u64, WriteBytes)]) {
    let file = storage.create(path).await.expect("create");
    let writes =
        pieces.iter().map(|(offset, data)| file.write_at(*offset, Arc::clone(data), Stability::Unstable));
    for written in futures_util::future::join_all(writes).await {
        written.expect("write");
    }
    file.sync().await.expect("sync");
    file.close().await.expect("close");
}

#[tokio::test]
async fn same_bytes_as_pwrite_buffered_and_direct() {
    // On the target's disk filesystem, which has direct I/O (/tmp may be a tmpfs).
    let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir");
    let data = pattern(5 * WRITE_CHUNK + 2_048);
    // Out of order and all at once: the head's 3 chunks and the tail's 3 chunks in flight
    // together, the tail not a multiple of the alignment (padded, then cut back).
    let split = 3 * WRITE_CHUNK;
    let pieces = [(split as u64, bytes(&data[split..])), (0, bytes(&data[..split]))];
    for direct in [false, true] {
        let uring = uring_storage(direct, UringOptions::default());
        let pwrite = LocalWriteStorage::new(LocalWriteOptions { direct, ..LocalWriteOptions::default() });
        let (a, b) =
            (dir.path().join(format!("uring-{direct}")), dir.path().join(format!("pwrite-{direct}")));
        write_pieces(&uring, &a, &pieces).await;
        write_pieces(&pwrite, &b, &pieces).await;
        let (got, want) = (std::fs::read(&a).expect("read"), std::fs::read(&b).expect("read"));
        assert_eq!(got.len(), data.len(), "direct {direct}");
        assert!(got == want && got == data, "direct {direct}: the bytes differ");
        let stats = uring.stats();
        assert_eq!((stats.n_writes, stats.bytes, stats.n_syncs), (2, data.len() as u64, 1));
        if uring.io_engine() == IoEngine::IoUring {
            let how = if direct { "local files with O_DIRECT" } else { "local files (page cache)" };
            assert_eq!(uring.describe(), format!("{how} through io_uring"));
            assert!(uring.warnings().is_empty());
            if direct {
                // The aligned copies run on the ring thread, whose CPU time is counted.
                assert!(stats.cpu_ns > 0, "{stats:?}");
            }
        }
    }
}

#[tokio::test]
async fn many_writes_in_flight_through_a_small_ring_and_stable_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = uring_storage(false, UringOptions { entries: 4, ..UringOptions::default() });
    let files: Vec<(std::path::PathBuf, [(u64, WriteBytes); 1])> = (0..6u8)
        .map(|i| {
            let mut data = pattern(3 * WRITE_CHUNK + 100 * usize::from(i));
            data[0] = i;
            (dir.path().join(format!("f{i}")), [(0, bytes(&data))])
        })
        .collect();
    // Six files of 4 chunks each, 24 writes, through a ring with 3 in flight at most.
    let writes = files.iter().map(|(path, pieces)| write_pieces(&storage, path, pieces));
    futures_util::future::join_all(writes).await;
    for (path, [(_, data)]) in &files {
        assert!(std::fs::read(path).expect("read") == data[..], "{}", path.display());
    }
    // A write made stable by its own sync, on the ring too.
    let path = dir.path().join("stable");
    let file = storage.create(&path).await.expect("create");
    file.write_at(0, bytes(b"12345678"), Stability::DataSync).await.expect("write");
    file.write_at(8, bytes(b"9"), Stability::FileSync).await.expect("write");
    file.close().await.expect("close");
    assert_eq!(std::fs::read(&path).expect("read"), b"123456789");
    assert_eq!(storage.stats().n_syncs, 6 + 2);
}

/// A file system that fills mid-write: the WRITE that meets ENOSPC (the one before it short)
/// fails the call with the pwrite path's error, naming the call and the file. Needs root to
/// mount a small tmpfs; skipped, and said, without.
#[tokio::test]
async fn enospc_is_named_as_pwrite_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).expect("mkdir");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&mount)
        .output();
    if !mounted.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root): {mounted:?}");
        return;
    }
    let unmount = Unmount(mount.clone());
    let data = bytes(&pattern(3 * WRITE_CHUNK));
    let mut errors: Vec<WriteError> = Vec::new();
    for (name, storage) in [
        ("uring", uring_storage(false, UringOptions::default())),
        ("pwrite", LocalWriteStorage::new(LocalWriteOptions::default())),
    ] {
        let path = mount.join(name);
        let file = storage.create(&path).await.expect("create");
        let err = file.write_at(0, Arc::clone(&data), Stability::Unstable).await.expect_err("a full disk");
        file.close().await.expect("close");
        assert_eq!((err.kind, err.op), (StorageErrorKind::Io, WriteOp::Write), "{name}: {err}");
        assert!(err.to_string().starts_with(&format!("cannot write {}: ", path.display())), "{name}: {err}");
        assert!(err.reason.contains("No space left on device"), "{name}: {err}");
        assert_eq!(storage.stats().n_writes, 0, "{name}: a failed write is not counted");
        std::fs::remove_file(&path).expect("remove");
        errors.push(err);
    }
    assert_eq!(errors[0].reason, errors[1].reason);
    drop(unmount);
}

/// Unmounts the test's tmpfs when the test ends, passed or not.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_disabled_io_uring_falls_back_to_pwrite_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (errno, cause) in [(libc::EPERM, "kernel.io_uring_disabled"), (libc::ENOSYS, "CONFIG_IO_URING")] {
        let uring = UringOptions { fail_setup: Some(errno), ..UringOptions::default() };
        let storage = LocalWriteStorage::new(uring_options(false, uring));
        assert_eq!(storage.io_engine(), IoEngine::Pread);
        assert_eq!(storage.describe(), "local files (page cache) through pwrite (io_uring is not available)");
        let warnings = storage.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].kind, "io_uring_unavailable");
        let message = &warnings[0].message;
        assert!(message.starts_with("io_uring is not available, so the writes used pwrite: "), "{message}");
        assert!(message.contains(cause), "{message}");
        let path = dir.path().join(format!("f{errno}"));
        write_pieces(&storage, &path, &[(0, bytes(b"written all the same"))]).await;
        assert_eq!(std::fs::read(&path).expect("read"), b"written all the same");
    }
    // A ring depth out of range falls back too, saying so.
    let storage =
        LocalWriteStorage::new(uring_options(false, UringOptions { entries: 1, ..UringOptions::default() }));
    assert!(storage.warnings()[0].message.contains("for example 128"), "{:?}", storage.warnings());
    // pwrite asked for: no ring, nothing to say.
    let storage = LocalWriteStorage::new(LocalWriteOptions::default());
    assert_eq!((storage.io_engine(), storage.warnings().len()), (IoEngine::Pread, 0));
}
