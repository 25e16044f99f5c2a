//! `sim://` sources: frames generated in memory, for simulated storage.
//!
//! `sim://[LINK]?bw=4.5GB/s&lat=300us&jitter=1ms&format=dpx&preset=4k-dci` names a
//! sequence of synthetic frames (the same pictures `playsim generate` writes) held in
//! memory, and the link they are read over. [`SimUrl::parse`] reads the URL;
//! [`SimFrames::generate`] renders and encodes the frames; [`SimFrames::source`] plays
//! them, each frame a [`FrameExtent::File`] whose path a simulated storage serves. The
//! link itself (bandwidth, latency, jitter) is the storage's: this module only parses it.
//!
//! Only `distinct` frames are made (4 by default) and frame `k` is copy `k mod distinct`,
//! so an 8K sequence of any length holds a few frames in memory, not hundreds.
//!
//! ```
//! use playsim_media::SimUrl;
//! let url = SimUrl::parse("sim://lan?bw=100Gbit&lat=300us&format=dpx&preset=8k-dci").unwrap();
//! assert_eq!((url.link.as_str(), url.bits_per_s), ("lan", Some(100_000_000_000)));
//! assert_eq!(url.format_name(), "dpx");
//! assert_eq!(url.frame_path(9).to_str(), Some("sim://lan/frame.0000009.dpx"));
//!
//! let err = SimUrl::parse("sim://lan?bw=4.5GB").unwrap_err().to_string();
//! assert!(err.contains("bw '4.5GB'") && err.contains("for example"));
//! ```
//!
//! # Content and use (moved from ARCHITECTURE.md)
//!
//! - `format=NAME` is any format whose writer `sim://` serves (`FrameWriter::in_sim`), with that
//!   format's own keys: `format=dpx` (the default, `bit_depth=`, `endian=`), `format=exr`
//!   (`compression=`, PIZ by default). The frames are rendered and encoded once per source on a
//!   blocking thread before the run, shared by all the source's streams (at most 8 GB of copies;
//!   `frames` ≤ 100,000, longer with `--loop`). `--verify` is refused unless
//!   `distinct = frames`.
//! - `frame_bytes=N` serves raw frames: no bytes are held or copied, and the decoder is
//!   `BytesOnly`, so the engine skips the decode pool and the output stage.
//! - `corrupt_every=N` makes frames N−1, 2N−1, … fail after their bytes crossed the link, with a
//!   message naming the frame and its path: `unreadable`, and playback goes on.
//! - With no LINK each stream gets a link of its own; `--streams N` of one URL are N streams on
//!   one link. Copies of 4 MB or more run in `block_in_place`, so they do not delay a presenter.
//!
//! What-if, 100GbE for 3× 8K DCI DPX at 24 fps: 3 × 24 × 141.6 MB = 81.5 Gbit/s, so each stream
//! gets 33.3 Gbit/s and a frame crosses in 34.0 ms against a 41.7 ms period. Measured on a 2-core
//! machine over 10 s: `--streams 3` presented 720 of 720 (read p50 35.0 ms), `--streams 4` 350 of
//! 960 (610 storage drops), and decoding the three 8K DPX streams for real dropped nearly every
//! frame, blamed on decode: the link is enough, the machine is not.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    writable_names, writers, DecodeOptions, Error, GenerateFormat, GenerateFormatError, GENERATED_PADDING,
};
use playsim_core::{
    BytesOnly, DecodedFrame, Decoder, FrameExtent, FramePreset, ParseError, Source, SourceInfo,
};

/// A valid `sim://` URL, shown in every refusal.
pub const SIM_EXAMPLE: &str = "sim://lan?bw=4.5GB/s&lat=300us&jitter=1ms&format=dpx&preset=4k-dci";

/// The query keys of `sim://` itself, in the order they are listed in messages; the keys of
/// the formats' writers (e.g. `compression`) are accepted too and go to the format's parser.
pub const SIM_KEYS: &[&str] = &[
    "bw",
    "lat",
    "jitter",
    "dist",
    "seed",
    "format",
    "preset",
    "frames",
    "distinct",
    "frame_bytes",
    "corrupt_every",
];

