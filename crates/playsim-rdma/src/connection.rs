//! One RPC-over-RDMA connection ([`RdmaChannel`]): an rdma_cm connection to the server's
//! RDMA port, a reliable-connected queue pair, receives posted before any send, and a poller
//! thread that takes completions and hands each reply to its call by XID.
//!
//! Calls go inline in a SEND; a READ offers a Write chunk that points into its frame buffer
//! (registered once by the [`Registry`](crate::registry::Registry)), so the server places the
//! data there with RDMA Write and the reply carries only the READ's result. A WRITE too large
//! to send inline has its data copied into a registered buffer (from the pool, registered for
//! remote reads) named by a read chunk, which the server pulls with RDMA Read; the rest of
//! the call goes inline. A call whose reply may not fit a receive (READDIRPLUS) offers a
//! reply chunk. The server's credit grant, in each reply, bounds the calls outstanding.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use playsim_storage::nfs::{encode_call_message, Answer, CallError, Credential, Reply, RpcCall, RpcChannel};
use tokio::sync::{oneshot, Notify};

use crate::header::{self, ConnectPrivate, RdmaError, ReplyKind, Segment};
use crate::registry::RegisteredBuffer;
use crate::verbs::{
    CmEvent, CmId, Completion, CompletionChannel, CompletionQueue, EventChannel, ProtectionDomain,
    RemoteAccess,
};
use crate::{ReplyBuffer, Shared};

/// Bytes of each receive buffer and the largest reply the client takes inline: the size
/// the client advertises in its connection private data (RFC 8797).
pub(crate) const INLINE_RECV: usize = 4096;
/// Bytes of each send buffer: the largest call the client sends inline (capped by what the
/// server can receive).
pub(crate) const INLINE_SEND: usize = 4096;
/// Credits asked of the server: calls the client may have outstanding on one connection.
/// Linux's client asks 128 and knfsd grants 64 (svcrdma's default).
pub(crate) const CREDITS_WANTED: u32 = 128;
/// How long address and route resolution may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the connection handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the poller looks at its stop flag and the connection manager's events.
const POLL_TICK: Duration = Duration::from_millis(50);
/// Marks a send's work-request id, to tell its completion from a receive's.
const SEND_TAG: u64 = 1 << 63;

/// What the connection negotiated, for the report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Negotiated {
    /// The largest call the server receives inline.
    pub server_recv: usize,
    /// The largest reply the server sends inline.
    pub server_send: usize,
    /// True when the server sent RFC 8797 private data.
    pub from_private_data: bool,
}

/// A reply as the poller delivers it to its call.
struct Delivery {
    header: header::ReplyHeader,
    /// The bytes after the transport header (the RPC reply, for RDMA_MSG).
    inline: Vec<u8>,
}

type Waiter = oneshot::Sender<Result<Delivery, CallError>>;

struct State {
    waiters: HashMap<u32, Waiter>,
    closed: Option<String>,
    /// Calls the server lets the client have outstanding (its last grant, clamped).
    granted: u32,
    outstanding: u32,
    free_sends: Vec<usize>,
}

/// The parts the poller thread shares with the callers. Field order is drop order: the id
/// (and its QP) first, then the CQ, then the buffers it used.
struct Connection {
    id: CmId,
    cq: CompletionQueue,
    sends: Vec<RegisteredBuffer>,
    recvs: Vec<RegisteredBuffer>,
    _completion_channel: Arc<CompletionChannel>,
    events: Arc<EventChannel>,
    peer: SocketAddr,
    negotiated: Negotiated,
    state: Mutex<State>,
    /// Wakes callers waiting for a credit or a send buffer.
    freed: Notify,
    broken: AtomicBool,
    stop: AtomicBool,
    shared: Arc<Shared>,
}

/// One RPC-over-RDMA connection to an NFS server.
pub struct RdmaChannel {
    connection: Arc<Connection>,
    credential: Credential,
    next_xid: std::sync::atomic::AtomicU32,
    poller: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for RdmaChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaChannel").field("peer", &self.connection.peer).finish_non_exhaustive()
    }
}

