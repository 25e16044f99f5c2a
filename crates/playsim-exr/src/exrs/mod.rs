//! The pure-Rust backend, on the `exr` crate.
//!
//! `exr` parses the header and decompresses blocks; this module finds the first
//! part's chunks itself, straight from the encoded bytes (so a bad offset or a
//! short file is reported precisely and never makes anything allocate more than
//! the file holds), and writes each decompressed block's samples directly into
//! the canonical frame, with no per-channel intermediate images. Blocks are
//! independent, so with `codec_threads > 1` bands of blocks are decompressed on
//! a rayon pool of exactly that many threads.

mod blocks;
mod pool;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::io::Cursor;
use std::panic::{self, AssertUnwindSafe};

use exr::compression::Compression as ExrCompression;
use exr::math::Vec2;
use exr::meta::attribute::SampleType as ExrSampleType;
use exr::meta::header::Header;
use exr::meta::{BlockDescription, MetaData};
use playsim_core::DecodedFrame;

use crate::{ChannelInfo, Compression, Error, ExrInfo, ExrOptions, SampleType};

pub(crate) fn decode(encoded: &[u8], options: &ExrOptions, out: &mut DecodedFrame) -> Result<ExrInfo, Error> {
    // `exr` means not to panic, but it does: its B44 decoder does OpenEXR's
    // unsigned arithmetic with plain `+` and `-`, which panics on corrupt blocks
    // wherever overflow checks are on (debug builds); it also has asserts. A
    // panic must become a corrupt frame, not a dead process. A panic on a pool
    // thread is carried back here by the rayon scope.
    panic::catch_unwind(AssertUnwindSafe(|| decode_unguarded(encoded, options, out))).unwrap_or_else(
        |payload| {
            Err(Error::malformed(format!(
                "the exr crate panicked on this file: {}",
                panic_message(&*payload)
            )))
        },
    )
}

fn decode_unguarded(encoded: &[u8], options: &ExrOptions, out: &mut DecodedFrame) -> Result<ExrInfo, Error> {
    let (meta, table_start) = read_meta(encoded)?;
    let header = meta.headers.first().ok_or_else(|| Error::malformed("the file has no header"))?;
    let info = exr_info(header)?;
    // Before anything is allocated: this refuses huge data windows.
    let selected = crate::select_channels(&info, options.layer.as_deref())?;
    crate::channels::check_within(&selected, options.max_decoded_bytes)?;
    let plan = blocks::Plan::new(&meta, table_start, encoded.len(), &selected, options.max_decoded_bytes)?;
    crate::channels::check_fits_in_file(&selected, info.compression, encoded.len())?;
    out.reset(selected.width, selected.height, selected.format);
    let threads = usize::try_from(options.codec_threads).unwrap_or(usize::MAX);
    blocks::decode_blocks(encoded, &meta, &plan, threads, &mut out.data)?;
    Ok(info)
}

/// Parses every part's header; returns them with the byte offset of the first offset table.
fn read_meta(encoded: &[u8]) -> Result<(MetaData, usize), Error> {
    if encoded.is_empty() {
        return Err(Error::malformed("empty input: an EXR file needs at least a header"));
    }
    let mut cursor = Cursor::new(encoded);
    // Not pedantic: like OpenEXR, tolerate odd custom attributes and trailing bytes.
    let meta = MetaData::read_from_buffered(&mut cursor, false).map_err(|e| header_error(e, encoded))?;
    MetaData::validate(&meta.headers, false).map_err(|e| header_error(e, encoded))?;
    // `read_from_buffered` stops right after the end-of-header byte (it peeks no
    // further), so the offset tables start here; were that to change in `exr`,
    // every fixture test would fail on the chunk coordinate checks.
    let table_start = usize::try_from(cursor.position())
        .map_err(|_| Error::malformed("the header is larger than the address space"))?;
    Ok((meta, table_start))
}

