//! The frame size from a TIFF file's first directory, read by hand from a few bytes.
//!
//! The tiff crate reads a whole file from a reader; a probe has only some of the file's
//! bytes (see [`FileBytes`]), and a TIFF directory may sit anywhere: FFmpeg, libtiff and
//! this crate's writer put it after the pixels. So the probe reads the header for the
//! directory's offset and, when that lies past the bytes it has, asks for the bytes there.

use playsim_core::{FileBytes, Probe};

/// The byte strings a TIFF file starts with: classic TIFF, then BigTIFF, each in both orders.
pub const MAGIC: [&[u8]; 4] = [b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"];

/// Directory entries read at most: a frame's directory has a few dozen.
const MAX_ENTRIES: u64 = 4096;

const TAG_IMAGE_WIDTH: u16 = 256;
const TAG_IMAGE_LENGTH: u16 = 257;

/// Reads the first image's width and height from `bytes` (see the module's documentation).
pub fn probe(bytes: &FileBytes<'_>) -> Probe {
    let Some(header) = Header::parse(bytes.head()) else { return Probe::Unknown };
    let (count_len, entry_len) = if header.big { (8, 20) } else { (2, 12) };
    let Some(count) = bytes.get(header.ifd_offset, count_len) else {
        return Probe::ReadAt(header.ifd_offset);
    };
    let count = header.uint(count).min(MAX_ENTRIES);
    // Both fit: count is at most MAX_ENTRIES.
    let entries_len = (count * entry_len) as usize;
    let Some(entries) =
        header.ifd_offset.checked_add(count_len as u64).and_then(|at| bytes.get(at, entries_len))
    else {
        return Probe::ReadAt(header.ifd_offset);
    };
    let (mut width, mut height) = (None, None);
    for entry in entries.chunks_exact(entry_len as usize) {
        let tag = header.uint(&entry[..2]) as u16;
        let slot = match tag {
            TAG_IMAGE_WIDTH => &mut width,
            TAG_IMAGE_LENGTH => &mut height,
            _ => continue,
        };
        // Tag, type, count (4 bytes, or 8 in BigTIFF), then the value field, where a single
        // SHORT, LONG or (BigTIFF) LONG8 sits itself, first in the field.
        let value = &entry[if header.big { 12 } else { 8 }..];
        *slot = match header.uint(&entry[2..4]) {
            3 => Some(header.uint(&value[..2])),
            4 => Some(header.uint(&value[..4])),
            16 if header.big => Some(header.uint(&value[..8])),
            _ => None,
        };
    }
    match (width.and_then(|w| u32::try_from(w).ok()), height.and_then(|h| u32::try_from(h).ok())) {
        (Some(width), Some(height)) if width > 0 && height > 0 => Probe::Size { width, height },
        _ => Probe::Unknown,
    }
}

/// The bytes a value of TIFF field type `kind` takes; `None` for a type TIFF does not define.
fn type_bytes(kind: u64) -> Option<u64> {
    Some(match kind {
        1 | 2 | 6 | 7 => 1,   // BYTE, ASCII, SBYTE, UNDEFINED
        3 | 8 => 2,           // SHORT, SSHORT
        4 | 9 | 11 | 13 => 4, // LONG, SLONG, FLOAT, IFD
        5 | 10 | 12 => 8,     // RATIONAL, SRATIONAL, DOUBLE
        16..=18 => 8,         // LONG8, SLONG8, IFD8 (BigTIFF)
        _ => return None,
    })
}

/// Refuses an entry of the first directory of the whole file `file` whose values take more
/// than `max_value_bytes`, or more than the file holds, before the tiff crate reads the
/// directory: it makes room for an entry's values from its count before reading them (up
/// to 256 MiB from a 549-byte file, found by the `tiff_decode` fuzz target). The walk steps
/// as the tiff crate 0.11 reads: an entry of a type TIFF does not define is skipped as 12
/// bytes even in BigTIFF, whose entries are 20 (stepping by 20 put the walk off the crate's,
/// and a 128-byte file's 256 MiB claim behind it). A directory it cannot walk is left for the
/// tiff crate to refuse. Returns the tag, its count and the bytes.
pub(crate) fn oversized_entry(file: &[u8], max_value_bytes: u64) -> Option<(u16, u64, u64)> {
    let header = Header::parse(file)?;
    let (count_len, entry_len, value_count_len) =
        if header.big { (8usize, 20usize, 8usize) } else { (2, 12, 4) };
    let ifd = usize::try_from(header.ifd_offset).ok()?;
    let count = header.uint(file.get(ifd..ifd.checked_add(count_len)?)?).min(MAX_ENTRIES);
    let mut at = ifd + count_len;
    for _ in 0..count {
        let tag_and_type = file.get(at..at + 4)?;
        let tag = header.uint(&tag_and_type[..2]) as u16;
        let Some(size) = type_bytes(header.uint(&tag_and_type[2..4])) else {
            at += UNKNOWN_TYPE_ENTRY_BYTES;
            continue;
        };
        let values = header.uint(file.get(at + 4..at + 4 + value_count_len)?);
        let bytes = values.saturating_mul(size);
        if bytes > max_value_bytes || bytes > file.len() as u64 {
            return Some((tag, values, bytes));
        }
        at += entry_len;
    }
    None
}

/// The bytes the tiff crate (0.11) skips for an entry of an unknown type: its tag and type,
/// and two 4-byte words, in classic TIFF and BigTIFF alike.
const UNKNOWN_TYPE_ENTRY_BYTES: usize = 12;

/// Rewrites the width and height in the first directory of the TIFF file `file`, in place;
/// false when the file has no such entries or a new value does not fit their type.
pub(crate) fn set_size(file: &mut [u8], width: u32, height: u32) -> bool {
    let Some(header) = Header::parse(file) else { return false };
    let (count_len, entry_len) = if header.big { (8usize, 20usize) } else { (2, 12) };
    let Ok(ifd) = usize::try_from(header.ifd_offset) else { return false };
    let Some(count) = file.get(ifd..ifd.saturating_add(count_len)) else { return false };
    let count = header.uint(count).min(MAX_ENTRIES) as usize;
    let mut done = 0;
    for i in 0..count {
        let at = ifd + count_len + i * entry_len;
        let Some(entry) = file.get_mut(at..at + entry_len) else { return false };
        let value = match header.uint(&entry[..2]) as u16 {
            TAG_IMAGE_WIDTH => width,
            TAG_IMAGE_LENGTH => height,
            _ => continue,
        };
        let field = if header.big { 12 } else { 8 };
        let bytes: Vec<u8> = match header.uint(&entry[2..4]) {
            3 => match u16::try_from(value) {
                Ok(v) if header.big_endian => v.to_be_bytes().to_vec(),
                Ok(v) => v.to_le_bytes().to_vec(),
                Err(_) => return false,
            },
            4 if header.big_endian => value.to_be_bytes().to_vec(),
            4 => value.to_le_bytes().to_vec(),
            16 if header.big && header.big_endian => u64::from(value).to_be_bytes().to_vec(),
            16 if header.big => u64::from(value).to_le_bytes().to_vec(),
            _ => return false,
        };
        entry[field..field + bytes.len()].copy_from_slice(&bytes);
        done += 1;
    }
    done == 2
}

/// What the first bytes of a TIFF file say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Big-endian (`MM`) rather than little-endian (`II`).
    pub big_endian: bool,
    /// BigTIFF: 8-byte offsets and counts.
    pub big: bool,
    /// Where the first directory is.
    pub ifd_offset: u64,
}

