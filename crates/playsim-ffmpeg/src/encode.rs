//! Writing video: ProRes frames encoded by FFmpeg's `prores_ks`, and a fragmented MOV muxed by
//! FFmpeg's `mov` muxer with one fragment (a `moof` and its `mdat`) per frame, cut as soon as
//! the frame is given. A file cut anywhere (a crash, a full disk) plays up to its last whole
//! fragment: no index at the end is needed to find the frames.
//!
//! The encoder takes the generator's RGB (16 bits a channel) and converts it to Y'CbCr 4:2:2
//! 10-bit, BT.709, limited range, in fixed point. Each encode uses one FFmpeg context of one
//! thread, taken from a pool: the frames are encoded in parallel by the caller's threads (the
//! encode pool the user sizes), not by FFmpeg's.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use ffmpeg_next::codec::{self, threading};
use ffmpeg_next::format::context::StreamIo;
use ffmpeg_next::format::Pixel;
use ffmpeg_next::{encoder, Dictionary, Packet, Rational};
use playsim_core::{DecodedFrame, FrameRate, PixelFormat};

use crate::ffi;

/// Which of FFmpeg's two ProRes encoders.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProresCodec {
    /// `prores_ks`: rate-controlled to Apple's target sizes; what FFmpeg users deliver with.
    #[default]
    Ks,
    /// `prores_aw`: about 8 times faster here, with frames up to twice Apple's sizes (no rate
    /// control to speak of), nearer a hardware encoder's speed.
    Aw,
}

impl ProresCodec {
    /// FFmpeg's name: `prores_ks`, `prores_aw`.
    pub fn name(self) -> &'static str {
        match self {
            ProresCodec::Ks => "prores_ks",
            ProresCodec::Aw => "prores_aw",
        }
    }

    /// The encoder named `name` (any case).
    pub fn parse(name: &str) -> Option<ProresCodec> {
        [ProresCodec::Ks, ProresCodec::Aw].into_iter().find(|c| c.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// A ProRes 422 profile (10-bit 4:2:2), as Apple names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProresProfile {
    /// ProRes 422 Proxy (`apco`).
    Proxy,
    /// ProRes 422 LT (`apcs`).
    Lt,
    /// ProRes 422 (`apcn`).
    Standard,
    /// ProRes 422 HQ (`apch`), what ingest and finishing write.
    #[default]
    Hq,
}

impl ProresProfile {
    /// Every profile, in order of rate.
    pub const ALL: [ProresProfile; 4] =
        [ProresProfile::Proxy, ProresProfile::Lt, ProresProfile::Standard, ProresProfile::Hq];

    /// The name on the command line: `proxy`, `lt`, `standard`, `hq`.
    pub fn name(self) -> &'static str {
        match self {
            ProresProfile::Proxy => "proxy",
            ProresProfile::Lt => "lt",
            ProresProfile::Standard => "standard",
            ProresProfile::Hq => "hq",
        }
    }

    /// The profile named `name` (any case).
    pub fn parse(name: &str) -> Option<ProresProfile> {
        ProresProfile::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// As in reports: `ProRes 422 HQ`.
    pub fn describe(self) -> &'static str {
        match self {
            ProresProfile::Proxy => "ProRes 422 Proxy",
            ProresProfile::Lt => "ProRes 422 LT",
            ProresProfile::Standard => "ProRes 422",
            ProresProfile::Hq => "ProRes 422 HQ",
        }
    }

    /// `prores_ks`'s `profile` option.
    fn ffmpeg_profile(self) -> &'static str {
        match self {
            ProresProfile::Proxy => "0",
            ProresProfile::Lt => "1",
            ProresProfile::Standard => "2",
            ProresProfile::Hq => "3",
        }
    }

    /// Apple's target rate, in bits per pixel at 29.97 fps (Apple's white paper: HQ is 220
    /// Mb/s at 1920x1080 29.97), as an upper bound of a frame's bytes: `prores_ks` stays under
    /// it for all but pathological pictures; twice that is the bound used here (`prores_aw`,
    /// which hardly controls its rate, is given four times).
    pub fn max_frame_bytes(self, codec: ProresCodec, (width, height): (u32, u32)) -> u64 {
        let mbps_1080: u64 = match self {
            ProresProfile::Proxy => 45,
            ProresProfile::Lt => 102,
            ProresProfile::Standard => 147,
            ProresProfile::Hq => 220,
        };
        let pixels = u64::from(width) * u64::from(height);
        let times = match codec {
            ProresCodec::Ks => 2,
            ProresCodec::Aw => 4,
        };
        // bits a frame at 1080p29.97, scaled by the pixels, times the margin, in bytes, plus headers.
        times * mbps_1080 * 1_000_000 * 1001 / 30_000 * pixels / (1920 * 1080) / 8 + 4096
    }
}

