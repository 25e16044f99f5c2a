//! The matrix as a picture (`playsim matrix LOCATION --plot grid.svg` or `.png`): a grid of
//! coloured cells, a row per format and a column per rate, as the text's grid is.
//!
//! Each cell shows its answer (the most streams that played with no drop, `4+` when the
//! maximum passed; with a maximum of one stream, ✓ or ✗), the cause that limited it and the
//! margin (the worst slack at the answer). Its colour says the cause, in the colours the
//! run's plot marks drops with ([`crate::format::plot`]): storage red, decode orange, output brown,
//! unreadable black. A cell whose maximum passed is green; a cell whose lowered maximum (the
//! rate below's answer) passed, and which keeps the rate below's limit, is a lighter shade of
//! that cause; a cell not searched (a lower rate already found 0) is grey. The title says
//! where the media was read from and how reads were kept cold; a legend says what the colours
//! mean.
//!
//! The grid is drawn by hand as SVG (it is cells and text, with nothing for a chart library to
//! do); a PNG is that SVG rendered by resvg, with the fonts and the refusal of [`crate::format::plot`].
//! The HTML page of a matrix ([`crate::format::html`]) shows the same SVG.

use std::fmt::Write as _;
use std::path::Path;

use plotters::style::RGBColor;

use crate::format::plot::{cause_colour, svg_bytes, Fonts, PlotError, PlotFormat};
use crate::format::record_plot::record_cause_colour;
use crate::model::matrix::{CellState, Matrix, MatrixCause, MatrixCell};
use crate::model::record::RecordCause;
use crate::model::DropCauseName;
use crate::rendering::{escape, hex, RenderError, Renderer};

/// Draws the matrix's grid to `path`: SVG or PNG by the extension, PNG text in the system's
/// fonts.
pub fn write(matrix: &Matrix, path: &Path) -> Result<(), PlotError> {
    write_with_fonts(matrix, path, &Fonts::system())
}

/// Draws the matrix's grid to `path`, a PNG's text in `fonts`.
pub fn write_with_fonts(matrix: &Matrix, path: &Path, fonts: &Fonts) -> Result<(), PlotError> {
    let format = PlotFormat::of_path(path)?;
    let fail = |reason: String| PlotError::new(path, reason);
    let bytes = svg_bytes(format, svg(matrix), fonts).map_err(fail)?;
    crate::format::json::write_bytes_atomic(&bytes, path).map_err(|e| fail(e.to_string()))
}

/// The matrix's grid in one format: the `svg` and `png` renderers of a matrix.
#[derive(Clone, Debug)]
pub struct MatrixPlot {
    format: PlotFormat,
    fonts: Fonts,
}

impl MatrixPlot {
    /// The grid as SVG.
    pub fn svg() -> MatrixPlot {
        MatrixPlot { format: PlotFormat::Svg, fonts: Fonts::system() }
    }

    /// The grid as PNG, its text in the system's fonts.
    pub fn png() -> MatrixPlot {
        MatrixPlot::png_with_fonts(Fonts::system())
    }

    /// The grid as PNG, its text in `fonts`.
    pub fn png_with_fonts(fonts: Fonts) -> MatrixPlot {
        MatrixPlot { format: PlotFormat::Png, fonts }
    }
}

impl Renderer<Matrix> for MatrixPlot {
    fn name(&self) -> &'static str {
        self.format.name()
    }

    fn extensions(&self) -> &'static [&'static str] {
        self.format.extensions()
    }

    fn render(&self, matrix: &Matrix, out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        let bytes = svg_bytes(self.format, svg(matrix), &self.fonts).map_err(RenderError::Draw)?;
        Ok(out.write_all(&bytes)?)
    }

    fn failure(&self, path: &Path, reason: &dyn std::fmt::Display) -> String {
        PlotError::new(path, reason.to_string()).to_string()
    }
}

