//! Decoded frames in their canonical pixel layout.

use serde::{Deserialize, Serialize};

/// Reads the frame index a frame carries in its pixels (playsim's synthetic media paint it
/// there), for `--verify`: `None` when it carries none. The engine is given one
/// (`playsim_media::read_frame_index`) rather than knowing how media is painted.
pub type FrameIndexReader = fn(&DecodedFrame) -> Option<u64>;

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
    /// Planar Y, Cb, Cr (and alpha), each plane row by row with no padding, in that order;
    /// samples of more than 8 bits are 16-bit little-endian (FFmpeg `yuv422p10le`, `yuva444p10le`, ...).
    Yuv {
        /// How the Cb and Cr planes are subsampled.
        chroma: Chroma,
        /// Significant bits per sample: 8, 10, 12 or 16.
        bits: u8,
        /// A fourth, full-size alpha plane follows Cr.
        alpha: bool,
    },
}

/// The chroma subsampling of a planar YUV format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Chroma {
    /// Half width, half height.
    Yuv420,
    /// Half width, full height.
    Yuv422,
    /// Full size.
    Yuv444,
}

impl Chroma {
    /// Horizontal and vertical log2 subsampling, as FFmpeg's `log2_chroma_w`/`_h`.
    pub fn log2(self) -> (u32, u32) {
        match self {
            Chroma::Yuv420 => (1, 1),
            Chroma::Yuv422 => (1, 0),
            Chroma::Yuv444 => (0, 0),
        }
    }
}

/// One plane of a frame: its offset in the data, bytes per row and rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plane {
    /// Byte offset of the plane's first row in [`DecodedFrame::data`].
    pub offset: usize,
    /// Bytes per row (no padding).
    pub row_bytes: usize,
    /// Rows.
    pub rows: usize,
}

impl PixelFormat {
    /// Bytes per pixel of an interleaved format; for a planar format, of its first (luma) plane.
    pub fn bytes_per_pixel(&self) -> usize {
        match self {
            PixelFormat::Yuv { .. } => self.bytes_per_sample(),
            _ => self.channels() * self.bytes_per_sample(),
        }
    }

    /// True for formats stored as one plane per channel.
    pub fn is_planar(&self) -> bool {
        matches!(self, PixelFormat::Yuv { .. })
    }

    /// The planes of a `width` x `height` frame, in storage order: one for an interleaved
    /// format, three or four for a planar one. Subsampled planes round up, as FFmpeg's do.
    pub fn planes(&self, width: u32, height: u32) -> Vec<Plane> {
        let (w, h) = (width as usize, height as usize);
        let PixelFormat::Yuv { chroma, alpha, .. } = *self else {
            return vec![Plane { offset: 0, row_bytes: w * self.bytes_per_pixel(), rows: h }];
        };
        let bps = self.bytes_per_sample();
        let (log2_w, log2_h) = chroma.log2();
        let (cw, ch) = (w.div_ceil(1 << log2_w), h.div_ceil(1 << log2_h));
        let mut dims = vec![(w, h), (cw, ch), (cw, ch)];
        if alpha {
            dims.push((w, h));
        }
        let mut offset = 0;
        dims.into_iter()
            .map(|(pw, ph)| {
                let plane = Plane { offset, row_bytes: pw * bps, rows: ph };
                offset += plane.row_bytes * ph;
                plane
            })
            .collect()
    }

    /// Bytes of a whole `width` x `height` frame, every plane included.
    pub fn frame_len(&self, width: u32, height: u32) -> usize {
        self.planes(width, height).last().map_or(0, |p| p.offset + p.row_bytes * p.rows)
    }

    /// Bytes per channel sample.
    pub fn bytes_per_sample(&self) -> usize {
        match self {
            PixelFormat::Rgb48Le | PixelFormat::Rgba64Le => 2,
            PixelFormat::RgbF32Le | PixelFormat::RgbaF32Le | PixelFormat::Samples32Le { .. } => 4,
            PixelFormat::Yuv { bits, .. } => {
                if *bits <= 8 {
                    1
                } else {
                    2
                }
            }
        }
    }

    /// Channels per pixel.
    pub fn channels(&self) -> usize {
        match *self {
            PixelFormat::Rgb48Le | PixelFormat::RgbF32Le => 3,
            PixelFormat::Rgba64Le | PixelFormat::RgbaF32Le => 4,
            PixelFormat::Samples32Le { channels } => usize::from(channels),
            PixelFormat::Yuv { alpha, .. } => 3 + usize::from(alpha),
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
            PixelFormat::Yuv { chroma, bits, alpha } => yuv_name(*chroma, *bits, *alpha),
        }
    }

