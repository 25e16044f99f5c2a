//! Helpers shared by the unit tests: noisy frames, encoded files, header patching.

use playsim_core::{DecodedFrame, PixelFormat};

use crate::{write_dpx, Endian, WriteOptions};

/// A xorshift64 generator: deterministic noise with no dependency.
pub struct Noise(u64);

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Widens a `depth`-bit value to 16 bits the way the decoder does.
pub fn widen(v: u16, depth: u8) -> u16 {
    match depth {
        8 => v * 257,
        10 => (v << 6) | (v >> 4),
        _ => v,
    }
}

/// A canonical frame of random `depth`-bit values, widened, so that writing
/// it at `depth` and decoding gives it back exactly.
pub fn noisy_frame(width: u32, height: u32, alpha: bool, depth: u8, seed: u64) -> DecodedFrame {
    let format = if alpha { PixelFormat::Rgba64Le } else { PixelFormat::Rgb48Le };
    let mut frame = DecodedFrame::default();
    frame.reset(width, height, format);
    let mut noise = Noise::new(seed);
    let mask = if depth == 16 { 0xffff } else { (1u16 << depth) - 1 };
    for sample in frame.data.chunks_exact_mut(2) {
        let v = widen(noise.next() as u16 & mask, depth);
        sample.copy_from_slice(&v.to_le_bytes());
    }
    frame
}

/// `frame` written as a DPX file.
pub fn encode(frame: &DecodedFrame, bit_depth: u8, endian: Endian) -> Vec<u8> {
    let mut out = Vec::new();
    write_dpx(frame, &WriteOptions { bit_depth, endian }, &mut out).expect("test frame encodes");
    out
}

/// Overwrites a u32 header field in the file's byte order.
pub fn put_u32(file: &mut [u8], off: usize, endian: Endian, v: u32) {
    file[off..off + 4].copy_from_slice(&endian.u32_bytes(v));
}

/// Overwrites a u16 header field in the file's byte order.
pub fn put_u16(file: &mut [u8], off: usize, endian: Endian, v: u16) {
    file[off..off + 2].copy_from_slice(&endian.u16_bytes(v));
}

/// The canonical samples of a line of `n_samples` stored at `bit_depth` bits, decoded the
/// plain way, one sample at a time: the reference the fast kernels are checked against.
///
/// 10-bit sample `k` is datum `k % 3` of word `k / 3`, at bit `22 - 10 (k % 3)` in filled
/// method A (packing 1) and two bits lower in method B (packing 2).
pub fn reference_samples(
    src: &[u8],
    n_samples: usize,
    bit_depth: u8,
    packing: u16,
    endian: Endian,
) -> Vec<u16> {
    let u16_at = |i: usize| {
        let b = [src[i], src[i + 1]];
        match endian {
            Endian::Big => u16::from_be_bytes(b),
            Endian::Little => u16::from_le_bytes(b),
        }
    };
    let u32_at = |i: usize| {
        let b = [src[i], src[i + 1], src[i + 2], src[i + 3]];
        match endian {
            Endian::Big => u32::from_be_bytes(b),
            Endian::Little => u32::from_le_bytes(b),
        }
    };
    (0..n_samples)
        .map(|k| match bit_depth {
            8 => widen(u16::from(src[k]), 8),
            16 => u16_at(2 * k),
            10 => {
                let first = if packing == 2 { 20 } else { 22 };
                let datum = u32_at(4 * (k / 3)) >> (first - 10 * (k % 3) as u32) & 0x3ff;
                widen(datum as u16, 10)
            }
            other => panic!("no reference for {other}-bit samples"),
        })
        .collect()
}
