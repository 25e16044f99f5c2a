//! `nfs://` against a misbehaving server (playsim-testserver's [`HostileServer`]): for each kind
//! of bad reply, the real `playsim play` either recovers (the call sent again, on a new
//! connection if need be, and counted) or counts the frame as unreadable with a message naming
//! the server, the file and the frame; it never panics, never waits past `--nfs-timeout`, and
//! never allocates what a reply claims (peak RSS stays that of a normal run).
//!
//! Each case plays a 24-frame 160x32 DPX sequence at 24 fps, looping, for a few seconds, with
//! the misbehaviour on frames 5 to 7; each records a row of `cargo xtask reliability`'s table
//! of hostile replies.

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use playsim::report::{DropCauseName, Report, RunStatus};
use playsim_testserver::{HostileServer, Misbehaviour, When};

use crate::util::{
    generate, playsim, record_reliability, Background, ReliabilityRow, ReliabilityTable, Run, SMALL_PRESET,
};

/// Frames in the served sequence: one second at 24 fps.
const N_FRAMES: u64 = 24;
/// The frames whose replies are spoilt.
const SPOILT: std::ops::Range<usize> = 5..8;
/// The `--nfs-timeout` of every case but the late reply's.
const SHORT_TIMEOUT: &str = "3s";
/// The engine's default prefetch window, in frames.
const PREFETCH: u64 = 8;
/// Frames a busy 2-core machine may drop besides those a fault costs.
const BUSY_MACHINE_DROPS: u64 = 2;
/// Peak RSS a run may reach: a normal run of this sequence takes a few tens of MB, so a reply
/// that made the client allocate what it claims (2 GiB) would show far above it.
const MAX_PEAK_RSS_BYTES: u64 = 256 << 20;

/// Files as the server holds them: (name, bytes), in frame order.
pub(crate) type Files = Vec<(String, Vec<u8>)>;

/// The sequence's files, generated once.
pub(crate) fn sequence() -> Result<Files> {
    static FILES: OnceLock<std::result::Result<Files, String>> = OnceLock::new();
    FILES
        .get_or_init(|| {
            let make = || -> Result<Files> {
                let tmp = tempfile::tempdir()?;
                generate(tmp.path(), SMALL_PRESET, N_FRAMES, &[])?;
                let mut files = Vec::new();
                for entry in std::fs::read_dir(tmp.path())? {
                    let entry = entry?;
                    files.push((
                        entry.file_name().to_string_lossy().into_owned(),
                        std::fs::read(entry.path())?,
                    ));
                }
                files.sort();
                ensure!(files.len() as u64 == N_FRAMES, "generated {} files", files.len());
                Ok(files)
            };
            make().map_err(|e| format!("{e:#}"))
        })
        .clone()
        .map_err(|e| anyhow::anyhow!("generating the sequence: {e}"))
}

/// A server spoiling replies with `misbehaviour` when `when` says.
fn server(misbehaviour: Misbehaviour, when: When) -> Result<HostileServer> {
    HostileServer::start(sequence()?, misbehaviour, when).context("starting the hostile server")
}

/// `playsim play URL --fps 24 --loop --duration SECONDS` against `server`, with `extra` flags;
/// fails if it runs past `limit`. Returns the run and its report.
fn play(server: &HostileServer, seconds: u32, extra: &[&str], limit: Duration) -> Result<(Run, Report)> {
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("r.json");
    let mut child = Background::spawn(
        playsim()
            .args(["play", &server.url(), "--fps", "24", "--loop", "--quiet"])
            .args(["--duration", &format!("{seconds}s"), "--json"])
            .arg(&json)
            .args(extra),
        tmp.path(),
    )?;
    child.finish(limit, &json)
}

/// A run of 3 s with `--nfs-timeout 3s`, which must end within 15 s.
fn short_play(server: &HostileServer) -> Result<(Run, Report)> {
    play(server, 3, &["--nfs-timeout", SHORT_TIMEOUT], Duration::from_secs(15))
}

fn reconnects(report: &Report) -> u64 {
    report.streams[0].storage.options.get("reconnects").and_then(|r| r.parse().ok()).unwrap_or(0)
}

