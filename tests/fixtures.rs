//! The committed fixtures decode to the hashes their MANIFEST records.
//!
//! `fixtures/MANIFEST.tsv` lists each file with its sha256 and the md5 of its
//! canonical pixels as FFmpeg decodes them; this check needs no ffmpeg at run time.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use md5::{Digest, Md5};
use playsim::core::{DecodedFrame, Decoder};
use playsim::dpx::DpxDecoder;
use sha2::Sha256;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_fixture_matches_its_manifest() -> Result<()> {
    let dir = fixtures_dir();
    let manifest =
        std::fs::read_to_string(dir.join("MANIFEST.tsv")).context("reading fixtures/MANIFEST.tsv")?;
    let mut checked = 0;
    let mut frame = DecodedFrame::default();
    for line in manifest.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [path, sha256, pixels_md5] = fields[..] else {
            anyhow::bail!("MANIFEST line has {} fields, expected 3: {line}", fields.len());
        };
        let bytes = std::fs::read(dir.join(path)).with_context(|| format!("reading fixtures/{path}"))?;
        ensure!(
            hex(&Sha256::digest(&bytes)) == sha256,
            "fixtures/{path} changed: its sha256 is not {sha256}"
        );
        DpxDecoder.decode(&bytes, &mut frame).with_context(|| format!("decoding fixtures/{path}"))?;
        let got = hex(&Md5::digest(&frame.data));
        ensure!(got == pixels_md5, "fixtures/{path}: pixels md5 {got}, FFmpeg's is {pixels_md5}");
        checked += 1;
    }
    ensure!(checked >= 8, "only {checked} fixtures listed");
    Ok(())
}
