//! `playsim record`'s arguments, with their parsers.

use std::path::PathBuf;

use clap::Args;
use playsim_core::{FramePreset, FrameRate};
use playsim_engine::record::{OnError, SyncPolicy};
use playsim_report::record::RecordCapacityBy;
use playsim_settings::{parse, TransportKnobs};

/// `playsim record`'s arguments.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
    playsim record /tmp/capture --fps 24 --frames 240 --preset 2k          10-bit DPX, 10 s at 24 fps\n  \
    playsim record /tmp/render --format exr --compression piz --fps 24     PIZ EXR render-out\n  \
    playsim record /tmp/capture --fps 60 -q 2 --sync frame --json r.json  sync every frame\n\n\
    Frame k arrives k/FPS after the start, from the generator (a moving picture with k in it).\n\
    It is encoded on --encoders threads and written by --writers, under .NAME.partial, then\n\
    renamed. A frame that arrives while -q frames are queued is dropped, and charged to the\n\
    stage of the oldest queued frame: encode (waiting for or in the encoder) or storage.")]
pub struct RecordArgs {
    /// The directory to record into: a local path (made if missing), or an nfs:// or smb:// URL
    /// of an existing directory, written by playsim's own NFS or SMB client; it must be empty,
    /// unless --force.
    pub dest: PathBuf,
    /// Frame rate: 24, 23.976, 25, 29.97, 59.94, 60000/1001, or max (as fast as the queue takes
    /// frames; nothing is dropped).
    #[arg(long, default_value = "24", value_parser = parse_rate)]
    pub fps: Rate,
    /// Frames to record [default: 10 seconds' worth at --fps, 240 with max].
    #[arg(long, value_parser = parse::positive, allow_hyphen_values = true)]
    pub frames: Option<u64>,
    /// File format: any format playsim can write (dpx, exr, tiff; prores, one fragmented MOV
    /// holding every frame, NAME.mov).
    #[arg(long, default_value = "dpx", value_parser = crate::play::parse_generate_format)]
    pub format: &'static str,
    /// Frame size: hd, uhd, 2k, 4k, 2k-dci, 4k-dci, 6k, 8k-dci, 8k-uhd or WxH.
    #[arg(long, default_value = "2k-dci", value_parser = parse::preset)]
    pub preset: FramePreset,
    /// EXR compression: none, rle, zips, zip, piz, pxr24, b44 or b44a [default: piz].
    #[arg(long, value_parser = crate::play::parse_compression)]
    pub compression: Option<String>,
    /// ProRes profile: proxy, lt, standard or hq [default: hq].
    #[arg(long)]
    pub profile: Option<String>,
    /// ProRes through FFmpeg's prores_ks (rate-controlled to Apple's sizes) or prores_aw (about
    /// 8 times faster, frames up to twice the size) [default: prores_ks].
    #[arg(long)]
    pub ffmpeg_encoder: Option<String>,
    /// Bits per sample: DPX 8, 10 or 16 [default: 10]; TIFF 8 or 16 [default: 16].
    #[arg(long, value_parser = parse::bit_depth, allow_hyphen_values = true)]
    pub bit_depth: Option<u8>,
    /// Byte order [default: big for DPX, little for TIFF].
    #[arg(long, value_enum)]
    pub endian: Option<crate::play::EndianArg>,
    /// Write RGBA instead of RGB (DPX; EXR is always RGBA).
    #[arg(long)]
    pub alpha: bool,
    /// File name stem: files are NAME.%07d.EXT.
    #[arg(long, default_value = "frame")]
    pub name: String,
    /// The most frames queued (arrived, not yet written), frametest's -q.
    #[arg(short = 'q', long = "queue", default_value_t = 4, value_parser = parse_slots)]
    pub queue: u32,
    /// Frames encoded at once: the encode pool's threads [default: the cores].
    #[arg(long, value_parser = parse_slots)]
    pub encoders: Option<u32>,
    /// Frames written at once.
    #[arg(long, default_value_t = 2, value_parser = parse_slots)]
    pub writers: u32,
    /// When data must be durable: none (the page cache decides), frame (each frame before it
    /// is renamed into place) or end (once, after the last frame).
    #[arg(long, default_value = "none", value_parser = parse_sync)]
    pub sync: SyncPolicy,
    /// What a failed write does: stop the run (as capture software does) or continue.
    #[arg(long, default_value = "stop", value_parser = parse_on_error)]
    pub on_error: OnError,
    /// Write into a destination that already holds files.
    #[arg(long)]
    pub force: bool,
    /// Write with O_DIRECT, bypassing the page cache. A DPX's size is rarely a multiple of
    /// 4096: its last block is written padded with zeros, and the file cut back to its size.
    /// Either engine (--io-engine) writes through an aligned copy of the frame.
    #[arg(long)]
    pub direct: bool,
    /// How local files are written: pread (pwrite, one frame's write on a blocking thread,
    /// the name shared with play's reads) or io_uring (a frame cut into 1 MiB writes, all in
    /// flight at once on one ring thread; syncs as IORING_OP_FSYNC). io_uring falls back to
    /// pwrite, saying why, where it cannot be set up; the summary's storage line names the
    /// engine used. nfs:// and smb:// destinations ignore it.
    #[arg(long = "io-engine", default_value = "pread", value_parser = parse::io_engine)]
    pub io_engine: playsim_storage::IoEngine,
    /// Reserve each frame's space before writing it (fallocate; over smb://, SET_INFO
    /// FileAllocationInformation), as capture software does, so that a full disk fails the
    /// frame at once. NFSv3 cannot: there it does nothing.
    #[arg(long)]
    pub preallocate: bool,
    /// Frames from this sequence or video (a local path or a URL: nfs://, smb://, ...), read
    /// and decoded ahead of the clock, instead of the generator: an ingest (DPX to DPX) or a
    /// transcode (DPX or H.264 to ProRes; long-GOP video is decoded in order). A frame not
    /// decoded when due is an input drop. With --streams, each stream reads it on its own.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<PathBuf>,
    /// Encode every frame (on), or write frame 0's bytes for every frame, encoded once before
    /// the run (off): the storage's side alone, as frametest's blank frames.
    #[arg(long, default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub encode: bool,
    /// Streams recorded at once, each at --fps into DEST/stream-NN, through one encode pool of
    /// --encoders threads.
    #[arg(long, default_value_t = 1, value_parser = parse_slots)]
    pub streams: u32,
    /// Search this machine's capacity instead of one run: the most streams at --fps
    /// (streams), or the highest rate of one stream (fps), that record with no frame dropped
    /// or failed. Trials record into DEST/capacity-trial, removed after each.
    #[arg(long, value_parser = parse_capacity_by)]
    pub capacity: Option<RecordCapacityBy>,
    /// Recording time of each capacity trial.
    #[arg(long, default_value = "10s", value_parser = playsim_settings::units::parse_duration, allow_hyphen_values = true)]
    pub window: std::time::Duration,
    /// Capacity trials a candidate must pass.
    #[arg(long, default_value_t = 2, value_parser = parse::count, allow_hyphen_values = true)]
    pub trials: u32,
    /// The largest capacity candidate tried.
    #[arg(long, default_value_t = 64, value_parser = parse::count, allow_hyphen_values = true)]
    pub max: u32,
    /// Write the figures as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every frame's times as CSV (stream, position, each stage in ms from the start,
    /// bytes, outcome, cause, error).
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Draw the run as an SVG or a PNG, by the file's extension (rec.svg, rec.png): each
    /// frame's time through queue wait, encode, write and sync, the frame period, drops and
    /// failures marked by cause, and a latency histogram per stage; with --streams, the stream
    /// that dropped the most. A PNG's text needs a font (Debian: fonts-dejavu-core). Not with
    /// --capacity.
    #[arg(long, value_name = "FILE", value_parser = playsim_report::plot::parse_path)]
    pub plot: Option<PathBuf>,
    /// Write the run as one HTML file that opens anywhere, with no network: the summary, the
    /// plot inline, per-stream figures. Not with --capacity.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Every transport's own knobs, for an nfs:// or smb:// destination (`--nconnect`,
    /// `--smb-credentials`, ...), as `play` has them.
    #[command(flatten)]
    pub transport: TransportKnobs,
}

