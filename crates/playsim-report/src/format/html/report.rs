//! The run report's page: the verdict, Flame's drop counters, frametest's rates, the timeline
//! and latency plot, the streams, latency, CPU and memory, the clients of a merged run, the
//! settings, sources and storage, and the text summary.

use std::fmt::Write as _;

use serde_json::Value;

use super::page::{
    cards, drawn, escape, facts, facts_grid, inline_svg, segment, table, td, td_n, text_details, th, utc,
    verdict, Doc, Page,
};
use crate::format::text::bytes;
use crate::model::{ClientState, DropCauseName, Report, RunStatus};

/// The run report as a page.
pub fn report_page(report: &Report) -> String {
    let json = serde_json::to_value(crate::model::wire::finite(report)).unwrap_or(Value::Null);
    let d = Doc::new(&json);
    let sources = distinct(report.streams.iter().map(|s| s.source.location.as_str()));
    let title = if sources.is_empty() { "playsim run".to_owned() } else { format!("Playback of {sources}") };
    let mut page = Page::new("report", &title, &subtitle(report, &d));
    page.push(&headline(report, &d));
    if report.error.is_some() {
        page.push(&format!("<p class=\"problem\">Error: {}</p>\n", d.span("/error", 0)));
    }
    if report.streams.iter().any(|s| s.presenter_priority.as_deref() == Some("normal")) {
        page.push(
            "<p class=\"problem\">The presentation thread ran at normal priority (real-time was refused): \
             the pacing error includes this machine's scheduling delays; run as root or grant CAP_SYS_NICE \
             for a real-time presentation thread.</p>\n",
        );
    }
    page.section("Dropped frames", &drops(report, &d));
    page.section("Rates", &rates(report, &d));
    let figure = inline_svg(
        drawn(&crate::format::plot::TimelinePlot::svg(), report),
        "the timeline: each frame's slack to its deadline, drops marked by cause; and each stage's latency",
    );
    page.section("Timeline and latency", &figure);
    page.section("Streams", &streams(report, &d));
    if !report.clients.is_empty() {
        page.section("Clients", &clients(report, &d));
    }
    page.section("Latency per stage (ms)", &latency(report, &d));
    page.section("CPU", &cpu(report, &d));
    page.section("Memory", &memory(report, &d));
    page.section("Settings", &settings(report, &d));
    page.section("Sources and storage", &sources_and_storage(report, &d));
    page.section("Environment", &environment(report, &d));
    if report.streams.iter().any(|s| !s.unreadable.is_empty()) {
        page.section("Unreadable frames", &unreadable(report, &d));
    }
    page.push(&text_details("The text summary", &crate::format::text::summary(report)));
    page.footer(&format!(
        "Written by playsim {}. Figures marked <code>data-json</code> are the report's JSON values \
         (<code>playsim play --json</code>).",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// `complete in 10.50 s · fps 24 · nfs · render7 · 2026-01-01 00:00:00 UTC · playsim 0.1.0`.
fn subtitle(r: &Report, d: &Doc<'_>) -> String {
    let status = match r.status {
        RunStatus::Complete => " in",
        RunStatus::Partial => ", stopped after",
        RunStatus::Failed => " after",
    };
    let mut parts = vec![format!("{}{status} {} s", d.span("/status", 0), d.span("/duration_s", 2))];
    if !r.settings.fps.is_empty() {
        parts.push(format!("fps {}", d.span("/settings/fps", 0)));
    }
    let transports = distinct(r.streams.iter().map(|s| s.storage.transport.as_str()));
    if !transports.is_empty() {
        parts.push(escape(&transports));
    }
    if !r.environment.hostname.is_empty() {
        parts.push(format!("host {}", d.span("/environment/hostname", 0)));
    }
    if r.started_at_unix_s > 0 {
        parts.push(escape(&utc(r.started_at_unix_s)));
    }
    parts.push(format!("playsim {}", d.span("/playsim_version", 0)));
    parts.join(" · ")
}

/// The verdict and the key figures.
fn headline(r: &Report, d: &Doc<'_>) -> String {
    let total = r.totals.dropped.total();
    let due = d.span("/totals/frames_due", 0);
    let (class, mut html) = if total == 0 {
        let class = if r.status == RunStatus::Complete { "ok" } else { "warn" };
        (class, format!("✓ 0 frames dropped of {due} due"))
    } else {
        let causes: Vec<String> = DropCauseName::ALL
            .into_iter()
            .filter(|cause| d.u64(&format!("/totals/dropped/{}", cause.word())) > 0)
            .map(|cause| {
                let name = cause.word();
                format!(
                    "{} {}",
                    escape(cause.label()),
                    d.span_drops(&format!("/totals/dropped/{name}"), name)
                )
            })
            .collect();
        ("bad", format!("✗ {total} frames dropped of {due} due: {}", causes.join(", ")))
    };
    if r.status != RunStatus::Complete {
        let _ = write!(html, " · the run is {}", d.span("/status", 0));
    }
    let mut out = verdict(class, &html);
    let mut key = vec![
        (
            "frames presented",
            format!("{} of {}", d.span("/totals/presented", 0), d.span("/totals/frames_due", 0)),
        ),
        ("frame rate", format!("{} fps", d.span("/totals/fps", 2))),
        ("data rate", format!("{} MB/s", d.span("/totals/mb_per_s", 1))),
    ];
    if !r.totals.bottleneck.is_empty() {
        key.push(("bottleneck", d.span("/totals/bottleneck", 0)));
    }
    key.push(("streams", r.streams.len().to_string()));
    if !r.clients.is_empty() {
        key.push(("clients", r.clients.len().to_string()));
    }
    out.push_str(&cards(&key));
    out
}

/// Flame's counters: a row per cause, a column per stream (none in a merged run, whose
/// clients' and streams' tables have them) and the run's total.
fn drops(r: &Report, d: &Doc<'_>) -> String {
    let mut columns: Vec<(String, String)> = if r.clients.is_empty() {
        r.streams.iter().enumerate().map(|(i, s)| (s.name.clone(), format!("/streams/{i}/dropped"))).collect()
    } else {
        Vec::new()
    };
    // The total even beside one stream: it is the run's figure, and the headline's.
    columns.push(("total".to_owned(), "/totals/dropped".to_owned()));
    let mut head = vec![("dropped frames", false)];
    head.extend(columns.iter().map(|(name, _)| (name.as_str(), true)));
    let mut rows: Vec<Vec<String>> = DropCauseName::ALL
        .into_iter()
        .map(|cause| {
            let name = cause.word();
            let mut row = vec![th(cause.label())];
            row.extend(columns.iter().map(|(_, base)| d.td_drops(&format!("{base}/{name}"), name)));
            row
        })
        .collect();
    let mut total_row = vec!["<th scope=\"row\">total</th>".to_owned()];
    total_row.extend(columns.iter().map(|(_, base)| {
        let sum: u64 =
            DropCauseName::ALL.iter().map(|cause| d.u64(&format!("{base}/{}", cause.word()))).sum();
        format!("<td class=\"n {}\"><strong>{sum}</strong></td>", if sum > 0 { "drop" } else { "zero" })
    }));
    rows.push(total_row);
    let mut out = table(&head, &rows);
    out.push_str(
        "<p class=\"muted\">Storage is Flame's video-disk counter, decode its CPU/GPU counter, output \
         its broadcast counter; unreadable frames could not be read or decoded.</p>\n",
    );
    out
}

/// frametest's lines: frames, fastest and slowest frame, data and frame rate, the bottleneck.
fn rates(r: &Report, d: &Doc<'_>) -> String {
    let t = &r.totals;
    let mut lines = vec![(
        "frames presented",
        format!(
            "{} of {} due{}",
            d.span("/totals/presented", 0),
            d.span("/totals/frames_due", 0),
            percent(t.presented, t.frames_due)
        ),
    )];
    let dropped = t.dropped.total();
    let skips: Vec<String> = [
        (r.streams.iter().map(|s| s.read_skipped).sum::<u64>(), "read"),
        (r.streams.iter().map(|s| s.decode_skipped).sum::<u64>(), "decoded"),
        (r.streams.iter().map(|s| s.output_skipped).sum::<u64>(), "output"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(n, stage)| format!("{n} not {stage}"))
    .collect();
    let skipped = if skips.is_empty() {
        String::new()
    } else {
        format!("; {} as they could not be in time", skips.join(", "))
    };
    lines
        .push(("frames dropped", format!("{dropped}{}{}", percent(dropped, t.frames_due), escape(&skipped))));
    if r.settings.no_drop {
        let late: u64 = r.streams.iter().map(|s| s.late_frames).sum();
        lines.push(("frames late", format!("{late}, waited {} ms in all", d.span("/totals/stall_ms", 1))));
    }
    // The fastest and slowest reads: one stream's figure each.
    let read = |pick: fn(f64, f64) -> bool, field: &str| {
        let mut best: Option<(usize, f64)> = None;
        for (i, s) in r.streams.iter().enumerate().filter(|(_, s)| s.latency.read.count > 0) {
            let v = if field == "min_ms" { s.latency.read.min_ms } else { s.latency.read.max_ms };
            if best.is_none_or(|(_, b)| pick(v, b)) {
                best = Some((i, v));
            }
        }
        best.map_or_else(
            || "-".to_owned(),
            |(i, _)| format!("{} ms", d.span(&format!("/streams/{i}/latency/read/{field}"), 3)),
        )
    };
    lines.push(("fastest frame read", read(|a, b| a < b, "min_ms")));
    lines.push(("slowest frame read", read(|a, b| a > b, "max_ms")));
    lines.push(("data rate", format!("{} MB/s", d.span("/totals/mb_per_s", 1))));
    lines.push(("frame rate", format!("{} fps", d.span("/totals/fps", 2))));
    if !t.bottleneck.is_empty() {
        let mut text = d.span("/totals/bottleneck", 0);
        let busiest = |field: &str, get: fn(&crate::StageUtilisation) -> f64| {
            let best = r
                .streams
                .iter()
                .enumerate()
                .max_by(|a, b| get(&a.1.utilisation).total_cmp(&get(&b.1.utilisation)))
                .map(|(i, _)| i);
            best.map_or_else(
                || "-".to_owned(),
                |i| format!("{}%", d.scaled(&format!("/streams/{i}/utilisation/{field}"), 100.0, 0)),
            )
        };
        let _ = write!(
            text,
            "; busy storage {}, decode {}, output {}",
            busiest("storage", |u| u.storage),
            busiest("decode", |u| u.decode),
            busiest("output", |u| u.output)
        );
        if t.early_drops.total() > 0 {
            let early: Vec<String> = DropCauseName::ALL
                .map(DropCauseName::word)
                .into_iter()
                .filter(|cause| d.u64(&format!("/totals/early_drops/{cause}")) > 0)
                .map(|cause| {
                    format!("{cause} {}", d.span_drops(&format!("/totals/early_drops/{cause}"), cause))
                })
                .collect();
            let _ = write!(text, "; dropped early {}: {}", t.early_drops.total(), early.join(", "));
        }
        lines.push(("bottleneck", text));
    }
    facts(&lines)
}

/// A row per stream: what it played and how.
fn streams(r: &Report, d: &Doc<'_>) -> String {
    let merged = !r.clients.is_empty();
    let mut head = vec![("stream", false)];
    if merged {
        head.push(("client", true));
    }
    head.extend([
        ("source", false),
        ("pacing", false),
        ("due", true),
        ("presented", true),
        ("storage", true),
        ("decode", true),
        ("output", true),
        ("unreadable", true),
        ("late", true),
        ("fps", true),
        ("MB/s", true),
        ("bottleneck", false),
        ("busy % s/d/o", true),
    ]);
    let staggered = r.streams.iter().any(|s| s.start_offset_s != 0.0);
    if staggered {
        head.push(("start s", true));
    }
    let rows: Vec<Vec<String>> = r
        .streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let p = |field: &str| format!("/streams/{i}/{field}");
            let mut row = vec![format!("<th scope=\"row\"{}>{}</th>", d.attrs(&p("name")), escape(&s.name))];
            if merged {
                row.push(if s.client.is_some() { d.td(&p("client"), 0) } else { td_n("-") });
            }
            row.push(format!(
                "<td><code{}>{}</code></td>",
                d.attrs(&p("source/location")),
                escape(&s.source.location)
            ));
            row.push(format!("<td{}>{}</td>", d.attrs(&p("fps")), escape(&s.fps)));
            row.push(d.td(&p("frames_due"), 0));
            row.push(d.td(&p("presented"), 0));
            for name in DropCauseName::ALL.map(DropCauseName::word) {
                row.push(d.td_drops(&p(&format!("dropped/{name}")), name));
            }
            row.push(d.td(&p("late_frames"), 0));
            row.push(d.td(&p("fps_achieved"), 2));
            row.push(d.td(&p("mb_per_s"), 1));
            row.push(format!("<td{}>{}</td>", d.attrs(&p("bottleneck")), escape(&s.bottleneck)));
            let busy: Vec<String> = ["storage", "decode", "output"]
                .iter()
                .map(|stage| d.scaled(&p(&format!("utilisation/{stage}")), 100.0, 0))
                .collect();
            row.push(format!("<td class=\"n\">{}</td>", busy.join(" / ")));
            if staggered {
                row.push(d.td(&p("start_offset_s"), 2));
            }
            row
        })
        .collect();
    if rows.is_empty() {
        return "<p class=\"muted\">No stream played.</p>\n".to_owned();
    }
    table(&head, &rows)
}

/// A merged run's row per client, then the cluster's figures.
fn clients(r: &Report, d: &Doc<'_>) -> String {
    let prioritised = r.clients.iter().any(|c| c.presenter_priority.is_some());
    let mut head = vec![
        ("client", true),
        ("host", false),
        ("transport", false),
        ("streams", true),
        ("due", true),
        ("presented", true),
        ("storage", true),
        ("decode", true),
        ("output", true),
        ("unreadable", true),
        ("fps", true),
        ("MB/s", true),
        ("CPU s/GB", true),
        ("peak RSS MB", true),
        ("clock offset ms", true),
        ("state", false),
    ];
    if prioritised {
        head.push(("priority", false));
    }
    let rows: Vec<Vec<String>> = r
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let p = |field: &str| format!("/clients/{i}/{field}");
            let mut row = vec![d.td(&p("rank"), 0), td(&c.host), td(&c.transport), d.td(&p("streams"), 0)];
            row.push(d.td(&p("frames_due"), 0));
            row.push(d.td(&p("presented"), 0));
            for name in DropCauseName::ALL.map(DropCauseName::word) {
                row.push(d.td_drops(&p(&format!("dropped/{name}")), name));
            }
            row.push(d.td(&p("fps"), 2));
            row.push(d.td(&p("mb_per_s"), 1));
            row.push(d.td(&p("cpu_s_per_gb"), 2));
            row.push(format!("<td class=\"n\">{}</td>", d.scaled(&p("peak_rss_bytes"), 1e-6, 1)));
            row.push(d.td(&p("clock_offset_ms"), 3));
            let state = match (c.state, c.last_heard_s) {
                (ClientState::Lost, Some(_)) => format!("lost at {} s", d.span(&p("last_heard_s"), 2)),
                (ClientState::Lost, None) => "lost".to_owned(),
                (ClientState::Reported, _) => d.span(&p("status"), 0),
                (ClientState::Idle, _) => "idle".to_owned(),
            };
            let class = if c.state == ClientState::Lost { " class=\"c-storage\"" } else { "" };
            row.push(format!("<td{class}>{state}</td>"));
            if prioritised {
                row.push(if c.presenter_priority.is_some() {
                    format!("<td>{}</td>", d.span(&p("presenter_priority"), 0))
                } else {
                    td("-")
                });
            }
            row
        })
        .collect();
    let mut out = table(&head, &rows);
    for (i, c) in r.clients.iter().enumerate() {
        if c.error.is_some() {
            let _ = writeln!(
                out,
                "<p class=\"problem\">Client {}: {}</p>",
                c.rank,
                d.span(&format!("/clients/{i}/error"), 0)
            );
        }
    }
    if let Some(c) = &r.cluster {
        let window_s = c.last_end_ns.saturating_sub(c.first_start_ns) as f64 / 1e9;
        out.push_str(&facts(&[
            (
                "cluster",
                format!(
                    "{} clients ({}), {} lost",
                    d.span("/cluster/n_clients", 0),
                    d.span("/cluster/launcher", 0),
                    d.span("/cluster/n_lost", 0)
                ),
            ),
            ("start skew", format!("{} ms", d.span("/cluster/start_skew_ms", 3))),
            ("max clock offset", format!("{} ms", d.span("/cluster/max_clock_offset_ms", 3))),
            (
                "IOR window",
                format!(
                    "{window_s:.2} s from the first start to the last end: {} MB/s, {} fps",
                    d.span("/totals/mb_per_s", 1),
                    d.span("/totals/fps", 2)
                ),
            ),
        ]));
    }
    out
}

