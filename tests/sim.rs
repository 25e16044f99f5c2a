//! Simulated storage (`sim://`) end to end through the binary: a link too slow for the
//! rate drops frames on storage, streams naming one link share it, raw frames are not
//! decoded, corrupt frames are counted and skipped, and bad URLs are refused.
//!
//! The margins are wide (a link at 37% or 62% of the need against one at 125% or more), so a loaded machine does not
//! change the verdicts; the link's exact arithmetic is tested under a paused clock in
//! `crates/playsim-storage/tests/sim_link.rs`.

use anyhow::{ensure, Context, Result};
use playsim::report::{Report, RunStatus};

use crate::util::{playsim, read_report, run, SMALL_PRESET};

/// Plays `sources` with `extra` flags at 24 fps and returns the report.
fn play(sources: &[&str], extra: &[&str]) -> Result<Report> {
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let done = run(playsim()
        .arg("play")
        .args(sources)
        .args(["--fps", "24", "--quiet", "--json"])
        .arg(&json)
        .args(extra))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    ensure!(report.status == RunStatus::Complete, "run not complete:\n{done}");
    Ok(report)
}

fn storage_drops(report: &Report) -> u64 {
    report.streams.iter().map(|s| s.dropped.storage).sum()
}

#[test]
fn a_link_too_slow_for_the_rate_drops_frames_on_storage() -> Result<()> {
    // A 160x32 10-bit DPX frame is 22,528 bytes: 24 fps needs 541 kB/s.
    let slow =
        format!("sim://?bw=200kB/s&lat=1ms&jitter=1ms&seed=7&format=dpx&preset={SMALL_PRESET}&frames=48");
    let report = play(&[&slow], &[])?;
    let stream = &report.streams[0];
    ensure!(stream.dropped.storage >= 12, "expected storage drops at 37% of the need: {:?}", stream.dropped);
    ensure!(stream.dropped.unreadable == 0, "{:?}", stream.unreadable);
    let storage = &stream.storage;
    ensure!(storage.transport == "sim", "transport {}", storage.transport);
    let option = |k: &str| storage.options.get(k).map(String::as_str).unwrap_or("");
    ensure!(option("bw") == "200 kB/s (1.6 Mbit/s)", "{:?}", storage.options);
    ensure!(option("link") == "(this stream's own)" && option("seed") == "7", "{:?}", storage.options);
    ensure!(
        option("dist") == "exp" && option("lat") == "1ms" && option("jitter") == "1ms",
        "{:?}",
        storage.options
    );
    ensure!(stream.source.location == slow && stream.source.format == "dpx", "{:?}", stream.source);
    ensure!(stream.source.decoder.starts_with("dpx"), "{}", stream.source.decoder);

    let fast = slow.replace("bw=200kB/s", "bw=20MB/s");
    let report = play(&[&fast], &[])?;
    ensure!(storage_drops(&report) == 0, "no storage drop at 37x the need: {:?}", report.streams[0].dropped);
    Ok(())
}

