//! The ring thread of a [`crate::write::LocalWriteStorage`] writing through io_uring
//! ([`UringWriter`]): each `write_at` cut into chunks, all in flight at once, short writes
//! finished, and syncs as IORING_OP_FSYNC (the `io-uring` feature).
//!
//! A write's bytes stay alive until its last completion: the ring holds a clone of the
//! shared [`WriteBytes`] (buffered), or the aligned buffer they were copied into (O_DIRECT),
//! and gives it back only when no write of it is in flight. A dropped `write_at` future only
//! drops its receiver: no more of its chunks are queued, and the ones in flight complete
//! into memory the ring still holds.

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
use crate::write::{WriteBytes, WriteCounters};

/// Bytes of one IORING_OP_WRITE: a frame's write is cut into chunks of this size, all
/// submitted at once (up to the ring's depth), as the pwrite path's O_DIRECT copies go.
pub(crate) const WRITE_CHUNK: usize = 1 << 20;

/// Aligned copy buffers kept for the next O_DIRECT writes: a few frames' worth, so that
/// each write does not fault in a new buffer's pages.
const KEPT_BUFFERS: usize = 4;

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
    /// The file offset of the memory's first byte (0 for a sync).
    offset: u64,
    /// Bytes to write (0 for a sync).
    total: usize,
    /// fdatasync (`Some(true)`) or fsync (`Some(false)`) for a sync, `None` for a write.
    sync: Option<bool>,
    /// Bytes queued so far, from the front (a sync: 1 once queued).
    next: usize,
    /// Operations in the kernel, plus ones waiting to be pushed again.
    outstanding: usize,
    error: Option<io::Error>,
    reply: oneshot::Sender<io::Result<()>>,
}

impl Call {
    /// True when nothing more of it is to be queued.
    fn all_queued(&self) -> bool {
        let end = if self.sync.is_some() { 1 } else { self.total };
        self.next >= end || self.error.is_some() || self.reply.is_closed()
    }
}

/// A write or sync in the kernel: `len` bytes at `pos` of its call's memory.
#[derive(Clone, Copy, Debug)]
struct Op {
    call: u64,
    pos: usize,
    len: usize,
}

/// The thread's state: the ring, the calls being carried out and their operations.
struct Writer {
    ring: Ring,
    counters: Arc<WriteCounters>,
    /// Calls by the ring's key of their memory.
    calls: HashMap<u64, Call>,
    /// Calls with operations still to queue, oldest first.
    queue: VecDeque<u64>,
    /// Operations to push again (the rest of a short write, or one interrupted).
    retries: VecDeque<Op>,
    ops: HashMap<u64, Op>,
    max_in_flight: usize,
    /// Aligned buffers for O_DIRECT copies, given back by finished writes.
    kept: Vec<IoBuf>,
}

impl Driver for Writer {
    type Request = Job;

    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn start(&mut self, job: Job) {
        let Job { file, kind, reply } = job;
        let (key, call) = match kind {
            JobKind::Write { offset, data, direct: false } => {
                let total = data.len();
                (self.ring.adopt_bytes(data, file), Call::new(offset, total, None, reply))
            }
            JobKind::Write { offset, data, direct: true } => {
                let buf = self.aligned_copy(&data);
                let total = buf.len();
                (self.ring.adopt(buf, file), Call::new(offset, total, None, reply))
            }
            JobKind::Sync { data_only } => {
                (self.ring.adopt_file(file), Call::new(0, 0, Some(data_only), reply))
            }
        };
        self.calls.insert(key, call);
        self.queue.push_back(key);
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
                again = Some(Op { call: op.call, pos: op.pos + n, len: op.len - n });
            }
            Ok(_) => {}
        }
        match again {
            Some(rest) if call.error.is_none() && !call.reply.is_closed() => self.retries.push_back(rest),
            _ => {
                call.outstanding -= 1;
                self.finish_if_done(op.call);
            }
        }
    }

    fn is_idle(&self) -> bool {
        self.calls.is_empty()
    }

    fn fail_all(&mut self, err: &io::Error) {
        for (_, call) in self.calls.drain() {
            let _ =
                call.reply.send(Err(io::Error::new(err.kind(), format!("the io_uring ring failed: {err}"))));
        }
        self.queue.clear();
        self.retries.clear();
    }

    fn cpu_ns(&self) -> &AtomicU64 {
        &self.counters.cpu_ns
    }
}

