//! `playsim frametest`'s arguments: frametest's flags, and a few of playsim's, with their parsers.

use std::path::PathBuf;

use clap::Args;
use playsim_core::FrameRate;
use playsim_ops::frametest::{header_bytes_of_kb, NamePattern};
use playsim_report::frametest;
use playsim_settings::{parse, Knob, LocalReadKnobs, TransportKnobs};

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
    pub write: Option<Option<String>>,
    /// Read the frames in DIR; with SIZE, every file must have that size.
    #[arg(short = 'r', value_name = "SIZE", num_args = 0..=1)]
    pub read: Option<Option<String>>,
    /// Frame file size in KB (1024 bytes), header included: -z 12512 is the size of -w 2k.
    #[arg(short = 'z', value_name = "KB", value_parser = parse_kb)]
    pub size_kb: Option<u64>,
    /// Frames to write, or to read [default for reads: every file in DIR]; with -l, in all.
    #[arg(short = 'n', value_name = "N", value_parser = parse_frames)]
    pub frames: Option<u64>,
    /// Threads: frame I/Os (open, read or write, close) in flight at once.
    #[arg(short = 't', value_name = "N", default_value_t = 1, value_parser = parse_threads)]
    pub threads: u32,
    /// Limit the rate: frame k falls due k/FPS after the preroll (24, 23.976, 59.94, 60000/1001)
    /// [default: as fast as possible].
    #[arg(short = 'f', value_name = "FPS", value_parser = parse_fps)]
    pub fps: Option<FrameRate>,
    /// The most frames queued, issued and not completed; with -f a frame that falls due while
    /// the queue is full is dropped [default: -t].
    #[arg(short = 'q', value_name = "N", value_parser = parse_queue)]
    pub queue: Option<u32>,
    /// Frames completed before the clock starts (with -f).
    #[arg(short = 'b', value_name = "N", default_value_t = 5, value_parser = parse_preroll)]
    pub preroll: u32,
    /// Loop over the files until -n frames are done (reads).
    #[arg(short = 'l')]
    pub loop_files: bool,
    /// Reverse order: the last file first.
    #[arg(short = 'v')]
    pub reverse: bool,
    /// Random order: a shuffle, the same for the same --seed.
    #[arg(short = 'm')]
    pub random: bool,
    /// The random order's seed: the settings list's knob, its parser and default.
    #[arg(long = Knob::Seed.flag(), value_parser = parse::whole, allow_hyphen_values = true,
          help = Knob::Seed.help())]
    pub seed: Option<u64>,
    /// Write each frame's times as CSV (ms): due, issued, start, open, I/O, close, decode,
    /// done; bytes; transferred, dropped or failed.
    #[arg(short = 'x', value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the summary's figures as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the result as one HTML file that opens anywhere, with no network.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Decode each frame read with the DPX decoder (frametest does not); a frame then
    /// completes, and leaves the queue, when it is decoded.
    #[arg(long)]
    pub decode: bool,
    /// Decode threads: the settings list's knob, its parser and default.
    #[arg(long = Knob::DecodeThreads.flag(), value_name = "N", value_parser = parse::count,
          allow_hyphen_values = true, help = Knob::DecodeThreads.help())]
    pub decode_threads: Option<u32>,
    /// File names, the frame number as %d or %0Nd [default: frame%06d.dpx; reads fall back
    /// to frametest's own frame%06d.tst].
    #[arg(long, value_name = "PATTERN", value_parser = parse_name)]
    pub name: Option<NamePattern>,
    /// Bytes before the image data, in KB (1024 bytes).
    #[arg(long = "header", value_name = "KB", default_value_t = 64, value_parser = parse_header)]
    pub header_kb: u64,
    /// Drop the files from the page cache before reading them.
    #[arg(long)]
    pub cold: bool,
    /// Flush each written file to the storage before closing it (the flush counts in close).
    #[arg(long)]
    pub fsync: bool,
    /// How local files are read (`--direct`, `--io-engine`, `--block-size`): the settings
    /// list's group, as `play` has it; `--direct` and `--io-engine` are for reads.
    #[command(flatten)]
    pub local: LocalReadKnobs,
    /// Every transport's own knobs, for nfs:// or smb:// directories (`--nconnect`,
    /// `--smb-credentials`, ...), as `play` has them.
    #[command(flatten)]
    pub transport: TransportKnobs,
    /// The directory of the frames: a local path, or an nfs://host/export/dir or
    /// smb://host/share/dir URL.
    pub dir: Option<PathBuf>,
}

pub fn parse_kb(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a size in KB (for example -z 12512, the size of -w 2k)")),
    }
}

pub fn parse_frames(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive number of frames (for example -n 2000)")),
    }
}

pub fn parse_threads(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 1..=4096) => Ok(n),
        _ => Err(format!("'{s}' is not a thread count from 1 to 4096 (for example -t 4)")),
    }
}

pub fn parse_queue(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive number of frames (for example -q 4)")),
    }
}

pub fn parse_preroll(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("'{s}' is not a whole number of frames (for example -b 5, or -b 0)"))
}

pub fn parse_fps(s: &str) -> Result<FrameRate, String> {
    s.parse().map_err(|e: playsim_core::ParseError| format!("{e}; leave -f out to go as fast as possible"))
}

pub fn parse_name(s: &str) -> Result<NamePattern, String> {
    s.parse().map_err(|e: frametest::NamePatternError| e.to_string())
}

pub fn parse_header(s: &str) -> Result<u64, String> {
    let kb = s
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("'{s}' is not a size in KB (for example --header 64)"))?;
    header_bytes_of_kb(kb).map(|_| kb).map_err(|e| e.to_string())
}
