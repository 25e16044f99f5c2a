//! frametest's page: the verdict, frame and data rate, the averaged details, the frame times'
//! histogram (a picture and a table), the decodes, notes and failures.

use std::fmt::Write as _;

use serde_json::Value;

use super::page::{cards, escape, facts, table, td_n, text_details, verdict, Doc, Page};
use crate::model::frametest::{figures, FrameSize, FrametestResult};
use crate::rendering::escape as xml;

/// The failed frames' errors listed; the rest are counted.
const ERRORS_SHOWN: usize = 20;

/// frametest's result as a page.
pub fn frametest_page(result: &FrametestResult) -> String {
    let f = figures(result);
    let json = serde_json::to_value(&f).unwrap_or(Value::Null);
    let d = Doc::new(&json);
    let size = f.frame_size.as_ref().map_or_else(|| "frames of varying size".to_owned(), FrameSize::describe);
    let title = format!("frametest: {} {size}", f.mode);
    let subtitle = format!(
        "<code>{}</code> · <code>{}</code> ({}, {} files) · {}",
        d.span("/parameters", 0),
        d.span("/location", 0),
        d.span("/pattern", 0),
        d.span("/n_files", 0),
        escape(&result.info.transport)
    );
    let mut page = Page::new("frametest", &title, &subtitle);

    let (class, mut html) = if f.frames_dropped == 0 && f.frames_failed == 0 {
        ("ok", format!("✓ 0 frames dropped; {} transferred", d.span("/frames_transferred", 0)))
    } else {
        let mut html = format!(
            "✗ {} frames dropped; {} transferred",
            d.span_drops("/frames_dropped", "total"),
            d.span("/frames_transferred", 0)
        );
        if f.frames_failed > 0 {
            let _ = write!(html, "; {} failed", d.span_drops("/frames_failed", "failed"));
        }
        ("bad", html)
    };
    if f.failure.is_some() || f.interrupted {
        html.push_str(" · stopped early");
    }
    page.push(&verdict(class, &html));
    if f.failure.is_some() {
        page.push(&format!("<p class=\"problem\">Stopped: {}</p>\n", d.span("/failure", 0)));
    } else if f.interrupted {
        page.push("<p class=\"problem\">Stopped: interrupted before every frame was due.</p>\n");
    }
    page.push(&cards(&[
        ("frame rate", format!("{} fps", d.span("/frame_rate_fps", 2))),
        ("data rate", format!("{} MB/s", d.span("/data_rate_mb_per_s", 2))),
        ("duration", format!("{} s", d.span("/duration_s", 3))),
        ("transferred", format!("{} MB", d.scaled("/bytes", 1e-6, 3))),
    ]));

    let pacing = match &f.fps {
        Some(_) => format!(
            "{} fps, queue of {} frames, clock started at {} s",
            d.span("/fps", 0),
            d.span("/queue", 0),
            d.span("/t0_s", 3)
        ),
        None => format!("as fast as possible, queue of {} frames", d.span("/queue", 0)),
    };
    let mut lines =
        vec![("mode", d.span("/mode", 0)), ("threads", d.span("/threads", 0)), ("pacing", pacing)];
    if f.frame_size.is_some() {
        lines.push((
            "frame size",
            format!(
                "{}: {} bytes, {} × {} after a {}-byte header",
                d.span("/frame_size/name", 0),
                d.span("/frame_size/file_bytes", 0),
                d.span("/frame_size/width", 0),
                d.span("/frame_size/height", 0),
                d.span("/frame_size/header_bytes", 0)
            ),
        ));
    }
    lines.push(("transport", escape(&result.info.transport)));
    page.section("Test", &facts(&lines));

    let frame = |pointer: &str| match d.get(pointer) {
        Some(Value::Null) | None => d.span(pointer, 3),
        Some(_) => format!("{} ms", d.span(pointer, 3)),
    };
    let averages = vec![vec![
        td_n("overall"),
        d.td("/avg_open_ms", 3),
        d.td("/avg_io_ms", 3),
        d.td("/avg_close_ms", 3),
        d.td("/avg_frame_ms", 3),
        d.td("/data_rate_mb_per_s", 2),
        d.td("/frame_rate_fps", 2),
    ]];
    let mut details = table(
        &[
            ("", false),
            ("open ms", true),
            ("I/O ms", true),
            ("close ms", true),
            ("frame ms", true),
            ("MB/s", true),
            ("fps", true),
        ],
        &averages,
    );
    let mut lines =
        vec![("fastest frame", frame("/fastest_frame_ms")), ("slowest frame", frame("/slowest_frame_ms"))];
    if f.decode.is_some() {
        lines.push((
            "decode",
            format!(
                "{} frames, average {} ms, slowest {} ms, {} CPU s on {} threads",
                d.span("/decode/frames", 0),
                d.span("/decode/avg_ms", 3),
                d.span("/decode/max_ms", 3),
                d.span("/decode/cpu_s", 3),
                d.span("/decode/threads", 0)
            ),
        ));
    }
    details.push_str(&facts(&lines));
    page.section("Averaged details", &details);
    page.section("Frame times (open + I/O + close)", &histogram(&f, &d));

    if !result.info.notes.is_empty() {
        let mut notes = String::from("<ul>\n");
        for note in &result.info.notes {
            let _ = writeln!(notes, "<li>{}</li>", escape(note));
        }
        notes.push_str("</ul>\n");
        page.section("Notes", &notes);
    }
    if !f.errors.is_empty() {
        let mut list = String::from("<ul class=\"problems\">\n");
        for i in 0..f.errors.len().min(ERRORS_SHOWN) {
            let _ = writeln!(list, "<li>{}</li>", d.span(&format!("/errors/{i}"), 0));
        }
        if f.errors.len() > ERRORS_SHOWN {
            let _ = writeln!(list, "<li>... and {} more (see -x)</li>", f.errors.len() - ERRORS_SHOWN);
        }
        list.push_str("</ul>\n");
        page.section("Failed frames", &list);
    }
    page.push(&text_details("frametest's summary", &crate::format::frametest::summary(result)));
    page.footer(&format!(
        "Written by playsim {}. MB = 10<sup>6</sup> bytes. Figures marked <code>data-json</code> are \
         the result's JSON values (<code>playsim frametest --json</code>).",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// The histogram's used buckets as bars (inline SVG) and as a table.
fn histogram(f: &crate::model::frametest::FrametestFigures, d: &Doc<'_>) -> String {
    let used: Vec<usize> = (0..f.histogram.len()).filter(|&i| f.histogram[i].frames > 0).collect();
    let (Some(&first), Some(&last)) = (used.first(), used.last()) else {
        return "<p class=\"muted\">No frame was transferred.</p>\n".to_owned();
    };
    let label = |i: usize| {
        let b = &f.histogram[i];
        match b.to_ms {
            Some(to) if b.from_ms == 0 => format!("< {to} ms"),
            Some(to) => format!("{} - {to} ms", b.from_ms),
            None => format!(">= {} ms", b.from_ms),
        }
    };
    let most = f.histogram.iter().map(|b| b.frames).max().unwrap_or(1).max(1);
    let (width, row_h, label_w, bar_w) = (760.0, 24.0, 120.0, 540.0);
    let height = (last - first + 1) as f64 * row_h + 16.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"13\">\n"
    );
    for (row, i) in (first..=last).enumerate() {
        let y = 8.0 + row as f64 * row_h;
        let frames = f.histogram[i].frames;
        let w = (frames as f64 / most as f64 * bar_w).max(if frames > 0 { 2.0 } else { 0.0 });
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#1f2328\">{}</text>",
            label_w - 8.0,
            y + 16.0,
            xml(&label(i))
        );
        let _ = writeln!(
            svg,
            "<rect x=\"{label_w}\" y=\"{}\" width=\"{w:.1}\" height=\"{}\" rx=\"2\" fill=\"#1f77b4\"/>",
            y + 3.0,
            row_h - 6.0
        );
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"#1f2328\">{frames}</text>",
            label_w + w + 6.0,
            y + 16.0
        );
    }
    svg.push_str("</svg>\n");
    let mut out = format!(
        "<figure>\n{}</figure>\n",
        svg.replacen("<svg ", "<svg role=\"img\" aria-label=\"frames by frame time\" ", 1)
    );
    let rows: Vec<Vec<String>> = (first..=last)
        .map(|i| vec![format!("<td>{}</td>", escape(&label(i))), d.td(&format!("/histogram/{i}/frames"), 0)])
        .collect();
    out.push_str(&table(&[("frame time", false), ("frames", true)], &rows));
    out
}
