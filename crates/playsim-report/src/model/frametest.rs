//! `playsim frametest`'s result: its model (what was run, every frame's times, the figures
//! over them) and its renderers, frametest's summary ([`summary`]), the per-frame CSV
//! ([`csv`], `-x`) and the figures as JSON ([`json`], `--json`), whose shape
//! ([`FrametestFigures`]) is pinned by `schema/frametest.schema.json`.
//!
//! The engine's paced runner fills a [`FrametestRun`]; the facade adds a [`FrametestInfo`]
//! (the flags, the files, the transport) and hands both here as a [`FrametestResult`].
//!
//! ```
//! use playsim_report::frametest::{self, FrameSize, FrametestInfo, FrametestResult, FrametestRun};
//!
//! let size = FrameSize::parse("2k", frametest::DEFAULT_HEADER_BYTES)?;
//! assert_eq!(size.file_bytes, 12_812_288);
//! let info = FrametestInfo {
//!     parameters: "-r 2k -n 0 -t 1".into(),
//!     size: Some(size),
//!     ..FrametestInfo::default()
//! };
//! let result = FrametestResult { info, run: FrametestRun::default() };
//! assert!(frametest::summary(&result).contains("Frames transferred: 0 (0.000 MB)"));
//! assert_eq!(frametest::figures(&result).frames_transferred, 0);
//! # Ok::<(), playsim_report::frametest::FrameSizeError>(())
//! ```

use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// frametest's header: the image data starts 64 KiB into every file.
pub const DEFAULT_HEADER_BYTES: u64 = 64 << 10;
/// The largest frame file `-z` writes: 1 GiB (frametest's own limit is about 66 MB).
pub const MAX_FRAME_FILE_BYTES: u64 = 1 << 30;
/// The name of files playsim writes: frametest's numbering, a DPX extension, so that
/// `playsim play DIR` and `playsim decode --md5 DIR` open them too.
pub const DEFAULT_NAME: &str = "frame%06d.dpx";
/// The name of the files frametest itself writes; read when no `.dpx` files are there.
pub const FRAMETEST_NAME: &str = "frame%06d.tst";

/// Widest image line `-z` sizes get, in pixels.
const CUSTOM_WIDTH: u64 = 4096;
const SIZE_EXAMPLE: &str = "for example -w 2k (sd, hd, 2k or 4k) or -z 12512 (KB of 1024 bytes)";
/// frametest's presets: name, width, height.
const PRESETS: [(&str, u32, u32); 4] =
    [("sd", 720, 480), ("hd", 1920, 1080), ("2k", 2048, 1556), ("4k", 4096, 3112)];

/// A frame size or header that frametest cannot use; the message names the flag it was
/// given with (frametest's sizes have no other spelling) and shows a valid one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameSizeError {
    /// `-z KB` is over [`MAX_FRAME_FILE_BYTES`].
    #[error("-z {kb} is more than {max_kb} KB (1 GiB), for example -z 12512", max_kb = MAX_FRAME_FILE_BYTES >> 10)]
    TooLarge {
        /// The size given, in KB.
        kb: u64,
    },
    /// `-z KB` is no larger than the header.
    #[error("-z {kb} leaves no room for an image after the {header_kb}-KB header: give more, for example -z 12512")]
    NoRoom {
        /// The size given, in KB.
        kb: u64,
        /// The header, in KB.
        header_kb: u64,
    },
    /// Neither a preset nor a whole number of KB.
    #[error("'{text}' is not a frame size ({SIZE_EXAMPLE})")]
    NotASize {
        /// The text given.
        text: String,
    },
    /// `--header KB` is outside 2 to 1024 KB.
    #[error("--header {kb} is out of range: 2 to 1024 KB, for example --header 64")]
    HeaderOutOfRange {
        /// The header given, in KB.
        kb: u64,
    },
}

/// The size of one frame file: frametest's presets, or `-z KB`.
///
/// A preset is a full-aperture 10-bit RGB image, 4 bytes a pixel (three 10-bit samples
/// filled to a 32-bit word, DPX packing method A), after a header of `header_bytes`:
/// sd 720×480, hd 1920×1080, 2k 2048×1556, 4k 4096×3112 (the sizes tframetest gives as
/// frametest's). 2k is 2048×1556×4 + 65,536 = 12,812,288 bytes (12,512 KB of 1024 bytes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FrameSize {
    /// "sd", "hd", "2k", "4k", or "12512 KB" for `-z 12512`.
    pub name: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in lines.
    pub height: u32,
    /// Bytes before the image data (its offset in the file).
    pub header_bytes: u64,
    /// Bytes in each file: header, image, and (for `-z` sizes) padding after the image.
    pub file_bytes: u64,
}

