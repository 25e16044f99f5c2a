//! `nfs://` sources against a real NFS-Ganesha on loopback: bit-exact playback of DPX, EXR and
//! ProRes, faults of the server mid-run (stopped, killed and restarted, gone for good), and a
//! one-line error for every kind of bad URL.
//!
//! The read tests share one server; each fault test starts its own and holds [`FAULTS`], so
//! that only one server is being stopped or killed at a time.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use playsim::report::record::RecordFigures;
use playsim::report::{DropCauseName, Report, RunStatus};
use playsim_testserver::{AccessType, ExportSpec, NfsServer};

use crate::util::{
    generate, playsim, read_report, record_reliability, run, Background, ReliabilityRow, ReliabilityTable,
    Run, SMALL_PRESET,
};

/// Held by each fault test for its whole run (also those of `faults.rs` that fault the path to
/// a server).
pub(crate) static FAULTS: Mutex<()> = Mutex::new(());

/// The read tests' server, with its media written once.
struct Shared {
    server: NfsServer,
}

fn shared() -> Result<&'static Shared> {
    static SHARED: OnceLock<std::result::Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| setup_shared().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("the shared nfs server could not be set up: {e}"))
}

fn setup_shared() -> Result<Shared> {
    // A second export that no client may use, for the permission-denied case.
    let denied = ExportSpec { access_type: AccessType::None, ..ExportSpec::new("denied") };
    let server = NfsServer::builder().extra_export(denied).start().context("starting nfs-ganesha")?;
    let export = server.export_dir();
    generate(&export.join("dpx"), SMALL_PRESET, 12, &[])?;
    generate(&export.join("exr"), SMALL_PRESET, 6, &["--format", "exr", "--compression", "piz"])?;
    let clip = fixture("prores-422hq-tiny.mov");
    std::fs::create_dir_all(export.join("video"))?;
    std::fs::copy(&clip, export.join("video/clip.mov"))
        .with_context(|| format!("copying {}", clip.display()))?;
    Ok(Shared { server })
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/video").join(name)
}

/// `playsim decode --md5` of `source`, checked to exit 0.
fn md5s(source: &str) -> Result<String> {
    let done = run(playsim().args(["decode", "--md5", source]))?;
    done.ensure_code(0)?;
    Ok(done.stdout)
}

/// A paced or unpaced play of `source` with `extra` flags; returns the run and its report.
fn play(source: &str, extra: &[&str], json: &Path) -> Result<(Run, Report)> {
    let done = run(playsim().args(["play", source, "--quiet", "--json"]).arg(json).args(extra))?;
    done.ensure_no_panic()?;
    let report = read_report(json).with_context(|| format!("no report:\n{done}"))?;
    Ok((done, report))
}

pub(crate) fn option<'a>(report: &'a Report, key: &str) -> &'a str {
    report.streams[0].storage.options.get(key).map_or("", String::as_str)
}

