//! The `playsim` command line end to end: refusals, exit codes, Ctrl-C, --verify, reports, generate, decode.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use playsim::report::{Drops, RunStatus, SCHEMA_VERSION};
use rustix::process::Signal;

use crate::util::{
    ffmpeg, file_names, frame_path, generate, playsim, read_report, run, signal_after, Background, Damage,
    SMALL_PRESET,
};

/// Every refused value gets clap's usage error (2), or the engine's (1), and a valid example.
#[test]
fn bad_values_are_refused_with_an_example() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 4, &[])?;
    let seq = seq.to_str().context("temporary path is not utf-8")?;
    let out = tmp.path().join("out");
    let out = out.to_str().context("temporary path is not utf-8")?;
    let cases: &[(&[&str], i32)] = &[
        (&["play", seq, "--fps", "abc"], 2),
        (&["play", seq, "--fps", "0"], 2),
        (&["play", seq, "--block-size", "1X"], 2),
        (&["play", seq, "--duration", "-5"], 2),
        (&["play", seq, "--duration=-5"], 2),
        (&["play", seq, "--frames", "0"], 2),
        (&["play", seq, "--nconnect", "0"], 2),
        (&["play", seq, "--nconnect", "100"], 2),
        (&["play", seq, "--rsize", "512"], 2),
        (&["play", seq, "--rsize", "1G"], 2),
        (&["play", seq, "--nfs-timeout", "soon"], 2),
        (&["play", seq, "--output-threads", "0"], 2),
        (&["decode", "--md5", seq, "--nconnect", "x"], 2),
        (&["generate", "--preset", "5k", out], 2),
        (&["generate", "--bit-depth", "12", out], 2),
        // Refused by the engine, after parsing.
        (&["play", seq, "--prefetch", "2", "--preroll", "5"], 1),
    ];
    let mut failures = Vec::new();
    for (args, code) in cases {
        let done = run(playsim().args(*args))?;
        if done.code != Some(*code)
            || !done.stderr.contains("for example")
            || done.stderr.contains("panicked")
        {
            failures.push(format!(
                "`playsim {}`: expected exit code {code} and an example in the message\n{done}",
                args.join(" ")
            ));
        }
    }
    ensure!(!std::path::Path::new(out).exists(), "a refused generate wrote {out}");
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// A source that does not exist is an error naming it; `--json` still gets a failed report.
#[test]
fn missing_source_fails_with_a_report() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let source = tmp.path().join("no-such-shot");
    let json = tmp.path().join("r.json");
    let done =
        run(playsim().arg("play").arg(&source).args(["--fps", "max", "--quiet", "--json"]).arg(&json))?;
    done.ensure_no_panic()?;
    ensure!(done.code.is_some_and(|c| c != 0), "a missing source should fail:\n{done}");
    let shown = source.display().to_string();
    ensure!(
        done.stderr.lines().any(|l| l.contains("error") && l.contains(&shown)),
        "the error should name {shown}:\n{done}"
    );
    let report = read_report(&json)?;
    ensure!(report.schema_version == SCHEMA_VERSION);
    ensure!(report.status == RunStatus::Failed, "status {:?}", report.status);
    let error = report.error.as_deref().unwrap_or_default();
    ensure!(error.contains(&shown), "report error {error:?} should name {shown}");
    ensure!(report.settings.fps == "max", "settings not kept: {:?}", report.settings);

    let done = run(playsim().arg("decode").arg(&source).arg("--md5"))?;
    done.ensure_no_panic()?;
    ensure!(done.code.is_some_and(|c| c != 0), "decode of a missing source should fail:\n{done}");
    ensure!(done.stderr.contains(&shown), "decode error should name {shown}:\n{done}");
    Ok(())
}

