//! FFmpeg's decoders behind playsim's [`Decoder`] seam, with pictures copied out as
//! their native planes (`yuv422p10le`, `yuva444p10le`, `yuv420p`, ...), unpadded.

use std::sync::Mutex;

use ffmpeg_next::codec::{self, threading};
use ffmpeg_next::util::frame;
use ffmpeg_next::{decoder, Packet};
use playsim_core::{DecodeError, DecodedFrame, Decoder, ExternalPlanes, InOrderDecoder, PixelFormat};

/// H.264's largest reorder depth: pictures a decoder may hold back, on top of frame threads.
const MAX_REORDER: u32 = 16;

/// How a codec's frames are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeMode {
    /// Intra-only codecs (ProRes, DNxHR, MJPEG): every frame on its own, across the decode pool.
    Independent,
    /// Long-GOP codecs (H.264, HEVC): in order, one decoder per stream, with FFmpeg's own threads.
    InOrder,
}

impl DecodeMode {
    /// The name in reports: `intra` or `long-gop`.
    pub fn name(self) -> &'static str {
        match self {
            DecodeMode::Independent => "intra",
            DecodeMode::InOrder => "long-gop",
        }
    }
}

/// One opened FFmpeg decoder and its scratch picture.
struct Opened {
    decoder: decoder::Video,
    picture: frame::Video,
}

/// An FFmpeg decoder for one video stream's packets.
pub struct VideoDecoder {
    codec: String,
    parameters: Mutex<codec::Parameters>,
    mode: DecodeMode,
    codec_threads: u32,
    /// Opened decoders not in use: independent decodes take one each, so they run in parallel.
    idle: Mutex<Vec<Opened>>,
}

impl VideoDecoder {
    /// A decoder for `parameters`; opens one FFmpeg decoder now, so an unusable codec fails here.
    pub(crate) fn new(
        parameters: codec::Parameters,
        mode: DecodeMode,
        codec_threads: u32,
    ) -> Result<VideoDecoder, String> {
        let codec = parameters.id().name().to_owned();
        let decoder = VideoDecoder {
            codec,
            parameters: Mutex::new(parameters),
            mode,
            codec_threads: codec_threads.max(1),
            idle: Mutex::new(Vec::new()),
        };
        let first = decoder.open(threading_for(mode, decoder.codec_threads))?;
        decoder.idle.lock().unwrap_or_else(|p| p.into_inner()).push(first);
        Ok(decoder)
    }

    /// The codec's FFmpeg name, e.g. `prores`.
    pub fn codec(&self) -> &str {
        &self.codec
    }

    /// The picture size of the opened decoder (the container's coded size).
    pub fn dimensions(&self) -> (u32, u32) {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.first().map_or((0, 0), |o| (o.decoder.width(), o.decoder.height()))
    }

    /// How its frames are decoded.
    pub fn mode(&self) -> DecodeMode {
        self.mode
    }

    fn open(&self, threading: threading::Config) -> Result<Opened, String> {
        let parameters = self.parameters.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut context = codec::Context::from_parameters(parameters)
            .map_err(|e| format!("FFmpeg cannot set up a {} decoder: {e}", self.codec))?;
        context.set_threading(threading);
        let decoder = own_threads_named(|| context.decoder().video()).map_err(|e| match e {
            ffmpeg_next::Error::DecoderNotFound => {
                format!("this FFmpeg ({}) has no decoder for {}", crate::ffmpeg_version(), self.codec)
            }
            e => format!("FFmpeg cannot open its {} decoder: {e}", self.codec),
        })?;
        Ok(Opened { decoder, picture: frame::Video::empty() })
    }

    fn malformed(&self, e: ffmpeg_next::Error) -> DecodeError {
        DecodeError::malformed(format!("FFmpeg's {} decoder: {e}", self.codec))
    }
}

