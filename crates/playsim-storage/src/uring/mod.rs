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