impl Header {
    /// The header at the start of `head`, when it is one.
    pub(crate) fn parse(head: &[u8]) -> Option<Header> {
        let (big_endian, big) = match head.get(..4)? {
            b"II*\0" => (false, false),
            b"MM\0*" => (true, false),
            b"II+\0" => (false, true),
            b"MM\0+" => (true, true),
            _ => return None,
        };
        let mut header = Header { big_endian, big, ifd_offset: 0 };
        header.ifd_offset = if big { header.uint(head.get(8..16)?) } else { header.uint(head.get(4..8)?) };
        Some(header)
    }

    /// The unsigned integer in `bytes` (1 to 8 of them), in the file's byte order.
    fn uint(&self, bytes: &[u8]) -> u64 {
        let fold = |v: u64, b: &u8| v << 8 | u64::from(*b);
        if self.big_endian {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::noisy_frame;
    use crate::{write_tiff, Endian, Sample, WriteOptions};

    /// What the probe says with the file's first `head` bytes, then with a window at the
    /// offset it asked for, as the registry reads them.
    fn probe_in_two_reads(file: &[u8], head: usize) -> Probe {
        let head = &file[..head.min(file.len())];
        let first = [(0, head)];
        match probe(&FileBytes::new(file.len() as u64, &first)) {
            Probe::ReadAt(offset) => {
                let at = (offset as usize).min(file.len());
                let windows = [(0, head), (offset, &file[at..])];
                probe(&FileBytes::new(file.len() as u64, &windows))
            }
            answer => answer,
        }
    }

    #[test]
    fn an_entry_whose_count_the_file_cannot_hold_is_found_before_the_tiff_crate_reads_it() {
        let frame = noisy_frame(300, 7, true, Sample::U16, 1);
        for endian in [Endian::Little, Endian::Big] {
            let mut file = Vec::new();
            write_tiff(&frame, &WriteOptions { endian, ..WriteOptions::default() }, &mut file).unwrap();
            assert_eq!(oversized_entry(&file, 1 << 20), None, "a well-formed file");
            // The first entry's count (bytes 4..8 of the entry), set to 2^28.
            let header = Header::parse(&file).unwrap();
            let count_at = header.ifd_offset as usize + 2 + 4;
            let count =
                if header.big_endian { (1u32 << 28).to_be_bytes() } else { (1u32 << 28).to_le_bytes() };
            file[count_at..count_at + 4].copy_from_slice(&count);
            let (_, values, bytes) = oversized_entry(&file, 1 << 20).unwrap();
            assert_eq!(values, 1 << 28);
            assert!(bytes >= 1 << 28, "{bytes}");
        }
        // The tiff_decode fuzz target's BigTIFF input: an entry of an unknown type, which the
        // tiff crate skips as 12 bytes (not BigTIFF's 20), then entries whose count it reads.
        let bigtiff = include_bytes!(
            "../../playsim-fuzz/crashes/tiff_decode/tiff-0.11-bigtiff-unknown-type-entry-hides-256mib-count.tif"
        );
        let (_, _, bytes) = oversized_entry(bigtiff, 1 << 20).expect("the walk finds the claim");
        assert!(bytes > 1 << 20, "{bytes}");
        // Cut anywhere: an answer or none, never a panic.
        let mut file = Vec::new();
        write_tiff(&frame, &WriteOptions::default(), &mut file).unwrap();
        for cut in 0..file.len() {
            let _ = oversized_entry(&file[..cut], 1 << 20);
        }
    }

    #[test]
    fn finds_the_directory_after_the_pixels_in_either_byte_order() {
        let frame = noisy_frame(300, 7, true, Sample::U16, 1);
        for endian in [Endian::Little, Endian::Big] {
            let mut file = Vec::new();
            write_tiff(&frame, &WriteOptions { endian, ..WriteOptions::default() }, &mut file).unwrap();
            let header = Header::parse(&file).unwrap();
            assert!(header.ifd_offset > 16_000, "the directory follows the pixels");
            let head = [(0, &file[..64])];
            assert_eq!(probe(&FileBytes::new(file.len() as u64, &head)), Probe::ReadAt(header.ifd_offset));
            assert_eq!(probe_in_two_reads(&file, 64), Probe::Size { width: 300, height: 7 });
            assert_eq!(probe_in_two_reads(&file, file.len()), Probe::Size { width: 300, height: 7 });
        }
    }

    #[test]
    fn reads_short_and_bigtiff_long8_sizes() {
        // A BigTIFF directory of two entries: width as LONG8, height as SHORT.
        let mut file = b"II+\0\x08\0\0\0".to_vec();
        file.extend(16u64.to_le_bytes());
        file.extend(2u64.to_le_bytes());
        for (tag, kind, value) in [(256u16, 16u16, 70_000u64), (257, 3, 1080)] {
            file.extend(tag.to_le_bytes());
            file.extend(kind.to_le_bytes());
            file.extend(1u64.to_le_bytes());
            file.extend(value.to_le_bytes());
        }
        assert_eq!(probe_in_two_reads(&file, file.len()), Probe::Size { width: 70_000, height: 1080 });
    }

    #[test]
    fn damaged_or_foreign_bytes_say_unknown_without_panicking() {
        let frame = noisy_frame(5, 3, false, Sample::U8, 2);
        let mut file = Vec::new();
        write_tiff(&frame, &WriteOptions { sample: Sample::U8, ..WriteOptions::default() }, &mut file)
            .unwrap();
        // Cut anywhere before the end of the directory's entries: no size, and no panic. (The
        // out-of-line values after the entries hold nothing the probe needs.)
        let header = Header::parse(&file).unwrap();
        let entries_end = header.ifd_offset as usize + 2 + 12 * usize::from(file[header.ifd_offset as usize]);
        for cut in 0..file.len() {
            let answer = probe_in_two_reads(&file[..cut], cut);
            if cut < entries_end {
                assert!(matches!(answer, Probe::Unknown | Probe::ReadAt(_)), "cut at {cut}: {answer:?}");
            } else {
                assert_eq!(answer, Probe::Size { width: 5, height: 3 }, "cut at {cut}");
            }
        }
        assert_eq!(probe_in_two_reads(b"SDPX and more", 13), Probe::Unknown);
        // A directory offset past any file.
        let mut far = file.clone();
        far[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            probe(&FileBytes::new(far.len() as u64, &[(0, &far[..])])),
            Probe::ReadAt(u64::from(u32::MAX))
        );
        assert_eq!(probe_in_two_reads(&far, far.len()), Probe::ReadAt(u64::from(u32::MAX)));
    }
}
