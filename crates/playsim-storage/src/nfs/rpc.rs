//! ONC RPC over one TCP connection, with many calls in flight (RFC 5531, record marking):
//! the TCP [`RpcConnector`] ([`TcpConnector`]) of the NFS client, and the one MOUNT and the
//! portmapper always use.
//!
//! nfs3_client's `RpcClient` sends one call and waits for its reply before the next, so a
//! connection carries one READ at a time; the Linux client keeps many in flight on each of its
//! `nconnect` connections. Here callers send whole records under a lock and take turns reading
//! replies (see [`RpcConnection::send`]), each handed to the call with its XID. When the
//! connection fails, every call waiting on it fails at once with the reason, so the pool can
//! reconnect.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use nfs3_types::xdr_codec::Pack;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::channel::{Answer, CallError, Credential, Reply, RpcCall, RpcChannel, RpcConnector};

/// The largest reply expected to a call that is not a READ or a READDIRPLUS (attributes, a
/// handle, a port, an export list of a small server): what [`RpcCall::max_reply`] says for it.
pub(crate) const SMALL_REPLY_BYTES: usize = 4096;

/// The TCP transport of the NFS client: one `RpcConnection` per channel, record marking,
/// the NFS port from the portmapper when the URL gives none, and each READ's data read from
/// the socket straight into its frame buffer.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpConnector;

#[async_trait::async_trait]
impl RpcConnector for TcpConnector {
    fn transport_name(&self) -> &'static str {
        "nfs"
    }

    fn proto(&self) -> &'static str {
        "tcp"
    }

    fn default_nfs_port(&self) -> Option<u16> {
        None
    }

    fn fresh(&self) -> Arc<dyn RpcConnector> {
        Arc::new(TcpConnector)
    }

    async fn connect(&self, addr: SocketAddr, credential: &Credential) -> io::Result<Arc<dyn RpcChannel>> {
        Ok(Arc::new(RpcConnection::connect(addr, credential).await?))
    }
}

/// Appends the RPC call message of `call` with transaction id `xid` to `out`, without a
/// record mark (RFC 5531): the call header, `credential` as AUTH_SYS, an empty AUTH_NONE
/// verifier and the call's XDR arguments. TCP prepends its record mark; RPC-over-RDMA sends
/// the message after its own transport header.
pub fn encode_call_message(out: &mut Vec<u8>, xid: u32, call: &RpcCall<'_>, credential: &Credential) {
    put_call_message(out, xid, call, &auth_sys(credential));
}

/// The largest reply record accepted: a READ of the largest rsize plus headers, with room.
/// A hostile or confused server cannot make the client allocate more.
const MAX_RECORD_BYTES: usize = 64 << 20;
/// The smallest limit put on a call's reply record (see [`record_limit`]): room for the export
/// list of a large filer, which the MOUNT call's `max_reply` does not allow for.
const MIN_RECORD_LIMIT: usize = 1 << 20;

/// The largest reply record `call` may get: its `max_reply`, or for a READ its data and room
/// for the headers, but at least [`MIN_RECORD_LIMIT`] and at most [`MAX_RECORD_BYTES`]. A
/// record mark claiming more is refused before anything is allocated for it (a mark can claim
/// 2 GiB).
fn record_limit(call: &RpcCall<'_>) -> usize {
    let data = call.read_into.as_ref().map_or(0, |read_into| read_into.dest.len() + SMALL_REPLY_BYTES);
    call.max_reply.max(data).clamp(MIN_RECORD_LIMIT, MAX_RECORD_BYTES)
}

/// Reply buffers kept for reuse. A fresh megabyte per READ reply cost more CPU in page
/// faults and zeroing than the copy of the data itself (measured with perf on loopback).
#[derive(Debug, Default)]
pub(crate) struct BufferPool {
    spare: Mutex<Vec<Vec<u8>>>,
}

/// Buffers a pool keeps at most; more are freed.
const MAX_SPARE_BUFFERS: usize = 64;

impl BufferPool {
    fn take(&self) -> Vec<u8> {
        self.spare.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop().unwrap_or_default()
    }

    fn put(&self, mut buffer: Vec<u8>) {
        buffer.clear();
        let mut spare = self.spare.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if spare.len() < MAX_SPARE_BUFFERS && buffer.capacity() > 0 {
            spare.push(buffer);
        }
    }
}

/// The read half, held by the caller whose turn it is to read.
type ReadTurn = tokio::sync::OwnedMutexGuard<OwnedReadHalf>;

/// A reply's first bytes, read by another caller, and the turn to read the rest. Dropped
/// unread (its call gave up just as it was handed over), it breaks the connection, whose
/// stream is then in the middle of a record.
struct Handover {
    turn: Option<ReadTurn>,
    head: Head,
    broken: Arc<AtomicBool>,
    pending: Arc<Mutex<Pending>>,
}

