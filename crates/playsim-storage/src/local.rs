//! Local files through the kernel: buffered reads or O_DIRECT, one `pread` per block on
//! tokio's blocking pool, or all of a frame's blocks at once through io_uring
//! ([`IoEngine::IoUring`], in the `uring` module).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use playsim_core::{
    DirEntry, EntryKind, IoBuf, MountLabel, Storage, StorageError, StorageErrorKind, StorageFile,
    StorageInfo, StorageStats, StorageWarning, DIRECT_IO_ALIGN,
};
use rustix::fs::{Advice, OFlags};
use rustix::io::Errno;

use crate::read_plan::{deliver, plan_read, thread_cpu_ns, Counters, ReadDone, ReadPlan};
use crate::uring::UringOptions;
#[cfg(feature = "io-uring")]
use crate::uring::UringReader;
use crate::Error;

/// The block size used when none is given: 1 MiB per read request.
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;

/// How a [`LocalStorage`] asks the kernel for a frame's blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IoEngine {
    /// One `pread` per block, the blocks of a frame one after the other, each frame on a
    /// thread of tokio's blocking pool (so `--io-depth` frames are read at once).
    #[default]
    Pread,
    /// io_uring: every block of a frame submitted at once, so many reads are in flight
    /// (up to the ring's depth), into buffers registered with the kernel where the
    /// locked-memory limit allows. Falls back to [`IoEngine::Pread`], saying why, where
    /// io_uring is not available: in the kernel, or in a build without the `io-uring`
    /// cargo feature.
    IoUring,
}

impl IoEngine {
    /// The name the command line and the report use: `pread` or `io_uring`.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Pread => "pread",
            IoEngine::IoUring => "io_uring",
        }
    }
}

impl std::fmt::Display for IoEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for IoEngine {
    type Err = String;

    /// `pread` or `io_uring` (also spelt `io-uring`).
    fn from_str(s: &str) -> Result<IoEngine, String> {
        match s.trim() {
            "pread" => Ok(IoEngine::Pread),
            "io_uring" | "io-uring" => Ok(IoEngine::IoUring),
            _ => Err(format!(
                "io engine '{s}' is not known: pread or io_uring (for example --io-engine io_uring)"
            )),
        }
    }
}

/// Settings of a [`LocalStorage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalOptions {
    /// Bytes per read request (one `pread`, or one io_uring read, each). With `direct` it
    /// must be a multiple of [`DIRECT_IO_ALIGN`].
    pub block_size: usize,
    /// Open files with O_DIRECT so that reads bypass the page cache.
    pub direct: bool,
    /// How the blocks are read.
    pub io_engine: IoEngine,
    /// The io_uring engine's settings (ring depth, registered buffers); unused with pread.
    pub uring: UringOptions,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            direct: false,
            io_engine: IoEngine::Pread,
            uring: UringOptions::default(),
        }
    }
}

impl LocalOptions {
    /// Checks that the options can be used: a non-zero block size, aligned when `direct`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.block_size == 0 {
            return Err(Error::InvalidOption(
                "block size 0 is out of range: it must be at least 1 byte".into(),
            ));
        }
        if self.direct && !self.block_size.is_multiple_of(DIRECT_IO_ALIGN) {
            return Err(Error::InvalidOption(format!(
                "block size {} is not a multiple of {DIRECT_IO_ALIGN}, which O_DIRECT needs",
                self.block_size
            )));
        }
        if self.io_engine == IoEngine::IoUring {
            self.uring.validate()?;
        }
        Ok(())
    }
}

/// What [`LocalStorage::drop_cache`] achieved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColdOutcome {
    /// Files whose cached pages the kernel was asked to drop, without error.
    pub files_dropped: u64,
    /// When some files failed: how many, and the first error. `None` when all succeeded.
    pub message: Option<String>,
}

