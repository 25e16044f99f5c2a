//! Synthetic frames that cost real storage and decode work, with their index in the pixels.
//!
//! A synthetic frame is a smooth gradient, per-pixel noise (film grain, so
//! the bytes do not compress away), a box and a bar that move with the frame
//! index, and, along the top-left edge, a row of black and white blocks that
//! spell the frame index. Every sample is a 10-bit value widened by bit
//! replication (`v << 6 | v >> 4`), so a 10-bit DPX round trip is bit-exact;
//! the blocks are pure black and white, so the index survives 8-bit
//! quantisation too.
//!
//! [`render_frame_f32`] paints the same kind of picture as scene-linear float
//! for EXR: the same moving box and bar, the gradients raised to the fourth
//! power (so most of the frame is dark, as linear light is), film grain of a
//! few percent, and the same code row in 0.0 and 1.0. Every value is exactly
//! representable in half, so a half EXR round trip is bit-exact.

use std::ops::Range;

use playsim_core::{splitmix64, DecodedFrame, PixelFormat, MAX_DIMENSION};

/// The narrowest frame that carries its index: 80 blocks of 2×2 pixels.
pub const MIN_CODE_WIDTH: u32 = CODE_BLOCKS * MIN_BLOCK;

/// The least height of a frame that carries its index, reached at [`MIN_CODE_WIDTH`]; wider frames need `width / 80` rows.
pub const MIN_CODE_HEIGHT: u32 = MIN_BLOCK;

/// Fills `out` with synthetic frame `frame_index`: `rgb48le`, or `rgba64le`
/// when `alpha` is set. The same arguments always give the same pixels.
///
/// The index is readable with [`read_frame_index`] when the frame is at least
/// [`MIN_CODE_WIDTH`] wide and tall enough for one row of its blocks (a block
/// is `width / 80` pixels square); smaller frames get no code. Dimensions
/// above [`MAX_DIMENSION`] are clamped to it.
pub fn render_frame(width: u32, height: u32, frame_index: u64, alpha: bool, out: &mut DecodedFrame) {
    let (width, height) = (width.min(MAX_DIMENSION), height.min(MAX_DIMENSION));
    if alpha {
        out.reset(width, height, PixelFormat::Rgba64Le);
        fill::<4>(width, height, frame_index, &mut out.data);
    } else {
        out.reset(width, height, PixelFormat::Rgb48Le);
        fill::<3>(width, height, frame_index, &mut out.data);
    }
    if let Some(block) = code_block(width, height) {
        draw_code(out, block, frame_index);
    }
}

/// Fills `out` with synthetic frame `frame_index` as scene-linear float:
/// `rgbf32le`, or `rgbaf32le` with a constant 1.0 alpha when `alpha` is set.
/// The same arguments always give the same pixels.
///
/// Values lie in 0..=1 and are all exactly representable as half floats (so a
/// half EXR holds them bit-exactly). The picture is [`render_frame`]'s, in
/// linear light (mostly dark), with film grain: per-pixel, per-channel noise
/// within ±[`GRAIN_F32`]. That keeps a PIZ-compressed half RGBA frame at about
/// 57% of its raw size (91 MB of 159 MB at 6144×3240), as noisy camera or
/// scanned footage is. The index code is the same, in 0.0 and 1.0, and
/// [`read_frame_index`] reads it.
pub fn render_frame_f32(width: u32, height: u32, frame_index: u64, alpha: bool, out: &mut DecodedFrame) {
    let (width, height) = (width.min(MAX_DIMENSION), height.min(MAX_DIMENSION));
    if alpha {
        out.reset(width, height, PixelFormat::RgbaF32Le);
        fill_f32::<4>(width, height, frame_index, &mut out.data);
    } else {
        out.reset(width, height, PixelFormat::RgbF32Le);
        fill_f32::<3>(width, height, frame_index, &mut out.data);
    }
    if let Some(block) = code_block(width, height) {
        draw_code_f32(out, block, frame_index);
    }
}

