//! `playsim frametest`: frametest's front door, wiring only. Its request (frametest's flags
//! in playsim's terms) is checked, the files found or created through playsim's storage
//! (reads through a transport's [`Storage`](playsim_core::Storage), writes through the
//! storage's write API, [`playsim_storage::write`]), and the engine's paced runner
//! ([`playsim_engine::frametest`], which holds the drop rule) runs them. The sizes, the
//! names and the result with its summary, CSV and JSON are the report layer's
//! ([`playsim_report::frametest`]); the files' DPX layout is playsim-dpx's
//! ([`FrameLayout`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), playsim_ops::Error> {
//! use playsim_ops::frametest::{prepare_frametest, FrameSize, FrametestMode, FrametestRequest};
//! use playsim_report::frametest::summary;
//! let size = FrameSize::parse("2k", playsim_ops::frametest::DEFAULT_HEADER_BYTES)
//!     .map_err(|e| playsim_ops::Error::Engine(e.to_string()))?;
//! let write = FrametestRequest { n_frames: Some(24), ..FrametestRequest::new(FrametestMode::Write { size }, "/tmp/ft") };
//! println!("{}", summary(&prepare_frametest(&write).await?.run().await));
//! let read = FrametestRequest { threads: 4, ..FrametestRequest::new(FrametestMode::Read { expect: None }, "/tmp/ft") };
//! println!("{}", summary(&prepare_frametest(&read).await?.run().await));
//! # Ok(()) }
//! ```
//!
//! # Detail (moved from ARCHITECTURE.md)
//!
//! The summary has frametest's lines (Frames transferred, dropped, fastest and slowest frame,
//! averaged Open, I/O, Close, Frame, Data rate, Frame rate, a histogram), so scripts that grep
//! frametest's output keep working. A frame's time is its open + I/O + close on a thread; MB =
//! 10^6 bytes; KB in `-z` and `--header` is 1024 bytes, as frametest's.
//!
//! - **Files.** `DIR/frame000000.dpx`, … (`--name frame%06d.tst` gives frametest's names;
//!   reads fall back to `.tst`). Sizes are frametest's full-aperture 10-bit ones after a 64 KiB
//!   header (2k: 2048×1556, 12,812,288 bytes), each file valid DPX (`FrameLayout`). Writes go
//!   through the destination transport's `WriteStorage`; `--fsync` syncs each file first.
//! - **Reads** go through the same transports as `play`; the directory is listed once and the
//!   engine's `FrameFiles::find` picks the files. `--decode` decodes each frame with the DPX
//!   decoder on a decode pool.
//! - **Flags in the runner** (`playsim_engine::frametest`): `-t N` frame I/Os in flight; `-q N`
//!   frames queued (default `-t`); `-f FPS` frame k due at `t0 + due_offset(k)`, dropped if the
//!   queue is full then; `-b N` preroll (default 5); `-v`, `-m --seed S`, `-l` reverse, shuffled
//!   and looped orders; `-n N` positions (at most 10^6). `-x FILE` writes a CSV row per frame.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use playsim_core::{Clock, EntryKind, FrameRate, IoBuf, StorageError};
use playsim_dpx::{set_file_name, DpxDecoder, FrameLayout};
use playsim_engine::frametest::{
    FrameFile, FrameFiles, FrameFilesError, FrameIo, Frametest, FrametestConfig, FrametestDecode,
    FrametestError, FrametestField, FrametestOrder, IoFuture, StorageReads,
};
use playsim_engine::{CancelToken, DecodePool};
pub use playsim_report::frametest::{
    header_bytes_of_kb, FrameSize, FrameSizeError, FrametestResult, NamePattern, DEFAULT_HEADER_BYTES,
    DEFAULT_NAME, FRAMETEST_NAME, MAX_FRAME_FILE_BYTES,
};
use playsim_report::frametest::{thousands, FrametestInfo};
use playsim_storage::transport::{Location, TransportOptions};
use playsim_storage::write::{Stability, WriteBytes, WriteFile, WriteStorage};
use playsim_storage::{IoEngine, LocalOptions, UringOptions, DEFAULT_BLOCK_SIZE};

