//! Writing float RGB(A) frames as scanline EXR files, in memory, with the `exr` crate.
//!
//! This is the generator's encoder: it makes test sequences that the decoders
//! then read back. Samples are stored as the requested type (half by default),
//! so a frame whose values are exactly representable in half round-trips
//! bit-exactly through any lossless compression.

use std::io::Cursor;

use exr::prelude::{
    f16, Blocks, Encoding, Image, IntoSample, LineOrder, SpecificChannels, Vec2, WritableImage,
};
use playsim_core::{DecodedFrame, PixelFormat};

use crate::{Compression, Error, SampleType, MAX_PIXELS};

/// How [`write_exr`] encodes a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// The compression of every block; DWAA and DWAB are refused.
    pub compression: Compression,
    /// The type the samples are stored as: half or float (uint is refused).
    pub sample: SampleType,
    /// Compresses blocks on several threads at once, on a pool of one thread
    /// per core that the exr crate starts for each file; `false` compresses
    /// them one after another on the calling thread.
    pub parallel: bool,
}

impl Default for WriteOptions {
    /// PIZ-compressed half samples, compressed on the calling thread only.
    fn default() -> Self {
        WriteOptions { compression: Compression::Piz, sample: SampleType::Half, parallel: false }
    }
}

/// Whether [`write_exr`] can write `compression`: every method but DWAA and DWAB.
pub fn can_write(compression: Compression) -> bool {
    exr_compression(compression).is_ok()
}

/// Encodes `frame`, which must be `rgbf32le` or `rgbaf32le`, as a scanline
/// EXR file with channels R, G, B (and A) into `out`, replacing its contents
/// and reusing its allocation.
///
/// Lines are written in increasing order, one block per the compression's
/// scanline count (16 for zip, 32 for piz). Half samples are the nearest
/// half to each f32 value (round to nearest even).
pub fn write_exr(frame: &DecodedFrame, opts: &WriteOptions, out: &mut Vec<u8>) -> Result<(), Error> {
    let (width, height) = (frame.width, frame.height);
    let channels = checked_channels(frame)?;
    let compression = exr_compression(opts.compression)?;
    let pixels = Pixels { data: &frame.data, width: width as usize, channels };
    let encoding = Encoding { compression, blocks: Blocks::ScanLines, line_order: LineOrder::Increasing };
    let size = (width as usize, height as usize);
    out.clear();
    let result = match opts.sample {
        SampleType::Half => pixels.write(size, encoding, opts.parallel, f16::from_f32, out),
        SampleType::Float => pixels.write(size, encoding, opts.parallel, |v: f32| v, out),
        SampleType::Uint => {
            return Err(Error::unsupported(
                "cannot write uint samples to exr: colour channels are written as half or float",
            ))
        }
    };
    result.map_err(|e| {
        let message = format!("cannot write {width}x{height} exr ({} compression): {e}", opts.compression);
        match e {
            exr::error::Error::NotSupported(_) => Error::unsupported(message),
            _ => Error::malformed(message),
        }
    })
}

/// As [`write_exr`], through `backend`: the exr crate, or the OpenEXR C++ library (Nuke's and
/// Flame's writer; half samples only, every compression but DWAA and DWAB, compressed on the
/// calling thread). Both store the same half values: the nearest to each f32, rounded to even.
pub fn write_exr_with(
    backend: crate::Backend,
    frame: &DecodedFrame,
    opts: &WriteOptions,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    match backend {
        crate::Backend::Exrs => write_exr(frame, opts, out),
        crate::Backend::OpenExr => {
            if opts.sample != SampleType::Half {
                return Err(Error::unsupported("the openexr writer writes half samples only"));
            }
            let channels = checked_channels(frame)?;
            exr_compression(opts.compression)?;
            let halves: Vec<u16> = frame
                .data
                .chunks_exact(4)
                .map(|b| f16::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_bits())
                .collect();
            out.clear();
            crate::openexr::encode(&halves, (frame.width, frame.height), channels, opts.compression, out)
        }
    }
}

