//! DPX decoding into canonical 16-bit little-endian RGB(A), with the unpack kernels.
//!
//! Every kernel works on one line: it turns the line's stored samples into
//! little-endian u16 samples widened by bit replication. The loops walk
//! `chunks_exact` of input and output so that the compiler drops the bounds
//! checks and vectorises; the 10-bit RGB kernel is the hot path.

use playsim_core::{DecodeError, DecodedFrame, Decoder};

use crate::{DpxHeader, Endian, Error};

/// The DPX decoder: RGB and RGBA, 8-, 10- and 16-bit, both byte orders.
///
/// It produces [`PixelFormat::Rgb48Le`](playsim_core::PixelFormat::Rgb48Le),
/// or [`Rgba64Le`](playsim_core::PixelFormat::Rgba64Le) when the file has
/// alpha, reusing the output frame's allocation.
#[derive(Clone, Copy, Debug, Default)]
pub struct DpxDecoder;

impl DpxDecoder {
    /// Decodes one DPX file into `out`, with this crate's own error type.
    pub fn decode_dpx(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<DpxHeader, Error> {
        let header = DpxHeader::parse(encoded)?;
        let layout = Layout::of(&header, encoded.len())?;
        out.reset(header.width, header.height, header.pixel_format());
        let kernel: fn(&[u8], &mut [u8]) = match (header.bit_depth, header.packing, header.endian) {
            (10, 2, Endian::Big) => unpack10::<true, METHOD_B>,
            (10, 2, Endian::Little) => unpack10::<false, METHOD_B>,
            (10, _, Endian::Big) => unpack10::<true, METHOD_A>,
            (10, _, Endian::Little) => unpack10::<false, METHOD_A>,
            (16, _, Endian::Big) => swap16,
            (16, _, Endian::Little) => copy16,
            _ => widen8,
        };
        let out_line = out.data.len() / header.height as usize;
        for (y, dst) in out.data.chunks_exact_mut(out_line).enumerate() {
            let start = layout.first + y * layout.stride;
            let src = encoded.get(start..start + layout.line_bytes).ok_or_else(|| {
                // Unreachable after `Layout::of`; kept so no input can panic.
                Error::malformed(format!("line {y} of {} lies past the end of the file", header.describe()))
            })?;
            kernel(src, dst);
        }
        Ok(header)
    }
}

impl Decoder for DpxDecoder {
    fn name(&self) -> &'static str {
        "dpx"
    }

    fn decode(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError> {
        self.decode_dpx(encoded, out).map(|_| ()).map_err(DecodeError::from)
    }
}

/// Where the lines of element 0 are in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Offset of the first line.
    pub first: usize,
    /// Bytes of stored samples in one line (10-bit: whole 32-bit words).
    pub line_bytes: usize,
    /// Bytes from one line's start to the next.
    pub stride: usize,
}

impl Layout {
    /// Works out the line layout and checks that a file of `file_len` bytes holds it all.
    ///
    /// Lines start on 32-bit word boundaries (SMPTE 268M table 3c), followed
    /// by the header's end-of-line padding. Some writers (older FFmpeg among
    /// them) did not align 8- and 16-bit lines; like FFmpeg, a file
    /// too short for aligned lines but long enough for unaligned ones is read
    /// unaligned.
    pub(crate) fn of(header: &DpxHeader, file_len: usize) -> Result<Layout, Error> {
        let samples = u64::from(header.width) * header.channels() as u64;
        let line_bytes = match header.bit_depth {
            10 => samples.div_ceil(3) * 4,
            16 => samples * 2,
            _ => samples,
        };
        let aligned = line_bytes.next_multiple_of(4);
        let pad = u64::from(header.eol_padding);
        let first = u64::from(header.data_offset);
        let height = u64::from(header.height);
        // The last line needs its samples but not its padding.
        let needed = |stride: u64| first + stride * (height - 1) + line_bytes;
        let len = file_len as u64;
        let stride = if needed(aligned + pad) <= len {
            aligned + pad
        } else if aligned != line_bytes && needed(line_bytes + pad) <= len {
            line_bytes + pad
        } else {
            return Err(Error::malformed(format!(
                "truncated file: {file_len} bytes, expected at least {} for {} with image data at offset {first}",
                needed(aligned + pad),
                header.describe()
            )));
        };
        // All three fit in the file's length, so they fit in usize.
        let to_usize = |v: u64| usize::try_from(v).map_err(|_| Error::limit("image does not fit in memory"));
        Ok(Layout { first: to_usize(first)?, line_bytes: to_usize(line_bytes)?, stride: to_usize(stride)? })
    }
}

