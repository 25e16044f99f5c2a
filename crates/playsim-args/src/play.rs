//! The `play`-side commands' arguments: `play`, `capacity`, `compare`, `decode` and `generate`,
//! each a clap struct whose flags are also documented in `--help`, with the value parsers they
//! use.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use playsim_core::FramePreset;
use playsim_report::renderer;
use playsim_report::Report;
use playsim_settings::{parse, units, DecoderKnobs, LocalReadKnobs, PlayKnobs, Settings, TransportKnobs};

#[derive(Args)]
pub struct CapacityArgs {
    /// What to vary: streams of the sources at --fps, the frame rate of one stream each, or
    /// (under mpirun) the clients playing the sources, each at --fps and --streams.
    #[arg(long, value_enum, default_value_t = ByArg::Streams)]
    pub by: ByArg,
    /// Playback time of each trial (10 s or more for an answer that means something).
    #[arg(long, default_value = "10s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub window: Duration,
    /// Trials per candidate: it passes only when every one has no drop.
    #[arg(long, default_value_t = 2, value_parser = parse::count, allow_hyphen_values = true)]
    pub trials: u32,
    /// The largest candidate tried.
    #[arg(long, default_value_t = 64, value_parser = parse::count, allow_hyphen_values = true)]
    pub max: u32,
    /// The run to scale (--frames, --duration and --loop are set by the search; --json writes
    /// the search's result: every trial, the answer, the limit and the margin).
    #[command(flatten)]
    pub play: PlayArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    /// More streams of the sources.
    Streams,
    /// A higher frame rate.
    Fps,
    /// More clients, under mpirun (the ranks beyond the candidate sit idle).
    Clients,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Two or more reports, the first being the baseline: all written by `play --json`, or all
    /// by `record --json` (compared on record's figures: fps, drops by cause, failures, MB/s
    /// written, p99 per write-side stage, CPU s per GB written). A mix is refused.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Also draw the runs side by side, as an SVG or a PNG by the extension (cmp.svg,
    /// cmp.png): fps, drops by cause, MB/s, p99 latency per stage, CPU s per GB.
    #[arg(long, value_parser = playsim_report::plot::parse_path)]
    pub plot: Option<PathBuf>,
    /// Also write the comparison as one HTML file that opens anywhere, with no network: the
    /// table and the plot inline.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Args)]
pub struct PlayArgs {
    /// Directories, patterns (shot.%07d.dpx, shot.####.dpx) or files of sequences; several
    /// play together on one clock, like multicam or several clients.
    #[arg(required = true, num_args = 1..)]
    pub sources: Vec<PathBuf>,
    /// Independent streams reading each source.
    #[arg(long, default_value_t = 1, value_parser = parse::count, allow_hyphen_values = true)]
    pub streams: u32,
    /// The run's knobs: each also a scenario key (the settings list, playsim-settings).
    #[command(flatten)]
    pub knobs: PlayKnobs,
    /// How local files are read (the local transport's knobs, also scenario keys).
    #[command(flatten)]
    pub local: LocalReadKnobs,
    /// Drop the sequence from the page cache before the run.
    #[arg(long)]
    pub cold: bool,
    /// Write the report as JSON (atomically; also when the run fails or is interrupted).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the per-frame timeline as CSV: one row per frame per stream (times in ms).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Append one row of counters per second while the run goes (elbencho's live CSV).
    #[arg(long)]
    pub live_csv: Option<PathBuf>,
    /// Draw the run as an SVG or a PNG, by the file's extension (run.svg, run.png): the
    /// per-frame timeline (slack to deadline per stage, drops marked by cause) and a latency
    /// histogram per stage. A PNG's text needs a font (Debian: fonts-dejavu-core).
    #[arg(long, value_parser = playsim_report::plot::parse_path)]
    pub plot: Option<PathBuf>,
    /// Write the report as one HTML file that opens anywhere, with no network: the summary,
    /// the timeline and histograms, per-stream and per-client tables (capacity: its trials).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the report to FILE in the format its extension names, through the report's
    /// renderers: .json (the report), .csv (the timeline), .svg or .png (the plot), .txt (the
    /// summary); repeat it for several, e.g. --output run.json --output run.svg.
    #[arg(long, value_name = "FILE", value_parser = parse_output)]
    pub output: Vec<PathBuf>,
    /// Exit with status 3 when more frames than this are dropped.
    #[arg(long, value_parser = parse::whole, allow_hyphen_values = true)]
    pub max_drops: Option<u64>,
    /// No live progress line.
    #[arg(long, short)]
    pub quiet: bool,
    /// A live dashboard instead of the progress line: per stream Flame's drop counters, the
    /// frames buffered against the window, the slack to each deadline, MB/s and fps; per stage
    /// CPU and p99 latency. q hides it, Ctrl-C stops the run. Off with --quiet or without a
    /// terminal.
    #[arg(long)]
    pub tui: bool,
    #[command(flatten)]
    pub decoder: DecoderArgs,
    /// Every transport's own knobs (playsim's NFS and SMB clients', ...), from the registry.
    #[command(flatten)]
    pub transport: TransportKnobs,
}

/// Decoder settings shared by `play` and `decode`.
#[derive(Args)]
pub struct DecoderArgs {
    #[command(flatten)]
    pub knobs: DecoderKnobs,
    /// The EXR layer to decode: NAME picks channels NAME.R, NAME.G, ... (not a scenario key).
    #[arg(long)]
    pub exr_layer: Option<String>,
}

impl DecoderArgs {
    pub fn options(&self) -> playsim_media::DecodeOptions {
        let mut settings = Settings::default();
        self.knobs.apply(&mut settings);
        settings.decode_options(self.exr_layer.clone())
    }
}

#[derive(Args)]
pub struct DecodeArgs {
    /// A directory, a pattern or one file of the sequence, or a video file; a local path or an
    /// nfs:// URL.
    pub source: PathBuf,
    /// Print the md5 of each frame's canonical pixels (the only mode for now).
    #[arg(long, required = true)]
    pub md5: bool,
    /// Decode at most this many frames.
    #[arg(long, value_parser = parse::positive, allow_hyphen_values = true)]
    pub frames: Option<u64>,
    #[command(flatten)]
    pub decoder: DecoderArgs,
    /// Every transport's own knobs (playsim's NFS and SMB clients', ...), from the registry.
    #[command(flatten)]
    pub transport: TransportKnobs,
}

#[derive(Args)]
pub struct GenerateArgs {
    /// The directory to write into.
    pub dir: PathBuf,
    /// Frame size: hd, uhd, 2k, 4k, 2k-dci, 4k-dci, 6k, 8k-dci, 8k-uhd or WxH.
    #[arg(long, default_value = "4k-dci", value_parser = parse::preset)]
    pub preset: FramePreset,
    /// File format: any format playsim can write (dpx, exr, tiff).
    #[arg(long, default_value = "dpx", value_parser = parse_generate_format)]
    pub format: &'static str,
    /// Frames to write.
    #[arg(long, default_value_t = 96, value_parser = parse::positive, allow_hyphen_values = true)]
    pub frames: u64,
    /// EXR compression: none, rle, zips, zip, piz, pxr24, b44 or b44a [default: piz].
    #[arg(long, value_parser = parse_compression)]
    pub compression: Option<String>,
    /// Bits per sample: DPX 8, 10 or 16 [default: 10]; TIFF 8 or 16 [default: 16].
    #[arg(long, value_parser = parse::bit_depth, allow_hyphen_values = true)]
    pub bit_depth: Option<u8>,
    /// Byte order [default: big for DPX, little for TIFF].
    #[arg(long, value_enum)]
    pub endian: Option<EndianArg>,
    /// Write RGBA instead of RGB (DPX; EXR is always RGBA).
    #[arg(long)]
    pub alpha: bool,
    /// Number of the first frame.
    #[arg(long, default_value_t = 0, value_parser = parse::whole, allow_hyphen_values = true)]
    pub start: u64,
    /// File name stem: files are NAME.%07d.dpx.
    #[arg(long, default_value = "frame")]
    pub name: String,
    /// Writer threads [default: all cores].
    #[arg(long, default_value_t = 0, value_parser = parse_writer_threads, allow_hyphen_values = true)]
    pub threads: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EndianArg {
    /// SDPX.
    Big,
    /// XPDS.
    Little,
}

/// `generate --threads`: 0 (every core) up to [`parse::MAX_THREADS`].
pub fn parse_writer_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= parse::MAX_THREADS => Ok(n as usize),
        _ => Err(format!(
            "'{s}' is not a thread count from 0 (every core) to {} (for example --threads 4)",
            parse::MAX_THREADS
        )),
    }
}

/// `--compression`: a compression's name, refused at once (a bad flag) when no format knows it;
/// whether the chosen format takes it, and can write it, its writer says.
pub fn parse_compression(s: &str) -> Result<String, String> {
    s.parse::<playsim_exr::Compression>()?;
    Ok(s.to_owned())
}

/// `generate --format`: a registered format that has a writer.
pub fn parse_generate_format(s: &str) -> Result<&'static str, String> {
    playsim_media::writers()
        .map(|writer| writer.name)
        .find(|name| name.eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| {
            format!(
                "'{s}' is not a format playsim can write: {} (for example --format exr)",
                playsim_media::writable_names(|_| true)
            )
        })
}

/// A `--output` file: refused at once when no renderer of the report writes its extension.
pub fn parse_output(arg: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(arg);
    renderer::Renderers::<Report>::enabled().for_path(&path).map_err(|e| e.to_string())?;
    Ok(path)
}
