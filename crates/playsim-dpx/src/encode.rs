//! DPX writing from canonical frames: the header FFmpeg and other readers expect, then the samples.

use playsim_core::{DecodedFrame, PixelFormat, MAX_DIMENSION};

use crate::header::*;
use crate::{Endian, Error};

/// How [`write_dpx`] encodes a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// 8, 10 or 16.
    pub bit_depth: u8,
    /// Byte order.
    pub endian: Endian,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { bit_depth: 10, endian: Endian::Big }
    }
}

/// Offset of the image data in files this crate writes: the generic header
/// (1664 bytes) plus the film and television industry headers (384 bytes).
pub const WRITE_DATA_OFFSET: usize = 2048;

/// Encodes a canonical frame (rgb48le or rgba64le) as a DPX file into `out`.
///
/// `out` is cleared first and its allocation reused. Samples are narrowed by
/// dropping low bits (16 → 10 by `v >> 6`, 16 → 8 by `v >> 8`), so a frame
/// that a decode produced is written back bit-exactly. 10-bit data uses
/// filled method A; 8- and 16-bit lines are padded to whole 32-bit words.
pub fn write_dpx(frame: &DecodedFrame, opts: &WriteOptions, out: &mut Vec<u8>) -> Result<(), Error> {
    let format = frame.format.ok_or_else(|| Error::invalid_input("frame has no pixel format"))?;
    let channels = match format {
        PixelFormat::Rgb48Le => 3,
        PixelFormat::Rgba64Le => 4,
        other => return Err(Error::unsupported(format!("cannot write {} frames as dpx", other.name()))),
    };
    if !matches!(opts.bit_depth, 8 | 10 | 16) {
        return Err(Error::unsupported(format!(
            "cannot write {}-bit dpx, only 8, 10 and 16",
            opts.bit_depth
        )));
    }
    let (width, height) = (frame.width, frame.height);
    if width == 0 || height == 0 {
        return Err(Error::invalid_input(format!("frame is {width}x{height}: nothing to write")));
    }
    if width > MAX_DIMENSION || height > MAX_DIMENSION || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(Error::limit(format!(
            "frame of {width}x{height} is larger than dpx files playsim writes"
        )));
    }
    let in_line = width as usize * channels * 2;
    let expected = in_line * height as usize;
    if frame.data.len() != expected {
        return Err(Error::invalid_input(format!(
            "frame data is {} bytes, expected {expected} for {width}x{height} {}",
            frame.data.len(),
            format.name()
        )));
    }

    let samples = width as usize * channels;
    let line_bytes = match opts.bit_depth {
        10 => samples.div_ceil(3) * 4,
        16 => samples * 2,
        _ => samples,
    };
    let stride = line_bytes.next_multiple_of(4);
    let total = WRITE_DATA_OFFSET + stride * height as usize;
    let file_size = u32::try_from(total)
        .map_err(|_| Error::limit(format!("a dpx file of {total} bytes is larger than 4 GiB")))?;

    out.clear();
    out.resize(total, 0);
    let (head, body) = out.split_at_mut(WRITE_DATA_OFFSET);
    write_header(head, opts, width, height, channels, WRITE_DATA_OFFSET as u32, file_size);

    let endian = opts.endian;
    for (src, dst) in frame.data.chunks_exact(in_line).zip(body.chunks_exact_mut(stride)) {
        match (opts.bit_depth, endian) {
            (10, _) => pack10(src, dst, endian),
            (16, Endian::Big) => {
                for (s, d) in src.chunks_exact(2).zip(dst.chunks_exact_mut(2)) {
                    d[0] = s[1];
                    d[1] = s[0];
                }
            }
            (16, Endian::Little) => {
                if let Some(d) = dst.get_mut(..src.len()) {
                    d.copy_from_slice(src);
                }
            }
            _ => {
                // The high byte of each little-endian sample is `v >> 8`.
                for (s, d) in src.chunks_exact(2).zip(dst.iter_mut()) {
                    *d = s[1];
                }
            }
        }
    }
    Ok(())
}

/// The header of an RGB DPX file whose image the caller lays out: `width`×`height` at
/// `opts`' depth, the image at `data_offset` in a file of `file_size` bytes. The result is
/// `data_offset` bytes: the 2048-byte header this crate writes, then zeros (frametest's
/// files put their image at 64 KiB).
pub fn header_for_layout(
    width: u32,
    height: u32,
    data_offset: u32,
    file_size: u32,
    opts: &WriteOptions,
) -> Result<Vec<u8>, Error> {
    if width == 0 || height == 0 || width > MAX_DIMENSION || height > MAX_DIMENSION {
        return Err(Error::invalid_input(format!("a {width}x{height} image cannot be written as dpx")));
    }
    if (data_offset as usize) < WRITE_DATA_OFFSET || file_size < data_offset {
        return Err(Error::invalid_input(format!(
            "image at offset {data_offset} in a file of {file_size} bytes: the header needs {WRITE_DATA_OFFSET}"
        )));
    }
    let mut head = vec![0u8; data_offset as usize];
    write_header(&mut head, opts, width, height, 3, data_offset, file_size);
    Ok(head)
}

