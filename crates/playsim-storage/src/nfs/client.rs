//! The NFSv3 calls playsim makes, over a pool of `nconnect` channels of one RPC transport
//! ([`RpcConnector`]: TCP, or RPC-over-RDMA from another crate) that reconnect with bounded
//! backoff, and the MOUNT and portmapper calls (always TCP) that find the export's root handle.

use std::io::Cursor;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nfs3_types::mount::{dirpath, exports, mountres3, MOUNT_PROGRAM};
use nfs3_types::nfs3::{
    cookieverf3, diropargs3, fattr3, filename3, ftype3, nfs_fh3, FSINFO3args, FSINFO3res, GETATTR3args,
    GETATTR3res, LOOKUP3args, LOOKUP3res, Nfs3Option, Nfs3Result, READ3args, READDIRPLUS3args,
    READDIRPLUS3res, NFS_PROGRAM,
};
use nfs3_types::portmap::{mapping, PMAP_PROG};
use nfs3_types::xdr_codec::{Opaque, Pack, Unpack, Void};
use tokio::sync::{Mutex, Semaphore};

use super::channel::{
    Answer, BufferIdentity, BulkPayload, CallError, Credential, ReadInto, Reply, RpcCall, RpcChannel,
    RpcConnector,
};
use super::rpc::{RpcConnection, SMALL_REPLY_BYTES};
use super::xdr::XdrReader;

const NFS_PROGRAM_NUMBER: u32 = nfs3_types::nfs3::PROGRAM;
const NFS_VERSION: u32 = 3;
const MOUNT_PROGRAM_NUMBER: u32 = nfs3_types::mount::PROGRAM;
const MOUNT_VERSION: u32 = 3;
const PORTMAP_PROGRAM: u32 = 100_000;
const PORTMAP_VERSION: u32 = 2;
const PORTMAP_PORT: u16 = 111;
const IPPROTO_TCP: u32 = 6;

/// The first wait before a reconnect; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// How many times a call's own reply may be cut off by the connection breaking before the call
/// is given up as refused (a server that resets every reply to one READ), not waited out.
const MAX_CUT_REPLIES: usize = 3;

/// The longest wait between reconnect attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Bytes of directory entries asked for per READDIRPLUS.
const READDIR_DIRCOUNT: u32 = 64 * 1024;
/// The largest READDIRPLUS reply asked for, entries and attributes.
const READDIR_MAXCOUNT: u32 = 1024 * 1024;
/// The largest READDIRPLUS reply: `maxcount` and the RPC and result headers around it.
const READDIR_REPLY_BYTES: usize = READDIR_MAXCOUNT as usize + 1024;

/// Why an NFS call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NfsFailure {
    /// The server did not answer within the time limit, through reconnects.
    Unavailable(String),
    /// The server answered with an NFS error status.
    Status(u32),
    /// The server refused the call or answered nonsense.
    Protocol(String),
    /// The transport refused the call for good ([`CallError::Fatal`]): every later call would
    /// fail the same way, so the source fails (as an unavailable server does).
    Fatal(String),
}

impl std::fmt::Display for NfsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NfsFailure::Unavailable(m) | NfsFailure::Protocol(m) | NfsFailure::Fatal(m) => f.write_str(m),
            NfsFailure::Status(s) => f.write_str(status_name(*s)),
        }
    }
}

/// Connection settings shared by the pool.
#[derive(Clone, Debug)]
pub(crate) struct PoolConfig {
    pub nconnect: usize,
    pub in_flight: usize,
    pub timeout: Duration,
    pub credential: Credential,
}

/// `nconnect` channels to the NFS service, each carrying many calls; a broken one is
/// replaced on its next use.
pub(crate) struct NfsPool {
    addr: SocketAddr,
    connector: Arc<dyn RpcConnector>,
    slots: Vec<Mutex<Slot>>,
    next_slot: AtomicUsize,
    in_flight: Semaphore,
    config: PoolConfig,
    reconnects: AtomicU64,
    /// The longest wait of one call, in nanoseconds, from its channel breaking to its answer
    /// over a new one (see [`NfsPool::longest_reconnect_wait`]).
    longest_reconnect_wait_ns: AtomicU64,
    /// Why the pool gave up, once a call has: every later call fails the same way at once.
    gave_up: std::sync::OnceLock<String>,
    /// Wakes the calls waiting out a backoff when the pool gives up.
    gave_up_notify: tokio::sync::Notify,
}

impl std::fmt::Debug for NfsPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfsPool").field("addr", &self.addr).field("nconnect", &self.slots.len()).finish()
    }
}

/// One of the pool's channels, made when first needed and replaced when broken.
struct Slot {
    connection: Option<Arc<dyn RpcChannel>>,
    ever_connected: bool,
}

/// A file's handle and attributes.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub handle: Arc<[u8]>,
    pub is_dir: bool,
    pub size: u64,
}

impl Node {
    fn from_attributes(handle: &[u8], attributes: &fattr3) -> Node {
        Node { handle: Arc::from(handle), is_dir: attributes.type_ == ftype3::NF3DIR, size: attributes.size }
    }
}

/// One directory entry from READDIRPLUS, with its handle when the server gave one, and its
/// attributes (whether it is a directory, its size) when the server gave them.
#[derive(Clone, Debug)]
pub(crate) struct ListedEntry {
    pub name: String,
    pub node: Option<Node>,
    pub attributes: Option<(bool, u64)>,
}

