//! The error of reading a report back.

use crate::model::SCHEMA_VERSION;

/// A report could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a report: bad JSON, or a field of the wrong type or missing.
    #[error("malformed report: {0}")]
    Malformed(#[from] serde_json::Error),
    /// The report was written with a JSON shape this version does not read.
    #[error("unsupported report schema version {found} (this playsim reads version {SCHEMA_VERSION})")]
    UnsupportedVersion {
        /// The `schema_version` in the report.
        found: u32,
    },
}
