//! The ring thread of a storage reading through io_uring ([`UringReader`]), and the ring's
//! worker: queueing a frame's blocks, reaping, registering buffers (the `io-uring` feature).

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use playsim_core::{IoBuf, DIRECT_IO_ALIGN};
use tokio::sync::oneshot;

use super::fixed::{mb, Choice, Registry, TABLE_SLOTS};
use super::sys::{Completion, Memory, PushError, Ring};
use super::thread::{Driver, RingThread, Setup};
use super::UringOptions;
use crate::read_plan::{deliver, Counters, ReadDone, ReadPlan};

/// The most bytes Linux moves in one read (`MAX_RW_COUNT`); a multiple of the alignment.
const MAX_READ_BYTES: usize = 0x7fff_f000;

/// A storage's ring thread, as its storage and files see it.
pub(crate) struct UringReader {
    thread: RingThread<Request>,
    /// The registered-buffer table's summary, kept up to date by the thread.
    fixed: Arc<Mutex<String>>,
}

/// One frame to read.
struct Request {
    buf: IoBuf,
    file: Arc<File>,
    plan: ReadPlan,
    block_size: usize,
    direct: bool,
    reply: oneshot::Sender<ReadDone>,
}

impl UringReader {
    /// Sets up a ring on a new thread; the error says why io_uring cannot be used here.
    pub fn start(options: &UringOptions, counters: Arc<Counters>) -> Result<UringReader, String> {
        let fixed = Arc::new(Mutex::new(String::new()));
        let thread_fixed = Arc::clone(&fixed);
        let worker_options = *options;
        let setup = Setup {
            name: "playsim-uring",
            has_ops: Ring::has_reads,
            lacks: "the kernel's io_uring lacks the read operations playsim uses (READ, READ_FIXED, \
                    POLL_ADD: Linux 5.6 or later has them)",
        };
        let thread = RingThread::start(options, setup, move |ring| {
            Worker::new(ring, &worker_options, counters, thread_fixed)
        })?;
        Ok(UringReader { thread, fixed })
    }

    /// The ring's submission queue entries, as the kernel sized it.
    pub fn entries(&self) -> u32 {
        self.thread.entries()
    }

    /// Whether the reads go into registered buffers: `yes: ...`, `partly: ...`, `no: ...`
    /// (with why, and what to change), or `off` when not asked for.
    pub fn registered_buffers(&self) -> String {
        self.fixed.lock().map(|s| s.clone()).unwrap_or_else(|_| "unknown".to_owned())
    }

    /// Reads the blocks of `plan` from `file` into `buf`, whose capacity must hold
    /// `plan.total`. The error says why the thread could not take or finish the read.
    pub async fn read(
        &self,
        buf: IoBuf,
        file: Arc<File>,
        plan: ReadPlan,
        block_size: usize,
        direct: bool,
    ) -> Result<ReadDone, String> {
        let (reply, answer) = oneshot::channel();
        self.thread.send(Request { buf, file, plan, block_size, direct, reply })?;
        answer.await.map_err(|_| "the io_uring thread stopped before the read completed".to_owned())
    }

    /// Closes the reader and waits for its thread to end, which it does once every read in
    /// flight has completed.
    #[cfg(test)]
    fn close_and_join(self) -> std::thread::Result<()> {
        self.thread.close_and_join()
    }
}

impl std::fmt::Debug for UringReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringReader").field("entries", &self.entries()).finish_non_exhaustive()
    }
}

/// Why the kernel refused to register a buffer, and how to let it.
fn registration_refused(err: &io::Error, bytes: usize) -> String {
    if err.raw_os_error() != Some(libc::ENOMEM) {
        return format!("registering a {} buffer failed ({err})", mb(bytes as u64));
    }
    let limit = rustix::process::getrlimit(rustix::process::Resource::Memlock).current;
    let limit = match limit {
        Some(bytes) => format!("{} (`ulimit -l` says {})", mb(bytes), bytes / 1024),
        None => "unlimited".to_owned(),
    };
    format!(
        "registering a {} buffer failed with ENOMEM: registered buffers are locked memory, and the \
         locked-memory limit (RLIMIT_MEMLOCK) is {limit}; raise it with `ulimit -l unlimited` (or \
         LimitMEMLOCK=infinity in a systemd unit, memlock in /etc/security/limits.conf), or give playsim \
         CAP_IPC_LOCK",
        mb(bytes as u64)
    )
}

/// A frame being read.
struct Frame {
    plan: ReadPlan,
    block_size: usize,
    direct: bool,
    /// The registered slot its buffer is read through, if any.
    slot: Option<u16>,
    /// Bytes of `plan.total` queued so far (from the front).
    next: usize,
    /// Reads in the kernel, plus reads waiting to be pushed again.
    outstanding: usize,
    /// Where the file was found to end, from `plan.start`.
    end: Option<usize>,
    /// The first read error, and the file offset of its request.
    error: Option<(io::Error, u64)>,
    reply: oneshot::Sender<ReadDone>,
}

