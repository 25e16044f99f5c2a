//! Test-frame writers: how a sequence format's entry in the table makes frames, for
//! `playsim generate`, a scenario's `generate` table and `sim://`.
//!
//! A [`FrameWriter`] lists the options its format takes (name, default, help, example) and
//! parses `key=value` text into its own typed options, an encoder ([`FrameEncoder`]) that
//! turns the test pattern of frame N into one frame file's bytes. [`GenerateFormat`] is a
//! registered format with its parsed options. Adding a format's generation is giving its
//! entry in the table a writer; nothing else names formats.

use std::fmt;
use std::sync::Arc;

use playsim_core::DecodedFrame;
use playsim_exr::{Compression, SampleType};

use crate::synthetic::{render_frame, render_frame_f32};

/// One option a writer takes, as `key=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterOption {
    /// The key, e.g. `bit_depth`; the CLI flag is the same with `-` for `_` (`--bit-depth`).
    pub key: &'static str,
    /// The value when it is not given.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// A valid value, shown in refusals.
    pub example: &'static str,
    /// Whether the `playsim generate` command that remakes the media names it even at its
    /// default (so that recipes written before keep their text).
    pub always_in_command: bool,
}

/// Why an option's value was refused, by a writer's parser.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key} '{value}': {reason}")]
pub struct OptionError {
    /// The key, e.g. `bit_depth`.
    pub key: String,
    /// The value as given.
    pub value: String,
    /// Why, with the values that are valid.
    pub reason: String,
}

/// Parses a writer's options (`key=value` pairs, each key one of the writer's) into its encoder.
pub type ParseOptions = fn(&[(&str, &str)]) -> Result<Arc<dyn FrameEncoder>, OptionError>;

/// How a format writes test frames: one file each (a sequence), or one file holding them all
/// (a clip).
#[derive(Clone, Copy, Debug)]
pub struct FrameWriter {
    /// The name `--format` takes: the format's (`dpx`), or the codec's for a container
    /// (`prores`).
    pub name: &'static str,
    /// The extension of the files written, without the dot (`tif` for TIFF).
    pub extension: &'static str,
    /// Whether it writes one file holding every frame (a MOV), through
    /// [`FrameEncoder::clip_muxer`], rather than one file a frame.
    pub clip: bool,
    /// The options it takes, in the order they are listed.
    pub options: &'static [WriterOption],
    /// Whether `playsim generate` writes RGBA even without `--alpha` (EXR).
    pub rgba_by_default: bool,
    /// Whether `sim://` serves it (`format=NAME`).
    pub in_sim: bool,
    /// Parses the options.
    pub parse: ParseOptions,
}

impl FrameWriter {
    /// The option `key`, if the writer takes it.
    pub fn option(&self, key: &str) -> Option<&'static WriterOption> {
        self.options.iter().find(|o| o.key == key)
    }

    /// The keys it takes, joined by ", "; "no options" when it takes none.
    pub fn keys(&self) -> String {
        match self.options {
            [] => "no options".to_owned(),
            options => options.iter().map(|o| o.key).collect::<Vec<_>>().join(", "),
        }
    }
}

/// A format's typed writer options: encodes test frames.
pub trait FrameEncoder: Send + Sync + fmt::Debug {
    /// Renders the test pattern of frame `number` at `width`x`height`, RGBA when `alpha`, into
    /// `frame`, in the sample type this format encodes from.
    fn render(&self, number: u64, size: (u32, u32), alpha: bool, frame: &mut DecodedFrame);

    /// Encodes `frame` into `out` (cleared first).
    fn encode_frame(&self, frame: &DecodedFrame, out: &mut Vec<u8>) -> Result<(), String>;

    /// Encodes the test pattern of frame `number` at `width`x`height`, RGBA when `alpha`, into
    /// `out` (cleared first); `frame` is scratch space the caller reuses.
    fn encode(
        &self,
        number: u64,
        size: (u32, u32),
        alpha: bool,
        frame: &mut DecodedFrame,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        self.render(number, size, alpha, frame);
        self.encode_frame(frame, out)
    }