/// The stages of a latency table: their names and JSON keys.
const STAGES: [(&str, &str); 7] = [
    ("open", "open"),
    ("read", "read"),
    ("close", "close"),
    ("decode", "decode"),
    ("output", "output"),
    ("slack", "slack"),
    ("pacing error", "pacing_error"),
];

/// Each stream's latency table (a merged run's are many: its run-wide table alone), and the
/// run-wide one over several streams.
fn latency(r: &Report, d: &Doc<'_>) -> String {
    let merged = !r.clients.is_empty();
    let mut out = String::new();
    if !merged {
        for (i, s) in r.streams.iter().enumerate() {
            if r.streams.len() > 1 {
                let _ = writeln!(out, "<h3>{}</h3>", escape(&s.name));
            }
            out.push_str(&latency_table(d, &format!("/streams/{i}/latency")));
        }
    }
    if r.latency.is_some() && (merged || r.streams.len() > 1) {
        let _ = writeln!(out, "<h3>{}</h3>", if merged { "All clients" } else { "All streams" });
        out.push_str(&latency_table(d, "/latency"));
    }
    if out.is_empty() {
        out.push_str("<p class=\"muted\">No latency was measured.</p>\n");
    }
    out.push_str(
        "<p class=\"muted\">Slack is the deadline minus the output's end (below 0 is late); the pacing \
         error is the presentation's time minus its due time.</p>\n",
    );
    out
}