/// The backend-neutral summary of the first part's header.
fn exr_info(header: &Header) -> Result<ExrInfo, Error> {
    let channels = header
        .channels
        .list
        .iter()
        .map(|c| {
            let sampling = |s: usize| {
                u32::try_from(s)
                    .map_err(|_| Error::malformed(format!("channel {} sampling {s} is too large", c.name)))
            };
            Ok(ChannelInfo {
                name: c.name.to_string(),
                sample: match c.sample_type {
                    ExrSampleType::F16 => SampleType::Half,
                    ExrSampleType::F32 => SampleType::Float,
                    ExrSampleType::U32 => SampleType::Uint,
                },
                x_sampling: sampling(c.sampling.x())?,
                y_sampling: sampling(c.sampling.y())?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let compression = match header.compression {
        ExrCompression::Uncompressed => Compression::None,
        ExrCompression::RLE => Compression::Rle,
        ExrCompression::ZIP1 => Compression::Zips,
        ExrCompression::ZIP16 => Compression::Zip,
        ExrCompression::PIZ => Compression::Piz,
        ExrCompression::PXR24 => Compression::Pxr24,
        ExrCompression::B44 => Compression::B44,
        ExrCompression::B44A => Compression::B44a,
        ExrCompression::DWAA(_) => Compression::Dwaa,
        ExrCompression::DWAB(_) => Compression::Dwab,
        other @ (ExrCompression::HTJ2K32 | ExrCompression::HTJ2K256) => {
            return Err(Error::unsupported(format!("{other} is not supported by the exrs backend")))
        }
    };
    let display = header.shared_attributes.display_window;
    Ok(ExrInfo {
        data_window: inclusive_window(header.own_attributes.layer_position, header.layer_size, "data")?,
        display_window: inclusive_window(display.position, display.size, "display")?,
        channels,
        compression,
        tiled: matches!(header.blocks, BlockDescription::Tiles(_)),
    })
}

/// (x_min, y_min, x_max, y_max) from exr's position and size.
fn inclusive_window(
    position: Vec2<i32>,
    size: Vec2<usize>,
    which: &str,
) -> Result<(i32, i32, i32, i32), Error> {
    let max = |min: i32, len: usize| {
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        i32::try_from(i64::from(min).saturating_add(len) - 1)
            .map_err(|_| Error::malformed(format!("{which} window {position:?} + {size:?} overflows")))
    };
    Ok((position.x(), position.y(), max(position.x(), size.width())?, max(position.y(), size.height())?))
}

/// Maps an `exr` error from reading the header.
fn header_error(e: exr::error::Error, encoded: &[u8]) -> Error {
    if let exr::error::Error::Invalid(message) = &e {
        // Lenient parsing drops an attribute value it cannot read, so a compression
        // method that `exr` does not know shows up as a missing attribute: name it.
        if message.contains("compression attribute") {
            if let Some(method) = raw_compression(encoded) {
                return Error::unsupported(format!(
                    "compression method {method} ({}) is not supported by the exrs backend",
                    compression_name(method)
                ));
            }
        }
    }
    exr_error(e, "header")
}

/// Maps an `exr` error; `context` says where (the header, or which chunk).
pub(super) fn exr_error(e: exr::error::Error, context: &str) -> Error {
    use exr::error::Error as E;
    match e {
        E::NotSupported(message) => Error::unsupported(format!("{context}: {message} (exrs backend)")),
        E::Invalid(message) if message == "file identifier missing" => Error::malformed(format!(
            "{context}: not an EXR file (it does not start with the EXR magic number)"
        )),
        E::Invalid(message) if message == "reference to missing bytes" => {
            Error::malformed(format!("{context}: truncated (the data ends early)"))
        }
        E::Invalid(message) => Error::malformed(format!("{context}: invalid {message}")),
        E::Io(io) => Error::malformed(format!("{context}: {io}")),
        E::Aborted => Error::malformed(format!("{context}: decoding was aborted")),
    }
}

/// The compression byte of the first header, found by its attribute name and type.
fn raw_compression(encoded: &[u8]) -> Option<u8> {
    const ATTRIBUTE: &[u8] = b"compression\0compression\0\x01\0\0\0";
    let at = encoded.windows(ATTRIBUTE.len()).position(|w| w == ATTRIBUTE)?;
    encoded.get(at + ATTRIBUTE.len()).copied()
}

fn compression_name(method: u8) -> &'static str {
    match method {
        10 => "htj2k256",
        11 => "htj2k32",
        12 => "lj2k",
        13 => "zstd",
        _ => "unknown",
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}