impl Frame {
    /// True when no more of its blocks are to be queued.
    fn all_queued(&self) -> bool {
        self.next >= self.plan.total
            || self.end.is_some_and(|end| self.next >= end)
            || self.error.is_some()
            || self.reply.is_closed()
    }
}

/// A read in the kernel: `len` bytes at `pos` of its frame's plan.
#[derive(Clone, Copy, Debug)]
struct Op {
    frame: u64,
    pos: usize,
    len: usize,
}

/// The thread's state: the ring, the frames being read and their reads.
struct Worker {
    ring: Ring,
    counters: Arc<Counters>,
    registry: Registry,
    fixed_summary: Arc<Mutex<String>>,
    /// Frames by the ring's key of their buffer.
    frames: HashMap<u64, Frame>,
    /// Frames with blocks still to queue, oldest first.
    queue: VecDeque<u64>,
    /// Reads to push again (the rest of a short read, or one interrupted).
    retries: VecDeque<Op>,
    ops: HashMap<u64, Op>,
    max_in_flight: usize,
}

impl Driver for Worker {
    type Request = Request;

    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }

    fn start(&mut self, request: Request) {
        self.start_frame(request);
    }

    fn fill(&mut self) {
        self.queue_reads();
    }

    fn complete(&mut self, completion: Completion) {
        self.complete_read(completion);
    }

    fn is_idle(&self) -> bool {
        self.frames.is_empty()
    }

    fn fail_all(&mut self, err: &io::Error) {
        self.fail_frames(err);
    }

    fn cpu_ns(&self) -> &AtomicU64 {
        &self.counters.cpu_ns
    }
}

impl Worker {
    fn new(
        mut ring: Ring,
        options: &UringOptions,
        counters: Arc<Counters>,
        fixed_summary: Arc<Mutex<String>>,
    ) -> Worker {
        let registry = if !options.register_buffers {
            Registry::not_asked()
        } else {
            match ring.register_sparse(TABLE_SLOTS) {
                Ok(()) => Registry::new(TABLE_SLOTS, options.max_registered_bytes),
                Err(err) => Registry::disabled(format!(
                    "this kernel cannot make a sparse registered-buffer table ({err}; Linux 5.19 or later can)"
                )),
            }
        };
        let max_in_flight = (ring.entries() as usize).saturating_sub(1).max(1);
        let worker = Worker {
            ring,
            counters,
            registry,
            fixed_summary,
            frames: HashMap::new(),
            queue: VecDeque::new(),
            retries: VecDeque::new(),
            ops: HashMap::new(),
            max_in_flight,
        };
        worker.publish();
        worker
    }

    /// Takes a frame's buffer and file into the ring and queues its blocks.
    fn start_frame(&mut self, request: Request) {
        let Request { buf, file, plan, block_size, direct, reply } = request;
        let key = self.ring.adopt(buf, file);
        let slot = self.fixed_slot(key);
        self.frames.insert(
            key,
            Frame {
                plan,
                block_size: block_size.clamp(1, MAX_READ_BYTES),
                direct,
                slot,
                next: 0,
                outstanding: 0,
                end: None,
                error: None,
                reply,
            },
        );
        self.queue.push_back(key);
    }

    /// The registered slot to read buffer `key` through, registering it when it is new.
    fn fixed_slot(&mut self, key: u64) -> Option<u16> {
        let (id, bytes) = self.ring.buffer_of(key)?;
        let (slot, evict) = match self.registry.choose(id, bytes) {
            Choice::Use(slot) => return Some(slot),
            Choice::Plain => {
                self.publish();
                return None;
            }
            Choice::Register { slot, evict } => (slot, evict),
        };
        for old in evict {
            // A slot that cannot be emptied stays as it was; the new buffer goes elsewhere
            // next time.
            if self.ring.unregister(old).is_ok() {
                self.registry.evicted(old);
            }
        }
        let mut result = self.ring.register(slot, key);
        if result.as_ref().is_err_and(|err| err.raw_os_error() == Some(libc::ENOMEM)) {
            // Stale buffers may be holding the locked memory: free theirs and try once more.
            let stale = self.registry.stale_idle();
            if !stale.is_empty() {
                for old in stale {
                    if self.ring.unregister(old).is_ok() {
                        self.registry.evicted(old);
                    }
                }
                result = self.ring.register(slot, key);
            }
        }
        let slot = match result {
            Ok(()) => {
                self.registry.registered(slot, id, bytes);
                Some(slot)
            }
            Err(err) => {
                self.registry.refused(registration_refused(&err, bytes));
                None
            }
        };
        self.publish();
        slot
    }

