//! Opening a video file: the container read through the storage, its packet index, and
//! the decoder set up (the `ffmpeg` feature).

use std::path::Path;
use std::sync::{Arc, Once};

use ffmpeg_next::format::context::StreamIo;
use ffmpeg_next::media;
use playsim_core::{FrameRate, Storage};

use crate::storage_io::{SharedFile, StorageReader};
use crate::{
    ffi, mxf, DecodeMode, Error, IndexOrigin, IndexStats, PacketEntry, VideoDecoder, VideoOptions,
    VideoSource,
};

/// The AVIO buffer: bytes per read request while the demuxer reads the container's tables.
const AVIO_BUFFER: usize = 256 << 10;

/// The FFmpeg libavcodec version playsim is linked against, e.g. `libavcodec 59.37.100`.
pub fn ffmpeg_version() -> String {
    let v = ffmpeg_next::codec::version();
    format!("libavcodec {}.{}.{}", v >> 16, v >> 8 & 0xff, v & 0xff)
}

/// Opens the video file at `path` on `storage`: reads its container through the
/// storage, builds the packet index and sets up the decoder.
///
/// Must run inside a tokio runtime: the demuxer runs on a blocking thread and waits
/// there for the storage's reads.
pub async fn open(
    path: &Path,
    storage: Arc<dyn Storage>,
    options: &VideoOptions,
) -> Result<VideoSource, Error> {
    init_ffmpeg();
    let file = storage.open(path).await?;
    let size = file.size();
    let shared = SharedFile::new(file);
    let task = {
        let (shared, path, options) = (Arc::clone(&shared), path.to_owned(), options.clone());
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || open_blocking(&path, shared, size, handle, &options))
    };
    let result = task.await.map_err(|e| Error::Task { path: path.to_owned(), detail: e.to_string() });
    if let Some(file) = shared.take() {
        // The index is built; a failed close changes nothing that was read.
        let _ = file.close().await;
    }
    result?
}

/// Sets FFmpeg up once: its error strings (without them ffmpeg-next's errors print
/// empty), and no log lines, since FFmpeg prints every decode error on stderr and
/// playsim reports them itself, per frame.
pub(crate) fn init_ffmpeg() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // init() only fills the error strings and registers devices; it cannot fail on FFmpeg 5.
        let _ = ffmpeg_next::init();
        ffmpeg_next::util::log::set_level(ffmpeg_next::util::log::Level::Fatal);
    });
}

fn open_blocking(
    path: &Path,
    shared: Arc<SharedFile>,
    size: u64,
    handle: tokio::runtime::Handle,
    options: &VideoOptions,
) -> Result<VideoSource, Error> {
    let container = |detail: String| Error::Container { path: path.to_owned(), detail };
    let reader = StorageReader::new(Arc::clone(&shared), size, handle.clone());
    let io = StreamIo::from_read_seek_with_capacity(reader, AVIO_BUFFER)
        .map_err(|e| container(format!("cannot set up reading: {e}")))?;
    let name = path.to_string_lossy();
    let mut input = ffmpeg_next::format::input_from_stream(io, Some(&name), None)
        .map_err(|e| container(explain_open_error(path, &e)))?;

    let Some(stream) = input.streams().best(media::Type::Video) else {
        let streams: Vec<String> = input
            .streams()
            .map(|s| format!("{:?} {}", s.parameters().medium(), s.parameters().id().name()))
            .collect();
        let streams = if streams.is_empty() { "none".to_owned() } else { streams.join(", ") };
        return Err(Error::NoVideo { path: path.to_owned(), streams });
    };
    let stream_index = stream.index();
    let parameters = stream.parameters().clone();
    let id = parameters.id();
    if id == ffmpeg_next::codec::Id::None {
        return Err(Error::UnsupportedCodec {
            path: path.to_owned(),
            detail: format!("FFmpeg does not know the video codec (tag {})", codec_tag(&stream)),
        });
    }
    let rate = [stream.avg_frame_rate(), stream.rate()].into_iter().find_map(|r| {
        let (num, den) = (u32::try_from(r.numerator()).ok()?, u32::try_from(r.denominator()).ok()?);
        FrameRate::new(num, den).ok()
    });
    let entries: Vec<ffi::IndexEntry> = ffi::index_entries(&stream);
    let format_name = input.format().name().split(',').next().unwrap_or("video").to_owned();

    let mode = if ffi::is_intra_only(id) { DecodeMode::Independent } else { DecodeMode::InOrder };
    let decoder = VideoDecoder::new(parameters, mode, options.codec_threads)
        .map_err(|detail| Error::UnsupportedCodec { path: path.to_owned(), detail })?;
    let (width, height) = decoder.dimensions();

    let usable = !entries.is_empty() && entries.iter().all(|e| e.pos >= 0 && e.size > 0 && !e.discard);
    // FFmpeg's MXF demuxer keeps the file's index table segments to itself: read them here.
    let mxf_index = if !usable && format_name == "mxf" {
        Some(mxf::index(&|offset, len| shared.read_at(&handle, offset, len).map_err(|e| e.to_string()), size))
    } else {
        None
    };
    let mut fallback = None;
    let (packets, origin) = if let Some(Ok(packets)) = mxf_index {
        (packets, IndexOrigin::ContainerTables)
    } else if usable {
        let packets = entries
            .iter()
            .map(|e| PacketEntry {
                offset: e.pos as u64,
                size: e.size as u64,
                timestamp: e.timestamp,
                keyframe: e.keyframe,
            })
            .collect();
        (packets, IndexOrigin::ContainerTables)
    } else {
        fallback = mxf_index.and_then(|r| r.err());
        let locate = |pos: u64, head: &[u8]| locate_packet(&shared, &handle, pos, head);
        (first_pass(path, &mut input, stream_index, locate)?, IndexOrigin::FirstPass)
    };
    drop(input);
    if packets.is_empty() {
        return Err(Error::Empty { path: path.to_owned() });
    }
    if let Some(p) = packets.iter().find(|p| p.offset.saturating_add(p.size) > size) {
        return Err(container(format!(
            "the index puts a packet at {}..{}, past the end of the {size}-byte file (truncated?)",
            p.offset,
            p.offset + p.size
        )));
    }
    let index = IndexStats {
        origin,
        fallback,
        reads: shared.reads.load(std::sync::atomic::Ordering::Relaxed),
        bytes: shared.bytes.load(std::sync::atomic::Ordering::Relaxed),
        file_size: size,
    };
    Ok(VideoSource {
        path: path.to_owned(),
        packets,
        decoder: Arc::new(decoder),
        rate,
        index,
        format: format!("{format_name}/{}", id.name()),
        width,
        height,
    })
}