/// An opened `prores_ks` context for one frame size.
struct Context {
    size: (u32, u32),
    encoder: encoder::Video,
}

/// Encodes RGB frames as ProRes, each on one FFmpeg context of the pool.
pub struct ProresEncoder {
    profile: ProresProfile,
    codec: ProresCodec,
    pool: Mutex<Vec<Context>>,
}

impl std::fmt::Debug for ProresEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProresEncoder")
            .field("profile", &self.profile)
            .field("codec", &self.codec)
            .finish_non_exhaustive()
    }
}

impl ProresEncoder {
    /// An encoder of `profile` through `codec`; contexts are opened as frames need them.
    pub fn new(profile: ProresProfile, codec: ProresCodec) -> ProresEncoder {
        ProresEncoder { profile, codec, pool: Mutex::new(Vec::new()) }
    }

    /// Its profile.
    pub fn profile(&self) -> ProresProfile {
        self.profile
    }

    /// Its FFmpeg encoder.
    pub fn codec(&self) -> ProresCodec {
        self.codec
    }

    /// Encodes `frame` into `out`, one ProRes frame: RGB or RGBA, 16 bits a channel (alpha is
    /// dropped), converted to Y'CbCr; or Y'CbCr planes as a video decodes to (a transcode of
    /// H.264 or ProRes), taken to 10 bits and 4:2:2 as they are, with no RGB detour.
    pub fn encode(&self, frame: &DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        let channels = match frame.format {
            Some(PixelFormat::Rgb48Le) => 3,
            Some(PixelFormat::Rgba64Le) => 4,
            Some(PixelFormat::Yuv { .. }) => 0,
            other => {
                return Err(format!("ProRes is encoded from 16-bit RGB or Y'CbCr planes, not {other:?}"))
            }
        };
        if channels > 0 && frame.data.len() < frame.width as usize * frame.height as usize * channels * 2 {
            return Err(format!(
                "a {}x{} RGB frame holds {} bytes, fewer than its size",
                frame.width,
                frame.height,
                frame.data.len()
            ));
        }
        let size = (frame.width, frame.height);
        if !size.0.is_multiple_of(2) || size.0 == 0 || size.1 == 0 {
            return Err(format!("ProRes 4:2:2 needs an even width, not {}x{}", size.0, size.1));
        }
        let taken = {
            let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
            pool.iter().position(|c| c.size == size).map(|i| pool.swap_remove(i))
        };
        let mut context = match taken {
            Some(context) => context,
            None => {
                Context { size, encoder: open_encoder(self.profile, self.codec, size, Rational::new(1, 24))? }
            }
        };
        let mut picture = ffmpeg_next::frame::Video::new(Pixel::YUV422P10LE, size.0, size.1);
        match frame.format {
            Some(PixelFormat::Yuv { chroma, bits, .. }) => {
                yuv_to_yuv422p10(frame, chroma, bits, &mut picture)?
            }
            _ => rgb_to_yuv422p10(frame, channels, &mut picture),
        }
        picture.set_pts(Some(0));
        let encoded = (|| {
            context.encoder.send_frame(&picture).map_err(|e| format!("prores_ks: {e}"))?;
            let mut packet = Packet::empty();
            context
                .encoder
                .receive_packet(&mut packet)
                .map_err(|e| format!("prores_ks gave no frame: {e}"))?;
            out.clear();
            out.extend_from_slice(packet.data().unwrap_or_default());
            Ok::<(), String>(())
        })();
        self.pool.lock().unwrap_or_else(PoisonError::into_inner).push(context);
        encoded
    }
}

