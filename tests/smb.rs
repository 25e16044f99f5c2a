//! `smb://` sources against a real Samba on loopback: bit-exact playback of FFmpeg-written DPX
//! and EXR and a ProRes `.mov`, discovery by pattern and by file, one line for a bad share, a
//! wrong password and an unreachable port, a password that never shows, and the smbd child of
//! the run's connections stopped mid-run. And `smb://` destinations: `record` and `frametest -w`
//! through playsim's SMB client into the server's writable share, byte for byte, signed,
//! unsigned or encrypted as the URL says.
//!
//! The read tests share one server; the fault test starts its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use playsim::report::{Report, RunStatus};
use playsim_testserver::SmbServer;

use crate::util::{
    ffmpeg, file_names, generate, playsim, read_report, record_reliability, Background, ReliabilityRow,
    ReliabilityTable, Run, SMALL_PRESET,
};

/// The longest any one playsim command of these tests may take: a hang fails the test.
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// The read tests' server, with its media written once.
struct Shared {
    server: SmbServer,
}

fn shared() -> Result<&'static Shared> {
    static SHARED: OnceLock<std::result::Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| setup_shared().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("the shared smb server could not be set up: {e}"))
}

fn setup_shared() -> Result<Shared> {
    let server = SmbServer::start().context("starting smbd")?;
    let share = server.export_dir();
    write_with_ffmpeg(&share.join("dpx"), "dpx", 12)?;
    write_with_ffmpeg(&share.join("exr"), "exr", 6)?;
    let clip = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/video/prores-422hq-tiny.mov");
    std::fs::create_dir_all(share.join("video"))?;
    std::fs::copy(&clip, share.join("video/clip.mov"))
        .with_context(|| format!("copying {}", clip.display()))?;
    Ok(Shared { server })
}

/// `n_frames` frames of FFmpeg's test pattern, 160x32, as `frame.%07d.<format>` in `dir`.
fn write_with_ffmpeg(dir: &Path, format: &str, n_frames: u32) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let pattern = dir.join(format!("frame.%07d.{format}"));
    let pix_fmt = if format == "exr" { "gbrpf32le" } else { "rgb48be" };
    let frames = n_frames.to_string();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x32:rate=24",
        "-frames:v",
        &frames,
        "-pix_fmt",
        pix_fmt,
        &pattern.to_string_lossy(),
    ])?;
    Ok(())
}

/// Runs `cmd` to its end, at most [`COMMAND_LIMIT`], and checks it did not panic.
fn run_limited(cmd: &mut Command) -> Result<Run> {
    let tmp = tempfile::tempdir()?;
    let done = Background::spawn(cmd, tmp.path()).context("running playsim")?.wait(COMMAND_LIMIT)?;
    done.ensure_no_panic()?;
    Ok(done)
}

/// `playsim decode --md5` of `source` (with `extra` flags), checked to exit 0.
fn md5s(source: &str, extra: &[&OsArg]) -> Result<String> {
    let done = run_limited(playsim().args(["decode", "--md5", source]).args(extra))?;
    done.ensure_code(0)?;
    Ok(done.stdout)
}

type OsArg = std::ffi::OsStr;

/// `--smb-credentials FILE` for `server`.
fn credentials(server: &SmbServer) -> [PathBuf; 2] {
    [PathBuf::from("--smb-credentials"), server.credentials_file().to_path_buf()]
}

fn as_args(args: &[PathBuf]) -> Vec<&OsArg> {
    args.iter().map(|a| a.as_os_str()).collect()
}

fn option<'a>(report: &'a Report, key: &str) -> &'a str {
    report.streams[0].storage.options.get(key).map_or("", String::as_str)
}

