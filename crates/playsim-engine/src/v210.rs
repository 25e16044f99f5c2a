//! Packing decoded frames to 10-bit 4:2:2 v210, the work an SDI output driver does per frame.
//!
//! Two paths, by the decoded pixel format ([`path`] names the one that runs):
//! - RGB (DPX, EXR): to BT.709 narrow range YCbCr in fixed point: each coefficient
//!   is scaled so that a 16-bit component times it sums to 10-bit code values in
//!   the upper 16 bits of an `i32`, with no overflow. Chroma is the mean of each pixel pair.
//! - planar YUV (video): no RGB detour. Samples are repacked as they are, with only
//!   the bit depth (to 10) and the chroma (to 4:2:2) adapted: 4:2:0 repeats each
//!   chroma row, 4:4:4 averages each pair. `yuv422p10le` is a pure repack.

use playsim_core::{Chroma, DecodedFrame, IoBuf, PixelFormat};

/// Bytes per v210 row: 48 pixels per 128 bytes, rounded up.
pub fn stride(width: u32) -> usize {
    (width as usize).div_ceil(48) * 128
}

// BT.709, 10-bit narrow range, in u16 fixed point with 6 fractional bits:
// each term is the high half of a u16 x u16 product (SSE2's pmulhuw), so the
// loops below vectorise on x86-64's baseline instruction set.
// Y = 64 + 876/65535 (0.2126 R + 0.7152 G + 0.0722 B); the three sum to 876 << 6.
const KY_R: u16 = 11_919;
const KY_G: u16 = 40_097;
const KY_B: u16 = 4_048;
// Cb = 512 + 896/65535 (-0.1146 R - 0.3854 G + 0.5 B); Cr = 512 + 896/65535 (0.5 R - 0.4542 G - 0.0458 B).
const KCB_R: u16 = 6_570;
const KCB_G: u16 = 22_102;
const KC_HALF: u16 = 28_672;
const KCR_G: u16 = 26_043;
const KCR_B: u16 = 2_629;
/// 512 << 6: the chroma offset, which also keeps the subtractions from wrapping.
const C_OFFSET: u16 = 32_768;

#[inline(always)]
fn mulhi(x: u16, k: u16) -> u16 {
    ((u32::from(x) * u32::from(k)) >> 16) as u16
}

#[inline(always)]
fn round6(x: u16) -> u32 {
    ((u32::from(x) + 32) >> 6) & 1023
}

#[inline(always)]
fn luma(r: u16, g: u16, b: u16) -> u32 {
    64 + round6(mulhi(r, KY_R) + mulhi(g, KY_G) + mulhi(b, KY_B))
}

/// Cb and Cr from the mean of a pixel pair's components.
#[inline(always)]
fn chroma(r: u16, g: u16, b: u16) -> (u32, u32) {
    let cb = C_OFFSET + mulhi(b, KC_HALF) - mulhi(r, KCB_R) - mulhi(g, KCB_G);
    let cr = C_OFFSET + mulhi(r, KC_HALF) - mulhi(g, KCR_G) - mulhi(b, KCR_B);
    (round6(cb), round6(cr))
}

#[inline(always)]
fn mean(a: u16, b: u16) -> u16 {
    ((u32::from(a) + u32::from(b) + 1) >> 1) as u16
}

/// What [`pack`] does with frames of `format`, for the report.
pub fn path(format: PixelFormat) -> String {
    match format {
        PixelFormat::Yuv { chroma, bits, .. } => {
            let depth = match bits {
                10 => String::new(),
                8 => ", 8-bit samples widened".into(),
                b => format!(", {b}-bit samples rounded down"),
            };
            let chroma = match chroma {
                Chroma::Yuv422 => "",
                Chroma::Yuv420 => ", chroma rows repeated",
                Chroma::Yuv444 => ", chroma pairs averaged",
            };
            let how = if depth.is_empty() && chroma.is_empty() { "repacked as is" } else { "repacked" };
            format!("v210 from {} planes: {how}{depth}{chroma}, no RGB detour", format.name())
        }
        PixelFormat::Rgb48Le | PixelFormat::Rgba64Le | PixelFormat::RgbF32Le | PixelFormat::RgbaF32Le => {
            format!("v210 from {}: BT.709 RGB to YCbCr 4:2:2 in fixed point", format.name())
        }
        other => format!("none: {} cannot be packed to v210", other.name()),
    }
}