/// `--max-drops N` turns more than N drops into exit status 3.
#[test]
fn max_drops_sets_the_exit_code() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 8, &[])?;
    Damage::Truncate.apply(&frame_path(&seq, 3))?;
    for (max_drops, code) in [("0", 3), ("1", 0)] {
        let json = tmp.path().join(format!("max-{max_drops}.json"));
        let done = run(playsim()
            .arg("play")
            .arg(&seq)
            .args(["--fps", "max", "--quiet", "--max-drops", max_drops, "--json"])
            .arg(&json))?;
        done.ensure_code(code).with_context(|| format!("--max-drops {max_drops}"))?;
        let report = read_report(&json)?;
        ensure!(report.status == RunStatus::Complete, "status {:?}", report.status);
        ensure!(report.totals.dropped.total() == 1, "drops {:?}", report.totals.dropped);
        ensure!(report.settings.max_drops == max_drops.parse().ok(), "settings {:?}", report.settings);
        if code == 3 {
            ensure!(done.stderr.contains("--max-drops"), "the refusal should say why:\n{done}");
        }
    }
    Ok(())
}

/// SIGINT (Ctrl-C) and SIGTERM (`kill`, `timeout`) end a looping run with status 130 and a
/// partial report.
#[test]
fn ctrl_c_and_sigterm_write_a_partial_report() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 12, &[])?;
    for (signal, word) in [(Signal::INT, "interrupted"), (Signal::TERM, "terminated")] {
        let json = tmp.path().join(format!("{word}.json"));
        let done = signal_after(
            playsim().arg("play").arg(&seq).args(["--fps", "50", "--loop", "--quiet", "--json"]).arg(&json),
            tmp.path(),
            Duration::from_millis(1500),
            signal,
        )?;
        done.ensure_code(130)?;
        ensure!(done.stderr.contains(&format!("playsim: {word}; finishing the report")), "{done}");
        let report = read_report(&json)?;
        ensure!(report.status == RunStatus::Partial, "status {:?}:\n{done}", report.status);
        ensure!(report.totals.presented > 0, "nothing presented before the {word} signal:\n{done}");
        let error = report.error.as_deref().unwrap_or_default();
        ensure!(error.contains("interrupt"), "report error {error:?} should mention the interruption");
        ensure!(done.stdout.contains("partial"), "the summary should say partial:\n{done}");
    }
    // A capacity search stops in its second trial, and gives what its first showed.
    let json = tmp.path().join("capacity.json");
    let mut cmd = playsim();
    cmd.arg("capacity").arg(&seq).args(["--fps", "50", "--window", "1s", "--max", "64", "--json"]).arg(&json);
    let mut child = Background::spawn(&mut cmd, tmp.path())?;
    child.wait_for_stderr("trial 2 (of at most", Duration::from_secs(30))?;
    child.signal(Signal::TERM)?;
    let done = child.wait(Duration::from_secs(20))?;
    done.ensure_code(130)?;
    ensure!(
        done.stderr.contains("capacity: terminated; the result is what the trials done showed"),
        "{done}"
    );
    ensure!(
        done.stdout.contains("capacity: stopped (terminated) before the search ended: at least 1 stream"),
        "{done}"
    );
    let found = std::fs::read_to_string(&json)?;
    let found: serde_json::Value = serde_json::from_str(&found)?;
    ensure!(found["interrupted"] == "terminated" && found["best"] == 1, "{found}");
    Ok(())
}

