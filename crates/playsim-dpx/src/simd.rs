//! The SSSE3 kernel of the 10-bit unpack: the one place in this crate that uses `std::arch`.
//!
//! Why it exists: the 10-bit unpack is a byte shuffle at heart. Each 16-bit output sample is
//! two adjacent input bytes, shifted and masked, and bit-replicated. SSE2 (all that x86_64
//! guarantees) has no byte shuffle, and LLVM does not find one in scalar code even where SSSE3
//! is enabled; the safe kernels in `unpack.rs` are compute-bound at about half of memcpy's
//! bandwidth. With `pshufb` the loop is six instructions per 16 output bytes and the unpack runs
//! as fast as memory lets it (`benches/dpx_decode.rs`, 4K DCI 10-bit, one core: 7.3 ms → 3.4 ms
//! a frame, when a memcpy of the decoded frame's size took 4.8 ms).
//!
//! The kernel is safe code on the `safe_arch` crate, whose SSSE3 operations exist only where
//! SSSE3 is enabled at compile time, so the crate keeps `#![forbid(unsafe_code)]`. The
//! workspace's `.cargo/config.toml` builds for x86-64-v2 (every x86-64 CPU since 2009); a build
//! without SSSE3 (another architecture, or an embedder's own flags) gets the portable kernel:
//! [`unpack10_blocks`] then does nothing and says so. (Run-time detection would need an
//! `unsafe` call into a `#[target_feature]` function, and `unsafe` is for FFI only here.)

/// Unpacks every whole block of 8 words (32 bytes in, 48 bytes out) of a line of 10-bit
/// datums, as `unpack::unpack10` does, and returns the number of blocks done: all of them, or
/// 0 when the CPU has no SSSE3 and the caller must use the portable kernel.
///
/// `BIG` is the file's byte order, `SHIFT` the bit position of a word's first datum (22 for
/// filled method A, 20 for method B).
pub(crate) fn unpack10_blocks<const BIG: bool, const SHIFT: u32>(src: &[u8], dst: &mut [u8]) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "ssse3"))]
    {
        x86::unpack10_blocks::<BIG, SHIFT>(src, dst)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "ssse3")))]
    {
        let _ = (src, dst);
        0
    }
}

/// Whether [`unpack10_blocks`] has its SSSE3 kernel in this build.
#[cfg(test)]
pub(crate) const HAS_BLOCK_KERNEL: bool = cfg!(all(target_arch = "x86_64", target_feature = "ssse3"));

#[cfg(all(target_arch = "x86_64", target_feature = "ssse3"))]
mod x86 {
    use safe_arch::{
        bitand_m128i, bitor_m128i, m128i, mul_i16_keep_low_m128i, set_splat_i16_m128i, shr_imm_u16_m128i,
        shuffle_av_i8z_all_m128i,
    };

    /// See [`super::unpack10_blocks`].
    ///
    /// A block's 24 samples are three output vectors of eight. Vector `q` takes its samples from
    /// the 16 input bytes at `8q`: `pshufb` puts the two bytes holding each sample into its
    /// 16-bit lane (most significant first, whatever the file's byte order), a multiply by a
    /// power of two moves the datum to bits 15..6 (the shift differs from lane to lane: a
    /// word's datums sit 10 bits apart, its bytes 8), and `t | t >> 10` replicates the top bits
    /// into the bottom six. The bits below the datum are cleared by the mask before the
    /// replication; the shift by 10 drops them by itself.
    pub(super) fn unpack10_blocks<const BIG: bool, const SHIFT: u32>(src: &[u8], dst: &mut [u8]) -> usize {
        let shuffles = const { shuffles(BIG) };
        let multipliers = const { multipliers(SHIFT) };
        let shuffle = shuffles.map(m128i::from);
        let multiply = multipliers.map(m128i::from);
        let keep = set_splat_i16_m128i(0xffc0_u16 as i16);
        let mut n_blocks = 0;
        for (block, out) in src.chunks_exact(32).zip(dst.chunks_exact_mut(48)) {
            for (q, out) in out.chunks_exact_mut(16).enumerate() {
                let (Some(window), Some(shuffle), Some(multiply)) =
                    (block.get(8 * q..8 * q + 16), shuffle.get(q), multiply.get(q))
                else {
                    return n_blocks;
                };
                let Ok(window) = <[u8; 16]>::try_from(window) else { return n_blocks };
                let pairs = shuffle_av_i8z_all_m128i(m128i::from(window), *shuffle);
                let t = mul_i16_keep_low_m128i(pairs, *multiply);
                let t = bitor_m128i(bitand_m128i(t, keep), shr_imm_u16_m128i::<10>(t));
                out.copy_from_slice(&<[u8; 16]>::from(t));
            }
            n_blocks += 1;
        }
        n_blocks
    }

    /// The `pshufb` controls of a block's three output vectors: lane `l` of vector `q` holds
    /// sample `j = 8q + l`, datum `k = j % 3` of word `j / 3`, found in the word's bytes `k`
    /// and `k + 1` counted from the most significant. The control picks them, low byte first,
    /// from the 16-byte window at `8q`; in a little-endian file the word's bytes are reversed.
    const fn shuffles(big: bool) -> [[i8; 16]; 3] {
        let mut controls = [[0i8; 16]; 3];
        let mut q = 0;
        while q < 3 {
            let mut l = 0;
            while l < 8 {
                let j = 8 * q + l;
                let (word, k) = (j / 3, j % 3);
                let (high, low) = if big { (k, k + 1) } else { (3 - k, 2 - k) };
                controls[q][2 * l] = (4 * word + low - 8 * q) as i8;
                controls[q][2 * l + 1] = (4 * word + high - 8 * q) as i8;
                l += 1;
            }
            q += 1;
        }
        controls
    }

    /// The multiplier of each lane: the pair of bytes holding datum `k` is word bits
    /// `31 - 8k ..= 16 - 8k`, whose datum's lowest bit is `SHIFT - 10k`, i.e. bit
    /// `SHIFT - 16 - 2k` of the pair; moving it to bit 6 is a shift left by `22 - SHIFT + 2k`.
    const fn multipliers(shift: u32) -> [[i16; 8]; 3] {
        let mut m = [[0i16; 8]; 3];
        let mut q = 0;
        while q < 3 {
            let mut l = 0;
            while l < 8 {
                let k = ((8 * q + l) % 3) as u32;
                m[q][l] = 1 << (22 - shift + 2 * k);
                l += 1;
            }
            q += 1;
        }
        m
    }
}