fn latency_table(d: &Doc<'_>, base: &str) -> String {
    let head = [
        ("stage", false),
        ("frames", true),
        ("min", true),
        ("mean", true),
        ("p50", true),
        ("p90", true),
        ("p99", true),
        ("p99.9", true),
        ("max", true),
    ];
    let rows: Vec<Vec<String>> = STAGES
        .iter()
        .map(|(label, key)| {
            let p = |field: &str| format!("{base}/{key}/{field}");
            let count = d.u64(&p("count"));
            let mut row = vec![th(label), d.td(&p("count"), 0)];
            for field in ["min_ms", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"] {
                row.push(d.td_ms(&p(field), count));
            }
            row
        })
        .collect();
    table(&head, &rows)
}

/// The process's CPU, per GB read, per stage and the system's.
fn cpu(r: &Report, d: &Doc<'_>) -> String {
    let s = |pointer: &str| format!("{} s", d.span(pointer, 2));
    let mut lines =
        vec![("process", format!("user {}, sys {}", s("/cpu/process_user_s"), s("/cpu/process_sys_s")))];
    if r.totals.bytes_read > 0 {
        lines.push((
            "per GB read",
            format!(
                "user {}, sys {}, softirq {}, total {}",
                s("/cpu/user_s_per_gb"),
                s("/cpu/sys_s_per_gb"),
                s("/cpu/softirq_s_per_gb"),
                s("/cpu/total_s_per_gb")
            ),
        ));
    }
    lines.push((
        "stages",
        format!(
            "read {}, decode {}, output {}",
            s("/cpu/stages/read_s"),
            s("/cpu/stages/decode_s"),
            s("/cpu/stages/output_s")
        ),
    ));
    lines.push((
        "system",
        format!(
            "user {}, sys {}, softirq {}, iowait {}",
            s("/cpu/system/user_s"),
            s("/cpu/system/system_s"),
            s("/cpu/system/softirq_s"),
            s("/cpu/system/iowait_s")
        ),
    ));
    let mut out = facts(&lines);
    out.push_str(
        "<p class=\"muted\">Per GB is the client's cost of a gigabyte (10<sup>9</sup> bytes) read: the \
         process's user and system time and the system-wide softirq time, where the kernel receives \
         network traffic.</p>\n",
    );
    out
}

