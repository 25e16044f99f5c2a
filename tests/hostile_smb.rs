//! `smb://` against a real Samba whose READ replies are spoiled on their way (playsim-testserver's
//! [`SmbProxy`]): a byte flipped, a reply cut with its connection, a reply 10 s late. For each,
//! the real `playsim play --verify` either recovers or counts the frame as unreadable with a
//! message naming the file and the frame; no spoiled byte is ever decoded as a frame, and the
//! run completes with its report. Each case records a row of `cargo xtask reliability`'s table
//! of hostile replies.
//!
//! The proxy also keeps the server's first messages of each command: with
//! `PLAYSIM_WRITE_FUZZ_SEEDS=1`, the corruption case writes them as the `transport_reply` fuzz
//! target's seeds (`crates/playsim-fuzz/corpus/transport_reply/smb-*`).

use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use playsim::report::{DropCauseName, Report, RunStatus};
use playsim_testserver::{SmbMisbehaviour, SmbProxy, SmbServer};

use crate::util::{
    generate, playsim, record_reliability, Background, ReliabilityRow, ReliabilityTable, Run, SMALL_PRESET,
};

/// Frames in the served sequence: one second at 24 fps.
const N_FRAMES: u64 = 24;
/// READ replies spoiled in each case.
const N_SPOILED: u64 = 3;
/// The longest the run may take to start presenting, before the replies are spoiled: a reply
/// spoiled in the preroll would delay the start rather than drop a frame.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A Samba server with the sequence, and the proxy in front of it.
struct Setup {
    server: SmbServer,
    proxy: SmbProxy,
}

impl Setup {
    fn start() -> Result<Setup> {
        let server = SmbServer::start().context("starting smbd")?;
        generate(&server.export_dir().join("seq"), SMALL_PRESET, N_FRAMES, &[])?;
        let proxy = SmbProxy::start(([127, 0, 0, 1], server.port()).into()).context("starting the proxy")?;
        Ok(Setup { server, proxy })
    }

    /// The sequence's URL through the proxy.
    fn url(&self) -> String {
        let direct = self.server.url("seq");
        direct.replace(&format!(":{}/", self.server.port()), &format!(":{}/", self.proxy.port()))
    }

