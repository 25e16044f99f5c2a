//! [`HostileServer`]: a small, misbehaving NFSv3 server in the test process, to see what
//! playsim's own NFS client does with replies a real server should never send.
//!
//! It speaks just enough ONC RPC over TCP (record marking), MOUNT v3 (NULL, MNT, UMNT, EXPORT)
//! and NFSv3 (NULL, GETATTR, LOOKUP, READ, READDIRPLUS, FSINFO; and for writes CREATE, WRITE,
//! COMMIT, RENAME, REMOVE, FSSTAT) to serve one export, [`HOSTILE_EXPORT`], holding two
//! directories: [`HOSTILE_DIR`], of files held in memory (a test gives it a DPX sequence),
//! and [`HOSTILE_OUT_DIR`], empty at the start, where a client may write
//! ([`HostileServer::written`] gives what it holds). Each connection is served by a thread of
//! its own; the ports are ephemeral and [`HostileServer::url`] names both, so no portmapper is
//! involved.
//!
//! Chosen at start, one [`Misbehaviour`] is applied to the calls a [`When`] picks: a wrong xid,
//! a truncated record, a record mark claiming 2 GiB, a READ with more bytes than asked or fewer
//! with eof unset, a garbage or over-long file handle from LOOKUP, a file size that changes between calls, a
//! reply 10 s late, a connection reset in the middle of a reply; and on the write side a short
//! WRITE, a full disk, a restart that loses what was written UNSTABLE before its COMMIT. The
//! faults on the wire (a wrong xid, ..., a reset) spoil the [`Call`] given at start: READs, or
//! the WRITEs, COMMITs or RENAMEs of a client writing. Every other call is answered as a
//! well-behaved server would. [`HostileServer::misbehaved`] counts the replies spoilt, so
//! a test can check that the fault it meant to inject was injected.
//!
//! ```
//! use playsim_testserver::{HostileServer, Misbehaviour, When};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let files = vec![("frame.0000000.dpx".to_owned(), vec![0u8; 4096])];
//! let server = HostileServer::start(files, Misbehaviour::WrongXid, When::FirstCallOn(0..1))?;
//! // nfs://127.0.0.1/hostile/seq?mountport=40001&nfsport=40002
//! assert!(server.url().starts_with("nfs://127.0.0.1/hostile/seq?mountport="));
//! assert_eq!(server.misbehaved(), 0);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::proxy::lock;
use crate::rpc::{MOUNT_PROG, NFS_PROG};
use crate::Error;

/// The one directory the server exports.
pub const HOSTILE_EXPORT: &str = "/hostile";
/// The directory inside the export that holds the files.
pub const HOSTILE_DIR: &str = "seq";
/// The directory inside the export where clients write; empty at the start.
pub const HOSTILE_OUT_DIR: &str = "out";

mod writes;

/// A reply that a correct server never sends, or sends late.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Misbehaviour {
    /// The reply carries an xid that no call has: the call's own reply never comes.
    WrongXid,
    /// Half of the reply's record is sent, then the server closes the connection.
    TruncatedRecord,
    /// The record mark claims 2 GiB (0x7fffffff bytes, the most a mark can say, in the last
    /// fragment); the reply follows, and nothing else of that record: the server goes on
    /// answering later calls on the connection as if the record had been that short.
    HugeRecordMark,
    /// A READ answered with 512 bytes more than asked, its count saying so.
    ReadTooLong,
    /// A READ answered with half the bytes it could give (at least one), eof unset: legal,
    /// and the client must ask for the rest.
    ReadShortNoEof,
    /// LOOKUP of a file answers a handle of 64 bytes of garbage, which the server then does
    /// not know (NFS3ERR_BADHANDLE). READDIRPLUS leaves out the handles of those files, so
    /// that the client has to look them up.
    GarbageHandle,
    /// LOOKUP of a file answers a handle whose length claims 2 GiB (NFSv3 allows 64 bytes),
    /// with 64 bytes after it and nothing more. READDIRPLUS leaves out the handles of those
    /// files, as for [`Misbehaviour::GarbageHandle`].
    OversizedHandle,
    /// Every attribute of a file (READDIRPLUS, LOOKUP, GETATTR, READ's post-op attributes)
    /// gives a size 4096 bytes larger than the last one given: a file that seems to grow
    /// between calls while its bytes stay the same.
    ChangingSize,
    /// Every call giving the file's attributes gives its size as 3 GiB, while its bytes stay
    /// the same: a claim the client must not allocate for.
    HugeSize,
    /// The reply is sent this long after the call, while the connection goes on serving
    /// other calls.
    LateReply(Duration),
    /// Half of the reply's record is sent, then the connection is reset (RST).
    ResetMidReply,
    /// A WRITE answered as having written half the bytes sent (at least one), which it
    /// keeps: legal, and the client must send the rest.
    WriteShort,
    /// A WRITE answered NFS3ERR_NOSPC: the export's disk is full. Nothing is written.
    NoSpace,
    /// The server restarts just before it answers a COMMIT: every byte written UNSTABLE and
    /// not yet committed, in any file, is lost, and the write verifier changes. The COMMIT
    /// then succeeds under the new verifier; the client must see the change and write its
    /// data again (RFC 1813 § 3.3.21).
    RestartBeforeCommit,
}

