//! Packing decoded frames to 10-bit 4:2:2 v210, the work an SDI output driver does per frame.
//!
//! Two paths, by the decoded pixel format ([`path`] names the one that runs):
//! - RGB (DPX, EXR): to BT.709 narrow range YCbCr in fixed point: each coefficient
//!   is scaled so that a 16-bit component times it sums to 10-bit code values in
//!   the upper 16 bits of an `i32`, with no overflow. Chroma is the mean of each pixel pair.
//!   16-bit RGB(A) (DPX) runs through an SSE4.1 kernel, 48 pixels at a time, checked
//!   byte for byte against the per-pixel path ([`pack_reference`]) in the tests.
//! - planar YUV (video): no RGB detour. Samples are repacked as they are, with only
//!   the bit depth (to 10) and the chroma (to 4:2:2) adapted: 4:2:0 repeats each
//!   chroma row, 4:4:4 averages each pair. `yuv422p10le` is a pure repack.
//!
//! Cost: the RGB arithmetic is u16 fixed point with 6 fractional bits. The SSE4.1 kernel (safe
//! code on `safe_arch`, chosen at compile time for the workspace's x86-64-v2 baseline) costs
//! about 8 ms a 4K DCI frame against the per-pixel path's 23 (`cargo bench --bench v210_pack`),
//! so one output thread tops out near 120 fps on a core of its own; a pipeline that converts on
//! the CPU wants as many output threads as cores. It is bound by instructions, not memory (about
//! 400 a 48-pixel block, a quarter of them the register copies SSE's two-operand forms force;
//! AVX is not in the baseline). Float RGB (EXR) and a build without SSE4.1 take the per-pixel
//! path. `pack` writes every byte of its output, row padding included, so a recycled buffer's old
//! bytes never leak.

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
///
/// 16-bit RGB(A), what the DPX decoder gives, goes through an SSE4.1 kernel where the
/// build enables it; its output is bit for bit [`pack_reference`]'s.
pub fn pack(frame: &DecodedFrame, out: &mut IoBuf) {
    pack_with(frame, out, true);
}

/// [`pack`] with every RGB pixel through the plain per-pixel path: the oracle the
/// SIMD kernel is tested against, and the bench's baseline.
pub fn pack_reference(frame: &DecodedFrame, out: &mut IoBuf) {
    pack_with(frame, out, false);
}

