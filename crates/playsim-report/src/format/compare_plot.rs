//! The comparison as a picture: `playsim compare A.json B.json ... --plot cmp.svg` (or `.png`).
//!
//! Six panels, each with the runs side by side on x (the first run is the baseline): frame
//! rate, dropped frames stacked by cause (coloured as in the timeline plot), data rate, the
//! p99 latency of each stage (read, decode, output: grouped, coloured as in the timeline
//! plot), CPU seconds per GB read (user, sys, softirq, stacked) and a key saying what each run
//! was. The figures come from [`crate::compare`], the same as the table's.
//!
//! Record runs (`record --json`) get the same figure with record's panels: frames written per
//! second, drops stacked by cause (input, encode, storage) and failures, MB/s written, the p99
//! of each write-side stage (queue wait, encode, write, sync, total; coloured as in the
//! record plot) and CPU seconds per GB written (input, encode, write). The drawing is one
//! generic over the kind of run ([`Compared`]); each kind lists its panels here.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plot::{
    cause_colour, figure_bytes, shorten, write_figure, DrawResult, Fonts, PlotError, PlotFormat, DECODE,
    OUTPUT, READ,
};
use super::record_plot::{record_cause_colour, ENCODE, FAILED, QUEUE_WAIT, SYNC, WRITE};
use crate::model::compare::{figure_of, Bars, Better, Compared, Panel, Part, Run, Swatch};
use crate::rendering::{RenderError, Renderer};

/// Why a comparison of nothing is refused.
const NO_RUNS: &str = "no runs to compare, for example `playsim compare a.json b.json`";
/// Width and height of the picture, in SVG pixels (and PNG pixels).
const SIZE: (u32, u32) = (1400, 900);
/// Height of the band holding the figure's title.
const TITLE_BAND: u32 = 64;
/// Height of a panel's heading: its caption, then its legend.
const HEADING: u32 = 46;
/// The font size of the figure's title.
const TITLE: u32 = 20;
/// The font size of tick labels, values on bars, legends and the key.
const SMALL: u32 = 13;

/// The colour of a part of a bar: as the timeline and record plots colour what it stands for.
fn colour(swatch: Swatch) -> RGBColor {
    match swatch {
        Swatch::Drop(cause) => cause_colour(cause),
        Swatch::RecordDrop(cause) => record_cause_colour(cause),
        Swatch::Failed => FAILED,
        Swatch::Read => READ,
        Swatch::Decode => DECODE,
        Swatch::Output => OUTPUT,
        Swatch::QueueWait => QUEUE_WAIT,
        Swatch::Encode => ENCODE,
        Swatch::Write => WRITE,
        Swatch::Sync => SYNC,
        Swatch::Bar => BAR,
        Swatch::CpuUser => CPU_USER,
        Swatch::CpuSys => CPU_SYS,
        Swatch::CpuSoftirq => CPU_SOFTIRQ,
    }
}

/// The colour of a bar that stands for one figure.
const BAR: RGBColor = RGBColor(96, 116, 140);
const CPU_USER: RGBColor = RGBColor(57, 106, 177);
const CPU_SYS: RGBColor = RGBColor(218, 124, 48);
const CPU_SOFTIRQ: RGBColor = RGBColor(204, 121, 167);