    /// The planar YUV format FFmpeg calls `name` (`yuv422p10le`), if playsim knows it.
    pub fn from_ffmpeg_name(name: &str) -> Option<PixelFormat> {
        YUV_NAMES.iter().find(|(_, n)| *n == name).map(|&(format, _)| format)
    }
}

const fn yuv(chroma: Chroma, bits: u8, alpha: bool) -> PixelFormat {
    PixelFormat::Yuv { chroma, bits, alpha }
}

/// FFmpeg's names for the planar YUV layouts, little-endian where samples are wider than 8 bits.
const YUV_NAMES: &[(PixelFormat, &str)] = &[
    (yuv(Chroma::Yuv420, 8, false), "yuv420p"),
    (yuv(Chroma::Yuv422, 8, false), "yuv422p"),
    (yuv(Chroma::Yuv444, 8, false), "yuv444p"),
    (yuv(Chroma::Yuv420, 8, true), "yuva420p"),
    (yuv(Chroma::Yuv422, 8, true), "yuva422p"),
    (yuv(Chroma::Yuv444, 8, true), "yuva444p"),
    (yuv(Chroma::Yuv420, 10, false), "yuv420p10le"),
    (yuv(Chroma::Yuv422, 10, false), "yuv422p10le"),
    (yuv(Chroma::Yuv444, 10, false), "yuv444p10le"),
    (yuv(Chroma::Yuv420, 10, true), "yuva420p10le"),
    (yuv(Chroma::Yuv422, 10, true), "yuva422p10le"),
    (yuv(Chroma::Yuv444, 10, true), "yuva444p10le"),
    (yuv(Chroma::Yuv420, 12, false), "yuv420p12le"),
    (yuv(Chroma::Yuv422, 12, false), "yuv422p12le"),
    (yuv(Chroma::Yuv444, 12, false), "yuv444p12le"),
    (yuv(Chroma::Yuv422, 12, true), "yuva422p12le"),
    (yuv(Chroma::Yuv444, 12, true), "yuva444p12le"),
    (yuv(Chroma::Yuv420, 16, false), "yuv420p16le"),
    (yuv(Chroma::Yuv422, 16, false), "yuv422p16le"),
    (yuv(Chroma::Yuv444, 16, false), "yuv444p16le"),
    (yuv(Chroma::Yuv444, 16, true), "yuva444p16le"),
];

fn yuv_name(chroma: Chroma, bits: u8, alpha: bool) -> &'static str {
    let format = yuv(chroma, bits, alpha);
    YUV_NAMES.iter().find(|(f, _)| *f == format).map_or("yuv", |&(_, name)| name)
}

/// Planes a decoder keeps in its own buffers (FFmpeg's reference-counted pictures),
/// handed to the engine without a copy; each row may be followed by padding.
pub trait ExternalPlanes: Send + Sync + 'static {
    /// Plane `i`'s bytes, from its first row's start, and its stride: bytes from one row
    /// to the next. `i` is below the format's plane count.
    fn plane(&self, i: usize) -> (&[u8], usize);
}

/// One plane of a frame as its consumers read it: rows of `row_bytes` every `stride` bytes.
#[derive(Clone, Copy, Debug)]
pub struct PlaneView<'a> {
    bytes: &'a [u8],
    stride: usize,
    /// Bytes of pixels per row.
    pub row_bytes: usize,
    /// Rows.
    pub rows: usize,
}

impl<'a> PlaneView<'a> {
    /// Row `r`'s pixel bytes, without padding.
    pub fn row(&self, r: usize) -> &'a [u8] {
        &self.bytes[r * self.stride..r * self.stride + self.row_bytes]
    }
}

/// A decoded frame: its canonical pixels, each plane row by row with no padding.
///
/// The pixels are in `data`, or, when a decoder hands over its own buffers, in
/// [`external`](DecodedFrame::external) (then `data` is empty); [`planes`](DecodedFrame::planes)
/// reads either. A decoder writes into a frame it is given and reuses its allocation,
/// so the engine can keep a pool of them with no allocation per frame.
#[derive(Default)]
pub struct DecodedFrame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixel layout; `None` before the first decode.
    pub format: Option<PixelFormat>,
    /// The canonical pixel bytes, when the frame holds them itself.
    pub data: Vec<u8>,
    /// The decoder's own buffers, when it handed them over instead of copying into `data`.
    pub external: Option<Box<dyn ExternalPlanes>>,
}

impl std::fmt::Debug for DecodedFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedFrame")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("format", &self.format)
            .field("data_len", &self.data.len())
            .field("external", &self.external.is_some())
            .finish()
    }
}

