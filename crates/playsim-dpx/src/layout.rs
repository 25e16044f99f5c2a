//! Frame files laid out as frametest lays them: a 10-bit RGB DPX image (big-endian, packing
//! method A, 4 bytes a pixel) at a fixed offset, after this crate's header and zeros, and
//! zeros after the image up to the file's size. `playsim frametest -w` writes them; every
//! one is a valid DPX file that playsim and FFmpeg decode.

use crate::encode::{header_for_layout, WriteOptions};
use crate::header::{DpxHeader, Endian};
use crate::Error;

/// The layout of one frame file: its image's size, where the image starts, and the file's
/// size (at least the offset plus the image's `width × height × 4` bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in lines.
    pub height: u32,
    /// Bytes before the image data: the header, then zeros.
    pub data_offset: u64,
    /// Bytes in the file: header, image, and zeros after it.
    pub file_bytes: u64,
}

impl FrameLayout {
    /// The first `data_offset` bytes of every file: the header of a 10-bit RGB image of
    /// this size, with its image at `data_offset`, then zeros. It is checked by reading it
    /// back. Put each file's name in it with [`set_file_name`](crate::set_file_name).
    pub fn header(&self) -> Result<Vec<u8>, Error> {
        let fail = |why: String| Error::invalid_input(format!("cannot make the dpx header of {self}: {why}"));
        let offset = u32::try_from(self.data_offset).map_err(|_| fail("header too large".into()))?;
        let file_size = u32::try_from(self.file_bytes).map_err(|_| fail("file larger than 4 GiB".into()))?;
        let options = WriteOptions { bit_depth: 10, endian: Endian::Big };
        let head = header_for_layout(self.width, self.height, offset, file_size, &options)
            .map_err(|e| fail(e.to_string()))?;
        let parsed = DpxHeader::parse(&head).map_err(|e| fail(e.to_string()))?;
        if (parsed.width, parsed.height, parsed.bit_depth, u64::from(parsed.data_offset))
            != (self.width, self.height, 10, self.data_offset)
        {
            return Err(fail(format!(
                "it reads back as {} at offset {}",
                parsed.describe(),
                parsed.data_offset
            )));
        }
        Ok(head)
    }

    /// Everything after the header: a 10-bit ramp (red across, green down, blue a checker
    /// of both), packed three samples to a big-endian word, then zeros to the file's end.
    pub fn ramp_body(&self) -> Vec<u8> {
        let len = usize::try_from(self.file_bytes.saturating_sub(self.data_offset)).unwrap_or(0);
        let mut body = vec![0u8; len];
        let (w, h) = (self.width as usize, self.height as usize);
        let ramp = |i: usize, n: usize| (i * 1023 / n.saturating_sub(1).max(1)) as u32;
        for (y, row) in body.chunks_exact_mut((w * 4).max(1)).take(h).enumerate() {
            let g = ramp(y, h);
            for (x, pixel) in row.chunks_exact_mut(4).enumerate() {
                let word = ramp(x, w) << 22 | g << 12 | (((x ^ y) & 1023) as u32) << 2;
                pixel.copy_from_slice(&word.to_be_bytes());
            }
        }
        body
    }
}

impl std::fmt::Display for FrameLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}x{} 10-bit rgb at offset {} in {} bytes",
            self.width, self.height, self.data_offset, self.file_bytes
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use playsim_core::{DecodedFrame, Decoder};

    use super::*;
    use crate::{set_file_name, DpxDecoder};

    /// A whole file as frametest's writer lays it out.
    fn file_of(layout: &FrameLayout, name: &str) -> Vec<u8> {
        let mut file = layout.header().unwrap();
        set_file_name(&mut file, name);
        file.extend_from_slice(&layout.ramp_body());
        file
    }

    #[test]
    fn files_are_valid_dpx_with_the_image_at_the_header_offset() {
        for layout in [
            // frametest's sd, and 300 KB files (`-z 300`) after a 64 KB and an 8 KB header.
            FrameLayout { width: 720, height: 480, data_offset: 65_536, file_bytes: 65_536 + 720 * 480 * 4 },
            FrameLayout { width: 4096, height: 14, data_offset: 65_536, file_bytes: 307_200 },
            FrameLayout { width: 4096, height: 18, data_offset: 8_192, file_bytes: 307_200 },
        ] {
            let file = file_of(&layout, "frame000007.dpx");
            assert_eq!(file.len() as u64, layout.file_bytes);
            let h = DpxHeader::parse(&file).unwrap();
            assert_eq!((h.width, h.height, h.bit_depth, h.packing), (layout.width, layout.height, 10, 1));
            assert_eq!(u64::from(h.data_offset), layout.data_offset);
            assert_eq!(u32::from_be_bytes(file[16..20].try_into().unwrap()) as u64, layout.file_bytes);
            assert_eq!(&file[36..52], b"frame000007.dpx\0");
            let mut decoded = DecodedFrame::default();
            DpxDecoder.decode(&file, &mut decoded).unwrap();
            assert_eq!((decoded.width, decoded.height), (layout.width, layout.height));
            // Pixel (1, 2): red 1023/(w-1), green 2*1023/(h-1), blue 1^2, widened to 16 bits.
            let px = 2 * layout.width as usize + 1;
            let sample = |c: usize| {
                u16::from_le_bytes([decoded.data[px * 6 + 2 * c], decoded.data[px * 6 + 2 * c + 1]])
            };
            let widen = |v: u16| v << 6 | v >> 4;
            let ramp = |i: u32, n: u32| (i * 1023 / (n - 1).max(1)) as u16;
            assert_eq!(sample(0), widen(ramp(1, layout.width)));
            assert_eq!(sample(1), widen(ramp(2, layout.height)));
            assert_eq!(sample(2), widen(3));
        }
    }

    #[test]
    fn layouts_that_cannot_be_dpx_are_refused() {
        let too_large = FrameLayout { width: 16, height: 16, data_offset: 65_536, file_bytes: 5 << 30 };
        assert!(too_large.header().unwrap_err().to_string().contains("larger than 4 GiB"));
        let no_header = FrameLayout { width: 16, height: 16, data_offset: 100, file_bytes: 2_000 };
        assert!(no_header.header().unwrap_err().to_string().contains("cannot make the dpx header of 16x16"));
    }
}
