//! The formats: each module renders models (from [`crate::model`]) through the renderer
//! infrastructure ([`crate::rendering`]). A format may use another's drawing (the HTML page
//! shows the plots inline), but none names the registry.

pub mod capacity;
pub mod compare;
#[cfg(feature = "render")]
pub mod compare_plot;
pub mod csv;
pub mod frametest;
#[cfg(feature = "render")]
pub mod html;
pub mod json;
pub mod live_csv;
pub mod matrix;
#[cfg(feature = "render")]
pub mod matrix_plot;
#[cfg(feature = "render")]
pub mod plot;
pub mod record;
#[cfg(feature = "render")]
pub mod record_plot;
pub mod tally;
pub mod text;