impl FrameSize {
    /// frametest's preset `name` (sd, hd, 2k, 4k; any case) after `header_bytes`.
    pub fn preset(name: &str, header_bytes: u64) -> Option<FrameSize> {
        let name = name.trim().to_ascii_lowercase();
        let &(_, width, height) = PRESETS.iter().find(|(preset, ..)| *preset == name)?;
        let file_bytes = header_bytes + u64::from(width) * u64::from(height) * 4;
        Some(FrameSize { name, width, height, header_bytes, file_bytes })
    }

    /// `-z KB`: files of `kb` × 1024 bytes, header included (so `-z 12512` is the size of
    /// `-w 2k`). The image is 10-bit RGB lines of up to 4096 pixels, as many whole lines as
    /// fit; the bytes left over follow the image as padding, so the file is still valid DPX.
    pub fn custom_kb(kb: u64, header_bytes: u64) -> Result<FrameSize, FrameSizeError> {
        let file_bytes = kb
            .checked_mul(1024)
            .filter(|&b| b <= MAX_FRAME_FILE_BYTES)
            .ok_or(FrameSizeError::TooLarge { kb })?;
        let pixels = file_bytes.saturating_sub(header_bytes) / 4;
        if pixels == 0 {
            return Err(FrameSizeError::NoRoom { kb, header_kb: header_bytes >> 10 });
        }
        let width = pixels.min(CUSTOM_WIDTH);
        let height = pixels / width;
        let (Ok(width), Ok(height)) = (u32::try_from(width), u32::try_from(height)) else {
            return Err(FrameSizeError::TooLarge { kb });
        };
        Ok(FrameSize { name: format!("{kb} KB"), width, height, header_bytes, file_bytes })
    }

    /// A preset name, or a whole number of KB (1024 bytes) as `-z` takes it.
    pub fn parse(text: &str, header_bytes: u64) -> Result<FrameSize, FrameSizeError> {
        if let Some(size) = FrameSize::preset(text, header_bytes) {
            return Ok(size);
        }
        match text.trim().parse::<u64>() {
            Ok(kb) if kb > 0 => FrameSize::custom_kb(kb, header_bytes),
            _ => Err(FrameSizeError::NotASize { text: text.to_owned() }),
        }
    }

    /// The preset a file of `bytes` was written with (after frametest's header), or its
    /// size in KB as `-z` gives it.
    pub fn guess(bytes: u64) -> Option<FrameSize> {
        PRESETS
            .iter()
            .filter_map(|(name, ..)| FrameSize::preset(name, DEFAULT_HEADER_BYTES))
            .find(|s| s.file_bytes == bytes)
            .or_else(|| {
                bytes
                    .is_multiple_of(1024)
                    .then(|| FrameSize::custom_kb(bytes / 1024, DEFAULT_HEADER_BYTES).ok())
                    .flatten()
            })
    }

    /// Bytes of image data: width × height × 4.
    pub fn image_bytes(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * 4
    }

    /// The value of `-w`/`-r` that gives this size: the preset's name, or the KB of `-z`.
    pub fn flag_value(&self) -> String {
        match self.name.strip_suffix(" KB") {
            Some(kb) => kb.to_owned(),
            None => self.name.clone(),
        }
    }

    /// What the summary says about it, e.g. "2k: 12,812,288 bytes (2048x1556 10-bit rgb dpx
    /// at offset 65,536)".
    pub fn describe(&self) -> String {
        format!(
            "{}: {} bytes ({}x{} 10-bit rgb dpx at offset {})",
            self.name,
            thousands(self.file_bytes),
            self.width,
            self.height,
            thousands(self.header_bytes)
        )
    }
}

/// `--header KB`: the bytes before the image; at least the 2 KB of DPX headers.
pub fn header_bytes_of_kb(kb: u64) -> Result<u64, FrameSizeError> {
    if !(2..=1024).contains(&kb) {
        return Err(FrameSizeError::HeaderOutOfRange { kb });
    }
    Ok(kb * 1024)
}

