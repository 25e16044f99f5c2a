//! Frames of noise for the unit tests, and every layout the writer can make.

use playsim_core::{DecodedFrame, PixelFormat};

use crate::{Chunks, Compression, Endian, Sample, WriteOptions};

/// A frame of `width` x `height` noise for `sample` (8-bit values widened by 257 so they
/// survive a trip through an 8-bit file; floats finite, of every sign and size).
pub fn noisy_frame(width: u32, height: u32, alpha: bool, sample: Sample, seed: u64) -> DecodedFrame {
    let format = match (sample, alpha) {
        (Sample::F32, false) => PixelFormat::RgbF32Le,
        (Sample::F32, true) => PixelFormat::RgbaF32Le,
        (_, false) => PixelFormat::Rgb48Le,
        (_, true) => PixelFormat::Rgba64Le,
    };
    let mut frame = DecodedFrame::default();
    frame.reset(width, height, format);
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    match sample {
        Sample::U8 => frame.data.chunks_exact_mut(2).for_each(|s| s.fill(next() as u8)),
        Sample::U16 => {
            frame.data.chunks_exact_mut(2).for_each(|s| s.copy_from_slice(&(next() as u16).to_le_bytes()))
        }
        Sample::F32 => frame.data.chunks_exact_mut(4).for_each(|s| {
            let v = (next() as i32) as f32 / 65536.0;
            s.copy_from_slice(&v.to_le_bytes())
        }),
    }
    frame
}

/// Every layout the writer makes for `sample`: both byte orders, every compression, the
/// predictor where it applies, strips of one and of seven rows, and two tile sizes.
pub fn every_layout(sample: Sample) -> Vec<WriteOptions> {
    let mut all = Vec::new();
    for endian in [Endian::Little, Endian::Big] {
        for compression in [Compression::None, Compression::Lzw, Compression::Deflate, Compression::PackBits]
        {
            for predictor in [false, true] {
                if predictor && sample == Sample::F32 {
                    continue;
                }
                for chunks in [
                    Chunks::Strips { rows: 1 },
                    Chunks::Strips { rows: 7 },
                    Chunks::Tiles { width: 16, height: 16 },
                    Chunks::Tiles { width: 32, height: 16 },
                ] {
                    all.push(WriteOptions { sample, endian, compression, predictor, chunks });
                }
            }
        }
    }
    all
}
