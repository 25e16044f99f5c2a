//! `playsim frametest`: frametest's front door. Its sizes and file layout (every file a
//! valid DPX, the image at offset 65,536), its flags mapped onto playsim's storage and the
//! engine's paced runner ([`playsim_engine::frametest`], which holds the drop rule), and a
//! frametest-like summary, per-frame CSV and JSON.
//!
//! ```no_run
//! # async fn demo() -> Result<(), playsim::Error> {
//! use playsim::frametest::{prepare_frametest, FrameSize, FrametestMode, FrametestRequest};
//! let size = FrameSize::parse("2k", playsim::frametest::DEFAULT_HEADER_BYTES).map_err(playsim::Error::Engine)?;
//! let write = FrametestRequest { n_frames: Some(24), ..FrametestRequest::new(FrametestMode::Write { size }, "/tmp/ft") };
//! println!("{}", prepare_frametest(&write).await?.run().await.summary());
//! let read = FrametestRequest { threads: 4, ..FrametestRequest::new(FrametestMode::Read { expect: None }, "/tmp/ft") };
//! println!("{}", prepare_frametest(&read).await?.run().await.summary());
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{Clock, EntryKind, FrameRate, IoBuf, StorageError, StorageErrorKind};
use playsim_dpx::{header_for_layout, set_file_name, DpxDecoder, DpxHeader, Endian, WriteOptions};
use playsim_engine::frametest::{
    FrameFile, FrameIo, FrameOutcome, FrameRecord, Frametest, FrametestConfig, FrametestDecode,
    FrametestOrder, FrametestRun, IoFuture, StorageReads,
};
use playsim_engine::{CancelToken, DecodePool, PreciseClock};
use playsim_storage::nfs::NfsOptions;
use playsim_storage::transport::{Location, TransportOptions};
use playsim_storage::{IoEngine, LocalOptions, UringOptions, DEFAULT_BLOCK_SIZE};

use crate::{Error, PlayOrder};

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

/// The size of one frame file: frametest's presets, or `-z KB`.
///
/// A preset is a full-aperture 10-bit RGB image, 4 bytes a pixel (three 10-bit samples
/// filled to a 32-bit word, DPX packing method A), after a header of `header_bytes`:
/// sd 720×480, hd 1920×1080, 2k 2048×1556, 4k 4096×3112 (the sizes tframetest gives as
/// frametest's). 2k is 2048×1556×4 + 65,536 = 12,812,288 bytes (12,512 KB of 1024 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
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
        let (width, height) = match name.as_str() {
            "sd" => (720, 480),
            "hd" => (1920, 1080),
            "2k" => (2048, 1556),
            "4k" => (4096, 3112),
            _ => return None,
        };
        let file_bytes = header_bytes + u64::from(width) * u64::from(height) * 4;
        Some(FrameSize { name, width, height, header_bytes, file_bytes })
    }

    /// `-z KB`: files of `kb` × 1024 bytes, header included (so `-z 12512` is the size of
    /// `-w 2k`). The image is 10-bit RGB lines of up to 4096 pixels, as many whole lines as
    /// fit; the bytes left over follow the image as padding, so the file is still valid DPX.
    pub fn custom_kb(kb: u64, header_bytes: u64) -> Result<FrameSize, String> {
        let file_bytes = kb.checked_mul(1024).filter(|&b| b <= MAX_FRAME_FILE_BYTES).ok_or_else(|| {
            format!("-z {kb} is more than {} KB (1 GiB), for example -z 12512", MAX_FRAME_FILE_BYTES >> 10)
        })?;
        let pixels = file_bytes.saturating_sub(header_bytes) / 4;
        if pixels == 0 {
            return Err(format!(
                "-z {kb} leaves no room for an image after the {}-KB header: give more, for example -z 12512",
                header_bytes >> 10
            ));
        }
        let width = pixels.min(CUSTOM_WIDTH);
        let height = pixels / width;
        let (Ok(width), Ok(height)) = (u32::try_from(width), u32::try_from(height)) else {
            return Err(format!("-z {kb} is too large, for example -z 12512"));
        };
        Ok(FrameSize { name: format!("{kb} KB"), width, height, header_bytes, file_bytes })
    }

    /// A preset name, or a whole number of KB (1024 bytes) as `-z` takes it.
    pub fn parse(text: &str, header_bytes: u64) -> Result<FrameSize, String> {
        if let Some(size) = FrameSize::preset(text, header_bytes) {
            return Ok(size);
        }
        match text.trim().parse::<u64>() {
            Ok(kb) if kb > 0 => FrameSize::custom_kb(kb, header_bytes),
            _ => Err(format!("'{text}' is not a frame size ({SIZE_EXAMPLE})")),
        }
    }

    /// Bytes of image data: width × height × 4.
    pub fn image_bytes(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * 4
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
pub fn header_bytes_of_kb(kb: u64) -> Result<u64, String> {
    if !(2..=1024).contains(&kb) {
        return Err(format!("--header {kb} is out of range: 2 to 1024 KB, for example --header 64"));
    }
    Ok(kb * 1024)
}

/// A file name with one frame number in it: `frame%06d.dpx` (frametest's numbering from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
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
}

impl FromStr for NamePattern {
    type Err = String;

    fn from_str(text: &str) -> Result<NamePattern, String> {
        let bad = |why: &str| format!("--name '{text}' {why} (for example --name frame%06d.dpx)");
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

impl std::fmt::Display for NamePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.width == 0 {
            write!(f, "{}%d{}", self.prefix, self.suffix)
        } else {
            write!(f, "{}%0{}d{}", self.prefix, self.width, self.suffix)
        }
    }
}

fn default_pattern(text: &str) -> NamePattern {
    // The constants parse; the fallback only keeps this free of a panic path.
    text.parse().unwrap_or(NamePattern { prefix: "frame".into(), width: 6, suffix: ".dpx".into() })
}

