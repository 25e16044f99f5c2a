//! The DPX header: the fields playsim reads, where they are, and their validation.
//!
//! Only the generic file and image information headers matter for decoding; of
//! the eight image elements, element 0 is the picture. Every check that guards
//! an allocation happens here, before any pixel memory is touched.

use playsim_core::{PixelFormat, MAX_DIMENSION};

use crate::Error;

/// Byte order of a DPX file: `SDPX` (big) or `XPDS` (little).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Endian {
    /// Big-endian, magic `SDPX`.
    #[default]
    Big,
    /// Little-endian, magic `XPDS`.
    Little,
}

impl Endian {
    /// The four magic bytes at offset 0 of a file in this byte order.
    pub fn magic(self) -> [u8; 4] {
        match self {
            Endian::Big => *b"SDPX",
            Endian::Little => *b"XPDS",
        }
    }

    pub(crate) fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Big => v.to_be_bytes(),
            Endian::Little => v.to_le_bytes(),
        }
    }

    pub(crate) fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Big => v.to_be_bytes(),
            Endian::Little => v.to_le_bytes(),
        }
    }
}

/// Bytes of header that [`DpxHeader::parse`] needs: everything up to and
/// including element 0's end-of-line padding.
pub const MIN_HEADER_BYTES: usize = 816;

/// The most pixels (width × height) a DPX frame may have: 2^28, e.g. 16384 × 16384.
pub const MAX_PIXELS: u64 = 1 << 28;

/// Image descriptor of an RGB element.
pub const DESCRIPTOR_RGB: u8 = 50;
/// Image descriptor of an RGBA element.
pub const DESCRIPTOR_RGBA: u8 = 51;

// Byte offsets of the fields read or written, from SMPTE 268M.
pub(crate) const OFF_IMAGE_OFFSET: usize = 4;
pub(crate) const OFF_VERSION: usize = 8;
pub(crate) const OFF_FILE_SIZE: usize = 16;
pub(crate) const OFF_DITTO_KEY: usize = 20;
pub(crate) const OFF_GENERIC_SIZE: usize = 24;
pub(crate) const OFF_INDUSTRY_SIZE: usize = 28;
/// The generic header's image file name: 100 bytes of NUL-padded text.
pub(crate) const OFF_FILE_NAME: usize = 36;
pub(crate) const FILE_NAME_LEN: usize = 100;
pub(crate) const OFF_CREATOR: usize = 160;
pub(crate) const OFF_ENCRYPTION: usize = 660;
pub(crate) const OFF_ORIENTATION: usize = 768;
pub(crate) const OFF_N_ELEMENTS: usize = 770;
pub(crate) const OFF_WIDTH: usize = 772;
pub(crate) const OFF_HEIGHT: usize = 776;
pub(crate) const OFF_DATA_SIGN: usize = 780;
pub(crate) const OFF_LOW_DATA: usize = 784;
pub(crate) const OFF_LOW_QUANTITY: usize = 788;
pub(crate) const OFF_HIGH_DATA: usize = 792;
pub(crate) const OFF_HIGH_QUANTITY: usize = 796;
pub(crate) const OFF_DESCRIPTOR: usize = 800;
pub(crate) const OFF_TRANSFER: usize = 801;
pub(crate) const OFF_COLORIMETRIC: usize = 802;
pub(crate) const OFF_BIT_DEPTH: usize = 803;
pub(crate) const OFF_PACKING: usize = 804;
pub(crate) const OFF_ENCODING: usize = 806;
pub(crate) const OFF_DATA_OFFSET: usize = 808;
pub(crate) const OFF_EOL_PADDING: usize = 812;