impl CellState {
    /// The cell's fill.
    pub(crate) fn fill(self) -> RGBColor {
        match self {
            CellState::MaxPassed => PASSED,
            CellState::Limited(cause) => colour(cause),
            CellState::Carried(cause) => lighter(colour(cause)),
            CellState::NotSearched(_) => NOT_SEARCHED,
        }
    }

    /// The colour of the text on the fill: white on the dark fills, near-black on the light.
    pub(crate) fn ink(self) -> RGBColor {
        let RGBColor(r, g, b) = self.fill();
        // Relative luminance, roughly: white text reads on the dark fills (storage red, output
        // brown, black, green); the orange of decode takes dark text.
        let luma = 0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b);
        if luma < 140.0 {
            RGBColor(255, 255, 255)
        } else {
            RGBColor(33, 33, 33)
        }
    }
}

/// The cell's answer as the grid shows it: `4+` (its maximum passed), `2`, `0`, or with a
/// maximum of one stream, ✓ or ✗.
pub(crate) fn answer(matrix: &Matrix, cell: &MatrixCell) -> String {
    if matrix.yes_no() {
        return if cell.best_streams >= 1 { YES } else { NO }.to_owned();
    }
    match CellState::of(matrix, cell) {
        CellState::MaxPassed => format!("{}+", cell.best_streams),
        _ => cell.best_streams.to_string(),
    }
}

/// The mark of a yes/no matrix's cell that played.
pub(crate) const YES: &str = "✓";
/// The mark of a yes/no matrix's cell that dropped.
pub(crate) const NO: &str = "✗";

/// A cell whose maximum passed.
pub(crate) const PASSED: RGBColor = RGBColor(46, 125, 50);
/// A cell not searched.
pub(crate) const NOT_SEARCHED: RGBColor = RGBColor(224, 224, 224);

/// `colour` mixed with white, for a limit carried from the rate below.
pub(crate) fn lighter(RGBColor(r, g, b): RGBColor) -> RGBColor {
    let mix = |c: u8| (f64::from(c) * 0.4 + 255.0 * 0.6).round() as u8;
    RGBColor(mix(r), mix(g), mix(b))
}

/// A write matrix's causes in the order the legend lists them.
pub(crate) const WRITE_CAUSES: [(MatrixCause, &str); 3] = [
    (MatrixCause::Storage, "storage (write, sync, publish; or a failed write)"),
    (MatrixCause::Encode, "encode"),
    (MatrixCause::Input, "input (the source)"),
];

/// A cause's colour: a playback cause's as the plots draw it, a record cause's as the record
/// plot does.
pub(crate) fn colour(cause: MatrixCause) -> RGBColor {
    match cause {
        MatrixCause::Storage => cause_colour(DropCauseName::Storage),
        MatrixCause::Decode => cause_colour(DropCauseName::Decode),
        MatrixCause::Output => cause_colour(DropCauseName::Output),
        MatrixCause::Unreadable => cause_colour(DropCauseName::Unreadable),
        MatrixCause::Encode => record_cause_colour(RecordCause::Encode),
        MatrixCause::Input => record_cause_colour(RecordCause::Input),
    }
}

const MARGIN: f64 = 24.0;
const CELL_W: f64 = 170.0;
const CELL_H: f64 = 84.0;
const GAP: f64 = 6.0;
const HEADER_H: f64 = 34.0;
const MIN_WIDTH: f64 = 860.0;
const FONT: &str = "sans-serif";
const INK: &str = "#212121";
const MUTED: &str = "#555555";