/// The largest film grain in [`render_frame_f32`]'s frames: the noise added to
/// each sample is triangular in ±`GRAIN_F32` (and folded back above 0).
///
/// Tuned so that PIZ compresses a 6K half RGBA frame to about 91 MB: a larger
/// grain adds little (doubling it adds about 3 bits a pixel), a smaller one
/// takes the size below that of real footage.
pub const GRAIN_F32: f32 = 0.04;

/// The frame index written by [`render_frame`] or [`render_frame_f32`], or
/// `None` when the frame does not carry one (not synthetic, too small, damaged,
/// or in a pixel format other than 16-bit or float RGB(A)).
pub fn read_frame_index(frame: &DecodedFrame) -> Option<u64> {
    let format = frame.format?;
    let float = match format {
        PixelFormat::Rgb48Le | PixelFormat::Rgba64Le => false,
        PixelFormat::RgbF32Le | PixelFormat::RgbaF32Le => true,
        _ => return None,
    };
    let (channels, sample_bytes) = (format.channels(), format.bytes_per_sample());
    let block = code_block(frame.width, frame.height)?;
    let (block, width) = (block as usize, frame.width as usize);
    let stride = width.checked_mul(channels * sample_bytes)?;
    let strip = frame.data.get(..stride.checked_mul(block)?)?;
    let mut bits: u128 = 0;
    for i in 0..CODE_BLOCKS as usize {
        let x0 = i * block;
        // Three points along the block's diagonal, away from its edges, must agree.
        let mut bit = None;
        for (dx, dy) in [(block / 4, block / 4), (block / 2, block / 2), (block * 3 / 4, block * 3 / 4)] {
            let offset = dy * stride + (x0 + dx) * channels * sample_bytes;
            let rgb = strip.get(offset..offset + 3 * sample_bytes)?;
            let sample = if float { classify_f32(rgb)? } else { classify(rgb)? };
            if bit.is_some_and(|b| b != sample) {
                return None;
            }
            bit = Some(sample);
        }
        bits = bits << 1 | u128::from(bit?);
    }
    let marker = (bits >> (CODE_BLOCKS - 8)) as u8;
    let index = (bits >> 8) as u64;
    let check = bits as u8;
    (marker == CODE_MARKER && check == checksum(index)).then_some(index)
}

/// Blocks in the code row: 8 marker bits, 64 index bits, 8 check bits.
const CODE_BLOCKS: u32 = 80;

/// The smallest block side, in pixels.
const MIN_BLOCK: u32 = 2;

/// The start marker, an irregular pattern unlikely in real pictures.
const CODE_MARKER: u8 = 0b1011_0010;

/// Bits of per-pixel noise in each 10-bit sample.
const NOISE_BITS: u32 = 7;

/// The largest value of the picture before its noise is added.
const BASE_MAX: u32 = 1023 - ((1 << NOISE_BITS) - 1);

/// The side of a code block, or `None` when the frame is too small for the code.
fn code_block(width: u32, height: u32) -> Option<u32> {
    let block = width / CODE_BLOCKS;
    (block >= MIN_BLOCK && block <= height).then_some(block)
}

fn checksum(index: u64) -> u8 {
    (splitmix64(index ^ 0x0c0d_e5ee_d000_0001) >> 56) as u8
}

/// 1 for white, 0 for black, `None` for anything else (colour or grey).
fn classify(rgb: &[u8]) -> Option<u8> {
    let mut class = None;
    for channel in rgb.chunks_exact(2) {
        let value = u16::from_le_bytes([*channel.first()?, *channel.get(1)?]);
        let c = match value {
            0..=0x3fff => 0,
            0xc000..=0xffff => 1,
            _ => return None,
        };
        if class.is_some_and(|k| k != c) {
            return None;
        }
        class = Some(c);
    }
    class
}

/// 1 for white, 0 for black, `None` for anything else, among f32 samples:
/// black is below 0.25, white above 0.75, as for 16-bit samples.
fn classify_f32(rgb: &[u8]) -> Option<u8> {
    let mut class = None;
    for channel in rgb.chunks_exact(4) {
        let value = f32::from_le_bytes(channel.try_into().ok()?);
        let c = if value < 0.25 {
            0
        } else if value > 0.75 {
            1
        } else {
            // Grey, or NaN.
            return None;
        };
        if class.is_some_and(|k| k != c) {
            return None;
        }
        class = Some(c);
    }
    class
}