/// [`pack`], with the SIMD kernel for 16-bit RGB(A) rows when `simd` is set.
fn pack_with(frame: &DecodedFrame, out: &mut IoBuf, simd: bool) {
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
    let rows = frame.data.chunks_exact(src_stride).zip(out.chunks_exact_mut(stride));
    if simd && matches!(bpp, 6 | 8) && sse41::AVAILABLE {
        for (src_row, dst_row) in rows {
            if bpp == 6 {
                sse41::pack_row::<6>(src_row, dst_row);
            } else {
                sse41::pack_row::<8>(src_row, dst_row);
            }
        }
        return;
    }
    // Each output thread keeps one row of scratch, so steady state allocates nothing.
    ROW_SCRATCH.with_borrow_mut(|row| {
        row.resize(width);
        for (src_row, dst_row) in rows {
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

/// The SSE4.1 kernel for 16-bit RGB(A) rows: 48 pixels at a time (128 bytes of v210, eight
/// six-pixel groups) straight from the decoded bytes to the output words, in 16-bit lanes
/// with the same fixed-point terms as [`luma`] and [`chroma`], so bit for bit the reference.
///
/// Sixteen pixels at a time: their R, G and B gathered into even and odd pixels' planes,
/// luma of each, chroma of the pair means (`pavgw` is `mean`), then interleaved to v210's
/// sample order (Cb Y Cr Y per pair); each four words gather their twelve samples from
/// two such vectors, the first two of each word side by side for a multiply-add
/// (`s0 + s1 << 10`), the third alone for a shift (`s2 << 20`).
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.1"))]
mod sse41 {
    use super::{C_OFFSET, KCB_G, KCB_R, KCR_B, KCR_G, KC_HALF, KY_B, KY_G, KY_R};
    use safe_arch::{
        add_i16_m128i, average_u16_m128i, bitor_m128i, blend_imm_i16_m128i, load_unaligned_m128i, m128i,
        mul_i16_horizontal_add_m128i, mul_u16_keep_high_m128i, set_splat_i16_m128i, set_splat_i32_m128i,
        shl_imm_u32_m128i, shr_imm_u16_m128i, shuffle_av_i8z_all_m128i, store_unaligned_m128i, sub_i16_m128i,
        unpack_high_i16_m128i, unpack_high_i32_m128i, unpack_high_i64_m128i, unpack_low_i16_m128i,
        unpack_low_i32_m128i, unpack_low_i64_m128i, zeroed_m128i,
    };

    pub(super) const AVAILABLE: bool = true;

    /// Pixels per block: the least common multiple of the kernel's 16 and v210's 6.
    const BLOCK: usize = 48;
    /// Bytes of v210 a block fills.
    const BLOCK_BYTES: usize = 128;

    /// The `pshufb` controls. They reach the kernel through `black_box`, once a row: with
    /// them in sight LLVM folds the shuffles with the unpacks and ORs around them into
    /// longer chains of fixed shuffles (about twice the instructions a block).
    struct Shuffles {
        /// Orders the blended R, G and B of eight rgb48 pixels: even pixels, then odd ones.
        rgb48: [m128i; 3],
        /// Gather a group's twelve samples from lane 0 of a vector on, and from lane 4 on.
        groups: [[m128i; 4]; 2],
    }

    impl Shuffles {
        fn new() -> Self {
            Self {
                rgb48: const { rgb48_orders() }.map(m128i::from),
                groups: const { [group_shuffles(0), group_shuffles(4)] }.map(|g| g.map(m128i::from)),
            }
        }
    }

    /// Packs one row of 16-bit RGB(A) `src` (`BPP` bytes a pixel, 6 or 8) into `dst`, the
    /// row's v210 stride: whole blocks in place, the last partial one through a copy padded
    /// with the last pixel (as the reference pads), then the rest of the row zeroed.
    pub(super) fn pack_row<const BPP: usize>(src: &[u8], dst: &mut [u8]) {
        let shuffles = std::hint::black_box(Shuffles::new());
        let blocks = (src.len() / (BLOCK * BPP)).min(dst.len() / BLOCK_BYTES);
        let (body, tail) = src.split_at(blocks * BLOCK * BPP);
        let (dst_body, dst_tail) = dst.split_at_mut(blocks * BLOCK_BYTES);
        for (px, words) in body.chunks_exact(BLOCK * BPP).zip(dst_body.chunks_exact_mut(BLOCK_BYTES)) {
            block::<BPP>(px, words, &shuffles);
        }
        let mut written = 0;
        if let Some(last) = tail.chunks_exact(BPP).next_back() {
            let mut px = [0; BLOCK * 8];
            let px = &mut px[..BLOCK * BPP];
            let (head, pad) = px.split_at_mut(tail.len().min(BLOCK * BPP));
            head.copy_from_slice(&tail[..head.len()]);
            for p in pad.chunks_exact_mut(BPP) {
                p.copy_from_slice(last);
            }
            let mut words = [0; BLOCK_BYTES];
            block::<BPP>(px, &mut words, &shuffles);
            written = ((tail.len() / BPP).div_ceil(6) * 16).min(dst_tail.len());
            dst_tail[..written].copy_from_slice(&words[..written]);
        }
        dst_tail[written..].fill(0);
    }

    /// Packs `BLOCK` pixels into `BLOCK_BYTES` bytes of v210.
    #[inline(always)]
    fn block<const BPP: usize>(px: &[u8], out: &mut [u8], shuffles: &Shuffles) {
        let mut px = px.chunks_exact(16 * BPP);
        let (Some(p0), Some(p1), Some(p2), Some(out)) =
            (px.next(), px.next(), px.next(), out.first_chunk_mut::<BLOCK_BYTES>())
        else {
            return;
        };
        let [first, second] = &shuffles.groups;
        // Groups of four words start at lane 0 or 4 of a vector, and span two.
        let [s0, s1, s2, s3] = sixteen::<BPP>(p0, shuffles);
        store(out, 0, pack_words(s0, s1, first));
        store(out, 1, pack_words(s1, s2, second));
        let [s4, s5, s6, s7] = sixteen::<BPP>(p1, shuffles);
        store(out, 2, pack_words(s3, s4, first));
        store(out, 3, pack_words(s4, s5, second));
        let [s8, s9, s10, s11] = sixteen::<BPP>(p2, shuffles);
        store(out, 4, pack_words(s6, s7, first));
        store(out, 5, pack_words(s7, s8, second));
        store(out, 6, pack_words(s9, s10, first));
        store(out, 7, pack_words(s10, s11, second));
    }

    /// Vector `i` of `px`.
    #[inline(always)]
    fn load(px: &[u8], i: usize) -> m128i {
        let bytes = px.get(16 * i..16 * i + 16).and_then(|b| <&[u8; 16]>::try_from(b).ok());
        bytes.map_or(zeroed_m128i(), load_unaligned_m128i)
    }

    /// Stores `v` as vector `i` of `out`.
    #[inline(always)]
    fn store(out: &mut [u8], i: usize, v: m128i) {
        if let Some(bytes) = out.get_mut(16 * i..16 * i + 16).and_then(|b| <&mut [u8; 16]>::try_from(b).ok())
        {
            store_unaligned_m128i(bytes, v);
        }
    }

    /// Sixteen pixels as 32 samples in v210's order: Cb Y Cr Y for each pixel pair.
    #[inline(always)]
    fn sixteen<const BPP: usize>(px: &[u8], shuffles: &Shuffles) -> [m128i; 4] {
        let k = |v: u16| set_splat_i16_m128i(v as i16);
        // Luma folds its rounding and its offset 64 << 6 into one constant, chroma its rounding
        // into its offset. Neither sum can wrap (see `luma` and `chroma`): the largest luma
        // sum is 56_061 + 4_128, the largest chroma one 32_800 + 28_671.
        let luma_bias = k(32 + (64 << 6));
        let chroma_bias = k(C_OFFSET + 32);
        let mulhi = mul_u16_keep_high_m128i;
        let luma = |r: m128i, g: m128i, b: m128i| {
            let sum = add_i16_m128i(add_i16_m128i(mulhi(r, k(KY_R)), mulhi(g, k(KY_G))), mulhi(b, k(KY_B)));
            shr_imm_u16_m128i::<6>(add_i16_m128i(sum, luma_bias))
        };
        let [r_even, r_odd, g_even, g_odd, b_even, b_odd] =
            if BPP == 6 { rgb48(px, &shuffles.rgb48) } else { rgba64(px) };
        let y_even = luma(r_even, g_even, b_even);
        let y_odd = luma(r_odd, g_odd, b_odd);
        let r = average_u16_m128i(r_even, r_odd);
        let g = average_u16_m128i(g_even, g_odd);
        let b = average_u16_m128i(b_even, b_odd);
        let cb = sub_i16_m128i(
            sub_i16_m128i(add_i16_m128i(chroma_bias, mulhi(b, k(KC_HALF))), mulhi(r, k(KCB_R))),
            mulhi(g, k(KCB_G)),
        );
        let cr = sub_i16_m128i(
            sub_i16_m128i(add_i16_m128i(chroma_bias, mulhi(r, k(KC_HALF))), mulhi(g, k(KCR_G))),
            mulhi(b, k(KCR_B)),
        );
        let (cb, cr) = (shr_imm_u16_m128i::<6>(cb), shr_imm_u16_m128i::<6>(cr));
        let (cb_y_lo, cb_y_hi) = (unpack_low_i16_m128i(cb, y_even), unpack_high_i16_m128i(cb, y_even));
        let (cr_y_lo, cr_y_hi) = (unpack_low_i16_m128i(cr, y_odd), unpack_high_i16_m128i(cr, y_odd));
        [
            unpack_low_i32_m128i(cb_y_lo, cr_y_lo),
            unpack_high_i32_m128i(cb_y_lo, cr_y_lo),
            unpack_low_i32_m128i(cb_y_hi, cr_y_hi),
            unpack_high_i32_m128i(cb_y_hi, cr_y_hi),
        ]
    }

    /// Four v210 words from the twelve samples that `shuffles` gathers from `a` and `b`.
    #[inline(always)]
    fn pack_words(a: m128i, b: m128i, shuffles: &[m128i; 4]) -> m128i {
        let gather = |sa: m128i, sb: m128i| {
            bitor_m128i(shuffle_av_i8z_all_m128i(a, sa), shuffle_av_i8z_all_m128i(b, sb))
        };
        let pairs = gather(shuffles[0], shuffles[1]);
        let thirds = gather(shuffles[2], shuffles[3]);
        let low = mul_i16_horizontal_add_m128i(pairs, set_splat_i32_m128i(1 | 1024 << 16));
        bitor_m128i(low, shl_imm_u32_m128i::<20>(thirds))
    }

    /// The controls for [`pack_words`], for a group of twelve samples from lane `first` of
    /// `a` on (into `b`): each word's first two samples from `a`, from `b`, then its third
    /// (in the low half of the word's lane) from `a`, from `b`.
    const fn group_shuffles(first: usize) -> [[i8; 16]; 4] {
        const PAIRS: [usize; 8] = [0, 1, 3, 4, 6, 7, 9, 10];
        const THIRDS: [usize; 4] = [2, 5, 8, 11];
        let mut out = [[-128i8; 16]; 4];
        let mut i = 0;
        while i < 12 {
            let (sample, to, which) =
                if i < 8 { (PAIRS[i], 2 * i, 0) } else { (THIRDS[i - 8], 4 * (i - 8), 2) };
            let lane = first + sample;
            let src = which + lane / 8;
            out[src][to] = (2 * (lane % 8)) as i8;
            out[src][to + 1] = (2 * (lane % 8) + 1) as i8;
            i += 1;
        }
        out
    }

    /// Sixteen rgb48 pixels as even and odd pixels' R, G and B. Each eight pixels are three
    /// vectors in which each lane holds one component of each channel, so two blends collect
    /// a channel and one shuffle orders it: the even pixels, then the odd ones.
    #[inline(always)]
    fn rgb48(px: &[u8], order: &[m128i; 3]) -> [m128i; 6] {
        let Some(px) = px.first_chunk::<96>() else { return [zeroed_m128i(); 6] };
        let v = [0, 1, 2, 3, 4, 5].map(|i| load(px, i));
        let planes = |v0: m128i, v1: m128i, v2: m128i| {
            let r = blend_imm_i16_m128i::<0x24>(blend_imm_i16_m128i::<0x92>(v0, v1), v2);
            let g = blend_imm_i16_m128i::<0x49>(blend_imm_i16_m128i::<0x24>(v0, v1), v2);
            let b = blend_imm_i16_m128i::<0x92>(blend_imm_i16_m128i::<0x49>(v0, v1), v2);
            [
                shuffle_av_i8z_all_m128i(r, order[0]),
                shuffle_av_i8z_all_m128i(g, order[1]),
                shuffle_av_i8z_all_m128i(b, order[2]),
            ]
        };
        let [ra, ga, ba] = planes(v[0], v[1], v[2]);
        let [rb, gb, bb] = planes(v[3], v[4], v[5]);
        [
            unpack_low_i64_m128i(ra, rb),
            unpack_high_i64_m128i(ra, rb),
            unpack_low_i64_m128i(ga, gb),
            unpack_high_i64_m128i(ga, gb),
            unpack_low_i64_m128i(ba, bb),
            unpack_high_i64_m128i(ba, bb),
        ]
    }

    /// The controls that order the blended R, G and B of eight rgb48 pixels: component `c`
    /// of pixel `p` is sample `3p + c` of 24, in lane `(3p + c) % 8`.
    const fn rgb48_orders() -> [[i8; 16]; 3] {
        const ORDER: [usize; 8] = [0, 2, 4, 6, 1, 3, 5, 7];
        let mut out = [[0i8; 16]; 3];
        let mut c = 0;
        while c < 3 {
            let mut q = 0;
            while q < 8 {
                let lane = (3 * ORDER[q] + c) % 8;
                out[c][2 * q] = (2 * lane) as i8;
                out[c][2 * q + 1] = (2 * lane + 1) as i8;
                q += 1;
            }
            c += 1;
        }
        out
    }

    /// Sixteen rgba64 pixels as even and odd pixels' R, G and B: a transpose by unpacking,
    /// in an order that leaves each eight pixels' even ones in the low half.
    #[inline(always)]
    fn rgba64(px: &[u8]) -> [m128i; 6] {
        let Some(px) = px.first_chunk::<128>() else { return [zeroed_m128i(); 6] };
        let v = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| load(px, i));
        let planes = |v0: m128i, v1: m128i, v2: m128i, v3: m128i| {
            // r0 r2 g0 g2 b0 b2 a0 a2, r1 r3 .., r4 r6 .., r5 r7 ..
            let (t0, t1) = (unpack_low_i16_m128i(v0, v1), unpack_high_i16_m128i(v0, v1));
            let (t2, t3) = (unpack_low_i16_m128i(v2, v3), unpack_high_i16_m128i(v2, v3));
            // r0 r2 r4 r6 g0 g2 g4 g6, r1 r3 r5 r7 g1 .., b0 b2 b4 b6 a0 .., b1 b3 b5 b7 a1 ..
            [
                unpack_low_i32_m128i(t0, t2),
                unpack_low_i32_m128i(t1, t3),
                unpack_high_i32_m128i(t0, t2),
                unpack_high_i32_m128i(t1, t3),
            ]
        };
        let [rg_even_a, rg_odd_a, b_even_a, b_odd_a] = planes(v[0], v[1], v[2], v[3]);
        let [rg_even_b, rg_odd_b, b_even_b, b_odd_b] = planes(v[4], v[5], v[6], v[7]);
        [
            unpack_low_i64_m128i(rg_even_a, rg_even_b),
            unpack_low_i64_m128i(rg_odd_a, rg_odd_b),
            unpack_high_i64_m128i(rg_even_a, rg_even_b),
            unpack_high_i64_m128i(rg_odd_a, rg_odd_b),
            unpack_low_i64_m128i(b_even_a, b_even_b),
            unpack_low_i64_m128i(b_odd_a, b_odd_b),
        ]
    }
}

/// Without SSE4.1 every row goes through the planes.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.1")))]
mod sse41 {
    pub(super) const AVAILABLE: bool = false;

    pub(super) fn pack_row<const BPP: usize>(_: &[u8], _: &mut [u8]) {}
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
    fn noise_at_odd_widths_matches_the_per_pixel_reference_in_luma_and_chroma() {
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        for format in [PixelFormat::Rgb48Le, PixelFormat::Rgba64Le] {
            let bpp = format.bytes_per_pixel();
            for width in (1..=41).chain([47, 53, 95, 97, 4097]) {
                let mut f = DecodedFrame::default();
                f.reset(width, 2, format);
                for b in f.data.iter_mut() {
                    seed =
                        seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    *b = (seed >> 56) as u8;
                }
                let mut out = junk(stride(width) * 2 + 100);
                pack(&f, &mut out);
                assert_eq!(out.len(), stride(width) * 2);
                let w = width as usize;
                for y in 0..2 {
                    let px = |x: usize| -> [u16; 3] {
                        let i = (y * w + x.min(w - 1)) * bpp;
                        [0, 1, 2].map(|c| u16::from_le_bytes([f.data[i + c * 2], f.data[i + c * 2 + 1]]))
                    };
                    let (got_y, got_cb, got_cr) = unpack_row(&out, width, y);
                    let want_y: Vec<u32> = (0..w).map(&px).map(|[r, g, b]| luma(r, g, b)).collect();
                    let (want_cb, want_cr): (Vec<u32>, Vec<u32>) = (0..w.div_ceil(2))
                        .map(|i| {
                            let ([r0, g0, b0], [r1, g1, b1]) = (px(2 * i), px(2 * i + 1));
                            chroma(mean(r0, r1), mean(g0, g1), mean(b0, b1))
                        })
                        .unzip();
                    assert_eq!(got_y, want_y, "{} width {width} row {y}", format.name());
                    assert_eq!(got_cb, want_cb, "{} width {width} row {y}", format.name());
                    assert_eq!(got_cr, want_cr, "{} width {width} row {y}", format.name());
                }
            }
        }
    }

    /// A 16-bit RGB(A) frame whose samples are `sample(i)`, `i` counting samples.
    fn rgb16(
        width: u32,
        height: u32,
        format: PixelFormat,
        mut sample: impl FnMut(usize) -> u16,
    ) -> DecodedFrame {
        let mut f = DecodedFrame::default();
        f.reset(width, height, format);
        for (i, s) in f.data.chunks_exact_mut(2).enumerate() {
            s.copy_from_slice(&sample(i).to_le_bytes());
        }
        f
    }

    /// Packs `frame` with the SIMD path into a recycled buffer and with the reference, and
    /// checks that every byte agrees.
    fn assert_matches_reference(frame: &DecodedFrame, what: &str) {
        let mut want = IoBuf::default();
        pack_reference(frame, &mut want);
        assert_eq!(want.len(), stride(frame.width) * frame.height as usize, "{what}");
        let mut got = junk(want.len() + 300);
        pack(frame, &mut got);
        if got[..] != want[..] {
            let at = got.iter().zip(want.iter()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{what}: first difference at byte {at} (row {}, word {})",
                at / stride(frame.width),
                at % stride(frame.width) / 4
            );
        }
    }

    /// Widths around every block size the kernels use (6, 8, 16, 48), plus 4K DCI.
    fn widths() -> impl Iterator<Item = u32> {
        (1..=100).chain([143, 144, 145, 191, 192, 193, 1919, 1920, 4095, 4096, 4097])
    }

    #[test]
    fn simd_matches_the_reference_on_noise_at_many_widths() {
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        let mut noise = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 48) as u16
        };
        for format in [PixelFormat::Rgb48Le, PixelFormat::Rgba64Le] {
            for width in widths() {
                let f = rgb16(width, 3, format, |_| noise());
                assert_matches_reference(&f, &format!("{} noise, width {width}", format.name()));
            }
        }
    }

    #[test]
    fn simd_matches_the_reference_on_extreme_values() {
        let mut seed = 0x853C_49E6_748F_EA9B_u64;
        for format in [PixelFormat::Rgb48Le, PixelFormat::Rgba64Le] {
            for width in widths() {
                for (name, value) in [("black", 0), ("white", 0xFFFF)] {
                    let f = rgb16(width, 2, format, |_| value);
                    assert_matches_reference(&f, &format!("{} {name}, width {width}", format.name()));
                }
                // Each sample 0 or 0xFFFF at random: every component at either end of its
                // range, which reaches the largest and smallest sums of the fixed-point terms.
                let f = rgb16(width, 2, format, |_| {
                    seed =
                        seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    if seed >> 63 == 0 {
                        0
                    } else {
                        0xFFFF
                    }
                });
                assert_matches_reference(&f, &format!("{} extremes, width {width}", format.name()));
            }
        }
    }

    #[test]
    fn simd_matches_the_reference_on_every_16_bit_value() {
        // Every value in every component, and next to every other in a pair, over a few rows.
        for format in [PixelFormat::Rgb48Le, PixelFormat::Rgba64Le] {
            let f = rgb16(4096, 17, format, |i| (i as u32).wrapping_mul(40_503) as u16);
            assert_matches_reference(&f, &format!("{} ramp", format.name()));
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
