//! Knob values past what a machine holds are refused before anything runs, memory stays within
//! `--max-buffer` on a sequence of wildly different frame sizes, and the counts that were wrong
//! (issue 20, points 4 and 5): the output side's buffers, FFmpeg's threads' CPU in the decode
//! stage, `--verify` on a video file.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};

use crate::util::{frame_path, generate, playsim, read_report, run, SMALL_PRESET};

/// A value no count, size or duration can hold: u32::MAX, and 1e18 (bytes, or seconds).
const ABSURD_U32: &str = "4294967295";
const ABSURD_1E18: &str = "1000000000000000000";

/// Each knob given an absurd value: its arguments (after `playsim`), the flag the refusal must
/// name, and the limit it must state. Every refusal shows an example too ("for example").
const ABSURD: &[(&[&str], &str, &str)] = &[
    (&["play", "/m", "--prefetch", ABSURD_U32], "--prefetch", "more than 1024"),
    (&["play", "/m", "--preroll", ABSURD_U32], "--preroll", "more than 1024 frames"),
    (&["play", "/m", "--io-depth", ABSURD_U32], "--io-depth", "more than 1024"),
    (&["play", "/m", "--decode-threads", ABSURD_U32], "--decode-threads", "more than 1024 threads"),
    (&["play", "/m", "--output-threads", ABSURD_U32], "--output-threads", "more than 1024 threads"),
    (&["play", "/m", "--codec-threads", ABSURD_U32], "--codec-threads", "more than 64 threads"),
    (&["play", "/m", "--streams", ABSURD_U32], "--streams", "more than 1024"),
    (&["play", "/m", "--max-buffer", ABSURD_1E18], "--max-buffer", "more than this machine's memory"),
    (&["play", "/m", "--max-buffer", "1000000T"], "--max-buffer", "more than this machine's memory"),
    (&["play", "/m", "--block-size", ABSURD_1E18], "--block-size", "larger than 1G"),
    (&["play", "/m", "--rsize", ABSURD_1E18], "--rsize", "4K to 64M"),
    (&["play", "/m", "--nconnect", ABSURD_U32], "--nconnect", "1 to 64"),
    (&["play", "/m", "--duration", ABSURD_1E18], "--duration", "at most a year"),
    (&["play", "/m", "--nfs-timeout", ABSURD_1E18], "--nfs-timeout", "at most a year"),
    (&["capacity", "/m", "--max", ABSURD_U32], "--max", "more than 1024"),
    (&["capacity", "/m", "--trials", ABSURD_U32], "--trials", "more than 1024"),
    (&["capacity", "/m", "--window", ABSURD_1E18], "--window", "at most a year"),
    (&["decode", "/m", "--codec-threads", ABSURD_U32], "--codec-threads", "more than 64 threads"),
    (&["frametest", "-r", "/m", "--decode-threads", ABSURD_U32], "--decode-threads", "more than 1024"),
    (&["frametest", "-r", "/m", "-t", ABSURD_U32], "-t", "1 to 4096"),
    (&["generate", "/m", "--threads", ABSURD_U32], "--threads", "0 (every core) to 1024"),
];

/// The same for values a command checks after parsing, against its other settings: refused
/// as settings are (exit 1), before any file is opened.
const ABSURD_SETTINGS: &[(&[&str], &str, &str)] = &[
    (&["frametest", "-r", "/m", "-q", ABSURD_U32], "-q", "1 to 4096 frames"),
    (&["frametest", "-w", "-z", ABSURD_1E18, "/m"], "-z", "(1 GiB)"),
    // 4096 writers of 1 GiB frames: 4 TiB, more memory than any test machine has available.
    (&["frametest", "-w", "-z", "1048576", "-t", "4096", "/m"], "-t 4096", "this machine has available"),
];

