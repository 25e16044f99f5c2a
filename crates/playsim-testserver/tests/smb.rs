//! The Samba test server: it serves its share to smbclient with its credentials file, finds the
//! smbd child of a connection (not the parent) and stops it, and leaves nothing behind.

use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use playsim_testserver::SmbServer;

fn wait_for(condition: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[test]
fn serves_its_share_and_stops_a_connection_child_not_the_parent() {
    let mut server = SmbServer::start().expect("smbd starts (cargo xtask deps installs samba)");
    std::fs::write(server.export_dir().join("hello.txt"), b"hello over smb\n").unwrap();
    let credentials = server.credentials_file().display().to_string();
    let out = Command::new("smbclient")
        .args([
            "-p",
            &server.port().to_string(),
            "//127.0.0.1/share",
            "-A",
            &credentials,
            "-c",
            "get hello.txt -",
        ])
        .output()
        .expect("smbclient runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("hello over smb"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    let parent = server.pid().expect("running");
    let _client = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    assert!(wait_for(|| server.connection_pids().len() == 1), "one child per connection");
    let child = server.connection_pids()[0];
    assert_ne!(child, parent);
    assert_eq!(server.pause_connections(), 1);
    assert!(wait_for(|| process_state(child) == Some('T')), "the connection's child is stopped");
    assert_ne!(process_state(parent), Some('T'), "the parent still accepts");
    server.resume_connections();
    assert!(wait_for(|| process_state(child) != Some('T')));

    let root = server.export_dir().parent().unwrap().to_path_buf();
    drop(server);
    assert!(!root.exists(), "its directory is removed");
    assert!(wait_for(|| process_state(parent).is_none_or(|s| s == 'Z')), "smbd is gone");
}