/// Each format decodes over nfs:// to the same md5s as from the local file, and plays
/// every frame with nothing dropped, the frames found by READDIRPLUS (no LOOKUP per frame).
#[test]
fn dpx_exr_and_prores_over_nfs_decode_bit_exact_and_play_every_frame() -> Result<()> {
    let shared = shared()?;
    let tmp = tempfile::tempdir()?;
    let export = shared.server.export_dir();
    for (rel, n_frames) in [("dpx", 12), ("exr", 6), ("video/clip.mov", 12)] {
        let url = shared.server.url(rel);
        let local = md5s(&export.join(rel).to_string_lossy())?;
        let remote = md5s(&url)?;
        ensure!(
            local.lines().count() as u64 == n_frames,
            "{rel}: {} md5 lines:\n{local}",
            local.lines().count()
        );
        ensure!(local == remote, "{rel}: md5s differ over nfs\nlocal:\n{local}\nnfs:\n{remote}");

        let json = tmp.path().join(format!("{}.json", rel.replace('/', "-")));
        let (done, report) = play(&url, &["--fps", "max", "--nconnect", "2"], &json)?;
        done.ensure_code(0)?;
        ensure!(report.status == RunStatus::Complete, "{rel}: status {:?}\n{done}", report.status);
        ensure!(report.totals.presented == n_frames, "{rel}: presented {}\n{done}", report.totals.presented);
        ensure!(report.totals.dropped.total() == 0, "{rel}: dropped {:?}\n{done}", report.totals.dropped);
        let storage = &report.streams[0].storage;
        ensure!(storage.transport == "nfs", "{rel}: transport {}", storage.transport);
        ensure!(option(&report, "nconnect") == "2", "{rel}: options {:?}", storage.options);
        ensure!(
            option(&report, "lookups") == "0",
            "{rel}: the stream looked files up: {:?}",
            storage.options
        );
        let file_bytes: u64 = if rel.ends_with(".mov") {
            report.totals.bytes_read
        } else {
            std::fs::read_dir(export.join(rel))?.map(|e| Ok(e?.metadata()?.len())).sum::<Result<u64>>()?
        };
        ensure!(
            report.totals.bytes_read == file_bytes,
            "{rel}: read {} of {file_bytes} bytes",
            report.totals.bytes_read
        );
    }
    Ok(())
}

/// A pattern URL (`%07d`) and a one-file URL find the same sequence as the directory.
#[test]
fn pattern_and_file_urls_find_the_sequence() -> Result<()> {
    let shared = shared()?;
    let by_dir = md5s(&shared.server.url("dpx/"))?;
    let by_pattern = md5s(&shared.server.url("dpx/frame.%07d.dpx"))?;
    let by_file = md5s(&shared.server.url("dpx/frame.0000003.dpx"))?;
    ensure!(by_dir.lines().count() == 12, "{by_dir}");
    ensure!(
        by_dir == by_pattern && by_dir == by_file,
        "dir:\n{by_dir}\npattern:\n{by_pattern}\nfile:\n{by_file}"
    );
    Ok(())
}

/// Every kind of bad URL is refused with one line naming the part at fault, and `--json`
/// still gets a failed report.
#[test]
fn bad_urls_get_one_line_naming_the_part() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let tmp = tempfile::tempdir()?;
    let ports = format!("mountport={}&nfsport={}", server.mount_port(), server.nfs_port());
    let export = server.export_dir().to_string_lossy().into_owned();
    let denied_dir = server.extra_export_dir("denied").context("the denied export")?.display().to_string();
    let denied_url = format!("nfs://127.0.0.1{denied_dir}/?{ports}&export={denied_dir}");
    let cases = [
        ("nfs://127.0.0.1:99999/x/a.dpx".to_owned(), "port: `99999` is not a port"),
        ("nfs://bad_host!/x/a.dpx".to_owned(), "host: `bad_host!` is not a host name"),
        (
            format!("nfs://127.0.0.1{export}/dpx?mountport=1&nfsport=1"),
            "port: 127.0.0.1:1 refused the connection",
        ),
        (
            format!("nfs://127.0.0.1/no/such/export/dpx?{ports}"),
            "export: no export holds /no/such/export/dpx",
        ),
        (format!("nfs://127.0.0.1{export}/missing/?{ports}"), "path: "),
        (format!("nfs://127.0.0.1{export}/dpx/nothing.0001.dpx?{ports}"), "path: "),
        (format!("nfs://127.0.0.1{export}/dpx?{ports}&colour=red"), "option: unknown option `colour`"),
        // The server does not list an export this client may not use, so `?export=` names it.
        (denied_url, "credentials: the server refused to mount"),
    ];
    for (i, (url, expected)) in cases.iter().enumerate() {
        let json = tmp.path().join(format!("{i}.json"));
        let done = run(playsim().args(["play", url, "--json"]).arg(&json))?;
        done.ensure_code(1)?;
        let error_lines: Vec<&str> =
            done.stderr.lines().filter(|l| l.starts_with("playsim: error")).collect();
        ensure!(error_lines.len() == 1, "{url}: expected one error line:\n{done}");
        ensure!(error_lines[0].contains(expected), "{url}: expected {expected:?}:\n{done}");
        ensure!(error_lines[0].contains(url.as_str()), "{url}: the error should name the url:\n{done}");
        let report = read_report(&json)?;
        ensure!(report.status == RunStatus::Failed, "{url}: report status {:?}", report.status);
    }
    Ok(())
}