/// Opens `codec` for `profile` at `size`, one thread, `time_base`.
fn open_encoder(
    profile: ProresProfile,
    codec: ProresCodec,
    size: (u32, u32),
    time_base: Rational,
) -> Result<encoder::Video, String> {
    crate::open::init_ffmpeg();
    let name = codec.name();
    let codec = encoder::find_by_name(name).ok_or_else(|| format!("this FFmpeg has no {name} encoder"))?;
    let mut context = codec::context::Context::new_with_codec(codec);
    context.set_threading(threading::Config {
        kind: threading::Type::Slice,
        count: 1,
        ..threading::Config::default()
    });
    let mut video = context.encoder().video().map_err(|e| format!("{name}: {e}"))?;
    video.set_width(size.0);
    video.set_height(size.1);
    video.set_format(Pixel::YUV422P10LE);
    video.set_time_base(time_base);
    let mut options = Dictionary::new();
    options.set("profile", profile.ffmpeg_profile());
    options.set("vendor", "apl0");
    options.set("thread_type", "slice");
    video.open_with(options).map_err(|e| format!("cannot open {name} at {}x{}: {e}", size.0, size.1))
}

/// BT.709 luma weights, scaled by 2^16 (they add up to 65536).
const KR: i64 = 13_933;
const KG: i64 = 46_871;
const KB: i64 = 4_732;
/// BT.709 chroma weights, scaled by 2^16: Cb and Cr, each adding up to 0.
const CB: [i64; 3] = [-7_509, -25_259, 32_768];
const CR: [i64; 3] = [32_768, -29_763, -3_005];

/// Converts 16-bit RGB(A) to 10-bit Y'CbCr 4:2:2, limited range (Y' 64 to 940, Cb and Cr 64
/// to 960), each chroma sample from the mean of its two pixels.
fn rgb_to_yuv422p10(frame: &DecodedFrame, channels: usize, picture: &mut ffmpeg_next::frame::Video) {
    let (width, height) = (frame.width as usize, frame.height as usize);
    let strides = [picture.stride(0), picture.stride(1), picture.stride(2)];
    let scale = 65_536 * 65_535;
    let round = |v: i64, range: i64| (v * range + scale / 2).div_euclid(scale);
    let sample = |row: &[u8], x: usize, c: usize| {
        let at = (x * channels + c) * 2;
        i64::from(u16::from_le_bytes([row[at], row[at + 1]]))
    };
    let row_bytes = width * channels * 2;
    for y in 0..height {
        let row = &frame.data[y * row_bytes..(y + 1) * row_bytes];
        {
            let luma = &mut picture.data_mut(0)[y * strides[0]..];
            for x in 0..width {
                let (r, g, b) = (sample(row, x, 0), sample(row, x, 1), sample(row, x, 2));
                let v = (64 + round(KR * r + KG * g + KB * b, 876)).clamp(4, 1019);
                luma[x * 2..x * 2 + 2].copy_from_slice(&(v as u16).to_le_bytes());
            }
        }
        for (plane, weights) in [(1, CB), (2, CR)] {
            let chroma = &mut picture.data_mut(plane)[y * strides[plane]..];
            for x in 0..width / 2 {
                let mean = |c| (sample(row, 2 * x, c) + sample(row, 2 * x + 1, c)) / 2;
                let sum = weights[0] * mean(0) + weights[1] * mean(1) + weights[2] * mean(2);
                let v = (512 + round(sum, 896)).clamp(4, 1019);
                chroma[x * 2..x * 2 + 2].copy_from_slice(&(v as u16).to_le_bytes());
            }
        }
    }
}

