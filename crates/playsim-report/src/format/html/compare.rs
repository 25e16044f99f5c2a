//! A comparison's page: what each run was, its figures side by side (each later run marked
//! better or worse against the first), and the comparison's figure.
//!
//! The page's JSON form is the array of the runs' JSON forms, so each figure's pointer starts
//! with its run's index. Where a run's figure is one value of its JSON (not a sum), the
//! pointer to it is here, next to the kind's figures ([`Compared::pointer`]).

use std::fmt::Write as _;

use serde_json::Value;

use super::page::{drawn, escape, inline_svg, table, text_details, th, verdict, Doc, Page};
use crate::model::compare::{Better, Compared, Run};

/// The runs side by side as a page.
pub fn compare_page<T: Compared>(runs: &[Run<'_, T>]) -> String {
    let values: Vec<Value> = runs.iter().map(|run| run.report.json()).collect();
    let bases: Vec<String> = (0..runs.len()).map(|i| format!("/{i}")).collect();
    let docs: Vec<Doc<'_>> = values.iter().zip(&bases).map(|(v, base)| Doc::under(v, base)).collect();
    let names: Vec<&str> = runs.iter().map(|r| r.name).collect();
    let title = format!("Comparison of {} {}s", runs.len(), T::KIND);
    let subtitle = format!(
        "{} · the first is the baseline · playsim {}",
        escape(&names.join(", ")),
        escape(env!("CARGO_PKG_VERSION"))
    );
    let mut page = Page::new("compare", &title, &subtitle);
    page.push(&headline(runs, &docs));
    page.section("Runs side by side", &figures_table(runs, &docs));
    if !runs.is_empty() {
        let figure = inline_svg(
            drawn(&crate::format::compare_plot::ComparePlot::svg(), runs),
            "the runs side by side: frame rate, drops by cause, data rate, latency and CPU",
        );
        page.section("Figure", &figure);
    }
    page.push(&text_details("The text table", &crate::format::compare::compare(runs)));
    page.footer(&format!(
        "Written by playsim {}. Figures marked <code>data-json</code> are values of the runs' JSON \
         files, in the order compared: <code>/0/...</code> is the first file's.",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    page.finish()
}

/// Each run's drops: the verdict.
fn headline<T: Compared>(runs: &[Run<'_, T>], docs: &[Doc<'_>]) -> String {
    let Some(dropped) = T::FIGURES.iter().find(|f| f.label == "dropped") else {
        return String::new();
    };
    let mut any = false;
    let mut all = true;
    let parts: Vec<String> = runs
        .iter()
        .zip(docs)
        .map(|(run, d)| {
            let n = run.report.value(dropped.measure);
            any |= n > 0.0;
            all &= n > 0.0;
            let shown = shown(run.report, d, dropped.measure, 0);
            let class = if n > 0.0 { "drop c-total" } else { "zero" };
            format!("{}: <span class=\"{class}\">{shown}</span> dropped", escape(run.name))
        })
        .collect();
    let class = match (any, all) {
        (false, _) => "ok",
        (true, true) => "bad",
        (true, false) => "warn",
    };
    verdict(class, &parts.join(" · "))
}

/// The description rows, then a row per figure: each run's value, and for a later run its
/// difference from the first, ratio, and whether it is better or worse.
fn figures_table<T: Compared>(runs: &[Run<'_, T>], docs: &[Doc<'_>]) -> String {
    let mut head: Vec<(&str, bool)> = vec![("", false)];
    head.extend(runs.iter().map(|r| (r.name, true)));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (label, cell) in T::description(runs) {
        let mut row = vec![th(label)];
        row.extend(runs.iter().map(|run| format!("<td class=\"n\">{}</td>", escape(&cell(run.report)))));
        rows.push(row);
    }
    let Some(first) = runs.first() else {
        return "<p class=\"muted\">No runs to compare.</p>\n".to_owned();
    };
    for figure in T::FIGURES {
        let base = first.report.value(figure.measure);
        let label = figure.label.trim_start();
        let indent = if label.len() < figure.label.len() { " class=\"indent\"" } else { "" };
        let mut row = vec![format!("<th scope=\"row\"{indent}>{}</th>", escape(label))];
        for (i, (run, d)) in runs.iter().zip(docs).enumerate() {
            let value = run.report.value(figure.measure);
            let mut cell = shown(run.report, d, figure.measure, figure.decimals);
            if i > 0 {
                let diff = value - base;
                let ratio = if base != 0.0 { format!("{:.2}x", value / base) } else { "-".to_owned() };
                let (word, class) = if diff.abs() < 10f64.powi(-(figure.decimals as i32)) / 2.0 {
                    ("same", "same")
                } else if (diff > 0.0) == (figure.better == Better::Higher) {
                    ("better", "better")
                } else {
                    ("worse", "worse")
                };
                let _ = write!(
                    cell,
                    " <span class=\"{class}\">{diff:+.prec$} {ratio} {word}</span>",
                    prec = figure.decimals
                );
            }
            row.push(format!("<td class=\"n\">{cell}</td>"));
        }
        rows.push(row);
    }
    let mut out = table(&head, &rows);
    out.push_str(
        "<p class=\"muted\">Later runs: the value, its difference from the first run's, the ratio, and \
         better or worse where one way is better.</p>\n",
    );
    out
}

/// A run's figure: from its JSON, with its pointer, where it is one value of it; else worked
/// out (a sum), without one.
fn shown<T: Compared>(run: &T, d: &Doc<'_>, measure: T::Measure, decimals: usize) -> String {
    match run.pointer(measure) {
        Some(pointer) if d.get(&pointer).is_some_and(Value::is_number) => d.span(&pointer, decimals),
        _ => format!("{:.decimals$}", run.value(measure)),
    }
}