/// `--verify` passes a generated sequence and catches two swapped frames.
#[test]
fn verify_catches_swapped_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    let n_frames = 12;
    generate(&seq, SMALL_PRESET, n_frames, &[])?;
    let play = |name: &str, verify: bool| -> Result<playsim::report::Report> {
        let json = tmp.path().join(format!("{name}.json"));
        let mut cmd = playsim();
        cmd.arg("play").arg(&seq).args(["--fps", "max", "--quiet", "--json"]).arg(&json);
        if verify {
            cmd.arg("--verify");
        }
        run(&mut cmd)?.ensure_code(0).with_context(|| name.to_owned())?;
        read_report(&json)
    };

    let clean = play("clean", true)?;
    ensure!(clean.settings.verify, "settings {:?}", clean.settings);
    ensure!(clean.totals.presented == n_frames, "presented {}", clean.totals.presented);
    ensure!(clean.totals.dropped == Drops::default(), "drops {:?}", clean.totals.dropped);

    let (a, b) = (3, 8);
    let spare = tmp.path().join("spare.dpx");
    std::fs::rename(frame_path(&seq, a), &spare)?;
    std::fs::rename(frame_path(&seq, b), frame_path(&seq, a))?;
    std::fs::rename(&spare, frame_path(&seq, b))?;

    let unverified = play("unverified", false)?;
    ensure!(unverified.totals.presented == n_frames, "without --verify a swap is not visible");

    let swapped = play("swapped", true)?;
    ensure!(swapped.status == RunStatus::Complete);
    ensure!(
        swapped.totals.dropped == Drops { unreadable: 2, ..Drops::default() },
        "drops {:?}",
        swapped.totals.dropped
    );
    ensure!(swapped.totals.presented == n_frames - 2, "presented {}", swapped.totals.presented);
    let unreadable = &swapped.streams[0].unreadable;
    let frames: Vec<u64> = unreadable.iter().map(|u| u.frame_number).collect();
    ensure!(frames == [a, b], "unreadable frames {frames:?}, expected [{a}, {b}]");
    for u in unreadable {
        ensure!(
            u.message.contains("frame index"),
            "message should be about the frame index: {:?}",
            u.message
        );
    }
    Ok(())
}

/// `playsim decode --md5` of sequences the ffmpeg CLI wrote, in both byte
/// orders at 10 and 16 bits, equals FFmpeg's own framemd5 in rgb48le.
#[test]
fn decode_md5_matches_ffmpeg_framemd5() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let mut failures = Vec::new();
    for pix_fmt in ["gbrp10be", "gbrp10le", "rgb48be", "rgb48le"] {
        let dir = tmp.path().join(pix_fmt);
        std::fs::create_dir(&dir)?;
        let pattern = dir.join("f.%03d.dpx");
        let pattern = pattern.to_str().context("temporary path is not utf-8")?;
        let source = "testsrc2=size=128x96:rate=24";
        ffmpeg(&["-f", "lavfi", "-i", source, "-frames:v", "3", "-pix_fmt", pix_fmt, pattern])?;
        ensure!(
            file_names(&dir)? == ["f.001.dpx", "f.002.dpx", "f.003.dpx"],
            "ffmpeg wrote {:?}",
            file_names(&dir)?
        );
        let expected: Vec<String> = ffmpeg(&["-i", pattern, "-pix_fmt", "rgb48le", "-f", "framemd5", "-"])?
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.rsplit(',').next())
            .map(|h| h.trim().to_owned())
            .collect();
        ensure!(expected.len() == 3, "ffmpeg framemd5 gave {expected:?}");

        let done = run(playsim().arg("decode").arg(&dir).arg("--md5"))?;
        done.ensure_code(0).with_context(|| format!("decode of {pix_fmt}"))?;
        let lines: Vec<Vec<&str>> = done.stdout.lines().map(|l| l.split_whitespace().collect()).collect();
        let numbers: Vec<&str> = lines.iter().filter_map(|f| f.first().copied()).collect();
        let md5s: Vec<&str> = lines.iter().filter_map(|f| f.last().copied()).collect();
        if numbers != ["1", "2", "3"] || md5s != expected {
            failures.push(format!("{pix_fmt}: ffmpeg framemd5 {expected:?}\n{done}"));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// Several sources, each read by several streams, play on one clock with per-stream counters.
#[test]
fn several_sources_and_streams_play_on_one_clock() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    generate(&a, SMALL_PRESET, 6, &[])?;
    generate(&b, SMALL_PRESET, 4, &[])?;
    let json = tmp.path().join("r.json");
    let done = run(playsim()
        .arg("play")
        .args([&a, &b])
        .args(["--streams", "2", "--fps", "25", "--no-drop", "--quiet", "--json"])
        .arg(&json))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    let presented: Vec<u64> = report.streams.iter().map(|s| s.presented).collect();
    ensure!(presented == [6, 6, 4, 4], "presented per stream {presented:?}");
    ensure!(report.totals.presented == 20, "total presented {}", report.totals.presented);
    let t0: Vec<u64> = report.streams.iter().map(|s| s.t0_ns).collect();
    ensure!(t0.iter().all(|&t| t == t0[0]), "streams started apart: {t0:?}");
    ensure!(done.stdout.contains("stream 3"), "the summary has no column per stream:\n{}", done.stdout);
    Ok(())
}

