//! The pieces every page is built of: the document around a page's sections, its one style
//! sheet, escaping, tables, and [`Doc`], through which every figure read from the model's JSON
//! is written with its `data-json` pointer and `data-value`.

use std::fmt::Write as _;

use serde_json::Value;

use crate::format::plot::cause_colour;
use crate::model::matrix::CellState;
use crate::model::matrix::MatrixCause;
use crate::model::DropCauseName;
use crate::rendering::hex;
use crate::rendering::RenderError;

/// A page being written: its kind (`data-model` on its body), title, heading and sections.
pub(crate) struct Page {
    kind: &'static str,
    title: String,
    header: String,
    body: String,
    footer: String,
}

impl Page {
    /// A page of `kind` whose `<title>` and `<h1>` are `title`, with `subtitle` (HTML) under
    /// the heading.
    pub(crate) fn new(kind: &'static str, title: &str, subtitle: &str) -> Page {
        let mut header = format!("<h1>{}</h1>\n", escape(title));
        if !subtitle.is_empty() {
            let _ = writeln!(header, "<p class=\"sub\">{subtitle}</p>");
        }
        Page { kind, title: title.to_owned(), header, body: String::new(), footer: String::new() }
    }

    /// Adds HTML to the page's main part.
    pub(crate) fn push(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// Adds a section: a heading and its HTML.
    pub(crate) fn section(&mut self, heading: &str, html: &str) {
        let _ = write!(self.body, "<section>\n<h2>{}</h2>\n{html}</section>\n", escape(heading));
    }

    /// Sets the footer's line (HTML).
    pub(crate) fn footer(&mut self, html: &str) {
        self.footer = html.to_owned();
    }

    /// The whole document.
    pub(crate) fn finish(self) -> String {
        let mut out = String::with_capacity(self.body.len() + STYLE.len() + 4096);
        out.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        let _ = writeln!(out, "<meta name=\"generator\" content=\"playsim {}\">", env!("CARGO_PKG_VERSION"));
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(out, "<style>\n{STYLE}{}</style>", colour_rules());
        out.push_str("</head>\n");
        let _ = writeln!(out, "<body data-model=\"{}\">", self.kind);
        let _ = write!(out, "<header>\n{}</header>\n<main>\n{}</main>\n", self.header, self.body);
        let _ = writeln!(out, "<footer>\n<p>{}</p>\n</footer>", self.footer);
        out.push_str("</body>\n</html>\n");
        out
    }
}

/// The model's JSON form, from which every figure a page shows of it is read: the figure's
/// element carries the pointer and the raw value, and its text is formatted from that same
/// value, so that the two cannot disagree.
#[derive(Clone, Copy)]
pub(crate) struct Doc<'a> {
    root: &'a Value,
    /// Prefixed to every pointer: `/2` for the third run of a comparison.
    base: &'a str,
}

impl<'a> Doc<'a> {
    /// The figures of `root`, pointed to from its top.
    pub(crate) fn new(root: &'a Value) -> Doc<'a> {
        Doc { root, base: "" }
    }

    /// The figures of `root`, pointed to under `base` (a pointer to where `root` sits in a
    /// larger document).
    pub(crate) fn under(root: &'a Value, base: &'a str) -> Doc<'a> {
        Doc { root, base }
    }