/// The grid as SVG text: a title (the location, what was searched and how reads were kept
/// cold), a header of rates, a row per format, and a legend.
pub fn svg(matrix: &Matrix) -> String {
    let n_columns = matrix.rows.iter().map(|r| r.cells.len()).chain([matrix.rates.len()]).max().unwrap_or(0);
    let label_w = matrix
        .rows
        .iter()
        .flat_map(|r| [text_width(&r.name, 15.0), text_width(&row_detail(r), 12.0)])
        .fold(text_width("format", 14.0), f64::max)
        + 20.0;
    let grid_x = MARGIN + label_w;
    let width = (grid_x + n_columns as f64 * (CELL_W + GAP) + MARGIN - GAP).max(MIN_WIDTH).ceil();

    let (question, verb) =
        if matrix.write { ("Will it record?", "record") } else { ("Will it play?", "play") };
    let mut title_lines = vec![(format!("{question} {}", matrix.location), 20.0, true)];
    let what = if matrix.yes_no() {
        format!("does one stream {verb} with no drop")
    } else {
        format!(
            "most streams{} with no drop (up to {})",
            if matrix.write { " recorded" } else { "" },
            matrix.max
        )
    };
    let trials = matrix.trials_per_candidate;
    title_lines.push((
        format!(
            "{what}, over {} s a trial, {trials} trial{} a candidate; playsim {}",
            matrix.window_s,
            if trials == 1 { "" } else { "s" },
            matrix.playsim_version
        ),
        14.0,
        false,
    ));
    let how = if matrix.write { "writes" } else { "cold reads" };
    for line in wrap(&format!("{how}: {}", matrix.cold), chars_that_fit(width - 2.0 * MARGIN, 14.0)) {
        title_lines.push((line, 14.0, false));
    }
    if let Some(why) = &matrix.interrupted {
        title_lines.push((crate::format::matrix::interrupted_line(matrix, why), 14.0, true));
    }

    let mut body = String::new();
    let mut y = MARGIN;
    for (line, size, bold) in &title_lines {
        y += size * 1.45;
        text(&mut body, MARGIN, y, *size, if *bold { "bold" } else { "normal" }, INK, "start", line);
    }

    // The header: the rates over their columns.
    y += 18.0;
    let header_y = y;
    text(&mut body, MARGIN, header_y + 22.0, 14.0, "bold", MUTED, "start", "format");
    for column in 0..n_columns {
        let rate = matrix
            .rates
            .get(column)
            .cloned()
            .or_else(|| matrix.rows.iter().find_map(|r| r.cells.get(column)).map(|c| c.fps.clone()));
        let x = grid_x + column as f64 * (CELL_W + GAP) + CELL_W / 2.0;
        let label = format!("{} fps", rate.unwrap_or_default());
        text(&mut body, x, header_y + 22.0, 15.0, "bold", INK, "middle", &label);
    }
    y += HEADER_H;

    for row in &matrix.rows {
        text(&mut body, MARGIN, y + CELL_H / 2.0 - 2.0, 15.0, "bold", INK, "start", &row.name);
        text(&mut body, MARGIN, y + CELL_H / 2.0 + 16.0, 12.0, "normal", MUTED, "start", &row_detail(row));
        for (column, cell) in row.cells.iter().enumerate() {
            draw_cell(&mut body, matrix, cell, grid_x + column as f64 * (CELL_W + GAP), y);
        }
        y += CELL_H + GAP;
    }
    if matrix.rows.is_empty() {
        y += 24.0;
        text(&mut body, MARGIN, y, 14.0, "normal", MUTED, "start", "no formats were searched");
        y += 12.0;
    }

    y = legend(&mut body, matrix, y + 14.0, width);
    let footer = format!("took {:.0} s (media generation not included)", matrix.elapsed_s);
    y += 22.0;
    text(&mut body, MARGIN, y, 12.0, "normal", MUTED, "start", &footer);
    let height = (y + MARGIN).ceil();

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{FONT}">"#
    );
    let _ = writeln!(out, r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>"##);
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// `dpx 256x144, 48 frames, loops`: what the row played, under its name.
fn row_detail(row: &crate::model::matrix::MatrixRow) -> String {
    let mut detail = format!("{} {}", row.format, row.size);
    if let Some(frames) = row.frames {
        let _ = write!(detail, ", {frames} frames");
    }
    if row.loops {
        detail.push_str(", loops");
    }
    detail
}

/// One cell: its fill, its answer large, its cause and its margin under it.
fn draw_cell(out: &mut String, matrix: &Matrix, cell: &MatrixCell, x: f64, y: f64) {
    let state = CellState::of(matrix, cell);
    let ink = hex(state.ink());
    let _ = writeln!(
        out,
        r#"<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" rx="6" fill="{}"/>"#,
        hex(state.fill())
    );
    if let CellState::NotSearched(Some(cause)) = state {
        // A stripe of the cause the lower rate found, on the grey.
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{y}" width="7" height="{CELL_H}" rx="3" fill="{}"/>"#,
            hex(colour(cause))
        );
    }
    let middle = x + CELL_W / 2.0;
    text(out, middle, y + 33.0, 26.0, "bold", &ink, "middle", &answer(matrix, cell));
    let cause = cell.limit.map_or("", MatrixCause::word);
    let second = match state {
        CellState::MaxPassed if matrix.yes_no() && matrix.write => "records with no drop".to_owned(),
        CellState::MaxPassed if matrix.yes_no() => "plays with no drop".to_owned(),
        CellState::MaxPassed => "maximum passed".to_owned(),
        CellState::Limited(_) => format!("limit: {cause}"),
        CellState::Carried(_) => format!("limit: {cause} (carried)"),
        CellState::NotSearched(_) if cause.is_empty() => "not searched".to_owned(),
        CellState::NotSearched(_) => format!("not searched: {cause}"),
    };
    let room = CELL_W - 14.0;
    text(out, middle, y + 55.0, fit(&second, 13.0, room), "normal", &ink, "middle", &second);
    let third = match (state, cell.margin_ms) {
        (CellState::NotSearched(_), _) => {
            format!("as at {} fps", cell.inherited_from.as_deref().unwrap_or("-"))
        }
        (_, Some(margin)) if margin.is_finite() => format!("margin {margin:.1} ms"),
        _ => String::new(),
    };
    if !third.is_empty() {
        text(out, middle, y + 73.0, fit(&third, 12.0, room), "normal", &ink, "middle", &third);
    }
}

