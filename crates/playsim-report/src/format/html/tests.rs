//! Every page, of a realistic model of each kind: a whole document that needs nothing from
//! the network, every `data-json` figure equal to its model's JSON value and shown as it,
//! drops coloured by cause, strings escaped. With `PLAYSIM_HTML_SAMPLES=DIR` the pages are also
//! written to `DIR` to be looked at.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::*;
use crate::model::capacity::{CapacityBy, FirstDrop, Trial};
use crate::model::frametest::{
    FrameOutcome, FrameRecord, FrameSize, FrametestInfo, FrametestRun, NamePattern, DEFAULT_HEADER_BYTES,
};
use crate::model::matrix::{MatrixCell, MatrixRow};
use crate::model::record::{RecordCause, RecordFigures, RecordFrame, RecordInfo, RecordOutcome, RecordRun};
use crate::model::tally::{Repetition, TallyRun};
use crate::model::{DropCauseName, Drops, RunStatus};
use crate::rendering::Renderers;
use crate::testutil::{merged_sample, sample_report};

/// A name a page must escape.
const HOSTILE: &str = "<script>alert(\"x\")</script> & co";
const HOSTILE_ESCAPED: &str = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co";

/// What a page's `data-json` elements say.
struct Figures {
    pointers: BTreeSet<String>,
}

impl Figures {
    fn has(&self, pointer: &str) -> bool {
        self.pointers.contains(pointer)
    }

    fn assert_has(&self, pointers: &[&str]) {
        for pointer in pointers {
            assert!(self.has(pointer), "no data-json=\"{pointer}\" among {:?}", self.pointers);
        }
    }
}

