//! The result of `playsim matrix` as text (printed), JSON (`--json`) and CSV (`--csv`, a line
//! a cell); the model is [`crate::model::matrix`].

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::model::matrix::*;
use crate::rendering::{RenderError, Renderer};

/// The matrix as a grid: the `text` renderer, which `playsim matrix` prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatrixText;

impl Renderer<Matrix> for MatrixText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, matrix: &Matrix, out: &mut dyn Write) -> Result<(), RenderError> {
        Ok(out.write_all(text(matrix).as_bytes())?)
    }
}

/// The matrix as pretty JSON: the `json` renderer (`matrix --json`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MatrixJson;

impl Renderer<Matrix> for MatrixJson {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["json"]
    }

    fn render(&self, matrix: &Matrix, out: &mut dyn Write) -> Result<(), RenderError> {
        // Through a `Value`, as the capacity result: keys sorted, numbers that are not finite
        // written as `null`.
        let value = serde_json::to_value(matrix).map_err(io::Error::from)?;
        serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?;
        Ok(out.write_all(b"\n")?)
    }
}

/// The matrix as CSV, a line per cell: the `csv` renderer (`matrix --csv`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MatrixCsv;

impl Renderer<Matrix> for MatrixCsv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn render(&self, matrix: &Matrix, out: &mut dyn Write) -> Result<(), RenderError> {
        Ok(out.write_all(csv(matrix).as_bytes())?)
    }
}

/// The CSV's header line.
pub const CSV_HEADER: &str =
    "row,format,size,media,fps,best_streams,max,max_passed,limit,margin_ms,inherited_from,trials";

