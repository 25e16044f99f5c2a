//! TIFF decoding into canonical pixels through the tiff crate: which layouts are played,
//! and how their samples become DPX's and EXR's canonical ones.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use playsim_core::{DecodeError, DecodedFrame, Decoder, FileBytes, PixelFormat, Probe};
use tiff::decoder::{ChunkType, DecodingSampleType, Limits};
use tiff::tags::{ByteOrder, Tag};
use tiff::ColorType;

use crate::probe::{probe, set_size, Header};
use crate::Error;

/// The most a compression (the Compression tag) can expand the bytes it stores: 1 for none;
/// 64 for PackBits (a run of 128 bytes in 2); 1032 for Deflate (zlib's limit); 4096 for LZW
/// (a 12-bit code stands for at most 4096 bytes) and for any other, which the decoder then
/// refuses.
fn max_expansion(compression: u16) -> u64 {
    match compression {
        1 => 1,
        32773 => 64,
        8 | 32946 => 1032,
        _ => 4096,
    }
}

/// The most pixels a frame may have, as for DPX and EXR: 2^28, a 16K x 16K frame.
pub const MAX_PIXELS: u64 = 1 << 28;

/// The most bytes of values (strip offsets, bits per sample, ...) one directory entry may
/// hold, so that a hostile count cannot make the directory reader allocate much: 1 MiB,
/// the tiff crate's default, enough for a 16K-line file of one-line strips.
pub const MAX_IFD_VALUE_BYTES: usize = 1 << 20;

/// The largest tile accepted when it is larger than the frame: 16 MiB (a 1024 x 1024 tile
/// of 32-bit float RGBA), far above the 256- and 512-pixel tiles writers use.
const MAX_TILE_BYTES: u64 = 16 << 20;

/// The TIFF decoder: RGB and RGBA, 8- and 16-bit unsigned or 32-bit float samples,
/// uncompressed, LZW, Deflate or PackBits, with or without the horizontal predictor,
/// in strips or tiles, in either byte order.
///
/// Integer samples become [`PixelFormat::Rgb48Le`] or [`PixelFormat::Rgba64Le`], as DPX's
/// do (8-bit ones widened by `v * 257`, so `v` is each sample's high byte); float samples
/// become [`PixelFormat::RgbF32Le`] or [`PixelFormat::RgbaF32Le`], as EXR's do.
#[derive(Clone, Copy, Debug, Default)]
pub struct TiffDecoder;

/// What a decoded file was: its geometry and the layout its pixels were stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiffInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// 3 (RGB) or 4 (RGBA).
    pub channels: u8,
    /// The samples as stored.
    pub sample: Sample,
    /// The compression tag's value: 1 none, 5 LZW, 8 or 32946 Deflate, 32773 PackBits.
    pub compression: u16,
    /// The predictor tag's value: 1 none, 2 horizontal differencing, 3 floating point.
    pub predictor: u16,
    /// Stored in tiles rather than strips.
    pub tiled: bool,
    /// Big-endian (`MM`) rather than little-endian (`II`).
    pub big_endian: bool,
}

/// How samples are stored in a TIFF file that playsim plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sample {
    /// 8-bit unsigned integers.
    U8,
    /// 16-bit unsigned integers.
    U16,
    /// 32-bit IEEE floats.
    F32,
}

impl Sample {
    /// Bytes per stored sample.
    pub fn bytes(self) -> usize {
        match self {
            Sample::U8 => 1,
            Sample::U16 => 2,
            Sample::F32 => 4,
        }
    }
}

impl TiffDecoder {
    /// Decodes one TIFF file into `out`, with this crate's own error type.
    pub fn decode_tiff(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<TiffInfo, Error> {
        // The tiff crate is fuzzed and checks its input, but it is a third party's code under
        // playsim's promise that no input panics: a panic it raises on a hostile file is
        // turned into that file's error rather than taking the decode thread down.
        catch_unwind(AssertUnwindSafe(|| decode(encoded, out))).unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::malformed(format!("the tiff crate panicked on this file: {what}")))
        })
    }
}

