//! A real NFS-Ganesha server on loopback, for playsim's integration tests and benches.
//!
//! [`NfsServer::start`] starts `ganesha.nfsd` (NFSv3 over TCP, VFS backend) on 127.0.0.1 on two
//! free ports of its own, exporting a new temporary directory, and returns once it serves. Tests
//! write files into [`NfsServer::export_dir`] and read them back through
//! [`NfsServer::url`], which names both ports so that no portmapper lookup is needed. Faults are
//! injected on the real process: [`pause`](NfsServer::pause) (SIGSTOP),
//! [`kill`](NfsServer::kill) (SIGKILL) and [`restart`](NfsServer::restart) on the same ports.
//! [`NfsServer::builder`] adds exports that refuse MOUNT or squash uids. Faults on the path to
//! it go through a [`FaultProxy`]: a delay per chunk, a stall, a reset of every connection.
//! [`HostileServer`] is not Ganesha: a small NFSv3 server in the test process that answers with
//! a chosen [`Misbehaviour`].
//!
//! ```
//! use playsim_testserver::{AccessType, ExportSpec, NfsServer};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut server = NfsServer::builder()
//!     .extra_export(ExportSpec { access_type: AccessType::None, ..ExportSpec::new("denied") })
//!     .start()?;
//! std::fs::create_dir(server.export_dir().join("shot"))?;
//! std::fs::write(server.export_dir().join("shot/shot.0000001.dpx"), b"...")?;
//!
//! // e.g. nfs://127.0.0.1/tmp/playsim-nfs-Xy12Ab/export/shot/shot.%07d.dpx?mountport=24811&nfsport=29034
//! let url = server.url("shot/shot.%07d.dpx");
//! assert!(url.starts_with("nfs://127.0.0.1/") && url.contains("/export/shot/shot.%07d.dpx?mountport="));
//! // MOUNT of this one is refused with MNT3ERR_ACCES; it is not even listed.
//! let _refused = server.extra_export_url("denied", "").expect("the builder was given it");
//! assert_eq!(server.export_list()?, [server.export_dir().display().to_string()]);
//!
//! let nfs_port = server.nfs_port();
//! server.kill(); // a crash: connections reset, new ones refused
//! server.restart()?; // back on the same ports, with the same files
//! assert_eq!(server.nfs_port(), nfs_port);
//! # Ok(())
//! # }
//! ```
//!
//! [`SmbServer::start`] starts Samba's `smbd` the same way, on one free port, with a read-only
//! share over a new temporary directory and a user whose password is drawn at start:
//!
//! ```
//! use playsim_testserver::SmbServer;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut server = SmbServer::start()?;
//! std::fs::write(server.export_dir().join("shot.0000001.dpx"), b"...")?;
//! // e.g. smb://127.0.0.1:24811/share/shot.%07d.dpx: no password in it
//! assert!(server.url("shot.%07d.dpx").ends_with("/share/shot.%07d.dpx"));
//! let credentials = std::fs::read_to_string(server.credentials_file())?;
//! assert!(credentials.starts_with("username=") && credentials.contains("password="));
//! // No client yet, so no smbd child serves one.
//! assert_eq!(server.pause_connections(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! # What the machine needs
//!
//! `ganesha.nfsd` with its VFS module (Debian: nfs-ganesha, nfs-ganesha-vfs) and `rpcbind`,
//! which `cargo xtask deps` installs, and root: Ganesha registers with rpcbind and exits when it
//! cannot. If nothing listens on 127.0.0.1:111, the first server starts `rpcbind -f`, which then
//! outlives the tests (other servers may have registered with it). Each server takes about 60 MB
//! of memory and 55 threads, and serves 20 to 30 ms after it is spawned on an idle machine.
//!
//! Ganesha resolves its bind address with `getaddrinfo`, which finds no 127.0.0.1 on a machine
//! whose only IPv4 address is 127.0.0.1 (a container without network): there the servers bind
//! every address instead, which on such a machine is loopback only.
//!
//! [`SmbServer`] needs Samba's `smbd` and `smbpasswd` (Debian: samba, smbclient), and root, to
//! add its Unix user `playsim-smb` when missing.
//!
//! # Servers side by side
//!
//! Servers in one test binary (tests run in parallel) and in several test binaries at once
//! each draw their own pair of ports from 20000..32000 (below Linux's ephemeral range, so that
//! no outgoing connection takes a killed server's port before its restart). A port taken between
//! the draw and Ganesha's bind makes Ganesha exit with EADDRINUSE; `start` then draws again.
//!
//! Several Ganeshas run side by side without trouble, with one exception, the portmapper, of
//! which there is one per machine (measured with NFS-Ganesha 4.3 and rpcbind 1.2.6, Debian 12):
//!
//! - A starting Ganesha first *removes* every NFS and MOUNT mapping from rpcbind, then adds its
//!   own: the newest server takes the portmapper's name from every server before it, ours or not
//!   (e.g. a developer's Ganesha on 2049). The older servers go on serving on their ports; only a
//!   client that asks the portmapper (a URL without `mountport=`/`nfsport=`, or `showmount`)
//!   reaches the newest one instead, and is refused MOUNT for the older one's exports.
//! - A Ganesha that exits cleanly (SIGTERM) removes the NFS and MOUNT mappings even when they
//!   name another server; one that is killed (SIGKILL) leaves them naming its dead ports.
//! - Ganesha 4.3 has no setting to skip registration (only a build option, `_NO_PORTMAPPER`),
//!   and exits when registration fails. By its source, two starting at the same moment can make
//!   one fail (its add comes after the other's), so starts of this crate's servers take an
//!   `flock` on `$TMPDIR/playsim-testserver.lock`, and a start that fails so is tried again.
//! - MOUNT of a path that no export holds is refused with MNT3ERR_ACCES, as is MOUNT of an
//!   export that refuses the client; Ganesha never answers MNT3ERR_NOENT.
//!
//! So [`NfsServer::url`] always names the ports. A test that needs the portmapper calls
//! [`NfsServer::register_with_portmapper`] and checks
//! [`NfsServer::registered_with_portmapper`], and must not run beside tests that start servers.
//! When a server is dropped while the portmapper names it, the name goes to the newest other
//! running server of the process, else back to whichever server it named before the process
//! started its first server (if that still accepts connections), else the mappings are removed.
//! Servers that are not dropped (killed test process, `static`s) leave mappings to dead ports,
//! as [`NfsServer::kill`] does; [`portmap::register`] gives a developer's own Ganesha its
//! mappings back.
//!
//! # Cleanup
//!
//! Dropping a server (also while a test panics) kills Ganesha and removes its directory. Ganesha
//! runs under a small shell watchdog that SIGKILLs it, and removes the server's directory,
//! within a second once its parent, the test process, is gone: when the test process is
//! SIGKILLed, and for servers kept in a `static`, which are never dropped. (PR_SET_PDEATHSIG would
//! need `pre_exec`, which is unsafe code.)
//!
//! # Restarts
//!
//! [`NfsServer::restart`] binds the same ports again although the killed server's sockets are
//! in TIME_WAIT (or FIN_WAIT2 while a client still holds its end): Ganesha sets SO_REUSEADDR.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod config;
mod error;
mod fault_proxy;
mod host;
mod hostile;
pub mod portmap;
mod proxy;
mod rpc;
mod server;
mod smb;
mod smb_proxy;

pub use config::{AccessType, ExportSpec, Squash};
pub use error::Error;
pub use fault_proxy::FaultProxy;
pub use hostile::{Call, HostileServer, Misbehaviour, When, HOSTILE_DIR, HOSTILE_EXPORT, HOSTILE_OUT_DIR};
pub use server::{NfsServer, NfsServerBuilder, DEFAULT_STARTUP_TIMEOUT};
pub use smb::SmbServer;
pub use smb_proxy::{SmbMisbehaviour, SmbProxy};
