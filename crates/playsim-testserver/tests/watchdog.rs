//! A test process that dies without dropping its servers takes their Ganeshas along: when it is
//! SIGKILLed, and when it exits with a server in a `static`, which is never dropped. A SIGKILLed
//! owner of an smbd takes it along too, with its children, a stopped connection child included.
//!
//! This binary has its own `main` (`harness = false`): it runs itself as the process to be
//! killed, with `--hold-servers` or `--exit-with-a-static-server`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use playsim_testserver::{portmap, NfsServer, SmbServer};

const TESTS: [(&str, fn()); 3] = [
    ("a_sigkilled_owner_takes_its_ganeshas_along", a_sigkilled_owner_takes_its_ganeshas_along),
    (
        "an_owner_exiting_with_a_static_server_takes_it_along",
        an_owner_exiting_with_a_static_server_takes_it_along,
    ),
    (
        "a_sigkilled_owner_takes_its_smbd_and_its_children_along",
        a_sigkilled_owner_takes_its_smbd_and_its_children_along,
    ),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--hold-servers") {
        hold_servers();
    }
    if args.iter().any(|a| a == "--hold-an-smb-server") {
        hold_an_smb_server();
    }
    if args.iter().any(|a| a == "--exit-with-a-static-server") {
        exit_with_a_static_server();
        return;
    }
    if args.iter().any(|a| a == "--list") {
        for (name, _) in TESTS {
            println!("{name}: test");
        }
        return;
    }
    // Like libtest: words that are not flags filter tests by name.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<_> = TESTS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let named_before = portmap::named_ports().ok().flatten();
    for (name, test) in &selected {
        test();
        println!("test {name} ... ok");
    }
    restore_portmapper(named_before);
    let n_filtered = TESTS.len() - selected.len();
    println!(
        "\ntest result: ok. {} passed; 0 failed; 0 ignored; 0 measured; {n_filtered} filtered out\n",
        selected.len()
    );
}

/// Starts two servers, one dropped-never (in a static), prints their pids and directories, and
/// waits to be killed.
fn hold_servers() -> ! {
    static KEPT: OnceLock<NfsServer> = OnceLock::new();
    let local = NfsServer::start().expect("cannot start a server");
    let kept = KEPT.get_or_init(|| NfsServer::start().expect("cannot start a server"));
    for server in [&local, kept] {
        println!("{} {}", server.pid().unwrap(), server.export_dir().parent().unwrap().display());
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Starts an smbd, connects to it and stops the child serving that connection, prints the
/// parent's pid, the server's directory and the child's pid, and waits to be killed.
fn hold_an_smb_server() -> ! {
    let mut server = SmbServer::start().expect("cannot start smbd");
    let _client = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.connection_pids().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let child = server.connection_pids()[0];
    assert_eq!(server.pause_connections(), 1);
    println!("{} {} {child}", server.pid().unwrap(), server.export_dir().parent().unwrap().display());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Starts a server in a static, prints its pid and directory, and returns from `main`.
fn exit_with_a_static_server() {
    static KEPT: OnceLock<NfsServer> = OnceLock::new();
    let kept = KEPT.get_or_init(|| NfsServer::start().expect("cannot start a server"));
    println!("{} {}", kept.pid().unwrap(), kept.export_dir().parent().unwrap().display());
}

fn a_sigkilled_owner_takes_its_ganeshas_along() {
    let (mut owner, servers) = spawn_owner("--hold-servers", 2);
    let started = Instant::now();
    owner.kill().unwrap();
    owner.wait().unwrap();
    for (pid, root) in servers {
        wait_gone(pid, &root);
        eprintln!(
            "ganesha {pid} and {} gone {:?} after their owner was killed",
            root.display(),
            started.elapsed()
        );
    }
}

fn a_sigkilled_owner_takes_its_smbd_and_its_children_along() {
    let mut owner = Command::new(std::env::current_exe().unwrap())
        .arg("--hold-an-smb-server")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let line =
        BufReader::new(owner.stdout.take().unwrap()).lines().next().expect("the owner printed nothing");
    let line = line.unwrap();
    let fields: Vec<&str> = line.split(' ').collect();
    let (parent, root, child): (u32, PathBuf, u32) =
        (fields[0].parse().unwrap(), PathBuf::from(fields[1]), fields[2].parse().unwrap());
    assert_eq!(std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap().trim(), "smbd");
    owner.kill().unwrap();
    owner.wait().unwrap();
    wait_gone(parent, &root);
    wait_gone(child, &root);
}

fn an_owner_exiting_with_a_static_server_takes_it_along() {
    let (mut owner, servers) = spawn_owner("--exit-with-a-static-server", 1);
    assert!(owner.wait().unwrap().success());
    for (pid, root) in servers {
        wait_gone(pid, &root);
    }
}

/// Runs this binary as an owner of `n_servers` servers, and reads their pids and directories.
fn spawn_owner(mode: &str, n_servers: usize) -> (std::process::Child, Vec<(u32, PathBuf)>) {
    let mut owner = Command::new(std::env::current_exe().unwrap())
        .arg(mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(owner.stdout.take().unwrap()).lines();
    let servers = (0..n_servers)
        .map(|_| {
            let line = lines.next().expect("the owner printed no server").unwrap();
            let (pid, root) = line.split_once(' ').unwrap();
            let pid: u32 = pid.parse().unwrap();
            assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap().trim(), "ganesha.nfsd");
            (pid, PathBuf::from(root))
        })
        .collect();
    (owner, servers)
}

/// The killed owners' servers were not dropped, so left the portmapper naming their dead ports:
/// name whoever it named before, if that still serves, else nobody.
fn restore_portmapper(named_before: Option<(u16, u16)>) {
    let serves = |(nfs, mount): (u16, u16)| {
        [nfs, mount]
            .iter()
            .all(|port| std::net::TcpStream::connect((std::net::Ipv4Addr::LOCALHOST, *port)).is_ok())
    };
    let Ok(Some(named)) = portmap::named_ports() else { return };
    if serves(named) {
        return;
    }
    let _ = match named_before.filter(|before| serves(*before)) {
        Some((nfs, mount)) => portmap::register(nfs, mount),
        None => portmap::unregister(),
    };
}

/// Waits until process `pid` is gone (or a zombie, whose sockets are closed) and directory
/// `root` too, at most 5 s.
fn wait_gone(pid: u32, root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()));
        let process_gone = matches!(state, None | Some('Z'));
        if process_gone && !root.exists() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "ganesha {pid} (state {state:?}) or {} (exists: {}) still there",
            root.display(),
            root.exists()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
