//! Files replaced whole or not at all: a temporary file in the same directory, synced, then
//! renamed over the destination.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// that a reader never sees a half-written file.
pub fn write_bytes_atomic(text: &[u8], path: &Path) -> io::Result<()> {
    let file_name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("path {} names no file", path.display()))
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (tmp_path, mut file) = create_temp(dir, file_name)?;
    let written = file.write_all(text).and_then(|()| file.sync_all());
    drop(file);
    let renamed = written.and_then(|()| fs::rename(&tmp_path, path));
    if let Err(e) = renamed {
        // Best effort: the error that matters is the one already in hand.
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    // Make the rename itself durable. Some file systems refuse to sync a
    // directory; the report is complete either way, so that is not an error.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Creates a new file next to the destination, with a name no one else uses.
fn create_temp(dir: &Path, file_name: &std::ffi::OsStr) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last_err = None;
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut name = std::ffi::OsString::from(".");
        name.push(file_name);
        name.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp_path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp_path) {
            Ok(file) => return Ok((tmp_path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no free temporary file name")))
}
