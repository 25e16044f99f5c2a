//! TIFF sequences checked against independent tools: frames the ffmpeg CLI writes, and
//! every other layout made from them by libtiff's `tiffcp`.
//!
//! FFmpeg writes only little-endian strips, and its decoder reads tiles only in DNG files
//! and (5.1) no float TIFF. So libtiff, a second writer and reader, makes the big-endian,
//! tiled, predicted and float files: from FFmpeg's own files, whose FFmpeg decode is then
//! the reference for every variant, and for float from a file of known pixels. Canonical
//! pixels are DPX's: 16-bit files compare with FFmpeg's `framemd5` in rgb48le / rgba64le;
//! 8-bit ones are widened by `v * 257` (FFmpeg 5.1's swscale does not convert rgb24 to
//! rgb48le exactly, see `dpx_ffmpeg.rs`), so they compare with FFmpeg's rgb24 / rgba
//! pixels widened the same way.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use md5::{Digest, Md5};
use playsim_core::{DecodedFrame, PixelFormat};
use playsim_tiff::{write_tiff, Sample, TiffDecoder, WriteOptions};

use crate::util::{ffmpeg, generate, playsim, run, SMALL_PRESET};

/// Frame size: odd, so rows and strips end in partial tiles and odd byte counts.
const SIZE: (u32, u32) = (161, 91);

/// How FFmpeg writes each case: (pixel format written, canonical format, format compared in).
const CASES: [(&str, &str, &str); 4] = [
    ("rgb24", "rgb48le", "rgb24"),
    ("rgba", "rgba64le", "rgba"),
    ("rgb48le", "rgb48le", "rgb48le"),
    ("rgba64le", "rgba64le", "rgba64le"),
];

/// FFmpeg's TIFF compressions (`-compression_algo`).
const FFMPEG_COMPRESSIONS: [&str; 4] = ["raw", "packbits", "lzw", "deflate"];

/// Writes `n` frames of test pattern as `dir/frame.%07d.tif` from frame `start`, in
/// `pix_fmt` with FFmpeg's `compression`; alpha, where there is one, is a ramp.
fn ffmpeg_tiff(dir: &Path, pix_fmt: &str, compression: &str, start: u32, n: u32) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let source = format!("testsrc2=size={}x{}:rate=24", SIZE.0, SIZE.1);
    // testsrc2 rounds its size down to even numbers: scale to the odd size.
    let scale = format!("scale={}:{}", SIZE.0, SIZE.1);
    let alpha = format!("{scale},format=rgba64le,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='256*X+64*Y'");
    let filter = if pix_fmt.starts_with("rgba") { alpha } else { scale };
    let (n, start) = (n.to_string(), start.to_string());
    let mut args = vec!["-f", "lavfi", "-i", &source, "-frames:v", &n, "-vf", &filter];
    let pattern = pattern(dir);
    args.extend(["-pix_fmt", pix_fmt, "-c:v", "tiff", "-compression_algo", compression]);
    args.extend(["-start_number", &start, "-y", &pattern]);
    ffmpeg(&args).map(drop)
}

fn pattern(dir: &Path) -> String {
    dir.join("frame.%07d.tif").to_string_lossy().into_owned()
}

/// The md5 of each frame of `input` (a file or a pattern) as FFmpeg decodes it, in
/// canonical pixels: FFmpeg's own `framemd5` for 16-bit `compared` formats, and its 8-bit
/// pixels widened by `v * 257` otherwise.
fn ffmpeg_canonical_md5s(input: &str, compared: &str, scratch: &Path) -> Result<Vec<String>> {
    ffmpeg_canonical_md5s_of(input, compared, SIZE, scratch)
}