/// Takes Y'CbCr planes of any subsampling and depth to 10-bit 4:2:2, their range kept: each
/// sample shifted to 10 bits (rounded), 4:2:0 chroma repeated on the two rows it covers, 4:4:4
/// chroma the mean of each pair.
fn yuv_to_yuv422p10(
    frame: &DecodedFrame,
    chroma: playsim_core::Chroma,
    bits: u8,
    picture: &mut ffmpeg_next::frame::Video,
) -> Result<(), String> {
    let (width, height) = (frame.width as usize, frame.height as usize);
    let planes = frame.planes();
    if planes.len() < 3 {
        return Err(format!("a {width}x{height} Y'CbCr frame without its three planes"));
    }
    let wide = bits > 8;
    let to_10 = |v: u32| -> u16 {
        let v = match bits {
            0..=9 => v << (10 - u32::from(bits.max(1))),
            10 => v,
            _ => (v + (1 << (u32::from(bits) - 11))) >> (u32::from(bits) - 10),
        };
        v.min(1023) as u16
    };
    let sample = |plane: usize, x: usize, y: usize| -> u32 {
        let row = planes[plane].row(y);
        if wide {
            u32::from(u16::from_le_bytes([row[x * 2], row[x * 2 + 1]]))
        } else {
            u32::from(row[x])
        }
    };
    let (log2_w, log2_h) = chroma.log2();
    let strides = [picture.stride(0), picture.stride(1), picture.stride(2)];
    for y in 0..height {
        let luma = &mut picture.data_mut(0)[y * strides[0]..];
        for x in 0..width {
            luma[x * 2..x * 2 + 2].copy_from_slice(&to_10(sample(0, x, y)).to_le_bytes());
        }
        let source_y = y >> log2_h;
        for plane in [1, 2] {
            let out = &mut picture.data_mut(plane)[y * strides[plane]..];
            for x in 0..width / 2 {
                let v = if log2_w == 0 {
                    (sample(plane, 2 * x, source_y) + sample(plane, 2 * x + 1, source_y)).div_ceil(2)
                } else {
                    sample(plane, x, source_y)
                };
                out[x * 2..x * 2 + 2].copy_from_slice(&to_10(v).to_le_bytes());
            }
        }
    }
    Ok(())
}

/// The bytes the muxer writes, kept until they are taken.
#[derive(Clone, Default)]
struct Collected(Arc<Mutex<Vec<u8>>>);

impl Collected {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Write for Collected {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A fragmented MOV of one ProRes stream, muxed in memory: [`MovMuxer::header`] gives the
/// file's first bytes (`ftyp`, an empty `moov`), [`MovMuxer::frame`] each frame's fragment,
/// [`MovMuxer::trailer`] the fragment index (`mfra`). The caller writes them in order.
pub struct MovMuxer {
    output: ffmpeg_next::format::context::Output,
    collected: Collected,
    /// A frame's time base: one tick per frame at the rate.
    frame_tick: Rational,
    stream_time_base: Rational,
    header: Vec<u8>,
}

impl std::fmt::Debug for MovMuxer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MovMuxer").field("frame_tick", &self.frame_tick).finish_non_exhaustive()
    }
}

impl MovMuxer {
    /// A MOV of `profile` frames from `codec` at `size` and `rate`; writes the header.
    pub fn new(
        profile: ProresProfile,
        codec: ProresCodec,
        size: (u32, u32),
        rate: FrameRate,
    ) -> Result<MovMuxer, String> {
        let (num, den) = (i32::try_from(rate.num()), i32::try_from(rate.den()));
        let (Ok(num), Ok(den)) = (num, den) else { return Err(format!("rate {rate} is too fine for MOV")) };
        let frame_tick = Rational::new(den, num);
        // The stream's parameters (codec, fourcc, size, pixel format) are an opened encoder's.
        let template = open_encoder(profile, codec, size, frame_tick)?;
        let collected = Collected::default();
        let io =
            StreamIo::from_write(collected.clone()).map_err(|e| format!("cannot set up the muxer: {e}"))?;
        let mut output = ffmpeg_next::format::output_to_stream(io, None, Some("mov"))
            .map_err(|e| format!("cannot set up the mov muxer: {e}"))?;
        {
            let codec = encoder::find_by_name(codec.name())
                .ok_or_else(|| format!("this FFmpeg has no {} encoder", codec.name()))?;
            let mut stream = output.add_stream(codec).map_err(|e| format!("cannot add the stream: {e}"))?;
            stream.set_parameters(&template);
            stream.set_time_base(frame_tick);
        }
        let mut options = Dictionary::new();
        // frag_custom: a fragment is cut when asked (after each frame); empty_moov: the moov
        // comes first, with no samples, so the file needs no rewrite at the end.
        options.set("movflags", "frag_custom+empty_moov+default_base_moof");
        output.write_header_with(options).map_err(|e| format!("cannot write the MOV header: {e}"))?;
        let stream_time_base = output.stream(0).map_or(frame_tick, |s| s.time_base());
        ffi::flush_fragment(&mut output).map_err(|e| format!("cannot write the MOV header: {e}"))?;
        let header = collected.take();
        Ok(MovMuxer { output, collected, frame_tick, stream_time_base, header })
    }

