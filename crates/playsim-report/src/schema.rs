//! The JSON schema of [`Report`], kept in `schema/report.schema.json`.
//!
//! A test compares the committed file with the schema generated from the
//! model, so a change to the JSON shape cannot go unnoticed. Regenerate the
//! file with `PLAYSIM_UPDATE_SCHEMA=1 cargo test -p playsim-report`.

use crate::model::Report;

/// The JSON schema of [`Report`], pretty-printed, ending with a newline.
pub fn report_schema() -> String {
    let schema = schemars::schema_for!(Report);
    // A schema is plain maps and strings, which always serialise.
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn schema_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema").join("report.schema.json")
    }

    #[test]
    fn committed_schema_is_up_to_date() {
        let generated = report_schema();
        let path = schema_path();
        if std::env::var_os("PLAYSIM_UPDATE_SCHEMA").is_some_and(|v| v == "1") {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is out of date with the report model; if the change is intended, regenerate it with \
             `PLAYSIM_UPDATE_SCHEMA=1 cargo test -p playsim-report schema` and commit it \
             (a change that is not an addition also needs SCHEMA_VERSION bumped)",
            path.display()
        );
    }

    #[test]
    fn schema_describes_the_report() {
        let schema: serde_json::Value = serde_json::from_str(&report_schema()).unwrap();
        assert_eq!(schema["title"], "Report");
        let required = schema["required"].as_array().unwrap();
        assert!(required.iter().any(|f| f == "schema_version"));
        assert!(schema["definitions"]["Settings"]["properties"]["loop"].is_object());
        assert!(schema["definitions"]["Percentiles"]["properties"]["p999_ms"].is_object());
    }
}