/// Bit position of the first datum's lowest bit in filled method A: samples
/// at bits 31..22, 21..12, 11..2, two pad bits at the bottom.
const METHOD_A: u32 = 22;
/// Filled method B: two pad bits at the top, samples at 29..20, 19..10, 9..0.
const METHOD_B: u32 = 20;

/// 10-bit datums, three to a 32-bit word, each line starting on a new word.
///
/// RGB and RGBA share this: datums run on across words in R, G, B(, A) order,
/// so a line is a run of `width × channels` samples whatever the channels.
/// The main loop takes eight words (eight RGB pixels) at a time, in pairs of
/// words whose six samples are three whole u32s of output; written as small
/// fixed-size loops, that is what the compiler turns into SIMD (measured 4×
/// faster than a word at a time with byte stores). Words left over, and the one or
/// two datums of a line's last part-filled word, are done one at a time.
fn unpack10<const BIG: bool, const SHIFT: u32>(src: &[u8], dst: &mut [u8]) {
    let word = |w: &[u8]| {
        let b = [w[0], w[1], w[2], w[3]];
        if BIG {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    for (w, o) in src.chunks_exact(32).zip(dst.chunks_exact_mut(48)) {
        let mut x = [0u32; 4];
        let mut y = [0u32; 4];
        for ((x, y), w) in x.iter_mut().zip(y.iter_mut()).zip(w.chunks_exact(8)) {
            *x = word(&w[0..4]);
            *y = word(&w[4..8]);
        }
        let mut v = [[0u32; 3]; 4];
        for ((v, x), y) in v.iter_mut().zip(x).zip(y) {
            *v = pair10::<SHIFT>(x, y);
        }
        for (o, v) in o.chunks_exact_mut(12).zip(v) {
            o[0..4].copy_from_slice(&v[0].to_le_bytes());
            o[4..8].copy_from_slice(&v[1].to_le_bytes());
            o[8..12].copy_from_slice(&v[2].to_le_bytes());
        }
    }
    let blocks = (src.len() / 32).min(dst.len() / 48);
    let (Some(src), Some(dst)) = (src.get(blocks * 32..), dst.get_mut(blocks * 48..)) else {
        return;
    };
    // Output first in each zip, so that a word with no whole pixel's room
    // left (the line's part-filled last word) is not taken and dropped.
    let mut words = src.chunks_exact(4);
    let mut samples = dst.chunks_exact_mut(6);
    for (o, w) in (&mut samples).zip(&mut words) {
        o.copy_from_slice(&spread10::<SHIFT>(word(w)).to_le_bytes()[..6]);
    }
    let tail = samples.into_remainder();
    if let Some(w) = words.next() {
        if let Some(bytes) = spread10::<SHIFT>(word(w)).to_le_bytes().get(..tail.len()) {
            tail.copy_from_slice(bytes);
        }
    }
}

/// The six datums of words `x` and `y`, widened to 16 bits: three u32s of
/// little-endian output, each holding two samples (for RGB: R0 G0, B0 R1, G1 B1).
///
/// `SHIFT` is the lowest bit of a word's first datum (22 for method A, 20 for
/// B), so datum `k` of a word sits at bit `SHIFT - 10k`. Each is moved to bit
/// 6 or 22 of its u32, leaving `v << 6` in the 16-bit lane; [`replicate`]
/// then adds `v >> 4`.
#[inline(always)]
fn pair10<const SHIFT: u32>(x: u32, y: u32) -> [u32; 3] {
    [
        replicate((x >> (SHIFT - 6) & 0xffc0) | (x << (32 - SHIFT) & 0xffc0_0000)),
        replicate((x << (26 - SHIFT) & 0xffc0) | (y << (22 - SHIFT) & 0xffc0_0000)),
        replicate((y >> (SHIFT - 16) & 0xffc0) | (y << (42 - SHIFT) & 0xffc0_0000)),
    ]
}

/// Completes the bit replication of two 16-bit lanes holding `v << 6`: the
/// lane's own top six bits, shifted down by ten, are `v >> 4`.
#[inline(always)]
fn replicate(t: u32) -> u32 {
    t | (t >> 10 & 0x003f_003f)
}

/// The three datums of one word, widened to 16 bits by bit replication and
/// placed at bits 0, 16 and 32 of a u64: six little-endian output bytes.
///
/// As in [`pair10`], datum `k` moves from bit `SHIFT - 10k` to bit `16k + 6`
/// and its lane's top six bits are copied down by ten.
#[inline(always)]
fn spread10<const SHIFT: u32>(w: u32) -> u64 {
    let x = u64::from(w);
    let t = (x >> (SHIFT - 6) & 0xffc0)
        | (x << (32 - SHIFT) & 0xffc0_0000)
        | (x << (58 - SHIFT) & 0xffc0_0000_0000);
    t | (t >> 10 & 0x003f_003f_003f)
}

/// 16-bit samples stored big-endian.
fn swap16(src: &[u8], dst: &mut [u8]) {
    for (s, d) in src.chunks_exact(2).zip(dst.chunks_exact_mut(2)) {
        d[0] = s[1];
        d[1] = s[0];
    }
}

/// 16-bit samples stored little-endian: already canonical.
fn copy16(src: &[u8], dst: &mut [u8]) {
    let n = src.len().min(dst.len());
    if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
        d.copy_from_slice(s);
    }
}

/// 8-bit samples, widened by `v * 257` (the byte repeated).
fn widen8(src: &[u8], dst: &mut [u8]) {
    for (s, d) in src.iter().zip(dst.chunks_exact_mut(2)) {
        d[0] = *s;
        d[1] = *s;
    }
}

#[cfg(test)]
mod tests {
    use playsim_core::PixelFormat;

    use super::*;
    use crate::header::{OFF_BIT_DEPTH, OFF_EOL_PADDING, OFF_PACKING};
    use crate::testutil::{encode, noisy_frame, put_u16, put_u32, widen, Noise};
    use crate::WRITE_DATA_OFFSET;

    const ENDIANS: [Endian; 2] = [Endian::Big, Endian::Little];

    fn decode(file: &[u8]) -> DecodedFrame {
        let mut out = DecodedFrame::default();
        DpxDecoder.decode(file, &mut out).expect("decodes");
        out
    }

    /// The canonical samples of a decoded frame.
    fn samples(frame: &DecodedFrame) -> Vec<u16> {
        frame.data.chunks_exact(2).map(|s| u16::from_le_bytes([s[0], s[1]])).collect()
    }

    /// A 1-line file of `words`, 10-bit, `width` pixels, alpha or not, in `packing`.
    fn ten_bit_file(width: u32, alpha: bool, endian: Endian, packing: u16, words: &[u32]) -> Vec<u8> {
        let mut f = encode(&noisy_frame(width, 1, alpha, 10, 0), 10, endian);
        assert_eq!(f.len(), WRITE_DATA_OFFSET + 4 * words.len());
        put_u16(&mut f, OFF_PACKING, endian, packing);
        for (k, w) in words.iter().enumerate() {
            put_u32(&mut f, WRITE_DATA_OFFSET + 4 * k, endian, *w);
        }
        f
    }

    #[test]
    fn round_trips_every_depth_alpha_and_byte_order_bit_exactly() {
        for depth in [8, 10, 16] {
            for alpha in [false, true] {
                for endian in ENDIANS {
                    // Widths that leave 10-bit RGBA lines with 0, 1 and 2 datums in a last
                    // word, 8- and 16-bit lines unaligned, and whole SIMD blocks with leftovers.
                    for (w, h) in [(1, 1), (2, 3), (3, 2), (5, 3), (7, 4), (33, 5), (64, 2)] {
                        let frame = noisy_frame(w, h, alpha, depth, u64::from(w * 31 + h));
                        let file = encode(&frame, depth, endian);
                        let out = decode(&file);
                        let what = format!("{w}x{h} {depth}-bit alpha={alpha} {endian:?}");
                        assert_eq!((out.width, out.height, out.format), (w, h, frame.format), "{what}");
                        assert!(out.data == frame.data, "{what}: pixels differ");
                    }
                }
            }
        }
    }

    #[test]
    fn narrows_then_widens_any_16_bit_frame() {
        // Writing keeps the top bits, decoding replicates them: a fixed point after one trip.
        let frame = noisy_frame(9, 3, true, 16, 7);
        for depth in [8u8, 10] {
            let out = decode(&encode(&frame, depth, Endian::Big));
            let expected: Vec<u16> =
                samples(&frame).iter().map(|v| widen(v >> (16 - depth), depth)).collect();
            assert_eq!(samples(&out), expected, "{depth}-bit");
        }
    }

    #[test]
    fn method_a_bit_positions_match_a_hand_built_word() {
        // R at bits 31..22, G at 21..12, B at 11..2; the two pad bits are ignored.
        let (r, g, b) = (0x2ab, 0x155, 0x0f0);
        let word = r << 22 | g << 12 | b << 2 | 0b11;
        for endian in ENDIANS {
            let out = decode(&ten_bit_file(1, false, endian, 1, &[word]));
            assert_eq!(samples(&out), [0xaaea, 0x5555, 0x3c0f], "{endian:?}");
            assert_eq!(samples(&out), [widen(0x2ab, 10), widen(0x155, 10), widen(0x0f0, 10)]);
        }
        // The file's bytes in big-endian order are the word's, most significant first.
        let f = ten_bit_file(1, false, Endian::Big, 1, &[word]);
        assert_eq!(f[WRITE_DATA_OFFSET..], [0xaa, 0xd5, 0x53, 0xc3]);
    }

    #[test]
    fn method_b_bit_positions_match_a_hand_built_word() {
        // Two pad bits on top, then R at 29..20, G at 19..10, B at 9..0.
        let (r, g, b) = (0x3ff, 0x001, 0x200);
        let word = 0b11 << 30 | r << 20 | g << 10 | b;
        for endian in ENDIANS {
            let out = decode(&ten_bit_file(1, false, endian, 2, &[word]));
            assert_eq!(samples(&out), [0xffff, 0x0040, 0x8020], "{endian:?}");
        }
    }

    #[test]
    fn method_b_files_decode_like_method_a_at_every_width() {
        // The same datums moved down two bits, with the pad bits set, in lines
        // long enough for the SIMD blocks and with every kind of leftover.
        for alpha in [false, true] {
            for endian in ENDIANS {
                for width in [1, 7, 8, 9, 37, 100] {
                    let frame = noisy_frame(width, 3, alpha, 10, u64::from(width));
                    let mut file = encode(&frame, 10, endian);
                    put_u16(&mut file, OFF_PACKING, endian, 2);
                    for w in file[WRITE_DATA_OFFSET..].chunks_exact_mut(4) {
                        let a = match endian {
                            Endian::Big => u32::from_be_bytes([w[0], w[1], w[2], w[3]]),
                            Endian::Little => u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
                        };
                        w.copy_from_slice(&endian.u32_bytes(a >> 2 | 0b11 << 30));
                    }
                    assert!(decode(&file).data == frame.data, "{width} alpha={alpha} {endian:?}");
                }
            }
        }
    }

    #[test]
    fn ten_bit_rgba_datums_run_on_across_words() {
        // Two RGBA pixels are 8 datums: R0 G0 B0 | A0 R1 G1 | B1 A1 and one unused.
        let d = |v: u32, k: u32| v << (22 - 10 * k);
        let words =
            [d(1, 0) | d(2, 1) | d(3, 2), d(4, 0) | d(5, 1) | d(6, 2), d(7, 0) | d(8, 1) | d(0x3ff, 2)];
        for endian in ENDIANS {
            let out = decode(&ten_bit_file(2, true, endian, 1, &words));
            assert_eq!(out.format, Some(PixelFormat::Rgba64Le));
            let expected: Vec<u16> = (1..=8).map(|v| widen(v, 10)).collect();
            assert_eq!(samples(&out), expected, "{endian:?}");
        }
    }

    #[test]
    fn honours_end_of_line_padding() {
        for (depth, endian) in [(10, Endian::Big), (16, Endian::Little), (8, Endian::Big)] {
            let frame = noisy_frame(5, 3, false, depth, 3);
            let plain = encode(&frame, depth, endian);
            let stride = (plain.len() - WRITE_DATA_OFFSET) / 3;
            // Insert 12 bytes of junk after every line, and say so in the header.
            let mut padded = plain[..WRITE_DATA_OFFSET].to_vec();
            for line in plain[WRITE_DATA_OFFSET..].chunks(stride) {
                padded.extend_from_slice(line);
                padded.extend_from_slice(&[0xa5; 12]);
            }
            put_u32(&mut padded, OFF_EOL_PADDING, endian, 12);
            assert_eq!(decode(&padded).data, frame.data, "{depth}-bit");
            // The last line's padding may be missing.
            assert_eq!(decode(&padded[..padded.len() - 12]).data, frame.data, "{depth}-bit");
        }
    }

    #[test]
    fn reads_unaligned_lines_from_old_writers() {
        // 8-bit RGB, 3 pixels: 9 bytes a line, 12 when aligned to a word.
        let frame = noisy_frame(3, 4, false, 8, 5);
        let aligned = encode(&frame, 8, Endian::Big);
        let mut unaligned = aligned[..WRITE_DATA_OFFSET].to_vec();
        for line in aligned[WRITE_DATA_OFFSET..].chunks(12) {
            unaligned.extend_from_slice(&line[..9]);
        }
        assert_eq!(decode(&unaligned).data, frame.data);
        assert!(DpxDecoder.decode(&unaligned[..unaligned.len() - 1], &mut DecodedFrame::default()).is_err());
    }

    #[test]
    fn reuses_the_output_allocation() {
        let file = encode(&noisy_frame(16, 8, false, 10, 9), 10, Endian::Big);
        let mut out = DecodedFrame::default();
        DpxDecoder.decode(&file, &mut out).unwrap();
        let (ptr, cap) = (out.data.as_ptr(), out.data.capacity());
        for _ in 0..3 {
            DpxDecoder.decode(&file, &mut out).unwrap();
            assert_eq!((out.data.as_ptr(), out.data.capacity()), (ptr, cap));
        }
        // A smaller frame fits in the same allocation too.
        let small = encode(&noisy_frame(4, 4, true, 8, 9), 8, Endian::Little);
        DpxDecoder.decode(&small, &mut out).unwrap();
        assert_eq!((out.data.as_ptr(), out.data.len()), (ptr, 4 * 4 * 8));
    }

    #[test]
    fn hostile_bytes_never_panic() {
        let mut noise = Noise::new(42);
        let seeds = [
            encode(&noisy_frame(7, 3, false, 10, 1), 10, Endian::Big),
            encode(&noisy_frame(5, 2, true, 10, 2), 10, Endian::Little),
            encode(&noisy_frame(3, 3, true, 16, 3), 16, Endian::Big),
            encode(&noisy_frame(6, 2, false, 8, 4), 8, Endian::Little),
        ];
        let mut out = DecodedFrame::default();
        let mut n_ok = 0;
        for i in 0..20_000 {
            let mut f = seeds[i % seeds.len()].clone();
            // Scribble on the fields that matter, sometimes with extreme values.
            for _ in 0..1 + noise.next() % 4 {
                let off = 768 + (noise.next() % 52) as usize;
                f[off] = match noise.next() % 4 {
                    0 => 0,
                    1 => 0xff,
                    _ => noise.next() as u8,
                };
            }
            if noise.next() % 3 == 0 {
                f[OFF_BIT_DEPTH] = [8, 10, 16][(noise.next() % 3) as usize];
            }
            if noise.next() % 4 == 0 {
                f.truncate((noise.next() % f.len() as u64) as usize);
            }
            if DpxDecoder.decode(&f, &mut out).is_ok() {
                n_ok += 1;
                assert_eq!(
                    out.data.len(),
                    out.width as usize * out.height as usize * out.format.unwrap().bytes_per_pixel()
                );
            }
        }
        assert!(n_ok > 100, "the mutations should leave some files decodable, got {n_ok}");
    }
}
