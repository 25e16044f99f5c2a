//! The report as JSON: pretty text, an atomic write to a file, and reading back.
//!
//! The shape is pinned by `schema/report.schema.json` (see [`crate::schema`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::model::{Percentiles, Report, SCHEMA_VERSION};
use crate::renderer::{RenderError, Renderer};

/// The report as pretty-printed JSON, ending with a newline.
///
/// A non-finite number (NaN or infinity, from a division by zero) is written
/// as 0, since JSON has no way to write it and a `null` would not read back.
pub fn to_string_pretty(report: &Report) -> String {
    // The model is numbers, strings and string-keyed maps, which always serialise.
    let mut text = serde_json::to_string_pretty(&finite(report)).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the report as JSON to `path`, replacing it whole or not at all.
///
/// The JSON goes to a temporary file in the same directory, which is synced
/// and then renamed over `path`, so a reader (or a crash) never sees half a
/// report. The temporary file is removed if anything fails.
pub fn write_atomic(report: &Report, path: &Path) -> io::Result<()> {
    Ok(crate::renderer::write_atomic(&ReportJson, report, path)?)
}

/// The run report as pretty-printed JSON ([`to_string_pretty`]'s text): the `json` renderer.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReportJson;

impl Renderer<Report> for ReportJson {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["json"]
    }

    fn render(&self, report: &Report, out: &mut dyn Write) -> Result<(), RenderError> {
        serde_json::to_writer_pretty(&mut *out, &finite(report)).map_err(io::Error::from)?;
        Ok(out.write_all(b"\n")?)
    }

    fn failure(&self, path: &Path, reason: &dyn std::fmt::Display) -> String {
        format!("writing report {}: {reason}", path.display())
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// that a reader never sees a half-written file.
pub fn write_bytes_atomic(text: &[u8], path: &Path) -> io::Result<()> {
    let file_name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("path {} names no file", path.display()))
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (tmp_path, mut file) = create_temp(dir, file_name)?;
    let written = file.write_all(text).and_then(|()| file.sync_all());
    drop(file);
    let renamed = written.and_then(|()| fs::rename(&tmp_path, path));
    if let Err(e) = renamed {
        // Best effort: the error that matters is the one already in hand.
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    // Make the rename itself durable. Some file systems refuse to sync a
    // directory; the report is complete either way, so that is not an error.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Reads a report from JSON.
///
/// Fields this version does not know (added by a later version) are ignored;
/// a report whose `schema_version` is not [`SCHEMA_VERSION`] is refused.
pub fn from_str(text: &str) -> Result<Report, Error> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if let Some(found) = value.get("schema_version").and_then(serde_json::Value::as_u64) {
        if found != u64::from(SCHEMA_VERSION) {
            return Err(Error::UnsupportedVersion { found: u32::try_from(found).unwrap_or(u32::MAX) });
        }
    }
    Ok(serde_json::from_value(value)?)
}

/// Creates a new file next to the destination, with a name no one else uses.
fn create_temp(dir: &Path, file_name: &std::ffi::OsStr) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last_err = None;
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut name = std::ffi::OsString::from(".");
        name.push(file_name);
        name.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp_path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp_path) {
            Ok(file) => return Ok((tmp_path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no free temporary file name")))
}

/// The report with every non-finite number replaced by 0: what its JSON holds.
pub(crate) fn finite(report: &Report) -> Report {
    let mut r = report.clone();
    let mut numbers: Vec<&mut f64> = vec![&mut r.duration_s, &mut r.totals.fps, &mut r.totals.mb_per_s];
    numbers.push(&mut r.totals.stall_ms);
    if let Some(d) = r.settings.duration_s.as_mut() {
        numbers.push(d);
    }
    let cpu = &mut r.cpu;
    numbers.extend([
        &mut cpu.process_user_s,
        &mut cpu.process_sys_s,
        &mut cpu.user_s_per_gb,
        &mut cpu.sys_s_per_gb,
        &mut cpu.softirq_s_per_gb,
        &mut cpu.total_s_per_gb,
    ]);
    numbers.extend([&mut cpu.stages.read_s, &mut cpu.stages.decode_s, &mut cpu.stages.output_s]);
    let sys = &mut cpu.system;
    numbers.extend([&mut sys.user_s, &mut sys.nice_s, &mut sys.system_s, &mut sys.idle_s]);
    numbers.extend([&mut sys.iowait_s, &mut sys.irq_s, &mut sys.softirq_s, &mut sys.steal_s]);
    for s in &mut r.streams {
        numbers.extend([&mut s.fps_achieved, &mut s.mb_per_s, &mut s.stall_ms]);
        let l = &mut s.latency;
        for p in [&mut l.open, &mut l.read, &mut l.close, &mut l.decode, &mut l.output, &mut l.slack] {
            numbers.extend(percentile_numbers(p));
        }
        numbers.extend(percentile_numbers(&mut l.pacing_error));
    }
    if let Some(l) = r.latency.as_mut() {
        for p in [&mut l.open, &mut l.read, &mut l.close, &mut l.decode, &mut l.output, &mut l.slack] {
            numbers.extend(percentile_numbers(p));
        }
        numbers.extend(percentile_numbers(&mut l.pacing_error));
    }
    for c in &mut r.clients {
        numbers.extend([
            &mut c.fps,
            &mut c.mb_per_s,
            &mut c.cpu_s_per_gb,
            &mut c.clock_offset_ms,
            &mut c.clock_rtt_ms,
        ]);
        numbers.extend(c.last_heard_s.as_mut());
    }
    if let Some(c) = r.cluster.as_mut() {
        numbers.extend([&mut c.start_skew_ms, &mut c.max_clock_offset_ms]);
    }
    for x in numbers {
        if !x.is_finite() {
            *x = 0.0;
        }
    }
    r
}

fn percentile_numbers(p: &mut Percentiles) -> [&mut f64; 7] {
    [
        &mut p.min_ms,
        &mut p.mean_ms,
        &mut p.p50_ms,
        &mut p.p90_ms,
        &mut p.p99_ms,
        &mut p.p999_ms,
        &mut p.max_ms,
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::MountReport;
    use crate::testutil::sample_report;

    #[test]
    fn round_trips() {
        let report = sample_report();
        let text = to_string_pretty(&report);
        assert!(text.ends_with("}\n"));
        let back = from_str(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.schema_version, 1);
        assert_eq!(SCHEMA_VERSION, 1);
    }

    #[test]
    fn field_names_are_the_documented_ones() {
        let value: serde_json::Value = serde_json::from_str(&to_string_pretty(&sample_report())).unwrap();
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["status"], "complete");
        assert_eq!(value["settings"]["loop"], false);
        assert_eq!(value["streams"][0]["timeline"][1]["cause"], "storage");
        assert_eq!(value["streams"][0]["latency"]["read"]["p999_ms"], 80.0);
    }

    #[test]
    fn mount_and_cost_per_gb_round_trip_and_may_be_absent() {
        let mut report = sample_report();
        report.streams[0].storage.mount = Some(MountReport {
            mount_point: "/mnt/my media".into(),
            fstype: "nfs4".into(),
            source: "192.168.1.10:/export".into(),
            transport: "nfs over rdma".into(),
            options: [("proto", "rdma"), ("hard", "")].map(|(k, v)| (k.to_owned(), v.to_owned())).into(),
        });
        let text = to_string_pretty(&report);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mount = &value["streams"][0]["storage"]["mount"];
        assert_eq!(mount["transport"], "nfs over rdma");
        assert_eq!(mount["options"]["proto"], "rdma");
        assert!(
            value["cpu"]["total_s_per_gb"].as_f64().unwrap()
                > value["cpu"]["user_s_per_gb"].as_f64().unwrap()
        );
        assert_eq!(from_str(&text).unwrap(), report);

        // Without a mount the key is left out; reports written before these fields still read.
        let mut value: serde_json::Value = serde_json::from_str(&to_string_pretty(&sample_report())).unwrap();
        assert!(value["streams"][0]["storage"].get("mount").is_none());
        let cpu = value["cpu"].as_object_mut().unwrap();
        cpu.remove("softirq_s_per_gb");
        cpu.remove("total_s_per_gb");
        let back = from_str(&value.to_string()).unwrap();
        assert_eq!((back.cpu.softirq_s_per_gb, back.cpu.total_s_per_gb), (0.0, 0.0));
    }

    #[test]
    fn non_finite_numbers_are_written_as_zero() {
        let mut report = sample_report();
        report.totals.fps = f64::NAN;
        report.streams[0].latency.slack.p50_ms = f64::NEG_INFINITY;
        report.settings.duration_s = Some(f64::INFINITY);
        let back = from_str(&to_string_pretty(&report)).unwrap();
        assert_eq!(back.totals.fps, 0.0);
        assert_eq!(back.streams[0].latency.slack.p50_ms, 0.0);
        assert_eq!(back.settings.duration_s, Some(0.0));
        assert_eq!(back.totals.mb_per_s, report.totals.mb_per_s);
    }

    #[test]
    fn a_merged_report_s_non_finite_numbers_are_written_as_zero() {
        let mut report = crate::testutil::merged_sample();
        report.clients[0].fps = f64::NAN;
        report.clients[3].last_heard_s = Some(f64::INFINITY);
        if let Some(c) = report.cluster.as_mut() {
            c.start_skew_ms = f64::NAN;
        }
        if let Some(l) = report.latency.as_mut() {
            l.read.p99_ms = f64::NEG_INFINITY;
        }
        let back = from_str(&to_string_pretty(&report)).unwrap();
        assert_eq!(back.clients[0].fps, 0.0);
        assert_eq!(back.clients[3].last_heard_s, Some(0.0));
        assert_eq!(back.cluster.map(|c| c.start_skew_ms), Some(0.0));
        assert_eq!(back.latency.map(|l| l.read.p99_ms), Some(0.0));
    }

    #[test]
    fn unknown_fields_are_ignored_and_other_versions_refused() {
        let mut value: serde_json::Value = serde_json::from_str(&to_string_pretty(&sample_report())).unwrap();
        value["added_later"] = serde_json::json!({"x": 1});
        assert_eq!(from_str(&value.to_string()).unwrap(), sample_report());
        value["schema_version"] = serde_json::json!(2);
        let err = from_str(&value.to_string()).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { found: 2 }), "{err}");
        assert_eq!(err.to_string(), "unsupported report schema version 2 (this playsim reads version 1)");
    }

    #[test]
    fn malformed_text_is_an_error() {
        assert!(matches!(from_str("{\"schema_version\": 1,"), Err(Error::Malformed(_))));
        assert!(matches!(from_str("{\"schema_version\": 1}"), Err(Error::Malformed(_))));
        assert!(matches!(from_str("[]"), Err(Error::Malformed(_))));
    }

    #[test]
    fn write_atomic_replaces_the_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        fs::write(&path, "old").unwrap();
        let report = sample_report();
        write_atomic(&report, &path).unwrap();
        assert_eq!(from_str(&fs::read_to_string(&path).unwrap()).unwrap(), report);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["report.json"]);
    }

    #[test]
    fn write_atomic_failure_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        // The destination is a non-empty directory, so the rename fails.
        let path = dir.path().join("report.json");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("keep"), "x").unwrap();
        let err = write_atomic(&sample_report(), &path).unwrap_err();
        assert!(err.to_string().contains("report.json"), "{err}");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["report.json"]);
        assert!(path.join("keep").exists());
    }

    #[test]
    fn write_atomic_reports_a_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent").join("report.json");
        let err = write_atomic(&sample_report(), &path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("absent/report.json"), "{err}");
    }
}
