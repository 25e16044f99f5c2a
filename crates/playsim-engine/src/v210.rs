//! Packing canonical RGB to 10-bit 4:2:2 v210, the work an SDI output driver does per frame.
//!
//! BT.709 narrow range, fixed point: each coefficient is scaled so that a
//! 16-bit component times it sums to 10-bit code values in the upper 16 bits
//! of an `i32`, with no overflow. Chroma is the mean of each pixel pair.

use playsim_core::DecodedFrame;

/// Bytes per v210 row: 48 pixels per 128 bytes, rounded up.
pub fn stride(width: u32) -> usize {
    (width as usize).div_ceil(48) * 128
}

// Y = 64 + 876/65535 * (0.2126 R + 0.7152 G + 0.0722 B), scaled by 2^16.
const Y_R: i32 = 186;
const Y_G: i32 = 627;
const Y_B: i32 = 63;
// Cb, Cr = 512 + 896/65535 * (...), scaled by 2^16; each row sums to zero.
const CB_R: i32 = -103;
const CB_G: i32 = -345;
const CB_B: i32 = 448;
const CR_R: i32 = 448;
const CR_G: i32 = -407;
const CR_B: i32 = -41;
const ROUND: i32 = 1 << 15;

#[inline(always)]
fn luma(r: i32, g: i32, b: i32) -> u32 {
    (64 + ((Y_R * r + Y_G * g + Y_B * b + ROUND) >> 16)) as u32
}

/// Cb and Cr from the sum of two pixels' components.
#[inline(always)]
fn chroma(r2: i32, g2: i32, b2: i32) -> (u32, u32) {
    let cb = 512 + ((CB_R * r2 + CB_G * g2 + CB_B * b2 + (ROUND << 1)) >> 17);
    let cr = 512 + ((CR_R * r2 + CR_G * g2 + CR_B * b2 + (ROUND << 1)) >> 17);
    (cb.clamp(0, 1023) as u32, cr.clamp(0, 1023) as u32)
}

/// Packs `frame` (rgb48le or rgba64le; alpha is ignored) into `out` as v210,
/// reusing `out`'s allocation. An empty frame gives empty output.
pub fn pack(frame: &DecodedFrame, out: &mut Vec<u8>) {
    let width = frame.width as usize;
    let height = frame.height as usize;
    let bpp = frame.format.map_or(0, |f| f.bytes_per_pixel());
    out.clear();
    if width == 0 || height == 0 || bpp == 0 || frame.data.len() < width * height * bpp {
        return;
    }
    let stride = stride(frame.width);
    out.resize(stride * height, 0);
    let src_stride = width * bpp;
    // Each output thread keeps one row of scratch, so steady state allocates nothing.
    ROW_SCRATCH.with_borrow_mut(|row| {
        row.resize(width);
        for (src_row, dst_row) in frame.data.chunks_exact(src_stride).zip(out.chunks_exact_mut(stride)) {
            // A constant pixel size lets the compiler drop bounds checks in the conversion loop.
            match bpp {
                6 => row.convert::<6>(src_row),
                _ => row.convert::<8>(src_row),
            }
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
    y: Vec<u32>,
    cb: Vec<u32>,
    cr: Vec<u32>,
    width: usize,
}

impl RowScratch {
    /// Sizes the planes for rows of `width` pixels, keeping the allocations.
    fn resize(&mut self, width: usize) {
        let padded = width.div_ceil(6) * 6;
        self.y.resize(padded, 0);
        self.cb.resize(padded / 2, 0);
        self.cr.resize(padded / 2, 0);
        self.width = width;
    }

    /// Converts one row of interleaved 16-bit RGB(A); the padding repeats the last pixel.
    fn convert<const BPP: usize>(&mut self, src: &[u8]) {
        let component = |px: &[u8], c: usize| i32::from(u16::from_le_bytes([px[c * 2], px[c * 2 + 1]]));
        // Pixel pairs: two lumas and one chroma sample from their sum.
        let pairs = src.chunks_exact(2 * BPP);
        let odd_tail = pairs.remainder();
        for (((px, y), cb), cr) in
            pairs.zip(self.y.chunks_exact_mut(2)).zip(self.cb.iter_mut()).zip(self.cr.iter_mut())
        {
            let (ra, ga, ba) = (component(px, 0), component(px, 1), component(px, 2));
            let (rb, gb, bb) = (component(&px[BPP..], 0), component(&px[BPP..], 1), component(&px[BPP..], 2));
            y[0] = luma(ra, ga, ba);
            y[1] = luma(rb, gb, bb);
            (*cb, *cr) = chroma(ra + rb, ga + gb, ba + bb);
        }
        // An odd last pixel pairs with itself; then the padding repeats the last pair.
        let n_pairs = self.width / 2;
        if odd_tail.len() >= BPP {
            let (r, g, b) = (component(odd_tail, 0), component(odd_tail, 1), component(odd_tail, 2));
            let l = luma(r, g, b);
            let (cb, cr) = chroma(2 * r, 2 * g, 2 * b);
            self.y[2 * n_pairs] = l;
            self.y[2 * n_pairs + 1] = l;
            self.cb[n_pairs] = cb;
            self.cr[n_pairs] = cr;
        }
        let filled_pairs = self.width.div_ceil(2);
        for p in filled_pairs..self.cb.len() {
            self.y[2 * p] = self.y[2 * filled_pairs - 1];
            self.y[2 * p + 1] = self.y[2 * filled_pairs - 1];
            self.cb[p] = self.cb[filled_pairs - 1];
            self.cr[p] = self.cr[filled_pairs - 1];
        }
    }

    /// Packs the planar row into v210 words, six pixels per four words.
    fn pack(&self, dst: &mut [u8]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use playsim_core::PixelFormat;

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

    fn word(out: &[u8], i: usize) -> u32 {
        u32::from_le_bytes([out[i * 4], out[i * 4 + 1], out[i * 4 + 2], out[i * 4 + 3]])
    }

    #[test]
    fn black_white_and_red_give_bt709_codes() {
        let mut out = Vec::new();
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
        let mut out = Vec::new();
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
        let mut out = Vec::new();
        pack(&f, &mut out);
        let px = |x: usize, y: usize| -> [i32; 3] {
            let x = x.min(52);
            let i = (y * 53 + x) * 6;
            [0, 1, 2].map(|c| i32::from(u16::from_le_bytes([f.data[i + c * 2], f.data[i + c * 2 + 1]])))
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
    fn malformed_frames_give_empty_output() {
        let mut f = solid(8, 8, [1, 2, 3]);
        f.data.truncate(10);
        let mut out = vec![1, 2, 3];
        pack(&f, &mut out);
        assert!(out.is_empty());
    }
}