/// Read or write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrametestMode {
    /// `-w SIZE`: write files of this size.
    Write {
        /// The size of each file.
        size: FrameSize,
    },
    /// `-r [SIZE]`: read the files; with a size, each file must have it.
    Read {
        /// The size every file must have, when given.
        expect: Option<FrameSize>,
    },
}

/// A frametest run: frametest's flags, in playsim's terms.
#[derive(Clone, Debug)]
pub struct FrametestRequest {
    /// `-w` or `-r`.
    pub mode: FrametestMode,
    /// The directory of the files (an `nfs://` URL for reads).
    pub dir: PathBuf,
    /// `-n`: frames in all; `None` reads every file found (required for writes).
    pub n_frames: Option<u64>,
    /// `-t`: frame I/Os in flight at once.
    pub threads: u32,
    /// `-f`: the rate frames fall due at; `None` is as fast as possible.
    pub rate: Option<FrameRate>,
    /// `-q`: frames queued (issued, not completed) at most; `None` is `threads`.
    pub queue: Option<u32>,
    /// `-b`: frames completed before the clock starts (with `-f`).
    pub preroll: u32,
    /// `-l`: loop over the files until `-n` frames are done (reads).
    pub loop_files: bool,
    /// `-v` reverse, `-m` random (with `--seed`).
    pub order: PlayOrder,
    /// `--name`; `None` is [`DEFAULT_NAME`], or for reads [`FRAMETEST_NAME`] when only those exist.
    pub name: Option<NamePattern>,
    /// `--decode`: decode each frame read with the DPX decoder (reads).
    pub decode: bool,
    /// Decode threads.
    pub decode_threads: u32,
    /// `--direct`: read local files with O_DIRECT.
    pub direct: bool,
    /// `--io-engine`: how local files are read (pread, or io_uring).
    pub io_engine: IoEngine,
    /// Bytes per read request from local files.
    pub block_size: usize,
    /// `--cold`: drop the files from the page cache before reading.
    pub cold: bool,
    /// `--fsync`: flush each written file before closing it (the time counts in close).
    pub fsync: bool,
    /// playsim's NFS client, for `nfs://` reads.
    pub nfs: NfsOptions,
}

impl FrametestRequest {
    /// `mode` in `dir` with frametest's defaults: one thread, a preroll of 5, no rate.
    pub fn new(mode: FrametestMode, dir: impl Into<PathBuf>) -> FrametestRequest {
        FrametestRequest {
            mode,
            dir: dir.into(),
            n_frames: None,
            threads: 1,
            rate: None,
            queue: None,
            preroll: 5,
            loop_files: false,
            order: PlayOrder::Forward,
            name: None,
            decode: false,
            decode_threads: playsim_engine::default_decode_threads(),
            direct: false,
            io_engine: IoEngine::Pread,
            block_size: DEFAULT_BLOCK_SIZE,
            cold: false,
            fsync: false,
            nfs: NfsOptions::default(),
        }
    }

    /// The flags as frametest takes them, for the summary's "Test parameters" line.
    pub fn parameters(&self) -> String {
        let mut p = match &self.mode {
            FrametestMode::Write { size } => format!("-w {}", size_flag(size)),
            FrametestMode::Read { expect: Some(size) } => format!("-r {}", size_flag(size)),
            FrametestMode::Read { expect: None } => "-r".to_owned(),
        };
        if let Some(n) = self.n_frames {
            let _ = write!(p, " -n {n}");
        }
        let _ = write!(p, " -t {}", self.threads);
        if let Some(rate) = self.rate {
            let _ = write!(p, " -f {rate} -q {} -b {}", self.queue.unwrap_or(self.threads), self.preroll);
        } else if let Some(q) = self.queue {
            let _ = write!(p, " -q {q}");
        }
        if self.loop_files {
            p.push_str(" -l");
        }
        match self.order {
            PlayOrder::Forward => {}
            PlayOrder::Reverse => p.push_str(" -v"),
            PlayOrder::Random { seed } => {
                let _ = write!(p, " -m --seed {seed}");
            }
        }
        if self.decode {
            let _ = write!(p, " --decode --decode-threads {}", self.decode_threads);
        }
        for (on, flag) in [(self.direct, " --direct"), (self.cold, " --cold"), (self.fsync, " --fsync")] {
            if on {
                p.push_str(flag);
            }
        }
        if self.io_engine != IoEngine::Pread {
            let _ = write!(p, " --io-engine {}", self.io_engine);
        }
        p
    }
}

fn size_flag(size: &FrameSize) -> String {
    match size.name.strip_suffix(" KB") {
        Some(kb) => kb.to_owned(),
        None => size.name.clone(),
    }
}

/// A run ready to start: [`PreparedFrametest::run`] runs it.
pub struct PreparedFrametest {
    runner: Frametest,
    info: RunInfo,
}

/// What the summary says about the run besides its records.
#[derive(Clone, Debug)]
struct RunInfo {
    write: bool,
    parameters: String,
    location: String,
    pattern: NamePattern,
    n_files: u64,
    size: Option<FrameSize>,
    threads: u32,
    queue: u32,
    rate: Option<FrameRate>,
    decode_threads: Option<u32>,
    transport: String,
    notes: Vec<String>,
}

impl PreparedFrametest {
    /// Stops the run when cancelled (Ctrl-C): no frame is issued after it.
    pub fn canceller(&self) -> Arc<CancelToken> {
        self.runner.canceller()
    }

    /// Runs the frames. Must run inside a tokio runtime.
    pub async fn run(self) -> FrametestResult {
        let run = self.runner.run().await;
        FrametestResult { info: self.info, run }
    }
}

