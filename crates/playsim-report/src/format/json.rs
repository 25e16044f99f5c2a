//! The report as JSON: pretty text, an atomic write to a file, and reading back.
//!
//! The shape is pinned by `schema/report.schema.json` (see [`crate::model::schema`]).

use std::io::{self, Write};
use std::path::Path;

use crate::model::wire::finite;
pub use crate::model::wire::from_str;
use crate::model::Report;
pub use crate::rendering::write_bytes_atomic;
use crate::rendering::{RenderError, Renderer};

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
    Ok(crate::rendering::write_atomic(&ReportJson, report, path)?)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    use crate::model::error::Error;
    use crate::model::{MountReport, SCHEMA_VERSION};
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