/// Draws `runs` side by side to `path`: SVG or PNG by the extension, PNG text in the system's
/// fonts.
pub fn write<T: Compared>(runs: &[Run<'_, T>], path: &Path) -> Result<(), PlotError> {
    write_with_fonts(runs, path, &Fonts::system())
}

/// Draws `runs` side by side to `path`, a PNG's text in `fonts`.
pub fn write_with_fonts<T: Compared>(
    runs: &[Run<'_, T>],
    path: &Path,
    fonts: &Fonts,
) -> Result<(), PlotError> {
    if runs.is_empty() {
        return Err(PlotError::new(path, NO_RUNS));
    }
    write_figure(path, SIZE, fonts, |root| draw(runs, root))
}

/// The comparison's figure in one format: the `svg` and `png` renderers of a comparison.
#[derive(Clone, Debug)]
pub struct ComparePlot {
    format: PlotFormat,
    fonts: Fonts,
}

impl ComparePlot {
    /// The figure as SVG.
    pub fn svg() -> ComparePlot {
        ComparePlot { format: PlotFormat::Svg, fonts: Fonts::system() }
    }

    /// The figure as PNG, its text in `fonts`.
    pub fn png_with_fonts(fonts: Fonts) -> ComparePlot {
        ComparePlot { format: PlotFormat::Png, fonts }
    }

    /// The figure as PNG, its text in the system's fonts.
    pub fn png() -> ComparePlot {
        ComparePlot::png_with_fonts(Fonts::system())
    }
}

impl<'a, T: Compared> Renderer<[Run<'a, T>]> for ComparePlot {
    fn name(&self) -> &'static str {
        self.format.name()
    }

    fn extensions(&self) -> &'static [&'static str] {
        self.format.extensions()
    }

    fn render(&self, runs: &[Run<'a, T>], out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        if runs.is_empty() {
            return Err(RenderError::Draw(NO_RUNS.to_owned()));
        }
        let bytes = figure_bytes(self.format, SIZE, &self.fonts, |root| draw(runs, root))
            .map_err(RenderError::Draw)?;
        Ok(out.write_all(&bytes)?)
    }

    fn failure(&self, path: &Path, reason: &dyn std::fmt::Display) -> String {
        PlotError::new(path, reason.to_string()).to_string()
    }
}

