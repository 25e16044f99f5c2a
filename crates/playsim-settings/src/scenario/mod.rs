//! Scenario files: several runs of several streams, repeated, described in TOML in the spirit
//! of fio's job files (`playsim run scenario.toml`).
//!
//! A scenario is one or more *runs* played one after the other; each run is a set of streams
//! played together on one clock (one [`PlayRequest`], each stream table one source with its
//! own rate, start offset, decode pool and transport settings). Every run is played
//! `repeat` times, with a cold or a warm page cache. See `examples/` at the repository root.
//!
//! This crate reads and checks the file; the facade (`playsim::scenario`) plays it.
//!
//! # Detail (moved from ARCHITECTURE.md)
//!
//! - **Keys.** Top-level `[[stream]]` tables make a single run; `[[run]]` tables, each with its
//!   `[[run.stream]]`s, make several. Settings fall through a stream table, its run, the top of
//!   the file, then `play`'s defaults. The run keys are the rows of the settings list
//!   (`knobs.rs`), each value read as the flag's text and parsed by the flag's own parser; a
//!   transport's keys are its knobs, taken out of each table before serde reads the rest
//!   (`file.rs`). `frames` and `duration` are one setting: the nearer wins.
//! - **Refusals.** Every table is `deny_unknown_fields`; a refusal names the file, line and
//!   column, quotes the line with the key or value underlined, and shows a valid line (for an
//!   unknown key the nearest known one, `hints.rs`). Cross-key checks and the engine's
//!   `ConfigError`s are placed at the line that gives the value.
//! - **Record runs.** A `[[run]]` with `record = { destination = "...", ... }` records; its keys
//!   are `playsim record`'s flags with `_` for `-`, kept as written (`ScenarioRecord`) and parsed
//!   by record's own clap arguments in the binary. Each repetition's files are removed after it
//!   unless `keep = true`; record runs are refused under mpirun.
//! - **Paths.** Relative paths are taken from the scenario file's directory (as Cargo does, not
//!   fio); URLs pass through; `--json-dir` is from the current directory.
//! - **Repetitions.** `repeat = N`; `cache = "cold"` (the default) drops the sources' pages before
//!   each; `cache = "warm"` plays each run once untimed first.
//! - **Media.** `generate = { format, preset, frames, ... }` makes a stream's source when missing
//!   (`media.rs`): sequences through the format table's writers, ProRes clips with the `ffmpeg`
//!   command; a hidden recipe file marks what made it, so changed media is made again and a
//!   directory without one is never written into. `--check` prints the plan and plays nothing.

mod file;
mod hints;
mod media;

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use playsim_core::Pacing;
use playsim_engine::OutputStage;
use playsim_storage::transport::TransportOptions;

pub use media::{Generate, MediaState, ProRes};
pub use playsim_media::{ProResProfile, VideoClip, VideoCodec};

use crate::request::{PlayRequest, SourceSettings};

/// A scenario file, checked and resolved: every run's request is ready to play.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Names the report files: `name` in the file, else the file's stem.
    pub name: String,
    /// What the scenario reproduces.
    pub description: Option<String>,
    /// The file it was read from.
    pub path: PathBuf,
    /// Timed repetitions of every run.
    pub repeat: u32,
    /// The page cache between repetitions.
    pub cache: CacheMode,
    /// The runs, in the order played.
    pub runs: Vec<ScenarioRun>,
}

/// The page cache between repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// The sources' pages are dropped from the page cache before every repetition, as
    /// `play --cold` does (local files and kernel mounts; playsim's NFS client caches nothing).
    Cold,
    /// Nothing is dropped, and each run is first played once untimed (a warm-up whose report is
    /// written as `warmup` and left out of the means), so every timed repetition finds the
    /// cache as warm as the last one left it.
    Warm,
}

/// One run: streams played together on one clock.
#[derive(Clone, Debug)]
pub struct ScenarioRun {
    /// Names the run's report files: `name` in its table, else `run1`, `run2`, ...
    pub name: String,
    /// What the run is for.
    pub description: Option<String>,
    /// The request that plays it: one source per stream table, with its settings in
    /// `per_source` (`cold` is set per repetition from [`Scenario::cache`]).
    pub request: PlayRequest,
    /// The stream tables, in the order of the request's sources.
    pub streams: Vec<ScenarioStream>,
    /// Under mpirun, the client (rank) that plays it: `client = K` in its table; by
    /// round-robin when not given (see [`Scenario::placement`]).
    pub client: Option<u32>,
    /// Where `client` was given in the file, for errors.
    pub client_offset: Option<usize>,
    /// A record run (`record = { ... }` in its table): it writes, and has no streams.
    pub record: Option<ScenarioRecord>,
}

