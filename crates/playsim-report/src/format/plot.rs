//! Plots of a run (`--plot FILE.svg` or `--plot FILE.png`): the per-frame timeline and the
//! latency of each stage.
//!
//! The top panel is the timeline: x is the frame (in play order), y is the slack to the
//! deadline in milliseconds when the frame's read, decode and output finished (above 0: in
//! time; below: late). The due line is y = 0. Dropped frames are marked on it, one colour
//! per cause. The bottom panel is a histogram of each stage's latency.
//!
//! A merged report of several clients has many streams: its timeline shows the stream that
//! dropped the most, and marks the drops of every stream, one colour per client, each
//! client's legend entry counting its drops by cause, so the picture says which client
//! dropped what.
//!
//! Every figure is drawn once, as SVG, with plotters. A PNG is that SVG rendered by resvg
//! (pure Rust), so the two formats are the same picture. An SVG names its font
//! (`sans-serif`) and leaves it to the viewer; a PNG's text is drawn here, with a font found
//! in the system's font directories ([`Fonts`]), and none found is an error that names the
//! package to install.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use plotters::prelude::*;
use resvg::usvg::fontdb;

use plotters::coord::types::RangedCoordf64;

use crate::model::{DropCauseName, FrameRecord, Report, StreamReport};
use crate::rendering::{RenderError, Renderer};

/// Width and height of the picture, in SVG pixels (and PNG pixels).
pub(crate) const SIZE: (u32, u32) = (1400, 900);

/// The Debian package whose font a PNG is drawn with when the system has no other.
pub const FONT_PACKAGE: &str = "fonts-dejavu-core";

/// A plot could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot plot to {path}: {reason}")]
pub struct PlotError {
    path: String,
    reason: String,
}

impl PlotError {
    pub(crate) fn new(path: &Path, reason: impl Into<String>) -> Self {
        PlotError { path: path.display().to_string(), reason: reason.into() }
    }
}

/// The formats a plot is written in, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// `.svg`: the figure as plotters draws it.
    Svg,
    /// `.png`: the SVG rendered to pixels, at one pixel per SVG pixel.
    Png,
}

impl PlotFormat {
    /// The format's name as a renderer's: `svg` or `png`.
    pub fn name(self) -> &'static str {
        match self {
            PlotFormat::Svg => "svg",
            PlotFormat::Png => "png",
        }
    }

    /// The extensions of its files.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            PlotFormat::Svg => &["svg"],
            PlotFormat::Png => &["png"],
        }
    }

    /// The format a path asks for, by its extension (either case); anything else is refused
    /// with an example.
    pub fn of_path(path: &Path) -> Result<PlotFormat, PlotError> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(PlotFormat::Svg),
            Some("png") => Ok(PlotFormat::Png),
            _ => Err(PlotError::new(
                path,
                "plots are written as SVG or PNG: give a .svg or .png file, for example --plot run.svg",
            )),
        }
    }
}

/// Checks a `--plot` argument's extension (for clap's `value_parser`), so that a bad one is
/// refused before a run rather than after it.
pub fn parse_path(arg: &str) -> Result<PathBuf, PlotError> {
    let path = PathBuf::from(arg);
    PlotFormat::of_path(&path)?;
    Ok(path)
}

/// Where a PNG's fonts come from. Loading is deferred until a PNG is drawn.
#[derive(Clone, Debug)]
pub struct Fonts {
    dir: Option<PathBuf>,
}

impl Fonts {
    /// The system's fonts (fontconfig's directories, `/usr/share/fonts` and the like).
    pub fn system() -> Fonts {
        Fonts { dir: None }
    }

    /// Only the fonts in `dir` and its subdirectories.
    pub fn dir(dir: impl Into<PathBuf>) -> Fonts {
        Fonts { dir: Some(dir.into()) }
    }