/// The calls that the faults on the wire ([`Misbehaviour::WrongXid`],
/// [`Misbehaviour::TruncatedRecord`], [`Misbehaviour::HugeRecordMark`],
/// [`Misbehaviour::LateReply`], [`Misbehaviour::ResetMidReply`]) spoil. A call spoilt
/// after it took effect (a RENAME whose reply is cut) has taken effect: its retry finds it done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Call {
    /// READs of the files in [`HOSTILE_DIR`].
    Read,
    /// WRITEs to files in [`HOSTILE_OUT_DIR`].
    Write,
    /// COMMITs of files in [`HOSTILE_OUT_DIR`].
    Commit,
    /// RENAMEs in [`HOSTILE_OUT_DIR`].
    Rename,
}

/// Which calls the [`Misbehaviour`] spoils. Files are counted in the order given to
/// [`HostileServer::start`], from 0; a file written in [`HOSTILE_OUT_DIR`] by the last number in
/// its name (`.frame.0000005.dpx.partial` is 5), as the frame it holds. Each misbehaviour
/// concerns calls of one kind: [`Misbehaviour::GarbageHandle`] and
/// [`Misbehaviour::OversizedHandle`] LOOKUPs; [`Misbehaviour::ChangingSize`] and
/// [`Misbehaviour::HugeSize`] any call giving attributes, each time, whichever variant names the
/// file; [`Misbehaviour::ReadTooLong`] and [`Misbehaviour::ReadShortNoEof`] READs;
/// [`Misbehaviour::WriteShort`] and [`Misbehaviour::NoSpace`] WRITEs;
/// [`Misbehaviour::RestartBeforeCommit`] COMMITs; the faults on the wire, the [`Call`] given at
/// start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    /// The first call of its kind about each file in the range; later ones are answered right.
    FirstCallOn(Range<usize>),
    /// Every call of its kind about a file in the range.
    EveryCallOn(Range<usize>),
    /// The `n`th NFS call the server receives, counting from 1 over every connection, if it
    /// is of the misbehaviour's kind.
    NthCall(u64),
}

/// A misbehaving NFSv3 server on 127.0.0.1; see the [module docs](self). Dropping it stops
/// its threads within a fraction of a second.
#[derive(Debug)]
pub struct HostileServer {
    mount_port: u16,
    nfs_port: u16,
    shared: Arc<Shared>,
    acceptors: Vec<JoinHandle<()>>,
}

impl HostileServer {
    /// Starts serving `files` (name, bytes) under [`HOSTILE_EXPORT`]/[`HOSTILE_DIR`], spoiling
    /// the replies `when` picks with `misbehaviour`.
    pub fn start(
        files: Vec<(String, Vec<u8>)>,
        misbehaviour: Misbehaviour,
        when: When,
    ) -> Result<HostileServer, Error> {
        HostileServer::start_on(files, misbehaviour, when, Call::Read)
    }

