//! Subcommands of the `playsim` binary that are big enough for a file of their own.
//! Each holds its clap arguments and its handler; `main.rs` dispatches to them and
//! keeps the value parsers they share; the live progress line is here, shared by `play` and `run`,
//! and so is the check, before a run, that the files it will write can be written.

pub mod cluster;
pub mod dashboard;
pub mod frametest;
pub mod matrix;
pub mod record;
pub mod run;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use playsim::engine::LiveCounters;

/// What stops a run early with its report written: Ctrl-C (`SIGINT`) and `SIGTERM` (`kill`,
/// `timeout`, a batch scheduler's end of a job, mpirun). Made inside the runtime; once made,
/// neither signal ends the process by itself.
pub(crate) struct StopSignals {
    term: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    pub(crate) fn new() -> StopSignals {
        use tokio::signal::unix::{signal, SignalKind};
        StopSignals { term: signal(SignalKind::terminate()).ok() }
    }

    /// Waits for the next of them: `"interrupted"` (Ctrl-C) or `"terminated"` (SIGTERM); `None`
    /// when no signal can be waited for.
    pub(crate) async fn next(&mut self) -> Option<&'static str> {
        let term = async {
            match &mut self.term {
                Some(term) => term.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            got = tokio::signal::ctrl_c() => got.ok().map(|()| "interrupted"),
            Some(()) = term => Some("terminated"),
        }
    }
}

/// The first of Ctrl-C and SIGTERM, as its word (`interrupted`, `terminated`): the stop of a
/// search that keeps what it found ([`playsim::capacity_watched`], the matrix). Never, when no
/// signal can be waited for.
pub(crate) async fn stop_signal() -> String {
    match StopSignals::new().next().await {
        Some(why) => why.to_owned(),
        None => std::future::pending().await,
    }
}

/// A live line once a second with fps, MB/s and the drop counters.
pub fn spawn_progress(live: Arc<LiveCounters>) -> (indicatif::ProgressBar, tokio::task::JoinHandle<()>) {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let shown = bar.clone();
    let task = tokio::spawn(async move {
        let mut last = live.snapshot();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        loop {
            tick.tick().await;
            let now = live.snapshot();
            let d = now.dropped;
            shown.set_message(format!(
                "{:6.2} fps {:8.1} MB/s | presented {} | dropped {} (storage {} decode {} output {} unreadable {})",
                (now.presented - last.presented) as f64,
                (now.bytes_read - last.bytes_read) as f64 / 1e6,
                now.presented,
                d.total(),
                d.storage,
                d.decode,
                d.output,
                d.unreadable
            ));
            shown.tick();
            last = now;
        }
    });
    (bar, task)
}

/// A line on stderr as each trial of a capacity search starts: its number, the most trials
/// the search can take (doubling, then bisection), the candidate, and the time left at most.
pub fn capacity_progress(request: &playsim::CapacityRequest) -> playsim::TrialWatch {
    let most = most_trials(request.max) * request.trials;
    let window = request.window;
    let started = std::sync::Mutex::new(0u32);
    let noun = capacity_noun(request.by);
    Arc::new(move |candidate, _live| {
        let mut k = started.lock().unwrap_or_else(|e| e.into_inner());
        *k += 1;
        let left = window * most.saturating_sub(*k - 1);
        eprintln!(
            "playsim: capacity: trial {} (of at most {most}): {candidate} {noun} for {:?}; at most about {}s left",
            *k,
            window,
            left.as_secs()
        );
    })
}

/// What a capacity search's candidates count: `stream(s)`, `fps` or `client(s)`.
pub(crate) fn capacity_noun(by: playsim::CapacityBy) -> &'static str {
    match by {
        playsim::CapacityBy::Streams => "stream(s)",
        playsim::CapacityBy::Fps => "fps",
        playsim::CapacityBy::Clients => "client(s)",
    }
}

