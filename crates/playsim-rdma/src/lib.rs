//! playsim's own NFS client over RDMA: `nfs+rdma://host/path`, NFSv3 over RPC-over-RDMA
//! version 1 (RFC 8166, with RFC 8267's NFS binding), in the process, on verbs, with no
//! mount and no root.
//!
//! It is the same NFS client as `nfs://` (playsim-storage's [`NfsStorage`]: MOUNT and portmap
//! on TCP, handles cached, READs of `rsize` spread over `nconnect` connections) with another
//! RPC transport under it: [`RdmaConnector`] makes [`RdmaChannel`]s, each an rdma_cm
//! connection to the server's RDMA port (20049) with its own queue pair. READ data is placed
//! by the server, with RDMA Write, straight into the frame buffer (registered once, reused):
//! no copy on the client. WRITE data is pulled by the server, with RDMA Read, from a read
//! chunk: a WRITE too large to send inline has its data copied into a pooled buffer
//! registered for remote reads (one copy on the client), and the rest of the call goes inline
//! (RFC 8166 §3.5, RFC 8267). Any other call too large to send inline is refused, saying so.
//!
//! - [`header`]: the transport header, encoded and decoded as a pure function over bytes
//!   (the server's bytes are hostile until checked).
//! - `verbs`: the verbs and connection-manager calls, through rdma-mummy-sys, which loads
//!   libibverbs and librdmacm at run time. Every `unsafe` block but the registry's two is
//!   there.
//! - `registry`: registered memory, the client's buffers (send, receive, reply, bounce and
//!   read-chunk buffers) and the frame buffers.
//! - `connection`: one connection, its credits, its calls in flight and its poller thread.
//! - [`NfsRdmaTransport`]: the `nfs+rdma` transport (and `nfs://...?proto=rdma`).
//!
//! The header codec on its own:
//!
//! ```
//! use playsim_rdma::header::{decode_reply, encode_call_header, ReplyKind, Segment};
//!
//! // A READ call that offers one write chunk of one 1 MiB segment for the data.
//! let offered = [Segment { handle: 0x1234, length: 1 << 20, offset: 0x7f00_0000_0000 }];
//! let mut call = Vec::new();
//! encode_call_header(&mut call, 7, 32, &[], Some(&offered), None);
//! assert_eq!(call.len(), 52);
//!
//! // The server's reply header: RDMA_MSG, 32 credits, the write chunk with 4096 bytes placed.
//! let mut reply = Vec::new();
//! for word in [7u32, 1, 32, 0, /* read list */ 0, /* write list */ 1, 1, 0x1234, 4096] {
//!     reply.extend_from_slice(&word.to_be_bytes());
//! }
//! reply.extend_from_slice(&0x7f00_0000_0000u64.to_be_bytes());
//! reply.extend_from_slice(&[0; 4]); // end of the write list
//! reply.extend_from_slice(&[0; 4]); // no reply chunk
//! reply.extend_from_slice(&[0xab; 24]); // the RPC reply message itself
//! let header = decode_reply(&reply)?;
//! assert_eq!((header.xid, header.credits, header.header_len), (7, 32, 52));
//! let ReplyKind::Msg { write_list, .. } = &header.kind else { panic!("an RDMA_MSG reply") };
//! assert_eq!(playsim_rdma::header::placed_length(&write_list[0], &offered)?, 4096);
//! # Ok::<(), playsim_rdma::header::HeaderError>(())
//! ```
//!
//! A WRITE whose data goes in a read chunk: the read segment's position is the data's offset
//! in the RPC message, and the Send holds the message without the data and its padding.
//!
//! ```
//! use playsim_rdma::header::{encode_call_with_read_chunk, CallMessage, Segment};
//!
//! let rpc_header = [0u8; 40]; // call header, credential, verifier
//! let mut args = vec![0u8; 52]; // handle, offset, count, stable, the data's length word
//! args[48..52].copy_from_slice(&6u32.to_be_bytes());
//! args.extend_from_slice(b"frame!\0\0"); // 6 bytes of data and 2 of padding
//! let source = Segment { handle: 0x99, length: 6, offset: 0x7f00_0000_0000 };
//! let call = CallMessage { rpc_header: &rpc_header, args: &args, data_at: 52 };
//! let mut send = Vec::new();
//! let read = encode_call_with_read_chunk(&mut send, 8, 32, &call, source, None)?;
//! assert_eq!(read.position, 40 + 52);
//! assert_eq!(send.len(), 52 /* transport header */ + 40 + 52);
//! # Ok::<(), playsim_rdma::header::DataItemError>(())
//! ```
//!
//! [`NfsStorage`]: playsim_storage::nfs::NfsStorage
//!
//! # Design notes (moved from ARCHITECTURE.md)
//!
//! - **Credits.** 128 receives of 4 KiB are posted before the connection is made; the client asks
//!   128 credits and keeps at most the server's last grant outstanding (1 until the first reply;
//!   a grant of 0 is taken as 1, so a confused server slows the client rather than stalling it).
//!   A poller thread per connection blocks on the completion channel, hands each reply to its
//!   call by XID and posts its receive again; its CPU is the transport's `background_cpu_ns`,
//!   added to the storage's.
//! - **Locked memory.** Frame buffers are registered when first offered, keyed by `IoBuf::id`
//!   (never by address), as the io_uring path does. When one cannot be registered for lack of
//!   locked memory (RLIMIT_MEMLOCK), no further one is tried: READs offer registered bounce
//!   buffers of `rsize`, copied into the frame after the reply, and the report warns once, naming
//!   the limit. WRITEs' read-chunk buffers wait for one in use to come back and fail with the
//!   limit named only when none is. Each registration says what the server may do with it
//!   (`RemoteAccess`: nothing, RDMA Write, RDMA Read); pooled buffers are taken only for that.
//! - **Failures.** A call abandoned while the server may still write into (or read from) memory
//!   it was offered breaks the connection (its QP goes to the error state), so nothing lands after
//!   the buffer is reused. A QP error, a flushed request or a DISCONNECTED event fails every call
//!   on the connection as a connection error: the pool reconnects and the report counts it.
//!   RDMA_ERROR (ERR_VERS, ERR_CHUNK) is `CallError::Fatal`: not retried, the source fails with the
//!   server and the error named. The report counts `writes_in_read_chunks`.
//! - **Why rdma-mummy-sys.** It builds a small loader (cmake) instead of linking rdma-core, so the
//!   `rdma` feature is on by default at no cost: the binary starts on any host, and a host without
//!   a device or the libraries gets a one-line refusal of an `nfs+rdma://` location naming
//!   `ibv_devices`. rdma-sys links libibverbs at build time and has had no release since 2022;
//!   sideway, rdma-mummy-sys's safe layer, cannot send connection private data (RFC 8797's
//!   inline sizes), so the sys crate is called directly, in one module.
// `unsafe` is allowed in `verbs` (the FFI) and `registry` (registering memory), and denied
// everywhere else.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod connection;
pub mod header;
mod registry;
mod transport;
#[allow(unsafe_code)]
mod verbs;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use playsim_core::StorageWarning;
use playsim_storage::nfs::{Credential, RpcChannel, RpcConnector};

