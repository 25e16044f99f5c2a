//! The write side of the `smb2` crate's client: [`SmbWriter`], the storage write API over
//! CREATE, WRITE, FLUSH, CLOSE, SET_INFO (rename, delete) and QUERY_INFO (free space).
//!
//! - The crate's own writers are sequential streams (`FileWriter` pushes bytes at its end), and
//!   a [`WriteFile`] writes at any offset from `&self`, several calls at once. So a file's
//!   CREATE, WRITEs and FLUSH are built here from the crate's public messages and sent with
//!   `Connection::execute_with_credits`, as its `FileReader` sends its READs; renames,
//!   deletes, directories and the free space are the crate's `Tree` calls.
//! - A file is created `FILE_OVERWRITE_IF` (an existing one is truncated), sharing read, write
//!   and delete, and written with WRITEs of at most [`DEFAULT_WRITE_SIZE`] (capped by the
//!   server's MaxWriteSize), all of a call's in flight together within the server's credits.
//! - SMB has no UNSTABLE/COMMIT: a WRITE's answer means the bytes are in the server's file
//!   (its cache), and FLUSH puts the file on its disk. [`Stability::DataSync`] and
//!   [`Stability::FileSync`] are a WRITE followed by a FLUSH: not `WRITE_THROUGH`, which
//!   SMB 3.0.2 and 3.1.1 servers must refuse on a buffered open (MS-SMB2 § 3.3.5.13).
//! - A close does not flush (as neither Windows nor Linux's cifs do); a file closed with
//!   writes not flushed is remembered, under its name after a rename, and
//!   [`WriteStorage::sync_all`] flushes each of them.
//! - A call whose connection is lost reconnects (as [`SmbStorage`] does for reads), opens its
//!   file again in the new session, without truncating, and is tried again, up to
//!   [`ATTEMPTS`] times: what the server answered before is in its file, and a WRITE sent
//!   twice writes the same bytes. A retried rename or delete whose first try took effect
//!   answers "not found"; for a rename that is success when the target is there, for a delete
//!   it is success.

use std::collections::BTreeSet;
use std::future::Future;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use playsim_core::{StorageError, StorageErrorKind};
use smb2::client::connection::Connection;
use smb2::msg::create::{CreateDisposition, CreateRequest, CreateResponse, ImpersonationLevel, ShareAccess};
use smb2::msg::flush::FlushRequest;
use smb2::msg::set_info::{InfoType, SetInfoRequest};
use smb2::msg::write::{WriteRequest, WriteResponse};
use smb2::pack::{ReadCursor, Unpack};
use smb2::types::flags::{FileAccessMask, FileAttributes};
use smb2::types::status::NtStatus;
use smb2::types::{Command, CreditCharge, FileId, OplockLevel};
use smb2::{ErrorKind, RenameOptions};

use super::storage::{connection_lost, error_kind, Inner, Session, SmbStorage};
use super::DEFAULT_WRITE_SIZE;
use crate::write::{
    Stability, WriteBytes, WriteCounters, WriteError, WriteFile, WriteOp, WriteStats, WriteStorage,
};

/// Tries of a call whose connection is lost, each on a new one.
pub(super) const ATTEMPTS: usize = 3;
/// CREATE option: the name must be a file, not a directory (MS-SMB2 § 2.2.13).
const FILE_NON_DIRECTORY_FILE: u32 = 0x0000_0040;
/// Bytes a credit pays for (MS-SMB2 § 3.1.5.2).
const CREDIT_BYTES: usize = 64 << 10;
/// Files flushed at once by [`WriteStorage::sync_all`].
const SYNC_ALL_BATCH: usize = 16;