    /// The value at `pointer` (relative to the document), when there is one.
    pub(crate) fn get(&self, pointer: &str) -> Option<&'a Value> {
        self.root.pointer(pointer)
    }

    /// The number at `pointer`, when there is one.
    pub(crate) fn f64(&self, pointer: &str) -> Option<f64> {
        self.get(pointer).and_then(Value::as_f64)
    }

    /// The whole number at `pointer`, or 0.
    pub(crate) fn u64(&self, pointer: &str) -> u64 {
        self.get(pointer).and_then(Value::as_u64).unwrap_or(0)
    }

    /// The attributes of the figure at `pointer`: ` data-json="..." data-value="..."`. A
    /// pointer that names nothing is a mistake of this module (the document is the model's
    /// own JSON), so it is caught by the tests and gives no attributes otherwise.
    pub(crate) fn attrs(&self, pointer: &str) -> String {
        match self.get(pointer) {
            Some(value) => format!(
                " data-json=\"{}{}\" data-value=\"{}\"",
                escape(self.base),
                escape(pointer),
                escape(&value.to_string())
            ),
            None => {
                debug_assert!(false, "no {pointer} in the model's JSON");
                String::new()
            }
        }
    }

    /// The figure at `pointer` as text: a number to `decimals` places (a whole number as it
    /// is), a string as it is, null as `-`.
    pub(crate) fn text(&self, pointer: &str, decimals: usize) -> String {
        self.get(pointer).map_or_else(|| "-".to_owned(), |v| show(v, 1.0, decimals))
    }

    /// The figure at `pointer` in a `<span>` with its attributes.
    pub(crate) fn span(&self, pointer: &str, decimals: usize) -> String {
        format!("<span{}>{}</span>", self.attrs(pointer), self.text(pointer, decimals))
    }

    /// The figure at `pointer`, times `scale` (bytes as MB: 1e-6), in a `<span>` with its
    /// attributes and `data-scale`.
    pub(crate) fn scaled(&self, pointer: &str, scale: f64, decimals: usize) -> String {
        let text = self.get(pointer).map_or_else(|| "-".to_owned(), |v| show(v, scale, decimals));
        format!("<span{} data-scale=\"{scale:e}\">{text}</span>", self.attrs(pointer))
    }

    /// The figure at `pointer` in a right-aligned table cell with its attributes.
    pub(crate) fn td(&self, pointer: &str, decimals: usize) -> String {
        format!("<td class=\"n\"{}>{}</td>", self.attrs(pointer), self.text(pointer, decimals))
    }

    /// A latency in ms in a table cell, to about four figures; `-` (and no figure) when the
    /// stage had no sample.
    pub(crate) fn td_ms(&self, pointer: &str, count: u64) -> String {
        match self.f64(pointer) {
            Some(ms) if count > 0 => self.td(pointer, ms_decimals(ms)),
            _ => "<td class=\"n muted\">-</td>".to_owned(),
        }
    }

    /// A drop count in a table cell, coloured by its cause when it is not 0.
    pub(crate) fn td_drops(&self, pointer: &str, cause: &str) -> String {
        let class = if self.u64(pointer) > 0 { format!("n drop c-{cause}") } else { "n zero".to_owned() };
        format!("<td class=\"{class}\"{}>{}</td>", self.attrs(pointer), self.text(pointer, 0))
    }

    /// A drop count in a `<span>`, coloured by its cause when it is not 0.
    pub(crate) fn span_drops(&self, pointer: &str, cause: &str) -> String {
        let class = if self.u64(pointer) > 0 { format!("drop c-{cause}") } else { "zero".to_owned() };
        format!("<span class=\"{class}\"{}>{}</span>", self.attrs(pointer), self.text(pointer, 0))
    }
}

/// A JSON value as a page shows it: a number times `scale` to `decimals` places (a whole
/// number unscaled as it is), a string as it is (escaped), null as `-`, a boolean as yes/no.
fn show(value: &Value, scale: f64, decimals: usize) -> String {
    match value {
        Value::Number(n) if scale == 1.0 && (n.is_u64() || n.is_i64()) => n.to_string(),
        Value::Number(n) => format!("{:.decimals$}", n.as_f64().unwrap_or(0.0) * scale),
        Value::String(s) => escape(s),
        Value::Null => "-".to_owned(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        other => escape(&other.to_string()),
    }
}

/// Decimals for a latency of `ms`: about four significant figures, as the text summary.
pub(crate) fn ms_decimals(ms: f64) -> usize {
    match ms.abs() {
        a if a < 10.0 => 3,
        a if a < 100.0 => 2,
        a if a < 10_000.0 => 1,
        _ => 0,
    }
}

/// One segment of a JSON pointer: `~` and `/` in a key escaped as RFC 6901 says.
pub(crate) fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Text made safe for HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    crate::rendering::escape(text)
}

