//! A view with known numbers for the tests.

use std::time::Duration;

use crate::view::{DashboardView, Drops, StageView, StreamView};

/// Two streams (A dropping for storage and output, B for decode and unreadable frames), three
/// stages, no clients, 1:23 into a 5-minute run.
pub(crate) fn sample_view() -> DashboardView {
    DashboardView {
        title: "playsim play nfs://host/export/seq  DPX 4K 24 fps  2 streams".into(),
        elapsed: Duration::from_secs(83),
        planned: Some(Duration::from_secs(300)),
        streams: vec![
            StreamView {
                name: "A".into(),
                presented: 1992,
                dropped: Drops { storage: 3, decode: 0, output: 1, unreadable: 0 },
                buffered: 6,
                window: 8,
                slack_ms: vec![10.0, -3.5, 20.0, 15.0, 12.0],
                mb_per_s: 1185.2,
                fps: 24.0,
            },
            StreamView {
                name: "B".into(),
                presented: 1990,
                dropped: Drops { storage: 0, decode: 7, output: 0, unreadable: 2 },
                buffered: 1,
                window: 8,
                slack_ms: vec![5.0, 3.0, 2.0],
                mb_per_s: 1190.4,
                fps: 23.9,
            },
        ],
        stages: vec![
            StageView { name: "read".into(), cpu_percent: 12.5, p99_ms: Some(8.1) },
            StageView { name: "decode".into(), cpu_percent: 180.0, p99_ms: Some(35.2) },
            StageView { name: "output".into(), cpu_percent: 4.0, p99_ms: None },
        ],
        clients: Vec::new(),
        key_hint: None,
        status: Some("matrix: dpx-4k @ 24 fps, trial 3 of 41, 2 streams".into()),
    }
}

/// A pseudo-terminal for a dashboard to draw on, with a thread that keeps reading what it
/// draws (a terminal nobody reads would block the dashboard's writes once its buffer is full).
pub(crate) struct Pty {
    master: std::sync::Arc<std::os::fd::OwnedFd>,
    /// The terminal's path, for [`crate::Target::Tty`].
    pub(crate) path: std::path::PathBuf,
    output: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Pty {
    /// A new pseudo-terminal of `cols` by `rows` cells.
    pub(crate) fn new(cols: u16, rows: u16) -> Pty {
        use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
        use std::sync::{Arc, Mutex};

        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let path = std::path::PathBuf::from(name.to_str().expect("utf-8 pts path"));
        let size = rustix::termios::Winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        rustix::termios::tcsetwinsize(&master, size).expect("window size");
        let master = Arc::new(master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let (reader, sink) = (Arc::clone(&master), Arc::clone(&output));
        std::thread::spawn(move || {
            let mut bytes = [0u8; 4096];
            // Ends with EIO once no one has the terminal open.
            while let Ok(n @ 1..) = rustix::io::read(&*reader, &mut bytes) {
                sink.lock().expect("output").extend_from_slice(&bytes[..n]);
            }
        });
        Pty { master, path, output }
    }

    /// Types `keys` on the terminal.
    pub(crate) fn type_keys(&self, keys: &[u8]) {
        crate::tty::write_all(&self.master, keys).expect("typing");
    }

    /// Everything drawn so far, as text (escape sequences included).
    pub(crate) fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().expect("output")).into_owned()
    }

    /// Waits up to 10 s for `done` to hold of what was drawn; panics with it if it does not.
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let output = self.output();
            if done(&output) {
                return output;
            }
            assert!(std::time::Instant::now() < deadline, "no {what} in {output:?}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Whether the terminal is in its usual (canonical, echoing) mode rather than raw.
    pub(crate) fn is_cooked(&self) -> bool {
        use rustix::termios::LocalModes;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(&self.path)
            .expect("terminal");
        let modes = rustix::termios::tcgetattr(&file).expect("tcgetattr").local_modes;
        modes.contains(LocalModes::ICANON | LocalModes::ECHO | LocalModes::ISIG)
    }
}

use std::os::unix::fs::OpenOptionsExt as _;
