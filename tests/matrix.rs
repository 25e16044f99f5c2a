//! `playsim matrix` end to end: over `sim://`, where the simulated link makes every cell
//! exact (text, JSON against its schema's shape, CSV), and on a local directory, where the
//! media is generated once and reused.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::util::{playsim, run, Background};

/// 8.5 MB/s. A 256x144 10-bit DPX frame is 149,504 bytes: 2 streams at 24 fps need 7.2 MB/s
/// (84% of the link), 3 need 10.8 (127%); 1 stream at 48 needs 7.2, 2 need 14.4 (169%). A
/// 1024x576 frame is 2,361,344 bytes: 1 stream at 24 needs 56.7 MB/s, 6.7 times the link.
/// A stream prerolls 5 frames before its clock starts, which hides a small deficit over a
/// short window: over 2 s, 3 streams at 24 get 5 + 38 of the 48 frames due, and 2 at 48
/// get 5 + 57 of 96, so each failure is short by 5 frames or more.
const LINK: &str = "sim://lan?bw=8.5MB/s&lat=1ms&jitter=0&seed=1";

#[test]
fn a_sim_matrix_is_exact_and_reuses_a_zero() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (json, csv) = (dir.path().join("m.json"), dir.path().join("m.csv"));
    let done = run(playsim()
        .args(["matrix", LINK, "--formats", "dpx:256x144,dpx:1024x576", "--rates", "24,48"])
        .args(["--window", "2s", "--trials", "1", "--max", "4", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv))?;
    done.ensure_code(0)?;
    let rows: Vec<Vec<&str>> = done.stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    ensure!(
        rows.iter().any(|r| r[..] == ["dpx:256x144", "256x144", "2", "(storage)", "1", "(storage)"]),
        "{done}"
    );
    ensure!(
        rows.iter().any(|r| r[..] == ["dpx:1024x576", "1024x576", "0", "(storage)", "0", "(storage)*"]),
        "{done}"
    );
    ensure!(done.stdout.contains("cold reads: sim:// frames are made in memory"), "{done}");
    ensure!(done.stderr.contains("cell 1 of 4: dpx:256x144 at 24 fps, up to 4 streams"), "{done}");
    ensure!(done.stderr.contains("cell 2 of 4: dpx:256x144 at 48 fps, up to 2 streams"), "{done}");
    ensure!(done.stderr.contains("cell 4 of 4 done: 0 (storage)*"), "{done}");
    ensure!(done.stderr.contains("about") && !done.stderr.contains("cell 4 of 4: "), "{done}");

    let text = std::fs::read_to_string(&json)?;
    let value: Value = serde_json::from_str(&text)?;
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/playsim-report/schema/matrix.schema.json"
    ))?)?;
    conforms(&value, &schema, &schema).context("the JSON against matrix.schema.json")?;
    for row in value["rows"].as_array().context("rows")? {
        conforms(row, &schema["definitions"]["MatrixRow"], &schema)?;
        for cell in row["cells"].as_array().context("cells")? {
            conforms(cell, &schema["definitions"]["MatrixCell"], &schema)?;
        }
    }
    let cells = |row: usize| value["rows"][row]["cells"].clone();
    ensure!(cells(0)[0]["best_streams"] == 2 && cells(0)[1]["best_streams"] == 1, "{text}");
    ensure!(cells(0)[1]["max"] == 2 && cells(0)[1]["limit"] == "storage", "{text}");
    ensure!(
        cells(1)[1]["inherited_from"] == "24" && cells(1)[1]["trials"].as_array().is_some_and(Vec::is_empty)
    );
    let matrix = playsim::report::matrix::from_str(&text)?;
    ensure!(matrix.rows[1].cells[0].trials.len() == 1 && matrix.rates == ["24", "48"]);

    let csv = std::fs::read_to_string(&csv)?;
    let lines: Vec<&str> = csv.lines().collect();
    ensure!(lines.len() == 5 && lines[0] == playsim::report::matrix::CSV_HEADER, "{csv}");
    ensure!(
        lines[1].starts_with("dpx:256x144,dpx,256x144,sim://lan?bw=8.5MB/s")
            && lines[1].contains(",24,2,4,false,storage,"),
        "{csv}"
    );
    ensure!(
        lines[4].starts_with("dpx:1024x576,") && lines[4].ends_with(",48,0,4,false,storage,,24,0"),
        "{csv}"
    );
    Ok(())
}

