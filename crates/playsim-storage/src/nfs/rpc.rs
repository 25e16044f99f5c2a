//! ONC RPC over one TCP connection, with many calls in flight (RFC 5531, record marking).
//!
//! nfs3_client's `RpcClient` sends one call and waits for its reply before the next, so a
//! connection carries one READ at a time; the Linux client keeps many in flight on each of its
//! `nconnect` connections. Here a writer sends whole records under a lock, and one reader task
//! reads replies as they come and hands each to the call with its XID. When the connection
//! fails, every call waiting on it fails at once with the reason, so the pool can reconnect.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nfs3_types::xdr_codec::Pack;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::cpu::CpuMeter;

/// The largest reply record accepted: a READ of the largest rsize plus headers, with room.
/// A hostile or confused server cannot make the client allocate more.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// The AUTH_SYS credential sent with every call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Credential {
    pub uid: u32,
    pub gid: u32,
    pub machine_name: String,
}

/// Why a call got no usable reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The connection failed or closed: the call may be sent again on a new connection.
    Connection(String),
    /// The server answered, but not with the procedure's result (denied, no such program).
    Rejected(String),
    /// The server's reply could not be parsed.
    Malformed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Connection(m) | CallError::Rejected(m) | CallError::Malformed(m) => f.write_str(m),
        }
    }
}

/// The accepted result of a call: the reply record, and where the procedure's result starts.
/// Its buffer goes back to the connection's pool when dropped.
#[derive(Debug)]
pub(crate) struct Reply {
    record: Vec<u8>,
    start: usize,
    pool: Arc<BufferPool>,
}

impl Reply {
    /// The procedure's result bytes.
    pub fn body(&self) -> &[u8] {
        &self.record[self.start..]
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.record));
    }
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

type Waiter = oneshot::Sender<Result<Vec<u8>, CallError>>;

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
    pending: Arc<Mutex<Pending>>,
    next_xid: AtomicU32,
    credential: Vec<u8>,
    reader: JoinHandle<()>,
    broken: Arc<AtomicBool>,
    buffers: Arc<BufferPool>,
}

impl std::fmt::Debug for RpcConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcConnection").field("peer", &self.peer).finish_non_exhaustive()
    }
}

impl Drop for RpcConnection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl RpcConnection {
    /// Connects to `peer`. Must run inside a tokio runtime.
    /// The CPU time of the task that reads replies is added to `cpu_ns`.
    pub async fn connect(
        peer: SocketAddr,
        credential: &Credential,
        cpu_ns: Arc<AtomicU64>,
    ) -> io::Result<RpcConnection> {
        let stream = TcpStream::connect(peer).await?;
        stream.set_nodelay(true)?;
        let (mut read_half, write_half) = stream.into_split();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let broken = Arc::new(AtomicBool::new(false));
        let buffers = Arc::new(BufferPool::default());
        let reader = {
            let pending = Arc::clone(&pending);
            let broken = Arc::clone(&broken);
            let buffers = Arc::clone(&buffers);
            let reading = async move {
                let reason = loop {
                    match read_record(&mut read_half, buffers.take()).await {
                        Ok(record) => deliver(&pending, record),
                        Err(e) => break e,
                    }
                };
                broken.store(true, Ordering::Release);
                fail_all(&pending, format!("connection to {peer} lost: {reason}"));
            };
            tokio::spawn(CpuMeter::new(reading, cpu_ns))
        };
        Ok(RpcConnection {
            peer,
            writer: tokio::sync::Mutex::new(write_half),
            pending,
            next_xid: AtomicU32::new(initial_xid()),
            credential: auth_sys(credential),
            reader,
            broken,
            buffers,
        })
    }

    /// True once the connection has failed; calls on it fail at once.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// Calls `procedure` of `program` `version` with `args` and waits for the accepted reply.
    pub async fn call(
        &self,
        program: u32,
        version: u32,
        procedure: u32,
        args: &impl Pack,
    ) -> Result<Reply, CallError> {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let mut record = Vec::with_capacity(64 + self.credential.len() + args.packed_size());
        record.extend_from_slice(&[0; 4]); // the record mark, filled in below
        for word in [xid, 0 /* CALL */, 2 /* RPC version */, program, version, procedure] {
            record.extend_from_slice(&word.to_be_bytes());
        }
        record.extend_from_slice(&self.credential);
        record.extend_from_slice(&[0; 8]); // verifier: AUTH_NONE, empty
        args.pack(&mut record).map_err(|e| CallError::Malformed(format!("cannot encode the call: {e}")))?;
        let body_len = u32::try_from(record.len() - 4)
            .map_err(|_| CallError::Malformed("the call is too large to send".into()))?;
        record[..4].copy_from_slice(&(body_len | 0x8000_0000).to_be_bytes());

        let (tx, rx) = oneshot::channel();
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
            self.broken.store(true, Ordering::Release);
            return Err(CallError::Connection(format!("cannot send to {}: {e}", self.peer)));
        }
        let record =
            rx.await.map_err(|_| CallError::Connection(format!("connection to {} closed", self.peer)))??;
        let mut reply = Reply { record, start: 0, pool: Arc::clone(&self.buffers) };
        reply.start = accepted_result_start(&reply.record)?;
        Ok(reply)
    }
}