/// The JSON report of a clean paced run: shape, counts and an exact timeline.
#[test]
fn json_report_of_a_clean_paced_run() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    let n_frames = 20;
    generate(&seq, SMALL_PRESET, n_frames, &[])?;
    let json = tmp.path().join("r.json");
    let done = run(playsim()
        .arg("play")
        .arg(&seq)
        .args(["--fps", "25", "--frames", "20", "--quiet", "--json"])
        .arg(&json))?;
    done.ensure_code(0)?;
    let text = std::fs::read_to_string(&json)?;
    let raw: serde_json::Value = serde_json::from_str(&text)?;
    ensure!(raw["schema_version"] == 1, "raw schema_version {}", raw["schema_version"]);
    ensure!(raw["status"] == "complete", "raw status {}", raw["status"]);
    let report = read_report(&json)?;
    ensure!(report.schema_version == 1);
    ensure!(
        report.status == RunStatus::Complete && report.error.is_none(),
        "{:?} {:?}",
        report.status,
        report.error
    );
    ensure!(report.settings.fps == "25", "settings.fps {:?}", report.settings.fps);
    ensure!(report.settings.frames == Some(n_frames), "settings.frames {:?}", report.settings.frames);
    ensure!(!report.environment.kernel.is_empty(), "environment.kernel is empty");
    ensure!(report.totals.presented == n_frames, "presented {}:\n{done}", report.totals.presented);
    ensure!(report.totals.dropped == Drops::default(), "drops {:?}:\n{done}", report.totals.dropped);
    ensure!(report.streams.len() == 1, "{} streams", report.streams.len());
    let stream = &report.streams[0];
    ensure!(stream.timeline.len() == n_frames as usize, "timeline of {} records", stream.timeline.len());
    for (i, record) in stream.timeline.iter().enumerate() {
        let i = i as u64;
        ensure!(record.frame_idx == i && record.frame_number == i, "record {i}: {record:?}");
        ensure!(
            record.due_ns == stream.t0_ns + i * 40_000_000,
            "record {i} due at {} ns, expected t0 {} + {i} × 40 ms",
            record.due_ns,
            stream.t0_ns
        );
        ensure!(
            record.presented_ns.is_some() && record.cause.is_none(),
            "record {i} not presented: {record:?}"
        );
    }
    Ok(())
}

/// generate names files NAME.%07d.dpx from --start; 16-bit little-endian RGBA decodes.
#[test]
fn generate_names_files_and_writes_decodable_rgba() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("shot");
    let flags = ["--start", "100", "--name", "shot", "--alpha", "--bit-depth", "16", "--endian", "little"];
    generate(&dir, SMALL_PRESET, 3, &flags)?;
    ensure!(
        file_names(&dir)? == ["shot.0000100.dpx", "shot.0000101.dpx", "shot.0000102.dpx"],
        "generate wrote {:?}",
        file_names(&dir)?
    );
    let head = std::fs::read(dir.join("shot.0000100.dpx"))?;
    ensure!(head.starts_with(b"XPDS"), "not a little-endian DPX: {:?}", head.get(..4));

    let done = run(playsim().arg("decode").arg(&dir).arg("--md5"))?;
    done.ensure_code(0)?;
    let lines: Vec<Vec<&str>> = done.stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    ensure!(lines.len() == 3, "expected 3 lines:\n{done}");
    for (line, number) in lines.iter().zip(100..) {
        ensure!(
            line.first() == Some(&number.to_string().as_str())
                && line.contains(&"rgba64le")
                && line.contains(&"160x32"),
            "line {line:?} should be frame {number}, rgba64le 160x32"
        );
    }
    // The default name and start: frame.0000000.dpx onwards.
    let plain = tmp.path().join("plain");
    generate(&plain, SMALL_PRESET, 2, &["--bit-depth", "8"])?;
    ensure!(file_names(&plain)? == ["frame.0000000.dpx", "frame.0000001.dpx"], "{:?}", file_names(&plain)?);
    Ok(())
}