/// The validated header of a DPX file, as far as playsim uses it.
///
/// A value of this type describes a frame [`DpxDecoder`](crate::DpxDecoder)
/// can decode: RGB or RGBA, 8-, 10- (filled method A or B) or 16-bit, not
/// run-length encoded, of sane dimensions. Whether the file is long enough
/// for its image data is checked at decode time, since a header can be
/// parsed from a prefix of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DpxHeader {
    /// Byte order, from the magic.
    pub endian: Endian,
    /// Pixels per line.
    pub width: u32,
    /// Lines per element.
    pub height: u32,
    /// Orientation code (0 = left to right, top to bottom). Recorded but not
    /// applied: like FFmpeg, playsim hands out lines in file order.
    pub orientation: u16,
    /// Number of image elements; only element 0 is decoded.
    pub n_elements: u16,
    /// Element 0's descriptor: [`DESCRIPTOR_RGB`] or [`DESCRIPTOR_RGBA`].
    pub descriptor: u8,
    /// Bits per sample: 8, 10 or 16.
    pub bit_depth: u8,
    /// Packing: for 10-bit, 1 (filled method A) or 2 (method B); for 8 and
    /// 16 bits, 0, 1 or 2, which lay the samples out the same way.
    pub packing: u16,
    /// Byte offset of element 0's pixels: the element's own data offset,
    /// or the file header's image offset when the element leaves it undefined.
    pub data_offset: u32,
    /// Bytes of padding after each line's data, 0 when undefined.
    pub eol_padding: u32,
}

impl DpxHeader {
    /// Reads and validates the header at the start of `bytes`.
    ///
    /// Refuses (with a lower-case message naming the value and its offset)
    /// empty or short input, a wrong magic, absurd dimensions, and any
    /// descriptor, bit depth, packing or encoding that is not supported.
    pub fn parse(bytes: &[u8]) -> Result<DpxHeader, Error> {
        if bytes.is_empty() {
            return Err(Error::malformed("empty input (0 bytes): not a dpx file"));
        }
        let magic = bytes.get(..4).ok_or_else(|| {
            Error::malformed(format!(
                "truncated header: {} bytes, a dpx header needs at least {MIN_HEADER_BYTES}",
                bytes.len()
            ))
        })?;
        let endian = if magic == b"SDPX" {
            Endian::Big
        } else if magic == b"XPDS" {
            Endian::Little
        } else {
            return Err(Error::malformed(format!(
                "not a dpx file: magic at offset 0 is {}, expected \"SDPX\" or \"XPDS\"",
                show_magic(magic)
            )));
        };
        if bytes.len() < MIN_HEADER_BYTES {
            return Err(Error::malformed(format!(
                "truncated header: {} bytes, a dpx header needs at least {MIN_HEADER_BYTES}",
                bytes.len()
            )));
        }
        let r = Reader { bytes, endian };

        let orientation = r.u16(OFF_ORIENTATION);
        let n_elements = r.u16(OFF_N_ELEMENTS);
        if n_elements == 0 || n_elements > 8 {
            return Err(Error::malformed(format!(
                "number of image elements at offset {OFF_N_ELEMENTS} is {n_elements}, expected 1 to 8"
            )));
        }

        let width = r.u32(OFF_WIDTH);
        let height = r.u32(OFF_HEIGHT);
        check_dimension("width (pixels per line)", OFF_WIDTH, width)?;
        check_dimension("height (lines per element)", OFF_HEIGHT, height)?;
        let pixels = u64::from(width) * u64::from(height);
        if pixels > MAX_PIXELS {
            return Err(Error::limit(format!(
                "image of {width}x{height} has {pixels} pixels, more than the limit of {MAX_PIXELS}"
            )));
        }

        let descriptor = r.u8(OFF_DESCRIPTOR);
        if descriptor != DESCRIPTOR_RGB && descriptor != DESCRIPTOR_RGBA {
            return Err(Error::unsupported(format!(
                "image descriptor {descriptor} ({}) at offset {OFF_DESCRIPTOR} is not supported, \
                 only {DESCRIPTOR_RGB} (rgb) and {DESCRIPTOR_RGBA} (rgba)",
                descriptor_name(descriptor)
            )));
        }

        let bit_depth = r.u8(OFF_BIT_DEPTH);
        if !matches!(bit_depth, 8 | 10 | 16) {
            return Err(Error::unsupported(format!(
                "bit depth {bit_depth} at offset {OFF_BIT_DEPTH} is not supported, only 8, 10 and 16"
            )));
        }

        let packing = r.u16(OFF_PACKING);
        match (bit_depth, packing) {
            (10, 1 | 2) | (8 | 16, 0..=2) => {}
            (10, 0) => {
                return Err(Error::unsupported(format!(
                    "10-bit packing 0 (packed) at offset {OFF_PACKING} is not supported, \
                     only 1 (filled method a) and 2 (filled method b)"
                )))
            }
            _ => {
                return Err(Error::unsupported(format!(
                    "packing {packing} at offset {OFF_PACKING} is not supported for {bit_depth}-bit data"
                )))
            }
        }

        let encoding = r.u16(OFF_ENCODING);
        if encoding != 0 {
            return Err(Error::unsupported(format!(
                "encoding {encoding} (run-length) at offset {OFF_ENCODING} is not supported, \
                 only 0 (no encoding)"
            )));
        }

        // The element's own offset is the precise one; the file header's
        // offset is the fallback when a writer left the element's undefined.
        let element_offset = r.u32(OFF_DATA_OFFSET);
        let (data_offset, from) = if element_offset == 0 || element_offset == u32::MAX {
            (r.u32(OFF_IMAGE_OFFSET), OFF_IMAGE_OFFSET)
        } else {
            (element_offset, OFF_DATA_OFFSET)
        };
        if (data_offset as usize) < MIN_HEADER_BYTES {
            return Err(Error::malformed(format!(
                "image data offset {data_offset} (read at offset {from}) lies inside the header, \
                 which is at least {MIN_HEADER_BYTES} bytes"
            )));
        }

        let eol_padding = match r.u32(OFF_EOL_PADDING) {
            u32::MAX => 0,
            pad => pad,
        };

        Ok(DpxHeader {
            endian,
            width,
            height,
            orientation,
            n_elements,
            descriptor,
            bit_depth,
            packing,
            data_offset,
            eol_padding,
        })
    }