    /// Every option's value, in the writer's order, as the parser reads it back.
    fn settings(&self) -> Vec<(&'static str, String)>;

    /// A short description for reports, e.g. `10-bit rgb` or `half rgb, PIZ`.
    fn describe(&self, alpha: bool) -> String;

    /// Bytes of an RGB frame's samples at `width`x`height`: exact when uncompressed, an upper
    /// bound before compression otherwise; without headers.
    fn sample_bytes(&self, size: (u32, u32)) -> u64;

    /// A file's bytes, headers included, when they can be known before writing it.
    fn file_bytes(&self, _size: (u32, u32), _alpha: bool) -> Option<u64> {
        None
    }

    /// For a clip format ([`FrameWriter::clip`]): the muxer of a file of frames of `size` at
    /// `rate`, each from [`FrameEncoder::encode_frame`]; `None` for a sequence format.
    fn clip_muxer(
        &self,
        _size: (u32, u32),
        _rate: playsim_core::FrameRate,
    ) -> Option<Result<Box<dyn ClipMuxer>, String>> {
        None
    }
}

/// One file holding every frame (a video container), muxed as the frames come: its first
/// bytes, then each frame's bytes in position order (a gap in the positions is a gap in the
/// clip's time), then its last. Each piece is written as it is given, so the file on disk
/// grows a whole frame at a time.
pub trait ClipMuxer: Send {
    /// The bytes before the first frame.
    fn header(&self) -> &[u8];

    /// Frame `position`'s bytes in the container, from its encoded frame `packet`.
    fn frame(&mut self, position: u64, packet: &[u8]) -> Result<Vec<u8>, String>;

    /// The bytes after the last frame.
    fn trailer(&mut self) -> Result<Vec<u8>, String>;
}

/// Why a format and its options cannot make frames.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateFormatError {
    /// No registered format of that name has a writer.
    #[error("format '{name}': playsim writes {writable} (for example {example})")]
    Unknown {
        /// The name as given.
        name: String,
        /// The formats that can be written, joined by ", ".
        writable: String,
        /// A valid name.
        example: &'static str,
    },
    /// The format takes no option of that key.
    #[error("{key} does not apply to {format} ({format} takes {takes})")]
    UnknownOption {
        /// The format.
        format: &'static str,
        /// The key as given.
        key: String,
        /// The keys it takes.
        takes: String,
    },
    /// A value was refused.
    #[error("{format} {error} (for example {key}={example})", key = error.key)]
    Value {
        /// The format.
        format: &'static str,
        /// What the parser said.
        error: OptionError,
        /// A valid value.
        example: &'static str,
    },
}

/// A registered format that can write test frames, with its parsed options.
#[derive(Clone, Debug)]
pub struct GenerateFormat {
    name: &'static str,
    writer: &'static FrameWriter,
    encoder: Arc<dyn FrameEncoder>,
}

impl GenerateFormat {
    /// The format named `name` (as in the table, any case) with `options`, each key one the
    /// format's writer takes; options not given keep their defaults.
    pub fn parse(name: &str, options: &[(&str, &str)]) -> Result<GenerateFormat, GenerateFormatError> {
        let Some(writer) = writers().find(|w| w.name.eq_ignore_ascii_case(name.trim())) else {
            return Err(GenerateFormatError::Unknown {
                name: name.to_owned(),
                writable: writable_names(|_| true),
                example: "dpx",
            });
        };
        for (key, _) in options {
            if writer.option(key).is_none() {
                return Err(GenerateFormatError::UnknownOption {
                    format: writer.name,
                    key: (*key).to_owned(),
                    takes: writer.keys(),
                });
            }
        }
        let encoder = (writer.parse)(options).map_err(|error| GenerateFormatError::Value {
            format: writer.name,
            example: writer.option(&error.key).map_or("", |o| o.example),
            error,
        })?;
        Ok(GenerateFormat { name: writer.name, writer, encoder })
    }

    /// The format's name, e.g. `dpx`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The extension of the files written, without the dot.
    pub fn extension(&self) -> &'static str {
        self.writer.extension
    }

    /// The format's writer.
    pub fn writer(&self) -> &'static FrameWriter {
        self.writer
    }

    /// The parsed options.
    pub fn encoder(&self) -> &dyn FrameEncoder {
        self.encoder.as_ref()
    }

    /// Every option's value, in the writer's order.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        self.encoder.settings()
    }
}

