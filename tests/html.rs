//! The one-file HTML reports in headless Chromium: each report command writes `--html` beside
//! `--json`; Chromium opens the page from disk with the flags a closed network needs, its DOM
//! is dumped, and every number the page marks with `data-json` (a JSON pointer into the
//! JSON output) and `data-value` must equal the JSON's, and show in the element's text; then
//! a screenshot of each page is kept in `target/html-screenshots/` to look at.
//!
//! Chromium comes from Debian's packages (`cargo xtask deps`). Without it the tests say
//! SKIPPED, unless `PLAYSIM_REQUIRE_CHROMIUM` is set, as `cargo xtask test`'s browser step
//! sets it: there they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::util::{playsim, run};

/// A simulated link that plays 256x144 DPX at 24 fps with room to spare: exact and fast.
const LINK: &str = "sim://lan?bw=20MB/s&lat=1ms&jitter=0&seed=1&format=dpx&preset=256x144&frames=48";

/// The Chromium to use, or `None` (after saying SKIPPED) when there is none and none is
/// required.
fn chromium() -> Result<Option<PathBuf>> {
    let path = std::env::var_os("PLAYSIM_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if path.exists() {
        return Ok(Some(path));
    }
    if std::env::var_os("PLAYSIM_REQUIRE_CHROMIUM").is_some() {
        bail!("no Chromium at {} (cargo xtask deps installs Debian's chromium)", path.display());
    }
    eprintln!("SKIPPED: no Chromium at {} (cargo xtask deps installs it)", path.display());
    Ok(None)
}

/// Chromium started headless as a closed network needs it, with a profile of its own.
fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut command = Command::new(chromium);
    command
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        .args(["--no-first-run", "--disable-component-update", "--disable-sync", "--disable-quic"])
        .args(["--disable-extensions", "--hide-scrollbars", "--virtual-time-budget=2000"])
        .arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// The page's DOM as Chromium parsed it.