pub use connection::RdmaChannel;
use connection::{Negotiated, CREDITS_WANTED, INLINE_RECV, INLINE_SEND};
use registry::{RegisteredBuffer, Registry};
pub use transport::NfsRdmaTransport;
use verbs::{ProtectionDomain, RemoteAccess};

/// The port NFS servers listen on for RPC-over-RDMA (RFC 8267), as the kernel client's
/// `port=20049`.
pub const NFS_RDMA_PORT: u16 = 20049;

/// The RDMA devices this host has, by name, as `ibv_devices` lists them; or why there are
/// none to be had (no rdma-core libraries, no kernel support).
pub fn rdma_devices() -> Result<Vec<String>, String> {
    match verbs::device_names() {
        Ok(names) => Ok(names),
        Err(e) => Err(format!("the verbs library found no RDMA support ({e})")),
    }
}

/// The refusal of an RDMA location on a host with no RDMA device, in one line naming the
/// device check; `None` when there is a device.
pub fn no_device_reason() -> Option<String> {
    match rdma_devices() {
        Ok(names) if !names.is_empty() => None,
        Ok(_) => Some("this host has no RDMA device (`ibv_devices` lists none): nfs+rdma:// needs a RoCE or InfiniBand NIC, or soft-RoCE (`rdma link add rxe0 type rxe netdev IF`)".into()),
        Err(why) => Some(format!(
            "this host has no RDMA device: {why}; check with `ibv_devices` (rdma-core's ibverbs-utils) and install rdma-core's libraries (libibverbs1, librdmacm1, ibverbs-providers)"
        )),
    }
}

/// Replies that came as RDMA_NOMSG (the whole RPC reply written into the call's reply
/// chunk), by every client of the process: the listing is made by the index client, whose
/// counters no stream's report shows, so this one counts for the process.
static NOMSG_REPLIES: AtomicU64 = AtomicU64::new(0);