#[test]
fn streams_that_name_one_link_share_its_bandwidth() -> Result<()> {
    // 100 kB raw frames at 24 fps need 2.4 MB/s a stream; the link has 3 MB/s.
    let url = |link: &str| format!("sim://{link}?bw=3MB/s&frame_bytes=100kB&frames=48&seed=1");
    let shared = play(&[&url("lan")], &["--streams", "2"])?;
    ensure!(
        storage_drops(&shared) >= 12,
        "two streams on one 3 MB/s link get 1.5 MB/s each, 62% of the need: {:?}",
        shared.streams.iter().map(|s| s.dropped).collect::<Vec<_>>()
    );
    ensure!(shared.streams.iter().all(|s| s.storage.options.get("link").map(String::as_str) == Some("lan")));
    // Two URLs naming the link are one link too.
    let named_twice = play(&[&url("lan"), &url("lan")], &[])?;
    ensure!(
        storage_drops(&named_twice) >= 12,
        "{:?}",
        named_twice.streams.iter().map(|s| s.dropped).collect::<Vec<_>>()
    );
    // A link each: 125% of the need.
    let own = play(&[&url("")], &["--streams", "2"])?;
    ensure!(storage_drops(&own) == 0, "{:?}", own.streams.iter().map(|s| s.dropped).collect::<Vec<_>>());
    let separate = play(&[&url("a"), &url("b")], &[])?;
    ensure!(
        storage_drops(&separate) == 0,
        "{:?}",
        separate.streams.iter().map(|s| s.dropped).collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn raw_frames_are_read_and_not_decoded() -> Result<()> {
    let report = play(&["sim://?frame_bytes=50kB&frames=24"], &[])?;
    let stream = &report.streams[0];
    ensure!(stream.presented == 24, "presented {} of 24: {:?}", stream.presented, stream.dropped);
    ensure!(stream.bytes_read == 24 * 50_000, "bytes read {}", stream.bytes_read);
    ensure!(
        stream.source.format == "raw" && stream.source.decoder.starts_with("none"),
        "{:?}",
        stream.source
    );
    ensure!(stream.source.pixel_format.is_empty(), "nothing was decoded: {}", stream.source.pixel_format);
    ensure!(stream.storage.options.get("frame_bytes").map(String::as_str) == Some("50000"));
    Ok(())
}

#[test]
fn corrupt_frames_are_unreadable_and_playback_goes_on() -> Result<()> {
    let url = format!("sim://lan?format=dpx&preset={SMALL_PRESET}&frames=20&corrupt_every=5");
    let report = play(&[&url], &[])?;
    let stream = &report.streams[0];
    let bad: Vec<u64> = stream.unreadable.iter().map(|u| u.frame_idx).collect();
    ensure!(bad == [4, 9, 14, 19], "unreadable frames {bad:?}");
    ensure!(stream.dropped.unreadable == 4 && stream.presented == 16, "{:?}", stream.dropped);
    let message = &stream.unreadable[1].message;
    ensure!(
        message.contains("sim://lan/frame.0000009.dpx") && message.contains("frame 9 is corrupt"),
        "the message names neither the path nor the frame: {message}"
    );
    Ok(())
}

#[test]
fn verify_checks_distinct_frames_and_refuses_repeated_ones() -> Result<()> {
    let url = format!("sim://?format=exr&preset={SMALL_PRESET}&frames=6&distinct=6");
    let report = play(&[&url], &["--verify"])?;
    ensure!(report.streams[0].presented == 6, "{:?}", report.streams[0].unreadable);
    ensure!(report.streams[0].source.format == "exr");

    let repeated = format!("sim://?format=dpx&preset={SMALL_PRESET}&frames=6");
    let done = run(playsim().args(["play", &repeated, "--verify", "--quiet"]))?;
    done.ensure_code(1)?;
    ensure!(done.stderr.contains("distinct=N equal to frames=N"), "{done}");
    Ok(())
}

#[test]
fn bad_urls_are_refused_naming_the_part_with_an_example() -> Result<()> {
    let cases = [
        ("sim://lan?bw=4.5GB&format=dpx", "bw '4.5GB'"),
        ("sim://lan?bw=1GB/s&latency=1ms", "unknown key 'latency' (valid keys: bw, lat, jitter"),
        ("sim://lan?format=tiff", "format 'tiff'"),
        ("sim://lan?preset=5k", "preset '5k'"),
        ("sim://lan?frame_bytes=1MB&format=dpx", "give one or the other"),
        ("sim://a/b", "link name 'a/b'"),
    ];
    for (url, part) in cases {
        let done = run(playsim().args(["play", url, "--quiet"]))?;
        done.ensure_code(1).with_context(|| url.to_owned())?;
        ensure!(done.stderr.contains(part), "{url}: the message does not name {part}:\n{done}");
        ensure!(done.stderr.contains("for example: sim://lan?bw="), "{url}: no example:\n{done}");
    }
    // One link, two settings in one run.
    let done =
        run(playsim().args(["play", "sim://l?bw=1MB/s&frames=2", "sim://l?bw=2MB/s&frames=2", "--quiet"]))?;
    done.ensure_code(1)?;
    ensure!(done.stderr.contains("link 'l' is given two settings"), "{done}");
    Ok(())
}