/// Checks the request, finds (or creates) the files and sets the run up. Must run inside
/// a tokio runtime. Refusals show a valid example.
pub async fn prepare_frametest(request: &FrametestRequest) -> Result<PreparedFrametest, Error> {
    if request.threads == 0 {
        return Err(Error::Engine("-t must be at least 1 thread (for example -t 4)".into()));
    }
    if request.n_frames == Some(0) {
        return Err(Error::Engine("-n must be at least 1 frame (for example -n 2000)".into()));
    }
    if request.queue == Some(0) {
        return Err(Error::Engine("-q must be at least 1 frame (for example -q 4)".into()));
    }
    let clock: Arc<dyn Clock> = Arc::new(PreciseClock::new());
    let (io, info, n_frames, n_files): (Arc<dyn FrameIo>, RunInfo, u64, u64) = match &request.mode {
        FrametestMode::Write { size } => prepare_writes(request, size).await?,
        FrametestMode::Read { expect } => prepare_reads(request, expect.as_ref(), &clock).await?,
    };
    let order = match request.order {
        PlayOrder::Forward => FrametestOrder::Forward,
        PlayOrder::Reverse => FrametestOrder::Reverse,
        PlayOrder::Random { seed } => FrametestOrder::Random { seed },
    };
    let config = FrametestConfig {
        n_frames,
        n_files,
        order,
        threads: request.threads,
        rate: request.rate,
        queue: info.queue,
        preroll: request.preroll,
    };
    let mut runner = Frametest::new(config, io, clock).map_err(Error::Engine)?;
    if request.decode {
        let pool = DecodePool::new(request.decode_threads.max(1))
            .map_err(|e| Error::Engine(format!("cannot start the decode threads: {e}")))?;
        runner = runner.decode(FrametestDecode { decoder: Arc::new(DpxDecoder), executor: Arc::new(pool) });
    }
    Ok(PreparedFrametest { runner, info })
}

async fn prepare_writes(
    request: &FrametestRequest,
    size: &FrameSize,
) -> Result<(Arc<dyn FrameIo>, RunInfo, u64, u64), Error> {
    let dir = &request.dir;
    let example = format!("for example playsim frametest -w 2k -n 24 {}", dir.display());
    // Writes go through the kernel until storage has a write API: a URL's transport only reads.
    let transport = crate::location::transports().find(&dir.to_string_lossy()).map_err(Error::Storage)?;
    if !transport.schemes().is_empty() {
        return Err(Error::Engine(format!(
            "cannot write to {}: playsim's {} client only reads; mount the export and write to its path, {example}",
            dir.display(),
            transport.name().to_uppercase()
        )));
    }
    for (on, flag) in [(request.loop_files, "-l"), (request.decode, "--decode"), (request.cold, "--cold")] {
        if on {
            return Err(Error::Engine(format!(
                "{flag} goes with reading (-r), not writing: write first, then read with it, {example}"
            )));
        }
    }
    if request.direct {
        return Err(Error::Engine(format!(
            "--direct applies to reads; for writes that reach the storage use --fsync, {example} --fsync"
        )));
    }
    if request.io_engine != IoEngine::Pread {
        return Err(Error::Engine(format!(
            "--io-engine {} applies to reads, not writes: write first, then read with it, {example}",
            request.io_engine
        )));
    }
    let n = request
        .n_frames
        .ok_or_else(|| Error::Engine(format!("-w needs -n, the number of frames to write, {example}")))?;
    let pattern = request.name.clone().unwrap_or_else(|| default_pattern(DEFAULT_NAME));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Engine(format!("cannot create the directory {}: {e}", dir.display())))?;
    let header = dpx_header(size)?;
    let body = tokio::task::spawn_blocking({
        let size = size.clone();
        move || image_body(&size)
    })
    .await
    .map_err(|e| Error::Engine(format!("cannot make the image: {e}")))?;
    let io = LocalWrites {
        dir: dir.clone(),
        pattern: pattern.clone(),
        header: Arc::from(header),
        body,
        fsync: request.fsync,
    };
    let info = RunInfo {
        write: true,
        parameters: request.parameters(),
        location: dir.display().to_string(),
        pattern,
        n_files: n,
        size: Some(size.clone()),
        threads: request.threads,
        queue: request.queue.unwrap_or(request.threads),
        rate: request.rate,
        decode_threads: None,
        transport: if request.fsync { "local files, fsync before close" } else { "local files (page cache)" }
            .into(),
        notes: Vec::new(),
    };
    Ok((Arc::new(io), info, n, n))
}

