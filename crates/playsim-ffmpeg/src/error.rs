//! Why a video file could not be opened.

use std::path::PathBuf;

/// A video file could not be opened for playback. Every message names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Storage could not open or read the file.
    #[error("{0}")]
    Storage(#[from] playsim_core::StorageError),
    /// FFmpeg could not read the container (truncated, no `moov`, not a video file).
    #[error("{path}: FFmpeg cannot read the container: {detail}")]
    Container {
        /// The file.
        path: PathBuf,
        /// FFmpeg's reason, and what playsim makes of it.
        detail: String,
    },
    /// The file has no video stream.
    #[error("{path}: no video stream (streams: {streams})")]
    NoVideo {
        /// The file.
        path: PathBuf,
        /// What the file does have.
        streams: String,
    },
    /// The codec has no decoder in this FFmpeg build, or playsim cannot use its output.
    #[error("{path}: unsupported codec: {detail}")]
    UnsupportedCodec {
        /// The file.
        path: PathBuf,
        /// Which codec, and why.
        detail: String,
    },
    /// The container lists no frames.
    #[error("{path}: the video stream has no frames")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The blocking open task failed (it panicked or the runtime is shutting down).
    #[error("{path}: opening the file failed: {detail}")]
    Task {
        /// The file.
        path: PathBuf,
        /// The reason.
        detail: String,
    },
}