use crate::{Error, PlayOrder};

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
    /// The directory of the files: a local path, or an `nfs://` or `smb://` URL.
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
    /// Every transport's own options (playsim's NFS and SMB clients', ...), for a directory
    /// behind a URL.
    pub transport: TransportOptions,
    /// The run's clock.
    pub clock: playsim_engine::RunClock,
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
            transport: TransportOptions::new(),
            clock: playsim_engine::RunClock::default(),
        }
    }

    /// The flags as frametest takes them, for the summary's "Test parameters" line.
    pub fn parameters(&self) -> String {
        let mut p = match &self.mode {
            FrametestMode::Write { size } => format!("-w {}", size.flag_value()),
            FrametestMode::Read { expect: Some(size) } => format!("-r {}", size.flag_value()),
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

/// A run ready to start: [`PreparedFrametest::run`] runs it.
pub struct PreparedFrametest {
    runner: Frametest,
    info: FrametestInfo,
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

/// The engine's refusal, its fields named as frametest's flags.
fn refused(error: FrametestError) -> Error {
    Error::Engine(error.message_with(|field| {
        match field {
            FrametestField::Frames => "-n",
            FrametestField::Threads => "-t",
            FrametestField::Queue => "-q",
        }
        .to_owned()
    }))
}

/// Checks the request, finds (or creates) the files and sets the run up. Must run inside
/// a tokio runtime. Refusals show a valid example.
pub async fn prepare_frametest(request: &FrametestRequest) -> Result<PreparedFrametest, Error> {
    let mut config = FrametestConfig {
        // Until the files are counted: what the request says, or one to check the rest.
        n_frames: request.n_frames.unwrap_or(1),
        n_files: 1,
        order: match request.order {
            PlayOrder::Forward => FrametestOrder::Forward,
            PlayOrder::Reverse => FrametestOrder::Reverse,
            PlayOrder::Random { seed } => FrametestOrder::Random { seed },
        },
        threads: request.threads,
        rate: request.rate,
        queue: request.queue.unwrap_or(request.threads),
        preroll: request.preroll,
    };
    // Refused before a file is created or listed.
    config.validate().map_err(refused)?;
    let clock: Arc<dyn Clock> = request.clock.get();
    let (io, info, n_frames, n_files): (Arc<dyn FrameIo>, FrametestInfo, u64, u64) = match &request.mode {
        FrametestMode::Write { size } => prepare_writes(request, size, &clock).await?,
        FrametestMode::Read { expect } => prepare_reads(request, expect.as_ref(), &clock).await?,
    };
    (config.n_frames, config.n_files) = (n_frames, n_files);
    let mut runner = Frametest::new(config, io, clock).map_err(refused)?;
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
    clock: &Arc<dyn Clock>,
) -> Result<(Arc<dyn FrameIo>, FrametestInfo, u64, u64), Error> {
    let requested = &request.dir;
    let example = format!("for example playsim frametest -w 2k -n 24 {}", requested.display());
    let transport =
        crate::location::transports().find(&requested.to_string_lossy()).map_err(Error::Storage)?;
    if !transport.holds_files() {
        return Err(Error::Engine(format!(
            "cannot write to {}: {} storage holds no files; write to a local path or a URL such as {}, {example}",
            requested.display(),
            transport.name(),
            crate::location::transports().file_url_examples()
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
    let pattern = request.name.clone().unwrap_or_default();
    let layout = FrameLayout {
        width: size.width,
        height: size.height,
        data_offset: size.header_bytes,
        file_bytes: size.file_bytes,
    };
    let header = layout.header().map_err(|e| Error::Engine(e.to_string()))?;
    // The transport's own writer: local files, or playsim's NFS or SMB client for nfs:// or
    // smb:// (a missing directory is made).
    let location =
        crate::location::open(requested, crate::record::writing(&request.transport), clock).await?;
    let storage = location.writer_storage(false).await.ok_or_else(|| {
        Error::Engine(format!(
            "cannot write to {}: playsim's {} client only reads; mount the share and write to its path, {example}",
            requested.display(),
            transport.name().to_uppercase()
        ))
    })?;
    let storage = storage.map_err(Error::Storage)?;
    let described = storage.describe();
    let dir = &location.path().to_path_buf();
    storage.create_dir_all(dir).await.map_err(|e| Error::Engine(e.to_string()))?;
    let body = tokio::task::spawn_blocking(move || layout.ramp_body())
        .await
        .map_err(|e| Error::Engine(format!("cannot make the image: {e}")))?;
    let io = FrameWrites {
        storage,
        dir: dir.clone(),
        pattern: pattern.clone(),
        header: Arc::from(header),
        body: Arc::from(body),
        fsync: request.fsync,
    };
    let info = FrametestInfo {
        write: true,
        parameters: request.parameters(),
        location: requested.display().to_string(),
        pattern,
        n_files: n,
        size: Some(size.clone()),
        threads: request.threads,
        queue: request.queue.unwrap_or(request.threads),
        fps: request.rate.map(|r| r.to_string()),
        decode_threads: None,
        transport: if request.fsync { format!("{described}, fsync before close") } else { described },
        notes: Vec::new(),
    };
    Ok((Arc::new(io), info, n, n))
}

async fn prepare_reads(
    request: &FrametestRequest,
    expect: Option<&FrameSize>,
    clock: &Arc<dyn Clock>,
) -> Result<(Arc<dyn FrameIo>, FrametestInfo, u64, u64), Error> {
    let dir = &request.dir;
    let shown = dir.display();
    let write_first = format!("write frames first, for example playsim frametest -w 2k -n 24 {shown}");
    let transport = crate::location::transports().find(&dir.to_string_lossy()).map_err(Error::Storage)?;
    if !transport.holds_files() {
        return Err(Error::Engine(format!(
            "frametest reads frame files from a directory, a local path or a URL such as {}, not {shown}: \
             for simulated storage use playsim play, or {write_first}",
            crate::location::transports().file_url_examples()
        )));
    }
    let local = LocalOptions {
        block_size: request.block_size,
        direct: request.direct,
        io_engine: request.io_engine,
        uring: UringOptions::default(),
    };
    let options = request.transport.clone().with(local);
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
    let files =
        FrameFiles::find(&listing, request.name.as_ref(), request.n_frames, request.loop_files, expect)
            .map_err(|e| Error::Engine(files_refused(&e, &shown.to_string(), &write_first)))?;
    let (n, n_files, names) = (files.n_frames, files.names.len() as u64, files.names);
    let paths: Vec<PathBuf> = names.iter().map(|name| location.path().join(name)).collect();
    let mut notes = Vec::new();
    if request.cold {
        notes.push(drop_cache(Arc::clone(&location), paths.clone()).await?);
    }
    notes.extend(storage.info().warnings.into_iter().map(|w| w.message));
    let transport = location.describe(storage.as_ref());
    let info = FrametestInfo {
        write: false,
        parameters: request.parameters(),
        location: dir.display().to_string(),
        pattern: files.pattern,
        n_files,
        size: files.size,
        threads: request.threads,
        queue: request.queue.unwrap_or(request.threads),
        fps: request.rate.map(|r| r.to_string()),
        decode_threads: request.decode.then_some(request.decode_threads.max(1)),
        transport,
        notes,
    };
    Ok((Arc::new(StorageReads::new(storage, paths)), info, n, n_files))
}

/// Why the directory `shown` holds no frames to read, in frametest's flags.
fn files_refused(error: &FrameFilesError, shown: &str, write_first: &str) -> String {
    match error {
        FrameFilesError::NoFrametestFrames => {
            format!("{shown} holds no frametest frames (frame000000.dpx or frame000000.tst): {write_first}")
        }
        FrameFilesError::NoFirstFrame { name } => format!("{shown} holds no {name} for frame 0: {write_first}"),
        FrameFilesError::TooFew { n_found, n_frames: n, first, last } => format!(
            "{shown} holds {n_found} frames ({first} to {last}) and -n {n} needs {n}: read fewer, loop over them \
             with -l, or write more, for example playsim frametest -w 2k -n {n} {shown}"
        ),
        FrameFilesError::WrongSize { name, bytes, expected } => {
            let written = FrameSize::guess(*bytes).map_or_else(String::new, |s| format!(" {}", s.flag_value()));
            format!(
                "{name} in {shown} is {} bytes, not the {} of -r {}: give the size it was written with, \
                 or -r alone to read the files as they are, for example playsim frametest -r{written} {shown}",
                thousands(*bytes),
                thousands(expected.file_bytes),
                expected.flag_value()
            )
        }
        other => other.to_string(),
    }
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

/// frametest's writes through the storage's write API: each file is created, gets its
/// header (with its own name in it) and the shared image, and is closed, synced first with
/// `--fsync`.
struct FrameWrites {
    storage: Arc<dyn WriteStorage>,
    dir: PathBuf,
    pattern: NamePattern,
    header: WriteBytes,
    body: WriteBytes,
    fsync: bool,
}

impl FrameIo for FrameWrites {
    fn name(&self, file_idx: u64) -> String {
        self.dir.join(self.pattern.name(file_idx)).display().to_string()
    }

    fn open(&self, file_idx: u64) -> IoFuture<'_, Result<Box<dyn FrameFile>, StorageError>> {
        let name = self.pattern.name(file_idx);
        let path = self.dir.join(&name);
        let mut header = self.header.to_vec();
        set_file_name(&mut header, &name);
        Box::pin(async move {
            let file = self.storage.create(&path).await?;
            Ok(Box::new(FrameWrite {
                file,
                header: header.into(),
                body: Arc::clone(&self.body),
                fsync: self.fsync,
            }) as Box<dyn FrameFile>)
        })
    }
}

struct FrameWrite {
    file: Box<dyn WriteFile>,
    header: WriteBytes,
    body: WriteBytes,
    fsync: bool,
}

impl FrameFile for FrameWrite {
    fn transfer<'a>(&'a self, _buf: &'a mut IoBuf) -> IoFuture<'a, Result<u64, StorageError>> {
        Box::pin(async move {
            let head = self.file.write_at(0, Arc::clone(&self.header), Stability::Unstable).await?;
            let body = self.file.write_at(head, Arc::clone(&self.body), Stability::Unstable).await?;
            Ok(head + body)
        })
    }

    fn close(self: Box<Self>) -> IoFuture<'static, Result<(), StorageError>> {
        Box::pin(async move {
            if self.fsync {
                self.file.sync().await?;
            }
            Ok(self.file.close().await?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
