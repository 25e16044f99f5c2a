//! Reads every file of one NFS directory through playsim's own client, as fast as it can, for
//! `cargo xtask bench`, which runs it against `benches/anchors/libnfs_read.c` on the same files.
//!
//! ```text
//! nfs_read NFS_URL READ_SIZE IN_FLIGHT NCONNECT
//!   e.g. nfs_read 'nfs://127.0.0.1/srv/export/seq/?mountport=20048&nfsport=2049' 1048576 8 4
//! ```
//!
//! `NFS_URL` names the directory (a server path, export included). Prints one JSON line:
//! `{"bytes":..,"wall_s":..,"user_s":..,"sys_s":..,"n_reads":..,"n_files":..,"fingerprint":".."}`,
//! the figures of the libnfs program, measured the same way: from after the connect (libnfs's
//! mount) to the end, so covering the listing, the opens and the reads.
//!
//! "The same job" is matched READ for READ: `IN_FLIGHT` tasks each take the next `READ_SIZE`
//! chunk (files in name order, each from start to end) and read it with one `read_at`, which with
//! `rsize = READ_SIZE` is exactly one READ; so there are `IN_FLIGHT` READs of `READ_SIZE` in flight,
//! as libnfs has. Playback itself reads a frame with one `read_at(0, frame_size)`, which the client
//! splits into a READ per `rsize` all in flight at once (about 34 for a 4K DPX frame); matching
//! libnfs call for call instead keeps the comparison about the client, not about how many READs
//! each side chose to send. The READs are spread over `NCONNECT` connections in turn; libnfs has
//! one.
//!
//! The tasks run on tokio's multi-threaded runtime with its default thread count, as
//! `playsim play` runs them. The data is checked as libnfs_read checks it: every read returns the
//! bytes asked for, the total is the sum of the listed sizes, and the fingerprint (the same sum
//! over chunks, see `chunk_fingerprint`) is compared by the xtask with the local files'.
//!
//! Run with no arguments (as `cargo bench` does for every bench), it says so and does nothing.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use playsim_core::{EntryKind, IoBuf, Storage, StorageFile};
use playsim_engine::probe::ProcessCpu;
use playsim_storage::nfs::{NfsOptions, NfsStorage, NfsUrl};

/// What to read and how.
struct Job {
    url: NfsUrl,
    read_size: usize,
    in_flight: usize,
    nconnect: u32,
}

/// One READ's worth of a file: `len` bytes at `offset` of the `file_idx`-th file in name order.
#[derive(Clone, Copy)]
struct Chunk {
    file_idx: usize,
    offset: u64,
    len: usize,
}

/// What the tasks add up as they go.
#[derive(Default)]
struct Totals {
    bytes: AtomicU64,
    fingerprint: AtomicU64,
}

fn main() {
    // cargo bench adds `--bench` to the arguments after `--`.
    let args: Vec<String> = std::env::args().skip(1).filter(|arg| arg != "--bench").collect();
    if args.is_empty() {
        println!("nfs_read: no NFS_URL given; `cargo xtask bench` runs this against libnfs");
        return;
    }
    if let Err(err) = parse_args(&args).and_then(run) {
        eprintln!("nfs_read: {err:#}");
        std::process::exit(1);
    }
}

fn parse_args(args: &[String]) -> Result<Job> {
    let [url, read_size, in_flight, nconnect] = args else {
        bail!("usage: nfs_read NFS_URL READ_SIZE IN_FLIGHT NCONNECT (got {} arguments)", args.len());
    };
    let number = |text: &str, what: &str| -> Result<usize> {
        match text.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => bail!("{what} `{text}` is not a positive whole number"),
        }
    };
    Ok(Job {
        url: NfsUrl::parse(url)?,
        read_size: number(read_size, "READ_SIZE")?,
        in_flight: number(in_flight, "IN_FLIGHT")?,
        nconnect: u32::try_from(number(nconnect, "NCONNECT")?).context("NCONNECT is too large")?,
    })
}

fn run(job: Job) -> Result<()> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    runtime.block_on(read_all(job))
}

