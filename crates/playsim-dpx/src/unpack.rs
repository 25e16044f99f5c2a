//! The unpack kernels: one line of stored samples to little-endian u16 samples widened by bit
//! replication.
//!
//! A kernel is given a line's stored bytes and its output bytes, `2 × width × channels` of
//! them. The safe loops walk `chunks_exact` of input and output so that the compiler drops the
//! bounds checks and vectorises. The hot path, the 10-bit kernel, hands its whole 8-word blocks
//! to the SSSE3 kernel in `simd.rs` when the CPU has SSSE3 (a byte shuffle the compiler does not
//! find by itself), and does them itself otherwise.

use crate::{simd, Endian};

/// A line kernel: stored bytes in, canonical little-endian u16 samples out.
pub(crate) type Kernel = fn(&[u8], &mut [u8]);

/// The kernel for samples stored at `bit_depth` bits with `packing`, in `endian` byte order.
///
/// Only what a parsed header allows reaches here: 10-bit packing 1 (filled method A) or 2
/// (method B); 8 and 16 bits with any packing, which lay the samples out the same way.
pub(crate) fn kernel(bit_depth: u8, packing: u16, endian: Endian) -> Kernel {
    match (bit_depth, packing, endian) {
        (10, 2, Endian::Big) => unpack10::<true, METHOD_B>,
        (10, 2, Endian::Little) => unpack10::<false, METHOD_B>,
        (10, _, Endian::Big) => unpack10::<true, METHOD_A>,
        (10, _, Endian::Little) => unpack10::<false, METHOD_A>,
        (16, _, Endian::Big) => swap16,
        (16, _, Endian::Little) => copy16,
        _ => widen8,
    }
}

/// Bit position of the first datum's lowest bit in filled method A: samples
/// at bits 31..22, 21..12, 11..2, two pad bits at the bottom.
pub(crate) const METHOD_A: u32 = 22;
/// Filled method B: two pad bits at the top, samples at 29..20, 19..10, 9..0.
pub(crate) const METHOD_B: u32 = 20;

/// 10-bit datums, three to a 32-bit word, each line starting on a new word.
///
/// RGB and RGBA share this: datums run on across words in R, G, B(, A) order,
/// so a line is a run of `width × channels` samples whatever the channels.
/// Whole blocks of eight words (24 samples, 48 bytes out) go to the SSSE3 kernel, or to
/// [`unpack10_blocks`] without it; words left over, and the one or two datums of a line's last
/// part-filled word, are done one at a time.
fn unpack10<const BIG: bool, const SHIFT: u32>(src: &[u8], dst: &mut [u8]) {
    let blocks = match simd::unpack10_blocks::<BIG, SHIFT>(src, dst) {
        0 => unpack10_blocks::<BIG, SHIFT>(src, dst),
        n => n,
    };
    unpack10_tail::<BIG, SHIFT>(
        src.get(blocks * 32..).unwrap_or_default(),
        dst.get_mut(blocks * 48..).unwrap_or_default(),
    );
}