/// A font size at most `size` at which `text` fits in `width` (a long rate or cause would
/// otherwise run out of its cell).
fn fit(text: &str, size: f64, width: f64) -> f64 {
    let wide = text_width(text, size);
    if wide <= width {
        size
    } else {
        (size * width / wide).max(8.0).floor()
    }
}

/// The legend: what an answer means, then a swatch per colour, wrapped to the width. Gives
/// the y of its last line.
fn legend(out: &mut String, matrix: &Matrix, mut y: f64, width: f64) -> f64 {
    let verbed = if matrix.write { "recorded" } else { "played" };
    let explain = if matrix.yes_no() {
        format!("✓: one stream {verbed} with no drop; ✗: it dropped, mostly for the cause its colour says")
    } else {
        format!(
            "N: N streams {verbed} with no drop and N+1 dropped, mostly for the cause its colour says; N+: the \
             maximum {verbed}"
        )
    };
    for line in wrap(&explain, chars_that_fit(width - 2.0 * MARGIN, 13.0)) {
        y += 19.0;
        text(out, MARGIN, y, 13.0, "normal", INK, "start", &line);
    }
    let cells = || matrix.rows.iter().flat_map(|r| &r.cells);
    let states: Vec<CellState> = cells().map(|c| CellState::of(matrix, c)).collect();
    let mut entries: Vec<(RGBColor, String)> =
        vec![(PASSED, if matrix.yes_no() { "plays (✓)" } else { "maximum passed (N+)" }.to_owned())];
    if matrix.write {
        entries.extend(WRITE_CAUSES.iter().map(|&(cause, words)| (colour(cause), words.to_owned())));
    } else {
        entries.extend(DropCauseName::ALL.map(|cause| (cause_colour(cause), cause.label().to_owned())));
    }
    if let Some(CellState::Carried(cause)) = states.iter().find(|s| matches!(s, CellState::Carried(_))) {
        entries.push((
            lighter(colour(*cause)),
            "lighter: its maximum (the rate below's answer) passed; the limit is the rate below's".to_owned(),
        ));
    }
    if states.iter().any(|s| matches!(s, CellState::NotSearched(_))) {
        entries.push((NOT_SEARCHED, "not searched: a lower rate already found 0".to_owned()));
    }
    y += 12.0;
    let mut x = MARGIN;
    for (colour, label) in entries {
        let entry_w = 22.0 + text_width(&label, 13.0) + 22.0;
        if x > MARGIN && x + entry_w > width - MARGIN {
            x = MARGIN;
            y += 24.0;
        }
        let _ = writeln!(
            out,
            r##"<rect x="{x}" y="{}" width="16" height="16" rx="3" fill="{}" stroke="#9e9e9e" stroke-width="0.5"/>"##,
            y,
            hex(colour)
        );
        text(out, x + 22.0, y + 13.0, 13.0, "normal", INK, "start", &label);
        x += entry_w;
    }
    y + 16.0
}