/// The process's memory and each stream's frame buffers.
fn memory(r: &Report, d: &Doc<'_>) -> String {
    let mb = |pointer: &str| format!("{} MB", d.scaled(pointer, 1e-6, 1));
    let mut out = facts(&[
        ("peak RSS", mb("/memory/peak_rss_bytes")),
        ("RSS at the end", mb("/memory/rss_bytes")),
        ("frame buffers", mb("/memory/pool_bytes")),
    ]);
    let rows: Vec<Vec<String>> = r
        .streams
        .iter()
        .enumerate()
        .filter(|(_, s)| s.pool_buffers.encoded + s.pool_buffers.decoded + s.pool_buffers.output > 0)
        .map(|(i, s)| {
            let p = |field: &str| format!("/streams/{i}/pool_buffers/{field}");
            let mb = |field: &str| format!("<td class=\"n\">{}</td>", d.scaled(&p(field), 1e-6, 1));
            vec![
                th(&s.name),
                d.td(&p("encoded"), 0),
                mb("encoded_bytes"),
                d.td(&p("decoded"), 0),
                mb("decoded_bytes"),
                d.td(&p("output"), 0),
                mb("output_bytes"),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str(&table(
            &[
                ("buffers", false),
                ("encoded", true),
                ("MB", true),
                ("decoded", true),
                ("MB", true),
                ("output", true),
                ("MB", true),
            ],
            &rows,
        ));
    }
    out
}

/// The run's settings.
fn settings(r: &Report, d: &Doc<'_>) -> String {
    let s = &r.settings;
    let v = |pointer: &str| d.span(pointer, 0);
    let mut lines = vec![
        ("fps", v("/settings/fps")),
        ("preroll frames", v("/settings/preroll")),
        ("prefetch frames", v("/settings/prefetch")),
        ("io depth", v("/settings/io_depth")),
        ("decode threads", v("/settings/decode_threads")),
        ("codec threads", v("/settings/codec_threads")),
        ("output stage", v("/settings/output_stage")),
        ("output threads", v("/settings/output_threads")),
        ("block size", format!("{} B ({})", v("/settings/block_size"), bytes(s.block_size))),
        ("O_DIRECT", v("/settings/direct")),
        ("cold cache", v("/settings/cold")),
        ("no-drop", v("/settings/no_drop")),
        ("loop", v("/settings/loop")),
        ("verify", v("/settings/verify")),
        ("frames", v("/settings/frames")),
        ("duration", unit(d, "/settings/duration_s", 1, " s")),
        ("max drops", v("/settings/max_drops")),
        ("order", v("/settings/order")),
    ];
    if s.seed.is_some() {
        lines.push(("seed", v("/settings/seed")));
    }
    if s.range.is_some() {
        lines.push(("range", v("/settings/range")));
    }
    lines.push(("max buffer", format!("{} MB", d.scaled("/settings/max_buffer_bytes", 1e-6, 1))));
    facts_grid(&lines)
}

/// Each stream's media and storage.
fn sources_and_storage(r: &Report, d: &Doc<'_>) -> String {
    let mut out = String::new();
    for (i, s) in r.streams.iter().enumerate() {
        if r.streams.len() > 1 {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&s.name));
        }
        let p = |field: &str| format!("/streams/{i}/{field}");
        let v = |field: &str| d.span(&p(field), 0);
        let src = &s.source;
        let mut lines = vec![
            ("location", format!("<code>{}</code>", v("source/location"))),
            ("pattern", format!("<code>{}</code>", v("source/pattern"))),
            ("format", v("source/format")),
            ("decoder", format!("{} ({})", v("source/decoder"), v("source/decode_mode"))),
            ("pixel format", v("source/pixel_format")),
            ("size", format!("{} × {}", v("source/width"), v("source/height"))),
            (
                "frames",
                format!(
                    "{} to {} ({} frames, {})",
                    v("source/first_frame"),
                    v("source/last_frame"),
                    v("source/n_frames"),
                    match src.gaps.len() {
                        0 => "no gap".to_owned(),
                        1 => "1 gap".to_owned(),
                        n => format!("{n} gaps"),
                    }
                ),
            ),
        ];
        if src.frame_rate.is_some() {
            lines.push(("source frame rate", v("source/frame_rate")));
        }
        if src.index.is_some() {
            lines.push(("index", v("source/index")));
        }
        if !src.output_path.is_empty() {
            lines.push(("output", v("source/output_path")));
        }
        let st = &s.storage;
        lines.push(("transport", v("storage/transport")));
        lines.push(("block size", format!("{} bytes ({})", v("storage/block_size"), bytes(st.block_size))));
        lines.push(("O_DIRECT", v("storage/direct")));
        lines.push(("reads", v("storage/n_reads")));
        if st.cold.requested {
            let mut cold = format!("{} files dropped from the page cache", v("storage/cold/files_dropped"));
            if st.cold.message.is_some() {
                let _ = write!(cold, " ({})", v("storage/cold/message"));
            }
            lines.push(("cold cache", cold));
        }
        let options: Vec<String> = st
            .options
            .keys()
            .map(|k| format!("{}={}", escape(k), v(&format!("storage/options/{}", segment(k)))))
            .collect();
        if !options.is_empty() {
            lines.push(("options", options.join(", ")));
        }
        if let Some(m) = &st.mount {
            let mut mount = format!(
                "<code>{}</code>: {} ({} from <code>{}</code>)",
                v("storage/mount/mount_point"),
                v("storage/mount/transport"),
                v("storage/mount/fstype"),
                v("storage/mount/source")
            );
            let options: Vec<String> = m
                .options
                .iter()
                .map(|(k, value)| {
                    if value.is_empty() {
                        escape(k)
                    } else {
                        format!("{}={}", escape(k), v(&format!("storage/mount/options/{}", segment(k))))
                    }
                })
                .collect();
            if !options.is_empty() {
                let _ = write!(mount, "; {}", options.join(", "));
            }
            lines.push(("mount", mount));
        }
        let pacing = if s.presenter_priority.is_some() {
            format!("{} at {} priority", v("fps"), v("presenter_priority"))
        } else {
            v("fps")
        };
        lines.push(("pacing", pacing));
        out.push_str(&facts(&lines));
        if !st.warnings.is_empty() {
            out.push_str("<ul class=\"problems\">\n");
            for j in 0..st.warnings.len() {
                let _ = writeln!(out, "<li>{}</li>", v(&format!("storage/warnings/{j}/message")));
            }
            out.push_str("</ul>\n");
        }
    }
    if out.is_empty() {
        out.push_str("<p class=\"muted\">No stream played.</p>\n");
    }
    out
}