impl Decoder for TiffDecoder {
    fn name(&self) -> &'static str {
        "tiff"
    }

    fn describe(&self) -> String {
        "tiff (tiff crate)".to_owned()
    }

    fn decode(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError> {
        self.decode_tiff(encoded, out).map(drop).map_err(DecodeError::from)
    }
}

fn decode(encoded: &[u8], out: &mut DecodedFrame) -> Result<TiffInfo, Error> {
    if encoded.is_empty() {
        return Err(Error::malformed("empty input (0 bytes): not a tiff file"));
    }
    if Header::parse(encoded).is_none() {
        let magic: Vec<String> = encoded.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Err(Error::malformed(format!(
            "not a tiff file: it starts with {}, expected II*\\0, MM\\0* (or BigTIFF's II+\\0, MM\\0+) \
             and a directory offset",
            magic.join(" ")
        )));
    }
    // The size, read by hand before the tiff crate reads the directory: an absurd one is
    // refused as too large before anything is made for it.
    if let Probe::Size { width, height } = probe(&FileBytes::new(encoded.len() as u64, &[(0, encoded)])) {
        check_size(width, height)?;
    }
    if let Some((tag, count, bytes)) = crate::probe::oversized_entry(encoded, MAX_IFD_VALUE_BYTES as u64) {
        return Err(Error::malformed(format!(
            "directory entry {tag} claims {count} values ({bytes} bytes), more than the {}-byte file or the \
             {MAX_IFD_VALUE_BYTES}-byte limit for one entry (damaged count)",
            encoded.len()
        )));
    }
    let mut limits = Limits::default();
    limits.ifd_value_size = MAX_IFD_VALUE_BYTES;
    let mut decoder = tiff::decoder::Decoder::new(Cursor::new(encoded))
        .map_err(tiff_err("reading the first directory"))?
        .with_limits(limits.clone());
    let (width, height) = decoder.dimensions().map_err(tiff_err("reading the dimensions"))?;
    let pixels = check_size(width, height)?;
    let color = decoder.colortype().map_err(tiff_err("reading the colour type"))?;
    let (channels, depth) = match color {
        ColorType::RGB(depth) => (3u8, depth),
        ColorType::RGBA(depth) => (4, depth),
        other => {
            return Err(Error::unsupported(format!(
                "{width}x{height} image of colour type {other:?}: playsim plays rgb and rgba"
            )))
        }
    };
    let layout = decoder.image_buffer_layout().map_err(tiff_err("working out the pixel layout"))?;
    let what = |sample: &str| format!("{width}x{height} {depth}-bit {sample} {}", rgb_name(channels));
    let sample = match (layout.sample_type, depth) {
        (Some(DecodingSampleType::U8), 8) => Sample::U8,
        (Some(DecodingSampleType::U16), 16) => Sample::U16,
        (Some(DecodingSampleType::F32), 32) => Sample::F32,
        (sample_type, _) => {
            return Err(Error::unsupported(format!(
                "{}: playsim plays 8- and 16-bit unsigned and 32-bit float samples",
                what(&format!("{:?} ({sample_type:?})", layout.sample_format).to_lowercase())
            )))
        }
    };
    if layout.planes != 1 {
        return Err(Error::unsupported(format!(
            "{}: separate planes (planar configuration 2) are not played, only interleaved samples",
            what(sample_name(sample))
        )));
    }
    // Both fit: pixels is at most MAX_PIXELS, and a sample at most 4 bytes.
    let stored_len = pixels as usize * usize::from(channels) * sample.bytes();
    if layout.complete_len != stored_len {
        return Err(Error::malformed(format!(
            "{}: the decoder would give {} bytes, expected {stored_len}",
            what(sample_name(sample)),
            layout.complete_len
        )));
    }
    // One strip may hold the whole frame, so the crate's buffers may need the frame's size,
    // more than its default limits for a large frame; the frame's size is already bounded.
    limits.intermediate_buffer_size = stored_len.max(limits.intermediate_buffer_size);
    limits.decoding_buffer_size = stored_len.max(limits.decoding_buffer_size);
    let mut decoder = decoder.with_limits(limits);

    let info = TiffInfo {
        width,
        height,
        channels,
        sample,
        compression: tag(&mut decoder, Tag::Compression).unwrap_or(1),
        predictor: tag(&mut decoder, Tag::Predictor).unwrap_or(1),
        tiled: decoder.get_chunk_type() == ChunkType::Tile,
        big_endian: decoder.byte_order() == ByteOrder::BigEndian,
    };
    // A damaged size in a small file must not cost a frame of gigabytes: the samples must fit
    // in the file at the compression's largest expansion (1.8 GB from a 954-byte file, found
    // by the `tiff_decode` fuzz target).
    let most = (encoded.len() as u64).saturating_mul(max_expansion(info.compression));
    if stored_len as u64 > most {
        return Err(Error::malformed(format!(
            "{}: {stored_len} bytes of samples, more than a {}-byte file with compression {} can hold \
             (damaged size or truncated file)",
            what(sample_name(sample)),
            encoded.len(),
            info.compression
        )));
    }
    if info.tiled {
        // The tiff crate sizes a tile's buffers from the tile size the directory claims,
        // before reading it: a tile width of 2^32 made it ask for 19 GB (found by the
        // `tiff_decode` fuzz target). Tiles larger than both the frame and MAX_TILE_BYTES
        // are no real file's.
        let (tile_w, tile_h) = decoder.chunk_dimensions();
        let tile_bytes = u64::from(tile_w)
            .saturating_mul(u64::from(tile_h))
            .saturating_mul((usize::from(channels) * sample.bytes()) as u64);
        if tile_bytes > (stored_len as u64).max(MAX_TILE_BYTES) {
            return Err(Error::malformed(format!(
                "{}: its tiles of {tile_w}x{tile_h} pixels ({tile_bytes} bytes) are larger than the frame",
                what(sample_name(sample))
            )));
        }
    }
    let format = match (sample, channels) {
        (Sample::F32, 3) => PixelFormat::RgbF32Le,
        (Sample::F32, _) => PixelFormat::RgbaF32Le,
        (_, 3) => PixelFormat::Rgb48Le,
        (_, _) => PixelFormat::Rgba64Le,
    };
    out.reset(width, height, format);
    // The stored samples are read into the start of the frame: for 16- and 32-bit ones
    // that is the whole frame; 8-bit ones are then widened in place.
    let stored = out.data.get_mut(..stored_len).ok_or_else(|| {
        // Unreachable: the canonical frame is never smaller than the stored samples.
        Error::malformed(format!("{}: frame buffer too small", what(sample_name(sample))))
    })?;
    if info.tiled && info.compression == 5 {
        read_lzw_tiles(encoded, &info, decoder.chunk_dimensions(), stored)?;
    } else {
        decoder
            .read_image_bytes(stored)
            .map_err(|e| Error::from_tiff(&format!("decoding {}", describe(&info)), e))?;
    }
    match sample {
        Sample::U8 => widen_in_place(&mut out.data, stored_len),
        // The tiff crate gives samples in the machine's byte order; canonical ones are little-endian.
        Sample::U16 | Sample::F32 if cfg!(target_endian = "big") => {
            out.data.chunks_exact_mut(sample.bytes()).for_each(<[u8]>::reverse)
        }
        Sample::U16 | Sample::F32 => {}
    }
    Ok(info)
}