/// `compare` shows two runs side by side, the second marked against the first, and refuses
/// a single report or a file that is not one, naming it.
#[test]
fn compare_marks_the_second_run_against_the_first() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 6, &[])?;
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    for (json, fps) in [(&a, "50"), (&b, "25")] {
        run(playsim().arg("play").arg(&seq).args(["--fps", fps, "--quiet", "--json"]).arg(json))?
            .ensure_code(0)?;
    }
    let done = run(playsim().arg("compare").arg(&a).arg(&b))?;
    done.ensure_code(0)?;
    let line =
        |label: &str| done.stdout.lines().find(|l| l.starts_with(label)).unwrap_or_default().to_owned();
    ensure!(line("").contains("a.json") && line("").contains("b.json"), "{done}");
    ensure!(line("pacing").contains("50") && line("pacing").contains("25"), "{done}");
    ensure!(line("fps").contains("worse") && line("fps").contains("0.50x"), "{done}");
    ensure!(line("dropped").contains("same"), "{done}");
    for label in ["MB/s", "read p99 ms", "cpu user s/GB", "cpu sys s/GB"] {
        ensure!(!line(label).is_empty(), "no {label} row:\n{done}");
    }
    let one = run(playsim().arg("compare").arg(&a))?;
    one.ensure_code(1)?;
    ensure!(one.stderr.contains("for example `playsim compare tcp.json rdma.json`"), "{one}");
    let not_a_report = tmp.path().join("notes.txt");
    std::fs::write(&not_a_report, "not json")?;
    let bad = run(playsim().arg("compare").arg(&a).arg(&not_a_report))?;
    bad.ensure_code(1)?;
    ensure!(bad.stderr.contains("notes.txt is not a playsim report"), "{bad}");
    Ok(())
}

/// `--csv` writes a row per frame that fell due, matching the report; `--live-csv` a row of
/// counters per second while the run goes; `--plot` an SVG of the timeline.
#[test]
fn csv_timeline_and_live_counters() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 8, &[])?;
    let (json, csv, live) =
        (tmp.path().join("r.json"), tmp.path().join("t.csv"), tmp.path().join("live.csv"));
    let plot = tmp.path().join("run.svg");
    let done = run(playsim()
        .arg("play")
        .arg(&seq)
        .args(["--fps", "24", "--loop", "--duration", "2.5s", "--quiet", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--live-csv")
        .arg(&live)
        .arg("--plot")
        .arg(&plot))?;
    done.ensure_code(0)?;
    let svg = std::fs::read_to_string(&plot)?;
    ensure!(svg.contains("<svg") && svg.contains("slack to deadline"), "not a timeline plot");
    let report = read_report(&json)?;
    let text = std::fs::read_to_string(&csv)?;
    let mut rows = text.lines();
    ensure!(rows.next() == Some(playsim::report::csv::HEADER), "header:\n{text}");
    let rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
    ensure!(
        rows.len() as u64 == report.totals.frames_due,
        "{} rows for {} frames due",
        rows.len(),
        report.totals.frames_due
    );
    let presented = rows.iter().filter(|r| !r[8].is_empty()).count() as u64;
    ensure!(
        presented == report.totals.presented,
        "{presented} presented rows, report says {}",
        report.totals.presented
    );
    ensure!(rows.iter().all(|r| r[0] == "stream 0" && r[11].starts_with("local")), "{text}");
    let live_text = std::fs::read_to_string(&live)?;
    let live_rows: Vec<&str> = live_text.lines().collect();
    ensure!(live_rows.first().is_some_and(|h| h.starts_with("second,fps,mb_per_s,presented")), "{live_text}");
    ensure!(live_rows.len() >= 3, "expected a row a second for 2.5 s:\n{live_text}");
    ensure!(live_rows[1].starts_with("1,"), "{live_text}");
    Ok(())
}

/// `--output FILE` writes the report in the format its extension names, through the report's
/// renderers, as many times as it is given; an extension no renderer writes is refused before
/// the run, with a valid example.
#[test]
fn output_picks_the_renderer_by_extension() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 4, &[])?;
    let [json, text, csv, svg] = ["r.json", "r.txt", "r.csv", "r.svg"].map(|name| tmp.path().join(name));
    let mut play = playsim();
    play.arg("play").arg(&seq).args(["--fps", "max", "--quiet"]);
    for path in [&json, &text, &csv, &svg] {
        play.arg("--output").arg(path);
    }
    run(&mut play)?.ensure_code(0)?;
    let report = read_report(&json)?;
    ensure!(report.totals.presented == 4, "{report:?}");
    let summary = std::fs::read_to_string(&text)?;
    ensure!(summary.contains("dropped frames"), "{summary}");
    let timeline = std::fs::read_to_string(&csv)?;
    ensure!(timeline.lines().next() == Some(playsim::report::csv::HEADER), "{timeline}");
    ensure!(timeline.lines().count() == 5, "{timeline}");
    ensure!(std::fs::read_to_string(&svg)?.contains("<svg"), "not an SVG");

    let refused = run(playsim().arg("play").arg(&seq).arg("--output").arg(tmp.path().join("r.xlsx")))?;
    refused.ensure_code(2)?;
    ensure!(refused.stderr.contains("for example run."), "{refused}");
    Ok(())
}