/// Each format decodes over smb:// to the same md5s as from the local file, and plays every
/// frame with nothing dropped; the report labels the transport, and no output holds the password.
#[test]
fn dpx_exr_and_prores_over_smb_decode_bit_exact_and_play_every_frame() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let tmp = tempfile::tempdir()?;
    let creds = credentials(server);
    let creds = as_args(&creds);
    for (rel, n_frames) in [("dpx", 12), ("exr", 6), ("video/clip.mov", 12)] {
        let url = server.url(rel);
        let local = md5s(&server.export_dir().join(rel).to_string_lossy(), &[])?;
        let remote = md5s(&url, &creds)?;
        ensure!(
            local.lines().count() as u64 == n_frames,
            "{rel}: {} md5 lines:\n{local}",
            local.lines().count()
        );
        ensure!(local == remote, "{rel}: md5s differ over smb\nlocal:\n{local}\nsmb:\n{remote}");

        let json = tmp.path().join(format!("{}.json", rel.replace('/', "-")));
        let done =
            run_limited(playsim().args(["play", &url, "--fps", "max", "--json"]).arg(&json).args(&creds))?;
        done.ensure_code(0)?;
        let report = read_report(&json).with_context(|| format!("no report:\n{done}"))?;
        ensure!(report.status == RunStatus::Complete, "{rel}: status {:?}\n{done}", report.status);
        ensure!(report.totals.presented == n_frames, "{rel}: presented {}\n{done}", report.totals.presented);
        ensure!(report.totals.dropped.total() == 0, "{rel}: dropped {:?}\n{done}", report.totals.dropped);
        let storage = &report.streams[0].storage;
        ensure!(storage.transport == "smb", "{rel}: transport {}", storage.transport);
        ensure!(option(&report, "dialect") == "3.1.1", "{rel}: options {:?}", storage.options);
        ensure!(option(&report, "signing") != "off", "{rel}: options {:?}", storage.options);
        ensure!(option(&report, "encryption") == "off", "{rel}: options {:?}", storage.options);
        ensure!(option(&report, "channels") == "1", "{rel}: options {:?}", storage.options);
        ensure!(
            option(&report, "credits").parse::<u32>().is_ok_and(|c| c > 0),
            "{rel}: {:?}",
            storage.options
        );
        ensure!(option(&report, "user") == server.user(), "{rel}: options {:?}", storage.options);

        let password = server.password();
        let json_text = std::fs::read_to_string(&json)?;
        ensure!(!json_text.contains(password), "{rel}: the JSON report holds the password");
        ensure!(
            !done.stdout.contains(password) && !done.stderr.contains(password),
            "{rel}: output holds the password"
        );
    }
    Ok(())
}

/// Signing off, encryption asked for by the client, and a share the server serves only
/// encrypted: each decodes to the local file's md5s and is labelled as what was agreed.
#[test]
fn signing_off_and_encryption_on_decode_bit_exact_and_are_labelled() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let tmp = tempfile::tempdir()?;
    let creds = credentials(server);
    let creds = as_args(&creds);
    let local = md5s(&server.export_dir().join("dpx").to_string_lossy(), &[])?;
    let cases = [
        ("sign=off", server.url("dpx?sign=off"), "off", "off"),
        ("seal=on", server.url("dpx?seal=on"), "by encryption", "Aes128Gcm"),
        ("share requires encryption", server.sealed_url("dpx"), "by encryption", "Aes128Gcm"),
        ("default", server.url("dpx"), "AesGmac", "off"),
    ];
    for (case, url, signing, encryption) in cases {
        let remote = md5s(&url, &creds)?;
        ensure!(local == remote, "{case}: md5s differ over smb\nlocal:\n{local}\nsmb:\n{remote}");
        let json = tmp.path().join(format!("{}.json", case.replace([' ', '='], "-")));
        let done =
            run_limited(playsim().args(["play", &url, "--fps", "max", "--json"]).arg(&json).args(&creds))?;
        done.ensure_code(0)?;
        let report = read_report(&json).with_context(|| format!("{case}: no report:\n{done}"))?;
        ensure!(report.totals.dropped.total() == 0, "{case}: dropped {:?}\n{done}", report.totals.dropped);
        let options = &report.streams[0].storage.options;
        ensure!(option(&report, "signing") == signing, "{case}: options {options:?}");
        ensure!(option(&report, "encryption") == encryption, "{case}: options {options:?}");
    }
    Ok(())
}

