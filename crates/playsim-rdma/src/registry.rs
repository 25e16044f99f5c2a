//! Registered memory: the client's own send, receive, reply and bounce buffers
//! ([`RegisteredBuffer`]), and the frame buffers READs place data into ([`Registry`]),
//! registered once each and reused.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use playsim_storage::nfs::BufferIdentity;

use crate::verbs::{MemoryRegion, ProtectionDomain, RemoteAccess};

/// A buffer the client owns, registered for its whole life (the region is dropped before
/// the memory).
pub(crate) struct RegisteredBuffer {
    region: MemoryRegion,
    remote: RemoteAccess,
    memory: Mutex<Box<[u8]>>,
}

impl RegisteredBuffer {
    pub fn new(pd: &Arc<ProtectionDomain>, len: usize, remote: RemoteAccess) -> io::Result<RegisteredBuffer> {
        let memory: Box<[u8]> = vec![0u8; len].into_boxed_slice();
        let addr = memory.as_ptr() as usize;
        // SAFETY (of the promise `register` asks): the boxed slice is owned by the returned
        // value and never reallocated; `region` is declared first, so it is deregistered
        // before the memory is freed.
        #[allow(unsafe_code)]
        let region = unsafe { pd.register(addr, len, remote) }.map_err(|e| memlock_hint(e, len))?;
        Ok(RegisteredBuffer { region, remote, memory: Mutex::new(memory) })
    }

    /// What the peer may do with the buffer.
    pub fn remote(&self) -> RemoteAccess {
        self.remote
    }

    pub fn region(&self) -> &MemoryRegion {
        &self.region
    }

    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// Copies the buffer's first `out.len()` bytes into `out` (data the server placed in a
    /// bounce buffer).
    pub fn copy_into(&self, out: &mut [u8]) {
        let memory = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = out.len().min(memory.len());
        out[..n].copy_from_slice(&memory[..n]);
    }

    /// Copies `bytes` to the start of the buffer (a call about to be sent, a WRITE's data
    /// about to be offered in a read chunk).
    pub fn write(&self, bytes: &[u8]) {
        let mut memory = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = bytes.len().min(memory.len());
        memory[..n].copy_from_slice(&bytes[..n]);
    }

    /// The first `len` bytes (a reply received).
    pub fn read(&self, len: usize) -> Vec<u8> {
        let memory = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        memory[..len.min(memory.len())].to_vec()
    }
}

/// Frame buffers registered for the server's RDMA Writes, by allocation identity. The
/// engine recycles a few buffers, so each is registered when first seen and reused; a
/// buffer not seen for [`STALE_AFTER`] registrations is taken for freed and let go.
pub(crate) struct Registry {
    pd: Mutex<Option<Arc<ProtectionDomain>>>,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_id: HashMap<u64, Entry>,
    uses: u64,
    registered_bytes: u64,
    registrations: u64,
    /// Why frame buffers are no longer registered, once a registration failed for lack of
    /// locked memory.
    off: Option<String>,
}

/// Why a frame buffer was not registered.
#[derive(Debug)]
pub(crate) struct Refused {
    /// In one line, naming the limit when it is RLIMIT_MEMLOCK.
    pub message: String,
    /// True when locked memory ran short: the read can go through a bounce buffer.
    pub memlock: bool,
}

struct Entry {
    region: Arc<MemoryRegion>,
    base: usize,
    last_use: u64,
}

/// Lookups after which a buffer not seen again is deregistered.
const STALE_AFTER: u64 = 256;
/// Buffers kept registered at most.
const MAX_BUFFERS: usize = 64;

impl Registry {
    pub fn new() -> Registry {
        Registry { pd: Mutex::new(None), entries: Mutex::new(Entries::default()) }
    }

