//! Helpers shared by the command-line tests: running playsim and ffmpeg, generated sequences, damage, reports.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use playsim::report::Report;

/// The smallest frame that still carries its index in the pixels (so `--verify`
/// works), and cheap enough that a debug build keeps up with 100 fps on a
/// loaded 2-core machine.
pub const SMALL_PRESET: &str = "160x32";

/// A finished command: exit code and its output as text.
pub struct Run {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    fn from_output(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Fails when either stream shows a Rust panic.
    pub fn ensure_no_panic(&self) -> Result<()> {
        ensure!(
            !self.stdout.contains("panicked") && !self.stderr.contains("panicked"),
            "playsim panicked:\n{self}"
        );
        Ok(())
    }

    /// Fails unless the process exited with `code`, and checks it did not panic.
    pub fn ensure_code(&self, code: i32) -> Result<()> {
        ensure!(self.code == Some(code), "expected exit code {code}, got {:?}:\n{self}", self.code);
        self.ensure_no_panic()
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--- exit code {:?}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// A `playsim` command for the binary under test.
pub fn playsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_playsim"))
}

/// Runs `cmd` to the end and collects its output.
pub fn run(cmd: &mut Command) -> Result<Run> {
    let output = cmd.output().with_context(|| format!("cannot run {cmd:?}"))?;
    Ok(Run::from_output(output))
}

/// Writes `n_frames` frames of `preset` into `dir` with `playsim generate` and
/// any `extra` flags; files are `frame.%07d.dpx` unless `extra` says otherwise.
pub fn generate(dir: &Path, preset: &str, n_frames: u64, extra: &[&str]) -> Result<()> {
    let done = run(playsim()
        .arg("generate")
        .args(["--preset", preset, "--frames", &n_frames.to_string(), "--threads", "1"])
        .args(extra)
        .arg(dir))?;
    done.ensure_code(0).context("playsim generate failed")
}

/// The path of frame `frame` of a default-named generated sequence in `dir`.
pub fn frame_path(dir: &Path, frame: u64) -> PathBuf {
    dir.join(format!("frame.{frame:07}.dpx"))
}

/// Reads a JSON report written by `--json`.
pub fn read_report(path: &Path) -> Result<Report> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    playsim::report::json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The file names in `dir`, sorted.
pub fn file_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Ways to make one frame of a sequence unreadable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Cut the file to half its length.
    Truncate,
    /// Overwrite the magic number.
    WrongMagic,
    /// Patch the header to 1,000,000 × 1,000,000 pixels.
    AbsurdDimensions,
    /// Patch the header to 65,536 × 65,536 pixels: each side within the
    /// limit, the area (and a 24 GiB frame buffer) not.
    HugeArea,
    /// Empty the file.
    ZeroLength,
    /// Delete the file, leaving a gap in the sequence.
    Missing,
    /// Replace the file with a directory of the same name.
    Directory,
    /// Replace the file with a symlink to nowhere.
    DanglingSymlink,
    /// Grow the file (sparsely) past the 4 GiB frame limit, keeping a valid header.
    Oversized,
}

impl Damage {
    /// Damages the file at `path` (a frame of a generated sequence).
    pub fn apply(self, path: &Path) -> Result<()> {
        let what = || format!("damaging {} ({self:?})", path.display());
        match self {
            Damage::Truncate => {
                let bytes = std::fs::read(path).with_context(what)?;
                std::fs::write(path, &bytes[..bytes.len() / 2]).with_context(what)
            }
            Damage::WrongMagic => patch(path, 0, b"JUNK").with_context(what),
            Damage::AbsurdDimensions => {
                // Pixels per line and lines per element, in the file's byte order.
                patch_u32(path, 772, 1_000_000).with_context(what)?;
                patch_u32(path, 776, 1_000_000).with_context(what)
            }
            Damage::HugeArea => {
                patch_u32(path, 772, 65_536).with_context(what)?;
                patch_u32(path, 776, 65_536).with_context(what)
            }
            Damage::ZeroLength => std::fs::write(path, b"").with_context(what),
            Damage::Oversized => std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(playsim::engine::MAX_FRAME_BYTES + 1))
                .with_context(what),
            Damage::Missing => std::fs::remove_file(path).with_context(what),
            Damage::Directory => {
                std::fs::remove_file(path).with_context(what)?;
                std::fs::create_dir(path).with_context(what)
            }
            Damage::DanglingSymlink => {
                std::fs::remove_file(path).with_context(what)?;
                let target = path.with_file_name("nowhere").join("frame.dpx");
                std::os::unix::fs::symlink(target, path).with_context(what)
            }
        }
    }
}