/// A pattern URL (`%07d`) and a one-file URL find the same sequence as the directory, and the
/// credentials may come from the environment.
#[test]
fn pattern_and_file_urls_find_the_sequence() -> Result<()> {
    let shared = shared()?;
    let creds = credentials(&shared.server);
    let creds = as_args(&creds);
    let by_dir = md5s(&shared.server.url("dpx/"), &creds)?;
    let by_pattern = md5s(&shared.server.url("dpx/frame.%07d.dpx"), &creds)?;
    let by_file = md5s(&shared.server.url("dpx/frame.0000003.dpx"), &creds)?;
    ensure!(by_dir.lines().count() == 12, "{by_dir}");
    ensure!(
        by_dir == by_pattern && by_dir == by_file,
        "dir:\n{by_dir}\npattern:\n{by_pattern}\nfile:\n{by_file}"
    );
    // The credentials from the environment instead of a file.
    let by_env = run_limited(
        playsim()
            .args(["decode", "--md5", &shared.server.url("dpx")])
            .env("PLAYSIM_SMB_USER", shared.server.user())
            .env("PLAYSIM_SMB_PASSWORD", shared.server.password()),
    )?;
    by_env.ensure_code(0)?;
    ensure!(by_env.stdout == by_dir, "from the environment:\n{by_env}");
    Ok(())
}

/// A bad share, a wrong password, an unreachable port, a missing path and a password in the
/// URL: each refused in one line naming the part at fault, exit code 1 as for every transport,
/// no panic, no hang, a failed report; and no password in any of it.
#[test]
fn bad_share_password_port_and_url_get_one_line_each() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let tmp = tempfile::tempdir()?;
    let wrong = tmp.path().join("wrong.cred");
    let wrong_password = "not-the-password-42";
    std::fs::write(&wrong, format!("username={}\npassword={wrong_password}\n", server.user()))?;
    let good = server.credentials_file().to_path_buf();
    // A port nothing listens on: bound, then released.
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let port = server.port();
    let cases = [
        (format!("smb://127.0.0.1:{port}/nosuch/dpx"), &good, "share: 127.0.0.1:"),
        (server.url("dpx"), &wrong, "credentials: 127.0.0.1:"),
        (format!("smb://127.0.0.1:{free_port}/share/dpx"), &good, "port: nothing accepts SMB connections"),
        (server.url("missing/"), &good, "path: /missing is not in share"),
        (
            format!("smb://{}:{wrong_password}@127.0.0.1:{port}/share/dpx", server.user()),
            &good,
            "credentials: a password in the URL is refused",
        ),
    ];
    for (i, (url, creds, expected)) in cases.iter().enumerate() {
        let json = tmp.path().join(format!("{i}.json"));
        let started = Instant::now();
        let done = run_limited(
            playsim().args(["play", url, "--json"]).arg(&json).arg("--smb-credentials").arg(creds),
        )?;
        done.ensure_code(1)?;
        ensure!(started.elapsed() < Duration::from_secs(30), "{url}: took {:?}", started.elapsed());
        let error_lines: Vec<&str> =
            done.stderr.lines().filter(|l| l.starts_with("playsim: error")).collect();
        ensure!(error_lines.len() == 1, "{url}: expected one error line:\n{done}");
        ensure!(error_lines[0].contains(expected), "{url}: expected {expected:?}:\n{done}");
        let report_text = std::fs::read_to_string(&json)?;
        for secret in [server.password(), wrong_password] {
            ensure!(
                !done.stderr.contains(secret) && !done.stdout.contains(secret),
                "{url}: output shows a password"
            );
            ensure!(!report_text.contains(secret), "{url}: the report holds a password");
        }
        let report = read_report(&json)?;
        ensure!(report.status == RunStatus::Failed, "{url}: report status {:?}", report.status);
    }
    Ok(())
}

