//! playsim's integration tests: one binary, one module per area.

mod dpx_ffmpeg;