/// Files written on an SMB share through the `smb2` crate's client: the storage write API
/// (`smb://` destinations of `record` and `frametest -w`). Paths are paths inside the share
/// (`/shot/frame.0000001.dpx`), as [`SmbStorage`] reads them; errors name them as URLs.
///
/// - A write is split into WRITEs of at most [`SmbWriter::write_size`], all in flight at once.
/// - SMB has no UNSTABLE and COMMIT: a [`Stability::DataSync`] or [`Stability::FileSync`]
///   write is its WRITEs then an SMB2 FLUSH (not the `WRITE_THROUGH` flag, which SMB 3.0.2 and
///   3.1.1 servers must refuse on a buffered open), and [`WriteFile::sync`] is a FLUSH.
/// - A close does not flush; [`WriteStorage::sync_all`] flushes the files closed unflushed.
/// - [`WriteFile::preallocate`] is SET_INFO FileAllocationInformation (MS-FSCC 2.4.4), built
///   here from the crate's message types as the WRITEs are: the server reserves the space
///   (Samba with `strict allocate`, as a capture share should be), and a full share fails the
///   frame before its first WRITE.
pub struct SmbWriter {
    storage: SmbStorage,
    write_size: usize,
    counters: Arc<WriteCounters>,
    /// Files closed with writes not flushed yet, by their path in the share.
    unsynced: Arc<Mutex<BTreeSet<String>>>,
}

impl SmbWriter {
    /// The write side of `storage`: its connection, session and thread (give it a client of
    /// its own: [`SmbStorage::another_client`]). Its WRITEs are of [`DEFAULT_WRITE_SIZE`], or
    /// the server's MaxWriteSize when smaller.
    pub fn new(storage: SmbStorage) -> SmbWriter {
        let max_write = storage.inner().negotiated.max_write_size as usize;
        let write_size = DEFAULT_WRITE_SIZE.min(max_write).max(1);
        SmbWriter { storage, write_size, counters: Arc::default(), unsynced: Arc::default() }
    }

    /// The largest WRITE it sends.
    pub fn write_size(&self) -> usize {
        self.write_size
    }

    fn inner(&self) -> &Arc<Inner> {
        self.storage.inner()
    }

    fn unsynced(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.unsynced.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `path` as the share knows it (`shot/a.dpx`), or an error of `op` naming it.
    fn relative(&self, op: WriteOp, path: &Path) -> Result<String, WriteError> {
        super::storage::share_path(path)
            .map_err(|e| WriteError::new(e.kind, op, path, "the path is not UTF-8"))
    }
}

/// Why one try of a call failed.
enum Failure {
    /// The crate answered an error.
    Smb(smb2::Error),
    /// The crate panicked, or the client's thread is gone.
    Panicked(String),
}

impl Failure {
    fn lost(&self) -> bool {
        matches!(self, Failure::Smb(e) if connection_lost(e))
    }
}

type Attempt<'a, T> = Pin<Box<dyn Future<Output = Result<T, Failure>> + Send + 'a>>;

/// A WriteError of `op` on `relative` in the share of `inner`, named as a URL.
fn write_error(
    inner: &Inner,
    op: WriteOp,
    relative: &str,
    kind: StorageErrorKind,
    reason: String,
) -> WriteError {
    WriteError::new(kind, op, Path::new(&inner.url.display_path(relative)), reason)
}

fn failed(inner: &Inner, op: WriteOp, relative: &str, failure: Failure) -> WriteError {
    match failure {
        Failure::Smb(e) => write_error(inner, op, relative, error_kind(&e), e.to_string()),
        Failure::Panicked(reason) => write_error(inner, op, relative, StorageErrorKind::Io, reason),
    }
}

fn unavailable(inner: &Inner, op: WriteOp, relative: &str, e: StorageError) -> WriteError {
    write_error(inner, op, relative, e.kind, e.message)
}

/// Runs `attempt` in the current session (its tree and generation), reconnecting and trying
/// again while its connection is lost, up to [`ATTEMPTS`] times. Returns its value and
/// whether it was a retry.
async fn in_session<'a, T>(
    inner: &'a Inner,
    op: WriteOp,
    relative: &'a str,
    attempt: impl Fn(Session, Connection) -> Attempt<'a, T>,
) -> Result<(T, bool), WriteError> {
    let mut last = None;
    for i in 0..ATTEMPTS {
        let session = inner.session();
        let generation = session.generation;
        match attempt(session, inner.connection.clone()).await {
            Ok(value) => return Ok((value, i > 0)),
            // Another call reconnected while this one was on the wire: its ids were stale.
            Err(failure) if failure.lost() || inner.session().generation != generation => {
                last = Some(failure);
                inner.reconnect(generation).await.map_err(|e| unavailable(inner, op, relative, e))?;
            }
            Err(failure) => return Err(failed(inner, op, relative, failure)),
        }
    }
    let e = last.map_or_else(String::new, |f| failed(inner, op, relative, f).reason);
    Err(write_error(
        inner,
        op,
        relative,
        StorageErrorKind::Io,
        format!("{e}, on each of {ATTEMPTS} connections in turn (the connection lost at every try)"),
    ))
}

