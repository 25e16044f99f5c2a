//! `playsim run`'s arguments.

use std::path::PathBuf;

use clap::Args;

/// `playsim run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// The scenario file (TOML): runs of streams, repeated; see examples/ for every key.
    /// Relative sources in it are taken from the file's own directory.
    pub scenario: PathBuf,
    /// Where the JSON reports go, one per repetition of each run, named
    /// SCENARIO-RUN-REPETITION.json [default: target/scenarios/SCENARIO].
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
    /// Write the scenario as one HTML file that opens anywhere, with no network: every timed
    /// repetition side by side; and each repetition's own page beside its JSON report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Check the scenario and print its plan (and what media is missing) without generating
    /// or playing anything.
    #[arg(long)]
    pub check: bool,
    /// No live progress line.
    #[arg(long, short)]
    pub quiet: bool,
    /// A live dashboard of each run instead of the progress line (see `play --tui`). Off with
    /// --quiet or without a terminal.
    #[arg(long)]
    pub tui: bool,
}