impl PartialEq for GenerateFormat {
    fn eq(&self, other: &GenerateFormat) -> bool {
        self.name == other.name && self.settings() == other.settings()
    }
}

impl Eq for GenerateFormat {}

impl Default for GenerateFormat {
    /// 10-bit big-endian DPX, the most common film-scan layout.
    fn default() -> Self {
        GenerateFormat { name: "dpx", writer: &DPX_WRITER, encoder: Arc::new(DpxOptions::default()) }
    }
}

/// The writers of the registered formats, in table order.
pub fn writers() -> impl Iterator<Item = &'static FrameWriter> {
    crate::formats().iter().filter_map(|f| f.writer)
}

/// The names of the writers that `keep` keeps, joined by ", ".
pub fn writable_names(keep: impl Fn(&FrameWriter) -> bool) -> String {
    writers().filter(|w| keep(w)).map(|w| w.name).collect::<Vec<_>>().join(", ")
}

fn bad(key: &str, value: &str, reason: &str) -> OptionError {
    OptionError { key: key.to_owned(), value: value.to_owned(), reason: reason.to_owned() }
}

fn get<'a>(options: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    options.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn parse_bit_depth(
    options: &[(&str, &str)],
    allowed: &[u8],
    reason: &str,
) -> Result<Option<u8>, OptionError> {
    let Some(value) = get(options, "bit_depth") else { return Ok(None) };
    match value.trim().parse::<u8>() {
        Ok(bits) if allowed.contains(&bits) => Ok(Some(bits)),
        _ => Err(bad("bit_depth", value, reason)),
    }
}

/// `Some(true)` for big, `Some(false)` for little.
fn parse_big_endian(options: &[(&str, &str)]) -> Result<Option<bool>, OptionError> {
    match get(options, "endian").map(|v| (v, v.trim().to_ascii_lowercase())) {
        None => Ok(None),
        Some((_, v)) if v == "big" => Ok(Some(true)),
        Some((_, v)) if v == "little" => Ok(Some(false)),
        Some((value, _)) => Err(bad("endian", value, "it is big or little")),
    }
}

fn endian_name(big: bool) -> &'static str {
    if big {
        "big"
    } else {
        "little"
    }
}

fn channels(alpha: bool) -> &'static str {
    if alpha {
        "rgba"
    } else {
        "rgb"
    }
}

const ENDIAN_HELP: &str = "byte order: big or little";

/// DPX's writer: 8-, 10- or 16-bit RGB(A) of [`render_frame`]'s pixels.
pub const DPX_WRITER: FrameWriter = FrameWriter {
    name: "dpx",
    extension: "dpx",
    clip: false,
    options: &[
        WriterOption {
            key: "bit_depth",
            default: "10",
            help: "bits per sample: 8, 10 or 16",
            example: "10",
            always_in_command: true,
        },
        WriterOption {
            key: "endian",
            default: "big",
            help: ENDIAN_HELP,
            example: "big",
            always_in_command: false,
        },
    ],
    rgba_by_default: false,
    in_sim: true,
    parse: |options| {
        let bit_depth = parse_bit_depth(options, &[8, 10, 16], "it is 8, 10 or 16")?.unwrap_or(10);
        let endian = match parse_big_endian(options)? {
            Some(false) => playsim_dpx::Endian::Little,
            Some(true) | None => playsim_dpx::Endian::Big,
        };
        Ok(Arc::new(DpxOptions { bit_depth, endian }))
    },
};

/// DPX's typed writer options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DpxOptions {
    bit_depth: u8,
    endian: playsim_dpx::Endian,
}

impl Default for DpxOptions {
    fn default() -> Self {
        DpxOptions { bit_depth: 10, endian: playsim_dpx::Endian::Big }
    }
}

impl FrameEncoder for DpxOptions {
    fn render(&self, number: u64, (width, height): (u32, u32), alpha: bool, frame: &mut DecodedFrame) {
        render_frame(width, height, number, alpha, frame);
    }

    fn encode_frame(&self, frame: &DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        let opts = playsim_dpx::WriteOptions { bit_depth: self.bit_depth, endian: self.endian };
        playsim_dpx::write_dpx(frame, &opts, out).map_err(|e| e.to_string())
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let big = self.endian == playsim_dpx::Endian::Big;
        vec![("bit_depth", self.bit_depth.to_string()), ("endian", endian_name(big).to_owned())]
    }