/// The smbd child serving the run's connections stopped (SIGSTOP) for 3 s mid-run, its parent
/// left running: the frames that fell due meanwhile are storage drops, playback resumes, and
/// the report is complete.
#[test]
fn the_connections_smbd_child_stopped_for_3_s_costs_storage_drops_then_playback_resumes() -> Result<()> {
    #[cfg(feature = "nfs")]
    let _one_at_a_time = crate::nfs::FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut server = SmbServer::start().context("starting smbd")?;
    write_with_ffmpeg(&server.export_dir().join("dpx"), "dpx", 24)?;
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("r.json");
    let mut child = Background::spawn(
        playsim()
            .args([
                "play",
                &server.url("dpx"),
                "--fps",
                "24",
                "--loop",
                "--quiet",
                "--duration",
                "8s",
                "--json",
            ])
            .arg(&json)
            .arg("--smb-credentials")
            .arg(server.credentials_file()),
        tmp.path(),
    )?;
    std::thread::sleep(Duration::from_secs(3).saturating_sub(child.started.elapsed()));
    let n_stopped = server.pause_connections();
    std::thread::sleep(Duration::from_secs(3));
    server.resume_connections();
    let (done, report) = child.finish(COMMAND_LIMIT, &json)?;
    let d = &report.totals.dropped;
    let resumed = report.streams[0]
        .timeline
        .iter()
        .filter(|f| f.presented_ns.is_some() && f.due_ns >= 6_500_000_000)
        .count();
    let survived = done.code == Some(0) && report.status == RunStatus::Complete;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::Fault,
        name: "smbd connection child SIGSTOP for 3 s".into(),
        survived,
        frames_lost: Some(d.storage + d.unreadable),
        bound: None,
        recover_s: None,
        outcome: format!(
            "{n_stopped} smbd children stopped; {} storage drops; {resumed} frames after",
            d.storage
        ),
    })?;
    ensure!(n_stopped >= 1, "no smbd child served the run's connections");
    done.ensure_code(0)?;
    ensure!(report.status == RunStatus::Complete, "status {:?}\n{done}", report.status);
    // 3 s at 24 fps is 72 frames; the prefetched frames cover the first few.
    ensure!(
        (50..=80).contains(&d.storage),
        "storage drops {} (expected about 72 - prefetch):\n{done}",
        d.storage
    );
    ensure!(d.decode + d.unreadable == 0, "drops {d:?}:\n{done}");
    ensure!(resumed > 24, "playback did not resume:\n{done}");
    Ok(())
}

/// `frametest -r` reads frames written to the share over smb://, with the credentials file.
#[test]
fn frametest_reads_a_share_over_smb() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let dir = server.export_dir().join("frametest");
    let written = run_limited(playsim().args(["frametest", "-w", "sd", "-n", "6"]).arg(&dir))?;
    written.ensure_code(0)?;
    let read = run_limited(
        playsim()
            .args(["frametest", "-r", "-n", "6", &server.url("frametest")])
            .arg("--smb-credentials")
            .arg(server.credentials_file()),
    )?;
    read.ensure_code(0)?;
    ensure!(read.stdout.contains("Overall:"), "no summary:\n{read}");
    ensure!(!read.stdout.contains(server.password()), "the password shows:\n{read}");
    Ok(())
}