async fn prepare_reads(
    request: &FrametestRequest,
    expect: Option<&FrameSize>,
    clock: &Arc<dyn Clock>,
) -> Result<(Arc<dyn FrameIo>, RunInfo, u64, u64), Error> {
    let dir = &request.dir;
    let shown = dir.display();
    let write_first = format!("write frames first, for example playsim frametest -w 2k -n 24 {shown}");
    let transport = crate::location::transports().find(&dir.to_string_lossy()).map_err(Error::Storage)?;
    if !transport.holds_files() {
        return Err(Error::Engine(format!(
            "frametest reads frame files from a directory, a local path or an nfs:// URL, not {shown}: \
             for simulated storage use playsim play, or {write_first}"
        )));
    }
    let local = LocalOptions {
        block_size: request.block_size,
        direct: request.direct,
        io_engine: request.io_engine,
        uring: UringOptions::default(),
    };
    let options = TransportOptions::new().with(local).with(request.nfs.clone());
    let location = crate::location::open(dir, options, clock).await?;
    let storage = location.reader_storage().await.map_err(Error::Storage)?;
    match storage.kind(location.path()).await {
        Ok(Some(EntryKind::Dir)) => {}
        Ok(Some(EntryKind::File)) => {
            return Err(Error::Engine(format!(
                "{shown} is a file: give the directory of the frames, for example playsim frametest -r {}",
                dir.parent().map_or_else(|| ".".into(), |p| p.display().to_string())
            )))
        }
        Ok(None) => return Err(Error::Engine(format!("{shown} does not exist: {write_first}"))),
        Err(e) => return Err(Error::Engine(format!("cannot look up {shown}: {e}"))),
    }
    let listing: HashMap<String, u64> = storage
        .list_dir(location.path())
        .await
        .map_err(|e| Error::Engine(format!("cannot list {shown}: {e}")))?
        .into_iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (e.name, e.size))
        .collect();
    let pattern = match &request.name {
        Some(p) => p.clone(),
        None => [DEFAULT_NAME, FRAMETEST_NAME]
            .into_iter()
            .map(default_pattern)
            .find(|p| listing.contains_key(&p.name(0)))
            .ok_or_else(|| {
                Error::Engine(format!(
                    "{shown} holds no frametest frames (frame000000.dpx or frame000000.tst): {write_first}"
                ))
            })?,
    };
    let n_found = (0u64..).take_while(|&i| listing.contains_key(&pattern.name(i))).count() as u64;
    if n_found == 0 {
        return Err(Error::Engine(format!(
            "{shown} holds no {} for frame 0: {write_first}",
            pattern.name(0)
        )));
    }
    let n = request.n_frames.unwrap_or(n_found);
    if n > n_found && !request.loop_files {
        return Err(Error::Engine(format!(
            "{shown} holds {n_found} frames ({} to {}) and -n {n} needs {n}: read fewer, loop over them \
             with -l, or write more, for example playsim frametest -w 2k -n {n} {shown}",
            pattern.name(0),
            pattern.name(n_found - 1)
        )));
    }
    let n_files = n.min(n_found);
    let names: Vec<String> = (0..n_files).map(|i| pattern.name(i)).collect();
    if let Some(size) = expect {
        if let Some(name) = names.iter().find(|name| listing.get(*name) != Some(&size.file_bytes)) {
            let actual = listing.get(name).copied().unwrap_or(0);
            let written = guess_size(actual).map_or_else(String::new, |s| format!(" {}", size_flag(&s)));
            return Err(Error::Engine(format!(
                "{name} in {shown} is {} bytes, not the {} of -r {}: give the size it was written with, \
                 or -r alone to read the files as they are, for example playsim frametest -r{written} {shown}",
                thousands(actual),
                thousands(size.file_bytes),
                size_flag(size)
            )));
        }
    }
    let paths: Vec<PathBuf> = names.iter().map(|name| location.path().join(name)).collect();
    let mut notes = Vec::new();
    if request.cold {
        notes.push(drop_cache(Arc::clone(&location), paths.clone()).await?);
    }
    notes.extend(storage.info().warnings.into_iter().map(|w| w.message));
    let transport = location.describe(storage.as_ref());
    // The size the summary names: the one asked for, else the first file's when all agree.
    let first_size = names.first().and_then(|name| listing.get(name)).copied().unwrap_or(0);
    let size = expect.cloned().or_else(|| {
        names
            .iter()
            .all(|name| listing.get(name) == Some(&first_size))
            .then(|| guess_size(first_size))
            .flatten()
    });
    let info = RunInfo {
        write: false,
        parameters: request.parameters(),
        location: dir.display().to_string(),
        pattern,
        n_files,
        size,
        threads: request.threads,
        queue: request.queue.unwrap_or(request.threads),
        rate: request.rate,
        decode_threads: request.decode.then_some(request.decode_threads.max(1)),
        transport,
        notes,
    };
    Ok((Arc::new(StorageReads::new(storage, paths)), info, n, n_files))
}

/// The preset a file of `bytes` was written with, or its size in KB as `-z` gives it.
fn guess_size(bytes: u64) -> Option<FrameSize> {
    ["sd", "hd", "2k", "4k"]
        .into_iter()
        .filter_map(|name| FrameSize::preset(name, DEFAULT_HEADER_BYTES))
        .find(|s| s.file_bytes == bytes)
        .or_else(|| {
            (bytes % 1024 == 0)
                .then(|| FrameSize::custom_kb(bytes / 1024, DEFAULT_HEADER_BYTES).ok())
                .flatten()
        })
}

async fn drop_cache(location: Arc<dyn Location>, paths: Vec<PathBuf>) -> Result<String, Error> {
    let n = paths.len();
    let outcome = tokio::task::spawn_blocking(move || location.drop_cache(&paths))
        .await
        .map_err(|e| Error::Engine(format!("cannot drop the page cache: {e}")))?;
    Ok(outcome.message.unwrap_or_else(|| {
        format!("--cold: {} of {n} files dropped from the page cache", outcome.files_dropped)
    }))
}

/// The first `header_bytes` of every file: playsim-dpx's header for a 10-bit RGB image
/// (big-endian, packing method A) of the size, with its image at frametest's offset, then
/// zeros up to the image.
fn dpx_header(size: &FrameSize) -> Result<Vec<u8>, Error> {
    let fail =
        |why: String| Error::Engine(format!("cannot make the dpx header of {}: {why}", size.describe()));
    let offset = u32::try_from(size.header_bytes).map_err(|_| fail("header too large".into()))?;
    let file_size = u32::try_from(size.file_bytes).map_err(|_| fail("file larger than 4 GiB".into()))?;
    let options = WriteOptions { bit_depth: 10, endian: Endian::Big };
    let head = header_for_layout(size.width, size.height, offset, file_size, &options)
        .map_err(|e| fail(e.to_string()))?;
    let parsed = DpxHeader::parse(&head).map_err(|e| fail(e.to_string()))?;
    if (parsed.width, parsed.height, parsed.bit_depth, u64::from(parsed.data_offset))
        != (size.width, size.height, 10, size.header_bytes)
    {
        return Err(fail(format!("it reads back as {} at offset {}", parsed.describe(), parsed.data_offset)));
    }
    Ok(head)
}

