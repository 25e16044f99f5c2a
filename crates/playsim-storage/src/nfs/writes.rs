//! The write side of playsim's NFSv3 client: the calls (CREATE, WRITE, COMMIT, RENAME,
//! REMOVE, MKDIR, RMDIR, FSSTAT) and [`NfsWriter`], the storage write API over them.
//!
//! - A file is created UNCHECKED with size 0 (so an existing one is truncated), and written
//!   with WRITEs of at most the server's `wtmax`, all of a call's in flight together.
//! - An UNSTABLE write keeps its bytes (shared, no copy) until a COMMIT. If the COMMIT's write
//!   verifier differs from the writes' (the server restarted and may have lost them), the kept
//!   writes are sent again, FILE_SYNC, as RFC 1813 § 3.3.21 asks.
//! - A close COMMITs what is not committed yet: the kernel client's close-to-open behaviour, so
//!   that a frame renamed into place is on the server's disk when the next client opens it.
//! - Every call is retried across reconnects by the pool. A retried RENAME or REMOVE whose
//!   first try did take effect answers NFS3ERR_NOENT; for RENAME that is success when the
//!   target is there; for REMOVE (and RMDIR) it is NotFound, as for a file never there, which
//!   a caller clearing files (record's trials) takes as done.
//! - Each call's polls are timed in thread CPU, as the reads' are (`CpuMeter`), into the
//!   writer's client's counter; over TCP the replies are read inside those polls. That and the
//!   CPU of the transport's own threads (RDMA's pollers) is [`WriteStats::cpu_ns`].

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use nfs3_types::nfs3::{
    createhow3, diropargs3, filename3, sattr3, stable_how, COMMIT3args, COMMIT3res, CREATE3args, CREATE3res,
    FSINFO3args, FSINFO3res, FSSTAT3args, FSSTAT3res, MKDIR3args, MKDIR3res, Nfs3Option, Nfs3Result,
    REMOVE3args, REMOVE3res, RENAME3args, RENAME3res, RMDIR3args, RMDIR3res, WRITE3args, WRITE3res,
    NFS_PROGRAM,
};
use nfs3_types::xdr_codec::Opaque;
use playsim_core::StorageErrorKind;

use super::channel::{BulkPayload, Reply};
use super::client::{handle, pack, unpack, NfsFailure, NfsPool};
use super::rpc::SMALL_REPLY_BYTES;
use super::storage::NfsStorage;
use crate::write::{
    Stability, WriteBytes, WriteCounters, WriteError, WriteFile, WriteOp, WriteStats, WriteStorage,
};

/// NFS3ERR_NOENT.
const NOENT: u32 = 2;
/// NFS3ERR_EXIST.
const EXIST: u32 = 17;
/// The mode of files and directories created: rw-r--r--, rwxr-xr-x.
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// A WRITE's result: bytes written, how stable, and the server's write verifier.
pub(crate) struct Written {
    count: u32,
    verifier: [u8; 8],
}

