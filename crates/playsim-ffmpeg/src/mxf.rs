//! The packet index of an MXF file from its own index table segments (SMPTE ST 377-1),
//! reading only partition packs, index segments and edit-unit headers, never the media.
//!
//! FFmpeg's MXF demuxer parses these tables too, but keeps them to itself, so playsim
//! reads them here and FFmpeg only decodes. The steps:
//! 1. the partitions, from the Random Index Pack at the end of the file (or, without
//!    one, the chain of partition packs back from the footer);
//! 2. each partition's index table segments, and where its essence starts
//!    (after the pack, the header metadata and the index: `HeaderByteCount` and
//!    `IndexByteCount` bytes), with the essence stream offset it starts at (`BodyOffset`);
//! 3. each edit unit's stream offset: `n × EditUnitByteCount` for constant-size edit
//!    units, or the `IndexEntryArray` entry; mapped to a file offset through the partitions;
//! 4. the picture element inside the edit unit (after any system item), from the
//!    KLV headers at the start of the edit unit: once for constant-size edit units
//!    (checked against the last one too), else once per edit unit.

use crate::PacketEntry;

/// Reads up to `len` bytes at an offset; fewer only at the end of the file.
pub(crate) type ReadAt<'a> = dyn Fn(u64, usize) -> Result<Vec<u8>, String> + 'a;

const UL_PREFIX: [u8; 4] = [0x06, 0x0e, 0x2b, 0x34];
/// Partition packs: `06.0e.2b.34.02.05.01.01.0d.01.02.01.01.kind.status.00`.
const PARTITION_PREFIX: [u8; 13] =
    [0x06, 0x0e, 0x2b, 0x34, 0x02, 0x05, 0x01, 0x01, 0x0d, 0x01, 0x02, 0x01, 0x01];
const INDEX_SEGMENT: [u8; 16] =
    [0x06, 0x0e, 0x2b, 0x34, 0x02, 0x53, 0x01, 0x01, 0x0d, 0x01, 0x02, 0x01, 0x01, 0x10, 0x01, 0x00];
const RIP_KIND: u8 = 0x11;
/// Generic-container essence elements: `06.0e.2b.34.01.02.01.01.0d.01.03.01.item...`.
const ESSENCE_PREFIX: [u8; 12] = [0x06, 0x0e, 0x2b, 0x34, 0x01, 0x02, 0x01, 0x01, 0x0d, 0x01, 0x03, 0x01];
/// Item types of picture elements: GC picture, and CP picture (D-10).
const PICTURE_ITEMS: [u8; 2] = [0x15, 0x05];
/// Bytes read at an edit unit's start to find its picture element.
const EDIT_UNIT_HEAD: usize = 8192;
/// More edit units than this is not a real file.
const MAX_EDIT_UNITS: u64 = 50_000_000;

/// KLV fill items: `06.0e.2b.34.01.01.01.(01|02).03.01.02.10.01.00.00.00`.
fn is_fill(key: &[u8; 16]) -> bool {
    key[..7] == [0x06, 0x0e, 0x2b, 0x34, 0x01, 0x01, 0x01]
        && key[8..14] == [0x03, 0x01, 0x02, 0x10, 0x01, 0x00]
}

/// A KLV triplet's key and where its value is.
struct Klv {
    key: [u8; 16],
    /// Bytes of key and length before the value.
    header_len: u64,
    len: u64,
}

/// Parses the KLV header at the start of `bytes`.
fn klv(bytes: &[u8]) -> Option<Klv> {
    let key: [u8; 16] = bytes.get(..16)?.try_into().ok()?;
    let first = *bytes.get(16)?;
    let (len, len_bytes) = if first < 0x80 {
        (u64::from(first), 1)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 8 {
            return None;
        }
        let len = bytes.get(17..17 + n)?.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b));
        (len, 1 + n)
    };
    Some(Klv { key, header_len: 16 + len_bytes as u64, len })
}

fn be(bytes: &[u8], at: usize, n: usize) -> Option<u64> {
    Some(bytes.get(at..at + n)?.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b)))
}

/// A partition pack: where its header metadata, index and essence are.
#[derive(Clone, Copy, Debug)]
struct Partition {
    offset: u64,
    /// First byte after the pack's KLV.
    pack_end: u64,
    previous: u64,
    footer: u64,
    header_byte_count: u64,
    index_byte_count: u64,
    index_sid: u32,
    body_offset: u64,
    body_sid: u32,
}