/// [`ffmpeg_canonical_md5s`] of frames of `size`.
fn ffmpeg_canonical_md5s_of(
    input: &str,
    compared: &str,
    size: (u32, u32),
    scratch: &Path,
) -> Result<Vec<String>> {
    if compared.ends_with("le") {
        let text = ffmpeg(&["-i", input, "-pix_fmt", compared, "-f", "framemd5", "-"])?;
        return Ok(text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.rsplit(',').next())
            .map(|h| h.trim().to_owned())
            .collect());
    }
    let raw = scratch.join("frames.raw");
    ffmpeg(&["-i", input, "-f", "rawvideo", "-pix_fmt", compared, "-y", &raw.to_string_lossy()])?;
    let bytes = std::fs::read(&raw)?;
    let channels = if compared == "rgba" { 4 } else { 3 };
    let frame_len = (size.0 * size.1) as usize * channels;
    ensure!(bytes.len() % frame_len == 0, "ffmpeg wrote {} bytes of {compared}", bytes.len());
    Ok(bytes
        .chunks_exact(frame_len)
        .map(|frame| {
            let widened: Vec<u8> = frame.iter().flat_map(|&v| [v, v]).collect();
            format!("{:x}", Md5::digest(&widened))
        })
        .collect())
}

/// One line of `playsim decode --md5`.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    frame: String,
    format: String,
    size: String,
    md5: String,
}

/// `playsim decode DIR --md5`, which must succeed, line by line.
fn playsim_md5s(dir: &Path) -> Result<Vec<Decoded>> {
    let done = run(playsim().arg("decode").arg(dir).arg("--md5"))?;
    done.ensure_code(0).with_context(|| format!("decode of {}", dir.display()))?;
    done.stdout
        .lines()
        .map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [frame, format, size, md5] => Ok(Decoded {
                frame: frame.to_owned(),
                format: format.to_owned(),
                size: size.to_owned(),
                md5: md5.to_owned(),
            }),
            _ => anyhow::bail!("unexpected line from playsim decode: {line:?}"),
        })
        .collect()
}

