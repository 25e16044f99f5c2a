//! A video file as a playsim [`Source`]: one packet per frame, each a byte range.

use std::path::PathBuf;
use std::sync::Arc;

use playsim_core::{Decoder, FrameExtent, FrameRate, Source, SourceInfo};

use crate::VideoDecoder;

/// Where one frame's packet is in the file, from the container's index or a first pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketEntry {
    /// Byte offset of the packet in the file.
    pub offset: u64,
    /// Bytes in the packet.
    pub size: u64,
    /// Timestamp in the stream's time base: the presentation time where the container
    /// gives it, else (MOV/MP4 sample tables) the decode time.
    pub timestamp: i64,
    /// The packet starts a GOP: it decodes without earlier packets.
    pub keyframe: bool,
}

/// How the packet index was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexOrigin {
    /// From the container's own tables (MOV/MP4 sample tables, MXF index segments).
    ContainerTables,
    /// The container has no usable index: a first pass read the whole file.
    FirstPass,
}

/// How the index was built and what that cost in storage reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexStats {
    /// Where the index came from.
    pub origin: IndexOrigin,
    /// Why the container's tables could not be used, when they were tried and a first pass ran.
    pub fallback: Option<String>,
    /// Read requests the demuxer made at open, through playsim's storage.
    pub reads: u64,
    /// Bytes those reads delivered.
    pub bytes: u64,
    /// The file's size.
    pub file_size: u64,
}

impl IndexStats {
    /// One line for the report.
    pub fn describe(&self) -> String {
        let how = match self.origin {
            IndexOrigin::ContainerTables => "from the container's tables",
            IndexOrigin::FirstPass => {
                "by a first pass over the whole file (the container has no usable index)"
            }
        };
        format!(
            "{how}; {} reads, {} bytes at open, of a {}-byte file",
            self.reads, self.bytes, self.file_size
        )
    }
}

/// A video file's one video stream: its packets in decode order and its decoder.
pub struct VideoSource {
    pub(crate) path: PathBuf,
    pub(crate) packets: Vec<PacketEntry>,
    pub(crate) decoder: Arc<VideoDecoder>,
    pub(crate) rate: Option<FrameRate>,
    pub(crate) index: IndexStats,
    pub(crate) format: String,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

impl VideoSource {
    /// The packets, in decode order.
    pub fn packets(&self) -> &[PacketEntry] {
        &self.packets
    }

    /// How the index was built.
    pub fn index(&self) -> &IndexStats {
        &self.index
    }

    /// The decoder, with its codec and mode.
    pub fn video_decoder(&self) -> &Arc<VideoDecoder> {
        &self.decoder
    }

    /// The coded picture size the container states.
    pub fn dimensions(&self) -> (u32, u32) {
        (self.width, self.height)
    }
}

impl Source for VideoSource {
    fn info(&self) -> SourceInfo {
        let n = self.packets.len() as u64;
        SourceInfo {
            location: self.path.display().to_string(),
            pattern: self.path.display().to_string(),
            format: self.format.clone(),
            first_frame: 0,
            last_frame: n.saturating_sub(1),
            n_frames: n,
            gaps: Vec::new(),
            frame_rate: self.rate.map(|r| format!("{}/{}", r.num(), r.den())),
            index: Some(self.index.describe()),
        }
    }

    fn n_frames(&self) -> u64 {
        self.packets.len() as u64
    }

    fn frame_number(&self, idx: u64) -> u64 {
        idx
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        let entry = usize::try_from(idx).ok().and_then(|i| self.packets.get(i));
        match entry {
            Some(p) => FrameExtent::Range { path: self.path.clone(), offset: p.offset, len: p.size },
            None => FrameExtent::Missing { expected: self.path.clone() },
        }
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        Arc::clone(&self.decoder) as Arc<dyn Decoder>
    }

    fn is_keyframe(&self, idx: u64) -> bool {
        usize::try_from(idx).ok().and_then(|i| self.packets.get(i)).is_some_and(|p| p.keyframe)
    }

    fn frame_rate(&self) -> Option<FrameRate> {
        self.rate
    }

    /// The size the container states, so `--no-decode` needs no frame read to report it.
    fn dimensions(&self) -> Option<(u32, u32)> {
        Some((self.width, self.height)).filter(|&(w, h)| w > 0 && h > 0)
    }
}
