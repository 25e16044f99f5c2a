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

/// Runs a query (not printed) and returns its trimmed stdout; fails unless it exits successfully.
pub fn read(cmd: &mut Command) -> Result<String> {
    let output = capture(cmd)?;
    check(cmd, output.status)?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
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
    fn removed_env_is_not_shown() {
        let mut cmd = Command::new("cargo");
        cmd.env_remove("RUSTFLAGS").args(["test", "--workspace"]);
        assert_eq!(display(&cmd), "cargo test --workspace");
    }
}
