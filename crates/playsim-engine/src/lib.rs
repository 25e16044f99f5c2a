//! playsim's engine: the pipeline that plays streams of frames on one clock.
//!
//! Each stream admits frames into a prefetch window, reads them with a bounded
//! number of reads in flight, decodes them on a shared pool, runs the output
//! stage, and presents each frame at its exact rational due time, or drops it
//! and records why (see [`stream`](crate::stream) for the rule). Only the
//! engine reads the clock, through the injected [`playsim_core::Clock`].
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod cancel;
mod clock;
mod config;
mod exec;
pub mod frametest;
mod live;
#[allow(unsafe_code)] // FFI: the scheduler calls, each block with its SAFETY line.
mod priority;
pub mod probe;
pub mod record;
mod run;
mod start;
mod stream;
pub mod v210;

pub use cancel::CancelToken;
pub use clock::{PreciseClock, RunClock, TokioClock};
pub use config::{
    default_decode_threads, default_max_buffer, ConfigError, ConfigField, EngineConfig, OutputStage,
    MAX_DEFAULT_MAX_BUFFER, MIN_DEFAULT_MAX_BUFFER,
};
pub use exec::{
    DecodeExecutor, DecodeJob, DecodePool, EncodeExecutor, EncodeJob, EncodePool, FrameMaker, InOrderJob,
    JobFuture, OutputExecutor, OutputJob, V210Output,
};
pub use live::{LiveCounters, LiveSnapshot, LiveStage, LiveStream, LiveView};
pub use run::{report_settings, OwnDecodePool, Simulation, SimulationBuilder, StreamSpec};
pub use start::{StartBarrier, StartFuture};
pub use stream::MAX_FRAME_BYTES;

#[cfg(test)]
mod tests;