/// Packs `frame` into `out` as v210, reusing `out`'s allocation: RGB (alpha ignored)
/// through a BT.709 conversion, planar YUV directly. An empty frame, or one in a
/// format with no v210 path, gives empty output.
///
/// `out` is typically a recycled buffer (the engine packs into the frame's own encoded
/// buffer once it is decoded) and holds old bytes: every byte of the output is written,
/// the row padding zeroed, so the result does not depend on what was there.
pub fn pack(frame: &DecodedFrame, out: &mut IoBuf) {
    if let Some(PixelFormat::Yuv { chroma, bits, .. }) = frame.format {
        return pack_yuv(frame, chroma, bits, out);
    }
    let width = frame.width as usize;
    let height = frame.height as usize;
    let bpp = frame.format.map_or(0, |f| f.bytes_per_pixel());
    out.truncate(0);
    let packable = matches!(
        frame.format,
        Some(PixelFormat::Rgb48Le | PixelFormat::Rgba64Le | PixelFormat::RgbF32Le | PixelFormat::RgbaF32Le)
    );
    if !packable || width == 0 || height == 0 || frame.data.len() < width * height * bpp {
        return;
    }
    let stride = stride(frame.width);
    out.prepare(stride * height);
    let src_stride = width * bpp;
    // Each output thread keeps one row of scratch, so steady state allocates nothing.
    ROW_SCRATCH.with_borrow_mut(|row| {
        row.resize(width);
        for (src_row, dst_row) in frame.data.chunks_exact(src_stride).zip(out.chunks_exact_mut(stride)) {
            // A constant pixel size lets the compiler drop bounds checks in the conversion loop.
            match bpp {
                6 => row.load_u16::<6>(src_row),
                8 => row.load_u16::<8>(src_row),
                12 => row.load_f32::<12>(src_row),
                _ => row.load_f32::<16>(src_row),
            }
            row.derive();
            row.pack(dst_row);
        }
    });
}

/// Packs planar YUV of any depth and subsampling, row by row through the scratch planes,
/// reading the planes where they are (the frame's own bytes or the decoder's buffers).
fn pack_yuv(frame: &DecodedFrame, chroma: Chroma, bits: u8, out: &mut IoBuf) {
    out.truncate(0);
    let Some(format) = frame.format else { return };
    let (width, height) = (frame.width as usize, frame.height as usize);
    let planes = frame.planes();
    if width == 0 || height == 0 || planes.len() < 3 {
        return;
    }
    let stride = stride(frame.width);
    out.prepare(stride * height);
    let (_, log2_h) = chroma.log2();
    let wide = format.bytes_per_sample() == 2;
    // To 10 bits: a left shift for 8-bit samples, a right shift for deeper ones.
    let (up, down) = (10u32.saturating_sub(u32::from(bits)), u32::from(bits).saturating_sub(10));
    ROW_SCRATCH.with_borrow_mut(|row| {
        row.resize(width);
        for (y, dst_row) in out.chunks_exact_mut(stride).enumerate() {
            let cy = y >> log2_h;
            row.load_yuv(planes[0].row(y), planes[1].row(cy), planes[2].row(cy), chroma, wide, up, down);
            row.pack(dst_row);
        }
    });
}

thread_local! {
    static ROW_SCRATCH: std::cell::RefCell<RowScratch> = std::cell::RefCell::new(RowScratch::default());
}

/// One row as planar 10-bit Y, Cb, Cr, padded to a whole number of six-pixel groups.
#[derive(Default)]
struct RowScratch {
    rgb: [Vec<u16>; 3],
    y: Vec<u32>,
    cb: Vec<u32>,
    cr: Vec<u32>,
    width: usize,
}

impl RowScratch {
    /// Sizes the planes for rows of `width` pixels, keeping the allocations.
    fn resize(&mut self, width: usize) {
        let padded = width.div_ceil(6) * 6;
        for plane in &mut self.rgb {
            plane.resize(padded, 0);
        }
        self.y.resize(padded, 0);
        self.cb.resize(padded / 2, 0);
        self.cr.resize(padded / 2, 0);
        self.width = width;
    }