impl RdmaChannel {
    /// Connects to `peer` (blocking: run it off the async threads).
    pub(crate) fn connect(
        peer: SocketAddr,
        credential: &Credential,
        shared: &Arc<Shared>,
    ) -> io::Result<RdmaChannel> {
        let events = EventChannel::new().map_err(no_device)?;
        events.set_nonblocking()?;
        let mut id = CmId::new(&events)?;
        id.resolve_addr(peer, RESOLVE_TIMEOUT)?;
        expect_event(&events, &id, header_event::ADDR_RESOLVED, peer, "resolve the address")?;
        id.resolve_route(RESOLVE_TIMEOUT)?;
        expect_event(&events, &id, header_event::ROUTE_RESOLVED, peer, "resolve the route")?;
        let context = id.context();
        let pd = shared.protection_domain(context, &id.device_name())?;
        let completion_channel = CompletionChannel::new(context)?;
        let n_recv = CREDITS_WANTED as usize;
        let n_send = CREDITS_WANTED as usize;
        let cq = CompletionQueue::new(context, (n_recv + n_send + 8) as i32, &completion_channel)?;
        id.create_qp(&pd, &cq, n_send as u32, n_recv as u32)?;
        let sends = (0..n_send)
            .map(|_| RegisteredBuffer::new(&pd, INLINE_SEND, RemoteAccess::None))
            .collect::<io::Result<Vec<_>>>()?;
        let recvs = (0..n_recv)
            .map(|_| RegisteredBuffer::new(&pd, INLINE_RECV, RemoteAccess::None))
            .collect::<io::Result<Vec<_>>>()?;
        for (i, buffer) in recvs.iter().enumerate() {
            id.post_recv(buffer.region(), 0, INLINE_RECV as u32, i as u64)?;
        }
        let private = ConnectPrivate {
            send_size: INLINE_SEND as u32,
            recv_size: INLINE_RECV as u32,
            remote_invalidate: false,
        };
        id.connect(&private.encode(), 16)?;
        let established = expect_event(&events, &id, header_event::ESTABLISHED, peer, "connect")?;
        let negotiated = match ConnectPrivate::decode(&established.private) {
            Some(server) => Negotiated {
                server_recv: server.recv_size as usize,
                server_send: server.send_size as usize,
                from_private_data: true,
            },
            None => Negotiated {
                server_recv: header::DEFAULT_INLINE_RECV as usize,
                server_send: header::DEFAULT_INLINE_SEND as usize,
                from_private_data: false,
            },
        };
        shared.note_connection(&id.device_name(), negotiated);
        let connection = Arc::new(Connection {
            id,
            cq,
            sends,
            recvs,
            _completion_channel: completion_channel,
            events,
            peer,
            negotiated,
            state: Mutex::new(State {
                waiters: HashMap::new(),
                closed: None,
                // One call until the first reply tells the grant (RFC 8166, 3.3.1).
                granted: 1,
                outstanding: 0,
                free_sends: (0..n_send).rev().collect(),
            }),
            freed: Notify::new(),
            broken: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            shared: Arc::clone(shared),
        });
        let poller_connection = Arc::clone(&connection);
        let poller = std::thread::Builder::new()
            .name("playsim-rdma-poll".into())
            .spawn(move || poll_completions(&poller_connection))?;
        Ok(RdmaChannel {
            connection,
            credential: credential.clone(),
            next_xid: std::sync::atomic::AtomicU32::new(initial_xid()),
            poller: Mutex::new(Some(poller)),
        })
    }
}

impl Drop for RdmaChannel {
    fn drop(&mut self) {
        self.connection.fail("the connection was closed".into());
        self.connection.stop.store(true, Ordering::Release);
        if let Some(poller) = lock(&self.poller).take() {
            let _ = poller.join();
        }
    }
}

/// Names of the connection-manager events the client waits for.
mod header_event {
    use rdma_mummy_sys::rdma_cm_event_type as t;
    pub const ADDR_RESOLVED: t::Type = t::RDMA_CM_EVENT_ADDR_RESOLVED;
    pub const ROUTE_RESOLVED: t::Type = t::RDMA_CM_EVENT_ROUTE_RESOLVED;
    pub const ESTABLISHED: t::Type = t::RDMA_CM_EVENT_ESTABLISHED;
}

