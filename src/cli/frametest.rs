//! `playsim frametest`: frametest's command line (`-w 2k -n 2000 -t 20 DIR`, `-r ...`),
//! mapped onto playsim by [`playsim::frametest`]; prints frametest's summary.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use playsim::frametest::{
    header_bytes_of_kb, prepare_frametest, FrameSize, FrametestMode, FrametestRequest, NamePattern,
};
use playsim::report::frametest;
use playsim::report::renderer::{self, Renderers};
use playsim::{FrameRate, PlayOrder};

/// Exit status when Ctrl-C stopped the run; the summary covers the frames done.
const EXIT_INTERRUPTED: u8 = 130;

const EXAMPLE: &str = "for example playsim frametest -w 2k -n 24 -t 2 /tmp/ft";

/// `playsim frametest`'s arguments: frametest's flags, and a few of playsim's.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
    playsim frametest -w 2k -n 200 -t 4 /tmp/ft              write 200 2k frames with 4 threads\n  \
    playsim frametest -r 2k -n 200 -t 4 /tmp/ft              read them as fast as possible\n  \
    playsim frametest -r 2k -n 200 -t 4 -f 24 -q 2 /tmp/ft   read at 24 fps; count dropped frames\n\n\
    Files are DIR/frame000000.dpx, ...: valid 10-bit RGB DPX with the image at offset 65,536.\n\
    A frame falls due k/FPS after the -b preroll is in; one that falls due while -q frames are\n\
    queued (issued, not completed) is dropped, frametest's rule. MB = 10^6 bytes; KB = 1024 bytes.")]
pub struct FrametestArgs {
    /// Write frames of SIZE: sd, hd, 2k or 4k (frametest's 10-bit full-aperture sizes:
    /// 720x480, 1920x1080, 2048x1556, 4096x3112, 4 bytes a pixel, after a 64 KB header),
    /// or a file size in KB as -z.
    #[arg(short = 'w', value_name = "SIZE", num_args = 0..=1)]
    write: Option<Option<String>>,
    /// Read the frames in DIR; with SIZE, every file must have that size.
    #[arg(short = 'r', value_name = "SIZE", num_args = 0..=1)]
    read: Option<Option<String>>,
    /// Frame file size in KB (1024 bytes), header included: -z 12512 is the size of -w 2k.
    #[arg(short = 'z', value_name = "KB", value_parser = parse_kb)]
    size_kb: Option<u64>,
    /// Frames to write, or to read [default for reads: every file in DIR]; with -l, in all.
    #[arg(short = 'n', value_name = "N", value_parser = parse_frames)]
    frames: Option<u64>,
    /// Threads: frame I/Os (open, read or write, close) in flight at once.
    #[arg(short = 't', value_name = "N", default_value_t = 1, value_parser = parse_threads)]
    threads: u32,
    /// Limit the rate: frame k falls due k/FPS after the preroll (24, 23.976, 59.94, 60000/1001)
    /// [default: as fast as possible].
    #[arg(short = 'f', value_name = "FPS", value_parser = parse_fps)]
    fps: Option<FrameRate>,
    /// The most frames queued, issued and not completed; with -f a frame that falls due while
    /// the queue is full is dropped [default: -t].
    #[arg(short = 'q', value_name = "N", value_parser = parse_queue)]
    queue: Option<u32>,
    /// Frames completed before the clock starts (with -f).
    #[arg(short = 'b', value_name = "N", default_value_t = 5, value_parser = parse_preroll)]
    preroll: u32,
    /// Loop over the files until -n frames are done (reads).
    #[arg(short = 'l')]
    loop_files: bool,
    /// Reverse order: the last file first.
    #[arg(short = 'v')]
    reverse: bool,
    /// Random order: a shuffle, the same for the same --seed.
    #[arg(short = 'm')]
    random: bool,
    /// The random order's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write each frame's times as CSV (ms): due, issued, start, open, I/O, close, decode,
    /// done; bytes; transferred, dropped or failed.
    #[arg(short = 'x', value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the summary's figures as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Decode each frame read with the DPX decoder (frametest does not); a frame then
    /// completes, and leaves the queue, when it is decoded.
    #[arg(long)]
    decode: bool,
    /// Decode threads [default: all cores].
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    decode_threads: Option<u32>,
    /// File names, the frame number as %d or %0Nd [default: frame%06d.dpx; reads fall back
    /// to frametest's own frame%06d.tst].
    #[arg(long, value_name = "PATTERN", value_parser = parse_name)]
    name: Option<NamePattern>,
    /// Bytes before the image data, in KB (1024 bytes).
    #[arg(long = "header", value_name = "KB", default_value_t = 64, value_parser = parse_header)]
    header_kb: u64,
    /// Read local files with O_DIRECT, bypassing the page cache.
    #[arg(long)]
    direct: bool,
    /// How local files are read: pread, or io_uring (every block of a frame in flight at
    /// once; falls back to pread, saying why, where io_uring is disabled).
    #[arg(long, value_enum, default_value_t = crate::IoEngineArg::Pread)]
    io_engine: crate::IoEngineArg,
    /// Drop the files from the page cache before reading them.
    #[arg(long)]
    cold: bool,
    /// Flush each written file to the storage before closing it (the flush counts in close).
    #[arg(long)]
    fsync: bool,
    /// Bytes per read request from local files, e.g. 1M, 512K.
    #[arg(long, default_value = "1M", value_parser = playsim::units::parse_bytes)]
    block_size: usize,
    /// TCP connections per reader to the NFS server, for nfs:// directories.
    #[arg(long, default_value_t = 1, value_parser = crate::parse_nconnect)]
    nconnect: u32,
    /// The directory of the frames (reads also take an nfs://host/export/dir URL).
    dir: Option<PathBuf>,
}