/// Frames in a `sim://` sequence when `frames=` is not given: 10 s at 24 fps.
pub const DEFAULT_SIM_FRAMES: u64 = 240;
/// The most frames a `sim://` sequence may have (`--loop` plays longer).
pub const MAX_SIM_FRAMES: u64 = 100_000;
/// Distinct frames made when `distinct=` is not given (fewer if the sequence is shorter).
pub const DEFAULT_SIM_DISTINCT: u64 = 4;
/// The most bytes the distinct frames of one `sim://` source may hold in memory: 8 GB.
pub const MAX_SIM_MEMORY: u64 = 8_000_000_000;
/// The largest raw frame, `frame_bytes=`: 4 GB.
pub const MAX_SIM_FRAME_BYTES: u64 = 4_000_000_000;

/// What the frames of a `sim://` source are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimFormat {
    /// Frames of a registered format whose writer `sim://` serves (`format=NAME`, DPX by
    /// default), with the format's own keys (`compression=` for EXR; `bit_depth=` and
    /// `endian=` for DPX).
    Frames(GenerateFormat),
    /// Raw bytes that are read and not decoded (`frame_bytes=N` with no format).
    Raw {
        /// Bytes per frame.
        frame_bytes: u64,
    },
}

impl SimFormat {
    /// The frames' file extension: `dpx`, `exr` or `raw`.
    pub fn extension(&self) -> &'static str {
        match self {
            SimFormat::Frames(format) => format.extension(),
            SimFormat::Raw { .. } => "raw",
        }
    }

    /// The frames' format name: `dpx`, `exr` or `raw`.
    pub fn name(&self) -> &'static str {
        match self {
            SimFormat::Frames(format) => format.name(),
            SimFormat::Raw { .. } => "raw",
        }
    }
}

/// The jitter's distribution as the URL names it (`dist=exp|uniform`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SimDist {
    /// Exponential with mean `jitter`.
    #[default]
    Exp,
    /// Uniform in `[0, jitter]`.
    Uniform,
}

/// A parsed `sim://` URL: the link and the frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimUrl {
    /// The URL as given.
    pub url: String,
    /// The link's name; streams that name the same link share its bandwidth. Empty when
    /// none is named: then each stream has a link of its own.
    pub link: String,
    /// `bw=`: bandwidth in bits per second; `None` is unlimited.
    pub bits_per_s: Option<u64>,
    /// `lat=`: latency of every request, after its bytes crossed.
    pub latency: Duration,
    /// `jitter=`: the scale of the random delay added to every request.
    pub jitter: Duration,
    /// `dist=`: the jitter's distribution.
    pub dist: SimDist,
    /// `seed=`: the jitter's seed; `None` lets the caller pick one (and report it).
    pub seed: Option<u64>,
    /// `format=` or `frame_bytes=`.
    pub format: SimFormat,
    /// `preset=`: the frame size of DPX and EXR frames.
    pub preset: FramePreset,
    /// `frames=`: frames in the sequence.
    pub frames: u64,
    /// `distinct=`: frames actually made; frame `k` is copy `k mod distinct`.
    pub distinct: u64,
    /// `corrupt_every=N`: frames N-1, 2N-1, ... (every N-th) cannot be read.
    pub corrupt_every: Option<u64>,
}

impl SimUrl {
    /// True when `text` is a `sim://` URL (the scheme in any case).
    pub fn is_sim_url(text: &str) -> bool {
        text.get(..6).is_some_and(|s| s.eq_ignore_ascii_case("sim://"))
    }

