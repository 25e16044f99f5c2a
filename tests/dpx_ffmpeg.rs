//! DPX decode checked against the ffmpeg CLI.
