//! One-file HTML pages of every model a command writes (`--html FILE.html`): the run's
//! [`Report`], a capacity search ([`Capacity`]), the matrix ([`Matrix`]), a record run
//! ([`RecordResult`]), a scenario's [`Tally`], frametest's result ([`FrametestResult`]) and a
//! comparison of runs (`compare`, playback or record).
//!
//! Each page is one file that needs nothing else: no script, no external style sheet, font or
//! image, no network. Its style is one `<style>` element in system fonts; its figures are the
//! plots' own SVG ([`crate::format::plot`], [`crate::format::record_plot`], [`crate::format::compare_plot`],
//! [`crate::format::matrix_plot`]) inline. It holds what the text summary says, as tables (numbers
//! right-aligned, drops coloured by cause, a headline verdict), the figures, the per-client and
//! per-stream tables, and the text summary itself folded in a `<details>`. Every string of the
//! model (paths, names, errors) is escaped; the model's URLs are already without credentials,
//! and nothing is added to them.
//!
//! The renderer of every model is [`Html`], named `html`, for files ending in `.html` or
//! `.htm`; it is registered with each model's other renderers
//! ([`crate::registry::register_enabled_renderers`], [`crate::model::capacity::register_capacity_renderers`],
//! [`crate::model::matrix::register_matrix_renderers`], [`crate::registry::register_record_renderers`],
//! [`crate::model::tally::register_tally_renderers`], [`crate::model::frametest::register_frametest_renderers`],
//! [`crate::registry::register_compare_renderers`]), so that
//! `Renderers::<M>::for_path("x.html")` finds it.
//!
//! # The page's figures, for a machine to check
//!
//! Every figure a page shows that is one value of the model's JSON form carries two
//! attributes on the element whose text shows it:
//!
//! - `data-json`: an RFC 6901 JSON pointer to the value in the model's JSON form, exactly as
//!   serde_json writes it (`/totals/dropped/storage`, `/rows/0/cells/1/best_streams`);
//! - `data-value`: the value as serde_json writes it (`3`, `23.4`, `"storage"`, `null`).
//!
//! The JSON form of each model is the file its command writes with `--json`: the run report
//! as [`crate::format::json`] writes it (numbers that are not finite as 0); the capacity result and
//! the matrix as their `json` renderers write them; for a record run, its figures
//! ([`crate::model::record::RecordFigures`], `record --json`); for frametest, its figures
//! ([`crate::model::frametest::FrametestFigures`], `frametest --json`). A comparison's JSON form is
//! the array of its runs' JSON forms, in the order compared (the files given to `compare`),
//! so its pointers start with the run's index (`/1/totals/fps`). A tally has no JSON form, and
//! its page carries no `data-json`. `<body data-model="...">` names the page's model:
//! `report`, `capacity`, `matrix`, `record`, `tally`, `frametest`, `compare`.
//!
//! The element's text (its `textContent`, trimmed) is that value formatted: a number rounded to
//! the places shown (a whole number in full, with no separators; units stand outside the
//! element); when the element has `data-scale`, the number times that scale (`1e-6` for bytes
//! shown as MB, `1e2` for a fraction shown as a percentage); a string as it is; `null` as `-`;
//! a boolean as `yes` or `no`. One exception: a yes/no matrix's (`max` 1) cell answer,
//! `best_streams`, shows as ✓ (1 or more) or ✗ (0).
//!
//! Figures worked out from several values (all drops over the causes, a mean over
//! repetitions, a difference between runs) carry no `data-json`. The figures that always
//! carry it:
//!
//! - run report: drops by cause, over the run (`/totals/dropped/CAUSE`) and per stream
//!   (`/streams/N/dropped/CAUSE`) and client (`/clients/N/dropped/CAUSE`); frames due and
//!   presented; fps and MB/s (`/totals/fps`, `/totals/mb_per_s`, and per stream and client);
//!   latency percentiles; CPU per stage and per GB; the settings' numbers;
//! - capacity: the answer (`/best`), its limit and margin, and every trial's figures;
//! - matrix: each cell's streams and cause (`/rows/R/cells/C/best_streams`, `.../limit`)
//!   and margin;
//! - record: drops by cause (`/frames_dropped`, `/dropped_input`, `/dropped_encode`,
//!   `/dropped_storage`), failures, frames written, fps and MB/s (`/fps`, `/mb_per_s`);
//! - frametest: frames transferred, dropped and failed, frame and data rate, the frame
//!   times and the histogram's buckets;
//! - comparison: each run's figures where they are one value of its JSON.
//!
//! A test in a browser loads a page, collects every `[data-json]` element, and checks each
//! one's `data-value`, parsed as JSON, against the value at its pointer in the JSON file.

mod capacity;
mod compare;
mod frametest;
mod matrix;
mod page;
mod record;
mod report;
mod tally;
#[cfg(test)]
mod tests;

use std::io::Write;

pub use capacity::capacity_page;
pub use compare::compare_page;
pub use frametest::frametest_page;
pub use matrix::matrix_page;
pub use record::record_page;
pub use report::report_page;
pub use tally::tally_page;

use crate::model::capacity::Capacity;
use crate::model::compare::{Compared, Run};
use crate::model::frametest::FrametestResult;
use crate::model::matrix::Matrix;
use crate::model::record::RecordResult;
use crate::model::tally::Tally;
use crate::model::Report;
use crate::rendering::{RenderError, Renderer};

/// The HTML page of a model: the `html` renderer of every model, for `.html` and `.htm`
/// files.
#[derive(Clone, Copy, Debug, Default)]
pub struct Html;

/// The renderer's name.
const NAME: &str = "html";
/// The renderer's extensions.
const EXTENSIONS: &[&str] = &["html", "htm"];

macro_rules! html_renderer {
    ($model:ty, $page:path) => {
        impl Renderer<$model> for Html {
            fn name(&self) -> &'static str {
                NAME
            }

            fn extensions(&self) -> &'static [&'static str] {
                EXTENSIONS
            }

            fn render(&self, model: &$model, out: &mut dyn Write) -> Result<(), RenderError> {
                Ok(out.write_all($page(model).as_bytes())?)
            }
        }
    };
}

html_renderer!(Report, report_page);
html_renderer!(Capacity, capacity_page);
html_renderer!(Matrix, matrix_page);
html_renderer!(RecordResult, record_page);
html_renderer!(Tally, tally_page);
html_renderer!(FrametestResult, frametest_page);

impl<'a, T: Compared> Renderer<[Run<'a, T>]> for Html {
    fn name(&self) -> &'static str {
        NAME
    }

    fn extensions(&self) -> &'static [&'static str] {
        EXTENSIONS
    }

    fn render(&self, runs: &[Run<'a, T>], out: &mut dyn Write) -> Result<(), RenderError> {
        if runs.is_empty() {
            return Err(RenderError::Draw(
                "no runs to compare, for example `playsim compare a.json b.json`".to_owned(),
            ));
        }
        Ok(out.write_all(compare_page(runs).as_bytes())?)
    }
}
