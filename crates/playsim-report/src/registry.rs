//! The one module that names the formats: which renderers each model has, one line per format.
//!
//! A new output format is a type in [`crate::format`] that implements
//! [`Renderer`](crate::rendering::Renderer) for its model, plus one line here; nothing below
//! this module knows which formats exist.

use crate::format::{capacity, compare, csv, frametest, json, matrix, tally, text};
#[cfg(feature = "render")]
use crate::format::{compare_plot, html, matrix_plot, plot, record_plot};
use crate::model::capacity::Capacity;
use crate::model::compare::{Compared, Run};
use crate::model::frametest::FrametestResult;
use crate::model::matrix::Matrix;
use crate::model::record::RecordResult;
use crate::model::tally::Tally;
use crate::model::Report;
use crate::rendering::Renderers;

impl Renderers<Report> {
    /// The run report's renderers this build has ([`register_enabled_renderers`]).
    pub fn enabled() -> Self {
        let mut renderers = Renderers::new();
        register_enabled_renderers(&mut renderers);
        renderers
    }
}

/// Registers every renderer of the run report this build has, one line per format: the text
/// summary, the JSON report, the per-frame timeline as CSV, and with the `render` feature the
/// plot as SVG and as PNG and the HTML page.
pub fn register_enabled_renderers(renderers: &mut Renderers<Report>) {
    renderers.register(text::SummaryText);
    renderers.register(json::ReportJson);
    renderers.register(csv::TimelineCsv);
    #[cfg(feature = "render")]
    renderers.register(plot::TimelinePlot::svg());
    #[cfg(feature = "render")]
    renderers.register(plot::TimelinePlot::png());
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

/// Registers every renderer of a comparison of runs (playback or record) this build has, one
/// line per format: the table, and with the `render` feature the figure as SVG and as PNG and
/// the HTML page.
pub fn register_compare_renderers<T: Compared>(renderers: &mut Renderers<[Run<'_, T>]>) {
    renderers.register(compare::CompareText);
    #[cfg(feature = "render")]
    renderers.register(compare_plot::ComparePlot::svg());
    #[cfg(feature = "render")]
    renderers.register(compare_plot::ComparePlot::png());
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

impl<T: Compared> Renderers<[Run<'_, T>]> {
    /// The comparison's renderers this build has ([`register_compare_renderers`]).
    pub fn compare() -> Self {
        let mut renderers = Renderers::new();
        register_compare_renderers(&mut renderers);
        renderers
    }
}

/// Registers every renderer of a record run's result this build has beyond its summary, JSON
/// and timeline CSV (which `record` writes by name): with the `render` feature, the plot as
/// SVG and as PNG and the HTML page.
#[cfg_attr(not(feature = "render"), allow(unused_variables))]
pub fn register_record_renderers(renderers: &mut Renderers<RecordResult>) {
    #[cfg(feature = "render")]
    renderers.register(record_plot::RecordPlot::svg());
    #[cfg(feature = "render")]
    renderers.register(record_plot::RecordPlot::png());
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

impl Renderers<RecordResult> {
    /// The record result's renderers this build has ([`register_record_renderers`]).
    pub fn record() -> Self {
        let mut renderers = Renderers::new();
        register_record_renderers(&mut renderers);
        renderers
    }
}

/// Registers the capacity result's renderers, one line per format: its text and its JSON, and
/// with the `render` feature its HTML page.
pub fn register_capacity_renderers(renderers: &mut Renderers<Capacity>) {
    renderers.register(capacity::CapacityText);
    renderers.register(capacity::CapacityJson);
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

/// Registers frametest's renderers, one line per format: its summary, its frame times as CSV
/// and its figures as JSON, and with the `render` feature its HTML page.
pub fn register_frametest_renderers(renderers: &mut Renderers<FrametestResult>) {
    renderers.register(frametest::FrametestText);
    renderers.register(frametest::FrametestCsv);
    renderers.register(frametest::FrametestJson);
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

/// Registers the matrix's renderers, one line per format: its text, JSON and CSV, and with the
/// `render` feature the grid as SVG and as PNG and the HTML page.
pub fn register_matrix_renderers(renderers: &mut Renderers<Matrix>) {
    renderers.register(matrix::MatrixText);
    renderers.register(matrix::MatrixJson);
    renderers.register(matrix::MatrixCsv);
    #[cfg(feature = "render")]
    renderers.register(matrix_plot::MatrixPlot::svg());
    #[cfg(feature = "render")]
    renderers.register(matrix_plot::MatrixPlot::png());
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

impl Renderers<Matrix> {
    /// The matrix's renderers ([`register_matrix_renderers`]).
    pub fn matrix() -> Self {
        let mut renderers = Renderers::new();
        register_matrix_renderers(&mut renderers);
        renderers
    }
}

/// Registers the tally's renderers, one line per format: its text, and with the `render`
/// feature its HTML page.
pub fn register_tally_renderers(renderers: &mut Renderers<Tally>) {
    renderers.register(tally::TallyText);
    #[cfg(feature = "render")]
    renderers.register(html::Html);
}

impl Renderers<Tally> {
    /// The tally's renderers ([`register_tally_renderers`]).
    pub fn tally() -> Self {
        let mut renderers = Renderers::new();
        register_tally_renderers(&mut renderers);
        renderers
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{self, Write};
    use std::path::Path;

    use super::*;
    use crate::rendering::{write_atomic, RenderError, Renderer};
    use crate::testutil::sample_report;

    #[test]
    fn names_and_extensions_are_unique() {
        let renderers = Renderers::<Report>::enabled();
        let mut names: Vec<_> = renderers.iter().map(|r| r.name()).collect();
        let mut extensions: Vec<_> = renderers.iter().flat_map(|r| r.extensions().iter().copied()).collect();
        let (n_names, n_extensions) = (names.len(), extensions.len());
        names.sort_unstable();
        names.dedup();
        extensions.sort_unstable();
        extensions.dedup();
        assert_eq!((names.len(), extensions.len()), (n_names, n_extensions), "{renderers:?}");
        for name in ["text", "json", "csv"] {
            assert_eq!(renderers.by_name(name).unwrap().name(), name);
        }
        #[cfg(feature = "render")]
        assert_eq!(renderers.by_name("png").unwrap().extensions(), ["png"]);
    }

    #[test]
    fn the_extension_picks_the_renderer_in_either_case() {
        let renderers = Renderers::<Report>::enabled();
        assert_eq!(renderers.for_path(Path::new("a/run.JSON")).unwrap().name(), "json");
        assert_eq!(renderers.for_path(Path::new("t.csv")).unwrap().name(), "csv");
        assert_eq!(renderers.for_path(Path::new("summary.txt")).unwrap().name(), "text");
        #[cfg(feature = "render")]
        assert_eq!(renderers.for_path(Path::new("run.svg")).unwrap().name(), "svg");
        let err = renderers.for_path(Path::new("run.xls")).map(|r| r.name()).unwrap_err().to_string();
        assert!(
            err.contains("run.xls") && err.contains(".csv") && err.contains("for example run.txt"),
            "{err}"
        );
        #[cfg(feature = "render")]
        assert_eq!(renderers.for_path(Path::new("run.html")).unwrap().name(), "html");
        let err = renderers.by_name("markdown").map(|r| r.name()).unwrap_err().to_string();
        assert!(err.contains("no markdown output") && err.contains("json"), "{err}");
    }

    #[test]
    fn each_renderer_writes_what_its_module_writes() {
        let report = sample_report();
        let renderers = Renderers::<Report>::enabled();
        let rendered = |name: &str| {
            let mut out = Vec::new();
            renderers.by_name(name).unwrap().render(&report, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(rendered("text"), crate::format::text::summary(&report));
        assert_eq!(rendered("json"), crate::format::json::to_string_pretty(&report));
        assert_eq!(rendered("csv"), crate::format::csv::timeline(&report));
    }

    #[test]
    fn the_comparison_has_its_table_and_figures() {
        let report = sample_report();
        let runs = [Run { name: "a", report: &report }, Run { name: "b", report: &report }];
        let renderers = Renderers::compare();
        let mut out = Vec::new();
        renderers.by_name("text").unwrap().render(&runs, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), crate::format::compare::compare(&runs));
        #[cfg(feature = "render")]
        {
            let mut svg = Vec::new();
            renderers.for_path(Path::new("cmp.svg")).unwrap().render(&runs, &mut svg).unwrap();
            assert!(String::from_utf8_lossy(&svg).contains("<svg"));
            let err = renderers.for_path(Path::new("cmp.svg")).unwrap().render(&[], &mut svg).unwrap_err();
            assert!(err.to_string().contains("no runs to compare"), "{err}");
        }
    }

    /// A new format is a type and a registration: the lookup and the write need nothing else.
    #[test]
    fn a_registered_format_is_found_by_its_extension_and_written() {
        struct Markdown;
        impl Renderer<Report> for Markdown {
            fn name(&self) -> &'static str {
                "markdown"
            }
            fn extensions(&self) -> &'static [&'static str] {
                &["md", "markdown"]
            }
            fn render(&self, report: &Report, out: &mut dyn Write) -> Result<(), RenderError> {
                Ok(write!(out, "# {} streams", report.streams.len())?)
            }
        }
        let mut renderers = Renderers::<Report>::enabled();
        renderers.register(Markdown);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.MD");
        renderers.write_for_path(&sample_report(), &path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("# {} streams", sample_report().streams.len())
        );
    }

    /// A plot that cannot be drawn fails with the words the plot module has always used.
    #[cfg(feature = "render")]
    #[test]
    fn a_png_with_no_font_fails_as_the_plot_module_says() {
        let dir = tempfile::tempdir().unwrap();
        let fonts = dir.path().join("no-fonts");
        std::fs::create_dir(&fonts).unwrap();
        let path = dir.path().join("run.png");
        let png = crate::format::plot::TimelinePlot::png_with_fonts(crate::format::plot::Fonts::dir(&fonts));
        let err = write_atomic(&png, &sample_report(), &path).unwrap_err().to_string();
        let before = crate::format::plot::write_with_fonts(
            &sample_report(),
            &path,
            &crate::format::plot::Fonts::dir(&fonts),
        );
        assert_eq!(err, before.unwrap_err().to_string());
        assert!(err.starts_with(&format!("cannot plot to {}: no font found", path.display())), "{err}");
        assert!(!path.exists());
    }

    #[test]
    fn a_write_goes_to_the_file_whole_and_a_failure_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let renderers = Renderers::<Report>::enabled();
        let path = dir.path().join("t.csv");
        renderers.write_for_path(&sample_report(), &path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), crate::format::csv::timeline(&sample_report()));
        let missing = dir.path().join("absent").join("t.csv");
        let err = renderers.write_for_path(&sample_report(), &missing).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().starts_with(&format!("writing csv {}: ", missing.display())), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["t.csv"]);
    }
}
