//! Subcommands of the `playsim` binary that are big enough for a file of their own.
//! Each holds its clap arguments and its handler; `main.rs` dispatches to them and
//! keeps the value parsers they share; the live progress line is here, shared by `play` and `run`.

pub mod cluster;
pub mod frametest;
pub mod run;

use std::sync::Arc;
use std::time::Duration;

use playsim::engine::LiveCounters;

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