    /// Deinterleaves one row of 16-bit RGB(A) into the planes.
    fn load_u16<const BPP: usize>(&mut self, src: &[u8]) {
        let [r, g, b] = &mut self.rgb;
        for (((px, r), g), b) in src.chunks_exact(BPP).zip(r.iter_mut()).zip(g.iter_mut()).zip(b.iter_mut()) {
            *r = u16::from_le_bytes([px[0], px[1]]);
            *g = u16::from_le_bytes([px[2], px[3]]);
            *b = u16::from_le_bytes([px[4], px[5]]);
        }
    }

    /// Deinterleaves one row of f32 RGB(A), clamping linear values to 0..=1 as
    /// 16-bit code values (no display transform: the cost, not the look, matters here).
    fn load_f32<const BPP: usize>(&mut self, src: &[u8]) {
        let to_u16 = |b: &[u8]| {
            let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            // NaN stays NaN through clamp, and the saturating cast turns it into 0.
            (v.clamp(0.0, 1.0) * 65535.0 + 0.5) as u16
        };
        let [r, g, b] = &mut self.rgb;
        for (((px, r), g), b) in src.chunks_exact(BPP).zip(r.iter_mut()).zip(g.iter_mut()).zip(b.iter_mut()) {
            *r = to_u16(&px[0..4]);
            *g = to_u16(&px[4..8]);
            *b = to_u16(&px[8..12]);
        }
    }

    /// Loads one row of planar YUV into the 10-bit planes, adapting depth and chroma;
    /// the padding repeats the last pixel.
    #[allow(clippy::too_many_arguments)]
    fn load_yuv(&mut self, y: &[u8], cb: &[u8], cr: &[u8], chroma: Chroma, wide: bool, up: u32, down: u32) {
        let to10 = |v: u32| (v << up >> down) & 1023;
        let width = self.width;
        if wide {
            fill_samples::<2>(&mut self.y[..width], y, to10);
        } else {
            fill_samples::<1>(&mut self.y[..width], y, to10);
        }
        let pairs = width.div_ceil(2);
        for (plane, src) in [(&mut self.cb, cb), (&mut self.cr, cr)] {
            let dst = &mut plane[..pairs];
            match (chroma, wide) {
                (Chroma::Yuv444, true) => fill_pair_means::<2>(dst, src, to10),
                (Chroma::Yuv444, false) => fill_pair_means::<1>(dst, src, to10),
                (_, true) => fill_samples::<2>(dst, src, to10),
                (_, false) => fill_samples::<1>(dst, src, to10),
            }
            if let Some(&last) = plane[..pairs].last() {
                plane[pairs..].fill(last);
            }
        }
        if let Some(&last) = self.y[..width].last() {
            self.y[width..].fill(last);
        }
    }

    /// Computes planar Y, Cb, Cr from the loaded planes; the padding repeats the last pixel.
    fn derive(&mut self) {
        let [r, g, b] = &mut self.rgb;
        if let Some(last) = self.width.checked_sub(1) {
            for plane in [&mut *r, &mut *g, &mut *b] {
                let v = plane[last];
                plane[self.width..].fill(v);
            }
        }
        for (((y, r), g), b) in self.y.iter_mut().zip(r.iter()).zip(g.iter()).zip(b.iter()) {
            *y = luma(*r, *g, *b);
        }
        let pairs = r.chunks_exact(2).zip(g.chunks_exact(2)).zip(b.chunks_exact(2));
        for (((r, g), b), (cb, cr)) in pairs.zip(self.cb.iter_mut().zip(self.cr.iter_mut())) {
            (*cb, *cr) = chroma(mean(r[0], r[1]), mean(g[0], g[1]), mean(b[0], b[1]));
        }
    }

    /// Packs the planar row into v210 words, six pixels per four words, and zeroes the
    /// rest of the row (the padding up to 128 bytes, which a recycled buffer holds junk in).
    fn pack(&self, dst: &mut [u8]) {
        let written = (self.y.len() / 6 * 16).min(dst.len());
        dst[written..].fill(0);
        let groups = self.y.chunks_exact(6).zip(self.cb.chunks_exact(3)).zip(self.cr.chunks_exact(3));
        for (((y, cb), cr), out) in groups.zip(dst.chunks_exact_mut(16)) {
            let words = [
                cb[0] | y[0] << 10 | cr[0] << 20,
                y[1] | cb[1] << 10 | y[2] << 20,
                cr[1] | y[3] << 10 | cb[2] << 20,
                y[4] | cr[2] << 10 | y[5] << 20,
            ];
            for (dst, word) in out.chunks_exact_mut(4).zip(words) {
                dst.copy_from_slice(&word.to_le_bytes());
            }
        }
    }
}