    /// `playsim play URL --fps 24 --loop --verify --duration SECONDS`; the proxy spoils
    /// `N_SPOILED` READ replies with `misbehaviour` once the run has presented frames for a
    /// second (its live CSV says so). Fails if the run takes past `limit`.
    fn play(&self, seconds: u32, misbehaviour: SmbMisbehaviour, limit: Duration) -> Result<(Run, Report)> {
        let tmp = tempfile::tempdir()?;
        let json = tmp.path().join("r.json");
        let live = tmp.path().join("live.csv");
        let mut child = Background::spawn(
            playsim()
                .args(["play", &self.url(), "--fps", "24", "--loop", "--verify", "--quiet"])
                .args(["--duration", &format!("{seconds}s"), "--json"])
                .arg(&json)
                .arg("--live-csv")
                .arg(&live)
                .arg("--smb-credentials")
                .arg(self.server.credentials_file()),
            tmp.path(),
        )?;
        while !presenting(&live) && child.started.elapsed() < START_LIMIT {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.proxy.spoil_reads(misbehaviour, N_SPOILED);
        child.finish(limit, &json)
    }
}

/// Whether the live CSV at `path` has a row with frames presented.
fn presenting(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .any(|row| row.split(',').nth(3).and_then(|p| p.parse::<u64>().ok()).is_some_and(|p| p > 0))
}

fn frames_lost(report: &Report) -> u64 {
    let d = &report.totals.dropped;
    d.storage + d.decode + d.output + d.unreadable
}

/// What every case must hold: a complete run with its report, and no frame that failed
/// `--verify` (a spoiled byte decoded as a frame would).
fn ensure_survived(name: &str, done: &Run, report: &Report) -> Result<()> {
    done.ensure_code(0).with_context(|| format!("{name}: status {:?}", report.status))?;
    ensure!(report.status == RunStatus::Complete, "{name}: status {:?}\n{done}", report.status);
    let unverified: Vec<&str> = report.streams[0]
        .unreadable
        .iter()
        .map(|u| u.message.as_str())
        .filter(|m| m.contains("frame index"))
        .collect();
    ensure!(unverified.is_empty(), "{name}: frames decoded from spoiled bytes: {unverified:?}");
    ensure!(report.totals.dropped.decode == 0, "{name}: drops {:?}\n{done}", report.totals.dropped);
    Ok(())
}

/// A byte flipped in 3 READ replies: the signature no longer matches, the client refuses each
/// reply, and each of those frames is unreadable, named by its file and index.
#[test]
fn corrupt_read_replies_make_their_frames_unreadable_naming_file_and_frame() -> Result<()> {
    let setup = Setup::start()?;
    let (done, report) = setup.play(5, SmbMisbehaviour::Corrupt, Duration::from_secs(40))?;
    let d = &report.totals.dropped;
    let unreadable = &report.streams[0].unreadable;
    let survived = done.code == Some(0) && report.status == RunStatus::Complete && d.unreadable == N_SPOILED;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: "SMB READ replies with a byte flipped (through a proxy to Samba)".into(),
        survived,
        frames_lost: Some(frames_lost(&report)),
        bound: Some(N_SPOILED),
        recover_s: None,
        outcome: format!(
            "{} unreadable, {} storage drops; first message: {}",
            d.unreadable,
            d.storage,
            unreadable.first().map_or("none", |u| u.message.as_str())
        ),
    })?;
    ensure_survived("corrupt reply", &done, &report)?;
    ensure!(setup.proxy.misbehaved() == N_SPOILED, "{} replies spoiled\n{done}", setup.proxy.misbehaved());
    ensure!(d.unreadable == N_SPOILED, "drops {d:?}: {unreadable:?}\n{done}");
    ensure!(frames_lost(&report) <= N_SPOILED + 2, "drops {d:?}\n{done}");
    for u in unreadable {
        ensure!(u.message.contains(&format!("frame.{:07}.dpx", u.frame_number)), "{u:?}");
        ensure!(u.message.contains(&format!("index {}", u.frame_idx)), "{u:?}");
        ensure!(u.message.contains("127.0.0.1"), "the server is not named: {u:?}");
    }
    ensure!(!done.stdout.contains(setup.server.password()), "the password shows:\n{done}");

    // The server's own messages, as the proxy kept them: the fuzz target's seeds.
    let recorded = setup.proxy.recorded();
    for (command, name) in [(0x0000u16, "NEGOTIATE"), (0x0005, "CREATE"), (0x0008, "READ")] {
        ensure!(recorded.contains_key(&command), "no {name} reply recorded");
    }
    if std::env::var_os("PLAYSIM_WRITE_FUZZ_SEEDS").is_some() {
        write_seeds(&recorded)?;
    }
    Ok(())
}

/// Writes the recorded replies as the `transport_reply` fuzz target's seeds for `smb` (each
/// prefixed `smb` and a NUL, which route it to the SMB transport): each whole message for
/// the receive path (selector 0) and the header-and-body parser (1), and the bodies with
/// offsets of their own for their parsers (4 NEGOTIATE, 5 CREATE, 6 QUERY_INFO, 7 a
/// directory listing).
fn write_seeds(recorded: &std::collections::BTreeMap<u16, Vec<Vec<u8>>>) -> Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/playsim-fuzz/corpus/transport_reply");
    std::fs::create_dir_all(&dir)?;
    for (command, messages) in recorded {
        for (i, message) in messages.iter().enumerate() {
            let mut seeds = vec![(0u8, "frame", message.as_slice()), (1, "message", message.as_slice())];
            let body = message.get(64..).unwrap_or_default();
            match command {
                0x0000 => seeds.push((4, "negotiate-body", body)),
                0x0005 => seeds.push((5, "create-body", body)),
                0x0010 => seeds.push((6, "query-info-body", body)),
                0x000e => seeds.push((7, "query-directory-body", body)),
                _ => {}
            }
            for (selector, kind, bytes) in seeds {
                let mut seed = b"smb\0".to_vec();
                seed.push(selector);
                seed.extend(bytes);
                std::fs::write(dir.join(format!("smb-samba-{command:04x}-{kind}-{i}.bin")), seed)?;
            }
        }
    }
    Ok(())
}

