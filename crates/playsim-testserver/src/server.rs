//! [`NfsServer`]: one NFS-Ganesha process on loopback, its temporary directories, and the faults
//! a test can inject (pause, kill, restart).

use std::fs::{self, File, Permissions};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use crate::config::{self, ConfigParams, ExportSpec, MAIN_EXPORT, STATE_DIR};
use crate::host::{self, StartupLock};
use crate::portmap::{self, Ports};
use crate::{rpc, Error};

/// The address every test server listens on.
const HOST: &str = "127.0.0.1";
/// How long [`NfsServer::start`] and [`NfsServer::restart`] wait for Ganesha to serve, unless the
/// builder says otherwise. It serves in well under a second when the machine is idle.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// Tries to get Ganesha to serve, when it fails for a passing reason: its ports were taken
/// between our check and its bind (at start, other ports are drawn), it could not register with
/// rpcbind (a Ganesha not started through this crate registered at the same moment).
const LAUNCH_ATTEMPTS: usize = 5;
/// Set once Ganesha could not resolve 127.0.0.1 on this machine: servers bind every address.
static BIND_ANY: AtomicBool = AtomicBool::new(false);
/// The line Ganesha logs once it is set up.
const INITIALIZED: &str = "NFS SERVER INITIALIZED";
/// Lines of Ganesha's log quoted in errors.
const ERROR_LOG_LINES: usize = 25;

/// A real NFS-Ganesha serving NFSv3 over TCP on 127.0.0.1, on ports of its own, exporting a new
/// temporary directory; see the [crate docs](crate) for how servers share the machine.
///
/// Dropping it kills Ganesha and removes its directories. If the test process dies without
/// dropping it (SIGKILL, or a server in a `static`), a watchdog does both within a second.
#[derive(Debug)]
pub struct NfsServer {
    id: u64,
    /// Owns the server's directory tree: removed on drop.
    _root: tempfile::TempDir,
    /// The canonical path of that tree.
    root_path: PathBuf,
    export_dir: PathBuf,
    /// The builder's extra exports, with their directories.
    extra_exports: Vec<(ExportSpec, PathBuf)>,
    ganesha: PathBuf,
    conf: PathBuf,
    log: PathBuf,
    /// Ganesha's stdout and stderr, for what it prints before its log is open.
    console: PathBuf,
    pid_file: PathBuf,
    ports: Ports,
    /// Whether Ganesha binds every address instead of 127.0.0.1, which it cannot resolve on a
    /// machine whose only IPv4 address is 127.0.0.1.
    bind_any: bool,
    /// Ganesha itself (the watchdog shell `exec`s it), while it runs.
    child: Option<Child>,
    /// Whether a Ganesha was ever spawned, so may have registered with rpcbind.
    spawned: bool,
    startup_timeout: Duration,
}

/// Options of an [`NfsServer`]: extra exports, startup timeout.
#[derive(Clone, Debug)]
pub struct NfsServerBuilder {
    extra_exports: Vec<ExportSpec>,
    startup_timeout: Duration,
}

impl NfsServerBuilder {
    /// Adds an export next to the main one, e.g. one that refuses MOUNT.
    pub fn extra_export(mut self, spec: ExportSpec) -> Self {
        self.extra_exports.push(spec);
        self
    }

    /// How long to wait for Ganesha to serve, at start and at each restart
    /// (default [`DEFAULT_STARTUP_TIMEOUT`]).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Starts rpcbind if none listens on 127.0.0.1:111, then Ganesha on free loopback ports,
    /// and waits until it serves: its NFS and MOUNT ports accept connections and its MOUNT
    /// service lists the main export.
    pub fn start(self) -> Result<NfsServer, Error> {
        for (i, spec) in self.extra_exports.iter().enumerate() {
            spec.validate()?;
            if self.extra_exports[..i].iter().any(|other| other.name == spec.name) {
                return Err(Error::InvalidExport { name: spec.name.clone(), reason: "given twice".into() });
            }
        }
        let ganesha = host::find_program("ganesha.nfsd")?;
        let mut server = NfsServer::create(ganesha, self)?;
        server.launch_retrying(true)?;
        Ok(server)
    }
}

