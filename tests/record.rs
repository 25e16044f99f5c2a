//! `playsim record`: what it writes reads back bit-exact (through pwrite and io_uring), the
//! destination's rules (empty unless --force, stale partial files removed, space checked
//! first), bad flags refused with an example, and a disk that fills mid-run (a small tmpfs)
//! stops the run with the error, its report and only complete frames.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};

use crate::util::{generate, interrupt_after, playsim, run, Background, Run};

/// A small frame, so that the tests are quick in a debug build: 10-bit RGB DPX of 264,192 bytes.
const SMALL: &str = "256x256";

fn md5s(dir: &Path) -> Result<String> {
    let done = run(playsim().args(["decode", "--md5"]).arg(dir))?;
    done.ensure_code(0)?;
    Ok(done.stdout)
}

fn record(dest: &Path, extra: &[&str]) -> Result<Run> {
    run(playsim().arg("record").arg(dest).args(["--preset", SMALL, "--encoders", "2"]).args(extra))
}

fn figures(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("no {}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

fn names(dir: &Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_>>()?;
    names.sort();
    Ok(names)
}

/// DPX, TIFF and PIZ EXR, and DPX with O_DIRECT (whose files are not a multiple of 4096
/// bytes) and with --preallocate (fallocate first), decode to the generator's own frames, md5 for md5, and are its bytes: every frame
/// written, none dropped, no partial file left. They record as fast as they encode (`--fps
/// max`): a debug build's PIZ is too slow for 24 fps; the tests below are paced.
#[test]
fn recorded_dpx_tiff_and_exr_decode_bit_exact_to_the_generators_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    for (case, format, extra) in [
        ("dpx", "dpx", &[][..]),
        ("dpx-direct", "dpx", &["--direct"][..]),
        ("dpx-preallocate", "dpx", &["--preallocate"][..]),
        ("dpx-direct-preallocate", "dpx", &["--direct", "--preallocate"][..]),
        ("tiff", "tiff", &[][..]),
        ("exr", "exr", &[][..]),
    ] {
        let (dest, reference) = (tmp.path().join(case), tmp.path().join(format!("{case}-generated")));
        let json = tmp.path().join(format!("{case}.json"));
        let done = run(playsim()
            .arg("record")
            .arg(&dest)
            .args(["--preset", SMALL, "--format", format, "--fps", "max", "--frames", "12", "--json"])
            .arg(&json)
            .args(extra))?;
        done.ensure_code(0)?;
        ensure!(done.stdout.contains("Frames written: 12 of 12"), "{case}:\n{done}");
        if format == "exr" {
            // OpenEXR writes, as Nuke and Flame do, where it is built in; the summary says which.
            let writer = if cfg!(feature = "openexr") { "written by openexr 3." } else { "written by exrs" };
            ensure!(done.stdout.contains(writer), "{case}: no '{writer}':\n{done}");
        }
        let f = figures(&json)?;
        ensure!(f["frames_written"] == 12 && f["frames_dropped"] == 0, "{case}: {f}");
        ensure!(names(&dest)?.iter().all(|n| !n.ends_with(".partial")), "{case}: {:?}", names(&dest)?);
        generate(&reference, SMALL, 12, &["--format", format])?;
        let (got, want) = (md5s(&dest)?, md5s(&reference)?);
        ensure!(got.lines().count() == 12 && got == want, "{case}: recorded\n{got}\ngenerated\n{want}");
        // The same encoder, so the same bytes: with O_DIRECT too, whose padded last block is cut.
        for name in names(&reference)? {
            let (a, b) = (std::fs::read(dest.join(&name))?, std::fs::read(reference.join(&name))?);
            ensure!(
                a == b,
                "{case}: {name} differs from the generated file ({} against {} bytes)",
                a.len(),
                b.len()
            );
        }
    }
    Ok(())
}

/// `--io-engine io_uring`, buffered and with O_DIRECT (whose last block is padded, then cut):
/// the same files as pwrite's, md5 for md5 and byte for byte, and the JSON names the engine
/// used. Where io_uring cannot be set up, the run falls back to pwrite and says why (the
/// storage line says so, and a warning on stderr gives the cause).
#[test]
fn io_uring_writes_the_same_frames_as_pwrite_buffered_and_direct() -> Result<()> {
    // In the target directory: a disk filesystem with direct I/O (/tmp may be a tmpfs).
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let reference = tmp.path().join("pread");
    record(&reference, &["--fps", "max", "--frames", "6"])?.ensure_code(0)?;
    let want = md5s(&reference)?;
    ensure!(want.lines().count() == 6, "{want}");
    for (case, extra) in [("io_uring", &[][..]), ("io_uring-direct", &["--direct"][..])] {
        let (dest, json) = (tmp.path().join(case), tmp.path().join(format!("{case}.json")));
        let json_arg = json.to_string_lossy();
        let flags =
            [&["--fps", "max", "--frames", "6", "--io-engine", "io_uring", "--json", &json_arg][..], extra];
        let done = record(&dest, &flags.concat())?;
        done.ensure_code(0)?;
        let f = figures(&json)?;
        ensure!(f["frames_written"] == 6, "{case}: {f}");
        let storage = f["info"]["storage"].as_str().context("no info.storage")?;
        let files = if extra.is_empty() { "local files (page cache)" } else { "local files with O_DIRECT" };
        if storage == format!("{files} through pwrite (io_uring is not available)") {
            eprintln!("io_uring is not available on this machine, checking the pwrite fallback:\n{done}");
            ensure!(
                done.stderr
                    .contains("playsim: warning: io_uring is not available, so the writes used pwrite: "),
                "{done}"
            );
        } else {
            ensure!(storage == format!("{files} through io_uring"), "{case}: {storage}");
            ensure!(!done.stderr.contains("warning"), "{case}: {done}");
        }
        ensure!(
            f["info"]["parameters"].as_str().is_some_and(|p| p.contains("--io-engine io_uring")),
            "{case}: {f}"
        );
        ensure!(md5s(&dest)? == want, "{case}: the frames decode differently from pwrite's");
        for name in names(&reference)? {
            let (a, b) = (std::fs::read(dest.join(&name))?, std::fs::read(reference.join(&name))?);
            ensure!(a == b, "{case}: {name} differs from pwrite's ({} against {} bytes)", a.len(), b.len());
        }
    }
    Ok(())
}

/// A destination with files in it is refused (named, with what to do) unless --force; a stale
/// partial file of an interrupted run is removed and said.
#[test]
fn a_non_empty_destination_is_refused_and_stale_partials_are_removed() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("capture");
    std::fs::create_dir(&dest)?;
    std::fs::write(dest.join("notes.txt"), "keep me")?;
    let refused = record(&dest, &["--fps", "max", "--frames", "2"])?;
    refused.ensure_code(1)?;
    ensure!(
        refused.stderr.contains("is not empty (1 entries, for example notes.txt)")
            && refused.stderr.contains("--force"),
        "{refused}"
    );
    ensure!(names(&dest)? == ["notes.txt"], "a refused run wrote {:?}", names(&dest)?);

    std::fs::write(dest.join(".frame.0000000.dpx.partial"), "half a frame")?;
    let forced = record(&dest, &["--fps", "max", "--frames", "2", "--force"])?;
    forced.ensure_code(0)?;
    ensure!(forced.stderr.contains("removed .frame.0000000.dpx.partial"), "{forced}");
    ensure!(names(&dest)? == ["frame.0000000.dpx", "frame.0000001.dpx", "notes.txt"], "{:?}", names(&dest)?);
    Ok(())
}