/// Checks a page as the browser test will, and what the page's contract says besides: a whole
/// document, nothing fetched, every figure's value its JSON value and its text a formatting
/// of it.
fn check(html: &str, json: &Value) -> Figures {
    assert!(html.starts_with("<!doctype html>\n<html lang=\"en\">"), "{}", &html[..80.min(html.len())]);
    assert!(html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<style>").count(), 1, "one style element");
    for forbidden in
        ["<script", "<link", "<iframe", "<img", "<object", "src=", "href=", "url(", "@import", "@font-face"]
    {
        assert!(!html.to_ascii_lowercase().contains(forbidden), "`{forbidden}` in the page");
    }
    // The only address is the SVG namespace's, which is never fetched.
    for (at, _) in html.match_indices("http") {
        assert!(
            html[..at].ends_with("xmlns=\""),
            "an address in the page: {}",
            &html[at..(at + 60).min(html.len())]
        );
    }
    let mut pointers = BTreeSet::new();
    for (at, _) in html.match_indices(" data-json=\"") {
        let open = html[..at].rfind('<').unwrap();
        let close = at + html[at..].find('>').unwrap();
        let tag = &html[open..close];
        let attr = |name: &str| {
            let key = format!(" {name}=\"");
            tag.find(&key).map(|i| {
                let start = i + key.len();
                unescape(&tag[start..start + tag[start..].find('"').unwrap()])
            })
        };
        let pointer = attr("data-json").unwrap();
        let raw = attr("data-value").unwrap_or_else(|| panic!("{pointer} has no data-value: {tag}"));
        let value = json.pointer(&pointer).unwrap_or_else(|| panic!("{pointer} is not in the JSON"));
        assert_eq!(raw, value.to_string(), "data-value of {pointer}");
        let parsed: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(&parsed, value, "{pointer}");
        let text = unescape(html[close + 1..].split('<').next().unwrap()).trim().to_owned();
        let scale = attr("data-scale").map(|s| s.parse::<f64>().unwrap());
        check_text(&pointer, value, scale, &text);
        pointers.insert(pointer);
    }
    Figures { pointers }
}

/// The text shown of a figure is its value formatted as the module's contract says.
fn check_text(pointer: &str, value: &Value, scale: Option<f64>, text: &str) {
    match value {
        Value::Number(n) => {
            if text == "✓" || text == "✗" {
                assert!(pointer.ends_with("/best_streams"), "{pointer}: {text}");
                assert_eq!(text == "✓", n.as_u64().unwrap() >= 1, "{pointer}");
                return;
            }
            let shown: f64 = text.parse().unwrap_or_else(|_| panic!("{pointer}: `{text}` is not a number"));
            let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
            let expected = n.as_f64().unwrap() * scale.unwrap_or(1.0);
            let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + expected.abs() * 1e-12;
            assert!((shown - expected).abs() <= tolerance, "{pointer}: `{text}` for {expected}");
        }
        Value::String(s) => assert_eq!(text, s.trim(), "{pointer}"),
        Value::Null => assert_eq!(text, "-", "{pointer}"),
        Value::Bool(b) => assert_eq!(text, if *b { "yes" } else { "no" }, "{pointer}"),
        other => panic!("{pointer}: a figure of {other}"),
    }
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Writes `html` to `$PLAYSIM_HTML_SAMPLES/NAME` when that is set.
fn sample(name: &str, bytes: &[u8]) {
    if let Some(dir) = std::env::var_os("PLAYSIM_HTML_SAMPLES") {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn report_json(report: &Report) -> Value {
    serde_json::from_str(&crate::format::json::to_string_pretty(report)).unwrap()
}

#[test]
fn the_run_reports_page_has_every_figure_from_its_json() {
    let mut report = sample_report();
    report.streams[0].name = HOSTILE.into();
    report.streams[0].unreadable[0].message = format!("frame 1100: {HOSTILE}: no such file");
    report.streams[0].storage.options.insert("a/b~c".into(), "1".into());
    let html = report_page(&report);
    let figures = check(&html, &report_json(&report));
    figures.assert_has(&[
        "/totals/dropped/storage",
        "/totals/dropped/decode",
        "/totals/dropped/output",
        "/totals/dropped/unreadable",
        "/streams/0/dropped/storage",
        "/streams/0/dropped/unreadable",
        "/totals/presented",
        "/totals/frames_due",
        "/totals/fps",
        "/totals/mb_per_s",
        "/streams/0/fps_achieved",
        "/streams/0/mb_per_s",
        "/streams/0/latency/read/p99_ms",
        "/streams/0/latency/slack/min_ms",
        "/cpu/total_s_per_gb",
        "/cpu/stages/decode_s",
        "/memory/peak_rss_bytes",
        "/settings/io_depth",
        "/streams/0/storage/options/a~1b~0c",
        "/streams/0/unreadable/1/path",
    ]);
    assert!(figures.pointers.len() > 120, "{}", figures.pointers.len());
    // The verdict names the drops by cause, each coloured.
    assert!(html.contains("<p class=\"verdict bad\">✗ 6 frames dropped of"), "{html}");
    assert!(html.contains(
        "storage (video disk) <span class=\"drop c-storage\" data-json=\"/totals/dropped/storage\" data-value=\"3\">3</span>"
    ));
    assert!(
        html.contains("class=\"n zero\" data-json=\"/totals/dropped/output\" data-value=\"0\">0</td>"),
        "{html}"
    );
    // Every string of the model escaped, and the text summary folded in.
    assert!(!html.contains("<script>alert") && html.contains(HOSTILE_ESCAPED), "{html}");
    assert!(html.contains("<details>\n<summary>The text summary</summary>"));
    // The timeline inline, without its prolog.
    assert!(html.contains("<figure>\n<svg role=\"img\""), "no inline figure");
    assert!(!html.contains("<?xml"));
    assert!(html.contains("2026-01-01 00:00:00 UTC"));
    sample("report.html", html.as_bytes());

    // No drop: a green verdict.
    let mut clean = sample_report();
    clean.totals.dropped = Drops::default();
    clean.streams[0].dropped = Drops::default();
    let html = report_page(&clean);
    check(&html, &report_json(&clean));
    assert!(
        html.contains("<p class=\"verdict ok\">✓ 0 frames dropped of <span data-json=\"/totals/frames_due\"")
    );
}

#[test]
fn a_merged_reports_page_has_a_row_per_client_and_stream() {
    let report = merged_sample();
    let html = report_page(&report);
    let figures = check(&html, &report_json(&report));
    for i in 0..report.clients.len() {
        for cause in ["storage", "decode", "output", "unreadable"] {
            figures.assert_has(&[&format!("/clients/{i}/dropped/{cause}")]);
        }
        figures.assert_has(&[&format!("/clients/{i}/fps"), &format!("/clients/{i}/mb_per_s")]);
    }
    for i in 0..report.streams.len() {
        figures.assert_has(&[&format!("/streams/{i}/dropped/storage"), &format!("/streams/{i}/client")]);
    }
    figures.assert_has(&["/cluster/n_clients", "/cluster/start_skew_ms", "/latency/read/p99_ms"]);
    assert!(html.contains(">lost at <span data-json=\"/clients/3/last_heard_s\""), "{html}");
    sample("report-merged.html", html.as_bytes());
}

#[test]
fn a_report_of_nothing_and_of_a_failure_still_makes_a_page() {
    let report = Report {
        status: RunStatus::Failed,
        error: Some(format!("cannot open {HOSTILE}")),
        ..Report::default()
    };
    let html = report_page(&report);
    let figures = check(&html, &report_json(&report));
    figures.assert_has(&["/error", "/status"]);
    assert!(html.contains("verdict warn") && html.contains(HOSTILE_ESCAPED), "{html}");
    // Numbers that are not finite are 0 in the JSON, and so on the page.
    let mut nan = sample_report();
    nan.totals.fps = f64::NAN;
    let html = report_page(&nan);
    check(&html, &report_json(&nan));
    assert!(html.contains("data-json=\"/totals/fps\" data-value=\"0.0\">0.00<"));
}

fn capacity() -> Capacity {
    let trial = |candidate: u32, storage: u64, decode: u64| {
        Trial::new(
            candidate,
            Drops { storage, decode, ..Drops::default() },
            240 * u64::from(candidate),
            38.5 / f64::from(candidate),
            310.25 * f64::from(candidate),
        )
    };
    let mut failed = trial(5, 12, 3);
    failed.first_drop =
        Some(FirstDrop { client: 2, host: "ws<2>".into(), cause: DropCauseName::Storage, at_s: 3.125 });
    let mut nan = trial(4, 0, 0);
    nan.worst_slack_ms = f64::NAN;
    Capacity {
        sources: vec!["nfs://filer/export/shot".into(), HOSTILE.into()],
        by: CapacityBy::Streams,
        fps: Some("24000/1001".into()),
        window_s: 10.0,
        trials_per_candidate: 1,
        max: 64,
        best: 4,
        limit: Some(DropCauseName::Storage),
        margin_ms: Some(9.625),
        first_drop: failed.first_drop.clone(),
        clients: Some(3),
        trials: vec![trial(1, 0, 0), trial(2, 0, 0), nan, failed],
        ..Capacity::new("0.1.0")
    }
}

#[test]
fn the_capacity_page_gives_the_answer_and_every_trial() {
    let found = capacity();
    let html = capacity_page(&found);
    let figures = check(&html, &serde_json::to_value(&found).unwrap());
    figures.assert_has(&[
        "/best",
        "/limit",
        "/margin_ms",
        "/first_drop/client",
        "/trials/3/dropped/storage",
        "/trials/3/dropped/decode",
        "/trials/2/worst_slack_ms",
        "/trials/0/mb_per_s",
    ]);
    assert!(html.contains("<p class=\"verdict ok\">✓ <span data-json=\"/best\" data-value=\"4\">4</span> streams a client with no drop; 5 dropped, mostly for <span class=\"c-storage\" data-json=\"/limit\" data-value=\"&quot;storage&quot;\">storage</span>"), "{html}");
    assert!(
        html.contains("data-json=\"/trials/2/worst_slack_ms\" data-value=\"null\">-<"),
        "a NaN slack is null"
    );
    assert!(html.contains(HOSTILE_ESCAPED) && html.contains("ws&lt;2&gt;"));
    sample("capacity.html", html.as_bytes());

    let all = Capacity { best: 64, limit: None, first_drop: None, ..capacity() };
    let html = capacity_page(&all);
    check(&html, &serde_json::to_value(&all).unwrap());
    assert!(html.contains("✓ at least <span data-json=\"/best\" data-value=\"64\">64</span>"), "{html}");
}

/// A matrix as `playsim matrix` fills one: three formats by three rates, the reuse across
/// rates at work (a lowered maximum that passed, cells not searched after a 0).
fn matrix() -> Matrix {
    use DropCauseName::{Decode, Output, Storage};
    let trials = |passes: u32, fail: Option<(DropCauseName, u64)>| -> Vec<Trial> {
        let mut trials: Vec<Trial> = (1..=passes)
            .map(|n| {
                Trial::new(n, Drops::default(), 240 * u64::from(n), 30.0 / f64::from(n), 150.0 * f64::from(n))
            })
            .collect();
        if let Some((cause, n)) = fail {
            let mut d = Drops::default();
            match cause {
                Storage => d.storage = n,
                Decode => d.decode = n,
                Output => d.output = n,
                DropCauseName::Unreadable => d.unreadable = n,
            }
            trials.push(Trial::new(passes + 1, d, 240, -4.0, 150.0));
        }
        trials
    };
    let cell = |fps: &str, best: u32, limit: Option<DropCauseName>, max: u32, t: Vec<Trial>| MatrixCell {
        fps: fps.into(),
        best_streams: best,
        limit: limit.map(Into::into),
        max,
        margin_ms: (best > 0).then(|| 31.25 / f64::from(best)),
        inherited_from: None,
        trials: t,
        write_trials: Vec::new(),
    };
    let inherited = |fps: &str, from: &str, limit: DropCauseName| MatrixCell {
        fps: fps.into(),
        limit: Some(limit.into()),
        max: 8,
        inherited_from: Some(from.into()),
        ..MatrixCell::default()
    };
    Matrix {
        location: "/mnt/isilon/playsim-matrix".into(),
        rates: vec!["23.976".into(), "48".into(), "60".into()],
        window_s: 10.0,
        trials_per_candidate: 1,
        max: 8,
        cold: "each trial's frames dropped from the page cache before it (posix_fadvise DONTNEED); \
               rows that loop may read frames from the cache after their first loop"
            .into(),
        elapsed_s: 812.4,
        rows: vec![
            MatrixRow {
                name: "dpx-2k".into(),
                format: "dpx".into(),
                size: "2048x1080".into(),
                media: "/mnt/isilon/playsim-matrix/dpx-2k".into(),
                frames: Some(600),
                loops: false,
                cells: vec![
                    cell("23.976", 8, None, 8, trials(8, None)),
                    cell("48", 5, Some(Storage), 8, trials(5, Some((Storage, 17)))),
                    cell("60", 5, Some(Storage), 5, trials(5, None)),
                ],
            },
            MatrixRow {
                name: "exr-4k-piz".into(),
                format: "exr".into(),
                size: "4096x2160".into(),
                media: "/mnt/isilon/playsim-matrix/exr-4k-piz".into(),
                frames: Some(240),
                loops: true,
                cells: vec![
                    cell("23.976", 2, Some(Decode), 8, trials(2, Some((Decode, 41)))),
                    cell("48", 1, Some(Output), 2, trials(1, Some((Output, 3)))),
                    cell("60", 0, Some(Decode), 1, trials(0, Some((Decode, 9)))),
                ],
            },
            MatrixRow {
                name: format!("prores {HOSTILE}"),
                format: "prores".into(),
                size: "3840x2160".into(),
                media: "/mnt/isilon/playsim-matrix/prores-hq-uhd.mov".into(),
                frames: None,
                loops: false,
                cells: vec![
                    cell(
                        "23.976",
                        0,
                        Some(DropCauseName::Unreadable),
                        8,
                        trials(0, Some((DropCauseName::Unreadable, 240))),
                    ),
                    inherited("48", "23.976", DropCauseName::Unreadable),
                    inherited("60", "23.976", DropCauseName::Unreadable),
                ],
            },
        ],
        ..Matrix::new("0.1.0")
    }
}

#[test]
fn the_matrix_page_has_each_cells_streams_cause_and_margin() {
    let matrix = matrix();
    let html = matrix_page(&matrix);
    let figures = check(&html, &serde_json::to_value(&matrix).unwrap());
    for (r, row) in matrix.rows.iter().enumerate() {
        for (c, cell) in row.cells.iter().enumerate() {
            let p = |field: &str| format!("/rows/{r}/cells/{c}/{field}");
            figures.assert_has(&[&p("best_streams"), &p("limit")]);
            // A cell not searched has no margin: it says which rate it is as.
            let last = if cell.inherited_from.is_some() { p("inherited_from") } else { p("margin_ms") };
            figures.assert_has(&[&last]);
        }
    }
    figures.assert_has(&["/rows/0/cells/1/trials/5/dropped/storage", "/cold", "/max"]);
    for class in
        ["passed", "limited-storage", "carried-storage", "limited-decode", "limited-output", "not-searched"]
    {
        assert!(html.contains(&format!("<span class=\"swatch {class}\"></span>")), "no {class} cell");
    }
    assert!(html.contains("<figure>\n<svg role=\"img\" aria-label=\"the matrix"), "no grid picture");
    assert!(html.contains(HOSTILE_ESCAPED) && !html.contains("<script>"), "escaped in the table and the svg");
    sample("matrix.html", html.as_bytes());
    sample("matrix.svg", crate::format::matrix_plot::svg(&matrix).as_bytes());
    let mut png = Vec::new();
    crate::format::matrix_plot::MatrixPlot::png().render(&matrix, &mut png).unwrap();
    sample("matrix.png", &png);

    // A yes/no matrix shows ticks and crosses, each its cell's figure.
    let mut yes_no = matrix.clone();
    yes_no.max = 1;
    for row in &mut yes_no.rows {
        for cell in &mut row.cells {
            cell.max = 1;
            if cell.best_streams >= 1 {
                (cell.best_streams, cell.limit) = (1, None);
            }
        }
    }
    let html = matrix_page(&yes_no);
    check(&html, &serde_json::to_value(&yes_no).unwrap());
    assert!(html.contains("data-json=\"/rows/0/cells/0/best_streams\" data-value=\"1\">✓<"), "{html}");
    assert!(html.contains("data-json=\"/rows/1/cells/2/best_streams\" data-value=\"0\">✗<"), "{html}");
    sample("matrix-yes-no.html", html.as_bytes());
    let mut png = Vec::new();
    crate::format::matrix_plot::MatrixPlot::png().render(&yes_no, &mut png).unwrap();
    sample("matrix-yes-no.png", &png);
}

/// Two streams recorded at once, 2 s at 24 fps: stream 1 drops on storage from frame 30, and
/// one write fails.
fn record_result() -> RecordResult {
    let frame = |stream: u32, position: u64, outcome: RecordOutcome, cause: Option<RecordCause>| {
        let due = position * 41_666_667;
        let written = outcome == RecordOutcome::Written;
        let slow = if stream == 1 && position > 25 { 30_000_000 } else { 0 };
        RecordFrame {
            stream,
            position,
            due_ns: due,
            encode_started_ns: written.then_some(due + 1_000_000),
            encoded_ns: written.then_some(due + 12_000_000 + position * 10_000),
            write_started_ns: written.then_some(due + 12_500_000),
            written_ns: written.then_some(due + 20_000_000 + slow),
            synced_ns: None,
            done_ns: written.then_some(due + 21_000_000 + slow),
            bytes: if written { 8_912_896 } else { 0 },
            outcome,
            cause,
            error: (outcome == RecordOutcome::Failed)
                .then(|| format!("frame {position}: /capture/{HOSTILE}: no space left on device")),
        }
    };
    let mut records = Vec::new();
    for stream in 0..2 {
        for position in 0..48 {
            let (outcome, cause) = match (stream, position) {
                (1, 30..=33) => (RecordOutcome::Dropped, Some(RecordCause::Storage)),
                (1, 40) => (RecordOutcome::Failed, Some(RecordCause::Storage)),
                (0, 12) => (RecordOutcome::Dropped, Some(RecordCause::Encode)),
                _ => (RecordOutcome::Written, None),
            };
            records.push(frame(stream, position, outcome, cause));
        }
    }
    RecordResult {
        info: RecordInfo {
            destination: "/capture/take1".into(),
            format: "dpx 10-bit rgb".into(),
            size: "2048x1080".into(),
            parameters: "--fps 24 --streams 2 -q 4 --encoders 2 --writers 2 --sync none".into(),
            fps: 24.0,
            storage: "local files (page cache)".into(),
            streams: 2,
        },
        run: RecordRun {
            records,
            end_ns: 48 * 41_666_667 + 21_000_000,
            encode_cpu_ns: 1_400_000_000,
            write_cpu_ns: 300_000_000,
            ..RecordRun::default()
        },
    }
}

#[test]
fn the_record_page_has_its_drops_by_cause_rates_and_streams() {
    let result = record_result();
    let html = record_page(&result);
    let json = serde_json::from_str(&crate::format::record::json(&result)).unwrap();
    let figures = check(&html, &json);
    figures.assert_has(&[
        "/frames_dropped",
        "/dropped_input",
        "/dropped_encode",
        "/dropped_storage",
        "/frames_failed",
        "/frames_written",
        "/fps",
        "/mb_per_s",
        "/write/p99_ms",
        "/per_stream/1/frames_dropped",
    ]);
    assert!(html.contains("<p class=\"verdict bad\">✗ <span class=\"drop c-total\" data-json=\"/frames_dropped\" data-value=\"5\">5</span> frames dropped"), "{html}");
    assert!(html.contains(
        "encode <span class=\"drop c-encode\" data-json=\"/dropped_encode\" data-value=\"1\">1</span>"
    ));
    assert!(html.contains(HOSTILE_ESCAPED) && !html.contains("<script>"));
    assert!(html.contains("<figure>\n<svg role=\"img\""));
    sample("record.html", html.as_bytes());
}

#[test]
fn the_tally_page_sums_drops_by_cause_and_has_no_json_figures() {
    let repetition = |fps: f64, storage: u64, status: RunStatus| {
        let mut report = sample_report();
        report.totals.fps = fps;
        report.totals.dropped = Drops { storage, ..Drops::default() };
        report.status = status;
        Repetition::from(&report)
    };
    let record = RecordFigures {
        fps: 24.0,
        mb_per_s: 213.9,
        dropped_encode: 2,
        frames_failed: 1,
        ..RecordFigures::default()
    };
    let tally = Tally {
        runs: vec![
            TallyRun {
                name: "4k dpx".into(),
                timed: vec![
                    repetition(24.0, 0, RunStatus::Complete),
                    repetition(23.5, 3, RunStatus::Complete),
                ],
            },
            TallyRun { name: HOSTILE.into(), timed: vec![repetition(12.0, 0, RunStatus::Partial)] },
            TallyRun { name: "capture".into(), timed: vec![Repetition::from(&record)] },
            TallyRun { name: "skipped".into(), timed: vec![] },
        ],
    };
    let html = tally_page(&tally);
    let figures = check(&html, &Value::Null);
    assert!(figures.pointers.is_empty());
    assert!(
        html.contains(
            "<p class=\"verdict bad\">✗ 5 frames dropped over 4 repetitions; 1 frame failed to write"
        ),
        "{html}"
    );
    assert!(html.contains("storage <span class=\"drop c-storage\">3</span>"), "{html}");
    assert!(html.contains("encode <span class=\"drop c-encode\">2</span>"), "{html}");
    assert!(html.contains("not played") && html.contains(HOSTILE_ESCAPED) && !html.contains("<script>"));
    sample("tally.html", html.as_bytes());
}

/// frametest reading 2k frames at 24 fps: 46 transferred, 2 dropped, one failed.
fn frametest_result() -> FrametestResult {
    let size = FrameSize::preset("2k", DEFAULT_HEADER_BYTES).unwrap();
    let records: Vec<FrameRecord> = (0..49)
        .map(|position| {
            let due = position * 41_666_667;
            let mut r = FrameRecord::new(position, position, Some(due));
            if position == 20 || position == 21 {
                return r;
            }
            let took = 9_000_000 + (position % 7) * 3_100_000 + if position == 33 { 70_000_000 } else { 0 };
            r.issued_ns = Some(due);
            r.started_ns = Some(due + 100_000);
            r.opened_ns = Some(due + 400_000);
            r.transferred_ns = Some(due + 100_000 + took - 200_000);
            r.closed_ns = Some(due + 100_000 + took);
            r.done_ns = r.closed_ns;
            if position == 40 {
                r.outcome = FrameOutcome::Failed;
                r.error = Some(format!("frame 40 ({HOSTILE}): input/output error"));
            } else {
                r.outcome = FrameOutcome::Transferred;
                r.bytes = size.file_bytes;
            }
            r
        })
        .collect();
    FrametestResult {
        info: FrametestInfo {
            write: false,
            parameters: "-r 2k -n 49 -t 4 -q 4 -f 24".into(),
            location: "/mnt/nfs/ft".into(),
            pattern: NamePattern::playsim(),
            n_files: 49,
            size: Some(size),
            threads: 4,
            queue: 4,
            fps: Some("24".into()),
            decode_threads: Some(2),
            transport: "nfs over tcp (vers=4.2, nconnect=8)".into(),
            notes: vec!["cold: 49 files dropped from the page cache".into()],
        },
        run: FrametestRun {
            records,
            t0_ns: 120_000_000,
            end_ns: 49 * 41_666_667 + 30_000_000,
            decode_cpu: std::time::Duration::from_millis(880),
            ..FrametestRun::default()
        },
    }
}

#[test]
fn the_frametest_page_has_its_rates_drops_and_histogram() {
    let result = frametest_result();
    let html = frametest_page(&result);
    let json: Value = serde_json::from_str(&crate::format::frametest::json(&result)).unwrap();
    let figures = check(&html, &json);
    figures.assert_has(&[
        "/frames_transferred",
        "/frames_dropped",
        "/frames_failed",
        "/frame_rate_fps",
        "/data_rate_mb_per_s",
        "/avg_frame_ms",
        "/slowest_frame_ms",
        "/decode/avg_ms",
        "/errors/0",
    ]);
    assert!(figures.pointers.iter().any(|p| p.starts_with("/histogram/")));
    assert!(html.contains("<p class=\"verdict bad\">✗ <span class=\"drop c-total\" data-json=\"/frames_dropped\" data-value=\"2\">2</span> frames dropped"), "{html}");
    assert!(html.contains("aria-label=\"frames by frame time\""));
    assert!(html.contains(HOSTILE_ESCAPED) && !html.contains("<script>"));
    sample("frametest.html", html.as_bytes());
}

#[test]
fn the_comparison_pages_point_into_each_runs_file() {
    // Read back from the files' text, as `playsim compare` does: the page's values must be
    // the files' own.
    let a = sample_report();
    let mut b = sample_report();
    b.totals.fps = 23.976_023_976_023_978;
    b.totals.mb_per_s = 1_680.247_123_020_000_1;
    b.totals.dropped.storage = 0;
    b.streams[0].latency.read.p99_ms = 12.345_678_901_234_567;
    let files: Vec<(String, String)> = [("tcp.json", &a), ("rdma <b>.json", &b)]
        .iter()
        .map(|(name, r)| ((*name).to_owned(), crate::format::json::to_string_pretty(r)))
        .collect();
    let array = Value::Array(files.iter().map(|(_, text)| serde_json::from_str(text).unwrap()).collect());
    let crate::model::compare::Reports::Play(reports) = crate::model::compare::read(files).unwrap() else {
        panic!("not play")
    };
    let runs: Vec<Run<'_>> = reports.iter().map(|(name, report)| Run { name, report }).collect();
    let html = compare_page(&runs);
    let figures = check(&html, &array);
    figures.assert_has(&[
        "/0/totals/fps",
        "/1/totals/fps",
        "/1/totals/dropped/storage",
        "/0/totals/mb_per_s",
        "/1/totals/mb_per_s",
        "/1/streams/0/latency/read/p99_ms",
        "/0/cpu/total_s_per_gb",
    ]);
    assert!(html.contains("<body data-model=\"compare\">"));
    assert!(html.contains("rdma &lt;b&gt;.json") && !html.contains("<b>.json"));
    assert!(html.contains("class=\"better\">"), "{html}");
    sample("compare.html", html.as_bytes());

    let info = RecordInfo {
        destination: "/capture".into(),
        format: "dpx".into(),
        streams: 1,
        ..RecordInfo::default()
    };
    let ra = RecordFigures {
        info: info.clone(),
        frames_arrived: 240,
        frames_written: 240,
        fps: 24.0,
        mb_per_s: 212.4,
        end_sync_ms: Some(3.5),
        ..RecordFigures::default()
    };
    let rb = RecordFigures {
        info,
        frames_written: 230,
        frames_dropped: 10,
        dropped_storage: 10,
        fps: 23.0,
        end_sync_ms: None,
        ..ra.clone()
    };
    let runs = [Run { name: "a.json", report: &ra }, Run { name: "b.json", report: &rb }];
    let html = compare_page(&runs);
    let array = Value::Array(vec![serde_json::to_value(&ra).unwrap(), serde_json::to_value(&rb).unwrap()]);
    let figures = check(&html, &array);
    figures.assert_has(&[
        "/0/fps",
        "/1/frames_dropped",
        "/1/dropped_storage",
        "/0/mb_per_s",
        "/0/end_sync_ms",
    ]);
    assert!(!figures.has("/1/end_sync_ms"), "a run without an end sync has no figure of it");
    sample("compare-record.html", html.as_bytes());
}

#[test]
fn every_models_html_renderer_is_found_by_its_extension() {
    fn html<M: ?Sized>(renderers: &Renderers<M>, model: &M) -> String {
        for path in ["x.html", "X.HTM"] {
            assert_eq!(renderers.for_path(path.as_ref()).unwrap().name(), "html", "{path}");
        }
        let mut out = Vec::new();
        renderers.by_name("html").unwrap().render(model, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }
    let report = sample_report();
    assert_eq!(html(&Renderers::<Report>::enabled(), &report), report_page(&report));
    let mut capacities = Renderers::new();
    crate::registry::register_capacity_renderers(&mut capacities);
    assert_eq!(html(&capacities, &capacity()), capacity_page(&capacity()));
    assert_eq!(html(&Renderers::matrix(), &matrix()), matrix_page(&matrix()));
    assert_eq!(html(&Renderers::record(), &record_result()), record_page(&record_result()));
    let tally = Tally::default();
    assert!(html(&Renderers::tally(), &tally).contains("data-model=\"tally\""));
    let mut frametests = Renderers::new();
    crate::registry::register_frametest_renderers(&mut frametests);
    assert_eq!(html(&frametests, &frametest_result()), frametest_page(&frametest_result()));
    let runs = [Run { name: "a", report: &report }];
    assert!(html(&Renderers::compare(), &runs[..]).contains("data-model=\"compare\""));
    let err =
        Renderers::<[Run<'_>]>::compare().by_name("html").unwrap().render(&[], &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("no runs to compare"), "{err}");
}