fn lock(pending: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    // A panic while holding the lock cannot leave the map inconsistent: keep going.
    pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn deliver(pending: &Mutex<Pending>, record: Vec<u8>) {
    let Some(xid) = record.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]])) else { return };
    // A reply to a call that gave up waiting is dropped.
    if let Some(waiter) = lock(pending).waiters.remove(&xid) {
        let _ = waiter.send(Ok(record));
    }
}

fn fail_all(pending: &Mutex<Pending>, reason: String) {
    let waiters: Vec<Waiter> = {
        let mut pending = lock(pending);
        pending.closed = Some(reason.clone());
        pending.waiters.drain().map(|(_, w)| w).collect()
    };
    for waiter in waiters {
        let _ = waiter.send(Err(CallError::Connection(reason.clone())));
    }
}

/// Reads one record (all its fragments) into `record`, which is cleared first.
async fn read_record(
    stream: &mut tokio::net::tcp::OwnedReadHalf,
    mut record: Vec<u8>,
) -> Result<Vec<u8>, String> {
    record.clear();
    loop {
        let mark = stream.read_u32().await.map_err(|e| describe_read_error(&e))?;
        let len = (mark & 0x7fff_ffff) as usize;
        if record.len() + len > MAX_RECORD_BYTES {
            return Err(format!("a reply of more than {MAX_RECORD_BYTES} bytes"));
        }
        let end = record.len() + len;
        record.reserve_exact(len);
        // Read into the spare capacity, which is not zeroed first; `take` stops at the
        // fragment's end so the next record's bytes stay in the socket.
        let mut fragment = (&mut *stream).take(len as u64);
        while record.len() < end {
            let n = fragment.read_buf(&mut record).await.map_err(|e| describe_read_error(&e))?;
            if n == 0 {
                return Err(describe_read_error(&io::ErrorKind::UnexpectedEof.into()));
            }
        }
        if mark & 0x8000_0000 != 0 {
            return Ok(record);
        }
    }
}

fn describe_read_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the server closed the connection".into(),
        _ => e.to_string(),
    }
}

/// Checks that `record` is an accepted, successful reply and returns where its result starts.
fn accepted_result_start(record: &[u8]) -> Result<usize, CallError> {
    let mut r = XdrReader::new(record);
    let malformed = |what: &str| CallError::Malformed(format!("malformed rpc reply: {what}"));
    let _xid = r.u32().ok_or_else(|| malformed("too short"))?;
    if r.u32() != Some(1) {
        return Err(malformed("not a reply"));
    }
    match r.u32().ok_or_else(|| malformed("too short"))? {
        0 => {}
        1 => {
            let reason = match (r.u32(), r.u32()) {
                (Some(0), _) => "rpc version mismatch".to_owned(),
                (Some(1), Some(stat)) => format!("authentication refused ({})", auth_stat(stat)),
                _ => "call denied".to_owned(),
            };
            return Err(CallError::Rejected(reason));
        }
        _ => return Err(malformed("bad reply status")),
    }
    let _verifier_flavor = r.u32().ok_or_else(|| malformed("too short"))?;
    r.opaque().ok_or_else(|| malformed("bad verifier"))?;
    match r.u32().ok_or_else(|| malformed("too short"))? {
        0 => Ok(r.position()),
        1 => Err(CallError::Rejected("the server does not offer this program".into())),
        2 => Err(CallError::Rejected("the server does not offer this program version".into())),
        3 => Err(CallError::Rejected("the server does not offer this procedure".into())),
        4 => Err(CallError::Rejected("the server could not decode the call".into())),
        other => Err(CallError::Rejected(format!("the server failed the call (accept status {other})"))),
    }
}

fn auth_stat(stat: u32) -> &'static str {
    match stat {
        1 => "bad credentials",
        2 => "credentials rejected: log in again",
        3 => "bad verifier",
        4 => "verifier rejected",
        5 => "credentials too weak",
        _ => "authentication error",
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

/// Reads XDR words and opaques from a byte slice, never past its end.
pub(crate) struct XdrReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> XdrReader<'a> {
    pub fn new(bytes: &'a [u8]) -> XdrReader<'a> {
        XdrReader { bytes, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn u32(&mut self) -> Option<u32> {
        let b = self.bytes.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes.get(self.pos..self.pos + n)?;
        self.pos += n;
        Some(())
    }

    /// A variable-length opaque: its bytes, with the padding skipped.
    pub fn opaque(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        let bytes = self.bytes.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len + (4 - len % 4) % 4;
        (self.pos <= self.bytes.len()).then_some(bytes)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn xdr_reader_never_reads_past_the_end() {
        let mut r = XdrReader::new(&[0, 0, 0, 9, 1, 2]);
        assert_eq!(r.opaque(), None);
        let mut r = XdrReader::new(&[0, 0, 0, 1, 2]);
        assert_eq!(r.u32(), Some(1));
        assert_eq!(r.u32(), None);
    }
}