impl NfsPool {
    /// Opens the first channel through `connector`, so that a refused port is reported
    /// before anything else.
    pub async fn connect(
        addr: SocketAddr,
        config: PoolConfig,
        connector: Arc<dyn RpcConnector>,
    ) -> std::io::Result<NfsPool> {
        let first = tokio::time::timeout(config.timeout, connector.connect(addr, &config.credential))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer"))??;
        let n = config.nconnect.max(1);
        let slots: Vec<_> = (0..n)
            .map(|i| {
                Mutex::new(Slot { connection: (i == 0).then(|| Arc::clone(&first)), ever_connected: i == 0 })
            })
            .collect();
        Ok(NfsPool {
            addr,
            connector,
            slots,
            next_slot: AtomicUsize::new(0),
            in_flight: Semaphore::new(config.in_flight.max(1) * n),
            config,
            reconnects: AtomicU64::new(0),
            longest_reconnect_wait_ns: AtomicU64::new(0),
            gave_up: std::sync::OnceLock::new(),
            gave_up_notify: tokio::sync::Notify::new(),
        })
    }

    /// Times a connection was replaced after it broke.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// The longest time one call waited, from the first failure of its channel to its answer
    /// over a reconnected one: the longest outage the transport came through. Zero while no
    /// call has needed a reconnect. Read on tokio's timer, as the backoff is (one of the named
    /// exceptions to "only the engine reads the clock" in ARCHITECTURE.md): it bounds and
    /// reports the transport's own waits, and times no frame.
    pub fn longest_reconnect_wait(&self) -> Duration {
        Duration::from_nanos(self.longest_reconnect_wait_ns.load(Ordering::Relaxed))
    }

    /// Calls an NFS procedure whose reply is small, on the next channel in turn. A channel
    /// that breaks is replaced and the call sent again (every call playsim makes is
    /// idempotent), with a backoff from 50 ms doubling to 1 s, until the pool's timeout has
    /// passed since the first attempt; then the call fails as unavailable, and so do the
    /// calls still waiting out a backoff and every later call: the server was gone for the
    /// whole timeout, and a run should end then, not when the last call in flight gives up.
    pub async fn call(&self, procedure: NFS_PROGRAM, args: &(impl Pack + Sync)) -> Result<Reply, NfsFailure> {
        self.call_sized(procedure, args, SMALL_REPLY_BYTES).await
    }

    /// [`call`](Self::call), for a reply of up to `max_reply` bytes.
    async fn call_sized(
        &self,
        procedure: NFS_PROGRAM,
        args: &(impl Pack + Sync),
        max_reply: usize,
    ) -> Result<Reply, NfsFailure> {
        let args = pack(args)?;
        self.call_packed(procedure, &args, None, max_reply).await
    }

    /// [`call`](Self::call) with `args` already in XDR, and where its bulk data lies in them
    /// (a WRITE's), for a transport that sends that data apart from the call (RDMA's read
    /// chunks). TCP sends `args` as they are.
    pub(crate) async fn call_packed(
        &self,
        procedure: NFS_PROGRAM,
        args: &[u8],
        bulk: Option<BulkPayload>,
        max_reply: usize,
    ) -> Result<Reply, NfsFailure> {
        match self.call_into(procedure, args, None, bulk, max_reply).await? {
            Answer::Reply(reply) => Ok(reply),
            Answer::Data { .. } | Answer::Placed { .. } => {
                Err(NfsFailure::Protocol("unexpected data reply".into()))
            }
        }
    }