/// With no ports in the URL, the portmapper finds the MOUNT and NFS services.
#[test]
fn the_portmapper_finds_the_services() -> Result<()> {
    let shared = shared()?;
    // Servers started by the fault tests take the portmapper's names; hold them off.
    let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    shared.server.register_with_portmapper()?;
    let url = format!("nfs://127.0.0.1{}/dpx/", shared.server.export_dir().display());
    let by_portmapper = md5s(&url)?;
    ensure!(by_portmapper == md5s(&shared.server.url("dpx"))?, "{by_portmapper}");
    Ok(())
}

/// A run of `seq` at 24 fps, looping, for `seconds`, while `fault` is done to the server;
/// returns the finished run and its report.
fn paced_run_with_fault(
    server: &mut NfsServer,
    seconds: u32,
    extra: &[&str],
    fault: impl FnOnce(&mut NfsServer, Instant) -> Result<()>,
) -> Result<(Run, Report)> {
    let url = server.url("dpx");
    paced_run(&url, seconds, extra, |started| fault(server, started))
}

/// A run of `url` at 24 fps, looping, for `seconds`, while `fault` is done (given the instant
/// playsim was started); returns the finished run and its report.
pub(crate) fn paced_run(
    url: &str,
    seconds: u32,
    extra: &[&str],
    fault: impl FnOnce(Instant) -> Result<()>,
) -> Result<(Run, Report)> {
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("r.json");
    let mut child = Background::spawn(
        playsim()
            .args(["play", url, "--fps", "24", "--loop", "--quiet"])
            .args(["--duration", &format!("{seconds}s"), "--json"])
            .arg(&json)
            .args(extra),
        tmp.path(),
    )?;
    fault(child.started)?;
    child.finish(Duration::from_secs(u64::from(seconds) + 60), &json)
}

/// A server of its own for a fault test, with 24 frames in `dpx/`.
pub(crate) fn fault_server() -> Result<NfsServer> {
    let server = NfsServer::start().context("starting nfs-ganesha")?;
    generate(&server.export_dir().join("dpx"), SMALL_PRESET, 24, &[])?;
    Ok(server)
}

pub(crate) fn sleep_until(started: Instant, at: Duration) {
    std::thread::sleep(at.saturating_sub(started.elapsed()));
}

/// The frames presented that fell due at or after `from_s` seconds into playback.
pub(crate) fn presented_after(report: &Report, from_s: f64) -> usize {
    let from_ns = (from_s * 1e9) as u64;
    report.streams[0].timeline.iter().filter(|f| f.presented_ns.is_some() && f.due_ns >= from_ns).count()
}

/// The longest run of consecutive frames dropped for storage: with the prefetched frames
/// before it, how long playback saw the storage stall.
pub(crate) fn longest_storage_outage(report: &Report) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for frame in &report.streams[0].timeline {
        run = if frame.cause == Some(DropCauseName::Storage) { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// The server stopped (SIGSTOP) for 3 s mid-run: the frames that fell due meanwhile are
/// storage drops, and playback resumes when it answers again.
#[test]
fn a_server_stopped_for_3_s_costs_storage_drops_then_playback_resumes() -> Result<()> {
    let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut server = fault_server()?;
    let (done, report) = paced_run_with_fault(&mut server, 8, &[], |server, started| {
        sleep_until(started, Duration::from_secs(3));
        server.pause();
        std::thread::sleep(Duration::from_secs(3));
        server.resume();
        Ok(())
    })?;
    done.ensure_code(0)?;
    let d = &report.totals.dropped;
    ensure!(report.status == RunStatus::Complete, "status {:?}\n{done}", report.status);
    // 3 s at 24 fps is 72 frames; the prefetched frames cover the first few.
    ensure!(
        (50..=80).contains(&d.storage),
        "storage drops {} (expected about 72 - prefetch):\n{done}",
        d.storage
    );
    ensure!(d.decode + d.unreadable == 0, "drops {d:?}:\n{done}");
    ensure!(presented_after(&report, 6.5) > 24, "playback did not resume:\n{done}");
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::Fault,
        name: "ganesha SIGSTOP for 3 s".into(),
        survived: true,
        frames_lost: Some(d.storage + d.unreadable),
        bound: None,
        recover_s: None,
        outcome: format!("resumed; longest run of storage drops {}", longest_storage_outage(&report)),
    })?;
    Ok(())
}

