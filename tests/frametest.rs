//! `playsim frametest` end to end: frametest's file layout written and accepted as DPX, read
//! back with frametest's summary, frames dropped under -f with a tiny -q, refusals with examples.

use anyhow::{ensure, Context, Result};
use playsim::dpx::DpxHeader;

use crate::util::{file_names, playsim, run};

/// A 2k frametest file: 2048 x 1556 pixels of 4 bytes after a 64 KiB header.
const TWO_K_BYTES: u64 = 2048 * 1556 * 4 + 65_536;

/// The number after `label` on the summary line that starts with it.
fn figure(summary: &str, label: &str) -> Result<u64> {
    let line = summary
        .lines()
        .find(|l| l.starts_with(label))
        .with_context(|| format!("no {label:?} line in\n{summary}"))?;
    let digits: String =
        line[label.len()..].trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().with_context(|| format!("no number in {line:?}"))
}

#[test]
fn writes_frametest_files_reads_them_back_and_drops_frames_on_a_full_queue() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    // Not created beforehand: -w creates it.
    let dir = tmp.path().join("ft");

    let wrote = run(playsim().args(["frametest", "-w", "2k", "-n", "24", "-t", "2"]).arg(&dir))?;
    wrote.ensure_code(0)?;
    ensure!(wrote.stdout.contains("Frames transferred: 24 (307.495 MB)"), "{wrote}");
    let expected: Vec<String> = (0..24).map(|i| format!("frame{i:06}.dpx")).collect();
    ensure!(file_names(&dir)? == expected, "files written: {:?}", file_names(&dir)?);
    for name in &expected {
        let len = std::fs::metadata(dir.join(name))?.len();
        ensure!(len == TWO_K_BYTES, "{name} is {len} bytes, not {TWO_K_BYTES}");
    }
    let first = std::fs::read(dir.join("frame000005.dpx"))?;
    let header = DpxHeader::parse(&first).context("frame000005.dpx is not DPX")?;
    ensure!(
        (header.width, header.height, header.bit_depth, header.data_offset) == (2048, 1556, 10, 65_536),
        "header {header:?}"
    );

    // playsim's sequence discovery and DPX decoder take them as they are.
    let decoded = run(playsim().args(["decode", "--md5", "--frames", "1"]).arg(&dir))?;
    decoded.ensure_code(0)?;
    ensure!(decoded.stdout.starts_with("0 rgb48le 2048x1556 "), "{decoded}");

    // Read back, as fast as possible, with frametest's summary, -x and --json.
    let csv = tmp.path().join("times.csv");
    let json = tmp.path().join("result.json");
    let read = run(playsim()
        .args(["frametest", "-r", "2k", "-n", "24", "-t", "2"])
        .arg(&dir)
        .arg("-x")
        .arg(&csv)
        .arg("--json")
        .arg(&json))?;
    read.ensure_code(0)?;
    for line in [
        "Test parameters:    -r 2k -n 24 -t 2",
        "Frames transferred: 24 (307.495 MB)",
        "Frames dropped:     0",
        "Fastest frame:",
        "Slowest frame:",
        "Averaged details:",
        "Histogram of frame times",
        "MB = 10^6 bytes",
    ] {
        ensure!(read.stdout.contains(line), "{line:?} missing:\n{read}");
    }
    ensure!(read.stdout.contains("Data rate") && read.stdout.contains(" MB/s"), "{read}");
    let rows: Vec<String> = std::fs::read_to_string(&csv)?.lines().map(str::to_owned).collect();
    ensure!(rows.len() == 25 && rows[0].starts_with("frame,file,due_ms"), "csv:\n{}", rows.join("\n"));
    for (i, row) in rows[1..].iter().enumerate() {
        let fields: Vec<&str> = row.split(',').collect();
        ensure!(fields[0] == i.to_string() && fields[1] == expected[i], "row {row}");
        ensure!(fields[11] == TWO_K_BYTES.to_string() && fields[12] == "transferred", "row {row}");
    }
    let result: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    ensure!(result["frames_transferred"] == 24 && result["frames_dropped"] == 0, "{result}");
    ensure!(result["bytes"] == 24 * TWO_K_BYTES, "{result}");

    // Reverse order, looping: 30 frames over the 24 files.
    let looped = run(playsim().args(["frametest", "-r", "-n", "30", "-v", "-l"]).arg(&dir))?;
    looped.ensure_code(0)?;
    ensure!(figure(&looped.stdout, "Frames transferred:")? == 30, "{looped}");

    // At 1000 fps a frame falls due every millisecond; reading and decoding a 12.8 MB frame
    // takes longer, so with a queue of one the frames due meanwhile are dropped.
    let paced = run(playsim()
        .args(["frametest", "-r", "-n", "8", "-t", "1", "-f", "1000", "-q", "1", "-b", "1", "--decode"])
        .args(["--decode-threads", "1"])
        .arg(&dir))?;
    paced.ensure_code(0)?;
    let transferred = figure(&paced.stdout, "Frames transferred:")?;
    let dropped = figure(&paced.stdout, "Frames dropped:")?;
    ensure!(dropped > 0 && transferred + dropped == 8, "{paced}");
    ensure!(paced.stdout.contains("Decode:"), "{paced}");

    // A size other than the files' is refused, naming a file and the size to give.
    let wrong = run(playsim().args(["frametest", "-r", "4k"]).arg(&dir))?;
    wrong.ensure_code(1)?;
    ensure!(wrong.stderr.contains("frame000000.dpx") && wrong.stderr.contains("-r 2k"), "{wrong}");
    Ok(())
}