impl Handover {
    /// The turn and the head, for the call that reads the rest.
    fn take(mut self) -> Result<(ReadTurn, Head), CallError> {
        let head = std::mem::replace(&mut self.head, Head { mark: 0, bytes: [0; READ_HEAD_BYTES], len: 0 });
        // `turn` is only ever taken here, by value, so it is always there.
        let turn =
            self.turn.take().ok_or_else(|| CallError::Connection("a reply was handed over twice".into()))?;
        Ok((turn, head))
    }
}

impl Drop for Handover {
    fn drop(&mut self) {
        if self.turn.is_some() {
            self.broken.store(true, Ordering::Release);
            fail_all(&self.pending, "a reply was abandoned in the middle".into());
        }
    }
}

type Waiter = oneshot::Sender<Result<Handover, CallError>>;

#[derive(Default)]
struct Pending {
    waiters: HashMap<u32, Waiter>,
    /// Set once the connection has failed: new calls fail at once with this reason.
    closed: Option<String>,
}

/// One TCP connection to an RPC service.
pub(crate) struct RpcConnection {
    peer: SocketAddr,
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    /// Held by the caller that is reading replies (see [`RpcConnection::send`]).
    reader: Arc<tokio::sync::Mutex<OwnedReadHalf>>,
    pending: Arc<Mutex<Pending>>,
    next_xid: AtomicU32,
    credential: Vec<u8>,
    broken: Arc<AtomicBool>,
    buffers: Arc<BufferPool>,
}

impl std::fmt::Debug for RpcConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcConnection").field("peer", &self.peer).finish_non_exhaustive()
    }
}

impl RpcConnection {
    /// Connects to `peer`. Must run inside a tokio runtime.
    pub async fn connect(peer: SocketAddr, credential: &Credential) -> io::Result<RpcConnection> {
        let stream = TcpStream::connect(peer).await?;
        stream.set_nodelay(true)?;
        let (read_half, write_half) = stream.into_split();
        Ok(RpcConnection {
            peer,
            writer: tokio::sync::Mutex::new(write_half),
            reader: Arc::new(tokio::sync::Mutex::new(read_half)),
            pending: Arc::new(Mutex::new(Pending::default())),
            next_xid: AtomicU32::new(initial_xid()),
            credential: auth_sys(credential),
            broken: Arc::new(AtomicBool::new(false)),
            buffers: Arc::new(BufferPool::default()),
        })
    }

    /// Calls `procedure` of `program` `version` with `args` (packed here) and waits for the
    /// accepted reply: how MOUNT and the portmapper are called.
    pub async fn call_procedure(
        &self,
        program: u32,
        version: u32,
        procedure: u32,
        args: &impl Pack,
    ) -> Result<Reply, CallError> {
        let mut packed = Vec::with_capacity(args.packed_size());
        args.pack(&mut packed).map_err(|e| CallError::Malformed(format!("cannot encode the call: {e}")))?;
        let call = RpcCall {
            program,
            version,
            procedure,
            args: &packed,
            read_into: None,
            bulk: None,
            max_reply: SMALL_REPLY_BYTES,
        };
        match self.send(call).await? {
            Answer::Reply(reply) => Ok(reply),
            Answer::Data { .. } | Answer::Placed { .. } => {
                Err(CallError::Malformed("unexpected data reply".into()))
            }
        }
    }

    /// Sends `call` and waits for its answer; a READ's data may go straight into
    /// `call.read_into`'s `dest`.
    ///
    /// There is no reader task: the callers take turns reading, and every reply is read by
    /// its own caller. The caller whose turn it is reads the first bytes of the next record;
    /// if the record is another call's reply, it hands those bytes and the turn to that call
    /// and waits again. So a READ's data goes straight from the socket into its caller's
    /// buffer, on the caller's thread, with one copy, the kernel's. (Measured on loopback: a
    /// reader task, a hop to another thread and a second copy cost about twice the CPU per
    /// GB of nfs3_client's one call per connection, which reads its replies itself.)
    async fn send(&self, call: RpcCall<'_>) -> Result<Answer, CallError> {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let record = self.encode(xid, &call)?;
        let limit = record_limit(&call);
        let dest = call.read_into.map(|read_into| read_into.dest);
        let (tx, mut rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if let Some(reason) = &pending.closed {
                return Err(CallError::Connection(reason.clone()));
            }
            pending.waiters.insert(xid, tx);
        }
        let sent = { self.writer.lock().await.write_all(&record).await };
        if let Err(e) = sent {
            lock(&self.pending).waiters.remove(&xid);
            let reason = format!("cannot send to {}: {e}", self.peer);
            self.fail(reason.clone());
            return Err(CallError::Connection(reason));
        }
        loop {
            let (mut turn, handed_head) = tokio::select! {
                biased;
                handed = &mut rx => {
                    let (turn, head) = handed
                        .map_err(|_| CallError::Connection(format!("connection to {} closed", self.peer)))??
                        .take()?;
                    (turn, Some(head))
                }
                turn = Arc::clone(&self.reader).lock_owned() => (turn, None),
            };
            let head = match handed_head {
                Some(head) => head,
                None => {
                    // The turn may have been handed over while this call waited for the lock.
                    if let Ok(handed) = rx.try_recv() {
                        drop(turn);
                        let (turn, head) = handed?.take()?;
                        return self.read_own(turn, head, xid, dest, limit).await;
                    }
                    if let Some(reason) = lock(&self.pending).closed.clone() {
                        return Err(CallError::Connection(reason));
                    }
                    let mut guard = BreakOnDrop { connection: self, armed: true };
                    let head = read_head(&mut turn).await;
                    guard.armed = false;
                    match head {
                        Ok(head) => head,
                        Err(reason) => return Err(self.lost(reason)),
                    }
                }
            };
            if head.xid() == xid {
                return self.read_own(turn, head, xid, dest, limit).await;
            }
            self.hand_over(turn, head).await?;
        }
    }