/// The server killed (SIGKILL) mid-run and restarted 5 s later: the transport reconnects with
/// backoff, the frames that fell due meanwhile are storage drops, no more than the outage, the
/// restart and a second more at 24 fps plus the prefetched frames, and the run completes with a
/// report that says how long the transport waited for the reconnect.
#[test]
fn a_server_killed_and_restarted_5_s_later_costs_storage_drops_and_a_reconnect() -> Result<()> {
    const FPS: f64 = 24.0;
    let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut server = fault_server()?;
    // How long the server was gone (kill to restart begun) and how long its restart took.
    let (mut outage, mut restart) = (Duration::ZERO, Duration::ZERO);
    let (done, report) = paced_run_with_fault(&mut server, 13, &[], |server, started| {
        sleep_until(started, Duration::from_secs(3));
        let killed = Instant::now();
        server.kill();
        std::thread::sleep(Duration::from_secs(5));
        outage = killed.elapsed();
        let restarting = Instant::now();
        server.restart()?;
        restart = restarting.elapsed();
        Ok(())
    })?;
    done.ensure_code(0)?;
    let d = &report.totals.dropped;
    let frames_lost = d.total();
    let prefetch = u64::from(report.settings.prefetch);
    let bound = ((outage + restart + Duration::from_secs(1)).as_secs_f64() * FPS).ceil() as u64 + prefetch;
    let reconnects: u64 = option(&report, "reconnects").parse().unwrap_or(0);
    let reconnect_wait_s: Option<f64> = option(&report, "reconnect_wait_s").parse().ok();
    // From the server serving again to the transport's answer over the new connection.
    let recover_s = reconnect_wait_s.map(|wait| (wait - (outage + restart).as_secs_f64()).max(0.0));
    let resumed = presented_after(&report, 10.0);
    let survived = report.status == RunStatus::Complete
        && d.storage > 0
        && d.decode + d.unreadable == 0
        && frames_lost <= bound
        && reconnects >= 1
        && resumed > 24;
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::Fault,
        name: "ganesha SIGKILL, restarted 5 s later".into(),
        survived,
        frames_lost: Some(frames_lost),
        bound: Some(bound),
        recover_s,
        outcome: format!(
            "{reconnects} reconnect(s), reconnect_wait_s {}, outage {outage:.1?} + restart {restart:.1?}, \
             longest run of storage drops {}",
            option(&report, "reconnect_wait_s"),
            longest_storage_outage(&report)
        ),
    })?;
    ensure!(report.status == RunStatus::Complete, "status {:?}\n{done}", report.status);
    ensure!(d.storage > 0, "no storage drops while the server was down:\n{done}");
    ensure!(d.decode + d.unreadable == 0, "drops {d:?}:\n{done}");
    ensure!(
        frames_lost <= bound,
        "{frames_lost} frames lost, more than (outage {outage:?} + restart {restart:?} + 1 s) x {FPS} fps \
         + prefetch {prefetch} = {bound}:\n{done}"
    );
    ensure!(reconnects >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
    let wait = reconnect_wait_s.context("no reconnect_wait_s in the report's storage options")?;
    // The transport waited through the outage (from its connection breaking, a little after the
    // kill) and no longer than the whole fault plus a backoff step and a second of slack.
    ensure!(
        wait >= outage.as_secs_f64() - 1.0 && wait <= (outage + restart).as_secs_f64() + 2.0,
        "reconnect_wait_s {wait} for an outage of {outage:?} and a restart of {restart:?}"
    );
    ensure!(resumed > 24, "playback did not resume ({resumed} frames after 10 s):\n{done}");
    Ok(())
}