/// The image data every file gets: a 10-bit ramp (red across, green down, blue a
/// checker of both), packed three samples to a big-endian word; padding after it is zero.
fn image_body(size: &FrameSize) -> Arc<[u8]> {
    let len = usize::try_from(size.file_bytes - size.header_bytes).unwrap_or(0);
    let mut body = vec![0u8; len];
    let (w, h) = (size.width as usize, size.height as usize);
    let ramp = |i: usize, n: usize| (i * 1023 / n.saturating_sub(1).max(1)) as u32;
    for (y, row) in body.chunks_exact_mut(w * 4).take(h).enumerate() {
        let g = ramp(y, h);
        for (x, pixel) in row.chunks_exact_mut(4).enumerate() {
            let word = ramp(x, w) << 22 | g << 12 | (((x ^ y) & 1023) as u32) << 2;
            pixel.copy_from_slice(&word.to_be_bytes());
        }
    }
    body.into()
}

/// Writes frame files into a local directory: create, write header and image, close.
struct LocalWrites {
    dir: PathBuf,
    pattern: NamePattern,
    header: Arc<[u8]>,
    body: Arc<[u8]>,
    fsync: bool,
}

impl FrameIo for LocalWrites {
    fn name(&self, file_idx: u64) -> String {
        self.dir.join(self.pattern.name(file_idx)).display().to_string()
    }

    fn open(&self, file_idx: u64) -> IoFuture<'_, Result<Box<dyn FrameFile>, StorageError>> {
        let name = self.pattern.name(file_idx);
        let path = self.dir.join(&name);
        let mut header = self.header.to_vec();
        set_file_name(&mut header, &name);
        Box::pin(async move {
            let file = blocking("create", &path, {
                let path = path.clone();
                move || OpenOptions::new().write(true).create(true).truncate(true).open(path)
            })
            .await?;
            Ok(Box::new(WriteFile {
                file: Arc::new(file),
                path,
                header: header.into(),
                body: Arc::clone(&self.body),
                fsync: self.fsync,
            }) as Box<dyn FrameFile>)
        })
    }
}

struct WriteFile {
    file: Arc<File>,
    path: PathBuf,
    header: Arc<[u8]>,
    body: Arc<[u8]>,
    fsync: bool,
}

impl FrameFile for WriteFile {
    fn transfer<'a>(&'a self, _buf: &'a mut IoBuf) -> IoFuture<'a, Result<u64, StorageError>> {
        let (file, header, body) = (Arc::clone(&self.file), Arc::clone(&self.header), Arc::clone(&self.body));
        Box::pin(async move {
            blocking("write", &self.path, move || {
                file.write_all_at(&header, 0)?;
                file.write_all_at(&body, header.len() as u64)?;
                Ok((header.len() + body.len()) as u64)
            })
            .await
        })
    }

    fn close(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>> {
        Box::pin(async move {
            let WriteFile { file, path, fsync, .. } = *self;
            blocking("close", &path, move || if fsync { file.sync_data() } else { Ok(()) }).await
        })
    }
}

/// Runs `task` on tokio's blocking pool; errors name `what` and `path`.
async fn blocking<T: Send + 'static>(
    what: &str,
    path: &Path,
    task: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, StorageError> {
    match tokio::task::spawn_blocking(task).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(StorageError::from_io(&e, what, path)),
        Err(e) => Err(StorageError::new(
            StorageErrorKind::Io,
            format!("cannot {what} {}: the blocking task failed ({e})", path.display()),
        )),
    }
}

/// A finished run: the records and what the summary says about them.
pub struct FrametestResult {
    info: RunInfo,
    /// Every frame's times and outcome.
    pub run: FrametestRun,
}

/// Histogram bucket edges of frame times, in ms.
const BUCKETS_MS: [u64; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];

/// Figures over the frames.
#[derive(Default)]
struct Stats {
    transferred: u64,
    dropped: u64,
    failed: u64,
    bytes: u64,
    /// (frame time, bytes) of the fastest and slowest frames.
    fastest: Option<(Duration, u64)>,
    slowest: Option<(Duration, u64)>,
    open: Duration,
    io: Duration,
    close: Duration,
    frame: Duration,
    decoded: u64,
    decode: Duration,
    decode_max: Duration,
    histogram: [u64; BUCKETS_MS.len() + 1],
}

