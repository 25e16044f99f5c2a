//! The committed fixtures decode to the hashes their MANIFEST records.
//!
//! `fixtures/MANIFEST.tsv` lists each file with its sha256 and the md5 of its
//! canonical pixels as the encoder's own decoder gives them: FFmpeg for DPX,
//! the OpenEXR library for EXR (`fixtures/make_exr_fixtures.py`). These checks
//! need neither at run time. EXR files are checked with every backend in the
//! build that supports their compression, and the backends against each other.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use md5::{Digest, Md5};
use playsim::core::{DecodedFrame, Decoder};
use playsim::dpx::DpxDecoder;
use playsim::exr::{Backend, Compression, ErrorKind, ExrDecoder, ExrInfo, ExrOptions};
use sha2::Sha256;

/// One MANIFEST row.
pub(crate) struct Fixture {
    /// Relative to `fixtures/`.
    pub path: String,
    pub sha256: String,
    /// The md5 of the canonical pixels.
    pub pixels_md5: String,
    /// The EXR layer the md5 is of (`layer=NAME`); `None` for the default layer.
    pub layer: Option<String>,
}

impl Fixture {
    /// Reads the file, checking it is the one the MANIFEST hashed.
    pub fn read(&self) -> Result<Vec<u8>> {
        let bytes = std::fs::read(fixtures_dir().join(&self.path))
            .with_context(|| format!("reading fixtures/{}", self.path))?;
        ensure!(
            hex(&Sha256::digest(&bytes)) == self.sha256,
            "fixtures/{} changed: its sha256 is not {}",
            self.path,
            self.sha256
        );
        Ok(bytes)
    }

    /// `path`, with ` layer=NAME` when the row is about a layer.
    pub fn name(&self) -> String {
        match &self.layer {
            Some(layer) => format!("{} layer={layer}", self.path),
            None => self.path.clone(),
        }
    }

    pub fn is_exr(&self) -> bool {
        self.path.ends_with(".exr")
    }

    /// The compression an EXR fixture's name starts with (`piz-scanline-...`);
    /// the decoded header is checked against it, so a misnamed file shows.
    pub fn exr_compression(&self) -> Result<Compression> {
        let file = self.path.rsplit('/').next().unwrap_or(&self.path);
        let method = file.split('-').next().unwrap_or("");
        method.parse().map_err(|e| {
            anyhow::anyhow!("fixtures/{}: name does not start with a compression: {e}", self.path)
        })
    }
}

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The rows of `fixtures/MANIFEST.tsv`: path, sha256, pixels md5 and an optional `layer=NAME`.
pub(crate) fn manifest() -> Result<Vec<Fixture>> {
    let text = std::fs::read_to_string(fixtures_dir().join("MANIFEST.tsv"))
        .context("reading fixtures/MANIFEST.tsv")?;
    let mut fixtures = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let (path, sha256, pixels_md5, layer) = match fields[..] {
            [path, sha256, md5] => (path, sha256, md5, None),
            [path, sha256, md5, option] => match option.strip_prefix("layer=") {
                Some(layer) if !layer.is_empty() => (path, sha256, md5, Some(layer.to_owned())),
                _ => bail!("MANIFEST line has an unknown 4th field (expected layer=NAME): {line}"),
            },
            _ => bail!("MANIFEST line has {} fields, expected 3 or 4: {line}", fields.len()),
        };
        ensure!(
            layer.is_none() || path.ends_with(".exr"),
            "MANIFEST line gives a layer for a file that is not EXR: {line}"
        );
        fixtures.push(Fixture {
            path: path.into(),
            sha256: sha256.into(),
            pixels_md5: pixels_md5.into(),
            layer,
        });
    }
    Ok(fixtures)
}

/// The EXR rows of the MANIFEST; fails when there are suspiciously few.
pub(crate) fn exr_fixtures() -> Result<Vec<Fixture>> {
    let exr: Vec<Fixture> = manifest()?.into_iter().filter(Fixture::is_exr).collect();
    // A scanline and a tiled file per compression, at least.
    ensure!(exr.len() >= 2 * Compression::ALL.len(), "only {} EXR fixtures listed", exr.len());
    Ok(exr)
}

/// Decodes an EXR fixture's `bytes` with `backend`.
pub(crate) fn decode_exr(
    fixture: &Fixture,
    bytes: &[u8],
    backend: Backend,
    codec_threads: u32,
) -> Result<(DecodedFrame, ExrInfo)> {
    let decoder = ExrDecoder::new(ExrOptions {
        codec_threads,
        layer: fixture.layer.clone(),
        ..ExrOptions::new(backend)
    });
    let mut frame = DecodedFrame::default();
    let info = decoder
        .decode_exr(bytes, &mut frame)
        .with_context(|| format!("decoding fixtures/{} with {backend}", fixture.name()))?;
    Ok((frame, info))
}

