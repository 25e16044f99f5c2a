//! playsim's integration tests: one binary, one module per area.

mod bad_input;
mod cli;
mod dpx_ffmpeg;
mod exr_bad_input;
mod exr_ffmpeg;
mod fixtures;
mod frametest;
mod io_uring;
mod mount_label;
mod nfs;
mod scenario;
mod sim;
mod tiff;
mod util;
mod video;