impl Stats {
    fn of(run: &FrametestRun) -> Stats {
        let mut s = Stats::default();
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

    fn average(&self, total: Duration) -> Duration {
        total.checked_div(u32::try_from(self.transferred).unwrap_or(u32::MAX)).unwrap_or_default()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Megabytes (10^6 bytes) a second.
fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        bytes as f64 / 1e6 / d.as_secs_f64()
    }
}

fn bucket_label(i: usize) -> String {
    match (i.checked_sub(1).and_then(|j| BUCKETS_MS.get(j)), BUCKETS_MS.get(i)) {
        (None, Some(hi)) => format!("< {hi} ms"),
        (Some(lo), Some(hi)) => format!("{lo} - {hi} ms"),
        (Some(lo), None) => format!(">= {lo} ms"),
        (None, None) => String::new(),
    }
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

    /// frametest's summary: frames transferred and dropped, fastest and slowest frame,
    /// averages, data and frame rate, and a histogram of frame times. MB = 10^6 bytes.
    pub fn summary(&self) -> String {
        let info = &self.info;
        let s = Stats::of(&self.run);
        let duration = self.duration();
        let mut out = String::new();
        let verb = if info.write { "write" } else { "read" };
        let size =
            info.size.as_ref().map_or_else(|| "frames of varying size".to_owned(), FrameSize::describe);
        let _ = writeln!(out, "playsim frametest: {verb} {size}");
        let _ = writeln!(out, "Test parameters:    {}", info.parameters);
        let _ = writeln!(
            out,
            "Location:           {} ({}, {} files; {})",
            info.location, info.pattern, info.n_files, info.transport
        );
        let queue = plural(u64::from(info.queue), "frame");
        let pacing = match info.rate {
            Some(rate) => {
                format!("{rate} fps, queue of {queue}, clock started at {:.3} s", self.run.t0_ns as f64 / 1e9)
            }
            None => format!("as fast as possible, queue of {queue}"),
        };
        let _ = writeln!(out, "Pacing:             {}, {pacing}", plural(u64::from(info.threads), "thread"));
        let _ = writeln!(out, "Test duration:      {:.3} s", duration.as_secs_f64());
        let _ = writeln!(out, "Frames transferred: {} ({:.3} MB)", s.transferred, s.bytes as f64 / 1e6);
        let _ = writeln!(out, "Frames dropped:     {}", s.dropped);
        if s.failed > 0 {
            let _ = writeln!(out, "Frames failed:      {}", s.failed);
        }
        for (label, frame) in [("Fastest frame:", s.fastest), ("Slowest frame:", s.slowest)] {
            if let Some((t, bytes)) = frame {
                let _ = writeln!(out, "{label:<20}{:.3} ms ({:.2} MB/s)", ms(t), mb_per_s(bytes, t));
            }
        }
        let _ = writeln!(out, "Averaged details:");
        let _ = writeln!(
            out,
            "{:>13}{:>13}{:>13}{:>13}{:>13}{:>15}{:>12}",
            "", "Open", "I/O", "Close", "Frame", "Data rate", "Frame rate"
        );
        let fps = if duration.is_zero() { 0.0 } else { s.transferred as f64 / duration.as_secs_f64() };
        let _ = writeln!(
            out,
            "{:>13}{:>10.3} ms{:>10.3} ms{:>10.3} ms{:>10.3} ms{:>10.2} MB/s{:>8.2} fps",
            "Overall:",
            ms(s.average(s.open)),
            ms(s.average(s.io)),
            ms(s.average(s.close)),
            ms(s.average(s.frame)),
            mb_per_s(s.bytes, duration),
            fps
        );
        if let Some(threads) = info.decode_threads {
            let avg = s.decode.checked_div(u32::try_from(s.decoded).unwrap_or(u32::MAX)).unwrap_or_default();
            let _ = writeln!(
                out,
                "Decode:             {} frames, average {:.3} ms, slowest {:.3} ms, {:.3} CPU s on {}",
                s.decoded,
                ms(avg),
                ms(s.decode_max),
                self.run.decode_cpu.as_secs_f64(),
                plural(u64::from(threads), "thread")
            );
        }
        let used: Vec<usize> = (0..s.histogram.len()).filter(|&i| s.histogram[i] > 0).collect();
        if let (Some(&first), Some(&last)) = (used.first(), used.last()) {
            let _ = writeln!(out, "Histogram of frame times (open + I/O + close):");
            let most = s.histogram.iter().copied().max().unwrap_or(1).max(1);
            for i in first..=last {
                let n = s.histogram[i];
                let bar = "#".repeat(usize::try_from(n * 40 / most).unwrap_or(0).max(usize::from(n > 0)));
                let _ = writeln!(out, "{:>17} {n:>8} |{bar}", bucket_label(i));
            }
        }
        for note in &info.notes {
            let _ = writeln!(out, "Note: {note}");
        }
        for error in self.errors().take(10) {
            let _ = writeln!(out, "Failed: {error}");
        }
        if s.failed > 10 {
            let _ = writeln!(out, "Failed: ... and {} more (see -x)", s.failed - 10);
        }
        if let Some(failure) = &self.run.failure {
            let _ = writeln!(out, "Stopped: {failure}");
        } else if self.run.interrupted {
            let _ = writeln!(out, "Stopped: interrupted before every frame was due");
        }
        let _ = writeln!(out, "MB = 10^6 bytes; MB/s = 10^6 bytes per second.");
        out
    }

    /// `-x`: one row per frame. Times are in ms; `due`, `issued`, `start` and `done` from the
    /// start of the run, `open`, `io`, `close`, `decode` and `frame` as durations.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "frame,file,due_ms,issued_ms,start_ms,open_ms,io_ms,close_ms,decode_ms,done_ms,frame_ms,bytes,outcome,error\n",
        );
        let at = |t: Option<u64>| t.map_or_else(String::new, |ns| format!("{:.3}", ns as f64 / 1e6));
        let span = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.3}", b.saturating_sub(a) as f64 / 1e6),
            _ => String::new(),
        };
        for r in &self.run.records {
            let outcome = match r.outcome {
                FrameOutcome::Transferred => "transferred",
                FrameOutcome::Dropped => "dropped",
                FrameOutcome::Failed => "failed",
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{outcome},{}",
                r.position,
                csv_field(&self.info.pattern.name(r.file_idx)),
                at(r.due_ns),
                at(r.issued_ns),
                at(r.started_ns),
                span(r.started_ns, r.opened_ns),
                span(r.opened_ns, r.transferred_ns),
                span(r.transferred_ns, r.closed_ns),
                span(r.closed_ns, r.decoded_ns),
                at(r.done_ns),
                span(r.started_ns, r.closed_ns),
                r.bytes,
                csv_field(r.error.as_deref().unwrap_or(""))
            );
        }
        out
    }

    /// `--json`: the summary's figures. Rates in MB/s are 10^6 bytes a second.
    pub fn to_json(&self) -> serde_json::Value {
        let s = Stats::of(&self.run);
        let duration = self.duration();
        let info = &self.info;
        let histogram: Vec<serde_json::Value> = s
            .histogram
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                serde_json::json!({
                    "from_ms": i.checked_sub(1).and_then(|j| BUCKETS_MS.get(j)).copied().unwrap_or(0),
                    "to_ms": BUCKETS_MS.get(i),
                    "frames": n,
                })
            })
            .collect();
        let decoded = u32::try_from(s.decoded).unwrap_or(u32::MAX);
        serde_json::json!({
            "command": "frametest",
            "mode": if info.write { "write" } else { "read" },
            "parameters": info.parameters,
            "location": info.location,
            "pattern": info.pattern.to_string(),
            "n_files": info.n_files,
            "frame_size": info.size.as_ref().map(|f| serde_json::json!({
                "name": f.name, "width": f.width, "height": f.height,
                "header_bytes": f.header_bytes, "file_bytes": f.file_bytes,
            })),
            "threads": info.threads,
            "queue": info.queue,
            "fps": info.rate.map(|r| r.to_string()),
            "t0_s": self.run.t0_ns as f64 / 1e9,
            "duration_s": duration.as_secs_f64(),
            "frames_transferred": s.transferred,
            "frames_dropped": s.dropped,
            "frames_failed": s.failed,
            "bytes": s.bytes,
            "data_rate_mb_per_s": mb_per_s(s.bytes, duration),
            "frame_rate_fps": if duration.is_zero() { 0.0 } else { s.transferred as f64 / duration.as_secs_f64() },
            "fastest_frame_ms": s.fastest.map(|(t, _)| ms(t)),
            "slowest_frame_ms": s.slowest.map(|(t, _)| ms(t)),
            "avg_open_ms": ms(s.average(s.open)),
            "avg_io_ms": ms(s.average(s.io)),
            "avg_close_ms": ms(s.average(s.close)),
            "avg_frame_ms": ms(s.average(s.frame)),
            "decode": info.decode_threads.map(|threads| serde_json::json!({
                "threads": threads,
                "frames": s.decoded,
                "avg_ms": ms(s.decode.checked_div(decoded).unwrap_or_default()),
                "max_ms": ms(s.decode_max),
                "cpu_s": self.run.decode_cpu.as_secs_f64(),
            })),
            "histogram": histogram,
            "errors": self.errors().collect::<Vec<_>>(),
            "interrupted": self.run.interrupted,
            "failure": self.run.failure,
            "units": "MB = 10^6 bytes, times in ms",
        })
    }

    /// The records, in position order.
    pub fn records(&self) -> &[FrameRecord] {
        &self.run.records
    }
}

