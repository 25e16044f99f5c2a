//! Frame size presets: broadcast, DCI, and frametest's full-aperture sizes.

use std::fmt;
use std::str::FromStr;

use crate::ParseError;

/// A named frame size, or a custom `WxH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FramePreset {
    /// 1920×1080.
    Hd,
    /// 3840×2160.
    Uhd,
    /// frametest's `2k`: full-aperture 2048×1556.
    FullAperture2k,
    /// frametest's `4k`: full-aperture 4096×3112.
    FullAperture4k,
    /// 2048×1080.
    Dci2k,
    /// 4096×2160.
    Dci4k,
    /// 6144×3240.
    Dci6k,
    /// 8192×4320.
    Dci8k,
    /// 7680×4320.
    Uhd8k,
    /// Any other size.
    Custom {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
}

/// The largest width or height a preset may name; larger is refused as absurd.
pub const MAX_DIMENSION: u32 = 65_536;

const NAMED: &[(&str, FramePreset)] = &[
    ("hd", FramePreset::Hd),
    ("uhd", FramePreset::Uhd),
    ("2k", FramePreset::FullAperture2k),
    ("4k", FramePreset::FullAperture4k),
    ("2k-dci", FramePreset::Dci2k),
    ("4k-dci", FramePreset::Dci4k),
    ("6k", FramePreset::Dci6k),
    ("8k-dci", FramePreset::Dci8k),
    ("8k-uhd", FramePreset::Uhd8k),
];

impl FramePreset {
    /// Width and height in pixels.
    pub fn dimensions(&self) -> (u32, u32) {
        match *self {
            FramePreset::Hd => (1920, 1080),
            FramePreset::Uhd => (3840, 2160),
            FramePreset::FullAperture2k => (2048, 1556),
            FramePreset::FullAperture4k => (4096, 3112),
            FramePreset::Dci2k => (2048, 1080),
            FramePreset::Dci4k => (4096, 2160),
            FramePreset::Dci6k => (6144, 3240),
            FramePreset::Dci8k => (8192, 4320),
            FramePreset::Uhd8k => (7680, 4320),
            FramePreset::Custom { width, height } => (width, height),
        }
    }

    /// The names accepted by [`FromStr`], in display order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        NAMED.iter().map(|(n, _)| *n)
    }
}

impl fmt::Display for FramePreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match NAMED.iter().find(|(_, p)| p == self) {
            Some((name, _)) => f.write_str(name),
            None => {
                let (w, h) = self.dimensions();
                write!(f, "{w}x{h}")
            }
        }
    }
}

impl FromStr for FramePreset {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<FramePreset, ParseError> {
        const EXAMPLE: &str = "4k-dci, uhd, 2k, 8k-dci or 1920x1080";
        let t = s.trim().to_ascii_lowercase();
        if let Some((_, p)) = NAMED.iter().find(|(n, _)| *n == t) {
            return Ok(*p);
        }
        let bad = |reason: &str| ParseError::new("frame size", s, reason, EXAMPLE);
        let (w, h) = t.split_once(['x', '×']).ok_or_else(|| bad("not a preset name nor WxH"))?;
        let width: u32 = w.trim().parse().map_err(|_| bad("width is not a whole number"))?;
        let height: u32 = h.trim().parse().map_err(|_| bad("height is not a whole number"))?;
        if width == 0 || height == 0 {
            return Err(bad("width and height must be positive"));
        }
        if width > MAX_DIMENSION || height > MAX_DIMENSION {
            return Err(bad("larger than 65536 pixels on a side"));
        }
        Ok(FramePreset::Custom { width, height })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_presets_have_their_sizes() {
        let want = [
            ("hd", (1920, 1080)),
            ("uhd", (3840, 2160)),
            ("2k", (2048, 1556)),
            ("4k", (4096, 3112)),
            ("2k-dci", (2048, 1080)),
            ("4k-dci", (4096, 2160)),
            ("6k", (6144, 3240)),
            ("8k-dci", (8192, 4320)),
            ("8k-uhd", (7680, 4320)),
            ("1280x720", (1280, 720)),
        ];
        for (name, dims) in want {
            let p: FramePreset = name.parse().unwrap();
            assert_eq!(p.dimensions(), dims, "{name}");
            assert_eq!(p.to_string(), name);
        }
    }

    #[test]
    fn refuses_bad_sizes_with_an_example() {
        for bad in ["", "5k", "0x10", "10x", "100000x10", "axb"] {
            let err = bad.parse::<FramePreset>().unwrap_err().to_string();
            assert!(err.contains("for example"), "{err}");
        }
    }
}