    /// Reads the rest of this call's own reply, whose head has been read: a record longer
    /// than `limit` bytes is refused before it is read.
    async fn read_own(
        &self,
        mut turn: ReadTurn,
        head: Head,
        xid: u32,
        dest: Option<&mut [u8]>,
        limit: usize,
    ) -> Result<Answer, CallError> {
        lock(&self.pending).waiters.remove(&xid);
        let mut guard = BreakOnDrop { connection: self, armed: true };
        let rest = read_rest(&mut turn, head, dest, &self.buffers, limit).await;
        guard.armed = false;
        drop(turn);
        match rest {
            Ok(Rest::Data { n, eof }) => Ok(Answer::Data { n, eof }),
            Ok(Rest::Record(record)) => self.accept(record).map(Answer::Reply),
            Err(ReplyError::Lost(reason)) => match self.lost(reason) {
                CallError::Connection(reason) => Err(CallError::ReplyCut(reason)),
                other => Err(other),
            },
            Err(ReplyError::Malformed(reason)) => Err(CallError::Malformed(reason)),
        }
    }

    /// Gives the turn, with the head it read, to the call the record answers. A reply to a
    /// call that gave up waiting is read and dropped. A reply to an xid that no call on this
    /// connection has (never sent, or answered already) breaks the connection: the server is
    /// confused, and the call it should have answered would wait for nothing until its
    /// time-out. Every call waiting on the connection is sent again on a new one.
    async fn hand_over(&self, turn: ReadTurn, head: Head) -> Result<(), CallError> {
        let xid = head.xid();
        let waiter = lock(&self.pending).waiters.remove(&xid);
        let Some(waiter) = waiter else {
            let error = self.lost(format!("a reply to xid {xid:#010x}, which no call is waiting for"));
            drop(turn);
            return Err(error);
        };
        let handover = Handover {
            turn: Some(turn),
            head,
            broken: Arc::clone(&self.broken),
            pending: Arc::clone(&self.pending),
        };
        let unclaimed = match waiter.send(Ok(handover)) {
            Ok(()) => return Ok(()),
            Err(Ok(handover)) => handover,
            Err(Err(_)) => return Ok(()),
        };
        let (mut turn, head) = unclaimed.take()?;
        let mut guard = BreakOnDrop { connection: self, armed: true };
        let rest = read_rest(&mut turn, head, None, &self.buffers, MAX_RECORD_BYTES).await;
        guard.armed = false;
        match rest {
            Ok(Rest::Record(record)) => self.buffers.put(record),
            Ok(Rest::Data { .. }) | Err(ReplyError::Malformed(_)) => {}
            Err(ReplyError::Lost(reason)) => return Err(self.lost(reason)),
        }
        Ok(())
    }

    /// Fails the connection because reading failed, and returns the error for this call.
    fn lost(&self, reason: String) -> CallError {
        let reason = format!("connection to {} lost: {reason}", self.peer);
        self.fail(reason.clone());
        CallError::Connection(reason)
    }

    /// The record of `call`: a record mark, then the call message as
    /// [`encode_call_message`] writes it, with this connection's encoded credential.
    fn encode(&self, xid: u32, call: &RpcCall<'_>) -> Result<Vec<u8>, CallError> {
        let mut record = Vec::with_capacity(4 + 32 + self.credential.len() + call.args.len());
        record.extend_from_slice(&[0; 4]); // the record mark, filled in below
        put_call_message(&mut record, xid, call, &self.credential);
        let body_len = u32::try_from(record.len() - 4)
            .ok()
            .filter(|len| *len <= MAX_FRAGMENT_BYTES)
            .ok_or_else(|| CallError::Malformed("the call is too large to send".into()))?;
        record[..4].copy_from_slice(&(body_len | LAST_FRAGMENT).to_be_bytes());
        Ok(record)
    }