fn dump_dom(chromium: &Path, page: &Path) -> Result<String> {
    let profile = tempfile::tempdir()?;
    let output = headless(chromium, profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .context("starting chromium")?;
    ensure!(
        output.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dom = String::from_utf8(output.stdout).context("the DOM is not UTF-8")?;
    ensure!(dom.contains("<body"), "chromium gave no DOM for {}:\n{dom}", page.display());
    Ok(dom)
}

/// A screenshot of the page in `target/html-screenshots/NAME.png`; returns its path.
fn screenshot(chromium: &Path, page: &Path, name: &str) -> Result<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../html-screenshots");
    std::fs::create_dir_all(&dir)?;
    let png = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    let profile = tempfile::tempdir()?;
    let output = headless(chromium, profile.path())
        .arg("--window-size=1280,1600")
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .context("starting chromium")?;
    ensure!(
        output.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(&png).with_context(|| format!("no screenshot at {}", png.display()))?;
    ensure!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{}: {} bytes",
        png.display(),
        bytes.len()
    );
    Ok(png)
}

/// One element the page marks: its JSON pointer, raw value, the scale its text shows it at
/// (`1e-6` for bytes as MB), and its text.
#[derive(Debug)]
struct Marked {
    pointer: String,
    value: String,
    scale: Option<f64>,
    text: String,
}

/// Every element with `data-json` in `dom`, with its `data-value` and the text up to the next
/// tag.
fn marked(dom: &str) -> Result<Vec<Marked>> {
    let mut found = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find("data-json=\"") {
        let tag_start = rest[..at].rfind('<').context("data-json outside a tag")?;
        let tag_end = at + rest[at..].find('>').context("an unclosed tag")?;
        let tag = &rest[tag_start..tag_end];
        let attribute = |name: &str| -> Option<String> {
            let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
            let len = tag[start..].find('"')?;
            Some(unescape(&tag[start..start + len]))
        };
        let pointer = attribute("data-json").context("data-json")?;
        let value = attribute("data-value").with_context(|| format!("{pointer}: no data-value in {tag}"))?;
        let scale = match attribute("data-scale") {
            Some(scale) => {
                Some(scale.parse::<f64>().with_context(|| format!("{pointer}: data-scale {scale}"))?)
            }
            None => None,
        };
        let after = &rest[tag_end + 1..];
        let text = unescape(&after[..after.find('<').unwrap_or(after.len())]);
        found.push(Marked { pointer, value, scale, text });
        rest = &rest[tag_end..];
    }
    Ok(found)
}

/// The first number in `text` and its decimals, thousands separators dropped (`1,234.5 MB/s`
/// is 1234.5 with 1).
fn first_number(text: &str) -> Option<(f64, usize)> {
    let start = text.find(|c: char| c.is_ascii_digit() || c == '-')?;
    let number: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-'))
        .filter(|c| *c != ',')
        .collect();
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    Some((number.parse().ok()?, decimals))
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Checks every marked number of `dom` against `json`, and that each of `required` pointers is
/// on the page; returns how many were checked.
fn check_against_json(dom: &str, json: &Value, required: &[&str]) -> Result<usize> {
    let marks = marked(dom)?;
    for mark in &marks {
        let expected = json
            .pointer(&mark.pointer)
            .with_context(|| format!("the page marks {} but the JSON has no such value", mark.pointer))?;
        let shown: Value = serde_json::from_str(&mark.value)
            .with_context(|| format!("{}: data-value {:?} is not JSON", mark.pointer, mark.value))?;
        ensure!(
            &shown == expected || (shown.as_f64().is_some() && shown.as_f64() == expected.as_f64()),
            "{}: the page says {shown}, the JSON {expected}",
            mark.pointer
        );
        // A count shows exactly; any other number as its value times its scale, rounded.
        match (expected.as_u64(), expected.as_f64()) {
            (Some(n), _) if mark.scale.is_none() => {
                let digits: String = mark.text.chars().filter(char::is_ascii_digit).collect();
                ensure!(digits == n.to_string(), "{}: the page shows {:?} for {n}", mark.pointer, mark.text);
            }
            (_, Some(x)) => {
                let (shown, decimals) = first_number(&mark.text)
                    .with_context(|| format!("{}: the page shows {:?} for {x}", mark.pointer, mark.text))?;
                let want = x * mark.scale.unwrap_or(1.0);
                // Rounded to the decimals shown (or to 3 significant digits, whichever is looser).
                let rounding = 0.5 * 10f64.powi(-(decimals as i32)) * 1.001;
                ensure!(
                    (shown - want).abs() <= rounding.max(want.abs() * 0.005),
                    "{}: the page shows {:?} for {want}",
                    mark.pointer,
                    mark.text
                );
            }
            _ => {}
        }
    }
    for pointer in required {
        ensure!(
            marks.iter().any(|m| m.pointer == *pointer),
            "the page does not show {pointer} (it marks: {})",
            marks.iter().map(|m| m.pointer.as_str()).collect::<Vec<_>>().join(" ")
        );
    }
    Ok(marks.len())
}

/// No reference to anything off the page: no script or style sheet fetched, no font or image
/// from the network.
fn ensure_self_contained(page: &str) -> Result<()> {
    for bad in ["<script src", "<link", "@import", "url(http", "src=\"http", "href=\"http"] {
        ensure!(!page.contains(bad), "the page refers to something off the page: {bad}");
    }
    Ok(())
}

/// A page's DOM check and screenshot: the command ran, wrote `html` and `json`.
fn check_page(chromium: &Path, name: &str, html: &Path, json: &Path, required: &[&str]) -> Result<()> {
    let page = std::fs::read_to_string(html).with_context(|| format!("reading {}", html.display()))?;
    ensure!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"), "{name}: not HTML");
    ensure_self_contained(&page)?;
    let value: Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
    let dom = dump_dom(chromium, html)?;
    let checked = check_against_json(&dom, &value, required).with_context(|| format!("the {name} page"))?;
    let png = screenshot(chromium, html, name)?;
    eprintln!("{name}: {checked} numbers on the page equal the JSON's; screenshot {}", png.display());
    Ok(())
}

#[test]
fn a_play_report_in_chromium_shows_the_jsons_counts() -> Result<()> {
    let Some(chromium) = chromium()? else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let (html, json) = (dir.path().join("run.html"), dir.path().join("run.json"));
    let done = run(playsim()
        .args(["play", LINK, "--streams", "2", "--frames", "48", "--quiet", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(&html))?;
    done.ensure_code(0)?;
    check_page(
        &chromium,
        "play",
        &html,
        &json,
        &[
            "/totals/dropped/storage",
            "/totals/dropped/decode",
            "/totals/dropped/output",
            "/totals/dropped/unreadable",
            "/totals/fps",
            "/totals/mb_per_s",
            "/streams/1/dropped/storage",
        ],
    )
}

#[test]
fn a_matrix_capacity_record_and_comparison_in_chromium_show_the_jsons_figures() -> Result<()> {
    let Some(chromium) = chromium()? else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let path = |name: &str| dir.path().join(name);

    let matrix = run(playsim()
        .args(["matrix", "sim://lan?bw=8.5MB/s&lat=1ms&jitter=0&seed=1", "--formats", "dpx:256x144"])
        .args(["--rates", "24,48", "--window", "1s", "--max", "3", "--quiet", "--json"])
        .arg(path("m.json"))
        .arg("--html")
        .arg(path("m.html")))?;
    matrix.ensure_code(0)?;
    check_page(&chromium, "matrix", &path("m.html"), &path("m.json"), &["/rows/0/cells/0/best_streams"])?;

    let capacity = run(playsim()
        .args(["capacity", LINK, "--window", "1s", "--trials", "1", "--max", "4", "--quiet", "--json"])
        .arg(path("c.json"))
        .arg("--html")
        .arg(path("c.html")))?;
    capacity.ensure_code(0)?;
    check_page(&chromium, "capacity", &path("c.html"), &path("c.json"), &["/best"])?;

    let record = run(playsim()
        .args(["record"])
        .arg(path("rec"))
        .args(["--format", "dpx", "--preset", "256x144", "--frames", "24", "--json"])
        .arg(path("r.json"))
        .arg("--html")
        .arg(path("r.html")))?;
    record.ensure_code(0)?;
    check_page(&chromium, "record", &path("r.html"), &path("r.json"), &[])?;

    for (k, streams) in ["1", "2"].iter().enumerate() {
        run(playsim()
            .args(["play", LINK, "--streams", streams, "--frames", "24", "--quiet", "--json"])
            .arg(path(&format!("p{k}.json"))))?
        .ensure_code(0)?;
    }
    let compare = run(playsim()
        .arg("compare")
        .arg(path("p0.json"))
        .arg(path("p1.json"))
        .arg("--html")
        .arg(path("cmp.html")))?;
    compare.ensure_code(0)?;
    let page = std::fs::read_to_string(path("cmp.html"))?;
    ensure_self_contained(&page)?;
    let dom = dump_dom(&chromium, &path("cmp.html"))?;
    ensure!(dom.contains("p0.json") && dom.contains("p1.json"), "the comparison names its runs:\n{dom}");
    screenshot(&chromium, &path("cmp.html"), "compare")?;
    Ok(())
}