/// Reads every packet of the stream through the storage, noting where its bytes are.
///
/// `locate(pos, head)` turns the demuxer's packet position into the offset of the
/// packet's first byte, given the packet's first bytes.
fn first_pass(
    path: &Path,
    input: &mut ffmpeg_next::format::context::Input,
    stream_index: usize,
    locate: impl Fn(u64, &[u8]) -> Result<u64, String>,
) -> Result<Vec<PacketEntry>, Error> {
    let mut packets = Vec::new();
    for (stream, packet) in input.packets() {
        if stream.index() != stream_index {
            continue;
        }
        let n = packets.len();
        let container = |detail: String| Error::Container { path: path.to_owned(), detail };
        let Ok(pos) = u64::try_from(packet.position()) else {
            return Err(container(format!("packet {n} has no byte position, so it cannot be read by range")));
        };
        let head = packet.data().unwrap_or_default();
        let offset = locate(pos, &head[..head.len().min(HEAD_BYTES)])
            .map_err(|e| container(format!("packet {n} at byte {pos}: {e}")))?;
        packets.push(PacketEntry {
            offset,
            size: packet.size() as u64,
            timestamp: packet.pts().or(packet.dts()).unwrap_or(i64::MIN),
            keyframe: packet.is_key(),
        });
    }
    Ok(packets)
}

/// Bytes of a packet's start compared with the file's, to find where the packet is.
const HEAD_BYTES: usize = 16;

/// The offset of a packet's first byte, from the position the demuxer gives: the
/// packet itself, or (MXF) the KLV triplet around it, whose key and BER length come first.
fn locate_packet(
    shared: &SharedFile,
    handle: &tokio::runtime::Handle,
    pos: u64,
    head: &[u8],
) -> Result<u64, String> {
    const KLV_KEY_PREFIX: [u8; 4] = [0x06, 0x0e, 0x2b, 0x34];
    let bytes = shared.read_at(handle, pos, 64).map_err(|e| e.to_string())?;
    let matches_at = |at: usize| bytes.get(at..at + head.len()).is_some_and(|b| b == head);
    if matches_at(0) {
        return Ok(pos);
    }
    if bytes.starts_with(&KLV_KEY_PREFIX) {
        let len_bytes = match bytes.get(16) {
            Some(&b) if b < 0x80 => 1,
            Some(&b) => 1 + usize::from(b & 0x7f),
            None => 0,
        };
        if len_bytes > 0 && matches_at(16 + len_bytes) {
            return Ok(pos + 16 + len_bytes as u64);
        }
    }
    Err("cannot find the packet's bytes there (neither the packet nor a KLV triplet holding it)".into())
}

fn codec_tag(stream: &ffmpeg_next::format::stream::Stream<'_>) -> String {
    let tag = ffi::codec_tag(stream);
    let bytes = tag.to_le_bytes();
    if bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("'{}'", String::from_utf8_lossy(&bytes))
    } else {
        format!("0x{tag:08x}")
    }
}

fn explain_open_error(path: &Path, e: &ffmpeg_next::Error) -> String {
    let mov = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["mov", "mp4", "m4v"].iter().any(|m| m.eq_ignore_ascii_case(e)));
    match e {
        ffmpeg_next::Error::InvalidData if mov => {
            format!("{e} (no usable 'moov' atom: the file is truncated or was never finished)")
        }
        e => e.to_string(),
    }
}