/// `playsim record` of `n_frames` small DPX frames to `url` (a directory of the writable share),
/// with the server's credentials; checks that no output holds the password.
fn record(server: &SmbServer, url: &str, n_frames: u64, json: &Path) -> Result<Run> {
    let frames = n_frames.to_string();
    let done = run_limited(
        playsim()
            .args(["record", url, "--preset", SMALL_PRESET, "--fps", "max", "--frames", &frames, "--json"])
            .arg(json)
            .arg("--smb-credentials")
            .arg(server.credentials_file()),
    )?;
    let password = server.password();
    ensure!(!done.stdout.contains(password) && !done.stderr.contains(password), "output holds the password");
    if json.exists() {
        ensure!(!std::fs::read_to_string(json)?.contains(password), "the JSON holds the password");
    }
    Ok(done)
}

/// Every file of `dest` (the share's directory on disk) is byte for byte `playsim generate`'s
/// frame of the same name, and there are `n_frames` of them, none partial.
fn ensure_generated(dest: &Path, n_frames: u64, tmp: &Path) -> Result<()> {
    let reference = tmp.join("generated");
    generate(&reference, SMALL_PRESET, n_frames, &[])?;
    let names = file_names(dest)?;
    ensure!(names.len() as u64 == n_frames && names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");
    ensure!(names == file_names(&reference)?, "{names:?}");
    for name in &names {
        let (got, want) = (std::fs::read(dest.join(name))?, std::fs::read(reference.join(name))?);
        ensure!(got == want, "{name}: {} bytes on the server against {} generated", got.len(), want.len());
    }
    Ok(())
}

/// `playsim record` to an `smb://` directory, through playsim's own client (CREATE, WRITE, CLOSE,
/// rename): every frame is on the server under its real name, byte for byte the generator's,
/// with no partial file; the same directory again is refused as not empty.
#[test]
fn record_writes_a_sequence_through_playsims_smb_client() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let dest = server.export_dir().join("recorded");
    std::fs::create_dir_all(&dest)?;
    let tmp = tempfile::tempdir()?;
    let url = server.writable_url("recorded");
    let done = record(server, &url, 12, &tmp.path().join("record.json"))?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("Frames written: 12 of 12"), "{done}");
    ensure!(done.stdout.contains("written as smb:// share rw on 127.0.0.1:"), "{done}");
    ensure_generated(&dest, 12, tmp.path())?;
    let creds = credentials(server);
    let reference = tmp.path().join("generated");
    ensure!(
        md5s(&url, &as_args(&creds))? == md5s(&reference.to_string_lossy(), &[])?,
        "the recorded sequence decodes differently"
    );

    let again = record(server, &url, 2, &tmp.path().join("again.json"))?;
    again.ensure_code(1)?;
    ensure!(again.stderr.contains("is not empty (12 entries"), "{again}");

    // A destination that does not exist yet, two levels deep, is made.
    let new_url = server.writable_url("recorded-new/take-1");
    let made = record(server, &new_url, 3, &tmp.path().join("made.json"))?;
    made.ensure_code(0)?;
    let new_tmp = tempfile::tempdir()?;
    ensure_generated(&server.export_dir().join("recorded-new/take-1"), 3, new_tmp.path())?;

    // --preallocate: each frame's space reserved first (SET_INFO FileAllocationInformation), the
    // frames the same.
    let reserved_url = server.writable_url("recorded-preallocated");
    let reserved = run_limited(
        playsim()
            .args(["record", &reserved_url, "--preset", SMALL_PRESET, "--fps", "max", "--frames", "3"])
            .arg("--preallocate")
            .arg("--smb-credentials")
            .arg(server.credentials_file()),
    )?;
    reserved.ensure_code(0)?;
    ensure!(reserved.stdout.contains("--preallocate"), "{reserved}");
    let reserved_tmp = tempfile::tempdir()?;
    ensure_generated(&server.export_dir().join("recorded-preallocated"), 3, reserved_tmp.path())?;

    // --capacity streams, 1 and 2: each trial into capacity-trial, which is removed after it
    // (its files, its stream directories, then itself), so the destination is left empty.
    let searched_url = server.writable_url("recorded-capacity");
    let searched = run_limited(
        playsim()
            .args(["record", &searched_url, "--preset", SMALL_PRESET, "--capacity", "streams"])
            .args(["--fps", "24", "--window", "1s", "--trials", "1", "--max", "2"])
            .arg("--smb-credentials")
            .arg(server.credentials_file()),
    )?;
    searched.ensure_code(0)?;
    ensure!(searched.stdout.contains("Capacity: "), "{searched}");
    let searched_dir = server.export_dir().join("recorded-capacity");
    let left = file_names(&searched_dir)?;
    ensure!(left.is_empty(), "left in {}: {left:?}\n{searched}", searched_dir.display());
    Ok(())
}

