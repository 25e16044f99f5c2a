//! One trait for every output, a registry of a run report's renderers, and an atomic write of
//! a model to a file through a renderer.
//!
//! A [`Renderer`] turns one model (a run's [`Report`], a capacity search's result, a
//! scenario's tally, ...) into bytes on any [`Write`]: it knows nothing of files. Which renderer
//! a file gets is the caller's choice, by name (`--json` is always JSON) or by the file's
//! extension ([`Renderers::for_path`]: `--plot run.png` is the PNG plot). [`write_atomic`]
//! renders into memory and then replaces the file whole, so a reader never sees half of it.
//!
//! A new output format of the run report is one module with a type that implements
//! `Renderer<Report>`, plus one line in [`register_enabled_renderers`].
//!
//! ```
//! use playsim_report::renderer::{self, Renderers};
//! use playsim_report::Report;
//!
//! let renderers = Renderers::<Report>::enabled();
//! let json = renderers.for_path("run.json".as_ref())?;
//! assert_eq!(json.name(), "json");
//! let mut out = Vec::new();
//! json.render(&Report::default(), &mut out)?;
//! assert!(out.starts_with(b"{"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use crate::compare::{Compared, Run};
use crate::model::Report;
use crate::record::RecordResult;

/// Renders a model of type `M` as one output format.
///
/// A renderer writes to any [`Write`] and never opens a file itself; [`write_atomic`] puts its
/// bytes in a file. A format with variants chosen by the file's extension (a plot as SVG or
/// PNG) is one renderer per variant, each with its extensions, so that the lookup by
/// extension is the choice.
pub trait Renderer<M: ?Sized>: Send + Sync {
    /// The format's short name, unique in a registry: `text`, `json`, `csv`, `svg`, `png`.
    fn name(&self) -> &'static str;

    /// The file extensions it writes, lower case, without the dot; the first is the usual one.
    fn extensions(&self) -> &'static [&'static str];

    /// Writes `model` in this format to `out`.
    fn render(&self, model: &M, out: &mut dyn Write) -> Result<(), RenderError>;

    /// The message of a failure to write `path` in this format: by default
    /// `writing PATH: REASON`.
    fn failure(&self, path: &Path, reason: &dyn fmt::Display) -> String {
        format!("writing {}: {reason}", path.display())
    }
}

/// A model could not be rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// Writing the bytes failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The model could not be drawn or encoded in this format (a PNG with no font, say); the
    /// text says why and what to do.
    #[error("{0}")]
    Draw(String),
}

impl RenderError {
    /// The I/O error's kind, or [`io::ErrorKind::Other`] for one that is not an I/O error.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            RenderError::Io(e) => e.kind(),
            RenderError::Draw(_) => io::ErrorKind::Other,
        }
    }
}

/// A model could not be written to a file: its message names the file and says why, in the
/// words of the renderer ([`Renderer::failure`]).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct WriteError {
    message: String,
    kind: io::ErrorKind,
}

impl WriteError {
    /// The kind of the I/O error underneath, or [`io::ErrorKind::Other`].
    pub fn kind(&self) -> io::ErrorKind {
        self.kind
    }
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        io::Error::new(e.kind, e.message)
    }
}

/// No renderer in this build writes what was asked for.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoRenderer(String);

/// Renders `model` with `renderer` and writes it to `path`, replacing the file whole or not at
/// all (a temporary file in the same directory, synced, then renamed over `path`).
pub fn write_atomic<M: ?Sized>(renderer: &dyn Renderer<M>, model: &M, path: &Path) -> Result<(), WriteError> {
    let fail = |e: RenderError| WriteError { message: renderer.failure(path, &e), kind: e.kind() };
    let mut bytes = Vec::new();
    renderer.render(model, &mut bytes).map_err(fail)?;
    crate::json::write_bytes_atomic(&bytes, path).map_err(|e| fail(RenderError::Io(e)))
}

/// The renderers of one model, in the order registered.
pub struct Renderers<M: ?Sized> {
    entries: Vec<Arc<dyn Renderer<M>>>,
}

impl<M: ?Sized> Default for Renderers<M> {
    fn default() -> Self {
        Renderers { entries: Vec::new() }
    }
}

impl<M: ?Sized> fmt::Debug for Renderers<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|r| r.name())).finish()
    }
}