fn draw<T: Compared>(runs: &[Run<'_, T>], root: &DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult {
    root.fill(&WHITE)?;
    let (band, body) = root.split_vertically(TITLE_BAND);
    band.draw(&Text::new(
        title(runs, SIZE.0 - 40),
        (SIZE.0 as i32 / 2, 10),
        text(TITLE).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    band.draw(&Text::new(
        format!(
            "{} is the baseline; one bar per run, in the order given",
            runs.first().map_or("", |r| r.name)
        ),
        (SIZE.0 as i32 / 2, 38),
        text(SMALL + 1).color(&RGBColor(80, 80, 80)).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let cells = body.split_evenly((2, 3));
    let plot_width = cells[0].dim_in_pixel().0.saturating_sub(110);
    let labels = run_labels(runs, plot_width);
    for (panel, cell) in T::panels().iter().zip(&cells) {
        bar_panel(runs, &labels, panel, &cell.margin(4, 8, 8, 12))?;
    }
    if let Some(cell) = cells.get(5) {
        key(runs, &labels, &cell.margin(4, 8, 8, 12))?;
    }
    Ok(())
}

/// `playsim compare: a.json vs b.json`; when that is wider than `width` pixels, the names
/// lose `.json` and then their middles.
fn title<T>(runs: &[Run<'_, T>], width: u32) -> String {
    const HEAD: &str = "playsim compare: ";
    const VS: &str = " vs ";
    let full = format!("{HEAD}{}", runs.iter().map(|r| r.name).collect::<Vec<_>>().join(VS));
    let fits = (width as f64 / (TITLE as f64 * EM)) as usize;
    if full.chars().count() <= fits {
        return full;
    }
    let n = runs.len().max(1);
    let room = fits.saturating_sub(HEAD.len() + VS.len() * (n - 1)) / n;
    let names: Vec<String> =
        runs.iter().map(|r| shorten(r.name.strip_suffix(".json").unwrap_or(r.name), room.max(7))).collect();
    format!("{HEAD}{}", names.join(VS))
}

/// A sans-serif text style of `size` pixels.
fn text(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
}

/// The width of an average glyph, in em: DejaVu Sans's digits are 0.636 em, its lower-case
/// letters about 0.6.
const EM: f64 = 0.64;

/// About how wide `text` is at `size` pixels.
fn text_width(text: &str, size: u32) -> u32 {
    (text.chars().count() as f64 * size as f64 * EM).ceil() as u32
}

/// Each run's name under its bar when all fit in a slot of the plot, else A, B, C ... (the
/// key gives the names).
fn run_labels<T>(runs: &[Run<'_, T>], plot_width: u32) -> Vec<String> {
    let slot = plot_width / runs.len().max(1) as u32;
    if runs.iter().all(|r| text_width(r.name, SMALL) + 8 <= slot) {
        runs.iter().map(|r| r.name.to_owned()).collect()
    } else {
        (0..runs.len()).map(letter).collect()
    }
}

/// A, B, ... Z, then 27, 28, ...
fn letter(i: usize) -> String {
    match u8::try_from(i) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => (i + 1).to_string(),
    }
}

/// The measures a panel shows.
fn measures<M: Copy>(panel: &Panel<M>) -> impl Iterator<Item = M> + '_ {
    let (single, parts): (Option<M>, &[Part<M>]) = match &panel.bars {
        Bars::Single(m) => (Some(*m), &[]),
        Bars::Stacked(parts) | Bars::Grouped(parts) => (None, parts),
    };
    single.into_iter().chain(parts.iter().map(|p| p.measure))
}

/// The panel's caption with the way that is better.
fn caption<T: Compared>(panel: &Panel<T::Measure>) -> String {
    let better = measures(panel).next().and_then(figure_of::<T>).map_or(Better::Lower, |f| f.better);
    let better = match better {
        Better::Higher => "higher is better",
        Better::Lower => "lower is better",
    };
    format!("{} ({better})", panel.caption)
}

fn bar_panel<T: Compared>(
    runs: &[Run<'_, T>],
    labels: &[String],
    panel: &Panel<T::Measure>,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
) -> DrawResult {
    let (heading, plot) = area.split_vertically(HEADING);
    let (width, _) = heading.dim_in_pixel();
    heading.draw(&Text::new(
        caption::<T>(panel),
        (width as i32 / 2, 2),
        text(16).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let parts: &[Part<T::Measure>] = match &panel.bars {
        Bars::Single(_) => &[],
        Bars::Stacked(parts) | Bars::Grouped(parts) => parts,
    };
    legend_row(&heading, parts, 24)?;

    let n = runs.len();
    // Each run's bars from bottom to top (stacked) or left to right (grouped): (x0, x1, y0, y1, colour).
    let mut rects: Vec<(f64, f64, f64, f64, RGBColor)> = Vec::new();
    // Values written above the bars: (x, y, text, bar width in slots).
    let mut values: Vec<(f64, f64, String, f64)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let x = i as f64;
        match &panel.bars {
            Bars::Single(measure) => {
                let v = finite(run.report.value(*measure));
                rects.push((x - 0.3, x + 0.3, 0.0, v, BAR));
                values.push((x, v, shown(decimals::<T>(*measure), v), 0.6));
            }
            Bars::Stacked(parts) => {
                let mut top = 0.0;
                for part in parts {
                    let v = finite(run.report.value(part.measure));
                    if v > 0.0 {
                        rects.push((x - 0.3, x + 0.3, top, top + v, colour(part.swatch)));
                    }
                    top += v;
                }
                let decimals = parts.first().map_or(0, |p| decimals::<T>(p.measure));
                values.push((x, top, format!("{top:.decimals$}"), 0.6));
            }
            Bars::Grouped(parts) => {
                let w = 0.8 / parts.len().max(1) as f64;
                for (j, part) in parts.iter().enumerate() {
                    let v = finite(run.report.value(part.measure));
                    let x0 = x - 0.4 + j as f64 * w;
                    rects.push((x0, x0 + w, 0.0, v, colour(part.swatch)));
                    values.push((x0 + w / 2.0, v, compact(decimals::<T>(part.measure), v), w));
                }
            }
        }
    }
    let top = values.iter().map(|v| v.1).fold(0.0f64, f64::max);
    let counts = measures(panel).all(|m| decimals::<T>(m) == 0);
    // Room above the tallest bar for its value.
    let y_max = if top > 0.0 { top * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(&plot)
        .x_label_area_size(30)
        .y_label_area_size(62)
        .margin_right(6)
        .build_cartesian_2d(RunAxis { n }, 0f64..y_max)?;
    let label_of = |x: &f64| -> String {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .x_labels(n)
        .y_labels(6)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|y| axis_number(*y, y_max, counts))
        .label_style(text(SMALL))
        .axis_desc_style(text(SMALL + 1))
        .y_desc(panel.y_desc)
        .draw()?;
    chart.draw_series(
        rects.iter().map(|&(x0, x1, y0, y1, colour)| Rectangle::new([(x0, y0), (x1, y1)], colour.filled())),
    )?;
    // A value is written only where it fits over its bar.
    let (plot_px, _) = chart.plotting_area().dim_in_pixel();
    let slot_px = plot_px as f64 / n.max(1) as f64;
    let fitting =
        values.iter().filter(|(_, _, s, w)| f64::from(text_width(s, SMALL - 1)) <= w * slot_px + 6.0);
    chart.draw_series(fitting.map(|(x, y, s, _)| {
        Text::new(s.clone(), (*x, *y), text(SMALL - 1).pos(Pos::new(HPos::Center, VPos::Bottom)))
    }))?;
    if top <= 0.0 {
        let (w, h) = chart.plotting_area().dim_in_pixel();
        chart.plotting_area().strip_coord_spec().draw(&Text::new(
            panel.if_empty,
            (w as i32 / 2, h as i32 / 2),
            text(SMALL + 1).color(&RGBColor(80, 80, 80)).pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// The x axis: a slot a run, centred on 0, 1, 2 ..., with a tick at each centre (plotters'
/// own f64 axis puts its ticks at round numbers, which need not be whole).
struct RunAxis {
    n: usize,
}

impl Ranged for RunAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = (value + 0.5) / self.n.max(1) as f64;
        limit.0 + (f64::from(limit.1 - limit.0) * share).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.n).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.n as f64 - 0.5
    }
}

/// The decimals the table shows `measure` with.
fn decimals<T: Compared>(measure: T::Measure) -> usize {
    figure_of::<T>(measure).map_or(2, |f| f.decimals)
}

/// A value as the table shows it, in `decimals`.
fn shown(decimals: usize, value: f64) -> String {
    format!("{value:.decimals$}")
}

/// A value as the table shows it but in three significant figures or more (`120`, `55.0`,
/// `3.30`), for the narrow bars of a group.
fn compact(decimals: usize, value: f64) -> String {
    let whole_digits = if value >= 1.0 { value.log10().floor() as usize + 1 } else { 1 };
    let decimals = decimals.min(3usize.saturating_sub(whole_digits));
    format!("{value:.decimals$}")
}

/// A tick label on a y axis that reaches `max`: whole numbers when the axis is tall enough,
/// and none between whole numbers on an axis of counts.
fn axis_number(y: f64, max: f64, counts: bool) -> String {
    if counts {
        if y.fract() == 0.0 {
            format!("{y:.0}")
        } else {
            String::new()
        }
    } else if max >= 10.0 {
        format!("{y:.0}")
    } else if max >= 1.0 {
        format!("{y:.1}")
    } else {
        format!("{y:.2}")
    }
}

/// NaN (a report written by hand, a run of no bytes) and negatives as 0, and no more than
/// 10³⁰⁰, so that the axes stay finite.
fn finite(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, 1e300)
    }
}

/// A legend on one row, centred at `y`: a swatch and a name for each part.
fn legend_row<M>(area: &DrawingArea<SVGBackend<'_>, Shift>, parts: &[Part<M>], y: i32) -> DrawResult {
    const SWATCH: i32 = 12;
    const GAP: i32 = 18;
    let widths: Vec<i32> = parts.iter().map(|p| SWATCH + 5 + text_width(p.name, SMALL) as i32).collect();
    let total: i32 = widths.iter().sum::<i32>() + GAP * (parts.len() as i32 - 1).max(0);
    let (width, _) = area.dim_in_pixel();
    let mut x = (width as i32 - total) / 2;
    for (part, w) in parts.iter().zip(widths) {
        area.draw(&Rectangle::new([(x, y), (x + SWATCH, y + SWATCH)], colour(part.swatch).filled()))?;
        area.draw(&Text::new(
            part.name,
            (x + SWATCH + 5, y + SWATCH / 2),
            text(SMALL).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        x += w + GAP;
    }
    Ok(())
}

/// What each run was: its label, its name, and the description rows the table starts with.
fn key<T: Compared>(
    runs: &[Run<'_, T>],
    labels: &[String],
    area: &DrawingArea<SVGBackend<'_>, Shift>,
) -> DrawResult {
    let (width, height) = area.dim_in_pixel();
    area.draw(&Text::new(
        "the runs",
        (width as i32 / 2, 2),
        text(16).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let line_height = SMALL as i32 + 5;
    let max_chars = (width.saturating_sub(30) as f64 / (SMALL as f64 * EM)) as usize;
    // Each description row, as `name value`, for each run; rows alike in every run are said
    // once, for all of them.
    let rows: Vec<Vec<String>> = T::description(runs)
        .into_iter()
        .map(|(name, cell)| runs.iter().map(|run| format!("{name} {}", cell(run.report))).collect())
        .collect();
    let alike = |row: &Vec<String>| runs.len() > 1 && row.iter().all(|cell| *cell == row[0]);
    let mut lines: Vec<(i32, String)> = Vec::new();
    let common: Vec<String> = rows.iter().filter(|row| alike(row)).map(|row| row[0].clone()).collect();
    if !common.is_empty() {
        lines.push((0, "all runs".to_owned()));
        lines.extend(wrap(&common, max_chars.saturating_sub(2)).into_iter().map(|line| (14, line)));
    }
    for (i, (run, label)) in runs.iter().zip(labels).enumerate() {
        let heading = if label == run.name { run.name.to_owned() } else { format!("{label}: {}", run.name) };
        lines.push((0, heading));
        let own: Vec<String> = rows.iter().filter(|row| !alike(row)).map(|row| row[i].clone()).collect();
        lines.extend(wrap(&own, max_chars.saturating_sub(2)).into_iter().map(|line| (14, line)));
    }
    let first = HEADING as i32 - 12;
    let fit = ((height as i32 - first) / line_height).max(0) as usize;
    let cut = lines.len() > fit;
    for (k, (indent, line)) in lines.iter().take(if cut { fit.saturating_sub(1) } else { fit }).enumerate() {
        let style = if *indent == 0 { text(SMALL + 1) } else { text(SMALL).color(&RGBColor(60, 60, 60)) };
        area.draw(&Text::new(line.clone(), (10 + indent, first + k as i32 * line_height), style))?;
    }
    if cut {
        let y = first + fit.saturating_sub(1) as i32 * line_height;
        area.draw(&Text::new("… (the table printed by compare has the rest)", (10, y), text(SMALL)))?;
    }
    Ok(())
}

/// `items` joined with `; ` into lines of at most `max` characters; an item longer than a line
/// is cut with an ellipsis.
fn wrap(items: &[String], max: usize) -> Vec<String> {
    let max = max.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for item in items {
        let item = if item.chars().count() > max {
            let mut cut: String = item.chars().take(max - 1).collect();
            cut.push('…');
            cut
        } else {
            item.clone()
        };
        if !line.is_empty() && line.chars().count() + 2 + item.chars().count() > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push_str("; ");
        }
        line.push_str(&item);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::plot::tests::{dark_pixels, png_size};
    use crate::model::DropCauseName;
    use crate::testutil::sample_report;

    fn two_runs() -> (crate::Report, crate::Report) {
        let a = sample_report();
        let mut b = sample_report();
        b.totals.fps = 12.5;
        b.totals.dropped.decode = 40;
        b.cpu.sys_s_per_gb = a.cpu.sys_s_per_gb * 3.0;
        (a, b)
    }

    #[test]
    fn an_svg_names_the_runs_and_labels_the_axes() {
        let (a, b) = two_runs();
        let runs = [Run { name: "tcp.json", report: &a }, Run { name: "rdma.json", report: &b }];
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cmp.svg");
        write(&runs, &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        for text in [
            "playsim compare: tcp.json vs rdma.json",
            "frames per second presented",
            "frames dropped",
            "MB/s (MB = 10⁶ bytes)",
            "p99 latency (ms)",
            "CPU s per GB (GB = 10⁹ bytes)",
            "softirq",
            "unreadable",
            // A tick label under a bar: the name alone in its text element.
            "\ntcp.json\n",
            "12.50",
        ] {
            assert!(svg.contains(text), "no `{text}` in the svg");
        }
        // The drops are stacked in the timeline's colours: b's 40 decode drops in decode orange.
        let decode = cause_colour(DropCauseName::Decode);
        let orange = format!("#{:02X}{:02X}{:02X}", decode.0, decode.1, decode.2);
        assert!(svg.contains(&orange), "no {orange} bar in the svg");
    }

    #[test]
    fn a_png_is_written_with_its_text() {
        let (a, b) = two_runs();
        let runs = [Run { name: "tcp.json", report: &a }, Run { name: "rdma.json", report: &b }];
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cmp.png");
        write(&runs, &path).expect("plot");
        let png = std::fs::read(&path).expect("png");
        assert_eq!(png_size(&png), SIZE);
        assert!(dark_pixels(&png, 0..32) > 200, "no title text drawn in the png");
    }

    #[test]
    fn long_names_become_letters_with_a_key() {
        let a = sample_report();
        let names: Vec<String> = (0..6).map(|i| format!("a-rather-long-report-name-{i}.json")).collect();
        let runs: Vec<Run<'_>> = names.iter().map(|name| Run { name, report: &a }).collect();
        let labels = run_labels(&runs, 300);
        assert_eq!(labels, ["A", "B", "C", "D", "E", "F"]);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cmp.svg");
        write(&runs, &path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("svg");
        assert!(svg.contains("F: a-rather-long-report-name-5.json"), "the key does not name F");
    }

    #[test]
    fn refuses_no_runs_and_other_formats() {
        let a = sample_report();
        let err = write::<crate::Report>(&[], Path::new("cmp.svg")).expect_err("no runs");
        assert!(err.to_string().contains("playsim compare a.json b.json"), "{err}");
        let err = write(&[Run { name: "a", report: &a }], Path::new("cmp.jpg")).expect_err("jpg");
        assert!(err.to_string().contains("for example --plot run.svg"), "{err}");
    }

    #[test]
    fn a_title_too_long_keeps_the_ends_of_the_names() {
        let a = sample_report();
        let names: Vec<String> = (0..6).map(|i| format!("a-rather-long-report-name-{i}.json")).collect();
        let runs: Vec<Run<'_>> = names.iter().map(|name| Run { name, report: &a }).collect();
        let title = title(&runs, SIZE.0 - 40);
        assert!(f64::from(text_width(&title, TITLE)) <= f64::from(SIZE.0 - 40), "{title}");
        for i in 0..6 {
            assert!(
                title.contains(&format!("name-{i} ")) || title.ends_with(&format!("name-{i}")),
                "{title}"
            );
        }
        assert_eq!(shorten("abcdefghij", 7), "ab…ghij");
        assert_eq!(shorten("short", 7), "short");
    }

    #[test]
    fn hostile_figures_are_drawn_without_panic() {
        let mut a = sample_report();
        a.totals.fps = f64::NAN;
        a.totals.mb_per_s = f64::INFINITY;
        a.cpu.user_s_per_gb = f64::MAX;
        a.cpu.sys_s_per_gb = -3.0;
        a.streams.clear();
        let mut b = crate::Report::default();
        b.totals.dropped.storage = u64::MAX;
        let runs = [Run { name: "", report: &a }, Run { name: "b", report: &b }];
        let dir = tempfile::tempdir().expect("temp dir");
        write(&runs, &dir.path().join("cmp.svg")).expect("plot");
        write(&runs, &dir.path().join("cmp.png")).expect("plot");
        assert_eq!(finite(f64::NEG_INFINITY), 0.0);
        assert_eq!(finite(f64::INFINITY), 1e300);
    }

    #[test]
    fn wrap_keeps_lines_short() {
        let items: Vec<String> = ["status complete", "source /a/very/long/path/to/the/shot", "pacing 24"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let lines = wrap(&items, 20);
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(lines.first().map(String::as_str), Some("status complete"));
        assert!(lines[1].ends_with('…'), "{lines:?}");
    }
}