/// Widens a 10-bit value to 16 bits by bit replication.
#[inline(always)]
fn widen(v10: u32) -> [u8; 2] {
    ((v10 << 6 | v10 >> 4) as u16).to_le_bytes()
}

/// The wyrand output function: one 64×64→128-bit multiply, good enough noise
/// at half the cost of SplitMix64 in the per-pixel loop.
#[inline(always)]
fn wyrand_mix(state: u64) -> u64 {
    let t = u128::from(state) * u128::from(state ^ 0xe703_7ed1_a0b4_28db);
    (t >> 64) as u64 ^ t as u64
}

/// Paints the gradient, the moving box and bar, and the noise, for `CH` channels.
fn fill<const CH: usize>(width: u32, height: u32, frame_index: u64, data: &mut [u8]) {
    let (w, h) = (u64::from(width), u64::from(height));
    if w == 0 || h == 0 {
        return;
    }
    let Shapes { box_x, box_y, bar } = Shapes::new(w, h, frame_index);
    let seed = splitmix64(frame_index);
    let mut painter = Painter {
        // The red gradient advances in 16.16 fixed point so the inner loop has no division.
        x_step: (u64::from(BASE_MAX) << 16) / (w - 1).max(1),
        green: 0,
        row_state: 0,
    };
    for (y, row) in (0..h).zip(data.chunks_exact_mut(width as usize * CH * 2)) {
        painter.green = (y * u64::from(BASE_MAX) / (h - 1).max(1)) as u32;
        painter.row_state = seed ^ y.wrapping_mul(0xd1b5_4a32_d192_ed03);
        let the_box = if box_y.contains(&y) { box_x.clone() } else { 0..0 };
        // Cut the row where the box and the bar start and end, so that each span is
        // painted by a loop with no per-pixel test of what it is in.
        let mut cuts = [0, w, the_box.start, the_box.end, bar.start, bar.end];
        cuts.sort_unstable();
        for pair in cuts.windows(2) {
            let &[x0, x1] = pair else { continue };
            let Some(span) = row.get_mut(x0 as usize * CH * 2..x1 as usize * CH * 2) else { continue };
            if bar.contains(&x0) {
                painter.paint::<CH, BAR>(span, x0);
            } else if the_box.contains(&x0) {
                painter.paint::<CH, BOX>(span, x0);
            } else {
                painter.paint::<CH, PLAIN>(span, x0);
            }
        }
    }
}

/// Where the moving box and bar are in a frame, in pixels.
struct Shapes {
    /// The box's columns.
    box_x: Range<u64>,
    /// The box's rows.
    box_y: Range<u64>,
    /// The bar's columns (it spans every row).
    bar: Range<u64>,
}

impl Shapes {
    /// The shapes of frame `frame_index` of a `w`×`h` frame (both at least 1).
    fn new(w: u64, h: u64, frame_index: u64) -> Shapes {
        let (box_w, box_h) = ((w / 6).max(1), (h / 6).max(1));
        let box_x = frame_index.wrapping_mul((w / 97).max(1)) % (w - box_w + 1);
        let box_y = frame_index.wrapping_mul((h / 53).max(1)) % (h - box_h + 1);
        let bar_w = (w / 64).max(1);
        let bar_x = frame_index.wrapping_mul((w / 131).max(1)) % w;
        Shapes {
            box_x: box_x..box_x + box_w,
            box_y: box_y..box_y + box_h,
            bar: bar_x..(bar_x + bar_w).min(w),
        }
    }
}

/// What a span of a row shows, as a const parameter of [`Painter::paint`].
const PLAIN: u8 = 0;
const BOX: u8 = 1;
const BAR: u8 = 2;

/// The increment of the noise generator's state, per pixel.
const NOISE_STEP: u64 = 0xa076_1d64_78bd_642f;

/// The per-row parameters of [`fill`].
struct Painter {
    x_step: u64,
    green: u32,
    row_state: u64,
}