/// A record run's table: `playsim record`'s flags as keys (`bit_depth = 10` is
/// `--bit-depth 10`), which the facade parses with record's own command line.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioRecord {
    /// The destination as written.
    pub given: String,
    /// The destination: relative paths resolved against the scenario file's directory.
    pub destination: PathBuf,
    /// Every other key, in the table's order of keys (by name).
    pub flags: Vec<RecordFlag>,
    /// Keep the last repetition's files (`keep = true` in the run); by default each
    /// repetition's files are removed after it, so a scenario needs one repetition's space.
    pub keep: bool,
    /// Where the destination is given in the file, for errors.
    pub offset: usize,
    /// The record table's line.
    pub line: usize,
}

/// One key of a record table.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordFlag {
    /// The key: a flag of `playsim record` with `_` for `-` (`bit_depth`).
    pub key: String,
    /// Its value.
    pub value: RecordValue,
    /// Where the value is in the file, for errors.
    pub offset: usize,
}

/// A record key's value.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordValue {
    /// A string or a number, as the flag's value.
    Text(String),
    /// `true` or `false`: a switch (`direct = true` is `--direct`), or on/off (`encode = false`
    /// is `--encode off`).
    Switch(bool),
}

impl ScenarioRecord {
    /// The flag of `key`: `bit_depth` is `--bit-depth`.
    pub fn flag_of(key: &str) -> String {
        format!("--{}", key.replace('_', "-"))
    }

    /// The record table's keys as record's flags: `--bit-depth 10 --direct --encode off`
    /// (`is_switch` says whether a flag takes no value).
    pub fn args(&self, is_switch: &dyn Fn(&str) -> bool) -> Vec<String> {
        let mut args = Vec::new();
        for flag in &self.flags {
            let name = ScenarioRecord::flag_of(&flag.key);
            match &flag.value {
                RecordValue::Text(value) => {
                    args.push(name);
                    args.push(value.clone());
                }
                RecordValue::Switch(on) if is_switch(&name) => {
                    if *on {
                        args.push(name);
                    }
                }
                RecordValue::Switch(on) => {
                    args.push(name);
                    args.push(if *on { "on" } else { "off" }.to_owned());
                }
            }
        }
        args
    }
}

/// One stream table: a source and the streams that read it.
#[derive(Clone, Debug)]
pub struct ScenarioStream {
    /// The source as written in the file.
    pub given: String,
    /// The source to open: relative paths resolved against the scenario file's directory.
    pub source: PathBuf,
    /// The table's line in the file.
    pub line: usize,
    /// The stream's own settings.
    pub settings: SourceSettings,
    /// The media to generate when missing.
    pub generate: Option<Generate>,
}

impl ScenarioStream {
    /// Whether the stream's media is there (or will be generated).
    pub fn media_state(&self) -> MediaState {
        if let Some(generate) = &self.generate {
            return generate.state();
        }
        if playsim_storage::transport::scheme_of(&self.given).is_some() {
            return MediaState::Remote;
        }
        let name_is_pattern =
            self.source.file_name().is_some_and(|n| n.to_string_lossy().contains(['%', '#', '@']));
        let present = self.source.exists()
            || (name_is_pattern
                && self.source.parent().is_some_and(|p| p.as_os_str().is_empty() || p.is_dir()));
        if present {
            MediaState::Present
        } else {
            MediaState::Missing(format!("{} does not exist: the run will fail", self.source.display()))
        }
    }
}

/// One play of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// The run's index in [`Scenario::runs`].
    pub run: usize,
    /// Which repetition.
    pub repetition: Repetition,
}

/// A warm-up or a timed repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repetition {
    /// The untimed play before the timed ones, with `cache = "warm"`.
    Warmup,
    /// Timed repetition `n`, from 1.
    Timed(u32),
}

impl fmt::Display for Repetition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repetition::Warmup => f.write_str("warmup"),
            Repetition::Timed(n) => write!(f, "{n}"),
        }
    }
}