/// Reads the stored samples of a file of LZW tiles into `stored`, one whole tile at a time.
///
/// The tiff crate (0.11.3) reads a tile row by row when the image is more than one tile
/// wide or the tile lies across the image's edge, and its LZW reader then fails on some
/// tiles ("no lzw end code found") that libtiff reads, and that it reads itself in one
/// piece. So each tile is read whole, from a copy of the file whose directory says the
/// image fills its last tiles (when it does not), and its rows are put in place here.
fn read_lzw_tiles(
    encoded: &[u8],
    info: &TiffInfo,
    (tile_w, tile_h): (u32, u32),
    stored: &mut [u8],
) -> Result<(), Error> {
    let failed = |e| Error::from_tiff(&format!("decoding {}", describe(info)), e);
    let (width, height) = (info.width, info.height);
    if tile_w == 0 || tile_h == 0 {
        return Err(Error::malformed(format!("{}: tiles of {tile_w}x{tile_h}", describe(info))));
    }
    let (across, down) = (width.div_ceil(tile_w), height.div_ceil(tile_h));
    let padded = (across * tile_w, down * tile_h);
    check_size(padded.0, padded.1)?;
    let copy;
    let file = if padded == (width, height) {
        encoded
    } else {
        let mut whole = encoded.to_vec();
        if !set_size(&mut whole, padded.0, padded.1) {
            return Err(Error::unsupported(format!(
                "{}: cannot read its edge tiles whole (the size is not in the directory's entries)",
                describe(info)
            )));
        }
        copy = whole;
        &copy[..]
    };
    let mut decoder = tiff::decoder::Decoder::new(Cursor::new(file)).map_err(failed)?;
    let pixel = usize::from(info.channels) * info.sample.bytes();
    let tile_row = tile_w as usize * pixel;
    let mut tile = vec![0; tile_row * tile_h as usize];
    for t in 0..across * down {
        decoder.read_chunk_bytes(t, &mut tile).map_err(failed)?;
        let (x0, y0) = ((t % across * tile_w) as usize, (t / across * tile_h) as usize);
        let row_len = (width as usize - x0).min(tile_w as usize) * pixel;
        for (r, src) in tile.chunks_exact(tile_row).enumerate().take(height as usize - y0) {
            let at = ((y0 + r) * width as usize + x0) * pixel;
            stored[at..at + row_len].copy_from_slice(&src[..row_len]);
        }
    }
    Ok(())
}

