//! Storage transports behind [`playsim_core::Storage`]: where playsim's frame bytes come from.
//!
//! Each transport opens objects by path and reads them with positional reads
//! of at most one block each, counting requests, bytes and the CPU time of
//! the reading threads in [`StorageStats`](playsim_core::StorageStats). None of
//! them reads the wall clock: the engine times every call. (The simulated link is
//! the one transport that waits on time, and it does so on the run's injected clock.)
//!
//! - [`LocalStorage`]: files through the kernel, buffered or with O_DIRECT,
//!   read with pread on tokio's blocking pool or through io_uring ([`IoEngine`]:
//!   all of a frame's blocks in flight at once, into registered buffers; the `io-uring`
//!   cargo feature); [`LocalStorage::drop_cache`] prepares a cold run.
//! - [`nfs`]: userspace NFSv3 over TCP from an `nfs://` URL, with no mount and
//!   no root: a pool of `nconnect` connections, each with many READs of `rsize`
//!   in flight, and each reply read straight into its frame buffer (the `nfs` cargo
//!   feature; its options and URLs are in every build). The client is generic over its
//!   RPC transport (`nfs::channel`), so RPC-over-RDMA plugs in from another crate.
//! - [`smb`]: SMB2/3 from an `smb://` URL, with no mount and no root, through the pure-Rust
//!   `smb2` crate: each frame's READs in flight together within the server's credits,
//!   credentials from a `mount.cifs` file or the environment, never from the URL (the `smb`
//!   cargo feature).
//! - [`sim`]: objects held in memory, read over a modelled link (bandwidth shared by
//!   the streams that name it, latency, seeded jitter), for `sim://` sources.
//! - [`scripted`]: a storage whose sizes, latencies and failures follow a
//!   script, for engine tests under tokio's paused clock.
//!
//! [`write`](mod@write) is the write side: create, write at an offset, sync, rename and remove
//! ([`write::WriteStorage`], local files now; frametest's writes and a record mode go
//! through it).
//!
//! [`mountinfo`] labels a local path by the mount under it (NFS over TCP or
//! RDMA, SMB, a local filesystem) with the mount's options, for the report.
//!
//! ```
//! use playsim_core::{IoBuf, Storage};
//! use playsim_storage::LocalStorage;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("frame.0001.dpx");
//! std::fs::write(&path, vec![7u8; 10_000])?;
//!
//! let storage = LocalStorage::builder().block_size(4096).direct(false).build()?;
//! let file = storage.open(&path).await?;
//! let mut buf = IoBuf::default();
//! let n = file.read_at(0, file.size() as usize, &mut buf).await?;
//! file.close().await?;
//!
//! assert_eq!(n, 10_000);
//! assert_eq!(buf[9_999], 7);
//! // Two full blocks of 4096 bytes and one of 1808.
//! assert_eq!(storage.stats().n_reads, 3);
//! # Ok(())
//! # }
//! ```
// `unsafe` is allowed in one module, `uring::sys` (io_uring's submissions and buffer
// registration, the `io-uring` feature), and denied everywhere else.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod error;
pub mod knob;
mod listing;
mod local;
pub mod mountinfo;
pub mod nfs;
mod options;
mod read_plan;
pub mod scripted;
pub mod sim;
pub mod smb;
#[cfg(test)]
mod testutil;
pub mod transport;
mod uring;
pub mod write;
mod write_parts;

pub use error::{Error, UrlPart};
pub use local::{ColdOutcome, IoEngine, LocalOptions, LocalStorage, LocalStorageBuilder, DEFAULT_BLOCK_SIZE};
pub use uring::{UringOptions, DEFAULT_RING_ENTRIES};
