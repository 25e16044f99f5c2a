//! Damaged EXR sequences: every bad frame is counted as unreadable, named, and the run goes on,
//! with each available backend.
//!
//! The damage is aimed at the structures the issue names: chunk data cut short,
//! the offset table, the Huffman section of a PIZ chunk, the compression
//! attribute and the data window. A small header walker finds them.

use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use playsim::exr::Backend;

use crate::util::{playsim, read_report, run};

const N_FRAMES: u64 = 8;
const DAMAGED: u64 = 3;

/// One header attribute: name, type, offset of its value, size of its value.
type Attribute = (String, String, usize, usize);

/// The attributes of a single-part EXR header, and the offset just past the
/// header (where the offset table starts).
fn walk_header(bytes: &[u8]) -> Result<(Vec<Attribute>, usize)> {
    ensure!(bytes.get(..4) == Some(&[0x76, 0x2f, 0x31, 0x01][..]), "not an EXR file");
    let mut at = 8; // magic + version
    let mut attributes = Vec::new();
    let cstr = |at: &mut usize| -> Result<String> {
        let end = bytes[*at..].iter().position(|&b| b == 0).context("unterminated string")?;
        let s = String::from_utf8_lossy(&bytes[*at..*at + end]).into_owned();
        *at += end + 1;
        Ok(s)
    };
    loop {
        let name = cstr(&mut at)?;
        if name.is_empty() {
            return Ok((attributes, at));
        }
        let kind = cstr(&mut at)?;
        let size = i32::from_le_bytes(bytes[at..at + 4].try_into()?) as usize;
        at += 4;
        attributes.push((name, kind, at, size));
        at += size;
    }
}

fn attribute(bytes: &[u8], name: &str) -> Result<(usize, usize)> {
    let (attributes, _) = walk_header(bytes)?;
    attributes
        .iter()
        .find(|a| a.0 == name)
        .map(|a| (a.2, a.3))
        .with_context(|| format!("no {name} attribute"))
}

/// The file offset of the first chunk, from the offset table.
fn first_chunk(bytes: &[u8]) -> Result<usize> {
    let (_, table) = walk_header(bytes)?;
    Ok(u64::from_le_bytes(bytes[table..table + 8].try_into()?) as usize)
}

#[derive(Clone, Copy, Debug)]
enum ExrDamage {
    /// Cut the file in the middle of its chunk data.
    TruncatedChunks,
    /// Point every entry of the offset table past the end of the file.
    CorruptOffsetTable,
    /// Corrupt the Huffman section of the first PIZ chunk (its bit count).
    CorruptPizHuffman,
    /// Set the compression attribute to a value no EXR library knows.
    UnsupportedCompression,
    /// Declare a data window of about a trillion pixels.
    HugeDataWindow,
}

impl ExrDamage {
    const ALL: [ExrDamage; 5] = [
        ExrDamage::TruncatedChunks,
        ExrDamage::CorruptOffsetTable,
        ExrDamage::CorruptPizHuffman,
        ExrDamage::UnsupportedCompression,
        ExrDamage::HugeDataWindow,
    ];

    fn apply(self, path: &Path) -> Result<()> {
        let mut bytes = std::fs::read(path)?;
        match self {
            ExrDamage::TruncatedChunks => {
                let start = first_chunk(&bytes)?;
                bytes.truncate(start + (bytes.len() - start) / 2);
            }
            ExrDamage::CorruptOffsetTable => {
                let (_, table) = walk_header(&bytes)?;
                let start = first_chunk(&bytes)?;
                for entry in bytes[table..start].chunks_exact_mut(8) {
                    entry.copy_from_slice(&(u64::MAX / 3).to_le_bytes());
                }
            }
            ExrDamage::CorruptPizHuffman => {
                // A PIZ chunk: y (i32), data size (i32), then min/max non-zero (u16 each), the
                // bitmap, the Huffman length (i32), and the Huffman header: im, iM, table
                // length, nBits (i32 each). A bit count far beyond the data cannot decode.
                let chunk = first_chunk(&bytes)?;
                let data = chunk + 8;
                let min_non_zero = u16::from_le_bytes(bytes[data..data + 2].try_into()?) as usize;
                let max_non_zero = u16::from_le_bytes(bytes[data + 2..data + 4].try_into()?) as usize;
                let bitmap = if min_non_zero <= max_non_zero { max_non_zero - min_non_zero + 1 } else { 0 };
                let huffman = data + 4 + bitmap + 4;
                let n_bits = huffman + 12;
                bytes[n_bits..n_bits + 4].copy_from_slice(&0x7fff_fff0_i32.to_le_bytes());
            }
            ExrDamage::UnsupportedCompression => {
                let (at, size) = attribute(&bytes, "compression")?;
                ensure!(size == 1, "compression attribute of {size} bytes");
                bytes[at] = 42;
            }
            ExrDamage::HugeDataWindow => {
                let (at, size) = attribute(&bytes, "dataWindow")?;
                ensure!(size == 16, "dataWindow attribute of {size} bytes");
                bytes[at + 8..at + 12].copy_from_slice(&999_999_i32.to_le_bytes());
                bytes[at + 12..at + 16].copy_from_slice(&999_999_i32.to_le_bytes());
            }
        }
        std::fs::write(path, bytes)?;
        Ok(())
    }
}

fn generate_exr(dir: &Path) -> Result<()> {
    let n = N_FRAMES.to_string();
    let out = run(playsim()
        .args(["generate", "--format", "exr", "--compression", "piz", "--preset", "200x64"])
        .args(["--frames", &n])
        .arg(dir))?;
    ensure!(out.code == Some(0), "generate failed: {}", out.stderr);
    Ok(())
}

#[test]
fn each_damaged_exr_frame_is_unreadable_with_each_backend() -> Result<()> {
    let mut failures = Vec::new();
    for damage in ExrDamage::ALL {
        for backend in Backend::available() {
            let tmp = tempfile::tempdir()?;
            let seq = tmp.path().join("seq");
            generate_exr(&seq)?;
            damage.apply(&seq.join(format!("frame.{DAMAGED:07}.exr")))?;
            let json = tmp.path().join("r.json");
            let out = run(playsim()
                .args(["play"])
                .arg(&seq)
                .args(["--fps", "max", "--quiet", "--exr-backend", backend.name(), "--json"])
                .arg(&json))?;
            let case = format!("{damage:?} with {backend}");
            if out.stderr.contains("panicked") || out.stdout.contains("panicked") {
                failures.push(format!("{case}: panicked: {}", out.stderr));
                continue;
            }
            if out.code != Some(0) {
                failures.push(format!("{case}: exit {:?}: {}", out.code, out.stderr));
                continue;
            }
            let report = read_report(&json)?;
            let s = &report.streams[0];
            if (s.dropped.unreadable, s.presented) != (1, N_FRAMES - 1) {
                failures
                    .push(format!("{case}: unreadable {}, presented {}", s.dropped.unreadable, s.presented));
                continue;
            }
            let message = &s.unreadable[0].message;
            let file = format!("frame.{DAMAGED:07}.exr");
            if !(message.contains(&format!("frame {DAMAGED} ")) && message.contains(&file)) {
                failures.push(format!("{case}: message does not name the frame and file: {message}"));
            }
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} cases failed:\n{}",
            failures.len(),
            ExrDamage::ALL.len() * Backend::available().len(),
            failures.join("\n")
        );
    }
    Ok(())
}