/// What the connections of one client share: the protection domain (so that a frame
/// buffer registered once serves every connection), the registry, the reply buffers, and
/// the figures the report gives.
pub(crate) struct Shared {
    pd: Mutex<Option<Arc<ProtectionDomain>>>,
    registry: Registry,
    reply_buffers: Mutex<Vec<RegisteredBuffer>>,
    device: Mutex<Option<String>>,
    negotiated: Mutex<Option<Negotiated>>,
    last_grant: AtomicU32,
    connections: AtomicU64,
    cpu_ns: AtomicU64,
    /// Reply and bounce buffers taken from the pool and not yet back.
    buffers_out: AtomicUsize,
    /// Wakes a call waiting for a bounce buffer.
    buffer_returned: tokio::sync::Notify,
    /// READs whose data went through a bounce buffer.
    bounced_reads: AtomicU64,
    /// WRITEs whose data the server pulled from a read chunk.
    read_chunk_writes: AtomicU64,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            pd: Mutex::new(None),
            registry: Registry::new(),
            reply_buffers: Mutex::new(Vec::new()),
            device: Mutex::new(None),
            negotiated: Mutex::new(None),
            last_grant: AtomicU32::new(0),
            connections: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
            buffers_out: AtomicUsize::new(0),
            buffer_returned: tokio::sync::Notify::new(),
            bounced_reads: AtomicU64::new(0),
            read_chunk_writes: AtomicU64::new(0),
        }
    }

    /// The protection domain on `context`'s device, made by the first connection.
    fn protection_domain(
        &self,
        context: *mut rdma_mummy_sys::ibv_context,
        device: &str,
    ) -> io::Result<Arc<ProtectionDomain>> {
        let mut pd = lock(&self.pd);
        if let Some(existing) = pd.as_ref() {
            if existing.is_on(context) {
                return Ok(Arc::clone(existing));
            }
            return Err(io::Error::other(format!(
                "the route to the server now goes through device {device}, not the one this client registered its buffers on"
            )));
        }
        let made = ProtectionDomain::new(context)?;
        self.registry.set_pd(&made);
        *pd = Some(Arc::clone(&made));
        Ok(made)
    }

    fn note_connection(&self, device: &str, negotiated: Negotiated) {
        *lock(&self.device) = Some(device.to_owned());
        *lock(&self.negotiated) = Some(negotiated);
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    fn note_grant(&self, credits: u32) {
        self.last_grant.store(credits, Ordering::Relaxed);
    }

    fn add_cpu_ns(&self, ns: u64) {
        self.cpu_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// A registered buffer of at least `len` bytes for a reply chunk, from the pool.
    fn reply_buffer(self: &Arc<Self>, len: usize) -> io::Result<ReplyBuffer> {
        self.pooled_buffer(len, RemoteAccess::Write)
    }

    /// A registered buffer of at least `len` bytes the server may access as `remote` says,
    /// from the pool (registered anew when none there is large enough).
    fn pooled_buffer(self: &Arc<Self>, len: usize, remote: RemoteAccess) -> io::Result<ReplyBuffer> {
        let found = {
            let mut pool = lock(&self.reply_buffers);
            pool.iter().position(|b| b.len() >= len && b.remote() == remote).map(|i| pool.swap_remove(i))
        };
        let buffer = match found {
            Some(buffer) => buffer,
            None => {
                let pd =
                    lock(&self.pd).clone().ok_or_else(|| io::Error::other("no RDMA connection is open"))?;
                RegisteredBuffer::new(&pd, len, remote)?
            }
        };
        self.buffers_out.fetch_add(1, Ordering::AcqRel);
        Ok(ReplyBuffer { buffer: Some(buffer), shared: Arc::clone(self) })
    }

    /// A registered buffer of at least `len` bytes standing in for memory the client cannot
    /// offer directly, from the pool: with [`RemoteAccess::Write`], one a READ's data is
    /// placed in instead of its frame buffer, which could not be registered for lack of
    /// locked memory (copied from after the reply); with [`RemoteAccess::Read`], one a
    /// WRITE's data is copied into for the server to pull through a read chunk. When no more
    /// memory can be registered, waits for one of the buffers in use to come back; fails
    /// only when none is in use.
    async fn bounce_buffer(self: &Arc<Self>, len: usize, remote: RemoteAccess) -> io::Result<ReplyBuffer> {
        loop {
            let returned = self.buffer_returned.notified();
            match self.pooled_buffer(len, remote) {
                Ok(buffer) => return Ok(buffer),
                Err(e)
                    if registry::is_memlock_shortage(&e) && self.buffers_out.load(Ordering::Acquire) > 0 =>
                {
                    returned.await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A reply-chunk buffer taken from the pool; it goes back when dropped.
pub(crate) struct ReplyBuffer {
    buffer: Option<RegisteredBuffer>,
    shared: Arc<Shared>,
}

impl std::ops::Deref for ReplyBuffer {
    type Target = RegisteredBuffer;
    fn deref(&self) -> &RegisteredBuffer {
        // Only `drop` takes the buffer out.
        self.buffer.as_ref().unwrap_or_else(|| unreachable!("a reply buffer used after it went back"))
    }
}

impl Drop for ReplyBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            let mut pool = lock(&self.shared.reply_buffers);
            if pool.iter().filter(|b| b.remote() == buffer.remote()).count() < MAX_POOLED_BUFFERS {
                pool.push(buffer);
            }
        }
        self.shared.buffers_out.fetch_sub(1, Ordering::AcqRel);
        self.shared.buffer_returned.notify_waiters();
    }
}

/// Reply and bounce buffers kept registered for reuse, at most, of each access (the server
/// writing into them, or reading from them).
const MAX_POOLED_BUFFERS: usize = 64;

/// The RPC-over-RDMA transport of an NFS client: makes its [`RdmaChannel`]s, all on one
/// device and protection domain.
pub struct RdmaConnector {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RdmaConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaConnector").finish_non_exhaustive()
    }
}

impl RdmaConnector {
    /// A connector with no connection yet.
    pub fn new() -> RdmaConnector {
        RdmaConnector { shared: Arc::new(Shared::new()) }
    }
}

impl Default for RdmaConnector {
    fn default() -> RdmaConnector {
        RdmaConnector::new()
    }
}

#[async_trait::async_trait]
impl RpcConnector for RdmaConnector {
    fn transport_name(&self) -> &'static str {
        "nfs over rdma (playsim)"
    }

    fn proto(&self) -> &'static str {
        "rdma"
    }

    fn default_nfs_port(&self) -> Option<u16> {
        Some(NFS_RDMA_PORT)
    }

    fn fresh(&self) -> Arc<dyn RpcConnector> {
        Arc::new(RdmaConnector::new())
    }

    async fn connect(&self, addr: SocketAddr, credential: &Credential) -> io::Result<Arc<dyn RpcChannel>> {
        let shared = Arc::clone(&self.shared);
        let credential = credential.clone();
        let channel = tokio::task::spawn_blocking(move || RdmaChannel::connect(addr, &credential, &shared))
            .await
            .map_err(|e| io::Error::other(format!("the RDMA connection attempt failed: {e}")))??;
        Ok(Arc::new(channel))
    }

    fn report_options(&self) -> Vec<(String, String)> {
        let shared = &self.shared;
        let negotiated = *lock(&shared.negotiated);
        let (registrations, registered) = shared.registry.summary();
        let mut options = vec![
            ("rdma_device".to_owned(), lock(&shared.device).clone().unwrap_or_else(|| "none".into())),
            ("credits_requested".to_owned(), CREDITS_WANTED.to_string()),
            ("credits_granted".to_owned(), shared.last_grant.load(Ordering::Relaxed).to_string()),
            ("rdma_connections_made".to_owned(), shared.connections.load(Ordering::Relaxed).to_string()),
            ("inline_send_client".to_owned(), INLINE_SEND.to_string()),
            ("inline_recv_client".to_owned(), INLINE_RECV.to_string()),
            ("frame_buffers_registered".to_owned(), registrations.to_string()),
            (
                "reads_through_bounce_buffers".to_owned(),
                shared.bounced_reads.load(Ordering::Relaxed).to_string(),
            ),
            (
                "writes_in_read_chunks".to_owned(),
                shared.read_chunk_writes.load(Ordering::Relaxed).to_string(),
            ),
            ("replies_in_reply_chunk_process".to_owned(), NOMSG_REPLIES.load(Ordering::Relaxed).to_string()),
            ("registered_bytes".to_owned(), registered.to_string()),
        ];
        if let Some(n) = negotiated {
            options.push(("inline_recv_server".to_owned(), n.server_recv.to_string()));
            options.push(("inline_send_server".to_owned(), n.server_send.to_string()));
            options.push((
                "inline_sizes_from".to_owned(),
                if n.from_private_data { "RFC 8797 private data" } else { "RFC 8166 defaults" }.to_owned(),
            ));
        }
        options
    }

    fn background_cpu_ns(&self) -> u64 {
        self.shared.cpu_ns.load(Ordering::Relaxed)
    }

    fn warnings(&self) -> Vec<StorageWarning> {
        match self.shared.registry.off() {
            Some(why) => vec![StorageWarning::new(
                "rdma_frame_buffers_unregistered",
                format!(
                    "frame buffers not registered: {why}; READs went through registered bounce buffers and a copy ({} of them)",
                    self.shared.bounced_reads.load(Ordering::Relaxed)
                ),
            )],
            None => Vec::new(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