/// Every refused flag gets clap's usage error (2) or playsim's (1), with a valid example.
#[test]
fn bad_frametest_flags_are_refused_with_an_example() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let out = tmp.path().join("out");
    let out = out.to_str().context("temporary path is not utf-8")?;
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty)?;
    let empty = empty.to_str().context("temporary path is not utf-8")?;
    let cases: &[(&[&str], i32)] = &[
        (&["-w", "5k", "-n", "2", out], 1),
        (&["-w", "2k", "-n", "0", out], 2),
        (&["-w", "2k", "-n", "2", "-t", "0", out], 2),
        (&["-w", "-z", "10", "-n", "2", out], 1),
        (&["-w", "-z", "x", "-n", "2", out], 2),
        (&["-w", "2k", "-z", "100", "-n", "2", out], 1),
        (&["-w", "2k", "-n", "2"], 1),
        (&["-w", "2k", out], 1),
        (&["-w", "2k", "-r", out], 1),
        (&["-n", "2", out], 1),
        (&["-w", "2k", "-n", "2", "sim://lan?bw=1Gbit"], 1),
        (&["-w", "2k", "-n", "2", "-l", out], 1),
        (&["-w", "2k", "-n", "2", "--decode", out], 1),
        (&["-r", "-f", "abc", empty], 2),
        (&["-r", "-f", "0", empty], 2),
        (&["-r", "-q", "0", empty], 2),
        (&["-r", "-b", "x", empty], 2),
        (&["-r", "--name", "frame.dpx", empty], 2),
        (&["-r", "--header", "1", empty], 2),
        (&["-r", "-v", "-m", empty], 1),
        (&["-r", empty], 1),
        (&["-r", out], 1),
    ];
    let mut failures = Vec::new();
    for (args, code) in cases {
        let done = run(playsim().arg("frametest").args(*args))?;
        if done.code != Some(*code)
            || !done.stderr.contains("for example")
            || done.stderr.contains("panicked")
        {
            failures.push(format!(
                "`playsim frametest {}`: expected exit code {code} and an example\n{done}",
                args.join(" ")
            ));
        }
    }
    ensure!(!std::path::Path::new(out).exists(), "a refused run created {out}");
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