/// The channels of a frame [`write_exr`] can write (3 or 4), after checking its format, size
/// and data.
fn checked_channels(frame: &DecodedFrame) -> Result<usize, Error> {
    let (width, height) = (frame.width, frame.height);
    let channels = match frame.format {
        Some(PixelFormat::RgbF32Le) => 3,
        Some(PixelFormat::RgbaF32Le) => 4,
        other => {
            return Err(Error::unsupported(format!(
                "cannot write a {} frame as exr: only rgbf32le and rgbaf32le frames are written",
                other.map_or("format-less", |f| f.name())
            )))
        }
    };
    if width == 0 || height == 0 {
        return Err(Error::unsupported(format!("cannot write an empty {width}x{height} frame as exr")));
    }
    let n_pixels = u64::from(width) * u64::from(height);
    if n_pixels > MAX_PIXELS {
        return Err(Error::limit(format!(
            "frame {width}x{height} is larger than the {MAX_PIXELS}-pixel limit for exr writing"
        )));
    }
    // Checked here so that the per-pixel reads below always find their bytes.
    let expected = usize::try_from(n_pixels).ok().and_then(|n| n.checked_mul(channels * 4));
    if Some(frame.data.len()) != expected {
        return Err(Error::malformed(format!(
            "frame data is {} bytes, but a {width}x{height} frame with {channels} f32 channels is {}",
            frame.data.len(),
            n_pixels * channels as u64 * 4
        )));
    }
    Ok(channels)
}

/// The `exr` crate's compression for `compression`, or an error for those it cannot write.
fn exr_compression(compression: Compression) -> Result<exr::compression::Compression, Error> {
    use exr::compression::Compression as C;
    Ok(match compression {
        Compression::None => C::Uncompressed,
        Compression::Rle => C::RLE,
        Compression::Zips => C::ZIP1,
        Compression::Zip => C::ZIP16,
        Compression::Piz => C::PIZ,
        Compression::Pxr24 => C::PXR24,
        Compression::B44 => C::B44,
        Compression::B44a => C::B44A,
        // The exr crate's DWA encoder is new in 1.74.2 (its own API docs still
        // call it unimplemented) and lossy; playsim does not offer it until a
        // test holds its files against the OpenEXR library's decoder.
        Compression::Dwaa | Compression::Dwab => {
            return Err(Error::unsupported(format!(
                "cannot write {compression} exr: playsim writes none, rle, zips, zip, piz, pxr24, \
                 b44 and b44a"
            )))
        }
    })
}

/// A frame's interleaved little-endian f32 samples, read pixel by pixel.
struct Pixels<'a> {
    data: &'a [u8],
    width: usize,
    channels: usize,
}