/// The most candidates a search up to `max` tries: 1, 2, 4, ... up to `max`, then a bisection
/// between the last two.
pub(crate) fn most_trials(max: u32) -> u32 {
    let doublings = u32::BITS - max.max(1).saturating_sub(1).leading_zeros();
    // 1 + doublings candidates, and at most as many again to bisect the last interval.
    1 + doublings + doublings.saturating_sub(1)
}

/// Exit status of a command refused before it ran: a file it was asked to write cannot be
/// written (as clap's for a usage error).
const EXIT_UNWRITABLE_OUTPUT: u8 = 2;

/// Checks, before anything runs, that every file a command will write when it ends (its
/// `--json`, `--csv`, `--plot`, `--output`, ...) can be written, each given as the flag that
/// named it and its path. The first that cannot is refused with one line naming the flag and
/// the path, and the command exits with status 2 at once, rather than after a long run whose
/// report would then be lost. Returns that exit status, or `None` when all can be written.
pub fn refuse_unwritable_outputs<'a>(
    outputs: impl IntoIterator<Item = (&'static str, &'a Path)>,
) -> Option<ExitCode> {
    for (flag, path) in outputs {
        if let Err(reason) = check_writable(path) {
            eprintln!(
                "playsim: error: {flag} {}: cannot be written: {reason} (name a file in a directory you can \
                 write, for example {flag} run{})",
                path.display(),
                path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default()
            );
            return Some(ExitCode::from(EXIT_UNWRITABLE_OUTPUT));
        }
    }
    None
}

/// Why `path` cannot be written (atomically: a temporary file beside it, renamed over it),
/// found without clobbering a file already there: its directory must exist, the path must
/// not be a directory, and both the file (opened to append, created if missing and then
/// removed again) and a new file beside it must be creatable.
fn check_writable(path: &Path) -> Result<(), String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("the directory {} does not exist", parent.display()))
        }
        Err(e) => return Err(format!("cannot look at the directory {}: {e}", parent.display())),
        Ok(meta) if !meta.is_dir() => return Err(format!("{} is not a directory", parent.display())),
        Ok(_) => {}
    }
    if path.is_dir() {
        return Err("it is a directory".to_owned());
    }
    let existed = path.symlink_metadata().is_ok();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("cannot open it for writing: {e}"))?;
    if !existed {
        let _ = std::fs::remove_file(path);
        return Ok(());
    }
    // The file was there already and may be writable in a directory that is not: the report
    // goes to a temporary file beside it first.
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let probe = parent.join(format!(".{name}.playsim-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| format!("cannot create a file in {}: {e}", parent.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_paths_pass_and_an_existing_report_is_left_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let new = tmp.path().join("new.json");
        assert_eq!(check_writable(&new), Ok(()));
        assert!(!new.exists(), "the probe was not removed");
        let old = tmp.path().join("old.json");
        std::fs::write(&old, b"{\"kept\": true}").unwrap();
        assert_eq!(check_writable(&old), Ok(()));
        assert_eq!(std::fs::read(&old).unwrap(), b"{\"kept\": true}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "a probe was left behind");
    }

    #[test]
    fn unwritable_paths_say_why() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let missing = tmp.path().join("no/such/dir/r.json");
        assert_eq!(
            check_writable(&missing),
            Err(format!("the directory {} does not exist", tmp.path().join("no/such/dir").display()))
        );
        assert_eq!(
            check_writable(&file.join("r.json")),
            Err(format!("{} is not a directory", file.display()))
        );
        assert_eq!(check_writable(tmp.path()), Err("it is a directory".to_owned()));
    }

    #[test]
    fn a_search_tries_the_doublings_then_a_bisection_at_most() {
        // 1, 2, 4, ..., 64, then 32..64 bisected in 5.
        assert_eq!(most_trials(64), 12);
        // 1, 2, 4, 8, 16, then 8..16 in 3.
        assert_eq!(most_trials(16), 8);
        assert_eq!((most_trials(1), most_trials(2), most_trials(5)), (1, 2, 6));
    }
}
