//! The test server against the real thing: it serves, two serve side by side, pause stops it,
//! kill and restart bring it back on the same ports through TIME_WAIT, extra exports refuse
//! MOUNT, the portmapper follows registrations, and a dropped server leaves nothing behind.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{PoisonError, RwLock};
use std::time::{Duration, Instant};

use playsim_testserver::{AccessType, Error, ExportSpec, NfsServer};

/// Read by every test that starts servers, written by the one that checks the portmapper, which
/// every start changes.
static PORTMAPPER: RwLock<()> = RwLock::new(());

fn start() -> NfsServer {
    NfsServer::start().unwrap_or_else(|e| panic!("cannot start the server: {e}"))
}

/// One NFS NULL call on `stream`: Ok when answered within `timeout`.
fn nfs_null(stream: &mut TcpStream, timeout: Duration) -> std::io::Result<()> {
    stream.set_read_timeout(Some(timeout))?;
    let words: [u32; 11] = [0x8000_0028, 0x1234_5678, 0, 2, 100_003, 3, 0, 0, 0, 0, 0];
    let call: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    stream.write_all(&call)?;
    let mut reply = [0u8; 28];
    stream.read_exact(&mut reply)?;
    let word = |i: usize| u32::from_be_bytes([reply[i], reply[i + 1], reply[i + 2], reply[i + 3]]);
    // xid, REPLY, MSG_ACCEPTED, verifier AUTH_NONE of length 0, SUCCESS.
    assert_eq!([word(4), word(8), word(12), word(16), word(20), word(24)], [0x1234_5678, 1, 0, 0, 0, 0]);
    Ok(())
}

fn connect(port: u16) -> std::io::Result<TcpStream> {
    TcpStream::connect((Ipv4Addr::LOCALHOST, port))
}

/// Whether `condition` holds within 2 s.
fn wait_for(condition: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !condition() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn process_state(pid: u32) -> Option<char> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("State:")).and_then(|s| s.trim().chars().next())
}

/// Whether a TCP socket with local port `port` is in TIME_WAIT (state 06 in /proc/net/tcp*).
fn in_time_wait(port: u16) -> bool {
    let local = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|file| {
        std::fs::read_to_string(file).unwrap_or_default().lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 3 && format!("{} ", fields[1]).ends_with(&local) && fields[3] == "06"
        })
    })
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn serves_its_export_on_its_ports() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    let server = start();
    eprintln!("started in {:?}", started.elapsed());

    assert_eq!(server.host(), "127.0.0.1");
    assert_ne!(server.nfs_port(), server.mount_port());
    let mut stream = connect(server.nfs_port()).unwrap();
    nfs_null(&mut stream, Duration::from_secs(5)).unwrap();

    let export = server.export_dir().to_str().unwrap().to_owned();
    assert!(export.ends_with("/export"), "{export}");
    assert_eq!(server.export_list().unwrap(), vec![export.clone()]);
    let mode = std::fs::metadata(server.export_dir()).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o755);

    let pid = server.pid().unwrap();
    assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap().trim(), "ganesha.nfsd");
    assert!(server.log_tail(30).contains("NFS SERVER INITIALIZED"));

    let ports = format!("?mountport={}&nfsport={}", server.mount_port(), server.nfs_port());
    assert_eq!(server.url(""), format!("nfs://127.0.0.1{export}{ports}"));
    assert_eq!(
        server.url("/shot/shot.%07d.dpx"),
        format!("nfs://127.0.0.1{export}/shot/shot.%07d.dpx{ports}")
    );
    assert_eq!(server.url("dpx/"), format!("nfs://127.0.0.1{export}/dpx/{ports}"));

    if on_path("nfs-ls") {
        std::fs::write(server.export_dir().join("hello.txt"), b"hello").unwrap();
        let out = Command::new("nfs-ls").arg(server.url("")).output().unwrap();
        let listing = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && listing.contains("hello.txt"), "{listing}");
    }
}