/// Waits for the event `want` on `id`; any other event for it is the step's failure.
fn expect_event(
    events: &EventChannel,
    id: &CmId,
    want: u32,
    peer: SocketAddr,
    step: &str,
) -> io::Result<CmEvent> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "cannot {step} to {peer} over RDMA: no answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                ),
            ));
        }
        let Some(event) = events.next_event(left.min(POLL_TICK))? else { continue };
        if event.id != id.address() {
            continue;
        }
        if event.kind == want {
            return Ok(event);
        }
        let kind = if event.kind == rdma_mummy_sys::rdma_cm_event_type::RDMA_CM_EVENT_REJECTED {
            io::ErrorKind::ConnectionRefused
        } else {
            io::ErrorKind::Other
        };
        return Err(io::Error::new(
            kind,
            format!("cannot {step} to {peer} over RDMA: {} (status {})", event.name(), event.status),
        ));
    }
}

/// The message for a host where the connection manager cannot even start.
fn no_device(e: io::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("no RDMA device on this host ({e}): `ibv_devices` lists none; nfs+rdma:// needs one (a RoCE or InfiniBand NIC, or soft-RoCE: rdma link add rxe0 type rxe netdev IF)"),
    )
}

#[async_trait::async_trait]
impl RpcChannel for RdmaChannel {
    fn is_broken(&self) -> bool {
        self.connection.broken.load(Ordering::Acquire)
    }

    async fn call(&self, mut call: RpcCall<'_>) -> Result<Answer, CallError> {
        let connection = &self.connection;
        let slot = connection.acquire().await?;
        let mut credit = CreditGuard {
            connection,
            slot: Some(slot),
            waiting_xid: None,
            offered_memory: false,
            reply_buffer: None,
            bounce: None,
            read_chunk: None,
        };
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);

        // Where the server may write: the frame buffer for a READ (or, when locked memory is
        // short, a registered bounce buffer, copied from after the reply), a reply buffer for
        // a call whose reply may not fit a receive.
        let mut offered_write = None;
        let mut _frame_region = None;
        if let Some(read) = &call.read_into {
            let length =
                u32::try_from(read.dest.len()).map_err(|_| CallError::Malformed("read too large".into()))?;
            let shared = &connection.shared;
            match shared.registry.region_for(read.buffer) {
                Ok(region) => {
                    offered_write =
                        Some(Segment { handle: region.rkey(), length, offset: read.dest.as_ptr() as u64 });
                    _frame_region = Some(region);
                }
                Err(refused) if refused.memlock => {
                    let bounce = shared
                        .bounce_buffer(read.dest.len(), RemoteAccess::Write)
                        .await
                        .map_err(|e| CallError::Fatal(e.to_string()))?;
                    offered_write = Some(Segment {
                        handle: bounce.region().rkey(),
                        length,
                        offset: bounce.region().addr() as u64,
                    });
                    credit.bounce = Some(bounce);
                }
                Err(refused) => return Err(CallError::Fatal(refused.message)),
            }
        }
        let inline_limit =
            INLINE_RECV.min(connection.negotiated.server_send.max(header::DEFAULT_INLINE_SEND as usize));
        if call.max_reply > inline_limit {
            let buffer = connection
                .shared
                .reply_buffer(call.max_reply)
                .map_err(|e| CallError::Fatal(e.to_string()))?;
            credit.reply_buffer = Some(buffer);
        }
        let offered_reply = credit.reply_buffer.as_deref().map(reply_segment);
        let reply_chunk = offered_reply.as_ref().map(std::slice::from_ref);
        let write_chunk = offered_write.as_ref().map(std::slice::from_ref);