/// Overwrites `bytes` at `offset` in the file at `path`.
fn patch(path: &Path, offset: usize, bytes: &[u8]) -> Result<()> {
    let mut data = std::fs::read(path)?;
    ensure!(data.len() >= offset + bytes.len(), "{} is too short to patch", path.display());
    data[offset..offset + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, data)?;
    Ok(())
}

/// Overwrites a u32 at `offset` in the DPX file at `path`, in the byte order its magic says.
fn patch_u32(path: &Path, offset: usize, value: u32) -> Result<()> {
    let data = std::fs::read(path)?;
    let bytes = match data.get(..4) {
        Some(b"SDPX") => value.to_be_bytes(),
        Some(b"XPDS") => value.to_le_bytes(),
        _ => bail!("{} is not a DPX file", path.display()),
    };
    patch(path, offset, &bytes)
}

/// Runs the ffmpeg CLI with `args` and returns its standard output.
pub fn ffmpeg(args: &[&str]) -> Result<String> {
    let quiet = ["-nostdin", "-hide_banner", "-v", "error"];
    let all: Vec<&str> = quiet.iter().chain(args).copied().collect();
    run_tool("ffmpeg", "the ffmpeg CLI (needed to check media against FFmpeg)", &all)
}

/// Runs `program` with `args` and returns its standard output; `what` names it, and its
/// package, for the error when it is not installed (`cargo xtask deps` installs it).
pub fn run_tool(program: &str, what: &str, args: &[&str]) -> Result<String> {
    let output = match Command::new(program).args(args).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{what} is not installed: run `cargo xtask deps`")
        }
        Err(e) => return Err(e).with_context(|| format!("cannot run {program}")),
    };
    ensure!(
        output.status.success(),
        "{program} {} failed ({}): {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).with_context(|| format!("{program} printed non-utf-8"))
}

/// Kills the child if the test ends before it does.
pub struct KillOnDrop(pub Child);