impl NfsServer {
    /// Starts a server with the defaults: one read-write export without root squashing.
    /// See [`NfsServerBuilder::start`].
    pub fn start() -> Result<NfsServer, Error> {
        NfsServer::builder().start()
    }

    /// A builder for a server with extra exports or another startup timeout.
    pub fn builder() -> NfsServerBuilder {
        NfsServerBuilder { extra_exports: Vec::new(), startup_timeout: DEFAULT_STARTUP_TIMEOUT }
    }

    /// The address the server listens on: `127.0.0.1`.
    pub fn host(&self) -> &str {
        HOST
    }

    /// The port of its NFS service.
    pub fn nfs_port(&self) -> u16 {
        self.ports.nfs
    }

    /// The port of its MOUNT service.
    pub fn mount_port(&self) -> u16 {
        self.ports.mount
    }

    /// The main export's directory: write files here, and clients mount this same path.
    /// Mode 0755, as are its parents up to the temporary directory, so other uids can read it.
    pub fn export_dir(&self) -> &Path {
        &self.export_dir
    }

    /// An `nfs://` URL of `rel` in the main export, with explicit ports, e.g.
    /// `nfs://127.0.0.1/tmp/playsim-nfs-Ab12Cd/export/shot/shot.%07d.dpx?mountport=21002&nfsport=21001`.
    ///
    /// `rel` may be empty (the export itself) and is not escaped, so patterns such as
    /// `%07d` stay as they are.
    pub fn url(&self, rel: &str) -> String {
        self.url_for(&self.export_dir, rel)
    }

    /// An `nfs://` URL of `rel` under `export_path`, which need not be exported (to provoke
    /// MOUNT errors), with this server's ports; `rel` is not escaped.
    pub fn url_for(&self, export_path: &Path, rel: &str) -> String {
        let base = export_path.display().to_string();
        let base = base.trim_end_matches('/');
        let rel = rel.trim_start_matches('/');
        let path = if rel.is_empty() { base.to_owned() } else { format!("{base}/{rel}") };
        format!("nfs://{HOST}{path}?mountport={}&nfsport={}", self.ports.mount, self.ports.nfs)
    }

    /// The directory of the extra export `name`, if the builder was given one.
    pub fn extra_export_dir(&self, name: &str) -> Option<&Path> {
        self.extra_exports.iter().find(|(spec, _)| spec.name == name).map(|(_, dir)| dir.as_path())
    }

    /// An `nfs://` URL of `rel` in the extra export `name`, if the builder was given one.
    pub fn extra_export_url(&self, name: &str, rel: &str) -> Option<String> {
        self.extra_export_dir(name).map(|dir| self.url_for(dir, rel))
    }

    /// The pid of the ganesha.nfsd process, while one runs (paused or not).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops Ganesha with SIGSTOP: connections stay open and unanswered, new ones are accepted
    /// by the kernel but not served. Does nothing when it is not running.
    pub fn pause(&self) {
        self.signal(Signal::STOP);
    }

    /// Continues Ganesha after [`pause`](Self::pause) with SIGCONT.
    pub fn resume(&self) {
        self.signal(Signal::CONT);
    }

