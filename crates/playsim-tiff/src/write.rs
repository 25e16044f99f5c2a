//! Writing canonical frames as TIFF files, in every layout the decoder plays.
//!
//! FFmpeg writes only little-endian strips, so the tests make big-endian, tiled and float
//! files here and check them against FFmpeg's own reader (or, for float, which FFmpeg 5.1
//! does not read, against the pixels written). The compressors are the tiff crate's; the
//! file's structure (header, chunks, directory, byte order) is written by hand, since the
//! crate's encoder writes only strips in the machine's byte order.

use playsim_core::{DecodedFrame, PixelFormat};
use tiff::encoder::compression::{CompressionAlgorithm, Deflate, Lzw, Packbits};

use crate::{Error, Sample};

/// A file's byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Endian {
    /// `II`, as FFmpeg writes.
    #[default]
    Little,
    /// `MM`.
    Big,
}

/// How chunks of pixels are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Stored as they are (tag value 1).
    #[default]
    None,
    /// LZW (5).
    Lzw,
    /// Deflate, zlib-wrapped (8, "Adobe Deflate").
    Deflate,
    /// PackBits, each row on its own as the TIFF specification asks (32773).
    PackBits,
}

impl Compression {
    /// The compression tag's value.
    pub fn tag(self) -> u16 {
        match self {
            Compression::None => 1,
            Compression::Lzw => 5,
            Compression::Deflate => 8,
            Compression::PackBits => 32773,
        }
    }
}

/// How the image is cut into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Chunks {
    /// Strips of whole rows; the last one may be shorter.
    Strips {
        /// Rows per strip, from 1.
        rows: u32,
    },
    /// Tiles, each a multiple of 16 pixels wide and high; edge tiles are padded with zeros.
    Tiles {
        /// Tile width.
        width: u32,
        /// Tile height.
        height: u32,
    },
}

/// How [`write_tiff`] writes a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteOptions {
    /// The samples stored: 8- or 16-bit from a 16-bit frame (8-bit keeps each sample's high
    /// byte), 32-bit float from a float one.
    pub sample: Sample,
    /// Byte order.
    pub endian: Endian,
    /// Compression.
    pub compression: Compression,
    /// Horizontal differencing (predictor 2), for integer samples.
    pub predictor: bool,
    /// Strips or tiles.
    pub chunks: Chunks,
}

impl Default for WriteOptions {
    /// 16-bit, little-endian, uncompressed strips of 16 rows.
    fn default() -> Self {
        WriteOptions {
            sample: Sample::U16,
            endian: Endian::Little,
            compression: Compression::None,
            predictor: false,
            chunks: Chunks::Strips { rows: 16 },
        }
    }
}