/// Bad flags are refused with a valid example; a run larger than the free space is refused
/// before it starts, with the figures.
#[test]
fn bad_flags_and_too_little_space_are_refused_with_what_to_do() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("capture");
    for (flags, expected) in [
        (&["--sync", "sometimes"][..], "for example --sync frame"),
        (&["-q", "0"][..], "for example 4"),
        (&["--fps", "fast"][..], "for example --fps 24"),
        (&["--on-error", "retry"][..], "for example --on-error continue"),
        (&["--format", "exr", "--bit-depth", "10"][..], "does not apply to --format exr"),
        (&["--capacity", "channels"][..], "for example --capacity streams --fps 24"),
        (&["--capacity", "streams", "--fps", "max"][..], "for example --capacity streams --fps 24"),
        (&["--streams", "0"][..], "for example"),
        (&["--io-engine", "uring"][..], "for example io_uring"),
    ] {
        let done = record(&dest, flags)?;
        ensure!(done.code == Some(2) || done.code == Some(1), "{flags:?}: {done}");
        ensure!(done.stderr.contains(expected), "{flags:?}: {done}");
    }
    let huge = run(playsim().arg("record").arg(&dest).args(["--preset", "8k-dci", "--frames", "10000000"]))?;
    huge.ensure_code(1)?;
    ensure!(huge.stderr.contains("bytes free and the run may write"), "{huge}");
    ensure!(huge.stderr.contains("record fewer frames with --frames"), "{huge}");
    Ok(())
}