/// A `--name` pattern that cannot name frame files; the message shows a valid one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--name '{text}' {why} (for example --name frame%06d.dpx)")]
pub struct NamePatternError {
    /// The pattern given.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// A file name with one frame number in it: `frame%06d.dpx` (frametest's numbering from 0).
/// It travels in JSON as its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(with = "String")]
pub struct NamePattern {
    prefix: String,
    width: usize,
    suffix: String,
}

impl NamePattern {
    /// The name of file `idx`.
    pub fn name(&self, idx: u64) -> String {
        format!("{}{:0width$}{}", self.prefix, idx, self.suffix, width = self.width)
    }

    /// playsim's own name, [`DEFAULT_NAME`].
    pub fn playsim() -> NamePattern {
        NamePattern { prefix: "frame".into(), width: 6, suffix: ".dpx".into() }
    }

    /// frametest's own name, [`FRAMETEST_NAME`].
    pub fn frametest() -> NamePattern {
        NamePattern { prefix: "frame".into(), width: 6, suffix: ".tst".into() }
    }
}

impl Default for NamePattern {
    fn default() -> NamePattern {
        NamePattern::playsim()
    }
}

impl FromStr for NamePattern {
    type Err = NamePatternError;

    fn from_str(text: &str) -> Result<NamePattern, NamePatternError> {
        let bad = |why: &'static str| NamePatternError { text: text.to_owned(), why };
        if text.contains('/') {
            return Err(bad("must be a file name, not a path"));
        }
        let (prefix, rest) = text.split_once('%').ok_or_else(|| bad("has no %d for the frame number"))?;
        let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (digits, rest) = rest.split_at(digits_end);
        let suffix = rest.strip_prefix('d').ok_or_else(|| bad("needs %d or %0Nd for the frame number"))?;
        if suffix.contains('%') {
            return Err(bad("has more than one %"));
        }
        let width = if digits.is_empty() {
            0
        } else {
            digits.parse::<usize>().map_err(|_| bad("has a bad width"))?
        };
        if width > 20 {
            return Err(bad("pads to more than 20 digits"));
        }
        Ok(NamePattern { prefix: prefix.to_owned(), width, suffix: suffix.to_owned() })
    }
}

impl TryFrom<String> for NamePattern {
    type Error = NamePatternError;

    fn try_from(text: String) -> Result<NamePattern, NamePatternError> {
        text.parse()
    }
}

impl From<NamePattern> for String {
    fn from(pattern: NamePattern) -> String {
        pattern.to_string()
    }
}

impl std::fmt::Display for NamePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.width == 0 {
            write!(f, "{}%d{}", self.prefix, self.suffix)
        } else {
            write!(f, "{}%0{}d{}", self.prefix, self.width, self.suffix)
        }
    }
}

/// What became of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameOutcome {
    /// Issued and completed: opened, transferred, closed (and decoded, with a decode).
    Transferred,
    /// It fell due while the queue was full, and was skipped.
    Dropped,
    /// Issued, but its open, transfer, close or decode failed (see the record's error).
    Failed,
}

impl FrameOutcome {
    /// Its name in the CSV: `transferred`, `dropped`, `failed`.
    pub fn name(self) -> &'static str {
        match self {
            FrameOutcome::Transferred => "transferred",
            FrameOutcome::Dropped => "dropped",
            FrameOutcome::Failed => "failed",
        }
    }
}

/// One frame's times, in nanoseconds from the start of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FrameRecord {
    /// Its position in the run, from 0.
    pub position: u64,
    /// The file it was (or would have been) transferred from or to.
    pub file_idx: u64,
    /// When it fell due (with a rate, after the preroll).
    pub due_ns: Option<u64>,
    /// When it entered the queue; `None` for a dropped frame.
    pub issued_ns: Option<u64>,
    /// When it got a thread and its open started.
    pub started_ns: Option<u64>,
    /// When the open returned.
    pub opened_ns: Option<u64>,
    /// When the transfer returned.
    pub transferred_ns: Option<u64>,
    /// When the close returned: the frame's I/O is over.
    pub closed_ns: Option<u64>,
    /// When its decode returned, with a decode.
    pub decoded_ns: Option<u64>,
    /// When it completed and left the queue.
    pub done_ns: Option<u64>,
    /// Bytes transferred.
    pub bytes: u64,
    /// What became of it.
    pub outcome: FrameOutcome,
    /// Why it failed: the frame, the file and the cause.
    pub error: Option<String>,
}