    fn describe(&self, alpha: bool) -> String {
        let mut text = format!("{}-bit {}", self.bit_depth, channels(alpha));
        if self.endian == playsim_dpx::Endian::Little {
            text.push_str(", little endian");
        }
        text
    }

    fn sample_bytes(&self, (width, height): (u32, u32)) -> u64 {
        self.row_bytes(width, false) * u64::from(height)
    }

    fn file_bytes(&self, (width, height): (u32, u32), alpha: bool) -> Option<u64> {
        Some(self.row_bytes(width, alpha) * u64::from(height) + 2048)
    }
}

impl DpxOptions {
    /// Bytes of one row: 10-bit RGB packs a pixel in one 32-bit word; 8 and 16 bits take a
    /// byte or two per sample.
    fn row_bytes(&self, width: u32, alpha: bool) -> u64 {
        let channels: u64 = if alpha { 4 } else { 3 };
        match (self.bit_depth, channels) {
            (10, 3) => u64::from(width) * 4,
            (10, _) => (u64::from(width) * channels * 10).div_ceil(32) * 4,
            (8, _) => (u64::from(width) * channels).div_ceil(4) * 4,
            _ => u64::from(width) * channels * 2,
        }
    }
}

/// EXR's writer: scanline half-float files of [`render_frame_f32`]'s pixels, written with
/// the `exr` crate, one thread per file.
pub const EXR_WRITER: FrameWriter = FrameWriter {
    name: "exr",
    extension: "exr",
    clip: false,
    options: &[WriterOption {
        key: "compression",
        default: "piz",
        help: "none, rle, zips, zip, piz, pxr24, b44 or b44a",
        example: "piz",
        always_in_command: true,
    }],
    rgba_by_default: true,
    in_sim: true,
    parse: |options| {
        let compression = match get(options, "compression") {
            None => Compression::Piz,
            Some(value) => {
                let compression: Compression =
                    value.parse().map_err(|e: String| bad("compression", value, &e))?;
                if !playsim_exr::write::can_write(compression) {
                    let writable: Vec<&str> = Compression::ALL
                        .into_iter()
                        .filter(|c| playsim_exr::write::can_write(*c))
                        .map(|c| c.name())
                        .collect();
                    return Err(bad(
                        "compression",
                        value,
                        &format!("playsim cannot write it (use {})", writable.join(", ")),
                    ));
                }
                compression
            }
        };
        Ok(Arc::new(ExrOptions { compression }))
    },
};

/// EXR's typed writer options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ExrOptions {
    compression: Compression,
}

impl FrameEncoder for ExrOptions {
    fn render(&self, number: u64, (width, height): (u32, u32), alpha: bool, frame: &mut DecodedFrame) {
        render_frame_f32(width, height, number, alpha, frame);
    }

    fn encode_frame(&self, frame: &DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        // Each file is compressed on its caller's thread: the callers already fill the
        // cores, and a rayon pool on top would only contend with them.
        let opts = playsim_exr::write::WriteOptions {
            compression: self.compression,
            sample: SampleType::Half,
            parallel: false,
        };
        // Through OpenEXR where it is built in, as Nuke and Flame write, else the exr crate.
        let backend = playsim_exr::Backend::default_available();
        playsim_exr::write::write_exr_with(backend, frame, &opts, out).map_err(|e| e.to_string())
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        vec![("compression", self.compression.name().to_owned())]
    }

    fn describe(&self, alpha: bool) -> String {
        let library = match playsim_exr::Backend::default_available() {
            playsim_exr::Backend::OpenExr => {
                format!("openexr {}", playsim_exr::openexr_version().unwrap_or_default())
            }
            playsim_exr::Backend::Exrs => "exrs (exr crate)".to_owned(),
        };
        format!("half {}, {}, written by {}", channels(alpha), self.compression, library.trim_end())
    }

    fn sample_bytes(&self, (width, height): (u32, u32)) -> u64 {
        // Half RGB, before compression.
        u64::from(width) * u64::from(height) * 6
    }
}

