//! The portmapper (rpcbind on 127.0.0.1:111): which NFS server it names, and naming another.
//!
//! rpcbind holds one mapping per program and version: every Ganesha that starts replaces the
//! NFS and MOUNT mappings of whichever server registered before it (see the crate docs). These
//! functions let a test, or a developer whose own Ganesha lost its mappings to a test run, see
//! and set them. [`register`] and [`unregister`] need root.
//!
//! So that a test run does not leave the portmapper naming a dead server, or take the name for
//! good from a server that was there before, a dropped [`NfsServer`](crate::NfsServer) that the
//! portmapper still names hands the name to the newest live server of this process, else to the
//! server that held it before this process started its first one, else removes the mappings.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use crate::host::{self, StartupLock};
use crate::rpc::{self, MOUNT_PROG, NFS_PROG};
use crate::Error;

/// The program versions Ganesha registers with NFSv3 enabled, as (program, version, port index
/// into `[nfs, mount]`).
const MAPPINGS: [(u32, u32, usize); 3] = [(NFS_PROG, 3, 0), (MOUNT_PROG, 1, 1), (MOUNT_PROG, 3, 1)];

/// A server's NFS and MOUNT ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ports {
    pub nfs: u16,
    pub mount: u16,
}

/// The NFS and MOUNT ports the portmapper names (NFS v3 and MOUNT v3 over TCP), `None` when
/// either is unmapped. The ports need not be served any more: a killed Ganesha leaves its mappings.
pub fn named_ports() -> Result<Option<(u16, u16)>, Error> {
    Ok(named()?.map(|p| (p.nfs, p.mount)))
}

/// Makes the portmapper name the NFS server on `nfs_port` and `mount_port` of 127.0.0.1 (NFS v3,
/// MOUNT v1 and v3, over TCP on IPv4 and IPv6, as Ganesha registers), replacing what it named.
/// E.g. `register(2049, 20048)` gives a developer's own Ganesha its mappings back.
pub fn register(nfs_port: u16, mount_port: u16) -> Result<(), Error> {
    let _lock = StartupLock::acquire()?;
    register_ports(Ports { nfs: nfs_port, mount: mount_port })
}

/// Removes the NFS and MOUNT mappings, whoever made them.
pub fn unregister() -> Result<(), Error> {
    let _lock = StartupLock::acquire()?;
    unregister_all()
}

pub(crate) fn named() -> Result<Option<Ports>, Error> {
    let nfs = rpc::pmap_getport(NFS_PROG, 3)?;
    let mount = rpc::pmap_getport(MOUNT_PROG, 3)?;
    Ok(nfs.zip(mount).map(|(nfs, mount)| Ports { nfs, mount }))
}

// The mappings change only under the startup lock (held by the callers of the two functions
// below), so as not to interleave with a Ganesha that registers.

pub(crate) fn unregister_all() -> Result<(), Error> {
    for (prog, vers, _) in MAPPINGS {
        for netid in ["tcp", "tcp6"] {
            rpc::rpcb_unset(prog, vers, netid)?;
        }
    }
    Ok(())
}

pub(crate) fn register_ports(ports: Ports) -> Result<(), Error> {
    for (prog, vers, which) in MAPPINGS {
        let port = [ports.nfs, ports.mount][which];
        for (netid, host) in [("tcp", "0.0.0.0"), ("tcp6", "::ffff:127.0.0.1")] {
            rpc::rpcb_unset(prog, vers, netid)?;
            let uaddr = format!("{host}.{}.{}", port >> 8, port & 0xff);
            if !rpc::rpcb_set(prog, vers, netid, &uaddr)? {
                return Err(Error::Rpc {
                    what: format!("rpcbind SET {prog} v{vers} {netid} {uaddr}"),
                    addr: "rpcbind".into(),
                    detail: "refused (not root, or another mapping was added meanwhile)".into(),
                });
            }
        }
    }
    Ok(())
}

/// This process's running servers, oldest first, by server id.
static LIVE: Mutex<Vec<(u64, Ports)>> = Mutex::new(Vec::new());
/// What the portmapper named just before this process started its first server.
static BEFORE_US: OnceLock<Option<Ports>> = OnceLock::new();

/// Notes, before a server's first start, whom the portmapper names, if this is the process's first.
/// Call with the startup lock held.
pub(crate) fn note_before_first_start() {
    BEFORE_US.get_or_init(|| named().ok().flatten());
}

/// Notes that server `id` now runs on `ports` and holds the portmapper's name (it registered last).
pub(crate) fn note_started(id: u64, ports: Ports) {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    live.retain(|(other, _)| *other != id);
    live.push((id, ports));
}

/// Notes that server `id` no longer runs.
pub(crate) fn note_stopped(id: u64) {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner).retain(|(other, _)| *other != id);
}

/// If the portmapper names `ports` (of a server that is gone), names the newest live server of
/// this process instead, else the one it named before this process's first server if that still
/// accepts connections, else nobody. Best effort: call with the startup lock held.
pub(crate) fn hand_back(ports: Ports) {
    if named().ok().flatten() != Some(ports) {
        return;
    }
    let live: Vec<Ports> =
        LIVE.lock().unwrap_or_else(PoisonError::into_inner).iter().rev().map(|(_, p)| *p).collect();
    let before = BEFORE_US.get().copied().flatten();
    let heir = live.into_iter().chain(before).filter(|p| *p != ports).find(|p| {
        let timeout = Duration::from_millis(200);
        host::accepts(p.nfs, timeout) && host::accepts(p.mount, timeout)
    });
    let _ = match heir {
        Some(heir) => register_ports(heir),
        None => unregister_all(),
    };
}