impl Partition {
    fn essence_start(&self) -> u64 {
        self.pack_end.saturating_add(self.header_byte_count).saturating_add(self.index_byte_count)
    }
}

fn read_partition(read: &ReadAt<'_>, offset: u64) -> Result<Partition, String> {
    let bytes = read(offset, 256)?;
    let k = klv(&bytes).ok_or_else(|| format!("no KLV at byte {offset}"))?;
    if k.key[..13] != PARTITION_PREFIX || !(0x02..=0x04).contains(&k.key[13]) {
        return Err(format!("no partition pack at byte {offset}"));
    }
    let v = bytes.get(k.header_len as usize..).unwrap_or_default();
    let field = |at, n| be(v, at, n).ok_or_else(|| format!("short partition pack at byte {offset}"));
    // `HeaderByteCount` starts after the fill that aligns the header metadata to the KAG
    // (as FFmpeg and other muxers write it), so skip a fill right after the pack.
    let mut pack_len = k.header_len.saturating_add(k.len);
    if let Some(fill) = usize::try_from(pack_len).ok().and_then(|at| bytes.get(at..)).and_then(klv) {
        if is_fill(&fill.key) {
            pack_len = pack_len.saturating_add(fill.header_len).saturating_add(fill.len);
        }
    }
    Ok(Partition {
        offset,
        pack_end: offset.saturating_add(pack_len),
        previous: field(16, 8)?,
        footer: field(24, 8)?,
        header_byte_count: field(32, 8)?,
        index_byte_count: field(40, 8)?,
        index_sid: field(48, 4)? as u32,
        body_offset: field(52, 8)?,
        body_sid: field(60, 4)? as u32,
    })
}

/// The partition offsets, from the Random Index Pack, else by the chain from the footer.
fn partition_offsets(read: &ReadAt<'_>, size: u64, header: &Partition) -> Result<Vec<u64>, String> {
    if size >= 4 {
        let tail = read(size - 4, 4)?;
        let rip_len = be(&tail, 0, 4).unwrap_or(0);
        if rip_len > 20 && rip_len <= size && rip_len < 1 << 20 {
            let rip = read(size - rip_len, rip_len as usize)?;
            if let Some(k) = klv(&rip).filter(|k| k.key[..13] == PARTITION_PREFIX && k.key[13] == RIP_KIND) {
                let body = rip.get(k.header_len as usize..rip.len().saturating_sub(4)).unwrap_or_default();
                let offsets: Vec<u64> = body.chunks_exact(12).filter_map(|e| be(e, 4, 8)).collect();
                if !offsets.is_empty() {
                    return Ok(offsets);
                }
            }
        }
    }
    let mut offsets = vec![0];
    let mut at = header.footer;
    while at != 0 && !offsets.contains(&at) && offsets.len() < 100_000 {
        offsets.push(at);
        at = read_partition(read, at)?.previous;
    }
    Ok(offsets)
}

/// One index table segment's fields that matter here.
#[derive(Clone, Debug, Default)]
struct IndexSegment {
    index_sid: u32,
    body_sid: u32,
    start: u64,
    duration: u64,
    edit_unit_byte_count: u64,
    /// (stream offset, keyframe) per edit unit, for variable-size edit units.
    entries: Vec<(u64, bool)>,
}

fn parse_segment(v: &[u8]) -> Option<IndexSegment> {
    let mut seg = IndexSegment::default();
    let (mut slices, mut pos_entries) = (0usize, 0usize);
    let mut entry_array: Option<&[u8]> = None;
    let mut at = 0;
    while at + 4 <= v.len() {
        let tag = be(v, at, 2)? as u16;
        let len = be(v, at + 2, 2)? as usize;
        let value = v.get(at + 4..at + 4 + len)?;
        match tag {
            0x3f06 => seg.index_sid = be(value, 0, 4)? as u32,
            0x3f07 => seg.body_sid = be(value, 0, 4)? as u32,
            0x3f0c => seg.start = be(value, 0, 8)?,
            0x3f0d => seg.duration = be(value, 0, 8)?,
            0x3f05 => seg.edit_unit_byte_count = be(value, 0, 4)?,
            0x3f08 => slices = usize::from(*value.first()?),
            0x3f0e => pos_entries = usize::from(*value.first()?),
            0x3f0a => entry_array = Some(value),
            _ => {}
        }
        at += 4 + len;
    }
    if let Some(array) = entry_array {
        let (count, item_len) = (be(array, 0, 4)? as usize, be(array, 4, 4)? as usize);
        if item_len < 11 + 4 * slices + 8 * pos_entries {
            return None;
        }
        for entry in array.get(8..)?.chunks_exact(item_len).take(count) {
            // TemporalOffset, KeyFrameOffset, Flags (bit 7: random access), StreamOffset.
            seg.entries.push((be(entry, 3, 8)?, entry[2] & 0x80 != 0));
        }
    }
    Some(seg)
}