    /// As [`HostileServer::start`], with the faults on the wire spoiling calls of kind `call`.
    pub fn start_on(
        files: Vec<(String, Vec<u8>)>,
        misbehaviour: Misbehaviour,
        when: When,
        call: Call,
    ) -> Result<HostileServer, Error> {
        let n_files = files.len();
        let shared = Arc::new(Shared {
            files,
            misbehaviour,
            when,
            call,
            out: Mutex::new(writes::OutDir::default()),
            write_calls: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            n_calls: AtomicU64::new(0),
            misbehaved: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            per_file: Mutex::new(vec![FileCalls::default(); n_files]),
            connection_threads: Mutex::new(Vec::new()),
        });
        let bind = |what: &str| {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|e| Error::io(format!("binding the hostile server's {what} port"), e))?;
            let port = listener
                .local_addr()
                .map_err(|e| Error::io(format!("the hostile server's {what} port"), e))?
                .port();
            Ok::<_, Error>((listener, port))
        };
        let (mount_listener, mount_port) = bind("mount")?;
        let (nfs_listener, nfs_port) = bind("nfs")?;
        let acceptors = [(mount_listener, Program::Mount), (nfs_listener, Program::Nfs)]
            .into_iter()
            .map(|(listener, program)| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("hostile-{program:?}").to_lowercase())
                    .spawn(move || accept_loop(&listener, program, &shared))
                    .map_err(|e| Error::io("starting the hostile server's threads", e))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(HostileServer { mount_port, nfs_port, shared, acceptors })
    }

    /// The `nfs://` URL of the directory of files, naming both ports.
    pub fn url(&self) -> String {
        self.url_of("")
    }

    /// The `nfs://` URL of `name` in the directory of files (a file, or a pattern such as
    /// `frame.%07d.dpx`), naming both ports.
    pub fn url_of(&self, name: &str) -> String {
        let path = if name.is_empty() {
            format!("{HOSTILE_EXPORT}/{HOSTILE_DIR}")
        } else {
            format!("{HOSTILE_EXPORT}/{HOSTILE_DIR}/{name}")
        };
        format!("nfs://127.0.0.1{path}?mountport={}&nfsport={}", self.mount_port, self.nfs_port)
    }

    /// The `nfs://` URL of [`HOSTILE_OUT_DIR`], where a client may write.
    pub fn out_url(&self) -> String {
        format!(
            "nfs://127.0.0.1{HOSTILE_EXPORT}/{HOSTILE_OUT_DIR}?mountport={}&nfsport={}",
            self.mount_port, self.nfs_port
        )
    }

    /// The files in [`HOSTILE_OUT_DIR`], by name: (name, bytes), the bytes as a read would
    /// give them (committed or not).
    pub fn written(&self) -> Vec<(String, Vec<u8>)> {
        lock(&self.shared.out).listing()
    }

    /// Restarts made up so far ([`Misbehaviour::RestartBeforeCommit`]).
    pub fn restarts(&self) -> u64 {
        lock(&self.shared.out).restarts
    }

    /// The MOUNT service's port.
    pub fn mount_port(&self) -> u16 {
        self.mount_port
    }

    /// The NFS service's port.
    pub fn nfs_port(&self) -> u16 {
        self.nfs_port
    }

    /// The NFS service's address, as playsim's messages name the server.
    pub fn nfs_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.nfs_port))
    }

    /// Replies spoilt so far (a late reply counts when it is held back).
    pub fn misbehaved(&self) -> u64 {
        self.shared.misbehaved.load(Ordering::Relaxed)
    }

    /// Connections accepted so far, to either service: a client that reconnects opens more.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// NFS calls received so far (MOUNT's not counted).
    pub fn nfs_calls(&self) -> u64 {
        self.shared.n_calls.load(Ordering::Relaxed)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for acceptor in self.acceptors.drain(..) {
            let _ = acceptor.join();
        }
        let threads = std::mem::take(&mut *lock(&self.shared.connection_threads));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// The largest call record read: a WRITE of [`MAX_TRANSFER`] bytes and its header.
const MAX_CALL_BYTES: usize = MAX_TRANSFER as usize + 64 * 1024;
/// Bytes added to a READ's data by [`Misbehaviour::ReadTooLong`].
const TOO_LONG_BY: usize = 512;
/// The size [`Misbehaviour::HugeSize`] gives.
const HUGE_SIZE: u64 = 3 << 30;
/// How much [`Misbehaviour::ChangingSize`] grows a file at each call.
const GROWTH_PER_CALL: u64 = 4096;
/// The read and write sizes FSINFO offers.
const MAX_TRANSFER: u32 = 1 << 20;

const MNT3_OK: u32 = 0;
const MNT3ERR_NOENT: u32 = 2;
const NFS3_OK: u32 = 0;
const NFS3ERR_NOENT: u32 = 2;
const NFS3ERR_ISDIR: u32 = 21;
const NFS3ERR_NOTDIR: u32 = 20;
const NFS3ERR_BADHANDLE: u32 = 10001;
const NFS3ERR_NOSPC: u32 = 28;
const NFS3ERR_ROFS: u32 = 30;
const AUTH_UNIX: u32 = 1;
/// Accept statuses of RFC 5531.
const PROG_UNAVAIL: u32 = 1;
const PROC_UNAVAIL: u32 = 3;
const GARBAGE_ARGS: u32 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    Mount,
    Nfs,
}

#[derive(Debug)]
struct Shared {
    files: Vec<(String, Vec<u8>)>,
    misbehaviour: Misbehaviour,
    when: When,
    /// The calls the faults on the wire spoil.
    call: Call,
    /// [`HOSTILE_OUT_DIR`]'s files.
    out: Mutex<writes::OutDir>,
    /// Calls of each kind about each frame written so far, for [`When::FirstCallOn`].
    write_calls: Mutex<HashMap<(Call, usize), u64>>,
    stop: AtomicBool,
    n_calls: AtomicU64,
    misbehaved: AtomicU64,
    connections: AtomicU64,
    per_file: Mutex<Vec<FileCalls>>,
    connection_threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Calls about one file so far.
#[derive(Clone, Debug, Default)]
struct FileCalls {
    reads: u64,
    lookups: u64,
    attributes: u64,
}

/// What a file handle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    /// The export's root.
    Root,
    /// [`HOSTILE_DIR`].
    Dir,
    /// A file, by its index.
    File(usize),
    /// [`HOSTILE_OUT_DIR`].
    OutDir,
    /// A file written in [`HOSTILE_OUT_DIR`], by its slot.
    Written(usize),
}

/// Handles are this prefix and the node's id, 24 bytes.
const HANDLE_PREFIX: &[u8; 16] = b"playsim-hostile\0";
/// The ids of written files start here; those of the served files below it.
const WRITTEN_BASE: u64 = 1 << 32;

impl Node {
    fn id(self) -> u64 {
        match self {
            Node::Root => 0,
            Node::Dir => 1,
            Node::OutDir => 2,
            Node::File(i) => 3 + i as u64,
            Node::Written(j) => WRITTEN_BASE + j as u64,
        }
    }
}

fn handle(node: Node) -> Vec<u8> {
    let mut fh = HANDLE_PREFIX.to_vec();
    fh.extend_from_slice(&node.id().to_be_bytes());
    fh
}

/// What a misbehaviour spoils.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Lookups,
    Attributes,
    Calls(Call),
}

/// What goes wrong with one reply on the wire, after its body is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    Right,
    WrongXid,
    Truncated,
    HugeMark,
    Late(Duration),
    Reset,
}