    /// Queues reads while the ring has room: retries first, then the oldest frame's blocks.
    fn queue_reads(&mut self) {
        while self.ring.ops_in_flight() < self.max_in_flight {
            let Some(op) = self.retries.pop_front() else { break };
            let Some(frame) = self.frames.get_mut(&op.frame) else { continue };
            let offset = frame.plan.start + op.pos as u64;
            match self.ring.read(op.frame, op.pos..op.pos + op.len, offset, frame.slot) {
                Ok(id) => {
                    self.ops.insert(id, op);
                }
                Err(PushError::Full) => {
                    self.retries.push_front(op);
                    return;
                }
                Err(PushError::Invalid(why)) => {
                    frame.outstanding -= 1;
                    frame.error.get_or_insert((io::Error::other(why), offset));
                    self.finish_if_done(op.frame);
                }
            }
        }
        while self.ring.ops_in_flight() < self.max_in_flight {
            let Some(&key) = self.queue.front() else { break };
            let Some(frame) = self.frames.get_mut(&key) else {
                self.queue.pop_front();
                continue;
            };
            if frame.all_queued() {
                self.queue.pop_front();
                self.finish_if_done(key);
                continue;
            }
            let pos = frame.next;
            let len = frame.block_size.min(frame.plan.total - pos);
            let offset = frame.plan.start + pos as u64;
            match self.ring.read(key, pos..pos + len, offset, frame.slot) {
                Ok(id) => {
                    self.ops.insert(id, Op { frame: key, pos, len });
                    frame.next += len;
                    frame.outstanding += 1;
                }
                Err(PushError::Full) => return,
                Err(PushError::Invalid(why)) => {
                    frame.error.get_or_insert((io::Error::other(why), offset));
                }
            }
        }
    }

    /// Handles a read's completion.
    fn complete_read(&mut self, completion: Completion) {
        let Some(op) = self.ops.remove(&completion.op) else { return };
        let Some(frame) = self.frames.get_mut(&op.frame) else { return };
        let result = completion.result;
        if result >= 0 {
            self.counters.n_reads.fetch_add(1, Ordering::Relaxed);
        }
        let mut again = None;
        match usize::try_from(result) {
            Err(_) => {
                let errno = result.saturating_neg();
                if errno == libc::EINTR || errno == libc::EAGAIN {
                    again = Some(op);
                } else {
                    let offset = frame.plan.start + op.pos as u64;
                    frame.error.get_or_insert((io::Error::from_raw_os_error(errno), offset));
                }
            }
            Ok(0) => frame.end = Some(frame.end.map_or(op.pos, |end| end.min(op.pos))),
            Ok(n) if n < op.len => {
                let at = op.pos + n;
                // With O_DIRECT a read can only go on from an aligned offset; one that
                // stopped off the alignment stopped at the end of the file.
                if !frame.direct || at % DIRECT_IO_ALIGN == 0 {
                    again = Some(Op { frame: op.frame, pos: at, len: op.len - n });
                } else {
                    frame.end = Some(frame.end.map_or(at, |end| end.min(at)));
                }
            }
            Ok(_) => {}
        }
        match again {
            Some(rest) if frame.error.is_none() && !frame.reply.is_closed() => self.retries.push_back(rest),
            _ => {
                frame.outstanding -= 1;
                self.finish_if_done(op.frame);
            }
        }
    }

    /// Answers a frame whose reads are all done, giving its buffer back.
    fn finish_if_done(&mut self, key: u64) {
        let Some(frame) = self.frames.get(&key) else { return };
        if frame.outstanding > 0 || !frame.all_queued() {
            return;
        }
        let Some(frame) = self.frames.remove(&key) else { return };
        if let Some(slot) = frame.slot {
            self.registry.done(slot);
        }
        let Some(mut buf) = self.ring.release(key).and_then(Memory::into_buf) else {
            // Not reachable: no read of the frame is in flight. Keep the buffer with the ring.
            let _ = frame.reply.send(ReadDone {
                buf: IoBuf::default(),
                result: Err((io::Error::other("the io_uring buffer is still in use"), frame.plan.start)),
                n_reads: 0,
                cpu_ns: 0,
            });
            return;
        };
        if frame.reply.is_closed() {
            // The read future was dropped: the kernel is done with the buffer, free it.
            return;
        }
        let result = match frame.error {
            Some(error) => {
                buf.truncate(0);
                Err(error)
            }
            None => {
                let end = frame.end.unwrap_or(frame.plan.total).min(frame.plan.total);
                let delivered = deliver(buf.spare_mut(), &frame.plan, end);
                buf.truncate(delivered);
                Ok(delivered)
            }
        };
        let _ = frame.reply.send(ReadDone { buf, result, n_reads: 0, cpu_ns: 0 });
    }

    /// The ring failed: every frame fails (its buffer stays with the ring, which waits for
    /// the kernel before freeing it).
    fn fail_frames(&mut self, err: &io::Error) {
        for (_, frame) in self.frames.drain() {
            let message = io::Error::new(err.kind(), format!("the io_uring ring failed: {err}"));
            let _ = frame.reply.send(ReadDone {
                buf: IoBuf::default(),
                result: Err((message, frame.plan.start)),
                n_reads: 0,
                cpu_ns: 0,
            });
        }
        self.queue.clear();
        self.retries.clear();
    }

    /// Shares the registered-buffer table's summary with the storage.
    fn publish(&self) {
        if let Ok(mut summary) = self.fixed_summary.lock() {
            *summary = self.registry.summary();
        }
    }
}