/// Runs `open` (FFmpeg's `avcodec_open2`, which starts the codec's frame or slice threads) and
/// names the threads it started [`CODEC_THREAD_NAME`](crate::CODEC_THREAD_NAME), so that the
/// engine charges their CPU to the decode stage: the engine times a decode on the thread that
/// calls FFmpeg, and FFmpeg's own threads do most of a threaded decode.
///
/// The threads are the ones in /proc/self/task after the open and not before, that still
/// bear the opening thread's name (a new thread inherits it; a thread some other part of
/// the process starts meanwhile names itself). Opens are one at a time, so two decoders'
/// threads are not told apart wrongly. Where /proc cannot be read, nothing is named and the
/// decode stage counts only the calling threads' CPU, as before.
fn own_threads_named<T>(open: impl FnOnce() -> T) -> T {
    static OPENING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = OPENING.lock().unwrap_or_else(|p| p.into_inner());
    let before = task_ids();
    let opened = open();
    let opener = std::fs::read_to_string("/proc/thread-self/comm").unwrap_or_default();
    for tid in task_ids().into_iter().filter(|tid| !before.contains(tid)) {
        let comm = format!("/proc/self/task/{tid}/comm");
        if !opener.is_empty() && std::fs::read_to_string(&comm).is_ok_and(|name| name == opener) {
            // A thread may rename another of its process; a failure leaves it uncounted.
            let _ = std::fs::write(&comm, crate::CODEC_THREAD_NAME);
        }
    }
    opened
}

/// The process's threads, by id.
fn task_ids() -> Vec<u64> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks.filter_map(|t| t.ok()?.file_name().to_str()?.parse().ok()).collect()
}

fn threading_for(mode: DecodeMode, threads: u32) -> threading::Config {
    let kind = match (mode, threads) {
        (_, 1) => threading::Type::None,
        // One frame at a time per decoder: threads can only split the frame.
        (DecodeMode::Independent, _) => threading::Type::Slice,
        (DecodeMode::InOrder, _) => threading::Type::Frame,
    };
    threading::Config { kind, count: threads as usize, ..Default::default() }
}

impl Decoder for VideoDecoder {
    fn name(&self) -> &'static str {
        "ffmpeg"
    }

    fn describe(&self) -> String {
        let threads = self.codec_threads;
        let plural = if threads == 1 { "" } else { "s" };
        match self.mode {
            DecodeMode::Independent => format!(
                "ffmpeg {} ({}): intra, frames decode independently across the decode pool, \
                 {threads} slice thread{plural} each",
                self.codec,
                crate::ffmpeg_version()
            ),
            DecodeMode::InOrder => format!(
                "ffmpeg {} ({}): long-gop, in order on one decoder per stream, {threads} frame thread{plural}",
                self.codec,
                crate::ffmpeg_version()
            ),
        }
    }

    fn decode(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError> {
        let taken = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut opened = match taken {
            Some(opened) => opened,
            None => self
                .open(threading_for(DecodeMode::Independent, self.codec_threads))
                .map_err(DecodeError::unsupported)?,
        };
        let result = match decode_alone(&mut opened, encoded) {
            Ok(true) => hand_over(&mut opened.picture, out),
            Ok(false) => Err(DecodeError::malformed(format!(
                "FFmpeg's {} decoder gave no picture for this packet (it needs earlier frames)",
                self.codec
            ))),
            Err(e) => {
                // Start the next frame from a clean state.
                opened.decoder.flush();
                Err(self.malformed(e))
            }
        };
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(opened);
        result
    }

    fn in_order(&self) -> Option<Box<dyn InOrderDecoder>> {
        if self.mode != DecodeMode::InOrder {
            return None;
        }
        let opened = self.open(threading_for(DecodeMode::InOrder, self.codec_threads));
        Some(Box::new(StreamDecoder {
            codec: self.codec.clone(),
            opened,
            max_delay: self.codec_threads + MAX_REORDER,
        }))
    }
}

/// Decodes one packet that stands alone; false if the decoder gave no picture for it.
fn decode_alone(opened: &mut Opened, encoded: &[u8]) -> Result<bool, ffmpeg_next::Error> {
    opened.decoder.send_packet(&Packet::borrow(encoded))?;
    match opened.decoder.receive_frame(&mut opened.picture) {
        Ok(()) => return Ok(true),
        Err(e) if is_again(&e) => {}
        Err(e) => return Err(e),
    }
    // A decoder that holds pictures back (reordering, frame threads) gives this one out
    // only when drained; then it is reset for the next packet.
    opened.decoder.send_eof()?;
    let got = match opened.decoder.receive_frame(&mut opened.picture) {
        Ok(()) => true,
        Err(ffmpeg_next::Error::Eof) => false,
        Err(e) if is_again(&e) => false,
        Err(e) => return Err(e),
    };
    opened.decoder.flush();
    Ok(got)
}

fn is_again(e: &ffmpeg_next::Error) -> bool {
    matches!(e, ffmpeg_next::Error::Other { errno } if *errno == libc_eagain())
}

fn libc_eagain() -> i32 {
    ffmpeg_next::util::error::EAGAIN
}