/// A `<text>` element, its content escaped.
#[allow(clippy::too_many_arguments)]
fn text(out: &mut String, x: f64, y: f64, size: f64, weight: &str, fill: &str, anchor: &str, content: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{x}" y="{y}" font-size="{size}" font-weight="{weight}" fill="{fill}" text-anchor="{anchor}">{}</text>"#,
        escape(content)
    );
}

/// About how wide `text` is in the sans-serif font at `size` (DejaVu Sans averages a little
/// over half an em a character).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// How many characters of the font at `size` fit in `width`.
fn chars_that_fit(width: f64, size: f64) -> usize {
    ((width / (size * 0.58)) as usize).max(20)
}

/// `text` in lines of at most `max` characters, broken at spaces (a word longer than a line,
/// a URL, is broken where it must be).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let room = if used == 0 { max } else { max.saturating_sub(used + 1) };
            if word.len() <= room {
                if used > 0 {
                    line.push(' ');
                }
                line.extend(&word);
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            let rest = word.split_off(max.min(word.len()));
            lines.push(word.into_iter().collect());
            word = rest;
            if word.is_empty() {
                break;
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::format::matrix::tests::sample;
    use crate::format::plot::tests::{dark_pixels, png_size};
    use crate::rendering::Renderers;

    #[test]
    fn every_cell_shows_its_answer_cause_and_margin_in_its_cause_colour() {
        let svg = svg(&sample());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
        for text in [
            "Will it play? sim://lan?bw=1Gbit",
            "most streams with no drop (up to 4)",
            "cold reads: each trial&#39;s frames dropped from the page cache before it",
            ">24 fps<",
            ">48 fps<",
            ">4+<",
            ">maximum passed<",
            ">limit: storage (carried)<",
            ">limit: decode<",
            ">margin 12.5 ms<",
            ">not searched: decode<",
            ">as at 24 fps<",
            "dpx 256x144, 48 frames",
            "exr 512x288, loops",
        ] {
            assert!(svg.contains(text), "no `{text}` in\n{svg}");
        }
        for (colour, what) in [
            (PASSED, "passed"),
            (cause_colour(DropCauseName::Storage), "storage"),
            (cause_colour(DropCauseName::Decode), "decode"),
            (NOT_SEARCHED, "not searched"),
        ] {
            assert!(svg.contains(&format!("fill=\"{}\"", hex(colour))), "no {what} fill");
        }
        // The legend names every cause in Flame's words.
        for words in DropCauseName::ALL.map(DropCauseName::label) {
            assert!(svg.contains(words), "no `{words}` in the legend");
        }
    }

    #[test]
    fn states_tell_passed_limited_carried_and_not_searched_apart() {
        let mut matrix = sample();
        let states = |m: &Matrix| -> Vec<CellState> {
            m.rows.iter().flat_map(|r| &r.cells).map(|c| CellState::of(m, c)).collect()
        };
        use MatrixCause::{Decode, Storage};
        assert_eq!(
            states(&matrix),
            [
                CellState::MaxPassed,
                CellState::Carried(Storage),
                CellState::Limited(Decode),
                CellState::NotSearched(Some(Decode)),
            ]
        );
        // A cell whose own search failed is limited by what it found.
        matrix.rows[0].cells[1].trials[0].passed = false;
        assert_eq!(states(&matrix)[1], CellState::Limited(Storage));
        assert_eq!(answer(&matrix, &matrix.rows[0].cells[0]), "4+");
        assert_eq!(answer(&matrix, &matrix.rows[0].cells[1]), "2");
        assert!(svg(&matrix).contains(&format!("fill=\"{}\"", hex(colour(Storage)))));
        assert_eq!(CellState::Limited(Storage).ink(), RGBColor(255, 255, 255));
        assert_eq!(CellState::NotSearched(None).ink(), RGBColor(33, 33, 33));
    }

    #[test]
    fn a_yes_no_matrix_shows_ticks_and_crosses() {
        let mut matrix = sample();
        matrix.max = 1;
        for cell in &mut matrix.rows[0].cells {
            (cell.best_streams, cell.limit, cell.max) = (1, None, 1);
        }
        let svg = svg(&matrix);
        assert!(svg.contains("does one stream play with no drop"), "{svg}");
        assert_eq!(svg.matches(">✓<").count(), 2, "{svg}");
        assert_eq!(svg.matches(">✗<").count(), 2, "{svg}");
    }

    #[test]
    fn names_from_the_model_are_escaped_and_nothing_empty_panics() {
        let mut matrix = sample();
        matrix.location = "/mnt/<script>&".into();
        matrix.rows[0].name = "a\"b<c>".into();
        let svg = svg(&matrix);
        assert!(svg.contains("/mnt/&lt;script&gt;&amp;") && svg.contains("a&quot;b&lt;c&gt;"), "{svg}");
        assert!(!svg.contains("<script>"));
        let empty = super::svg(&Matrix::new("0.1.0"));
        assert!(empty.contains("no formats were searched"), "{empty}");
    }

    #[test]
    fn long_text_wraps_at_spaces_and_breaks_long_words() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
    }

    #[test]
    fn the_grid_is_registered_as_svg_and_png_and_the_png_has_its_text() {
        let renderers = Renderers::matrix();
        let matrix = sample();
        let mut out = Vec::new();
        renderers.for_path("grid.svg".as_ref()).unwrap().render(&matrix, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), svg(&matrix));
        let png = renderers.for_path("grid.PNG".as_ref()).unwrap();
        assert_eq!(png.name(), "png");
        let mut bytes = Vec::new();
        png.render(&matrix, &mut bytes).unwrap();
        let (width, height) = png_size(&bytes);
        assert!(width >= MIN_WIDTH as u32 && height > 300, "{width}x{height}");
        // The title is dark text on white in the top rows.
        assert!(dark_pixels(&bytes, 36..56) > 200, "no title drawn in the png");

        let dir = tempfile::tempdir().unwrap();
        let no_fonts = tempfile::tempdir().unwrap();
        let path = dir.path().join("grid.png");
        let err = write_with_fonts(&matrix, &path, &Fonts::dir(no_fonts.path())).unwrap_err().to_string();
        assert!(err.contains("apt-get install fonts-dejavu-core"), "{err}");
        write(&matrix, &dir.path().join("grid.svg")).unwrap();
        assert!(write(&matrix, &dir.path().join("grid.jpg")).is_err());
    }
}