/// A call's reply: its accept status and result, and what happens to it on the wire.
struct Answer {
    accept_status: u32,
    result: Vec<u8>,
    wire: Wire,
}

impl Answer {
    fn ok(result: Vec<u8>) -> Answer {
        Answer { accept_status: 0, result, wire: Wire::Right }
    }

    fn refused(accept_status: u32) -> Answer {
        Answer { accept_status, result: Vec::new(), wire: Wire::Right }
    }
}

impl Shared {
    fn node_of(&self, fh: &[u8]) -> Option<Node> {
        let id = fh.strip_prefix(HANDLE_PREFIX.as_slice())?;
        let id = u64::from_be_bytes(id.try_into().ok()?);
        match id {
            0 => Some(Node::Root),
            1 => Some(Node::Dir),
            2 => Some(Node::OutDir),
            n if n >= WRITTEN_BASE => {
                let j = usize::try_from(n - WRITTEN_BASE).ok()?;
                lock(&self.out).has_slot(j).then_some(Node::Written(j))
            }
            n => {
                let i = usize::try_from(n - 3).ok()?;
                (i < self.files.len()).then_some(Node::File(i))
            }
        }
    }

    /// What the misbehaviour spoils.
    fn target(&self) -> Target {
        match self.misbehaviour {
            Misbehaviour::GarbageHandle | Misbehaviour::OversizedHandle => Target::Lookups,
            Misbehaviour::ChangingSize | Misbehaviour::HugeSize => Target::Attributes,
            Misbehaviour::ReadTooLong | Misbehaviour::ReadShortNoEof => Target::Calls(Call::Read),
            Misbehaviour::WriteShort | Misbehaviour::NoSpace => Target::Calls(Call::Write),
            Misbehaviour::RestartBeforeCommit => Target::Calls(Call::Commit),
            Misbehaviour::WrongXid
            | Misbehaviour::TruncatedRecord
            | Misbehaviour::HugeRecordMark
            | Misbehaviour::LateReply(_)
            | Misbehaviour::ResetMidReply => Target::Calls(self.call),
        }
    }

    /// The fault on the wire of a spoilt reply: none for a misbehaviour of the reply's body.
    fn wire(&self) -> Wire {
        match self.misbehaviour {
            Misbehaviour::WrongXid => Wire::WrongXid,
            Misbehaviour::TruncatedRecord => Wire::Truncated,
            Misbehaviour::HugeRecordMark => Wire::HugeMark,
            Misbehaviour::LateReply(delay) => Wire::Late(delay),
            Misbehaviour::ResetMidReply => Wire::Reset,
            _ => Wire::Right,
        }
    }

    /// Whether the call numbered `n_call`, of the misbehaviour's kind, about `file` (counted
    /// `n_before` times before this one) is to be spoilt.
    fn picks(&self, n_call: u64, file: Option<usize>, n_before: u64) -> bool {
        match &self.when {
            When::NthCall(n) => *n == n_call,
            When::FirstCallOn(range) => file.is_some_and(|i| range.contains(&i)) && n_before == 0,
            When::EveryCallOn(range) => file.is_some_and(|i| range.contains(&i)),
        }
    }

    fn file_in_range(&self, i: usize) -> bool {
        match &self.when {
            When::FirstCallOn(range) | When::EveryCallOn(range) => range.contains(&i),
            When::NthCall(_) => false,
        }
    }

    /// Whether the misbehaviour is a LOOKUP's.
    fn spoils_lookups(&self) -> bool {
        self.target() == Target::Lookups
    }