/// A stream's own decoder for a long-GOP codec: packets in decode order, pictures out
/// in presentation order.
struct StreamDecoder {
    codec: String,
    /// The opened decoder, or why it could not be opened (reported on the first packet).
    opened: Result<Opened, String>,
    max_delay: u32,
}

impl StreamDecoder {
    fn opened(&mut self) -> Result<&mut Opened, DecodeError> {
        self.opened.as_mut().map_err(|e| DecodeError::unsupported(e.clone()))
    }
}

impl InOrderDecoder for StreamDecoder {
    fn max_delay(&self) -> u32 {
        self.max_delay
    }

    fn send(&mut self, packet: Option<&[u8]>) -> Result<(), DecodeError> {
        let codec = self.codec.clone();
        let opened = self.opened()?;
        let sent = match packet {
            Some(bytes) => opened.decoder.send_packet(&Packet::borrow(bytes)),
            None => opened.decoder.send_eof(),
        };
        match sent {
            Ok(()) | Err(ffmpeg_next::Error::Eof) => Ok(()),
            Err(e) => Err(DecodeError::malformed(format!("FFmpeg's {codec} decoder: {e}"))),
        }
    }

    fn receive(&mut self, out: &mut DecodedFrame) -> Result<bool, DecodeError> {
        let codec = self.codec.clone();
        let opened = self.opened()?;
        match opened.decoder.receive_frame(&mut opened.picture) {
            Ok(()) => hand_over(&mut opened.picture, out).map(|()| true),
            Err(ffmpeg_next::Error::Eof) => Ok(false),
            Err(e) if is_again(&e) => Ok(false),
            Err(e) => Err(DecodeError::malformed(format!("FFmpeg's {codec} decoder: {e}"))),
        }
    }

    fn reset(&mut self) {
        if let Ok(opened) = &mut self.opened {
            opened.decoder.flush();
        }
    }
}

/// A picture FFmpeg decoded, held by reference: its buffers come back to the decoder's
/// pool when the frame that holds it is reused or dropped.
struct FfmpegPlanes(frame::Video);

impl ExternalPlanes for FfmpegPlanes {
    fn plane(&self, i: usize) -> (&[u8], usize) {
        if i >= self.0.planes() {
            return (&[], 0);
        }
        (self.0.data(i), self.0.stride(i))
    }
}

/// Hands a decoded picture's planes to `out` without copying them: `out` takes the
/// picture and the decoder gets a fresh one to decode the next into. The planes,
/// read row by row without FFmpeg's padding, are the bytes `ffmpeg -f framemd5` hashes.
pub(crate) fn hand_over(picture: &mut frame::Video, out: &mut DecodedFrame) -> Result<(), DecodeError> {
    let damage = crate::ffi::decode_error_flags(picture);
    if damage != 0 {
        return Err(DecodeError::malformed(format!(
            "the decoder gave a damaged picture (decode_error_flags {damage:#x}: {})",
            describe_damage(damage)
        )));
    }
    let name = picture.format().descriptor().map_or("unknown", |d| d.name());
    let Some(format) = PixelFormat::from_ffmpeg_name(name) else {
        return Err(DecodeError::unsupported(format!(
            "the decoder gives pixel format {name}, which playsim does not handle \
             (it handles planar YUV such as yuv422p10le, yuva444p10le, yuv420p)"
        )));
    };
    let (width, height) = (picture.width(), picture.height());
    if width == 0 || height == 0 {
        return Err(DecodeError::malformed(format!("the decoder gave an empty {width}x{height} picture")));
    }
    let n_planes = format.planes(width, height).len();
    if n_planes != picture.planes() {
        return Err(DecodeError::unsupported(format!(
            "pixel format {name} has {} planes in FFmpeg, {n_planes} in playsim",
            picture.planes()
        )));
    }
    let picture = std::mem::replace(picture, frame::Video::empty());
    out.set_external(width, height, format, Box::new(FfmpegPlanes(picture)));
    if out.planes().len() != n_planes {
        out.reset(width, height, format);
        return Err(DecodeError::malformed(format!(
            "a plane of the {name} picture is smaller than its size"
        )));
    }
    Ok(())
}

/// FFmpeg's `FF_DECODE_ERROR_*` flags in words.
fn describe_damage(flags: i32) -> String {
    let names =
        [(1, "invalid bitstream"), (2, "missing reference"), (4, "errors concealed"), (8, "decode slices")];
    let found: Vec<&str> = names.iter().filter(|(bit, _)| flags & bit != 0).map(|(_, n)| *n).collect();
    if found.is_empty() {
        "unknown".into()
    } else {
        found.join(", ")
    }
}
