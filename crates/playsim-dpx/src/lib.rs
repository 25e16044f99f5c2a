//! DPX (SMPTE 268M) reading and writing for playsim.
//!
//! [`DpxDecoder`] turns a DPX file's bytes into playsim's canonical frame:
//! interleaved 16-bit little-endian RGB ([`PixelFormat::Rgb48Le`]) or RGBA
//! ([`PixelFormat::Rgba64Le`]) when the file has alpha. It reads RGB and RGBA
//! elements at 8, 10 (filled method A or B) and 16 bits, in either byte
//! order, and widens samples by bit replication (10-bit `v << 6 | v >> 4`,
//! 8-bit `v * 257`), which is also what FFmpeg produces for `rgb48le`.
//!
//! The header is validated with [`DpxHeader::parse`] before anything is
//! allocated: wrong magic, truncation, absurd dimensions and unsupported
//! variants are refused with a message naming the value and its offset, and
//! no input can make the decoder panic.
//!
//! [`write_dpx`] writes canonical frames back as 8-, 10- or 16-bit DPX that
//! FFmpeg reads; narrowing drops low bits, so a decoded frame round-trips
//! bit-exactly. [`FrameLayout`] makes frametest's files: a 10-bit ramp image at a
//! fixed offset (64 KiB), for `playsim frametest -w`.
//!
//! ```
//! use playsim_core::{DecodedFrame, Decoder, PixelFormat};
//! use playsim_dpx::{write_dpx, DpxDecoder, Endian, WriteOptions};
//!
//! // A 4x2 frame of 10-bit values, widened to 16 bits the way a decode widens them.
//! let mut frame = DecodedFrame::default();
//! frame.reset(4, 2, PixelFormat::Rgb48Le);
//! for (i, sample) in frame.data.chunks_exact_mut(2).enumerate() {
//!     let v10 = (i as u16 * 97) & 0x3ff;
//!     sample.copy_from_slice(&(v10 << 6 | v10 >> 4).to_le_bytes());
//! }
//!
//! let mut file = Vec::new();
//! write_dpx(&frame, &WriteOptions { bit_depth: 10, endian: Endian::Little }, &mut file)?;
//! assert_eq!(&file[..4], b"XPDS");
//!
//! let mut decoded = DecodedFrame::default();
//! DpxDecoder.decode(&file, &mut decoded)?;
//! assert_eq!((decoded.width, decoded.height), (4, 2));
//! assert_eq!(decoded.format, Some(PixelFormat::Rgb48Le));
//! assert_eq!(decoded.data, frame.data);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used)]

mod decode;
mod encode;
mod error;
mod header;
mod layout;
mod simd;
mod unpack;

pub use decode::DpxDecoder;
pub use encode::{header_for_layout, set_file_name, write_dpx, WriteOptions, WRITE_DATA_OFFSET};
pub use error::{Error, ErrorKind};
pub use header::{DpxHeader, Endian, DESCRIPTOR_RGB, DESCRIPTOR_RGBA, MAX_PIXELS, MIN_HEADER_BYTES};
pub use layout::FrameLayout;

use playsim_core::{FileBytes, FormatDescriptor, Probe};

#[cfg(doc)]
use playsim_core::PixelFormat;

/// DPX for the format registry: `.dpx` files starting `SDPX` (big-endian) or `XPDS`
/// (little-endian), whose size is in the header's first kilobyte.
pub const FORMAT: FormatDescriptor =
    FormatDescriptor { name: "dpx", extensions: &["dpx"], magic: &[b"SDPX", b"XPDS"], probe };

/// The frame size from a DPX header, when the file's first bytes hold a valid one.
fn probe(bytes: &FileBytes<'_>) -> Probe {
    match DpxHeader::parse(bytes.head()) {
        Ok(header) => Probe::Size { width: header.width, height: header.height },
        Err(_) => Probe::Unknown,
    }
}

#[cfg(test)]
mod testutil;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{encode, noisy_frame};

    #[test]
    fn probe_reads_the_size_from_the_header_alone() {
        for endian in [Endian::Big, Endian::Little] {
            let file = encode(&noisy_frame(37, 5, true, 16, 1), 16, endian);
            assert!(FORMAT.matches_magic(&file));
            let head = [(0, &file[..MIN_HEADER_BYTES])];
            assert_eq!(
                (FORMAT.probe)(&FileBytes::new(file.len() as u64, &head)),
                Probe::Size { width: 37, height: 5 }
            );
            let short = [(0, &file[..100])];
            assert_eq!((FORMAT.probe)(&FileBytes::new(file.len() as u64, &short)), Probe::Unknown);
        }
    }
}