    /// True when element 0 carries alpha (descriptor 51, RGBA).
    pub fn has_alpha(&self) -> bool {
        self.descriptor == DESCRIPTOR_RGBA
    }

    /// Samples per pixel: 3 or 4.
    pub fn channels(&self) -> usize {
        if self.has_alpha() {
            4
        } else {
            3
        }
    }

    /// The canonical layout a decode produces: rgb48le, or rgba64le with alpha.
    pub fn pixel_format(&self) -> PixelFormat {
        if self.has_alpha() {
            PixelFormat::Rgba64Le
        } else {
            PixelFormat::Rgb48Le
        }
    }

    /// A short description for messages, e.g. "4096x2160 10-bit rgb".
    pub fn describe(&self) -> String {
        let layout = if self.has_alpha() { "rgba" } else { "rgb" };
        format!("{}x{} {}-bit {layout}", self.width, self.height, self.bit_depth)
    }
}

/// Fixed-offset reads from a buffer already checked to be long enough.
///
/// A read past the end yields zeros rather than panicking; `parse` checks the
/// length first, so that only guards against a future mistake.
struct Reader<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl Reader<'_> {
    fn u8(&self, off: usize) -> u8 {
        self.bytes.get(off).copied().unwrap_or(0)
    }

    fn u16(&self, off: usize) -> u16 {
        let b = [self.u8(off), self.u8(off + 1)];
        match self.endian {
            Endian::Big => u16::from_be_bytes(b),
            Endian::Little => u16::from_le_bytes(b),
        }
    }

    fn u32(&self, off: usize) -> u32 {
        let b = [self.u8(off), self.u8(off + 1), self.u8(off + 2), self.u8(off + 3)];
        match self.endian {
            Endian::Big => u32::from_be_bytes(b),
            Endian::Little => u32::from_le_bytes(b),
        }
    }
}

fn check_dimension(what: &str, off: usize, v: u32) -> Result<(), Error> {
    if v == 0 {
        return Err(Error::malformed(format!("{what} at offset {off} is 0")));
    }
    if v > MAX_DIMENSION {
        return Err(Error::limit(format!(
            "{what} at offset {off} is {v}, more than the limit of {MAX_DIMENSION}"
        )));
    }
    Ok(())
}

/// The magic shown as text when printable, else as hex bytes.
fn show_magic(magic: &[u8]) -> String {
    if magic.iter().all(|b| b.is_ascii_graphic()) {
        format!("\"{}\"", String::from_utf8_lossy(magic))
    } else {
        let hex: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
        hex.join(" ")
    }
}