/// The longest a call waited for a reconnect to answer it (the `reconnect_wait_s` option).
fn reconnect_wait_s(report: &Report) -> Option<f64> {
    report.streams[0].storage.options.get("reconnect_wait_s").and_then(|w| w.parse().ok())
}

/// The dropped frames' timelines, one line each, in ms from the stream's start, for a
/// failure's message.
fn dropped_timeline(report: &Report) -> String {
    let ms = |ns: Option<u64>| ns.map_or("-".to_string(), |ns| format!("{:.1}", ns as f64 / 1e6));
    report.streams[0]
        .timeline
        .iter()
        .filter(|f| f.cause.is_some())
        .map(|f| {
            format!(
                "frame {} {:?}: due {} read {}..{} decoded {} output {}\n",
                f.frame_idx,
                f.cause.unwrap_or(DropCauseName::Storage),
                ms(Some(f.due_ns)),
                ms(f.read_start_ns),
                ms(f.read_done_ns),
                ms(f.decode_done_ns),
                ms(f.output_done_ns)
            )
        })
        .collect()
}

fn frames_lost(report: &Report) -> u64 {
    let d = &report.totals.dropped;
    d.storage + d.decode + d.output + d.unreadable
}

/// The most frames a fault that ends at once may cost: one second of frames and the window.
fn bound() -> u64 {
    24 + PREFETCH
}

/// Checks what every case must hold: a complete run with its report, every loop played, and
/// peak RSS that of a normal run.
fn ensure_survived(name: &str, done: &Run, report: &Report) -> Result<()> {
    done.ensure_code(0).with_context(|| format!("{name}: status {:?}", report.status))?;
    ensure!(report.status == RunStatus::Complete, "{name}: status {:?}\n{done}", report.status);
    let peak = report.memory.peak_rss_bytes;
    ensure!(peak > 0 && peak < MAX_PEAK_RSS_BYTES, "{name}: peak rss {peak} bytes\n{done}");
    Ok(())
}

/// A case where playsim should recover: records its row, then checks the row.
fn ensure_recovered(name: &str, server: &HostileServer, done: &Run, report: &Report) -> Result<()> {
    let lost = frames_lost(report);
    let n_reconnects = reconnects(report);
    let survived = done.code == Some(0)
        && report.status == RunStatus::Complete
        && report.totals.dropped.unreadable == 0
        && lost <= bound();
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: name.into(),
        survived,
        frames_lost: Some(lost),
        bound: Some(bound()),
        recover_s: reconnect_wait_s(report).filter(|_| n_reconnects > 0),
        outcome: format!(
            "recovered, {n_reconnects} reconnect{}; {} replies spoilt, {lost} frames lost, peak rss {} MB",
            if n_reconnects == 1 { "" } else { "s" },
            server.misbehaved(),
            report.memory.peak_rss_bytes >> 20
        ),
    })?;
    ensure_survived(name, done, report)?;
    ensure!(server.misbehaved() >= 1, "{name}: the server never misbehaved\n{done}");
    ensure!(
        report.totals.dropped.unreadable == 0,
        "{name}: unreadable {:?}\n{done}",
        report.streams[0].unreadable
    );
    ensure!(lost <= bound(), "{name}: {lost} frames lost, more than {}\n{done}", bound());
    Ok(())
}

/// A case where the spoilt frames are unreadable: each unreadable entry is one of them, and
/// its message names the server, the file and the frame.
fn ensure_unreadable(
    name: &str,
    server: &HostileServer,
    done: &Run,
    report: &Report,
    expect: &str,
) -> Result<()> {
    let unreadable = &report.streams[0].unreadable;
    let first = unreadable.first().map_or_else(String::new, |u| u.message.clone());
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: name.into(),
        survived: done.code == Some(0) && report.status == RunStatus::Complete && !unreadable.is_empty(),
        frames_lost: Some(frames_lost(report)),
        bound: None,
        recover_s: None,
        outcome: format!("unreadable ({} frames): {first}", unreadable.len()),
    })?;
    ensure_survived(name, done, report)?;
    ensure!(!unreadable.is_empty(), "{name}: no frame unreadable\n{done}");
    let server_addr = server.nfs_addr().to_string();
    for frame in unreadable {
        let spoilt = SPOILT.contains(&((frame.frame_idx % N_FRAMES) as usize));
        ensure!(spoilt, "{name}: frame {} unreadable: {}", frame.frame_idx, frame.message);
        let file = format!("frame.{:07}.dpx", frame.frame_number);
        for part in [server_addr.as_str(), file.as_str(), expect] {
            ensure!(frame.message.contains(part), "{name}: {:?} does not name {part:?}", frame.message);
        }
    }
    // The other frames play.
    ensure!(report.totals.presented >= 48, "{name}: presented {}\n{done}", report.totals.presented);
    Ok(())
}

