//! The process's malloc settings for code that allocates and frees the same large scratch
//! blocks for every frame, where playsim cannot pool them: the EXR decoders, and the SMB
//! client, whose crate returns each READ's data in a fresh buffer. The scratch stays in
//! malloc's heap from one frame to the next, instead of going back to the kernel after every
//! frame and being faulted in again for the next one.
//!
//! OpenEXR 3.1 makes an `InputFile` per file, with its line buffers and its compressor's
//! buffers (about 1 MB each for 4K PIZ), and its Huffman decoder allocates tables for
//! each chunk; the `exr` crate allocates each block's decompressed data and working
//! buffers; `smb2` allocates a 1 MiB message, a response and a result for each READ.
//! glibc serves blocks over its mmap threshold (128 KiB at start) with an mmap of
//! their own, returned at `free`; its dynamic rule then raises the threshold to the largest
//! such block freed and trims a heap whose free top passes twice that, with
//! `MADV_DONTNEED`. A frame's scratch is several such blocks alive at once, more than twice
//! the largest, so every frame's was trimmed and faulted in anew: 4K PIZ on one decode
//! thread took 560 minor faults a frame in steady state through OpenEXR, and 13,800
//! through `exr` (3.4 s of system time in 36 frames, against 0.8 s with these settings,
//! which bring both to under 10 a frame); `smb://` took 662k minor faults a GB against
//! `smbclient`'s 98k.
//!
//! [`keep_scratch_in_heap`] sets both thresholds once, before the first such frame, at the
//! values the dynamic rule can reach at most (mmap threshold 32 MiB, glibc's
//! `DEFAULT_MMAP_THRESHOLD_MAX`; trim threshold twice that): blocks below 32 MiB come from
//! the heaps and stay there for the next frame. Frame buffers (40 MB encoded and 141 MB
//! decoded at 4K) are above it and keep their own mappings, in playsim's pools. The cost
//! is that each of malloc's arenas keeps up to 64 MiB of free memory instead of giving it
//! back. The settings are process-wide, so they are made only where such scratch is
//! allocated: once an EXR frame is decoded or an SMB share connected (DPX decodes into
//! pooled buffers only, and FFmpeg pools its own). This is playsim-core's one `unsafe`
//! module: two `mallopt` calls into the C library, each with a `// SAFETY:` line. On other
//! C libraries it does nothing.

/// Blocks from this size up get an mmap of their own; smaller ones come from malloc's heaps.
/// glibc's own ceiling for its dynamic threshold (`DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit),
/// and the largest value `mallopt` accepts there.
pub const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;

/// Free memory at the top of a heap is given back to the kernel only past this: twice the
/// mmap threshold, as glibc's dynamic rule sets it.
pub const TRIM_THRESHOLD_BYTES: i32 = 2 * MMAP_THRESHOLD_BYTES;

/// Sets the process's malloc thresholds (see the module's comment), once;
/// later calls only return the first call's answer. Returns whether glibc took both.
pub fn keep_scratch_in_heap() -> bool {
    static TAKEN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TAKEN.get_or_init(set_thresholds)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds() -> bool {
    // SAFETY: mallopt takes two integers and no pointer; it changes malloc's tuning
    // parameters under the main arena's lock, so it may run while other threads allocate.
    // 32 MiB is within the range glibc accepts for M_MMAP_THRESHOLD on 64-bit.
    let mmap = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) };
    // SAFETY: as above; M_TRIM_THRESHOLD accepts any non-negative value.
    let trim = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) };
    mmap == 1 && trim == 1
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds() -> bool {
    false
}

#[cfg(test)]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// This thread's minor page faults, field 10 of `/proc/thread-self/stat` (counted after
    /// the command name's closing parenthesis, since the name may hold spaces).
    fn thread_minor_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let (_, rest) = stat.rsplit_once(')').unwrap();
        // `rest` starts with field 3 (state).
        rest.split_whitespace().nth(10 - 3).unwrap().parse().unwrap()
    }

    #[test]
    fn a_decoders_scratch_is_faulted_in_once() {
        assert!(keep_scratch_in_heap());
        assert!(keep_scratch_in_heap(), "a second call answers as the first");
        // On a thread of its own (its own arena, its own fault count), the pattern of a 4K
        // PIZ decode through OpenEXR: a few blocks of about 1 MiB (line buffers, the PIZ
        // compressor's buffers, Huffman tables) alive at once, written, freed, and the same
        // again for the next frame. Every page is written once per frame, so a block that
        // was unmapped or trimmed faults all its pages again. With glibc's dynamic rule the
        // threshold settles at the largest block (1.1 MB) and the heap's free top (5.9 MB)
        // is trimmed at every frame's end.
        let faults = std::thread::spawn(|| {
            let sizes = [1 << 20, 1 << 20, 1 << 20, 1 << 20, 1_126_400, 768 << 10];
            let frame = || {
                let blocks: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![1u8; n]).collect();
                std::hint::black_box(&blocks);
            };
            frame();
            let before = thread_minor_faults();
            for _ in 0..20 {
                frame();
            }
            thread_minor_faults() - before
        })
        .join()
        .unwrap();
        // 20 frames of 5.9 MB are 28,900 pages; a few faults for malloc's own bookkeeping.
        assert!(faults < 200, "{faults} minor faults in 20 frames after the first");
    }
}
