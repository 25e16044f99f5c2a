//! What a test server needs from the machine: the programs, rpcbind, free ports, a lock that
//! serialises Ganesha startups across processes, and the watchdog that ends Ganesha with its owner.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;

use crate::Error;

/// Longest wait for the [`StartupLock`]: a few dozen starts of 20 to 50 ms each, or a start
/// that waits out its whole startup timeout.
const LOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a waiter tries the lock.
const LOCK_POLL: Duration = Duration::from_millis(5);
/// How long a started rpcbind may take to listen.
const RPCBIND_TIMEOUT: Duration = Duration::from_secs(5);
/// Ports are drawn from here: below Linux's ephemeral range (32768 and up), so that no outgoing
/// connection holds a server's port while it is down between `kill` and `restart`.
const PORT_RANGE: std::ops::Range<u16> = 20_000..32_000;

/// Finds `program` on PATH or in the usual system directories (rpcbind lives in /usr/sbin,
/// which a non-login PATH may lack).
pub(crate) fn find_program(program: &'static str) -> Result<PathBuf, Error> {
    let path_dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    let fallback = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from);
    path_dirs
        .into_iter()
        .chain(fallback)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| Error::Missing { what: program, detail: "not on PATH nor in /usr/sbin, /sbin".into() })
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
pub(crate) fn accepts(port: u16, timeout: Duration) -> bool {
    TcpStream::connect_timeout(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)), timeout).is_ok()
}

/// Starts rpcbind unless one listens on 127.0.0.1:111. Ganesha registers with it at startup and
/// exits when it cannot, so there must be one; there is only ever one per machine, and the one
/// started here outlives this process, as other servers (ours or not) may have registered with it.
pub(crate) fn ensure_rpcbind() -> Result<(), Error> {
    if accepts(111, Duration::from_millis(500)) {
        return Ok(());
    }
    let rpcbind = find_program("rpcbind")?;
    // Debian's rpcbind drops to user _rpc and keeps its state in /run/rpcbind, which only its
    // init script creates.
    let _ = std::fs::create_dir_all("/run/rpcbind");
    // `-f` keeps it in the foreground (the daemonising start is untested here); its own process
    // group keeps a Ctrl-C of the tests from stopping it. (`-h 127.0.0.1` crashes it.)
    let mut child = Command::new(&rpcbind)
        .arg("-f")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| Error::io(format!("cannot run {}", rpcbind.display()), e))?;
    let start = Instant::now();
    while start.elapsed() < RPCBIND_TIMEOUT {
        if accepts(111, Duration::from_millis(200)) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Another process may have started one at the same moment; ours then exits.
            if accepts(111, Duration::from_millis(500)) {
                return Ok(());
            }
            return Err(Error::Rpcbind { waited: start.elapsed(), detail: format!("it {status}") });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(Error::Rpcbind { waited: start.elapsed(), detail: "it runs but does not listen".into() })
}

/// Held while a Ganesha starts (or while the portmapper is handed back), so that two servers
/// never register with rpcbind at the same moment, across every process using this crate.
///
/// Ganesha first removes every NFS and MOUNT mapping and then adds its own; two doing that at
/// once can leave the second unable to add its mapping, and Ganesha exits when it cannot. The lock
/// is an `flock`, released by the kernel if the holder dies.
pub(crate) struct StartupLock {
    _in_process: MutexGuard<'static, ()>,
    _file: File,
}

impl StartupLock {
    /// Waits for the lock, at most [`LOCK_TIMEOUT`].
    pub(crate) fn acquire() -> Result<StartupLock, Error> {
        StartupLock::acquire_within(LOCK_TIMEOUT)
    }

    /// Waits for the lock, at most `timeout`: a holder stopped in a debugger (or by SIGSTOP) must
    /// not hang every other test forever.
    pub(crate) fn acquire_within(timeout: Duration) -> Result<StartupLock, Error> {
        // flock serialises open file descriptions, not threads: threads of one process would each
        // open their own and not exclude one another without this mutex.
        static IN_PROCESS: Mutex<()> = Mutex::new(());
        let path = std::env::temp_dir().join("playsim-testserver.lock");
        let start = Instant::now();
        let timed_out = || {
            Error::io(
                format!("waited {timeout:?} for {}, held by another nfs server's start", path.display()),
                std::io::ErrorKind::TimedOut.into(),
            )
        };
        let in_process = loop {
            match IN_PROCESS.try_lock() {
                Ok(guard) => break guard,
                Err(TryLockError::Poisoned(poisoned)) => break poisoned.into_inner(),
                Err(TryLockError::WouldBlock) if start.elapsed() < timeout => std::thread::sleep(LOCK_POLL),
                Err(TryLockError::WouldBlock) => return Err(timed_out()),
            }
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .or_else(|_| File::open(&path))
            .map_err(|e| Error::io(format!("cannot open lock file {}", path.display()), e))?;
        loop {
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(StartupLock { _in_process: in_process, _file: file }),
                Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < timeout => {
                    std::thread::sleep(LOCK_POLL)
                }
                Err(rustix::io::Errno::WOULDBLOCK) => return Err(timed_out()),
                Err(e) => return Err(Error::io(format!("cannot lock {}", path.display()), e.into())),
            }
        }
    }
}

