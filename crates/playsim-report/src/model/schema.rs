//! The JSON schema of every JSON shape playsim writes, each kept in a file under `schema/`:
//! the run report (`report.schema.json`), the capacity search's result
//! (`capacity.schema.json`), the matrix (`matrix.schema.json`), frametest's figures
//! (`frametest.schema.json`) and record's (`record.schema.json`).
//!
//! A test compares each committed file with the schema generated from its model, so a change
//! to a JSON shape cannot go unnoticed. Regenerate the files with
//! `PLAYSIM_UPDATE_SCHEMA=1 cargo test -p playsim-report schema`. A new JSON output adds one
//! line to [`SCHEMAS`].

use crate::model::capacity::Capacity;
use crate::model::matrix::Matrix;
use crate::model::Report;

/// A JSON shape's schema: its file name under `schema/`, and the function that generates it
/// from the model.
pub type SchemaFile = (&'static str, fn() -> String);

/// Every JSON shape playsim writes, one line each.
pub const SCHEMAS: &[SchemaFile] = &[
    ("report.schema.json", report_schema),
    ("capacity.schema.json", capacity_schema),
    ("frametest.schema.json", crate::model::frametest::figures_schema),
    ("record.schema.json", crate::model::record::figures_schema),
    ("record-capacity.schema.json", crate::model::record::capacity_schema),
    ("matrix.schema.json", matrix_schema),
];

/// The JSON schema of [`Report`], pretty-printed, ending with a newline.
pub fn report_schema() -> String {
    pretty(&schemars::schema_for!(Report))
}

/// The JSON schema of [`Capacity`] (`capacity --json`), pretty-printed, ending with a newline.
pub fn capacity_schema() -> String {
    pretty(&schemars::schema_for!(Capacity))
}

/// The JSON schema of [`Matrix`] (`matrix --json`), pretty-printed, ending with a newline.
pub fn matrix_schema() -> String {
    pretty(&schemars::schema_for!(Matrix))
}

fn pretty(schema: &schemars::schema::RootSchema) -> String {
    // A schema is plain maps and strings, which always serialise.
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn schema_path(file: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema").join(file)
    }

    #[test]
    fn committed_schemas_are_up_to_date() {
        let update = std::env::var_os("PLAYSIM_UPDATE_SCHEMA").is_some_and(|v| v == "1");
        for (file, generate) in SCHEMAS {
            let generated = generate();
            let path = schema_path(file);
            if update {
                std::fs::write(&path, &generated).unwrap();
                continue;
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == generated,
                "{} is out of date with its model; if the change is intended, regenerate it with \
                 `PLAYSIM_UPDATE_SCHEMA=1 cargo test -p playsim-report schema` and commit it \
                 (a change that is not an addition also needs the shape's version bumped)",
                path.display()
            );
        }
    }

    #[test]
    fn every_schema_file_has_its_model() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(SCHEMAS.iter().any(|(file, _)| *file == name), "schema/{name} has no model in SCHEMAS");
        }
    }

    #[test]
    fn capacity_schema_describes_the_result() {
        let schema: serde_json::Value = serde_json::from_str(&capacity_schema()).unwrap();
        assert_eq!(schema["title"], "Capacity");
        let trial = &schema["definitions"]["Trial"]["properties"];
        assert!(
            trial["worst_slack_ms"]["type"].as_array().is_some_and(|t| t.iter().any(|t| t == "null")),
            "{trial}"
        );
        assert!(schema["properties"]["limit"].is_object());
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