/// Files on a local (or kernel-mounted) filesystem, read with positional reads
/// of at most one block each.
///
/// Every call runs on tokio's blocking pool (reads with [`IoEngine::IoUring`] on the
/// storage's ring thread instead), so it must be used inside a tokio runtime; outside
/// one, calls fail with an `Io` error rather than panicking. Counters are shared by the
/// storage and all the files it opened.
///
/// A "local" path may be a kernel NFS or SMB mount; [`LocalStorage::label_mount_of`]
/// looks the mount up so that [`Storage::info`] (and the report) says which.
#[derive(Debug)]
pub struct LocalStorage {
    options: LocalOptions,
    counters: Arc<Counters>,
    /// The mount the files are on, when it was looked up.
    mount: Option<MountLabel>,
    /// How reads are issued: the engine asked for, or pread when io_uring is not available.
    engine: Engine,
}

/// The engine a [`LocalStorage`] actually reads with.
#[derive(Clone, Debug)]
enum Engine {
    /// pread on the blocking pool; `unavailable` says why io_uring was asked for and not used.
    Pread { unavailable: Option<String> },
    /// The storage's ring and the thread that drives it, shared with its open files.
    #[cfg(feature = "io-uring")]
    Uring(Arc<UringReader>),
}

/// The engine for [`IoEngine::IoUring`]: a ring and its thread, or pread where io_uring
/// cannot be set up, saying why.
#[cfg(feature = "io-uring")]
fn uring_engine(options: &UringOptions, counters: &Arc<Counters>) -> Engine {
    match UringReader::start(options, Arc::clone(counters)) {
        Ok(reader) => Engine::Uring(Arc::new(reader)),
        Err(why) => Engine::Pread { unavailable: Some(why) },
    }
}

/// The engine for [`IoEngine::IoUring`] in a build without the `io-uring` feature: pread,
/// saying why, as on a kernel without io_uring (so a scenario asking for it still plays).
#[cfg(not(feature = "io-uring"))]
fn uring_engine(_options: &UringOptions, _counters: &Arc<Counters>) -> Engine {
    Engine::Pread { unavailable: Some(WITHOUT_THE_FEATURE.to_owned()) }
}

/// Why a build without the `io-uring` feature reads with pread.
#[cfg(not(feature = "io-uring"))]
pub(crate) const WITHOUT_THE_FEATURE: &str =
    "this build of playsim leaves out the cargo feature `io-uring` (build with --features io-uring)";

/// Builds a [`LocalStorage`]; see [`LocalStorage::builder`].
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalStorageBuilder {
    options: LocalOptions,
}

impl LocalStorageBuilder {
    /// Bytes per read request (default [`DEFAULT_BLOCK_SIZE`]).
    pub fn block_size(mut self, block_size: usize) -> Self {
        self.options.block_size = block_size;
        self
    }

    /// Whether to open files with O_DIRECT (default false).
    pub fn direct(mut self, direct: bool) -> Self {
        self.options.direct = direct;
        self
    }

    /// How blocks are read (default [`IoEngine::Pread`]).
    pub fn io_engine(mut self, io_engine: IoEngine) -> Self {
        self.options.io_engine = io_engine;
        self
    }

    /// The io_uring engine's settings (default [`UringOptions::default`]).
    pub fn uring(mut self, uring: UringOptions) -> Self {
        self.options.uring = uring;
        self
    }

    /// The storage, or an error when the options are out of range.
    pub fn build(self) -> Result<LocalStorage, Error> {
        LocalStorage::new(self.options)
    }
}

impl LocalStorage {
    /// A builder starting from [`LocalOptions::default`].
    pub fn builder() -> LocalStorageBuilder {
        LocalStorageBuilder::default()
    }

    /// The storage with `options`, or an error when they are out of range.
    ///
    /// With [`IoEngine::IoUring`] this sets up the storage's ring and starts the thread
    /// that drives it (`playsim-uring`). Where io_uring cannot be set up (a kernel without
    /// it, the `kernel.io_uring_disabled` sysctl, a container's seccomp profile) the storage
    /// reads with pread instead: [`LocalStorage::io_engine`] says which engine is used,
    /// [`LocalStorage::warnings`] why, and so does [`Storage::info`] for the report.
    pub fn new(options: LocalOptions) -> Result<LocalStorage, Error> {
        options.validate()?;
        let counters = Arc::<Counters>::default();
        let engine = match options.io_engine {
            IoEngine::Pread => Engine::Pread { unavailable: None },
            IoEngine::IoUring => uring_engine(&options.uring, &counters),
        };
        Ok(LocalStorage { options, counters, mount: None, engine })
    }

