//! Finding the first part's full-resolution chunks, and writing `exr`'s
//! decompressed blocks into the frame as canonical pixels.
//!
//! Entry `i` of the first part's offset table is block `i` in increasing-y,
//! left-to-right order (for mip- and rip-maps the full-resolution level comes
//! first), whatever the line order of the file; every chunk's own coordinates
//! must agree with the entry that points to it, as OpenEXR requires. So every
//! block has a fixed place, and bands of blocks (one row of tiles, or one
//! scanline block) can be decoded in any order, on any thread, each into its
//! own rows of the frame.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use exr::block::chunk::{
    Chunk, CompressedBlock, CompressedScanLineBlock, CompressedTileBlock, TileCoordinates,
};
use exr::block::UncompressedBlock;
use exr::compression::Compression as ExrCompression;
use exr::math::Vec2;
use exr::meta::{BlockDescription, MetaData};
use exr::prelude::f16;

use super::{exr_error, pool};
use crate::{Error, SampleType, SelectedChannels, MAX_DECODED_BYTES};

/// Where a frame's chunks are, and where their samples go.
#[derive(Debug)]
pub(super) struct Plan {
    /// Data window size.
    width: usize,
    height: usize,
    /// The tile size, or the data window's width by the method's lines per block.
    block_width: usize,
    block_height: usize,
    blocks_x: usize,
    blocks_y: usize,
    tiled: bool,
    /// Chunks of multi-part files start with their part number.
    multipart: bool,
    /// The data window's first line: scanline chunks name their first line in file coordinates.
    y_min: i64,
    /// Bytes per pixel of all the file's channels: a block row holds each channel's line in turn.
    file_pixel_bytes: usize,
    out_pixel_bytes: usize,
    channels: Vec<OutChannel>,
    /// Byte offset of the first part's offset table.
    table_start: usize,
    /// The first byte after every part's offset table.
    chunks_start: usize,
}

/// One selected channel.
#[derive(Debug)]
struct OutChannel {
    /// Bytes per pixel of the file's channels before this one: its line
    /// starts `block width × line_offset` bytes into a block row.
    line_offset: usize,
    /// Byte offset of its sample in an output pixel.
    out_offset: usize,
    sample: SampleType,
}