/// `--fps`: a rate, or `max` (none).
#[derive(Clone, Copy, Debug)]
pub struct Rate(pub Option<FrameRate>);

pub fn parse_rate(s: &str) -> Result<Rate, String> {
    if s.trim().eq_ignore_ascii_case("max") {
        return Ok(Rate(None));
    }
    s.parse::<FrameRate>().map(|r| Rate(Some(r))).map_err(|e| format!("{e} (or max; for example --fps 24)"))
}

pub fn parse_slots(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=playsim_engine::record::MAX_RECORD_SLOTS).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}' is not a count from 1 to {} (for example 4)",
            playsim_engine::record::MAX_RECORD_SLOTS
        )),
    }
}

pub fn parse_sync(s: &str) -> Result<SyncPolicy, String> {
    match s.trim() {
        "none" => Ok(SyncPolicy::None),
        "frame" => Ok(SyncPolicy::Frame),
        "end" => Ok(SyncPolicy::End),
        _ => Err(format!("'{s}' is not none, frame or end (for example --sync frame)")),
    }
}

pub fn parse_on_error(s: &str) -> Result<OnError, String> {
    match s.trim() {
        "stop" => Ok(OnError::Stop),
        "continue" => Ok(OnError::Continue),
        _ => Err(format!("'{s}' is not stop or continue (for example --on-error continue)")),
    }
}

pub fn parse_capacity_by(s: &str) -> Result<RecordCapacityBy, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "streams" => Ok(RecordCapacityBy::Streams),
        "fps" => Ok(RecordCapacityBy::Fps),
        _ => Err(format!(
            "'{s}' is not what --capacity varies: streams or fps (for example --capacity streams --fps 24)"
        )),
    }
}

pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{s}' is on or off (for example --encode off)")),
    }
}
