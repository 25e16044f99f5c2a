//! Plots of a run (`--plot FILE.svg`): the per-frame timeline and the latency of each stage.
//!
//! The top panel is the timeline: x is the frame (in play order), y is the slack to the
//! deadline in milliseconds when the frame's read, decode and output finished (above 0: in
//! time; below: late). The due line is y = 0. Dropped frames are marked on it, one colour
//! per cause. The bottom panel is a histogram of each stage's latency.

use std::path::Path;

use plotters::prelude::*;

use crate::model::{DropCauseName, FrameRecord, Report};

/// Width and height of the picture, in SVG pixels.
const SIZE: (u32, u32) = (1400, 900);

/// A plot could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot plot to {path}: {reason}")]
pub struct PlotError {
    path: String,
    reason: String,
}

/// Draws `report` to `path`, an SVG file.
pub fn write_svg(report: &Report, path: &Path) -> Result<(), PlotError> {
    let fail = |reason: String| PlotError { path: path.display().to_string(), reason };
    if path.extension().is_none_or(|e| !e.eq_ignore_ascii_case("svg")) {
        return Err(fail("plots are written as SVG: give a .svg file, for example --plot run.svg".into()));
    }
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    draw(report, &root).map_err(|e| fail(e.to_string()))?;
    root.present().map_err(|e| fail(e.to_string()))
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw<DB: DrawingBackend>(report: &Report, root: &DrawingArea<DB, plotters::coord::Shift>) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1 * 3 / 5);
    timeline(report, &top)?;
    histogram(report, &bottom)?;
    Ok(())
}

const READ: RGBColor = RGBColor(31, 119, 180);
const DECODE: RGBColor = RGBColor(44, 160, 44);
const OUTPUT: RGBColor = RGBColor(148, 103, 189);

fn cause_colour(cause: DropCauseName) -> RGBColor {
    match cause {
        DropCauseName::Storage => RGBColor(214, 39, 40),
        DropCauseName::Decode => RGBColor(255, 127, 14),
        DropCauseName::Output => RGBColor(140, 86, 75),
        DropCauseName::Unreadable => RGBColor(0, 0, 0),
    }
}

fn cause_name(cause: DropCauseName) -> &'static str {
    match cause {
        DropCauseName::Storage => "dropped: storage",
        DropCauseName::Decode => "dropped: decode",
        DropCauseName::Output => "dropped: output",
        DropCauseName::Unreadable => "dropped: unreadable",
    }
}

/// The title: what was played, over what, at what rate, and how it went.
fn title(report: &Report) -> String {
    let stream = report.streams.first();
    let source = stream.map_or("-", |s| s.source.location.as_str());
    let transport = stream.map_or_else(
        || "-".to_owned(),
        |s| match &s.storage.mount {
            Some(m) => m.transport.clone(),
            None => s.storage.transport.clone(),
        },
    );
    let fps = stream.map_or("-", |s| s.fps.as_str());
    let d = &report.totals.dropped;
    let streams = if report.streams.len() > 1 {
        format!(" (stream 0 of {})", report.streams.len())
    } else {
        String::new()
    };
    format!(
        "{source} over {transport} at {fps} fps{streams}: {} of {} presented; dropped storage {}, decode {}, output {}, unreadable {}",
        report.totals.presented, report.totals.frames_due, d.storage, d.decode, d.output, d.unreadable
    )
}

