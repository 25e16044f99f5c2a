//! Aligned I/O buffers and the object pool that recycles them.
//!
//! O_DIRECT needs buffers aligned to the device's logical block size. The
//! alignment is obtained without `unsafe`: an [`IoBuf`] over-allocates by one
//! alignment unit and works in the aligned window inside its allocation.
//!
//! Every allocation of an [`IoBuf`] gets an identity of its own ([`IoBuf::id`]), so that a
//! transport that registers buffers with the kernel (io_uring's fixed buffers) can tell a
//! buffer it registered from a new one that happens to sit at the same address.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Alignment of [`IoBuf`] data, enough for O_DIRECT on any Linux block device.
pub const DIRECT_IO_ALIGN: usize = 4096;

/// The identity of the next allocation; 0 is left for the empty buffer.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A byte buffer whose data starts on a [`DIRECT_IO_ALIGN`] boundary and whose
/// capacity is a multiple of it.
#[derive(Default)]
pub struct IoBuf {
    raw: Vec<u8>,
    start: usize,
    capacity: usize,
    len: usize,
    /// The identity of `raw`'s allocation: 0 for none, else unique in the process.
    id: u64,
}

impl IoBuf {
    /// A buffer able to hold at least `capacity` bytes, rounded up to the alignment.
    pub fn with_capacity(capacity: usize) -> IoBuf {
        let capacity = capacity.div_ceil(DIRECT_IO_ALIGN).max(1) * DIRECT_IO_ALIGN;
        let raw = vec![0u8; capacity + DIRECT_IO_ALIGN];
        let start = raw.as_ptr().align_offset(DIRECT_IO_ALIGN);
        // Relaxed: the counter only has to hand out each value once.
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        IoBuf { raw, start, capacity, len: 0, id }
    }

    /// The identity of this buffer's memory: unique among all the allocations of the
    /// process, and changed whenever the buffer reallocates ([`IoBuf::prepare`] growing
    /// it). A buffer freed and a new one allocated at the same address have different
    /// identities. 0 for a buffer that holds no memory ([`IoBuf::default`]).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bytes the buffer can hold without reallocating.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of valid data.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no data is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes room for `len` bytes (reallocating only if the capacity is short)
    /// and sets the length to `len`. Previous contents are not kept when it grows.
    ///
    /// A buffer that has to grow gets [`IoBuf::grown_capacity`]`(len)`, a little more than
    /// `len`, so that a pooled buffer fits the next frames of a sequence whose frames differ
    /// slightly in size, instead of being replaced (and its pages faulted in anew) by
    /// almost every frame that is a few bytes larger than the last.
    pub fn prepare(&mut self, len: usize) {
        if len > self.capacity {
            *self = IoBuf::with_capacity(IoBuf::grown_capacity(len));
        }
        self.len = len;
    }

    /// Makes room for `len` bytes as [`IoBuf::prepare`] does, without changing the length,
    /// and faults in every page of a new allocation now: the first read into a fresh buffer
    /// otherwise pays for its page faults (8,600 for a 4K DPX frame, 30 ms on this project's
    /// VMs) inside the read, and a stage time that includes them says nothing of the next
    /// frames, whose buffers are recycled. A buffer large enough already is left alone.
    pub fn prefault(&mut self, len: usize) {
        if len <= self.capacity {
            return;
        }
        let kept = self.len;
        self.prepare(len);
        self.len = kept.min(self.capacity);
        touch_pages(&mut self.raw);
    }

    /// The capacity [`IoBuf::prepare`] allocates for `len` bytes when it has to grow,
    /// rounded up to [`DIRECT_IO_ALIGN`]: `len` and a sixteenth more from 1 MiB up, the next
    /// power of two below that.
    ///
    /// Compressed frames of one sequence differ in size: the 24 frames of 4K PIZ that
    /// `playsim generate` writes by 0.3%, larger and larger, which a sixteenth covers for
    /// the pool's lifetime at a sixteenth more memory. Long-GOP video packets differ far
    /// more (H.264 UHD: 88 kB to 946 kB within a GOP); a power of two makes a buffer grow a
    /// few times at most, for at most 1 MiB a buffer.
    pub fn grown_capacity(len: usize) -> usize {
        const SMALL: usize = 1 << 20;
        let wanted = if len < SMALL { len.next_power_of_two() } else { len.saturating_add(len / 16) };
        // Saturates at the largest aligned size: no frame comes near it, since reads are
        // bounded by the engine's frame limit before they prepare a buffer.
        wanted
            .max(1)
            .checked_next_multiple_of(DIRECT_IO_ALIGN)
            .unwrap_or(usize::MAX - usize::MAX % DIRECT_IO_ALIGN)
    }

