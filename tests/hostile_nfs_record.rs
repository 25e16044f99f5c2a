//! `playsim record` to `nfs://` against a misbehaving server (playsim-testserver's
//! [`HostileServer`], writing into its `out` directory): the write calls of playsim's NFS client
//! (CREATE, WRITE, COMMIT, RENAME) under bad replies. For each, every frame on the server is
//! whole, under its real name and byte for byte the generator's; a frame not written is a
//! storage drop or a failure whose message names the server, the file and the frame; the run
//! never panics, never waits past `--nfs-timeout`, and writes its figures.
//!
//! Each case records 24 frames of 160x32 DPX at 24 fps, with the misbehaviour on frames 5 to 7,
//! and records a row of `cargo xtask reliability`'s table of hostile replies.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use playsim_testserver::{Call, HostileServer, Misbehaviour, When};

use crate::hostile_nfs::{sequence, Files};
use crate::util::{
    generate, playsim, record_reliability, Background, ReliabilityRow, ReliabilityTable, Run, SMALL_PRESET,
};

/// Frames recorded: one second at 24 fps.
const N_FRAMES: u64 = 24;
/// The frames whose calls are spoilt.
const SPOILT: std::ops::Range<usize> = 5..8;
/// record's default queue (-q).
const QUEUE: u64 = 4;
/// Frames a busy 2-core machine may drop besides those a fault costs.
const BUSY_MACHINE_DROPS: u64 = 2;

/// A server spoiling `call`s with `misbehaviour` on the spoilt frames.
fn server(misbehaviour: Misbehaviour, when: When, call: Call) -> Result<HostileServer> {
    HostileServer::start_on(sequence()?, misbehaviour, when, call).context("starting the hostile server")
}

/// A record run: how it ended and its `--json` figures.
struct Recorded {
    done: Run,
    figures: serde_json::Value,
}

impl Recorded {
    fn count(&self, key: &str) -> u64 {
        self.figures[key].as_u64().unwrap_or(u64::MAX)
    }

    /// Frames not written: dropped or failed.
    fn lost(&self) -> u64 {
        self.count("frames_dropped") + self.count("frames_failed")
    }
}

/// `playsim record` of `n_frames` into the server's `out` directory at 24 fps, with `extra`
/// flags (`--nfs-timeout 3s` unless they give one); fails if it runs past `limit`.
fn record(server: &HostileServer, n_frames: u64, extra: &[&str], limit: Duration) -> Result<Recorded> {
    let timeout: &[&str] = if extra.contains(&"--nfs-timeout") { &[] } else { &["--nfs-timeout", "3s"] };
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("r.json");
    let mut child = Background::spawn(
        playsim()
            .args(["record", &server.out_url(), "--preset", SMALL_PRESET, "--fps", "24", "--encoders", "2"])
            .args(["--frames", &n_frames.to_string(), "--json"])
            .arg(&json)
            .args(timeout)
            .args(extra),
        tmp.path(),
    )?;
    let done = child.wait(limit)?;
    done.ensure_no_panic()?;
    let text = std::fs::read_to_string(&json).with_context(|| format!("no figures:\n{done}"))?;
    Ok(Recorded { figures: serde_json::from_str(&text)?, done })
}

/// Checks that every file on the server is a whole frame under its real name, the generator's
/// bytes (`reference`); returns how many there are.
fn ensure_whole_frames(name: &str, server: &HostileServer, reference: &Files, done: &Run) -> Result<u64> {
    let written = server.written();
    for (file, bytes) in &written {
        ensure!(!file.ends_with(".partial"), "{name}: {file} left on the server\n{done}");
        let want = reference.iter().find(|(n, _)| n == file).map(|(_, b)| b);
        let want = want.with_context(|| format!("{name}: {file} is not a frame's name"))?;
        ensure!(bytes == want, "{name}: {file} is {} bytes against {} generated", bytes.len(), want.len());
    }
    Ok(written.len() as u64)
}