    /// Parses a `sim://` URL. Every refusal names the part at fault and shows a valid URL;
    /// unknown keys are refused (a typo must not silently do nothing).
    pub fn parse(text: &str) -> Result<SimUrl, ParseError> {
        let bad = |reason: String| ParseError {
            what: "sim:// url",
            value: text.to_owned(),
            reason,
            example: SIM_EXAMPLE,
        };
        if !SimUrl::is_sim_url(text) {
            return Err(bad("it does not start with sim://".into()));
        }
        let rest = &text[6..];
        let (link, query) = rest.split_once('?').unwrap_or((rest, ""));
        let link = link.strip_suffix('/').unwrap_or(link);
        if link.len() > 64 || !link.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
            return Err(bad(format!(
                "link name '{link}' may hold only letters, digits, '.', '_' and '-' (at most 64), \
                 and is followed by '?' and the settings"
            )));
        }
        let mut given: Vec<(&str, &str)> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(bad(format!("'{pair}' is not key=value")));
            };
            if !SIM_KEYS.contains(&key) && !format_keys().contains(&key) {
                return Err(bad(format!(
                    "unknown key '{key}' (valid keys: {}; and the format's: {})",
                    SIM_KEYS.join(", "),
                    format_keys().join(", ")
                )));
            }
            if given.iter().any(|(k, _)| *k == key) {
                return Err(bad(format!("'{key}' is given twice")));
            }
            if value.is_empty() {
                return Err(bad(format!("'{key}' has no value")));
            }
            given.push((key, value));
        }
        let get = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let field = |key: &str, why: String| bad(format!("{key} '{}': {why}", get(key).unwrap_or("")));

        let bits_per_s = get("bw").map(parse_rate).transpose().map_err(|e| field("bw", e))?;
        let latency =
            get("lat").map(parse_time).transpose().map_err(|e| field("lat", e))?.unwrap_or_default();
        let jitter =
            get("jitter").map(parse_time).transpose().map_err(|e| field("jitter", e))?.unwrap_or_default();
        let dist = match get("dist") {
            None | Some("exp") => SimDist::Exp,
            Some("uniform") => SimDist::Uniform,
            Some(_) => return Err(field("dist", "it is exp or uniform".into())),
        };
        let seed = get("seed")
            .map(|s| s.parse::<u64>().map_err(|_| field("seed", "not a whole number from 0".into())))
            .transpose()?;
        let whole = |key: &str, max: u64| -> Result<Option<u64>, ParseError> {
            let Some(value) = get(key) else { return Ok(None) };
            match value.parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
                _ => Err(field(key, format!("not a whole number from 1 to {max}"))),
            }
        };
        let frames = whole("frames", MAX_SIM_FRAMES)?.unwrap_or(DEFAULT_SIM_FRAMES);
        let corrupt_every = whole("corrupt_every", u64::MAX)?;

        let frame_bytes =
            get("frame_bytes").map(parse_size).transpose().map_err(|e| field("frame_bytes", e))?;
        let format_options: Vec<(&str, &str)> =
            given.iter().copied().filter(|(k, _)| format_keys().contains(k)).collect();
        let format = match (get("format"), frame_bytes) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "frame_bytes serves raw bytes, which have no format: give one or the other".into()
                ))
            }
            (None, Some(frame_bytes)) => {
                if let Some((key, _)) = format_options.first() {
                    return Err(field(key, "raw frames (frame_bytes) have no format options".into()));
                }
                SimFormat::Raw { frame_bytes }
            }
            (name, None) => {
                let name = name.unwrap_or("dpx");
                if !writers().any(|w| w.in_sim && w.name == name) {
                    return Err(field(
                        "format",
                        format!("it is {} (or give frame_bytes=N)", writable_names(|w| w.in_sim)),
                    ));
                }
                let parsed = GenerateFormat::parse(name, &format_options).map_err(|e| match e {
                    GenerateFormatError::UnknownOption { key, .. } => {
                        let takers: Vec<&str> = writers()
                            .filter(|w| w.in_sim && w.option(&key).is_some())
                            .map(|w| w.name)
                            .collect();
                        field(&key, format!("it applies only to format={}", takers.join(" or format=")))
                    }
                    GenerateFormatError::Value { error, .. } => field(&error.key, error.reason),
                    other => bad(other.to_string()),
                })?;
                SimFormat::Frames(parsed)
            }
        };
        let raw = matches!(format, SimFormat::Raw { .. });
        let preset = match get("preset") {
            Some(_) if raw => {
                return Err(field("preset", "raw frames (frame_bytes) have no frame size".into()))
            }
            Some(value) => value.parse::<FramePreset>().map_err(|e| field("preset", e.reason))?,
            None => FramePreset::Hd,
        };
        let distinct = match whole("distinct", frames) {
            Ok(Some(_)) if raw => {
                return Err(field("distinct", "raw frames (frame_bytes) hold no content to make".into()))
            }
            Ok(n) => n.unwrap_or(DEFAULT_SIM_DISTINCT.min(frames)),
            Err(_) => {
                return Err(field("distinct", format!("not a whole number from 1 to frames ({frames})")))
            }
        };
        let url = SimUrl {
            url: text.to_owned(),
            link: link.to_owned(),
            bits_per_s,
            latency,
            jitter,
            dist,
            seed,
            format,
            preset,
            frames,
            distinct,
            corrupt_every,
        };
        let held = url.frame_size_bound().saturating_mul(if raw { 0 } else { distinct });
        if held > MAX_SIM_MEMORY {
            return Err(bad(format!(
                "{distinct} distinct {preset} frames would hold about {:.1} GB in memory, more than {} GB: \
                 lower distinct",
                held as f64 / 1e9,
                MAX_SIM_MEMORY / 1_000_000_000
            )));
        }
        Ok(url)
    }

    /// The frames' file extension: `dpx`, `exr` or `raw`.
    pub fn extension(&self) -> &'static str {
        self.format.extension()
    }

    /// The frames' format name: `dpx`, `exr` or `raw`.
    pub fn format_name(&self) -> &'static str {
        self.format.name()
    }

    /// The path of frame `idx` in the simulated storage, e.g. `sim://lan/frame.0000009.dpx`.
    pub fn frame_path(&self, idx: u64) -> PathBuf {
        PathBuf::from(format!("sim://{}/frame.{idx:0GENERATED_PADDING$}.{}", self.link, self.extension()))
    }

    /// The frames' printf-style pattern in the simulated storage, e.g. `sim://lan/frame.%07d.dpx`.
    pub fn pattern_path(&self) -> PathBuf {
        PathBuf::from(format!("sim://{}/frame.%0{GENERATED_PADDING}d.{}", self.link, self.extension()))
    }

    /// Why frame `idx` cannot be read, when `corrupt_every` makes it unreadable.
    pub fn corruption(&self, idx: u64) -> Option<String> {
        let every = self.corrupt_every?;
        (idx + 1).is_multiple_of(every).then(|| {
            format!("frame {idx} is corrupt (corrupt_every={every}: one frame in {every} is unreadable)")
        })
    }

    /// The URL's frame settings, for the report: format, preset, frames, distinct,
    /// frame_bytes, corrupt_every.
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |k: &str, v: String| out.push((k.to_owned(), v));
        match &self.format {
            SimFormat::Frames(format) => {
                put("format", format!("{} ({})", format.name(), format.encoder().describe(false)))
            }
            SimFormat::Raw { frame_bytes } => {
                put("format", "raw (read, not decoded)".into());
                put("frame_bytes", frame_bytes.to_string());
            }
        }
        if !matches!(self.format, SimFormat::Raw { .. }) {
            let (w, h) = self.preset.dimensions();
            put("preset", format!("{} ({w}x{h})", self.preset));
            put("distinct", self.distinct.to_string());
        }
        put("frames", self.frames.to_string());
        if let Some(every) = self.corrupt_every {
            put("corrupt_every", every.to_string());
        }
        out
    }

    /// About the bytes of one frame, without headers: exact for uncompressed formats and
    /// raw, an upper bound for compressed ones.
    fn frame_size_bound(&self) -> u64 {
        match &self.format {
            SimFormat::Frames(format) => format.encoder().sample_bytes(self.preset.dimensions()),
            SimFormat::Raw { frame_bytes } => *frame_bytes,
        }
    }
}