impl Clone for DecodedFrame {
    /// A copy with the pixels in `data`, whichever way the original holds them.
    fn clone(&self) -> Self {
        let mut data = Vec::with_capacity(self.data.len());
        if self.external.is_some() {
            for plane in self.planes() {
                (0..plane.rows).for_each(|r| data.extend_from_slice(plane.row(r)));
            }
        } else {
            data.extend_from_slice(&self.data);
        }
        DecodedFrame { width: self.width, height: self.height, format: self.format, data, external: None }
    }
}

impl DecodedFrame {
    /// Sets the geometry and resizes `data` to fit, keeping the allocation when it is large
    /// enough; any external buffers are let go.
    ///
    /// A frame that has to grow gets a new allocation of zeroed memory rather than a
    /// `resize`: the allocator takes a frame-sized block from the kernel already zeroed
    /// (`calloc`), where `resize` would write every byte of it first and so fault in all
    /// its pages before the decoder writes them again (4K DCI RGBA f32: 141.6 MB).
    pub fn reset(&mut self, width: u32, height: u32, format: PixelFormat) {
        self.width = width;
        self.height = height;
        self.format = Some(format);
        self.external = None;
        let len = format.frame_len(width, height);
        if len > self.data.capacity() {
            // The old block goes first, so that the two are never held at once.
            self.data = Vec::new();
            self.data = vec![0; len];
        } else {
            self.data.resize(len, 0);
        }
    }

    /// Sizes the frame for `width` × `height` of `format` as [`DecodedFrame::reset`] does and,
    /// when that took a new allocation, faults in its pages now rather than in the decode
    /// that writes them first (see [`IoBuf::prefault`](crate::IoBuf::prefault)).
    pub fn prefault(&mut self, width: u32, height: u32, format: PixelFormat) {
        let grows = format.frame_len(width, height) > self.data.capacity();
        self.reset(width, height, format);
        if grows {
            crate::buf::touch_pages(&mut self.data);
        }
    }

    /// Takes a decoder's own buffers as the frame's pixels, with no copy. `planes` must
    /// hold [`PixelFormat::planes`]`(width, height)` planes of `format`; the views check
    /// their sizes, so a short plane reads as missing rather than out of bounds.
    pub fn set_external(
        &mut self,
        width: u32,
        height: u32,
        format: PixelFormat,
        planes: Box<dyn ExternalPlanes>,
    ) {
        self.width = width;
        self.height = height;
        self.format = Some(format);
        self.data.clear();
        self.external = Some(planes);
    }