#[test]
fn absurd_knob_values_are_refused_naming_the_flag_the_limit_and_an_example() -> Result<()> {
    let mut failures = Vec::new();
    let cases = ABSURD.iter().map(|case| (case, 2)).chain(ABSURD_SETTINGS.iter().map(|case| (case, 1)));
    for ((args, flag, limit), code) in cases {
        let started = Instant::now();
        let done = run(playsim().args(*args))?;
        let took = started.elapsed();
        let stated =
            done.stderr.contains(flag) && done.stderr.contains(limit) && done.stderr.contains("for example");
        if done.code != Some(code)
            || !stated
            || took > Duration::from_secs(5)
            || done.ensure_no_panic().is_err()
        {
            failures.push(format!("playsim {} (in {took:?}):\n{done}", args.join(" ")));
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} refused wrongly:\n{}",
        failures.len(),
        ABSURD.len() + ABSURD_SETTINGS.len(),
        failures.join("\n")
    );
    Ok(())
}

#[test]
fn absurd_scenario_values_are_refused_naming_the_key_the_limit_and_an_example() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    for (line, limit) in [
        (format!("prefetch = {ABSURD_U32}"), "more than 1024"),
        (format!("decode_threads = {ABSURD_U32}"), "more than 1024 threads"),
        (format!("max_buffer = \"{ABSURD_1E18}\""), "more than this machine's memory"),
    ] {
        let file = tmp.path().join("absurd.toml");
        std::fs::write(&file, format!("{line}\n[[stream]]\nsource = \"/m\"\n"))?;
        let done = run(playsim().arg("run").arg(&file).arg("--check"))?;
        let key = line.split(' ').next().unwrap_or_default();
        ensure!(done.code != Some(0), "{line} was accepted:\n{done}");
        ensure!(
            done.stderr.contains(key) && done.stderr.contains(limit) && done.stderr.contains("for example"),
            "{line}:\n{done}"
        );
        done.ensure_no_panic()?;
    }
    Ok(())
}

/// A sequence whose frames are mostly tiny, with a run of eight 4K DCI frames (35 MB each):
/// without a byte bound, a window of 16 fills with them while the one decode thread works
/// (789 MB peak before `--max-buffer`, 500 MB with it at 4G; 220 to 320 MB at 48M).
#[test]
fn peak_memory_stays_within_max_buffer_on_wildly_different_frame_sizes() -> Result<()> {
    const HUGE: std::ops::RangeInclusive<u64> = 10..=17;
    const HUGE_DECODED: u64 = 4096 * 2160 * 6;
    let tmp = tempfile::tempdir()?;
    let (seq, big) = (tmp.path().join("seq"), tmp.path().join("big"));
    generate(&seq, SMALL_PRESET, 32, &[])?;
    generate(&big, "4k-dci", 1, &[])?;
    let huge_file = std::fs::metadata(frame_path(&big, 0))?.len();
    for f in HUGE {
        std::fs::copy(frame_path(&big, 0), frame_path(&seq, f)).context("copying a 4K frame in")?;
    }
    std::fs::remove_dir_all(&big)?;
    let json = tmp.path().join("run.json");
    let max_buffer: u64 = 48 << 20;
    let done = run(playsim().arg("play").arg(&seq).args([
        "--fps",
        "max",
        "--prefetch",
        "16",
        "--io-depth",
        "8",
        "--decode-threads",
        "1",
        "--max-buffer",
        "48M",
        "--quiet",
        "--json",
        path_str(&json)?,
    ]))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    let stream = &report.streams[0];
    ensure!(stream.presented == 32, "presented {} of 32:\n{done}", stream.presented);
    ensure!(report.settings.max_buffer_bytes == max_buffer, "{:?}", report.settings);
    // The decoded pool at the largest frame's size (the report sizes it by the first frame's),
    // and the one frame the engine lets past --max-buffer: the frame next due always reads.
    let decoded_pool = stream.pool_buffers.decoded * HUGE_DECODED;
    let bound = max_buffer + huge_file + decoded_pool + (64 << 20);
    let peak = report.memory.peak_rss_bytes;
    ensure!(
        peak > 0 && peak <= bound,
        "peak RSS {} MB over {} MB (max-buffer {} MB + a {} MB frame + {} decoded buffers of {} MB + 64 MB)",
        peak >> 20,
        bound >> 20,
        max_buffer >> 20,
        huge_file >> 20,
        stream.pool_buffers.decoded,
        HUGE_DECODED >> 20
    );
    Ok(())
}