fn descriptor_name(descriptor: u8) -> &'static str {
    match descriptor {
        0 => "user-defined",
        1 => "red",
        2 => "green",
        3 => "blue",
        4 => "alpha",
        6 => "luma",
        7 => "color difference",
        8 => "depth",
        9 => "composite video",
        52 => "abgr",
        100 => "cbycry 4:2:2",
        101 => "cbyacrya 4:2:2:4",
        102 => "cbycr 4:4:4",
        103 => "cbycra 4:4:4:4",
        150..=156 => "user-defined n-component",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use playsim_core::{DecodeErrorKind, DecodedFrame, Decoder};

    use super::*;
    use crate::testutil::{encode, noisy_frame, put_u16, put_u32};
    use crate::{DpxDecoder, ErrorKind};

    /// A valid 10-bit 8x4 RGB file in `endian`.
    fn valid(endian: Endian) -> Vec<u8> {
        encode(&noisy_frame(8, 4, false, 10, 1), 10, endian)
    }

    /// Decodes `file`, expecting a refusal of `kind` whose message contains `needle`.
    #[track_caller]
    fn refused(file: &[u8], kind: ErrorKind, needle: &str) {
        let err = DpxHeader::parse(file)
            .and_then(|h| crate::decode::Layout::of(&h, file.len()).map(|_| h))
            .expect_err("must be refused");
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.message().contains(needle), "{err:?} should mention {needle:?}");
        assert_eq!(
            err.message(),
            err.message().to_lowercase().replace("sdpx", "SDPX").replace("xpds", "XPDS")
        );
        // The Decoder trait reports the same message with the matching core kind.
        let core = DpxDecoder.decode(file, &mut DecodedFrame::default()).expect_err("must be refused");
        let core_kind = match kind {
            ErrorKind::Unsupported => DecodeErrorKind::Unsupported,
            ErrorKind::Limit => DecodeErrorKind::Limit,
            _ => DecodeErrorKind::Malformed,
        };
        assert_eq!((core.kind, core.message.as_str()), (core_kind, err.message()));
    }

    #[test]
    fn parses_what_write_dpx_writes() {
        for endian in [Endian::Big, Endian::Little] {
            let h = DpxHeader::parse(&valid(endian)).unwrap();
            assert_eq!(h.endian, endian);
            assert_eq!((h.width, h.height, h.bit_depth, h.packing), (8, 4, 10, 1));
            assert_eq!((h.descriptor, h.n_elements, h.orientation), (DESCRIPTOR_RGB, 1, 0));
            assert_eq!((h.data_offset, h.eol_padding), (2048, 0));
            assert_eq!(h.pixel_format(), PixelFormat::Rgb48Le);
            assert_eq!(h.describe(), "8x4 10-bit rgb");
        }
    }

    #[test]
    fn refuses_empty_short_and_foreign_input() {
        refused(&[], ErrorKind::Malformed, "empty input (0 bytes)");
        refused(b"SDP", ErrorKind::Malformed, "truncated header: 3 bytes");
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.resize(2048, 0);
        refused(&png, ErrorKind::Malformed, "magic at offset 0 is 89 50 4e 47");
        refused(&valid(Endian::Big)[..815], ErrorKind::Malformed, "truncated header: 815 bytes");
        refused(&valid(Endian::Little)[..100], ErrorKind::Malformed, "truncated header: 100 bytes");
    }

    #[test]
    fn refuses_absurd_dimensions() {
        for endian in [Endian::Big, Endian::Little] {
            let mut f = valid(endian);
            put_u32(&mut f, OFF_WIDTH, endian, 0);
            refused(&f, ErrorKind::Malformed, "width (pixels per line) at offset 772 is 0");
            let mut f = valid(endian);
            put_u32(&mut f, OFF_HEIGHT, endian, 0);
            refused(&f, ErrorKind::Malformed, "height (lines per element) at offset 776 is 0");
            let mut f = valid(endian);
            put_u32(&mut f, OFF_WIDTH, endian, MAX_DIMENSION + 1);
            refused(&f, ErrorKind::Limit, "is 65537, more than the limit of 65536");
            let mut f = valid(endian);
            put_u32(&mut f, OFF_HEIGHT, endian, u32::MAX);
            refused(&f, ErrorKind::Limit, "height (lines per element) at offset 776 is 4294967295");
            let mut f = valid(endian);
            put_u32(&mut f, OFF_WIDTH, endian, 65536);
            put_u32(&mut f, OFF_HEIGHT, endian, 4097);
            refused(&f, ErrorKind::Limit, "more than the limit of 268435456");
        }
    }

    #[test]
    fn refuses_unsupported_variants() {
        let e = Endian::Big;
        let mut f = valid(e);
        f[OFF_DESCRIPTOR] = 6;
        refused(&f, ErrorKind::Unsupported, "image descriptor 6 (luma) at offset 800 is not supported");
        let mut f = valid(e);
        f[OFF_DESCRIPTOR] = 52;
        refused(&f, ErrorKind::Unsupported, "image descriptor 52 (abgr)");
        for depth in [0, 1, 12, 32, 64] {
            let mut f = valid(e);
            f[OFF_BIT_DEPTH] = depth;
            refused(&f, ErrorKind::Unsupported, &format!("bit depth {depth} at offset 803 is not supported"));
        }
        let mut f = valid(e);
        put_u16(&mut f, OFF_PACKING, e, 0);
        refused(&f, ErrorKind::Unsupported, "10-bit packing 0 (packed) at offset 804 is not supported");
        let mut f = encode(&noisy_frame(2, 2, false, 16, 1), 16, e);
        put_u16(&mut f, OFF_PACKING, e, 3);
        refused(&f, ErrorKind::Unsupported, "packing 3 at offset 804 is not supported for 16-bit data");
        let mut f = valid(Endian::Little);
        put_u16(&mut f, OFF_ENCODING, Endian::Little, 1);
        refused(&f, ErrorKind::Unsupported, "encoding 1 (run-length) at offset 806 is not supported");
    }

    #[test]
    fn refuses_inconsistent_headers() {
        let e = Endian::Little;
        let mut f = valid(e);
        put_u16(&mut f, OFF_N_ELEMENTS, e, 0);
        refused(&f, ErrorKind::Malformed, "number of image elements at offset 770 is 0");
        let mut f = valid(e);
        put_u16(&mut f, OFF_N_ELEMENTS, e, 9);
        refused(&f, ErrorKind::Malformed, "is 9, expected 1 to 8");
        let mut f = valid(e);
        put_u32(&mut f, OFF_DATA_OFFSET, e, 100);
        refused(
            &f,
            ErrorKind::Malformed,
            "image data offset 100 (read at offset 808) lies inside the header",
        );
        let mut f = valid(e);
        put_u32(&mut f, OFF_DATA_OFFSET, e, 0);
        put_u32(&mut f, OFF_IMAGE_OFFSET, e, 12);
        refused(&f, ErrorKind::Malformed, "image data offset 12 (read at offset 4)");
    }

    #[test]
    fn refuses_truncated_image_data_saying_how_much() {
        let f = valid(Endian::Big);
        assert_eq!(f.len(), 2048 + 8 * 4 * 4);
        refused(
            &f[..f.len() - 1],
            ErrorKind::Malformed,
            "truncated file: 2175 bytes, expected at least 2176",
        );
        refused(&f[..2048], ErrorKind::Malformed, "for 8x4 10-bit rgb with image data at offset 2048");
        refused(&f[..900], ErrorKind::Malformed, "truncated file: 900 bytes");
        // An offset past the end of the file is truncation too.
        let mut f = valid(Endian::Big);
        put_u32(&mut f, OFF_DATA_OFFSET, Endian::Big, u32::MAX - 1);
        refused(&f, ErrorKind::Malformed, "with image data at offset 4294967294");
    }

    #[test]
    fn falls_back_to_the_file_header_offset() {
        let e = Endian::Big;
        let mut f = valid(e);
        for undefined in [0, u32::MAX] {
            put_u32(&mut f, OFF_DATA_OFFSET, e, undefined);
            assert_eq!(DpxHeader::parse(&f).unwrap().data_offset, 2048);
        }
    }
}