fn read_segments(read: &ReadAt<'_>, p: &Partition) -> Result<Vec<IndexSegment>, String> {
    if p.index_byte_count == 0 {
        return Ok(Vec::new());
    }
    let len = usize::try_from(p.index_byte_count).map_err(|_| "index too large".to_owned())?;
    if len > 256 << 20 {
        return Err(format!("an index of {len} bytes in the partition at byte {}", p.offset));
    }
    let bytes = read(p.pack_end.saturating_add(p.header_byte_count), len)?;
    let mut segments = Vec::new();
    let mut at = 0usize;
    while let Some(k) = bytes.get(at..).and_then(klv) {
        let start = at + k.header_len as usize;
        let Some(end) = usize::try_from(k.len).ok().and_then(|len| start.checked_add(len)) else { break };
        let Some(value) = bytes.get(start..end) else { break };
        if k.key == INDEX_SEGMENT {
            let seg = parse_segment(value).ok_or_else(|| format!("bad index segment at byte {}", at))?;
            segments.push(seg);
        }
        at = end;
    }
    Ok(segments)
}

/// Where, inside an edit unit, its picture element's value starts, and its length.
fn picture_in_edit_unit(head: &[u8]) -> Option<(u64, u64)> {
    let mut at = 0usize;
    while let Some(k) = head.get(at..).and_then(klv) {
        if k.key[..4] != UL_PREFIX {
            return None;
        }
        if k.key[..12] == ESSENCE_PREFIX && PICTURE_ITEMS.contains(&k.key[12]) {
            return Some((at as u64 + k.header_len, k.len));
        }
        at = at.checked_add(k.header_len as usize)?.checked_add(usize::try_from(k.len).ok()?)?;
    }
    None
}

