//! What the local readers share, pread on the blocking pool (`local`) and io_uring
//! (`uring`): which bytes a read asks the kernel for, what a read hands back, the storage's
//! counters, and the reading thread's CPU time. Both depend on this module, and neither on
//! the other's internals.

use std::io;
use std::sync::atomic::AtomicU64;

use playsim_core::{IoBuf, DIRECT_IO_ALIGN};
use rustix::time::ClockId;

/// Counters shared by a local storage and its open files (and its io_uring thread).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) n_reads: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) cpu_ns: AtomicU64,
}

/// Which bytes of the file one `read_at` asks the kernel for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadPlan {
    /// File offset of the first request.
    pub(crate) start: u64,
    /// Bytes requested in all, from `start` (a multiple of the alignment with O_DIRECT).
    pub(crate) total: usize,
    /// Bytes at the front of the requested range that the caller did not ask for
    /// (O_DIRECT rounds the offset down to the alignment).
    pub(crate) head: usize,
    /// Bytes the caller asked for, after `head`, bounded by the size at open.
    pub(crate) want: usize,
}

/// What the reading part of a read hands back: always the buffer.
pub(crate) struct ReadDone {
    pub(crate) buf: IoBuf,
    /// Bytes delivered, or the error and the offset of the failed request.
    pub(crate) result: Result<usize, (io::Error, u64)>,
    /// Requests made and CPU spent, when the reader did not count them itself.
    pub(crate) n_reads: u64,
    pub(crate) cpu_ns: u64,
}

/// Works out the requests for reading `len` bytes at `offset` of a file of
/// `size` bytes. Fails only when the aligned range does not fit in memory.
pub(crate) fn plan_read(size: u64, offset: u64, len: usize, direct: bool) -> Result<ReadPlan, String> {
    let available = size.saturating_sub(offset);
    // Bounded by `len`, so it fits in a usize.
    let want = usize::try_from(available.min(len as u64)).unwrap_or(len);
    if want == 0 || !direct {
        return Ok(ReadPlan { start: offset, total: want, head: 0, want });
    }
    let align = DIRECT_IO_ALIGN as u64;
    let start = offset - offset % align;
    // `offset + want <= size`, so the sum cannot overflow; rounding up can.
    let end = (offset + want as u64)
        .checked_next_multiple_of(align)
        .ok_or_else(|| "the aligned range passes the largest offset".to_string())?;
    let total = usize::try_from(end - start)
        .map_err(|_| format!("the aligned range of {} bytes does not fit in memory", end - start))?;
    Ok(ReadPlan { start, total, head: (offset - start) as usize, want })
}

/// The bytes the caller asked for, once the file's bytes from `plan.start` are in the
/// front `done` bytes of `space`: moved to the front when the plan read from an aligned
/// offset below the one asked for (O_DIRECT). Returns how many were delivered.
pub(crate) fn deliver(space: &mut [u8], plan: &ReadPlan, done: usize) -> usize {
    let delivered = done.saturating_sub(plan.head).min(plan.want);
    if plan.head > 0 && delivered > 0 {
        space.copy_within(plan.head..plan.head + delivered, 0);
    }
    delivered
}

/// CPU time consumed by the calling thread so far, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let now = rustix::time::clock_gettime(ClockId::ThreadCPUTime);
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_plans_are_aligned() {
        let plan = plan_read(10_000, 5_000, 1_000, true).expect("plan");
        assert_eq!(plan, ReadPlan { start: 4096, total: 4096, head: 904, want: 1_000 });
        let plan = plan_read(10_000, 0, 20_000, true).expect("plan");
        assert_eq!(plan, ReadPlan { start: 0, total: 12_288, head: 0, want: 10_000 });
        let plan = plan_read(u64::MAX, u64::MAX - 10, 5, true);
        assert!(plan.is_err());
    }
}