        // The RPC message is the call header (with its credential) and the arguments; the
        // header is encoded apart so that a WRITE's data can be left out of the Send.
        let mut rpc_header = Vec::with_capacity(128);
        let bare = RpcCall {
            program: call.program,
            version: call.version,
            procedure: call.procedure,
            args: &[],
            read_into: None,
            bulk: None,
            max_reply: call.max_reply,
        };
        encode_call_message(&mut rpc_header, xid, &bare, &self.credential);
        let server_recv = connection.negotiated.server_recv.min(INLINE_SEND);
        let inline_len =
            header::call_header_len(&[], write_chunk, reply_chunk) + rpc_header.len() + call.args.len();
        let mut message = Vec::with_capacity(inline_len.min(INLINE_SEND) + 64);
        if inline_len <= server_recv {
            header::encode_call_header(&mut message, xid, CREDITS_WANTED, &[], write_chunk, reply_chunk);
            message.extend_from_slice(&rpc_header);
            message.extend_from_slice(call.args);
        } else {
            // Too large to send inline. A WRITE's data moves to a read chunk: copied into a
            // registered buffer the server pulls with RDMA Read, the rest of the call inline
            // (RFC 8166 §3.5, RFC 8267 §4). Any other call is refused (no Position-Zero read
            // chunk: playsim sends no other call near this size).
            let Some(bulk) = call.bulk.filter(|_| write_chunk.is_none()) else {
                return Err(CallError::Fatal(format!(
                    "a call of {inline_len} bytes does not fit the server's {server_recv}-byte inline receive, and it carries no bulk data to send in a read chunk",
                )));
            };
            let data = bulk
                .offset
                .checked_add(bulk.len)
                .and_then(|end| call.args.get(bulk.offset..end))
                .ok_or_else(|| {
                    CallError::Fatal(format!(
                        "a call's bulk data ({} bytes at byte {}) lies outside its {} bytes of arguments",
                        bulk.len,
                        bulk.offset,
                        call.args.len()
                    ))
                })?;
            let length = u32::try_from(data.len())
                .map_err(|_| CallError::Fatal(format!("a write of {} bytes is too large", data.len())))?;
            // The source buffer is the call's until its reply: the guard holds it, and a call
            // abandoned before then breaks the connection, so the server reads nothing later.
            let source = connection
                .shared
                .bounce_buffer(data.len(), RemoteAccess::Read)
                .await
                .map_err(|e| CallError::Fatal(e.to_string()))?;
            source.write(data);
            let segment =
                Segment { handle: source.region().rkey(), length, offset: source.region().addr() as u64 };
            credit.read_chunk = Some(source);
            let parts =
                header::CallMessage { rpc_header: &rpc_header, args: call.args, data_at: bulk.offset };
            header::encode_call_with_read_chunk(
                &mut message,
                xid,
                CREDITS_WANTED,
                &parts,
                segment,
                reply_chunk,
            )
            .map_err(|e| CallError::Fatal(e.to_string()))?;
            if message.len() > server_recv {
                return Err(CallError::Fatal(format!(
                    "a write's call without its data is {} bytes, and does not fit the server's {server_recv}-byte inline receive",
                    message.len()
                )));
            }
            connection.shared.read_chunk_writes.fetch_add(1, Ordering::Relaxed);
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut state = connection.lock();
            if let Some(reason) = &state.closed {
                return Err(CallError::Connection(reason.clone()));
            }
            state.waiters.insert(xid, tx);
        }
        credit.waiting_xid = Some(xid);
        credit.offered_memory =
            offered_write.is_some() || offered_reply.is_some() || credit.read_chunk.is_some();
        connection.sends[slot].write(&message);
        if let Err(e) = connection.id.post_send(
            connection.sends[slot].region(),
            0,
            message.len() as u32,
            SEND_TAG | slot as u64,
        ) {
            let reason = format!("cannot send to {} over RDMA: {e}", connection.peer);
            connection.fail(reason.clone());
            return Err(CallError::Connection(reason));
        }
        // The send buffer is the poller's until the send completes.
        credit.slot = None;
        let delivery = rx
            .await
            .map_err(|_| CallError::Connection(format!("connection to {} closed", connection.peer)))??;
        // The reply is in: the server writes no more into what the call offered.
        credit.waiting_xid = None;
        let answer = connection.answer(delivery, offered_write.as_ref(), credit.reply_buffer.as_deref())?;
        if let (Some(bounce), Some(read), Answer::Placed { placed, .. }) =
            (credit.bounce.as_deref(), call.read_into.as_mut(), &answer)
        {
            let n = (*placed).min(read.dest.len());
            bounce.copy_into(&mut read.dest[..n]);
            connection.shared.bounced_reads.fetch_add(1, Ordering::Relaxed);
        }
        Ok(answer)
    }
}

