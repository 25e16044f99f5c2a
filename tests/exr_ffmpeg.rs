//! EXR decode checked against the ffmpeg CLI's own EXR decoder.
//!
//! The fixtures were written by the OpenEXR library, not by playsim. FFmpeg
//! decodes half and float channels to planar f32 (`gbrapf32le`: planes G, B,
//! R, A; `gbrpf32le` without alpha) and, by default, applies no transfer
//! function: `-apply_trc` is unset and `-gamma` is 1, so half samples are only
//! widened to f32. (The tests pass `-gamma 1` anyway, so a changed default
//! cannot slip a curve in.) Once its planes are interleaved R, G, B, A, its
//! bytes must equal playsim's canonical pixels.

use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use md5::{Digest, Md5};
use playsim::core::PixelFormat;
use playsim::exr::{Backend, Compression};

use crate::fixtures::{decode_exr, exr_fixtures, fixtures_dir, hex, Fixture};
use crate::util::ffmpeg;

/// The RGBA half PIZ file the main comparison uses.
const PIZ_RGBA: &str = "exr/piz-scanline-rgba-half.exr";

/// FFmpeg's decode of `path` as raw planes of f32 in `pix_fmt`.
fn ffmpeg_planes(path: &Path, pix_fmt: &str) -> Result<Vec<u8>> {
    // Raw bytes are not text, so they go through a file rather than ffmpeg()'s stdout.
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("planes.raw");
    let (input, output) = (path.to_string_lossy(), out.to_string_lossy());
    ffmpeg(&["-gamma", "1", "-i", &input, "-f", "rawvideo", "-pix_fmt", pix_fmt, "-y", &output])?;
    std::fs::read(&out).with_context(|| format!("reading ffmpeg's output {}", out.display()))
}

/// The hash column of FFmpeg's `framemd5` of the single frame in `path`, in `pix_fmt`.
fn ffmpeg_framemd5(path: &Path, pix_fmt: &str) -> Result<String> {
    let text =
        ffmpeg(&["-gamma", "1", "-i", &path.to_string_lossy(), "-pix_fmt", pix_fmt, "-f", "framemd5", "-"])?;
    let hashes: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit(',').next())
        .map(str::trim)
        .collect();
    match hashes[..] {
        [hash] => Ok(hash.to_owned()),
        _ => bail!("ffmpeg framemd5 of {} gave {} frames:\n{text}", path.display(), hashes.len()),
    }
}

/// Interleaves FFmpeg's planes G, B, R (and A) of `n_pixels` f32 samples into R, G, B (A) per pixel.
fn interleave(planes: &[u8], n_channels: usize, n_pixels: usize) -> Result<Vec<u8>> {
    ensure!(
        planes.len() == n_channels * n_pixels * 4,
        "ffmpeg gave {} bytes, expected {n_channels} planes of {n_pixels} f32 samples",
        planes.len()
    );
    // Canonical channel c comes from FFmpeg plane ORDER[c].
    const ORDER: [usize; 4] = [2, 0, 1, 3];
    let plane = |i: usize| &planes[i * n_pixels * 4..(i + 1) * n_pixels * 4];
    let mut out = Vec::with_capacity(planes.len());
    for px in 0..n_pixels {
        for &p in &ORDER[..n_channels] {
            out.extend_from_slice(&plane(p)[px * 4..px * 4 + 4]);
        }
    }
    Ok(out)
}

/// Whether FFmpeg's DWA sample `theirs` is within 1 % of OpenEXR's `ours`
/// (1e-5 absolute near zero). OpenEXR rounds to half, so a reconstructed value
/// past 65520 becomes infinity where FFmpeg's f32 stays finite.
fn dwa_close(ours: f32, theirs: f32) -> bool {
    const HALF_MAX: f32 = 65504.0;
    if ours.is_infinite() {
        return theirs.is_finite() && theirs.signum() == ours.signum() && theirs.abs() >= 0.99 * HALF_MAX;
    }
    ours.is_finite() && theirs.is_finite() && (ours - theirs).abs() <= 0.01 * ours.abs().max(1e-3)
}

