//! The plot of a record run (`playsim record DEST ... --plot FILE.svg` or `.png`): each frame's
//! time through the write side, and the latency of each stage.
//!
//! The top panel is the timeline: x is the frame (its position in the run), and each frame's
//! bar stacks its stages from its arrival: queue wait (arrival to encode start), encode,
//! waiting for a writer, write, sync (`--sync frame`) and publish (the rename), so the bar's
//! top is the frame's arrival to published. With a rate, the frame period (1/fps) is a line:
//! a frame above it took longer than a frame's time, which the queue (`-q`) must absorb.
//! Dropped frames are marked on the axis, a colour per cause (input, encode, storage); failed
//! frames are crosses in their cause's colour. The bottom panel is a histogram of each stage's
//! latency over every stream's frames.
//!
//! With `--streams` above 1 the timeline shows one stream, the one that dropped or failed the
//! most (else the slowest), and the title says which.
//!
//! The figure is drawn as the run's plot is ([`crate::format::plot`]): SVG with plotters, a PNG being
//! that SVG rendered by resvg, with the same fonts and the same refusal when there is none.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::format::plot::{
    cause_colour, figure_bytes, latency_histogram, legend, shorten, whole, write_figure, DrawResult, Fonts,
    PlotError, PlotFormat, DECODE, LABEL, OUTPUT, READ, SIZE,
};
use crate::model::record::{figures, RecordCause, RecordFrame, RecordOutcome, RecordResult, RECORD_CAUSES};
use crate::model::DropCauseName;
use crate::rendering::{RenderError, Renderer};

/// Draws the record run to `path`: SVG or PNG by the extension, PNG text in the system's fonts.
pub fn write(result: &RecordResult, path: &Path) -> Result<(), PlotError> {
    write_with_fonts(result, path, &Fonts::system())
}

/// Draws the record run to `path`, a PNG's text in `fonts`.
pub fn write_with_fonts(result: &RecordResult, path: &Path, fonts: &Fonts) -> Result<(), PlotError> {
    write_figure(path, SIZE, fonts, |root| draw(result, root))
}

/// The record run's plot ([`write()`]'s figure) in one format: its `svg` and `png` renderers.
#[derive(Clone, Debug)]
pub struct RecordPlot {
    format: PlotFormat,
    fonts: Fonts,
}

impl RecordPlot {
    /// The plot as SVG.
    pub fn svg() -> RecordPlot {
        RecordPlot { format: PlotFormat::Svg, fonts: Fonts::system() }
    }

    /// The plot as PNG, its text in the system's fonts.
    pub fn png() -> RecordPlot {
        RecordPlot::png_with_fonts(Fonts::system())
    }

    /// The plot as PNG, its text in `fonts`.
    pub fn png_with_fonts(fonts: Fonts) -> RecordPlot {
        RecordPlot { format: PlotFormat::Png, fonts }
    }
}

impl Renderer<RecordResult> for RecordPlot {
    fn name(&self) -> &'static str {
        self.format.name()
    }

    fn extensions(&self) -> &'static [&'static str] {
        self.format.extensions()
    }

    fn render(&self, result: &RecordResult, out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        let bytes = figure_bytes(self.format, SIZE, &self.fonts, |root| draw(result, root))
            .map_err(RenderError::Draw)?;
        Ok(out.write_all(&bytes)?)
    }

    fn failure(&self, path: &Path, reason: &dyn std::fmt::Display) -> String {
        PlotError::new(path, reason.to_string()).to_string()
    }
}

/// The stages' colours: the I/O stage in the timeline plot's read blue, the CPU stage in its
/// decode green, the sync in its output purple; the waits in greys.
pub(crate) const QUEUE_WAIT: RGBColor = RGBColor(170, 180, 195);
pub(crate) const ENCODE: RGBColor = DECODE;
pub(crate) const WRITER_WAIT: RGBColor = RGBColor(215, 215, 215);
pub(crate) const WRITE: RGBColor = READ;
pub(crate) const SYNC: RGBColor = OUTPUT;
pub(crate) const PUBLISH: RGBColor = RGBColor(90, 90, 90);
/// Failed frames where they are counted without a cause.
pub(crate) const FAILED: RGBColor = RGBColor(0, 0, 0);

