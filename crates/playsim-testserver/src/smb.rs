//! [`SmbServer`]: one Samba `smbd` on loopback with a share over a temporary directory, a user
//! with a password of its own, and the fault a test injects on it (stopping the smbd child that
//! serves a connection).

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, Permissions};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use crate::host;
use crate::Error;

/// The address the server listens on.
const HOST: &str = "127.0.0.1";
/// The share's name in URLs.
const SHARE: &str = "share";
/// A second share over the same directory that Samba serves only encrypted
/// (`smb encrypt = required`).
const SEALED_SHARE: &str = "sealed";
/// A third share over the same directory, the one clients may write to.
const WRITABLE_SHARE: &str = "rw";
/// The account clients log in as: a Unix user (created if missing, without a home or a shell)
/// with an SMB password in the server's own passdb.
const USER: &str = "playsim-smb";
/// How long [`SmbServer::start`] waits for smbd to listen; it does in well under a second.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// Tries with fresh ports when smbd could not bind (another process took the port).
const LAUNCH_ATTEMPTS: usize = 4;
/// Lines of smbd's log quoted in errors.
const ERROR_LOG_LINES: usize = 20;

/// A real Samba `smbd` serving SMB2/3 on 127.0.0.1 on a port of its own, with one read-only share
/// (`share`) over a new temporary directory, for one user whose password is drawn at start, and
/// the same directory writable as `rw` ([`writable_url`](SmbServer::writable_url)).
///
/// smbd forks a child per client connection; [`pause_connections`](SmbServer::pause_connections)
/// stops those children (not the parent, which keeps accepting), as a server stuck on one
/// client would. Dropping the server kills smbd and its children and removes its directories; if
/// the test process dies without dropping it, a watchdog does both within a second.
pub struct SmbServer {
    /// Owns the server's directory tree: removed on drop.
    _root: tempfile::TempDir,
    export_dir: PathBuf,
    conf: PathBuf,
    log: PathBuf,
    credentials: PathBuf,
    password: String,
    port: u16,
    /// The port reserved with `port` (ports come in pairs), released with it.
    spare_port: u16,
    /// smbd's parent process (the watchdog shell `exec`s it), while it runs.
    child: Option<Child>,
    /// Connection children stopped by `pause_connections`, continued on drop.
    paused: Vec<u32>,
}

impl fmt::Debug for SmbServer {
    // By hand, so that the password stays out of test output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbServer")
            .field("export_dir", &self.export_dir)
            .field("port", &self.port)
            .field("user", &USER)
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

impl SmbServer {
    /// Creates the user if missing, writes the server's smb.conf and passdb, starts `smbd` on a
    /// free loopback port and waits until it accepts connections.
    pub fn start() -> Result<SmbServer, Error> {
        let smbd = host::find_program("smbd")?;
        let smbpasswd = host::find_program("smbpasswd")?;
        ensure_unix_user()?;
        let root = tempfile::Builder::new()
            .prefix("playsim-smb-")
            .tempdir()
            .map_err(|e| Error::io("cannot create the smb server's temporary directory", e))?;
        let root_path = root.path().to_path_buf();
        for dir in ["private", "lock", "state", "cache", "pid", "log", "export"] {
            let path = root_path.join(dir);
            fs::create_dir_all(&path)
                .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        }
        // Other uids may need to walk to the files (smbd checks share paths as the user).
        for path in [root_path.clone(), root_path.join("export")] {
            fs::set_permissions(&path, Permissions::from_mode(0o755))
                .map_err(|e| Error::io(format!("cannot chmod {}", path.display()), e))?;
        }
        let password = draw_password();
        let credentials = root_path.join("credentials");
        write_private(&credentials, &format!("username={USER}\npassword={password}\n"))?;
        let mut server = SmbServer {
            export_dir: root_path.join("export"),
            conf: root_path.join("smb.conf"),
            log: root_path.join("log/smbd.out"),
            credentials,
            password,
            port: 0,
            spare_port: 0,
            child: None,
            paused: Vec::new(),
            _root: root,
        };
        let mut last_error = None;
        for _ in 0..LAUNCH_ATTEMPTS {
            let (port, spare) = host::reserve_ports()?;
            server.port = port;
            server.spare_port = spare;
            server.write_config()?;
            if last_error.is_none() {
                server.set_password(&smbpasswd)?;
            }
            match server.launch(&smbd) {
                Ok(()) => return Ok(server),
                Err(e) => {
                    host::release_ports([port, spare]);
                    server.port = 0;
                    last_error = Some(e);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| server.not_up("did not start".into())))
    }

    /// The share's directory: write files here.
    pub fn export_dir(&self) -> &Path {
        &self.export_dir
    }

    /// The port smbd listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The share's name: `share`.
    pub fn share(&self) -> &str {
        SHARE
    }

    /// The user clients log in as.
    pub fn user(&self) -> &str {
        USER
    }

    /// The user's password, drawn at start (for tests that check it never shows).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// An `smb://` URL of `rel` in the share, with the port and no credentials, e.g.
    /// `smb://127.0.0.1:24811/share/shot/shot.%07d.dpx`; `rel` is not escaped.
    pub fn url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        format!("smb://{HOST}:{}/{SHARE}/{rel}", self.port)
    }

