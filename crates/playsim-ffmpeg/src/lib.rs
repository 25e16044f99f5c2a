//! Video files for playsim: FFmpeg's demuxers and decoders, with every byte read
//! through playsim's [`Storage`](playsim_core::Storage).
//!
//! [`open`] reads the container through a custom AVIO context over the storage, and
//! builds a packet index (offset, size, timestamp, keyframe) from the container's own
//! tables (MOV/MP4 sample tables) without reading the media; where the container
//! gives none, a first pass reads the file through the storage, and
//! [`IndexStats`] says so. The engine then reads each frame's packet as one storage
//! read ([`FrameExtent::Range`](playsim_core::FrameExtent::Range)), so slow storage
//! shows up as storage drops, not as decode time.
//!
//! Decoding follows the codec ([`DecodeMode`]): intra-only codecs (ProRes, DNxHR,
//! MJPEG) decode every frame on its own, across the engine's decode pool; long-GOP
//! codecs (H.264, HEVC) decode in order on one decoder per stream
//! ([`Decoder::in_order`](playsim_core::Decoder::in_order)), with FFmpeg's frame threads.
//! Pictures come out as the decoder's native planes, unpadded: the bytes that
//! `ffmpeg -f framemd5` hashes.
//!
//! All of that is the `ffmpeg` cargo feature (on by default), which links the system
//! FFmpeg (ffmpeg-sys-next's build fails when it is missing).
//! Without it the crate holds only [`VideoOptions`], [`Error`] and [`VIDEO_EXTENSIONS`].
//!
//! A probe of our own in `build.rs`, to name all three missing packages at once, was tried and
//! removed: cargo scheduled ffmpeg-sys-next's script first, it failed at once, and ours never
//! started (cargo starts no new job after a failure). `cargo xtask deps` installs them.
//! For MXF, whose index table segments FFmpeg's demuxer keeps to itself, `mxf.rs` reads them
//! (partitions from the Random Index Pack, each partition's index segments and essence start).
//! Pictures are not copied: a copy cost 5–15 ms a UHD frame and, for long-GOP, stalled the thread
//! feeding FFmpeg's frame threads (0.87× ffmpeg before, 1.0× after). FFmpeg's worker threads are
//! named `playsim-codec` when a decoder opens them, so the engine charges their CPU to decode.
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(clippy::unwrap_used)]

// Everything that calls FFmpeg is behind the `ffmpeg` feature (on by default); without it the
// crate keeps its options, its errors and its list of extensions, so that its callers build
// alike and can refuse a video file naming the feature.
#[cfg(feature = "ffmpeg")]
mod decode;
#[cfg(feature = "ffmpeg")]
mod encode;
mod error;
// The FFmpeg calls ffmpeg-next does not wrap: the one module allowed `unsafe`, each block
// with a `// SAFETY:` line.
#[cfg(feature = "ffmpeg")]
#[allow(unsafe_code)]
mod ffi;
#[cfg(feature = "ffmpeg")]
mod mxf;
#[cfg(feature = "ffmpeg")]
mod open;
#[cfg(feature = "ffmpeg")]
mod source;
#[cfg(feature = "ffmpeg")]
mod storage_io;

#[cfg(feature = "ffmpeg")]
pub use decode::{DecodeMode, VideoDecoder};
#[cfg(feature = "ffmpeg")]
pub use encode::{MovMuxer, ProresCodec, ProresEncoder, ProresProfile};
pub use error::Error;

/// The name FFmpeg's own threads (a decoder's frame or slice threads) are given when the
/// decoder opens, so that the engine can count their CPU as the decode stage's: the engine's
/// `playsim_engine::probe::CODEC_THREAD_NAME`, which a test of the facade keeps equal to this.
pub const CODEC_THREAD_NAME: &str = "playsim-codec";
#[cfg(feature = "ffmpeg")]
pub use open::{ffmpeg_version, open};
#[cfg(feature = "ffmpeg")]
pub use source::{IndexOrigin, IndexStats, PacketEntry, VideoSource};

use std::path::Path;

/// File extensions playsim opens as video files (lower case, no dot).
pub const VIDEO_EXTENSIONS: &[&str] = &["mov", "mp4", "m4v", "mxf", "mkv", "avi", "mts", "m2ts", "ts"];

/// How video files are decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VideoOptions {
    /// FFmpeg's threads per decoder: slice threads for intra codecs, frame threads for long-GOP.
    pub codec_threads: u32,
}

impl Default for VideoOptions {
    fn default() -> Self {
        VideoOptions { codec_threads: 1 }
    }
}

/// The MXF index reader that [`open`] runs when FFmpeg's demuxer keeps an MXF file's index
/// tables to itself (partitions, index table segments, the KLV headers of edit units), over a
/// whole file held in memory: the entry of the `mxf_index` fuzz target, not an API.
#[cfg(feature = "ffmpeg")]
#[doc(hidden)]
pub fn mxf_index_from_memory(file: &[u8]) -> Result<Vec<PacketEntry>, String> {
    // Like every storage, a read past the end returns the bytes that are there.
    let read = |offset: u64, len: usize| {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(file.len());
        Ok(file[start..start.saturating_add(len).min(file.len())].to_vec())
    };
    mxf::index(&read, file.len() as u64)
}

/// True when `path`'s extension is one of [`VIDEO_EXTENSIONS`] (any case).
pub fn is_video_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| VIDEO_EXTENSIONS.iter().any(|v| v.eq_ignore_ascii_case(e)))
}