    /// Shortens the data to `len` bytes; a larger `len` is ignored.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The whole aligned capacity, for reads that fill it.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.capacity]
    }
}

impl Deref for IoBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

impl DerefMut for IoBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

impl fmt::Debug for IoBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoBuf").field("len", &self.len).field("capacity", &self.capacity).finish()
    }
}

/// Writes one byte in every page of `bytes`, so that the kernel maps them all now.
///
/// Zeroed allocations come from the kernel untouched, and writing zeros is what they hold
/// already, so the write goes through [`std::hint::black_box`] to be kept.
pub(crate) fn touch_pages(bytes: &mut [u8]) {
    for page in bytes.chunks_mut(DIRECT_IO_ALIGN) {
        *std::hint::black_box(&mut page[0]) = 0;
    }
}

/// A pool of reusable values (I/O buffers, decoded frames, output buffers).
///
/// [`BufPool::get`] hands out a [`PooledBuf`] that goes back to the pool when
/// dropped, so a steady-state pipeline allocates nothing per frame.
pub struct BufPool<T> {
    inner: Arc<PoolInner<T>>,
}

struct PoolInner<T> {
    free: Mutex<Vec<T>>,
    created: std::sync::atomic::AtomicUsize,
}

impl<T: Default + Send> BufPool<T> {
    /// An empty pool; values are created on demand and then recycled.
    pub fn new() -> BufPool<T> {
        BufPool { inner: Arc::new(PoolInner { free: Mutex::new(Vec::new()), created: Default::default() }) }
    }

    /// A free value, or a new default one when none is free.
    pub fn get(&self) -> PooledBuf<T> {
        let recycled = self.inner.free.lock().map(|mut free| free.pop()).unwrap_or(None);
        let value = recycled.unwrap_or_else(|| {
            self.inner.created.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            T::default()
        });
        PooledBuf { value, pool: Arc::clone(&self.inner) }
    }

