//! DPX decoding into canonical 16-bit little-endian RGB(A): where each line is, and which
//! kernel of `unpack.rs` turns its stored samples into canonical ones.

use playsim_core::{DecodeError, DecodedFrame, Decoder};

use crate::{unpack, DpxHeader, Error};

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
        let kernel = unpack::kernel(header.bit_depth, header.packing, header.endian);
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

#[cfg(test)]
mod tests {
    use playsim_core::PixelFormat;

    use super::*;
    use crate::header::{OFF_BIT_DEPTH, OFF_EOL_PADDING, OFF_PACKING};
    use crate::testutil::{encode, noisy_frame, put_u16, put_u32, reference_samples, widen, Noise};
    use crate::{Endian, WRITE_DATA_OFFSET};

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

    /// A file of noise: a valid header for its size, depth, byte order and alpha, every byte
    /// of image data random (pad bits included), `packing` in the header, and `pad` bytes of
    /// junk after every line but the last, declared as end-of-line padding.
    struct NoiseFile {
        width: u32,
        height: u32,
        alpha: bool,
        depth: u8,
        packing: u16,
        endian: Endian,
        pad: usize,
    }

    impl NoiseFile {
        fn line_bytes(&self) -> usize {
            let n = self.n_samples();
            match self.depth {
                10 => n.div_ceil(3) * 4,
                16 => 2 * n,
                _ => n,
            }
        }

        fn n_samples(&self) -> usize {
            self.width as usize * if self.alpha { 4 } else { 3 }
        }

        /// Lines start on 32-bit words, then the padding.
        fn stride(&self) -> usize {
            self.line_bytes().next_multiple_of(4) + self.pad
        }

        fn build(&self, noise: &mut Noise) -> Vec<u8> {
            let frame = noisy_frame(self.width, self.height, self.alpha, self.depth, 0);
            let mut file = encode(&frame, self.depth, self.endian);
            file.truncate(WRITE_DATA_OFFSET);
            for y in 0..self.height {
                file.extend((0..self.line_bytes().next_multiple_of(4)).map(|_| noise.next() as u8));
                if y + 1 < self.height {
                    file.extend(std::iter::repeat_n(0xa5, self.pad));
                }
            }
            put_u16(&mut file, OFF_PACKING, self.endian, self.packing);
            put_u32(&mut file, OFF_EOL_PADDING, self.endian, self.pad as u32);
            file
        }

        /// The samples of `file`, line by line, by [`reference_samples`].
        fn reference(&self, file: &[u8]) -> Vec<u16> {
            (0..self.height as usize)
                .flat_map(|y| {
                    let line = &file[WRITE_DATA_OFFSET + y * self.stride()..][..self.line_bytes()];
                    reference_samples(line, self.n_samples(), self.depth, self.packing, self.endian)
                })
                .collect()
        }
    }

    #[test]
    fn noise_decodes_like_the_reference_at_odd_widths_with_padding() {
        let mut noise = Noise::new(268);
        for (depth, packings) in [(10u8, &[1u16, 2][..]), (16, &[0, 1, 2]), (8, &[0, 1])] {
            for (&packing, endian, alpha) in packings
                .iter()
                .flat_map(|p| ENDIANS.into_iter().map(move |e| (p, e)))
                .flat_map(|(p, e)| [false, true].map(|a| (p, e, a)))
            {
                // Odd widths leave every kind of line tail; 4096 + 5 has whole 8-word blocks and a tail.
                for (width, pad) in [(1, 0), (3, 5), (7, 0), (11, 12), (13, 3), (31, 0), (67, 1), (4101, 4)] {
                    let height = if width > 1000 { 2 } else { 3 };
                    let spec = NoiseFile { width, height, alpha, depth, packing, endian, pad };
                    let file = spec.build(&mut noise);
                    let what = format!(
                        "{width}x{height} {depth}-bit packing {packing} {endian:?} alpha={alpha} pad {pad}"
                    );
                    assert!(
                        samples(&decode(&file)) == spec.reference(&file),
                        "{what}: pixels differ from the reference"
                    );
                }
            }
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
            if noise.next().is_multiple_of(3) {
                f[OFF_BIT_DEPTH] = [8, 10, 16][(noise.next() % 3) as usize];
            }
            if noise.next().is_multiple_of(4) {
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
