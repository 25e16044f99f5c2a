//! Running child processes: print each command as `$ cmd args`, run it, check how it ended.

use std::ffi::OsStr;
use std::process::{Command, ExitStatus, Output, Stdio};

use anyhow::{bail, Context, Result};

/// A `Command` for the cargo that runs this xtask, so that child builds use the same toolchain.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Prints `cmd`, runs it with inherited stdio and fails unless it exits successfully.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = run_status(cmd)?;
    check(cmd, status)
}

/// Prints `cmd`, runs it with inherited stdio and returns how it ended, success or not.
pub fn run_status(cmd: &mut Command) -> Result<ExitStatus> {
    println!("$ {}", display(cmd));
    cmd.status().with_context(|| format!("cannot start `{}`", display(cmd)))
}

/// Prints `cmd`, runs it with stdin closed and stdout/stderr captured, and fails unless it exits
/// successfully; the captured output is returned for parsing.
pub fn run_capture(cmd: &mut Command) -> Result<Output> {
    println!("$ {}", display(cmd));
    let output = capture(cmd)?;
    if !output.status.success() {
        // The output was captured, so show it: a bare exit code says nothing about why.
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        check(cmd, output.status)?;
    }
    Ok(output)
}

/// Prints `cmd`, runs it with its output captured, and returns how it ended, success or not.
pub fn run_capture_status(cmd: &mut Command) -> Result<Output> {
    println!("$ {}", display(cmd));
    capture(cmd)
}

/// Runs a query (not printed) and returns its trimmed stdout; fails unless it exits successfully.
pub fn read(cmd: &mut Command) -> Result<String> {
    let output = capture(cmd)?;
    check(cmd, output.status)?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// What a finished child cost: wall time, and the CPU time and minor page faults of it and its
/// own children.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChildCost {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Page faults served without I/O: a page of fresh memory zeroed and mapped (a buffer's
    /// first touch), or a page-cache page mapped (a library or file mapped in).
    pub minor_faults: u64,
}

impl ChildCost {
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    /// Minor page faults per frame, for a child that handled `n_frames` frames (NaN for none).
    pub fn minor_faults_per_frame(&self, n_frames: u64) -> f64 {
        if n_frames == 0 {
            f64::NAN
        } else {
            self.minor_faults as f64 / n_frames as f64
        }
    }
}

/// Like [`run_capture`], and also measures the child's cost from outside, the same way for every
/// program (playsim and its anchors alike): the wall time around it, and the growth of this
/// process's reaped-children CPU times and minor faults in `/proc/self/stat` (CPU in clock
/// ticks of 10 ms, so keep runs to seconds). Run one measured child at a time.
pub fn run_measured(cmd: &mut Command) -> Result<(Output, ChildCost)> {
    let before = children_usage()?;
    let started = std::time::Instant::now();
    let output = run_capture(cmd)?;
    let wall_s = started.elapsed().as_secs_f64();
    let after = children_usage()?;
    Ok((output, after.since(&before, wall_s)))
}

/// What this process's waited-for children have used so far, from `/proc/self/stat`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ChildrenUsage {
    /// cutime and cstime, in seconds.
    user_s: f64,
    sys_s: f64,
    /// cminflt.
    minor_faults: u64,
}

impl ChildrenUsage {
    /// The cost of the children reaped between `before` and `self`.
    fn since(&self, before: &ChildrenUsage, wall_s: f64) -> ChildCost {
        ChildCost {
            wall_s,
            user_s: self.user_s - before.user_s,
            sys_s: self.sys_s - before.sys_s,
            minor_faults: self.minor_faults.saturating_sub(before.minor_faults),
        }
    }
}

fn children_usage() -> Result<ChildrenUsage> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("cannot read /proc/self/stat")?;
    parse_children_usage(&stat).context("cannot parse /proc/self/stat")
}

/// Clock ticks a second in `/proc` (`USER_HZ`), 100 on every Linux playsim runs on.
pub const USER_HZ: f64 = 100.0;