/// READ replies cut in the middle with their connection, 3 in a row: the client reconnects and
/// reads again each time; the read cut on all 3 of its tries is one unreadable frame, the
/// frames in flight with it are read again, and the run goes on.
#[test]
fn a_read_reply_cut_with_its_connection_costs_frames_not_the_run() -> Result<()> {
    let setup = Setup::start()?;
    let (done, report) = setup.play(6, SmbMisbehaviour::Cut, Duration::from_secs(45))?;
    let d = &report.totals.dropped;
    let presented_late = report.streams[0]
        .timeline
        .iter()
        .filter(|f| f.presented_ns.is_some() && f.due_ns >= 4_000_000_000)
        .count();
    let survived = done.code == Some(0) && report.status == RunStatus::Complete && presented_late > 24;
    // Each cut costs at most its own frame: the frames whose replies were in flight with it
    // are read again on the new connection.
    let bound = N_SPOILED;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: "SMB READ reply cut mid-message, connection closed (through a proxy to Samba)".into(),
        survived,
        frames_lost: Some(frames_lost(&report)),
        bound: Some(bound),
        recover_s: None,
        outcome: format!(
            "{} unreadable, {} storage drops, {} connections; {presented_late} frames presented in the last 2 s",
            d.unreadable,
            d.storage,
            setup.proxy.n_accepted()
        ),
    })?;
    ensure_survived("cut reply", &done, &report)?;
    ensure!(setup.proxy.misbehaved() >= 1, "no reply cut\n{done}");
    ensure!(frames_lost(&report) <= bound, "drops {d:?}\n{done}");
    ensure!(presented_late > 24, "playback did not go on: {presented_late} frames\n{done}");
    Ok(())
}

/// 3 READ replies 10 s late, the others on time (SMB2 replies may come in any order): those
/// frames are storage drops, the rest play, and the late replies, when they come, change nothing.
#[test]
fn read_replies_10_s_late_are_storage_drops_and_the_run_goes_on() -> Result<()> {
    let setup = Setup::start()?;
    let late = Duration::from_secs(10);
    let (done, report) = setup.play(14, SmbMisbehaviour::Late(late), Duration::from_secs(60))?;
    let d = &report.totals.dropped;
    let storage_drops: Vec<u64> = report.streams[0]
        .timeline
        .iter()
        .filter(|f| f.cause == Some(DropCauseName::Storage))
        .map(|f| f.frame_idx)
        .collect();
    let survived = done.code == Some(0) && report.status == RunStatus::Complete && d.unreadable == 0;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: format!("SMB READ replies {} s late (through a proxy to Samba)", late.as_secs()),
        survived,
        frames_lost: Some(frames_lost(&report)),
        bound: Some(N_SPOILED + 2),
        recover_s: None,
        outcome: format!(
            "{} storage drops (frames {storage_drops:?}), {} unreadable",
            d.storage, d.unreadable
        ),
    })?;
    ensure_survived("late reply", &done, &report)?;
    ensure!(setup.proxy.misbehaved() == N_SPOILED, "{} replies held\n{done}", setup.proxy.misbehaved());
    ensure!(d.storage >= N_SPOILED && d.unreadable == 0, "drops {d:?}\n{done}");
    ensure!(frames_lost(&report) <= N_SPOILED + 2, "drops {d:?}: storage {storage_drops:?}\n{done}");
    Ok(())
}