impl Pixels<'_> {
    /// Sample `c` of pixel (`x`, `y`); 0 where the frame has no such sample,
    /// which the length check in [`write_exr`] rules out.
    #[inline(always)]
    fn sample(&self, x: usize, y: usize, c: usize) -> f32 {
        let i = ((y * self.width + x) * self.channels + c) * 4;
        match self.data.get(i..i + 4) {
            Some(&[a, b, c, d]) => f32::from_le_bytes([a, b, c, d]),
            _ => 0.0,
        }
    }

    /// Encodes the pixels with samples converted by `convert`.
    fn write<S: IntoSample>(
        &self,
        size: (usize, usize),
        encoding: Encoding,
        parallel: bool,
        convert: impl Fn(f32) -> S + Sync,
        out: &mut Vec<u8>,
    ) -> exr::error::UnitResult {
        let cursor = Cursor::new(out);
        if self.channels == 4 {
            let channels = SpecificChannels::rgba(|Vec2(x, y): Vec2<usize>| {
                let s = |c| convert(self.sample(x, y, c));
                (s(0), s(1), s(2), s(3))
            });
            let image = Image::from_encoded_channels(size, encoding, channels);
            let writer = image.write();
            if parallel {
                writer.to_buffered(cursor)
            } else {
                writer.non_parallel().to_buffered(cursor)
            }
        } else {
            let channels = SpecificChannels::rgb(|Vec2(x, y): Vec2<usize>| {
                let s = |c| convert(self.sample(x, y, c));
                (s(0), s(1), s(2))
            });
            let image = Image::from_encoded_channels(size, encoding, channels);
            let writer = image.write();
            if parallel {
                writer.to_buffered(cursor)
            } else {
                writer.non_parallel().to_buffered(cursor)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use exr::prelude::{read, FlatSamples, ReadChannels, ReadLayers};

    /// A frame of half-exact values: a ramp through many exponents, negatives,
    /// zero, one, and a few larger values.
    fn frame(width: u32, height: u32, format: PixelFormat) -> DecodedFrame {
        let mut f = DecodedFrame::default();
        f.reset(width, height, format);
        for (i, s) in f.data.chunks_exact_mut(4).enumerate() {
            let bits = (i as u32).wrapping_mul(2_654_435_761) >> 16;
            // Any finite half: infinities and NaNs fold back into the finite range.
            let b = (bits as u16) & 0x7fff;
            let h = f16::from_bits(if b >= 0x7c00 { b - 0x7c00 } else { b });
            let v = if i % 17 == 0 { -h.to_f32() } else { h.to_f32() };
            s.copy_from_slice(&v.to_le_bytes());
        }
        f
    }

    /// Reads `bytes` back with the exr crate: the compression and, per channel
    /// name, the samples as f32.
    fn read_back(bytes: &[u8]) -> (exr::compression::Compression, Vec<(String, Vec<f32>)>) {
        let image = read()
            .no_deep_data()
            .largest_resolution_level()
            .all_channels()
            .first_valid_layer()
            .all_attributes()
            .from_buffered(Cursor::new(bytes))
            .unwrap();
        let channels = image
            .layer_data
            .channel_data
            .list
            .iter()
            .map(|c| {
                let values = match &c.sample_data {
                    FlatSamples::F16(v) => v.iter().map(|h| h.to_f32()).collect(),
                    FlatSamples::F32(v) => v.clone(),
                    FlatSamples::U32(_) => panic!("uint channel {}", c.name),
                };
                (c.name.to_string(), values)
            })
            .collect();
        (image.layer_data.encoding.compression, channels)
    }

    /// The frame's samples of channel `c`, as f32.
    fn plane(f: &DecodedFrame, c: usize) -> Vec<f32> {
        let n = f.format.unwrap().channels();
        f.data.chunks_exact(4).skip(c).step_by(n).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
    }

    fn assert_round_trips(f: &DecodedFrame, opts: &WriteOptions) {
        assert_round_trips_through(crate::Backend::Exrs, f, opts);
    }

    fn assert_round_trips_through(backend: crate::Backend, f: &DecodedFrame, opts: &WriteOptions) {
        let mut out = Vec::new();
        write_exr_with(backend, f, opts, &mut out).unwrap_or_else(|e| panic!("{backend:?} {opts:?}: {e}"));
        let (compression, channels) = read_back(&out);
        assert_eq!(compression, exr_compression(opts.compression).unwrap(), "{opts:?}");
        // EXR stores channels alphabetically.
        let names: Vec<&str> = channels.iter().map(|(n, _)| n.as_str()).collect();
        let want: &[&str] =
            if f.format == Some(PixelFormat::RgbaF32Le) { &["A", "B", "G", "R"] } else { &["B", "G", "R"] };
        assert_eq!(names, want, "{opts:?}");
        for (name, values) in &channels {
            let c = ["R", "G", "B", "A"].iter().position(|n| n == name).unwrap();
            let expected = plane(f, c);
            assert_eq!(values.len(), expected.len());
            let differ = values.iter().zip(&expected).position(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(differ, None, "channel {name} differs, {opts:?}");
        }
    }

    #[test]
    fn lossless_compressions_round_trip_bit_exactly() {
        // 67 rows: more than two 32-line piz blocks, and a partial last block.
        for format in [PixelFormat::RgbaF32Le, PixelFormat::RgbF32Le] {
            let f = frame(61, 67, format);
            for compression in
                [Compression::None, Compression::Rle, Compression::Zips, Compression::Zip, Compression::Piz]
            {
                for sample in [SampleType::Half, SampleType::Float] {
                    for parallel in [false, true] {
                        assert_round_trips(&f, &WriteOptions { compression, sample, parallel });
                    }
                }
            }
            // PXR24 is lossless for half samples (it rounds floats to 24 bits).
            assert_round_trips(
                &f,
                &WriteOptions { compression: Compression::Pxr24, sample: SampleType::Half, parallel: false },
            );
        }
    }

    #[test]
    fn openexr_writes_what_the_exr_crate_reads_back_bit_exactly() {
        if !crate::openexr::AVAILABLE {
            let err = write_exr_with(
                crate::Backend::OpenExr,
                &frame(8, 8, PixelFormat::RgbF32Le),
                &WriteOptions::default(),
                &mut Vec::new(),
            );
            assert!(err.is_err_and(|e| e.message().contains("feature `openexr`")));
            return;
        }
        for format in [PixelFormat::RgbaF32Le, PixelFormat::RgbF32Le] {
            let f = frame(61, 67, format);
            for compression in [
                Compression::None,
                Compression::Rle,
                Compression::Zips,
                Compression::Zip,
                Compression::Piz,
                Compression::Pxr24,
            ] {
                let opts = WriteOptions { compression, sample: SampleType::Half, parallel: false };
                assert_round_trips_through(crate::Backend::OpenExr, &f, &opts);
            }
        }
        let float = WriteOptions { sample: SampleType::Float, ..WriteOptions::default() };
        let err = write_exr_with(
            crate::Backend::OpenExr,
            &frame(8, 8, PixelFormat::RgbF32Le),
            &float,
            &mut Vec::new(),
        );
        assert!(err.is_err_and(|e| e.message().contains("half samples only")));
    }

    #[test]
    fn float_samples_keep_values_half_cannot_hold() {
        let mut f = frame(16, 8, PixelFormat::RgbF32Le);
        f.data[..4].copy_from_slice(&0.1f32.to_le_bytes());
        let opts = WriteOptions { sample: SampleType::Float, ..WriteOptions::default() };
        assert_round_trips(&f, &opts);
        let mut out = Vec::new();
        write_exr(&f, &WriteOptions::default(), &mut out).unwrap();
        let (_, channels) = read_back(&out);
        let r = &channels.iter().find(|(n, _)| n == "R").unwrap().1;
        assert_eq!(r[0], f16::from_f32(0.1).to_f32());
    }

    #[test]
    fn lossy_compressions_write_readable_files() {
        let f = frame(40, 40, PixelFormat::RgbaF32Le);
        for compression in [Compression::B44, Compression::B44a] {
            let mut out = Vec::new();
            write_exr(&f, &WriteOptions { compression, ..WriteOptions::default() }, &mut out).unwrap();
            let (written, channels) = read_back(&out);
            assert_eq!(written, exr_compression(compression).unwrap());
            assert!(channels.iter().all(|(_, v)| v.len() == 40 * 40));
        }
    }

    #[test]
    fn reuses_and_replaces_the_output() {
        let f = frame(32, 32, PixelFormat::RgbF32Le);
        let mut first = Vec::new();
        write_exr(&f, &WriteOptions::default(), &mut first).unwrap();
        let mut out = vec![0xaa; 1 << 20];
        let capacity = out.capacity();
        write_exr(&f, &WriteOptions::default(), &mut out).unwrap();
        assert_eq!(out, first);
        assert_eq!(out.capacity(), capacity);
        assert_eq!(out.get(..4), Some(&[0x76, 0x2f, 0x31, 0x01][..]));
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        let f = frame(8, 8, PixelFormat::RgbaF32Le);
        let mut out = Vec::new();
        for compression in [Compression::Dwaa, Compression::Dwab] {
            let err = write_exr(&f, &WriteOptions { compression, ..WriteOptions::default() }, &mut out)
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unsupported);
            assert!(err.message().contains(compression.name()), "{err}");
        }
        assert_eq!(
            Compression::ALL.iter().filter(|c| !can_write(**c)).collect::<Vec<_>>(),
            [&Compression::Dwaa, &Compression::Dwab]
        );
        let opts = WriteOptions { sample: SampleType::Uint, ..WriteOptions::default() };
        assert_eq!(write_exr(&f, &opts, &mut out).unwrap_err().kind(), ErrorKind::Unsupported);

        for format in [PixelFormat::Rgb48Le, PixelFormat::Rgba64Le, PixelFormat::Samples32Le { channels: 2 }]
        {
            let mut g = DecodedFrame::default();
            g.reset(8, 8, format);
            let err = write_exr(&g, &WriteOptions::default(), &mut out).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unsupported);
            assert!(err.message().contains(format.name()), "{err}");
        }
        let err = write_exr(&DecodedFrame::default(), &WriteOptions::default(), &mut out).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);

        let mut short = frame(8, 8, PixelFormat::RgbF32Le);
        short.data.truncate(100);
        assert_eq!(
            write_exr(&short, &WriteOptions::default(), &mut out).unwrap_err().kind(),
            ErrorKind::Malformed
        );
        let mut empty = frame(8, 8, PixelFormat::RgbF32Le);
        empty.width = 0;
        assert_eq!(
            write_exr(&empty, &WriteOptions::default(), &mut out).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
    }
}
