//! The io_uring ring and every `unsafe` call of this crate: pushing reads, writes, syncs
//! and the wake-up poll, and updating the registered-buffer table.
//!
//! The ring owns what the kernel reads or writes: a frame's buffer (or a write's shared
//! bytes) and its file are handed to [`Ring::adopt`] ([`Ring::adopt_bytes`],
//! [`Ring::adopt_file`]) and come back from [`Ring::release`] only when no operation of
//! theirs is in flight. An operation can only name a range inside adopted memory, a read
//! only memory the ring owns alone (an [`IoBuf`], never shared bytes), and a fixed read only
//! a table slot registered for that very buffer (same allocation identity, address and
//! length). Dropping the ring waits for every operation in flight first; if it cannot wait,
//! it leaks the memory rather than free what the kernel may still use. So nothing outside
//! this module can make the kernel read or write memory Rust has freed or handed out again.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, types, IoUring, Probe};
use playsim_core::IoBuf;

/// The `user_data` of the wake-up poll's completion; operations get ids from 1.
pub(super) const WAKE: u64 = 0;

/// The largest buffer the kernel registers (`SZ_1G` in io_uring/rsrc.c).
pub(super) const MAX_FIXED_BYTES: usize = 1 << 30;

/// A ring, the memory and files its operations use, and its registered-buffer table.
pub(super) struct Ring {
    uring: IoUring,
    /// The eventfd the wake-up poll waits on; held so it outlives the poll.
    wake: Arc<OwnedFd>,
    wake_armed: bool,
    targets: HashMap<u64, Target>,
    /// Operations in flight: id → the target it uses.
    ops: HashMap<u64, u64>,
    next_id: u64,
    /// What each slot of the registered-buffer table holds.
    fixed: Vec<Option<Fixed>>,
}

/// Memory and a file owned by the ring while operations on them may be in flight.
struct Target {
    memory: Memory,
    /// Start of the memory (an [`IoBuf`]'s aligned window), taken once at adoption so that
    /// no reference to it is made while the kernel writes into it.
    base: *mut u8,
    capacity: usize,
    file: Arc<File>,
    in_flight: usize,
}

/// What a target's operations read or write.
pub(super) enum Memory {
    /// A buffer the ring alone holds: reads write into it, writes read from it.
    Buf(IoBuf),
    /// Bytes shared with others (a write's [`crate::write_parts::WriteBytes`]): only read from.
    /// Held, never looked at: the clone keeps the bytes alive while the kernel reads them.
    Bytes(#[allow(dead_code)] Arc<[u8]>),
    /// No memory: a sync of the file.
    None,
}

impl Memory {
    /// The buffer, for memory that is one.
    pub fn into_buf(self) -> Option<IoBuf> {
        match self {
            Memory::Buf(buf) => Some(buf),
            Memory::Bytes(_) | Memory::None => None,
        }
    }
}

/// A registered buffer: the allocation it belongs to, and the memory registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fixed {
    id: u64,
    addr: usize,
    len: usize,
}

/// One completion: an operation's id (or [`WAKE`]) and the kernel's result (bytes, or -errno).
#[derive(Clone, Copy, Debug)]
pub(super) struct Completion {
    pub op: u64,
    pub result: i32,
}

/// Why an operation was not queued.
#[derive(Debug)]
pub(super) enum PushError {
    /// The submission queue is full: submit, then push again.
    Full,
    /// The operation does not fit its memory, or names a slot not registered for it.
    Invalid(&'static str),
}

impl Ring {
    /// A ring of `entries` (rounded up to a power of two by the kernel) whose wake-up poll
    /// waits on `wake`. It must be used from the thread that made it: with the setup flags
    /// the kernel allows (single issuer, deferred task work) only that thread may enter it.
    pub fn new(entries: u32, wake: Arc<OwnedFd>) -> io::Result<Ring> {
        // The newest flags first; older kernels answer EINVAL to flags they do not know,
        // and any other error (EPERM, ENOSYS, ENOMEM) is the answer for every attempt.
        let with_flags: [&dyn Fn() -> io::Result<IoUring>; 2] = [
            &|| {
                IoUring::builder()
                    .setup_single_issuer()
                    .setup_defer_taskrun()
                    .setup_coop_taskrun()
                    .build(entries)
            },
            &|| IoUring::builder().setup_coop_taskrun().build(entries),
        ];
        let mut built = None;
        for attempt in with_flags {
            match attempt() {
                Ok(uring) => {
                    built = Some(uring);
                    break;
                }
                Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {}
                Err(err) => return Err(err),
            }
        }
        let uring = match built {
            Some(uring) => uring,
            None => IoUring::new(entries)?,
        };
        Ok(Ring {
            uring,
            wake,
            wake_armed: false,
            targets: HashMap::new(),
            ops: HashMap::new(),
            next_id: WAKE + 1,
            fixed: Vec::new(),
        })
    }