impl Painter {
    /// Paints the pixels of `span`, which starts at column `x0`.
    #[inline(always)]
    fn paint<const CH: usize, const WHAT: u8>(&self, span: &mut [u8], x0: u64) {
        let noise_mask = (1u64 << NOISE_BITS) - 1;
        let green = self.green;
        // Both the gradient and the noise state are affine in x, so a span can start anywhere.
        let mut red_fixed = x0 * self.x_step;
        let mut state = self.row_state.wrapping_add(x0.wrapping_mul(NOISE_STEP));
        for px in span.chunks_exact_mut(CH * 2) {
            state = state.wrapping_add(NOISE_STEP);
            let noise = wyrand_mix(state);
            let red = (red_fixed >> 16) as u32;
            red_fixed += self.x_step;
            let (r, g, b) = match WHAT {
                PLAIN => (red, green, (BASE_MAX - red + green) / 2),
                BOX => (BASE_MAX - red, BASE_MAX - green, (BASE_MAX - red + green) / 4 + BASE_MAX / 4),
                _ => (BASE_MAX * 7 / 8, BASE_MAX * 7 / 8, BASE_MAX * 7 / 8),
            };
            let [r0, r1] = widen(r + (noise & noise_mask) as u32);
            let [g0, g1] = widen(g + (noise >> 16 & noise_mask) as u32);
            let [b0, b1] = widen(b + (noise >> 32 & noise_mask) as u32);
            // A nearly opaque matte with a little noise of its own.
            let [a0, a1] = widen(1023 - (green >> 3) - (noise >> 48 & 0x1f) as u32);
            px.copy_from_slice(&[r0, r1, g0, g1, b0, b1, a0, a1][..CH * 2]);
        }
    }
}

/// Paints the code row: the marker, the index and its check, most significant bit first.
fn draw_code(out: &mut DecodedFrame, block: u32, frame_index: u64) {
    let Some(format) = out.format else { return };
    let bpp = format.bytes_per_pixel();
    let (block, stride) = (block as usize, out.width as usize * bpp);
    let bits =
        u128::from(CODE_MARKER) << 72 | u128::from(frame_index) << 8 | u128::from(checksum(frame_index));
    let [black, white] = [widen(0), widen(1023)];
    for row in out.data.chunks_exact_mut(stride).take(block) {
        for (i, cell) in row.chunks_exact_mut(block * bpp).take(CODE_BLOCKS as usize).enumerate() {
            let bit = bits >> (CODE_BLOCKS as usize - 1 - i) & 1;
            let value = if bit == 1 { white } else { black };
            for px in cell.chunks_exact_mut(2) {
                px.copy_from_slice(&value);
            }
        }
    }
}

/// The float picture's darkest value before grain.
const FLOOR_F32: f32 = 0.001;

/// The float picture's brightest value before grain: mid grey (0.18) is three quarters of the way up.
const CEIL_F32: f32 = 0.5;

/// The smallest positive normal half, 2^-14: below it half has less precision,
/// so samples are kept at or above it (or at exactly 0) to stay half-exact.
const HALF_MIN_POSITIVE_NORMAL: f32 = 6.103_515_6e-5;

/// Salted into the float frames' noise seed, so they do not share the 16-bit frames' grain.
const F32_SEED: u64 = 0x00f3_2f32_f32f_32f3;

