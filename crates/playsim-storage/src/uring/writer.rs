//! The ring thread of a [`crate::write::LocalWriteStorage`] writing through io_uring
//! ([`UringWriter`]): each `write_at` cut into chunks, all in flight at once, short writes
//! finished, and syncs as IORING_OP_FSYNC (the `io-uring` feature).
//!
//! A write's bytes stay alive until its last completion: the ring holds a clone of the
//! shared [`WriteBytes`] (buffered), or, with O_DIRECT, one aligned 1 MiB buffer per chunk,
//! each copied just before its WRITE is submitted (so the disk starts on the first chunk
//! while the thread copies the next), and gives it back only when no write of it is in
//! flight. A dropped `write_at` future only drops its receiver: no more of its chunks are
//! queued, and the ones in flight complete from memory the ring still holds.

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use playsim_core::{IoBuf, DIRECT_IO_ALIGN};
use tokio::sync::oneshot;

use super::sys::{Completion, PushError, Ring};
use super::thread::{Driver, RingThread, Setup};
use super::UringOptions;
use crate::write_parts::{WriteBytes, WriteCounters};

/// Bytes of one IORING_OP_WRITE: a frame's write is cut into chunks of this size, all
/// submitted at once (up to the ring's depth), as the pwrite path's O_DIRECT copies go.
pub(crate) const WRITE_CHUNK: usize = 1 << 20;

/// A storage's ring thread for writes, as its storage and files see it.
pub(crate) struct UringWriter {
    thread: RingThread<Job>,
}

/// One call: a write of some bytes, or a sync.
struct Job {
    file: Arc<File>,
    kind: JobKind,
    reply: oneshot::Sender<io::Result<()>>,
}

enum JobKind {
    /// `data` at `offset`; with `direct`, copied into an aligned buffer first and padded to
    /// the alignment with zeros.
    Write { offset: u64, data: WriteBytes, direct: bool },
    /// fsync, or fdatasync with `data_only`.
    Sync { data_only: bool },
}

impl UringWriter {
    /// Sets up a ring on a new thread (`playsim-uring-w`), whose CPU time counts in
    /// `counters`; the error says why io_uring cannot be used here.
    pub fn start(options: &UringOptions, counters: Arc<WriteCounters>) -> Result<UringWriter, String> {
        let setup = Setup {
            name: "playsim-uring-w",
            has_ops: Ring::has_writes,
            lacks: "the kernel's io_uring lacks the operations playsim writes with (WRITE, FSYNC, \
                    POLL_ADD: Linux 5.6 or later has them)",
        };
        let thread = RingThread::start(options, setup, move |ring| Writer::new(ring, counters))?;
        Ok(UringWriter { thread })
    }

    /// The ring's submission queue entries, as the kernel sized it.
    pub fn entries(&self) -> u32 {
        self.thread.entries()
    }

    /// Writes all of `data` at `offset` of `file` (with `direct`, padded to the alignment
    /// with zeros, which the caller cuts off).
    pub async fn write(
        &self,
        file: Arc<File>,
        offset: u64,
        data: WriteBytes,
        direct: bool,
    ) -> io::Result<()> {
        self.call(file, JobKind::Write { offset, data, direct }).await
    }

    /// Makes the file's writes stable: fdatasync with `data_only`, else fsync.
    pub async fn sync(&self, file: Arc<File>, data_only: bool) -> io::Result<()> {
        self.call(file, JobKind::Sync { data_only }).await
    }

    async fn call(&self, file: Arc<File>, kind: JobKind) -> io::Result<()> {
        let (reply, answer) = oneshot::channel();
        self.thread.send(Job { file, kind, reply }).map_err(io::Error::other)?;
        answer.await.map_err(|_| io::Error::other("the io_uring thread stopped before the call completed"))?
    }

    /// Closes the writer and waits for its thread to end.
    #[cfg(test)]
    pub(crate) fn close_and_join(self) -> std::thread::Result<()> {
        self.thread.close_and_join()
    }
}

impl std::fmt::Debug for UringWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringWriter").field("entries", &self.entries()).finish_non_exhaustive()
    }
}

/// A call being carried out.
struct Call {
    /// The file offset of the call's first byte (0 for a sync).
    offset: u64,
    /// Bytes to write (0 for a sync; an O_DIRECT write's padded to the alignment).
    total: usize,
    /// How its operations get their memory.
    memory: CallMemory,
    /// fdatasync (`Some(true)`) or fsync (`Some(false)`) for a sync, `None` for a write.
    sync: Option<bool>,
    /// Bytes queued so far, from the front (a sync: 1 once queued).
    next: usize,
    /// Operations in the kernel, plus ones waiting to be pushed again.
    outstanding: usize,
    error: Option<io::Error>,
    reply: oneshot::Sender<io::Result<()>>,
}