#[test]
fn ffmpeg_written_tiff_decodes_to_ffmpegs_pixels() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let mut failures = Vec::new();
    for (pix_fmt, canonical, compared) in CASES {
        // Each compression writes two frames of one sequence: 1-2 raw, 3-4 packbits, ...
        let dir = tmp.path().join(pix_fmt);
        for (i, compression) in FFMPEG_COMPRESSIONS.iter().enumerate() {
            ffmpeg_tiff(&dir, pix_fmt, compression, 1 + 2 * i as u32, 2)?;
        }
        let expected = ffmpeg_canonical_md5s(&pattern(&dir), compared, tmp.path())?;
        ensure!(expected.len() == 8, "{pix_fmt}: ffmpeg decoded {} frames", expected.len());
        let ours = playsim_md5s(&dir)?;
        let size = format!("{}x{}", SIZE.0, SIZE.1);
        for (i, (line, md5)) in ours.iter().zip(&expected).enumerate() {
            let compression = FFMPEG_COMPRESSIONS[i / 2];
            let want = Decoded {
                frame: (i + 1).to_string(),
                format: canonical.to_owned(),
                size: size.clone(),
                md5: md5.clone(),
            };
            if *line != want {
                failures.push(format!("{pix_fmt} {compression}: got {line:?}, ffmpeg gives {want:?}"));
            }
        }
        ensure!(ours.len() == 8, "{pix_fmt}: playsim decoded {} frames", ours.len());
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// Runs libtiff's `tiffcp` with `args`.
fn tiffcp(args: &[&str]) -> Result<()> {
    crate::util::run_tool("tiffcp", "libtiff's tiffcp (package libtiff-tools)", args).map(drop)
}

/// A layout tiffcp writes: its options, and what the decoder must find in the file.
struct Variant {
    args: Vec<&'static str>,
    big_endian: bool,
    tiled: bool,
    compression: u16,
    predictor: u16,
}

/// Every layout for integer samples: both byte orders, strips and tiles, each compression,
/// with and without the horizontal predictor.
fn integer_variants() -> Vec<Variant> {
    let mut all = Vec::new();
    for (order, big_endian) in [("-L", false), ("-B", true)] {
        for (chunks, tiled) in [(&["-s", "-r", "5"][..], false), (&["-t", "-w", "16", "-l", "32"][..], true)]
        {
            for (compression, tag, predictor) in [
                ("none", 1, 1),
                ("packbits", 32773, 1),
                ("lzw", 5, 1),
                ("lzw:2", 5, 2),
                ("zip", 8, 1),
                ("zip:2", 8, 2),
            ] {
                let args = [order, "-c", compression].into_iter().chain(chunks.iter().copied()).collect();
                all.push(Variant { args, big_endian, tiled, compression: tag, predictor });
            }
        }
    }
    all
}

/// Copies `source` to `target` in `variant`'s layout and checks the decoder reads that
/// layout there (so a tiffcp that ignored an option would show).
fn make_variant(source: &Path, target: &Path, variant: &Variant) -> Result<()> {
    let (source_s, target_s) = (source.to_string_lossy(), target.to_string_lossy());
    let mut args = variant.args.clone();
    args.extend([&*source_s, &*target_s]);
    tiffcp(&args)?;
    let bytes = std::fs::read(target)?;
    let info = TiffDecoder
        .decode_tiff(&bytes, &mut DecodedFrame::default())
        .with_context(|| format!("decoding {} (tiffcp {})", target.display(), variant.args.join(" ")))?;
    ensure!(
        (info.big_endian, info.tiled, info.compression, info.predictor)
            == (variant.big_endian, variant.tiled, variant.compression, variant.predictor),
        "tiffcp {} wrote {info:?}",
        variant.args.join(" ")
    );
    Ok(())
}

#[test]
fn libtiff_layouts_of_ffmpegs_frames_decode_to_ffmpegs_pixels() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let variants = integer_variants();
    let mut failures = Vec::new();
    for (pix_fmt, canonical, compared) in CASES {
        let base_dir = tmp.path().join(format!("{pix_fmt}-base"));
        ffmpeg_tiff(&base_dir, pix_fmt, "raw", 1, 1)?;
        let base = base_dir.join("frame.0000001.tif");
        let expected = ffmpeg_canonical_md5s(&base.to_string_lossy(), compared, tmp.path())?;
        ensure!(expected.len() == 1, "{pix_fmt}: ffmpeg decoded {expected:?}");

        // Every layout is one frame of a sequence, played by one `playsim decode`.
        let dir = tmp.path().join(pix_fmt);
        std::fs::create_dir(&dir)?;
        let mut strips = Vec::new();
        for (i, variant) in variants.iter().enumerate() {
            let target = dir.join(format!("frame.{:07}.tif", i + 1));
            make_variant(&base, &target, variant)?;
            if !variant.tiled {
                strips.push(target);
            }
        }
        for (i, line) in playsim_md5s(&dir)?.iter().enumerate() {
            if (line.format.as_str(), line.md5.as_str()) != (canonical, expected[0].as_str()) {
                let args = variants[i].args.join(" ");
                failures.push(format!("{pix_fmt} tiffcp {args}: got {line:?}, ffmpeg gives {}", expected[0]));
            }
        }
        // FFmpeg reads the strip layouts itself (big-endian and predicted ones too): a second
        // reference, independent of tiffcp's reading of the base.
        for strip in &strips {
            let theirs = ffmpeg_canonical_md5s(&strip.to_string_lossy(), compared, tmp.path())?;
            if theirs != expected {
                failures.push(format!("{pix_fmt}: ffmpeg reads {} as {theirs:?}", strip.display()));
            }
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// A float frame of every kind of value: tiny, huge, negative, zero, and infinities.
fn float_frame(alpha: bool) -> DecodedFrame {
    let mut frame = DecodedFrame::default();
    let format = if alpha { PixelFormat::RgbaF32Le } else { PixelFormat::RgbF32Le };
    frame.reset(SIZE.0, SIZE.1, format);
    for (i, sample) in frame.data.chunks_exact_mut(4).enumerate() {
        let v = match i % 97 {
            0 => f32::INFINITY,
            1 => f32::NEG_INFINITY,
            2 => 0.0,
            3 => -0.0,
            k => ((i * 7919 % 10007) as f32 - 5000.0) * 10f32.powi(k as i32 % 13 - 6),
        };
        sample.copy_from_slice(&v.to_le_bytes());
    }
    frame
}

#[test]
fn libtiff_float_layouts_decode_to_the_pixels_written() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let mut failures = Vec::new();
    for alpha in [false, true] {
        let frame = float_frame(alpha);
        let mut file = Vec::new();
        write_tiff(&frame, &WriteOptions { sample: Sample::F32, ..WriteOptions::default() }, &mut file)?;
        let base = tmp.path().join(format!("base-{alpha}.tif"));
        std::fs::write(&base, &file)?;
        let expected = format!("{:x}", Md5::digest(&frame.data));

        let dir = tmp.path().join(format!("float-{alpha}"));
        std::fs::create_dir(&dir)?;
        let mut variants: Vec<(PathBuf, Vec<&str>)> = Vec::new();
        for order in ["-L", "-B"] {
            for chunks in [&["-s", "-r", "7"][..], &["-t", "-w", "32", "-l", "16"][..]] {
                // zip:3 is the floating-point predictor (TIFF Technical Note 3).
                for compression in ["none", "lzw", "zip", "zip:3", "packbits"] {
                    let target = dir.join(format!("frame.{:07}.tif", variants.len() + 1));
                    let mut args = vec![order, "-c", compression];
                    args.extend(chunks);
                    let (base_s, target_s) = (base.to_string_lossy(), target.to_string_lossy());
                    tiffcp(&[&args[..], &[&*base_s, &*target_s]].concat())?;
                    variants.push((target, args));
                }
            }
        }
        let format = if alpha { "rgbaf32le" } else { "rgbf32le" };
        for (line, (path, args)) in playsim_md5s(&dir)?.iter().zip(&variants) {
            // libtiff's own reading of the variant, copied back to plain little-endian strips.
            let back = tmp.path().join("back.tif");
            tiffcp(&["-L", "-c", "none", "-s", &path.to_string_lossy(), &back.to_string_lossy()])?;
            let mut theirs = DecodedFrame::default();
            TiffDecoder.decode_tiff(&std::fs::read(&back)?, &mut theirs)?;
            let theirs = format!("{:x}", Md5::digest(&theirs.data));
            // libtiff 4.5 does not write big-endian files with the floating-point predictor
            // faithfully on a little-endian machine: reading its file back, libtiff itself
            // gets other pixels than it was given. There the reference is libtiff's reading.
            let libtiff_writes_it_faithfully = !(args.contains(&"-B") && args.contains(&"zip:3"));
            let want = if libtiff_writes_it_faithfully { &expected } else { &theirs };
            if (line.format.as_str(), line.md5.as_str()) != (format, want.as_str()) || theirs != *want {
                failures.push(format!(
                    "{} (tiffcp {}): got {line:?}, wrote {format} {expected}, libtiff reads {theirs}",
                    path.display(),
                    args.join(" ")
                ));
            }
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

#[test]
fn a_damaged_tiff_frame_is_reported_with_its_file_and_frame() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    ffmpeg_tiff(tmp.path(), "rgb48le", "lzw", 1, 3)?;
    let damaged = tmp.path().join("frame.0000002.tif");
    let bytes = std::fs::read(&damaged)?;
    // Half a file: its directory or its pixels are lost.
    std::fs::write(&damaged, &bytes[..bytes.len() / 2])?;
    let done = run(playsim().arg("decode").arg(tmp.path()).arg("--md5"))?;
    done.ensure_code(1)?;
    ensure!(done.stdout.lines().count() == 2, "the other two frames decode:\n{done}");
    ensure!(
        done.stderr.contains("frame 2") && done.stderr.contains(&*damaged.to_string_lossy()),
        "the error names the frame and its file:\n{done}"
    );
    Ok(())
}

#[test]
fn generated_tiff_decodes_in_ffmpeg_like_in_playsim() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let (w, h) = SMALL_PRESET.split_once('x').context("preset is WxH")?;
    let size = (w.parse()?, h.parse()?);
    // (flags, canonical format, compared in)
    let cases: [(&[&str], &str, &str); 2] = [
        (&["--format", "tiff"], "rgb48le", "rgb48le"),
        (&["--format", "tiff", "--bit-depth", "8", "--endian", "big", "--alpha"], "rgba64le", "rgba"),
    ];
    for (i, (flags, canonical, compared)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(i.to_string());
        generate(&dir, SMALL_PRESET, 3, flags)?;
        let expected = ffmpeg_canonical_md5s_of(&pattern(&dir), compared, size, tmp.path())?;
        let ours = playsim_md5s(&dir)?;
        let got: Vec<(&str, &str)> = ours.iter().map(|d| (d.format.as_str(), d.md5.as_str())).collect();
        let want: Vec<(&str, &str)> = expected.iter().map(|m| (canonical, m.as_str())).collect();
        ensure!(got == want, "{flags:?}: playsim decodes {got:?}, ffmpeg {want:?}");
    }
    Ok(())
}