/// Paints [`render_frame_f32`]'s picture for `CH` channels (alpha is 1.0).
fn fill_f32<const CH: usize>(width: u32, height: u32, frame_index: u64, data: &mut [u8]) {
    let (w, h) = (u64::from(width), u64::from(height));
    if w == 0 || h == 0 {
        return;
    }
    let Shapes { box_x, box_y, bar } = Shapes::new(w, h, frame_index);
    let seed = splitmix64(frame_index ^ F32_SEED);
    let (x_scale, y_scale) = (1.0 / (w - 1).max(1) as f32, 1.0 / (h - 1).max(1) as f32);
    // The fourth power of the gradients puts most of the picture in the darks,
    // as in real scene-linear footage. That is where half has most of its
    // precision, so there the grain spans many half values and costs PIZ many
    // bits, as the noise of real footage does.
    let linear = |v: f32| FLOOR_F32 + (CEIL_F32 - FLOOR_F32) * (v * v) * (v * v);
    let grey = linear(0.8);
    let grain_step = GRAIN_F32 / 1023.0;
    for (y, row) in (0..h).zip(data.chunks_exact_mut(width as usize * CH * 4)) {
        let gy = y as f32 * y_scale;
        let the_box = if box_y.contains(&y) { box_x.clone() } else { 0..0 };
        let mut state = seed ^ y.wrapping_mul(0xd1b5_4a32_d192_ed03);
        for (x, px) in (0..w).zip(row.chunks_exact_mut(CH * 4)) {
            state = state.wrapping_add(NOISE_STEP);
            let noise = wyrand_mix(state);
            let rx = x as f32 * x_scale;
            let rgb = if bar.contains(&x) {
                [grey; 3]
            } else if the_box.contains(&x) {
                [linear(1.0 - rx), linear(1.0 - gy), linear((1.0 - rx + gy) / 4.0 + 0.25)]
            } else {
                [linear(rx), linear(gy), linear((1.0 - rx + gy) / 2.0)]
            };
            let mut samples = [1.0f32; 4];
            for (c, (sample, base)) in samples.iter_mut().zip(rgb).enumerate() {
                // Triangular grain: the sum of two 10-bit uniforms, centred.
                let bits = noise >> (20 * c);
                let grain = ((bits & 0x3ff) + (bits >> 10 & 0x3ff)) as f32 - 1023.0;
                // Grain that would go below 0 is folded back up rather than
                // clipped, so the darks stay as noisy as the rest.
                let v = (base + grain * grain_step).abs();
                *sample = half_exact(v.clamp(HALF_MIN_POSITIVE_NORMAL, 1.0));
            }
            for (bytes, sample) in px.chunks_exact_mut(4).zip(samples) {
                bytes.copy_from_slice(&sample.to_le_bytes());
            }
        }
    }
}

/// The half-precision value nearest to `v` (ties to even), as f32.
///
/// Exact for 0 and for `v` in half's normal range, 2^-14..=65504, where a half
/// is an f32 with 13 fewer mantissa bits: rounding those bits off gives the
/// same number as `half::f16::from_f32(v).to_f32()`, without a conversion.
#[inline(always)]
fn half_exact(v: f32) -> f32 {
    let bits = v.to_bits();
    f32::from_bits((bits + 0x0fff + (bits >> 13 & 1)) & !0x1fff)
}