    /// The same as [`SmbServer::url`] in the share that the server serves only encrypted.
    pub fn sealed_url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        format!("smb://{HOST}:{}/{SEALED_SHARE}/{rel}", self.port)
    }

    /// The same as [`SmbServer::url`] in the share clients may write to (`rw`, over the same
    /// directory).
    pub fn writable_url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        format!("smb://{HOST}:{}/{WRITABLE_SHARE}/{rel}", self.port)
    }

    /// A file in `mount.cifs`'s credentials format (`username=` and `password=` lines, mode 0600)
    /// for this server's user.
    pub fn credentials_file(&self) -> &Path {
        &self.credentials
    }

    /// The pid of smbd's parent process, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The smbd children serving client connections now: children of the parent holding an
    /// established TCP connection on the server's port (smbd's notifyd and cleanupd hold none).
    pub fn connection_pids(&self) -> Vec<u32> {
        let Some(parent) = self.pid() else { return Vec::new() };
        let inodes = established_socket_inodes(self.port);
        children_of(parent).into_iter().filter(|&pid| holds_any_socket(pid, &inodes)).collect()
    }

    /// Stops (SIGSTOP) every smbd child serving a connection, leaving the parent running: those
    /// clients' requests go unanswered, their connections stay open. Returns how many it stopped.
    pub fn pause_connections(&mut self) -> usize {
        let pids = self.connection_pids();
        for &pid in &pids {
            signal(pid, Signal::STOP);
        }
        self.paused.extend(&pids);
        pids.len()
    }

    /// Kills (SIGKILL) every smbd child serving a connection, leaving the parent running: those
    /// clients' connections are reset and their open files closed, and they may connect again.
    /// Returns how many it killed.
    pub fn kill_connections(&mut self) -> usize {
        let pids = self.connection_pids();
        for &pid in &pids {
            signal(pid, Signal::KILL);
        }
        pids.len()
    }

    /// Continues (SIGCONT) the children [`pause_connections`](Self::pause_connections) stopped.
    pub fn resume_connections(&mut self) {
        for pid in self.paused.drain(..) {
            signal(pid, Signal::CONT);
        }
    }

    /// The last `n_lines` lines of smbd's output.
    pub fn log_tail(&self, n_lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n_lines)..].join("\n")
    }

    fn write_config(&self) -> Result<(), Error> {
        let root = self.export_dir.parent().unwrap_or(Path::new("/")).display().to_string();
        let text = format!(
            "[global]
  netbios name = PLAYSIMTEST
  workgroup = WORKGROUP
  server role = standalone server
  interfaces = {HOST}
  bind interfaces only = yes
  smb ports = {port}
  disable netbios = yes
  private dir = {root}/private
  lock directory = {root}/lock
  state directory = {root}/state
  cache directory = {root}/cache
  pid directory = {root}/pid
  ncalrpc dir = {root}/lock/ncalrpc
  log file = {root}/log/log.%m
  log level = 1
  passdb backend = tdbsam:{root}/private/passdb.tdb
  server min protocol = SMB2_02
  server signing = auto
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
  map to guest = never
  server multi channel support = yes
[{SHARE}]
  path = {export}
  read only = yes
  valid users = {USER}
  force user = root
[{SEALED_SHARE}]
  path = {export}
  read only = yes
  valid users = {USER}
  force user = root
  smb encrypt = required
[{WRITABLE_SHARE}]
  path = {export}
  read only = no
  strict allocate = yes
  valid users = {USER}
  force user = root
",
            port = self.port,
            export = self.export_dir.display(),
        );
        fs::write(&self.conf, text).map_err(|e| Error::io(format!("cannot write {}", self.conf.display()), e))
    }

    /// Adds the user to this server's passdb with its password (`smbpasswd -s -a`, which reads
    /// the password twice from stdin).
    fn set_password(&self, smbpasswd: &Path) -> Result<(), Error> {
        let mut child = Command::new(smbpasswd)
            .arg("-c")
            .arg(&self.conf)
            .args(["-s", "-a", USER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io(format!("cannot run {}", smbpasswd.display()), e))?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = format!("{0}\n{0}\n", self.password);
            stdin.write_all(input.as_bytes()).map_err(|e| Error::io("cannot write to smbpasswd", e))?;
        }
        let out = child.wait_with_output().map_err(|e| Error::io("cannot wait for smbpasswd", e))?;
        if out.status.success() {
            return Ok(());
        }
        Err(Error::io(
            format!("smbpasswd -a {USER} {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
            std::io::ErrorKind::Other.into(),
        ))
    }

    fn launch(&mut self, smbd: &Path) -> Result<(), Error> {
        let console = fs::File::create(&self.log)
            .map_err(|e| Error::io(format!("cannot create {}", self.log.display()), e))?;
        let console_err =
            console.try_clone().map_err(|e| Error::io("cannot duplicate smbd's log file", e))?;
        let root = self.export_dir.parent().unwrap_or(Path::new("/")).to_path_buf();
        // smbd -F stays in the foreground and makes its own process group, so that its children
        // (notifyd, cleanupd, one per connection) can be killed with it.
        let child = host::watched_command(smbd, &root)
            .args(["-F", "--debug-stdout", "-s"])
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(console_err)
            .spawn()
            .map_err(|e| Error::io(format!("cannot run {}", smbd.display()), e))?;
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < STARTUP_TIMEOUT {
            if host::accepts(self.port, Duration::from_millis(200)) {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(self.not_up(format!("exited with {status}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let error = self.not_up(format!("did not listen within {STARTUP_TIMEOUT:?}"));
        self.kill();
        Err(error)
    }

    fn not_up(&self, reason: String) -> Error {
        Error::SmbNotUp {
            port: self.port,
            reason,
            log: self.log.clone(),
            log_tail: self.log_tail(ERROR_LOG_LINES),
        }
    }

    fn kill(&mut self) {
        self.resume_connections();
        if let Some(mut child) = self.child.take() {
            // The whole group: the parent and every child it forked, stopped ones included.
            if let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) {
                let _ = rustix::process::kill_process_group(pid, Signal::CONT);
                let _ = rustix::process::kill_process_group(pid, Signal::KILL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for SmbServer {
    fn drop(&mut self) {
        self.kill();
        if self.port != 0 {
            host::release_ports([self.port, self.spare_port]);
        }
    }
}

/// Creates the Unix user [`USER`] unless it exists (we run as root in tests and CI).
fn ensure_unix_user() -> Result<(), Error> {
    let exists =
        || Command::new("id").arg("-u").arg(USER).output().map(|o| o.status.success()).unwrap_or(false);
    if exists() {
        return Ok(());
    }
    let useradd = host::find_program("useradd")?;
    let out = Command::new(&useradd)
        .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER])
        .output()
        .map_err(|e| Error::io(format!("cannot run {}", useradd.display()), e))?;
    // Another test may have created it at the same moment.
    if out.status.success() || exists() {
        return Ok(());
    }
    Err(Error::io(
        format!("useradd {USER} {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        std::io::ErrorKind::PermissionDenied.into(),
    ))
}

/// A password of 24 letters and digits, different for every server.
fn draw_password() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..24)
        .map(|i| {
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_usize(i);
            let index = usize::try_from(hasher.finish() % ALPHABET.len() as u64).unwrap_or(0);
            char::from(ALPHABET[index])
        })
        .collect()
}

/// Writes `text` to a new file only its owner may read.
fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
    file.write_all(text.as_bytes()).map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

fn signal(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// The processes whose parent is `parent`, from /proc.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // `pid (comm) state ppid ...`: comm may hold spaces, so split after its `)`.
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after_comm.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent)
        })
        .collect()
}

/// The inodes of established TCP sockets (IPv4 and IPv6) whose local port is `port`.
fn established_socket_inodes(port: u16) -> HashSet<u64> {
    const ESTABLISHED: &str = "01";
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let local_port = local.rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && *state == ESTABLISHED {
                if let Ok(inode) = inode.parse() {
                    inodes.insert(inode);
                }
            }
        }
    }
    inodes
}

/// Whether process `pid` has a file descriptor on one of the sockets `inodes`.
fn holds_any_socket(pid: u32, inodes: &HashSet<u64>) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.filter_map(Result::ok).any(|fd| {
        let target = fs::read_link(fd.path()).unwrap_or_default();
        let target = target.to_string_lossy();
        target
            .strip_prefix("socket:[")
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|inode| inode.parse::<u64>().ok())
            .is_some_and(|inode| inodes.contains(&inode))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_differ_and_are_plain_letters_and_digits() {
        let (a, b) = (draw_password(), draw_password());
        assert_eq!(a.len(), 24);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
    }

    #[test]
    fn this_process_is_a_child_of_its_parent() {
        let me = std::process::id();
        let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32);
        assert!(children_of(parent).contains(&me));
    }
}