impl FrameRecord {
    /// A frame at `position` over file `file_idx`, due at `due_ns`, not issued yet (so,
    /// until it is, counted as dropped).
    pub fn new(position: u64, file_idx: u64, due_ns: Option<u64>) -> FrameRecord {
        FrameRecord {
            position,
            file_idx,
            due_ns,
            issued_ns: None,
            started_ns: None,
            opened_ns: None,
            transferred_ns: None,
            closed_ns: None,
            decoded_ns: None,
            done_ns: None,
            bytes: 0,
            outcome: FrameOutcome::Dropped,
            error: None,
        }
    }

    /// Open + transfer + close: the time the frame held a thread (frametest's frame time).
    pub fn io_time(&self) -> Option<Duration> {
        Some(Duration::from_nanos(self.closed_ns?.checked_sub(self.started_ns?)?))
    }
}

/// The records of a run, as the engine's runner returns them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FrametestRun {
    /// One record per frame that fell due or was issued, by position.
    pub records: Vec<FrameRecord>,
    /// When the clock started: the preroll was complete (0 without a rate).
    pub t0_ns: u64,
    /// When the last frame completed.
    pub end_ns: u64,
    /// The run was stopped (Ctrl-C, or a transport that gave up) before every frame was due.
    pub interrupted: bool,
    /// Why the run stopped early, when an error stopped it.
    pub failure: Option<String>,
    /// CPU time the decodes took, with a decode.
    pub decode_cpu: Duration,
}

/// What the summary says about a run besides its records: the flags, the files, the
/// transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FrametestInfo {
    /// Written (`-w`), else read.
    pub write: bool,
    /// The flags as frametest takes them.
    pub parameters: String,
    /// The directory, as given.
    pub location: String,
    /// The files' names.
    pub pattern: NamePattern,
    /// Files the run goes over.
    pub n_files: u64,
    /// The files' size, when they all have one of frametest's.
    pub size: Option<FrameSize>,
    /// Frame I/Os in flight at once (`-t`).
    pub threads: u32,
    /// Frames queued at most (`-q`).
    pub queue: u32,
    /// The rate (`-f`), as given; `None` is as fast as possible.
    pub fps: Option<String>,
    /// Decode threads, with `--decode`.
    pub decode_threads: Option<u32>,
    /// How the frames travel, in words.
    pub transport: String,
    /// Notes for the summary: the cold-cache outcome, the storage's warnings.
    pub notes: Vec<String>,
}

/// A finished run: what was run and every frame's record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FrametestResult {
    /// What was run.
    pub info: FrametestInfo,
    /// Every frame's times and outcome.
    pub run: FrametestRun,
}

impl FrametestResult {
    /// Frames that fell due while the queue was full.
    pub fn n_dropped(&self) -> u64 {
        self.count(FrameOutcome::Dropped)
    }

    /// Frames whose open, transfer, close or decode failed.
    pub fn n_failed(&self) -> u64 {
        self.count(FrameOutcome::Failed)
    }

    /// Frames transferred.
    pub fn n_transferred(&self) -> u64 {
        self.count(FrameOutcome::Transferred)
    }

    fn count(&self, outcome: FrameOutcome) -> u64 {
        self.run.records.iter().filter(|r| r.outcome == outcome).count() as u64
    }

    /// The run's duration: from the first frame issued to the last completed.
    pub fn duration(&self) -> Duration {
        Duration::from_nanos(self.run.end_ns)
    }

    /// The errors of failed frames, each naming the frame and its file.
    pub fn errors(&self) -> impl Iterator<Item = &str> {
        self.run.records.iter().filter_map(|r| r.error.as_deref())
    }

    /// The records, in position order.
    pub fn records(&self) -> &[FrameRecord] {
        &self.run.records
    }
}

/// Histogram bucket edges of frame times, in ms.
pub const BUCKETS_MS: [u64; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];

