//! `playsim matrix`'s arguments, with their parsers.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use playsim_core::FrameRate;
use playsim_ops::matrix::MatrixRowSpec;
use playsim_settings::{parse, units, DecoderKnobs, LocalReadKnobs, PlayKnobs, TransportKnobs};

#[derive(Args)]
pub struct MatrixArgs {
    /// Where the media is (and is generated, under LOCATION/matrix-media): a local directory
    /// or a mount, or a sim:// URL (each row then sets its format and preset in the query).
    pub location: String,
    /// The rows: FORMAT-PRESET (dpx-2k, dpx-4k-dci, dpx-8k-dci, exr-piz-uhd, exr-piz-6k,
    /// prores-hq-uhd, h264-uhd, dnxhr-hqx-uhd, tiff-uhd, ...) or FORMAT:WxH (dpx:256x144).
    /// [default: dpx-2k,dpx-4k-dci,dpx-8k-dci,exr-piz-uhd,exr-piz-6k,prores-hq-uhd,h264-uhd,
    /// dnxhr-hqx-uhd; with --write, those record encodes, all but h264-uhd and dnxhr-hqx-uhd]
    #[arg(long, value_delimiter = ',', value_parser = parse_row)]
    pub formats: Option<Vec<MatrixRowSpec>>,
    /// Play existing media for a row instead of generating it: ROW=PATH (a directory, a
    /// pattern, a clip or a URL); repeat it for several rows.
    #[arg(long, value_name = "ROW=PATH", value_parser = parse_media)]
    pub media: Vec<(String, String)>,
    /// The columns: frame rates, comma-separated.
    #[arg(long, default_value = "23.976,25,29.97,50,59.94", value_delimiter = ',', value_parser = parse_rate)]
    pub rates: Vec<(String, FrameRate)>,
    /// Playback time of each trial.
    #[arg(long, default_value = "5s", value_parser = parse_window, allow_hyphen_values = true)]
    pub window: Duration,
    /// Trials per candidate: it passes only when every one has no drop.
    #[arg(long, default_value_t = 1, value_parser = parse::count, allow_hyphen_values = true)]
    pub trials: u32,
    /// The most streams a cell tries.
    #[arg(long, default_value_t = 16, value_parser = parse::count, allow_hyphen_values = true)]
    pub max: u32,
    /// The most streams a cell tries, as Disk Speed Test asks it: --streams 1 makes a yes/no
    /// table (it overrides --max).
    #[arg(long, value_parser = parse::count, allow_hyphen_values = true)]
    pub streams: Option<u32>,
    /// Where media for a location on a server (nfs://, smb://) is made before it is copied
    /// there; it is kept, so that the next matrix on another server copies without making.
    #[arg(long, value_name = "DIR", default_value_os_t = std::env::temp_dir().join("playsim-matrix-stage"))]
    pub stage: PathBuf,
    /// Generate the media even when it is large (more than 20 GB, or more than 5 minutes by
    /// the estimate).
    #[arg(long)]
    pub yes: bool,
    /// Write the matrix as JSON (schema: crates/playsim-report/schema/matrix.schema.json).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the matrix as CSV, a line per cell.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw the matrix as a coloured grid, SVG or PNG by the extension (m.svg, m.png): each
    /// cell's streams, its colour the cause that limits it.
    #[arg(long, value_parser = playsim_report::plot::parse_path)]
    pub plot: Option<PathBuf>,
    /// Write the matrix as one HTML file that opens anywhere, with no network: the grid, the
    /// table and every cell's trials.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Fill the table by recording instead of playing, as Disk Speed Test's write side: each
    /// cell the most streams `record` writes at the rate with no frame dropped or failed, into
    /// LOCATION/matrix-write/ROW (each trial into its capacity-trial, removed after it).
    #[arg(long)]
    pub write: bool,
    /// Read local media through the page cache, as most players do, instead of with
    /// O_DIRECT: the streams of a trial read the same files, so all but the first reader of
    /// a frame may then be served from memory, not storage.
    #[arg(long)]
    pub page_cache: bool,
    /// A live dashboard of each trial instead of the progress lines (see `play --tui`). Off
    /// with --quiet or without a terminal.
    #[arg(long)]
    pub tui: bool,
    /// The knobs of every trial's run (decode threads, prefetch, reads in flight, ...), as
    /// `play` takes them; the matrix sets the rate, the streams and the duration.
    #[command(flatten)]
    pub knobs: PlayKnobs,
    #[command(flatten)]
    pub local: LocalReadKnobs,
    #[command(flatten)]
    pub decoder: DecoderKnobs,
    /// Every transport's own knobs, for media or a destination behind a URL.
    #[command(flatten)]
    pub transport: TransportKnobs,
}

pub fn parse_row(s: &str) -> Result<MatrixRowSpec, String> {
    s.parse()
}

pub fn parse_media(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((row, path)) if !row.trim().is_empty() && !path.is_empty() => {
            Ok((row.trim().to_owned(), path.to_owned()))
        }
        _ => Err(format!("'{s}' is not ROW=PATH (for example --media dpx-4k-dci=/mnt/nas/shot)")),
    }
}

pub fn parse_rate(s: &str) -> Result<(String, FrameRate), String> {
    let rate = s.parse::<FrameRate>().map_err(|e| format!("{e} (for example --rates 23.976,25,29.97)"))?;
    Ok((s.trim().to_owned(), rate))
}

pub fn parse_window(s: &str) -> Result<Duration, String> {
    match units::parse_duration(s) {
        Ok(window) if window >= Duration::from_secs(1) => Ok(window),
        Ok(_) => Err(format!("'{s}' is shorter than 1 s (for example --window 5s)")),
        Err(e) => Err(format!("{e} (for example --window 5s)")),
    }
}
