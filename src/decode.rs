//! `playsim decode --md5`: each frame's canonical pixels hashed, for bit-exact checks against FFmpeg.

use std::io::Write;
use std::path::Path;

use md5::{Digest, Md5};
use playsim_core::{DecodedFrame, FrameExtent};
use playsim_media::DecodeOptions;

use crate::Error;

/// What a decode pass found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeSummary {
    /// Frames decoded and hashed.
    pub n_decoded: u64,
    /// Frames that could not be read or decoded; each was reported with its file and frame.
    pub n_unreadable: u64,
}

/// Decodes every frame of `source` in order and writes one line per frame to
/// `out`: the frame number, the pixel format, the size, and the md5 of the
/// canonical pixels as the last field. Unreadable frames are written to `errors`
/// with their file and frame, and the pass goes on.
pub fn decode_md5(
    source: &Path,
    options: &DecodeOptions,
    max_frames: Option<u64>,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<DecodeSummary, Error> {
    let source = playsim_media::open_source_with(source, options).map_err(Error::Source)?;
    let decoder = source.decoder();
    let mut frame = DecodedFrame::default();
    let mut summary = DecodeSummary::default();
    let n = max_frames.map_or(source.n_frames(), |m| m.min(source.n_frames()));
    for idx in 0..n {
        let frame_number = source.frame_number(idx);
        let extent = source.extent(idx);
        let result = match &extent {
            FrameExtent::File { path } => read_limited(path),
            FrameExtent::Range { .. } => Err("byte-range frames are not decodable here yet".into()),
            FrameExtent::Missing { expected } => {
                Err(format!("{} is missing from the sequence (a gap)", expected.display()))
            }
        }
        .and_then(|bytes| decoder.decode(&bytes, &mut frame).map_err(|e| e.to_string()));
        let line = match result {
            Ok(()) => {
                summary.n_decoded += 1;
                let digest = Md5::digest(&frame.data);
                let format = frame.format.map_or("unknown", |f| f.name());
                writeln!(out, "{frame_number} {format} {}x{} {}", frame.width, frame.height, hex(&digest))
            }
            Err(detail) => {
                summary.n_unreadable += 1;
                let path = extent.path().display();
                writeln!(errors, "unreadable: frame {frame_number} (index {idx}) in {path}: {detail}")
            }
        };
        if line.is_err() {
            // The reader went away (a closed pipe): stop quietly.
            break;
        }
    }
    Ok(summary)
}

/// Reads a whole frame file, refusing one larger than the engine's frame limit
/// before allocating for it.
fn read_limited(path: &Path) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let size = std::fs::metadata(path).map_err(cannot)?.len();
    if size > playsim_engine::MAX_FRAME_BYTES {
        let limit = playsim_engine::MAX_FRAME_BYTES;
        return Err(format!("{} is {size} bytes, more than the {limit}-byte frame limit", path.display()));
    }
    std::fs::read(path).map_err(cannot)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