/// The writer's session is set up as the URL asks, as the reader's is: `sign=off` unsigned,
/// `seal=on` encrypted, the default signed; each records the same bytes.
#[test]
fn record_over_smb_signs_and_seals_as_the_url_says() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let cases = [
        ("rec-unsigned", "?sign=off", "signing off, encryption off"),
        ("rec-sealed", "?seal=on", "signing by encryption, encryption Aes128Gcm"),
        ("rec-signed", "", "signing AesGmac, encryption off"),
    ];
    for (dir, query, protection) in cases {
        let dest = server.export_dir().join(dir);
        std::fs::create_dir_all(&dest)?;
        let tmp = tempfile::tempdir()?;
        let done =
            record(server, &server.writable_url(&format!("{dir}{query}")), 3, &tmp.path().join("r.json"))?;
        done.ensure_code(0)?;
        ensure!(done.stdout.contains("Frames written: 3 of 3"), "{dir}: {done}");
        ensure!(done.stdout.contains(protection), "{dir}: expected {protection:?}:\n{done}");
        ensure_generated(&dest, 3, tmp.path()).with_context(|| dir.to_owned())?;
    }
    Ok(())
}

/// `playsim frametest -w` to an `smb://` directory writes frametest's files through playsim's
/// own client, and `-r` reads them back over it.
#[test]
fn frametest_writes_and_reads_back_over_smb() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let dest = server.export_dir().join("ft-written");
    std::fs::create_dir_all(&dest)?;
    let url = server.writable_url("ft-written");
    let creds = credentials(server);
    let creds = as_args(&creds);
    let write =
        run_limited(playsim().args(["frametest", "-w", "hd", "-n", "4", "-t", "2", &url]).args(&creds))?;
    write.ensure_code(0)?;
    ensure!(write.stdout.contains("Frames transferred: 4"), "{write}");
    for i in 0..4 {
        let file = dest.join(format!("frame{i:06}.dpx"));
        let bytes = std::fs::metadata(&file).with_context(|| format!("{}", file.display()))?.len();
        ensure!(bytes == 1920 * 1080 * 4 + 65_536, "{} is {bytes} bytes", file.display());
    }
    let read = run_limited(playsim().args(["frametest", "-r", "hd", "-t", "2", &url]).args(&creds))?;
    read.ensure_code(0)?;
    ensure!(read.stdout.contains("Frames transferred: 4"), "{read}");
    ensure!(!write.stdout.contains(server.password()) && !read.stdout.contains(server.password()));
    Ok(())
}

