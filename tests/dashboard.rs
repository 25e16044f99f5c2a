//! `--tui` in a real terminal: playsim runs in a tmux pane, the pane is captured while the
//! dashboard draws, keys are sent to it, and the counters it leaves on the screen when the run
//! ends must be the report's.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use playsim::report::Report;

use crate::util::read_report;

const LINK: &str = "sim://lan?bw=20MB/s&lat=1ms&jitter=0&seed=1&format=dpx&preset=256x144&frames=48";

/// A tmux session of its own, killed when dropped.
pub(crate) struct Pane {
    name: String,
}

impl Pane {
    /// Starts `command` in a detached 120x40 session.
    pub(crate) fn start(command: &str) -> Result<Pane> {
        let name = format!("playsim-test-{}-{}", std::process::id(), rand_suffix());
        let status = Command::new("tmux")
            .args(["new-session", "-d", "-x", "120", "-y", "40", "-s", &name, command])
            .env_remove("TMUX")
            .status()
            .context("starting tmux (cargo xtask deps installs it)")?;
        ensure!(status.success(), "tmux new-session failed");
        Ok(Pane { name })
    }

    /// The pane's text, with `history` lines above the screen.
    pub(crate) fn capture(&self, history: u32) -> Result<String> {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name, "-S", &format!("-{history}")])
            .output()
            .context("tmux capture-pane")?;
        ensure!(out.status.success(), "tmux capture-pane: {}", String::from_utf8_lossy(&out.stderr));
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub(crate) fn send_keys(&self, keys: &str) -> Result<()> {
        let status = Command::new("tmux").args(["send-keys", "-t", &self.name, keys]).status()?;
        ensure!(status.success(), "tmux send-keys {keys}");
        Ok(())
    }

    /// Waits until the pane shows `text`, up to `limit`.
    pub(crate) fn wait_for(&self, text: &str, limit: Duration) -> Result<String> {
        let started = Instant::now();
        loop {
            let screen = self.capture(400)?;
            if screen.contains(text) {
                return Ok(screen);
            }
            if started.elapsed() > limit {
                bail!("the pane never showed {text:?} in {limit:?}:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.name]).status();
    }
}

impl Pane {
    /// Whether the pane shows its alternate screen (a full-screen program's) now.
    pub(crate) fn on_alternate_screen(&self) -> Result<bool> {
        let out =
            Command::new("tmux").args(["display", "-p", "-t", &self.name, "#{alternate_on}"]).output()?;
        ensure!(out.status.success(), "tmux display: {}", String::from_utf8_lossy(&out.stderr));
        Ok(String::from_utf8_lossy(&out.stdout).trim() == "1")
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() % 1_000_000)
}

/// The dashboard's last "all" row on `screen`: presented, then drops by cause.
fn all_row(screen: &str) -> Result<[u64; 5]> {
    let line = screen
        .lines()
        .rfind(|l| l.split_whitespace().next() == Some("all"))
        .with_context(|| format!("no 'all' row of counters:\n{screen}"))?;
    let numbers: Vec<u64> =
        line.split_whitespace().skip(1).take(5).map(str::parse).collect::<Result<_, _>>()?;
    numbers.try_into().map_err(|_| anyhow::anyhow!("a short 'all' row: {line}"))
}

fn report_row(report: &Report) -> [u64; 5] {
    let t = &report.totals;
    [t.presented, t.dropped.storage, t.dropped.decode, t.dropped.output, t.dropped.unreadable]
}

fn play_command(json: &Path, extra: &str) -> String {
    format!(
        "{} play '{LINK}' --streams 2 --loop --tui --json {} {extra}; echo PLAYSIM-EXIT=$?; sleep 120",
        env!("CARGO_BIN_EXE_playsim"),
        json.display()
    )
}

#[test]
fn the_dashboard_draws_live_and_leaves_the_reports_counters() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let pane = Pane::start(&play_command(&json, "--duration 4s"))?;
    // Once the streams have started: before, the table says there are none yet.
    let live = pane.wait_for("stream 1", Duration::from_secs(20))?;
    for part in ["stream 0", "stream 1", "CPU/GPU", "broadcast", "unreadable", "buffered", "p99 ms", "Ctrl-C"]
    {
        ensure!(live.contains(part), "the dashboard lacks {part:?}:\n{live}");
    }
    ensure!(pane.on_alternate_screen()?, "drawn on the alternate screen");
    let screen = pane.wait_for("PLAYSIM-EXIT=0", Duration::from_secs(30))?;
    ensure!(!pane.on_alternate_screen()?, "the terminal is given back");
    let report = read_report(&json)?;
    ensure!(
        all_row(&screen)? == report_row(&report),
        "the screen's counters are not the report's:\n{screen}"
    );
    ensure!(report_row(&report)[0] > 150, "{:?}", report_row(&report));
    Ok(())
}

#[test]
fn ctrl_c_in_the_dashboard_stops_the_run_with_its_report() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let pane = Pane::start(&play_command(&json, "--duration 60s"))?;
    pane.wait_for("stream 1", Duration::from_secs(20))?;
    std::thread::sleep(Duration::from_secs(2));
    pane.send_keys("C-c")?;
    let screen = pane.wait_for("PLAYSIM-EXIT=130", Duration::from_secs(30))?;
    let report = read_report(&json)?;
    ensure!(report.status == playsim::report::RunStatus::Partial, "{:?}", report.status);
    ensure!(
        all_row(&screen)? == report_row(&report),
        "the screen's counters are not the report's:\n{screen}"
    );
    Ok(())
}