    /// Loads the fonts, with `sans-serif` (the family the plots name) mapped to one that is
    /// there; an error when there is none.
    fn load(&self) -> Result<Arc<fontdb::Database>, String> {
        let mut db = fontdb::Database::new();
        let searched = match &self.dir {
            Some(dir) => {
                db.load_fonts_dir(dir);
                dir.display().to_string()
            }
            None => {
                db.load_system_fonts();
                "the system's font directories".to_owned()
            }
        };
        let sans = [fontdb::Family::SansSerif];
        if db.query(&fontdb::Query { families: &sans, ..Default::default() }).is_none() {
            let family = db
                .faces()
                .flat_map(|face| face.families.iter().map(|(name, _)| name.clone()))
                .find(|name| name == "DejaVu Sans")
                .or_else(|| db.faces().find_map(|face| face.families.first().map(|(name, _)| name.clone())));
            match family {
                Some(family) => db.set_sans_serif_family(family),
                None => {
                    return Err(format!(
                        "no font found in {searched} to draw the PNG's text with: install one \
                         (`apt-get install {FONT_PACKAGE}`, or `cargo xtask deps`), or write an SVG, \
                         for example --plot run.svg"
                    ))
                }
            }
        }
        Ok(Arc::new(db))
    }
}

/// Draws `report` to `path`: SVG or PNG by the extension, PNG text in the system's fonts.
pub fn write(report: &Report, path: &Path) -> Result<(), PlotError> {
    write_with_fonts(report, path, &Fonts::system())
}

/// Draws `report` to `path`, a PNG's text in `fonts`.
pub fn write_with_fonts(report: &Report, path: &Path, fonts: &Fonts) -> Result<(), PlotError> {
    write_figure(path, SIZE, fonts, |root| draw(report, root))
}

/// Draws a figure of `size` as SVG with `draw`, then writes it to `path` (atomically) as SVG
/// or as PNG, by the extension.
pub(crate) fn write_figure(
    path: &Path,
    size: (u32, u32),
    fonts: &Fonts,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> DrawResult,
) -> Result<(), PlotError> {
    let format = PlotFormat::of_path(path)?;
    let fail = |reason: String| PlotError::new(path, reason);
    let bytes = figure_bytes(format, size, fonts, draw).map_err(fail)?;
    crate::format::json::write_bytes_atomic(&bytes, path).map_err(|e| fail(e.to_string()))
}

/// Draws a figure of `size` as SVG with `draw`, and gives it as `format`'s bytes.
pub(crate) fn figure_bytes(
    format: PlotFormat,
    size: (u32, u32),
    fonts: &Fonts,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> DrawResult,
) -> Result<Vec<u8>, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    svg_bytes(format, svg, fonts)
}

/// An SVG drawn by hand (the matrix's grid) as `format`'s bytes: itself, or rendered to a PNG
/// with `fonts`, as a figure of plotters is.
pub(crate) fn svg_bytes(format: PlotFormat, svg: String, fonts: &Fonts) -> Result<Vec<u8>, String> {
    match format {
        PlotFormat::Svg => Ok(svg.into_bytes()),
        PlotFormat::Png => svg_to_png(&svg, &fonts.load()?),
    }
}

/// The run's plot ([`write()`]'s figure) in one format: the `svg` and `png` renderers.
#[derive(Clone, Debug)]
pub struct TimelinePlot {
    format: PlotFormat,
    fonts: Fonts,
}

impl TimelinePlot {
    /// The plot as SVG.
    pub fn svg() -> TimelinePlot {
        TimelinePlot { format: PlotFormat::Svg, fonts: Fonts::system() }
    }

    /// The plot as PNG, its text in the system's fonts.
    pub fn png() -> TimelinePlot {
        TimelinePlot::png_with_fonts(Fonts::system())
    }

    /// The plot as PNG, its text in `fonts`.
    pub fn png_with_fonts(fonts: Fonts) -> TimelinePlot {
        TimelinePlot { format: PlotFormat::Png, fonts }
    }
}

