//! The per-frame timeline as CSV (`--csv FILE`): one row per frame per stream, for
//! spreadsheets and scripts.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use crate::model::{DropCauseName, Report, StreamReport};
use crate::rendering::{RenderError, Renderer};

/// The header row. Times are milliseconds from the start of the run; a stage the frame never
/// reached is empty. `client` is the rank of the client that played the stream in a merged
/// report of several clients, and empty otherwise.
pub const HEADER: &str =
    "stream,frame,frame_idx,due_ms,read_start_ms,read_done_ms,decode_done_ms,output_done_ms,\
presented_ms,cause,bytes,transport,client";

/// The timeline of every stream of `report`, header first.
///
/// ```
/// let report = playsim_report::Report::default();
/// assert_eq!(playsim_report::csv::timeline(&report), format!("{}\n", playsim_report::csv::HEADER));
/// ```
pub fn timeline(report: &Report) -> String {
    let mut out =
        String::with_capacity(64 + 96 * report.streams.iter().map(|s| s.timeline.len()).sum::<usize>());
    out.push_str(HEADER);
    out.push('\n');
    for stream in &report.streams {
        let transport = field(&transport(stream));
        let name = field(&stream.name);
        let client = stream.client.map(|k| k.to_string()).unwrap_or_default();
        for f in &stream.timeline {
            let cause = f.cause.map_or("", DropCauseName::word);
            let _ = writeln!(
                out,
                "{name},{},{},{},{},{},{},{},{},{cause},{},{transport},{client}",
                f.frame_number,
                f.frame_idx,
                ms(Some(f.due_ns)),
                ms(f.read_start_ns),
                ms(f.read_done_ns),
                ms(f.decode_done_ns),
                ms(f.output_done_ns),
                ms(f.presented_ns),
                f.bytes
            );
        }
    }
    out
}

/// Writes [`timeline`] to `path` atomically (a temporary file and a rename).
pub fn write_timeline_atomic(report: &Report, path: &Path) -> io::Result<()> {
    Ok(crate::rendering::write_atomic(&TimelineCsv, report, path)?)
}

/// The per-frame timeline ([`timeline`]'s text): the `csv` renderer.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimelineCsv;

impl Renderer<Report> for TimelineCsv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn render(&self, report: &Report, out: &mut dyn Write) -> Result<(), RenderError> {
        Ok(out.write_all(timeline(report).as_bytes())?)
    }

    fn failure(&self, path: &Path, reason: &dyn std::fmt::Display) -> String {
        format!("writing csv {}: {reason}", path.display())
    }
}

/// The stream's transport, with the mount's label when it read through a kernel mount.
fn transport(stream: &StreamReport) -> String {
    match &stream.storage.mount {
        Some(mount) => format!("{} ({})", stream.storage.transport, mount.transport),
        None => stream.storage.transport.clone(),
    }
}

fn ms(ns: Option<u64>) -> String {
    ns.map_or_else(String::new, |ns| format!("{:.3}", ns as f64 / 1e6))
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::sample_report;

    #[test]
    fn one_row_per_frame_with_empty_cells_for_stages_not_reached() {
        let report = sample_report();
        let text = timeline(&report);
        let rows: Vec<&str> = text.lines().collect();
        let n_frames: usize = report.streams.iter().map(|s| s.timeline.len()).sum();
        assert_eq!(rows.len(), 1 + n_frames);
        assert!(n_frames > 0, "the sample report has a timeline");
        let columns = HEADER.split(',').count();
        for row in &rows {
            assert_eq!(row.split(',').count(), columns, "{row}");
        }
        let dropped = report.streams[0].timeline.iter().position(|f| f.cause.is_some());
        if let Some(i) = dropped {
            let row = rows[1 + i];
            assert!(row.split(',').nth(8) == Some(""), "a dropped frame has no presented time: {row}");
        }
    }

    #[test]
    fn a_merged_report_names_the_client_of_every_frame() {
        let report = crate::testutil::merged_sample();
        let text = timeline(&report);
        assert!(HEADER.ends_with(",transport,client"));
        let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|r| r.split(',').collect()).collect();
        assert_eq!(rows.len(), report.streams.iter().map(|s| s.timeline.len()).sum::<usize>());
        let last = HEADER.split(',').count() - 1;
        for row in &rows {
            assert_eq!(row.len(), last + 1, "{row:?}");
            let client = row[0].strip_prefix("client ").and_then(|n| n.split('/').next());
            assert_eq!(Some(row[last]), client, "{row:?}");
        }
        // Client 1 dropped its frame 1 for storage, 2 s into rank 0's time line plus its own 241.7 ms.
        let dropped = rows.iter().find(|r| r[last] == "1" && r[9] == "storage").unwrap();
        assert_eq!(dropped[3], "2241.667");
        // A single run's rows end with an empty client.
        assert!(timeline(&sample_report()).lines().skip(1).all(|r| r.ends_with(",nfs,")));
    }

    #[test]
    fn fields_with_commas_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("plain"), "plain");
    }
}
