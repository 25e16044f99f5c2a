//! A scenario's tally as a page: a row per run over its timed repetitions, and each
//! repetition. A tally has no JSON form, so its figures carry no `data-json`.

use std::fmt::Write as _;

use super::page::{escape, plural, table, td, td_n, text_details, th, verdict, Page};
use crate::model::tally::{RunSummary, Tally};
use crate::model::RunStatus;

/// The tally as a page.
pub fn tally_page(tally: &Tally) -> String {
    let n_runs = tally.runs.len();
    let subtitle =
        format!("{n_runs} run{} · playsim {}", if n_runs == 1 { "" } else { "s" }, env!("CARGO_PKG_VERSION"));
    let mut page = Page::new("tally", "Scenario tally", &escape(&subtitle));

    let repetitions = || tally.runs.iter().flat_map(|r| &r.timed);
    let dropped: u64 = repetitions().flat_map(|r| &r.dropped).map(|(_, n)| n).sum();
    let failed_frames: u64 = repetitions().map(|r| r.failed).sum();
    let failed_runs = repetitions().filter(|r| r.status != RunStatus::Complete).count();
    let played = tally.runs.iter().filter(|r| !r.timed.is_empty()).count();
    let (class, html) = if dropped == 0 && failed_frames == 0 {
        let class = if failed_runs == 0 && played == n_runs { "ok" } else { "warn" };
        let reps = plural(repetitions().count() as u64, "repetition");
        (class, format!("✓ 0 frames dropped over {reps} of {}", plural(played as u64, "run")))
    } else {
        let reps = plural(repetitions().count() as u64, "repetition");
        let mut html = format!("✗ {} dropped over {reps}", plural(dropped, "frame"));
        if failed_frames > 0 {
            let _ = write!(html, "; {} failed to write", plural(failed_frames, "frame"));
        }
        ("bad", html)
    };
    let mut html = html;
    if failed_runs > 0 {
        let _ = write!(html, "; {} did not complete", plural(failed_runs as u64, "repetition"));
    }
    page.push(&verdict(class, &escape(&html)));

    let mut rows = Vec::new();
    for run in &tally.runs {
        let timed = &run.timed;
        if timed.is_empty() {
            rows.push(vec![
                th(&run.name),
                td_n("0"),
                td(""),
                td(""),
                td(""),
                td(""),
                td("not played"),
                td(""),
            ]);
            continue;
        }
        let RunSummary {
            mean_fps,
            low_fps: low,
            high_fps: high,
            mean_mb_per_s: mean_mb,
            drops,
            failed,
            partial,
            failed_frames,
        } = run.summary();
        let total: u64 = drops.iter().map(|(_, n)| n).sum();
        let by_cause: Vec<String> = drops
            .iter()
            .map(|(cause, n)| {
                let class = if *n > 0 { format!("drop c-{}", cause_class(cause)) } else { "zero".to_owned() };
                format!("{} <span class=\"{class}\">{n}</span>", escape(cause))
            })
            .collect();
        let mut notes = Vec::new();
        if failed_frames > 0 {
            notes.push(format!("{} failed to write", plural(failed_frames, "frame")));
        }
        if failed > 0 {
            notes.push(format!("{failed} failed"));
        }
        if partial > 0 {
            notes.push(format!("{partial} interrupted"));
        }
        rows.push(vec![
            th(&run.name),
            td_n(&timed.len().to_string()),
            td_n(&format!("{mean_fps:.2}")),
            td_n(&format!("{low:.2} to {high:.2}")),
            td_n(&format!("{mean_mb:.1}")),
            format!("<td class=\"n {}\">{total}</td>", if total > 0 { "drop" } else { "zero" }),
            format!("<td>{}</td>", by_cause.join(", ")),
            td(&notes.join("; ")),
        ]);
    }
    let head = [
        ("run", false),
        ("repetitions", true),
        ("mean fps", true),
        ("fps range", true),
        ("mean MB/s", true),
        ("dropped", true),
        ("by cause", false),
        ("", false),
    ];
    let mut summary = table(&head, &rows);
    summary.push_str(
        "<p class=\"muted\">Over each run's timed repetitions (warm-ups left out): the mean frame and \
         data rate, and the drops summed. Playback's causes are storage, decode, output and unreadable; \
         record's input, encode and storage.</p>\n",
    );
    page.section("Runs", &summary);

    let mut each = String::new();
    for run in tally.runs.iter().filter(|r| !r.timed.is_empty()) {
        let causes: Vec<&str> = run.timed.iter().flat_map(|r| r.dropped.iter().map(|(c, _)| *c)).fold(
            Vec::new(),
            |mut seen, c| {
                if !seen.contains(&c) {
                    seen.push(c);
                }
                seen
            },
        );
        let mut head = vec![("repetition", true), ("fps", true), ("MB/s", true)];
        head.extend(causes.iter().map(|c| (*c, true)));
        head.extend([("failed", true), ("status", false)]);
        let rows: Vec<Vec<String>> = run
            .timed
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut row = vec![
                    td_n(&(i + 1).to_string()),
                    td_n(&format!("{:.2}", r.fps)),
                    td_n(&format!("{:.1}", r.mb_per_s)),
                ];
                for cause in &causes {
                    let n = r.dropped.iter().find(|(c, _)| c == cause).map_or(0, |(_, n)| *n);
                    let class =
                        if n > 0 { format!("n drop c-{}", cause_class(cause)) } else { "n zero".to_owned() };
                    row.push(format!("<td class=\"{class}\">{n}</td>"));
                }
                row.push(td_n(&r.failed.to_string()));
                row.push(td(status_name(r.status)));
                row
            })
            .collect();
        let _ = write!(each, "<h3>{}</h3>\n{}", escape(&run.name), table(&head, &rows));
    }
    if !each.is_empty() {
        page.section("Repetitions", &each);
    }
    page.push(&text_details("The text tally", &crate::format::tally::text(tally)));
    page.footer(&format!(
        "Written by playsim {}. A tally has no JSON form: its figures carry no <code>data-json</code>.",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// The class of a cause's colour: record's storage is playback's storage colour too.
fn cause_class(cause: &str) -> &str {
    match cause {
        "storage" | "decode" | "output" | "unreadable" | "input" | "encode" => cause,
        _ => "failed",
    }
}

fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Complete => "complete",
        RunStatus::Partial => "interrupted",
        RunStatus::Failed => "failed",
    }
}