impl NfsPool {
    /// CREATE of `name` in directory `dir`, UNCHECKED with size 0: its file handle.
    pub(crate) async fn create(&self, dir: &[u8], name: &str) -> Result<Vec<u8>, NfsFailure> {
        let attributes =
            sattr3 { mode: Nfs3Option::Some(FILE_MODE), size: Nfs3Option::Some(0), ..sattr3::default() };
        let args = CREATE3args {
            where_: diropargs3 { dir: handle(dir), name: filename3(Opaque::borrowed(name.as_bytes())) },
            how: createhow3::UNCHECKED(attributes),
        };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_CREATE, &args).await?;
        check_created(reply.body())?;
        match unpack::<CREATE3res>(&reply)? {
            Nfs3Result::Ok(ok) => match ok.obj {
                Nfs3Option::Some(fh) => Ok(fh.data.to_vec()),
                Nfs3Option::None => Ok(self.lookup(dir, name).await?.handle.to_vec()),
            },
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// MKDIR of `name` in `dir`: its handle. One that exists already is looked up.
    pub(crate) async fn mkdir(&self, dir: &[u8], name: &str) -> Result<Vec<u8>, NfsFailure> {
        let attributes = sattr3 { mode: Nfs3Option::Some(DIR_MODE), ..sattr3::default() };
        let args = MKDIR3args {
            where_: diropargs3 { dir: handle(dir), name: filename3(Opaque::borrowed(name.as_bytes())) },
            attributes,
        };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_MKDIR, &args).await?;
        check_created(reply.body())?;
        match unpack::<MKDIR3res>(&reply)? {
            Nfs3Result::Ok(ok) => match ok.obj {
                Nfs3Option::Some(fh) => Ok(fh.data.to_vec()),
                Nfs3Option::None => Ok(self.lookup(dir, name).await?.handle.to_vec()),
            },
            Nfs3Result::Err((status, _)) if status as u32 == EXIST => {
                Ok(self.lookup(dir, name).await?.handle.to_vec())
            }
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// WRITE of `data` at `offset` into `fh`, as stable as `stable`.
    pub(crate) async fn write(
        &self,
        fh: &[u8],
        offset: u64,
        data: &[u8],
        stable: stable_how,
    ) -> Result<Written, NfsFailure> {
        let count = u32::try_from(data.len()).map_err(|_| NfsFailure::Protocol("write too large".into()))?;
        let args = WRITE3args { file: handle(fh), offset, count, stable, data: Opaque::borrowed(data) };
        let packed = pack(&args)?;
        let bulk = write_data_item(fh.len(), data.len(), packed.len());
        let reply = self.call_packed(NFS_PROGRAM::NFSPROC3_WRITE, &packed, bulk, SMALL_REPLY_BYTES).await?;
        match unpack::<WRITE3res>(&reply)? {
            Nfs3Result::Ok(ok) => {
                if ok.count > count {
                    return Err(NfsFailure::Protocol(format!(
                        "the server says it wrote {} bytes of a write of {count}",
                        ok.count
                    )));
                }
                Ok(Written { count: ok.count, verifier: ok.verf.0 })
            }
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// COMMIT of the whole of `fh`: the server's write verifier.
    pub(crate) async fn commit(&self, fh: &[u8]) -> Result<[u8; 8], NfsFailure> {
        let args = COMMIT3args { file: handle(fh), offset: 0, count: 0 };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_COMMIT, &args).await?;
        match unpack::<COMMIT3res>(&reply)? {
            Nfs3Result::Ok(ok) => Ok(ok.verf.0),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// RENAME of `from_name` in `from_dir` to `to_name` in `to_dir`, replacing it.
    pub(crate) async fn rename(
        &self,
        (from_dir, from_name): (&[u8], &str),
        (to_dir, to_name): (&[u8], &str),
    ) -> Result<(), NfsFailure> {
        let args = RENAME3args {
            from: diropargs3 {
                dir: handle(from_dir),
                name: filename3(Opaque::borrowed(from_name.as_bytes())),
            },
            to: diropargs3 { dir: handle(to_dir), name: filename3(Opaque::borrowed(to_name.as_bytes())) },
        };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_RENAME, &args).await?;
        match unpack::<RENAME3res>(&reply)? {
            Nfs3Result::Ok(_) => Ok(()),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// REMOVE of `name` in `dir`.
    pub(crate) async fn remove(&self, dir: &[u8], name: &str) -> Result<(), NfsFailure> {
        let args = REMOVE3args {
            object: diropargs3 { dir: handle(dir), name: filename3(Opaque::borrowed(name.as_bytes())) },
        };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_REMOVE, &args).await?;
        match unpack::<REMOVE3res>(&reply)? {
            Nfs3Result::Ok(_) => Ok(()),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// RMDIR of `name` in `dir`: the server refuses a directory that is not empty
    /// (NFS3ERR_NOTEMPTY).
    pub(crate) async fn rmdir(&self, dir: &[u8], name: &str) -> Result<(), NfsFailure> {
        let args = RMDIR3args {
            object: diropargs3 { dir: handle(dir), name: filename3(Opaque::borrowed(name.as_bytes())) },
        };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_RMDIR, &args).await?;
        match unpack::<RMDIR3res>(&reply)? {
            Nfs3Result::Ok(_) => Ok(()),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// FSINFO's largest write size.
    pub(crate) async fn wtmax(&self, root: &[u8]) -> Result<u32, NfsFailure> {
        let reply = self.call(NFS_PROGRAM::NFSPROC3_FSINFO, &FSINFO3args { fsroot: handle(root) }).await?;
        match unpack::<FSINFO3res>(&reply)? {
            Nfs3Result::Ok(ok) => Ok(ok.wtmax),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// FSSTAT: bytes in all, and free to this user.
    pub(crate) async fn fsstat(&self, root: &[u8]) -> Result<(u64, u64), NfsFailure> {
        let reply = self.call(NFS_PROGRAM::NFSPROC3_FSSTAT, &FSSTAT3args { fsroot: handle(root) }).await?;
        match unpack::<FSSTAT3res>(&reply)? {
            Nfs3Result::Ok(ok) => Ok((ok.tbytes, ok.abytes)),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }
}

/// Where the data of a WRITE3args lies in its XDR (RFC 1813): after the file handle (its length
/// word and its bytes, padded to 4), the offset (8 bytes), the count, `stable` and the data's
/// own length word (4 bytes each); the data and its padding end the arguments. `None` when the
/// packed arguments are not that long, which would be an encoder this does not know: the call
/// is then sent whole, as if it had no bulk data.
fn write_data_item(fh_len: usize, data_len: usize, packed_len: usize) -> Option<BulkPayload> {
    let offset = 4 + fh_len.div_ceil(4) * 4 + 8 + 4 + 4 + 4;
    let item = BulkPayload { offset, len: data_len };
    (offset + item.padded_len() == packed_len).then_some(item)
}

/// Checks the file handle of a CREATE3res or MKDIR3res (a `post_op_fh3`) against the 64 bytes
/// NFSv3 allows and the bytes there, before nfs3_types decodes it: it would reserve what the
/// length claims first.
fn check_created(body: &[u8]) -> Result<(), NfsFailure> {
    let mut r = super::xdr::XdrReader::new(body);
    let malformed =
        || NfsFailure::Protocol("malformed create reply: its file handle is not 0 to 64 bytes".into());
    if r.u32() == Some(0) && r.u32() == Some(1) {
        let handle = r.opaque().ok_or_else(malformed)?;
        if handle.len() > 64 {
            return Err(malformed());
        }
    }
    Ok(())
}

/// Runs every decoder of the write side over `reply`, for the `nfs_reply` fuzz target (see
/// [`super::decode_any_reply`]).
pub(super) fn decode_write_replies(reply: &Reply) {
    if check_created(reply.body()).is_ok() {
        let _ = unpack::<CREATE3res>(reply);
        let _ = unpack::<MKDIR3res>(reply);
    }
    let _ = unpack::<WRITE3res>(reply);
    let _ = unpack::<COMMIT3res>(reply);
    let _ = unpack::<RENAME3res>(reply);
    let _ = unpack::<REMOVE3res>(reply);
    let _ = unpack::<RMDIR3res>(reply);
    let _ = unpack::<FSSTAT3res>(reply);
}

/// The largest WRITE sent, whatever the server allows: 1 MiB, as the kernel's default wsize.
const MAX_WSIZE: u32 = 1 << 20;

/// Files written in an NFS export through playsim's own client: the storage write API.
/// Paths are server paths (`/export/dir/file`), as [`NfsStorage`] reads them.
pub struct NfsWriter {
    storage: NfsStorage,
    wsize: usize,
    counters: Arc<WriteCounters>,
}

impl NfsWriter {
    /// The write side of `storage`: its connections, its export, its handle cache. Asks the
    /// server for its largest write size.
    pub async fn new(storage: NfsStorage) -> Result<NfsWriter, WriteError> {
        let root = storage.root_handle();
        let wtmax = storage
            .pool()
            .wtmax(&root)
            .await
            .map_err(|e| storage.write_error(WriteOp::Create, Path::new(storage.export()), e))?;
        let wsize = wtmax.clamp(4096, MAX_WSIZE) as usize;
        Ok(NfsWriter { storage, wsize, counters: Arc::default() })
    }

    /// The largest WRITE it sends.
    pub fn wsize(&self) -> usize {
        self.wsize
    }

    /// Bytes in all and free to this user on the export's file system (FSSTAT).
    pub async fn space(&self) -> Result<(u64, u64), WriteError> {
        let root = self.storage.root_handle();
        let export = PathBuf::from(self.storage.export());
        self.storage
            .metered(self.storage.pool().fsstat(&root))
            .await
            .map_err(|e| self.storage.write_error(WriteOp::Create, &export, e))
    }

    /// The handle of directory `dir` and the name of `path` in it.
    async fn parent<'p>(&self, op: WriteOp, path: &'p Path) -> Result<(Arc<[u8]>, &'p str), WriteError> {
        let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            WriteError::new(StorageErrorKind::Invalid, op, path, "no file name, or not UTF-8")
        })?;
        let dir = path.parent().and_then(Path::to_str).unwrap_or("/");
        let node =
            self.storage.node_of(dir).await.map_err(|e| WriteError::new(e.kind, op, path, e.message))?;
        Ok((node.handle, name))
    }
}

#[async_trait::async_trait]
impl WriteStorage for NfsWriter {
    fn describe(&self) -> String {
        // Over TCP as it always was; over another transport (RDMA, whose WRITEs send their
        // data in read chunks) the transport is named, so that a report says which it was.
        let (scheme, over) = match self.storage.proto() {
            "rdma" => ("nfs+rdma", " over RDMA"),
            _ => ("nfs", ""),
        };
        format!(
            "{scheme}:// export {} (playsim's NFSv3 client{over}, WRITE {} KiB)",
            self.storage.export(),
            self.wsize >> 10
        )
    }

    async fn create_dir_all(&self, dir: &Path) -> Result<(), WriteError> {
        let text = dir.to_str().ok_or_else(|| {
            WriteError::new(StorageErrorKind::Invalid, WriteOp::CreateDir, dir, "the path is not UTF-8")
        })?;
        let export = self.storage.export().trim_end_matches('/').to_owned();
        if !crate::nfs::url::is_path_prefix(&export, text) {
            let why = format!("it is outside the export {export}");
            return Err(WriteError::new(StorageErrorKind::NotFound, WriteOp::CreateDir, dir, why));
        }
        let walk = async {
            let mut walked = export.clone();
            let mut handle = self.storage.root_handle();
            for component in text[export.len().min(text.len())..].split('/').filter(|c| !c.is_empty()) {
                walked.push('/');
                walked.push_str(component);
                handle = match self.storage.node_of(&walked).await {
                    Ok(node) => node.handle,
                    Err(e) if e.kind == StorageErrorKind::NotFound => {
                        let made = self.storage.pool().mkdir(&handle, component).await;
                        Arc::from(made.map_err(|e| self.storage.write_error(WriteOp::CreateDir, dir, e))?)
                    }
                    Err(e) => return Err(WriteError::new(e.kind, WriteOp::CreateDir, dir, e.message)),
                };
            }
            Ok(())
        };
        self.storage.metered(walk).await
    }

    async fn create(&self, path: &Path) -> Result<Box<dyn WriteFile>, WriteError> {
        let created = async {
            let (dir, name) = self.parent(WriteOp::Create, path).await?;
            let fh = self.storage.pool().create(&dir, name).await;
            fh.map_err(|e| self.storage.write_error(WriteOp::Create, path, e))
        };
        let fh = self.storage.metered(created).await?;
        Ok(Box::new(NfsWriteFile {
            storage: self.storage.clone_handle(),
            path: path.to_path_buf(),
            fh: Arc::from(fh),
            wsize: self.wsize,
            unstable: Mutex::new(Unstable::default()),
            counters: Arc::clone(&self.counters),
        }))
    }

    async fn rename(&self, from: &Path, to: &Path) -> Result<(), WriteError> {
        let renamed = async {
            let (from_dir, from_name) = self.parent(WriteOp::Rename, from).await?;
            let (to_dir, to_name) = self.parent(WriteOp::Rename, to).await?;
            let renamed = self.storage.pool().rename((&from_dir, from_name), (&to_dir, to_name)).await;
            self.storage.forget(from);
            self.storage.forget(to);
            match renamed {
                Ok(()) => Ok(()),
                // A retry of a RENAME that took effect: the source is gone and the target there.
                Err(NfsFailure::Status(NOENT))
                    if self.storage.pool().lookup(&to_dir, to_name).await.is_ok() =>
                {
                    Ok(())
                }
                Err(e) => Err(self.storage.write_error(WriteOp::Rename, from, e)),
            }
        };
        self.storage.metered(renamed).await
    }

    async fn remove(&self, path: &Path) -> Result<(), WriteError> {
        let removed = async {
            let (dir, name) = self.parent(WriteOp::Remove, path).await?;
            let removed = self.storage.pool().remove(&dir, name).await;
            self.storage.forget(path);
            removed.map_err(|e| self.storage.write_error(WriteOp::Remove, path, e))
        };
        self.storage.metered(removed).await
    }

    /// RMDIR, through the same pool as REMOVE; a NOENT (a retry whose first try took effect,
    /// or a directory never there) is NotFound, as REMOVE's is.
    async fn remove_dir(&self, dir: &Path) -> Result<(), WriteError> {
        let removed = async {
            let (parent, name) = self.parent(WriteOp::RemoveDir, dir).await?;
            let removed = self.storage.pool().rmdir(&parent, name).await;
            self.storage.forget(dir);
            removed.map_err(|e| self.storage.write_error(WriteOp::RemoveDir, dir, e))
        };
        self.storage.metered(removed).await
    }

    /// FSSTAT's bytes free to this user, on the export's file system.
    async fn free_bytes(&self, _dir: &Path) -> Result<Option<u64>, WriteError> {
        Ok(Some(self.space().await?.1))
    }

    /// Nothing to do: every file was committed at its close.
    async fn sync_all(&self, _dir: &Path) -> Result<(), WriteError> {
        Ok(())
    }

    /// The counts, and the CPU time of the writer's client (its calls and its transport).
    fn stats(&self) -> WriteStats {
        WriteStats { cpu_ns: self.storage.cpu_ns(), ..self.counters.stats() }
    }
}

/// The UNSTABLE writes of a file not yet committed: their bytes, kept to send again, and the
/// verifiers they were written under.
#[derive(Default)]
struct Unstable {
    writes: Vec<(u64, WriteBytes)>,
    written_under: WrittenUnder,
}

/// The write verifiers a file's kept writes were written under. A COMMIT covers them only when
/// they were all written under the verifier it answers: a server that restarted between two
/// writes (its verifier changed) may have lost the first, even if the COMMIT's matches the
/// second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum WrittenUnder {
    #[default]
    Nothing,
    One([u8; 8]),
    Several,
}

impl WrittenUnder {
    /// With one more write, written under `verifier` (None: its WRITEs' verifiers differed).
    fn and(self, verifier: Option<[u8; 8]>) -> WrittenUnder {
        match (self, verifier) {
            (WrittenUnder::Nothing, Some(v)) => WrittenUnder::One(v),
            (WrittenUnder::One(a), Some(b)) if a == b => WrittenUnder::One(a),
            _ => WrittenUnder::Several,
        }
    }

    /// Whether a COMMIT answered with `committed` covers every kept write.
    fn covered_by(self, committed: [u8; 8]) -> bool {
        self == WrittenUnder::One(committed)
    }
}

struct NfsWriteFile {
    storage: NfsStorage,
    path: PathBuf,
    fh: Arc<[u8]>,
    wsize: usize,
    unstable: Mutex<Unstable>,
    counters: Arc<WriteCounters>,
}

impl NfsWriteFile {
    fn unstable(&self) -> std::sync::MutexGuard<'_, Unstable> {
        self.unstable.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends `data` at `offset` as WRITEs of at most `wsize`, all in flight together; a short
    /// write is finished with more. Returns the verifier they were all written under, or None
    /// when they differ (the server restarted among them).
    async fn send(
        &self,
        offset: u64,
        data: &[u8],
        stable: stable_how,
    ) -> Result<Option<[u8; 8]>, WriteError> {
        let chunks = data.chunks(self.wsize).enumerate().map(|(i, chunk)| {
            let at = offset + (i * self.wsize) as u64;
            self.send_chunk(at, chunk, stable)
        });
        let mut under = WrittenUnder::Nothing;
        for result in futures_util::future::join_all(chunks).await {
            under = under.and(result?);
        }
        Ok(match under {
            WrittenUnder::One(verifier) => Some(verifier),
            WrittenUnder::Nothing | WrittenUnder::Several => None,
        })
    }

    /// Sends one WRITE, and more while the server writes less than sent. Returns the verifier
    /// they were all written under, or None when they differ.
    async fn send_chunk(
        &self,
        mut offset: u64,
        mut chunk: &[u8],
        stable: stable_how,
    ) -> Result<Option<[u8; 8]>, WriteError> {
        let mut under = WrittenUnder::Nothing;
        loop {
            let written = self.storage.pool().write(&self.fh, offset, chunk, stable).await;
            let written = written.map_err(|e| self.storage.write_error(WriteOp::Write, &self.path, e))?;
            if written.count == 0 && !chunk.is_empty() {
                let why = "the server wrote 0 bytes of a write";
                return Err(WriteError::new(StorageErrorKind::Io, WriteOp::Write, &self.path, why));
            }
            under = under.and(Some(written.verifier));
            let n = written.count as usize;
            if n >= chunk.len() {
                return Ok(match under {
                    WrittenUnder::One(verifier) => Some(verifier),
                    WrittenUnder::Nothing | WrittenUnder::Several => None,
                });
            }
            (offset, chunk) = (offset + n as u64, &chunk[n..]);
        }
    }

    /// COMMITs the file; sends the kept writes again (FILE_SYNC) when the server's verifier
    /// changed since they were written.
    async fn commit(&self) -> Result<(), WriteError> {
        let (writes, written_under) = {
            let unstable = self.unstable();
            (unstable.writes.clone(), unstable.written_under)
        };
        if writes.is_empty() {
            return Ok(());
        }
        let committed = self.storage.pool().commit(&self.fh).await;
        let committed = committed.map_err(|e| self.storage.write_error(WriteOp::Sync, &self.path, e))?;
        self.counters.n_syncs.fetch_add(1, Ordering::Relaxed);
        if !written_under.covered_by(committed) {
            // The server restarted since (RFC 1813 § 3.3.7): what it had not written is lost.
            for (offset, data) in &writes {
                self.send(*offset, data, stable_how::FILE_SYNC).await?;
            }
        }
        let mut unstable = self.unstable();
        unstable
            .writes
            .retain(|(offset, data)| !writes.iter().any(|(o, d)| o == offset && Arc::ptr_eq(d, data)));
        if unstable.writes.is_empty() {
            unstable.written_under = WrittenUnder::Nothing;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl WriteFile for NfsWriteFile {
    fn path(&self) -> &Path {
        &self.path
    }

    async fn write_at(&self, offset: u64, data: WriteBytes, stability: Stability) -> Result<u64, WriteError> {
        let stable = match stability {
            Stability::Unstable => stable_how::UNSTABLE,
            Stability::DataSync => stable_how::DATA_SYNC,
            Stability::FileSync => stable_how::FILE_SYNC,
        };
        let verifier = self.storage.metered(self.send(offset, &data, stable)).await?;
        self.counters.n_writes.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        if stability == Stability::Unstable {
            let mut unstable = self.unstable();
            // A restart between two writes makes it Several: commit then sends both again.
            unstable.written_under = unstable.written_under.and(verifier);
            unstable.writes.push((offset, data.clone()));
        } else {
            self.counters.n_syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(data.len() as u64)
    }

    /// NFSv3 has no way to reserve space (ALLOCATE is NFSv4.2's).
    async fn preallocate(&self, _len: u64) -> Result<bool, WriteError> {
        Ok(false)
    }

    async fn sync(&self) -> Result<(), WriteError> {
        self.storage.metered(self.commit()).await
    }

    /// Commits what is not committed yet, as the kernel client does at close.
    async fn close(self: Box<Self>) -> Result<(), WriteError> {
        self.storage.metered(self.commit()).await
    }
}

#[cfg(test)]
mod tests {
    use nfs3_types::nfs3::{stable_how, WRITE3args};
    use nfs3_types::xdr_codec::Opaque;

    use super::{check_created, handle, pack, write_data_item, WrittenUnder};

    #[test]
    fn a_write_names_where_its_data_lies_in_its_packed_arguments() {
        // Handles and data of lengths that need padding and that do not.
        for (fh_len, data_len) in [(32, 4096), (30, 5), (64, 0), (1, 1 << 20), (28, 7)] {
            let fh: Vec<u8> = (0..fh_len).map(|i| i as u8).collect();
            let data: Vec<u8> = (0..data_len).map(|i| (i % 251) as u8 ^ 0x5a).collect();
            let args = WRITE3args {
                file: handle(&fh),
                offset: 1 << 40,
                count: data_len as u32,
                stable: stable_how::UNSTABLE,
                data: Opaque::borrowed(&data),
            };
            let packed = pack(&args).unwrap();
            let item = write_data_item(fh.len(), data.len(), packed.len()).unwrap();
            assert_eq!(item.offset % 4, 0);
            assert_eq!(packed[item.offset - 4..item.offset], (data_len as u32).to_be_bytes());
            assert_eq!(&packed[item.offset..item.offset + item.len], &data[..]);
            assert_eq!(item.offset + item.padded_len(), packed.len());
            assert!(packed[item.offset + item.len..].iter().all(|b| *b == 0));
            // Arguments of another length are not taken for a WRITE's.
            assert_eq!(write_data_item(fh.len(), data.len(), packed.len() + 4), None);
        }
    }

    /// A CREATE3res: NFS3_OK, a handle following, its length claim and `bytes` after it.
    fn created(claim: u32, bytes: usize) -> Vec<u8> {
        let mut body = [0u32, 1, claim].iter().flat_map(|v| v.to_be_bytes()).collect::<Vec<u8>>();
        body.resize(body.len() + bytes, 0xa5);
        body
    }

    #[test]
    fn a_created_handle_longer_than_64_bytes_is_refused_before_decoding() {
        assert!(check_created(&created(32, 32)).is_ok());
        assert!(check_created(&created(0x7fff_ffff, 64)).is_err());
        assert!(check_created(&created(68, 68)).is_err());
        assert!(check_created(&created(32, 8)).is_err());
        // An error status, or no handle: nothing to check.
        assert!(check_created(&[0, 0, 0, 28]).is_ok());
    }

    #[test]
    fn a_commit_covers_writes_only_when_all_were_written_under_its_verifier() {
        let (a, b) = ([1; 8], [2; 8]);
        assert!(!WrittenUnder::Nothing.covered_by(a));
        assert!(WrittenUnder::Nothing.and(Some(a)).and(Some(a)).covered_by(a));
        assert!(!WrittenUnder::Nothing.and(Some(a)).covered_by(b));
        // A restart between the first write and the second: the COMMIT matches the second,
        // and the first may be lost. This stayed covered when a third write came.
        let restarted = WrittenUnder::Nothing.and(Some(a)).and(Some(b));
        assert!(!restarted.covered_by(b));
        assert!(!restarted.and(Some(b)).covered_by(b));
        // A write whose WRITEs' verifiers differed among themselves.
        assert!(!WrittenUnder::Nothing.and(None).and(Some(a)).covered_by(a));
    }
}