/// Runs `future` on the client's thread.
async fn on_client<T: Send + 'static>(
    inner: &Inner,
    future: impl Future<Output = smb2::Result<T>> + Send + 'static,
) -> Result<T, Failure> {
    match inner.runtime.run(future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(Failure::Smb(e)),
        Err(reason) => Err(Failure::Panicked(reason)),
    }
}

/// The CREATE of `name` (as [`wire_path`] spells it) for writing, `disposition` saying whether
/// an existing file is truncated. Shares read, write and delete, so that a reopen after a
/// reconnect is not refused by the old session's handle while the server lets go of it.
fn write_open_request(name: String, disposition: CreateDisposition) -> CreateRequest {
    CreateRequest {
        requested_oplock_level: OplockLevel::None,
        impersonation_level: ImpersonationLevel::Impersonation,
        desired_access: FileAccessMask::new(
            FileAccessMask::FILE_WRITE_DATA
                | FileAccessMask::FILE_READ_ATTRIBUTES
                | FileAccessMask::FILE_WRITE_ATTRIBUTES
                | FileAccessMask::SYNCHRONIZE,
        ),
        file_attributes: FileAttributes::NORMAL,
        share_access: ShareAccess(
            ShareAccess::FILE_SHARE_READ | ShareAccess::FILE_SHARE_WRITE | ShareAccess::FILE_SHARE_DELETE,
        ),
        create_disposition: disposition,
        create_options: FILE_NON_DIRECTORY_FILE,
        name,
        create_contexts: vec![],
    }
}

/// `relative` (`shot/a.dpx`) as a CREATE names it: `\`-separated, and on a DFS share after the
/// host and the share, as MS-SMB2 § 3.2.4.3 asks.
fn wire_path(relative: &str, dfs: Option<(&str, &str)>) -> String {
    let encoded = smb2::encode_path(relative);
    match dfs {
        Some((host, share)) if encoded.is_empty() => format!("{host}\\{share}"),
        Some((host, share)) => format!("{host}\\{share}\\{encoded}"),
        None => encoded,
    }
}

/// Sends `request` and checks its status: the reply's body.
async fn execute(
    conn: &Connection,
    command: Command,
    request: &dyn smb2::pack::Pack,
    session: &Session,
    charge: u16,
) -> smb2::Result<Vec<u8>> {
    let frame =
        conn.execute_with_credits(command, request, Some(session.tree.tree_id), CreditCharge(charge)).await?;
    if frame.header.status != NtStatus::SUCCESS {
        return Err(smb2::Error::Protocol { status: frame.header.status, command });
    }
    Ok(frame.body)
}

/// Opens `relative` for writing in `session`: its handle.
async fn open(
    conn: Connection,
    session: Session,
    host: String,
    relative: String,
    disposition: CreateDisposition,
) -> smb2::Result<FileId> {
    let dfs = session.tree.is_dfs.then_some((host.as_str(), session.tree.share_name.as_str()));
    let request = write_open_request(wire_path(&relative, dfs), disposition);
    let body = execute(&conn, Command::Create, &request, &session, 1).await?;
    Ok(CreateResponse::unpack(&mut ReadCursor::new(&body))?.file_id)
}

/// Credits a WRITE of `len` bytes is charged: one per 64 KiB begun.
fn credit_charge(len: usize) -> u16 {
    u16::try_from(len.div_ceil(CREDIT_BYTES).max(1)).unwrap_or(u16::MAX)
}

/// The WRITEs that carry `len` bytes at `offset`, each at most `write_size`: their offsets in
/// the file and their ranges of the bytes.
fn chunks(offset: u64, len: usize, write_size: usize) -> impl Iterator<Item = (u64, Range<usize>)> {
    let write_size = write_size.max(1);
    (0..len).step_by(write_size).map(move |start| {
        let end = (start + write_size).min(len);
        (offset + start as u64, start..end)
    })
}