/// A disk that fills mid-run (a 4 MiB tmpfs, filled once frame 0 is in), with and without
/// --preallocate, and through io_uring: the write (or the reservation) that fails is a storage failure naming the
/// frame and the error, the run stops (the default `--on-error stop`) with its JSON written,
/// and only complete frames carry real names.
#[test]
fn a_disk_that_fills_mid_run_stops_the_run_with_the_error_and_only_complete_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let mount = tmp.path().join("small");
    std::fs::create_dir(&mount)?;
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mount)
        .output();
    if !mounted.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root): {mounted:?}");
        return Ok(());
    }
    let unmount = Unmount(mount.clone());
    // Written, then with each frame's space reserved first (the failure comes from fallocate).
    for (case, extra) in [
        ("written", &[][..]),
        ("preallocated", &["--preallocate"][..]),
        ("io_uring", &["--io-engine", "io_uring"][..]),
    ] {
        let dest = mount.join(case);
        let json = tmp.path().join(format!("{case}.json"));
        let mut child = Background::spawn(
            playsim()
                .arg("record")
                .arg(&dest)
                .args(["--preset", SMALL, "--fps", "24", "--frames", "12", "--json"])
                .arg(&json)
                .args(extra),
            tmp.path(),
        )?;
        let first = dest.join("frame.0000000.dpx");
        let start = Instant::now();
        while !first.exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        ensure!(first.exists(), "{case}: frame 0 never appeared");
        // Fill what is left, so that a later frame's write meets ENOSPC.
        let filler = mount.join("filler");
        let _ = std::fs::write(&filler, vec![0u8; 4 << 20]);
        let done = child.wait(Duration::from_secs(60))?;
        done.ensure_no_panic()?;
        ensure!(done.code == Some(1), "{case}: {done}");
        ensure!(
            done.stdout.contains("No space left on device") && done.stdout.contains("Stopped: frame"),
            "{case}: {done}"
        );
        let f = figures(&json)?;
        ensure!(f["frames_failed"].as_u64() >= Some(1) && f["interrupted"] == true, "{case}: {f}");
        let names = names(&dest)?;
        ensure!(names.iter().all(|n| !n.ends_with(".partial")), "{case}: {names:?}");
        for name in &names {
            let bytes = std::fs::metadata(dest.join(name))?.len();
            ensure!(bytes == 264_192, "{case}: {name} is {bytes} bytes: a half frame under a real name");
        }
        std::fs::remove_file(&filler)?;
        std::fs::remove_dir_all(&dest)?;
    }
    drop(unmount);
    Ok(())
}

