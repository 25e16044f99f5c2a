//! playsim: a playback simulator with real decode load, for media storage.
//!
//! It reads image sequences and video files from storage, really decodes them on a thread
//! pool, paces presentation to an exact rational frame rate, and counts every
//! dropped frame by cause: storage, decode, output, unreadable.
//!
//! This crate is the facade: it re-exports the layers, and its binary is the command line.
//! What playsim does with storage (play, capacity, matrix, record, frametest, decode, the
//! scenario runner) is `playsim-ops`, re-exported here whole; what a run is asked to do (the
//! settings list, the request, scenario files) is `playsim-settings`. Embed it like this:
//!
//! ```no_run
//! # async fn demo() -> Result<(), playsim::Error> {
//! use playsim::{PlayRequest, EngineConfig, Pacing};
//! let request = PlayRequest {
//!     engine: EngineConfig { pacing: "24".parse::<Pacing>()?, ..EngineConfig::default() },
//!     ..PlayRequest::new("target/demo/dpx-4k-dci")
//! };
//! let report = playsim::prepare(&request).await?.run().await;
//! println!("{}", playsim::report::render::summary(&report));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

pub use playsim_cluster as cluster;
pub use playsim_ops::*;
pub use playsim_report as report;
pub use playsim_settings as settings;
pub use playsim_tiff as tiff;
pub use {playsim_core as core, playsim_dpx as dpx, playsim_engine as engine, playsim_media as media};
pub use {playsim_exr as exr, playsim_ffmpeg as ffmpeg, playsim_storage as storage};