#[test]
fn two_servers_serve_side_by_side() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let first = start();
    let second = start();
    let ports = [first.nfs_port(), first.mount_port(), second.nfs_port(), second.mount_port()];
    assert_eq!(ports.iter().collect::<std::collections::HashSet<_>>().len(), 4, "{ports:?}");
    assert_ne!(first.export_dir(), second.export_dir());
    // The first still serves after the second registered with rpcbind.
    for server in [&first, &second] {
        nfs_null(&mut connect(server.nfs_port()).unwrap(), Duration::from_secs(5)).unwrap();
        assert_eq!(server.export_list().unwrap(), vec![server.export_dir().to_str().unwrap().to_owned()]);
    }
}

#[test]
fn pause_stops_answers_and_resume_brings_them() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let server = start();
    let pid = server.pid().unwrap();
    let mut before = connect(server.nfs_port()).unwrap();
    nfs_null(&mut before, Duration::from_secs(5)).unwrap();

    server.pause();
    // SIGSTOP reaches every thread of the process soon, not at once.
    assert!(wait_for(|| process_state(pid) == Some('T')), "ganesha {pid} did not stop");
    let err = nfs_null(&mut before, Duration::from_millis(500)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{err}");
    // The kernel still accepts connections for the stopped process; nothing answers on them.
    let mut during = connect(server.nfs_port()).unwrap();
    assert!(nfs_null(&mut during, Duration::from_millis(300)).is_err());

    server.resume();
    assert!(wait_for(|| process_state(pid) != Some('T')), "ganesha {pid} did not continue");
    nfs_null(&mut connect(server.nfs_port()).unwrap(), Duration::from_secs(5)).unwrap();
}

#[test]
fn kill_and_restart_come_back_on_the_same_ports_through_time_wait() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let mut server = start();
    let (nfs_port, mount_port) = (server.nfs_port(), server.mount_port());
    std::fs::write(server.export_dir().join("kept.txt"), b"kept").unwrap();
    let old_pid = server.pid().unwrap();
    let mut client = connect(nfs_port).unwrap();
    nfs_null(&mut client, Duration::from_secs(5)).unwrap();

    server.kill();
    assert_eq!(server.pid(), None);
    assert_eq!(process_state(old_pid), None, "ganesha {old_pid} is still there");
    assert_eq!(connect(nfs_port).unwrap_err().kind(), ErrorKind::ConnectionRefused);
    // The server's end closed first: once the client closes too, it lingers in TIME_WAIT.
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest);
    drop(client);
    assert!(wait_for(|| in_time_wait(nfs_port)), "no TIME_WAIT socket on port {nfs_port}");

    server.restart().unwrap_or_else(|e| panic!("restart failed: {e}"));
    assert_eq!((server.nfs_port(), server.mount_port()), (nfs_port, mount_port));
    assert_ne!(server.pid(), Some(old_pid));
    nfs_null(&mut connect(nfs_port).unwrap(), Duration::from_secs(5)).unwrap();
    assert_eq!(server.export_list().unwrap(), vec![server.export_dir().to_str().unwrap().to_owned()]);
    assert_eq!(std::fs::read(server.export_dir().join("kept.txt")).unwrap(), b"kept");

    // A restart of a running server kills it first.
    let pid = server.pid().unwrap();
    server.restart().unwrap();
    assert_eq!(process_state(pid), None);
    nfs_null(&mut connect(nfs_port).unwrap(), Duration::from_secs(5)).unwrap();
}

#[test]
fn drop_leaves_no_process_and_no_directory() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let server = start();
    let pid = server.pid().unwrap();
    let root = server.export_dir().parent().unwrap().to_owned();
    server.pause();
    drop(server);
    assert_eq!(process_state(pid), None, "ganesha {pid} outlived its server");
    assert!(!root.exists(), "{} outlived its server", root.display());

    // Also after kill, and after a panic.
    let mut server = start();
    server.kill();
    drop(server);
    let (pid_tx, pid_rx) = std::sync::mpsc::channel();
    let panicked = std::thread::spawn(move || {
        let server = start();
        pid_tx.send(server.pid().unwrap()).unwrap();
        panic!("a test failing while it holds a server");
    })
    .join();
    assert!(panicked.is_err());
    let pid = pid_rx.recv().unwrap();
    assert_eq!(process_state(pid), None, "ganesha {pid} outlived a panicking test");
}

