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
    /// Interleaved R, G, B as 32-bit floats, little-endian (EXR half or float RGB).
    RgbF32Le,
    /// Interleaved R, G, B, A as 32-bit floats, little-endian (EXR half or float RGBA).
    RgbaF32Le,
    /// Any other set of channels, interleaved, 4 bytes each, little-endian: f32
    /// for half and float channels, u32 for uint channels, in the decoder's documented order.
    Samples32Le {
        /// Channels per pixel.
        channels: u8,
    },
}

impl PixelFormat {
    /// Bytes per pixel.
    pub fn bytes_per_pixel(&self) -> usize {
        self.channels() * self.bytes_per_sample()
    }

    /// Bytes per channel sample.
    pub fn bytes_per_sample(&self) -> usize {
        match self {
            PixelFormat::Rgb48Le | PixelFormat::Rgba64Le => 2,
            PixelFormat::RgbF32Le | PixelFormat::RgbaF32Le | PixelFormat::Samples32Le { .. } => 4,
        }
    }

    /// Channels per pixel.
    pub fn channels(&self) -> usize {
        match *self {
            PixelFormat::Rgb48Le | PixelFormat::RgbF32Le => 3,
            PixelFormat::Rgba64Le | PixelFormat::RgbaF32Le => 4,
            PixelFormat::Samples32Le { channels } => usize::from(channels),
        }
    }

    /// FFmpeg's name for the same layout.
    pub fn name(&self) -> &'static str {
        match self {
            PixelFormat::Rgb48Le => "rgb48le",
            PixelFormat::Rgba64Le => "rgba64le",
            PixelFormat::RgbF32Le => "rgbf32le",
            PixelFormat::RgbaF32Le => "rgbaf32le",
            PixelFormat::Samples32Le { .. } => "samples32le",
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