/// Fields `n` and `n + 1` of a `/proc/PID/stat` line (numbered from 1 as in proc(5)), in
/// seconds: pairs of CPU times in clock ticks (14/15 utime/stime, 16/17 cutime/cstime).
pub fn proc_stat_cpu_pair_s(stat: &str, n: usize) -> Option<(f64, f64)> {
    let first = proc_stat_field(stat, n)?;
    let second = proc_stat_field(stat, n + 1)?;
    Some((first as f64 / USER_HZ, second as f64 / USER_HZ))
}

/// Field `n` of a `/proc/PID/stat` line (numbered from 1 as in proc(5)), when it is a
/// non-negative integer. Fields are counted after the command name's closing parenthesis,
/// since the name may hold spaces and parentheses.
fn proc_stat_field(stat: &str, n: usize) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts with field 3 (state).
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

/// cminflt (field 11), and cutime and cstime (fields 16 and 17) in seconds.
fn parse_children_usage(stat: &str) -> Option<ChildrenUsage> {
    let (user_s, sys_s) = proc_stat_cpu_pair_s(stat, 16)?;
    Some(ChildrenUsage { user_s, sys_s, minor_faults: proc_stat_field(stat, 11)? })
}

/// Whether `program` is an executable file somewhere on `PATH`.
pub fn on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else { return false };
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// The shell-like form of `cmd` that we print: `ENV=val program args`, with odd words single-quoted and
/// cargo shown as `cargo` rather than the toolchain path in `$CARGO`.
pub fn display(cmd: &Command) -> String {
    let envs = cmd.get_envs().filter_map(|(key, value)| Some((key, value?)));
    let mut words: Vec<String> =
        envs.map(|(key, value)| format!("{}={}", key.to_string_lossy(), quote(value))).collect();
    let is_cargo = std::env::var_os("CARGO").is_some_and(|cargo| cargo == cmd.get_program());
    words.push(if is_cargo { "cargo".to_owned() } else { quote(cmd.get_program()) });
    words.extend(cmd.get_args().map(quote));
    words.join(" ")
}

fn capture(cmd: &mut Command) -> Result<Output> {
    cmd.stdin(Stdio::null()).output().with_context(|| format!("cannot start `{}`", display(cmd)))
}

fn check(cmd: &Command, status: ExitStatus) -> Result<()> {
    if !status.success() {
        bail!("`{}` failed ({status})", display(cmd));
    }
    Ok(())
}

fn quote(word: &OsStr) -> String {
    let word = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_env_and_quotes() {
        let mut cmd = Command::new("dpkg-query");
        cmd.env("DEBIAN_FRONTEND", "noninteractive").args(["-W", "-f=${Status}", "it's"]);
        assert_eq!(display(&cmd), r"DEBIAN_FRONTEND=noninteractive dpkg-query -W '-f=${Status}' 'it'\''s'");
    }

    #[test]
    fn children_cpu_times_and_faults_come_after_the_name() {
        // minflt 100, cminflt 200, utime 11, stime 7, cutime 250, cstime 130 (ticks).
        let stat = "4242 (x) task) S 1 2 3 0 -1 4194560 100 200 0 0 11 7 250 130 20 0 1 0 5 6 7";
        let usage = parse_children_usage(stat).unwrap();
        assert_eq!(usage, ChildrenUsage { user_s: 2.5, sys_s: 1.3, minor_faults: 200 });
        assert_eq!(proc_stat_cpu_pair_s(stat, 14), Some((0.11, 0.07)));
        assert_eq!(parse_children_usage("garbage"), None);
        assert_eq!(parse_children_usage("1 (x) S 1 2"), None, "too short");
        // A child's cost is the growth between two readings.
        let later = ChildrenUsage { user_s: 3.0, sys_s: 1.5, minor_faults: 5200 };
        let cost = later.since(&usage, 4.0);
        assert_eq!(cost.minor_faults, 5000);
        assert!((cost.user_s - 0.5).abs() < 1e-9 && (cost.sys_s - 0.2).abs() < 1e-9);
        assert_eq!(cost.minor_faults_per_frame(100), 50.0);
        assert!(cost.minor_faults_per_frame(0).is_nan());
    }

    #[test]
    fn removed_env_is_not_shown() {
        let mut cmd = Command::new("cargo");
        cmd.env_remove("RUSTFLAGS").args(["test", "--workspace"]);
        assert_eq!(display(&cmd), "cargo test --workspace");
    }
}
