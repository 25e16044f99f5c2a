//! DPX decode checked against the ffmpeg CLI.
//!
//! Both directions: sequences FFmpeg writes decode to the canonical bytes
//! FFmpeg's own decoder gives (as `framemd5` in rgb48le / rgba64le), and
//! files `write_dpx` writes decode in FFmpeg to the same bytes as in playsim.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use md5::{Digest, Md5};
use playsim_core::{DecodedFrame, Decoder, PixelFormat};
use playsim_dpx::{write_dpx, DpxDecoder, Endian, WriteOptions};

use crate::util::ffmpeg;

/// FFmpeg's per-frame md5 of the sequence `pattern`, converted to `pix_fmt`:
/// the hash column (last comma field) of `-f framemd5`.
fn ffmpeg_md5s(pattern: &Path, pix_fmt: &str) -> Result<Vec<String>> {
    let text = ffmpeg(&["-i", &pattern.to_string_lossy(), "-pix_fmt", pix_fmt, "-f", "framemd5", "-"])?;
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit(',').next())
        .map(|h| h.trim().to_owned())
        .collect())
}

/// Our md5 of each file's canonical bytes, with the format they decoded to.
///
/// With `as_8_bit`, the md5 is of the samples narrowed back to 8 bits, after
/// checking that each was widened by `v * 257`: FFmpeg 5.1's swscale does not
/// convert rgb24 to rgb48le exactly (0x00 becomes 0x0006), so 8-bit files are
/// compared in FFmpeg's own rgb24 / rgba instead.
fn our_md5s(files: &[PathBuf], as_8_bit: bool) -> Result<(Vec<String>, PixelFormat)> {
    let mut frame = DecodedFrame::default();
    let mut md5s = Vec::new();
    for file in files {
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        DpxDecoder.decode(&bytes, &mut frame).with_context(|| format!("decoding {}", file.display()))?;
        let md5 = if as_8_bit {
            ensure!(
                frame.data.chunks_exact(2).all(|s| s[0] == s[1]),
                "{}: not widened by 257",
                file.display()
            );
            let narrow: Vec<u8> = frame.data.chunks_exact(2).map(|s| s[1]).collect();
            Md5::digest(&narrow)
        } else {
            Md5::digest(&frame.data)
        };
        md5s.push(format!("{md5:x}"));
    }
    let format = frame.format.context("no frame decoded")?;
    Ok((md5s, format))
}

/// The files of a `f.%03d.dpx` sequence in `dir`, in order.
fn sequence(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<std::io::Result<_>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "dpx"));
    files.sort();
    Ok(files)
}

#[test]
fn ffmpeg_written_sequences_decode_like_ffmpeg() -> Result<()> {
    // 10- and 16-bit, both byte orders, with and without alpha (FFmpeg writes
    // 10-bit RGB only), plus 8-bit; 161 pixels leaves 8- and 16-bit lines
    // unaligned before FFmpeg pads them to whole words.
    // (written as, decoded to, compared in)
    let cases = [
        ("gbrp10be", "rgb48le", "rgb48le"),
        ("gbrp10le", "rgb48le", "rgb48le"),
        ("rgb48be", "rgb48le", "rgb48le"),
        ("rgb48le", "rgb48le", "rgb48le"),
        ("rgba64be", "rgba64le", "rgba64le"),
        ("rgba64le", "rgba64le", "rgba64le"),
        ("rgb24", "rgb48le", "rgb24"),
        ("rgba", "rgba64le", "rgba"),
    ];
    for size in ["320x240", "161x91"] {
        for (pix_fmt, canonical, compared) in cases {
            let dir = tempfile::tempdir()?;
            let pattern = dir.path().join("f.%03d.dpx");
            let source = format!("testsrc2=size={size}:rate=24");
            // testsrc2 has no alpha; give it a ramp so alpha is not constant.
            let filter = "format=rgba64le,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='256*X+64*Y'";
            let mut args = vec!["-f", "lavfi", "-i", &source, "-frames:v", "3"];
            if canonical == "rgba64le" {
                args.extend(["-vf", filter]);
            }
            let target = pattern.to_string_lossy();
            args.extend(["-pix_fmt", pix_fmt, &target]);
            ffmpeg(&args)?;

            let files = sequence(dir.path())?;
            ensure!(files.len() == 3, "ffmpeg wrote {} files for {pix_fmt}", files.len());
            let (ours, format) = our_md5s(&files, compared != canonical)?;
            assert_eq!(format.name(), canonical, "{pix_fmt} {size}");
            let theirs = ffmpeg_md5s(&pattern, compared)?;
            assert_eq!(ours, theirs, "{pix_fmt} {size}: our md5s (left) differ from ffmpeg's (right)");
        }
    }
    Ok(())
}

/// A frame of noise: every 16-bit value, so narrowing has work to do.
fn noisy_frame(width: u32, height: u32, format: PixelFormat, seed: u64) -> DecodedFrame {
    let mut frame = DecodedFrame::default();
    frame.reset(width, height, format);
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for sample in frame.data.chunks_exact_mut(2) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        sample.copy_from_slice(&(state as u16).to_le_bytes());
    }
    frame
}

#[test]
fn write_dpx_files_decode_in_ffmpeg_like_ours() -> Result<()> {
    for bit_depth in [8, 10, 16] {
        for format in [PixelFormat::Rgb48Le, PixelFormat::Rgba64Le] {
            for endian in [Endian::Big, Endian::Little] {
                for (width, height) in [(64, 36), (37, 21)] {
                    let what = format!("{bit_depth}-bit {} {endian:?} {width}x{height}", format.name());
                    let dir = tempfile::tempdir()?;
                    let mut encoded = Vec::new();
                    for i in 0..3 {
                        let frame = noisy_frame(width, height, format, u64::from(bit_depth) * 100 + i);
                        write_dpx(&frame, &WriteOptions { bit_depth, endian }, &mut encoded)?;
                        std::fs::write(dir.path().join(format!("f.{i:03}.dpx")), &encoded)?;
                    }
                    let compared = match (bit_depth, format) {
                        (8, PixelFormat::Rgb48Le) => "rgb24",
                        (8, _) => "rgba",
                        _ => format.name(),
                    };
                    let (ours, decoded) = our_md5s(&sequence(dir.path())?, bit_depth == 8)?;
                    assert_eq!(decoded, format, "{what}");
                    let theirs = ffmpeg_md5s(&dir.path().join("f.%03d.dpx"), compared)?;
                    assert_eq!(ours, theirs, "{what}: our md5s (left) differ from ffmpeg's (right)");
                }
            }
        }
    }
    Ok(())
}