async fn read_all(job: Job) -> Result<()> {
    let options = NfsOptions {
        nconnect: job.nconnect,
        rsize: job.read_size,
        // Never the limit: the tasks have no more than IN_FLIGHT READs out in all.
        in_flight: u32::try_from(job.in_flight).context("IN_FLIGHT is too large")?,
        ..NfsOptions::default()
    };
    let storage = NfsStorage::connect(&job.url, &options).await?;
    if storage.rsize() != job.read_size {
        bail!("READ_SIZE {} is over the server's largest READ, {}", job.read_size, storage.rsize());
    }
    let cpu_before = ProcessCpu::now();
    let started = Instant::now();

    let dir = job.url.path().trim_end_matches('/');
    let mut listed = storage.list_dir(Path::new(dir)).await?;
    listed.retain(|entry| entry.kind == EntryKind::File);
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    ensure!(!listed.is_empty(), "{dir} holds no files");
    let mut files = Vec::with_capacity(listed.len());
    for entry in &listed {
        files.push(storage.open(Path::new(&format!("{dir}/{}", entry.name))).await?);
    }
    let files: Arc<Vec<Box<dyn StorageFile>>> = Arc::new(files);
    let expected: u64 = files.iter().map(|file| file.size()).sum();
    let chunks: Arc<[Chunk]> = chunks(&files, job.read_size).into();

    let next = Arc::new(AtomicUsize::new(0));
    let totals = Arc::new(Totals::default());
    let read_size = job.read_size;
    let mut tasks = Vec::with_capacity(job.in_flight);
    for _ in 0..job.in_flight {
        let (files, chunks, next, totals) = (files.clone(), chunks.clone(), next.clone(), totals.clone());
        tasks.push(tokio::spawn(async move {
            let mut buf = IoBuf::with_capacity(read_size);
            while let Some(&chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                let n = files[chunk.file_idx].read_at(chunk.offset, chunk.len, &mut buf).await?;
                ensure!(n == chunk.len, "read {n} bytes of {} at offset {}", chunk.len, chunk.offset);
                let fingerprint = chunk_fingerprint(chunk.file_idx, chunk.offset, &buf[..n]);
                totals.fingerprint.fetch_add(fingerprint, Ordering::Relaxed);
                totals.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await.context("a read task panicked")??;
    }
    let files = Arc::try_unwrap(files).map_err(|_| anyhow::anyhow!("a read task still holds the files"))?;
    for file in files {
        file.close().await?;
    }

    let wall_s = started.elapsed().as_secs_f64();
    let cpu = ProcessCpu::now().since(&cpu_before);
    let bytes = totals.bytes.load(Ordering::Relaxed);
    ensure!(bytes == expected, "read {bytes} bytes, but the {} files hold {expected}", listed.len());
    let line = serde_json::json!({
        "bytes": bytes,
        "wall_s": wall_s,
        "user_s": cpu.user.as_secs_f64(),
        "sys_s": cpu.sys.as_secs_f64(),
        "n_reads": storage.stats().n_reads,
        "n_files": listed.len(),
        "fingerprint": format!("{:016x}", totals.fingerprint.load(Ordering::Relaxed)),
        "nconnect": job.nconnect,
        "reconnects": storage.reconnects(),
    });
    println!("{line}");
    Ok(())
}

/// Every file cut into `read_size` chunks, files in order, each from start to end.
fn chunks(files: &[Box<dyn StorageFile>], read_size: usize) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for (file_idx, file) in files.iter().enumerate() {
        let mut offset = 0;
        while offset < file.size() {
            let len = (file.size() - offset).min(read_size as u64) as usize;
            chunks.push(Chunk { file_idx, offset, len });
            offset += len as u64;
        }
    }
    chunks
}

/// The fingerprint of one chunk, as libnfs_read.c and the xtask compute it: its first and last 8
/// bytes (little-endian, fewer for a chunk under 8 bytes), mixed with where it lies. A run's
/// fingerprint is the wrapping sum over its chunks, whatever order they arrive in.
fn chunk_fingerprint(file_idx: usize, offset: u64, data: &[u8]) -> u64 {
    let le64 = |bytes: &[u8]| bytes.iter().take(8).rev().fold(0u64, |v, &b| (v << 8) | u64::from(b));
    let first = le64(data);
    let last = le64(&data[data.len().saturating_sub(8)..]);
    mix64(first ^ offset ^ ((file_idx as u64) << 48)) ^ mix64(last.wrapping_add(data.len() as u64))
}

/// splitmix64's finaliser.
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