    /// The planes, in storage order; empty when the pixels are missing or too short for
    /// the geometry.
    pub fn planes(&self) -> Vec<PlaneView<'_>> {
        let Some(format) = self.format else { return Vec::new() };
        let layout = format.planes(self.width, self.height);
        let views: Option<Vec<PlaneView<'_>>> = layout
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (bytes, stride) = match &self.external {
                    Some(ext) => ext.plane(i),
                    None => (self.data.get(p.offset..)?, p.row_bytes),
                };
                let needed = stride.checked_mul(p.rows.saturating_sub(1))?.checked_add(p.row_bytes)?;
                (stride >= p.row_bytes && bytes.len() >= needed || p.rows == 0).then_some(PlaneView {
                    bytes,
                    stride,
                    row_bytes: p.row_bytes,
                    rows: p.rows,
                })
            })
            .collect();
        views.unwrap_or_default()
    }

    /// The bytes of one row (of the first plane, for a planar format) of a frame
    /// holding its pixels in `data`.
    pub fn row(&self, y: u32) -> &[u8] {
        let stride = self.width as usize * self.format.map_or(0, |f| f.bytes_per_pixel());
        let start = y as usize * stride;
        &self.data[start..start + stride]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planar_layouts_match_ffmpeg_unpadded_sizes() {
        // av_image_get_buffer_size(fmt, w, h, 1) for the same formats and sizes.
        let cases = [
            ("yuv420p", 13, 5, 13 * 5 + 2 * 7 * 3),
            ("yuv422p10le", 3840, 2160, 2 * (3840 * 2160 + 2 * 1920 * 2160)),
            ("yuva444p12le", 7, 2, 2 * 4 * 7 * 2),
            ("yuv444p", 4, 4, 3 * 16),
        ];
        for (name, w, h, len) in cases {
            let format = PixelFormat::from_ffmpeg_name(name).unwrap();
            assert_eq!(format.name(), name);
            assert_eq!(format.frame_len(w, h), len, "{name} {w}x{h}");
            let mut frame = DecodedFrame::default();
            frame.reset(w, h, format);
            assert_eq!(frame.data.len(), len);
        }
        let planes = PixelFormat::from_ffmpeg_name("yuv420p").unwrap().planes(13, 5);
        assert_eq!(planes[1], Plane { offset: 65, row_bytes: 7, rows: 3 });
        assert_eq!(planes[2], Plane { offset: 86, row_bytes: 7, rows: 3 });
        assert_eq!(PixelFormat::from_ffmpeg_name("rgb48le"), None);
    }

    #[test]
    fn prefault_sizes_the_frame_as_reset_does() {
        let format = PixelFormat::from_ffmpeg_name("yuv422p10le").unwrap();
        let mut frame = DecodedFrame::default();
        frame.prefault(64, 32, format);
        assert_eq!((frame.width, frame.height, frame.format), (64, 32, Some(format)));
        assert_eq!(frame.data.len(), format.frame_len(64, 32));
        assert!(frame.data.iter().all(|&b| b == 0));
        // Large enough already: the allocation stays.
        let ptr = frame.data.as_ptr();
        frame.prefault(32, 32, format);
        assert_eq!((frame.data.as_ptr(), frame.data.len()), (ptr, format.frame_len(32, 32)));
    }

    #[test]
    fn reset_keeps_a_large_enough_allocation_and_zeroes_a_new_one() {
        let mut frame = DecodedFrame::default();
        frame.reset(64, 32, PixelFormat::Rgba64Le);
        assert_eq!(frame.data.len(), 64 * 32 * 8);
        assert!(frame.data.iter().all(|&b| b == 0));
        frame.data.fill(0xab);
        let (ptr, capacity) = (frame.data.as_ptr(), frame.data.capacity());
        // Smaller, then the same again: the same memory, the old bytes kept, the new ones zero.
        frame.reset(32, 32, PixelFormat::Rgba64Le);
        frame.reset(64, 32, PixelFormat::Rgba64Le);
        assert_eq!((frame.data.as_ptr(), frame.data.capacity()), (ptr, capacity));
        assert!(frame.data[..32 * 32 * 8].iter().all(|&b| b == 0xab));
        assert!(frame.data[32 * 32 * 8..].iter().all(|&b| b == 0));
        // Larger: a new, zeroed allocation.
        frame.reset(128, 32, PixelFormat::Rgba64Le);
        assert_eq!(frame.data.len(), 128 * 32 * 8);
        assert!(frame.data.iter().all(|&b| b == 0));
    }

    #[test]
    fn interleaved_formats_have_one_plane() {
        let planes = PixelFormat::Rgba64Le.planes(5, 3);
        assert_eq!(planes, vec![Plane { offset: 0, row_bytes: 40, rows: 3 }]);
        assert_eq!(PixelFormat::Rgba64Le.frame_len(5, 3), 120);
    }

    /// Planes in rows padded to a stride, as a decoder's buffers are.
    struct Padded(Vec<(Vec<u8>, usize)>);

    impl ExternalPlanes for Padded {
        fn plane(&self, i: usize) -> (&[u8], usize) {
            (&self.0[i].0, self.0[i].1)
        }
    }

    #[test]
    fn external_planes_read_like_canonical_ones_without_their_padding() {
        let format = PixelFormat::from_ffmpeg_name("yuv420p").unwrap();
        let mut canonical = DecodedFrame::default();
        canonical.reset(5, 3, format);
        canonical.data.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        // The same pixels with each row padded to 8 bytes.
        let padded: Vec<(Vec<u8>, usize)> = canonical
            .planes()
            .iter()
            .map(|p| ((0..p.rows).flat_map(|r| [p.row(r), &[0xee; 8][p.row_bytes..]].concat()).collect(), 8))
            .collect();
        let mut external = DecodedFrame::default();
        external.set_external(5, 3, format, Box::new(Padded(padded)));
        let rows = |f: &DecodedFrame| -> Vec<Vec<u8>> {
            f.planes()
                .iter()
                .flat_map(|p| (0..p.rows).map(|r| p.row(r).to_vec()).collect::<Vec<_>>())
                .collect()
        };
        assert_eq!(rows(&external), rows(&canonical));
        assert_eq!(external.clone().data, canonical.data);
        // A plane too short for the geometry reads as no planes, not out of bounds.
        external.set_external(5, 3, format, Box::new(Padded(vec![(vec![0; 20], 8); 3])));
        assert!(external.planes().is_empty());
        external.reset(5, 3, format);
        assert!(external.external.is_none() && external.planes().len() == 3);
    }
}