/// A call's credit (and, until posted, its send buffer). Dropped, it gives them back; dropped
/// while the call still waits for a reply that may place data in memory it offered, it breaks
/// the connection, so that the server can no longer write there.
///
/// It holds the call's reply, bounce and read-chunk buffers too, so that they go back to
/// their pool only after that (fields drop after `drop` has run): the server may read a
/// WRITE's data from its read chunk until the reply arrives, so the buffer stays registered
/// and untouched until then.
struct CreditGuard<'a> {
    connection: &'a Connection,
    slot: Option<usize>,
    waiting_xid: Option<u32>,
    offered_memory: bool,
    reply_buffer: Option<ReplyBuffer>,
    bounce: Option<ReplyBuffer>,
    read_chunk: Option<ReplyBuffer>,
}

impl Drop for CreditGuard<'_> {
    fn drop(&mut self) {
        let connection = self.connection;
        if let Some(xid) = self.waiting_xid {
            connection.lock().waiters.remove(&xid);
            if self.offered_memory {
                connection.fail(format!(
                    "a call to {} was abandoned while the server could still write into its buffer or read from it",
                    connection.peer
                ));
            }
        }
        {
            let mut state = connection.lock();
            state.outstanding = state.outstanding.saturating_sub(1);
            if let Some(slot) = self.slot {
                state.free_sends.push(slot);
            }
        }
        connection.freed.notify_waiters();
    }
}

impl Connection {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Waits for a credit and a free send buffer; takes both.
    async fn acquire(&self) -> Result<usize, CallError> {
        loop {
            let freed = self.freed.notified();
            {
                let mut state = self.lock();
                if let Some(reason) = &state.closed {
                    return Err(CallError::Connection(reason.clone()));
                }
                if state.outstanding < state.granted {
                    if let Some(slot) = state.free_sends.pop() {
                        state.outstanding += 1;
                        return Ok(slot);
                    }
                }
            }
            freed.await;
        }
    }

    /// Marks the connection broken, fails every waiting call with `reason` and disconnects,
    /// so that nothing more arrives through it.
    fn fail(&self, reason: String) {
        let waiters: Vec<Waiter> = {
            let mut state = self.lock();
            if state.closed.is_none() {
                state.closed = Some(reason.clone());
            }
            state.waiters.drain().map(|(_, w)| w).collect()
        };
        if !self.broken.swap(true, Ordering::AcqRel) {
            self.id.disconnect();
        }
        for waiter in waiters {
            let _ = waiter.send(Err(CallError::Connection(reason.clone())));
        }
        self.freed.notify_waiters();
    }

    /// Turns a delivered reply into the call's answer.
    fn answer(
        &self,
        delivery: Delivery,
        offered_write: Option<&Segment>,
        reply_buffer: Option<&RegisteredBuffer>,
    ) -> Result<Answer, CallError> {
        let server = self.peer;
        let (write_list, reply_chunk, message) = match delivery.header.kind {
            ReplyKind::Msg { write_list, reply_chunk } => (write_list, reply_chunk, delivery.inline),
            ReplyKind::NoMsg { write_list, reply_chunk } => {
                let Some(buffer) = reply_buffer else {
                    return Err(CallError::Malformed(format!(
                        "{server} sent RDMA_NOMSG for a call that offered no reply chunk"
                    )));
                };
                let offered = reply_segment(buffer);
                let n = header::placed_length(&reply_chunk, std::slice::from_ref(&offered))
                    .map_err(|e| CallError::Malformed(format!("{server}: reply chunk: {e}")))?;
                crate::NOMSG_REPLIES.fetch_add(1, Ordering::Relaxed);
                (write_list, None, buffer.read(n))
            }
            ReplyKind::Error(RdmaError::Version { low, high }) => {
                return Err(CallError::Fatal(format!(
                    "the server {server} refused RPC-over-RDMA version 1 (ERR_VERS: it speaks versions {low} to {high})"
                )))
            }
            ReplyKind::Error(error) => {
                return Err(CallError::Fatal(format!("the server {server} answered RDMA_ERROR: {error}")))
            }
        };
        let _ = reply_chunk;
        let reply = Reply::accept(message, None)?;
        match offered_write {
            None => Ok(Answer::Reply(reply)),
            Some(offered) => {
                let placed = match write_list.first() {
                    Some(returned) => header::placed_length(returned, std::slice::from_ref(offered))
                        .map_err(|e| CallError::Malformed(format!("{server}: write chunk: {e}")))?,
                    // No chunk back: the server placed nothing (an error status, or a READ
                    // at the end of the file).
                    None => 0,
                };
                Ok(Answer::Placed { reply, placed })
            }
        }
    }