/// Figures over a run's frames, computed from their times.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrametestStats {
    /// Frames transferred.
    pub transferred: u64,
    /// Frames dropped.
    pub dropped: u64,
    /// Frames failed.
    pub failed: u64,
    /// Bytes of the frames transferred.
    pub bytes: u64,
    /// (frame time, bytes) of the fastest frame.
    pub fastest: Option<(Duration, u64)>,
    /// (frame time, bytes) of the slowest frame.
    pub slowest: Option<(Duration, u64)>,
    /// Opens of the frames transferred, in all.
    pub open: Duration,
    /// Transfers of the frames transferred, in all.
    pub io: Duration,
    /// Closes of the frames transferred, in all.
    pub close: Duration,
    /// Frame times (open + I/O + close) of the frames transferred, in all.
    pub frame: Duration,
    /// Frames decoded (failed decodes included).
    pub decoded: u64,
    /// Decodes, in all.
    pub decode: Duration,
    /// The slowest decode.
    pub decode_max: Duration,
    /// Frames transferred by frame time, in the buckets [`BUCKETS_MS`] bounds: below the
    /// first edge, between each two, at or above the last.
    pub histogram: [u64; BUCKETS_MS.len() + 1],
}

impl FrametestStats {
    /// The figures over `run`'s records.
    pub fn of(run: &FrametestRun) -> FrametestStats {
        let mut s = FrametestStats::default();
        let span = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Duration::from_nanos(b.saturating_sub(a)),
            _ => Duration::ZERO,
        };
        for r in &run.records {
            match r.outcome {
                FrameOutcome::Dropped => s.dropped += 1,
                FrameOutcome::Failed => s.failed += 1,
                FrameOutcome::Transferred => s.transferred += 1,
            }
            if let Some(d) = r.decoded_ns {
                let took = Duration::from_nanos(d.saturating_sub(r.closed_ns.unwrap_or(d)));
                s.decoded += 1;
                s.decode += took;
                s.decode_max = s.decode_max.max(took);
            }
            if r.outcome != FrameOutcome::Transferred {
                continue;
            }
            s.bytes += r.bytes;
            let frame = r.io_time().unwrap_or_default();
            s.open += span(r.started_ns, r.opened_ns);
            s.io += span(r.opened_ns, r.transferred_ns);
            s.close += span(r.transferred_ns, r.closed_ns);
            s.frame += frame;
            if s.fastest.is_none_or(|(t, _)| frame < t) {
                s.fastest = Some((frame, r.bytes));
            }
            if s.slowest.is_none_or(|(t, _)| frame > t) {
                s.slowest = Some((frame, r.bytes));
            }
            let ms = frame.as_millis();
            let bucket =
                BUCKETS_MS.iter().position(|&edge| ms < u128::from(edge)).unwrap_or(BUCKETS_MS.len());
            s.histogram[bucket] += 1;
        }
        s
    }

    /// `total` over the frames transferred.
    pub fn average(&self, total: Duration) -> Duration {
        total.checked_div(u32::try_from(self.transferred).unwrap_or(u32::MAX)).unwrap_or_default()
    }

    /// The average decode.
    pub fn average_decode(&self) -> Duration {
        self.decode.checked_div(u32::try_from(self.decoded).unwrap_or(u32::MAX)).unwrap_or_default()
    }
}

/// `--json`: the summary's figures. Rates in MB/s are 10^6 bytes a second; times in ms
/// unless the name says otherwise. The shape only grows (see `schema/frametest.schema.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrametestFigures {
    /// Always "frametest".
    pub command: String,
    /// "write" or "read".
    pub mode: String,
    /// The flags as frametest takes them.
    pub parameters: String,
    /// The directory, as given.
    pub location: String,
    /// The files' names, e.g. `frame%06d.dpx`.
    pub pattern: String,
    /// Files the run goes over.
    pub n_files: u64,
    /// The files' size, when they all have one of frametest's.
    pub frame_size: Option<FrameSize>,
    /// Frame I/Os in flight at once.
    pub threads: u32,
    /// Frames queued at most.
    pub queue: u32,
    /// The rate, as given; null is as fast as possible.
    pub fps: Option<String>,
    /// When the clock started, in seconds from the start of the run.
    pub t0_s: f64,
    /// The run's duration in seconds.
    pub duration_s: f64,
    /// Frames transferred.
    pub frames_transferred: u64,
    /// Frames dropped.
    pub frames_dropped: u64,
    /// Frames failed.
    pub frames_failed: u64,
    /// Bytes of the frames transferred.
    pub bytes: u64,
    /// Bytes transferred over the duration, in MB/s.
    pub data_rate_mb_per_s: f64,
    /// Frames transferred over the duration, per second.
    pub frame_rate_fps: f64,
    /// The fastest frame's time.
    pub fastest_frame_ms: Option<f64>,
    /// The slowest frame's time.
    pub slowest_frame_ms: Option<f64>,
    /// The average open.
    pub avg_open_ms: f64,
    /// The average transfer.
    pub avg_io_ms: f64,
    /// The average close.
    pub avg_close_ms: f64,
    /// The average frame time (open + I/O + close).
    pub avg_frame_ms: f64,
    /// The decodes, with `--decode`.
    pub decode: Option<DecodeFigures>,
    /// Frames transferred by frame time.
    pub histogram: Vec<HistogramBucket>,
    /// The errors of failed frames.
    pub errors: Vec<String>,
    /// Stopped before every frame was due.
    pub interrupted: bool,
    /// Why the run stopped early, when an error stopped it.
    pub failure: Option<String>,
    /// "MB = 10^6 bytes, times in ms".
    pub units: String,
}