/// A server that never comes back ends the run with a clear error once `--nfs-timeout`
/// (3 s) has passed since the kill (within a backoff step before, 1.5 s after), and the
/// report is still written, marked failed, with the reason.
#[test]
fn a_server_that_never_comes_back_ends_the_run_with_a_report() -> Result<()> {
    const NFS_TIMEOUT: Duration = Duration::from_secs(3);
    let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut server = fault_server()?;
    let mut killed = None;
    let (done, report) =
        paced_run_with_fault(&mut server, 60, &["--nfs-timeout", "3s"], |server, started| {
            sleep_until(started, Duration::from_secs(2));
            server.kill();
            killed = Some(Instant::now());
            Ok(())
        })?;
    // The run's end to within the 20 ms that the child's exit is polled at.
    let ended_after_kill = killed.context("the server was not killed")?.elapsed();
    let error = report.error.clone().unwrap_or_default();
    // A call in flight at the kill gives up once its next backoff (at most 1 s) would pass its
    // 3 s, and the pool's other calls with it; the engine then ends the run and the CLI writes
    // the report.
    let (earliest, latest) =
        (NFS_TIMEOUT - Duration::from_secs(1), NFS_TIMEOUT + Duration::from_millis(1500));
    let survived = report.status == RunStatus::Failed
        && error.contains("storage unavailable")
        && (earliest..=latest).contains(&ended_after_kill);
    record_reliability(&ReliabilityRow {
        table: ReliabilityTable::Fault,
        name: "ganesha killed, never back (--nfs-timeout 3s)".into(),
        survived,
        frames_lost: None,
        bound: None,
        recover_s: None,
        outcome: format!(
            "run failed {:.1} s after the kill ({:.1} s in all) with the report written: {error}",
            ended_after_kill.as_secs_f64(),
            report.duration_s
        ),
    })?;
    done.ensure_code(1)?;
    ensure!(report.status == RunStatus::Failed, "status {:?}\n{done}", report.status);
    ensure!(error.contains("storage unavailable") && error.contains("nfs"), "report error {error:?}\n{done}");
    ensure!(
        (earliest..=latest).contains(&ended_after_kill),
        "the run ended {ended_after_kill:?} after the kill, not within {earliest:?}..={latest:?} \
         (--nfs-timeout 3s):\n{done}"
    );
    ensure!(report.totals.presented > 0, "nothing presented before the kill:\n{done}");
    Ok(())
}

/// frametest reads nfs:// with the settings list's NFS group (`--rsize`, `--nconnect`,
/// `--nfs-timeout`), as `play` does.
#[test]
fn frametest_over_nfs_takes_the_nfs_knobs() -> Result<()> {
    let shared = shared()?;
    let export = shared.server.export_dir();
    run(playsim().args(["frametest", "-w", "sd", "-n", "3"]).arg(export.join("ft")))?.ensure_code(0)?;
    let url = shared.server.url("ft/");
    let done = run(playsim().args([
        "frametest",
        "-r",
        "sd",
        "--rsize",
        "64K",
        "--nconnect",
        "2",
        "--nfs-timeout",
        "5s",
        &url,
    ]))?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("Frames transferred: 3"), "{done}");
    Ok(())
}