impl Renderer<Report> for TimelinePlot {
    fn name(&self) -> &'static str {
        self.format.name()
    }

    fn extensions(&self) -> &'static [&'static str] {
        self.format.extensions()
    }

    fn render(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        let bytes = figure_bytes(self.format, SIZE, &self.fonts, |root| draw(report, root))
            .map_err(RenderError::Draw)?;
        Ok(out.write_all(&bytes)?)
    }

    fn failure(&self, path: &Path, reason: &dyn std::fmt::Display) -> String {
        PlotError::new(path, reason.to_string()).to_string()
    }
}

/// Renders an SVG to a PNG of the same size in pixels.
fn svg_to_png(svg: &str, fonts: &Arc<fontdb::Database>) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    let options = usvg::Options { fontdb: Arc::clone(fonts), ..Default::default() };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| format!("rendering the SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| format!("cannot make a {}x{} picture", size.width(), size.height()))?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("encoding the PNG: {e}"))
}

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;

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

pub(crate) const READ: RGBColor = RGBColor(31, 119, 180);
pub(crate) const DECODE: RGBColor = RGBColor(44, 160, 44);
pub(crate) const OUTPUT: RGBColor = RGBColor(148, 103, 189);

pub(crate) fn cause_colour(cause: DropCauseName) -> RGBColor {
    match cause {
        DropCauseName::Storage => RGBColor(214, 39, 40),
        DropCauseName::Decode => RGBColor(255, 127, 14),
        DropCauseName::Output => RGBColor(140, 86, 75),
        DropCauseName::Unreadable => RGBColor(0, 0, 0),
    }
}

/// The title: what was played, over what, at what rate, and how it went.
fn title(report: &Report) -> String {
    let stream = shown_stream(report);
    // A long location (a sim:// or nfs:// URL) keeps its ends, so the title fits the picture.
    let source = shorten(stream.map_or("-", |s| s.source.location.as_str()), 48);
    let transport = stream.map_or_else(
        || "-".to_owned(),
        |s| match &s.storage.mount {
            Some(m) => m.transport.clone(),
            None => s.storage.transport.clone(),
        },
    );
    let fps = stream.map_or("-", |s| s.fps.as_str());
    let dropped: Vec<String> =
        report.totals.dropped.iter().map(|(cause, n)| format!("{} {n}", cause.word())).collect();
    let streams = match stream {
        Some(s) if !report.clients.is_empty() => {
            format!(" ({}, of {} streams on {} clients)", s.name, report.streams.len(), report.clients.len())
        }
        _ if report.streams.len() > 1 => format!(" (stream 0 of {})", report.streams.len()),
        _ => String::new(),
    };
    format!(
        "{source} over {transport} at {fps} fps{streams}: {} of {} presented; dropped {}",
        report.totals.presented,
        report.totals.frames_due,
        dropped.join(", ")
    )
}

/// The stream whose timeline the top panel shows: the first, or in a merged report the one
/// that dropped the most (the first of those).
fn shown_stream(report: &Report) -> Option<&StreamReport> {
    if report.clients.is_empty() {
        return report.streams.first();
    }
    let most = report.streams.iter().map(|s| s.dropped.total()).max()?;
    report.streams.iter().find(|s| s.dropped.total() == most)
}

/// Colours of the clients' drop markers, in turn.
const CLIENT_COLOURS: [RGBColor; 8] = [
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(0, 0, 0),
];

/// `client 1: 40 dropped (decode 30, output 10)`.
fn client_drops_label(rank: u32, frames: &[&FrameRecord]) -> String {
    let by_cause: Vec<String> = DropCauseName::ALL
        .into_iter()
        .filter_map(|cause| {
            let n = frames.iter().filter(|f| f.cause == Some(cause)).count();
            (n > 0).then(|| format!("{} {n}", cause.word()))
        })
        .collect();
    format!("client {rank}: {} dropped ({})", frames.len(), by_cause.join(", "))
}

/// The font size of tick labels (and, one larger, of the axes' descriptions).
pub(crate) const LABEL: u32 = 13;