    /// Submission queue entries, as the kernel sized the ring.
    pub fn entries(&self) -> u32 {
        self.uring.params().sq_entries()
    }

    /// Whether the kernel has the operations the reader uses (plain, fixed and poll).
    pub fn has_reads(&self) -> io::Result<bool> {
        self.supports(&[opcode::Read::CODE, opcode::ReadFixed::CODE, opcode::PollAdd::CODE])
    }

    /// Whether the kernel has the operations the writer uses (write, fsync and poll).
    pub fn has_writes(&self) -> io::Result<bool> {
        self.supports(&[opcode::Write::CODE, opcode::Fsync::CODE, opcode::PollAdd::CODE])
    }

    fn supports(&self, codes: &[u8]) -> io::Result<bool> {
        let mut probe = Probe::new();
        self.uring.submitter().register_probe(&mut probe)?;
        Ok(codes.iter().all(|&code| probe.is_supported(code)))
    }

    /// Takes `buf` and `file` for reads (or writes from the buffer); they come back from
    /// [`Ring::release`].
    pub fn adopt(&mut self, mut buf: IoBuf, file: Arc<File>) -> u64 {
        let window = buf.spare_mut();
        let (base, capacity) = (window.as_mut_ptr(), window.len());
        self.insert(Target { memory: Memory::Buf(buf), base, capacity, file, in_flight: 0 })
    }

    /// Takes shared `bytes` and `file` for writes from the bytes.
    pub fn adopt_bytes(&mut self, bytes: Arc<[u8]>, file: Arc<File>) -> u64 {
        // The pointer is only ever read through: `read` refuses shared bytes.
        let (base, capacity) = (bytes.as_ptr().cast_mut(), bytes.len());
        self.insert(Target { memory: Memory::Bytes(bytes), base, capacity, file, in_flight: 0 })
    }

    /// Takes `file` for syncs.
    pub fn adopt_file(&mut self, file: Arc<File>) -> u64 {
        self.insert(Target {
            memory: Memory::None,
            base: std::ptr::null_mut(),
            capacity: 0,
            file,
            in_flight: 0,
        })
    }

    fn insert(&mut self, target: Target) -> u64 {
        let key = self.take_id();
        self.targets.insert(key, target);
        key
    }

    /// The identity and capacity of an adopted buffer.
    pub fn buffer_of(&self, key: u64) -> Option<(u64, usize)> {
        match self.targets.get(&key) {
            Some(Target { memory: Memory::Buf(buf), capacity, .. }) => Some((buf.id(), *capacity)),
            _ => None,
        }
    }

    /// Gives back adopted memory once no operation on it is in flight (its file is dropped);
    /// `None` while operations are in flight or for an unknown key.
    pub fn release(&mut self, key: u64) -> Option<Memory> {
        if self.targets.get(&key)?.in_flight > 0 {
            return None;
        }
        self.targets.remove(&key).map(|t| t.memory)
    }

    /// Operations in flight (not counting the wake-up poll).
    pub fn ops_in_flight(&self) -> usize {
        self.ops.len()
    }