/// "1 thread", "4 threads".
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A CSV field, quoted when it needs to be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// 12812288 as "12,812,288".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use playsim_core::Decoder;

    use playsim_core::DecodedFrame;

    use super::*;

    #[test]
    fn presets_are_frametests_sizes() {
        let h = DEFAULT_HEADER_BYTES;
        let size = |name| FrameSize::preset(name, h).unwrap();
        assert_eq!(size("2k").file_bytes, 2048 * 1556 * 4 + 65_536);
        assert_eq!(size("2K").file_bytes / 1024, 12_512);
        assert_eq!(size("4k").file_bytes, 4096 * 3112 * 4 + 65_536);
        assert_eq!(size("4k").file_bytes / 1024, 49_856);
        assert_eq!((size("hd").width, size("hd").height), (1920, 1080));
        assert_eq!((size("sd").width, size("sd").height), (720, 480));
        assert_eq!(FrameSize::parse("12512", h).unwrap().file_bytes, size("2k").file_bytes);
        assert_eq!(size("2k").describe(), "2k: 12,812,288 bytes (2048x1556 10-bit rgb dpx at offset 65,536)");
        for bad in ["5k", "", "-3", "0", "2k2"] {
            assert!(FrameSize::parse(bad, h).unwrap_err().contains("for example"), "{bad}");
        }
        assert!(FrameSize::custom_kb(64, h).unwrap_err().contains("no room"));
        assert!(FrameSize::custom_kb(2 << 20, h).unwrap_err().contains("for example"));
        assert!(header_bytes_of_kb(1).unwrap_err().contains("for example"));
    }

    #[test]
    fn custom_sizes_fit_whole_lines_and_pad() {
        let s = FrameSize::custom_kb(1000, DEFAULT_HEADER_BYTES).unwrap();
        assert_eq!(s.file_bytes, 1_024_000);
        assert_eq!((s.width, s.height), (4096, (1_024_000 - 65_536) / 4 / 4096));
        assert!(s.image_bytes() <= s.file_bytes - s.header_bytes);
        let tiny = FrameSize::custom_kb(65, DEFAULT_HEADER_BYTES).unwrap();
        assert_eq!((tiny.width, tiny.height), (256, 1));
    }

    /// A whole file as the writer lays it out.
    fn file_of(size: &FrameSize, name: &str) -> Vec<u8> {
        let mut head = dpx_header(size).unwrap();
        set_file_name(&mut head, name);
        let mut file = head;
        file.extend_from_slice(&image_body(size));
        file
    }

    #[test]
    fn files_are_valid_dpx_with_the_image_at_the_header_offset() {
        for size in [
            FrameSize::preset("sd", DEFAULT_HEADER_BYTES).unwrap(),
            FrameSize::custom_kb(300, DEFAULT_HEADER_BYTES).unwrap(),
            FrameSize::custom_kb(300, header_bytes_of_kb(8).unwrap()).unwrap(),
        ] {
            let file = file_of(&size, "frame000007.dpx");
            assert_eq!(file.len() as u64, size.file_bytes);
            let h = DpxHeader::parse(&file).unwrap();
            assert_eq!((h.width, h.height, h.bit_depth, h.packing), (size.width, size.height, 10, 1));
            assert_eq!(u64::from(h.data_offset), size.header_bytes);
            assert_eq!(u32::from_be_bytes(file[16..20].try_into().unwrap()) as u64, size.file_bytes);
            assert_eq!(&file[36..52], b"frame000007.dpx\0");
            let mut decoded = DecodedFrame::default();
            DpxDecoder.decode(&file, &mut decoded).unwrap();
            assert_eq!((decoded.width, decoded.height), (size.width, size.height));
            // Pixel (1, 2): red 1023/(w-1), green 2*1023/(h-1), blue 1^2, widened to 16 bits.
            let px = 2 * size.width as usize + 1;
            let sample = |c: usize| {
                u16::from_le_bytes([decoded.data[px * 6 + 2 * c], decoded.data[px * 6 + 2 * c + 1]])
            };
            let widen = |v: u16| v << 6 | v >> 4;
            let ramp = |i: u32, n: u32| (i * 1023 / (n - 1).max(1)) as u16;
            if size.height > 2 {
                assert_eq!(sample(0), widen(ramp(1, size.width)));
                assert_eq!(sample(1), widen(ramp(2, size.height)));
                assert_eq!(sample(2), widen(3));
            }
        }
    }

    #[test]
    fn name_patterns() {
        let p: NamePattern = DEFAULT_NAME.parse().unwrap();
        assert_eq!(p.name(0), "frame000000.dpx");
        assert_eq!(p.name(1_234_567), "frame1234567.dpx");
        assert_eq!(p.to_string(), DEFAULT_NAME);
        let p: NamePattern = "shot_%d.tst".parse().unwrap();
        assert_eq!((p.name(42), p.to_string()), ("shot_42.tst".to_owned(), "shot_%d.tst".to_owned()));
        for bad in ["frame.dpx", "a/%06d.dpx", "%06d%d", "%06x.dpx", "%099d"] {
            assert!(bad.parse::<NamePattern>().unwrap_err().contains("for example"), "{bad}");
        }
    }

    #[test]
    fn parameters_read_back_as_frametest_flags() {
        let size = FrameSize::preset("4k", DEFAULT_HEADER_BYTES).unwrap();
        let r = FrametestRequest {
            n_frames: Some(2000),
            threads: 20,
            rate: Some(FrameRate::new(24, 1).unwrap()),
            queue: Some(2),
            order: PlayOrder::Random { seed: 3 },
            ..FrametestRequest::new(FrametestMode::Read { expect: Some(size.clone()) }, "/x")
        };
        assert_eq!(r.parameters(), "-r 4k -n 2000 -t 20 -f 24 -q 2 -b 5 -m --seed 3");
        let u = FrametestRequest { io_engine: IoEngine::IoUring, ..r.clone() };
        assert_eq!(u.parameters(), "-r 4k -n 2000 -t 20 -f 24 -q 2 -b 5 -m --seed 3 --io-engine io_uring");
        let custom = FrameSize::custom_kb(1000, DEFAULT_HEADER_BYTES).unwrap();
        let w = FrametestRequest {
            n_frames: Some(5),
            ..FrametestRequest::new(FrametestMode::Write { size: custom }, "/x")
        };
        assert_eq!(w.parameters(), "-w 1000 -n 5 -t 1");
    }

    #[test]
    fn thousands_and_csv_fields() {
        assert_eq!(
            (thousands(0), thousands(999), thousands(1000)),
            ("0".into(), "999".into(), "1,000".into())
        );
        assert_eq!(thousands(12_812_288), "12,812,288");
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    fn record(position: u64, outcome: FrameOutcome, start_ms: u64, frame_ms: u64, bytes: u64) -> FrameRecord {
        let ns = |ms: u64| Some(ms * 1_000_000);
        FrameRecord {
            position,
            file_idx: position,
            due_ns: None,
            issued_ns: ns(start_ms),
            started_ns: ns(start_ms),
            opened_ns: ns(start_ms),
            transferred_ns: ns(start_ms + frame_ms),
            closed_ns: ns(start_ms + frame_ms),
            decoded_ns: None,
            done_ns: ns(start_ms + frame_ms),
            bytes,
            outcome,
            error: None,
        }
    }

    #[test]
    fn the_summary_has_frametests_figures() {
        let size = FrameSize::preset("2k", DEFAULT_HEADER_BYTES).unwrap();
        let b = size.file_bytes;
        let dropped = FrameRecord {
            issued_ns: None,
            started_ns: None,
            opened_ns: None,
            transferred_ns: None,
            closed_ns: None,
            done_ns: None,
            ..record(2, FrameOutcome::Dropped, 0, 0, 0)
        };
        let run = FrametestRun {
            records: vec![
                record(0, FrameOutcome::Transferred, 0, 10, b),
                record(1, FrameOutcome::Transferred, 10, 30, b),
                dropped,
                record(3, FrameOutcome::Transferred, 40, 3, b),
            ],
            t0_ns: 0,
            end_ns: 1_000_000_000,
            ..FrametestRun::default()
        };
        let info = RunInfo {
            write: false,
            parameters: "-r 2k -n 4 -t 1".into(),
            location: "/tmp/ft".into(),
            pattern: default_pattern(DEFAULT_NAME),
            n_files: 4,
            size: Some(size),
            threads: 1,
            queue: 1,
            rate: None,
            decode_threads: None,
            transport: "local files".into(),
            notes: Vec::new(),
        };
        let result = FrametestResult { info, run };
        let text = result.summary();
        for line in [
            "Test parameters:    -r 2k -n 4 -t 1",
            "Frames transferred: 3 (38.437 MB)",
            "Frames dropped:     1",
            "Fastest frame:      3.000 ms (4270.76 MB/s)",
            "Slowest frame:      30.000 ms (427.08 MB/s)",
            "MB = 10^6 bytes",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
        assert!(text.contains("14.333 ms     38.44 MB/s    3.00 fps"), "{text}");
        assert!(text.contains("2 - 4 ms        1 |"), "{text}");
        assert!(text.contains("8 - 16 ms        1 |"), "{text}");
        assert!(!text.contains("Frames failed"), "{text}");
        let csv = result.csv();
        assert_eq!(csv.lines().count(), 5);
        assert_eq!(csv.lines().nth(3), Some("2,frame000002.dpx,,,,,,,,,,0,dropped,"));
        assert!(csv
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("1,frame000001.dpx,,10.000,10.000,0.000,30.000,0.000,,40.000,30.000,"));
        let json = result.to_json();
        assert_eq!(
            (json["frames_transferred"].as_u64(), json["frames_dropped"].as_u64()),
            (Some(3), Some(1))
        );
        assert_eq!(json["frame_size"]["file_bytes"].as_u64(), Some(b));
    }
}