/// Writes `frame` (16-bit [`PixelFormat::Rgb48Le`] or [`PixelFormat::Rgba64Le`] for
/// integer samples, [`PixelFormat::RgbF32Le`] or [`PixelFormat::RgbaF32Le`] for float)
/// as one TIFF file into `out`, replacing its contents: the header, the chunks, then the
/// directory, as FFmpeg and libtiff lay a file out.
pub fn write_tiff(frame: &DecodedFrame, opts: &WriteOptions, out: &mut Vec<u8>) -> Result<(), Error> {
    let (width, height) = (frame.width, frame.height);
    let channels = match (frame.format, opts.sample) {
        (Some(PixelFormat::Rgb48Le), Sample::U8 | Sample::U16) => 3,
        (Some(PixelFormat::Rgba64Le), Sample::U8 | Sample::U16) => 4,
        (Some(PixelFormat::RgbF32Le), Sample::F32) => 3,
        (Some(PixelFormat::RgbaF32Le), Sample::F32) => 4,
        (format, sample) => {
            return Err(Error::invalid_input(format!(
                "cannot write a {} frame as {sample:?} samples",
                format.map_or("empty", |f| f.name())
            )))
        }
    };
    let in_bytes = if opts.sample == Sample::F32 { 4 } else { 2 };
    let expected = width as usize * height as usize * channels * in_bytes;
    if width == 0 || height == 0 || frame.data.len() != expected {
        return Err(Error::invalid_input(format!(
            "a {width}x{height} frame with {} bytes of pixels, expected {expected} (and at least 1x1)",
            frame.data.len()
        )));
    }
    if opts.predictor && opts.sample == Sample::F32 {
        return Err(Error::invalid_input("predictor 2 is for integer samples, not float"));
    }
    let (chunk_w, chunk_h) = match opts.chunks {
        Chunks::Strips { rows } if rows > 0 => (width, rows.min(height)),
        Chunks::Tiles { width: w, height: h } if w > 0 && h > 0 && w % 16 == 0 && h % 16 == 0 => (w, h),
        chunks => return Err(Error::invalid_input(format!("unusable chunks {chunks:?}"))),
    };
    let tiled = matches!(opts.chunks, Chunks::Tiles { .. });
    let w = Writer { endian: opts.endian };

    out.clear();
    out.extend_from_slice(if opts.endian == Endian::Big { b"MM\0*" } else { b"II*\0" });
    out.extend_from_slice(&[0; 4]);
    let (across, down) = (width.div_ceil(chunk_w), height.div_ceil(chunk_h));
    let mut offsets = Vec::new();
    let mut counts = Vec::new();
    let mut raw = Vec::new();
    for cy in 0..down {
        for cx in 0..across {
            // A strip's last rows may be missing; a tile is always whole, padded with zeros.
            let rows = if tiled { chunk_h } else { chunk_h.min(height - cy * chunk_h) };
            raw.clear();
            for r in 0..rows {
                let row_start = raw.len();
                for c in 0..chunk_w {
                    let (x, y) = (cx * chunk_w + c, cy * chunk_h + r);
                    for ch in 0..channels {
                        let at = ((y as usize * width as usize + x as usize) * channels + ch) * in_bytes;
                        let inside = x < width && y < height;
                        w.sample(&frame.data, at, inside, opts.sample, &mut raw);
                    }
                }
                if opts.predictor {
                    w.difference(&mut raw[row_start..], channels, opts.sample);
                }
            }
            offsets.push(out.len() as u64);
            let start = out.len();
            compress(opts.compression, &raw, chunk_w as usize * channels * opts.sample.bytes(), out)
                .map_err(|e| {
                    Error::invalid_input(format!("cannot compress chunk {}: {e}", offsets.len() - 1))
                })?;
            counts.push((out.len() - start) as u64);
            if out.len() % 2 == 1 {
                out.push(0);
            }
        }
    }
    if out.len() > u32::MAX as usize {
        return Err(Error::invalid_input(format!("{} bytes do not fit a classic tiff file", out.len())));
    }

    let sample_format = if opts.sample == Sample::F32 { 3 } else { 1 };
    let bits = (opts.sample.bytes() * 8) as u32;
    let n = channels as u32;
    let mut entries: Vec<(u16, Value)> = vec![
        (256, Value::Long(vec![width])),
        (257, Value::Long(vec![height])),
        (258, Value::Short(vec![bits; channels])),
        (259, Value::Short(vec![u32::from(opts.compression.tag())])),
        (262, Value::Short(vec![2])),
        (277, Value::Short(vec![n])),
        (284, Value::Short(vec![1])),
        (339, Value::Short(vec![sample_format; channels])),
    ];
    let offsets: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
    let counts: Vec<u32> = counts.iter().map(|&c| c as u32).collect();
    if tiled {
        entries.extend([
            (322, Value::Long(vec![chunk_w])),
            (323, Value::Long(vec![chunk_h])),
            (324, Value::Long(offsets)),
            (325, Value::Long(counts)),
        ]);
    } else {
        entries.extend([
            (273, Value::Long(offsets)),
            (278, Value::Long(vec![chunk_h])),
            (279, Value::Long(counts)),
        ]);
    }
    if opts.predictor {
        entries.push((317, Value::Short(vec![2])));
    }
    if channels == 4 {
        // Unassociated alpha, as FFmpeg writes it.
        entries.push((338, Value::Short(vec![2])));
    }
    entries.sort_by_key(|(tag, _)| *tag);
    w.directory(&entries, out);
    Ok(())
}