/// Ctrl-C mid-run: exit 130, the JSON written and marked interrupted, only complete frames under
/// real names and no partial file.
#[test]
fn ctrl_c_leaves_its_figures_and_only_complete_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("capture");
    let json = tmp.path().join("r.json");
    let mut cmd = playsim();
    cmd.arg("record")
        .arg(&dest)
        .args(["--preset", SMALL, "--fps", "24", "--frames", "2400", "--json"])
        .arg(&json);
    let done = interrupt_after(&mut cmd, tmp.path(), Duration::from_millis(1500))?;
    done.ensure_no_panic()?;
    ensure!(done.code == Some(130), "{done}");
    let f = figures(&json)?;
    let written = f["frames_written"].as_u64().unwrap_or(0);
    ensure!(f["interrupted"] == true && (1..2400).contains(&written), "{f}");
    let names = names(&dest)?;
    ensure!(names.len() as u64 == written, "{} files for {written} frames written", names.len());
    for name in &names {
        ensure!(!name.ends_with(".partial"), "{name} left");
        ensure!(std::fs::metadata(dest.join(name))?.len() == 264_192, "{name} is not a whole frame");
    }
    Ok(())
}

/// Unmounts the test's tmpfs when the test ends, passed or not.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// `--streams 2`: two streams at once, each into its own directory (`stream-01`,
/// `stream-02`), every frame the generator's bytes; the JSON counts each stream.
#[test]
fn streams_record_at_once_each_into_its_own_directory() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("capture");
    let (json, csv) = (tmp.path().join("r.json"), tmp.path().join("t.csv"));
    let (json_arg, csv_arg) = (json.to_string_lossy(), csv.to_string_lossy());
    let flags =
        ["--streams", "2", "--fps", "max", "--frames", "6", "--json", &json_arg, "--timeline", &csv_arg];
    let done = record(&dest, &flags)?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("2 streams at once"), "{done}");
    ensure!(names(&dest)? == ["stream-01", "stream-02"], "{:?}", names(&dest)?);
    let reference = tmp.path().join("generated");
    generate(&reference, SMALL, 6, &[])?;
    for stream in ["stream-01", "stream-02"] {
        let files = names(&dest.join(stream))?;
        ensure!(files == names(&reference)?, "{stream}: {files:?}");
        for file in &files {
            let same = std::fs::read(dest.join(stream).join(file))? == std::fs::read(reference.join(file))?;
            ensure!(same, "{stream}/{file} differs from the generator's");
        }
    }
    let f = figures(&json)?;
    ensure!(f["frames_written"] == 12 && f["info"]["streams"] == 2, "{f}");
    ensure!(f["per_stream"][1]["frames_written"] == 6, "{f}");
    // The timeline: a header and a line a frame, stream by stream.
    let timeline = std::fs::read_to_string(&csv)?;
    let lines: Vec<&str> = timeline.lines().collect();
    ensure!(lines.len() == 13 && lines[0].starts_with("stream,position,due_ms"), "{timeline}");
    ensure!(
        lines[7].starts_with("1,0,") && lines.iter().skip(1).all(|l| l.contains(",written,")),
        "{timeline}"
    );
    Ok(())
}

/// `--capacity fps` of a small frame, up to 4 fps: every candidate records with no drop (1, 2
/// and 4), so the answer is the most tried, with no limit; each trial's files and its
/// `capacity-trial` directory are removed after it, and the destination is left empty.
#[test]
fn capacity_searches_record_runs_and_clears_each_trial() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("capacity");
    let json = tmp.path().join("c.json");
    let done = record(
        &dest,
        &[
            "--capacity",
            "fps",
            "--window",
            "1s",
            "--trials",
            "1",
            "--max",
            "4",
            "--json",
            &json.to_string_lossy(),
        ],
    )?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("Capacity: 4 fps or more"), "{done}");
    let c = figures(&json)?;
    let candidates: Vec<u64> =
        c["trials"].as_array().context("trials")?.iter().filter_map(|t| t["candidate"].as_u64()).collect();
    ensure!(candidates == [1, 2, 4] && c["best"] == 4 && c["limit"].is_null(), "{c}");
    ensure!(c["trials"][2]["frames_written"] == 4, "{c}");
    ensure!(dest.is_dir() && names(&dest)?.is_empty(), "left in the destination: {:?}", names(&dest)?);
    Ok(())
}