/// A case where playsim should recover: every frame written and whole. Records its row.
fn ensure_recovered(name: &str, server: &HostileServer, recorded: &Recorded) -> Result<()> {
    let Recorded { done, figures } = recorded;
    let whole = ensure_whole_frames(name, server, &sequence()?, done);
    let lost = recorded.lost();
    let survived = done.code == Some(0) && whole.is_ok() && lost <= BUSY_MACHINE_DROPS;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: name.into(),
        survived,
        frames_lost: Some(lost),
        bound: Some(BUSY_MACHINE_DROPS),
        recover_s: None,
        outcome: format!(
            "recovered: {} of {N_FRAMES} frames written whole, {} replies spoilt, {} restarts",
            recorded.count("frames_written"),
            server.misbehaved(),
            server.restarts()
        ),
    })?;
    done.ensure_code(0)?;
    let whole = whole?;
    ensure!(server.misbehaved() >= 1, "{name}: the server never misbehaved\n{done}");
    ensure!(lost <= BUSY_MACHINE_DROPS, "{name}: {lost} frames lost: {figures}\n{done}");
    ensure!(whole == N_FRAMES - lost, "{name}: {whole} files for {} frames written", N_FRAMES - lost);
    for frame in SPOILT {
        let file = format!("frame.{frame:07}.dpx");
        ensure!(server.written().iter().any(|(n, _)| *n == file), "{name}: {file} was not written\n{done}");
    }
    Ok(())
}

/// The server restarts before it answers the COMMITs of frames 5 to 7, losing every byte
/// written UNSTABLE and not committed (those frames', and any other frame's in flight): the
/// client sees the verifier change and writes them again, so every frame is whole.
#[test]
fn a_restart_before_commit_has_the_lost_writes_sent_again() -> Result<()> {
    let server = server(Misbehaviour::RestartBeforeCommit, When::EveryCallOn(SPOILT), Call::Commit)?;
    let recorded = record(&server, N_FRAMES, &[], Duration::from_secs(30))?;
    ensure_recovered("server restart before COMMIT (lost unstable writes)", &server, &recorded)?;
    ensure!(server.restarts() == 3, "{} restarts", server.restarts());
    Ok(())
}

/// WRITEs answered as half written: the client sends the rest.
#[test]
fn short_writes_are_finished_by_more_writes() -> Result<()> {
    let server = server(Misbehaviour::WriteShort, When::EveryCallOn(SPOILT), Call::Write)?;
    let recorded = record(&server, N_FRAMES, &[], Duration::from_secs(30))?;
    ensure_recovered("WRITE shorter than sent", &server, &recorded)
}

/// The first WRITE reply of each spoilt frame is cut by a reset: the client reconnects and
/// sends it again.
#[test]
fn a_write_reply_cut_by_a_reset_is_sent_again_on_a_new_connection() -> Result<()> {
    let server = server(Misbehaviour::ResetMidReply, When::FirstCallOn(SPOILT), Call::Write)?;
    let connections_before = server.connections();
    let recorded = record(&server, N_FRAMES, &[], Duration::from_secs(30))?;
    ensure_recovered("WRITE reply cut by a reset", &server, &recorded)?;
    let connections = server.connections() - connections_before;
    ensure!(connections >= 2 + 3, "{connections} connections: the cut replies did not reconnect");
    Ok(())
}

/// The first RENAME reply of each spoilt frame is cut after the rename took effect: the retry
/// answers NFS3ERR_NOENT, which the client takes for done, as the target is there.
#[test]
fn a_rename_cut_after_it_took_effect_is_found_done() -> Result<()> {
    let server = server(Misbehaviour::ResetMidReply, When::FirstCallOn(SPOILT), Call::Rename)?;
    let recorded = record(&server, N_FRAMES, &[], Duration::from_secs(30))?;
    ensure_recovered("RENAME reply cut after it took effect", &server, &recorded)
}

/// A reply to a WRITE with a wrong xid: the connection is given up and the WRITE sent again.
#[test]
fn a_write_reply_with_a_wrong_xid_is_sent_again() -> Result<()> {
    let server = server(Misbehaviour::WrongXid, When::FirstCallOn(SPOILT), Call::Write)?;
    let recorded = record(&server, N_FRAMES, &[], Duration::from_secs(30))?;
    ensure_recovered("WRITE reply with a wrong xid", &server, &recorded)
}

