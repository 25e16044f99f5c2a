//! Directory listings and lookups of local paths, for sequence discovery through [`Storage`](playsim_core::Storage).

use std::io;
use std::path::Path;

use playsim_core::{DirEntry, EntryKind, StorageError};

/// What `path` is on the local filesystem (following symbolic links), or `None` when nothing is there.
pub(crate) fn local_kind(path: &Path) -> Result<Option<EntryKind>, StorageError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(Some(EntryKind::Dir)),
        Ok(_) => Ok(Some(EntryKind::File)),
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => Ok(None),
        Err(e) => Err(StorageError::from_io(&e, "look up", path)),
    }
}

/// The entries of local directory `dir` (the current directory when empty); names that are
/// not UTF-8 are left out. An entry whose target cannot be read (a dangling symbolic link)
/// is kept, as a file of size 0: it is a frame that will be counted unreadable, not a gap.
pub(crate) fn local_list(dir: &Path) -> Result<Vec<DirEntry>, StorageError> {
    let listed = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let entries = std::fs::read_dir(listed).map_err(|e| StorageError::from_io(&e, "list", listed))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StorageError::from_io(&e, "list", listed))?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        // Follow symbolic links, as opening the entry will.
        let (kind, size) = match std::fs::metadata(entry.path()) {
            Ok(meta) if meta.is_dir() => (EntryKind::Dir, meta.len()),
            Ok(meta) => (EntryKind::File, meta.len()),
            Err(_) => (EntryKind::File, 0),
        };
        out.push(DirEntry { name, kind, size });
    }
    Ok(out)
}