/// `--encode off`: every file is frame 0's bytes, encoded once; the encode stage costs nothing.
#[test]
fn encode_off_writes_frame_0s_bytes_for_every_frame() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("capture");
    let done = record(&dest, &["--encode", "off", "--fps", "max", "--frames", "3"])?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("--encode off") && done.stdout.contains("Frames written: 3 of 3"), "{done}");
    let reference = tmp.path().join("generated");
    generate(&reference, SMALL, 1, &[])?;
    let frame_0 = std::fs::read(reference.join("frame.0000000.dpx"))?;
    for name in names(&dest)? {
        ensure!(std::fs::read(dest.join(&name))? == frame_0, "{name} is not frame 0's bytes");
    }
    let bad = record(&dest, &["--encode", "maybe"])?;
    ensure!(bad.code == Some(2) && bad.stderr.contains("for example --encode off"), "{bad}");
    Ok(())
}

/// `--source`: frames read and decoded ahead of the clock from a sequence, then encoded and
/// written. DPX to DPX (an ingest) decodes to the source's pixels; a frame missing from the
/// source is an input drop, and the run goes on; two streams read the source each on its own.
#[test]
fn a_source_is_ingested_and_its_late_or_missing_frames_are_input_drops() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let source = tmp.path().join("source");
    generate(&source, SMALL, 8, &[])?;
    let ingest = tmp.path().join("ingest");
    let json = tmp.path().join("i.json");
    let (source_arg, json_arg) = (source.to_string_lossy(), json.to_string_lossy());
    let from_source = ["--source", &source_arg, "--fps", "24", "--frames", "8", "--json", &json_arg];
    let done = record(&ingest, &from_source)?;
    done.ensure_code(0)?;
    ensure!(done.stdout.contains("Frames written: 8 of 8") && done.stdout.contains("input"), "{done}");
    ensure!(md5s(&ingest)? == md5s(&source)?, "the ingested frames decode differently from the source's");

    // Frame 3 gone from the source: an input drop, charged as such, and the rest written.
    std::fs::remove_file(source.join("frame.0000003.dpx"))?;
    let gap = tmp.path().join("gap");
    let done = record(&gap, &from_source)?;
    done.ensure_code(0)?;
    let f = figures(&json)?;
    ensure!(f["dropped_input"] == 1 && f["frames_written"] == 7, "{f}\n{done}");
    ensure!(done.stderr.contains("frame.0000003.dpx"), "the missing frame is not named:\n{done}");
    // Without a rate, frames come as fast as the source gives them: none is late, and only the
    // missing one is an input drop.
    let fast = tmp.path().join("fast");
    let flags = ["--source", &source_arg, "--fps", "max", "--frames", "16", "--json", &json_arg];
    record(&fast, &flags)?.ensure_code(0)?;
    let f = figures(&json)?;
    ensure!(f["dropped_input"] == 2 && f["frames_written"] == 14 && f["frames_dropped"] == 2, "{f}");

    let refused = record(&tmp.path().join("no"), &["--source", &source_arg, "--encode", "off"])?;
    ensure!(refused.code == Some(1) && refused.stderr.contains("leave --encode on"), "{refused}");

    // Two streams from one source: each reads and decodes it on its own (two capture inputs),
    // into its own directory; both lose the missing frame, as input drops.
    let two = tmp.path().join("two");
    let flags =
        ["--source", &source_arg, "--streams", "2", "--fps", "max", "--frames", "8", "--json", &json_arg];
    record(&two, &flags)?.ensure_code(0)?;
    let f = figures(&json)?;
    ensure!(f["dropped_input"] == 2 && f["frames_written"] == 14 && f["info"]["streams"] == 2, "{f}");
    // Both have the gap at frame 3, which `decode` names and counts (exit 1): the md5s of the
    // frames that are there are the same.
    let gapped = |dir: &Path| run(playsim().args(["decode", "--md5"]).arg(dir)).map(|done| done.stdout);
    for stream in ["stream-01", "stream-02"] {
        let lines = gapped(&two.join(stream))?;
        ensure!(lines.lines().count() == 7 && lines == gapped(&source)?, "{stream}: {lines}");
    }
    Ok(())
}

