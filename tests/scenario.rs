//! `playsim run SCENARIO.toml`: the shipped examples check, a small scenario really plays two
//! repetitions of two streams at different rates from media it generates, and bad files are
//! refused with the line and a valid example.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use playsim::report::RunStatus;

use crate::util::{interrupt_after, playsim, read_report, run};

fn examples() -> Result<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    Ok(files)
}

#[test]
fn every_example_passes_check() -> Result<()> {
    let files = examples()?;
    let names: Vec<String> =
        files.iter().filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().into_owned())).collect();
    for wanted in [
        "dell-filestream",
        "dell-filestream-write",
        "frametest-4k",
        "frametest-4k-write",
        "exr-render-out",
        "resolve",
        "onefs-prores-hd",
        "tcp-vs-rdma",
    ] {
        ensure!(names.iter().any(|n| n == wanted), "examples/{wanted}.toml is missing: {names:?}");
    }
    for file in &files {
        let done = run(playsim().arg("run").arg(file).arg("--check"))?;
        done.ensure_code(0).with_context(|| format!("{} does not pass --check", file.display()))?;
        ensure!(done.stdout.contains("is valid"), "{}:\n{done}", file.display());
        // --check neither writes media nor plays.
        ensure!(!done.stdout.contains("== "), "{} played under --check:\n{done}", file.display());
        let text = fs::read_to_string(file)?;
        ensure!(
            text.lines().take_while(|l| l.starts_with('#')).count() >= 5,
            "{} should open with comments saying what the original test was and the scale",
            file.display()
        );
    }
    let pair = run(playsim()
        .arg("run")
        .arg(files.iter().find(|f| f.ends_with("tcp-vs-rdma.toml")).context("pair")?)
        .arg("--check"))?;
    ensure!(
        pair.stdout.matches("NOT RUNNABLE HERE").count() == 2 || Path::new("/mnt/nfs-tcp").exists(),
        "{pair}"
    );
    Ok(())
}

#[test]
fn a_scenario_plays_its_repetitions_and_compares_them() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("two-rates.toml");
    // Relative sources are taken from the scenario's directory, not the current one.
    fs::write(
        &scenario,
        r#"
name = "two-rates"
repeat = 2
cache = "cold"
duration = "1s"
output_stage = "none"
decode_threads = 1

[[stream]]
source = "media/small-hd"
fps = 24
generate = { format = "dpx", preset = "192x108", frames = 12 }

[[stream]]
source = "media/small-hd"
fps = 12
start_offset = "250ms"
decode_threads = 1
"#,
    )?;
    let reports = tmp.path().join("reports");
    let done = run(playsim()
        .current_dir(tmp.path().parent().context("tmp parent")?)
        .arg("run")
        .arg(&scenario)
        .arg("--quiet")
        .arg("--json-dir")
        .arg(&reports))?;
    done.ensure_code(0)?;
    ensure!(done.stderr.matches("playsim: generating").count() == 1, "{done}");
    ensure!(tmp.path().join("media/small-hd/frame.0000011.dpx").is_file(), "media not generated:\n{done}");
    for rep in [1, 2] {
        let report = read_report(&reports.join(format!("two-rates-run1-{rep}.json")))?;
        ensure!(report.status == RunStatus::Complete, "repetition {rep}: {:?}", report.status);
        ensure!(report.settings.cold, "repetition {rep} was not cold");
        let rates: Vec<&str> = report.streams.iter().map(|s| s.fps.as_str()).collect();
        ensure!(rates == ["24", "12"], "repetition {rep} rates {rates:?}");
        let offsets: Vec<f64> = report.streams.iter().map(|s| s.start_offset_s).collect();
        ensure!(offsets == [0.0, 0.25], "repetition {rep} offsets {offsets:?}");
        ensure!(report.streams[1].decode_pool_threads == Some(1), "repetition {rep}: no own pool");
        // 12 frames at 24 fps (the source ends first) and 1 s at 12 fps.
        let due: Vec<u64> = report.streams.iter().map(|s| s.frames_due).collect();
        ensure!(due == [12, 12], "repetition {rep} frames due {due:?}");
    }
    for wanted in
        ["== two-rates run run1: repetition 1 of 2 ==", "== two-rates run run1: repetition 2 of 2 =="]
    {
        ensure!(done.stdout.contains(wanted), "no '{wanted}':\n{done}");
    }
    // The compare table: both repetitions side by side, the second marked against the first.
    ensure!(done.stdout.contains("every repetition, against the first"), "{done}");
    let header = done.stdout.lines().find(|l| l.contains("run1 #1") && l.contains("run1 #2"));
    ensure!(header.is_some(), "no compare header:\n{done}");
    ensure!(done.stdout.lines().any(|l| l.starts_with("pacing") && l.contains("24, 12")), "{done}");
    let tally = done.stdout.lines().find(|l| l.starts_with("run run1: 2 repetition(s), mean "));
    ensure!(tally.is_some_and(|l| l.contains("dropped") && l.contains("storage")), "no tally:\n{done}");

    // Played again, the media is there already.
    let again = run(playsim().arg("run").arg(&scenario).arg("--quiet").arg("--json-dir").arg(&reports))?;
    again.ensure_code(0)?;
    ensure!(!again.stderr.contains("generating"), "made again:\n{again}");
    Ok(())
}