    /// Queues a read of the target's file at `offset` into `range` of its buffer, through
    /// the registered `slot` when given. Returns the read's id, which its completion carries.
    pub fn read(
        &mut self,
        key: u64,
        range: Range<usize>,
        offset: u64,
        slot: Option<u16>,
    ) -> Result<u64, PushError> {
        let target = self.targets.get(&key).ok_or(PushError::Invalid("the buffer is not the ring's"))?;
        let Memory::Buf(buf) = &target.memory else {
            return Err(PushError::Invalid("a read needs a buffer the ring alone holds"));
        };
        if range.start >= range.end || range.end > target.capacity {
            return Err(PushError::Invalid("the read does not fit its buffer"));
        }
        let len = u32::try_from(range.len()).map_err(|_| PushError::Invalid("the read is over 4 GiB"))?;
        // Inside the window (checked above), so the pointer stays in the allocation.
        let ptr = target.base.wrapping_add(range.start);
        let fd = types::Fd(target.file.as_raw_fd());
        let id = self.next_id;
        let entry = match slot {
            None => opcode::Read::new(fd, ptr, len).offset(offset).build(),
            Some(slot) => {
                let registered = Fixed { id: buf.id(), addr: target.base as usize, len: target.capacity };
                if self.fixed.get(usize::from(slot)).copied().flatten() != Some(registered) {
                    return Err(PushError::Invalid("the slot is not registered for this buffer"));
                }
                opcode::ReadFixed::new(fd, ptr, len, slot).offset(offset).build()
            }
        }
        .user_data(id);
        // SAFETY: the read writes at most `len` bytes at `ptr`, inside the window of the
        // buffer the ring owns (checked above), and reads from the file the ring owns. The
        // ring keeps both until the read's completion is reaped (`release` refuses while
        // `in_flight > 0`, and `Drop` waits for every read), so the memory and the fd
        // outlive the operation. A fixed read names a slot registered for this very
        // allocation (identity, address and length checked above), so the pages the kernel
        // pinned for the slot are this buffer's.
        unsafe { self.uring.submission().push(&entry) }.map_err(|_| PushError::Full)?;
        Ok(self.pushed(id, key))
    }

    /// Queues a write of `range` of the target's memory (a buffer or shared bytes) to its
    /// file at `offset`. Returns the write's id, which its completion carries.
    pub fn write(&mut self, key: u64, range: Range<usize>, offset: u64) -> Result<u64, PushError> {
        let target = self.targets.get(&key).ok_or(PushError::Invalid("the memory is not the ring's"))?;
        if matches!(target.memory, Memory::None) || range.start >= range.end || range.end > target.capacity {
            return Err(PushError::Invalid("the write does not fit its memory"));
        }
        let len = u32::try_from(range.len()).map_err(|_| PushError::Invalid("the write is over 4 GiB"))?;
        // Inside the memory (checked above), so the pointer stays in the allocation.
        let ptr = target.base.wrapping_add(range.start).cast_const();
        let fd = types::Fd(target.file.as_raw_fd());
        let id = self.next_id;
        let entry = opcode::Write::new(fd, ptr, len).offset(offset).build().user_data(id);
        // SAFETY: the write reads at most `len` bytes at `ptr`, inside memory the ring holds
        // (a buffer, or a clone of the shared bytes, checked above), and writes to the file
        // the ring holds. The ring keeps both until the write's completion is reaped
        // (`release` refuses while `in_flight > 0`, and `Drop` waits for every operation), so
        // the memory and the fd outlive the operation. Shared bytes are never written
        // through (no `&mut` to them exists while the `Arc` is shared), so the kernel reads
        // what the caller gave.
        unsafe { self.uring.submission().push(&entry) }.map_err(|_| PushError::Full)?;
        Ok(self.pushed(id, key))
    }

    /// Queues an fsync of the target's file (`fdatasync` with `data_only`). Returns the
    /// sync's id, which its completion carries.
    pub fn fsync(&mut self, key: u64, data_only: bool) -> Result<u64, PushError> {
        let target = self.targets.get(&key).ok_or(PushError::Invalid("the file is not the ring's"))?;
        let flags = if data_only { types::FsyncFlags::DATASYNC } else { types::FsyncFlags::empty() };
        let id = self.next_id;
        let entry = opcode::Fsync::new(types::Fd(target.file.as_raw_fd())).flags(flags).build().user_data(id);
        // SAFETY: a sync has no memory; the file it names is held by the ring until the
        // sync's completion is reaped (`release` refuses while `in_flight > 0`).
        unsafe { self.uring.submission().push(&entry) }.map_err(|_| PushError::Full)?;
        Ok(self.pushed(id, key))
    }

    /// Records the operation `id` on target `key` as in flight.
    fn pushed(&mut self, id: u64, key: u64) -> u64 {
        self.next_id += 1;
        self.ops.insert(id, key);
        if let Some(target) = self.targets.get_mut(&key) {
            target.in_flight += 1;
        }
        id
    }