/// A table: its head (each heading right-aligned when numeric) and its rows of cells, each a
/// whole `<td>` or `<th>`. It scrolls sideways on a narrow window rather than squeeze.
pub(crate) fn table(head: &[(&str, bool)], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<div class=\"scroll\"><table>\n<thead><tr>");
    for (heading, numeric) in head {
        let class = if *numeric { " class=\"n\"" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", escape(heading));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        let _ = writeln!(out, "<tr>{}</tr>", row.concat());
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

/// A table of `label: value` lines (the value HTML).
pub(crate) fn facts(lines: &[(&str, String)]) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"facts\">\n<tbody>\n");
    for (label, value) in lines {
        let _ = writeln!(out, "<tr><th scope=\"row\">{}</th><td>{value}</td></tr>", escape(label));
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

/// Short `label: value` pairs (the value HTML) in as many columns as fit: settings and the
/// like.
pub(crate) fn facts_grid(lines: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"grid\">\n");
    for (label, value) in lines {
        let _ = writeln!(out, "<div><dt>{}</dt><dd>{value}</dd></div>", escape(label));
    }
    out.push_str("</dl>\n");
    out
}

/// `1 frame`, `2 frames`.
pub(crate) fn plural(n: impl Into<u64>, word: &str) -> String {
    match n.into() {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}

/// A cell of plain text.
pub(crate) fn td(text: &str) -> String {
    format!("<td>{}</td>", escape(text))
}

/// A right-aligned cell of a figure worked out here (a sum, a mean): no `data-json`.
pub(crate) fn td_n(text: &str) -> String {
    format!("<td class=\"n\">{}</td>", escape(text))
}

/// A row's heading cell.
pub(crate) fn th(text: &str) -> String {
    format!("<th scope=\"row\">{}</th>", escape(text))
}

/// The headline: `ok` (green), `warn` (amber) or `bad` (red), its HTML.
pub(crate) fn verdict(class: &str, html: &str) -> String {
    format!("<p class=\"verdict {class}\">{html}</p>\n")
}

/// Key figures as cards: a label and a value (HTML) each.
pub(crate) fn cards(cards: &[(&str, String)]) -> String {
    let mut out = String::from("<div class=\"cards\">\n");
    for (label, value) in cards {
        let _ = writeln!(
            out,
            "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{value}</div></div>",
            escape(label)
        );
    }
    out.push_str("</div>\n");
    out
}

/// A figure drawn by one of the plot renderers, inline: its `<svg>` element, anything before
/// it (an XML prolog) dropped; or a line saying why it could not be drawn.
pub(crate) fn inline_svg(drawn: Result<Vec<u8>, RenderError>, label: &str) -> String {
    let svg = match drawn {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            return format!(
                "<p class=\"muted\">The figure could not be drawn: {}</p>\n",
                escape(&e.to_string())
            )
        }
    };
    match svg.find("<svg") {
        Some(start) => format!(
            "<figure>\n<svg role=\"img\" aria-label=\"{}\"{}</figure>\n",
            escape(label),
            &svg[start + 4..]
        ),
        None => String::new(),
    }
}

/// Renders `model` with `renderer` into memory, for [`inline_svg`].
pub(crate) fn drawn<M: ?Sized>(
    renderer: &dyn crate::rendering::Renderer<M>,
    model: &M,
) -> Result<Vec<u8>, RenderError> {
    let mut bytes = Vec::new();
    renderer.render(model, &mut bytes)?;
    Ok(bytes)
}

/// The text form of the model, folded away under the page's tables.
pub(crate) fn text_details(summary: &str, text: &str) -> String {
    format!("<details>\n<summary>{}</summary>\n<pre>{}</pre>\n</details>\n", escape(summary), escape(text))
}

/// A colour swatch of `class`.
pub(crate) fn swatch(class: &str) -> String {
    format!("<span class=\"swatch {class}\"></span>")
}

/// `2026-01-01 00:00:00 UTC` for seconds since the Unix epoch.
pub(crate) fn utc(unix_s: u64) -> String {
    // Howard Hinnant's days-to-civil, on days since 1970-01-01.
    let days = i64::try_from(unix_s / 86_400).unwrap_or(0);
    let rem = unix_s % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The rules whose colours come from the plots' own: the cause swatches and the matrix's
/// cells, so that a page and its figures agree.
fn colour_rules() -> String {
    let mut out = String::new();
    for cause in DropCauseName::ALL {
        let name = cause.word();
        let _ = writeln!(out, ".swatch.c-{name} {{ background: {}; }}", hex(cause_colour(cause)));
    }
    for (cause, name) in [
        (crate::model::record::RecordCause::Input, "input"),
        (crate::model::record::RecordCause::Encode, "encode"),
        (crate::model::record::RecordCause::Storage, "record-storage"),
    ] {
        let colour = crate::format::record_plot::record_cause_colour(cause);
        let _ = writeln!(out, ".swatch.c-{name} {{ background: {}; }}", hex(colour));
    }
    let mut states = vec![CellState::MaxPassed, CellState::NotSearched(None)];
    for cause in [
        MatrixCause::Storage,
        MatrixCause::Decode,
        MatrixCause::Output,
        MatrixCause::Unreadable,
        MatrixCause::Encode,
        MatrixCause::Input,
    ] {
        states.extend([CellState::Limited(cause), CellState::Carried(cause)]);
    }
    for state in states {
        let _ = writeln!(out, ".swatch.{} {{ background: {}; }}", state.class(), hex(state.fill()));
    }
    out
}

/// The page's style: light, system fonts only, numbers right-aligned in tabular figures.
const STYLE: &str = r#":root {
  color-scheme: light;
  --ink: #1f2328;
  --muted: #59636e;
  --line: #d8dee4;
  --panel: #f6f8fa;
}
* { box-sizing: border-box; }
body {
  margin: 0;
  background: #ffffff;
  color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans",
    "Liberation Sans", "DejaVu Sans", Arial, sans-serif;
}
header, main, footer { max-width: 1320px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 28px; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0 0 6px; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 22px 0 6px; }
p { margin: 8px 0; }
.sub { color: var(--muted); margin: 0; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.verdict {
  font-size: 1.25rem; font-weight: 600; margin: 22px 0; padding: 14px 18px;
  border-radius: 8px; border-left: 8px solid;
}
.verdict.ok { background: #e9f5ec; border-color: #2e7d32; color: #1b5e20; }
.verdict.bad { background: #fdecec; border-color: #c62828; color: #8e1b1b; }
.verdict.warn { background: #fff4e0; border-color: #ef6c00; color: #7a3e00; }
.verdict .drop, .verdict .zero { font-weight: 700; }
.problem { background: #fdecec; border: 1px solid #f1b5b5; border-radius: 6px; padding: 8px 12px; overflow-wrap: anywhere; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 150px; }
.card .k { color: var(--muted); font-size: .85rem; }
.card .v { font-size: 1.35rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: .93rem; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--panel); font-weight: 600; border-bottom: 2px solid var(--line); white-space: nowrap; }
th[scope="row"] { font-weight: 500; white-space: nowrap; }
table.facts td { overflow-wrap: anywhere; }
td code { overflow-wrap: normal; }
.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.zero { color: #8c959f; }
.drop { font-weight: 700; }
.c-storage, .c-record-storage { color: #c62828; }
.c-decode, .c-encode { color: #b45309; }
.c-output { color: #8c564b; }
.c-unreadable, .c-failed, .c-total { color: #000000; }
.c-input { color: #0e7c86; }
.better { color: #1b7f3b; }
.worse { color: #c62828; }
.same { color: var(--muted); }
th.indent { padding-left: 26px; }
.swatch { display: inline-block; width: .95em; height: .95em; border-radius: 3px; vertical-align: -2px; margin-right: 5px; border: 1px solid rgba(0, 0, 0, .15); }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 8px 0; font-size: .9rem; }
figure { margin: 12px 0; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; }
table.grid { border-collapse: separate; border-spacing: 5px; }
table.grid th, table.grid td { border-bottom: none; }
td.answer { font-weight: 700; }
dl.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: 0 24px; margin: 8px 0 16px; }
dl.grid div { display: flex; justify-content: space-between; gap: 12px; padding: 5px 2px; border-bottom: 1px solid var(--line); }
dl.grid dt { color: var(--muted); }
dl.grid dd { margin: 0; text-align: right; overflow-wrap: anywhere; }
details { margin: 16px 0; }
summary { cursor: pointer; color: var(--muted); }
pre {
  background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px; overflow-x: auto;
  font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace;
}
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
ul.problems { padding-left: 1.2em; }
ul.problems li { overflow-wrap: anywhere; }
footer { color: var(--muted); font-size: .85rem; margin-top: 36px; padding-bottom: 36px; border-top: 1px solid var(--line); }
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::matrix_plot::{NOT_SEARCHED, PASSED};

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_767_225_600), "2026-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400 + 3_661), "2000-02-29 01:01:01 UTC");
        // No panic at the far end.
        assert!(utc(u64::MAX).ends_with("UTC"));
    }

    #[test]
    fn figures_carry_their_pointer_and_raw_value() {
        let value = serde_json::json!({"a": {"b/c": 1.25, "n": 3, "s": "x<y", "z": null}});
        let doc = Doc::new(&value);
        let key = format!("/a/{}", segment("b/c"));
        assert_eq!(key, "/a/b~1c");
        assert_eq!(doc.span(&key, 1), "<span data-json=\"/a/b~1c\" data-value=\"1.25\">1.2</span>");
        assert_eq!(doc.span("/a/n", 2), "<span data-json=\"/a/n\" data-value=\"3\">3</span>");
        assert_eq!(
            doc.span("/a/s", 0),
            "<span data-json=\"/a/s\" data-value=\"&quot;x&lt;y&quot;\">x&lt;y</span>"
        );
        assert_eq!(doc.span("/a/z", 0), "<span data-json=\"/a/z\" data-value=\"null\">-</span>");
        assert!(doc.scaled("/a/n", 100.0, 0).contains("data-scale=\"1e2\">300<"));
        let under = Doc::under(&value, "/4");
        assert!(under.span("/a/n", 0).starts_with("<span data-json=\"/4/a/n\""));
    }

    #[test]
    fn the_style_has_the_plots_colours() {
        let rules = colour_rules();
        for cause in DropCauseName::ALL {
            let name = cause.word();
            assert!(rules.contains(&format!(".swatch.c-{name} {{ background: {}", hex(cause_colour(cause)))));
        }
        assert!(rules.contains(&format!(".swatch.passed {{ background: {}", hex(PASSED))));
        assert!(rules.contains(&format!(".swatch.not-searched {{ background: {}", hex(NOT_SEARCHED))));
    }
}