#[test]
fn record_runs_write_their_repetitions_and_leave_only_what_they_keep() -> Result<()> {
    use playsim::report::record::RecordFigures;
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("writes.toml");
    // A play run, then two record runs: frametest -w's blank frames (encode off) removed after
    // each repetition, and an encoded EXR render-out whose last repetition is kept.
    fs::write(
        &scenario,
        r#"
name = "writes"
repeat = 2
output_stage = "none"

[[run]]
name = "read"
[[run.stream]]
source = "media/small"
fps = "max"
generate = { format = "dpx", preset = "192x108", frames = 6 }

[[run]]
name = "blank"
record = { destination = "out/blank", format = "dpx", preset = "192x108", encode = false, fps = "max", frames = 10, writers = 4, queue = 4 }

[[run]]
name = "render"
keep = true
record = { destination = "out/render", format = "exr", compression = "zip", preset = "64x36", fps = "max", frames = 3, encoders = 1 }
"#,
    )?;
    let check = run(playsim().arg("run").arg(&scenario).arg("--check"))?;
    check.ensure_code(0)?;
    ensure!(
        check.stdout.contains("run blank: records into out/blank")
            && check.stdout.contains("encode = false")
            && check.stdout.contains("each repetition's files are removed after it")
            && check.stdout.contains("the last repetition's files are kept"),
        "{check}"
    );
    ensure!(!tmp.path().join("out").exists(), "--check wrote:\n{check}");

    let reports = tmp.path().join("reports");
    let done = run(playsim().arg("run").arg(&scenario).arg("--quiet").arg("--json-dir").arg(&reports))?;
    done.ensure_code(0)?;
    done.ensure_no_panic()?;
    for (name, frames) in [("blank", 10), ("render", 3)] {
        for rep in [1, 2] {
            let path = reports.join(format!("writes-{name}-{rep}.json"));
            let figures: RecordFigures = serde_json::from_str(&fs::read_to_string(&path)?)
                .with_context(|| format!("{} is not record's JSON", path.display()))?;
            ensure!(
                (figures.frames_arrived, figures.frames_written, figures.frames_dropped)
                    == (frames, frames, 0),
                "{name} #{rep}: {figures:?}"
            );
        }
    }
    let files = |dir: &str| -> Result<Vec<String>> {
        let mut names: Vec<String> = fs::read_dir(tmp.path().join(dir))?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok(names)
    };
    ensure!(files("out/blank")?.is_empty(), "blank's files were not removed: {:?}", files("out/blank")?);
    ensure!(
        files("out/render")? == ["frame.0000000.exr", "frame.0000001.exr", "frame.0000002.exr"],
        "render's last repetition was not kept whole: {:?}",
        files("out/render")?
    );
    ensure!(done.stderr.contains("removed the 10 file(s) it wrote"), "{done}");
    // The recordings side by side, on record's figures.
    ensure!(done.stdout.contains("every recording, against the first"), "{done}");
    ensure!(
        done.stdout.lines().any(|l| l.contains("blank #1") && l.contains("render #2")),
        "no record compare header:\n{done}"
    );
    let tally =
        |run: &str| done.stdout.lines().find(|l| l.starts_with(&format!("run {run}: 2 repetition(s)")));
    ensure!(tally("read").is_some_and(|l| l.contains("unreadable 0")), "{done}");
    for name in ["blank", "render"] {
        ensure!(
            tally(name).is_some_and(|l| l.contains("dropped 0 in all (input 0, encode 0, storage 0)")),
            "no record tally for {name}:\n{done}"
        );
    }

    // Run again: the kept files are the scenario's own, and a record run refuses a destination
    // that holds files, as `playsim record` does without --force.
    let again = run(playsim().arg("run").arg(&scenario).arg("--quiet").arg("--json-dir").arg(&reports))?;
    ensure!(again.code != Some(0), "a non-empty destination was written over:\n{again}");
    ensure!(again.stderr.contains("out/render") && again.stderr.contains("--force"), "{again}");
    Ok(())
}