/// TIFF's writer: uncompressed files of [`render_frame`]'s pixels, in strips of 16 rows, as
/// film scans often arrive.
pub const TIFF_WRITER: FrameWriter = FrameWriter {
    name: "tiff",
    extension: "tif",
    clip: false,
    options: &[
        WriterOption {
            key: "bit_depth",
            default: "16",
            help: "bits per sample: 8 or 16",
            example: "16",
            always_in_command: true,
        },
        WriterOption {
            key: "endian",
            default: "little",
            help: ENDIAN_HELP,
            example: "little",
            always_in_command: false,
        },
    ],
    rgba_by_default: false,
    // Not yet: tests/sim.rs holds `format=tiff` as a refused URL.
    in_sim: false,
    parse: |options| {
        let bit_depth =
            parse_bit_depth(options, &[8, 16], "tiff files are written at 8 or 16 bits")?.unwrap_or(16);
        let endian = match parse_big_endian(options)? {
            Some(true) => playsim_tiff::Endian::Big,
            Some(false) | None => playsim_tiff::Endian::Little,
        };
        Ok(Arc::new(TiffOptions { bit_depth, endian }))
    },
};

/// TIFF's typed writer options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TiffOptions {
    bit_depth: u8,
    endian: playsim_tiff::Endian,
}

impl FrameEncoder for TiffOptions {
    fn render(&self, number: u64, (width, height): (u32, u32), alpha: bool, frame: &mut DecodedFrame) {
        render_frame(width, height, number, alpha, frame);
    }

    fn encode_frame(&self, frame: &DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        let sample = if self.bit_depth == 8 { playsim_tiff::Sample::U8 } else { playsim_tiff::Sample::U16 };
        let opts = playsim_tiff::WriteOptions {
            sample,
            endian: self.endian,
            ..playsim_tiff::WriteOptions::default()
        };
        playsim_tiff::write_tiff(frame, &opts, out).map_err(|e| e.to_string())
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let big = self.endian == playsim_tiff::Endian::Big;
        vec![("bit_depth", self.bit_depth.to_string()), ("endian", endian_name(big).to_owned())]
    }

    fn describe(&self, alpha: bool) -> String {
        let mut text = format!("{}-bit {}", self.bit_depth, channels(alpha));
        if self.endian == playsim_tiff::Endian::Big {
            text.push_str(", big endian");
        }
        text
    }

    fn sample_bytes(&self, (width, height): (u32, u32)) -> u64 {
        u64::from(width) * u64::from(height) * 3 * u64::from(self.bit_depth / 8)
    }
}

/// ProRes 422 in a fragmented MOV, through FFmpeg (`prores_ks`, the `mov` muxer): a clip, one
/// file holding every frame. The generator's 16-bit RGB is converted to 10-bit Y'CbCr 4:2:2
/// (BT.709) first, as a camera or an ingest server's encoder would.
#[cfg(feature = "ffmpeg")]
pub const PRORES_WRITER: FrameWriter = FrameWriter {
    name: "prores",
    extension: "mov",
    clip: true,
    options: &[
        WriterOption {
            key: "profile",
            default: "hq",
            help: "proxy, lt, standard or hq",
            example: "hq",
            always_in_command: true,
        },
        WriterOption {
            key: "encoder",
            default: "prores_ks",
            help: "FFmpeg's prores_ks (Apple's sizes) or prores_aw (about 8x faster, larger frames)",
            example: "prores_aw",
            always_in_command: false,
        },
    ],
    rgba_by_default: false,
    in_sim: false,
    parse: parse_prores,
};

/// ProRes's typed options: the encoder of its profile.
#[cfg(feature = "ffmpeg")]
#[derive(Debug)]
struct ProresOptions {
    encoder: playsim_ffmpeg::ProresEncoder,
}

#[cfg(feature = "ffmpeg")]
fn parse_prores(options: &[(&str, &str)]) -> Result<Arc<dyn FrameEncoder>, OptionError> {
    let profile = match get(options, "profile") {
        None => playsim_ffmpeg::ProresProfile::default(),
        Some(value) => playsim_ffmpeg::ProresProfile::parse(value)
            .ok_or_else(|| bad("profile", value, "it is proxy, lt, standard or hq"))?,
    };
    let codec = match get(options, "encoder") {
        None => playsim_ffmpeg::ProresCodec::default(),
        Some(value) => playsim_ffmpeg::ProresCodec::parse(value)
            .ok_or_else(|| bad("encoder", value, "it is prores_ks or prores_aw"))?,
    };
    Ok(Arc::new(ProresOptions { encoder: playsim_ffmpeg::ProresEncoder::new(profile, codec) }))
}