/// Reads samples of `BPS` bytes (little-endian) into `dst`, converted by `to10`.
#[inline(always)]
fn fill_samples<const BPS: usize>(dst: &mut [u32], src: &[u8], to10: impl Fn(u32) -> u32) {
    for (d, s) in dst.iter_mut().zip(src.chunks_exact(BPS)) {
        *d = to10(sample::<BPS>(s));
    }
}

/// Reads full-width chroma into half-width `dst`: the mean of each pair (a lone last sample as is).
#[inline(always)]
fn fill_pair_means<const BPS: usize>(dst: &mut [u32], src: &[u8], to10: impl Fn(u32) -> u32) {
    for (d, pair) in dst.iter_mut().zip(src.chunks(2 * BPS)) {
        let a = sample::<BPS>(pair);
        let b = if pair.len() == 2 * BPS { sample::<BPS>(&pair[BPS..]) } else { a };
        *d = to10((a + b + 1) >> 1);
    }
}

#[inline(always)]
fn sample<const BPS: usize>(s: &[u8]) -> u32 {
    if BPS == 2 {
        u32::from(u16::from_le_bytes([s[0], s[1]]))
    } else {
        u32::from(s[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(width: u32, height: u32, rgb: [u16; 3]) -> DecodedFrame {
        let mut f = DecodedFrame::default();
        f.reset(width, height, PixelFormat::Rgb48Le);
        for px in f.data.chunks_exact_mut(6) {
            for (c, v) in rgb.iter().enumerate() {
                px[c * 2..c * 2 + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
        f
    }

    /// A buffer of `len` bytes of junk, as a recycled one holds.
    fn junk(len: usize) -> IoBuf {
        let mut b = IoBuf::default();
        b.prepare(len);
        b.fill(0xA5);
        b
    }

    fn word(out: &[u8], i: usize) -> u32 {
        u32::from_le_bytes([out[i * 4], out[i * 4 + 1], out[i * 4 + 2], out[i * 4 + 3]])
    }

    #[test]
    fn black_white_and_red_give_bt709_codes() {
        let mut out = IoBuf::default();
        pack(&solid(6, 1, [0, 0, 0]), &mut out);
        assert_eq!(out.len(), 128);
        assert_eq!(word(&out, 0), 512 | 64 << 10 | 512 << 20);
        pack(&solid(6, 1, [65535, 65535, 65535]), &mut out);
        assert_eq!(word(&out, 1), 940 | 512 << 10 | 940 << 20);
        pack(&solid(12, 2, [65535, 0, 0]), &mut out);
        // BT.709 red: Y 250, Cb 409, Cr 960 (10-bit narrow range).
        let w0 = word(&out, 0);
        assert_eq!((w0 & 1023, (w0 >> 10) & 1023, (w0 >> 20) & 1023), (409, 250, 960));
        assert_eq!(out.len(), 256);
    }

    #[test]
    fn odd_width_pads_the_last_group_and_rows_are_128_byte_aligned() {
        assert_eq!(stride(4096), 11008);
        assert_eq!(stride(1920), 5120);
        let mut out = IoBuf::default();
        pack(&solid(7, 3, [30000, 20000, 10000]), &mut out);
        assert_eq!(out.len(), 128 * 3);
    }

    #[test]
    fn full_groups_and_the_tail_match_a_per_pixel_reference() {
        let mut f = DecodedFrame::default();
        f.reset(53, 2, PixelFormat::Rgb48Le);
        for (i, b) in f.data.iter_mut().enumerate() {
            *b = (i * 37 % 251) as u8;
        }
        let mut out = IoBuf::default();
        pack(&f, &mut out);
        let px = |x: usize, y: usize| -> [u16; 3] {
            let x = x.min(52);
            let i = (y * 53 + x) * 6;
            [0, 1, 2].map(|c| u16::from_le_bytes([f.data[i + c * 2], f.data[i + c * 2 + 1]]))
        };
        for y in 0..2 {
            for x in 0..54 {
                let [r, g, b] = px(x, y);
                let group = y * stride(53) / 4 + (x / 6) * 4;
                let words: Vec<u32> = (0..4).map(|w| word(&out, group + w)).collect();
                // Luma sits at fixed places in the four words of a group.
                let at = [(0, 10), (1, 0), (1, 20), (2, 10), (3, 0), (3, 20)][x % 6];
                assert_eq!((words[at.0] >> at.1) & 1023, luma(r, g, b), "pixel {x},{y}");
            }
        }
    }

    #[test]
    fn float_frames_pack_like_the_same_16_bit_frame() {
        let mut f16 = DecodedFrame::default();
        f16.reset(50, 3, PixelFormat::Rgb48Le);
        let mut f32_frame = DecodedFrame::default();
        f32_frame.reset(50, 3, PixelFormat::RgbaF32Le);
        for (i, (px16, px32)) in
            f16.data.chunks_exact_mut(6).zip(f32_frame.data.chunks_exact_mut(16)).enumerate()
        {
            for c in 0..3 {
                let v = ((i * 7919 + c * 104_729) % 65536) as u16;
                px16[c * 2..c * 2 + 2].copy_from_slice(&v.to_le_bytes());
                px32[c * 4..c * 4 + 4].copy_from_slice(&(f32::from(v) / 65535.0).to_le_bytes());
            }
            px32[12..16].copy_from_slice(&0.5f32.to_le_bytes());
        }
        let (mut a, mut b) = (IoBuf::default(), IoBuf::default());
        pack(&f16, &mut a);
        pack(&f32_frame, &mut b);
        assert!(!a.is_empty());
        assert_eq!(a[..], b[..]);
    }

    #[test]
    fn a_recycled_buffer_full_of_junk_gives_the_same_bytes_as_a_fresh_one() {
        // 53 pixels: nine six-pixel groups fill 144 bytes of a 256-byte row, the rest is padding.
        let mut rgb = DecodedFrame::default();
        rgb.reset(53, 3, PixelFormat::Rgb48Le);
        for (i, b) in rgb.data.iter_mut().enumerate() {
            *b = (i * 31 % 253) as u8;
        }
        let yuv_format = PixelFormat::from_ffmpeg_name("yuv420p").unwrap();
        let yuv = planar(53, 3, yuv_format, |p, x, y| ((p * 7 + x * 3 + y) % 256) as u32);
        for frame in [&rgb, &yuv] {
            let mut fresh = IoBuf::default();
            pack(frame, &mut fresh);
            assert_eq!(fresh.len(), stride(53) * 3);
            // Larger than the output, so it is reused as is, junk and all.
            let mut recycled = junk(fresh.len() + 4096);
            let id = recycled.id();
            pack(frame, &mut recycled);
            assert_eq!(recycled.id(), id, "the recycled buffer was not reused");
            assert_eq!(recycled[..], fresh[..]);
            // The row padding is zeroes, not the junk.
            let row = &recycled[..stride(53)];
            assert!(row[9 * 16..].iter().all(|&b| b == 0), "{:?}", &row[9 * 16..]);
        }
    }

    #[test]
    fn frames_without_rgb_give_empty_output() {
        let mut f = DecodedFrame::default();
        f.reset(8, 8, PixelFormat::Samples32Le { channels: 1 });
        let mut out = junk(1);
        pack(&f, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn malformed_frames_give_empty_output() {
        let mut f = solid(8, 8, [1, 2, 3]);
        f.data.truncate(10);
        let mut out = junk(3);
        pack(&f, &mut out);
        assert!(out.is_empty());
    }

    /// A planar YUV frame whose sample at (plane, x, y) is `value(plane, x, y)`.
    fn planar(
        width: u32,
        height: u32,
        format: PixelFormat,
        value: impl Fn(usize, usize, usize) -> u32,
    ) -> DecodedFrame {
        let mut f = DecodedFrame::default();
        f.reset(width, height, format);
        let bps = format.bytes_per_sample();
        for (p, plane) in format.planes(width, height).into_iter().enumerate() {
            for y in 0..plane.rows {
                for x in 0..plane.row_bytes / bps {
                    let at = plane.offset + y * plane.row_bytes + x * bps;
                    let v = value(p, x, y);
                    f.data[at..at + bps].copy_from_slice(&v.to_le_bytes()[..bps]);
                }
            }
        }
        f
    }

    /// The Y, Cb and Cr codes of row `y` of a v210 frame `width` pixels wide.
    fn unpack_row(v210: &[u8], width: u32, y: usize) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let row = &v210[y * stride(width)..][..stride(width)];
        let words: Vec<u32> =
            row.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let (mut luma, mut cb, mut cr) = (Vec::new(), Vec::new(), Vec::new());
        for g in words.chunks_exact(4) {
            let s = |w: u32, i: u32| w >> (10 * i) & 1023;
            cb.extend([s(g[0], 0), s(g[1], 1), s(g[2], 2)]);
            luma.extend([s(g[0], 1), s(g[1], 0), s(g[1], 2), s(g[2], 1), s(g[3], 0), s(g[3], 2)]);
            cr.extend([s(g[0], 2), s(g[2], 0), s(g[3], 1)]);
        }
        luma.truncate(width as usize);
        cb.truncate(width.div_ceil(2) as usize);
        cr.truncate(width.div_ceil(2) as usize);
        (luma, cb, cr)
    }

    #[test]
    fn yuv422p10_is_repacked_sample_for_sample() {
        let format = PixelFormat::from_ffmpeg_name("yuv422p10le").unwrap();
        let value = |p: usize, x: usize, y: usize| ((p * 331 + x * 17 + y * 101) % 1024) as u32;
        let f = planar(50, 3, format, value);
        let mut out = IoBuf::default();
        pack(&f, &mut out);
        assert_eq!(out.len(), stride(50) * 3);
        for y in 0..3 {
            let (luma, cb, cr) = unpack_row(&out, 50, y);
            assert_eq!(luma, (0..50).map(|x| value(0, x, y)).collect::<Vec<_>>(), "row {y}");
            assert_eq!(cb, (0..25).map(|x| value(1, x, y)).collect::<Vec<_>>(), "row {y}");
            assert_eq!(cr, (0..25).map(|x| value(2, x, y)).collect::<Vec<_>>(), "row {y}");
        }
        assert_eq!(path(format), "v210 from yuv422p10le planes: repacked as is, no RGB detour");
    }

    #[test]
    fn yuv420p_is_widened_and_its_chroma_rows_repeated() {
        let format = PixelFormat::from_ffmpeg_name("yuv420p").unwrap();
        let value = |p: usize, x: usize, y: usize| ((p * 71 + x * 5 + y * 29) % 256) as u32;
        // Odd sizes: the last chroma column and row cover one pixel.
        let f = planar(13, 5, format, value);
        let mut out = IoBuf::default();
        pack(&f, &mut out);
        for y in 0..5 {
            let (luma, cb, cr) = unpack_row(&out, 13, y);
            assert_eq!(luma, (0..13).map(|x| value(0, x, y) << 2).collect::<Vec<_>>(), "row {y}");
            assert_eq!(cb, (0..7).map(|x| value(1, x, y / 2) << 2).collect::<Vec<_>>(), "row {y}");
            assert_eq!(cr, (0..7).map(|x| value(2, x, y / 2) << 2).collect::<Vec<_>>(), "row {y}");
        }
    }

    #[test]
    fn yuva444p12_averages_chroma_pairs_and_drops_two_bits_and_alpha() {
        let format = PixelFormat::from_ffmpeg_name("yuva444p12le").unwrap();
        let value = |p: usize, x: usize, y: usize| ((p * 977 + x * 61 + y * 13) % 4096) as u32;
        let f = planar(7, 2, format, value);
        let mut out = IoBuf::default();
        pack(&f, &mut out);
        for y in 0..2 {
            let (luma, cb, cr) = unpack_row(&out, 7, y);
            assert_eq!(luma, (0..7).map(|x| value(0, x, y) >> 2).collect::<Vec<_>>());
            let mean = |p: usize, i: usize| {
                let (a, b) = (value(p, 2 * i, y), value(p, (2 * i + 1).min(6), y));
                ((a + b + 1) >> 1) >> 2
            };
            assert_eq!(cb, (0..4).map(|i| mean(1, i)).collect::<Vec<_>>());
            assert_eq!(cr, (0..4).map(|i| mean(2, i)).collect::<Vec<_>>());
        }
        assert!(path(format).contains("chroma pairs averaged"), "{}", path(format));
    }

    #[test]
    fn a_short_planar_frame_gives_empty_output() {
        let format = PixelFormat::from_ffmpeg_name("yuv422p10le").unwrap();
        let mut f = planar(8, 8, format, |_, _, _| 512);
        f.data.truncate(f.data.len() - 1);
        let mut out = junk(1);
        pack(&f, &mut out);
        assert!(out.is_empty());
    }
}