    /// The reply in `record` (no record mark), whose buffer goes back to the connection's
    /// pool when the reply is dropped.
    fn accept(&self, record: Vec<u8>) -> Result<Reply, CallError> {
        let buffers = Arc::clone(&self.buffers);
        Reply::accept(record, Some(Box::new(move |buffer| buffers.put(buffer))))
    }

    /// Marks the connection broken and fails every waiting call with `reason`.
    fn fail(&self, reason: String) {
        self.broken.store(true, Ordering::Release);
        fail_all(&self.pending, reason);
    }
}

#[async_trait::async_trait]
impl RpcChannel for RpcConnection {
    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// See [`RpcConnection::send`]. The caller reads its own reply, so a dropped call stops
    /// reading; one dropped in the middle of a reply breaks the connection.
    async fn call(&self, call: RpcCall<'_>) -> Result<Answer, CallError> {
        self.send(call).await
    }
}

/// The record mark's flag for the last fragment of a record.
const LAST_FRAGMENT: u32 = 0x8000_0000;
/// The largest fragment a record mark can give.
const MAX_FRAGMENT_BYTES: u32 = 0x7fff_ffff;

/// Appends the call message of `call` to `out`, with `credential` already in XDR.
fn put_call_message(out: &mut Vec<u8>, xid: u32, call: &RpcCall<'_>, credential: &[u8]) {
    out.reserve(32 + credential.len() + call.args.len());
    for word in [xid, 0 /* CALL */, 2 /* RPC version */, call.program, call.version, call.procedure] {
        out.extend_from_slice(&word.to_be_bytes());
    }
    out.extend_from_slice(credential);
    out.extend_from_slice(&[0; 8]); // verifier: AUTH_NONE, empty
    out.extend_from_slice(call.args);
}

/// Breaks the connection if a caller stops in the middle of reading a record (its call
/// timed out), since the stream is then at an unknown place.
struct BreakOnDrop<'a> {
    connection: &'a RpcConnection,
    armed: bool,
}

impl Drop for BreakOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let peer = self.connection.peer;
            self.connection.fail(format!("connection to {peer} abandoned in the middle of a reply"));
        }
    }
}