#[test]
fn a_record_tables_bad_key_is_refused_before_anything_runs() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("bad.toml");
    fs::write(
        &scenario,
        "[[run]]\nname = \"a\"\nrecord = { destination = \"out\", frames = 4 }\n\
         [[run]]\nname = \"b\"\nrecord = { destination = \"out2\", bit_depth = 12 }\n",
    )?;
    let done = run(playsim().arg("run").arg(&scenario))?;
    done.ensure_code(2).or_else(|_| done.ensure_code(1))?;
    ensure!(
        done.stderr.contains("bad.toml:6:")
            && done.stderr.contains("invalid value '12' for record's bit_depth")
            && done.stderr.contains("for example 10"),
        "{done}"
    );
    ensure!(!tmp.path().join("out").exists(), "run a ran before b was refused:\n{done}");
    Ok(())
}

#[test]
fn a_run_that_cannot_start_writes_a_failed_report_and_fails() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("gone.toml");
    fs::write(&scenario, "repeat = 3\n[[stream]]\nsource = \"no/such/shot\"\n")?;
    let reports = tmp.path().join("out");
    let done = run(playsim().arg("run").arg(&scenario).arg("--quiet").arg("--json-dir").arg(&reports))?;
    done.ensure_code(1)?;
    let report = read_report(&reports.join("gone-run1-1.json"))?;
    ensure!(report.status == RunStatus::Failed, "{:?}", report.status);
    ensure!(report.error.as_deref().is_some_and(|e| e.contains("no/such/shot")), "{:?}", report.error);
    ensure!(!reports.join("gone-run1-2.json").exists(), "a run that cannot start was repeated");
    ensure!(done.stderr.contains("could not start"), "{done}");
    Ok(())
}

#[test]
fn an_unknown_key_is_refused_with_its_line_and_an_example() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("typo.toml");
    fs::write(&scenario, "repeat = 2\n\n[[stream]]\nsource = \"media/shot\"\nfsp = 24\n")?;
    let done = run(playsim().arg("run").arg(&scenario).arg("--check"))?;
    done.ensure_code(1)?;
    ensure!(done.stderr.contains("typo.toml:5:1: unknown field `fsp`"), "{done}");
    ensure!(done.stderr.contains("5 | fsp = 24"), "the line is not quoted:\n{done}");
    ensure!(done.stderr.contains("did you mean `fps`? for example: fps = 24"), "{done}");
    ensure!(done.stdout.is_empty(), "a refused scenario printed a plan:\n{done}");
    Ok(())
}

#[test]
fn a_bad_value_is_refused_with_its_line_and_an_example() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    for (text, at, example) in [
        ("[[stream]]\nsource = \"a\"\nstart_offset = \"soon\"\n", ":3:16:", "start_offset = \"2s\""),
        ("fps = \"fast\"\n[[stream]]\nsource = \"a\"\n", ":1:7:", "fps = 24"),
        (
            "[[stream]]\nsource = \"a\"\ngenerate = { format = \"dpx\", preset = \"9kx\", frames = 4 }\n",
            ":3:",
            "preset = \"4k-dci\"",
        ),
        ("io_depth = 0\n[[stream]]\nsource = \"a\"\n", ":1:12:", "io_depth = 4"),
    ] {
        let scenario = tmp.path().join("bad.toml");
        fs::write(&scenario, text)?;
        let done = run(playsim().arg("run").arg(&scenario).arg("--check"))?;
        done.ensure_code(1)?;
        ensure!(done.stderr.contains(&format!("bad.toml{at}")), "not at {at}:\n{done}");
        ensure!(done.stderr.contains(&format!("for example: {example}")), "no example {example}:\n{done}");
    }
    Ok(())
}

/// SIGINT ends the current run with a partial report, plays nothing more, and exits 130.
#[test]
fn ctrl_c_stops_the_scenario_after_a_partial_report() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let scenario = tmp.path().join("long.toml");
    fs::write(
        &scenario,
        "repeat = 3\nfps = 50\nduration = \"60s\"\nloop = true\noutput_stage = \"none\"\n\
         [[stream]]\nsource = \"m\"\ngenerate = { format = \"dpx\", preset = \"160x32\", frames = 12 }\n",
    )?;
    let reports = tmp.path().join("out");
    let done = interrupt_after(
        playsim().arg("run").arg(&scenario).arg("--quiet").arg("--json-dir").arg(&reports),
        tmp.path(),
        Duration::from_millis(2000),
    )?;

    done.ensure_code(130)?;
    let report = read_report(&reports.join("long-run1-1.json"))?;
    ensure!(report.status == RunStatus::Partial, "status {:?}:\n{done}", report.status);
    ensure!(!reports.join("long-run1-2.json").exists(), "a repetition started after Ctrl-C:\n{done}");
    ensure!(done.stdout.contains("1 interrupted"), "the tally should count it:\n{done}");
    Ok(())
}