    /// The options this storage was built with.
    pub fn options(&self) -> LocalOptions {
        self.options
    }

    /// The engine the reads actually use: [`IoEngine::Pread`] when io_uring was asked for
    /// and could not be set up.
    pub fn io_engine(&self) -> IoEngine {
        match self.engine {
            Engine::Pread { .. } => IoEngine::Pread,
            #[cfg(feature = "io-uring")]
            Engine::Uring(_) => IoEngine::IoUring,
        }
    }

    /// What a user should know about how this storage reads, in full sentences: io_uring
    /// asked for and not available (why, and the sysctl or profile to change), or buffers
    /// that could not be registered (the locked-memory limit, and how to raise it). Empty
    /// when the reads go as asked. The registration is tried as buffers come in, so ask
    /// after reading; the same warnings are in [`Storage::info`].
    pub fn warnings(&self) -> Vec<StorageWarning> {
        match &self.engine {
            Engine::Pread { unavailable: Some(why) } => vec![StorageWarning::new(
                "io_uring_unavailable",
                format!("io_uring is not available, so the reads used pread: {why}"),
            )],
            Engine::Pread { unavailable: None } => Vec::new(),
            #[cfg(feature = "io-uring")]
            Engine::Uring(reader) => {
                let registered = reader.registered_buffers();
                let (kind, how) = if let Some(why) = registered.strip_prefix(REGISTERED_NO) {
                    ("buffers_unregistered", format!("io_uring read into unregistered buffers: {why}"))
                } else if let Some(why) = registered.strip_prefix(REGISTERED_PARTLY) {
                    (
                        "buffers_partly_registered",
                        format!("io_uring read into registered buffers only in part: {why}"),
                    )
                } else {
                    return Vec::new();
                };
                vec![StorageWarning::new(kind, how)]
            }
        }
    }

    /// The engine's entries of [`StorageInfo::options`].
    fn engine_options(&self) -> Vec<(String, String)> {
        let mut options = vec![(OPTION_IO_ENGINE.to_owned(), self.io_engine().name().to_owned())];
        match &self.engine {
            Engine::Pread { unavailable: Some(why) } => {
                options.push((OPTION_IO_URING.to_owned(), format!("{UNAVAILABLE}{why}")));
            }
            Engine::Pread { unavailable: None } => {}
            #[cfg(feature = "io-uring")]
            Engine::Uring(reader) => {
                options.push(("ring_entries".to_owned(), reader.entries().to_string()));
                options.push((OPTION_REGISTERED.to_owned(), reader.registered_buffers()));
            }
        }
        options
    }

    /// The storage, labelled with the kernel mount `path` is on (read from
    /// /proc/self/mountinfo), so that [`Storage::info`] reports its filesystem type,
    /// its transport ("nfs over rdma", "nfs over tcp", "smb", "local (ext4)") and the
    /// mount options that matter for reading. `path` may be a frame pattern that does
    /// not exist as such (`/mnt/x/shot.%07d.dpx`): its nearest existing ancestor
    /// decides. When the mount cannot be found the storage is left unlabelled.
    ///
    /// This reads a small procfs file: call it while setting up, not during a run.
    pub fn label_mount_of(self, path: &Path) -> LocalStorage {
        let mount = crate::mountinfo::mount_of(path).map(|m| m.to_label());
        self.with_mount(mount)
    }

    /// The storage, labelled with `mount` (as [`LocalStorage::label_mount_of`] does,
    /// for a mount looked up once and shared by several storages, or for tests).
    pub fn with_mount(mut self, mount: Option<MountLabel>) -> LocalStorage {
        self.mount = mount;
        self
    }

    /// The mount this storage was labelled with, if any.
    pub fn mount(&self) -> Option<&MountLabel> {
        self.mount.as_ref()
    }