#[test]
fn every_fixture_matches_its_manifest() -> Result<()> {
    let mut checked = 0;
    let mut frame = DecodedFrame::default();
    for fixture in manifest()? {
        let bytes = fixture.read()?;
        if fixture.is_exr() {
            // Pixels checked per backend below.
            continue;
        }
        ensure!(fixture.path.ends_with(".dpx"), "fixtures/{}: no check for this kind of file", fixture.path);
        let path = &fixture.path;
        DpxDecoder.decode(&bytes, &mut frame).with_context(|| format!("decoding fixtures/{path}"))?;
        let got = hex(&Md5::digest(&frame.data));
        ensure!(
            got == fixture.pixels_md5,
            "fixtures/{path}: pixels md5 {got}, FFmpeg's is {}",
            fixture.pixels_md5
        );
        checked += 1;
    }
    ensure!(checked >= 8, "only {checked} DPX fixtures listed");
    Ok(())
}

/// Every EXR fixture, with every backend that supports its compression, on one
/// thread and on two, decodes to OpenEXR's own pixels; a backend that does not
/// support it says so. All failures are listed, not just the first.
#[test]
fn every_exr_fixture_decodes_to_openexrs_pixels_with_every_backend() -> Result<()> {
    let mut failures = Vec::new();
    let mut n_checked = 0;
    for fixture in exr_fixtures()? {
        let bytes = fixture.read()?;
        let compression = fixture.exr_compression()?;
        for &backend in Backend::available() {
            if !backend.supports(compression) {
                match decode_exr(&fixture, &bytes, backend, 1) {
                    Ok(_) => failures.push(format!(
                        "{}: {backend} decoded a {compression} file it says it does not support",
                        fixture.name()
                    )),
                    Err(e) => match e.downcast_ref::<playsim::exr::Error>() {
                        Some(e) if e.kind() == ErrorKind::Unsupported => {}
                        _ => failures
                            .push(format!("{}: {backend}: not an Unsupported error: {e:#}", fixture.name())),
                    },
                }
                continue;
            }
            for codec_threads in [1, 2] {
                let what = format!("{} ({backend}, {codec_threads} codec threads)", fixture.name());
                match check_exr(&fixture, &bytes, backend, codec_threads, compression) {
                    Ok(()) => n_checked += 1,
                    Err(e) => failures.push(format!("{what}: {e:#}")),
                }
            }
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} EXR decodes differ from OpenEXR's:\n{}",
        failures.len(),
        failures.len() + n_checked,
        failures.join("\n")
    );
    Ok(())
}

fn check_exr(
    fixture: &Fixture,
    bytes: &[u8],
    backend: Backend,
    codec_threads: u32,
    compression: Compression,
) -> Result<()> {
    let (frame, info) = decode_exr(fixture, bytes, backend, codec_threads)?;
    ensure!(info.compression == compression, "the header says {}, the name {compression}", info.compression);
    ensure!(
        info.tiled == fixture.path.contains("-tiled-"),
        "the header says tiled = {}, the name does not agree",
        info.tiled
    );
    let (width, height) = info.data_size();
    ensure!(
        (u64::from(frame.width), u64::from(frame.height)) == (width, height),
        "decoded {}x{}, the data window {:?} is {width}x{height}",
        frame.width,
        frame.height,
        info.data_window
    );
    let got = hex(&Md5::digest(&frame.data));
    ensure!(got == fixture.pixels_md5, "pixels md5 {got}, OpenEXR's is {}", fixture.pixels_md5);
    Ok(())
}

/// The backends give the same bytes and the same header summary for every
/// fixture both can decode. (Each also matches OpenEXR's md5 above; this is the
/// direct statement, and it says which bytes differ.) It exists in the builds that have
/// both backends (exrs is always built, openexr with the `openexr` feature) and in no
/// other, so it can neither pass without comparing nor be missed when it could run.
#[cfg(feature = "openexr")]
#[test]
fn exr_backends_agree_on_every_fixture() -> Result<()> {
    let [first, second] = Backend::available() else {
        bail!("the openexr feature is on, yet only {:?} are available", Backend::available());
    };
    let mut n_compared = 0;
    for fixture in exr_fixtures()? {
        let compression = fixture.exr_compression()?;
        if !(first.supports(compression) && second.supports(compression)) {
            continue;
        }
        let bytes = fixture.read()?;
        let (a, a_info) = decode_exr(&fixture, &bytes, *first, 1)?;
        let (b, b_info) = decode_exr(&fixture, &bytes, *second, 1)?;
        let name = fixture.name();
        ensure!(
            a_info == b_info,
            "{name}: header summaries differ:\n{first}: {a_info:?}\n{second}: {b_info:?}"
        );
        ensure!(
            (a.width, a.height, a.format) == (b.width, b.height, b.format),
            "{name}: {first} decoded {}x{} {:?}, {second} {}x{} {:?}",
            a.width,
            a.height,
            a.format,
            b.width,
            b.height,
            b.format
        );
        if let Some(at) = a.data.iter().zip(&b.data).position(|(x, y)| x != y).or_else(|| {
            // Same prefix, different lengths.
            (a.data.len() != b.data.len()).then_some(a.data.len().min(b.data.len()))
        }) {
            bail!(
                "{name}: {first} and {second} differ first at byte {at} (pixel {}); lengths {} and {}",
                at / a.format.map_or(1, |f| f.bytes_per_pixel()).max(1),
                a.data.len(),
                b.data.len()
            );
        }
        n_compared += 1;
    }
    ensure!(n_compared >= Compression::ALL.len(), "only {n_compared} fixtures compared");
    Ok(())
}