    /// Sends the call with packed `args`; a READ's data may go straight into `read_into`'s
    /// bytes, which lie in the buffer it names. A channel that breaks is replaced and the call
    /// sent again (see [`call`](Self::call)); a [`CallError::Fatal`] is not retried.
    async fn call_into(
        &self,
        procedure: NFS_PROGRAM,
        args: &[u8],
        mut read_into: Option<(&mut [u8], BufferIdentity)>,
        bulk: Option<BulkPayload>,
        max_reply: usize,
    ) -> Result<Answer, NfsFailure> {
        let _permit =
            self.in_flight.acquire().await.map_err(|_| NfsFailure::Protocol("pool closed".into()))?;
        let slot = self.next_slot.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let deadline = tokio::time::Instant::now() + self.config.timeout;
        let mut backoff = FIRST_BACKOFF;
        // How many times the connection broke in the middle of this call's own reply.
        let mut cut_replies = 0;
        // When this call's channel first failed: the start of the outage it waits through.
        let mut first_failure: Option<tokio::time::Instant> = None;
        loop {
            if let Some(reason) = self.gave_up.get() {
                return Err(NfsFailure::Unavailable(reason.clone()));
            }
            let call = RpcCall {
                program: NFS_PROGRAM_NUMBER,
                version: NFS_VERSION,
                procedure: procedure as u32,
                args,
                read_into: read_into.as_mut().map(|(dest, buffer)| ReadInto { dest, buffer: *buffer }),
                bulk,
                max_reply,
            };
            let attempt = async {
                let connection = self.connection(slot).await.map_err(|reason| (reason, false))?;
                match connection.call(call).await {
                    Err(CallError::Connection(reason)) => {
                        self.discard(slot, &connection).await;
                        Err((reason, false))
                    }
                    Err(CallError::ReplyCut(reason)) => {
                        self.discard(slot, &connection).await;
                        Err((reason, true))
                    }
                    other => Ok(other),
                }
            };
            let last_error = match tokio::time::timeout_at(deadline, attempt).await {
                Ok(Ok(Ok(answer))) => {
                    if let Some(failed_at) = first_failure {
                        let waited = u64::try_from(failed_at.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        self.longest_reconnect_wait_ns.fetch_max(waited, Ordering::Relaxed);
                    }
                    return Ok(answer);
                }
                Ok(Ok(Err(CallError::Fatal(reason)))) => {
                    return Err(NfsFailure::Fatal(format!("nfs server {}: {reason}", self.addr)))
                }
                Ok(Ok(Err(other))) => return Err(NfsFailure::Protocol(other.to_string())),
                Ok(Err((reason, cut))) => {
                    cut_replies += usize::from(cut);
                    if cut_replies >= MAX_CUT_REPLIES {
                        // Connecting works and other calls are answered; this one's reply is
                        // cut every time: the server refuses this call (the frame is unreadable).
                        return Err(NfsFailure::Protocol(format!(
                            "the server cut its reply to this call {cut_replies} times, each on a new \
                             connection (last: {reason})"
                        )));
                    }
                    reason
                }
                Err(_) => format!("no answer within {}", describe(self.config.timeout)),
            };
            let now = tokio::time::Instant::now();
            first_failure.get_or_insert(now);
            if now + backoff >= deadline {
                let reason = format!(
                    "nfs server {} unavailable for {}: {last_error}",
                    self.addr,
                    describe(self.config.timeout)
                );
                let _ = self.gave_up.set(reason.clone());
                self.gave_up_notify.notify_waiters();
                return Err(NfsFailure::Unavailable(reason));
            }
            // The backoff, cut short when another call gives up for the pool.
            let _ = tokio::time::timeout(backoff, self.gave_up_notify.notified()).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    async fn connection(&self, slot: usize) -> Result<Arc<dyn RpcChannel>, String> {
        let mut slot = self.slots[slot].lock().await;
        if let Some(connection) = slot.connection.as_ref().filter(|c| !c.is_broken()) {
            return Ok(Arc::clone(connection));
        }
        slot.connection = None;
        let connection = self
            .connector
            .connect(self.addr, &self.config.credential)
            .await
            .map_err(|e| format!("cannot reconnect to {}: {e}", self.addr))?;
        if slot.ever_connected {
            self.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        slot.ever_connected = true;
        slot.connection = Some(Arc::clone(&connection));
        Ok(connection)
    }

    async fn discard(&self, slot: usize, broken: &Arc<dyn RpcChannel>) {
        let mut slot = self.slots[slot].lock().await;
        if slot.connection.as_ref().is_some_and(|c| Arc::ptr_eq(c, broken)) {
            slot.connection = None;
        }
    }

    /// LOOKUP of `name` in directory `dir`.
    pub async fn lookup(&self, dir: &[u8], name: &str) -> Result<Node, NfsFailure> {
        let args = LOOKUP3args {
            what: diropargs3 { dir: handle(dir), name: filename3(Opaque::borrowed(name.as_bytes())) },
        };
        let reply = self.call(NFS_PROGRAM::NFSPROC3_LOOKUP, &args).await?;
        check_lookup(reply.body())?;
        match unpack::<LOOKUP3res>(&reply)? {
            Nfs3Result::Ok(ok) => match ok.obj_attributes {
                Nfs3Option::Some(attributes) => Ok(Node::from_attributes(&ok.object.data, &attributes)),
                Nfs3Option::None => self.getattr(&ok.object.data).await,
            },
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// GETATTR of `handle`.
    pub async fn getattr(&self, fh: &[u8]) -> Result<Node, NfsFailure> {
        let reply = self.call(NFS_PROGRAM::NFSPROC3_GETATTR, &GETATTR3args { object: handle(fh) }).await?;
        match unpack::<GETATTR3res>(&reply)? {
            Nfs3Result::Ok(ok) => Ok(Node::from_attributes(fh, &ok.obj_attributes)),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// FSINFO's largest and preferred read sizes.
    pub async fn read_sizes(&self, root: &[u8]) -> Result<(u32, u32), NfsFailure> {
        let reply = self.call(NFS_PROGRAM::NFSPROC3_FSINFO, &FSINFO3args { fsroot: handle(root) }).await?;
        match unpack::<FSINFO3res>(&reply)? {
            Nfs3Result::Ok(ok) => Ok((ok.rtmax, ok.rtpref)),
            Nfs3Result::Err((status, _)) => Err(NfsFailure::Status(status as u32)),
        }
    }

    /// Every entry of directory `dir`, by READDIRPLUS, following cookies to the end.
    pub async fn read_dir_plus(&self, dir: &[u8]) -> Result<Vec<ListedEntry>, NfsFailure> {
        let mut entries = Vec::new();
        let mut cookie = 0;
        let mut verifier = cookieverf3::default();
        loop {
            let args = READDIRPLUS3args {
                dir: handle(dir),
                cookie,
                cookieverf: verifier,
                dircount: READDIR_DIRCOUNT,
                maxcount: READDIR_MAXCOUNT,
            };
            let reply =
                self.call_sized(NFS_PROGRAM::NFSPROC3_READDIRPLUS, &args, READDIR_REPLY_BYTES).await?;
            check_readdirplus(reply.body())?;
            let ok = match unpack::<READDIRPLUS3res>(&reply)? {
                Nfs3Result::Ok(ok) => ok,
                Nfs3Result::Err((status, _)) => return Err(NfsFailure::Status(status as u32)),
            };
            verifier = ok.cookieverf;
            let n_before = entries.len();
            let had_entries = !ok.reply.entries.0.is_empty();
            for entry in ok.reply.entries.0 {
                cookie = entry.cookie;
                let Ok(name) = String::from_utf8(entry.name.0.to_vec()) else { continue };
                if name == "." || name == ".." {
                    continue;
                }
                let attributes = match &entry.name_attributes {
                    Nfs3Option::Some(attributes) => {
                        Some((attributes.type_ == ftype3::NF3DIR, attributes.size))
                    }
                    Nfs3Option::None => None,
                };
                let node = match (entry.name_handle, entry.name_attributes) {
                    (Nfs3Option::Some(fh), Nfs3Option::Some(attributes)) => {
                        Some(Node::from_attributes(&fh.data, &attributes))
                    }
                    _ => None,
                };
                entries.push(ListedEntry { name, node, attributes });
            }
            if ok.reply.eof {
                return Ok(entries);
            }
            // A page with no entries that is not the last would make the next call the same.
            if entries.len() == n_before && !had_entries {
                return Err(NfsFailure::Protocol("readdirplus returned an empty page before the end".into()));
            }
        }
    }

    /// READ of up to `out.len()` bytes at `offset` into `out`, which lies in the frame buffer
    /// `buffer`: read there straight from the transport, placed there by the server, or
    /// copied there from the reply. Returns the bytes read and whether the file ends there.
    pub async fn read(
        &self,
        fh: &[u8],
        offset: u64,
        out: &mut [u8],
        buffer: BufferIdentity,
    ) -> Result<(usize, bool), NfsFailure> {
        let count = u32::try_from(out.len()).map_err(|_| NfsFailure::Protocol("read too large".into()))?;
        let args = pack(&READ3args { file: handle(fh), offset, count })?;
        // A READ's data is not in its reply when the transport places it, so its reply is small.
        let answer = self.call_into(
            NFS_PROGRAM::NFSPROC3_READ,
            &args,
            Some((&mut *out, buffer)),
            None,
            SMALL_REPLY_BYTES,
        );
        let reply = match answer.await? {
            Answer::Data { n, eof } => return Ok((n, eof)),
            Answer::Placed { reply, placed } => return parse_placed_read(reply.body(), placed, out.len()),
            Answer::Reply(reply) => reply,
        };
        let (data, eof) = parse_read(reply.body())?;
        if data.len() > out.len() {
            return Err(NfsFailure::Protocol(format!(
                "the server sent {} bytes for a read of {}",
                data.len(),
                out.len()
            )));
        }
        out[..data.len()].copy_from_slice(data);
        Ok((data.len(), eof))
    }
}

/// The data and eof flag of a READ3res, without copying the data (parsed by hand: the
/// generic decoder copies the data into a new vector).
fn parse_read(body: &[u8]) -> Result<(&[u8], bool), NfsFailure> {
    let malformed = || NfsFailure::Protocol("malformed read reply".into());
    let mut r = XdrReader::new(body);
    let status = r.u32().ok_or_else(malformed)?;
    if status != 0 {
        return Err(NfsFailure::Status(status));
    }
    // post_op_attr: a flag, then a fattr3 of fixed size (84 bytes).
    if r.u32().ok_or_else(malformed)? == 1 {
        r.skip(84).ok_or_else(malformed)?;
    }
    let _count = r.u32().ok_or_else(malformed)?;
    let eof = r.u32().ok_or_else(malformed)? != 0;
    let data = r.opaque().ok_or_else(malformed)?;
    Ok((data, eof))
}

/// The bytes read and eof flag of a READ3res whose data the server placed in the caller's
/// buffer (RFC 8267's reduced data item: the opaque's length stays, its bytes do not).
/// `placed` is the length the transport reports placed, `dest_len` the bytes asked for: the
/// reply's count and opaque length must both equal `placed`, which must fit in `dest_len`.
fn parse_placed_read(body: &[u8], placed: usize, dest_len: usize) -> Result<(usize, bool), NfsFailure> {
    let mut r = XdrReader::new(body);
    let truncated = |r: &XdrReader<'_>| {
        NfsFailure::Protocol(format!(
            "malformed read reply: its data was placed, and its result ends after {} of its bytes",
            r.position()
        ))
    };
    let status = r.u32().ok_or_else(|| truncated(&r))?;
    if status != 0 {
        return Err(NfsFailure::Status(status));
    }
    if r.u32().ok_or_else(|| truncated(&r))? == 1 {
        r.skip(84).ok_or_else(|| truncated(&r))?;
    }
    let count = r.u32().ok_or_else(|| truncated(&r))?;
    let eof = r.u32().ok_or_else(|| truncated(&r))? != 0;
    let length = r.u32().ok_or_else(|| truncated(&r))?;
    if count as usize != placed || length as usize != placed {
        return Err(NfsFailure::Protocol(format!(
            "a read reply says count {count} and data length {length}, but the server placed {placed} bytes"
        )));
    }
    if placed > dest_len {
        return Err(NfsFailure::Protocol(format!(
            "the server placed {placed} bytes for a read of {dest_len}"
        )));
    }
    Ok((placed, eof))
}

/// `args` in XDR, for an [`RpcCall`].
pub(super) fn pack(args: &impl Pack) -> Result<Vec<u8>, NfsFailure> {
    let mut packed = Vec::with_capacity(args.packed_size());
    args.pack(&mut packed).map_err(|e| NfsFailure::Protocol(format!("cannot encode the call: {e}")))?;
    Ok(packed)
}

pub(super) fn handle(fh: &[u8]) -> nfs_fh3 {
    nfs_fh3 { data: Opaque::owned(fh.to_vec()) }
}

/// Runs every decoder of the read side over `record` (an RPC reply message without its record
/// mark): the RPC header, then the record's result as each procedure's result type, and a
/// READ's data both copied and placed; returns the reply when its header was accepted, for the
/// write side's decoders (see [`super::decode_any_reply`]).
pub(super) fn decode_read_replies(record: &[u8]) -> Option<Reply> {
    let Ok(reply) = Reply::accept(record.to_vec(), None) else { return None };
    if check_lookup(reply.body()).is_ok() {
        let _ = unpack::<LOOKUP3res>(&reply);
    }
    let _ = unpack::<GETATTR3res>(&reply);
    let _ = unpack::<FSINFO3res>(&reply);
    if check_readdirplus(reply.body()).is_ok() {
        let _ = unpack::<READDIRPLUS3res>(&reply);
    }
    let _ = unpack_mount_reply(reply.body());
    if check_exports(reply.body()).is_ok() {
        let _ = unpack::<exports>(&reply);
    }
    let _ = parse_read(reply.body());
    let body = reply.body();
    for placed in [0, 1, body.len(), 1 << 20] {
        let _ = parse_placed_read(body, placed, 1 << 20);
    }
    // The portmapper's GETPORT result, as `portmap_port` reads it.
    let _ = XdrReader::new(body).u32();
    Some(reply)
}

pub(super) fn unpack<T: Unpack>(reply: &Reply) -> Result<T, NfsFailure> {
    let mut cursor = Cursor::new(reply.body());
    T::unpack(&mut cursor)
        .map(|(value, _)| value)
        .map_err(|e| NfsFailure::Protocol(format!("malformed reply: {e}")))
}

/// Asks the portmapper on `host` for the TCP port of `program` version `version`.
pub(crate) async fn portmap_port(
    host: std::net::IpAddr,
    program: u32,
    version: u32,
    credential: &Credential,
    timeout: Duration,
) -> Result<u16, String> {
    let addr = SocketAddr::new(host, PORTMAP_PORT);
    let call = async {
        let connection = RpcConnection::connect(addr, credential)
            .await
            .map_err(|e| format!("the portmapper at {addr} cannot be reached: {e}"))?;
        let args = mapping { prog: program, vers: version, prot: IPPROTO_TCP, port: 0 };
        let reply = connection
            .call_procedure(PORTMAP_PROGRAM, PORTMAP_VERSION, PMAP_PROG::PMAPPROC_GETPORT as u32, &args)
            .await
            .map_err(|e| format!("the portmapper at {addr} failed: {e}"))?;
        let port = XdrReader::new(reply.body()).u32().ok_or("the portmapper's reply is malformed")?;
        match u16::try_from(port) {
            Ok(0) | Err(_) => {
                Err(format!("the portmapper at {addr} lists no {} over tcp", program_name(program)))
            }
            Ok(port) => Ok(port),
        }
    };
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| format!("the portmapper at {addr} did not answer within {}", describe(timeout)))?
}

/// A connection to the MOUNT service.
pub(crate) struct MountService {
    connection: RpcConnection,
}

impl MountService {
    pub async fn connect(addr: SocketAddr, credential: &Credential) -> std::io::Result<MountService> {
        Ok(MountService { connection: RpcConnection::connect(addr, credential).await? })
    }

    /// The exported directories (MOUNTPROC3_EXPORT).
    pub async fn exports(&self) -> Result<Vec<String>, String> {
        let reply = self
            .connection
            .call_procedure(
                MOUNT_PROGRAM_NUMBER,
                MOUNT_VERSION,
                MOUNT_PROGRAM::MOUNTPROC3_EXPORT as u32,
                &Void,
            )
            .await
            .map_err(|e| e.to_string())?;
        check_exports(reply.body())?;
        let mut cursor = Cursor::new(reply.body());
        let (list, _) = exports::unpack(&mut cursor).map_err(|e| format!("malformed export list: {e}"))?;
        Ok(list.0.into_iter().filter_map(|node| String::from_utf8(node.ex_dir.0.to_vec()).ok()).collect())
    }

    /// Mounts `export` (MOUNTPROC3_MNT): its root handle, or the MOUNT status that refused it.
    pub async fn mount(&self, export: &str) -> Result<Result<Vec<u8>, u32>, String> {
        let args = dirpath(Opaque::borrowed(export.as_bytes()));
        let reply = self
            .connection
            .call_procedure(MOUNT_PROGRAM_NUMBER, MOUNT_VERSION, MOUNT_PROGRAM::MOUNTPROC3_MNT as u32, &args)
            .await
            .map_err(|e| e.to_string())?;
        match unpack_mount_reply(reply.body())? {
            mountres3::Ok(ok) => Ok(Ok(ok.fhandle.0.to_vec())),
            mountres3::Err(status) => Ok(Err(status as u32)),
        }
    }
}

/// Walks a READDIRPLUS3res by hand, checking every length it claims against the bytes that
/// are there, before nfs3_types decodes it: nfs3_types reserves what a reply claims before
/// reading it, so a few hostile bytes could make it allocate gigabytes (found by the
/// `nfs_reply` fuzz target). The walk allocates nothing.
fn check_readdirplus(body: &[u8]) -> Result<(), NfsFailure> {
    let malformed = |r: &XdrReader<'_>| {
        NfsFailure::Protocol(format!(
            "malformed readdirplus reply: it ends at byte {} of {}",
            r.position(),
            body.len()
        ))
    };
    let mut r = XdrReader::new(body);
    let post_op_attr = |r: &mut XdrReader<'_>| -> Option<()> {
        if r.u32()? == 1 {
            r.skip(84)?;
        }
        Some(())
    };
    let status = r.u32().ok_or_else(|| malformed(&r))?;
    post_op_attr(&mut r).ok_or_else(|| malformed(&r))?;
    if status != 0 {
        return Ok(());
    }
    r.skip(8).ok_or_else(|| malformed(&r))?; // cookieverf
    loop {
        match r.u32().ok_or_else(|| malformed(&r))? {
            0 => break,
            1 => {}
            _ => return Err(malformed(&r)),
        }
        r.skip(8).ok_or_else(|| malformed(&r))?; // fileid
        r.opaque().ok_or_else(|| malformed(&r))?; // name
        r.skip(8).ok_or_else(|| malformed(&r))?; // cookie
        post_op_attr(&mut r).ok_or_else(|| malformed(&r))?;
        if r.u32().ok_or_else(|| malformed(&r))? == 1 {
            let handle = r.opaque().ok_or_else(|| malformed(&r))?;
            if handle.len() > 64 {
                return Err(malformed(&r));
            }
        }
    }
    r.u32().ok_or_else(|| malformed(&r))?; // eof
    Ok(())
}

/// Checks a LOOKUP3res's file handle against the 64 bytes NFSv3 allows and the bytes there,
/// before nfs3_types decodes it (see [`check_readdirplus`]).
pub(super) fn check_lookup(body: &[u8]) -> Result<(), NfsFailure> {
    let mut r = XdrReader::new(body);
    let malformed =
        || NfsFailure::Protocol("malformed lookup reply: its file handle is not 0 to 64 bytes".into());
    if r.u32() == Some(0) {
        let handle = r.opaque().ok_or_else(malformed)?;
        if handle.len() > 64 {
            return Err(malformed());
        }
    }
    Ok(())
}

/// Walks an EXPORT reply (a list of directories, each with a list of groups) checking every
/// length against the bytes there, before nfs3_types decodes it (see [`check_readdirplus`]).
fn check_exports(body: &[u8]) -> Result<(), String> {
    let mut r = XdrReader::new(body);
    let malformed = |r: &XdrReader<'_>| {
        format!("malformed export list: it ends at byte {} of {}", r.position(), body.len())
    };
    let follows = |r: &mut XdrReader<'_>| -> Result<bool, String> {
        match r.u32() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(malformed(r)),
        }
    };
    while follows(&mut r)? {
        r.opaque().ok_or_else(|| malformed(&r))?;
        while follows(&mut r)? {
            r.opaque().ok_or_else(|| malformed(&r))?;
        }
    }
    Ok(())
}

/// A MNT reply, its counts checked against its bytes first: nfs3_types reserves the
/// auth-flavor list a server claims before reading it, so a claim of 2^30 flavors in a
/// 40-byte reply would allocate 4 GiB (found by the `nfs_reply` fuzz target).
fn unpack_mount_reply(body: &[u8]) -> Result<mountres3<'_>, String> {
    let mut r = XdrReader::new(body);
    let malformed = |what: &str| format!("malformed mount reply: {what}");
    if r.u32().ok_or_else(|| malformed("too short"))? == 0 {
        r.opaque().ok_or_else(|| malformed("bad file handle"))?;
        let flavors = r.u32().ok_or_else(|| malformed("too short"))? as usize;
        let left = body.len().saturating_sub(r.position());
        if flavors > left / 4 {
            return Err(malformed(&format!("it claims {flavors} auth flavors in {left} bytes")));
        }
    }
    let mut cursor = Cursor::new(body);
    mountres3::unpack(&mut cursor).map(|(res, _)| res).map_err(|e| malformed(&e.to_string()))
}