    /// The poller's handling of one receive: decode the header, hand the reply to its call,
    /// take the server's credit grant, and post the receive again.
    fn received(&self, completion: &Completion) {
        let slot = completion.wr_id as usize;
        let Some(buffer) = self.recvs.get(slot) else { return };
        let len = (completion.byte_len as usize).min(INLINE_RECV);
        let bytes = buffer.read(len);
        let decoded = header::decode_reply(&bytes);
        if let Err(e) = self.id.post_recv(buffer.region(), 0, INLINE_RECV as u32, slot as u64) {
            self.fail(format!("cannot post a receive on the connection to {}: {e}", self.peer));
        }
        match decoded {
            Ok(header) => {
                let xid = header.xid;
                {
                    let mut state = self.lock();
                    state.granted = header::usable_credits(header.credits, CREDITS_WANTED);
                    self.shared.note_grant(header.credits);
                }
                let inline = bytes[header.header_len.min(bytes.len())..].to_vec();
                let waiter = self.lock().waiters.remove(&xid);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(Ok(Delivery { header, inline }));
                }
                self.freed.notify_waiters();
            }
            Err(e) => {
                let reason = format!("the server {} sent a bad RPC-over-RDMA header: {e}", self.peer);
                let waiter = header::peek_xid(&bytes).and_then(|xid| self.lock().waiters.remove(&xid));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(Err(CallError::Malformed(reason)));
                    }
                    None => self.fail(reason),
                }
            }
        }
    }
}

fn reply_segment(buffer: &RegisteredBuffer) -> Segment {
    Segment {
        handle: buffer.region().rkey(),
        length: u32::try_from(buffer.len()).unwrap_or(u32::MAX),
        offset: buffer.region().addr() as u64,
    }
}

/// The poller thread: completions and connection-manager events until the channel is
/// dropped. Its CPU time counts as the transport's.
fn poll_completions(connection: &Connection) {
    let started = thread_cpu_ns();
    let mut completions = Vec::with_capacity(32);
    let mut last_cpu = started;
    while !connection.stop.load(Ordering::Acquire) {
        if let Err(e) = connection.cq.wait(POLL_TICK) {
            connection
                .fail(format!("the completion channel of the connection to {} failed: {e}", connection.peer));
        }
        loop {
            if let Err(e) = connection.cq.poll(&mut completions, 32) {
                connection.fail(format!("polling completions from {} failed: {e}", connection.peer));
                break;
            }
            if completions.is_empty() {
                break;
            }
            for completion in &completions {
                if !completion.is_success() {
                    if !connection.broken.load(Ordering::Acquire) {
                        connection.fail(format!(
                            "the queue pair to {} failed: {}",
                            connection.peer,
                            completion.status_text()
                        ));
                    }
                    if completion.wr_id & SEND_TAG != 0 {
                        free_send(connection, completion.wr_id);
                    }
                    continue;
                }
                if completion.wr_id & SEND_TAG != 0 {
                    free_send(connection, completion.wr_id);
                } else if completion.is_receive() {
                    connection.received(completion);
                }
            }
        }
        while let Ok(Some(event)) = connection.events.next_event(Duration::ZERO) {
            if event.id == connection.id.address() && !connection.broken.load(Ordering::Acquire) {
                connection.fail(format!("the connection to {} ended: {}", connection.peer, event.name()));
            }
        }
        let now = thread_cpu_ns();
        connection.shared.add_cpu_ns(now.saturating_sub(last_cpu));
        last_cpu = now;
    }
}

fn free_send(connection: &Connection, wr_id: u64) {
    let slot = (wr_id & !SEND_TAG) as usize;
    if slot < connection.sends.len() {
        connection.lock().free_sends.push(slot);
        connection.freed.notify_waiters();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn initial_xid() -> u32 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    nanos.wrapping_add((NEXT.fetch_add(1, Ordering::Relaxed) as u32).wrapping_mul(0x9e37_79b9))
}

fn thread_cpu_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(now.tv_sec).unwrap_or(0).saturating_mul(1_000_000_000)
        + u64::try_from(now.tv_nsec).unwrap_or(0)
}

#[allow(unused)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<RdmaChannel>();
    is::<ProtectionDomain>();
}