/// The smbd child serving a recording's connections killed mid-run: the writer reconnects,
/// opens its files again in the new session and writes on; every frame is on the server, byte
/// for byte, with no partial file left.
#[test]
fn record_over_smb_survives_its_connection_killed_mid_run() -> Result<()> {
    #[cfg(feature = "nfs")]
    let _one_at_a_time = crate::nfs::FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut server = SmbServer::start().context("starting smbd")?;
    let dest = server.export_dir().join("killed");
    std::fs::create_dir_all(&dest)?;
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("r.json");
    let mut child = Background::spawn(
        playsim()
            .args(["record", &server.writable_url("killed"), "--preset", SMALL_PRESET, "--fps", "24"])
            .args(["--frames", "96", "--json"])
            .arg(&json)
            .arg("--smb-credentials")
            .arg(server.credentials_file()),
        tmp.path(),
    )?;
    // Mid-run: the run's connection is up by then, and 2 s of frames are still to come.
    std::thread::sleep(Duration::from_millis(1500).saturating_sub(child.started.elapsed()));
    let n_killed = server.kill_connections();
    let done = child.wait(COMMAND_LIMIT)?;
    done.ensure_no_panic()?;
    let whole = ensure_generated(&dest, 96, tmp.path());
    let figures: serde_json::Value =
        std::fs::read_to_string(&json).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let lost =
        figures["frames_dropped"].as_u64().unwrap_or(96) + figures["frames_failed"].as_u64().unwrap_or(0);
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::Fault,
        name: "smbd serving a recording killed mid-run (record over smb://)".into(),
        survived: done.code == Some(0) && whole.is_ok() && lost == 0,
        frames_lost: Some(lost),
        bound: None,
        recover_s: None,
        outcome: format!(
            "{n_killed} smbd children killed; the writer reconnected; {lost} frames lost, every file whole"
        ),
    })?;
    ensure!(n_killed >= 1, "no smbd child served the run's connections");
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("Frames written: 96 of 96"), "{done}");
    whole
}