fn program_name(program: u32) -> &'static str {
    match program {
        MOUNT_PROGRAM_NUMBER => "mount service",
        NFS_PROGRAM_NUMBER => "nfs service",
        _ => "program",
    }
}

/// A duration as a person writes it: 500 ms, 3 s, 2.5 s.
pub(crate) fn describe(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

/// The name of an NFSv3 status (RFC 1813), in words.
pub(crate) fn status_name(status: u32) -> &'static str {
    match status {
        1 => "not owner (NFS3ERR_PERM)",
        2 => "no such file or directory (NFS3ERR_NOENT)",
        5 => "i/o error on the server (NFS3ERR_IO)",
        6 => "no such device (NFS3ERR_NXIO)",
        13 => "permission denied (NFS3ERR_ACCES)",
        17 => "file exists (NFS3ERR_EXIST)",
        18 => "cross-device link (NFS3ERR_XDEV)",
        20 => "not a directory (NFS3ERR_NOTDIR)",
        21 => "is a directory (NFS3ERR_ISDIR)",
        22 => "invalid argument (NFS3ERR_INVAL)",
        27 => "file too large (NFS3ERR_FBIG)",
        28 => "no space left on device (NFS3ERR_NOSPC)",
        30 => "read-only file system (NFS3ERR_ROFS)",
        63 => "name too long (NFS3ERR_NAMETOOLONG)",
        66 => "directory not empty (NFS3ERR_NOTEMPTY)",
        69 => "disk quota exceeded (NFS3ERR_DQUOT)",
        70 => "stale file handle (NFS3ERR_STALE)",
        10001 => "bad file handle (NFS3ERR_BADHANDLE)",
        10004 => "operation not supported (NFS3ERR_NOTSUPP)",
        10006 => "server fault (NFS3ERR_SERVERFAULT)",
        10008 => "server busy, try later (NFS3ERR_JUKEBOX)",
        _ => "nfs error",
    }
}

