//! `--io-engine io_uring` end to end through the binary: a generated sequence played and
//! verified through io_uring, buffered and with O_DIRECT, the report naming the engine, the
//! ring and the registered buffers; frametest reading through it; a low locked-memory limit
//! reported with how to raise it; a bad engine refused.
//!
//! Where io_uring cannot be set up on the machine, the tests say so on stderr and check
//! that the run fell back to pread and said why.

use anyhow::{ensure, Context, Result};
use playsim::report::{Report, RunStatus, StreamReport};

use crate::util::{generate, playsim, read_report, run, Run, SMALL_PRESET};

const N_FRAMES: u64 = 12;

/// Plays `dir` with `extra` flags as fast as possible and returns the report and the run.
fn play(dir: &std::path::Path, extra: &[&str]) -> Result<(Report, Run)> {
    let json = dir.with_extension("json");
    let done = run(playsim()
        .arg("play")
        .arg(dir)
        .args(["--fps", "max", "--quiet", "--output-stage", "none", "--json"])
        .arg(&json)
        .args(extra))?;
    done.ensure_code(0)?;
    done.ensure_no_panic()?;
    let report = read_report(&json)?;
    ensure!(report.status == RunStatus::Complete, "run not complete:\n{done}");
    Ok((report, done))
}

fn option<'a>(stream: &'a StreamReport, key: &str) -> &'a str {
    stream.storage.options.get(key).map_or("", String::as_str)
}

/// True when the run read through io_uring; otherwise checks that it said why it did not.
fn used_io_uring(report: &Report, done: &Run) -> Result<bool> {
    let stream = &report.streams[0];
    match option(stream, "io_engine") {
        "io_uring" => Ok(true),
        "pread" => {
            let why = option(stream, "io_uring");
            eprintln!("io_uring is not available on this machine, checking the pread fallback: {why}");
            ensure!(why.starts_with("not available: io_uring_setup failed"), "{:?}", stream.storage.options);
            ensure!(done.stderr.contains("playsim: warning: io_uring is not available"), "{done}");
            Ok(false)
        }
        other => anyhow::bail!("io_engine {other:?} in {:?}", stream.storage.options),
    }
}

#[test]
fn plays_and_verifies_a_sequence_through_io_uring() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("seq");
    generate(&dir, SMALL_PRESET, N_FRAMES, &[])?;
    // A 160x32 frame is 22,528 bytes: six 4 KiB blocks, the last one short.
    let (pread, _) = play(&dir, &["--block-size", "4K", "--no-decode"])?;
    let pread_reads = pread.streams[0].storage.n_reads;
    ensure!(pread_reads == N_FRAMES * 6, "pread made {pread_reads} reads");
    ensure!(option(&pread.streams[0], "io_engine") == "pread", "{:?}", pread.streams[0].storage.options);

    for direct in [false, true] {
        let mut flags = vec!["--block-size", "4K", "--io-engine", "io_uring", "--verify"];
        if direct {
            flags.push("--direct");
        }
        let (report, done) = play(&dir, &flags)?;
        let stream = &report.streams[0];
        // --verify decodes every frame and checks the index in its pixels: the bytes came
        // through whole and in place.
        ensure!(
            stream.presented == N_FRAMES,
            "direct {direct}: presented {} of {N_FRAMES}\n{done}",
            stream.presented
        );
        ensure!(stream.dropped.total() == 0 && stream.unreadable.is_empty(), "{:?}", stream.dropped);
        ensure!(stream.storage.direct == direct, "direct {direct}");
        if !used_io_uring(&report, &done)? {
            continue;
        }
        ensure!(stream.storage.n_reads == pread_reads, "direct {direct}: {} reads", stream.storage.n_reads);
        ensure!(option(stream, "ring_entries") == "128", "{:?}", stream.storage.options);
        let registered = option(stream, "registered_buffers");
        ensure!(registered.starts_with("yes: "), "direct {direct}: registered_buffers {registered:?}");
        ensure!(!done.stderr.contains("warning"), "no warning expected:\n{done}");
    }
    Ok(())
}

#[test]
fn frametest_reads_through_io_uring() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("ft");
    run(playsim().args(["frametest", "-w", "sd", "-n", "6", "-t", "2"]).arg(&dir))?.ensure_code(0)?;
    let read = run(playsim()
        .args(["frametest", "-r", "sd", "-n", "6", "-t", "2", "--io-engine", "io_uring"])
        .arg(&dir))?;
    read.ensure_code(0)?;
    ensure!(read.stdout.contains("Frames transferred: 6"), "{read}");
    ensure!(read.stdout.contains("--io-engine io_uring"), "the parameters name the engine:\n{read}");
    ensure!(
        read.stdout.contains("through io_uring") || read.stdout.contains("io_uring is not available"),
        "the summary says how the files were read:\n{read}"
    );
    let write =
        run(playsim().args(["frametest", "-w", "sd", "-n", "2", "--io-engine", "io_uring"]).arg(&dir))?;
    ensure!(write.code == Some(1) && write.stderr.contains("applies to reads"), "{write}");
    Ok(())
}

/// Runs `program --version` to learn whether it is there.
fn have(program: &str) -> bool {
    std::process::Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn a_low_locked_memory_limit_reads_unregistered_and_says_how_to_raise_it() -> Result<()> {
    // The limit only binds without CAP_IPC_LOCK: drop it with setpriv (which needs root to
    // drop it from the bounding set) and set the limit with prlimit.
    let uid = std::fs::read_to_string("/proc/self/status")?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .context("no effective uid in /proc/self/status")?;
    if uid != "0" || !have("setpriv") || !have("prlimit") {
        eprintln!(
            "skipping the real locked-memory limit (needs root, setpriv and prlimit); the fallback is \
             checked by injection in playsim-storage's uring tests"
        );
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("seq");
    generate(&dir, SMALL_PRESET, N_FRAMES, &[])?;
    let json = tmp.path().join("run.json");
    // 16 KiB of locked memory: less than one 22,528-byte frame buffer.
    let done = run(std::process::Command::new("prlimit")
        .args(["--memlock=16384:16384", "setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock"])
        .arg(env!("CARGO_BIN_EXE_playsim"))
        .arg("play")
        .arg(&dir)
        .args(["--fps", "max", "--quiet", "--no-decode", "--io-engine", "io_uring", "--json"])
        .arg(&json))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    let stream = &report.streams[0];
    ensure!(stream.presented == N_FRAMES, "presented {}\n{done}", stream.presented);
    if !used_io_uring(&report, &done)? {
        return Ok(());
    }
    let registered = option(stream, "registered_buffers");
    ensure!(registered.starts_with("no: registering a"), "{registered:?}");
    ensure!(registered.contains("ENOMEM") && registered.contains("ulimit -l"), "{registered:?}");
    let warnings: Vec<&str> = done.stderr.lines().filter(|l| l.starts_with("playsim: warning:")).collect();
    ensure!(warnings.len() == 1, "one warning, once:\n{done}");
    ensure!(warnings[0].contains("unregistered buffers") && warnings[0].contains("RLIMIT_MEMLOCK"), "{done}");
    Ok(())
}

#[test]
fn a_bad_io_engine_is_refused_with_the_valid_ones() -> Result<()> {
    let done = run(playsim().args(["play", "/nonexistent", "--io-engine", "aio"]))?;
    ensure!(done.code == Some(2), "{done}");
    ensure!(done.stderr.contains("aio") && done.stderr.contains("pread, io_uring"), "{done}");
    Ok(())
}