/// The pixels of a `width` x `height` frame, if playsim plays a frame that size.
fn check_size(width: u32, height: u32) -> Result<u64, Error> {
    if width == 0 || height == 0 {
        return Err(Error::malformed(format!("image of {width}x{height} has no pixels")));
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS {
        return Err(Error::limit(format!(
            "image of {width}x{height} has {pixels} pixels, more than the limit of {MAX_PIXELS}"
        )));
    }
    Ok(pixels)
}

/// Maps the tiff crate's error while `doing` something to this crate's.
fn tiff_err(doing: &'static str) -> impl FnOnce(tiff::TiffError) -> Error {
    move |e| Error::from_tiff(doing, e)
}

/// A tag's value as a `u16`, when the directory has it.
fn tag<R: std::io::Read + std::io::Seek>(decoder: &mut tiff::decoder::Decoder<R>, tag: Tag) -> Option<u16> {
    decoder.find_tag_unsigned::<u16>(tag).ok().flatten()
}

/// Widens the `n` 8-bit samples at the start of `data` to 16-bit little-endian ones,
/// `v * 257`, filling `data`'s first `2 * n` bytes. Back to front, so that each sample
/// is read before its bytes are written over (sample `i` moves to `2i` and `2i + 1`).
fn widen_in_place(data: &mut [u8], n: usize) {
    for i in (0..n.min(data.len() / 2)).rev() {
        let v = data[i];
        data[2 * i] = v;
        data[2 * i + 1] = v;
    }
}

fn rgb_name(channels: u8) -> &'static str {
    if channels == 4 {
        "rgba"
    } else {
        "rgb"
    }
}