fn md5_hex(bytes: &[u8]) -> String {
    hex(&Md5::digest(bytes))
}

#[test]
fn openexr_written_piz_rgba_decodes_like_ffmpeg() -> Result<()> {
    let fixture = exr_fixtures()?
        .into_iter()
        .find(|f| f.path == PIZ_RGBA && f.layer.is_none())
        .with_context(|| format!("{PIZ_RGBA} is not in fixtures/MANIFEST.tsv"))?;
    let path = fixtures_dir().join(PIZ_RGBA);
    let bytes = fixture.read()?;

    let planes = ffmpeg_planes(&path, "gbrapf32le")?;
    // The raw extraction is the frame FFmpeg hashes.
    let framemd5 = ffmpeg_framemd5(&path, "gbrapf32le")?;
    assert_eq!(
        md5_hex(&planes),
        framemd5,
        "{PIZ_RGBA}: raw planes (left) differ from ffmpeg's framemd5 (right)"
    );

    let mut n_backends = 0;
    for &backend in Backend::available() {
        let (frame, _) = decode_exr(&fixture, &bytes, backend, 1)?;
        assert_eq!(frame.format, Some(PixelFormat::RgbaF32Le), "{PIZ_RGBA} ({backend})");
        let n_pixels = frame.width as usize * frame.height as usize;
        let theirs = md5_hex(&interleave(&planes, 4, n_pixels)?);
        assert_eq!(
            md5_hex(&frame.data),
            theirs,
            "{PIZ_RGBA}: {backend}'s md5 (left) differs from ffmpeg's, interleaved R, G, B, A (right)"
        );
        n_backends += 1;
    }
    ensure!(n_backends > 0, "no EXR backend in this build");
    Ok(())
}

/// How FFmpeg's decode of a fixture compares with OpenEXR's.
#[derive(Debug, PartialEq, Eq)]
enum Expect {
    /// Bit for bit.
    Exact,
    /// DWAA/DWAB: FFmpeg has its own DWA decoder, not a port of OpenEXR's: it
    /// runs the inverse DCT and the YCbCr to RGB step in f32 with 4-digit
    /// coefficients (1.5747, 0.1873, 0.4682, 1.8556), computes the nonlinear to
    /// linear curve with powf instead of OpenEXR's half lookup table, and
    /// returns that f32 without rounding it to the channel's half type. On the
    /// fixtures only a quarter of its R, G, B samples are even representable as
    /// half, and rounded to half about half of them are 1 to 5 half ulps from
    /// OpenEXR's (0.25 % relative at most); a value reconstructed past the
    /// half range is infinity from OpenEXR, a finite f32 from FFmpeg. Alpha,
    /// which DWA stores losslessly (RLE), is bit for bit.
    CloseRgbExactAlpha,
}

/// Every default-layer RGB(A) fixture decodes like FFmpeg, in the part of the
/// data window FFmpeg shows. What cannot be compared, and why:
/// - files with neither R, G, B nor Y channels (`*-z-float-id-uint.exr`):
///   FFmpeg 5.1 refuses them ("Not yet implemented in FFmpeg, patches welcome");
/// - `layer=` rows: FFmpeg's `-layer` wants R, G, B and A of one sample type,
///   and the fixture's `diffuse` layer mixes float R, G, B with half A
///   ("RGB channels not of the same depth").
///
/// FFmpeg's frame is the display window: pixels of the data window outside it
/// are cropped (`piz-tiled-overscan.exr`), display pixels outside the data
/// window are zero (`zip-scanline-datawindow.exr`); the comparison is over
/// their intersection.
#[test]
fn openexr_written_fixtures_decode_like_ffmpeg() -> Result<()> {
    let mut failures = Vec::new();
    let mut n_compared = 0;
    for fixture in exr_fixtures()?.into_iter().filter(|f| f.layer.is_none()) {
        let compression = fixture.exr_compression()?;
        let expect = match compression {
            Compression::Dwaa | Compression::Dwab => Expect::CloseRgbExactAlpha,
            _ => Expect::Exact,
        };
        let bytes = fixture.read()?;
        let mut planes = None;
        let mut compared = false;
        for &backend in Backend::available().iter().filter(|b| b.supports(compression)) {
            match compare_with_ffmpeg(&fixture, &bytes, backend, &expect, &mut planes) {
                Ok(done) => compared |= done,
                Err(e) => failures.push(format!("{} ({backend}): {e:#}", fixture.name())),
            }
        }
        n_compared += usize::from(compared);
    }
    ensure!(failures.is_empty(), "{} decodes differ from ffmpeg's:\n{}", failures.len(), failures.join("\n"));
    // At least the 16 non-DWA RGBA files, 2 float RGB, and the layered,
    // data-window, overscan and decreasing-y files (DWA needs a backend that has it).
    ensure!(n_compared >= 22, "only {n_compared} fixtures compared with ffmpeg");
    Ok(())
}

