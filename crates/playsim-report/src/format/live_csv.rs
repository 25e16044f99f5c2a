//! The live CSV (`--live-csv FILE`): one row of counters a second while a run goes, as
//! elbencho's live CSV. The facade samples the engine's live counters once a second into a
//! [`LiveRow`]; this module only formats, so it needs nothing of the engine.

use std::io::Write;

use crate::model::Drops;
use crate::rendering::{RenderError, Renderer};

/// The header row.
pub const HEADER: &str =
    "second,fps,mb_per_s,presented,bytes_read,dropped_storage,dropped_decode,dropped_output,dropped_unreadable";

/// One second of a run: what happened in it and the running totals at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiveRow {
    /// The second, from 1, counted by the tick rather than read from a clock.
    pub second: u64,
    /// Frames presented in this second.
    pub presented_in_second: u64,
    /// Bytes read in this second.
    pub bytes_in_second: u64,
    /// Frames presented since the start.
    pub presented: u64,
    /// Bytes read since the start.
    pub bytes_read: u64,
    /// Frames dropped since the start, by cause.
    pub dropped: Drops,
}

/// One row of the live CSV, with its line break.
///
/// ```
/// use playsim_report::live_csv::{row, LiveRow};
/// let r = LiveRow { second: 1, presented_in_second: 24, bytes_in_second: 1_500_000, presented: 24, bytes_read: 1_500_000, ..Default::default() };
/// assert_eq!(row(&r), "1,24,1.500,24,1500000,0,0,0,0\n");
/// ```
pub fn row(r: &LiveRow) -> String {
    let d = r.dropped;
    format!(
        "{},{},{:.3},{},{},{},{},{},{}\n",
        r.second,
        r.presented_in_second,
        r.bytes_in_second as f64 / 1e6,
        r.presented,
        r.bytes_read,
        d.storage,
        d.decode,
        d.output,
        d.unreadable
    )
}

/// The live CSV of rows already gathered, header first: the `csv` renderer of `[LiveRow]`. A
/// running play writes [`HEADER`] and then each [`row`] as its second ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct LiveCsv;

impl Renderer<[LiveRow]> for LiveCsv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn render(&self, rows: &[LiveRow], out: &mut dyn Write) -> Result<(), RenderError> {
        writeln!(out, "{HEADER}")?;
        for r in rows {
            out.write_all(row(r).as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_the_header_s_columns() {
        let rows = [
            LiveRow {
                second: 1,
                presented_in_second: 24,
                bytes_in_second: 2_000_000,
                presented: 24,
                bytes_read: 2_000_000,
                ..Default::default()
            },
            LiveRow {
                second: 2,
                presented_in_second: 20,
                bytes_in_second: 1_234_567,
                presented: 44,
                bytes_read: 3_234_567,
                dropped: Drops { storage: 1, decode: 2, output: 3, unreadable: 4 },
            },
        ];
        let mut out = Vec::new();
        LiveCsv.render(&rows, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, format!("{HEADER}\n1,24,2.000,24,2000000,0,0,0,0\n2,20,1.235,44,3234567,1,2,3,4\n"));
        for line in text.lines() {
            assert_eq!(line.split(',').count(), HEADER.split(',').count(), "{line}");
        }
    }
}
