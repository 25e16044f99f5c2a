//! What a stream plays: an ordered list of frames and where their bytes are.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Decoder, FrameRate};

/// Where one frame's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameExtent {
    /// A whole file per frame (DPX, EXR).
    File {
        /// The file.
        path: PathBuf,
    },
    /// A byte range inside a larger file (a video packet).
    Range {
        /// The container file.
        path: PathBuf,
        /// First byte.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// The sequence has a gap here: no file exists for this frame.
    Missing {
        /// The path the frame would have had.
        expected: PathBuf,
    },
}

impl FrameExtent {
    /// The path of the file the frame is in, or would be in.
    pub fn path(&self) -> &std::path::Path {
        match self {
            FrameExtent::File { path } | FrameExtent::Range { path, .. } => path,
            FrameExtent::Missing { expected } => expected,
        }
    }
}

/// A summary of a source, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// What the user named: a directory, a pattern or a file.
    pub location: String,
    /// The pattern the frames follow, e.g. `shot.%07d.dpx`.
    pub pattern: String,
    /// The format, e.g. "dpx".
    pub format: String,
    /// First frame number.
    pub first_frame: u64,
    /// Last frame number.
    pub last_frame: u64,
    /// Frames in the range first..=last, gaps included.
    pub n_frames: u64,
    /// Frame numbers with no file.
    pub gaps: Vec<u64>,
    /// The source's own frame rate, where the container states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_rate: Option<String>,
    /// How the frame index of a video file was built: from the container's tables, or
    /// by a first pass reading the whole file. `None` for image sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
}

/// An ordered, finite list of frames with their decoder.
pub trait Source: Send + Sync + 'static {
    /// The summary for the report.
    fn info(&self) -> SourceInfo;

    /// Frames in the source, gaps included.
    fn n_frames(&self) -> u64;

    /// The frame number (as on disk) of the frame at position `idx`.
    fn frame_number(&self, idx: u64) -> u64;

    /// Where the bytes of the frame at position `idx` are.
    fn extent(&self, idx: u64) -> FrameExtent;

    /// The decoder for this source's frames.
    fn decoder(&self) -> Arc<dyn Decoder>;

    /// The rate the source is meant to play at, where it states one (a video
    /// container does; an image sequence does not).
    fn frame_rate(&self) -> Option<FrameRate> {
        None
    }

    /// True when the frame at position `idx` can be decoded without the ones before it: a
    /// long-GOP decoder that falls behind may skip ahead to such a frame. Every frame of an
    /// image sequence or an intra-only codec is one.
    fn is_keyframe(&self, _idx: u64) -> bool {
        true
    }

    /// The frames' width and height, where the source knows them without reading a frame (a
    /// video container states them; a `sim://` source made them). `None` for an image
    /// sequence: the format registry reads them from a frame file's header instead.
    fn dimensions(&self) -> Option<(u32, u32)> {
        None
    }
}

/// Another source whose frames are read and not decoded: its decoder is
/// [`BytesOnly`](crate::BytesOnly) (`--no-decode`).
pub struct WithoutDecode(pub Arc<dyn Source>);

impl Source for WithoutDecode {
    fn is_keyframe(&self, idx: u64) -> bool {
        self.0.is_keyframe(idx)
    }

    fn info(&self) -> SourceInfo {
        self.0.info()
    }

    fn n_frames(&self) -> u64 {
        self.0.n_frames()
    }

    fn frame_number(&self, idx: u64) -> u64 {
        self.0.frame_number(idx)
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        self.0.extent(idx)
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        Arc::new(crate::BytesOnly)
    }

    fn frame_rate(&self) -> Option<crate::FrameRate> {
        self.0.frame_rate()
    }

    fn dimensions(&self) -> Option<(u32, u32)> {
        self.0.dimensions()
    }
}
