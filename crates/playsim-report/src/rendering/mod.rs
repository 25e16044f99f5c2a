//! One trait for every output, a registry of a run report's renderers, and an atomic write of
//! a model to a file through a renderer.
//!
//! A [`Renderer`] turns one model (a run's [`Report`], a capacity search's result, a
//! scenario's tally, ...) into bytes on any [`Write`]: it knows nothing of files. Which renderer
//! a file gets is the caller's choice, by name (`--json` is always JSON) or by the file's
//! extension ([`Renderers::for_path`]: `--plot run.png` is the PNG plot). [`write_atomic`]
//! renders into memory and then replaces the file whole, so a reader never sees half of it.
//!
//! A new output format of the run report is one module under `format/` with a type that
//! implements `Renderer<Report>`, plus one line in the registry (`registry.rs`,
//! [`register_enabled_renderers`](crate::renderer::register_enabled_renderers)).
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

mod atomic;
#[cfg(feature = "render")]
mod style;

pub use atomic::write_bytes_atomic;
#[cfg(feature = "render")]
pub(crate) use style::{escape, hex};

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
    write_bytes_atomic(&bytes, path).map_err(|e| fail(RenderError::Io(e)))
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