    /// Asks the kernel to drop the cached pages of each file in `paths`, so
    /// that the next run reads them from the device ("cold" run).
    ///
    /// Each file is opened read-only (nothing is synced) and given
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` over its whole length. That advice
    /// is only advice: pages that are dirty, mapped by a process, or locked stay
    /// in memory, and caches below this machine's page cache (an NFS server's
    /// memory, a RAID controller, the drive) are not touched. A file that cannot
    /// be opened or advised is counted in the message and skipped; this never
    /// stops at the first failure.
    ///
    /// This is a blocking call: run it before the playback starts, or on a
    /// blocking thread.
    pub fn drop_cache(&self, paths: &[PathBuf]) -> ColdOutcome {
        let mut files_dropped = 0u64;
        let mut n_failed = 0u64;
        let mut first_error = None;
        for path in paths {
            match drop_file_cache(path) {
                Ok(()) => files_dropped += 1,
                Err(message) => {
                    n_failed += 1;
                    first_error.get_or_insert(message);
                }
            }
        }
        let message = first_error.map(|first| {
            format!(
                "could not drop the cached pages of {n_failed} of {} files; the first error: {first}",
                paths.len()
            )
        });
        ColdOutcome { files_dropped, message }
    }
}

#[async_trait::async_trait]
impl Storage for LocalStorage {
    fn info(&self) -> StorageInfo {
        StorageInfo {
            transport: "local".into(),
            block_size: self.options.block_size,
            direct: self.options.direct,
            options: self.engine_options(),
            mount: self.mount.clone(),
            warnings: self.warnings(),
        }
    }

    async fn open(&self, path: &Path) -> Result<Box<dyn StorageFile>, StorageError> {
        let path: Arc<Path> = Arc::from(path);
        let direct = self.options.direct;
        let task_path = Arc::clone(&path);
        let (file, size) = run_blocking("open", &path, move || open_regular(&task_path, direct)).await??;
        Ok(Box::new(LocalFile {
            file: Arc::new(file),
            path,
            size,
            block_size: self.options.block_size,
            direct,
            counters: Arc::clone(&self.counters),
            engine: self.engine.clone(),
        }))
    }

    async fn kind(&self, path: &Path) -> Result<Option<EntryKind>, StorageError> {
        let owned = path.to_owned();
        run_blocking("look up", path, move || crate::listing::local_kind(&owned)).await?
    }

    async fn list_dir(&self, dir: &Path) -> Result<Vec<DirEntry>, StorageError> {
        let owned = dir.to_owned();
        run_blocking("list", dir, move || crate::listing::local_list(&owned)).await?
    }

    fn stats(&self) -> StorageStats {
        StorageStats {
            n_reads: self.counters.n_reads.load(Ordering::Relaxed),
            bytes: self.counters.bytes.load(Ordering::Relaxed),
            cpu_ns: self.counters.cpu_ns.load(Ordering::Relaxed),
        }
    }
}

/// The report option naming the engine the reads used: `pread` or `io_uring`.
const OPTION_IO_ENGINE: &str = "io_engine";
/// The report option saying why io_uring was asked for and not used.
const OPTION_IO_URING: &str = "io_uring";
/// The report option saying whether io_uring read into registered buffers.
#[cfg(feature = "io-uring")]
const OPTION_REGISTERED: &str = "registered_buffers";
/// How [`OPTION_IO_URING`]'s value starts.
const UNAVAILABLE: &str = "not available: ";

/// How the io_uring engine's registration status begins when no buffer, or only some,
/// could be registered (see `uring::UringReader::registered_buffers`).
#[cfg(feature = "io-uring")]
const REGISTERED_NO: &str = "no: ";
#[cfg(feature = "io-uring")]
const REGISTERED_PARTLY: &str = "partly: ";

/// An open local file.
#[derive(Debug)]
struct LocalFile {
    /// Shared with the blocking read tasks, which need an owned handle.
    file: Arc<File>,
    path: Arc<Path>,
    size: u64,
    block_size: usize,
    direct: bool,
    counters: Arc<Counters>,
    engine: Engine,
}

#[async_trait::async_trait]
impl StorageFile for LocalFile {
    fn size(&self) -> u64 {
        self.size
    }

    /// Reads never go past the size seen at open: that bounds the buffer that
    /// a hostile `len` can make us allocate. With O_DIRECT, an unaligned offset
    /// is served by reading from the aligned offset below it and moving the
    /// data to the front of `buf` (a memmove, counted in `cpu_ns`).
    ///
    /// If this future is dropped while the read runs, `buf` is left empty: the read
    /// owns the buffer until the kernel is done with it (with io_uring, until every
    /// request in flight has completed), and then drops it.
    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError> {
        let plan = plan_read(self.size, offset, len, self.direct).map_err(|message| {
            StorageError::new(
                StorageErrorKind::Invalid,
                format!("cannot read {} at offset {offset}: {message}", self.path.display()),
            )
        })?;
        if plan.want == 0 {
            buf.prepare(0);
            return Ok(0);
        }
        let file = Arc::clone(&self.file);
        let block_size = self.block_size;
        #[cfg_attr(not(feature = "io-uring"), allow(unused_mut))]
        let mut taken = std::mem::take(buf);
        let done = match &self.engine {
            Engine::Pread { .. } => {
                run_blocking("read", &self.path, move || read_blocks(&file, taken, plan, block_size)).await?
            }
            #[cfg(feature = "io-uring")]
            Engine::Uring(ring) => {
                taken.prepare(plan.total);
                ring.read(taken, file, plan, block_size, self.direct).await.map_err(|why| {
                    StorageError::new(
                        StorageErrorKind::Io,
                        format!("cannot read {} at offset {offset}: {why}", self.path.display()),
                    )
                })?
            }
        };
        *buf = done.buf;
        self.counters.n_reads.fetch_add(done.n_reads, Ordering::Relaxed);
        self.counters.cpu_ns.fetch_add(done.cpu_ns, Ordering::Relaxed);
        match done.result {
            Ok(n) => {
                self.counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
            Err((err, at)) => {
                let mut error = StorageError::from_io(&err, "read", &self.path);
                error.message = format!("cannot read {} at offset {at}: {err}", self.path.display());
                Err(error)
            }
        }
    }

    /// The file is dropped on a blocking thread, because close(2) can block
    /// (on NFS it waits for outstanding requests). Errors of close(2) itself
    /// are not reported: `std` discards them, and for a file only read they
    /// carry no lost data.
    async fn close(self: Box<Self>) -> Result<(), StorageError> {
        let LocalFile { file, path, .. } = *self;
        run_blocking("close", &path, move || drop(file)).await
    }
}

/// Runs `task` on tokio's blocking pool; `what` and `path` name it in errors.
async fn run_blocking<R, F>(what: &str, path: &Path, task: F) -> Result<R, StorageError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let runtime = tokio::runtime::Handle::try_current().map_err(|err| {
        StorageError::new(
            StorageErrorKind::Io,
            format!("cannot {what} {}: not inside a tokio runtime ({err})", path.display()),
        )
    })?;
    runtime.spawn_blocking(task).await.map_err(|err| {
        StorageError::new(
            StorageErrorKind::Io,
            format!("cannot {what} {}: the blocking task failed ({err})", path.display()),
        )
    })
}

/// Opens `path` for reading and checks that it is a regular file; returns it
/// with its size.
///
/// The open is non-blocking so that a FIFO (or a device that waits for a
/// peer) among the frames is refused instead of hanging a thread; once the
/// file is known to be regular the flag is cleared again.
fn open_regular(path: &Path, direct: bool) -> Result<(File, u64), StorageError> {
    let mode = if direct { OFlags::DIRECT } else { OFlags::empty() };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((mode | OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(|err| open_error(&err, path, direct))?;
    let metadata = file.metadata().map_err(|err| StorageError::from_io(&err, "stat", path))?;
    if !metadata.is_file() {
        return Err(not_a_file(path, metadata.file_type()));
    }
    rustix::fs::fcntl_setfl(&file, mode).map_err(|errno| {
        StorageError::new(
            StorageErrorKind::Io,
            format!("cannot set the file flags of {}: {errno}", path.display()),
        )
    })?;
    Ok((file, metadata.len()))
}

/// Maps a failed open, telling an unsupported O_DIRECT apart from other errors.
fn open_error(err: &io::Error, path: &Path, direct: bool) -> StorageError {
    if direct && Errno::from_io_error(err) == Some(Errno::INVAL) {
        // Linux answers EINVAL to O_DIRECT on a filesystem without direct I/O
        // (tmpfs before 6.6, some FUSE filesystems). A directory is reported
        // as such rather than blamed on the filesystem.
        if let Ok(metadata) = std::fs::metadata(path) {
            if !metadata.is_file() {
                return not_a_file(path, metadata.file_type());
            }
        }
        return StorageError::new(
            StorageErrorKind::Invalid,
            format!("cannot open {}: O_DIRECT is not supported on its filesystem ({err})", path.display()),
        );
    }
    StorageError::from_io(err, "open", path)
}

fn not_a_file(path: &Path, file_type: std::fs::FileType) -> StorageError {
    use std::os::unix::fs::FileTypeExt;
    let kind = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a fifo"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    StorageError::new(
        StorageErrorKind::NotAFile,
        format!("cannot open {}: it is {kind}, not a regular file", path.display()),
    )
}

/// The blocking part of a read: `pread`s of at most `block_size` bytes until
/// the plan is done or the file ends (a short read means the end).
fn read_blocks(file: &File, mut buf: IoBuf, plan: ReadPlan, block_size: usize) -> ReadDone {
    let cpu_start = thread_cpu_ns();
    let mut n_reads = 0u64;
    let result = read_into(file, &mut buf, plan, block_size, &mut n_reads);
    buf.truncate(*result.as_ref().unwrap_or(&0));
    let cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
    ReadDone { buf, result, n_reads, cpu_ns }
}

fn read_into(
    file: &File,
    buf: &mut IoBuf,
    plan: ReadPlan,
    block_size: usize,
    n_reads: &mut u64,
) -> Result<usize, (io::Error, u64)> {
    buf.prepare(plan.total);
    // The whole aligned capacity: with O_DIRECT the last request may be longer
    // than the data the caller wants.
    let space = buf.spare_mut();
    let mut done = 0usize;
    while done < plan.total {
        let at = plan.start + done as u64;
        let chunk = block_size.min(plan.total - done);
        let Some(dst) = space.get_mut(done..done + chunk) else {
            return Err((io::Error::other("the read buffer is shorter than the request"), at));
        };
        match file.read_at(dst, at) {
            Ok(n) => {
                *n_reads += 1;
                done += n;
                if n < chunk {
                    break;
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err((err, at)),
        }
    }
    Ok(deliver(space, &plan, done))
}

/// Drops the cached pages of one file; the error names the path.
fn drop_file_cache(path: &Path) -> Result<(), String> {
    let (file, _) = open_regular(path, false).map_err(|err| err.message)?;
    rustix::fs::fadvise(&file, 0, None, Advice::DontNeed)
        .map_err(|errno| format!("cannot drop the cached pages of {}: {errno}", path.display()))
}

#[cfg(all(test, feature = "io-uring"))]
mod uring_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{pattern, write_file};

    fn storage(block_size: usize) -> LocalStorage {
        LocalStorage::builder().block_size(block_size).build().expect("valid options")
    }

    /// The error of opening `path`, which must fail.
    async fn open_error(storage: &impl Storage, path: &Path, what: &str) -> StorageError {
        match storage.open(path).await {
            Ok(_) => panic!("opened {what} {}", path.display()),
            Err(err) => err,
        }
    }

    #[tokio::test]
    async fn reads_whole_file_in_several_block_sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = pattern(100_000);
        let path = write_file(dir.path(), "frame.0001.dpx", &data);
        // 100_000 is divided by 1000 and by 100_000, not by 4096, 65536 or 1 MiB.
        for block_size in [1000, 4096, 65_536, 100_000, 1 << 20] {
            let storage = storage(block_size);
            let file = storage.open(&path).await.expect("open");
            assert_eq!(file.size(), 100_000);
            let mut buf = IoBuf::default();
            let n = file.read_at(0, data.len(), &mut buf).await.expect("read");
            assert_eq!(n, data.len(), "block size {block_size}");
            assert_eq!(&buf[..], &data[..], "block size {block_size}");
            assert_eq!(storage.stats().n_reads, data.len().div_ceil(block_size) as u64);
            file.close().await.expect("close");
        }
    }

    #[tokio::test]
    async fn len_past_the_end_is_a_short_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = pattern(10_000);
        let path = write_file(dir.path(), "short", &data);
        let storage = storage(4096);
        let file = storage.open(&path).await.expect("open");
        let mut buf = IoBuf::default();
        assert_eq!(file.read_at(0, 1 << 30, &mut buf).await.expect("read"), 10_000);
        assert_eq!(&buf[..], &data[..]);
        assert_eq!(file.read_at(9_000, 5_000, &mut buf).await.expect("read"), 1_000);
        assert_eq!(&buf[..], &data[9_000..]);
        assert_eq!(file.read_at(10_000, 10, &mut buf).await.expect("read"), 0);
        assert!(buf.is_empty());
        assert_eq!(file.read_at(u64::MAX, usize::MAX, &mut buf).await.expect("read"), 0);
    }

    #[tokio::test]
    async fn reads_a_range_at_an_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = pattern(50_000);
        let path = write_file(dir.path(), "video.mov", &data);
        let storage = storage(4096);
        let file = storage.open(&path).await.expect("open");
        let mut buf = IoBuf::default();
        let n = file.read_at(12_345, 20_000, &mut buf).await.expect("read");
        assert_eq!(n, 20_000);
        assert_eq!(&buf[..], &data[12_345..32_345]);
        // Five requests: 4 full blocks and a last one of 3,616 bytes.
        assert_eq!(storage.stats(), StorageStats { n_reads: 5, bytes: 20_000, ..storage.stats() });
    }

    #[tokio::test]
    async fn stats_count_reads_and_bytes_across_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = write_file(dir.path(), "a", &pattern(10_000));
        let b = write_file(dir.path(), "b", &pattern(3_000));
        let storage = storage(4096);
        let mut buf = IoBuf::with_capacity(4096);
        for path in [&a, &b] {
            let file = storage.open(path).await.expect("open");
            file.read_at(0, 10_000, &mut buf).await.expect("read");
            file.close().await.expect("close");
        }
        let stats = storage.stats();
        // 3 requests for a, 1 for b.
        assert_eq!((stats.n_reads, stats.bytes), (4, 13_000));
    }

    #[tokio::test]
    async fn directory_is_not_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = open_error(&storage(4096), dir.path(), "a directory").await;
        assert_eq!(err.kind, StorageErrorKind::NotAFile);
        assert!(err.message.contains(&dir.path().display().to_string()), "{}", err.message);
        assert!(err.message.contains("directory"), "{}", err.message);
    }

    #[tokio::test]
    async fn missing_file_is_not_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("frame.9999.dpx");
        let err = open_error(&storage(4096), &path, "missing").await;
        assert_eq!(err.kind, StorageErrorKind::NotFound);
        assert!(err.message.contains("frame.9999.dpx"), "{}", err.message);
    }

    #[test]
    fn open_outside_a_runtime_is_an_error() {
        struct NoopWaker;
        impl std::task::Wake for NoopWaker {
            fn wake(self: Arc<Self>) {}
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_file(dir.path(), "f", b"x");
        let storage = storage(4096);
        // Polled by hand, with no tokio runtime around.
        let mut future = storage.open(&path);
        let waker = std::task::Waker::from(Arc::new(NoopWaker));
        let mut cx = std::task::Context::from_waker(&waker);
        match future.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(Err(err)) => assert!(err.message.contains("tokio runtime"), "{err}"),
            std::task::Poll::Ready(Ok(_)) => panic!("opened without a runtime"),
            std::task::Poll::Pending => panic!("pending without a runtime"),
        }
    }

    #[tokio::test]
    async fn refused_o_direct_is_an_invalid_error() {
        // procfs has no direct I/O and answers EINVAL, as tmpfs did before Linux 6.6.
        let path = Path::new("/proc/version");
        assert!(path.is_file(), "this test needs Linux procfs");
        let storage = LocalStorage::builder().direct(true).build().expect("options");
        let err = open_error(&storage, path, "with O_DIRECT").await;
        assert_eq!(err.kind, StorageErrorKind::Invalid, "{err}");
        assert!(err.message.contains("O_DIRECT is not supported"), "{err}");
        assert!(err.message.contains("/proc/version"), "{err}");
    }

    #[test]
    fn options_are_validated() {
        assert!(LocalStorage::builder().block_size(0).build().is_err());
        let err = LocalStorage::builder().block_size(1000).direct(true).build().expect_err("unaligned");
        assert!(err.to_string().contains("1000"), "{err}");
        let storage = LocalStorage::builder().block_size(8192).direct(true).build().expect("aligned");
        let info = storage.info();
        assert_eq!((info.transport.as_str(), info.block_size, info.direct), ("local", 8192, true));
    }

    #[test]
    fn drop_cache_counts_files_and_reports_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths: Vec<PathBuf> =
            (0..3).map(|i| write_file(dir.path(), &format!("f.{i:04}.dpx"), &pattern(5_000))).collect();
        let storage = storage(4096);
        assert_eq!(storage.drop_cache(&paths), ColdOutcome { files_dropped: 3, message: None });

        let mut with_missing = paths.clone();
        with_missing.push(dir.path().join("gone.dpx"));
        with_missing.push(dir.path().to_path_buf());
        let outcome = storage.drop_cache(&with_missing);
        assert_eq!(outcome.files_dropped, 3);
        let message = outcome.message.expect("a message");
        assert!(message.contains("2 of 5"), "{message}");
        assert!(message.contains("gone.dpx"), "{message}");
    }

    #[test]
    fn info_carries_the_mount_label() {
        let storage = storage(4096);
        assert_eq!(storage.info().mount, None);
        let storage = storage.label_mount_of(Path::new("/no/such/dir/shot.%07d.dpx"));
        let mount = storage.info().mount.expect("/ is on some mount");
        assert_eq!(mount.mount_point, "/");
        assert!(!mount.transport.is_empty() && !mount.fstype.is_empty());

        let text =
            "45 27 0:42 / /mnt/fast rw - nfs4 192.168.1.10:/export rw,vers=4.2,hard,proto=rdma,port=20049";
        let mounts = crate::mountinfo::parse_mountinfo(text);
        let label = crate::mountinfo::find_mount(&mounts, Path::new("/mnt/fast/a")).map(|m| m.to_label());
        let info = LocalStorage::builder().build().expect("options").with_mount(label).info();
        assert_eq!(info.transport, "local");
        let mount = info.mount.expect("labelled");
        assert_eq!(mount.transport, "nfs over rdma");
        assert_eq!(mount.options[..2], [("vers".into(), "4.2".into()), ("proto".into(), "rdma".into())]);
    }

    /// Without the `io-uring` feature, io_uring asked for reads with pread and says why, as
    /// on a kernel without io_uring, naming the feature.
    #[cfg(not(feature = "io-uring"))]
    #[tokio::test]
    async fn without_the_feature_io_uring_falls_back_to_pread_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = pattern(10_000);
        let path = write_file(dir.path(), "f.dpx", &data);
        let options = LocalOptions { io_engine: IoEngine::IoUring, ..LocalOptions::default() };
        let storage = LocalStorage::new(options).expect("options");
        assert_eq!(storage.io_engine(), IoEngine::Pread);
        let warnings = storage.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].kind, "io_uring_unavailable");
        assert!(warnings[0].message.contains("cargo feature `io-uring`"), "{warnings:?}");
        let info = storage.info();
        assert_eq!(info.warnings, warnings);
        let why = info.options.iter().find(|(key, _)| key == "io_uring").map(|(_, value)| value.as_str());
        assert!(why.is_some_and(|why| why.starts_with("not available: ")), "{:?}", info.options);
        let file = storage.open(&path).await.expect("open");
        let mut buf = IoBuf::default();
        assert_eq!(file.read_at(0, data.len(), &mut buf).await.expect("read"), data.len());
        assert!(buf[..] == data[..]);
    }
}