/// A cause's colour: storage as the timeline plot's storage, encode as its decode (the CPU
/// stage), input in a colour of its own.
pub(crate) fn record_cause_colour(cause: RecordCause) -> RGBColor {
    match cause {
        RecordCause::Input => RGBColor(23, 190, 207),
        RecordCause::Encode => cause_colour(DropCauseName::Decode),
        RecordCause::Storage => cause_colour(DropCauseName::Storage),
    }
}

/// A part of a frame's bar: its name, colour, and the times it spans.
type Segment = (&'static str, RGBColor, fn(&RecordFrame) -> Option<u64>, fn(&RecordFrame) -> Option<u64>);

/// A frame's stages, bottom to top, each from the end of the one below.
const SEGMENTS: [Segment; 6] = [
    ("queue wait", QUEUE_WAIT, |f| Some(f.due_ns), |f| f.encode_started_ns),
    ("encode", ENCODE, |f| f.encode_started_ns, |f| f.encoded_ns),
    ("waiting for a writer", WRITER_WAIT, |f| f.encoded_ns, |f| f.write_started_ns),
    ("write", WRITE, |f| f.write_started_ns, |f| f.written_ns),
    ("sync", SYNC, |f| f.written_ns, |f| f.synced_ns),
    ("publish", PUBLISH, |f| f.synced_ns.or(f.written_ns), |f| f.done_ns),
];

/// Height of the band holding the title's two lines.
const TITLE_BAND: u32 = 58;

fn draw(result: &RecordResult, root: &DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult {
    root.fill(&WHITE)?;
    let shown = shown_stream(result);
    let (band, body) = root.split_vertically(TITLE_BAND);
    let (line1, line2) = title(result, shown);
    band.draw(&Text::new(
        line1,
        (SIZE.0 as i32 / 2, 8),
        TextStyle::from(("sans-serif", 18).into_font()).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    band.draw(&Text::new(
        line2,
        (SIZE.0 as i32 / 2, 34),
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let (top, bottom) = body.split_vertically((SIZE.1 - TITLE_BAND) * 3 / 5);
    timeline(result, shown.map(|(stream, _)| stream), &top)?;
    let stages: Vec<(&str, RGBColor, Vec<f64>)> = SEGMENTS
        .iter()
        .filter(|(name, ..)| matches!(*name, "queue wait" | "encode" | "write" | "sync"))
        .map(|&(name, colour, from, to)| {
            (name, colour, result.run.records.iter().filter_map(|f| span_ms(f, from, to)).collect())
        })
        .collect();
    latency_histogram(&stages, &bottom)
}

/// Milliseconds between two of a frame's times, when it reached both.
fn span_ms(
    frame: &RecordFrame,
    from: fn(&RecordFrame) -> Option<u64>,
    to: fn(&RecordFrame) -> Option<u64>,
) -> Option<f64> {
    let (a, b) = (from(frame)?, to(frame)?);
    (b >= a).then(|| (b - a) as f64 / 1e6)
}

/// The stream the timeline shows when several recorded at once, and why: the one that dropped
/// or failed the most, else the one with the longest arrival to published; `None` for one
/// stream.
fn shown_stream(result: &RecordResult) -> Option<(u32, &'static str)> {
    let n_streams =
        result.run.records.iter().map(|r| r.stream + 1).max().unwrap_or(0).max(result.info.streams);
    if n_streams <= 1 {
        return None;
    }
    let badness = |stream: u32| {
        let frames = result.run.records.iter().filter(|r| r.stream == stream);
        let lost = frames.clone().filter(|r| r.outcome != RecordOutcome::Written).count();
        let slowest = frames.filter_map(|r| Some(r.done_ns?.saturating_sub(r.due_ns))).max().unwrap_or(0);
        (lost, slowest)
    };
    // The first of the worst: `max_by_key` keeps the last of equals, so look from the end.
    let worst = (0..n_streams).rev().max_by_key(|&s| badness(s)).unwrap_or(0);
    let why = if badness(worst).0 > 0 {
        "the one that dropped or failed the most"
    } else {
        "the slowest, none dropped"
    };
    Some((worst, why))
}

/// A rate as people write it: `24`, `23.976`, `29.97`.
fn fps_text(fps: f64) -> String {
    let text = format!("{fps:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The title's two lines: what was recorded, where and how; then how it went.
fn title(result: &RecordResult, shown: Option<(u32, &str)>) -> (String, String) {
    let f = figures(result);
    let info = &f.info;
    let rate = if info.fps > 0.0 {
        format!("at {} fps", fps_text(info.fps))
    } else {
        "as fast as possible".to_owned()
    };
    let storage =
        if info.storage.is_empty() { String::new() } else { format!(", as {}", shorten(&info.storage, 44)) };
    let line1 = format!(
        "record to {}: {} {} {rate}{storage}",
        shorten(&info.destination, 44),
        info.format,
        info.size
    );
    let stream = match shown {
        Some((stream, why)) => format!("; stream {stream} of {} shown, {why}", info.streams.max(stream + 1)),
        None => String::new(),
    };
    let line2 = format!(
        "{} of {} written; dropped {} (input {}, encode {}, storage {}); failed {}{stream}",
        f.frames_written,
        f.frames_arrived,
        f.frames_dropped,
        f.dropped_input,
        f.dropped_encode,
        f.dropped_storage,
        f.frames_failed
    );
    (line1, line2)
}

fn timeline(
    result: &RecordResult,
    stream: Option<u32>,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
) -> DrawResult {
    let mut frames: Vec<&RecordFrame> =
        result.run.records.iter().filter(|r| stream.is_none_or(|s| r.stream == s)).collect();
    frames.sort_by_key(|r| r.position);
    let period_ms = (result.info.fps > 0.0).then(|| 1e3 / result.info.fps).filter(|p| p.is_finite());
    // The bar's top: the frame's last time, from its arrival.
    let top = |f: &RecordFrame| {
        SEGMENTS
            .iter()
            .filter_map(|(_, _, _, to)| to(f))
            .max()
            .map(|t| t.saturating_sub(f.due_ns) as f64 / 1e6)
    };
    let highest = frames.iter().filter_map(|f| top(f)).fold(period_ms.unwrap_or(0.0), f64::max);
    let y_max = (highest * 1.1).max(1.0);
    let n = frames.iter().map(|f| f.position + 1).max().unwrap_or(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..n - 0.5, -y_max * 0.04..y_max)?;
    chart
        .configure_mesh()
        .x_desc("frame (position in the run)")
        .y_desc("time from arrival (ms), by stage")
        .x_label_formatter(&whole)
        .y_label_formatter(&|y| if y_max >= 10.0 { format!("{y:.0}") } else { format!("{y:.1}") })
        .label_style(("sans-serif", LABEL))
        .axis_desc_style(("sans-serif", LABEL + 1))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for (name, colour, from, to) in SEGMENTS {
        let bars: Vec<(f64, f64, f64)> = frames
            .iter()
            .filter_map(|f| {
                let (a, b) = (from(f)?, to(f)?);
                let ms = |t: u64| t.saturating_sub(f.due_ns) as f64 / 1e6;
                (b > a).then(|| (f.position as f64, ms(a), ms(b)))
            })
            .collect();
        if bars.is_empty() {
            continue;
        }
        chart
            .draw_series(
                bars.iter()
                    .map(|&(x, y0, y1)| Rectangle::new([(x - 0.4, y0), (x + 0.4, y1)], colour.filled())),
            )?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], colour.filled()));
    }
    if let Some(period) = period_ms {
        chart
            .draw_series(LineSeries::new([(-0.5, period), (n - 0.5, period)], BLACK.stroke_width(2)))?
            .label(format!("frame period (1/{} fps = {period:.1} ms)", fps_text(result.info.fps)))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    for cause in RECORD_CAUSES {
        let colour = record_cause_colour(cause);
        let at = |outcome: RecordOutcome| -> Vec<f64> {
            frames
                .iter()
                .filter(|f| f.outcome == outcome && f.cause == Some(cause))
                .map(|f| f.position as f64)
                .collect()
        };
        let dropped = at(RecordOutcome::Dropped);
        if !dropped.is_empty() {
            chart
                .draw_series(dropped.iter().map(|&x| TriangleMarker::new((x, 0.0), 7, colour.filled())))?
                .label(format!("dropped: {} ({})", cause.name(), dropped.len()))
                .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, colour.filled()));
        }
        let failed = at(RecordOutcome::Failed);
        if !failed.is_empty() {
            chart
                .draw_series(failed.iter().map(|&x| Cross::new((x, 0.0), 6, colour.stroke_width(3))))?
                .label(format!("failed: {} ({})", cause.name(), failed.len()))
                .legend(move |(x, y)| Cross::new((x + 10, y), 5, colour.stroke_width(3)));
        }
    }
    // A failed frame without a cause (none is expected) is still marked.
    let failed: Vec<f64> = frames
        .iter()
        .filter(|f| f.outcome == RecordOutcome::Failed && f.cause.is_none())
        .map(|f| f.position as f64)
        .collect();
    if !failed.is_empty() {
        chart
            .draw_series(failed.iter().map(|&x| Cross::new((x, 0.0), 6, FAILED.stroke_width(3))))?
            .label(format!("failed ({})", failed.len()))
            .legend(|(x, y)| Cross::new((x + 10, y), 5, FAILED.stroke_width(3)));
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::plot::tests::{dark_pixels, png_size};
    use crate::model::record::{RecordInfo, RecordRun};

    /// A frame of stream `stream` at `position`, 40 ms apart: written (1 ms queue wait, 10 ms
    /// encode, 20 ms write, 1 ms publish), or dropped or failed for `cause`.
    fn frame(stream: u32, position: u64, outcome: RecordOutcome, cause: Option<RecordCause>) -> RecordFrame {
        let due = position * 40_000_000;
        let written = outcome == RecordOutcome::Written;
        let failed = outcome == RecordOutcome::Failed;
        RecordFrame {
            stream,
            position,
            due_ns: due,
            encode_started_ns: (written || failed).then_some(due + 1_000_000),
            encoded_ns: (written || failed).then_some(due + 11_000_000),
            write_started_ns: (written || failed).then_some(due + 11_000_000),
            written_ns: written.then_some(due + 31_000_000),
            synced_ns: None,
            done_ns: written.then_some(due + 32_000_000),
            bytes: if written { 1_000_000 } else { 0 },
            outcome,
            cause,
            error: failed.then(|| format!("frame {position}: no space left on device")),
        }
    }

    fn sample(streams: u32) -> RecordResult {
        let mut records = Vec::new();
        for stream in 0..streams {
            for position in 0..12 {
                let (outcome, cause) = match (stream, position) {
                    (_, 3) if streams == 1 || stream == 1 => {
                        (RecordOutcome::Dropped, Some(RecordCause::Encode))
                    }
                    (_, 5) if streams == 1 || stream == 1 => {
                        (RecordOutcome::Dropped, Some(RecordCause::Storage))
                    }
                    (_, 7) if streams == 1 => (RecordOutcome::Dropped, Some(RecordCause::Input)),
                    (_, 9) if streams == 1 => (RecordOutcome::Failed, Some(RecordCause::Storage)),
                    _ => (RecordOutcome::Written, None),
                };
                records.push(frame(stream, position, outcome, cause));
            }
        }
        RecordResult {
            info: RecordInfo {
                destination: "/mnt/capture/shot".into(),
                format: "dpx 10-bit rgb".into(),
                size: "2048x1080".into(),
                parameters: "--fps 25 -q 4".into(),
                fps: 25.0,
                storage: "local files (page cache)".into(),
                streams,
            },
            run: RecordRun { records, end_ns: 12 * 40_000_000, ..RecordRun::default() },
        }
    }

    #[test]
    fn an_svg_has_its_title_axes_stages_period_and_drop_marks() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("record.svg");
        write(&sample(1), &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        for text in [
            "record to /mnt/capture/shot: dpx 10-bit rgb 2048x1080 at 25 fps, as local files (page cache)",
            "8 of 12 written; dropped 3 (input 1, encode 1, storage 1); failed 1",
            "frame (position in the run)",
            "time from arrival (ms), by stage",
            "queue wait",
            "encode",
            "write",
            "publish",
            "frame period (1/25 fps = 40.0 ms)",
            "dropped: input (1)",
            "dropped: encode (1)",
            "dropped: storage (1)",
            "failed: storage (1)",
            "latency per stage",
        ] {
            assert!(svg.contains(text), "no `{text}` in the svg");
        }
        // No sync was asked for, so there is no sync in the legend.
        assert!(!svg.contains(">sync<") && !svg.contains("\nsync\n"), "a sync stage with no syncs");
        // The marks are in their causes' colours.
        for cause in RECORD_CAUSES {
            let c = record_cause_colour(cause);
            let hex = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
            assert!(svg.contains(&hex), "no {hex} mark for {}", cause.name());
        }
    }

    #[test]
    fn several_streams_show_the_worst_and_say_which() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("streams.svg");
        write(&sample(3), &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        assert!(
            svg.contains("stream 1 of 3 shown, the one that dropped or failed the most"),
            "no stream named"
        );
        assert!(svg.contains("dropped: encode (1)") && svg.contains("dropped: storage (1)"));
        // No drops at all: the slowest is shown.
        let mut calm = sample(2);
        calm.run.records.retain(|r| r.stream == 0 || r.outcome == RecordOutcome::Written);
        for r in &mut calm.run.records {
            if r.stream == 0 {
                r.done_ns = r.done_ns.map(|t| t + 5_000_000);
            }
        }
        assert_eq!(shown_stream(&calm), Some((0, "the slowest, none dropped")));
    }

    #[test]
    fn a_png_is_the_same_figure_and_without_fonts_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("record.png");
        write(&sample(1), &path).expect("plot");
        let png = std::fs::read(&path).expect("png");
        assert_eq!(png_size(&png), SIZE);
        assert!(dark_pixels(&png, 0..30) > 200, "no title text drawn in the png");
        let no_fonts = tempfile::tempdir().expect("empty font dir");
        let err = write_with_fonts(&sample(1), &dir.path().join("b.png"), &Fonts::dir(no_fonts.path()))
            .expect_err("no font");
        assert!(err.to_string().contains("apt-get install fonts-dejavu-core"), "{err}");
        let err = write(&sample(1), Path::new("record.jpg")).expect_err("jpg");
        assert!(err.to_string().contains("for example --plot run.svg"), "{err}");
    }

    #[test]
    fn an_empty_or_unpaced_run_is_drawn_without_panic() {
        let dir = tempfile::tempdir().expect("temp dir");
        write(&RecordResult::default(), &dir.path().join("empty.svg")).expect("empty plot");
        let mut max = sample(1);
        max.info.fps = 0.0;
        let path = dir.path().join("max.svg");
        write(&max, &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        assert!(svg.contains("2048x1080 as fast as possible") && !svg.contains("frame period"), "unpaced");
        let rates = [23.976, 24.0, 24000.0 / 1001.0].map(fps_text);
        assert_eq!(rates, ["23.976", "24", "23.976"]);
        // Times out of order (a hostile JSON would not get here, but a clock might) are skipped.
        max.run.records[0].encoded_ns = Some(0);
        write(&max, &path).expect("plot of odd times");
    }

    #[test]
    fn the_renderer_writes_the_same_svg() {
        let mut out = Vec::new();
        RecordPlot::svg().render(&sample(1), &mut out).expect("render");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.svg");
        write(&sample(1), &path).expect("plot");
        assert_eq!(out, std::fs::read(&path).expect("svg"));
        assert_eq!(RecordPlot::png().extensions(), ["png"]);
    }
}
