//! The models: what each command's result is, with no knowledge of how it is written. Every
//! module here imports only from this layer (and from `playsim-core`).

pub mod capacity;
pub mod compare;
pub mod error;
pub mod frametest;
pub mod histograms;
pub mod matrix;
pub mod merge;
pub mod percentiles;
pub mod record;
pub(crate) mod report;
pub mod schema;
pub mod tally;
pub mod wire;

pub use report::*;
