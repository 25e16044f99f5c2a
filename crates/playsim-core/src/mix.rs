//! Repeatable pseudo-randomness: SplitMix64, and the shuffle that random play orders use.

/// SplitMix64's output function: a 64-bit mix in which every input bit flips about half
/// the output bits. `splitmix64(seed + i·0x9e37_79b9_7f4a_7c15)` for i = 0, 1, … is
/// SplitMix64's sequence.
#[inline]
pub fn splitmix64(z: u64) -> u64 {
    let z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Shuffles `items` in place: Fisher-Yates over SplitMix64's sequence from `seed`, so the
/// same seed gives the same order on every machine (`play --order random`, `frametest -m`).
pub fn shuffle(items: &mut [u64], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let r = splitmix64(state);
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let j = (r % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_gives_the_reference_sequence() {
        // SplitMix64 seeded with 0: the first outputs of the reference implementation.
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(0x9e37_79b9_7f4a_7c15), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn a_seed_gives_one_permutation() {
        let mut a: Vec<u64> = (0..100).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<u64>>());
        let mut c: Vec<u64> = (0..100).collect();
        shuffle(&mut c, 8);
        assert_ne!(a, c);
    }
}
