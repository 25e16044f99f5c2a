//! A capacity search's page: the answer as the verdict, what was searched, and every trial.

use serde_json::Value;

use super::page::{escape, facts, table, td_n, text_details, verdict, Doc, Page};
use crate::model::capacity::{Capacity, CapacityBy};
use crate::model::DropCauseName;

/// The capacity search's result as a page.
pub fn capacity_page(found: &Capacity) -> String {
    let json = serde_json::to_value(found).unwrap_or(Value::Null);
    let d = Doc::new(&json);
    let what = match (found.by, found.clients) {
        (CapacityBy::Streams, Some(_)) => "streams a client",
        (by, _) => by.as_str(),
    };
    let title = format!("Capacity of {}", found.sources.join(", "));
    let trials = found.trials_per_candidate;
    let subtitle = format!(
        "{}{} s a trial, {} trial{} a candidate, up to {} · playsim {}",
        match found.by {
            CapacityBy::Streams if found.fps.is_some() => format!("streams at {} fps · ", d.span("/fps", 0)),
            CapacityBy::Streams => "streams · ".to_owned(),
            _ => format!("{} · ", escape(found.by.as_str())),
        },
        d.span("/window_s", 1),
        d.span("/trials_per_candidate", 0),
        if trials == 1 { "" } else { "s" },
        d.span("/max", 0),
        d.span("/playsim_version", 0),
    );
    let mut page = Page::new("capacity", &title, &subtitle);

    let best = d.span("/best", 0);
    let margin = match found.margin_ms {
        Some(m) if m.is_finite() => {
            format!("; margin (worst slack at the answer) {} ms", d.span("/margin_ms", 1))
        }
        _ => String::new(),
    };
    let (class, html) = match found.limit {
        Some(limit) => {
            let cause = limit.word();
            let first = if found.first_drop.is_some() {
                format!(
                    " (first on client {} ({}), {} at {} s)",
                    d.span("/first_drop/client", 0),
                    d.span("/first_drop/host", 0),
                    d.span("/first_drop/cause", 0),
                    d.span("/first_drop/at_s", 2),
                )
            } else {
                String::new()
            };
            (
                if found.best > 0 { "ok" } else { "bad" },
                format!(
                    "{} {best} {} with no drop; {} dropped, mostly for <span class=\"c-{cause}\"{}>{cause}</span>{first}{margin}",
                    if found.best > 0 { "✓" } else { "✗" },
                    escape(what),
                    found.best.saturating_add(1),
                    d.attrs("/limit"),
                ),
            )
        }
        None => {
            ("ok", format!("✓ at least {best} {} (the maximum tried) with no drop{margin}", escape(what)))
        }
    };
    page.push(&verdict(class, &html));
    if let Some(why) = &found.interrupted {
        page.push(&verdict(
            "warn",
            &format!(
                "Stopped ({}) before the search ended: the answer is at least {best}, from the trials done",
                escape(why)
            ),
        ));
    }

    let sources: Vec<String> = (0..found.sources.len())
        .map(|i| format!("<code>{}</code>", d.span(&format!("/sources/{i}"), 0)))
        .collect();
    let mut lines = vec![("sources", sources.join(", ")), ("varied", d.span("/by", 0))];
    if found.fps.is_some() {
        lines.push(("fps", d.span("/fps", 0)));
    }
    if found.clients.is_some() {
        lines.push(("clients", d.span("/clients", 0)));
    }
    lines.extend([
        ("trial", format!("{} s", d.span("/window_s", 1))),
        ("trials a candidate", d.span("/trials_per_candidate", 0)),
        ("maximum", d.span("/max", 0)),
    ]);
    page.section("What was searched", &facts(&lines));
    page.section("Trials", &trials_table(&d, "/trials", found.trials.len()));
    page.push(&text_details("The text result", &crate::format::capacity::text(found)));
    page.footer(&format!(
        "Written by playsim {}. Figures marked <code>data-json</code> are the result's JSON values \
         (<code>playsim capacity --json</code>).",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// A table of `n` trials at `base` (`/trials`, or a matrix cell's): each candidate, pass or
/// fail, its drops by cause, worst slack and data rate.
pub(crate) fn trials_table(d: &Doc<'_>, base: &str, n: usize) -> String {
    let head = [
        ("candidate", true),
        ("result", false),
        ("due", true),
        ("storage", true),
        ("decode", true),
        ("output", true),
        ("unreadable", true),
        ("worst slack ms", true),
        ("MB/s", true),
        ("first drop", false),
    ];
    let rows: Vec<Vec<String>> = (0..n)
        .map(|i| {
            let p = |field: &str| format!("{base}/{i}/{field}");
            let passed = d.get(&p("passed")).and_then(Value::as_bool).unwrap_or(false);
            let mut row = vec![
                d.td(&p("candidate"), 0),
                if passed {
                    "<td class=\"better\">pass</td>".to_owned()
                } else {
                    "<td class=\"worse\"><strong>FAIL</strong></td>".to_owned()
                },
                d.td(&p("frames_due"), 0),
            ];
            for name in DropCauseName::ALL.map(DropCauseName::word) {
                row.push(d.td_drops(&p(&format!("dropped/{name}")), name));
            }
            row.push(d.td(&p("worst_slack_ms"), 1));
            row.push(d.td(&p("mb_per_s"), 1));
            row.push(if d.get(&p("first_drop")).is_some() {
                format!(
                    "<td>client {} ({}), {} at {} s</td>",
                    d.span(&p("first_drop/client"), 0),
                    d.span(&p("first_drop/host"), 0),
                    d.span(&p("first_drop/cause"), 0),
                    d.span(&p("first_drop/at_s"), 2)
                )
            } else {
                td_n("")
            });
            row
        })
        .collect();
    if rows.is_empty() {
        return "<p class=\"muted\">No trial was run.</p>\n".to_owned();
    }
    table(&head, &rows)
}
