//! The few FFmpeg calls ffmpeg-next does not wrap: a stream's index entries and a
//! codec's properties. Each `unsafe` block has a `// SAFETY:` line.

use ffmpeg_next::ffi;

/// One entry of a stream's index, as the demuxer built it from the container's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    pub pos: i64,
    pub timestamp: i64,
    pub size: i32,
    pub keyframe: bool,
    pub discard: bool,
}

/// The index entries of `stream`, copied out.
pub(crate) fn index_entries(stream: &ffmpeg_next::format::stream::Stream<'_>) -> Vec<IndexEntry> {
    // SAFETY: the stream pointer is valid while `stream` borrows its format context; the
    // index functions only read it, and each entry is copied before the next call.
    unsafe {
        let st = stream.as_ptr();
        let n = ffi::avformat_index_get_entries_count(st);
        let mut entries = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        for i in 0..n {
            let e = ffi::avformat_index_get_entry(st.cast_mut(), i);
            if e.is_null() {
                break;
            }
            let e = &*e;
            let flags = e.flags();
            entries.push(IndexEntry {
                pos: e.pos,
                timestamp: e.timestamp,
                size: e.size(),
                keyframe: flags & ffi::AVINDEX_KEYFRAME != 0,
                discard: flags & ffi::AVINDEX_DISCARD_FRAME != 0,
            });
        }
        entries
    }
}

/// True when FFmpeg describes the codec as intra-only: every frame decodes on its own.
pub(crate) fn is_intra_only(id: ffmpeg_next::codec::Id) -> bool {
    // SAFETY: avcodec_descriptor_get takes any codec id and returns null or a pointer to
    // a static descriptor, which is only read.
    unsafe {
        let d = ffi::avcodec_descriptor_get(id.into());
        !d.is_null() && (*d).props & ffi::AV_CODEC_PROP_INTRA_ONLY != 0
    }
}

/// The container's four-character code for the stream's codec.
pub(crate) fn codec_tag(stream: &ffmpeg_next::format::stream::Stream<'_>) -> u32 {
    // SAFETY: the stream and its codec parameters are valid while `stream` borrows its
    // format context; one integer field is read.
    unsafe { (*(*stream.as_ptr()).codecpar).codec_tag }
}

/// The decoder's damage flags on a picture (`FF_DECODE_ERROR_*`): nonzero when it
/// concealed errors or decoded invalid bitstream as best it could.
pub(crate) fn decode_error_flags(picture: &ffmpeg_next::util::frame::Video) -> i32 {
    // SAFETY: the frame pointer is valid while `picture` is borrowed; one integer field is read.
    unsafe { (*picture.as_ptr()).decode_error_flags }
}

/// Cuts the muxer's current fragment and pushes its bytes through the output's AVIO context:
/// `av_write_frame(ctx, NULL)`, which the MOV muxer takes, with `movflags=frag_custom`, as
/// "write the fragment now", then `avio_flush`.
pub(crate) fn flush_fragment(
    output: &mut ffmpeg_next::format::context::Output,
) -> Result<(), ffmpeg_next::Error> {
    // SAFETY: the context pointer is valid while `output` is borrowed mutably; a NULL packet
    // is av_write_frame's documented flush request; `pb` is the output's own AVIO context,
    // set by output_to_stream and alive as long as the context.
    unsafe {
        let ctx = output.as_mut_ptr();
        let status = ffi::av_write_frame(ctx, std::ptr::null_mut());
        if status < 0 {
            return Err(ffmpeg_next::Error::from(status));
        }
        if !(*ctx).pb.is_null() {
            ffi::avio_flush((*ctx).pb);
        }
    }
    Ok(())
}
