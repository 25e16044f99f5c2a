//! A record run's page: the verdict, the key figures, the timeline plot, the write side's
//! latency, CPU, each stream's counts, the failures, and the text summary.

use std::fmt::Write as _;

use serde_json::Value;

use super::page::{cards, drawn, escape, facts, inline_svg, table, text_details, th, verdict, Doc, Page};
use crate::model::record::{figures, RecordResult};

/// Record's causes: their JSON key, class and words.
const CAUSES: [(&str, &str, &str); 3] = [
    ("dropped_input", "input", "input (the source was late)"),
    ("dropped_encode", "encode", "encode"),
    ("dropped_storage", "record-storage", "storage"),
];

/// The failed frames' errors listed by name; the rest are counted.
const ERRORS_SHOWN: usize = 20;

/// The record run as a page.
pub fn record_page(result: &RecordResult) -> String {
    let f = figures(result);
    let json = serde_json::to_value(&f).unwrap_or(Value::Null);
    let d = Doc::new(&json);
    let title = format!("Record: {} to {}", f.info.format, f.info.destination);
    let mut sub = vec![format!("size {}", d.span("/info/size", 0)), d.span("/info/parameters", 0)];
    if !f.info.storage.is_empty() {
        sub.push(format!("written as {}", d.span("/info/storage", 0)));
    }
    if f.info.streams > 1 {
        sub.push(format!("{} streams at once", d.span("/info/streams", 0)));
    }
    let mut page = Page::new("record", &title, &sub.join(" · "));

    let arrived = d.span("/frames_arrived", 0);
    let (class, mut html) = if f.frames_dropped == 0 && f.frames_failed == 0 {
        ("ok", format!("✓ 0 frames dropped of {arrived} arrived"))
    } else {
        let causes: Vec<String> = CAUSES
            .iter()
            .filter(|(key, ..)| d.u64(&format!("/{key}")) > 0)
            .map(|(key, class, words)| {
                format!("{} {}", escape(words), d.span_drops(&format!("/{key}"), class))
            })
            .collect();
        let mut html =
            format!("✗ {} frames dropped of {arrived} arrived", d.span_drops("/frames_dropped", "total"));
        if !causes.is_empty() {
            let _ = write!(html, ": {}", causes.join(", "));
        }
        if f.frames_failed > 0 {
            let _ = write!(html, "; {} failed", d.span_drops("/frames_failed", "failed"));
        }
        ("bad", html)
    };
    if f.failure.is_some() {
        html.push_str(" · stopped early");
    } else if f.interrupted {
        html.push_str(" · interrupted");
    }
    page.push(&verdict(class, &html));
    if f.failure.is_some() {
        page.push(&format!("<p class=\"problem\">Stopped: {}</p>\n", d.span("/failure", 0)));
    } else if f.interrupted {
        page.push("<p class=\"problem\">Stopped before every frame arrived (interrupted).</p>\n");
    }
    page.push(&cards(&[
        ("frames written", format!("{} of {}", d.span("/frames_written", 0), d.span("/frames_arrived", 0))),
        ("frame rate", format!("{} fps", d.span("/fps", 2))),
        ("data rate", format!("{} MB/s", d.span("/mb_per_s", 1))),
        ("written", format!("{} MB in {} s", d.scaled("/bytes", 1e-6, 3), d.span("/elapsed_s", 3))),
    ]));

    let drops = vec![
        vec![th("dropped"), d.td_drops("/frames_dropped", "total")],
        vec![th("  input (the source was late)"), d.td_drops("/dropped_input", "input")],
        vec![th("  encode"), d.td_drops("/dropped_encode", "encode")],
        vec![th("  storage"), d.td_drops("/dropped_storage", "record-storage")],
        vec![th("failed"), d.td_drops("/frames_failed", "failed")],
    ];
    let mut dropped = table(&[("frames", false), ("count", true)], &drops);
    dropped.push_str(
        "<p class=\"muted\">A frame is dropped when it arrives while the queue is full; it is charged to \
         the stage that held the oldest queued frame. A failed frame's encode or write failed.</p>\n",
    );
    page.section("Dropped frames", &dropped);
    let figure = inline_svg(
        drawn(&crate::format::record_plot::RecordPlot::svg(), result),
        "the record timeline: each frame's stages from its arrival, drops marked by cause; and each stage's latency",
    );
    page.section("Timeline and latency", &figure);
    page.section("Latency per stage (ms)", &latency(&d));
    let mut cpu = vec![
        ("encode", format!("{} s", d.span("/encode_cpu_s_per_gb", 3))),
        ("write", format!("{} s", d.span("/write_cpu_s_per_gb", 3))),
    ];
    if f.input_cpu_s_per_gb > 0.0 {
        cpu.insert(0, ("input", format!("{} s", d.span("/input_cpu_s_per_gb", 3))));
    }
    if f.end_sync_ms.is_some() {
        cpu.push(("end sync", format!("{} ms", d.span("/end_sync_ms", 2))));
    }
    page.section("CPU per GB written", &facts(&cpu));
    if !f.per_stream.is_empty() {
        let rows: Vec<Vec<String>> = (0..f.per_stream.len())
            .map(|i| {
                let p = |field: &str| format!("/per_stream/{i}/{field}");
                vec![
                    d.td(&p("stream"), 0),
                    d.td(&p("frames_written"), 0),
                    d.td_drops(&p("frames_dropped"), "total"),
                    d.td_drops(&p("frames_failed"), "failed"),
                ]
            })
            .collect();
        page.section(
            "Streams",
            &table(&[("stream", true), ("written", true), ("dropped", true), ("failed", true)], &rows),
        );
    }
    let errors: Vec<&str> = result.run.records.iter().filter_map(|r| r.error.as_deref()).collect();
    if !errors.is_empty() {
        let mut list = String::from("<ul class=\"problems\">\n");
        for error in errors.iter().take(ERRORS_SHOWN) {
            let _ = writeln!(list, "<li>{}</li>", escape(error));
        }
        if errors.len() > ERRORS_SHOWN {
            let _ = writeln!(
                list,
                "<li>... and {} more (see the timeline CSV)</li>",
                errors.len() - ERRORS_SHOWN
            );
        }
        list.push_str("</ul>\n");
        page.section("Failed frames", &list);
    }
    page.section(
        "What was run",
        &facts(&[
            ("destination", format!("<code>{}</code>", d.span("/info/destination", 0))),
            ("format", d.span("/info/format", 0)),
            ("size", d.span("/info/size", 0)),
            ("settings", format!("<code>{}</code>", d.span("/info/parameters", 0))),
            ("rate", format!("{} fps", d.span("/info/fps", 3))),
            ("storage", d.span("/info/storage", 0)),
            ("streams", d.span("/info/streams", 0)),
        ]),
    );
    page.push(&text_details("The text summary", &crate::format::record::summary(result)));
    page.footer(&format!(
        "Written by playsim {}. Figures marked <code>data-json</code> are the run's JSON values \
         (<code>playsim record --json</code>).",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// The write side's stages: frames, p50, p99 and max.
fn latency(d: &Doc<'_>) -> String {
    let stages = [
        ("queue wait", "queue_wait"),
        ("encode", "encode"),
        ("write", "write"),
        ("sync", "sync"),
        ("total", "total"),
    ];
    let rows: Vec<Vec<String>> = stages
        .iter()
        .map(|(label, key)| {
            let p = |field: &str| format!("/{key}/{field}");
            let n = d.u64(&p("n"));
            vec![
                th(label),
                d.td(&p("n"), 0),
                d.td_ms(&p("p50_ms"), n),
                d.td_ms(&p("p99_ms"), n),
                d.td_ms(&p("max_ms"), n),
            ]
        })
        .collect();
    let mut out =
        table(&[("stage", false), ("frames", true), ("p50", true), ("p99", true), ("max", true)], &rows);
    out.push_str(
        "<p class=\"muted\">Queue wait is from a frame's arrival to its encode's start; total is from its \
         arrival to its file published under its real name.</p>\n",
    );
    out
}
