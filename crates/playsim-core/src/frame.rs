//! Decoded frames in their canonical pixel layout.

use serde::{Deserialize, Serialize};

/// The layout of a decoded frame's bytes.
///
/// Each variant fixes the canonical pixels that `playsim decode --md5` hashes;
/// names follow FFmpeg's pixel format names where one exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PixelFormat {
    /// Interleaved R, G, B, 16 bits each, little-endian (FFmpeg `rgb48le`).
    Rgb48Le,
    /// Interleaved R, G, B, A, 16 bits each, little-endian (FFmpeg `rgba64le`).
    Rgba64Le,
}

impl PixelFormat {
    /// Bytes per pixel.
    pub fn bytes_per_pixel(&self) -> usize {
        match self {
            PixelFormat::Rgb48Le => 6,
            PixelFormat::Rgba64Le => 8,
        }
    }

    /// Channels per pixel.
    pub fn channels(&self) -> usize {
        match self {
            PixelFormat::Rgb48Le => 3,
            PixelFormat::Rgba64Le => 4,
        }
    }

    /// FFmpeg's name for the same layout.
    pub fn name(&self) -> &'static str {
        match self {
            PixelFormat::Rgb48Le => "rgb48le",
            PixelFormat::Rgba64Le => "rgba64le",
        }
    }
}

/// A decoded frame: canonical pixels, row by row, with no padding.
///
/// A decoder writes into one it is given and reuses its allocation, so the
/// engine can keep a pool of them with no allocation per frame.
#[derive(Clone, Debug, Default)]
pub struct DecodedFrame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixel layout of `data`; `None` before the first decode.
    pub format: Option<PixelFormat>,
    /// The canonical pixel bytes.
    pub data: Vec<u8>,
}

impl DecodedFrame {
    /// Sets the geometry and resizes `data` to fit, keeping the allocation when it is large enough.
    pub fn reset(&mut self, width: u32, height: u32, format: PixelFormat) {
        self.width = width;
        self.height = height;
        self.format = Some(format);
        let len = width as usize * height as usize * format.bytes_per_pixel();
        self.data.resize(len, 0);
    }

    /// The bytes of one row.
    pub fn row(&self, y: u32) -> &[u8] {
        let stride = self.width as usize * self.format.map_or(0, |f| f.bytes_per_pixel());
        let start = y as usize * stride;
        &self.data[start..start + stride]
    }
}