/// The export's disk is full at frame 5 (NFS3ERR_NOSPC). By default the run stops there, as
/// capture software does: exit 1, the figures written with the failure naming the server,
/// the file and the error, and only whole frames on the server. With `--on-error continue`
/// frame 5 fails and every other frame is written.
#[test]
fn a_full_disk_fails_the_frame_and_stops_the_run_or_goes_on() -> Result<()> {
    let reference = sequence()?;
    let stop = server(Misbehaviour::NoSpace, When::EveryCallOn(5..6), Call::Write)?;
    let stopped = record(&stop, N_FRAMES, &[], Duration::from_secs(30))?;
    let whole = ensure_whole_frames("NFS3ERR_NOSPC, --on-error stop", &stop, &reference, &stopped.done);
    let failure = stopped.figures["failure"].as_str().unwrap_or_default().to_owned();
    let names = [stop.nfs_addr().to_string(), "frame.0000005.dpx".into(), "NFS3ERR_NOSPC".into()];
    let named = names.iter().all(|n| failure.contains(n.as_str()));
    let n_whole = *whole.as_ref().unwrap_or(&0);
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: "WRITE answered NFS3ERR_NOSPC (record, --on-error stop)".into(),
        survived: stopped.done.code == Some(1) && whole.is_ok() && named,
        frames_lost: Some(stopped.lost()),
        bound: None,
        recover_s: None,
        outcome: format!("stopped at the full disk, {n_whole} whole frames kept: {failure}"),
    })?;
    let done = &stopped.done;
    done.ensure_code(1)?;
    whole?;
    ensure!(named, "the failure {failure:?} does not name all of {names:?}\n{done}");
    ensure!(stopped.count("frames_failed") >= 1, "{}", stopped.figures);
    ensure!(stop.written().iter().all(|(n, _)| n != "frame.0000005.dpx"), "frame 5 is there\n{done}");

    let go_on = server(Misbehaviour::NoSpace, When::EveryCallOn(5..6), Call::Write)?;
    let went_on = record(&go_on, N_FRAMES, &["--on-error", "continue"], Duration::from_secs(30))?;
    let done = &went_on.done;
    done.ensure_code(0)?;
    let whole = ensure_whole_frames("NFS3ERR_NOSPC, --on-error continue", &go_on, &reference, done)?;
    ensure!(went_on.count("frames_failed") == 1, "{}\n{done}", went_on.figures);
    ensure!(whole + went_on.lost() == N_FRAMES, "{whole} whole frames: {}\n{done}", went_on.figures);
    ensure!(go_on.written().iter().all(|(n, _)| n != "frame.0000005.dpx"), "frame 5 is there\n{done}");
    Ok(())
}

/// The first WRITE of frames 5 to 7 answered 2 s late (within `--nfs-timeout 10s`): the queue
/// fills behind them, and the frames that arrive meanwhile are storage drops, none charged to
/// encode; the run goes on and every file written is whole. At most (delay + 1 s) × fps + the
/// queue are lost, the bound for an outage.
#[test]
fn write_replies_2_s_late_are_storage_drops_and_the_run_goes_on() -> Result<()> {
    let late = Duration::from_secs(2);
    let n_frames = 72;
    let server = server(Misbehaviour::LateReply(late), When::FirstCallOn(SPOILT), Call::Write)?;
    let recorded = record(&server, n_frames, &["--nfs-timeout", "10s"], Duration::from_secs(40))?;
    let tmp = tempfile::tempdir()?;
    generate(tmp.path(), SMALL_PRESET, n_frames, &[])?;
    let mut reference = Vec::new();
    for entry in std::fs::read_dir(tmp.path())? {
        let entry = entry?;
        reference.push((entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path())?));
    }
    let done = &recorded.done;
    let whole = ensure_whole_frames("WRITE replies late", &server, &reference, done);
    let bound = (late.as_secs() + 1) * 24 + QUEUE;
    let (storage, encode) = (recorded.count("dropped_storage"), recorded.count("dropped_encode"));
    let lost = recorded.lost();
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: format!("WRITE replies {} s late (record, --nfs-timeout 10s)", late.as_secs()),
        survived: done.code == Some(0) && whole.is_ok() && storage >= 1 && encode == 0 && lost <= bound,
        frames_lost: Some(lost),
        bound: Some(bound),
        recover_s: None,
        outcome: format!("recovered: {storage} storage drops, {encode} encode drops, the rest written whole"),
    })?;
    done.ensure_code(0)?;
    let whole = whole?;
    ensure!(storage >= 1 && encode == 0, "drops: {}\n{done}", recorded.figures);
    ensure!(lost <= bound, "{lost} frames lost, more than {bound}: {}\n{done}", recorded.figures);
    ensure!(whole + lost == n_frames, "{whole} whole frames and {lost} lost of {n_frames}\n{done}");
    Ok(())
}