/// A frame number on the x axis; none between whole frames (a short run's ticks fall there).
pub(crate) fn whole(x: &f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        String::new()
    }
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
    let frames: &[FrameRecord] = shown_stream(report).map_or(&[], |s| s.timeline.as_slice());
    let stages: [Stage; 3] = [
        ("read done", READ, |f| f.read_done_ns),
        ("decode done", DECODE, |f| f.decode_done_ns),
        ("output done", OUTPUT, |f| f.output_done_ns),
    ];
    let slacks = frames.iter().flat_map(|f| stages.iter().filter_map(move |(_, _, at)| slack_ms(f, at(f))));
    let (lo, hi) = slacks.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.05).max(1.0);
    // A merged report marks every stream's drops: the axis spans the longest.
    let longest = if report.clients.is_empty() {
        frames.len()
    } else {
        report.streams.iter().map(|s| s.timeline.len()).max().unwrap_or(0)
    };
    let n = longest.max(1) as f64;
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
        .x_label_formatter(&whole)
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", LABEL))
        .axis_desc_style(("sans-serif", LABEL + 1))
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
    if !report.clients.is_empty() {
        client_drops(report, &mut chart)?;
        return legend(&mut chart);
    }
    for cause in DropCauseName::ALL {
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
            .label(format!("dropped: {} ({})", cause.word(), dropped.len()))
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, colour.filled()));
    }
    legend(&mut chart)
}

/// A merged report's drops: every stream's, at their frame, one colour per client.
fn client_drops<'a, DB: DrawingBackend + 'a>(
    report: &Report,
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for (i, client) in report.clients.iter().enumerate() {
        let dropped: Vec<(usize, &FrameRecord)> = report
            .streams
            .iter()
            .filter(|s| s.client == Some(client.rank))
            .flat_map(|s| s.timeline.iter().enumerate().filter(|(_, f)| f.cause.is_some()))
            .collect();
        if dropped.is_empty() {
            continue;
        }
        let colour = CLIENT_COLOURS[i % CLIENT_COLOURS.len()];
        let frames: Vec<&FrameRecord> = dropped.iter().map(|(_, f)| *f).collect();
        chart
            .draw_series(
                dropped.iter().map(|&(x, _)| TriangleMarker::new((x as f64, 0.0), 7, colour.filled())),
            )?
            .label(client_drops_label(client.rank, &frames))
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, colour.filled()));
    }
    Ok(())
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
    latency_histogram(&stages, area)
}

