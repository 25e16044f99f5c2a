//! O_DIRECT reads of real files, in the target directory (often not tmpfs, unlike /tmp).

use std::path::{Path, PathBuf};

use playsim_core::{IoBuf, Storage, StorageError, StorageErrorKind};
use playsim_storage::LocalStorage;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn write_file(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).expect("write test file");
    path
}

/// A scratch directory on the target directory's filesystem.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir in the target dir")
}

/// Reads `len` bytes at `offset` with O_DIRECT and checks them against `data`;
/// where the filesystem refuses O_DIRECT, checks that the refusal says so.
/// Returns false when O_DIRECT was refused.
async fn check_direct_read(block_size: usize, data: &[u8], offset: u64, len: usize) -> bool {
    let dir = scratch();
    let path = write_file(dir.path(), "frame.0001.exr", data);
    let storage = LocalStorage::builder().block_size(block_size).direct(true).build().expect("options");
    let file = match storage.open(&path).await {
        Ok(file) => file,
        Err(err) => {
            assert_eq!(err.kind, StorageErrorKind::Invalid, "{err}");
            assert!(err.message.contains("O_DIRECT is not supported"), "{err}");
            assert!(err.message.contains("frame.0001.exr"), "{err}");
            eprintln!("O_DIRECT refused here, checked the error instead: {err}");
            return false;
        }
    };
    assert_eq!(file.size(), data.len() as u64);
    // A buffer already holding something, to check it is replaced.
    let mut buf = IoBuf::with_capacity(100);
    let n = file.read_at(offset, len, &mut buf).await.expect("direct read");
    let start = (offset as usize).min(data.len());
    let end = (start + len).min(data.len());
    assert_eq!(n, end - start);
    assert_eq!(buf.len(), n);
    assert!(buf[..] == data[start..end], "bytes differ (block size {block_size}, offset {offset})");
    assert_eq!(storage.stats().bytes, n as u64);
    file.close().await.expect("close");
    true
}

/// The error of opening `path`, which must fail.
async fn open_error(storage: &impl Storage, path: &Path, what: &str) -> StorageError {
    match storage.open(path).await {
        Ok(_) => panic!("opened {what} {}", path.display()),
        Err(err) => err,
    }
}

#[tokio::test]
async fn direct_read_of_unaligned_size_returns_exactly_the_file() {
    // 3 blocks of 4096 and 1,234 bytes more.
    let data = pattern(3 * 4096 + 1_234);
    for block_size in [4096, 8192, 1 << 20] {
        check_direct_read(block_size, &data, 0, data.len()).await;
        check_direct_read(block_size, &data, 0, 1 << 30).await;
    }
}

#[tokio::test]
async fn direct_read_at_an_unaligned_offset() {
    let data = pattern(100_000);
    check_direct_read(8192, &data, 5_000, 30_000).await;
    check_direct_read(4096, &data, 99_999, 10).await;
    check_direct_read(4096, &data, 4096, 4096).await;
}

#[tokio::test]
async fn direct_request_count() {
    let data = pattern(3 * 4096 + 1);
    let dir = scratch();
    let path = write_file(dir.path(), "f", &data);
    let storage = LocalStorage::builder().block_size(8192).direct(true).build().expect("options");
    let file = match storage.open(&path).await {
        Ok(file) => file,
        Err(err) => {
            // Refused here: the message is checked in the tests above.
            assert_eq!(err.kind, StorageErrorKind::Invalid, "{err}");
            return;
        }
    };
    let mut buf = IoBuf::default();
    assert_eq!(file.read_at(0, data.len(), &mut buf).await.expect("read"), data.len());
    // 16,384 aligned bytes in requests of 8192: two requests, the second short.
    assert_eq!(storage.stats().n_reads, 2);
    assert!(storage.info().direct);
}

#[tokio::test]
async fn direct_open_of_a_directory_is_not_a_file() {
    let dir = scratch();
    let storage = LocalStorage::builder().direct(true).build().expect("options");
    let err = open_error(&storage, dir.path(), "a directory").await;
    assert_eq!(err.kind, StorageErrorKind::NotAFile, "{err}");
    assert!(err.message.contains(&dir.path().display().to_string()), "{err}");
}