/// The decodes of a run with `--decode`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecodeFigures {
    /// Decode threads.
    pub threads: u32,
    /// Frames decoded.
    pub frames: u64,
    /// The average decode.
    pub avg_ms: f64,
    /// The slowest decode.
    pub max_ms: f64,
    /// CPU time of the decodes, in seconds.
    pub cpu_s: f64,
}

/// Frames whose frame time is from `from_ms` up to (not including) `to_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistogramBucket {
    /// The bucket's lower edge.
    pub from_ms: u64,
    /// The bucket's upper edge; null for the last, open, bucket.
    pub to_ms: Option<u64>,
    /// Frames in it.
    pub frames: u64,
}

/// The figures `--json` writes.
pub fn figures(result: &FrametestResult) -> FrametestFigures {
    let s = FrametestStats::of(&result.run);
    let duration = result.duration();
    let info = &result.info;
    let histogram = s
        .histogram
        .iter()
        .enumerate()
        .map(|(i, &frames)| HistogramBucket {
            from_ms: i.checked_sub(1).and_then(|j| BUCKETS_MS.get(j)).copied().unwrap_or(0),
            to_ms: BUCKETS_MS.get(i).copied(),
            frames,
        })
        .collect();
    FrametestFigures {
        command: "frametest".into(),
        mode: if info.write { "write" } else { "read" }.into(),
        parameters: info.parameters.clone(),
        location: info.location.clone(),
        pattern: info.pattern.to_string(),
        n_files: info.n_files,
        frame_size: info.size.clone(),
        threads: info.threads,
        queue: info.queue,
        fps: info.fps.clone(),
        t0_s: result.run.t0_ns as f64 / 1e9,
        duration_s: duration.as_secs_f64(),
        frames_transferred: s.transferred,
        frames_dropped: s.dropped,
        frames_failed: s.failed,
        bytes: s.bytes,
        data_rate_mb_per_s: mb_per_s(s.bytes, duration),
        frame_rate_fps: frame_rate(s.transferred, duration),
        fastest_frame_ms: s.fastest.map(|(t, _)| ms(t)),
        slowest_frame_ms: s.slowest.map(|(t, _)| ms(t)),
        avg_open_ms: ms(s.average(s.open)),
        avg_io_ms: ms(s.average(s.io)),
        avg_close_ms: ms(s.average(s.close)),
        avg_frame_ms: ms(s.average(s.frame)),
        decode: info.decode_threads.map(|threads| DecodeFigures {
            threads,
            frames: s.decoded,
            avg_ms: ms(s.average_decode()),
            max_ms: ms(s.decode_max),
            cpu_s: result.run.decode_cpu.as_secs_f64(),
        }),
        histogram,
        errors: result.errors().map(str::to_owned).collect(),
        interrupted: result.run.interrupted,
        failure: result.run.failure.clone(),
        units: "MB = 10^6 bytes, times in ms".into(),
    }
}

/// The JSON schema of [`FrametestFigures`], pretty-printed, ending with a newline.
pub fn figures_schema() -> String {
    let schema = schemars::schema_for!(FrametestFigures);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// 12812288 as "12,812,288".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Megabytes (10^6 bytes) a second.
pub(crate) fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        bytes as f64 / 1e6 / d.as_secs_f64()
    }
}

pub(crate) fn frame_rate(frames: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        frames as f64 / d.as_secs_f64()
    }
}