    pub fn set_pd(&self, pd: &Arc<ProtectionDomain>) {
        *self.pd.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(pd));
    }

    /// The region covering `buffer`, registering it if it is new (or has moved or grown).
    /// Once a registration has failed for lack of locked memory, frame buffers are no longer
    /// registered (the caller reads through a bounce buffer) and this fails at once.
    pub fn region_for(&self, buffer: BufferIdentity) -> Result<Arc<MemoryRegion>, Refused> {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(off) = &entries.off {
            return Err(Refused { message: off.clone(), memlock: true });
        }
        entries.uses += 1;
        let now = entries.uses;
        if let Some(entry) = entries.by_id.get_mut(&buffer.id) {
            if entry.base == buffer.base && entry.region.len() >= buffer.len {
                entry.last_use = now;
                return Ok(Arc::clone(&entry.region));
            }
        }
        if let Some(old) = entries.by_id.remove(&buffer.id) {
            entries.registered_bytes -= old.region.len() as u64;
        }
        let stale: Vec<u64> =
            entries.by_id.iter().filter(|(_, e)| now - e.last_use > STALE_AFTER).map(|(id, _)| *id).collect();
        for id in stale {
            if let Some(old) = entries.by_id.remove(&id) {
                entries.registered_bytes -= old.region.len() as u64;
            }
        }
        while entries.by_id.len() >= MAX_BUFFERS {
            let Some(oldest) = entries.by_id.iter().min_by_key(|(_, e)| e.last_use).map(|(id, _)| *id) else {
                break;
            };
            if let Some(old) = entries.by_id.remove(&oldest) {
                entries.registered_bytes -= old.region.len() as u64;
            }
        }
        let pd =
            self.pd.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone().ok_or_else(|| {
                Refused {
                    message: "no RDMA connection is open to register buffers on".to_owned(),
                    memlock: false,
                }
            })?;
        // SAFETY (of the promise `register` asks): the buffer is the caller's frame buffer,
        // borrowed mutably for the whole READ that offers it, so it stays allocated while
        // the server may write into it; a call abandoned before its reply breaks its
        // connection (the QP goes to the error state), so no write lands later. An entry
        // kept after its buffer is freed is never offered again: a new buffer has a new id.
        #[allow(unsafe_code)]
        let region = match unsafe { pd.register(buffer.base, buffer.len, RemoteAccess::Write) } {
            Ok(region) => region,
            Err(e) if is_memlock_shortage(&e) => {
                let message = memlock_hint(e, buffer.len).to_string();
                entries.off = Some(message.clone());
                return Err(Refused { message, memlock: true });
            }
            Err(e) => return Err(Refused { message: e.to_string(), memlock: false }),
        };
        let region = Arc::new(region);
        entries.registered_bytes += buffer.len as u64;
        entries.registrations += 1;
        entries
            .by_id
            .insert(buffer.id, Entry { region: Arc::clone(&region), base: buffer.base, last_use: now });
        Ok(region)
    }

    /// Frame buffers registered so far, and the bytes registered now.
    pub fn summary(&self) -> (u64, u64) {
        let entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (entries.registrations, entries.registered_bytes)
    }

    /// Why frame buffers are not registered, if they are not.
    pub fn off(&self) -> Option<String> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).off.clone()
    }
}

/// True when a registration failed for lack of locked memory (ENOMEM from ibv_reg_mr, as
/// RLIMIT_MEMLOCK makes it; EPERM or EAGAIN on some kernels).
pub(crate) fn is_memlock_shortage(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOMEM) | Some(libc::EPERM) | Some(libc::EAGAIN))
        || e.to_string().contains("Cannot allocate memory")
}

/// Names the locked-memory limit when a registration fails for lack of it.
pub(crate) fn memlock_hint(e: io::Error, len: usize) -> io::Error {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Memlock).current;
    if !is_memlock_shortage(&e) {
        return e;
    }
    let limit_text = match limit {
        Some(bytes) => format!("{} KiB (ulimit -l {})", bytes >> 10, bytes >> 10),
        None => "unlimited".to_owned(),
    };
    io::Error::new(
        e.kind(),
        format!(
            "cannot register a buffer of {len} bytes for RDMA ({e}): registered memory is locked, and RLIMIT_MEMLOCK is {limit_text}; raise it with `ulimit -l unlimited` (or memlock in /etc/security/limits.conf)"
        ),
    )
}