/// A reply to an xid no call has: the connection is given up and the call sent again.
#[test]
fn a_reply_with_a_wrong_xid_is_recovered_by_a_reconnect() -> Result<()> {
    let server = server(Misbehaviour::WrongXid, When::FirstCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_recovered("reply with a wrong xid", &server, &done, &report)?;
    ensure!(reconnects(&report) >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
    Ok(())
}

/// Half a record, then the server closes the connection.
#[test]
fn a_truncated_record_is_recovered_by_a_reconnect() -> Result<()> {
    let server = server(Misbehaviour::TruncatedRecord, When::FirstCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_recovered("truncated record, then close", &server, &done, &report)?;
    ensure!(reconnects(&report) >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
    Ok(())
}

/// A record mark claiming 2 GiB is refused before anything is allocated for it.
#[test]
fn a_record_claiming_2_gib_is_refused_before_allocating() -> Result<()> {
    let server = server(Misbehaviour::HugeRecordMark, When::FirstCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_recovered("record mark claiming 2 GiB", &server, &done, &report)?;
    ensure!(reconnects(&report) >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
    Ok(())
}

/// Half a reply, then a reset.
#[test]
fn a_connection_reset_mid_reply_is_recovered_by_a_reconnect() -> Result<()> {
    let server = server(Misbehaviour::ResetMidReply, When::FirstCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_recovered("connection reset mid-reply", &server, &done, &report)?;
    ensure!(reconnects(&report) >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
    Ok(())
}

/// A server that resets the connection in the middle of every reply to the READs of one frame,
/// while it answers every other call: after three cut replies, each on a new connection, the
/// call is refused rather than waited out to `--nfs-timeout`, so that frame is unreadable
/// (naming the server and the file) and the run goes on.
#[test]
fn a_reset_at_every_read_of_a_frame_makes_it_unreadable_and_the_run_goes_on() -> Result<()> {
    let server = server(Misbehaviour::ResetMidReply, When::EveryCallOn(5..6))?;
    let (done, report) = short_play(&server)?;
    ensure_unreadable(
        "connection reset mid-reply at every READ of a frame",
        &server,
        &done,
        &report,
        "cut its reply to this call 3 times",
    )?;
    ensure!(reconnects(&report) >= 2, "reconnects: {:?}", report.streams[0].storage.options);
    Ok(())
}

/// READs answered with half the bytes and eof unset are legal: the client asks for the rest.
#[test]
fn short_reads_without_eof_are_finished_by_more_reads() -> Result<()> {
    let server = server(Misbehaviour::ReadShortNoEof, When::EveryCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_recovered("read shorter than asked, eof unset", &server, &done, &report)?;
    ensure!(frames_lost(&report) == 0, "frames lost: {:?}\n{done}", report.totals.dropped);
    let storage = &report.streams[0].storage;
    ensure!(
        storage.n_reads > report.totals.presented,
        "{} READs for {} frames: the short reads were not finished",
        storage.n_reads,
        report.totals.presented
    );
    Ok(())
}

/// A READ answered with more bytes than asked, every time: the frame is unreadable and the
/// connection goes on.
#[test]
fn a_read_with_more_bytes_than_asked_makes_the_frame_unreadable() -> Result<()> {
    let server = server(Misbehaviour::ReadTooLong, When::EveryCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_unreadable("read longer than asked", &server, &done, &report, "bytes of data for a read of")
}

/// LOOKUP answers a garbage handle, which the server then refuses.
#[test]
fn a_garbage_file_handle_makes_the_frame_unreadable() -> Result<()> {
    let server = server(Misbehaviour::GarbageHandle, When::EveryCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_unreadable("garbage file handle from LOOKUP", &server, &done, &report, "NFS3ERR_BADHANDLE")
}

/// LOOKUP answers a handle whose length claims 2 GiB: the reply is refused before anything is
/// allocated for it, and the frame is unreadable (not a gap: the file was listed).
#[test]
fn an_over_long_file_handle_makes_the_frame_unreadable() -> Result<()> {
    let server = server(Misbehaviour::OversizedHandle, When::EveryCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_unreadable(
        "file handle claiming 2 GiB from LOOKUP",
        &server,
        &done,
        &report,
        "malformed lookup reply",
    )
}

/// A file whose size grows at each call while its bytes do not: the read ends short of the
/// size listed.
#[test]
fn a_size_that_changes_between_calls_makes_the_frame_unreadable() -> Result<()> {
    let server = server(Misbehaviour::ChangingSize, When::EveryCallOn(SPOILT))?;
    let (done, report) = short_play(&server)?;
    ensure_unreadable("file size changing between calls", &server, &done, &report, "size")
}

/// A size attribute of 3 GiB for frames whose bytes are 22 KB: no size claim allocates past
/// `--max-buffer` (64M here; by default a quarter of the memory available, up to 4 GiB), so the
/// frame is refused before a buffer is taken for it, unreadable with a message naming its
/// size, and peak RSS stays that of a normal run.
#[test]
fn a_size_of_3_gib_is_refused_before_allocating() -> Result<()> {
    let server = server(Misbehaviour::HugeSize, When::EveryCallOn(SPOILT))?;
    let extra = ["--nfs-timeout", SHORT_TIMEOUT, "--max-buffer", "64M"];
    let (done, report) = play(&server, 3, &extra, Duration::from_secs(15))?;
    ensure_unreadable(
        "size attribute of 3 GiB",
        &server,
        &done,
        &report,
        "is 3221225472 bytes, more than --max-buffer",
    )
}

/// A reply 10 s late with the default 30 s `--nfs-timeout`: the frames waiting for it are
/// storage drops, the others play meanwhile, and the run completes. Only the late frames are
/// lost, as a player that keeps reading would lose them, and not the window of frames behind
/// them (14 were, when the stalled reads stopped every read ahead); two more are allowed for
/// a busy 2-core machine.
#[test]
fn replies_10_s_late_are_storage_drops_and_the_run_recovers() -> Result<()> {
    let late = Duration::from_secs(10);
    let server = server(Misbehaviour::LateReply(late), When::FirstCallOn(SPOILT))?;
    let (done, report) = play(&server, 13, &[], Duration::from_secs(45))?;
    let d = &report.totals.dropped;
    let n_late = SPOILT.len() as u64;
    let presented_after_late = report.streams[0]
        .timeline
        .iter()
        .filter(|f| f.presented_ns.is_some() && f.due_ns >= 11_000_000_000)
        .count();
    let storage_drops_of_spoilt = report.streams[0]
        .timeline
        .iter()
        .filter(|f| f.cause == Some(DropCauseName::Storage) && SPOILT.contains(&(f.frame_idx as usize)))
        .count() as u64;
    let survived = done.code == Some(0)
        && report.status == RunStatus::Complete
        && storage_drops_of_spoilt == n_late
        && d.unreadable == 0;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::HostileReply,
        name: format!("READ replies {} s late (--nfs-timeout 30s)", late.as_secs()),
        survived,
        frames_lost: Some(frames_lost(&report)),
        bound: Some(n_late + BUSY_MACHINE_DROPS),
        recover_s: None,
        outcome: format!(
            "recovered: {} storage drops ({storage_drops_of_spoilt} of the late frames), {presented_after_late} frames presented after the replies came",
            d.storage
        ),
    })?;
    ensure_survived("late reply", &done, &report)?;
    ensure!(server.misbehaved() == n_late, "{} replies held back\n{done}", server.misbehaved());
    ensure!(storage_drops_of_spoilt == n_late, "late frames not storage drops: {d:?}\n{done}");
    ensure!(d.unreadable + d.decode == 0, "drops {d:?}\n{done}");
    ensure!(
        frames_lost(&report) <= n_late + BUSY_MACHINE_DROPS,
        "drops {d:?}\n{}{done}",
        dropped_timeline(&report)
    );
    ensure!(presented_after_late > 24, "playback did not go on: {presented_after_late} frames\n{done}");
    Ok(())
}