    /// The file's first bytes.
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// Frame `position`'s fragment, for `packet` (one encoded frame). Positions must grow; a
    /// gap (a dropped frame) is a gap in the clip's time.
    pub fn frame(&mut self, position: u64, packet: &[u8]) -> Result<Vec<u8>, String> {
        let pts = i64::try_from(position).map_err(|_| format!("frame {position} is too far for MOV"))?;
        let mut pkt = Packet::copy(packet);
        pkt.set_stream(0);
        pkt.set_pts(Some(pts));
        pkt.set_dts(Some(pts));
        pkt.set_duration(1);
        pkt.set_flags(codec::packet::Flags::KEY);
        pkt.rescale_ts(self.frame_tick, self.stream_time_base);
        pkt.write(&mut self.output).map_err(|e| format!("cannot mux frame {position}: {e}"))?;
        ffi::flush_fragment(&mut self.output)
            .map_err(|e| format!("cannot write frame {position}'s fragment: {e}"))?;
        Ok(self.collected.take())
    }

    /// The bytes after the last frame: the fragment index.
    pub fn trailer(&mut self) -> Result<Vec<u8>, String> {
        self.output.write_trailer().map_err(|e| format!("cannot finish the MOV: {e}"))?;
        Ok(self.collected.take())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn gray(level: u16, width: u32, height: u32) -> DecodedFrame {
        let mut frame = DecodedFrame::default();
        frame.reset(width, height, PixelFormat::Rgb48Le);
        for chunk in frame.data.chunks_exact_mut(2) {
            chunk.copy_from_slice(&level.to_le_bytes());
        }
        frame
    }

    #[test]
    fn black_white_and_gray_convert_to_limited_range_with_neutral_chroma() {
        for (level, luma) in [(0u16, 64u16), (65_535, 940), (32_768, 502)] {
            let frame = gray(level, 4, 2);
            let mut picture = ffmpeg_next::frame::Video::new(Pixel::YUV422P10LE, 4, 2);
            rgb_to_yuv422p10(&frame, 3, &mut picture);
            let y = u16::from_le_bytes([picture.data(0)[0], picture.data(0)[1]]);
            let cb = u16::from_le_bytes([picture.data(1)[0], picture.data(1)[1]]);
            let cr = u16::from_le_bytes([picture.data(2)[0], picture.data(2)[1]]);
            assert_eq!((y, cb, cr), (luma, 512, 512), "level {level}");
        }
    }

    #[test]
    fn a_frame_encodes_and_muxes_into_fragments_that_start_with_moof() {
        for codec in [ProresCodec::Aw, ProresCodec::Ks] {
            let encoder = ProresEncoder::new(ProresProfile::Hq, codec);
            let mut packet = Vec::new();
            encoder.encode(&gray(20_000, 64, 32), &mut packet).unwrap();
            // A ProRes frame: its size, then 'icpf'.
            assert_eq!(&packet[4..8], b"icpf", "{codec:?}");
        }
        let encoder = ProresEncoder::new(ProresProfile::Hq, ProresCodec::Ks);
        let mut packet = Vec::new();
        encoder.encode(&gray(20_000, 64, 32), &mut packet).unwrap();
        let rate = FrameRate::new(24, 1).unwrap();
        let mut muxer = MovMuxer::new(ProresProfile::Hq, ProresCodec::Ks, (64, 32), rate).unwrap();
        assert_eq!(&muxer.header()[4..8], b"ftyp");
        let fragment = muxer.frame(0, &packet).unwrap();
        assert_eq!(&fragment[4..8], b"moof");
        let later = muxer.frame(2, &packet).unwrap();
        assert_eq!(&later[4..8], b"moof");
        assert!(!muxer.trailer().unwrap().is_empty());
    }
}