/// One frame as the simulated storage serves it.
#[derive(Clone, Debug)]
pub struct SimFrame {
    /// Its path, e.g. `sim://lan/frame.0000009.dpx`.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its bytes; `None` for raw frames, whose contents nobody looks at.
    pub content: Option<Arc<[u8]>>,
    /// Why it cannot be read, when `corrupt_every` makes it unreadable.
    pub fault: Option<String>,
}

/// The frames of a `sim://` URL, made in memory.
pub struct SimFrames {
    url: SimUrl,
    copies: Vec<Arc<[u8]>>,
}

impl SimFrames {
    /// Renders and encodes the URL's distinct frames, on up to one thread per core. Copy
    /// `j` carries `j` as its index in the pixels. Raw frames make nothing.
    pub fn generate(url: &SimUrl) -> Result<SimFrames, Error> {
        if matches!(url.format, SimFormat::Raw { .. }) {
            return Ok(SimFrames { url: url.clone(), copies: Vec::new() });
        }
        let n = usize::try_from(url.distinct).unwrap_or(usize::MAX);
        let threads = std::thread::available_parallelism().map_or(1, usize::from).min(n).max(1);
        // Worker t makes copies t, t + threads, ...; copy j lands in slot j.
        let mut slots: Vec<Option<Arc<[u8]>>> = vec![None; n];
        std::thread::scope(|scope| -> Result<(), Error> {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    scope.spawn(move || {
                        let mut frame = DecodedFrame::default();
                        (t..n).step_by(threads).map(|j| encode(url, j as u64, &mut frame)).collect::<Vec<_>>()
                    })
                })
                .collect();
            for (t, worker) in workers.into_iter().enumerate() {
                let panicked = || Error::Encode {
                    path: url.pattern_path(),
                    message: "the frame generator panicked".into(),
                };
                for (i, made) in worker.join().map_err(|_| panicked())?.into_iter().enumerate() {
                    slots[t + i * threads] = Some(made?);
                }
            }
            Ok(())
        })?;
        let copies = slots.into_iter().flatten().collect();
        Ok(SimFrames { url: url.clone(), copies })
    }

    /// The URL the frames were made from.
    pub fn url(&self) -> &SimUrl {
        &self.url
    }

    /// Frames in the sequence.
    pub fn n_frames(&self) -> u64 {
        self.url.frames
    }

    /// Frame `idx` as the storage serves it.
    pub fn frame(&self, idx: u64) -> SimFrame {
        let content = match self.copies.len() as u64 {
            0 => None,
            n => self.copies.get(usize::try_from(idx % n).unwrap_or(0)).cloned(),
        };
        let size = match (&content, &self.url.format) {
            (_, SimFormat::Raw { frame_bytes }) => *frame_bytes,
            (Some(bytes), _) => bytes.len() as u64,
            (None, _) => 0,
        };
        SimFrame { path: self.url.frame_path(idx), size, content, fault: self.url.corruption(idx) }
    }

    /// Plays the frames in order, each at its path, with the format's decoder (`options`
    /// set up DPX and EXR decoding) or, for raw frames, [`BytesOnly`].
    pub fn source(self: &Arc<Self>, options: &DecodeOptions) -> Arc<dyn Source> {
        let decoder: Arc<dyn Decoder> = crate::formats()
            .iter()
            .find(|f| f.name == self.url.format_name())
            .and_then(|format| format.decoder(options))
            .unwrap_or_else(|| Arc::new(BytesOnly));
        let url = &self.url;
        let info = SourceInfo {
            location: url.url.clone(),
            pattern: format!("frame.%0{GENERATED_PADDING}d.{}", url.extension()),
            format: url.format_name().to_owned(),
            first_frame: 0,
            last_frame: url.frames - 1,
            n_frames: url.frames,
            gaps: Vec::new(),
            frame_rate: None,
            index: None,
        };
        Arc::new(SimSource { frames: Arc::clone(self), decoder, info })
    }
}