    /// Kills Ganesha with SIGKILL and reaps it, as a crash would: clients see their connections
    /// reset and new ones refused. Its ports stay reserved for [`restart`](Self::restart), and
    /// its portmapper mappings stay too, naming the dead ports. Does nothing when it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        portmap::note_stopped(self.id);
    }

    /// Starts Ganesha again (killing it first if it runs) on the same ports with the same
    /// exports and files, and waits until it serves, so that clients can reconnect. It registers
    /// with the portmapper again. Sockets of the old process in TIME_WAIT do not hinder it:
    /// Ganesha binds with SO_REUSEADDR.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.kill();
        self.launch_retrying(false)
    }

    /// The last `n_lines` lines of Ganesha's log (of every start of this server).
    pub fn log_tail(&self, n_lines: usize) -> String {
        tail(&fs::read_to_string(&self.log).unwrap_or_default(), n_lines)
    }

    /// Ganesha's log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The directories the server's MOUNT service lists (like `showmount -e`): the main export and
    /// the extra ones that 127.0.0.1 may mount.
    pub fn export_list(&self) -> Result<Vec<String>, Error> {
        rpc::mount_exports(self.ports.mount)
    }

    /// Whether the portmapper (rpcbind on 127.0.0.1:111) maps NFS v3 and MOUNT v3 over TCP to
    /// this server's ports. True just after this server started, false once another server
    /// started after it (see the crate docs).
    pub fn registered_with_portmapper(&self) -> bool {
        portmap::named().ok().flatten() == Some(self.ports)
    }

    /// Makes the portmapper name this server again, for a test that finds the server through
    /// the portmapper (a URL without `mountport=`). Another server starting afterwards takes the
    /// name away again, so such a test should not run beside tests that start servers.
    pub fn register_with_portmapper(&self) -> Result<(), Error> {
        let _lock = StartupLock::acquire()?;
        portmap::register_ports(self.ports)?;
        if self.child.is_some() {
            portmap::note_started(self.id, self.ports);
        }
        Ok(())
    }

    fn create(ganesha: PathBuf, options: NfsServerBuilder) -> Result<NfsServer, Error> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let root = tempfile::Builder::new()
            .prefix("playsim-nfs-")
            .tempdir()
            .map_err(|e| Error::io("cannot create a temporary directory for the nfs server", e))?;
        // Ganesha reports and clients mount the path as configured; a canonical one (no symlink
        // in TMPDIR) is the same for everyone.
        let root_path = fs::canonicalize(root.path())
            .map_err(|e| Error::io(format!("cannot resolve {}", root.path().display()), e))?;
        let dir_0755 = |path: &Path| -> Result<(), Error> {
            fs::create_dir_all(path)
                .and_then(|()| fs::set_permissions(path, Permissions::from_mode(0o755)))
                .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))
        };
        dir_0755(&root_path)?;
        let export_dir = root_path.join(MAIN_EXPORT);
        dir_0755(&export_dir)?;
        let mut extra_exports = Vec::new();
        for spec in options.extra_exports {
            let dir = root_path.join(&spec.name);
            dir_0755(&dir)?;
            extra_exports.push((spec, dir));
        }
        let state = root_path.join(STATE_DIR);
        fs::create_dir_all(state.join("recovery"))
            .map_err(|e| Error::io(format!("cannot create {}", state.display()), e))?;

        let (nfs, mount) = host::reserve_ports()?;
        let server = NfsServer {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            _root: root,
            root_path,
            export_dir,
            extra_exports,
            ganesha,
            conf: state.join("ganesha.conf"),
            log: state.join("ganesha.log"),
            console: state.join("console.log"),
            pid_file: state.join("ganesha.pid"),
            ports: Ports { nfs, mount },
            bind_any: BIND_ANY.load(Ordering::Relaxed),
            child: None,
            spawned: false,
            startup_timeout: options.startup_timeout,
        };
        server.write_config()?;
        Ok(server)
    }

    fn write_config(&self) -> Result<(), Error> {
        let text = config::render(&ConfigParams {
            nfs_port: self.ports.nfs,
            mount_port: self.ports.mount,
            bind_any: self.bind_any,
            recovery_dir: &self.root_path.join(STATE_DIR).join("recovery"),
            main_export: &self.export_dir,
            extra_exports: &self.extra_exports,
        });
        fs::write(&self.conf, text).map_err(|e| Error::io(format!("cannot write {}", self.conf.display()), e))
    }

    /// [`launch`](Self::launch)es until Ganesha serves or fails for a reason that another try
    /// does not cure; `new_ports` allows drawing other ports when its own are taken.
    fn launch_retrying(&mut self, new_ports: bool) -> Result<(), Error> {
        let mut n_attempts = 1;
        loop {
            let Err(Launch { error, retry }) = self.launch() else { return Ok(()) };
            if n_attempts >= LAUNCH_ATTEMPTS {
                return Err(error);
            }
            match retry {
                Retry::No => return Err(error),
                Retry::NewPorts if new_ports => {
                    // Draw before releasing, so as not to draw the taken ports again.
                    let (nfs, mount) = host::reserve_ports()?;
                    host::release_ports([self.ports.nfs, self.ports.mount]);
                    self.ports = Ports { nfs, mount };
                    self.write_config()?;
                }
                Retry::BindAny if !self.bind_any => {
                    // Ganesha takes a second to fail so: later servers of the process skip it.
                    BIND_ANY.store(true, Ordering::Relaxed);
                    self.bind_any = true;
                    self.write_config()?;
                }
                // The same ports: wait for whoever holds one (a port probe of another process
                // holds it for microseconds), or for rpcbind to settle.
                _ => std::thread::sleep(Duration::from_millis(100 * n_attempts as u64)),
            }
            n_attempts += 1;
        }
    }

    /// Spawns Ganesha and waits until it serves, holding the startup lock.
    fn launch(&mut self) -> Result<(), Launch> {
        let _lock = StartupLock::acquire().map_err(Launch::other)?;
        host::ensure_rpcbind().map_err(Launch::other)?;
        portmap::note_before_first_start();

        let log_offset = fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0);
        let console =
            File::options().create(true).append(true).open(&self.console).map_err(|e| {
                Launch::other(Error::io(format!("cannot open {}", self.console.display()), e))
            })?;
        let console_err = console
            .try_clone()
            .map_err(|e| Launch::other(Error::io(format!("cannot open {}", self.console.display()), e)))?;
        let child = host::watched_command(&self.ganesha, &self.root_path)
            .arg("-F")
            .arg("-f")
            .arg(&self.conf)
            .arg("-L")
            .arg(&self.log)
            .arg("-p")
            .arg(&self.pid_file)
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(console_err)
            .spawn()
            .map_err(|e| Launch::other(Error::io(format!("cannot run {}", self.ganesha.display()), e)))?;
        self.child = Some(child);
        self.spawned = true;

        let result = self.wait_until_serving(log_offset);
        match &result {
            Ok(()) => portmap::note_started(self.id, self.ports),
            Err(_) => self.kill(),
        }
        result
    }

    fn wait_until_serving(&mut self, log_offset: u64) -> Result<(), Launch> {
        let start = Instant::now();
        let export = self.export_dir.display().to_string();
        let mut initialized = false;
        let mut waiting_for = format!("no `{INITIALIZED}` in its log");
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(self.classify_exit(&status.to_string(), log_offset));
                }
            }
            if !initialized {
                initialized = self.log_since(log_offset).contains(INITIALIZED);
            }
            if initialized {
                let probe = Duration::from_millis(500);
                if !host::accepts(self.ports.nfs, probe) {
                    waiting_for = format!("nfs port {} refuses connections", self.ports.nfs);
                } else {
                    match rpc::mount_exports(self.ports.mount) {
                        Ok(list) if list.contains(&export) => return Ok(()),
                        Ok(list) => waiting_for = format!("its MOUNT service lists {list:?}, not {export}"),
                        Err(e) => waiting_for = e.to_string(),
                    }
                }
            }
            if start.elapsed() >= self.startup_timeout {
                let reason = format!("did not serve within {:?}: {waiting_for}", self.startup_timeout);
                return Err(Launch::other(self.not_up(reason, log_offset)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn classify_exit(&self, status: &str, log_offset: u64) -> Launch {
        let log = self.log_since(log_offset);
        if let Some(line) = log.lines().find(|l| l.contains("Could not dlopen module")) {
            return Launch::other(Error::Missing {
                what: "an NFS-Ganesha FSAL module",
                detail: strip_prefix(line),
            });
        }
        let (retry, reason) = if log.contains("Address already in use") {
            (Retry::NewPorts, "could not bind its ports (taken by another process)".to_owned())
        } else if log.contains("No IP address found for 127.0.0.1") {
            // glibc's getaddrinfo with AI_ADDRCONFIG finds no IPv4 address on a machine whose
            // only IPv4 address is 127.0.0.1 (e.g. a container without network).
            (Retry::BindAny, "cannot bind 127.0.0.1 on a machine without another IPv4 address".to_owned())
        } else if log.contains("Cannot register") {
            (Retry::Again, format!("could not register with rpcbind ({status})"))
        } else {
            (Retry::No, format!("exited while starting ({status})"))
        };
        Launch { error: self.not_up(reason, log_offset), retry }
    }

    fn not_up(&self, reason: String, log_offset: u64) -> Error {
        let mut text = self.log_since(log_offset);
        if let Ok(console) = fs::read_to_string(&self.console) {
            text.push_str(&console);
        }
        let quoted: Vec<String> = text
            .lines()
            .filter(|l| !is_noise(l))
            .map(strip_prefix)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .take(ERROR_LOG_LINES)
            .rev()
            .collect();
        Error::NotUp {
            nfs_port: self.ports.nfs,
            mount_port: self.ports.mount,
            reason,
            log: self.log.clone(),
            log_tail: quoted.join("\n"),
        }
    }

    fn log_since(&self, offset: u64) -> String {
        let bytes = fs::read(&self.log).unwrap_or_default();
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }

    fn signal(&self, signal: Signal) {
        let pid = self.child.as_ref().and_then(|c| i32::try_from(c.id()).ok()).and_then(Pid::from_raw);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

impl Drop for NfsServer {
    fn drop(&mut self) {
        self.kill();
        if self.spawned {
            // Handing back is a courtesy: not worth a long wait in a drop.
            if let Ok(_lock) = StartupLock::acquire_within(Duration::from_secs(5)) {
                portmap::hand_back(self.ports);
            }
        }
        host::release_ports([self.ports.nfs, self.ports.mount]);
        // `root` removes the directory tree when dropped, ignoring errors.
    }
}

/// A failed launch, and what another try should change.
struct Launch {
    error: Error,
    retry: Retry,
}

enum Retry {
    /// Another try would fail the same way.
    No,
    /// The ports were taken: draw others (at start) or wait (at restart).
    NewPorts,
    /// Ganesha could not resolve 127.0.0.1: bind to every address (there is no other).
    BindAny,
    /// A passing failure, e.g. registering with rpcbind: try the same again.
    Again,
}

impl Launch {
    fn other(error: Error) -> Launch {
        Launch { error, retry: Retry::No }
    }
}

/// Ganesha's complaints about D-Bus and Kerberos, which every start logs and no test needs.
fn is_noise(line: &str) -> bool {
    [":DBUS :", "krb5", "keytab", "RADOS"].iter().any(|n| line.contains(n))
}

/// A log line without its date, epoch and host (`DATE TIME : epoch E : HOST : PROGRAM-PID[thread] ...`).
fn strip_prefix(line: &str) -> String {
    line.splitn(4, " : ").nth(3).unwrap_or(line).to_owned()
}

fn tail(text: &str, n_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n_lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_takes_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a\nb\n", 5), "a\nb");
        assert_eq!(tail("", 3), "");
    }

    #[test]
    fn log_prefix_is_stripped() {
        let line = "21/11/2026 16:53:08 : epoch 6b01cc74 : vm : nfs-ganesha-1710[main] main :MAIN :EVENT :x";
        assert_eq!(strip_prefix(line), "nfs-ganesha-1710[main] main :MAIN :EVENT :x");
        let early = "21/11/2026 17:16:07 : epoch 6b01d1d7 : vm : ganesha.nfsd-32170[main] main :NFS STARTUP :CRIT :a : b";
        assert_eq!(strip_prefix(early), "ganesha.nfsd-32170[main] main :NFS STARTUP :CRIT :a : b");
        assert_eq!(strip_prefix("plain"), "plain");
    }
}