/// SIGTERM (or Ctrl-C) in the second cell: the search stops, and the files asked for hold the
/// cell done, with why the matrix stopped; status 130.
#[test]
fn a_stopped_matrix_writes_the_cells_done() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (json, html) = (dir.path().join("m.json"), dir.path().join("m.html"));
    let mut child = Background::spawn(
        playsim()
            .args(["matrix", LINK, "--formats", "dpx:256x144,dpx:1024x576", "--rates", "24,48"])
            .args(["--window", "2s", "--trials", "1", "--max", "4", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(&html),
        dir.path(),
    )?;
    child.wait_for_stderr("cell 2 of 4: ", Duration::from_secs(60))?;
    child.signal(rustix::process::Signal::TERM)?;
    let done = child.wait(Duration::from_secs(20))?;
    done.ensure_code(130)?;
    ensure!(done.stderr.contains("matrix: terminated; the table holds the cells done"), "{done}");
    ensure!(done.stdout.contains("stopped (terminated) after 1 cell: the cells left blank"), "{done}");
    let matrix = playsim::report::matrix::from_str(&std::fs::read_to_string(&json)?)?;
    ensure!(matrix.interrupted.as_deref() == Some("terminated"), "{:?}", matrix.interrupted);
    ensure!(matrix.rows.len() == 1 && matrix.rows[0].cells.len() == 1, "{matrix:?}");
    ensure!(matrix.rows[0].cells[0].best_streams == 2, "{:?}", matrix.rows[0].cells[0]);
    ensure!(std::fs::read_to_string(&html)?.contains("stopped (terminated) after 1 cell"));
    Ok(())
}

/// Checks the shape of `value` against `schema` (draft 7 as schemars writes it): required
/// properties present, no property the schema does not declare, and the JSON types.
fn conforms(value: &Value, schema: &Value, root: &Value) -> Result<()> {
    let object = value.as_object().context("not an object")?;
    for required in schema["required"].as_array().into_iter().flatten() {
        let key = required.as_str().unwrap_or_default();
        ensure!(object.contains_key(key), "missing required {key}");
    }
    let properties = schema["properties"].as_object().context("the schema has no properties")?;
    for (key, field) in object {
        let declared = properties.get(key).with_context(|| format!("{key} is not in the schema"))?;
        let declared = match declared.get("$ref").and_then(Value::as_str) {
            Some(reference) => &root["definitions"][reference.trim_start_matches("#/definitions/")],
            None => declared,
        };
        let types: Vec<&str> = match &declared["type"] {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        let actual = match field {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        ensure!(
            types.contains(&actual) || (actual == "integer" && types.contains(&"number")),
            "{key} is {actual}, the schema says {types:?}"
        );
    }
    Ok(())
}

#[test]
fn a_local_matrix_generates_its_media_once_and_refuses_bad_flags() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let matrix = || {
        let mut command = playsim();
        command.args(["matrix"]).arg(dir.path()).args([
            "--formats",
            "dpx:256x144",
            "--rates",
            "24",
            "--window",
            "1s",
            "--streams",
            "1",
        ]);
        command
    };
    let first = run(&mut matrix())?;
    first.ensure_code(0)?;
    ensure!(
        first.stderr.contains("will generate 4 MB of media")
            && first.stderr.contains("dpx:256x144 (24 frames)"),
        "{first}"
    );
    ensure!(first.stderr.contains("row 1 of 1: generating"), "{first}");
    let media = dir.path().join("matrix-media/dpx-256x144");
    let frames = std::fs::read_dir(&media)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".dpx"))
        .count();
    ensure!(frames == 24, "{frames} frames in {}", media.display());
    let row: Vec<&str> = first
        .stdout
        .lines()
        .find(|l| l.starts_with("dpx:256x144"))
        .unwrap_or("")
        .split_whitespace()
        .collect();
    ensure!(row == ["dpx:256x144", "256x144", "yes"], "{first}");
    ensure!(first.stdout.contains("local reads use O_DIRECT"), "{first}");

    // Through the page cache when asked, as a player reads; the media is not made again.
    let second = run(matrix().arg("--page-cache"))?;
    second.ensure_code(0)?;
    ensure!(!second.stderr.contains("generat"), "the media was made again:\n{second}");
    ensure!(
        second.stdout.contains("posix_fadvise DONTNEED") && second.stdout.contains("no trial loops"),
        "{second}"
    );

    let bad = run(playsim().arg("matrix").arg(dir.path()).args(["--formats", "mpeg2-uhd"]))?;
    bad.ensure_code(2)?;
    ensure!(
        bad.stderr.contains("not a matrix row") && bad.stderr.contains("for example dpx:256x144"),
        "{bad}"
    );
    let bad = run(playsim().arg("matrix").arg(dir.path()).args(["--rates", "fast"]))?;
    bad.ensure_code(2)?;
    ensure!(bad.stderr.contains("for example --rates"), "{bad}");
    Ok(())
}

