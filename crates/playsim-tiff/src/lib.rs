//! TIFF sequences for playsim, through the maintained pure-Rust `tiff` crate.
//!
//! [`TiffDecoder`] turns a TIFF file's bytes into playsim's canonical frame, the same
//! pixels DPX and EXR frames decode to: RGB and RGBA of 8- or 16-bit unsigned samples
//! become [`PixelFormat::Rgb48Le`] / [`PixelFormat::Rgba64Le`] (8-bit widened by `v * 257`,
//! as DPX's are), and 32-bit float samples become [`PixelFormat::RgbF32Le`] /
//! [`PixelFormat::RgbaF32Le`], as EXR's are. It reads uncompressed, LZW, Deflate and
//! PackBits chunks, the horizontal predictor, strips and tiles, in either byte order.
//!
//! Nothing is allocated before the dimensions are checked against [`MAX_PIXELS`], and a
//! directory entry's values are held to [`MAX_IFD_VALUE_BYTES`]; a file that is damaged or
//! of a layout playsim does not play is refused with an [`Error`] saying what is wrong.
//!
//! [`FORMAT`] is what the format registry knows of TIFF: the extensions, the magic, and
//! [`probe`], which reads the frame size from a few of a file's bytes. [`write_tiff`]
//! writes frames back in every layout the decoder plays, for tests and generated media.
//!
//! ```
//! use playsim_core::{DecodedFrame, Decoder, PixelFormat};
//! use playsim_tiff::{write_tiff, Chunks, Compression, Endian, Sample, TiffDecoder, WriteOptions};
//!
//! // A 20x10 RGBA frame of 16-bit samples, written as big-endian LZW tiles with the predictor.
//! let mut frame = DecodedFrame::default();
//! frame.reset(20, 10, PixelFormat::Rgba64Le);
//! for (i, sample) in frame.data.chunks_exact_mut(2).enumerate() {
//!     sample.copy_from_slice(&(i as u16).wrapping_mul(331).to_le_bytes());
//! }
//! let opts = WriteOptions {
//!     sample: Sample::U16,
//!     endian: Endian::Big,
//!     compression: Compression::Lzw,
//!     predictor: true,
//!     chunks: Chunks::Tiles { width: 16, height: 16 },
//! };
//! let mut file = Vec::new();
//! write_tiff(&frame, &opts, &mut file)?;
//! assert_eq!(&file[..4], b"MM\0*");
//!
//! let mut decoded = DecodedFrame::default();
//! TiffDecoder.decode(&file, &mut decoded)?;
//! assert_eq!((decoded.width, decoded.height, decoded.format), (20, 10, Some(PixelFormat::Rgba64Le)));
//! assert_eq!(decoded.data, frame.data);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used)]

mod decode;
mod error;
mod probe;
mod write;

pub use decode::{Sample, TiffDecoder, TiffInfo, MAX_IFD_VALUE_BYTES, MAX_PIXELS};
pub use error::{Error, ErrorKind};
pub use probe::{probe, MAGIC};
pub use write::{write_tiff, Chunks, Compression, Endian, WriteOptions};

use playsim_core::FormatDescriptor;

#[cfg(doc)]
use playsim_core::PixelFormat;

/// TIFF for the format registry: `.tif` and `.tiff` files starting `II*\0` or `MM\0*`
/// (or BigTIFF's `II+\0`, `MM\0+`), sized by [`probe`].
pub const FORMAT: FormatDescriptor =
    FormatDescriptor { name: "tiff", extensions: &["tif", "tiff"], magic: &MAGIC, probe };

#[cfg(test)]
mod testutil;