/// Compares one backend's decode of `fixture` with FFmpeg's (fetched once into
/// `planes`); `Ok(false)` when FFmpeg cannot decode this kind of file.
fn compare_with_ffmpeg(
    fixture: &Fixture,
    bytes: &[u8],
    backend: Backend,
    expect: &Expect,
    planes: &mut Option<Vec<u8>>,
) -> Result<bool> {
    let (frame, info) = decode_exr(fixture, bytes, backend, 1)?;
    let (n_channels, pix_fmt) = match frame.format {
        Some(PixelFormat::RgbaF32Le) => (4, "gbrapf32le"),
        Some(PixelFormat::RgbF32Le) => (3, "gbrpf32le"),
        // No R, G, B: FFmpeg 5.1 does not decode these.
        _ => return Ok(false),
    };
    let (dx0, dy0, dx1, dy1) = info.display_window;
    let (display_w, display_h) = ((dx1 - dx0 + 1) as usize, (dy1 - dy0 + 1) as usize);
    let planes = match planes {
        Some(p) => p,
        None => planes.insert(ffmpeg_planes(&fixtures_dir().join(&fixture.path), pix_fmt)?),
    };
    let theirs = interleave(planes, n_channels, display_w * display_h)?;

    // The intersection of the data and display windows, in image coordinates.
    let (x0, y0, x1, y1) = info.data_window;
    let (ix0, iy0, ix1, iy1) = (x0.max(dx0), y0.max(dy0), x1.min(dx1), y1.min(dy1));
    ensure!(ix0 <= ix1 && iy0 <= iy1, "the data window {:?} is outside the display window", info.data_window);
    let pixel_bytes = n_channels * 4;
    let mut n_close = 0;
    for y in iy0..=iy1 {
        let ours_row = (y - y0) as usize * frame.width as usize;
        let theirs_row = (y - dy0) as usize * display_w;
        for x in ix0..=ix1 {
            let a = (ours_row + (x - x0) as usize) * pixel_bytes;
            let b = (theirs_row + (x - dx0) as usize) * pixel_bytes;
            let (ours, theirs) = (&frame.data[a..a + pixel_bytes], &theirs[b..b + pixel_bytes]);
            if ours == theirs {
                continue;
            }
            let sample = |px: &[u8], c: usize| {
                f32::from_le_bytes([px[c * 4], px[c * 4 + 1], px[c * 4 + 2], px[c * 4 + 3]])
            };
            for c in 0..n_channels {
                let (u, t) = (sample(ours, c), sample(theirs, c));
                let close = *expect == Expect::CloseRgbExactAlpha && c < 3 && dwa_close(u, t);
                if u.to_bits() != t.to_bits() && !close {
                    bail!("pixel ({x}, {y}) channel {c}: ours {u:e}, ffmpeg's {t:e} ({expect:?})");
                }
                n_close += usize::from(u.to_bits() != t.to_bits());
            }
        }
    }
    if *expect == Expect::CloseRgbExactAlpha && n_close == 0 {
        eprintln!(
            "{}: ffmpeg's DWA decode now matches OpenEXR's exactly; Expect::Exact will do",
            fixture.name()
        );
    }
    Ok(true)
}