#[test]
fn extra_exports_refuse_mount() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let server = NfsServer::builder()
        .extra_export(ExportSpec { access_type: AccessType::None, ..ExportSpec::new("denied") })
        .extra_export(ExportSpec { clients: Some("192.0.2.1".into()), ..ExportSpec::new("elsewhere") })
        .extra_export(ExportSpec { access_type: AccessType::ReadOnly, ..ExportSpec::new("ro") })
        .start()
        .unwrap_or_else(|e| panic!("cannot start the server: {e}"));
    let dir = |name| server.extra_export_dir(name).unwrap().to_str().unwrap().to_owned();
    assert!(dir("denied").ends_with("/denied"));
    assert_eq!(server.extra_export_dir("nope"), None);
    assert_eq!(
        server.extra_export_url("ro", "a.dpx").unwrap(),
        format!(
            "nfs://127.0.0.1{}/a.dpx?mountport={}&nfsport={}",
            dir("ro"),
            server.mount_port(),
            server.nfs_port()
        )
    );
    // Ganesha lists only what this client may mount.
    let mut listed = server.export_list().unwrap();
    listed.sort();
    let mut expected = vec![server.export_dir().to_str().unwrap().to_owned(), dir("ro")];
    expected.sort();
    assert_eq!(listed, expected);

    if !on_path("nfs-ls") {
        eprintln!("nfs-ls (libnfs-utils) is not installed: MOUNT replies not checked");
        return;
    }
    for (url, refused) in [
        (server.url(""), false),
        (server.extra_export_url("ro", "").unwrap(), false),
        (server.extra_export_url("denied", "").unwrap(), true),
        (server.extra_export_url("elsewhere", "").unwrap(), true),
        (server.url_for(Path::new("/not/exported"), ""), true),
    ] {
        let out = Command::new("nfs-ls").arg(&url).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if refused {
            assert!(stderr.contains("MNT3ERR_ACCES"), "{url}: {stderr}");
        } else {
            assert!(out.status.success(), "{url}: {stderr}");
        }
    }
}

#[test]
fn bad_export_specs_are_refused() {
    for (builder, expected) in [
        (NfsServer::builder().extra_export(ExportSpec::new("a/b")), "invalid export `a/b`"),
        (NfsServer::builder().extra_export(ExportSpec::new("export")), "invalid export `export`"),
        (
            NfsServer::builder().extra_export(ExportSpec::new("x")).extra_export(ExportSpec::new("x")),
            "invalid export `x`: given twice",
        ),
    ] {
        let err = builder.start().unwrap_err();
        assert!(matches!(err, Error::InvalidExport { .. }), "{err:?}");
        assert!(err.to_string().starts_with(expected), "{err}");
    }
}

/// Every start takes the portmapper's name; `register_with_portmapper` takes it back, and a
/// dropped server hands it on.
#[test]
fn the_newest_server_holds_the_portmapper() {
    let _alone = PORTMAPPER.write().unwrap_or_else(PoisonError::into_inner);
    let first = start();
    assert!(first.registered_with_portmapper());
    let second = start();
    assert!(second.registered_with_portmapper());
    assert!(!first.registered_with_portmapper());

    first.register_with_portmapper().unwrap();
    assert!(first.registered_with_portmapper());
    if on_path("nfs-ls") {
        // A URL without ports finds the server through the portmapper.
        std::fs::write(first.export_dir().join("first.txt"), b"1").unwrap();
        let url = format!("nfs://127.0.0.1{}", first.export_dir().display());
        let out = Command::new("nfs-ls").arg(&url).output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("first.txt"), "{out:?}");
    }

    // Dropping the named server hands the name to the other one.
    drop(first);
    assert!(second.registered_with_portmapper());
}

#[test]
fn many_servers_start_at_once() {
    let _shared = PORTMAPPER.read().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    let servers: Vec<NfsServer> = std::thread::scope(|s| {
        (0..6).map(|_| s.spawn(start)).collect::<Vec<_>>().into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!("6 servers started in {:?}", started.elapsed());
    let mut ports: Vec<u16> = servers.iter().flat_map(|s| [s.nfs_port(), s.mount_port()]).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 12);
    for server in &servers {
        nfs_null(&mut connect(server.nfs_port()).unwrap(), Duration::from_secs(5)).unwrap();
    }
}