/// The storage write API over `smb://` itself: writes at offsets, out of order and larger than a
/// WRITE, stable or not; a rename over an existing file; a create over one truncates it; the
/// free space; an empty directory removed and one that is not refused; and errors that name the
/// call and the file as a URL, never the password.
#[test]
fn the_smb_writer_writes_at_offsets_renames_over_a_file_and_names_the_url_in_errors() -> Result<()> {
    use playsim::storage::smb::{SmbOptions, SmbStorage, SmbUrl, SmbWriter};
    use playsim::storage::write::{Stability, WriteStorage};
    use playsim_core::StorageErrorKind;

    let shared = shared()?;
    let server = &shared.server;
    let base = server.export_dir().join("api");
    std::fs::create_dir_all(&base)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let url = SmbUrl::parse(&server.writable_url("api"))?;
        let options = SmbOptions {
            credentials_file: Some(server.credentials_file().to_path_buf()),
            ..SmbOptions::default()
        };
        let writer = SmbWriter::new(SmbStorage::connect(&url, &options).await?.another_client().await?);
        ensure!(writer.describe().starts_with("smb:// share rw on 127.0.0.1:"), "{}", writer.describe());
        let dir = Path::new("/api/made/deeper");
        writer.create_dir_all(dir).await?;
        writer.create_dir_all(dir).await?;
        ensure!(base.join("made/deeper").is_dir());

        // 3 MiB and a bit after a 4 KiB head, the head written last: four WRITEs, then one.
        let head: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let tail: Vec<u8> = (0..(3 << 20) + 5).map(|i: u32| (i % 251) as u8).collect();
        let partial = dir.join(".f.partial");
        let file = writer.create(&partial).await?;
        // SET_INFO FileAllocationInformation: the share (strict allocate) reserves the blocks
        // before a byte is written, and the length stays 0.
        ensure!(file.preallocate(1 << 20).await?, "SMB reserved nothing");
        let reserved = std::fs::metadata(base.join("made/deeper/.f.partial"))?;
        {
            use std::os::unix::fs::MetadataExt;
            ensure!(
                reserved.blocks() * 512 >= 1 << 20 && reserved.len() == 0,
                "{} bytes reserved, length {}",
                reserved.blocks() * 512,
                reserved.len()
            );
        }
        ensure!(file.write_at(4096, tail.clone().into(), Stability::FileSync).await? == tail.len() as u64);
        ensure!(file.write_at(0, head.clone().into(), Stability::Unstable).await? == 4096);
        file.sync().await?;
        file.close().await?;
        let done = dir.join("f");
        std::fs::write(base.join("made/deeper/f"), b"an older frame")?;
        writer.rename(&partial, &done).await?;
        let written = std::fs::read(base.join("made/deeper/f"))?;
        ensure!(written.len() == head.len() + tail.len(), "{} bytes", written.len());
        ensure!(written[..4096] == head[..] && written[4096..] == tail[..], "the bytes differ");
        ensure!(!base.join("made/deeper/.f.partial").exists());
        let stats = writer.stats();
        ensure!((stats.n_writes, stats.n_syncs) == (2, 2), "{stats:?}");
        ensure!(stats.bytes == written.len() as u64 && stats.cpu_ns > 0, "{stats:?}");

        // A create truncates; closed unsynced, it is flushed by sync_all.
        let again = writer.create(&done).await?;
        again.write_at(0, b"abc".to_vec().into(), Stability::Unstable).await?;
        again.close().await?;
        writer.sync_all(Path::new("/api")).await?;
        ensure!(std::fs::read(base.join("made/deeper/f"))? == b"abc");

        let free = writer.free_bytes(dir).await?.unwrap_or(0);
        let stat = rustix::fs::statvfs(server.export_dir())?;
        let local_free = stat.f_bavail * stat.f_frsize;
        ensure!(
            free > 0 && free.abs_diff(local_free) < local_free / 10,
            "{free} free over smb, {local_free} here"
        );

        writer.remove(&done).await?;
        ensure!(!base.join("made/deeper/f").exists());
        let prefix = format!("smb://127.0.0.1:{}/rw/api/made/deeper/f", server.port());
        let err = writer.remove(&done).await.err().context("removed twice")?;
        ensure!(err.kind == StorageErrorKind::NotFound, "{err}");
        ensure!(err.to_string().starts_with(&format!("cannot remove {prefix}: ")), "{err}");
        let err =
            writer.create(Path::new("/api/missing/x")).await.err().context("created in no directory")?;
        ensure!(err.kind == StorageErrorKind::NotFound, "{err}");
        ensure!(err.to_string().contains("cannot create smb://127.0.0.1:"), "{err}");
        ensure!(err.to_string().contains("/rw/api/missing/x: "), "{err}");
        ensure!(!err.to_string().contains(server.password()), "{err}");
        let err = writer.create_dir_all(Path::new("/api/made/deeper/f2/x")).await;
        ensure!(err.is_ok(), "{err:?}");
        // remove_dir is never recursive: a directory holding one is refused and kept; the
        // empty one goes, and a second try finds nothing.
        let err = writer.remove_dir(Path::new("/api/made/deeper/f2")).await.err().context("not empty")?;
        let f2 = format!("smb://127.0.0.1:{}/rw/api/made/deeper/f2", server.port());
        ensure!(err.to_string().starts_with(&format!("cannot remove the directory {f2}: ")), "{err}");
        ensure!(!err.to_string().contains(server.password()), "{err}");
        ensure!(base.join("made/deeper/f2/x").is_dir(), "{err}");
        writer.remove_dir(Path::new("/api/made/deeper/f2/x")).await?;
        ensure!(!base.join("made/deeper/f2/x").exists() && base.join("made/deeper/f2").is_dir());
        let err = writer.remove_dir(Path::new("/api/made/deeper/f2/x")).await.err().context("twice")?;
        ensure!(err.kind == StorageErrorKind::NotFound, "{err}");
        writer.remove_dir(Path::new("/api/made/deeper/f2")).await?;
        ensure!(!base.join("made/deeper/f2").exists());
        std::fs::write(base.join("made/file"), b"x")?;
        let err =
            writer.create_dir_all(Path::new("/api/made/file/x")).await.err().context("a file as a dir")?;
        ensure!(
            err.kind == StorageErrorKind::NotAFile && err.to_string().contains("/api/made/file"),
            "{err}"
        );
        Ok(())
    })
}
