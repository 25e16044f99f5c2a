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
use playsim::settings::{parse, Knob, LocalReadKnobs, Settings, TransportKnobs};
use playsim::{FrameRate, PlayOrder};

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
    /// The random order's seed: the settings list's knob, its parser and default.
    #[arg(long = Knob::Seed.flag(), value_parser = parse::whole, allow_hyphen_values = true,
          help = Knob::Seed.help())]
    seed: Option<u64>,
    /// Write each frame's times as CSV (ms): due, issued, start, open, I/O, close, decode,
    /// done; bytes; transferred, dropped or failed.
    #[arg(short = 'x', value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the summary's figures as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the result as one HTML file that opens anywhere, with no network.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Decode each frame read with the DPX decoder (frametest does not); a frame then
    /// completes, and leaves the queue, when it is decoded.
    #[arg(long)]
    decode: bool,
    /// Decode threads: the settings list's knob, its parser and default.
    #[arg(long = Knob::DecodeThreads.flag(), value_name = "N", value_parser = parse::count,
          allow_hyphen_values = true, help = Knob::DecodeThreads.help())]
    decode_threads: Option<u32>,
    /// File names, the frame number as %d or %0Nd [default: frame%06d.dpx; reads fall back
    /// to frametest's own frame%06d.tst].
    #[arg(long, value_name = "PATTERN", value_parser = parse_name)]
    name: Option<NamePattern>,
    /// Bytes before the image data, in KB (1024 bytes).
    #[arg(long = "header", value_name = "KB", default_value_t = 64, value_parser = parse_header)]
    header_kb: u64,
    /// Drop the files from the page cache before reading them.
    #[arg(long)]
    cold: bool,
    /// Flush each written file to the storage before closing it (the flush counts in close).
    #[arg(long)]
    fsync: bool,
    /// How local files are read (`--direct`, `--io-engine`, `--block-size`): the settings
    /// list's group, as `play` has it; `--direct` and `--io-engine` are for reads.
    #[command(flatten)]
    local: LocalReadKnobs,
    /// Every transport's own knobs, for nfs:// or smb:// directories (`--nconnect`,
    /// `--smb-credentials`, ...), as `play` has them.
    #[command(flatten)]
    transport: TransportKnobs,
    /// The directory of the frames: a local path, or an nfs://host/export/dir or
    /// smb://host/share/dir URL.
    dir: Option<PathBuf>,
}

/// Runs `playsim frametest`.
pub fn run(args: FrametestArgs) -> anyhow::Result<ExitCode> {
    let (csv, json, html) = (args.csv.clone(), args.json.clone(), args.html.clone());
    let outputs = [("-x", &csv), ("--json", &json), ("--html", &html)];
    if let Some(code) = super::refuse_unwritable_outputs(
        outputs.into_iter().filter_map(|(flag, path)| Some((flag, path.as_deref()?))),
    ) {
        return Ok(code);
    }
    let request = request_of(args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let prepared = runtime.block_on(prepare_frametest(&request))?;
    let cancel = prepared.canceller();
    let ctrl_c = runtime.spawn(async move {
        if let Some(why) = super::StopSignals::new().next().await {
            eprintln!("\nplaysim: {why}; finishing the frames in flight");
            cancel.cancel();
        }
    });
    let result = runtime.block_on(prepared.run());
    ctrl_c.abort();
    print!("{}", frametest::summary(&result));
    let mut renderers = Renderers::new();
    frametest::register_frametest_renderers(&mut renderers);
    for (path, format, what) in
        [(&csv, "csv", "frame times"), (&json, "json", "result"), (&html, "html", "result as HTML")]
    {
        if let Some(path) = path {
            renderer::write_atomic(renderers.by_name(format)?, &result, path)?;
            eprintln!("playsim: {what} written to {}", path.display());
        }
    }
    Ok(if result.run.failure.is_some() {
        ExitCode::FAILURE
    } else if result.run.interrupted {
        ExitCode::from(crate::EXIT_INTERRUPTED)
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
        refuse_more_than_memory(&size, args.threads)?;
        FrametestMode::Write { size }
    } else {
        FrametestMode::Read { expect: size }
    };
    let mut settings =
        Settings { seed: args.seed, decode_threads: args.decode_threads, ..Settings::default() };
    args.local.apply(&mut settings);
    args.transport.apply(&mut settings);
    let order = match (args.reverse, args.random) {
        (true, true) => {
            bail!("-v (reverse) and -m (random) are two orders: give one, for example -m --seed 3")
        }
        (true, false) => PlayOrder::Reverse,
        (false, true) => PlayOrder::Random { seed: settings.seed() },
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
    request.decode_threads = settings.decode_threads();
    request.direct = settings.direct();
    request.io_engine = settings.io_engine();
    request.block_size = settings.block_size();
    request.cold = args.cold;
    request.fsync = args.fsync;
    request.transport = settings.transport_options();
    Ok(request)
}

/// Refuses a write whose frames in flight (one per thread, each held whole in memory) need
/// more memory than the machine has available, naming both and what to lower.
fn refuse_more_than_memory(size: &playsim::report::frametest::FrameSize, threads: u32) -> anyhow::Result<()> {
    let Some(available) = playsim::engine::probe::meminfo_bytes("MemAvailable") else { return Ok(()) };
    let need = size.file_bytes.saturating_mul(u64::from(threads));
    if need > available {
        bail!(
            "-t {threads} frames of {} MB in flight need {} MB, more than the {} MB this machine has \
             available: lower -t or the frame size (for example -t 4 -w 4k)",
            size.file_bytes >> 20,
            need >> 20,
            available >> 20
        );
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;
    use playsim::storage::nfs::NfsOptions;
    use playsim::storage::IoEngine;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: FrametestArgs,
    }

    fn request(flags: &[&str]) -> FrametestRequest {
        playsim::transports();
        let cli = Cli::try_parse_from(["frametest"].iter().chain(flags)).unwrap_or_else(|e| panic!("{e}"));
        request_of(cli.args).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_shared_knobs_come_from_the_settings_list() {
        let r = request(&[
            "-r",
            "-m",
            "--seed",
            "7",
            "--decode-threads",
            "3",
            "--direct",
            "--io-engine",
            "io-uring",
            "--block-size",
            "512K",
            "--nconnect",
            "4",
            "--rsize",
            "256K",
            "--nfs-timeout",
            "5s",
            "nfs://host/export/ft",
        ]);
        assert_eq!(r.order, PlayOrder::Random { seed: 7 });
        assert_eq!(
            (r.decode_threads, r.direct, r.io_engine, r.block_size),
            (3, true, IoEngine::IoUring, 512 << 10)
        );
        let nfs = r.transport.get::<NfsOptions>();
        assert_eq!((nfs.nconnect, nfs.rsize, nfs.timeout), (4, 256 << 10, Duration::from_secs(5)));
    }

    #[test]
    fn the_shared_knobs_default_as_play_does() {
        let (r, play) = (request(&["-r", "-m", "/tmp/ft"]), Settings::default());
        assert_eq!(r.order, PlayOrder::Random { seed: play.seed() });
        assert_eq!(
            (r.decode_threads, r.direct, r.io_engine),
            (play.decode_threads(), false, play.io_engine())
        );
        let nfs = play.transport_options().get::<NfsOptions>();
        assert_eq!(r.block_size, play.block_size());
        let r_nfs = r.transport.get::<NfsOptions>();
        assert_eq!((r_nfs.nconnect, r_nfs.rsize, r_nfs.timeout), (nfs.nconnect, nfs.rsize, nfs.timeout));
    }
}