    fn spoilt(&self) {
        self.misbehaved.fetch_add(1, Ordering::Relaxed);
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<FileCalls>> {
        lock(&self.per_file)
    }

    /// The attributes (fattr3) of `node`, with the size [`Misbehaviour::ChangingSize`] or
    /// [`Misbehaviour::HugeSize`] makes up.
    fn attributes(&self, node: Node, out: &mut Out) {
        let (ftype, mode, size, fileid) = match node {
            Node::Root => (2, 0o755, 4096, 1),
            Node::Dir => (2, 0o755, 4096, 2),
            Node::File(i) => {
                let real = self.files[i].1.len() as u64;
                let size = if self.misbehaviour == Misbehaviour::ChangingSize && self.file_in_range(i) {
                    let mut calls = self.calls();
                    calls[i].attributes += 1;
                    self.spoilt();
                    real + GROWTH_PER_CALL * calls[i].attributes
                } else if self.misbehaviour == Misbehaviour::HugeSize && self.file_in_range(i) {
                    self.spoilt();
                    HUGE_SIZE
                } else {
                    real
                };
                (1, 0o644, size, node.id() + 1)
            }
            Node::OutDir => (2, 0o755, 4096, node.id() + 1),
            Node::Written(j) => (1, 0o644, lock(&self.out).size(j), node.id() + 1),
        };
        out.u32(ftype).u32(mode).u32(1).u32(0).u32(0);
        out.u64(size).u64(size.next_multiple_of(4096));
        out.u32(0).u32(0); // rdev
        out.u64(0x686f7374); // fsid
        out.u64(fileid);
        for _ in 0..3 {
            out.u32(1_700_000_000).u32(0); // atime, mtime, ctime
        }
    }

    fn post_op_attr(&self, node: Node, out: &mut Out) {
        out.u32(1);
        self.attributes(node, out);
    }

    fn mount(&self, procedure: u32, args: &[u8]) -> Answer {
        match procedure {
            0 | 3 => Answer::ok(Vec::new()), // NULL, UMNT
            1 => {
                let Some(path) = In::new(args).opaque() else { return Answer::refused(GARBAGE_ARGS) };
                let mut out = Out::default();
                if path == HOSTILE_EXPORT.as_bytes() {
                    out.u32(MNT3_OK).opaque(&handle(Node::Root)).u32(1).u32(AUTH_UNIX);
                } else {
                    out.u32(MNT3ERR_NOENT);
                }
                Answer::ok(out.0)
            }
            5 => {
                // EXPORT: one directory, open to every host.
                let mut out = Out::default();
                out.u32(1).opaque(HOSTILE_EXPORT.as_bytes()).u32(1).opaque(b"*").u32(0).u32(0);
                Answer::ok(out.0)
            }
            _ => Answer::refused(PROC_UNAVAIL),
        }
    }

    fn nfs(&self, procedure: u32, args: &[u8]) -> Answer {
        let n_call = self.n_calls.fetch_add(1, Ordering::Relaxed) + 1;
        let mut r = In::new(args);
        let answer = match procedure {
            0 => Some(Answer::ok(Vec::new())),
            1 => r.opaque().map(|fh| self.getattr(fh)),
            3 => match (r.opaque(), r.opaque()) {
                (Some(dir), Some(name)) => Some(self.lookup(dir, name, n_call)),
                _ => None,
            },
            6 => match (r.opaque(), r.u64(), r.u32()) {
                (Some(fh), Some(offset), Some(count)) => Some(self.read(fh, offset, count, n_call)),
                _ => None,
            },
            17 => match (r.opaque(), r.u64()) {
                (Some(dir), Some(cookie)) => Some(self.readdirplus(dir, cookie)),
                _ => None,
            },
            19 => r.opaque().map(|fh| self.fsinfo(fh)),
            7 => match (r.opaque(), r.u64(), r.u32(), r.u32(), r.opaque()) {
                (Some(fh), Some(offset), Some(_count), Some(stable), Some(data)) => {
                    Some(self.write(fh, offset, stable, data, n_call))
                }
                _ => None,
            },
            8 => match (r.opaque(), r.opaque()) {
                (Some(dir), Some(name)) => Some(self.create(dir, name)),
                _ => None,
            },
            12 => match (r.opaque(), r.opaque()) {
                (Some(dir), Some(name)) => Some(self.remove(dir, name)),
                _ => None,
            },
            14 => match (r.opaque(), r.opaque(), r.opaque(), r.opaque()) {
                (Some(from_dir), Some(from), Some(to_dir), Some(to)) => {
                    Some(self.rename((from_dir, from), (to_dir, to), n_call))
                }
                _ => None,
            },
            18 => r.opaque().map(|fh| self.fsstat(fh)),
            21 => r.opaque().map(|fh| self.commit(fh, n_call)),
            _ => Some(Answer::refused(PROC_UNAVAIL)),
        };
        answer.unwrap_or_else(|| Answer::refused(GARBAGE_ARGS))
    }

    fn getattr(&self, fh: &[u8]) -> Answer {
        let mut out = Out::default();
        match self.node_of(fh) {
            Some(node) => {
                out.u32(NFS3_OK);
                self.attributes(node, &mut out);
            }
            None => {
                out.u32(NFS3ERR_BADHANDLE);
            }
        }
        Answer::ok(out.0)
    }

    fn lookup(&self, dir: &[u8], name: &[u8], n_call: u64) -> Answer {
        let mut out = Out::default();
        let dir_node = self.node_of(dir);
        let found = match dir_node {
            Some(Node::Root) if name == HOSTILE_DIR.as_bytes() => Some(Node::Dir),
            Some(Node::Root) => (name == HOSTILE_OUT_DIR.as_bytes()).then_some(Node::OutDir),
            Some(Node::Dir) => self.files.iter().position(|(n, _)| n.as_bytes() == name).map(Node::File),
            Some(Node::OutDir) => lock(&self.out).find(name).map(Node::Written),
            Some(Node::File(_) | Node::Written(_)) => {
                out.u32(NFS3ERR_NOTDIR).u32(0);
                return Answer::ok(out.0);
            }
            None => {
                out.u32(NFS3ERR_BADHANDLE).u32(0);
                return Answer::ok(out.0);
            }
        };
        let Some(node) = found else {
            out.u32(NFS3ERR_NOENT);
            if let Some(dir_node) = dir_node {
                self.post_op_attr(dir_node, &mut out);
            }
            return Answer::ok(out.0);
        };
        let file = match node {
            Node::File(i) => Some(i),
            _ => None,
        };
        let garbage = self.spoils_lookups() && {
            let n_before = file.map_or(0, |i| {
                let mut calls = self.calls();
                calls[i].lookups += 1;
                calls[i].lookups - 1
            });
            self.picks(n_call, file, n_before)
        };
        out.u32(NFS3_OK);
        if garbage && self.misbehaviour == Misbehaviour::OversizedHandle {
            self.spoilt();
            out.u32(0x7fff_ffff);
            out.0.extend_from_slice(&[0xa5; 64]);
            return Answer::ok(out.0);
        }
        if garbage {
            self.spoilt();
            out.opaque(&[0xa5; 64]);
        } else {
            out.opaque(&handle(node));
        }
        self.post_op_attr(node, &mut out);
        if let Some(dir_node) = dir_node {
            self.post_op_attr(dir_node, &mut out);
        }
        Answer::ok(out.0)
    }

    fn read(&self, fh: &[u8], offset: u64, count: u32, n_call: u64) -> Answer {
        let mut out = Out::default();
        let i = match self.node_of(fh) {
            Some(Node::File(i)) => i,
            Some(Node::Written(j)) => return self.read_written(j, offset, count),
            Some(node) => {
                out.u32(NFS3ERR_ISDIR);
                self.post_op_attr(node, &mut out);
                return Answer::ok(out.0);
            }
            None => {
                out.u32(NFS3ERR_BADHANDLE).u32(0);
                return Answer::ok(out.0);
            }
        };
        let n_before = {
            let mut calls = self.calls();
            calls[i].reads += 1;
            calls[i].reads - 1
        };
        let spoil = self.target() == Target::Calls(Call::Read) && self.picks(n_call, Some(i), n_before);
        if spoil {
            self.spoilt();
        }
        let bytes = &self.files[i].1;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
        let end = start.saturating_add(count as usize).min(bytes.len());
        let mut data = bytes[start..end].to_vec();
        let mut eof = end == bytes.len();
        let mut wire = Wire::Right;
        if spoil {
            match self.misbehaviour {
                Misbehaviour::ReadTooLong => data.resize(count as usize + TOO_LONG_BY, 0xee),
                Misbehaviour::ReadShortNoEof => {
                    data.truncate((data.len() / 2).max(1));
                    eof = false;
                }
                _ => wire = self.wire(),
            }
        }
        out.u32(NFS3_OK);
        self.post_op_attr(Node::File(i), &mut out);
        // The count is the data's length, whatever was asked: a server that sends more says so.
        out.u32(u32::try_from(data.len()).unwrap_or(u32::MAX)).u32(u32::from(eof)).opaque(&data);
        Answer { accept_status: 0, result: out.0, wire }
    }

    fn readdirplus(&self, dir: &[u8], cookie: u64) -> Answer {
        let mut out = Out::default();
        let dir_node = match self.node_of(dir) {
            Some(node @ (Node::Root | Node::Dir | Node::OutDir)) => node,
            Some(node) => {
                out.u32(NFS3ERR_NOTDIR);
                self.post_op_attr(node, &mut out);
                return Answer::ok(out.0);
            }
            None => {
                out.u32(NFS3ERR_BADHANDLE).u32(0);
                return Answer::ok(out.0);
            }
        };
        let entries: Vec<(Node, String)> = match dir_node {
            Node::Root => vec![(Node::Dir, HOSTILE_DIR.into()), (Node::OutDir, HOSTILE_OUT_DIR.into())],
            Node::OutDir => lock(&self.out).entries().map(|(j, name)| (Node::Written(j), name)).collect(),
            _ => self.files.iter().enumerate().map(|(i, (name, _))| (Node::File(i), name.clone())).collect(),
        };
        out.u32(NFS3_OK);
        self.post_op_attr(dir_node, &mut out);
        out.u64(0x7665_7269_6679); // cookieverf
        for (k, (node, name)) in entries.iter().enumerate() {
            let entry_cookie = k as u64 + 1;
            if entry_cookie <= cookie {
                continue;
            }
            out.u32(1).u64(entry_cookie + 2).opaque(name.as_bytes()).u64(entry_cookie);
            self.post_op_attr(*node, &mut out);
            let hide_handle =
                self.spoils_lookups() && matches!(node, Node::File(i) if self.file_in_range(*i));
            if hide_handle {
                out.u32(0);
            } else {
                out.u32(1).opaque(&handle(*node));
            }
        }
        out.u32(0).u32(1); // no more entries, eof
        Answer::ok(out.0)
    }

    fn fsinfo(&self, fh: &[u8]) -> Answer {
        let mut out = Out::default();
        let Some(node) = self.node_of(fh) else {
            out.u32(NFS3ERR_BADHANDLE).u32(0);
            return Answer::ok(out.0);
        };
        out.u32(NFS3_OK);
        self.post_op_attr(node, &mut out);
        out.u32(MAX_TRANSFER).u32(MAX_TRANSFER).u32(4096); // rtmax, rtpref, rtmult
        out.u32(MAX_TRANSFER).u32(MAX_TRANSFER).u32(4096); // wtmax, wtpref, wtmult
        out.u32(64 * 1024).u64(u64::MAX).u32(0).u32(1); // dtpref, maxfilesize, time_delta
        out.u32(0x1b); // properties: link, symlink, homogeneous, cansettime
        Answer::ok(out.0)
    }
}

fn accept_loop(listener: &TcpListener, program: Program, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                shared.connections.fetch_add(1, Ordering::Relaxed);
                let shared_for_thread = Arc::clone(shared);
                let spawned = std::thread::Builder::new()
                    .name("hostile-conn".into())
                    .spawn(move || serve_connection(stream, program, &shared_for_thread));
                if let Ok(thread) = spawned {
                    let mut threads = lock(&shared.connection_threads);
                    threads.retain(|t| !t.is_finished());
                    threads.push(thread);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Serves calls on one connection until the client closes it, the server stops, or a
/// misbehaviour ends it.
fn serve_connection(stream: TcpStream, program: Program, shared: &Arc<Shared>) {
    let setup = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(POLL)))
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| stream.try_clone());
    let Ok(writer) = setup else { return };
    let writer = Arc::new(Mutex::new(writer));
    let mut reader = stream;
    loop {
        let Some(record) = read_record(&mut reader, shared) else { return };
        let mut r = In::new(&record);
        let header = (r.u32(), r.u32(), r.u32(), r.u32(), r.u32(), r.u32());
        let (Some(xid), Some(0), Some(2), Some(prog), Some(vers), Some(procedure)) = header else {
            return;
        };
        // Credential and verifier: flavor and body each.
        if r.u32().and_then(|_| r.opaque()).and_then(|_| r.u32()).and_then(|_| r.opaque()).is_none() {
            return;
        }
        let args = r.rest();
        let answer = match (program, prog, vers) {
            (Program::Mount, MOUNT_PROG, 3) => shared.mount(procedure, args),
            (Program::Nfs, NFS_PROG, 3) => shared.nfs(procedure, args),
            _ => Answer::refused(PROG_UNAVAIL),
        };
        if !send(&writer, xid, answer, shared) {
            return;
        }
    }
}

