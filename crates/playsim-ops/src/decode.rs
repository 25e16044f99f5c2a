//! `playsim decode --md5`: each frame's canonical pixels hashed, for bit-exact checks against FFmpeg.

use std::io::Write;
use std::path::Path;

use md5::{Digest, Md5};
use playsim_core::{DecodedFrame, FrameExtent, InOrderDecoder, IoBuf, Storage};
use playsim_media::DecodeOptions;
use playsim_storage::transport::TransportOptions;

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
/// `source` is a local path or a URL of any transport, read with its options among
/// `transports` (an `smb://` source's credentials file, an `nfs://` one's `nconnect`); every byte
/// is read through playsim's storage. Must run inside a tokio runtime.
pub async fn decode_md5(
    source: &Path,
    options: &DecodeOptions,
    transports: TransportOptions,
    max_frames: Option<u64>,
    out: &mut dyn Write,
    errors: &mut dyn Write,
) -> Result<DecodeSummary, Error> {
    let clock = playsim_engine::RunClock::default().get();
    let transport_options = transports.with(options.clone());
    let location = crate::location::open(source, transport_options, &clock).await?;
    let storage = location.index_storage().map_err(Error::Storage)?;
    let source = crate::location::open_source(location.as_ref(), options).await?;
    let decoder = source.decoder();
    // One buffer for every frame's bytes and one for its pixels, as the engine's pools keep
    // theirs: a buffer made anew for each frame would have its pages faulted in anew.
    let mut encoded = IoBuf::default();
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
            let sent = read_extent(storage.as_ref(), &extent, &mut encoded)
                .await
                .and_then(|()| in_order.send(Some(&encoded)).map_err(|e| e.to_string()));
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
        let result = read_extent(storage.as_ref(), &extent, &mut encoded)
            .await
            .and_then(|()| decoder.decode(&encoded, &mut frame).map_err(|e| e.to_string()));
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

/// Reads the bytes of one frame into `buf`: a whole file, or a byte range of a video file,
/// read through `storage`. A frame larger than the engine's frame limit is refused before
/// anything is allocated for it.
pub(crate) async fn read_extent(
    storage: &dyn Storage,
    extent: &FrameExtent,
    buf: &mut IoBuf,
) -> Result<(), String> {
    let (path, offset, len) = match extent {
        FrameExtent::File { path } => (path.as_path(), 0, None),
        FrameExtent::Range { path, offset, len } => (path.as_path(), *offset, Some(*len)),
        FrameExtent::Missing { expected } => {
            return Err(format!("{} is missing from the sequence (a gap)", expected.display()))
        }
    };
    let file = storage.open(path).await.map_err(|e| e.to_string())?;
    let want = len.unwrap_or_else(|| file.size().saturating_sub(offset));
    let want_usize = match playsim_core::frame_len(path, want) {
        Ok(len) => len,
        Err(e) => {
            let _ = file.close().await;
            return Err(e.message);
        }
    };
    let read = file.read_at(offset, want_usize, buf).await;
    let _ = file.close().await;
    let n = read.map_err(|e| e.to_string())?;
    playsim_core::whole_read(path, offset, n, want).map_err(|e| e.message)?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