/// `playsim record` to an `nfs://` directory, through playsim's own client (CREATE, WRITE,
/// COMMIT, RENAME): every frame is on the server under its real name, byte for byte the
/// generator's, with no partial file, and the client's CPU is the report's write CPU; the same
/// directory again is refused as not empty.
#[test]
fn record_writes_a_sequence_through_playsims_nfs_client() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let dest = server.export_dir().join("recorded");
    std::fs::create_dir_all(&dest)?;
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("record.json");
    let url = server.url("recorded");
    let done = run(playsim()
        .args(["record", &url, "--preset", SMALL_PRESET, "--fps", "max", "--frames", "12", "--json"])
        .arg(&json))?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("Frames written: 12 of 12"), "{done}");
    ensure!(done.stdout.contains("written as nfs:// export"), "{done}");
    let figures: RecordFigures = serde_json::from_str(&std::fs::read_to_string(&json)?)
        .with_context(|| format!("{} is not record's JSON", json.display()))?;
    ensure!(figures.write_cpu_s_per_gb > 0.0, "no write CPU counted: {figures:?}");
    let reference = tmp.path().join("generated");
    generate(&reference, SMALL_PRESET, 12, &[])?;
    let mut names: Vec<String> = std::fs::read_dir(&dest)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_>>()?;
    names.sort();
    ensure!(names.len() == 12 && names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");
    for name in &names {
        let (got, want) = (std::fs::read(dest.join(name))?, std::fs::read(reference.join(name))?);
        ensure!(got == want, "{name}: {} bytes on the server against {} generated", got.len(), want.len());
    }
    ensure!(md5s(&url)? == md5s(&reference.to_string_lossy())?, "the recorded sequence decodes differently");

    let again =
        run(playsim().args(["record", &url, "--preset", SMALL_PRESET, "--fps", "max", "--frames", "2"]))?;
    again.ensure_code(1)?;
    ensure!(again.stderr.contains("is not empty (12 entries"), "{again}");

    // A destination that does not exist yet is made (MKDIR), as a local one is; and ProRes
    // goes the same way, one clip.
    let new_url = server.url("recorded-new");
    let made = run(playsim().args([
        "record",
        &new_url,
        "--preset",
        SMALL_PRESET,
        "--fps",
        "max",
        "--frames",
        "3",
        "--streams",
        "2",
    ]))?;
    made.ensure_code(0)?;
    for stream in ["stream-01", "stream-02"] {
        let n = std::fs::read_dir(server.export_dir().join("recorded-new").join(stream))?.count();
        ensure!(n == 3, "{stream}: {n} files\n{made}");
    }
    #[cfg(feature = "ffmpeg")]
    {
        let clip_url = server.url("recorded-prores");
        let clip = run(playsim()
            .args(["record", &clip_url, "--format", "prores", "--preset", SMALL_PRESET])
            .args(["--fps", "max", "--frames", "4"]))?;
        clip.ensure_code(0)?;
        let decoded = run(playsim().args(["decode", "--md5"]).arg(server.url("recorded-prores/frame.mov")))?;
        decoded.ensure_code(0)?;
        ensure!(decoded.stdout.lines().count() == 4, "{decoded}");
    }
    Ok(())
}

/// `playsim frametest -w` to an `nfs://` directory writes frametest's files through playsim's
/// own client, and `-r` reads them back over it.
#[test]
fn frametest_writes_and_reads_back_over_nfs() -> Result<()> {
    let shared = shared()?;
    let server = &shared.server;
    let dest = server.export_dir().join("ft-written");
    std::fs::create_dir_all(&dest)?;
    let url = server.url("ft-written");
    let write = run(playsim().args(["frametest", "-w", "hd", "-n", "4", "-t", "2", &url]))?;
    write.ensure_code(0)?;
    ensure!(write.stdout.contains("Frames transferred: 4"), "{write}");
    for i in 0..4 {
        let file = dest.join(format!("frame{i:06}.dpx"));
        let bytes = std::fs::metadata(&file).with_context(|| format!("{}", file.display()))?.len();
        ensure!(bytes == 1920 * 1080 * 4 + 65_536, "{} is {bytes} bytes", file.display());
    }
    let read = run(playsim().args(["frametest", "-r", "hd", "-t", "2", &url]))?;
    read.ensure_code(0)?;
    ensure!(read.stdout.contains("Frames transferred: 4"), "{read}");
    Ok(())
}
