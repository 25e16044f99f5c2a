//! The io_uring engine's settings, in every build (the engine itself is the `io-uring` feature).

use crate::Error;

/// The ring depth used when none is given: reads in flight at most, per storage.
pub const DEFAULT_RING_ENTRIES: u32 = 128;

/// The most entries the kernel gives a ring (`IORING_MAX_ENTRIES`).
const MAX_RING_ENTRIES: u32 = 32_768;

/// Settings of the io_uring engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UringOptions {
    /// Submission queue entries (rounded up to a power of two): the most reads of one
    /// storage in flight at once, less one kept for the thread's wake-up poll. A frame's
    /// blocks beyond it wait for earlier reads to complete.
    pub entries: u32,
    /// Read into buffers registered with the kernel (fixed buffers), where the locked-memory
    /// limit allows; `false` reads into plain buffers.
    pub register_buffers: bool,
    /// The most bytes of buffers registered at once; `None` leaves the limit to the kernel
    /// (RLIMIT_MEMLOCK without CAP_IPC_LOCK). A buffer that would pass it is read
    /// unregistered, as when the kernel refuses.
    pub max_registered_bytes: Option<u64>,
    /// For tests of the fallback: act as if `io_uring_setup` failed with this errno
    /// (`libc::EPERM`, `libc::ENOSYS`, ...) instead of calling it. `None` in real use.
    pub fail_setup: Option<i32>,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            entries: DEFAULT_RING_ENTRIES,
            register_buffers: true,
            max_registered_bytes: None,
            fail_setup: None,
        }
    }
}

impl UringOptions {
    /// Checks that the options can be used.
    pub fn validate(&self) -> Result<(), Error> {
        if !(2..=MAX_RING_ENTRIES).contains(&self.entries) {
            return Err(Error::InvalidOption(format!(
                "ring entries {} is out of range: 2 to {MAX_RING_ENTRIES} (for example {DEFAULT_RING_ENTRIES})",
                self.entries
            )));
        }
        Ok(())
    }
}