fn lock(pending: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    // A panic while holding the lock cannot leave the map inconsistent: keep going.
    pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn fail_all(pending: &Mutex<Pending>, reason: String) {
    let waiters: Vec<Waiter> = {
        let mut pending = lock(pending);
        pending.closed.get_or_insert(reason.clone());
        pending.waiters.drain().map(|(_, w)| w).collect()
    };
    for waiter in waiters {
        let _ = waiter.send(Err(CallError::Connection(reason.clone())));
    }
}

/// The first bytes of a record: its record mark and up to [`READ_HEAD_BYTES`] of it.
struct Head {
    mark: u32,
    bytes: [u8; READ_HEAD_BYTES],
    len: usize,
}

impl Head {
    fn word(&self, i: usize) -> u32 {
        let b = &self.bytes[4 * i..4 * i + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    fn xid(&self) -> u32 {
        self.word(0)
    }

    fn record_len(&self) -> usize {
        (self.mark & 0x7fff_ffff) as usize
    }

    fn is_last_fragment(&self) -> bool {
        self.mark & 0x8000_0000 != 0
    }

    /// An accepted reply with an empty verifier, SUCCESS and NFS3_OK, in one fragment: the
    /// shape of a successful READ reply, whose data can be read in place.
    fn is_successful_read(&self) -> bool {
        self.len == READ_HEAD_BYTES
            && self.is_last_fragment()
            && self.word(1) == 1
            && self.word(2) == 0
            && self.word(4) == 0
            && self.word(5) == 0
            && self.word(6) == 0
            && self.word(7) <= 1
    }
}

/// The rest of a reply, as its caller reads it.
enum Rest {
    /// The whole record.
    Record(Vec<u8>),
    /// A successful READ reply, whose data went into the caller's buffer.
    Data { n: usize, eof: bool },
}

/// Bytes of an accepted reply with an empty verifier, up to a READ's `attributes_follow`:
/// xid, message type, reply status, verifier flavor and length, accept status, NFS status,
/// attributes flag.
const READ_HEAD_BYTES: usize = 32;
/// A READ reply's fattr3, which has a fixed size.
const FATTR3_BYTES: usize = 84;
/// A READ reply's words after its attributes: count, eof, the data's length.
const READ_TAIL_BYTES: usize = 12;

/// Reads the record mark and the first bytes of the next record.
async fn read_head(stream: &mut OwnedReadHalf) -> Result<Head, String> {
    let mark = stream.read_u32().await.map_err(|e| describe_read_error(&e))?;
    let mut head = Head { mark, bytes: [0; READ_HEAD_BYTES], len: 0 };
    head.len = READ_HEAD_BYTES.min(head.record_len());
    stream.read_exact(&mut head.bytes[..head.len]).await.map_err(|e| describe_read_error(&e))?;
    Ok(head)
}

/// Why the rest of a reply could not be had.
#[derive(Debug, PartialEq, Eq)]
enum ReplyError {
    /// The stream is lost or out of step (closed, reset, a record longer than the call may
    /// get): the connection must be given up.
    Lost(String),
    /// The record was read to its end but makes no sense for the call (a READ with more bytes
    /// than asked): the connection goes on, and the call fails.
    Malformed(String),
}

impl From<String> for ReplyError {
    fn from(reason: String) -> ReplyError {
        ReplyError::Lost(reason)
    }
}

/// Reads the rest of the record `head` began: a successful READ reply's data into `dest`
/// when one is given, anything else whole into a pooled buffer. A record longer than `limit`
/// bytes is refused before anything is read or allocated for it.
async fn read_rest(
    stream: &mut OwnedReadHalf,
    head: Head,
    dest: Option<&mut [u8]>,
    buffers: &BufferPool,
    limit: usize,
) -> Result<Rest, ReplyError> {
    let len = head.record_len();
    check_record_len(len, limit)?;
    let attributes_len = if head.word(7) == 1 { FATTR3_BYTES } else { 0 };
    let fixed_len = READ_HEAD_BYTES + attributes_len + READ_TAIL_BYTES;
    let dest = match dest {
        Some(dest) if head.is_successful_read() && len >= fixed_len => dest,
        _ => {
            let mut record = buffers.take();
            record.extend_from_slice(&head.bytes[..head.len]);
            read_fragment(stream, &mut record, len - head.len, limit).await?;
            if !head.is_last_fragment() {
                read_fragments(stream, &mut record, limit).await?;
            }
            return Ok(Rest::Record(record));
        }
    };
    let mut attributes = [0u8; FATTR3_BYTES];
    stream.read_exact(&mut attributes[..attributes_len]).await.map_err(|e| describe_read_error(&e))?;
    let mut tail = [0u8; READ_TAIL_BYTES];
    stream.read_exact(&mut tail).await.map_err(|e| describe_read_error(&e))?;
    let eof = u32::from_be_bytes([tail[4], tail[5], tail[6], tail[7]]) != 0;
    let n = u32::from_be_bytes([tail[8], tail[9], tail[10], tail[11]]) as usize;
    let padding = (4 - n % 4) % 4;
    if n > dest.len() || fixed_len + n + padding != len {
        // The record's length is within the call's limit: skip the rest of it, so that the
        // connection stays in step and only this call fails.
        skip(stream, len - fixed_len).await?;
        let reason = if n > dest.len() {
            format!("a read reply with {n} bytes of data for a read of {}", dest.len())
        } else {
            format!("a malformed read reply ({n} bytes of data in a {len}-byte record)")
        };
        return Err(ReplyError::Malformed(reason));
    }
    stream.read_exact(&mut dest[..n]).await.map_err(|e| describe_read_error(&e))?;
    let mut pad = [0u8; 3];
    stream.read_exact(&mut pad[..padding]).await.map_err(|e| describe_read_error(&e))?;
    Ok(Rest::Data { n, eof })
}

/// Refuses a record (or the fragments of one so far) of `len` bytes when the call may get
/// no more than `limit`.
fn check_record_len(len: usize, limit: usize) -> Result<(), String> {
    if len > limit {
        return Err(format!("a reply record claims {len} bytes, more than the {limit} this call may get"));
    }
    Ok(())
}

/// Reads and drops `len` bytes, through a small buffer.
async fn skip(stream: &mut OwnedReadHalf, len: usize) -> Result<(), String> {
    let mut sink = tokio::io::sink();
    let copied = tokio::io::copy(&mut (&mut *stream).take(len as u64), &mut sink)
        .await
        .map_err(|e| describe_read_error(&e))?;
    if copied < len as u64 {
        return Err(describe_read_error(&io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(())
}

/// Reads `len` bytes into the spare capacity of `record`, which is not zeroed first; `take`
/// stops at the fragment's end so the next record's bytes stay in the socket. The record may
/// grow to `limit` bytes.
async fn read_fragment(
    stream: &mut OwnedReadHalf,
    record: &mut Vec<u8>,
    len: usize,
    limit: usize,
) -> Result<(), String> {
    check_record_len(record.len().saturating_add(len), limit)?;
    let end = record.len() + len;
    record.reserve_exact(len);
    let mut fragment = (&mut *stream).take(len as u64);
    while record.len() < end {
        let n = fragment.read_buf(record).await.map_err(|e| describe_read_error(&e))?;
        if n == 0 {
            return Err(describe_read_error(&io::ErrorKind::UnexpectedEof.into()));
        }
    }
    Ok(())
}

/// Reads the further fragments of a record, up to and including the last.
async fn read_fragments(
    stream: &mut OwnedReadHalf,
    record: &mut Vec<u8>,
    limit: usize,
) -> Result<(), String> {
    loop {
        let mark = stream.read_u32().await.map_err(|e| describe_read_error(&e))?;
        read_fragment(stream, record, (mark & 0x7fff_ffff) as usize, limit).await?;
        if mark & 0x8000_0000 != 0 {
            return Ok(());
        }
    }
}

fn describe_read_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the server closed the connection".into(),
        _ => e.to_string(),
    }
}

/// The AUTH_SYS credential (flavor 1) as XDR: flavor, then the opaque body.
fn auth_sys(credential: &Credential) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0u32.to_be_bytes()); // stamp
    let name = &credential.machine_name.as_bytes()[..credential.machine_name.len().min(255)];
    put_opaque(&mut body, name);
    body.extend_from_slice(&credential.uid.to_be_bytes());
    body.extend_from_slice(&credential.gid.to_be_bytes());
    body.extend_from_slice(&1u32.to_be_bytes()); // one auxiliary group: gid
    body.extend_from_slice(&credential.gid.to_be_bytes());
    let mut out = Vec::with_capacity(body.len() + 8);
    out.extend_from_slice(&1u32.to_be_bytes());
    put_opaque(&mut out, &body);
    out
}

fn put_opaque(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
    out.resize(out.len() + (4 - bytes.len() % 4) % 4, 0);
}

fn initial_xid() -> u32 {
    // Distinct connections need not differ; a varying start only makes captures easier to read.
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::nfs::channel::{accepted_result_start, BufferIdentity, ReadInto};
    use crate::nfs::xdr::XdrReader;

    fn reply(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn accepted_reply_starts_after_the_verifier() {
        let record = reply(&[7, 1, 0, 0, 0, 0, 42]);
        assert_eq!(accepted_result_start(&record), Ok(24));
        // A verifier with a body of 5 bytes, padded to 8.
        let record = reply(&[7, 1, 0, 1, 5, 0, 0, 0, 42]);
        assert_eq!(accepted_result_start(&record), Ok(32));
    }

    #[test]
    fn denied_and_unavailable_replies_are_named() {
        let denied = accepted_result_start(&reply(&[7, 1, 1, 1, 5])).unwrap_err();
        assert_eq!(denied, CallError::Rejected("authentication refused (credentials too weak)".into()));
        let no_program = accepted_result_start(&reply(&[7, 1, 0, 0, 0, 1])).unwrap_err();
        assert!(matches!(no_program, CallError::Rejected(m) if m.contains("program")));
        assert!(matches!(accepted_result_start(&[0, 0]), Err(CallError::Malformed(_))));
    }

    #[test]
    fn auth_sys_is_padded_xdr() {
        let cred = auth_sys(&Credential { uid: 1000, gid: 100, machine_name: "abc".into() });
        // flavor, length, stamp, name length, "abc\0", uid, gid, 1 group, gid
        assert_eq!(cred.len(), 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4);
        assert_eq!(&cred[..4], &1u32.to_be_bytes());
        assert_eq!(cred.len() % 4, 0);
    }

    /// A READ reply to `xid` carrying `data`, as one record (or two fragments).
    fn read_reply(xid: u32, data: &[u8], with_attributes: bool, fragments: bool) -> Vec<u8> {
        let mut body = reply(&[xid, 1, 0, 0, 0, 0, 0, u32::from(with_attributes)]);
        if with_attributes {
            body.extend_from_slice(&[0; FATTR3_BYTES]);
        }
        body.extend_from_slice(&reply(&[data.len() as u32, 1, data.len() as u32]));
        body.extend_from_slice(data);
        body.resize(body.len() + (4 - data.len() % 4) % 4, 0);
        let mut out = Vec::new();
        if fragments {
            let (a, b) = body.split_at(10);
            out.extend_from_slice(&(a.len() as u32).to_be_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(&(b.len() as u32 | 0x8000_0000).to_be_bytes());
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(&(body.len() as u32 | 0x8000_0000).to_be_bytes());
            out.extend_from_slice(&body);
        }
        out
    }

    /// A server that reads `n` calls, then answers them in reverse order, each with the data
    /// "reply to call K", and then closes.
    async fn reversing_server(n: usize) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut xids = Vec::new();
            for _ in 0..n {
                let len = stream.read_u32().await.unwrap() & 0x7fff_ffff;
                let mut call = vec![0; len as usize];
                stream.read_exact(&mut call).await.unwrap();
                xids.push(u32::from_be_bytes([call[0], call[1], call[2], call[3]]));
            }
            for (k, xid) in xids.iter().enumerate().rev() {
                let data = format!("reply to call {k}");
                stream.write_all(&read_reply(*xid, data.as_bytes(), k % 2 == 0, k == 1)).await.unwrap();
            }
        });
        addr
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replies_out_of_order_reach_their_own_calls() {
        let addr = reversing_server(3).await;
        let credential = Credential { uid: 0, gid: 0, machine_name: "test".into() };
        let connection = Arc::new(RpcConnection::connect(addr, &credential).await.unwrap());
        let mut calls = Vec::new();
        for k in 0..3 {
            let connection = Arc::clone(&connection);
            calls.push(tokio::spawn(async move {
                let mut dest = vec![0u8; 64];
                let buffer = BufferIdentity { id: k, base: dest.as_ptr() as usize, len: dest.len() };
                let call = RpcCall {
                    program: 100_003,
                    version: 3,
                    procedure: 6,
                    args: &[],
                    read_into: Some(ReadInto { dest: &mut dest, buffer }),
                    bulk: None,
                    max_reply: SMALL_REPLY_BYTES,
                };
                let answer = RpcChannel::call(&*connection, call).await;
                (k, answer, dest)
            }));
            // The calls go out in order, so that call k's XID is the k-th the server sees.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        for call in calls {
            let (k, answer, dest) = call.await.unwrap();
            let expected = format!("reply to call {k}");
            let data = match answer.unwrap() {
                Answer::Data { n, eof } => {
                    assert!(eof);
                    dest[..n].to_vec()
                }
                Answer::Placed { .. } => panic!("tcp places no data"),
                Answer::Reply(reply) => {
                    // Read by another caller: the whole READ3res, parsed by the caller.
                    let body = reply.body();
                    let mut r = XdrReader::new(body);
                    assert_eq!(r.u32(), Some(0));
                    if r.u32() == Some(1) {
                        r.skip(FATTR3_BYTES).unwrap();
                    }
                    r.skip(8).unwrap();
                    r.opaque().unwrap().to_vec()
                }
            };
            assert_eq!(String::from_utf8(data).unwrap(), expected);
        }
    }

    #[tokio::test]
    async fn a_closed_connection_fails_the_call_and_every_later_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            // Accept, read a little, and hang up without answering.
            let (mut stream, _) = listener.accept().await.unwrap();
            let _ = stream.read_u32().await;
        });
        let credential = Credential { uid: 0, gid: 0, machine_name: "test".into() };
        let connection = RpcConnection::connect(addr, &credential).await.unwrap();
        let first = connection.call_procedure(100_003, 3, 0, &nfs3_types::xdr_codec::Void).await.unwrap_err();
        // The server's unread bytes make its close a reset, or else it is a plain end of stream.
        assert!(matches!(&first, CallError::Connection(m) if m.contains("lost")), "{first}");
        assert!(connection.is_broken());
        let later = connection.call_procedure(100_003, 3, 0, &nfs3_types::xdr_codec::Void).await.unwrap_err();
        assert!(matches!(later, CallError::Connection(_)));
    }

    #[test]
    fn a_call_message_is_header_credential_verifier_and_args() {
        let credential = Credential { uid: 1000, gid: 100, machine_name: "abc".into() };
        let args = [0xaa; 8];
        let call = RpcCall {
            program: 100_003,
            version: 3,
            procedure: 6,
            args: &args,
            read_into: None,
            bulk: None,
            max_reply: SMALL_REPLY_BYTES,
        };
        let mut out = vec![0xff];
        encode_call_message(&mut out, 7, &call, &credential);
        // Appended after what `out` held.
        assert_eq!(out[0], 0xff);
        let message = &out[1..];
        assert_eq!(&message[..24], &reply(&[7, 0, 2, 100_003, 3, 6])[..]);
        let cred = auth_sys(&credential);
        assert_eq!(&message[24..24 + cred.len()], &cred[..]);
        assert_eq!(&message[24 + cred.len()..32 + cred.len()], &[0; 8]);
        assert_eq!(&message[32 + cred.len()..], &args);
    }

    #[tokio::test]
    async fn the_tcp_record_is_the_call_message_behind_a_record_mark() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let credential = Credential { uid: 1, gid: 2, machine_name: "host".into() };
        let connection = RpcConnection::connect(addr, &credential).await.unwrap();
        let call = RpcCall {
            program: 100_005,
            version: 3,
            procedure: 1,
            args: &[1, 2, 3, 4],
            read_into: None,
            bulk: None,
            max_reply: SMALL_REPLY_BYTES,
        };
        let record = connection.encode(42, &call).unwrap();
        let mut message = Vec::new();
        encode_call_message(&mut message, 42, &call, &credential);
        assert_eq!(&record[..4], &(message.len() as u32 | LAST_FRAGMENT).to_be_bytes());
        assert_eq!(&record[4..], &message[..]);
    }

    /// A server that reads `n` calls, writes what `replies` makes of their xids, and keeps the
    /// connection open for 10 s with nothing more.
    async fn scripted_server(
        n: usize,
        replies: impl FnOnce(&[u32]) -> Vec<u8> + Send + 'static,
    ) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut xids = Vec::new();
            for _ in 0..n {
                let len = stream.read_u32().await.unwrap() & 0x7fff_ffff;
                let mut call = vec![0; len as usize];
                stream.read_exact(&mut call).await.unwrap();
                xids.push(u32::from_be_bytes([call[0], call[1], call[2], call[3]]));
            }
            stream.write_all(&replies(&xids)).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
        });
        addr
    }

    /// Sends a READ of `dest.len()` bytes on `connection`.
    async fn read_call(connection: &RpcConnection, dest: &mut [u8]) -> Result<Answer, CallError> {
        let buffer = BufferIdentity { id: 1, base: dest.as_ptr() as usize, len: dest.len() };
        let call = RpcCall {
            program: 100_003,
            version: 3,
            procedure: 6,
            args: &[],
            read_into: Some(ReadInto { dest, buffer }),
            bulk: None,
            max_reply: SMALL_REPLY_BYTES,
        };
        let answer = tokio::time::timeout(std::time::Duration::from_secs(2), connection.send(call));
        answer.await.expect("the call should end at once, not wait for bytes that never come")
    }

    fn test_credential() -> Credential {
        Credential { uid: 0, gid: 0, machine_name: "test".into() }
    }

    #[tokio::test]
    async fn a_record_mark_claiming_2_gib_is_refused_before_it_is_read() {
        // The most a record mark can claim, then a successful READ reply's first bytes, and
        // nothing more: reading on, or allocating what it claims, would hang or take 2 GiB.
        let addr = scripted_server(1, |xids| {
            let mut out = 0xffff_ffffu32.to_be_bytes().to_vec();
            out.extend_from_slice(&read_reply(xids[0], b"data", true, false)[4..]);
            out
        })
        .await;
        let connection = RpcConnection::connect(addr, &test_credential()).await.unwrap();
        let mut dest = vec![0u8; 4096];
        let err = read_call(&connection, &mut dest).await.unwrap_err();
        let expected = format!("a reply record claims 2147483647 bytes, more than the {MIN_RECORD_LIMIT}");
        // The mark heads this call's own reply: the reply is cut, and the connection broken.
        assert!(matches!(&err, CallError::ReplyCut(m) if m.contains(&expected)), "{err}");
        assert!(connection.is_broken());
        // The limit follows the call: a READ of 4 MiB may get a record of 4 MiB and headers.
        assert_eq!(
            check_record_len(0x7fff_ffff, MAX_RECORD_BYTES).map_err(|e| e.contains("2147483647")),
            Err(true)
        );
        let mut big = vec![0u8; 4 << 20];
        let buffer = BufferIdentity { id: 1, base: big.as_ptr() as usize, len: big.len() };
        let call = RpcCall {
            program: 100_003,
            version: 3,
            procedure: 6,
            args: &[],
            read_into: Some(ReadInto { dest: &mut big, buffer }),
            bulk: None,
            max_reply: SMALL_REPLY_BYTES,
        };
        assert_eq!(record_limit(&call), (4 << 20) + SMALL_REPLY_BYTES);
    }

    #[tokio::test]
    async fn a_read_reply_with_more_bytes_than_asked_fails_the_call_and_keeps_the_connection() {
        let addr = scripted_server(2, |xids| {
            let mut out = read_reply(xids[0], &[7; 100], true, false);
            out.extend_from_slice(&read_reply(xids[1], b"right", false, false));
            out
        })
        .await;
        let connection = Arc::new(RpcConnection::connect(addr, &test_credential()).await.unwrap());
        let (mut first, mut second) = (vec![0u8; 64], vec![0u8; 64]);
        let other = Arc::clone(&connection);
        let (a, b) = tokio::join!(read_call(&connection, &mut first), async {
            // The second call goes out after the first, so that the server sees them in order.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            read_call(&other, &mut second).await
        });
        let err = a.unwrap_err();
        assert_eq!(err, CallError::Malformed("a read reply with 100 bytes of data for a read of 64".into()));
        assert!(matches!(b, Ok(Answer::Data { n: 5, eof: true })), "{b:?}");
        assert_eq!(&second[..5], b"right");
        assert!(!connection.is_broken());
    }

    #[tokio::test]
    async fn a_reply_to_an_xid_no_call_has_breaks_the_connection() {
        let addr = scripted_server(1, |xids| read_reply(xids[0] ^ 0x5a5a_0000, b"stray", false, false)).await;
        let connection = RpcConnection::connect(addr, &test_credential()).await.unwrap();
        let mut dest = vec![0u8; 64];
        let err = read_call(&connection, &mut dest).await.unwrap_err();
        assert!(
            matches!(&err, CallError::Connection(m) if m.contains("which no call is waiting for")),
            "{err}"
        );
        assert!(connection.is_broken());
    }

    #[test]
    fn xdr_reader_never_reads_past_the_end() {
        let mut r = XdrReader::new(&[0, 0, 0, 9, 1, 2]);
        assert_eq!(r.opaque(), None);
        let mut r = XdrReader::new(&[0, 0, 0, 1, 2]);
        assert_eq!(r.u32(), Some(1));
        assert_eq!(r.u32(), None);
    }
}
