//! Files for the local storage's tests (pread and io_uring alike).

use std::path::{Path, PathBuf};

/// Bytes that differ at every offset of a long file (a period of 251, a prime).
pub(crate) fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Writes `data` to `dir/name` and returns the path.
pub(crate) fn write_file(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).expect("write test file");
    path
}