/// Writes `data[range]` at `offset` into `file_id`, with more WRITEs while the server writes
/// less than it was sent.
async fn write_chunk(
    conn: Connection,
    session: Session,
    file_id: FileId,
    mut offset: u64,
    data: WriteBytes,
    mut range: Range<usize>,
) -> smb2::Result<()> {
    while !range.is_empty() {
        let len = range.len();
        let request = WriteRequest {
            // The header (64 bytes) and the request's fixed part (48): where the data starts.
            data_offset: 0x70,
            offset,
            file_id,
            channel: 0,
            remaining_bytes: 0,
            write_channel_info_offset: 0,
            write_channel_info_length: 0,
            flags: 0,
            data: data[range.clone()].to_vec(),
        };
        let body = execute(&conn, Command::Write, &request, &session, credit_charge(len)).await?;
        let written = WriteResponse::unpack(&mut ReadCursor::new(&body))?.count as usize;
        if written == 0 || written > len {
            return Err(smb2::Error::invalid_data(format!(
                "the server says it wrote {written} bytes of a WRITE of {len}"
            )));
        }
        offset += written as u64;
        range.start += written;
    }
    Ok(())
}

/// FileAllocationInformation class for SET_INFO (MS-FSCC 2.4.4).
const FILE_ALLOCATION_INFORMATION: u8 = 19;

/// SET_INFO FileAllocationInformation of `len` bytes on `file_id`: the server reserves them,
/// and the file's length stays as it is.
async fn allocate(conn: Connection, session: Session, file_id: FileId, len: u64) -> smb2::Result<()> {
    let request = SetInfoRequest {
        info_type: InfoType::File,
        file_info_class: FILE_ALLOCATION_INFORMATION,
        additional_information: 0,
        file_id,
        buffer: len.to_le_bytes().to_vec(),
    };
    execute(&conn, Command::SetInfo, &request, &session, 1).await.map(|_| ())
}

/// FLUSH of `file_id`: the server writes the file to its disk.
async fn flush(conn: Connection, session: Session, file_id: FileId) -> smb2::Result<()> {
    execute(&conn, Command::Flush, &FlushRequest { file_id }, &session, 1).await.map(|_| ())
}

