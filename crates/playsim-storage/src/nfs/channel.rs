//! How NFS calls travel: the seam between playsim's NFSv3 client and the RPC transport under
//! it. TCP with record marking ([`super::TcpConnector`]) is one [`RpcConnector`]; RPC-over-RDMA
//! (the `playsim-rdma` crate) is another. The client above ([`super::NfsStorage`]) is the
//! same for both: MOUNT and portmap on TCP, handles cached, READs split by `rsize` and
//! spread over `nconnect` channels.
//!
//! An [`RpcConnector`] gives its report name and `proto`, its default NFS port, `connect`, and
//! the options and background CPU it adds to the report. Each [`RpcChannel`] carries many
//! `RpcCall`s at once: program, version, procedure and XDR arguments; for a READ a `ReadInto`
//! (the bytes to fill and the frame buffer they lie in, named by `IoBuf::id`, so that registered
//! memory is registered once); for a WRITE a `BulkPayload` (where its data lies in the packed
//! arguments), so that a transport can send the data apart without parsing the XDR (TCP sends
//! the arguments whole). A call's `Answer` is a `Reply` to parse, `Data` (TCP read the READ's
//! data from the socket into the buffer) or `Placed` (the server wrote it there by RDMA Write;
//! the pool checks the reply's count against the bytes placed). `CallError::Connection` is
//! retried on a new channel, `CallError::Fatal` fails the source at once.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use super::xdr::XdrReader;

/// The AUTH_SYS credential sent with every call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// The client's host name, as AUTH_SYS carries it.
    pub machine_name: String,
}

/// Why a call got no usable reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The connection failed or closed: the call may be sent again on a new connection.
    Connection(String),
    /// The connection broke while this call's own reply was being read (its xid had been
    /// read): the call may be sent again on a new connection, but a server that cuts the
    /// same call's reply every time is refusing that call, not down, and the caller gives the
    /// call up after a few tries rather than waiting out its time-out.
    ReplyCut(String),
    /// The server answered, but not with the procedure's result (denied, no such program).
    Rejected(String),
    /// The server's reply could not be parsed.
    Malformed(String),
    /// The transport under RPC refused the call for good (RPC-over-RDMA's ERR_VERS, or a
    /// chunk error that retrying cannot mend): the source fails with this message.
    Fatal(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Connection(m)
            | CallError::ReplyCut(m)
            | CallError::Rejected(m)
            | CallError::Malformed(m)
            | CallError::Fatal(m) => f.write_str(m),
        }
    }
}

/// A frame buffer a READ's data may be placed in directly, named by its allocation
/// identity ([`playsim_core::IoBuf::id`]) so that a transport that registers memory
/// (RDMA) registers each buffer once and never mistakes a new buffer at an old address for
/// the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferIdentity {
    /// [`playsim_core::IoBuf::id`] of the buffer.
    pub id: u64,
    /// The address of the buffer's first byte.
    pub base: usize,
    /// The buffer's length in bytes now; `dest` lies inside `base..base + len`.
    pub len: usize,
}

/// Where a READ's data goes: `dest`, a part of the frame buffer `buffer`.
#[derive(Debug)]
pub struct ReadInto<'a> {
    /// The bytes to fill, as many as the READ asks for.
    pub dest: &'a mut [u8],
    /// The whole buffer `dest` lies in.
    pub buffer: BufferIdentity,
}

/// A call's DDP-eligible data item (RFC 8267: the data of a WRITE): bytes
/// `offset..offset + len` of the call's `args`, the contents of an XDR opaque, after its
/// length word and before its XDR padding (to a multiple of 4).
///
/// The arguments stay whole (a transport that sends them as they are, TCP, ignores this); a
/// transport that can move bulk data out of the message (RPC-over-RDMA's read chunks) finds
/// the data here without parsing the XDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkPayload {
    /// Where the data starts in `args`: a multiple of 4, just after the opaque's length word.
    pub offset: usize,
    /// The data's length in bytes, as the length word says (without padding).
    pub len: usize,
}

impl BulkPayload {
    /// The data's length with its XDR padding: `len` rounded up to a multiple of 4.
    pub fn padded_len(&self) -> usize {
        self.len.div_ceil(4) * 4
    }
}

/// One RPC call for a channel to send.
#[derive(Debug)]
pub struct RpcCall<'a> {
    /// The RPC program, version and procedure.
    pub program: u32,
    /// The program's version.
    pub version: u32,
    /// The procedure number.
    pub procedure: u32,
    /// The procedure's arguments, XDR-encoded.
    pub args: &'a [u8],
    /// For a READ: where its data may go without a copy.
    pub read_into: Option<ReadInto<'a>>,
    /// For a WRITE: where its data lies in `args`, for a transport that may send it apart
    /// from the rest of the call.
    pub bulk: Option<BulkPayload>,
    /// The largest reply the call may get, in bytes (for READDIRPLUS, its `maxcount` and the
    /// headers): a transport whose replies come inline only up to a size (RPC-over-RDMA)
    /// offers a reply chunk of this size for a call that may exceed it.
    pub max_reply: usize,
}