/// The keys of every registered writer's options, each once, in table order.
fn format_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for writer in writers() {
        for option in writer.options {
            if !keys.contains(&option.key) {
                keys.push(option.key);
            }
        }
    }
    keys
}

/// Renders and encodes copy `j` of the URL's frames.
fn encode(url: &SimUrl, j: u64, frame: &mut DecodedFrame) -> Result<Arc<[u8]>, Error> {
    let (width, height) = url.preset.dimensions();
    let mut encoded = Vec::new();
    let failed = |message: String| Error::Encode { path: url.frame_path(j), message };
    if let SimFormat::Frames(format) = &url.format {
        format.encoder().encode(j, (width, height), false, frame, &mut encoded).map_err(failed)?;
    }
    Ok(Arc::from(encoded))
}

/// A `sim://` sequence as a [`Source`].
struct SimSource {
    frames: Arc<SimFrames>,
    decoder: Arc<dyn Decoder>,
    info: SourceInfo,
}

impl Source for SimSource {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn n_frames(&self) -> u64 {
        self.frames.n_frames()
    }

    fn frame_number(&self, idx: u64) -> u64 {
        idx
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        let path = self.frames.url.frame_path(idx);
        if idx < self.n_frames() {
            FrameExtent::File { path }
        } else {
            FrameExtent::Missing { expected: path }
        }
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        Arc::clone(&self.decoder)
    }