/// A scenario that cannot be read, checked or prepared, naming the file and, where it
/// applies, the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or the media path) at fault.
    pub path: PathBuf,
    /// 1-based line and column in the file, when the error has a place in it.
    pub position: Option<(usize, usize)>,
    /// What is wrong and how to write it instead; may span lines (the line quoted, a hint).
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn whole(path: &Path, message: String) -> ScenarioError {
        ScenarioError { path: path.to_owned(), position: None, message }
    }

    /// An error at byte `offset` of `text`, quoting its line.
    pub fn at(path: &Path, text: &str, offset: usize, message: String) -> ScenarioError {
        ScenarioError::at_span(path, text, offset..offset + 1, message)
    }

    /// An error at bytes `span` of `text`, quoting its line and underlining the span in it.
    pub(crate) fn at_span(
        path: &Path,
        text: &str,
        span: std::ops::Range<usize>,
        message: String,
    ) -> ScenarioError {
        let offset = span.start.min(text.len());
        let line = file::line_of(text, offset);
        let line_start = text.get(..offset).and_then(|t| t.rfind('\n')).map_or(0, |i| i + 1);
        let column = text.get(line_start..offset).map_or(0, |t| t.chars().count()) + 1;
        let content = text.get(line_start..).and_then(|t| t.lines().next()).unwrap_or("");
        let (first, rest) = message.split_once('\n').unwrap_or((&message, ""));
        let width = text
            .get(offset..span.end.max(offset))
            .map_or(1, |t| t.lines().next().unwrap_or("").chars().count().max(1));
        let mut full = format!(
            "{first}\n  {line:>4} | {content}\n       | {}{}",
            " ".repeat(column - 1),
            "^".repeat(width)
        );
        if !rest.is_empty() {
            full.push('\n');
            full.push_str(rest);
        }
        ScenarioError { path: path.to_owned(), position: Some((line, column)), message: full }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, column)) => write!(f, "{}:{line}:{column}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Reads and checks the scenario file at `path`.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ScenarioError::whole(
                path,
                format!("cannot read the scenario: {e} (for example examples/frametest-4k.toml)"),
            )
        })?;
        Scenario::parse(&text, path)
    }

    /// Checks the scenario `text`, read from `path` (which relative sources are resolved against).
    pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        file::parse(text, path)
    }

    /// Every play, in order: for each run, a warm-up with `cache = "warm"`, then the timed
    /// repetitions.
    pub fn passes(&self) -> Vec<Pass> {
        let mut passes = Vec::new();
        for run in 0..self.runs.len() {
            if self.cache == CacheMode::Warm {
                passes.push(Pass { run, repetition: Repetition::Warmup });
            }
            passes.extend((1..=self.repeat).map(|n| Pass { run, repetition: Repetition::Timed(n) }));
        }
        passes
    }

    /// Which runs each of `n_clients` clients plays under mpirun, in the file's order: a run
    /// with `client = K` on client K, the others by round-robin on their position (run `i`
    /// on client `i mod n`). All the runs play at once, a client's first runs together, then
    /// its second ones, and so on (waves). A `client` beyond the clients is refused.
    pub fn placement(&self, n_clients: u32) -> Result<Vec<Vec<usize>>, ScenarioError> {
        let n = n_clients.max(1);
        let mut placed = vec![Vec::new(); n as usize];
        for (i, run) in self.runs.iter().enumerate() {
            let client = match run.client {
                Some(k) if k >= n => {
                    let message = format!(
                        "run '{}' is placed on client {k}, but this run has {n} client(s), 0 to {}:                          start more (mpirun -np {}) or place it on one of them (client = {})",
                        run.name,
                        n - 1,
                        k + 1,
                        n - 1
                    );
                    let text = std::fs::read_to_string(&self.path).unwrap_or_default();
                    return Err(match run.client_offset {
                        Some(offset) if !text.is_empty() => {
                            ScenarioError::at(&self.path, &text, offset, message)
                        }
                        _ => ScenarioError::whole(&self.path, message),
                    });
                }
                Some(k) => k,
                None => (i as u64 % u64::from(n)) as u32,
            };
            placed[client as usize].push(i);
        }
        Ok(placed)
    }

    /// The report file of `pass`: `<scenario>-<run>-<repetition>.json`.
    pub fn report_name(&self, pass: &Pass) -> String {
        let run = self.runs.get(pass.run).map_or("run", |r| r.name.as_str());
        format!("{}-{run}-{}.json", self.name, pass.repetition)
    }

    /// The request that plays `pass`.
    pub fn request(&self, pass: &Pass) -> Option<PlayRequest> {
        let mut request = self.runs.get(pass.run)?.request.clone();
        request.cold = self.cache == CacheMode::Cold;
        Some(request)
    }

    /// Generates the media of every stream that has a `generate` table and whose media is
    /// missing or was made by another table. `log` hears each one before it is made.
    pub fn ensure_media(&self, log: &mut dyn FnMut(&str)) -> Result<(), ScenarioError> {
        let mut done: Vec<&Path> = Vec::new();
        for stream in self.runs.iter().flat_map(|r| &r.streams) {
            let Some(generate) = &stream.generate else { continue };
            if done.contains(&generate.path()) {
                continue;
            }
            generate.ensure(log)?;
            done.push(generate.path());
        }
        Ok(())
    }

    /// Whether `stream`'s media is there, or will be generated by its own `generate` table or
    /// by another stream's for the same path.
    pub fn media_state(&self, stream: &ScenarioStream) -> MediaState {
        if stream.generate.is_none() {
            let by_another = self
                .runs
                .iter()
                .flat_map(|r| &r.streams)
                .filter_map(|s| s.generate.as_ref())
                .find(|g| g.path() == stream.source);
            if let Some(generate) = by_another {
                return generate.state();
            }
        }
        stream.media_state()
    }

    /// What `run --check` prints: the runs, their streams and settings, and whether each
    /// stream's media is there. `describe` says how a source's transport reads with the
    /// options given (the facade asks the transport registry), or `None` for no transport.
    pub fn plan(&self, describe: &dyn Fn(&str, &TransportOptions) -> Option<String>) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "scenario {} ({})", self.name, self.path.display());
        if let Some(description) = &self.description {
            for line in description.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        let cache = match self.cache {
            CacheMode::Cold => "cold cache: the sources' pages dropped before each",
            CacheMode::Warm => "warm cache: one untimed warm-up first, nothing dropped",
        };
        if self.runs.iter().all(|run| run.record.is_some()) {
            let _ = writeln!(out, "  {} timed repetition(s) of each run", self.repeat);
        } else {
            let _ = writeln!(out, "  {} timed repetition(s) of each run; {cache}", self.repeat);
        }
        for run in &self.runs {
            if let Some(record) = &run.record {
                let keys: Vec<String> = record
                    .flags
                    .iter()
                    .map(|f| match &f.value {
                        RecordValue::Text(v) => format!("{} = {v}", f.key),
                        RecordValue::Switch(on) => format!("{} = {on}", f.key),
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "  run {}: records into {} (line {}){}{}",
                    run.name,
                    record.given,
                    record.line,
                    if keys.is_empty() { String::new() } else { format!(": {}", keys.join(", ")) },
                    if record.keep {
                        "; the last repetition's files are kept"
                    } else {
                        "; each repetition's files are removed after it"
                    }
                );
                if record.destination.as_os_str() != record.given.as_str() {
                    let _ = writeln!(out, "       = {}", record.destination.display());
                }
                if let Some(description) = &run.description {
                    let _ = writeln!(out, "    {description}");
                }
                continue;
            }
            let r = &run.request;
            let e = &r.engine;
            let n_streams: u32 = run.streams.iter().map(|s| s.settings.streams.unwrap_or(1)).sum();
            let length = match (e.frames, e.duration) {
                (Some(n), _) => format!("{n} frames"),
                (_, Some(d)) => format!("{:?}", d),
                _ => "each source once".to_owned(),
            };
            let shared_pool = if run.streams.iter().all(|s| s.settings.decode_threads.is_some()) {
                "none (each stream table has its own)".to_owned()
            } else {
                format!("{} thread(s)", e.decode_threads)
            };
            let _ = writeln!(
                out,
                "  run {}: {n_streams} stream(s) on one clock, {length}{}; shared decode pool {shared_pool}, \
                 output {}, preroll {}, prefetch {}, io depth {}{}",
                run.name,
                if e.loop_playback { ", looping" } else { "" },
                match e.output {
                    OutputStage::V210 => "v210",
                    OutputStage::None => "none",
                },
                e.preroll,
                e.prefetch,
                e.io_depth,
                if e.no_drop { ", no drop" } else { "" },
            );
            if let Some(description) = &run.description {
                let _ = writeln!(out, "    {description}");
            }
            for stream in &run.streams {
                let s = &stream.settings;
                let fps = match s.pacing {
                    Some(p) => pacing_text(p),
                    None if r.rate_from_source => {
                        format!("{} (unless the source states its own)", pacing_text(e.pacing))
                    }
                    None => pacing_text(e.pacing),
                };
                let mut line = format!("    {}x {} at {fps}", s.streams.unwrap_or(1), stream.given);
                if !s.start_offset.is_zero() {
                    let _ = write!(line, ", starting {:?} in", s.start_offset);
                }
                if s.skip_decode.unwrap_or(r.skip_decode) {
                    line.push_str(", bytes only (no decode)");
                } else if let Some(threads) = s.decode_threads {
                    let _ = write!(line, ", own decode pool of {threads}");
                }
                if let Some(how) = describe(&stream.given, &r.transport_options(s)) {
                    if !how.is_empty() {
                        let _ = write!(line, ", {how}");
                    }
                }
                let _ = writeln!(out, "{line}  (line {})", stream.line);
                if stream.source.as_os_str() != stream.given.as_str() {
                    let _ = writeln!(out, "       = {}", stream.source.display());
                }
                let state = match self.media_state(stream) {
                    MediaState::Present => "present".to_owned(),
                    MediaState::Remote => "remote: reached when the run starts".to_owned(),
                    MediaState::WillGenerate(why) if stream.generate.is_none() => {
                        format!("{why}: will be generated by the generate table of the same source")
                    }
                    MediaState::WillGenerate(why) => {
                        let generate = stream.generate.as_ref();
                        let size = generate
                            .and_then(Generate::estimated_bytes)
                            .map_or_else(String::new, |b| format!(", about {}", bytes_text(b)));
                        format!(
                            "{why}: will be generated{size}: {}",
                            generate.map_or_else(String::new, Generate::recipe)
                        )
                    }
                    MediaState::Missing(why) => format!("NOT RUNNABLE HERE: {why}"),
                };
                let _ = writeln!(out, "       media: {state}");
            }
        }
        out
    }
}