    /// How many values this pool has created in all (its high-water mark).
    pub fn created(&self) -> usize {
        self.inner.created.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<T: Default + Send> Default for BufPool<T> {
    fn default() -> Self {
        BufPool::new()
    }
}

impl<T> Clone for BufPool<T> {
    fn clone(&self) -> Self {
        BufPool { inner: Arc::clone(&self.inner) }
    }
}

/// A value on loan from a [`BufPool`]; it returns there when dropped.
pub struct PooledBuf<T: Default> {
    value: T,
    pool: Arc<PoolInner<T>>,
}

impl<T: Default> Deref for PooledBuf<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Default> DerefMut for PooledBuf<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Default> Drop for PooledBuf<T> {
    fn drop(&mut self) {
        let value = std::mem::take(&mut self.value);
        if let Ok(mut free) = self.pool.free.lock() {
            free.push(value);
        }
    }
}

impl<T: Default + fmt::Debug> fmt::Debug for PooledBuf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_buf_is_aligned_and_grows() {
        let mut b = IoBuf::with_capacity(100);
        assert_eq!(b.capacity(), DIRECT_IO_ALIGN);
        assert_eq!(b.spare_mut().as_ptr() as usize % DIRECT_IO_ALIGN, 0);
        b.prepare(10_000);
        assert!(b.capacity() >= 10_000);
        assert_eq!(b.len(), 10_000);
        assert_eq!(b.as_ptr() as usize % DIRECT_IO_ALIGN, 0);
        b.truncate(5);
        assert_eq!(b.len(), 5);
    }

    #[test]
    fn a_grown_buffer_has_room_for_slightly_larger_frames() {
        let grown = IoBuf::grown_capacity;
        assert_eq!(grown(0), DIRECT_IO_ALIGN);
        assert_eq!(grown(100), DIRECT_IO_ALIGN);
        assert_eq!(grown(4097), 2 * DIRECT_IO_ALIGN);
        // Below 1 MiB, the next power of two; from there, a sixteenth more, page-aligned.
        assert_eq!(grown(150_000), 256 << 10);
        assert_eq!(grown((1 << 20) - 1), 1 << 20);
        assert_eq!(grown(1 << 20), (1 << 20) + (64 << 10));
        assert_eq!(grown(40_391_662), (40_391_662 + 40_391_662 / 16usize).next_multiple_of(4096));
        assert_eq!(grown(usize::MAX) % DIRECT_IO_ALIGN, 0, "saturates, aligned");
        // Never less than asked for, and never less for more.
        let mut last = 0;
        for len in (0..(3 << 20)).step_by(4093) {
            assert!(grown(len) >= len && grown(len) >= last, "{len}");
            last = grown(len);
        }
        // The 4K DCI PIZ frames of one sequence, 40,391,662 to 40,474,871 bytes: the buffer
        // that grew for the first holds every later one without reallocating.
        let mut b = IoBuf::default();
        b.prepare(40_391_662);
        let id = b.id();
        for len in [40_380_488, 40_474_871, 40_427_833] {
            b.prepare(len);
            assert_eq!((b.id(), b.len()), (id, len));
        }
        // An explicit capacity is kept exact.
        assert_eq!(IoBuf::with_capacity(5 * 4096).capacity(), 5 * 4096);
    }

    /// Minor page faults this thread has taken (Linux: field 10 of `/proc/thread-self/stat`).
    fn thread_minor_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("Linux's /proc");
        // The command name (field 2) may hold spaces; the fields after it are plain numbers.
        let after_name = &stat[stat.rfind(')').expect("a stat line") + 2..];
        after_name.split(' ').nth(7).and_then(|f| f.parse().ok()).expect("minflt")
    }

    #[test]
    fn prefault_grows_like_prepare_and_takes_the_first_faults_itself() {
        let len = 64 << 20;
        let mut b = IoBuf::with_capacity(4096);
        b.prepare(100);
        b.prefault(len);
        assert_eq!(b.capacity(), IoBuf::grown_capacity(len));
        assert_eq!(b.len(), 100, "the length is the data's, not the room's");
        // The read that follows finds its pages mapped: a handful of faults, not one a page.
        let before = thread_minor_faults();
        b.prepare(len);
        b.fill(7);
        let faults = thread_minor_faults() - before;
        assert!(faults < (len / DIRECT_IO_ALIGN / 8) as u64, "{faults} faults writing a prefaulted buffer");
        // Large enough already: the same memory.
        let id = b.id();
        b.prefault(len / 2);
        assert_eq!((b.id(), b.len()), (id, len));
    }

    #[test]
    fn every_allocation_has_its_own_id() {
        assert_eq!(IoBuf::default().id(), 0);
        let mut b = IoBuf::with_capacity(4096);
        let first = b.id();
        assert_ne!(first, 0);
        // Within the capacity the memory stays, and so does the identity.
        b.prepare(4096);
        assert_eq!(b.id(), first);
        b.prepare(1 << 20);
        assert_ne!(b.id(), first, "a reallocated buffer must not keep its old identity");
        // A buffer allocated after one is freed (possibly at its address) is another buffer.
        let id = b.id();
        drop(b);
        let c = IoBuf::with_capacity(1 << 20);
        assert_ne!(c.id(), id);
    }

    #[test]
    fn pool_recycles() {
        let pool: BufPool<Vec<u8>> = BufPool::new();
        {
            let mut a = pool.get();
            a.extend_from_slice(b"abc");
            let _b = pool.get();
        }
        let a = pool.get();
        let _b = pool.get();
        assert_eq!(pool.created(), 2);
        assert!(a.capacity() >= 3 || _b.capacity() >= 3);
    }
}