/// The frame numbers of a `--csv` timeline, in play order.
fn played_frames(csv: &std::path::Path) -> Result<Vec<u64>> {
    let text = std::fs::read_to_string(csv)?;
    text.lines().skip(1).map(|row| Ok(row.split(',').nth(1).context("no frame column")?.parse()?)).collect()
}

/// `--order reverse|random --seed` and `--range A-B` pick and order the frames played, say so in
/// the report, and refuse what cannot be played that way.
#[test]
fn play_order_and_range() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 8, &[])?;
    let play = |extra: &[&str], name: &str| -> Result<(Vec<u64>, playsim::report::Report)> {
        let (json, csv) = (tmp.path().join(format!("{name}.json")), tmp.path().join(format!("{name}.csv")));
        let done = run(playsim()
            .arg("play")
            .arg(&seq)
            .args(["--fps", "max", "--quiet", "--verify", "--json"])
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .args(extra))?;
        done.ensure_code(0)?;
        let report = read_report(&json)?;
        ensure!(report.totals.dropped.total() == 0, "{name}: drops {:?}\n{done}", report.totals.dropped);
        Ok((played_frames(&csv)?, report))
    };
    let (reverse, report) = play(&["--order", "reverse"], "reverse")?;
    ensure!(reverse == (0..8).rev().collect::<Vec<u64>>(), "reverse played {reverse:?}");
    ensure!(report.settings.order == "reverse" && report.settings.seed.is_none(), "{:?}", report.settings);
    let (random, report) = play(&["--order", "random", "--seed", "5"], "random")?;
    let (again, _) = play(&["--order", "random", "--seed", "5"], "again")?;
    ensure!(random == again, "the same seed gave {random:?} and {again:?}");
    ensure!(random != (0..8).collect::<Vec<u64>>(), "random played in order: {random:?}");
    let mut sorted = random.clone();
    sorted.sort_unstable();
    ensure!(sorted == (0..8).collect::<Vec<u64>>(), "random is not a permutation: {random:?}");
    ensure!(report.settings.seed == Some(5), "{:?}", report.settings);
    let (range, report) = play(&["--range", "2-5"], "range")?;
    ensure!(range == vec![2, 3, 4, 5], "range played {range:?}");
    ensure!(report.settings.range.as_deref() == Some("2-5"), "{:?}", report.settings);

    let outside = run(playsim().arg("play").arg(&seq).args(["--range", "100-200"]))?;
    outside.ensure_code(1)?;
    ensure!(
        outside.stderr.contains("selects no frame") && outside.stderr.contains("for example --range 0-7"),
        "{outside}"
    );
    let backwards = run(playsim().arg("play").arg(&seq).args(["--range", "5-2"]))?;
    backwards.ensure_code(2)?;
    ensure!(backwards.stderr.contains("for example --range 100-199"), "{backwards}");
    // A long-GOP clip needs FFmpeg.
    #[cfg(feature = "ffmpeg")]
    {
        let clip = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/video/h264-tiny.mp4");
        let long_gop = run(playsim().arg("play").arg(&clip).args(["--order", "reverse"]))?;
        long_gop.ensure_code(1)?;
        ensure!(long_gop.stderr.contains("long-GOP"), "{long_gop}");
    }
    Ok(())
}