impl Plan {
    /// Lays out the decode of `selected` from the first part of `meta`.
    pub(super) fn new(
        meta: &MetaData,
        table_start: usize,
        file_len: usize,
        selected: &SelectedChannels,
        max_decoded_bytes: u64,
    ) -> Result<Plan, Error> {
        let header = meta.headers.first().ok_or_else(|| Error::malformed("the file has no header"))?;
        let (width, height) = (selected.width as usize, selected.height as usize);
        let (block_width, block_height, tiled) = match header.blocks {
            BlockDescription::ScanLines => (width, header.compression.scan_lines_per_block(), false),
            BlockDescription::Tiles(tiles) => (tiles.tile_size.width(), tiles.tile_size.height(), true),
        };
        if block_width == 0 || block_height == 0 {
            return Err(Error::malformed(format!("tile size {block_width}x{block_height} is empty")));
        }
        let (blocks_x, blocks_y) = (width.div_ceil(block_width), height.div_ceil(block_height));

        let mut line_offsets = Vec::with_capacity(header.channels.list.len());
        let mut file_pixel_bytes = 0;
        for c in &header.channels.list {
            line_offsets.push((c.name.to_string(), file_pixel_bytes));
            file_pixel_bytes += c.sample_type.bytes_per_sample();
        }
        let channels = selected
            .channels
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let (_, line_offset) = line_offsets
                    .iter()
                    .find(|(name, _)| *name == c.name)
                    .ok_or_else(|| Error::malformed(format!("channel {} is not in the header", c.name)))?;
                Ok(OutChannel { line_offset: *line_offset, out_offset: 4 * k, sample: c.sample })
            })
            .collect::<Result<Vec<_>, Error>>()?;

        // `exr` decompresses every channel of a block, selected or not: bound that
        // too, before a header with thousands of channels makes it allocate.
        let all_bytes = (width * height) as u64 * file_pixel_bytes as u64;
        let limit = max_decoded_bytes.min(MAX_DECODED_BYTES);
        if all_bytes > limit {
            return Err(Error::limit(format!(
                "the {} channels of the {width}x{height} data window decode to {all_bytes} bytes, more than the \
                 {limit}-byte limit",
                header.channels.list.len()
            )));
        }

        let n_blocks = blocks_x * blocks_y; // at most the pixel count
        if n_blocks > header.chunk_count {
            return Err(Error::malformed(format!(
                "{n_blocks} blocks in the data window but {} chunks in the file",
                header.chunk_count
            )));
        }
        // Every part's offset table comes before the first chunk.
        let n_chunks = meta.headers.iter().try_fold(0usize, |n, h| n.checked_add(h.chunk_count));
        let chunks_start = n_chunks.and_then(|n| n.checked_mul(8)?.checked_add(table_start));
        let chunks_start = chunks_start.filter(|&end| end <= file_len).ok_or_else(|| {
            Error::malformed(format!(
                "truncated offset table: {} entries from byte {table_start}, but the file is {file_len} bytes",
                n_chunks.map_or_else(|| "too many".to_owned(), |n| n.to_string())
            ))
        })?;

        Ok(Plan {
            width,
            height,
            block_width,
            block_height,
            blocks_x,
            blocks_y,
            tiled,
            multipart: meta.requirements.is_multilayer(),
            y_min: i64::from(header.own_attributes.layer_position.y()),
            file_pixel_bytes,
            out_pixel_bytes: 4 * selected.channels.len(),
            channels,
            table_start,
            chunks_start,
        })
    }

    /// Decodes band `band` (one scanline block, or one row of tiles) into its rows of the frame.
    fn decode_band(
        &self,
        encoded: &[u8],
        meta: &MetaData,
        band: usize,
        rows: &mut [u8],
    ) -> Result<(), Error> {
        for tile_x in 0..self.blocks_x {
            let chunk = self.read_chunk(encoded, tile_x, band)?;
            if matches!(
                meta.headers.first().map(|h| h.compression),
                Some(ExrCompression::DWAA(_) | ExrCompression::DWAB(_))
            ) {
                self.check_dwa_counters(&chunk, tile_x, band)?;
            }
            let block = UncompressedBlock::decompress_chunk(chunk, meta, false)
                .map_err(|e| exr_error(e, &self.block_name(tile_x, band)))?;
            self.put_block(&block, tile_x, band, rows)?;
        }
        Ok(())
    }

    /// Refuses a DWA chunk whose counters claim more than a block of this size could need.
    ///
    /// exr 1.74 sizes its buffers from the eleven counters at the start of a DWA chunk
    /// before it inflates anything (2 GiB from a 10 KB file, found by the `exr_decode` fuzz
    /// target). No block needs more than twice its samples padded to 8x8 DCT blocks: the
    /// raw ("unknown") and RLE data are at most the block's bytes (RLE tokens add one byte
    /// per 127), AC and DC coefficients at most one 16-bit value per sample.
    fn check_dwa_counters(&self, chunk: &Chunk, tile_x: usize, band: usize) -> Result<(), Error> {
        let data = match &chunk.compressed_block {
            CompressedBlock::ScanLine(b) => &b.compressed_pixels_le,
            CompressedBlock::Tile(b) => &b.compressed_pixels_le,
            _ => return Ok(()),
        };
        // A chunk as large as its block is stored raw, with no counters.
        let w = self.block_width.min(self.width.saturating_sub(tile_x * self.block_width));
        let h = self.block_height.min(self.height.saturating_sub(band * self.block_height));
        if data.len() == w * h * self.file_pixel_bytes {
            return Ok(());
        }
        let counter = |i: usize| {
            data.get(8 * i..8 * i + 8).and_then(|b| <[u8; 8]>::try_from(b).ok()).map(u64::from_le_bytes)
        };
        let padded = (w.div_ceil(8) * 8 * h.div_ceil(8) * 8 * self.file_pixel_bytes) as u64;
        let most = padded.saturating_mul(2).saturating_add(1 << 16);
        // unknown uncompressed, RLE uncompressed, RLE raw (bytes); AC and DC counts (u16s).
        for (i, unit) in [(1, 1u64), (6, 1), (7, 1), (8, 2), (9, 2)] {
            let Some(value) = counter(i) else { return Ok(()) };
            if value.saturating_mul(unit) > most {
                return Err(Error::malformed(format!(
                    "{}: its DWA header claims {} bytes for a {w}x{h} block that needs at most {most} \
                     (corrupt chunk)",
                    self.block_name(tile_x, band),
                    value.saturating_mul(unit)
                )));
            }
        }
        Ok(())
    }

    /// Reads the chunk of block (`tile_x`, `tile_y`) from the encoded file, checking that it is that block.
    fn read_chunk(&self, encoded: &[u8], tile_x: usize, tile_y: usize) -> Result<Chunk, Error> {
        let name = || self.block_name(tile_x, tile_y);
        // In range: Plan::new checked the whole table against the file length.
        let entry = self.table_start + 8 * (tile_y * self.blocks_x + tile_x);
        let offset = encoded
            .get(entry..entry + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| Error::malformed(format!("{}: its offset table entry is missing", name())))?;
        let start = usize::try_from(offset)
            .ok()
            .filter(|&at| at >= self.chunks_start && at < encoded.len())
            .ok_or_else(|| {
                Error::malformed(format!(
                    "{}: the offset table points to byte {offset}, outside the chunk data (bytes {}..{}): \
                         corrupt offset table or truncated file",
                    name(),
                    self.chunks_start,
                    encoded.len()
                ))
            })?;
        let mut fields = Fields { data: encoded, at: start };
        let truncated = |end: usize| {
            Error::malformed(format!(
                "{}: truncated: the chunk at byte {start} ends at byte {end}, but the file is {} bytes",
                name(),
                encoded.len()
            ))
        };
        let mut next = || fields.i32().ok_or_else(|| truncated(fields.at + 4));
        if self.multipart {
            let part = next()?;
            if part != 0 {
                return Err(Error::malformed(format!(
                    "{}: the chunk at byte {start} belongs to part {part}, not part 0 (corrupt offset table)",
                    name()
                )));
            }
        }
        let is = |value: i32, want: usize| usize::try_from(value).ok() == Some(want);
        let scanline_y = if self.tiled {
            let (x, y, level_x, level_y) = (next()?, next()?, next()?, next()?);
            let ok = is(x, tile_x) && is(y, tile_y) && level_x == 0 && level_y == 0;
            if !ok {
                return Err(Error::malformed(format!(
                    "{}: the chunk at byte {start} holds tile ({x}, {y}) of level ({level_x}, {level_y}) \
                     (corrupt offset table or chunk)",
                    name()
                )));
            }
            None
        } else {
            let y = next()?;
            let want = self.y_min + i64::try_from(tile_y * self.block_height).unwrap_or(i64::MAX);
            if i64::from(y) != want {
                return Err(Error::malformed(format!(
                    "{}: the chunk at byte {start} starts at line {y}, not {want} (corrupt offset table or chunk)",
                    name()
                )));
            }
            Some(y)
        };
        let size = next()?;
        let size = usize::try_from(size).map_err(|_| {
            Error::malformed(format!("{}: the chunk at byte {start} has a negative size {size}", name()))
        })?;
        let data = fields.bytes(size).ok_or_else(|| truncated(fields.at.saturating_add(size)))?.to_vec();
        let compressed_block = match scanline_y {
            None => CompressedBlock::Tile(CompressedTileBlock {
                coordinates: TileCoordinates { tile_index: Vec2(tile_x, tile_y), level_index: Vec2(0, 0) },
                compressed_pixels_le: data,
            }),
            Some(y_coordinate) => CompressedBlock::ScanLine(CompressedScanLineBlock {
                y_coordinate,
                compressed_pixels_le: data,
            }),
        };
        Ok(Chunk { layer_index: 0, compressed_block })
    }

    /// Writes the selected channels of a decompressed block into `rows`, the rows of band `tile_y`.
    fn put_block(
        &self,
        block: &UncompressedBlock,
        tile_x: usize,
        tile_y: usize,
        rows: &mut [u8],
    ) -> Result<(), Error> {
        let Vec2(x, y) = block.index.pixel_position;
        let Vec2(w, h) = block.index.pixel_size;
        let inside = x.checked_add(w).is_some_and(|end| end <= self.width)
            && y.checked_add(h).is_some_and(|end| end <= self.height);
        if block.index.level != Vec2(0, 0)
            || (x, y) != (tile_x * self.block_width, tile_y * self.block_height)
            || w == 0
            || h == 0
            || !inside
        {
            return Err(Error::malformed(format!(
                "{}: decoded as a {w}x{h} block at ({x}, {y}) of level {:?}, which is not its place",
                self.block_name(tile_x, tile_y),
                block.index.level
            )));
        }
        let src_row_bytes = w * self.file_pixel_bytes;
        if block.data.len() != src_row_bytes * h {
            return Err(Error::malformed(format!(
                "{}: decompressed to {} bytes instead of {}",
                self.block_name(tile_x, tile_y),
                block.data.len(),
                src_row_bytes * h
            )));
        }
        let dst_row_bytes = self.width * self.out_pixel_bytes;
        let stride = self.out_pixel_bytes;
        for (r, src_row) in block.data.chunks_exact(src_row_bytes).enumerate() {
            let start = r * dst_row_bytes + x * stride;
            let dst_row = rows.get_mut(start..start + w * stride).ok_or_else(|| {
                Error::malformed(format!("{}: block rows outside the frame", self.block_name(tile_x, tile_y)))
            })?;
            for c in &self.channels {
                // Both in range by construction; `get` keeps a mistake from becoming a panic.
                let (Some(src), Some(dst)) =
                    (src_row.get(w * c.line_offset..), dst_row.get_mut(c.out_offset..))
                else {
                    return Err(Error::malformed("channel line outside its block row"));
                };
                match c.sample {
                    SampleType::Half => half_to_f32(src, dst, stride, w),
                    SampleType::Float | SampleType::Uint => copy_32(src, dst, stride, w),
                }
            }
        }
        Ok(())
    }

    /// How messages name a block: scanline blocks by their lines in file coordinates, tiles by index.
    fn block_name(&self, tile_x: usize, tile_y: usize) -> String {
        if self.tiled {
            format!("tile ({tile_x}, {tile_y})")
        } else {
            let first = self.y_min + i64::try_from(tile_y * self.block_height).unwrap_or(i64::MAX);
            let lines =
                i64::try_from(self.block_height.min(self.height - tile_y * self.block_height)).unwrap_or(1);
            format!("scanline block at lines {first}..={}", first + lines - 1)
        }
    }
}