/// Sends `answer` to call `xid` as its wire misbehaviour says; false when the connection is
/// to end.
fn send(writer: &Arc<Mutex<TcpStream>>, xid: u32, answer: Answer, shared: &Arc<Shared>) -> bool {
    let wire = answer.wire;
    let reply_xid = if wire == Wire::WrongXid { xid ^ 0x5a5a_0000 } else { xid };
    let mut message = Out::default();
    message.u32(reply_xid).u32(1).u32(0).u32(0).u32(0).u32(answer.accept_status);
    message.0.extend_from_slice(&answer.result);
    let message = message.0;
    let len = u32::try_from(message.len()).unwrap_or(0x7fff_ffff);
    let whole = |mark: u32| {
        let mut record = mark.to_be_bytes().to_vec();
        record.extend_from_slice(&message);
        record
    };
    let half = |record: &[u8]| record[..4 + (record.len() - 4) / 2].to_vec();
    match wire {
        Wire::Right | Wire::WrongXid => write(writer, &whole(0x8000_0000 | len)),
        Wire::HugeMark => write(writer, &whole(0xffff_ffff)),
        Wire::Truncated => {
            let _ = write(writer, &half(&whole(0x8000_0000 | len)));
            let _ = lock(writer).shutdown(Shutdown::Both);
            false
        }
        Wire::Reset => {
            let _ = write(writer, &half(&whole(0x8000_0000 | len)));
            // A linger of zero makes the close a reset; the connection's last descriptor
            // closes when this thread returns.
            let _ = socket2::SockRef::from(&*lock(writer)).set_linger(Some(Duration::ZERO));
            false
        }
        Wire::Late(delay) => {
            let writer = Arc::clone(writer);
            let shared = Arc::clone(shared);
            let record = whole(0x8000_0000 | len);
            let spawned = std::thread::Builder::new().name("hostile-late".into()).spawn(move || {
                let mut waited = Duration::ZERO;
                while waited < delay && !shared.stop.load(Ordering::Acquire) {
                    std::thread::sleep(POLL);
                    waited += POLL;
                }
                let _ = write(&writer, &record);
            });
            spawned.is_ok()
        }
    }
}