/// `capacity` doubles the streams until a trial drops (or the maximum passes) and prints every
/// trial and the answer; a small sequence passes up to the maximum.
#[test]
fn capacity_searches_streams_up_to_the_maximum() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, 6, &[])?;
    let result = tmp.path().join("capacity.json");
    let done = run(playsim()
        .arg("capacity")
        .arg(&seq)
        .args(["--fps", "24", "--window", "1s", "--trials", "1", "--max", "4", "--json"])
        .arg(&result))?;
    done.ensure_code(0)?;
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&result)?)?;
    ensure!(json["best"] == 4 && json["limit"].is_null() && json["fps"] == "24", "{json}");
    ensure!(json["trials"].as_array().map(Vec::len) == Some(3), "{json}");
    let trials: Vec<&str> = done.stdout.lines().filter(|l| l.starts_with("trial")).collect();
    ensure!(trials.len() == 3, "expected trials of 1, 2 and 4 streams:\n{done}");
    ensure!(trials[2].contains("4 streams: pass"), "{done}");
    ensure!(done.stdout.contains("capacity: at least 4 streams (the --max)"), "{done}");
    let bad = run(playsim().arg("capacity").arg(&seq).args(["--trials", "0"]))?;
    bad.ensure_code(2)?;
    ensure!(bad.stderr.contains("for example"), "{bad}");
    Ok(())
}

/// A build without the `mpi` feature, started by mpirun, refuses in one line (from the first
/// rank only) instead of running N independent copies. The launcher is only its environment.
#[cfg(not(feature = "mpi"))]
#[test]
fn under_mpirun_a_build_without_mpi_says_so_in_one_line() -> Result<()> {
    let rank = |r: &str| {
        run(playsim()
            .args(["play", "sim://?frame_bytes=10kB&frames=4", "--fps", "24", "--quiet"])
            .env("OMPI_COMM_WORLD_SIZE", "3")
            .env("OMPI_COMM_WORLD_RANK", r))
    };
    let first = rank("0")?;
    first.ensure_code(2)?;
    ensure!(first.stderr.lines().count() == 1, "one line:\n{first}");
    ensure!(
        first.stderr.contains("rank 0 of 3") && first.stderr.contains("without the `mpi` feature"),
        "{first}"
    );
    ensure!(first.stdout.is_empty(), "nothing played:\n{first}");
    let other = rank("2")?;
    other.ensure_code(2)?;
    ensure!(other.stderr.is_empty() && other.stdout.is_empty(), "only the first rank says it:\n{other}");
    Ok(())
}

/// `capacity --by clients` varies the clients of a run under mpirun: without one it is refused
/// in one line with an example, before anything plays.
#[test]
fn capacity_by_clients_without_mpirun_says_how_to_start_it() -> Result<()> {
    let done = run(playsim().args([
        "capacity",
        "--by",
        "clients",
        "sim://?frame_bytes=10kB&frames=4",
        "--fps",
        "24",
    ]))?;
    done.ensure_code(1)?;
    ensure!(done.stderr.contains("mpirun -np 3 playsim capacity --by clients"), "{done}");
    ensure!(done.stdout.is_empty(), "nothing played:\n{done}");
    Ok(())
}
