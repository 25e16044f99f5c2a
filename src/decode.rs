//! `playsim decode --md5`: each frame's canonical pixels hashed, for bit-exact checks against FFmpeg.

use std::io::Write;
use std::path::Path;

use std::sync::Arc;

use md5::{Digest, Md5};
use playsim_core::{DecodedFrame, FrameExtent, InOrderDecoder};
use playsim_media::DecodeOptions;
use playsim_storage::{LocalOptions, LocalStorage};

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
///
/// A video file's canonical pixels are its decoder's native planes, unpadded, so the
/// md5s equal the hash column of `ffmpeg -i FILE -f framemd5 -`. Long-GOP video is
/// decoded in order, and its lines come in presentation order.
///
/// Must run inside a tokio runtime: a video file's container is read through playsim's storage.
pub async fn decode_md5(
    source: &Path,
    options: &DecodeOptions,
    max_frames: Option<u64>,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<DecodeSummary, Error> {
    let storage = LocalStorage::new(LocalOptions::default()).map_err(Error::Storage)?;
    let source =
        playsim_media::open_location(source, options, Arc::new(storage)).await.map_err(Error::Source)?;
    let decoder = source.decoder();
    let mut frame = DecodedFrame::default();
    let mut lines = Lines { out, errors, summary: DecodeSummary::default(), closed: false };
    let n = max_frames.map_or(source.n_frames(), |m| m.min(source.n_frames()));
    if let Some(mut in_order) = decoder.in_order() {
        // Packets go in in decode order; pictures come out in presentation order, numbered so.
        let mut next_picture = 0u64;
        for idx in 0..source.n_frames() {
            if next_picture >= n || lines.closed {
                break;
            }
            let extent = source.extent(idx);
            let sent =
                read_extent(&extent).and_then(|bytes| in_order.send(Some(&bytes)).map_err(|e| e.to_string()));
            if let Err(detail) = sent {
                lines.unreadable(next_picture, idx, &extent, &detail);
                next_picture += 1;
            }
            drain(&mut *in_order, &mut frame, &mut next_picture, n, &mut lines, &extent, idx);
        }
        let last = source.extent(source.n_frames().saturating_sub(1));
        if let Err(e) = in_order.send(None) {
            lines.unreadable(next_picture, source.n_frames(), &last, &e.to_string());
        }
        drain(&mut *in_order, &mut frame, &mut next_picture, n, &mut lines, &last, source.n_frames());
        return Ok(lines.summary);
    }
    for idx in 0..n {
        let frame_number = source.frame_number(idx);
        let extent = source.extent(idx);
        let result = read_extent(&extent)
            .and_then(|bytes| decoder.decode(&bytes, &mut frame).map_err(|e| e.to_string()));
        match result {
            Ok(()) => lines.decoded(frame_number, &frame),
            Err(detail) => lines.unreadable(frame_number, idx, &extent, &detail),
        }
        if lines.closed {
            break;
        }
    }
    Ok(lines.summary)
}

/// Writes every picture an in-order decoder has ready.
fn drain(
    decoder: &mut dyn InOrderDecoder,
    frame: &mut DecodedFrame,
    next_picture: &mut u64,
    n: u64,
    lines: &mut Lines<'_>,
    extent: &FrameExtent,
    packet_idx: u64,
) {
    while *next_picture < n && !lines.closed {
        match decoder.receive(frame) {
            Ok(true) => lines.decoded(*next_picture, frame),
            Ok(false) => break,
            Err(e) => lines.unreadable(*next_picture, packet_idx, extent, &e.to_string()),
        }
        *next_picture += 1;
    }
}

/// The output lines and the counts behind them.
struct Lines<'a> {
    out: &'a mut dyn Write,
    errors: &'a mut dyn Write,
    summary: DecodeSummary,
    /// The reader went away (a closed pipe): stop quietly.
    closed: bool,
}

impl Lines<'_> {
    fn decoded(&mut self, frame_number: u64, frame: &DecodedFrame) {
        self.summary.n_decoded += 1;
        // The canonical pixels: every plane's rows, without the decoder's padding.
        let mut md5 = Md5::new();
        for plane in frame.planes() {
            (0..plane.rows).for_each(|r| md5.update(plane.row(r)));
        }
        let digest = md5.finalize();
        let format = frame.format.map_or("unknown", |f| f.name());
        let line =
            writeln!(self.out, "{frame_number} {format} {}x{} {}", frame.width, frame.height, hex(&digest));
        self.closed |= line.is_err();
    }

    fn unreadable(&mut self, frame_number: u64, idx: u64, extent: &FrameExtent, detail: &str) {
        self.summary.n_unreadable += 1;
        let path = extent.path().display();
        let line =
            writeln!(self.errors, "unreadable: frame {frame_number} (index {idx}) in {path}: {detail}");
        self.closed |= line.is_err();
    }
}

/// The bytes of one frame: a whole file, or a byte range of a video file.
fn read_extent(extent: &FrameExtent) -> Result<Vec<u8>, String> {
    match extent {
        FrameExtent::File { path } => read_limited(path),
        FrameExtent::Range { path, offset, len } => read_range(path, *offset, *len),
        FrameExtent::Missing { expected } => {
            Err(format!("{} is missing from the sequence (a gap)", expected.display()))
        }
    }
}

fn read_range(path: &Path, offset: u64, len: u64) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::FileExt;
    if len > playsim_engine::MAX_FRAME_BYTES {
        let limit = playsim_engine::MAX_FRAME_BYTES;
        return Err(format!(
            "{}: a {len}-byte packet is more than the {limit}-byte frame limit",
            path.display()
        ));
    }
    let cannot =
        |e: std::io::Error| format!("cannot read {} bytes at {offset} of {}: {e}", len, path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, offset).map_err(cannot)?;
    Ok(buf)
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
