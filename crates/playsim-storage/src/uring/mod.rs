//! The io_uring engine of [`crate::LocalStorage`] ([`crate::IoEngine::IoUring`]): every
//! block of a frame submitted at once, many reads in flight, into registered buffers.
//!
//! Each storage has one ring, made and driven by one thread (`playsim-uring`). A frame's
//! `read_at` moves its buffer and its file into a request, sends it to the thread, pokes
//! an eventfd the thread's ring polls, and awaits the answer on a oneshot channel. The
//! thread hands the buffer to the ring ([`sys::Ring::adopt`]), registers it if it is new
//! ([`fixed`]), queues the frame's blocks (a read of at most one block each, bounded by
//! the ring's depth), submits, and reaps: a short read has its rest submitted again, a
//! read of 0 bytes (or, with O_DIRECT, one that ends off the alignment) marks the end of
//! the file. When no read of the frame is in flight any more, the ring gives the buffer
//! back and the thread answers. A dropped read future only drops the receiver: the frame's
//! reads already in flight complete into the buffer the ring still owns, no more are
//! submitted, and the buffer is freed after the last completion.
//!
//! The thread's CPU time (the copies out of the page cache happen on it, inside
//! `io_uring_enter`) is counted in the storage's `cpu_ns`, as the pread threads' is.
//!
//! Writes ([`crate::write::LocalWriteStorage`] with [`crate::IoEngine::IoUring`]) have a
//! ring and thread of their own (`playsim-uring-w`, [`writer`]), on the same thread loop
//! ([`thread`]) and the same [`sys::Ring`]: a `write_at` is cut into 1 MiB WRITEs, all in
//! flight at once, its bytes held by the ring until the last completes; a sync is an FSYNC.
//!
//! The engine is the `io-uring` cargo feature (on by default). [`UringOptions`] is in every
//! build, so that flags and scenario keys are the same; a build without the feature reads
//! with pread and says why, as on a kernel without io_uring.
//!
//! # Design notes (moved from ARCHITECTURE.md)
//!
//! - **Why not more.** The ring is single-issuer with deferred task work where the kernel has
//!   them, so only its thread enters it (tokio-uring is unmaintained; this is tokio-rs's
//!   `io-uring` crate). IOSQE_ASYNC was tried: +10–18% warm throughput on 2 cores, but +10–20%
//!   CPU per GB, spent on io-wq threads that the thread-CPU figure cannot see, so it is not used.
//!   The O_DIRECT alignment plan and the move of the asked-for bytes to the front are the pread
//!   path's own functions (`read_plan.rs`).
//! - **Registered buffers** ([`fixed`]): a sparse table of 256 slots (Linux 5.19+), keyed by
//!   `IoBuf::id`; `sys.rs` checks identity, address and length before a fixed read. A slot whose
//!   buffer has not come back for 64 reads is stale. When the kernel answers ENOMEM
//!   (RLIMIT_MEMLOCK, 8 MiB for a non-root user without CAP_IPC_LOCK, less than one 4K DCI
//!   frame) the ring stops registering, keeps what it has and reads the rest unregistered. The
//!   report's storage options say `io_engine=io_uring`, `ring_entries` and
//!   `registered_buffers=yes: N buffers, X MB` / `partly: ...` / `no: <why, and how to raise the
//!   limit>`.
//! - **Fallback.** Where `io_uring_setup` fails (ENOSYS; EPERM from the
//!   `kernel.io_uring_disabled` sysctl, whose value is quoted, or a seccomp profile), or in a
//!   build without the feature, the storage reads with pread and says `io_engine=pread` and
//!   `io_uring=not available: <cause>`. These are values (`StorageWarning` in the storage's
//!   info), which `playsim_ops::storage_warnings` turns into one line each; `play` prints them on
//!   stderr after the summary. Listing and indexing a local source always use pread.
//! - **Writes** ([`writer`]): with O_DIRECT each 1 MiB chunk is copied into an aligned buffer and
//!   submitted at once (copying the whole frame first ran at 0.79× fio's io_uring, chunk by chunk
//!   at about 0.9×); the copies count in `WriteStats::cpu_ns`. No registered buffers: the bytes
//!   come from the encoder in new allocations, which would each be pinned once. Buffered WRITEs
//!   that would block are punted by the kernel to io-wq threads, whose CPU is not seen. Where the
//!   ring cannot be set up the storage writes with pwrite and `WriteStorage::warnings` says why.

mod options;

#[cfg(feature = "io-uring")]
mod fixed;
#[cfg(feature = "io-uring")]
mod reader;
#[cfg(feature = "io-uring")]
mod sys;
#[cfg(feature = "io-uring")]
mod thread;
#[cfg(feature = "io-uring")]
mod writer;

pub use options::{UringOptions, DEFAULT_RING_ENTRIES};
#[cfg(feature = "io-uring")]
pub(crate) use reader::UringReader;
#[cfg(feature = "io-uring")]
pub(crate) use writer::UringWriter;
#[cfg(all(test, feature = "io-uring"))]
pub(crate) use writer::WRITE_CHUNK;