/// The portable kernel of [`unpack10`]'s whole blocks; returns how many it did.
///
/// It takes the eight words in pairs whose six samples are three whole u32s of output;
/// written as small fixed-size loops, the compiler vectorises it with SSE2 (4× faster than a
/// word at a time with byte stores, half as fast as the SSSE3 kernel).
pub(crate) fn unpack10_blocks<const BIG: bool, const SHIFT: u32>(src: &[u8], dst: &mut [u8]) -> usize {
    let mut n_blocks = 0;
    for (w, o) in src.chunks_exact(32).zip(dst.chunks_exact_mut(48)) {
        let mut x = [0u32; 4];
        let mut y = [0u32; 4];
        for ((x, y), w) in x.iter_mut().zip(y.iter_mut()).zip(w.chunks_exact(8)) {
            *x = word::<BIG>(&w[0..4]);
            *y = word::<BIG>(&w[4..8]);
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
        n_blocks += 1;
    }
    n_blocks
}

/// What is left of a line after its whole blocks, one word at a time.
fn unpack10_tail<const BIG: bool, const SHIFT: u32>(src: &[u8], dst: &mut [u8]) {
    // Output first in each zip, so that a word with no whole pixel's room
    // left (the line's part-filled last word) is not taken and dropped.
    let mut words = src.chunks_exact(4);
    let mut samples = dst.chunks_exact_mut(6);
    for (o, w) in (&mut samples).zip(&mut words) {
        o.copy_from_slice(&spread10::<SHIFT>(word::<BIG>(w)).to_le_bytes()[..6]);
    }
    let tail = samples.into_remainder();
    if let Some(w) = words.next() {
        if let Some(bytes) = spread10::<SHIFT>(word::<BIG>(w)).to_le_bytes().get(..tail.len()) {
            tail.copy_from_slice(bytes);
        }
    }
}

/// The 32-bit word in the first four bytes of `w` (callers pass exactly four).
#[inline(always)]
fn word<const BIG: bool>(w: &[u8]) -> u32 {
    let b = [w[0], w[1], w[2], w[3]];
    if BIG {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
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
///
/// Written as a u16 read and write rather than two byte moves, which the compiler
/// vectorises (the byte moves it did not: 10× slower).
fn swap16(src: &[u8], dst: &mut [u8]) {
    for (s, d) in src.chunks_exact(2).zip(dst.chunks_exact_mut(2)) {
        d.copy_from_slice(&u16::from_be_bytes([s[0], s[1]]).to_le_bytes());
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
    use super::*;
    use crate::testutil::{reference_samples, Noise};

    /// Every (bit depth, packing) the header accepts, in both byte orders.
    const VARIANTS: [(u8, u16); 7] = [(10, 1), (10, 2), (8, 0), (8, 1), (16, 0), (16, 1), (16, 2)];
    const ENDIANS: [Endian; 2] = [Endian::Big, Endian::Little];

    /// Line lengths in samples: empty, shorter than a block, every remainder of a block of 24
    /// and of a word of 3, whole blocks, and a 4K RGBA line and a bit.
    fn sample_counts() -> Vec<usize> {
        let mut counts: Vec<usize> = (0..=75).collect();
        counts.extend([95, 96, 97, 239, 240, 241, 4096 * 4 + 7]);
        counts
    }

    /// Stored bytes of a line of `n_samples` at `bit_depth`: whole words for 10 bits.
    fn stored_len(bit_depth: u8, n_samples: usize) -> usize {
        match bit_depth {
            10 => n_samples.div_ceil(3) * 4,
            16 => 2 * n_samples,
            _ => n_samples,
        }
    }

    fn noise_bytes(noise: &mut Noise, len: usize) -> Vec<u8> {
        (0..len).map(|_| noise.next() as u8).collect()
    }

    fn as_samples(bytes: &[u8]) -> Vec<u16> {
        bytes.chunks_exact(2).map(|s| u16::from_le_bytes([s[0], s[1]])).collect()
    }

    #[test]
    fn every_kernel_matches_the_reference_on_noise_at_every_length() {
        let mut noise = Noise::new(8);
        for (bit_depth, packing) in VARIANTS {
            for endian in ENDIANS {
                for n in sample_counts() {
                    // Noise in the pad bits too: a kernel must ignore them.
                    let src = noise_bytes(&mut noise, stored_len(bit_depth, n));
                    // Junk in the output: every byte must be written.
                    let mut dst = noise_bytes(&mut noise, 2 * n);
                    kernel(bit_depth, packing, endian)(&src, &mut dst);
                    let expected = reference_samples(&src, n, bit_depth, packing, endian);
                    assert!(
                        as_samples(&dst) == expected,
                        "{bit_depth}-bit packing {packing} {endian:?}, {n} samples"
                    );
                }
            }
        }
    }

    /// The 10-bit kernel with its blocks done by `blocks`, then the tail, as `unpack10` does.
    fn unpack10_with<const BIG: bool, const SHIFT: u32>(
        blocks: fn(&[u8], &mut [u8]) -> usize,
        src: &[u8],
        dst: &mut [u8],
    ) -> usize {
        let n = blocks(src, dst);
        unpack10_tail::<BIG, SHIFT>(&src[n * 32..], &mut dst[n * 48..]);
        n
    }

    /// Both block kernels, each forced, so that a machine with SSSE3 tests the portable one too.
    fn check_block_kernels<const BIG: bool, const SHIFT: u32>(noise: &mut Noise) {
        let endian = if BIG { Endian::Big } else { Endian::Little };
        let packing = if SHIFT == METHOD_A { 1 } else { 2 };
        let has_ssse3 = simd::HAS_BLOCK_KERNEL;
        for n in sample_counts() {
            let src = noise_bytes(noise, stored_len(10, n));
            let expected = reference_samples(&src, n, 10, packing, endian);
            let whole_blocks = n / 24;
            let mut dst = noise_bytes(noise, 2 * n);
            assert_eq!(
                unpack10_with::<BIG, SHIFT>(unpack10_blocks::<BIG, SHIFT>, &src, &mut dst),
                whole_blocks
            );
            assert!(as_samples(&dst) == expected, "portable, packing {packing} {endian:?}, {n} samples");
            let mut dst = noise_bytes(noise, 2 * n);
            let done = unpack10_with::<BIG, SHIFT>(simd::unpack10_blocks::<BIG, SHIFT>, &src, &mut dst);
            assert_eq!(done, if has_ssse3 { whole_blocks } else { 0 }, "ssse3 kernel's blocks");
            assert!(as_samples(&dst) == expected, "ssse3, packing {packing} {endian:?}, {n} samples");
        }
    }

    #[test]
    fn this_build_has_the_ssse3_kernel() {
        // The workspace builds for x86-64-v2 (.cargo/config.toml): the kernel must be in.
        assert_eq!(
            simd::HAS_BLOCK_KERNEL,
            cfg!(target_arch = "x86_64"),
            "is .cargo/config.toml's target-cpu in effect?"
        );
    }

    #[test]
    fn portable_and_ssse3_block_kernels_match_the_reference() {
        let mut noise = Noise::new(10);
        check_block_kernels::<true, METHOD_A>(&mut noise);
        check_block_kernels::<false, METHOD_A>(&mut noise);
        check_block_kernels::<true, METHOD_B>(&mut noise);
        check_block_kernels::<false, METHOD_B>(&mut noise);
    }

    #[test]
    fn block_kernels_stop_at_the_shorter_of_input_and_output() {
        // A 10-bit RGBA line of 11 pixels is 44 samples: one block, then 20 samples in 7 words.
        let src = vec![0xa5; 60];
        let mut dst = vec![0; 88];
        assert_eq!(unpack10_blocks::<true, METHOD_A>(&src, &mut dst), 1);
        assert_eq!(unpack10_blocks::<true, METHOD_A>(&src[..31], &mut dst), 0);
        assert_eq!(unpack10_blocks::<true, METHOD_A>(&src, &mut dst[..47]), 0);
        let simd_blocks = simd::unpack10_blocks::<true, METHOD_A>(&src, &mut dst[..47]);
        assert_eq!(simd_blocks, 0);
    }
}