/// On a server, the matrix makes the media in its staging directory and copies it through
/// playsim's own client (NFS to Ganesha: a DPX sequence; SMB to Samba: an H.264 clip), marks
/// each copy complete, plays it there, and copies nothing the second time.
#[cfg(all(feature = "nfs", feature = "smb", feature = "ffmpeg"))]
#[test]
fn a_matrix_on_a_server_copies_its_media_there_once_through_playsims_client() -> Result<()> {
    let stage = tempfile::tempdir()?;
    let nfs = playsim_testserver::NfsServer::start().context("starting nfs-ganesha")?;
    let smb = playsim_testserver::SmbServer::start().context("starting smbd")?;
    let cases = [
        (nfs.url(""), nfs.export_dir().to_path_buf(), "dpx:256x144", "dpx-256x144"),
        (smb.writable_url(""), smb.export_dir().to_path_buf(), "h264:256x144", "h264-256x144.mp4"),
    ];
    for (location, export, row, name) in &cases {
        let matrix = || {
            let mut command = playsim();
            command
                .args([
                    "matrix",
                    location,
                    "--formats",
                    row,
                    "--rates",
                    "24",
                    "--window",
                    "1s",
                    "--streams",
                    "1",
                ])
                .arg("--stage")
                .arg(stage.path())
                .env("PLAYSIM_SMB_USER", smb.user())
                .env("PLAYSIM_SMB_PASSWORD", smb.password());
            command
        };
        let first = run(&mut matrix())?;
        first.ensure_code(0)?;
        ensure!(first.stderr.contains("made in") && first.stderr.contains("copied there"), "{first}");
        let base = location.split('?').next().unwrap_or_default().trim_end_matches('/');
        ensure!(first.stderr.contains(&format!("to {base}/matrix-media/{name}")), "{first}");
        let copied = export.join("matrix-media").join(name);
        ensure!(copied.exists(), "{} is not on the server:\n{first}", copied.display());
        ensure!(export.join(format!("matrix-media/.{name}.complete")).exists(), "no marker:\n{first}");
        if copied.is_dir() {
            let frames = std::fs::read_dir(&copied)?
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".dpx"))
                .count();
            ensure!(frames == 24, "{frames} files in {}", copied.display());
        }
        let cells: Vec<&str> =
            first.stdout.lines().find(|l| l.starts_with(row)).unwrap_or("").split_whitespace().collect();
        ensure!(cells.last() == Some(&"yes"), "{first}");
        ensure!(!first.stdout.contains(smb.password()) && !first.stderr.contains(smb.password()), "{first}");

        let second = run(&mut matrix())?;
        second.ensure_code(0)?;
        ensure!(!second.stderr.contains("generat") && !second.stderr.contains("copying"), "{second}");
    }
    Ok(())
}

/// `--write` fills the table with `record`: each cell the most streams recorded with no frame
/// dropped or failed, its trials record trials, its cause a record cause; locally with
/// O_DIRECT, and over playsim's NFS client to Ganesha. Each trial's `capacity-trial` (its
/// files, its stream directories and itself) is gone after it: the row's directory is left
/// empty. Formats record cannot encode, and sim://, are refused with an example.
#[cfg(feature = "nfs")]
#[test]
fn a_write_matrix_records_each_cell_locally_and_over_nfs() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let nfs = playsim_testserver::NfsServer::start().context("starting nfs-ganesha")?;
    let (local, over_nfs) = (dir.path().to_string_lossy().into_owned(), nfs.url(""));
    for (location, direct, on_disk) in [(local, true, dir.path()), (over_nfs, false, nfs.export_dir())] {
        let json = dir.path().join("w.json");
        let done = run(playsim()
            .args(["matrix", &location, "--write", "--formats", "dpx:256x144", "--rates", "24,48"])
            .args(["--window", "1s", "--max", "2", "--json"])
            .arg(&json))?;
        done.ensure_code(0)?;
        ensure!(done.stdout.contains("most streams recorded with no drop (up to 2)"), "{done}");
        ensure!(done.stdout.contains("O_DIRECT") == direct, "{done}");
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
        ensure!(value["write"] == true, "{value}");
        let cell = &value["rows"][0]["cells"][0];
        ensure!(cell["best_streams"].as_u64().is_some_and(|n| n >= 1), "{value}");
        let trials = cell["write_trials"].as_array().context("write_trials")?;
        ensure!(
            !trials.is_empty() && trials.iter().all(|t| t["frames_arrived"].as_u64() > Some(0)),
            "{value}"
        );
        ensure!(cell["trials"].as_array().is_some_and(Vec::is_empty), "{value}");
        if let Some(limit) = cell["limit"].as_str() {
            ensure!(["storage", "encode", "input"].contains(&limit), "{value}");
        }
        let rows: Vec<std::path::PathBuf> =
            std::fs::read_dir(on_disk.join("matrix-write"))?.map(|e| Ok(e?.path())).collect::<Result<_>>()?;
        ensure!(rows.len() == 1, "{rows:?}");
        let left: Vec<String> = std::fs::read_dir(&rows[0])?
            .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_>>()?;
        ensure!(left.is_empty(), "left in {}: {left:?}", rows[0].display());
    }
    let h264 = run(playsim().arg("matrix").arg(dir.path()).args(["--write", "--formats", "h264-uhd"]))?;
    h264.ensure_code(1)?;
    ensure!(
        h264.stderr.contains("record encodes no h264") && h264.stderr.contains("--write --formats dpx-2k"),
        "{h264}"
    );
    let sim = run(playsim().args(["matrix", "sim://lan", "--write"]))?;
    sim.ensure_code(1)?;
    ensure!(sim.stderr.contains("sim:// makes frames") && sim.stderr.contains("--write)"), "{sim}");
    Ok(())
}