/// Paints the code row of a float frame: R, G and B are 0.0 or 1.0; alpha is left as it is.
fn draw_code_f32(out: &mut DecodedFrame, block: u32, frame_index: u64) {
    let Some(format) = out.format else { return };
    let (channels, bpp) = (format.channels(), format.bytes_per_pixel());
    let (block, stride) = (block as usize, out.width as usize * bpp);
    let bits =
        u128::from(CODE_MARKER) << 72 | u128::from(frame_index) << 8 | u128::from(checksum(frame_index));
    for row in out.data.chunks_exact_mut(stride).take(block) {
        for (i, cell) in row.chunks_exact_mut(block * bpp).take(CODE_BLOCKS as usize).enumerate() {
            let bit = bits >> (CODE_BLOCKS as usize - 1 - i) & 1;
            let value = if bit == 1 { 1.0f32 } else { 0.0 }.to_le_bytes();
            for px in cell.chunks_exact_mut(bpp) {
                for sample in px.chunks_exact_mut(4).take(channels.min(3)) {
                    sample.copy_from_slice(&value);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn frame(width: u32, height: u32, index: u64, alpha: bool) -> DecodedFrame {
        let mut out = DecodedFrame::default();
        render_frame(width, height, index, alpha, &mut out);
        out
    }

    #[test]
    fn index_round_trips_at_many_sizes() {
        let indices = [0, 1, 2, 23, 24, 1000, 86_399, 1 << 32, u64::MAX - 1, u64::MAX];
        // The code only needs the top rows, so wide frames are kept short to keep the test quick.
        let sizes =
            [(160, 2), (160, 90), (161, 90), (320, 240), (999, 17), (1920, 24), (4096, 52), (8192, 103)];
        for (width, height) in sizes {
            for alpha in [false, true] {
                for index in indices {
                    let f = frame(width, height, index, alpha);
                    assert_eq!(
                        read_frame_index(&f),
                        Some(index),
                        "{width}x{height} alpha={alpha} index={index}"
                    );
                }
            }
        }
    }

    #[test]
    fn index_round_trips_at_full_size() {
        assert_eq!(read_frame_index(&frame(1920, 1080, 86_400, false)), Some(86_400));
    }

    #[test]
    fn index_survives_8_bit_quantisation() {
        let mut f = frame(640, 360, 123_456_789, false);
        for pair in f.data.chunks_exact_mut(2) {
            let v8 = u16::from_le_bytes([pair[0], pair[1]]) >> 8;
            pair.copy_from_slice(&(v8 << 8 | v8).to_le_bytes());
        }
        assert_eq!(read_frame_index(&f), Some(123_456_789));
    }

    #[test]
    fn tiny_frames_have_no_code_and_do_not_panic() {
        for (width, height) in [(0, 0), (1, 1), (64, 32), (159, 100), (1000, 1), (0, 10), (10, 0)] {
            let f = frame(width, height, 42, false);
            assert_eq!(f.data.len(), width as usize * height as usize * 6);
            assert_eq!(read_frame_index(&f), None, "{width}x{height}");
        }
    }

    #[test]
    fn frames_that_are_not_synthetic_have_no_index() {
        let mut f = frame(320, 200, 7, false);
        f.data.fill(0);
        assert_eq!(read_frame_index(&f), None);
        f.data.fill(0xff);
        assert_eq!(read_frame_index(&f), None);
        let mut f = frame(320, 200, 7, false);
        f.data.truncate(100);
        assert_eq!(read_frame_index(&f), None);
        let mut f = frame(320, 200, 7, false);
        // Flip one index bit: the check no longer matches.
        let block = 320 / 80;
        let offset = (block / 2 * 320 + 40 * block + block / 2) * 6;
        for b in &mut f.data[offset - 6 * 2..offset + 6 * 2] {
            *b = !*b;
        }
        assert_eq!(read_frame_index(&f), None);
        assert_eq!(read_frame_index(&DecodedFrame::default()), None);
    }

    #[test]
    fn samples_are_replicated_10_bit_values() {
        for alpha in [false, true] {
            let f = frame(400, 300, 5, alpha);
            for pair in f.data.chunks_exact(2) {
                let v = u32::from(u16::from_le_bytes([pair[0], pair[1]]));
                let v10 = v >> 6;
                assert_eq!(v, v10 << 6 | v10 >> 4);
            }
        }
    }

    #[test]
    fn consecutive_frames_differ_and_repeat_exactly() {
        let a = frame(320, 180, 10, false);
        let b = frame(320, 180, 11, false);
        assert_ne!(a.data, b.data);
        assert_eq!(a.data, frame(320, 180, 10, false).data);
        // The box moves, not just the noise: compare with the noise masked off.
        let base = |f: &DecodedFrame| f.data.chunks_exact(2).map(|p| p[1] >> 4).collect::<Vec<_>>();
        assert_ne!(base(&a), base(&b));
    }

    #[test]
    fn frames_do_not_compress_well() {
        for alpha in [false, true] {
            let f = frame(512, 256, 3, alpha);
            let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&f.data).unwrap();
            let compressed = enc.finish().unwrap();
            let ratio = compressed.len() as f64 / f.data.len() as f64;
            assert!(ratio > 0.5, "alpha={alpha}: deflate to {ratio:.2} of the raw size");
        }
    }

    fn frame_f32(width: u32, height: u32, index: u64, alpha: bool) -> DecodedFrame {
        let mut out = DecodedFrame::default();
        render_frame_f32(width, height, index, alpha, &mut out);
        out
    }

    fn samples_f32(f: &DecodedFrame) -> impl Iterator<Item = f32> + '_ {
        f.data.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap()))
    }

    #[test]
    fn f32_index_round_trips_at_many_sizes() {
        let indices = [0, 86_399, 1 << 32, u64::MAX];
        // Short frames: the code only needs the top rows, and the float painter is slow in debug builds.
        for (width, height) in [(160, 2), (161, 9), (999, 17), (4096, 52)] {
            for alpha in [false, true] {
                for index in indices {
                    let f = frame_f32(width, height, index, alpha);
                    let format = if alpha { PixelFormat::RgbaF32Le } else { PixelFormat::RgbF32Le };
                    assert_eq!(f.format, Some(format));
                    assert_eq!(f.data.len(), width as usize * height as usize * format.bytes_per_pixel());
                    assert_eq!(
                        read_frame_index(&f),
                        Some(index),
                        "{width}x{height} alpha={alpha} index={index}"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_samples_are_half_exact_in_0_to_1_with_opaque_alpha() {
        for alpha in [false, true] {
            let f = frame_f32(640, 360, 77, alpha);
            let channels = if alpha { 4 } else { 3 };
            for (i, v) in samples_f32(&f).enumerate() {
                assert_eq!(v.to_bits(), half::f16::from_f32(v).to_f32().to_bits(), "sample {i}: {v}");
                assert!((0.0..=1.0).contains(&v), "sample {i}: {v}");
                if i % channels == 3 {
                    assert_eq!(v, 1.0, "alpha of pixel {}", i / 4);
                }
            }
        }
    }

    #[test]
    fn half_exact_rounds_as_half_does() {
        // Every positive normal half up to 2, the points halfway between
        // neighbours (ties go to even), and values just either side of them.
        for bits in 0x0400u16..=0x4000 {
            let h = half::f16::from_bits(bits).to_f32();
            let next = half::f16::from_bits(bits + 1).to_f32();
            let mid = (h + next) / 2.0;
            for v in [h, mid, f32::from_bits(mid.to_bits() - 1), f32::from_bits(mid.to_bits() + 1)] {
                assert_eq!(half_exact(v), half::f16::from_f32(v).to_f32(), "{v:e}");
            }
        }
        assert_eq!(half_exact(0.0), 0.0);
    }

    #[test]
    fn f32_frames_have_grain_and_move() {
        let a = frame_f32(320, 180, 10, false);
        assert_eq!(a.data, frame_f32(320, 180, 10, false).data);
        let b = frame_f32(320, 180, 11, false);
        assert_ne!(a.data, b.data);
        // Neighbouring samples of the same channel differ by grain of up to
        // twice GRAIN_F32, more than the gradient moves in a pixel.
        let row: Vec<f32> = samples_f32(&a).skip(100 * 320 * 3).take(320 * 3).step_by(3).collect();
        let steps: Vec<f32> = row.windows(2).map(|p| (p[1] - p[0]).abs()).collect();
        let mean = steps.iter().sum::<f32>() / steps.len() as f32;
        assert!(mean > GRAIN_F32 / 4.0 && mean < GRAIN_F32 * 2.0, "mean step {mean}");
        // Mostly dark, as linear light is.
        let dark = samples_f32(&a).filter(|v| *v < 0.18).count();
        assert!(dark * 2 > a.data.len() / 4, "{dark} samples below 0.18");
    }

    #[test]
    fn f32_frames_that_are_not_synthetic_have_no_index() {
        let mut f = frame_f32(320, 200, 7, true);
        for fill in [0.0f32, 1.0, 0.5, f32::NAN] {
            for b in f.data.chunks_exact_mut(4) {
                b.copy_from_slice(&fill.to_le_bytes());
            }
            assert_eq!(read_frame_index(&f), None, "{fill}");
        }
        // The same bytes read as another layout carry no code either.
        let mut f = frame_f32(320, 200, 7, false);
        f.format = Some(PixelFormat::Samples32Le { channels: 3 });
        assert_eq!(read_frame_index(&f), None);
        let mut f = frame_f32(320, 200, 7, false);
        f.data.truncate(1000);
        assert_eq!(read_frame_index(&f), None);
    }

    #[test]
    fn absurd_dimensions_are_clamped() {
        let mut out = DecodedFrame::default();
        render_frame(MAX_DIMENSION + 1, 1, 0, false, &mut out);
        assert_eq!((out.width, out.height), (MAX_DIMENSION, 1));
    }
}