/// The machine and the libraries.
fn environment(r: &Report, d: &Doc<'_>) -> String {
    let v = |pointer: &str| d.span(pointer, 0);
    let mut lines = vec![
        ("host", v("/environment/hostname")),
        ("kernel", v("/environment/kernel")),
        ("CPUs", v("/environment/cpus")),
    ];
    let libraries: Vec<String> = r
        .environment
        .libraries
        .keys()
        .map(|k| format!("{} {}", escape(k), v(&format!("/environment/libraries/{}", segment(k)))))
        .collect();
    if !libraries.is_empty() {
        lines.push(("libraries", libraries.join(", ")));
    }
    lines.push(("playsim", v("/playsim_version")));
    if r.started_at_unix_s > 0 {
        lines.push(("started", escape(&utc(r.started_at_unix_s))));
    }
    facts_grid(&lines)
}

/// Every frame that could not be read or decoded, with why.
fn unreadable(r: &Report, d: &Doc<'_>) -> String {
    let mut rows = Vec::new();
    for (i, s) in r.streams.iter().enumerate() {
        for j in 0..s.unreadable.len() {
            let p = |field: &str| format!("/streams/{i}/unreadable/{j}/{field}");
            rows.push(vec![
                th(&s.name),
                d.td(&p("frame_idx"), 0),
                d.td(&p("frame_number"), 0),
                format!("<td><code>{}</code></td>", d.span(&p("path"), 0)),
                format!("<td>{}</td>", d.span(&p("message"), 0)),
            ]);
        }
    }
    table(&[("stream", false), ("frame", true), ("number", true), ("file", false), ("why", false)], &rows)
}

/// The figure at `pointer` and its unit, or `-` alone when it is null.
fn unit(d: &Doc<'_>, pointer: &str, decimals: usize, unit: &str) -> String {
    match d.get(pointer) {
        Some(Value::Null) | None => d.span(pointer, decimals),
        Some(_) => format!("{}{unit}", d.span(pointer, decimals)),
    }
}

/// ` (97.5%)`, or nothing when there is nothing to divide by.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return String::new();
    }
    format!(" ({:.1}%)", part as f64 * 100.0 / whole as f64)
}

/// The distinct values, in order of first appearance, comma-separated.
fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for v in values.filter(|v| !v.is_empty()) {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(", ")
}