fn pacing_text(pacing: Pacing) -> String {
    match pacing {
        Pacing::Max => "max fps (no pacing)".to_owned(),
        Pacing::Rate(rate) => format!("{rate} fps"),
    }
}

/// Bytes in SI units, as the reports give them.
fn bytes_text(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.0} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, Path::new("/s/t.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn passes_and_report_names() {
        let cold = scenario("name = \"n\"\nrepeat = 2\n[[run]]\nname = \"a\"\n[[run.stream]]\nsource = \"x\"\n[[run]]\n[[run.stream]]\nsource = \"y\"\n");
        let names: Vec<String> = cold.passes().iter().map(|p| cold.report_name(p)).collect();
        assert_eq!(names, ["n-a-1.json", "n-a-2.json", "n-run2-1.json", "n-run2-2.json"]);
        assert!(cold.request(&cold.passes()[0]).is_some_and(|r| r.cold));
        let warm = scenario("cache = \"warm\"\n[[stream]]\nsource = \"x\"\n");
        let names: Vec<String> = warm.passes().iter().map(|p| warm.report_name(p)).collect();
        assert_eq!(names, ["t-run1-warmup.json", "t-run1-1.json"]);
        assert!(warm.request(&warm.passes()[1]).is_some_and(|r| !r.cold));
    }

    #[test]
    fn runs_are_placed_on_clients_by_their_key_or_round_robin() {
        let text = "[[run]]\nname = \"a\"\n[[run.stream]]\nsource = \"x\"\n\
                    [[run]]\nname = \"b\"\nclient = 0\n[[run.stream]]\nsource = \"x\"\n\
                    [[run]]\nname = \"c\"\n[[run.stream]]\nsource = \"x\"\n\
                    [[run]]\nname = \"d\"\n[[run.stream]]\nsource = \"x\"\n";
        let s = scenario(text);
        assert_eq!(s.runs[1].client, Some(0));
        // a: 0 mod 3; b: given 0; c: 2 mod 3; d: 3 mod 3.
        assert_eq!(s.placement(3).unwrap(), vec![vec![0, 1, 3], vec![], vec![2]]);
        assert_eq!(s.placement(1).unwrap(), vec![vec![0, 1, 2, 3]]);
        let beyond =
            scenario(&text.replace("client = 0", "client = 5")).placement(3).unwrap_err().to_string();
        assert!(beyond.contains("run 'b' is placed on client 5, but this run has 3 client(s)"), "{beyond}");
        let bad = Scenario::parse(&text.replace("client = 0", "client = -1"), Path::new("/s/t.toml"));
        let bad = bad.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(bad.contains("7:10") && bad.contains("not a whole number"), "{bad}");
    }
}