/// The name of a MOUNT status (RFC 1813), in words.
pub(crate) fn mount_status_name(status: u32) -> &'static str {
    match status {
        1 => "not owner (MNT3ERR_PERM)",
        2 => "no such directory (MNT3ERR_NOENT)",
        5 => "i/o error (MNT3ERR_IO)",
        13 => "permission denied (MNT3ERR_ACCES)",
        20 => "not a directory (MNT3ERR_NOTDIR)",
        22 => "invalid argument (MNT3ERR_INVAL)",
        63 => "name too long (MNT3ERR_NAMETOOLONG)",
        10004 => "operation not supported (MNT3ERR_NOTSUPP)",
        10006 => "server fault (MNT3ERR_SERVERFAULT)",
        _ => "mount error",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn read_reply_is_parsed_in_place() {
        // OK, no attributes, count 5, eof, data "hello" padded to 8.
        let mut body = words(&[0, 0, 5, 1, 5]);
        body.extend_from_slice(b"hello\0\0\0");
        assert_eq!(parse_read(&body).unwrap(), (&b"hello"[..], true));
        // With attributes (84 bytes skipped).
        let mut body = words(&[0, 1]);
        body.extend_from_slice(&[0; 84]);
        body.extend_from_slice(&words(&[3, 0, 3]));
        body.extend_from_slice(b"abc\0");
        assert_eq!(parse_read(&body).unwrap(), (&b"abc"[..], false));
    }

    /// A READ3res whose data was placed: OK, attributes or not, count, eof, opaque length.
    fn placed_body(with_attributes: bool, count: u32, eof: bool, length: u32) -> Vec<u8> {
        let mut body = words(&[0, u32::from(with_attributes)]);
        if with_attributes {
            body.extend_from_slice(&[0; 84]);
        }
        body.extend_from_slice(&words(&[count, u32::from(eof), length]));
        body
    }

    #[test]
    fn a_placed_read_reply_gives_the_placed_length() {
        assert_eq!(parse_placed_read(&placed_body(false, 5, true, 5), 5, 8), Ok((5, true)));
        assert_eq!(parse_placed_read(&placed_body(true, 4096, false, 4096), 4096, 4096), Ok((4096, false)));
        // A read at the end of the file places nothing.
        assert_eq!(parse_placed_read(&placed_body(false, 0, true, 0), 0, 4096), Ok((0, true)));
        // An error status is the status, whatever was placed.
        assert_eq!(parse_placed_read(&words(&[70, 0]), 0, 8), Err(NfsFailure::Status(70)));
    }

    #[test]
    fn a_placed_read_reply_that_disagrees_names_the_numbers() {
        let count = parse_placed_read(&placed_body(false, 6, false, 5), 5, 8).unwrap_err();
        assert_eq!(
            count,
            NfsFailure::Protocol(
                "a read reply says count 6 and data length 5, but the server placed 5 bytes".into()
            )
        );
        let length = parse_placed_read(&placed_body(false, 5, false, 4), 5, 8).unwrap_err();
        assert!(matches!(&length, NfsFailure::Protocol(m) if m.contains("data length 4")), "{length}");
        let placed = parse_placed_read(&placed_body(false, 5, false, 5), 4, 8).unwrap_err();
        assert!(matches!(&placed, NfsFailure::Protocol(m) if m.contains("placed 4 bytes")), "{placed}");
        let too_many = parse_placed_read(&placed_body(false, 9, false, 9), 9, 8).unwrap_err();
        assert_eq!(too_many, NfsFailure::Protocol("the server placed 9 bytes for a read of 8".into()));
    }

    #[test]
    fn a_truncated_placed_read_reply_is_malformed() {
        let whole = placed_body(true, 5, true, 5);
        for len in [0, 3, 4, 8, 8 + 83, whole.len() - 8, whole.len() - 1] {
            let err = parse_placed_read(&whole[..len], 5, 8).unwrap_err();
            assert!(
                matches!(&err, NfsFailure::Protocol(m) if m.starts_with("malformed read reply")),
                "{len}: {err}"
            );
        }
    }

    /// What a [`ScriptedChannel`] does with each call.
    #[derive(Clone, Copy, Debug)]
    enum Behaviour {
        /// Places these bytes in the READ's buffer, as RDMA Write would, with eof.
        Place(&'static [u8]),
        /// Refuses every call for good.
        Fatal,
        /// Fails the first call as a lost connection, then answers as `Place`.
        BreakFirst(&'static [u8]),
        /// Fails every call as a lost connection: a server gone for good.
        Lost,
        /// Cuts every call's own reply (the connection breaks after its xid was read): a
        /// server up, but refusing this call.
        CutReply,
    }

    #[derive(Debug)]
    struct Script {
        behaviour: Behaviour,
        calls: AtomicUsize,
        connects: AtomicUsize,
        /// The last call's `max_reply` and buffer.
        last: std::sync::Mutex<Option<(usize, Option<BufferIdentity>)>>,
    }

    #[derive(Debug)]
    struct ScriptedConnector(Arc<Script>);

    #[derive(Debug)]
    struct ScriptedChannel {
        script: Arc<Script>,
        broken: std::sync::atomic::AtomicBool,
    }

    /// An accepted RPC reply message carrying `body`.
    fn accepted(body: &[u8]) -> Reply {
        let mut message = words(&[1, 1, 0, 0, 0, 0]);
        message.extend_from_slice(body);
        Reply::accept(message, None).unwrap()
    }

    #[async_trait::async_trait]
    impl RpcChannel for ScriptedChannel {
        fn is_broken(&self) -> bool {
            self.broken.load(Ordering::Acquire)
        }

        async fn call(&self, call: RpcCall<'_>) -> Result<Answer, CallError> {
            let n_call = self.script.calls.fetch_add(1, Ordering::Relaxed);
            *self.script.last.lock().unwrap() =
                Some((call.max_reply, call.read_into.as_ref().map(|r| r.buffer)));
            let data = match self.script.behaviour {
                Behaviour::Fatal => return Err(CallError::Fatal("RDMA_ERROR ERR_VERS".into())),
                Behaviour::Lost => {
                    self.broken.store(true, Ordering::Release);
                    return Err(CallError::Connection("connection lost (scripted)".into()));
                }
                Behaviour::CutReply => {
                    self.broken.store(true, Ordering::Release);
                    return Err(CallError::ReplyCut("connection lost mid-reply (scripted)".into()));
                }
                Behaviour::BreakFirst(_) if n_call == 0 => {
                    self.broken.store(true, Ordering::Release);
                    return Err(CallError::Connection("connection lost (scripted)".into()));
                }
                Behaviour::Place(data) | Behaviour::BreakFirst(data) => data,
            };
            let dest = call.read_into.unwrap().dest;
            dest[..data.len()].copy_from_slice(data);
            let n = data.len() as u32;
            Ok(Answer::Placed { reply: accepted(&placed_body(true, n, true, n)), placed: data.len() })
        }
    }

    #[async_trait::async_trait]
    impl RpcConnector for ScriptedConnector {
        fn transport_name(&self) -> &'static str {
            "scripted"
        }

        fn proto(&self) -> &'static str {
            "scripted"
        }

        fn default_nfs_port(&self) -> Option<u16> {
            Some(20049)
        }

        fn fresh(&self) -> Arc<dyn RpcConnector> {
            Arc::new(ScriptedConnector(Arc::clone(&self.0)))
        }

        async fn connect(
            &self,
            _addr: SocketAddr,
            _credential: &Credential,
        ) -> std::io::Result<Arc<dyn RpcChannel>> {
            self.0.connects.fetch_add(1, Ordering::Relaxed);
            Ok(Arc::new(ScriptedChannel { script: Arc::clone(&self.0), broken: false.into() }))
        }
    }

    async fn scripted_pool(behaviour: Behaviour) -> (NfsPool, Arc<Script>) {
        let script = Arc::new(Script {
            behaviour,
            calls: AtomicUsize::new(0),
            connects: AtomicUsize::new(0),
            last: std::sync::Mutex::new(None),
        });
        let config = PoolConfig {
            nconnect: 1,
            in_flight: 4,
            timeout: Duration::from_secs(5),
            credential: Credential { uid: 0, gid: 0, machine_name: "test".into() },
        };
        let addr = "192.0.2.1:20049".parse().unwrap();
        let connector = Arc::new(ScriptedConnector(Arc::clone(&script)));
        (NfsPool::connect(addr, config, connector).await.unwrap(), script)
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_placed_by_the_transport_lands_in_its_buffer() {
        let (pool, script) = scripted_pool(Behaviour::Place(b"frame")).await;
        let mut out = vec![0u8; 8];
        let buffer = BufferIdentity { id: 7, base: out.as_ptr() as usize, len: out.len() };
        assert_eq!(pool.read(b"fh", 0, &mut out, buffer).await, Ok((5, true)));
        assert_eq!(&out[..5], b"frame");
        // The READ's data is not in its reply, so the reply it may get is small.
        assert_eq!(*script.last.lock().unwrap(), Some((SMALL_REPLY_BYTES, Some(buffer))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_fatal_transport_error_is_not_retried() {
        let (pool, script) = scripted_pool(Behaviour::Fatal).await;
        let mut out = vec![0u8; 8];
        let buffer = BufferIdentity { id: 1, base: out.as_ptr() as usize, len: out.len() };
        let err = pool.read(b"fh", 0, &mut out, buffer).await.unwrap_err();
        assert_eq!(err, NfsFailure::Fatal("nfs server 192.0.2.1:20049: RDMA_ERROR ERR_VERS".into()));
        assert_eq!(script.calls.load(Ordering::Relaxed), 1);
        assert_eq!((script.connects.load(Ordering::Relaxed), pool.reconnects()), (1, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_channel_is_replaced_and_the_call_sent_again() {
        let (pool, script) = scripted_pool(Behaviour::BreakFirst(b"abc")).await;
        let mut out = vec![0u8; 4];
        let buffer = BufferIdentity { id: 1, base: out.as_ptr() as usize, len: out.len() };
        assert_eq!(pool.read(b"fh", 0, &mut out, buffer).await, Ok((3, true)));
        assert_eq!(&out[..3], b"abc");
        assert_eq!(script.calls.load(Ordering::Relaxed), 2);
        assert_eq!(pool.reconnects(), 1);
        // The second attempt followed the first backoff on the paused clock.
        assert_eq!(pool.longest_reconnect_wait(), FIRST_BACKOFF);
    }

    #[tokio::test(start_paused = true)]
    async fn once_one_call_gives_up_the_others_fail_with_it() {
        let (pool, _script) = scripted_pool(Behaviour::Lost).await;
        let start = tokio::time::Instant::now();
        let read_after = |delay: Duration| {
            let pool = &pool;
            async move {
                tokio::time::sleep(delay).await;
                let mut out = vec![0u8; 4];
                let buffer = BufferIdentity { id: 1, base: out.as_ptr() as usize, len: out.len() };
                let result = pool.read(b"fh", 0, &mut out, buffer).await;
                (result, start.elapsed())
            }
        };
        // The second call would have had until 7 s on its own.
        let ((first, first_at), (second, second_at)) =
            tokio::join!(read_after(Duration::ZERO), read_after(Duration::from_secs(2)));
        assert!(matches!(&first, Err(NfsFailure::Unavailable(_))), "{first:?}");
        assert_eq!(second, first);
        assert!(first_at <= Duration::from_secs(5), "{first_at:?}");
        assert_eq!(second_at, first_at);
        // A later call does not wait again.
        let (later, later_at) = read_after(Duration::ZERO).await;
        assert_eq!((later, later_at), (first, first_at));
        assert_eq!(pool.longest_reconnect_wait(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_reply_is_cut_every_time_is_refused_not_waited_out() {
        let (pool, script) = scripted_pool(Behaviour::CutReply).await;
        let start = tokio::time::Instant::now();
        let mut out = vec![0u8; 4];
        let buffer = BufferIdentity { id: 1, base: out.as_ptr() as usize, len: out.len() };
        let err = pool.read(b"fh", 0, &mut out, buffer).await.unwrap_err();
        assert!(
            matches!(&err, NfsFailure::Protocol(m) if m.contains("cut its reply to this call 3 times")),
            "{err:?}"
        );
        assert_eq!(script.calls.load(Ordering::Relaxed), MAX_CUT_REPLIES);
        // Two backoffs, not the 5 s time-out; the pool did not give up for the other calls.
        assert_eq!(start.elapsed(), FIRST_BACKOFF * 3);
        assert_eq!(pool.reconnects(), 2);
    }

    #[test]
    fn read_errors_and_truncation_are_reported() {
        assert_eq!(parse_read(&words(&[13, 0])), Err(NfsFailure::Status(13)));
        assert!(matches!(parse_read(&words(&[0, 0, 9, 0, 9])), Err(NfsFailure::Protocol(_))));
        assert_eq!(status_name(13), "permission denied (NFS3ERR_ACCES)");
    }
}