/// The matrix as CSV: the header, then a line per cell, row by row.
pub fn csv(matrix: &Matrix) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    for row in &matrix.rows {
        for cell in &row.cells {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(&row.name),
                csv_field(&row.format),
                csv_field(&row.size),
                csv_field(&row.media),
                csv_field(&cell.fps),
                cell.best_streams,
                cell.max,
                cell.max_passed(),
                cell.limit.map_or("", MatrixCause::word),
                cell.margin_ms.filter(|m| m.is_finite()).map_or_else(String::new, |m| format!("{m:.3}")),
                cell.inherited_from.as_deref().map_or_else(String::new, csv_field),
                cell.trials.len()
            );
        }
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (a URL's query may).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The matrix as text: a heading, the grid (rows are formats, columns rates), the margins,
/// and what the cells mean, how reads were kept cold and how long it took.
pub fn text(matrix: &Matrix) -> String {
    let yes_no = matrix.yes_no();
    let mut out = String::new();
    let (verb, verbed) = if matrix.write { ("record", "recorded") } else { ("play", "played") };
    let what = if yes_no {
        format!("does one stream {verb} with no drop")
    } else {
        format!(
            "most streams{} with no drop (up to {})",
            if matrix.write { " recorded" } else { "" },
            matrix.max
        )
    };
    let _ = writeln!(
        out,
        "matrix of {}: {what} over {} s, {} trial{} a candidate",
        matrix.location,
        matrix.window_s,
        matrix.trials_per_candidate,
        if matrix.trials_per_candidate == 1 { "" } else { "s" }
    );
    let grid = |label: &dyn Fn(&MatrixCell) -> String| {
        let mut lines: Vec<Vec<String>> = Vec::new();
        let mut head = vec!["format".to_owned(), "size".to_owned()];
        head.extend(matrix.rates.iter().map(|r| format!("{r} fps")));
        lines.push(head);
        for row in &matrix.rows {
            let mut line = vec![row.name.clone(), row.size.clone()];
            line.extend(row.cells.iter().map(label));
            lines.push(line);
        }
        table(&lines)
    };
    out.push_str(&grid(&|cell| cell.label(yes_no)));
    // A recording has no slack to a deadline: a write matrix has no margins.
    if !yes_no && !matrix.write {
        out.push_str("margin, the worst slack at the answer (ms):\n");
        out.push_str(&grid(&|cell| match (cell.inherited_from.as_ref(), cell.margin_ms) {
            (None, Some(m)) if m.is_finite() => format!("{m:.1}"),
            _ => "-".to_owned(),
        }));
    }
    let legend = if yes_no {
        format!("yes: one stream {verbed} with no drop; no (CAUSE): it dropped, mostly for CAUSE")
    } else {
        format!(
            "N (CAUSE): N streams {verbed} with no drop and N+1 dropped, mostly for CAUSE; N+: the maximum {verbed}"
        )
    };
    let _ = writeln!(out, "{legend}");
    if matrix.rows.iter().flat_map(|r| &r.cells).any(|c| c.inherited_from.is_some()) {
        let _ = writeln!(out, "*: not searched: a lower rate already found 0 streams, with that cause");
    }
    let _ = writeln!(out, "{}: {}", if matrix.write { "writes" } else { "cold reads" }, matrix.cold);
    let _ = writeln!(out, "took {:.0} s", matrix.elapsed_s);
    if let Some(why) = &matrix.interrupted {
        let _ = writeln!(out, "{}", interrupted_line(matrix, why));
    }
    out
}

/// What an interrupted matrix says of itself: why it stopped and how much of it was searched.
pub fn interrupted_line(matrix: &Matrix, why: &str) -> String {
    let done: usize = matrix.rows.iter().map(|r| r.cells.len()).sum();
    format!(
        "stopped ({why}) after {done} cell{}: the cells left blank were not searched",
        if done == 1 { "" } else { "s" }
    )
}

/// Columns padded to their widest cell, two spaces apart.
fn table(lines: &[Vec<String>]) -> String {
    let n_columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n_columns)
        .map(|c| lines.iter().filter_map(|l| l.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for line in lines {
        let mut text = String::new();
        for (c, cell) in line.iter().enumerate() {
            if c > 0 {
                text.push_str("  ");
            }
            let _ = write!(text, "{cell:<width$}", width = widths[c]);
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::model::capacity::Trial;
    use crate::model::{DropCauseName, Drops};
    use crate::rendering::Renderers;

    fn cell(fps: &str, best: u32, limit: Option<DropCauseName>, inherited: Option<&str>) -> MatrixCell {
        let trials = if inherited.is_some() {
            Vec::new()
        } else {
            vec![Trial::new(1, Drops { decode: u64::from(best == 0), ..Drops::default() }, 120, 12.5, 80.0)]
        };
        MatrixCell {
            fps: fps.into(),
            best_streams: best,
            limit: limit.map(Into::into),
            max: 4,
            margin_ms: (best > 0).then_some(12.5),
            inherited_from: inherited.map(str::to_owned),
            trials,
            write_trials: Vec::new(),
        }
    }

    pub(crate) fn sample() -> Matrix {
        use DropCauseName::{Decode, Storage};
        Matrix {
            location: "sim://lan?bw=1Gbit".into(),
            rates: vec!["24".into(), "48".into()],
            window_s: 1.0,
            trials_per_candidate: 1,
            max: 4,
            cold: "each trial's frames dropped from the page cache before it".into(),
            elapsed_s: 12.3,
            rows: vec![
                MatrixRow {
                    name: "dpx:256x144".into(),
                    format: "dpx".into(),
                    size: "256x144".into(),
                    media: "sim://lan?format=dpx&preset=256x144".into(),
                    frames: Some(48),
                    loops: false,
                    cells: vec![cell("24", 4, None, None), cell("48", 2, Some(Storage), None)],
                },
                MatrixRow {
                    name: "exr:512x288".into(),
                    format: "exr".into(),
                    size: "512x288".into(),
                    media: "sim://lan?format=exr,a".into(),
                    frames: None,
                    loops: true,
                    cells: vec![cell("24", 0, Some(Decode), None), cell("48", 0, Some(Decode), Some("24"))],
                },
            ],
            ..Matrix::new("0.1.0")
        }
    }

    #[test]
    fn the_text_is_a_grid_of_answers_with_causes_and_margins() {
        let text = text(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "matrix of sim://lan?bw=1Gbit: most streams with no drop (up to 4) over 1 s, 1 trial a candidate"
        );
        assert_eq!(lines[1], "format       size     24 fps      48 fps");
        assert_eq!(lines[2], "dpx:256x144  256x144  4+          2 (storage)");
        assert_eq!(lines[3], "exr:512x288  512x288  0 (decode)  0 (decode)*");
        assert_eq!(lines[4], "margin, the worst slack at the answer (ms):");
        assert_eq!(lines[6], "dpx:256x144  256x144  12.5    12.5");
        assert_eq!(lines[7], "exr:512x288  512x288  -       -");
        assert!(text.contains("\n*: not searched"), "{text}");
        assert!(text.contains("cold reads: each trial's frames dropped"), "{text}");
        assert!(text.ends_with("took 12 s\n"), "{text}");
    }

    #[test]
    fn a_stopped_matrix_says_so_and_leaves_the_cells_not_searched_blank() {
        let mut matrix = sample();
        matrix.rows.truncate(1);
        matrix.rows[0].cells.truncate(1);
        matrix.interrupted = Some("interrupted".into());
        let text = text(&matrix);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "format       size     24 fps  48 fps");
        assert_eq!(lines[2], "dpx:256x144  256x144  4+");
        assert!(
            text.ends_with("stopped (interrupted) after 1 cell: the cells left blank were not searched\n"),
            "{text}"
        );
        assert_eq!(csv(&matrix).lines().count(), 2);
        let value = serde_json::to_value(&matrix).expect("json");
        assert_eq!(value["interrupted"], "interrupted");
        let whole = serde_json::to_value(sample()).expect("json");
        assert!(whole.get("interrupted").is_none(), "left out when the matrix is whole");
    }

    #[test]
    fn one_stream_at_most_is_a_yes_no_table() {
        let mut matrix = sample();
        matrix.max = 1;
        for cell in &mut matrix.rows[0].cells {
            (cell.best_streams, cell.limit, cell.max) = (1, None, 1);
        }
        let text = text(&matrix);
        assert!(text.contains("does one stream play with no drop over 1 s"), "{text}");
        assert!(text.contains("dpx:256x144  256x144  yes          yes\n"), "{text}");
        assert!(text.contains("exr:512x288  512x288  no (decode)  no (decode)*\n"), "{text}");
        assert!(!text.contains("margin"), "{text}");
    }

    #[test]
    fn the_csv_has_a_line_per_cell_with_urls_quoted() {
        let csv = csv(&sample());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(
            lines[1],
            "dpx:256x144,dpx,256x144,sim://lan?format=dpx&preset=256x144,24,4,4,true,,12.500,,1"
        );
        assert_eq!(
            lines[2],
            "dpx:256x144,dpx,256x144,sim://lan?format=dpx&preset=256x144,48,2,4,false,storage,12.500,,1"
        );
        assert_eq!(lines[4], "exr:512x288,exr,512x288,\"sim://lan?format=exr,a\",48,0,4,false,decode,,24,0");
    }

    #[test]
    fn the_json_reads_back_and_has_its_version() {
        let matrix = sample();
        let mut out = Vec::new();
        MatrixJson.render(&matrix, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["playsim_matrix"], 1);
        assert_eq!(value["rows"][1]["cells"][1]["inherited_from"], "24");
        assert!(value["rows"][0]["cells"][0].get("inherited_from").is_none());
        assert_eq!(value["rows"][0]["cells"][1]["limit"], "storage");
        assert!(value["rows"][0]["cells"][0]["limit"].is_null());
        assert_eq!(from_str(&text).unwrap(), matrix);
    }

    #[test]
    fn each_renderer_is_registered_and_found_by_extension() {
        let renderers = Renderers::matrix();
        let matrix = sample();
        for (path, expected) in [("m.txt", text(&matrix)), ("m.csv", csv(&matrix))] {
            let mut out = Vec::new();
            renderers.for_path(path.as_ref()).unwrap().render(&matrix, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
        assert_eq!(renderers.for_path("m.json".as_ref()).unwrap().name(), "json");
    }
}