fn write(writer: &Mutex<TcpStream>, bytes: &[u8]) -> bool {
    lock(writer).write_all(bytes).is_ok()
}

/// Reads one call record (all its fragments); `None` at the end of the stream, on a record too
/// large, or once the server stops.
fn read_record(stream: &mut TcpStream, shared: &Shared) -> Option<Vec<u8>> {
    let mut record = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        read_full(stream, &mut mark, shared)?;
        let mark = u32::from_be_bytes(mark);
        let len = (mark & 0x7fff_ffff) as usize;
        if record.len() + len > MAX_CALL_BYTES {
            return None;
        }
        let start = record.len();
        record.resize(start + len, 0);
        read_full(stream, &mut record[start..], shared)?;
        if mark & 0x8000_0000 != 0 {
            return Some(record);
        }
    }
}

/// Fills `buf`, waiting through read time-outs until the server stops.
fn read_full(stream: &mut TcpStream, buf: &mut [u8], shared: &Shared) -> Option<()> {
    let mut done = 0;
    while done < buf.len() {
        match stream.read(&mut buf[done..]) {
            Ok(0) => return None,
            Ok(n) => done += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if shared.stop.load(Ordering::Acquire) {
                    return None;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(())
}

/// XDR out.
#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn opaque(&mut self, bytes: &[u8]) -> &mut Self {
        self.u32(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(bytes);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }
}

/// XDR in, never past the end.
struct In<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> In<'a> {
    fn new(buf: &'a [u8]) -> Self {
        In { buf, pos: 0 }
    }

    fn u32(&mut self) -> Option<u32> {
        let bytes = self.buf.get(self.pos..self.pos.checked_add(4)?)?;
        self.pos += 4;
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        let high = self.u32()?;
        let low = self.u32()?;
        Some(u64::from(high) << 32 | u64::from(low))
    }

    fn opaque(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        let bytes = self.buf.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len.next_multiple_of(4);
        Some(bytes)
    }

    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Sends one call of `program` and returns the raw reply record (after its mark), the mark.
    fn call(port: u16, prog: u32, procedure: u32, args: &[u8]) -> (u32, Vec<u8>) {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut msg = Out::default();
        msg.u32(77).u32(0).u32(2).u32(prog).u32(3).u32(procedure).u32(0).u32(0).u32(0).u32(0);
        msg.0.extend_from_slice(args);
        let mut record = (0x8000_0000u32 | msg.0.len() as u32).to_be_bytes().to_vec();
        record.extend_from_slice(&msg.0);
        stream.write_all(&record).unwrap();
        let mut mark = [0u8; 4];
        stream.read_exact(&mut mark).unwrap();
        let mark = u32::from_be_bytes(mark);
        let mut reply = vec![0u8; (mark & 0x7fff_ffff).min(1 << 16) as usize];
        let n = stream.read(&mut reply).unwrap();
        reply.truncate(n);
        (mark, reply)
    }

    fn files() -> Vec<(String, Vec<u8>)> {
        (0..3).map(|i| (format!("f{i}"), vec![i as u8; 100])).collect()
    }

    fn read_args(file: usize, count: u32) -> Vec<u8> {
        let mut args = Out::default();
        args.opaque(&handle(Node::File(file))).u64(0).u32(count);
        args.0
    }

    #[test]
    fn mount_gives_the_root_handle_and_read_gives_the_bytes() {
        let server = HostileServer::start(files(), Misbehaviour::WrongXid, When::NthCall(99)).unwrap();
        let mut args = Out::default();
        args.opaque(HOSTILE_EXPORT.as_bytes());
        let (_, reply) = call(server.mount_port(), MOUNT_PROG, 1, &args.0);
        let mut r = In::new(&reply[24..]);
        assert_eq!(r.u32(), Some(MNT3_OK));
        assert_eq!(r.opaque(), Some(&handle(Node::Root)[..]));

        let (mark, reply) = call(server.nfs_port(), NFS_PROG, 6, &read_args(1, 1000));
        assert_eq!(mark & 0x7fff_ffff, reply.len() as u32);
        let mut r = In::new(&reply);
        assert_eq!(r.u32(), Some(77));
        let mut r = In::new(&reply[24..]);
        assert_eq!((r.u32(), r.u32()), (Some(NFS3_OK), Some(1)));
        r.pos += 84;
        assert_eq!((r.u32(), r.u32(), r.opaque()), (Some(100), Some(1), Some(&[1u8; 100][..])));
        assert_eq!(server.misbehaved(), 0);
    }

    #[test]
    fn the_first_read_of_a_chosen_file_is_spoilt_once() {
        let server = HostileServer::start(files(), Misbehaviour::WrongXid, When::FirstCallOn(1..2)).unwrap();
        let xid = |file| {
            u32::from_be_bytes(
                call(server.nfs_port(), NFS_PROG, 6, &read_args(file, 8)).1[..4].try_into().unwrap(),
            )
        };
        assert_eq!(xid(0), 77);
        assert_ne!(xid(1), 77);
        assert_eq!(xid(1), 77);
        assert_eq!(server.misbehaved(), 1);
    }

    #[test]
    fn the_nth_call_is_spoilt_whatever_its_file() {
        let server = HostileServer::start(files(), Misbehaviour::ReadShortNoEof, When::NthCall(2)).unwrap();
        let count = |file| {
            let (_, reply) = call(server.nfs_port(), NFS_PROG, 6, &read_args(file, 100));
            let mut r = In::new(&reply[24..]);
            r.pos += 8 + 84;
            (r.u32().unwrap(), r.u32().unwrap())
        };
        assert_eq!(count(0), (100, 1));
        assert_eq!(count(0), (50, 0));
        assert_eq!(count(2), (100, 1));
        assert_eq!(server.misbehaved(), 1);
    }

    #[test]
    fn a_huge_mark_claims_the_most_a_mark_can_say() {
        let server =
            HostileServer::start(files(), Misbehaviour::HugeRecordMark, When::EveryCallOn(0..3)).unwrap();
        let (mark, reply) = call(server.nfs_port(), NFS_PROG, 6, &read_args(2, 8));
        assert_eq!(mark, 0xffff_ffff);
        assert_eq!(&reply[..4], &77u32.to_be_bytes());
    }

    #[test]
    fn a_read_too_long_says_so_in_its_count() {
        let server =
            HostileServer::start(files(), Misbehaviour::ReadTooLong, When::EveryCallOn(0..3)).unwrap();
        let (_, reply) = call(server.nfs_port(), NFS_PROG, 6, &read_args(0, 8));
        let mut r = In::new(&reply[24..]);
        r.pos += 8 + 84;
        assert_eq!(r.u32(), Some(8 + TOO_LONG_BY as u32));
    }
}