/// The accepted result of a call: the reply message, and where the procedure's result
/// starts.
pub struct Reply {
    message: Vec<u8>,
    start: usize,
    recycle: Option<Box<dyn FnOnce(Vec<u8>) + Send + Sync>>,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply").field("len", &self.message.len()).field("start", &self.start).finish()
    }
}

impl Reply {
    /// The reply to a call from its RPC reply message (no record mark): checks that the call
    /// was accepted and succeeded, and finds where the procedure's result starts. `recycle`
    /// gets the message's buffer back when the reply is dropped.
    pub fn accept(
        message: Vec<u8>,
        recycle: Option<Box<dyn FnOnce(Vec<u8>) + Send + Sync>>,
    ) -> Result<Reply, CallError> {
        let start = accepted_result_start(&message)?;
        Ok(Reply { message, start, recycle })
    }

    /// The procedure's result bytes.
    pub fn body(&self) -> &[u8] {
        &self.message[self.start..]
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(recycle) = self.recycle.take() {
            recycle(std::mem::take(&mut self.message));
        }
    }
}

/// What a call got back.
#[derive(Debug)]
pub enum Answer {
    /// The accepted reply, to be parsed; a READ's data, if any, is inside it.
    Reply(Reply),
    /// A successful READ whose data the transport read straight into `read_into.dest`
    /// (TCP): the bytes read and whether the file ends there.
    Data {
        /// Bytes read.
        n: usize,
        /// True when the file ends there.
        eof: bool,
    },
    /// A READ reply whose data the server placed straight into `read_into.dest` (RDMA Write
    /// into a Write chunk): `placed` bytes, the length the reply's write list gives. The
    /// reply's READ result has its data removed (RFC 8267's reduced data item): its opaque
    /// length stays, its bytes do not.
    Placed {
        /// The reply, without the data.
        reply: Reply,
        /// Bytes the server wrote into `dest`.
        placed: usize,
    },
}

/// One connection to an RPC service, carrying many calls at once.
#[async_trait::async_trait]
pub trait RpcChannel: Send + Sync + fmt::Debug {
    /// True once the channel has failed; calls on it fail at once, and the pool replaces it.
    fn is_broken(&self) -> bool;

    /// Sends `call` and waits for its reply. A channel that fails fails every call waiting on
    /// it with [`CallError::Connection`]. Dropping the future before the reply arrives must
    /// leave no way for the reply's data to land in `call.read_into` later (break the
    /// channel if need be).
    async fn call(&self, call: RpcCall<'_>) -> Result<Answer, CallError>;
}

/// Makes [`RpcChannel`]s to the NFS service: the transport of an NFS client.
#[async_trait::async_trait]
pub trait RpcConnector: Send + Sync + fmt::Debug {
    /// The transport as reports name it: `nfs` for TCP, `nfs over rdma (playsim)`.
    fn transport_name(&self) -> &'static str;

    /// The `proto` option reports give (`tcp`, `rdma`), as a kernel mount's options would.
    fn proto(&self) -> &'static str;

    /// The NFS port to use when the URL gives none: `None` asks the portmapper (TCP);
    /// RPC-over-RDMA uses 20049, as the kernel client does.
    fn default_nfs_port(&self) -> Option<u16>;

    /// Opens one channel to the NFS service at `addr`, sending `credential` with each call.
    async fn connect(
        &self,
        addr: SocketAddr,
        credential: &Credential,
    ) -> std::io::Result<Arc<dyn RpcChannel>>;

    /// A connector of the same kind and settings with none of this one's state (its
    /// connections' device resources, registered memory, counters), for another client:
    /// each stream reads through a client of its own, whose CPU and counters are its own.
    fn fresh(&self) -> Arc<dyn RpcConnector>;

    /// What the transport adds to the report's storage options (device, credits granted,
    /// inline sizes), as `(key, value)` pairs; read at the end of a run.
    fn report_options(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// CPU time the transport spent outside the callers' polls (completion threads), in
    /// nanoseconds, so far: added to the storage's CPU.
    fn background_cpu_ns(&self) -> u64 {
        0
    }

    /// What a user should know about how the transport read (frame buffers it could not
    /// register, and why), for the report's storage warnings.
    fn warnings(&self) -> Vec<playsim_core::StorageWarning> {
        Vec::new()
    }
}

/// Checks that `record` (an RPC reply message, no record mark) is an accepted, successful
/// reply and returns where its result starts.
pub(crate) fn accepted_result_start(record: &[u8]) -> Result<usize, CallError> {
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