    /// Queues the wake-up poll on the eventfd unless it is already waiting.
    pub fn arm_wake(&mut self) -> Result<(), PushError> {
        if self.wake_armed {
            return Ok(());
        }
        let entry = opcode::PollAdd::new(types::Fd(self.wake.as_raw_fd()), POLLIN).build().user_data(WAKE);
        // SAFETY: a poll has no buffer; the eventfd it names is held by `self.wake` for as
        // long as the ring exists, and the kernel takes its own reference to the file.
        unsafe { self.uring.submission().push(&entry) }.map_err(|_| PushError::Full)?;
        self.wake_armed = true;
        Ok(())
    }

    /// Submits what is queued and waits for at least `want` completions.
    pub fn submit_and_wait(&mut self, want: usize) -> io::Result<usize> {
        self.uring.submit_and_wait(want)
    }

    /// Submits what is queued without waiting.
    pub fn submit(&mut self) -> io::Result<usize> {
        self.uring.submit()
    }

    /// Moves the completions that arrived into `out`, ending the operations they complete.
    pub fn completions(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.uring.completion() {
            let op = cqe.user_data();
            if op == WAKE {
                self.wake_armed = false;
            } else if let Some(key) = self.ops.remove(&op) {
                if let Some(target) = self.targets.get_mut(&key) {
                    target.in_flight -= 1;
                }
            }
            out.push(Completion { op, result: cqe.result() });
        }
    }

    /// Makes a table of `slots` empty registered-buffer slots (Linux 5.19 or later).
    pub fn register_sparse(&mut self, slots: u16) -> io::Result<()> {
        self.uring.submitter().register_buffers_sparse(u32::from(slots))?;
        self.fixed = vec![None; usize::from(slots)];
        Ok(())
    }

    /// Registers the adopted buffer `key` in `slot` (replacing what was there). This pins
    /// its pages, which count against RLIMIT_MEMLOCK without CAP_IPC_LOCK (ENOMEM past it).
    pub fn register(&mut self, slot: u16, key: u64) -> io::Result<()> {
        let target =
            self.targets.get(&key).ok_or_else(|| io::Error::other("the buffer is not the ring's"))?;
        let Memory::Buf(buf) = &target.memory else {
            return Err(io::Error::other("only a buffer the ring alone holds is registered"));
        };
        let index = usize::from(slot);
        if index >= self.fixed.len() || target.capacity > MAX_FIXED_BYTES {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let iovec = libc::iovec { iov_base: target.base.cast(), iov_len: target.capacity };
        // SAFETY: the iovec describes the window of a live buffer the ring owns. The kernel
        // pins its pages and keeps its own references to them until the slot is replaced or
        // the ring closes, so memory freed by Rust later is never written through the slot:
        // reads name a slot only for the allocation registered in it (checked in `read`).
        unsafe { self.uring.submitter().register_buffers_update(u32::from(slot), &[iovec], None) }?;
        self.fixed[index] = Some(Fixed { id: buf.id(), addr: target.base as usize, len: target.capacity });
        Ok(())
    }

    /// Empties `slot`, unpinning the pages registered there (once reads using it complete).
    pub fn unregister(&mut self, slot: u16) -> io::Result<()> {
        let index = usize::from(slot);
        if index >= self.fixed.len() {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let empty = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        // SAFETY: a null, empty iovec registers no memory: it turns the slot back into an
        // empty one. Reads already in flight through the slot keep the old pages pinned in
        // the kernel until they complete.
        unsafe { self.uring.submitter().register_buffers_update(u32::from(slot), &[empty], None) }?;
        self.fixed[index] = None;
        Ok(())
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }
}

/// `POLLIN`, as `poll(2)` defines it.
const POLLIN: u32 = 0x001;

impl Drop for Ring {
    /// Waits for every operation in flight, so that the memory and files dropped after this
    /// are no longer the kernel's. If the ring cannot be waited on, the memory is leaked.
    fn drop(&mut self) {
        let mut done = Vec::new();
        while self.ops_in_flight() > 0 {
            match self.submit_and_wait(1) {
                Ok(_) => {}
                Err(err) if matches!(err.raw_os_error(), Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)) => {}
                Err(_) => {
                    for (_, target) in self.targets.drain() {
                        if target.in_flight > 0 {
                            std::mem::forget(target.memory);
                        }
                    }
                    return;
                }
            }
            done.clear();
            self.completions(&mut done);
        }
    }
}