#[cfg(feature = "ffmpeg")]
impl FrameEncoder for ProresOptions {
    fn render(&self, number: u64, (width, height): (u32, u32), _alpha: bool, frame: &mut DecodedFrame) {
        render_frame(width, height, number, false, frame);
    }

    fn encode_frame(&self, frame: &DecodedFrame, out: &mut Vec<u8>) -> Result<(), String> {
        self.encoder.encode(frame, out)
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("profile", self.encoder.profile().name().to_owned()),
            ("encoder", self.encoder.codec().name().to_owned()),
        ]
    }

    fn describe(&self, _alpha: bool) -> String {
        format!(
            "{} ({}), 10-bit 4:2:2, fragmented MOV",
            self.encoder.profile().describe(),
            self.encoder.codec().name()
        )
    }

    fn sample_bytes(&self, size: (u32, u32)) -> u64 {
        self.encoder.profile().max_frame_bytes(self.encoder.codec(), size)
    }

    fn clip_muxer(
        &self,
        size: (u32, u32),
        rate: playsim_core::FrameRate,
    ) -> Option<Result<Box<dyn ClipMuxer>, String>> {
        let muxer = playsim_ffmpeg::MovMuxer::new(self.encoder.profile(), self.encoder.codec(), size, rate);
        Some(muxer.map(|m| Box::new(m) as Box<dyn ClipMuxer>))
    }
}

#[cfg(feature = "ffmpeg")]
impl ClipMuxer for playsim_ffmpeg::MovMuxer {
    fn header(&self) -> &[u8] {
        playsim_ffmpeg::MovMuxer::header(self)
    }

    fn frame(&mut self, position: u64, packet: &[u8]) -> Result<Vec<u8>, String> {
        playsim_ffmpeg::MovMuxer::frame(self, position, packet)
    }

    fn trailer(&mut self) -> Result<Vec<u8>, String> {
        playsim_ffmpeg::MovMuxer::trailer(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_writer_parses_its_defaults_and_examples() {
        for writer in writers() {
            let pairs: Vec<(&str, &str)> = writer.options.iter().map(|o| (o.key, o.example)).collect();
            let with_examples = GenerateFormat::parse(writer.name, &pairs).unwrap();
            let defaults = GenerateFormat::parse(writer.name, &[]).unwrap();
            let settings: Vec<(&str, String)> =
                writer.options.iter().map(|o| (o.key, o.default.to_owned())).collect();
            assert_eq!(defaults.settings(), settings, "{}", writer.name);
            assert_eq!(with_examples.name(), writer.name);
        }
        let video = if cfg!(feature = "ffmpeg") { ", prores" } else { "" };
        assert_eq!(writable_names(|_| true), format!("dpx, exr, tiff{video}"));
        assert_eq!(GenerateFormat::default(), GenerateFormat::parse("dpx", &[]).unwrap());
    }

    #[test]
    fn refusals_name_the_key_and_show_an_example() {
        type Pairs<'a> = &'a [(&'a str, &'a str)];
        let video = if cfg!(feature = "ffmpeg") { ", prores" } else { "" };
        let webp = format!("format 'webp': playsim writes dpx, exr, tiff{video} (for example dpx)");
        let cases: [(&str, Pairs, &str); 5] = [
            ("webp", &[], &webp),
            (
                "dpx",
                &[("compression", "piz")],
                "compression does not apply to dpx (dpx takes bit_depth, endian)",
            ),
            (
                "dpx",
                &[("bit_depth", "12")],
                "dpx bit_depth '12': it is 8, 10 or 16 (for example bit_depth=10)",
            ),
            ("exr", &[("compression", "dwaa")], "exr compression 'dwaa': playsim cannot write it"),
            (
                "tiff",
                &[("endian", "middle")],
                "tiff endian 'middle': it is big or little (for example endian=little)",
            ),
        ];
        for (name, options, message) in cases {
            let err = GenerateFormat::parse(name, options).unwrap_err().to_string();
            assert!(err.contains(message), "{err}");
        }
    }
}
