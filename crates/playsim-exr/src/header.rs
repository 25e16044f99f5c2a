//! What a decode needs to know about an EXR file, whichever backend read it.

use std::fmt;

/// The type of one channel's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SampleType {
    /// 16-bit float; canonical f32.
    Half,
    /// 32-bit float; canonical f32.
    Float,
    /// 32-bit unsigned integer; canonical u32.
    Uint,
}

/// One channel of a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChannelInfo {
    /// Full name, e.g. `R` or `diffuse.R`.
    pub name: String,
    /// Sample type.
    pub sample: SampleType,
    /// Horizontal subsampling (1 for full resolution).
    pub x_sampling: u32,
    /// Vertical subsampling (1 for full resolution).
    pub y_sampling: u32,
}

/// An EXR compression method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// No compression.
    None,
    /// Run-length.
    Rle,
    /// Zlib, one scanline per block.
    Zips,
    /// Zlib, 16 scanlines per block.
    Zip,
    /// Wavelet + Huffman, 32 scanlines per block.
    Piz,
    /// Lossy 24-bit float + zlib.
    Pxr24,
    /// Lossy 4×4 blocks.
    B44,
    /// B44 with flat-area optimisation.
    B44a,
    /// DCT-based lossy, 32 scanlines.
    Dwaa,
    /// DCT-based lossy, 256 scanlines.
    Dwab,
}

impl Compression {
    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Rle => "rle",
            Compression::Zips => "zips",
            Compression::Zip => "zip",
            Compression::Piz => "piz",
            Compression::Pxr24 => "pxr24",
            Compression::B44 => "b44",
            Compression::B44a => "b44a",
            Compression::Dwaa => "dwaa",
            Compression::Dwab => "dwab",
        }
    }

    /// Every method, in the file format's numbering order.
    pub const ALL: [Compression; 10] = [
        Compression::None,
        Compression::Rle,
        Compression::Zips,
        Compression::Zip,
        Compression::Piz,
        Compression::Pxr24,
        Compression::B44,
        Compression::B44a,
        Compression::Dwaa,
        Compression::Dwab,
    ];
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Compression, String> {
        Compression::ALL.into_iter().find(|c| c.name() == s.trim().to_ascii_lowercase()).ok_or_else(|| {
            format!("unknown EXR compression '{s}' (for example piz; also none, rle, zips, zip, pxr24, b44, b44a, dwaa, dwab)")
        })
    }
}

/// A summary of an EXR file's (first part's) header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExrInfo {
    /// Data window, inclusive: (x_min, y_min, x_max, y_max).
    pub data_window: (i32, i32, i32, i32),
    /// Display window, inclusive.
    pub display_window: (i32, i32, i32, i32),
    /// Every channel, in the file's order.
    pub channels: Vec<ChannelInfo>,
    /// Compression.
    pub compression: Compression,
    /// Tiled rather than scanline.
    pub tiled: bool,
}

impl ExrInfo {
    /// Width and height of the data window (0 when it is inverted).
    pub fn data_size(&self) -> (u64, u64) {
        let (x0, y0, x1, y1) = self.data_window;
        let w = i64::from(x1) - i64::from(x0) + 1;
        let h = i64::from(y1) - i64::from(y0) + 1;
        (u64::try_from(w).unwrap_or(0), u64::try_from(h).unwrap_or(0))
    }
}