/// Two record runs, one with `--encode off`, compared as `play` runs are: each row of record's
/// figures, the later run marked against the first; a record report beside a playback report
/// is refused naming which is which. `--plot` draws the run naming its stages, and is refused
/// with `--capacity`.
#[test]
fn record_runs_are_plotted_and_compared_on_records_figures() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let path = |name: &str| tmp.path().join(name).to_string_lossy().into_owned();
    let (a, b, svg, cmp) = (path("a.json"), path("b.json"), path("a.svg"), path("cmp.svg"));
    let done =
        record(&tmp.path().join("a"), &["--fps", "max", "--frames", "8", "--json", &a, "--plot", &svg])?;
    done.ensure_code(0)?;
    ensure!(done.stderr.contains(&format!("plot written to {svg}")), "{done}");
    let plot = std::fs::read_to_string(&svg)?;
    for text in
        ["record to ", "8 of 8 written", "time from arrival (ms), by stage", "queue wait", "encode", "write"]
    {
        ensure!(plot.contains(text), "no `{text}` in the plot");
    }
    record(&tmp.path().join("b"), &["--fps", "max", "--frames", "8", "--encode", "off", "--json", &b])?
        .ensure_code(0)?;

    let compared = run(playsim().args(["compare", &a, &b, "--plot", &cmp]))?;
    compared.ensure_code(0)?;
    let row = |label: &str| -> Vec<String> {
        let line = compared.stdout.lines().find(|l| l.starts_with(label)).unwrap_or_default();
        line[label.len()..].split_whitespace().map(str::to_owned).collect()
    };
    ensure!(row("")[..2] == ["a.json", "b.json"], "{compared}");
    ensure!(row("frames written") == ["8", "8", "+0", "1.00x", "same"], "{compared}");
    ensure!(row("  storage") == ["0", "0", "+0", "-", "same"], "{compared}");
    ensure!(row("failed")[..2] == ["0", "0"], "{compared}");
    ensure!(row("settings").iter().filter(|w| *w == "--encode").count() == 1, "{compared}");
    for label in ["fps", "dropped", "  input", "  encode", "MB/s", "queue wait p99 ms", "encode p99 ms"] {
        ensure!(row(label).len() == 5, "no `{label}` row, or not marked:\n{compared}");
    }
    for label in
        ["write p99 ms", "sync p99 ms", "total p99 ms", "cpu encode s/GB", "cpu write s/GB", "end sync ms"]
    {
        ensure!(row(label).len() >= 4, "no `{label}` row:\n{compared}");
    }
    // Without encoding, b's encode CPU per GB is less than a's.
    ensure!(row("cpu encode s/GB").last().map(String::as_str) == Some("better"), "{compared}");
    let figure = std::fs::read_to_string(&cmp)?;
    ensure!(figure.contains("frames per second written") && figure.contains("queue wait"), "{figure}");

    // A playback report beside them is refused, each file named by its kind.
    let play = path("play.json");
    let played = run(playsim()
        .args(["play", "--fps", "max", "--frames", "4", "--quiet", "--json", &play])
        .arg(tmp.path().join("a")))?;
    played.ensure_code(0)?;
    let mixed = run(playsim().args(["compare", &a, &play, &b]))?;
    mixed.ensure_code(1)?;
    ensure!(
        mixed.stderr.contains(&format!("{play} is a playback report"))
            && mixed.stderr.contains(&format!("{a}, {b} are record reports")),
        "{mixed}"
    );

    let refused = record(&tmp.path().join("c"), &["--capacity", "streams", "--plot", &svg])?;
    refused.ensure_code(1)?;
    ensure!(refused.stderr.contains("--plot shows one record run"), "{refused}");
    Ok(())
}