/// The values of one directory entry.
enum Value {
    /// 16-bit (type 3); held wider for convenience, each below 65536.
    Short(Vec<u32>),
    /// 32-bit (type 4).
    Long(Vec<u32>),
}

/// Puts numbers in the file's byte order.
struct Writer {
    endian: Endian,
}

impl Writer {
    fn u16(&self, v: u16) -> [u8; 2] {
        match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    fn u32(&self, v: u32) -> [u8; 4] {
        match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// Appends one stored sample read from the canonical frame at byte `at` (0 outside the image).
    fn sample(&self, data: &[u8], at: usize, inside: bool, sample: Sample, raw: &mut Vec<u8>) {
        let bytes = |n: usize| if inside { data.get(at..at + n) } else { None };
        match sample {
            Sample::U8 => raw.push(bytes(2).map_or(0, |b| b[1])),
            Sample::U16 => {
                let v = bytes(2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
                raw.extend_from_slice(&self.u16(v));
            }
            Sample::F32 => {
                let v = bytes(4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                raw.extend_from_slice(&self.u32(v));
            }
        }
    }

    /// Horizontal differencing over one row of stored samples: each sample less the one a
    /// pixel before it, back to front, in the samples' own width and the file's byte order.
    fn difference(&self, row: &mut [u8], channels: usize, sample: Sample) {
        match sample {
            Sample::U8 => {
                for i in (channels..row.len()).rev() {
                    row[i] = row[i].wrapping_sub(row[i - channels]);
                }
            }
            Sample::U16 => {
                let read = |b: &[u8]| match self.endian {
                    Endian::Little => u16::from_le_bytes([b[0], b[1]]),
                    Endian::Big => u16::from_be_bytes([b[0], b[1]]),
                };
                let step = 2 * channels;
                for i in (step..row.len()).step_by(2).rev() {
                    let v = read(&row[i..]).wrapping_sub(read(&row[i - step..]));
                    row[i..i + 2].copy_from_slice(&self.u16(v));
                }
            }
            Sample::F32 => {}
        }
    }

    /// Appends the directory of `entries` (sorted by tag) and its out-of-line values, and
    /// points the header at it.
    fn directory(&self, entries: &[(u16, Value)], out: &mut Vec<u8>) {
        let ifd = out.len();
        let values_at = ifd + 2 + 12 * entries.len() + 4;
        let mut values = Vec::new();
        out.extend_from_slice(&self.u16(entries.len() as u16));
        for (tag, value) in entries {
            let (kind, bytes): (u16, Vec<u8>) = match value {
                Value::Short(v) => (3, v.iter().flat_map(|&x| self.u16(x as u16)).collect()),
                Value::Long(v) => (4, v.iter().flat_map(|&x| self.u32(x)).collect()),
            };
            let count = match value {
                Value::Short(v) | Value::Long(v) => v.len() as u32,
            };
            out.extend_from_slice(&self.u16(*tag));
            out.extend_from_slice(&self.u16(kind));
            out.extend_from_slice(&self.u32(count));
            if bytes.len() <= 4 {
                // Values of up to 4 bytes sit in the entry, first in its field.
                let mut field = [0u8; 4];
                field[..bytes.len()].copy_from_slice(&bytes);
                out.extend_from_slice(&field);
            } else {
                out.extend_from_slice(&self.u32((values_at + values.len()) as u32));
                values.extend_from_slice(&bytes);
                if values.len() % 2 == 1 {
                    values.push(0);
                }
            }
        }
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&values);
        let offset = self.u32(ifd as u32);
        out[4..8].copy_from_slice(&offset);
    }
}

/// Appends `raw`, compressed, to `out`; PackBits packs each row of `row_bytes` on its own.
fn compress(
    compression: Compression,
    raw: &[u8],
    row_bytes: usize,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    match compression {
        Compression::None => out.extend_from_slice(raw),
        Compression::Lzw => {
            Lzw.write_to(out, raw)?;
        }
        Compression::Deflate => {
            Deflate::default().write_to(out, raw)?;
        }
        Compression::PackBits => {
            for row in raw.chunks(row_bytes.max(1)) {
                Packbits.write_to(out, row)?;
            }
        }
    }
    Ok(())
}