impl Call {
    fn new(offset: u64, total: usize, sync: Option<bool>, reply: oneshot::Sender<io::Result<()>>) -> Call {
        Call { offset, total, sync, next: 0, outstanding: 0, error: None, reply }
    }
}

impl Writer {
    fn new(ring: Ring, counters: Arc<WriteCounters>) -> Writer {
        let max_in_flight = (ring.entries() as usize).saturating_sub(1).max(1);
        Writer {
            ring,
            counters,
            calls: HashMap::new(),
            queue: VecDeque::new(),
            retries: VecDeque::new(),
            ops: HashMap::new(),
            max_in_flight,
            kept: Vec::new(),
        }
    }

    /// `data` in an aligned buffer (a kept one when one is large enough), padded with zeros
    /// to a multiple of the alignment: what O_DIRECT writes from. The copy runs on this
    /// thread, so its CPU time counts in the storage's.
    fn aligned_copy(&mut self, data: &[u8]) -> IoBuf {
        let aligned = data.len().next_multiple_of(DIRECT_IO_ALIGN);
        let fitting = self.kept.iter().position(|b| b.capacity() >= aligned);
        let mut buf = match fitting {
            Some(i) => self.kept.swap_remove(i),
            None => self.kept.pop().unwrap_or_default(),
        };
        buf.prepare(aligned);
        buf[..data.len()].copy_from_slice(data);
        buf[data.len()..].fill(0);
        buf
    }

    /// Pushes the operations to push again, while the ring has room.
    fn push_retries(&mut self) {
        while self.ring.ops_in_flight() < self.max_in_flight {
            let Some(op) = self.retries.pop_front() else { break };
            let Some(call) = self.calls.get_mut(&op.call) else { continue };
            let pushed = match call.sync {
                Some(data_only) => self.ring.fsync(op.call, data_only),
                None => self.ring.write(op.call, op.pos..op.pos + op.len, call.offset + op.pos as u64),
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
                    self.finish_if_done(op.call);
                }
            }
        }
    }

    /// Queues the oldest calls' operations, while the ring has room.
    fn push_new(&mut self) {
        while self.ring.ops_in_flight() < self.max_in_flight {
            let Some(&key) = self.queue.front() else { break };
            let Some(call) = self.calls.get_mut(&key) else {
                self.queue.pop_front();
                continue;
            };
            if call.all_queued() {
                self.queue.pop_front();
                self.finish_if_done(key);
                continue;
            }
            let (pos, len) = match call.sync {
                Some(_) => (0, 1),
                None => (call.next, WRITE_CHUNK.min(call.total - call.next)),
            };
            let pushed = match call.sync {
                Some(data_only) => self.ring.fsync(key, data_only),
                None => self.ring.write(key, pos..pos + len, call.offset + pos as u64),
            };
            match pushed {
                Ok(id) => {
                    self.ops.insert(id, Op { call: key, pos, len });
                    call.next += len;
                    call.outstanding += 1;
                }
                Err(PushError::Full) => return,
                Err(PushError::Invalid(why)) => {
                    call.error.get_or_insert(io::Error::other(why));
                }
            }
        }
    }

    /// Answers a call whose operations are all done, giving its memory back.
    fn finish_if_done(&mut self, key: u64) {
        let Some(call) = self.calls.get(&key) else { return };
        if call.outstanding > 0 || !call.all_queued() {
            return;
        }
        let Some(call) = self.calls.remove(&key) else { return };
        let result = match self.ring.release(key) {
            Some(memory) => {
                if let Some(buf) = memory.into_buf() {
                    if self.kept.len() < KEPT_BUFFERS {
                        self.kept.push(buf);
                    }
                }
                match call.error {
                    Some(err) => Err(err),
                    None => Ok(()),
                }
            }
            // Not reachable: no operation of the call is in flight. The ring keeps the memory.
            None => Err(io::Error::other("the io_uring memory is still in use")),
        };
        let _ = call.reply.send(result);
    }
}