/// Writes `name` into a header's image file name field (NUL-padded, cut to fit).
pub fn set_file_name(head: &mut [u8], name: &str) {
    if let Some(field) = head.get_mut(OFF_FILE_NAME..OFF_FILE_NAME + FILE_NAME_LEN) {
        field.fill(0);
        let bytes = name.as_bytes();
        let n = bytes.len().min(FILE_NAME_LEN - 1);
        field[..n].copy_from_slice(&bytes[..n]);
    }
}

/// Packs a line of 16-bit samples into 10-bit datums, filled method A.
fn pack10(src: &[u8], dst: &mut [u8], endian: Endian) {
    let narrow = |s: &[u8]| u32::from(u16::from_le_bytes([s[0], s[1]]) >> 6);
    for (s, d) in src.chunks(6).zip(dst.chunks_exact_mut(4)) {
        // A short last group leaves its missing datums zero.
        let mut word = 0u32;
        for (k, sample) in s.chunks_exact(2).enumerate() {
            word |= narrow(sample) << (22 - 10 * k as u32);
        }
        d.copy_from_slice(&endian.u32_bytes(word));
    }
}

/// Fills the 2048-byte header. `head` is zeroed on entry.
///
/// Numeric fields with no meaning here are set to all ones, SMPTE 268M's
/// "undefined"; text fields stay NUL. FFmpeg reads the film frame rate,
/// timecode and television levels only when they are defined, so all ones
/// keeps it from inventing any.
fn write_header(
    head: &mut [u8],
    opts: &WriteOptions,
    width: u32,
    height: u32,
    channels: usize,
    data_offset: u32,
    size: u32,
) {
    let e = opts.endian;
    let mut put = |off: usize, bytes: &[u8]| {
        if let Some(d) = head.get_mut(off..off + bytes.len()) {
            d.copy_from_slice(bytes);
        }
    };
    // Undefined numeric fields first, then the defined ones over them.
    put(1408, &[0xff; 1644 - 1408]); // orientation header, up to its reserved bytes
    put(1712, &[0xff; 1732 - 1712]); // film: frame position .. shutter angle
    put(1920, &[0xff; 1972 - 1920]); // television: timecode .. integration time
    put(1432, &[0; 1620 - 1432]); // orientation: file name, time, device, serial (text)

    put(0, &e.magic());
    put(OFF_IMAGE_OFFSET, &e.u32_bytes(data_offset));
    put(OFF_VERSION, b"V2.0");
    put(OFF_FILE_SIZE, &e.u32_bytes(size));
    put(OFF_DITTO_KEY, &e.u32_bytes(1)); // 1: a new image, not a repeat of the previous
    put(OFF_GENERIC_SIZE, &e.u32_bytes(1664));
    put(OFF_INDUSTRY_SIZE, &e.u32_bytes(384));
    put(OFF_CREATOR, b"playsim");
    put(OFF_ENCRYPTION, &e.u32_bytes(u32::MAX)); // not encrypted

    put(OFF_ORIENTATION, &e.u16_bytes(0)); // left to right, top to bottom
    put(OFF_N_ELEMENTS, &e.u16_bytes(1));
    put(OFF_WIDTH, &e.u32_bytes(width));
    put(OFF_HEIGHT, &e.u32_bytes(height));

    // Element 0; elements 1 to 7 stay zero, as FFmpeg writes them.
    let max_code = (1u32 << opts.bit_depth) - 1;
    put(OFF_DATA_SIGN, &e.u32_bytes(0)); // unsigned
    put(OFF_LOW_DATA, &e.u32_bytes(0));
    put(OFF_LOW_QUANTITY, &e.u32_bytes(0f32.to_bits()));
    put(OFF_HIGH_DATA, &e.u32_bytes(max_code));
    put(OFF_HIGH_QUANTITY, &e.u32_bytes(1f32.to_bits()));
    put(OFF_DESCRIPTOR, &[if channels == 4 { DESCRIPTOR_RGBA } else { DESCRIPTOR_RGB }]);
    // Transfer 2 is linear, as FFmpeg writes for RGB; colorimetric 4 is
    // "unspecified video", since playsim's frames name no primaries.
    put(OFF_TRANSFER, &[2]);
    put(OFF_COLORIMETRIC, &[4]);
    put(OFF_BIT_DEPTH, &[opts.bit_depth]);
    put(OFF_PACKING, &e.u16_bytes(if opts.bit_depth == 10 { 1 } else { 0 }));
    put(OFF_ENCODING, &e.u16_bytes(0));
    put(OFF_DATA_OFFSET, &e.u32_bytes(data_offset));
    put(OFF_EOL_PADDING, &e.u32_bytes(0));
    put(816, &e.u32_bytes(0)); // end-of-image padding

    // Orientation header: no offset, square pixels; border validity stays undefined.
    put(1408, &e.u32_bytes(0));
    put(1412, &e.u32_bytes(0));
    put(1628, &e.u32_bytes(1));
    put(1632, &e.u32_bytes(1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::noisy_frame;
    use crate::{DpxHeader, ErrorKind};

    fn write(frame: &DecodedFrame, bit_depth: u8) -> Result<Vec<u8>, Error> {
        let mut out = vec![1, 2, 3];
        write_dpx(frame, &WriteOptions { bit_depth, endian: Endian::Big }, &mut out).map(|()| out)
    }

    #[test]
    fn a_header_for_a_laid_out_image_reads_back() {
        let size = 65_536 + 4096 * 3112 * 4;
        let mut head = header_for_layout(4096, 3112, 65_536, size, &WriteOptions::default()).unwrap();
        assert_eq!(head.len(), 65_536);
        set_file_name(&mut head, "frame000007.dpx");
        let h = DpxHeader::parse(&head).unwrap();
        assert_eq!((h.width, h.height, h.bit_depth, h.data_offset), (4096, 3112, 10, 65_536));
        assert_eq!(&head[OFF_FILE_NAME..OFF_FILE_NAME + 16], b"frame000007.dpx\0");
        assert!(header_for_layout(4096, 3112, 1024, size, &WriteOptions::default()).is_err());
        assert!(header_for_layout(0, 3112, 65_536, size, &WriteOptions::default()).is_err());
    }

    #[test]
    fn writes_a_complete_header() {
        for (depth, alpha, endian) in
            [(10, false, Endian::Big), (16, true, Endian::Little), (8, false, Endian::Little)]
        {
            let frame = noisy_frame(5, 3, alpha, depth, 1);
            let mut f = Vec::new();
            write_dpx(&frame, &WriteOptions { bit_depth: depth, endian }, &mut f).unwrap();
            let h = DpxHeader::parse(&f).unwrap();
            assert_eq!(
                (h.endian, h.width, h.height, h.bit_depth, h.has_alpha()),
                (endian, 5, 3, depth, alpha)
            );
            assert_eq!(h.packing, if depth == 10 { 1 } else { 0 });
            assert_eq!(&f[OFF_VERSION..OFF_VERSION + 4], b"V2.0");
            let u32_at = |off: usize| {
                let b = [f[off], f[off + 1], f[off + 2], f[off + 3]];
                if endian == Endian::Big {
                    u32::from_be_bytes(b)
                } else {
                    u32::from_le_bytes(b)
                }
            };
            assert_eq!(u32_at(OFF_FILE_SIZE) as usize, f.len());
            assert_eq!(u32_at(OFF_IMAGE_OFFSET), 2048);
            assert_eq!(u32_at(OFF_DATA_OFFSET), 2048);
            assert_eq!(u32_at(OFF_HIGH_DATA), (1 << depth) - 1);
            assert_eq!(u32_at(OFF_ENCRYPTION), u32::MAX);
            // Lines are whole 32-bit words.
            assert_eq!((f.len() - 2048) % (4 * 3), 0);
        }
    }

    #[test]
    fn refuses_frames_it_cannot_write() {
        let frame = noisy_frame(4, 2, false, 16, 1);
        let err = write(&frame, 12).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert_eq!(err.message(), "cannot write 12-bit dpx, only 8, 10 and 16");

        let mut short = frame.clone();
        short.data.pop();
        let err = write(&short, 10).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert_eq!(err.message(), "frame data is 47 bytes, expected 48 for 4x2 rgb48le");

        let err = write(&DecodedFrame::default(), 10).unwrap_err();
        assert_eq!((err.kind(), err.message()), (ErrorKind::InvalidInput, "frame has no pixel format"));

        let mut empty = frame.clone();
        empty.width = 0;
        assert_eq!(write(&empty, 10).unwrap_err().kind(), ErrorKind::InvalidInput);
        let mut huge = frame;
        huge.width = MAX_DIMENSION + 1;
        assert_eq!(write(&huge, 10).unwrap_err().kind(), ErrorKind::Limit);
    }
}
