//! Userspace NFSv3: `nfs://` sources read with no mount and no root, over TCP or another RPC
//! transport.
//!
//! [`NfsStorage::connect`] resolves the host, finds the MOUNT and NFS ports (from the URL or
//! the portmapper), picks the export (the longest exported prefix of the path, or
//! `?export=`), mounts it and opens a pool of `nconnect` connections. Each carries many calls
//! at once (`rpc.rs`): a frame read is split into READs of `rsize` bytes (capped by the server's
//! FSINFO rtmax), spread over the connections and all in flight together.
//!
//! The NFS calls go through an RPC transport ([`channel`]: an [`RpcConnector`] makes
//! [`RpcChannel`]s). TCP with record marking is [`TcpConnector`], which [`NfsStorage::connect`]
//! uses; [`NfsStorage::connect_with`] takes another (RPC-over-RDMA, from the `playsim-rdma`
//! crate). MOUNT and the portmapper are always called over TCP.
//!
//! Paths are server paths, the export included (`/media/shot/shot.0001.dpx`). Handles are
//! cached per path; a READDIRPLUS listing fills the cache for every entry, so playing a
//! discovered sequence costs no LOOKUP per frame.
//!
//! A connection that breaks is replaced, and the call sent again, with a backoff from 50 ms
//! doubling to 1 s; a call the server leaves unanswered for the timeout (default 30 s),
//! through reconnects, fails with
//! [`StorageErrorKind::Unavailable`](playsim_core::StorageErrorKind::Unavailable), which ends
//! a run.
//!
//! The client ([`NfsStorage`]) is the `nfs` cargo feature (on by default). Its options and
//! URLs ([`NfsOptions`], [`NfsUrl`]) are in every build, so that flags and scenario keys are
//! the same whichever features a build has.
//!
//! # Design notes (moved from ARCHITECTURE.md)
//!
//! - There is no reader task. Many calls are in flight on each connection, and the caller whose
//!   turn it is reads the next record's head and hands the turn to the call it answers, so a READ
//!   reply goes from the socket straight into its frame buffer on its caller's thread (the
//!   kernel's copy is the only one). A frame's `read_at` sends all its READs at once.
//! - Each call's reply record is capped at its record mark, before anything is read or allocated:
//!   a READ's bytes plus 4 KiB, else the call's `max_reply`, with a 1 MiB floor and a 64 MiB cap.
//!   A READ reply with more data than asked is skipped to its end and fails only its call (the
//!   frame is unreadable); a reply to an XID no call awaits breaks the connection, and the call
//!   is sent again on a new one. Status and protocol errors name the server (`nfs server ADDR:`).
//! - A call unanswered through reconnects for `--nfs-timeout` fails as `Unavailable`, and with it
//!   at once every other call of that client (the pool remembers that it gave up and wakes the
//!   calls waiting out a backoff): the run ends within the timeout of the outage, its report
//!   written. A call whose own reply is cut by the connection breaking (`CallError::ReplyCut`)
//!   3 times, each on a new connection, is refused instead: the server is up and refusing that
//!   call, so its frame is unreadable and the run goes on.
//! - Each stream gets its own client (`NfsStorage::another_client`: its own connections and
//!   counters, a copy of the handle cache), as a second workstation would be.
//! - The client's named exceptions to "only the engine reads the clock", which bound waits and
//!   time no frame: the time-out and the reconnect backoff run on tokio's timer (a time-out must
//!   fire while the engine waits on that very call, and a paused test clock would never fire it);
//!   the longest wait from a broken connection to an answer is reported as `reconnect_wait_s`;
//!   the first XID is seeded from the wall clock, so that two runs' XIDs differ (a server's reply
//!   cache keys on them).