/// The picture packets of the MXF file of `size` bytes, in edit-unit order, from its index tables.
pub(crate) fn index(read: &ReadAt<'_>, size: u64) -> Result<Vec<PacketEntry>, String> {
    let header = read_partition(read, 0)?;
    let mut partitions: Vec<Partition> = partition_offsets(read, size, &header)?
        .into_iter()
        .map(|offset| read_partition(read, offset))
        .collect::<Result<_, _>>()?;
    partitions.sort_by_key(|p| p.offset);
    partitions.dedup_by_key(|p| p.offset);

    // The essence of each body: chunks of its stream, each from a partition's essence start
    // to the next partition.
    let mut chunks = Vec::new();
    for (i, p) in partitions.iter().enumerate() {
        if p.body_sid != 0 {
            let end = partitions.get(i + 1).map_or(size, |next| next.offset);
            if p.essence_start() < end {
                chunks.push((p.body_sid, p.body_offset, p.essence_start(), end));
            }
        }
    }
    let mut segments = Vec::new();
    for p in &partitions {
        segments.extend(read_segments(read, p)?);
    }
    let Some(&(body_sid, ..)) = chunks.first() else { return Err("no partition holds essence".into()) };
    let index_sid = partitions.iter().find(|p| p.body_sid == body_sid).map_or(0, |p| p.index_sid);
    segments.retain(|s| s.body_sid == body_sid || (s.body_sid == 0 && s.index_sid == index_sid));
    if segments.is_empty() {
        return Err("no index table segment".into());
    }
    // The header and the footer may both carry a segment; keep one per start, the fuller.
    segments.sort_by_key(|s| (s.start, std::cmp::Reverse(s.entries.len()), std::cmp::Reverse(s.duration)));
    segments.dedup_by_key(|s| s.start);

    let to_file = |stream_offset: u64| {
        chunks
            .iter()
            .filter(|c| c.0 == body_sid && c.1 <= stream_offset)
            .map(|&(_, body_offset, start, end)| (start.saturating_add(stream_offset - body_offset), end))
            .rfind(|&(file, end)| file < end)
            .map(|(file, _)| file)
    };
    let body_bytes: u64 = chunks.iter().filter(|c| c.0 == body_sid).map(|c| c.3 - c.2).sum();

    // Each edit unit: its file offset and whether it is a random access point.
    let mut units: Vec<(u64, bool)> = Vec::new();
    let constant = segments.iter().all(|s| s.edit_unit_byte_count > 0);
    if constant {
        let eubc = segments[0].edit_unit_byte_count;
        if segments.iter().any(|s| s.edit_unit_byte_count != eubc) {
            return Err("index segments disagree on the edit unit size".into());
        }
        let listed: u64 = segments.iter().map(|s| s.duration).sum();
        let n = if listed > 0 { listed } else { body_bytes / eubc };
        if n > MAX_EDIT_UNITS {
            return Err(format!("{n} edit units"));
        }
        for i in 0..n {
            units.push((
                to_file(i * eubc).ok_or_else(|| format!("edit unit {i} is outside the essence"))?,
                true,
            ));
        }
    } else {
        for (i, &(stream_offset, key)) in segments.iter().flat_map(|s| s.entries.iter()).enumerate() {
            let file =
                to_file(stream_offset).ok_or_else(|| format!("edit unit {i} is outside the essence"))?;
            units.push((file, key));
        }
    }
    if units.is_empty() {
        return Err("the index lists no edit units".into());
    }

    let picture_at = |file: u64| -> Result<(u64, u64), String> {
        let head = read(file, EDIT_UNIT_HEAD)?;
        picture_in_edit_unit(&head)
            .ok_or_else(|| format!("no picture element at the edit unit at byte {file}"))
    };
    let mut packets = Vec::with_capacity(units.len());
    if constant {
        // Constant-size edit units share one layout: learn it from the first, check the last.
        let layout = picture_at(units[0].0)?;
        if let Some(&(last, _)) = units.last() {
            if picture_at(last)? != layout {
                return Err("edit units of constant size with different layouts".into());
            }
        }
        let (delta, len) = layout;
        packets.extend(units.iter().enumerate().map(|(i, &(file, key))| PacketEntry {
            offset: file + delta,
            size: len,
            timestamp: i as i64,
            keyframe: key,
        }));
    } else {
        for (i, &(file, key)) in units.iter().enumerate() {
            let (delta, len) = picture_at(file)?;
            packets.push(PacketEntry { offset: file + delta, size: len, timestamp: i as i64, keyframe: key });
        }
    }
    if let Some(p) = packets.iter().find(|p| p.offset.saturating_add(p.size) > size) {
        return Err(format!("a picture at byte {} runs past the end of the file", p.offset));
    }
    Ok(packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/video").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn reader(bytes: &[u8]) -> impl Fn(u64, usize) -> Result<Vec<u8>, String> + '_ {
        move |offset, len| {
            let start = (offset as usize).min(bytes.len());
            Ok(bytes[start..(start + len).min(bytes.len())].to_vec())
        }
    }

    #[test]
    fn ffmpeg_written_dnxhr_mxf_is_indexed_from_its_tables() {
        let bytes = fixture("dnxhr-hqx-tiny.mxf");
        let packets = index(&reader(&bytes), bytes.len() as u64).unwrap();
        assert_eq!(packets.len(), 12);
        for (i, p) in packets.iter().enumerate() {
            // Where FFmpeg's demuxer finds them: a 16 KiB picture element 512 bytes into
            // each 17 KiB edit unit (after the system item), essence from byte 5632.
            assert_eq!((p.offset, p.size), (5632 + 512 + 20 + i as u64 * 17408, 16384), "packet {i}");
            // Each is a whole DNxHR frame: its header prefix is at the packet's first byte.
            let at = p.offset as usize;
            assert_eq!(&bytes[at..at + 4], &[0, 0, 2, 0x80], "packet {i} at {}", p.offset);
            assert!(p.keyframe);
            assert_eq!(p.timestamp, i as i64);
        }
    }

    #[test]
    fn broken_mxf_is_an_error_not_a_panic() {
        let bytes = fixture("dnxhr-hqx-tiny.mxf");
        for cut in [0, 10, 200, 5000, bytes.len() / 2, bytes.len() - 30] {
            let short = &bytes[..cut];
            let _ = index(&reader(short), short.len() as u64);
        }
        let mut garbled = bytes.clone();
        for b in garbled.iter_mut().skip(100).step_by(7) {
            *b ^= 0x5a;
        }
        let _ = index(&reader(&garbled), garbled.len() as u64);
        assert!(index(&reader(b"not an mxf file at all, just text"), 33).is_err());
    }
}