/// Ports handed to this process's servers and not yet released: a killed server keeps its
/// ports for its restart, and two threads never draw the same one.
static RESERVED: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// Two distinct free ports from [`PORT_RANGE`], reserved until [`release_ports`].
///
/// "Free" means 127.0.0.1:port can be bound now. Another process may still take one before
/// Ganesha binds it; the caller sees Ganesha fail with EADDRINUSE and draws again.
pub(crate) fn reserve_ports() -> Result<(u16, u16), Error> {
    let mut reserved = RESERVED.lock().unwrap_or_else(PoisonError::into_inner);
    let reserved = reserved.get_or_insert_with(HashSet::new);
    let mut picked = Vec::with_capacity(2);
    let span = u64::from(PORT_RANGE.end - PORT_RANGE.start);
    for _ in 0..1000 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        // The offset is below `span`, which fits in u16.
        let port = PORT_RANGE.start + u16::try_from(hasher.finish() % span).unwrap_or(0);
        if reserved.contains(&port) || picked.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            picked.push(port);
            if let [nfs, mount] = picked[..] {
                reserved.extend([nfs, mount]);
                return Ok((nfs, mount));
            }
        }
    }
    Err(Error::io(
        format!("no two free ports in 127.0.0.1:{}..{}", PORT_RANGE.start, PORT_RANGE.end),
        std::io::ErrorKind::AddrInUse.into(),
    ))
}

/// Returns ports taken by [`reserve_ports`].
pub(crate) fn release_ports(ports: [u16; 2]) {
    let mut reserved = RESERVED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(reserved) = reserved.as_mut() {
        for port in ports {
            reserved.remove(&port);
        }
    }
}

/// The shell that starts Ganesha under a watchdog:
/// `sh -c WATCHDOG sh OWNER_PID SERVER_DIR PROGRAM ARGS...`.
///
/// A background subshell checks twice a second that Ganesha's parent is still `OWNER_PID` (it
/// stops being so when the owner dies, as Ganesha is then re-parented), and then SIGKILLs
/// Ganesha and removes `SERVER_DIR`, as the owner's `Drop` would have; it exits quietly once
/// Ganesha is gone while its owner lives. The shell then `exec`s Ganesha, so Ganesha keeps the
/// pid of the child we spawned: signals and `wait` reach it directly, not a wrapper.
///
/// This is the safe stand-in for PR_SET_PDEATHSIG, which needs `pre_exec` (unsafe). It covers a
/// SIGKILLed test process and servers in statics, which are never dropped.
const WATCHDOG: &str = r#"owner=$1
dir=$2
shift 2
(
  while sleep 0.5; do
    [ -r /proc/$$/status ] || exit 0
    ppid=
    while read -r key value; do
      if [ "$key" = PPid: ]; then ppid=$value; break; fi
    done < /proc/$$/status
    [ -z "$ppid" ] && exit 0
    [ "$ppid" = "$owner" ] || break
  done
  kill -9 -$$ 2>/dev/null || kill -9 $$
  sleep 0.2
  case $dir in */playsim-nfs-*|*/playsim-smb-*) rm -rf -- "$dir" ;; esac
) </dev/null >/dev/null 2>&1 &
exec "$@"
"#;

/// A command running `program args` under the [`WATCHDOG`], owned by this process, which removes
/// `server_dir` (named `playsim-nfs-*`) if this process dies without doing so.
pub(crate) fn watched_command(program: &Path, server_dir: &Path) -> Command {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(WATCHDOG).arg("sh").arg(std::process::id().to_string()).arg(server_dir).arg(program);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_ports_are_distinct_and_in_range() {
        let a = reserve_ports().unwrap();
        let b = reserve_ports().unwrap();
        let all = [a.0, a.1, b.0, b.1];
        assert!(all.iter().all(|p| PORT_RANGE.contains(p)));
        assert_eq!(all.iter().collect::<HashSet<_>>().len(), 4);
        release_ports([a.0, a.1]);
        release_ports([b.0, b.1]);
    }

    #[test]
    fn the_watchdog_execs_the_program_with_its_arguments() {
        let out = watched_command(Path::new("/bin/echo"), Path::new("/nonexistent/playsim-nfs-x"))
            .args(["a b", "c"])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a b c\n");
    }
}