impl<M: ?Sized> Renderers<M> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a renderer. A later one with the same name or extension as an earlier one is
    /// found after it, so the first registered wins.
    pub fn register(&mut self, renderer: impl Renderer<M> + 'static) -> &mut Self {
        self.entries.push(Arc::new(renderer));
        self
    }

    /// Every renderer, in the order registered.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Renderer<M>> {
        self.entries.iter().map(|r| &**r)
    }

    /// The renderer called `name`.
    pub fn by_name(&self, name: &str) -> Result<&dyn Renderer<M>, NoRenderer> {
        self.iter().find(|r| r.name() == name).ok_or_else(|| {
            NoRenderer(format!("this build writes no {name} output (it writes: {})", self.names().join(", ")))
        })
    }

    /// The renderer for `path`'s extension (in either case).
    pub fn for_path(&self, path: &Path) -> Result<&dyn Renderer<M>, NoRenderer> {
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let found = extension.as_deref().and_then(|ext| self.iter().find(|r| r.extensions().contains(&ext)));
        found.ok_or_else(|| {
            let known: Vec<String> =
                self.iter().flat_map(|r| r.extensions().iter().map(|e| format!(".{e}"))).collect();
            let example = self.iter().find_map(|r| r.extensions().first()).unwrap_or(&"json");
            NoRenderer(format!(
                "no output is written for {}: give a file ending in {}, for example run.{example}",
                path.display(),
                known.join(", ")
            ))
        })
    }

    /// Writes `model` to `path` with the renderer its extension picks, atomically.
    pub fn write_for_path(&self, model: &M, path: &Path) -> Result<(), WriteError> {
        let renderer = self
            .for_path(path)
            .map_err(|e| WriteError { message: e.to_string(), kind: io::ErrorKind::InvalidInput })?;
        write_atomic(renderer, model, path)
    }

    fn names(&self) -> Vec<&'static str> {
        self.iter().map(|r| r.name()).collect()
    }
}

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
    renderers.register(crate::render::SummaryText);
    renderers.register(crate::json::ReportJson);
    renderers.register(crate::csv::TimelineCsv);
    #[cfg(feature = "render")]
    renderers.register(crate::plot::TimelinePlot::svg());
    #[cfg(feature = "render")]
    renderers.register(crate::plot::TimelinePlot::png());
    #[cfg(feature = "render")]
    renderers.register(crate::html::Html);
}

/// Registers every renderer of a comparison of runs (playback or record) this build has, one
/// line per format: the table, and with the `render` feature the figure as SVG and as PNG and
/// the HTML page.
pub fn register_compare_renderers<T: Compared>(renderers: &mut Renderers<[Run<'_, T>]>) {
    renderers.register(crate::compare::CompareText);
    #[cfg(feature = "render")]
    renderers.register(crate::compare_plot::ComparePlot::svg());
    #[cfg(feature = "render")]
    renderers.register(crate::compare_plot::ComparePlot::png());
    #[cfg(feature = "render")]
    renderers.register(crate::html::Html);
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
    renderers.register(crate::record_plot::RecordPlot::svg());
    #[cfg(feature = "render")]
    renderers.register(crate::record_plot::RecordPlot::png());
    #[cfg(feature = "render")]
    renderers.register(crate::html::Html);
}

impl Renderers<RecordResult> {
    /// The record result's renderers this build has ([`register_record_renderers`]).
    pub fn record() -> Self {
        let mut renderers = Renderers::new();
        register_record_renderers(&mut renderers);
        renderers
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
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
        assert_eq!(rendered("text"), crate::render::summary(&report));
        assert_eq!(rendered("json"), crate::json::to_string_pretty(&report));
        assert_eq!(rendered("csv"), crate::csv::timeline(&report));
    }

    #[test]
    fn the_comparison_has_its_table_and_figures() {
        let report = sample_report();
        let runs = [Run { name: "a", report: &report }, Run { name: "b", report: &report }];
        let renderers = Renderers::compare();
        let mut out = Vec::new();
        renderers.by_name("text").unwrap().render(&runs, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), crate::compare::compare(&runs));
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
        let png = crate::plot::TimelinePlot::png_with_fonts(crate::plot::Fonts::dir(&fonts));
        let err = write_atomic(&png, &sample_report(), &path).unwrap_err().to_string();
        let before = crate::plot::write_with_fonts(&sample_report(), &path, &crate::plot::Fonts::dir(&fonts));
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
        assert_eq!(std::fs::read_to_string(&path).unwrap(), crate::csv::timeline(&sample_report()));
        let missing = dir.path().join("absent").join("t.csv");
        let err = renderers.write_for_path(&sample_report(), &missing).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().starts_with(&format!("writing csv {}: ", missing.display())), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["t.csv"]);
    }
}