    /// The preset's size, which every made frame has; raw frames have none.
    fn dimensions(&self) -> Option<(u32, u32)> {
        let url = &self.frames.url;
        (!matches!(url.format, SimFormat::Raw { .. })).then(|| url.preset.dimensions())
    }
}

/// Splits `text` at the end of its leading decimal number: the digits as an integer, the
/// count of digits after the point, and the rest.
fn split_number(text: &str) -> Result<(u128, u32, &str), String> {
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() || frac.contains('.') || int.len() + frac.len() > 24 {
        return Err("it must start with a number such as 4.5".into());
    }
    let digits: u128 =
        format!("{int}{frac}").parse().map_err(|_| "it must start with a number such as 4.5")?;
    Ok((digits, frac.len() as u32, unit))
}

/// `digits / 10^frac * scale`, rounded to the nearest whole number.
fn scaled(digits: u128, frac: u32, scale: u128) -> Option<u128> {
    let den = 10u128.checked_pow(frac)?;
    Some((digits.checked_mul(scale)? + den / 2) / den)
}

/// A bandwidth in bits per second: `4.5GB/s`, `800MB/s`, `100Gbit`, `25Gbit/s` (SI units:
/// MB = 10⁶ bytes; `bit` for bits).
fn parse_rate(text: &str) -> Result<u64, String> {
    let (digits, frac, unit) = split_number(text)?;
    let (prefix, per) = unit.split_at(unit.find(['B', 'b']).unwrap_or(unit.len()));
    let scale: u128 = match prefix {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => {
            return Err(
                "unknown unit: use kB/s, MB/s, GB/s or kbit, Mbit, Gbit (SI: 1 GB = 10^9 bytes)".into()
            )
        }
    };
    let bits_per_unit = match per {
        "B/s" => 8,
        "bit" | "bit/s" | "bps" => 1,
        "B" => return Err("a size, not a rate: say per second, as in 4.5GB/s (or 100Gbit for bits)".into()),
        _ if per.starts_with("iB") => return Err("binary units are not used: SI, as in 4.5GB/s".into()),
        _ => {
            return Err(
                "unknown unit: use kB/s, MB/s, GB/s or kbit, Mbit, Gbit (SI: 1 GB = 10^9 bytes)".into()
            )
        }
    };
    let bits = scaled(digits, frac, scale * bits_per_unit).ok_or("too large")?;
    if bits == 0 {
        return Err("it must be more than 0 (leave bw out for an unlimited link)".into());
    }
    if bits > 1_000_000_000_000_000 {
        return Err("more than 1 Pbit/s".into());
    }
    u64::try_from(bits).map_err(|_| "too large".into())
}

/// A time: `0`, `500ns`, `300us` (or `µs`), `1.5ms`, `2s`; at most 60 s.
fn parse_time(text: &str) -> Result<Duration, String> {
    let (digits, frac, unit) = split_number(text)?;
    let ns_per_unit: u128 = match unit {
        "" if digits == 0 => 1,
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" => return Err("it needs a unit: ns, us, ms or s".into()),
        _ => return Err("unknown unit: use ns, us, ms or s".into()),
    };
    let ns = scaled(digits, frac, ns_per_unit).ok_or("too large")?;
    if ns > 60_000_000_000 {
        return Err("more than 60 s".into());
    }
    Ok(Duration::from_nanos(u64::try_from(ns).map_err(|_| "too large")?))
}

