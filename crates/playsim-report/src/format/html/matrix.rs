//! The matrix's page: how many cells play, the grid as a picture and as a table (each cell's
//! streams, cause and margin), the rows' media, and every cell's trials.

use std::fmt::Write as _;

use serde_json::Value;

use super::capacity::trials_table;
use super::page::{escape, inline_svg, swatch, table, td, td_n, text_details, verdict, Doc, Page};
use crate::format::matrix_plot::{self, NO, YES};
use crate::model::matrix::CellState;
use crate::model::matrix::Matrix;

/// The matrix as a page.
pub fn matrix_page(matrix: &Matrix) -> String {
    let json = serde_json::to_value(matrix).unwrap_or(Value::Null);
    let d = Doc::new(&json);
    let yes_no = matrix.yes_no();
    let title =
        format!("{} {}", if matrix.write { "Will it record?" } else { "Will it play?" }, matrix.location);
    let trials = matrix.trials_per_candidate;
    let what = if yes_no {
        "does one stream play with no drop".to_owned()
    } else {
        format!("most streams with no drop (up to {})", d.span("/max", 0))
    };
    let subtitle = format!(
        "{what} · {} s a trial, {} trial{} a candidate · took {} s · playsim {}",
        d.span("/window_s", 1),
        d.span("/trials_per_candidate", 0),
        if trials == 1 { "" } else { "s" },
        d.span("/elapsed_s", 0),
        d.span("/playsim_version", 0)
    );
    let mut page = Page::new("matrix", &title, &subtitle);

    let states: Vec<CellState> =
        matrix.rows.iter().flat_map(|r| &r.cells).map(|c| CellState::of(matrix, c)).collect();
    let n_cells = states.len();
    let n_passed = states.iter().filter(|s| **s == CellState::MaxPassed).count();
    let n_none = matrix.rows.iter().flat_map(|r| &r.cells).filter(|c| c.best_streams == 0).count();
    let class = match (n_passed, n_none) {
        _ if n_cells == 0 => "warn",
        (p, _) if p == n_cells => "ok",
        (_, z) if z == n_cells => "bad",
        _ => "warn",
    };
    let html = if yes_no {
        format!("{} of {n_cells} format and rate pairs play one stream with no drop", n_cells - n_none)
    } else {
        format!(
            "{n_passed} of {n_cells} cells played the maximum ({}) with no drop; {n_none} played none",
            d.span("/max", 0)
        )
    };
    page.push(&verdict(class, &html));
    if let Some(why) = &matrix.interrupted {
        page.push(&verdict("warn", &escape(&crate::format::matrix::interrupted_line(matrix, why))));
    }
    let how = if matrix.write { "Writes" } else { "Cold reads" };
    page.push(&format!("<p><strong>{how}:</strong> {}</p>\n", d.span("/cold", 0)));

    let figure = inline_svg(
        Ok(matrix_plot::svg(matrix).into_bytes()),
        "the matrix: a cell per format and rate, coloured by what limited it",
    );
    page.section("Grid", &figure);
    page.section("Cells", &cells(matrix, &d));
    page.section("Formats", &rows(matrix, &d));
    let mut all_trials = String::new();
    for (r, row) in matrix.rows.iter().enumerate() {
        for (c, cell) in row.cells.iter().enumerate() {
            if cell.trials.is_empty() {
                continue;
            }
            let _ = write!(
                all_trials,
                "<h3>{} at {} fps</h3>\n{}",
                escape(&row.name),
                escape(&cell.fps),
                trials_table(&d, &format!("/rows/{r}/cells/{c}/trials"), cell.trials.len())
            );
        }
    }
    if !all_trials.is_empty() {
        page.push(&format!("<details>\n<summary>Every cell's trials</summary>\n{all_trials}</details>\n"));
    }
    page.push(&text_details("The text grid", &crate::format::matrix::text(matrix)));
    page.footer(&format!(
        "Written by playsim {}. Figures marked <code>data-json</code> are the matrix's JSON values \
         (<code>playsim matrix --json</code>).",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// A row per cell, format by format: its answer, limit and margin (the grid's figures, to
/// read exactly), what it could try and how its answer was found.
fn cells(matrix: &Matrix, d: &Doc<'_>) -> String {
    let yes_no = matrix.yes_no();
    let mut rows = Vec::new();
    for (r, row) in matrix.rows.iter().enumerate() {
        for (c, cell) in row.cells.iter().enumerate() {
            let p = |field: &str| format!("/rows/{r}/cells/{c}/{field}");
            let state = CellState::of(matrix, cell);
            let answer = if yes_no {
                let mark = if cell.best_streams >= 1 { YES } else { NO };
                format!("<span{}>{mark}</span>", d.attrs(&p("best_streams")))
            } else {
                let plus = if state == CellState::MaxPassed { "+" } else { "" };
                format!("{}{plus}", d.span(&p("best_streams"), 0))
            };
            let limit = match cell.limit {
                Some(cause) => format!(
                    "<span class=\"c-{}\"{}>{}</span>",
                    cause.word(),
                    d.attrs(&p("limit")),
                    cause.word()
                ),
                None => d.span(&p("limit"), 0),
            };
            let how = match state {
                CellState::MaxPassed => "its maximum played".to_owned(),
                CellState::Limited(_) if cell.best_streams == 0 => "even one stream dropped".to_owned(),
                CellState::Limited(_) => format!("{} streams dropped", cell.best_streams.saturating_add(1)),
                CellState::Carried(_) => {
                    "its maximum, the rate below's answer, played; the limit is the rate below's".to_owned()
                }
                CellState::NotSearched(_) => {
                    format!("not searched: as at {} fps, which found 0", d.span(&p("inherited_from"), 0))
                }
            };
            let margin = if cell.inherited_from.is_some() {
                "<td class=\"n\"></td>".to_owned()
            } else {
                d.td(&p("margin_ms"), 1)
            };
            rows.push(vec![
                format!("<th scope=\"row\">{}</th>", escape(&row.name)),
                format!("<td class=\"n\">{}</td>", d.span(&p("fps"), 0)),
                format!("<td class=\"n answer\">{}{answer}</td>", swatch(&state.class())),
                format!("<td>{limit}</td>"),
                margin,
                d.td(&p("max"), 0),
                td_n(&cell.trials.len().to_string()),
                format!("<td>{how}</td>"),
            ]);
        }
    }
    if rows.is_empty() {
        return "<p class=\"muted\">No cell was searched.</p>\n".to_owned();
    }
    let head = [
        ("format", false),
        ("fps", true),
        (if yes_no { "plays" } else { "streams" }, true),
        ("limit", false),
        ("margin ms", true),
        ("tried up to", true),
        ("trials", true),
        ("how", false),
    ];
    let mut out = table(&head, &rows);
    let explain = if yes_no {
        "✓: one stream played with no drop; ✗: it dropped, mostly for the limit's cause."
    } else {
        "N: N streams played with no drop and N+1 dropped, mostly for the limit's cause; N+: the maximum \
         played. The margin is the worst slack of a presented frame at the answer."
    };
    let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(explain));
    out
}

/// The rows' media.
fn rows(matrix: &Matrix, d: &Doc<'_>) -> String {
    let body: Vec<Vec<String>> = matrix
        .rows
        .iter()
        .enumerate()
        .map(|(r, row)| {
            let p = |field: &str| format!("/rows/{r}/{field}");
            vec![
                format!("<th scope=\"row\">{}</th>", d.span(&p("name"), 0)),
                td(&row.format),
                td(&row.size),
                format!("<td><code>{}</code></td>", d.span(&p("media"), 0)),
                if row.frames.is_some() {
                    d.td(&p("frames"), 0)
                } else {
                    "<td class=\"n\">-</td>".to_owned()
                },
                format!("<td>{}</td>", d.span(&p("loops"), 0)),
            ]
        })
        .collect();
    let mut out = table(
        &[
            ("format", false),
            ("codec", false),
            ("size", false),
            ("media", false),
            ("frames", true),
            ("loops", false),
        ],
        &body,
    );
    out.push_str(
        "<p class=\"muted\">A row that loops plays its media more than once in a trial at the highest \
         rate: after the first loop its frames may come from the page cache.</p>\n",
    );
    out
}