/// Decodes every block of `plan` into `out`, on the calling thread, or on a
/// pool of `threads` threads when there is more than one band to share out.
pub(super) fn decode_blocks(
    encoded: &[u8],
    meta: &MetaData,
    plan: &Plan,
    threads: usize,
    out: &mut [u8],
) -> Result<(), Error> {
    let band_rows = plan.block_height.min(plan.height);
    let band_bytes = band_rows * plan.width * plan.out_pixel_bytes;
    if band_bytes == 0 || out.len() != plan.height * plan.width * plan.out_pixel_bytes {
        return Err(Error::malformed("the frame does not match the data window"));
    }
    let pool = if threads > 1 && plan.blocks_y > 1 { pool::get(threads) } else { None };
    let Some(pool) = pool else {
        return out
            .chunks_mut(band_bytes)
            .enumerate()
            .try_for_each(|(band, rows)| plan.decode_band(encoded, meta, band, rows));
    };

    // A few tasks per thread even out bands that take longer than others.
    let threads = pool.current_num_threads();
    let bands_per_task = plan.blocks_y.div_ceil(threads * 4);
    // The error reported is the first band's that fails, whatever the scheduling:
    // bands after a failed one are skipped, bands before it still run.
    let first_failed = AtomicUsize::new(usize::MAX);
    let error: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    pool.scope(|scope| {
        for (task, task_rows) in out.chunks_mut(band_bytes.saturating_mul(bands_per_task)).enumerate() {
            let (first_failed, error) = (&first_failed, &error);
            scope.spawn(move |_| {
                for (i, rows) in task_rows.chunks_mut(band_bytes).enumerate() {
                    let band = task * bands_per_task + i;
                    if band > first_failed.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Err(e) = plan.decode_band(encoded, meta, band, rows) {
                        first_failed.fetch_min(band, Ordering::Relaxed);
                        let mut slot = error.lock().unwrap_or_else(PoisonError::into_inner);
                        if slot.as_ref().is_none_or(|(b, _)| band < *b) {
                            *slot = Some((band, e));
                        }
                        return;
                    }
                }
            });
        }
    });
    match error.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Converts `n` native-endian halves to little-endian f32s, `stride` bytes apart in `dst`.
fn half_to_f32(src: &[u8], dst: &mut [u8], stride: usize, n: usize) {
    let table = half_table();
    for (s, d) in src.chunks_exact(2).take(n).zip(dst.chunks_mut(stride)) {
        if let ([a, b], Some(d)) = (s, d.get_mut(..4)) {
            let f = table.get(usize::from(u16::from_ne_bytes([*a, *b]))).copied().unwrap_or_default();
            d.copy_from_slice(&f);
        }
    }
}

/// Every half's f32, as little-endian bytes: `f16::to_f32` once per bit pattern
/// (so exact by construction), then one lookup per sample instead of a call.
fn half_table() -> &'static [[u8; 4]] {
    static TABLE: OnceLock<Vec<[u8; 4]>> = OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(|h| f16::from_bits(h).to_f32().to_le_bytes()).collect())
}

/// Copies `n` native-endian 32-bit samples as little-endian, `stride` bytes apart in `dst`.
fn copy_32(src: &[u8], dst: &mut [u8], stride: usize, n: usize) {
    for (s, d) in src.chunks_exact(4).take(n).zip(dst.chunks_mut(stride)) {
        if let (Ok(s), Some(d)) = (<[u8; 4]>::try_from(s), d.get_mut(..4)) {
            d.copy_from_slice(&u32::from_ne_bytes(s).to_le_bytes());
        }
    }
}

/// Little-endian fields of a chunk, read without running off the end.
struct Fields<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn i32(&mut self) -> Option<i32> {
        let bytes = self.bytes(4)?;
        Some(i32::from_le_bytes(bytes.try_into().ok()?))
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(bytes)
    }
}