/// A timeline series: its label, colour, and when a frame finished the stage.
type Stage = (&'static str, RGBColor, fn(&FrameRecord) -> Option<u64>);

/// Milliseconds from `done` to the frame's due time: positive when it was in time.
fn slack_ms(frame: &FrameRecord, done: Option<u64>) -> Option<f64> {
    done.map(|t| (frame.due_ns as f64 - t as f64) / 1e6)
}

fn timeline<DB: DrawingBackend>(report: &Report, area: &DrawingArea<DB, plotters::coord::Shift>) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let frames: &[FrameRecord] = report.streams.first().map_or(&[], |s| s.timeline.as_slice());
    let stages: [Stage; 3] = [
        ("read done", READ, |f| f.read_done_ns),
        ("decode done", DECODE, |f| f.decode_done_ns),
        ("output done", OUTPUT, |f| f.output_done_ns),
    ];
    let slacks = frames.iter().flat_map(|f| stages.iter().filter_map(move |(_, _, at)| slack_ms(f, at(f))));
    let (lo, hi) = slacks.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.05).max(1.0);
    let n = frames.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title(report), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n, (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_desc("frame (play order)")
        .y_desc("slack to deadline (ms; below 0 = late)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (n, 0.0)], BLACK.stroke_width(2)))?
        .label("due")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    for (name, colour, at) in stages {
        let points: Vec<(f64, f64)> = frames
            .iter()
            .enumerate()
            .filter_map(|(i, f)| slack_ms(f, at(f)).map(|s| (i as f64, s)))
            .collect();
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 2, colour.filled())))?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
    }
    for cause in
        [DropCauseName::Storage, DropCauseName::Decode, DropCauseName::Output, DropCauseName::Unreadable]
    {
        let dropped: Vec<f64> = frames
            .iter()
            .enumerate()
            .filter(|(_, f)| f.cause == Some(cause))
            .map(|(i, _)| i as f64)
            .collect();
        if dropped.is_empty() {
            continue;
        }
        let colour = cause_colour(cause);
        chart
            .draw_series(dropped.iter().map(|&x| TriangleMarker::new((x, 0.0), 7, colour.filled())))?
            .label(format!("{} ({})", cause_name(cause), dropped.len()))
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, colour.filled()));
    }
    legend(&mut chart)
}

/// Each stage's latency (read: issue to last byte; decode and output: after the previous
/// stage), as a histogram over all streams' frames.
fn histogram<DB: DrawingBackend>(
    report: &Report,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let frames = report.streams.iter().flat_map(|s| s.timeline.iter());
    let span = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e6),
        _ => None,
    };
    let stages: [(&str, RGBColor, Vec<f64>); 3] = [
        ("read", READ, frames.clone().filter_map(|f| span(f.read_start_ns, f.read_done_ns)).collect()),
        ("decode", DECODE, frames.clone().filter_map(|f| span(f.read_done_ns, f.decode_done_ns)).collect()),
        ("output", OUTPUT, frames.filter_map(|f| span(f.decode_done_ns, f.output_done_ns)).collect()),
    ];
    const BINS: usize = 40;
    let max_ms = stages.iter().flat_map(|(_, _, v)| v.iter().copied()).fold(0.0f64, f64::max).max(0.001);
    let width = max_ms / BINS as f64;
    let counts: Vec<Vec<u64>> = stages
        .iter()
        .map(|(_, _, values)| {
            let mut bins = vec![0u64; BINS];
            for v in values {
                bins[((v / width) as usize).min(BINS - 1)] += 1;
            }
            bins
        })
        .collect();
    let top = counts.iter().flatten().copied().max().unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(area)
        .caption("latency per stage", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..max_ms * 1.02, 0u64..top + top / 10 + 1)?;
    chart
        .configure_mesh()
        .x_desc("latency (ms)")
        .y_desc("frames")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for ((name, colour, values), bins) in stages.iter().zip(&counts) {
        if values.is_empty() {
            continue;
        }
        // A step line per stage, so that the three stay readable where they overlap.
        let mut steps = Vec::with_capacity(2 * BINS + 2);
        for (i, &count) in bins.iter().enumerate() {
            steps.push((i as f64 * width, count));
            steps.push(((i + 1) as f64 * width, count));
        }
        let colour = *colour;
        chart
            .draw_series(LineSeries::new(steps, colour.stroke_width(2)))?
            .label(format!("{name} ({} frames)", values.len()))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    legend(&mut chart)
}

/// The legend, in the upper right, over a faint white box so that points behind it show.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::sample_report;

    #[test]
    fn writes_an_svg_with_title_axes_and_legend() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("run.svg");
        write_svg(&sample_report(), &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        for text in
            ["slack to deadline", "frame (play order)", "latency per stage", "read done", "dropped: storage"]
        {
            assert!(svg.contains(text), "no `{text}` in the svg");
        }
    }

    #[test]
    fn refuses_other_formats_with_an_example() {
        let err = write_svg(&sample_report(), Path::new("run.png")).expect_err("png refused");
        assert!(err.to_string().contains("for example --plot run.svg"), "{err}");
    }
}
