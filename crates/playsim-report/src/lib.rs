//! playsim's run report: one [`Report`] value, rendered as text and JSON.
#![warn(clippy::unwrap_used)]

mod model;

pub use model::*;