/// Where a call's operations read from.
enum CallMemory {
    /// One target of the ring for all of them: a buffered write's shared bytes, or a sync's
    /// file. Released when the call is done.
    Shared(u64),
    /// An O_DIRECT write: each chunk is copied from `data` into an aligned buffer of its own,
    /// a target of the ring with `file`, released when its write is done.
    Chunks { data: WriteBytes, file: Arc<File> },
}

impl Call {
    /// True when nothing more of it is to be queued.
    fn all_queued(&self) -> bool {
        let end = if self.sync.is_some() { 1 } else { self.total };
        self.next >= end || self.error.is_some() || self.reply.is_closed()
    }
}

/// A write or sync in the kernel: `len` bytes at `pos` of its call, from the ring's target
/// `target`, whose first byte is the call's byte `base`.
#[derive(Clone, Copy, Debug)]
struct Op {
    call: u64,
    target: u64,
    base: usize,
    pos: usize,
    len: usize,
}

/// The thread's state: the ring, the calls being carried out and their operations.
struct Writer {
    ring: Ring,
    counters: Arc<WriteCounters>,
    /// Calls by their id.
    calls: HashMap<u64, Call>,
    next_call: u64,
    /// Calls with operations still to queue, oldest first.
    queue: VecDeque<u64>,
    /// Operations to push again (the rest of a short write, or one interrupted).
    retries: VecDeque<Op>,
    ops: HashMap<u64, Op>,
    max_in_flight: usize,
    /// Aligned chunk buffers for O_DIRECT copies, given back by finished writes (at most
    /// the ring's depth of them: as many as can be in flight).
    kept: Vec<IoBuf>,
}

impl Driver for Writer {
    type Request = Job;

    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn start(&mut self, job: Job) {
        let Job { file, kind, reply } = job;
        let (offset, total, memory, sync) = match kind {
            JobKind::Write { offset, data, direct: false } => {
                let total = data.len();
                (offset, total, CallMemory::Shared(self.ring.adopt_bytes(data, file)), None)
            }
            JobKind::Write { offset, data, direct: true } => {
                // Padded to the alignment: O_DIRECT writes whole blocks.
                let total = data.len().next_multiple_of(DIRECT_IO_ALIGN);
                (offset, total, CallMemory::Chunks { data, file }, None)
            }
            JobKind::Sync { data_only } => {
                (0, 0, CallMemory::Shared(self.ring.adopt_file(file)), Some(data_only))
            }
        };
        let call = Call { offset, total, memory, sync, next: 0, outstanding: 0, error: None, reply };
        let id = self.next_call;
        self.next_call += 1;
        self.calls.insert(id, call);
        self.queue.push_back(id);
    }

    fn fill(&mut self) {
        self.push_retries();
        self.push_new();
    }

    fn complete(&mut self, completion: Completion) {
        let Some(op) = self.ops.remove(&completion.op) else { return };
        let Some(call) = self.calls.get_mut(&op.call) else { return };
        let result = completion.result;
        let mut again = None;
        match usize::try_from(result) {
            Err(_) => {
                let errno = result.saturating_neg();
                if errno == libc::EINTR || errno == libc::EAGAIN {
                    again = Some(op);
                } else {
                    call.error.get_or_insert(io::Error::from_raw_os_error(errno));
                }
            }
            // A sync's result is 0; a write of 0 bytes would never finish (`write_all`'s
            // answer to it).
            Ok(0) if call.sync.is_none() => {
                call.error.get_or_insert(io::Error::from(io::ErrorKind::WriteZero));
            }
            Ok(n) if call.sync.is_none() && n < op.len => {
                again = Some(Op { pos: op.pos + n, len: op.len - n, ..op });
            }
            Ok(_) => {}
        }
        match again {
            Some(rest) if call.error.is_none() && !call.reply.is_closed() => self.retries.push_back(rest),
            _ => {
                call.outstanding -= 1;
                self.op_done(op);
                self.finish_if_done(op.call);
            }
        }
    }

    fn is_idle(&self) -> bool {
        self.calls.is_empty()
    }

    fn fail_all(&mut self, err: &io::Error) {
        for (_, call) in self.calls.drain() {
            let message = io::Error::new(err.kind(), format!("the io_uring ring failed: {err}"));
            let _ = call.reply.send(Err(message));
        }
        self.queue.clear();
        self.retries.clear();
    }

    fn cpu_ns(&self) -> &AtomicU64 {
        &self.counters.cpu_ns
    }
}

impl Writer {
    fn new(ring: Ring, counters: Arc<WriteCounters>) -> Writer {
        let max_in_flight = (ring.entries() as usize).saturating_sub(1).max(1);
        Writer {
            ring,
            counters,
            calls: HashMap::new(),
            next_call: 0,
            queue: VecDeque::new(),
            retries: VecDeque::new(),
            ops: HashMap::new(),
            max_in_flight,
            kept: Vec::new(),
        }
    }