#[test]
fn the_output_sides_buffers_are_counted() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 24, &[])?;
    for (stage, packs) in [("v210", true), ("none", false)] {
        let json = tmp.path().join(format!("{stage}.json"));
        let done = run(playsim().arg("play").arg(&seq).args([
            "--fps",
            "max",
            "--output-stage",
            stage,
            "--quiet",
            "--json",
            path_str(&json)?,
        ]))?;
        done.ensure_code(0)?;
        let report = read_report(&json)?;
        let pools = report.streams[0].pool_buffers;
        if packs {
            ensure!(pools.output >= 1 && pools.output_bytes > 0, "v210: {pools:?}");
            // Output buffers are encoded-pool buffers, so they have the encoded size. When the
            // output side held every encoded buffer at its peak, none is left to count as
            // `encoded` (CI saw `encoded: 0, output: 8`): the size then comes from the output's.
            let each = pools.output_bytes / pools.output;
            ensure!(
                pools.output_bytes == pools.output * each && pools.encoded_bytes == pools.encoded * each,
                "{pools:?}"
            );
        } else {
            ensure!((pools.output, pools.output_bytes) == (0, 0), "none: {pools:?}");
        }
        ensure!(report.memory.pool_bytes == pools.bytes(), "{stage}: {:?} {pools:?}", report.memory);
    }
    Ok(())
}

#[cfg(feature = "ffmpeg")]
#[test]
fn verify_is_refused_for_a_video_file() -> Result<()> {
    let clip = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/video/prores-422hq-tiny.mov");
    let done = run(playsim().arg("play").arg(&clip).args(["--verify", "--fps", "max", "--quiet"]))?;
    done.ensure_code(1)?;
    ensure!(
        done.stderr.contains("--verify") && done.stderr.contains("prores-422hq-tiny.mov carries none"),
        "{done}"
    );
    ensure!(
        done.stderr.contains("for example playsim generate") && done.stderr.lines().count() == 1,
        "{done}"
    );
    ensure!(!done.stdout.contains("presented"), "it must not run:\n{done}");
    // The same from a scenario file's key.
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("verify.toml");
    std::fs::write(
        &scenario,
        format!("verify = true\nfps = \"max\"\n[[stream]]\nsource = \"{}\"\n", clip.display()),
    )?;
    let reports = tmp.path().join("reports");
    let done = run(playsim().arg("run").arg(&scenario).arg("--quiet").arg("--json-dir").arg(&reports))?;
    done.ensure_code(1)?;
    // The run could not start: its report says why, and no frame was read.
    ensure!(done.stdout.contains("verify = true") && done.stdout.contains("carries none"), "{done}");
    ensure!(done.stderr.contains("could not start") && done.stdout.contains("0 of 0 due"), "{done}");
    Ok(())
}

/// FFmpeg's slice threads do most of a threaded ProRes decode: the decode stage's CPU must
/// count theirs, not only the calling decode thread's (a quarter with 4 codec threads).
#[cfg(feature = "ffmpeg")]
#[test]
fn the_decode_stage_counts_ffmpegs_own_threads() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let clip = tmp.path().join("prores-1080p.mov");
    crate::util::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=1920x1080:rate=24",
        "-frames:v",
        "24",
        "-c:v",
        "prores_ks",
        "-profile:v",
        "3",
        path_str(&clip)?,
    ])?;
    let json = tmp.path().join("run.json");
    let done = run(playsim().arg("play").arg(&clip).args([
        "--fps",
        "max",
        "--loop",
        "--frames",
        "192",
        "--decode-threads",
        "1",
        "--codec-threads",
        "4",
        "--output-stage",
        "none",
        "--quiet",
        "--json",
        path_str(&json)?,
    ]))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    let process = report.cpu.process_user_s + report.cpu.process_sys_s;
    let decode = report.cpu.stages.decode_s;
    ensure!(report.totals.presented == 192, "{done}");
    ensure!(
        process > 0.5 && decode >= 0.7 * process,
        "decode stage {decode:.2} s of the process's {process:.2} s CPU: FFmpeg's threads are not counted"
    );
    Ok(())
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().context("a temporary path that is not UTF-8")
}