/// A histogram of each stage's latencies (`(name, colour, milliseconds)`), a step line per
/// stage on one axis; a stage with none is left out. The record plot draws its stages with it.
pub(crate) fn latency_histogram<DB: DrawingBackend>(
    stages: &[(&str, RGBColor, Vec<f64>)],
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
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
        .y_label_formatter(&|y| format!("{y}"))
        .label_style(("sans-serif", LABEL))
        .axis_desc_style(("sans-serif", LABEL + 1))
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
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
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

/// `name` in at most `max` characters: its start and, longer, its end, with an ellipsis
/// between (runs' files tend to differ at the end: tcp-1, tcp-2).
pub(crate) fn shorten(name: &str, max: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= max {
        return name.to_owned();
    }
    let keep = max.saturating_sub(1);
    let head = keep / 3;
    let tail = keep - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testutil::sample_report;

    #[test]
    fn writes_an_svg_with_title_axes_and_legend() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("run.svg");
        write(&sample_report(), &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        for text in
            ["slack to deadline", "frame (play order)", "latency per stage", "read done", "dropped: storage"]
        {
            assert!(svg.contains(text), "no `{text}` in the svg");
        }
    }

    #[test]
    fn a_merged_report_draws_every_client_and_names_who_dropped_what() {
        let report = crate::testutil::merged_sample();
        assert_eq!(report.streams.len(), 4);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("merged.svg");
        write(&report, &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        for text in [
            "client 1/stream 0, of 4 streams on 4 clients",
            "client 0: 1 dropped (storage 1)",
            "client 1: 1 dropped (storage 1)",
            "client 2: 1 dropped (storage 1)",
        ] {
            assert!(svg.contains(text), "no `{text}` in the svg");
        }
        assert!(!svg.contains("client 3:"), "a client known by a snapshot has no frames");

        // Three clients of two streams each, every one dropping.
        let mut six = report.clone();
        six.streams.clear();
        for k in 0..3 {
            for n in 0..2 {
                let mut s = report.streams[2].clone();
                s.name = format!("client {k}/stream {n}");
                s.client = Some(k);
                six.streams.push(s);
            }
        }
        write(&six, &path).expect("plot of 6 streams");
        let svg = std::fs::read_to_string(&path).expect("svg");
        for k in 0..3 {
            assert!(svg.contains(&format!("client {k}: 2 dropped (storage 2)")), "client {k}");
        }
        write(&six, &dir.path().join("merged.png")).expect("png of 6 streams");
    }

    /// The width and height in a PNG's IHDR chunk, after checking the signature.
    pub(crate) fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert!(bytes.len() > 33, "{} bytes is too short for a PNG", bytes.len());
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG signature");
        assert_eq!(&bytes[8..16], b"\0\0\0\x0dIHDR", "the first chunk is not a 13-byte IHDR");
        let be = |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        (be(16), be(20))
    }

    /// How many pixels in the rows `rows` are dark (text or lines, on the white ground).
    pub(crate) fn dark_pixels(png: &[u8], rows: std::ops::Range<u32>) -> usize {
        let pixmap = resvg::tiny_skia::Pixmap::decode_png(png).expect("decode png");
        let width = pixmap.width() as usize;
        pixmap.pixels()[rows.start as usize * width..rows.end as usize * width]
            .iter()
            .filter(|p| u32::from(p.red()) + u32::from(p.green()) + u32::from(p.blue()) < 3 * 128)
            .count()
    }

    #[test]
    fn writes_a_png_of_the_same_figure_with_its_text_drawn() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("run.PNG");
        write(&sample_report(), &path).expect("plot");
        let png = std::fs::read(&path).expect("png");
        assert_eq!(png_size(&png), SIZE);
        // The title is the only thing in the top 25 rows: dark pixels there are its glyphs.
        assert!(dark_pixels(&png, 0..25) > 200, "no title text drawn in the png");
        assert!(!dir.path().join("run.svg").exists());
    }

    #[test]
    fn a_png_without_fonts_is_refused_naming_the_package() {
        let dir = tempfile::tempdir().expect("temp dir");
        let no_fonts = tempfile::tempdir().expect("empty font dir");
        let path = dir.path().join("run.png");
        let err =
            write_with_fonts(&sample_report(), &path, &Fonts::dir(no_fonts.path())).expect_err("no font");
        let text = err.to_string();
        assert!(text.contains("apt-get install fonts-dejavu-core"), "{text}");
        assert!(text.contains(&no_fonts.path().display().to_string()), "{text}");
        assert!(text.contains("--plot run.svg"), "{text}");
        assert!(!path.exists(), "a png was written without fonts");
        // The SVG needs no font of ours.
        write_with_fonts(&sample_report(), &dir.path().join("run.svg"), &Fonts::dir(no_fonts.path()))
            .expect("svg without fonts");
    }

    #[test]
    fn refuses_other_formats_with_an_example() {
        for name in ["run.jpg", "run", "run.svg.txt"] {
            let err = write(&sample_report(), Path::new(name)).expect_err("refused");
            assert!(err.to_string().contains("for example --plot run.svg"), "{err}");
            assert!(err.to_string().contains(name), "{err}");
            assert!(parse_path(name).is_err(), "{name}");
        }
        assert_eq!(parse_path("out/run.Png").expect("png"), PathBuf::from("out/run.Png"));
        assert_eq!(PlotFormat::of_path(Path::new("a.SVG")).expect("svg"), PlotFormat::Svg);
    }
}