    /// Bytes `pos..pos + len` of `data` in an aligned buffer (a kept one when there is one),
    /// padded with zeros to `padded` bytes: what an O_DIRECT write goes from. The copy runs
    /// on this thread, so its CPU time counts in the storage's.
    fn aligned_chunk(&mut self, data: &[u8], pos: usize, padded: usize) -> IoBuf {
        let mut buf = self.kept.pop().unwrap_or_default();
        buf.prepare(padded);
        let end = data.len().min(pos + padded);
        let copied = end.saturating_sub(pos);
        buf[..copied].copy_from_slice(&data[pos..end]);
        buf[copied..].fill(0);
        buf
    }

    /// Pushes the operations to push again, while the ring has room.
    fn push_retries(&mut self) {
        while self.ring.ops_in_flight() < self.max_in_flight {
            let Some(op) = self.retries.pop_front() else { break };
            let Some(call) = self.calls.get_mut(&op.call) else { continue };
            let pushed = match call.sync {
                Some(data_only) => self.ring.fsync(op.target, data_only),
                None => {
                    let at = op.pos - op.base;
                    self.ring.write(op.target, at..at + op.len, call.offset + op.pos as u64)
                }
            };
            match pushed {
                Ok(id) => {
                    self.ops.insert(id, op);
                }
                Err(PushError::Full) => {
                    self.retries.push_front(op);
                    return;
                }
                Err(PushError::Invalid(why)) => {
                    call.outstanding -= 1;
                    call.error.get_or_insert(io::Error::other(why));
                    self.op_done(op);
                    self.finish_if_done(op.call);
                }
            }
        }
    }

    /// Queues the oldest calls' operations, while the ring has room. An O_DIRECT chunk is
    /// submitted as soon as it is copied, so that the kernel starts on it while the next is
    /// copied.
    fn push_new(&mut self) {
        while self.ring.ops_in_flight() < self.max_in_flight {
            let Some(&id) = self.queue.front() else { break };
            let Some(call) = self.calls.get(&id) else {
                self.queue.pop_front();
                continue;
            };
            if call.all_queued() {
                self.queue.pop_front();
                self.finish_if_done(id);
                continue;
            }
            let (pos, len) = match call.sync {
                Some(_) => (0, 1),
                None => (call.next, WRITE_CHUNK.min(call.total - call.next)),
            };
            let (sync, offset) = (call.sync, call.offset + pos as u64);
            let (target, base, chunked) = match &call.memory {
                CallMemory::Shared(target) => (*target, 0, false),
                CallMemory::Chunks { data, file } => {
                    let (data, file) = (Arc::clone(data), Arc::clone(file));
                    let buf = self.aligned_chunk(&data, pos, len);
                    (self.ring.adopt(buf, file), pos, true)
                }
            };
            let pushed = match sync {
                Some(data_only) => self.ring.fsync(target, data_only),
                None => self.ring.write(target, pos - base..pos - base + len, offset),
            };
            match pushed {
                Ok(op) => {
                    self.ops.insert(op, Op { call: id, target, base, pos, len });
                    if let Some(call) = self.calls.get_mut(&id) {
                        call.next += len;
                        call.outstanding += 1;
                    }
                    if chunked {
                        // Failure is harmless: the thread's loop submits it anyway.
                        let _ = self.ring.submit();
                    }
                }
                Err(err) => {
                    if chunked {
                        self.keep(target);
                    }
                    match err {
                        PushError::Full => return,
                        PushError::Invalid(why) => {
                            if let Some(call) = self.calls.get_mut(&id) {
                                call.error.get_or_insert(io::Error::other(why));
                            }
                        }
                    }
                }
            }
        }
    }

    /// An operation is over: an O_DIRECT chunk's buffer goes back to the kept ones.
    fn op_done(&mut self, op: Op) {
        let chunked = self.calls.get(&op.call).is_some_and(|c| matches!(c.memory, CallMemory::Chunks { .. }));
        if chunked {
            self.keep(op.target);
        }
    }

    /// Takes back target `key`'s buffer (none is in flight) for the next O_DIRECT chunks.
    fn keep(&mut self, key: u64) {
        if let Some(buf) = self.ring.release(key).and_then(|m| m.into_buf()) {
            if self.kept.len() < self.max_in_flight {
                self.kept.push(buf);
            }
        }
    }

    /// Answers a call whose operations are all done, giving its memory back.
    fn finish_if_done(&mut self, id: u64) {
        let Some(call) = self.calls.get(&id) else { return };
        if call.outstanding > 0 || !call.all_queued() {
            return;
        }
        let Some(call) = self.calls.remove(&id) else { return };
        let released = match call.memory {
            // No operation of the call is in flight, so the ring gives the memory back.
            CallMemory::Shared(target) => self.ring.release(target).is_some(),
            CallMemory::Chunks { .. } => true,
        };
        let result = match (released, call.error) {
            (_, Some(err)) => Err(err),
            (true, None) => Ok(()),
            // Not reachable: the ring keeps the memory.
            (false, None) => Err(io::Error::other("the io_uring memory is still in use")),
        };
        let _ = call.reply.send(result);
    }
}