fn sample_name(sample: Sample) -> &'static str {
    match sample {
        Sample::U8 | Sample::U16 => "unsigned",
        Sample::F32 => "float",
    }
}

/// `4096x2160 16-bit rgb, lzw, predictor 2, tiles, big-endian`, for messages.
pub(crate) fn describe(info: &TiffInfo) -> String {
    let compression = match info.compression {
        1 => "uncompressed".to_owned(),
        5 => "lzw".to_owned(),
        8 | 32946 => "deflate".to_owned(),
        32773 => "packbits".to_owned(),
        n => format!("compression {n}"),
    };
    format!(
        "{}x{} {}-bit {} {}, {compression}{}, {}, {}",
        info.width,
        info.height,
        info.sample.bytes() * 8,
        sample_name(info.sample),
        rgb_name(info.channels),
        if info.predictor == 1 { String::new() } else { format!(", predictor {}", info.predictor) },
        if info.tiled { "tiles" } else { "strips" },
        if info.big_endian { "big-endian" } else { "little-endian" },
    )
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use playsim_core::DecodeErrorKind;
    use tiff::encoder::{colortype, TiffEncoder};

    use super::*;
    use crate::testutil::{every_layout, noisy_frame};
    use crate::{write_tiff, Chunks, Compression, Endian, ErrorKind, WriteOptions};

    fn decode_ok(file: &[u8]) -> (DecodedFrame, TiffInfo) {
        let mut out = DecodedFrame::default();
        let info = TiffDecoder.decode_tiff(file, &mut out).expect("decodes");
        (out, info)
    }

    fn write(frame: &DecodedFrame, opts: &WriteOptions) -> Vec<u8> {
        let mut file = Vec::new();
        write_tiff(frame, opts, &mut file).expect("writes");
        file
    }

    #[test]
    fn round_trips_every_layout_bit_exactly() {
        for sample in [Sample::U8, Sample::U16, Sample::F32] {
            for opts in every_layout(sample) {
                for alpha in [false, true] {
                    // One pixel; sizes that leave partial strips and tiles; tiles wider than the image.
                    for (w, h) in [(1, 1), (17, 5), (33, 20)] {
                        let frame = noisy_frame(w, h, alpha, sample, u64::from(w * 7 + h));
                        let what = format!("{w}x{h} alpha={alpha} {opts:?}");
                        let (out, info) = decode_ok(&write(&frame, &opts));
                        assert_eq!((out.width, out.height, out.format), (w, h, frame.format), "{what}");
                        assert!(out.data == frame.data, "{what}: pixels differ");
                        // The file is what the options asked for, as the decoder read it.
                        assert_eq!(info.sample, sample, "{what}");
                        assert_eq!(info.channels, 3 + u8::from(alpha), "{what}");
                        assert_eq!(info.compression, opts.compression.tag(), "{what}");
                        assert_eq!(info.predictor, if opts.predictor { 2 } else { 1 }, "{what}");
                        assert_eq!(info.tiled, matches!(opts.chunks, Chunks::Tiles { .. }), "{what}");
                        assert_eq!(info.big_endian, opts.endian == Endian::Big, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn lzw_edge_tiles_decode_as_whole_tiles() {
        // The tiff crate alone fails on this file's right-hand edge tiles (see
        // `decode_whole_tiles`); decoded as whole tiles, it gives the pixels written.
        let frame = noisy_frame(33, 20, false, Sample::U8, 33 * 7 + 20);
        let opts = WriteOptions {
            sample: Sample::U8,
            compression: Compression::Lzw,
            chunks: Chunks::Tiles { width: 16, height: 16 },
            ..WriteOptions::default()
        };
        let file = write(&frame, &opts);
        let mut crate_alone = tiff::decoder::Decoder::new(Cursor::new(&file[..])).unwrap();
        let err = crate_alone.read_image().unwrap_err().to_string();
        assert!(err.contains("no lzw end code found"), "the tiff crate is fixed? {err}");
        let (out, info) = decode_ok(&file);
        assert_eq!((out.width, out.height, info.tiled, info.compression), (33, 20, true, 5));
        assert!(out.data == frame.data);
    }

    #[test]
    fn reads_what_the_tiff_crates_own_encoder_writes() {
        // An independent writer of the same layouts (little-endian strips): its files must
        // decode to the samples it was given, canonical-widened.
        let (w, h) = (19, 6);
        let bytes: Vec<u8> = (0..w * h * 4).map(|i| (i * 37 % 251) as u8).collect();
        let words: Vec<u16> = (0..w * h * 4).map(|i| (i * 4099 % 65521) as u16).collect();
        let floats: Vec<f32> = (0..w * h * 3).map(|i| i as f32 * -0.37 + 1e-3).collect();

        let mut file = Cursor::new(Vec::new());
        TiffEncoder::new(&mut file).unwrap().write_image::<colortype::RGBA8>(w, h, &bytes).unwrap();
        let (out, info) = decode_ok(file.get_ref());
        assert_eq!((out.format, info.sample), (Some(PixelFormat::Rgba64Le), Sample::U8));
        assert!(out.data.chunks_exact(2).map(|s| s[1]).eq(bytes.iter().copied()));
        assert!(out.data.chunks_exact(2).all(|s| s[0] == s[1]));

        let mut file = Cursor::new(Vec::new());
        TiffEncoder::new(&mut file).unwrap().write_image::<colortype::RGBA16>(w, h, &words).unwrap();
        let (out, _) = decode_ok(file.get_ref());
        assert!(out.data.chunks_exact(2).map(|s| u16::from_le_bytes([s[0], s[1]])).eq(words.iter().copied()));

        let mut file = Cursor::new(Vec::new());
        TiffEncoder::new(&mut file).unwrap().write_image::<colortype::RGB32Float>(w, h, &floats).unwrap();
        let (out, info) = decode_ok(file.get_ref());
        assert_eq!((out.format, info.sample), (Some(PixelFormat::RgbF32Le), Sample::F32));
        let decoded: Vec<f32> =
            out.data.chunks_exact(4).map(|s| f32::from_le_bytes([s[0], s[1], s[2], s[3]])).collect();
        assert_eq!(decoded, floats);
    }

    /// Decoding `file` fails with `kind`, a message containing `needle`, and the same through
    /// the `Decoder` trait.
    #[track_caller]
    fn refused(file: &[u8], kind: ErrorKind, needle: &str) {
        let err = TiffDecoder.decode_tiff(file, &mut DecodedFrame::default()).expect_err("must be refused");
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.message().contains(needle), "{err:?} should mention {needle:?}");
        let core = TiffDecoder.decode(file, &mut DecodedFrame::default()).expect_err("must be refused");
        let core_kind = match kind {
            ErrorKind::Unsupported => DecodeErrorKind::Unsupported,
            ErrorKind::Limit => DecodeErrorKind::Limit,
            _ => DecodeErrorKind::Malformed,
        };
        assert_eq!((core.kind, core.message), (core_kind, err.message().to_owned()));
    }

    /// The offset of the value field of the entry for `tag` in a file `write_tiff` wrote.
    fn entry_value(file: &[u8], tag: u16, big: bool) -> usize {
        let u16_at = |at: usize| {
            let b = [file[at], file[at + 1]];
            if big {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let b = [file[4], file[5], file[6], file[7]];
        let ifd = if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) } as usize;
        let n = usize::from(u16_at(ifd));
        (0..n).map(|i| ifd + 2 + 12 * i).find(|&e| u16_at(e) == tag).expect("tag present") + 8
    }

    #[test]
    fn refuses_a_tile_larger_than_the_frame_before_the_tiff_crate_allocates_it() {
        // The tiff_decode fuzz target's input: the tiff crate sized a row buffer from a
        // tile width of about 2^32 (19 GB); any tile width over 2^20 would do.
        let frame = noisy_frame(20, 10, true, Sample::U16, 3);
        for endian in [Endian::Little, Endian::Big] {
            let big = endian == Endian::Big;
            let opts = WriteOptions {
                endian,
                chunks: Chunks::Tiles { width: 32, height: 16 },
                ..WriteOptions::default()
            };
            let file = write(&frame, &opts);
            let mut huge = file.clone();
            let at = entry_value(&file, 322, big);
            let v: u32 = 1 << 30;
            huge[at..at + 4].copy_from_slice(&if big { v.to_be_bytes() } else { v.to_le_bytes() });
            refused(&huge, ErrorKind::Malformed, "are larger than the frame");
        }
    }

    #[test]
    fn refuses_a_frame_larger_than_the_file_can_hold_before_allocating_it() {
        // The tiff_decode fuzz target's input: 954 bytes whose directory the tiff crate takes,
        // asking for a 1.8 GB frame.
        let file =
            include_bytes!("../../playsim-fuzz/crashes/tiff_decode/tiff-frame-size-1.8gb-from-954-bytes.tif");
        refused(file, ErrorKind::Malformed, "can hold (damaged size or truncated file)");
        assert_eq!(max_expansion(1), 1);
        assert!(max_expansion(8) >= 1032 && max_expansion(5) >= 4096 && max_expansion(32773) >= 64);
    }

    #[test]
    fn refuses_empty_foreign_and_absurd_files_naming_the_problem() {
        refused(&[], ErrorKind::Malformed, "empty input (0 bytes)");
        refused(b"SDPX\0\0\0\0", ErrorKind::Malformed, "not a tiff file: it starts with 53 44 50 58");
        refused(b"II*\0", ErrorKind::Malformed, "not a tiff file");

        let frame = noisy_frame(3, 2, false, Sample::U16, 1);
        for endian in [Endian::Little, Endian::Big] {
            let big = endian == Endian::Big;
            let file = write(&frame, &WriteOptions { endian, ..WriteOptions::default() });
            let put = |file: &mut Vec<u8>, at: usize, v: u32| {
                file[at..at + 4].copy_from_slice(&if big { v.to_be_bytes() } else { v.to_le_bytes() })
            };
            let mut huge = file.clone();
            put(&mut huge, entry_value(&file, 256, big), 1 << 16);
            put(&mut huge, entry_value(&file, 257, big), 1 << 16);
            refused(&huge, ErrorKind::Limit, "65536x65536 has 4294967296 pixels, more than the limit");
            let mut empty = file.clone();
            put(&mut empty, entry_value(&file, 256, big), 0);
            assert!(TiffDecoder.decode_tiff(&empty, &mut DecodedFrame::default()).is_err());
            // 12-bit samples: a valid TIFF playsim does not play.
            let mut twelve = file.clone();
            let bits = entry_value(&file, 258, big);
            let bits_at = {
                let b = [file[bits], file[bits + 1], file[bits + 2], file[bits + 3]];
                (if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }) as usize
            };
            for k in 0..3 {
                let v: u16 = 12;
                twelve[bits_at + 2 * k..bits_at + 2 * k + 2].copy_from_slice(&if big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                });
            }
            refused(&twelve, ErrorKind::Unsupported, "3x2 12-bit");
            // The pixels cut short.
            let truncated = &file[..20];
            let err = TiffDecoder.decode_tiff(truncated, &mut DecodedFrame::default()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Malformed, "{err}");
        }

        let mut gray = Cursor::new(Vec::new());
        TiffEncoder::new(&mut gray).unwrap().write_image::<colortype::Gray16>(4, 4, &[7; 16]).unwrap();
        refused(gray.get_ref(), ErrorKind::Unsupported, "colour type Gray(16): playsim plays rgb and rgba");
    }

    #[test]
    fn truncated_pixels_are_malformed_and_name_the_layout() {
        let frame = noisy_frame(40, 30, true, Sample::U16, 3);
        let opts = WriteOptions {
            endian: Endian::Big,
            compression: Compression::Deflate,
            chunks: Chunks::Tiles { width: 16, height: 16 },
            ..WriteOptions::default()
        };
        let mut file = write(&frame, &opts);
        // Point the last tile past the end of the file.
        let offsets = entry_value(&file, 324, true);
        let at = u32::from_be_bytes([file[offsets], file[offsets + 1], file[offsets + 2], file[offsets + 3]]);
        let last = at as usize + 4 * 5;
        let past_the_end = (file.len() as u32 + 100).to_be_bytes();
        file[last..last + 4].copy_from_slice(&past_the_end);
        let err = TiffDecoder.decode_tiff(&file, &mut DecodedFrame::default()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Malformed, "{err}");
        assert!(
            err.message().starts_with("decoding 40x30 16-bit unsigned rgba, deflate, tiles, big-endian: "),
            "{err}"
        );
    }

    #[test]
    fn reuses_the_output_allocation() {
        let file = write(
            &noisy_frame(16, 8, false, Sample::U8, 9),
            &WriteOptions { sample: Sample::U8, ..WriteOptions::default() },
        );
        let mut out = DecodedFrame::default();
        TiffDecoder.decode(&file, &mut out).unwrap();
        let (ptr, cap) = (out.data.as_ptr(), out.data.capacity());
        for _ in 0..3 {
            TiffDecoder.decode(&file, &mut out).unwrap();
            assert_eq!((out.data.as_ptr(), out.data.capacity()), (ptr, cap));
        }
    }

    #[test]
    fn hostile_bytes_never_panic() {
        let seeds: Vec<Vec<u8>> = [
            (Sample::U8, Compression::PackBits, Endian::Little, Chunks::Strips { rows: 3 }, false),
            (Sample::U16, Compression::Lzw, Endian::Big, Chunks::Tiles { width: 16, height: 16 }, true),
            (Sample::U16, Compression::Deflate, Endian::Little, Chunks::Strips { rows: 1 }, true),
            (Sample::F32, Compression::None, Endian::Big, Chunks::Tiles { width: 16, height: 16 }, false),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (sample, compression, endian, chunks, predictor))| {
            let frame = noisy_frame(21, 9, i % 2 == 0, sample, i as u64);
            write(&frame, &WriteOptions { sample, endian, compression, predictor, chunks })
        })
        .collect();
        let mut state = 0x1234_5678_9abc_def1u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut out = DecodedFrame::default();
        let (mut n_ok, mut n_panics) = (0, 0);
        for i in 0..4000 {
            let mut f = seeds[i % seeds.len()].clone();
            // Scribble mostly on the directory (at the end), sometimes anywhere.
            for _ in 0..1 + next() % 4 {
                let len = f.len() as u64;
                let off =
                    (if next() % 4 == 0 { next() % len } else { len - 1 - next() % (len / 3) }) as usize;
                f[off] = match next() % 4 {
                    0 => 0,
                    1 => 0xff,
                    _ => next() as u8,
                };
            }
            if next() % 5 == 0 {
                f.truncate((next() % f.len() as u64) as usize);
            }
            match TiffDecoder.decode_tiff(&f, &mut out) {
                Ok(_) => {
                    n_ok += 1;
                    assert_eq!(out.data.len(), out.format.unwrap().frame_len(out.width, out.height));
                }
                Err(e) if e.message().contains("panicked") => n_panics += 1,
                Err(_) => {}
            }
        }
        assert_eq!(n_panics, 0, "the tiff crate panicked on {n_panics} files");
        assert!(n_ok > 100, "the mutations should leave some files decodable, got {n_ok}");
    }
}