impl KillOnDrop {
    /// Waits for the child to exit, at most `limit`.
    pub fn wait_for(&mut self, limit: Duration) -> Result<std::process::ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait()? {
                return Ok(status);
            }
            if start.elapsed() > limit {
                bail!("playsim did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A command started in the background with stdin closed and its stdout and stderr in files,
/// killed if the test ends before it does.
pub struct Background {
    child: KillOnDrop,
    stdout: PathBuf,
    stderr: PathBuf,
    /// When it was started.
    pub started: Instant,
}

impl Background {
    /// Starts `cmd`, its output in the files `stdout` and `stderr` under `dir`.
    pub fn spawn(cmd: &mut Command, dir: &Path) -> Result<Background> {
        let (stdout, stderr) = (dir.join("stdout"), dir.join("stderr"));
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&stdout)?)
            .stderr(std::fs::File::create(&stderr)?)
            .spawn()?;
        Ok(Background { child: KillOnDrop(child), stdout, stderr, started: Instant::now() })
    }

    /// Waits until its stderr holds `text`, at most `limit`.
    pub fn wait_for_stderr(&self, text: &str, limit: Duration) -> Result<()> {
        loop {
            if std::fs::read_to_string(&self.stderr)?.contains(text) {
                return Ok(());
            }
            ensure!(self.started.elapsed() < limit, "no {text:?} on stderr in {limit:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends it `signal`.
    pub fn signal(&self, signal: rustix::process::Signal) -> Result<()> {
        let pid = i32::try_from(self.child.0.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .context("child pid")?;
        rustix::process::kill_process(pid, signal).with_context(|| format!("sending {signal:?}"))
    }

    /// Waits for it to exit (at most `limit`) and reads what it wrote.
    pub fn wait(&mut self, limit: Duration) -> Result<Run> {
        let status = self.child.wait_for(limit)?;
        Ok(Run {
            code: status.code(),
            stdout: std::fs::read_to_string(&self.stdout)?,
            stderr: std::fs::read_to_string(&self.stderr)?,
        })
    }

    /// [`Background::wait`], then checks that it did not panic and reads its report `json`.
    pub fn finish(&mut self, limit: Duration, json: &Path) -> Result<(Run, Report)> {
        let done = self.wait(limit)?;
        done.ensure_no_panic()?;
        let report = read_report(json).with_context(|| format!("no report:\n{done}"))?;
        Ok((done, report))
    }
}

/// Runs `cmd` with its output in files under `dir`, sends it SIGINT (Ctrl-C) after `delay`,
/// and waits up to 20 s for it to exit.
pub fn interrupt_after(cmd: &mut Command, dir: &Path, delay: Duration) -> Result<Run> {
    signal_after(cmd, dir, delay, rustix::process::Signal::INT)
}

/// [`interrupt_after`] with another signal (SIGTERM: `kill`, `timeout`, a batch scheduler).
pub fn signal_after(
    cmd: &mut Command,
    dir: &Path,
    delay: Duration,
    signal: rustix::process::Signal,
) -> Result<Run> {
    let mut child = Background::spawn(cmd, dir)?;
    std::thread::sleep(delay);
    child.signal(signal)?;
    child.wait(Duration::from_secs(20))
}

/// Which table of `cargo xtask reliability`'s report a [`ReliabilityRow`] belongs to.
#[derive(Clone, Copy, Debug)]
pub enum ReliabilityTable {
    /// A fault done to a real server, the path to it, or a local file mid-run (issue 20, point 3).
    Fault,
    /// A reply of the misbehaving NFS server (issue 20, point 2), or of Samba spoiled by the
    /// SMB proxy (issue 21, point 5).
    #[cfg_attr(not(any(feature = "nfs", feature = "smb")), allow(dead_code))]
    // their tests need a feature
    HostileReply,
}

/// One row of `cargo xtask reliability`'s report: a fault or a hostile reply, and how
/// playsim came through it. Tests build it from what they measured, then assert on it.
#[derive(Debug)]
pub struct ReliabilityRow {
    /// The table it goes in.
    pub table: ReliabilityTable,
    /// The fault or reply, e.g. `ganesha SIGKILL, restarted 5 s later`.
    pub name: String,
    /// Whether playsim came through it: no panic, no hang, a report, counts within bound.
    pub survived: bool,
    /// Frames lost to it (dropped or unreadable), where a run played through it.
    pub frames_lost: Option<u64>,
    /// The most frames the issue allows it to lose: (outage + restart + 1 s) × fps + prefetch.
    pub bound: Option<u64>,
    /// Seconds from the fault's end to the first frame presented again, or to the reconnect.
    pub recover_s: Option<f64>,
    /// What happened, in a few words: `recovered, 1 reconnect`, `unreadable: <message>`.
    pub outcome: String,
}

/// Appends `row` as one JSON line to `$PLAYSIM_RELIABILITY_DIR/rows.jsonl` when that variable
/// is set (by `cargo xtask reliability`), and prints it either way.
pub fn record_reliability(row: &ReliabilityRow) -> Result<()> {
    use std::io::Write as _;
    println!("reliability: {row:?}");
    let Some(dir) = std::env::var_os("PLAYSIM_RELIABILITY_DIR") else { return Ok(()) };
    let line = serde_json::json!({
        "table": match row.table {
            ReliabilityTable::Fault => "fault",
            ReliabilityTable::HostileReply => "hostile_reply",
        },
        "name": row.name,
        "survived": row.survived,
        "frames_lost": row.frames_lost,
        "bound": row.bound,
        "recover_s": row.recover_s,
        "outcome": row.outcome,
    });
    std::fs::create_dir_all(&dir)?;
    let path = Path::new(&dir).join("rows.jsonl");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    writeln!(file, "{line}").with_context(|| format!("appending to {}", path.display()))?;
    Ok(())
}