#[cfg(feature = "nfs")]
pub mod channel;
#[cfg(feature = "nfs")]
mod client;
#[cfg(feature = "nfs")]
mod cpu;
mod knobs;
#[cfg(feature = "nfs")]
mod rpc;
#[cfg(feature = "nfs")]
mod storage;
mod url;
#[cfg(feature = "nfs")]
mod writes;
#[cfg(feature = "nfs")]
mod xdr;

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "nfs")]
pub use channel::{
    Answer, BufferIdentity, BulkPayload, CallError, Credential, ReadInto, Reply, RpcCall, RpcChannel,
    RpcConnector,
};
/// Runs every decoder playsim's client applies to a server's reply over `record` (an RPC
/// reply message without its record mark): the RPC header, then the record's result as each
/// procedure's result type (the read side's and the write side's), and a READ's data both
/// copied and placed. For the fuzz targets; any bytes must come back as a value or an error.
#[doc(hidden)]
#[cfg(feature = "nfs")]
pub fn decode_any_reply(record: &[u8]) {
    if let Some(reply) = client::decode_read_replies(record) {
        writes::decode_write_replies(&reply);
    }
}
pub use knobs::NFS_KNOBS;
#[cfg(feature = "nfs")]
pub use rpc::{encode_call_message, TcpConnector};
#[cfg(feature = "nfs")]
pub use storage::NfsStorage;
pub use url::{NfsUrl, UrlPart, URL_EXAMPLE};
#[cfg(feature = "nfs")]
pub use writes::NfsWriter;

/// The read size used when none is given: 1 MiB, as Linux asks of most servers.
pub const DEFAULT_RSIZE: usize = 1 << 20;
/// Calls in flight on each connection by default (Linux's sunrpc starts with 2 slots per
/// connection and grows to 65536; 16 keeps a 2-core client busy without flooding a server).
pub const DEFAULT_IN_FLIGHT: usize = 16;
/// How long a call may go unanswered, through reconnects, before the transport gives up.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Resolves a host name to addresses. The default asks the system resolver; tests inject
/// their own so that no DNS query leaves the machine.
pub type Resolver = Arc<dyn Fn(&str) -> std::io::Result<Vec<IpAddr>> + Send + Sync>;

/// Settings of an [`NfsStorage`].
#[derive(Clone)]
pub struct NfsOptions {
    /// TCP connections to the NFS service (Linux's `nconnect`).
    pub nconnect: u32,
    /// Bytes per READ; capped by the server's largest (FSINFO rtmax).
    pub rsize: usize,
    /// Calls in flight at once on each connection.
    pub in_flight: u32,
    /// How long a call may go unanswered, through reconnects, before the run ends.
    pub timeout: Duration,
    /// Host name resolution; `None` asks the system.
    pub resolver: Option<Resolver>,
    /// The URL names a directory to write into, which may not exist yet: only its place in
    /// the export is checked at connect, and the writer makes it (`create_dir_all`). Set by
    /// `record` and `frametest -w`, not by the user.
    pub create_missing: bool,
}

impl Default for NfsOptions {
    fn default() -> NfsOptions {
        NfsOptions {
            nconnect: 1,
            rsize: DEFAULT_RSIZE,
            in_flight: DEFAULT_IN_FLIGHT as u32,
            timeout: DEFAULT_TIMEOUT,
            resolver: None,
            create_missing: false,
        }
    }
}

impl fmt::Debug for NfsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NfsOptions")
            .field("nconnect", &self.nconnect)
            .field("rsize", &self.rsize)
            .field("in_flight", &self.in_flight)
            .field("timeout", &self.timeout)
            .field("resolver", &self.resolver.as_ref().map(|_| "custom"))
            .field("create_missing", &self.create_missing)
            .finish()
    }
}

impl NfsOptions {
    /// Checks the options: at least one connection and one call in flight, a read size
    /// from 4 KiB to 64 MiB.
    pub fn validate(&self) -> Result<(), crate::Error> {
        if self.nconnect == 0 || self.nconnect > 64 {
            return Err(crate::Error::InvalidOption(format!(
                "nconnect {} is out of range: 1 to 64, for example --nconnect 4",
                self.nconnect
            )));
        }
        if !(4096..=64 << 20).contains(&self.rsize) {
            return Err(crate::Error::InvalidOption(format!(
                "rsize {} is out of range: 4K to 64M, for example --rsize 1M",
                self.rsize
            )));
        }
        if self.in_flight == 0 {
            return Err(crate::Error::InvalidOption("calls in flight must be at least 1".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn options_out_of_range_are_refused_with_an_example() {
        let zero = NfsOptions { nconnect: 0, ..NfsOptions::default() };
        assert!(zero.validate().unwrap_err().to_string().contains("--nconnect 4"));
        let tiny = NfsOptions { rsize: 512, ..NfsOptions::default() };
        assert!(tiny.validate().unwrap_err().to_string().contains("--rsize 1M"));
    }
}