/// Runs `playsim frametest`.
pub fn run(args: FrametestArgs) -> anyhow::Result<ExitCode> {
    let (csv, json) = (args.csv.clone(), args.json.clone());
    let request = request_of(args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let prepared = runtime.block_on(prepare_frametest(&request))?;
    let cancel = prepared.canceller();
    let ctrl_c = runtime.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nplaysim: interrupted; finishing the frames in flight");
            cancel.cancel();
        }
    });
    let result = runtime.block_on(prepared.run());
    ctrl_c.abort();
    print!("{}", frametest::summary(&result));
    let mut renderers = Renderers::new();
    frametest::register_frametest_renderers(&mut renderers);
    for (path, format, what) in [(&csv, "csv", "frame times"), (&json, "json", "result")] {
        if let Some(path) = path {
            renderer::write_atomic(renderers.by_name(format)?, &result, path)?;
            eprintln!("playsim: {what} written to {}", path.display());
        }
    }
    Ok(if result.run.failure.is_some() {
        ExitCode::FAILURE
    } else if result.run.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if result.n_failed() > 0 {
        eprintln!("playsim: {} frames failed", result.n_failed());
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The library's request for the flags. `-w`'s and `-r`'s value is optional, so a lone
/// value that is not a size is the directory: `-r /tmp/ft` reads /tmp/ft.
fn request_of(args: FrametestArgs) -> anyhow::Result<FrametestRequest> {
    let header = header_bytes_of_kb(args.header_kb).map_err(anyhow::Error::msg)?;
    let (write, value) = match (args.write, args.read) {
        (Some(value), None) => (true, value),
        (None, Some(value)) => (false, value),
        (None, None) => bail!("give -w SIZE to write frames or -r to read them, {EXAMPLE}"),
        (Some(_), Some(_)) => {
            bail!("give -w to write or -r to read, not both: write first, then read, {EXAMPLE}")
        }
    };
    let (value, dir) = match (value, args.dir) {
        (Some(v), None) if FrameSize::parse(&v, header).is_err() => (None, Some(PathBuf::from(v))),
        (value, dir) => (value, dir),
    };
    let Some(dir) = dir else {
        bail!("give the directory of the frames, {EXAMPLE}");
    };
    let size = match (value, args.size_kb) {
        (Some(text), None) => Some(FrameSize::parse(&text, header).map_err(anyhow::Error::msg)?),
        (None, Some(kb)) => Some(FrameSize::custom_kb(kb, header).map_err(anyhow::Error::msg)?),
        (None, None) => None,
        (Some(text), Some(kb)) => {
            bail!("give the frame size once: -w {text} or -z {kb}, not both (for example -w 2k, or -w -z 12512)")
        }
    };
    let mode = if write {
        let Some(size) = size else {
            bail!("-w needs a frame size: sd, hd, 2k, 4k, or -z KB ({EXAMPLE})");
        };
        FrametestMode::Write { size }
    } else {
        FrametestMode::Read { expect: size }
    };
    let order = match (args.reverse, args.random) {
        (true, true) => {
            bail!("-v (reverse) and -m (random) are two orders: give one, for example -m --seed 3")
        }
        (true, false) => PlayOrder::Reverse,
        (false, true) => PlayOrder::Random { seed: args.seed },
        (false, false) => PlayOrder::Forward,
    };
    let mut request = FrametestRequest::new(mode, dir);
    request.n_frames = args.frames;
    request.threads = args.threads;
    request.rate = args.fps;
    request.queue = args.queue;
    request.preroll = args.preroll;
    request.loop_files = args.loop_files;
    request.order = order;
    request.name = args.name;
    request.decode = args.decode;
    if let Some(threads) = args.decode_threads {
        request.decode_threads = threads;
    }
    request.direct = args.direct;
    request.io_engine = args.io_engine.into();
    request.block_size = args.block_size;
    request.cold = args.cold;
    request.fsync = args.fsync;
    request.nfs.nconnect = args.nconnect;
    Ok(request)
}

fn parse_kb(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a size in KB (for example -z 12512, the size of -w 2k)")),
    }
}

fn parse_frames(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive number of frames (for example -n 2000)")),
    }
}

fn parse_threads(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 1..=4096) => Ok(n),
        _ => Err(format!("'{s}' is not a thread count from 1 to 4096 (for example -t 4)")),
    }
}

fn parse_queue(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive number of frames (for example -q 4)")),
    }
}

fn parse_preroll(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("'{s}' is not a whole number of frames (for example -b 5, or -b 0)"))
}

fn parse_fps(s: &str) -> Result<FrameRate, String> {
    s.parse().map_err(|e: playsim::ParseError| format!("{e}; leave -f out to go as fast as possible"))
}

fn parse_name(s: &str) -> Result<NamePattern, String> {
    s.parse().map_err(|e: frametest::NamePatternError| e.to_string())
}

fn parse_header(s: &str) -> Result<u64, String> {
    let kb = s
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("'{s}' is not a size in KB (for example --header 64)"))?;
    header_bytes_of_kb(kb).map(|_| kb).map_err(|e| e.to_string())
}