/// A size in bytes: `8294400`, `50MB`, `1.2GB`, `64kB` (SI units); 1 byte to 4 GB.
fn parse_size(text: &str) -> Result<u64, String> {
    let (digits, frac, unit) = split_number(text)?;
    let scale: u128 = match unit {
        "" | "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err("unknown unit: use bytes, kB, MB or GB (SI: 1 MB = 10^6 bytes)".into()),
    };
    let bytes = scaled(digits, frac, scale).ok_or("too large")?;
    if bytes == 0 || bytes > u128::from(MAX_SIM_FRAME_BYTES) {
        return Err("it must be from 1 byte to 4GB".into());
    }
    u64::try_from(bytes).map_err(|_| "too large".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::read_frame_index;

    #[test]
    fn reads_every_setting() {
        let url = SimUrl::parse(
            "sim://lan-2?bw=4.5GB/s&lat=300us&jitter=1.5ms&dist=uniform&seed=42&format=exr&compression=zip\
             &preset=4k-dci&frames=48&distinct=8&corrupt_every=10",
        )
        .unwrap();
        assert_eq!(url.link, "lan-2");
        assert_eq!(url.bits_per_s, Some(36_000_000_000));
        assert_eq!((url.latency, url.jitter), (Duration::from_micros(300), Duration::from_micros(1500)));
        assert_eq!((url.dist, url.seed), (SimDist::Uniform, Some(42)));
        assert_eq!(
            url.format,
            SimFormat::Frames(GenerateFormat::parse("exr", &[("compression", "zip")]).unwrap())
        );
        assert_eq!(
            (url.preset, url.frames, url.distinct, url.corrupt_every),
            (FramePreset::Dci4k, 48, 8, Some(10))
        );
        assert_eq!(url.pattern_path(), PathBuf::from("sim://lan-2/frame.%07d.exr"));
    }

    #[test]
    fn defaults_are_unlimited_hd_dpx() {
        let url = SimUrl::parse("sim://").unwrap();
        assert_eq!(
            (url.link.as_str(), url.bits_per_s, url.latency, url.jitter),
            ("", None, Duration::ZERO, Duration::ZERO)
        );
        assert_eq!(
            (url.format, url.preset, url.frames, url.distinct),
            (SimFormat::Frames(GenerateFormat::default()), FramePreset::Hd, 240, 4)
        );
        assert_eq!((url.dist, url.seed, url.corrupt_every), (SimDist::Exp, None, None));
        assert_eq!(SimUrl::parse("SIM://?frames=2").unwrap().distinct, 2);
        assert_eq!(
            SimUrl::parse("sim://lan/?format=exr").unwrap().format,
            SimFormat::Frames(GenerateFormat::parse("exr", &[]).unwrap())
        );
    }

    #[test]
    fn rates_are_si_in_bytes_or_bits() {
        let cases = [
            ("4.5GB/s", 36_000_000_000),
            ("800MB/s", 6_400_000_000),
            ("100Gbit", 100_000_000_000),
            ("100Gbit/s", 100_000_000_000),
            ("25Gbit/s", 25_000_000_000),
            ("1.25kB/s", 10_000),
            ("10Mbps", 10_000_000),
            ("12B/s", 96),
        ];
        for (text, bits) in cases {
            assert_eq!(parse_rate(text), Ok(bits), "{text}");
        }
        for bad in ["", "4.5GB", "4.5GiB/s", "fast", "0GB/s", "1..5GB/s", "5XB/s", "4.5 GB/s", "2Pbit"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_and_sizes() {
        assert_eq!(parse_time("0"), Ok(Duration::ZERO));
        assert_eq!(parse_time("300us"), Ok(Duration::from_micros(300)));
        assert_eq!(parse_time("300µs"), Ok(Duration::from_micros(300)));
        assert_eq!(parse_time("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_time("2s"), Ok(Duration::from_secs(2)));
        for bad in ["", "5", "1h", "-1ms", "61s", "ms"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_size("8294400"), Ok(8_294_400));
        assert_eq!(parse_size("50MB"), Ok(50_000_000));
        assert_eq!(parse_size("1.5GB"), Ok(1_500_000_000));
        for bad in ["0", "5GB", "1MiB", "x"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_name_the_part_and_show_an_example() {
        let cases = [
            ("file:///x", "sim://"),
            ("sim://a/b?bw=1GB/s", "link name 'a/b'"),
            ("sim://lan?bww=1GB/s", "unknown key 'bww' (valid keys: bw, lat,"),
            ("sim://lan?bw", "'bw' is not key=value"),
            ("sim://lan?bw=", "'bw' has no value"),
            ("sim://lan?bw=1GB/s&bw=2GB/s", "'bw' is given twice"),
            ("sim://lan?bw=4.5GB", "bw '4.5GB': a size, not a rate"),
            ("sim://lan?lat=5", "lat '5': it needs a unit"),
            ("sim://lan?jitter=1h", "jitter '1h'"),
            ("sim://lan?dist=normal", "dist 'normal': it is exp or uniform"),
            ("sim://lan?seed=-1", "seed '-1'"),
            ("sim://lan?format=tiff", "format 'tiff'"),
            ("sim://lan?format=dpx&frame_bytes=10", "give one or the other"),
            ("sim://lan?compression=piz", "compression 'piz': it applies only to format=exr"),
            ("sim://lan?format=exr&compression=dwaa", "compression 'dwaa': playsim cannot write it"),
            ("sim://lan?format=exr&compression=lzw", "compression 'lzw'"),
            ("sim://lan?format=dpx&bit_depth=12", "bit_depth '12': it is 8, 10 or 16"),
            ("sim://lan?format=exr&endian=little", "endian 'little': it applies only to format=dpx"),
            ("sim://lan?frame_bytes=10&compression=piz", "compression 'piz': raw frames"),
            ("sim://lan?format=video", "format 'video': it is dpx, exr (or give frame_bytes=N)"),
            ("sim://lan?preset=5k", "preset '5k'"),
            ("sim://lan?frame_bytes=10&preset=hd", "preset 'hd': raw frames"),
            ("sim://lan?frames=0", "frames '0': not a whole number from 1 to 100000"),
            ("sim://lan?frames=10&distinct=11", "distinct '11': not a whole number from 1 to frames (10)"),
            ("sim://lan?frame_bytes=10&distinct=2", "distinct '2': raw frames"),
            ("sim://lan?corrupt_every=0", "corrupt_every '0'"),
            ("sim://lan?preset=8k-dci&distinct=100&frames=100", "lower distinct"),
        ];
        for (text, part) in cases {
            let err = SimUrl::parse(text).unwrap_err().to_string();
            assert!(err.contains(part), "{text}: {err}");
            assert!(err.contains(SIM_EXAMPLE) && err.contains(text), "{text}: {err}");
        }
    }

    #[test]
    fn every_nth_frame_is_corrupt_naming_its_index() {
        let url = SimUrl::parse("sim://lan?frame_bytes=1000&corrupt_every=5&frames=12").unwrap();
        let corrupt: Vec<u64> = (0..12).filter(|&i| url.corruption(i).is_some()).collect();
        assert_eq!(corrupt, [4, 9]);
        assert!(url.corruption(9).unwrap().contains("frame 9"));
    }

    #[test]
    fn generated_frames_decode_with_their_copy_index() {
        for (format, options) in [("dpx", ""), ("exr", ""), ("dpx", "&bit_depth=16&endian=little")] {
            let url = SimUrl::parse(&format!(
                "sim://t?format={format}&preset=320x180&frames=10&distinct=3{options}"
            ))
            .unwrap();
            let frames = Arc::new(SimFrames::generate(&url).unwrap());
            let source = frames.source(&DecodeOptions::default());
            assert_eq!((source.n_frames(), source.info().format.as_str()), (10, format));
            assert_eq!(source.decoder().name(), format);
            let mut decoded = DecodedFrame::default();
            for idx in [0, 1, 2, 3, 7] {
                let frame = frames.frame(idx);
                assert_eq!(source.extent(idx), FrameExtent::File { path: frame.path.clone() });
                let bytes = frame.content.unwrap();
                assert_eq!(frame.size, bytes.len() as u64);
                source.decoder().decode(&bytes, &mut decoded).unwrap();
                assert_eq!(read_frame_index(&decoded), Some(idx % 3), "{format} frame {idx}");
            }
        }
    }

    #[test]
    fn raw_frames_hold_no_bytes_and_are_not_decoded() {
        let url = SimUrl::parse("sim://?frame_bytes=2.5MB&frames=3&corrupt_every=3").unwrap();
        let frames = Arc::new(SimFrames::generate(&url).unwrap());
        let source = frames.source(&DecodeOptions::default());
        assert_eq!(source.decoder().name(), "none");
        assert_eq!(source.info().pattern, "frame.%07d.raw");
        let frame = frames.frame(2);
        assert_eq!((frame.size, frame.content.is_none()), (2_500_000, true));
        assert_eq!(frame.path, PathBuf::from("sim:///frame.0000002.raw"));
        assert!(frame.fault.unwrap().contains("frame 2"));
    }
}