/// Opens `relative` (closed since it was written), FLUSHes and closes it; one that is gone
/// has nothing to flush.
async fn flush_closed(
    conn: Connection,
    session: Session,
    host: String,
    relative: String,
) -> smb2::Result<()> {
    let file_id = match open(conn.clone(), session.clone(), host, relative, CreateDisposition::FileOpen).await
    {
        Ok(file_id) => file_id,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let flushed = flush(conn.clone(), session.clone(), file_id).await;
    let closed = session.tree.close_handle(&mut conn.clone(), file_id).await;
    flushed.and(closed)
}

/// Every directory from the share's root to `relative` (`a/b`): `a`, then `a/b`.
fn ancestors(relative: &str) -> Vec<&str> {
    relative
        .match_indices('/')
        .map(|(at, _)| &relative[..at])
        .chain(std::iter::once(relative))
        .filter(|prefix| !prefix.is_empty() && !prefix.ends_with('/'))
        .collect()
}

/// Whether `path` is `dir` or inside it (paths in the share, `""` being its root).
fn is_under(path: &str, dir: &str) -> bool {
    dir.is_empty() || path == dir || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

#[async_trait::async_trait]
impl WriteStorage for SmbWriter {
    fn describe(&self) -> String {
        let inner = self.inner();
        let negotiated = &inner.negotiated;
        format!(
            "smb:// share {} on {} (playsim's SMB client, the smb2 crate: SMB {}, WRITE {} KiB, signing {}, \
             encryption {})",
            inner.url.share(),
            inner.url.addr(),
            negotiated.dialect,
            self.write_size >> 10,
            negotiated.signing.as_deref().unwrap_or("off"),
            negotiated.cipher.as_deref().unwrap_or("off"),
        )
    }

    /// Each missing directory from the share's root down, made with CREATE
    /// (FILE_DIRECTORY_FILE); one that is a file is refused.
    async fn create_dir_all(&self, dir: &Path) -> Result<(), WriteError> {
        let inner = self.inner();
        let op = WriteOp::CreateDir;
        let relative = self.relative(op, dir)?;
        for prefix in ancestors(&relative) {
            let found = in_session(inner, op, prefix, |session, mut conn| {
                let prefix = prefix.to_owned();
                Box::pin(on_client(inner, async move {
                    match session.tree.stat(&mut conn, &prefix).await {
                        Ok(info) => Ok(Some(info.is_directory)),
                        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
                        Err(e) => Err(e),
                    }
                }))
            })
            .await?
            .0;
            match found {
                Some(true) => continue,
                Some(false) => {
                    let why = "it is a file, not a directory".to_owned();
                    return Err(write_error(inner, op, prefix, StorageErrorKind::NotAFile, why));
                }
                None => {}
            }
            let made = in_session(inner, op, prefix, |session, mut conn| {
                let prefix = prefix.to_owned();
                Box::pin(on_client(inner, async move {
                    match session.tree.create_directory(&mut conn, &prefix).await {
                        // Made meanwhile, by another writer or by this call's first try.
                        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                        made => made,
                    }
                }))
            })
            .await;
            made?;
        }
        Ok(())
    }

    async fn create(&self, path: &Path) -> Result<Box<dyn WriteFile>, WriteError> {
        let inner = self.inner();
        let relative = self.relative(WriteOp::Create, path)?;
        let file =
            OpenFile::open(inner, WriteOp::Create, &relative, CreateDisposition::FileOverwriteIf).await?;
        Ok(Box::new(SmbWriteFile {
            inner: Arc::clone(inner),
            path: path.to_path_buf(),
            relative,
            file: Mutex::new(file),
            dirty: AtomicBool::new(false),
            write_size: self.write_size,
            counters: Arc::clone(&self.counters),
            unsynced: Arc::clone(&self.unsynced),
        }))
    }

    /// SET_INFO FileRenameInformation with ReplaceIfExists: the target, if there, is replaced
    /// in the same step.
    async fn rename(&self, from: &Path, to: &Path) -> Result<(), WriteError> {
        let inner = self.inner();
        let (from_rel, to_rel) = (self.relative(WriteOp::Rename, from)?, self.relative(WriteOp::Rename, to)?);
        let renamed = in_session(inner, WriteOp::Rename, &from_rel, |session, mut conn| {
            let (from, to) = (from_rel.clone(), to_rel.clone());
            Box::pin(on_client(inner, async move {
                let options = RenameOptions::new().replace_if_exists(true);
                match session.tree.rename_with(&mut conn, &from, &to, options).await {
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
                    renamed => renamed.map(|()| true),
                }
            }))
        })
        .await;
        let not_found = |reason: String| {
            let reason = format!("to {}: {reason}", inner.url.display_path(&to_rel));
            write_error(inner, WriteOp::Rename, &from_rel, StorageErrorKind::NotFound, reason)
        };
        match renamed {
            Ok((true, _)) => {}
            // A retry of a rename that took effect: the source is gone and the target there.
            Ok((false, true)) if self.exists(&to_rel).await? => {}
            Ok((false, _)) => return Err(not_found("no such file".to_owned())),
            Err(e) => {
                let reason = format!("to {}: {}", inner.url.display_path(&to_rel), e.reason);
                return Err(WriteError { reason, ..e });
            }
        }
        let mut unsynced = self.unsynced();
        unsynced.remove(&to_rel);
        if unsynced.remove(&from_rel) {
            unsynced.insert(to_rel);
        }
        Ok(())
    }

    async fn remove(&self, path: &Path) -> Result<(), WriteError> {
        let relative = self.delete(WriteOp::Remove, path).await?;
        self.unsynced().remove(&relative);
        Ok(())
    }

    /// The crate's `delete_directory`: CREATE (FILE_DIRECTORY_FILE), SET_INFO
    /// FileDispositionInformation and CLOSE in one compound, which the server refuses for a
    /// directory that is not empty (STATUS_DIRECTORY_NOT_EMPTY). A retry that finds nothing is
    /// success, as `remove`'s is. The writer keeps no handle of a directory, and an empty one
    /// had no file left to flush: nothing to forget.
    async fn remove_dir(&self, dir: &Path) -> Result<(), WriteError> {
        self.delete(WriteOp::RemoveDir, dir).await.map(drop)
    }

    /// QUERY_INFO FileFsFullSizeInformation of the share: the bytes available to this user
    /// (the share's volume, whichever directory `dir` is).
    async fn free_bytes(&self, dir: &Path) -> Result<Option<u64>, WriteError> {
        let inner = self.inner();
        let relative = self.relative(WriteOp::CreateDir, dir)?;
        let (info, _) = in_session(inner, WriteOp::CreateDir, &relative, |session, mut conn| {
            Box::pin(on_client(inner, async move { session.tree.fs_info(&mut conn).await }))
        })
        .await?;
        Ok(Some(info.free_bytes))
    }

    /// Flushes every file under `dir` this writer closed with writes not flushed (each opened
    /// again, FLUSHed and closed, 16 at a time). A file removed since by someone else has
    /// nothing left to flush.
    async fn sync_all(&self, dir: &Path) -> Result<(), WriteError> {
        let inner = self.inner();
        let dir = self.relative(WriteOp::Sync, dir)?;
        let files: Vec<String> =
            self.unsynced().iter().filter(|path| is_under(path, &dir)).cloned().collect();
        for batch in files.chunks(SYNC_ALL_BATCH) {
            let flushes = batch.iter().map(|relative| {
                in_session(inner, WriteOp::Sync, relative, move |session, conn| {
                    let (host, relative) = (inner.url.host().to_owned(), relative.clone());
                    Box::pin(on_client(inner, flush_closed(conn, session, host, relative)))
                })
            });
            for result in futures_util::future::join_all(flushes).await {
                result?;
            }
            let mut unsynced = self.unsynced();
            for relative in batch {
                unsynced.remove(relative);
            }
        }
        Ok(())
    }

    fn stats(&self) -> WriteStats {
        WriteStats { cpu_ns: self.inner().runtime.cpu_ns(), ..self.counters.stats() }
    }
}

impl SmbWriter {
    /// Deletes the file (`WriteOp::Remove`) or empty directory (`WriteOp::RemoveDir`) at
    /// `path`; a retry of a delete that took effect, which finds nothing, is success. Returns
    /// the path relative to the share.
    async fn delete(&self, op: WriteOp, path: &Path) -> Result<String, WriteError> {
        let inner = self.inner();
        let relative = self.relative(op, path)?;
        let removed = in_session(inner, op, &relative, |session, mut conn| {
            let relative = relative.clone();
            Box::pin(on_client(inner, async move {
                let deleted = if op == WriteOp::RemoveDir {
                    session.tree.delete_directory(&mut conn, &relative).await
                } else {
                    session.tree.delete_file(&mut conn, &relative).await
                };
                match deleted {
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
                    deleted => deleted.map(|()| true),
                }
            }))
        })
        .await?;
        match removed {
            // Removed; or a retry of a delete that took effect, which finds nothing.
            (true, _) | (false, true) => Ok(relative),
            (false, false) => {
                let why = if op == WriteOp::RemoveDir { "no such directory" } else { "no such file" };
                Err(write_error(inner, op, &relative, StorageErrorKind::NotFound, why.to_owned()))
            }
        }
    }

    /// Whether `relative` names something in the share.
    async fn exists(&self, relative: &str) -> Result<bool, WriteError> {
        let inner = self.inner();
        let (found, _) = in_session(inner, WriteOp::Rename, relative, |session, mut conn| {
            let relative = relative.to_owned();
            Box::pin(on_client(inner, async move {
                match session.tree.stat(&mut conn, &relative).await {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(e),
                }
            }))
        })
        .await?;
        Ok(found)
    }
}

/// A file's handle and the session generation it was opened in: after a reconnect the handle
/// means nothing, and the file is opened again in the new session.
#[derive(Clone, Copy)]
struct OpenFile {
    file_id: FileId,
    generation: u64,
}

impl OpenFile {
    /// Opens `relative` for writing (`disposition`: created or truncated, or only opened);
    /// errors are `op`'s.
    async fn open(
        inner: &Inner,
        op: WriteOp,
        relative: &str,
        disposition: CreateDisposition,
    ) -> Result<OpenFile, WriteError> {
        let (file, _) = in_session(inner, op, relative, |session, conn| {
            let (host, relative) = (inner.url.host().to_owned(), relative.to_owned());
            let generation = session.generation;
            Box::pin(async move {
                let file_id = on_client(inner, open(conn, session, host, relative, disposition)).await?;
                Ok(OpenFile { file_id, generation })
            })
        })
        .await?;
        Ok(file)
    }

    /// CLOSE; nothing to do for a handle of a session a reconnect has ended.
    async fn close(self, inner: &Inner, relative: &str) -> Result<(), WriteError> {
        let session = inner.session();
        if session.generation != self.generation {
            return Ok(());
        }
        let (mut conn, file_id) = (inner.connection.clone(), self.file_id);
        match on_client(inner, async move { session.tree.close_handle(&mut conn, file_id).await }).await {
            Ok(()) => Ok(()),
            Err(failure) if failure.lost() => Ok(()),
            Err(failure) => Err(failed(inner, WriteOp::Close, relative, failure)),
        }
    }
}

struct SmbWriteFile {
    inner: Arc<Inner>,
    path: PathBuf,
    relative: String,
    file: Mutex<OpenFile>,
    /// Written since its last FLUSH.
    dirty: AtomicBool,
    write_size: usize,
    counters: Arc<WriteCounters>,
    unsynced: Arc<Mutex<BTreeSet<String>>>,
}

impl SmbWriteFile {
    fn file(&self) -> OpenFile {
        *self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `attempt` on the file's handle, opened again in the current session first when a
    /// reconnect has ended the one it was opened in; reconnects and tries again while the
    /// connection is lost, up to [`ATTEMPTS`] times.
    async fn on_handle<'a>(
        &'a self,
        op: WriteOp,
        attempt: impl Fn(Session, FileId) -> Attempt<'a, ()>,
    ) -> Result<(), WriteError> {
        let inner = &*self.inner;
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let mut file = self.file();
            let session = inner.session();
            if file.generation != session.generation {
                // Opened in a session a reconnect has ended: the bytes it wrote are in the file.
                let reopened = OpenFile::open(inner, op, &self.relative, CreateDisposition::FileOpen).await?;
                let spare = {
                    let mut stored = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if stored.generation == reopened.generation {
                        // A call beside this one reopened it first: keep its handle.
                        file = *stored;
                        Some(reopened)
                    } else {
                        (*stored, file) = (reopened, reopened);
                        None
                    }
                };
                if let Some(spare) = spare {
                    spare.close(inner, &self.relative).await?;
                }
            }
            let session = inner.session();
            if session.generation != file.generation {
                continue;
            }
            match attempt(session, file.file_id).await {
                Ok(()) => return Ok(()),
                Err(failure) if failure.lost() || inner.session().generation != file.generation => {
                    last = Some(failure);
                    inner
                        .reconnect(file.generation)
                        .await
                        .map_err(|e| unavailable(inner, op, &self.relative, e))?;
                }
                Err(failure) => return Err(failed(inner, op, &self.relative, failure)),
            }
        }
        let e = last.map_or_else(String::new, |f| failed(inner, op, &self.relative, f).reason);
        Err(write_error(
            inner,
            op,
            &self.relative,
            StorageErrorKind::Io,
            format!("{e}, on each of {ATTEMPTS} connections in turn (the connection lost at every try)"),
        ))
    }

    /// FLUSH; the file is clean after it unless written meanwhile.
    async fn flush(&self) -> Result<(), WriteError> {
        let was_dirty = self.dirty.swap(false, Ordering::AcqRel);
        let inner = &*self.inner;
        let flushed = self
            .on_handle(WriteOp::Sync, |session, file_id| {
                let conn = inner.connection.clone();
                Box::pin(on_client(inner, flush(conn, session, file_id)))
            })
            .await;
        if flushed.is_err() && was_dirty {
            self.dirty.store(true, Ordering::Release);
        }
        flushed?;
        self.counters.n_syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[async_trait::async_trait]
impl WriteFile for SmbWriteFile {
    fn path(&self) -> &Path {
        &self.path
    }

    /// WRITEs of at most the write size, all in flight together; a stable write is followed
    /// by a FLUSH.
    async fn write_at(&self, offset: u64, data: WriteBytes, stability: Stability) -> Result<u64, WriteError> {
        let inner = &*self.inner;
        self.dirty.store(true, Ordering::Release);
        let (len, data) = (data.len(), &data);
        self.on_handle(WriteOp::Write, |session, file_id| {
            let writes = chunks(offset, len, self.write_size).map(move |(at, range)| {
                let (conn, session, data) = (inner.connection.clone(), session.clone(), Arc::clone(data));
                on_client(inner, write_chunk(conn, session, file_id, at, data, range))
            });
            Box::pin(async move {
                for result in futures_util::future::join_all(writes).await {
                    result?;
                }
                Ok(())
            })
        })
        .await?;
        self.counters.n_writes.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes.fetch_add(len as u64, Ordering::Relaxed);
        if stability != Stability::Unstable {
            self.flush().await?;
        }
        Ok(len as u64)
    }

    /// SET_INFO FileAllocationInformation: the server reserves `len` bytes for the file.
    async fn preallocate(&self, len: u64) -> Result<bool, WriteError> {
        let inner = &*self.inner;
        self.on_handle(WriteOp::Write, |session, file_id| {
            let conn = inner.connection.clone();
            Box::pin(on_client(inner, allocate(conn, session, file_id, len)))
        })
        .await?;
        Ok(true)
    }

    /// SMB2 FLUSH: the server writes the file to its disk.
    async fn sync(&self) -> Result<(), WriteError> {
        self.flush().await
    }

    /// CLOSE, without a FLUSH; a file with writes not flushed is left for
    /// [`WriteStorage::sync_all`].
    async fn close(self: Box<Self>) -> Result<(), WriteError> {
        let file = self.file();
        if self.dirty.load(Ordering::Acquire) {
            self.unsynced
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(self.relative.clone());
        }
        file.close(&self.inner, &self.relative).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_split_into_writes_of_at_most_the_write_size() {
        let split: Vec<_> = chunks(100, 10, 4).collect();
        assert_eq!(split, vec![(100, 0..4), (104, 4..8), (108, 8..10)]);
        assert_eq!(chunks(0, 8, 4).collect::<Vec<_>>(), vec![(0, 0..4), (4, 4..8)]);
        assert_eq!(chunks(7, 3, 1 << 20).collect::<Vec<_>>(), vec![(7, 0..3)]);
        assert_eq!(chunks(0, 0, 4).count(), 0, "nothing to send");
        // A 2K DPX frame in 1 MiB WRITEs: 13, the last short, covering every byte once.
        let frame = 12_812_288;
        let split: Vec<_> = chunks(0, frame, 1 << 20).collect();
        assert_eq!(split.len(), 13);
        assert_eq!(split.iter().map(|(_, r)| r.len()).sum::<usize>(), frame);
        assert!(split.windows(2).all(|w| w[0].1.end == w[1].1.start && w[1].0 == w[1].1.start as u64));
    }

    #[test]
    fn a_write_is_charged_a_credit_per_64_kib_begun() {
        assert_eq!(credit_charge(0), 1);
        assert_eq!(credit_charge(1), 1);
        assert_eq!(credit_charge(64 << 10), 1);
        assert_eq!(credit_charge((64 << 10) + 1), 2);
        assert_eq!(credit_charge(1 << 20), 16);
        assert_eq!(credit_charge(8 << 20), 128);
    }

    #[test]
    fn paths_are_spelled_as_a_create_names_them() {
        assert_eq!(wire_path("shot/a.dpx", None), "shot\\a.dpx");
        assert_eq!(wire_path("a.dpx", None), "a.dpx");
        assert_eq!(wire_path("shot/a.dpx", Some(("filer", "media"))), "filer\\media\\shot\\a.dpx");
        assert_eq!(wire_path("", Some(("filer", "media"))), "filer\\media");
    }

    #[test]
    fn directories_are_made_from_the_root_down() {
        assert_eq!(ancestors("a/b/c"), vec!["a", "a/b", "a/b/c"]);
        assert_eq!(ancestors("a"), vec!["a"]);
        assert!(ancestors("").is_empty(), "the share's root exists");
    }

    #[test]
    fn files_under_a_directory_are_its_own_and_its_subdirectories() {
        assert!(is_under("rec/a.dpx", "rec"));
        assert!(is_under("rec/sub/a.dpx", "rec"));
        assert!(is_under("a.dpx", ""));
        assert!(!is_under("record/a.dpx", "rec"));
        assert!(!is_under("other/a.dpx", "rec"));
    }
}
