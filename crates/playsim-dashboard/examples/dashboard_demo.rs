//! Runs the dashboard for a few seconds on a made-up run whose counters change, to try it on a
//! terminal: `cargo run -p playsim-dashboard --example dashboard_demo -- 5`.
//!
//! Arguments: the seconds to run (10 by default), `--clients N` for a run on N ranks, and
//! `--tty PATH` to draw on a terminal by its path (`/dev/tty`, as rank 0 under mpirun would).
//! `q` or Esc hides the dashboard and the demo runs on to its end; Ctrl-C stops it early through
//! its own SIGINT handler, as playsim's stops a run, and the last counters are printed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use playsim_dashboard::{
    is_terminal_available, plain_text, ClientView, Dashboard, DashboardView, Drops, StageView, StreamView,
    Target, DEFAULT_REFRESH,
};

const FPS: f64 = 24.0;
/// A 4K DPX frame (4096 × 2160, 10-bit RGB) in MB.
const FRAME_MB: f64 = 35.4;
/// Slack values kept for the sparklines.
const HISTORY: usize = 240;

fn main() -> std::io::Result<()> {
    let mut seconds = 10.0;
    let mut clients = 0;
    let mut target = Target::Stdout;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--clients" => clients = args.next().and_then(|n| n.parse().ok()).unwrap_or(4),
            "--tty" => target = Target::Tty(args.next().unwrap_or_else(|| "/dev/tty".into()).into()),
            s => match s.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => seconds = s,
                _ => {
                    eprintln!("usage: dashboard_demo [SECONDS] [--clients N] [--tty PATH]");
                    std::process::exit(2);
                }
            },
        }
    }
    let planned = Duration::from_secs_f64(seconds);

    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))?;

    if !is_terminal_available(&target) {
        let at = planned.min(Duration::from_secs(2));
        eprintln!("dashboard_demo: no terminal to draw on; the counters at {at:?} instead:");
        print!("{}", plain_text(&demo_view(at, planned, clients)));
        return Ok(());
    }
    let started = Instant::now();
    let dashboard =
        Dashboard::start(target, DEFAULT_REFRESH, move || demo_view(started.elapsed(), planned, clients))?;
    let mut said_hidden = false;
    while started.elapsed() < planned && !interrupted.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        if !dashboard.is_shown() && !said_hidden && !interrupted.load(Ordering::SeqCst) {
            eprintln!("dashboard_demo: dashboard hidden; the run goes on to its end");
            said_hidden = true;
        }
    }
    if interrupted.load(Ordering::SeqCst) {
        eprintln!("dashboard_demo: interrupted; stopping");
    }
    dashboard.stop()?;
    eprintln!("dashboard_demo: done after {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The made-up run `elapsed` into it: stream A loses frames to storage in a short stall every
/// 4 s, stream B one frame in 50 to decode and now and then an unreadable one.
fn demo_view(elapsed: Duration, planned: Duration, n_clients: u32) -> DashboardView {
    let t = elapsed.as_secs_f64();
    let due = (t * FPS) as u64;
    let stalled = |frame: u64| (frame as f64 / FPS) % 4.0 >= 3.0 && (frame as f64 / FPS) % 4.0 < 3.4;
    let slack_a = |frame: u64| {
        if stalled(frame) {
            -3.0 - (frame % 5) as f64
        } else {
            22.0 + 14.0 * (frame as f64 / 6.0).sin()
        }
    };
    let slack_b = |frame: u64| if frame % 50 == 49 { -1.5 } else { 30.0 + 8.0 * (frame as f64 / 11.0).cos() };
    let history = |slack: &dyn Fn(u64) -> f64| -> Vec<f64> {
        (due.saturating_sub(HISTORY as u64)..due).map(slack).collect()
    };
    let storage_a = (0..due).filter(|&f| stalled(f)).count() as u64;
    let decode_b = due / 50;
    let unreadable_b = due / 400;
    let a = StreamView {
        name: "A /mnt/nfs/seq/frame.%07d.dpx".into(),
        presented: due - storage_a,
        dropped: Drops { storage: storage_a, ..Drops::default() },
        buffered: if stalled(due) { 1 } else { 6 + (due % 3) as u32 },
        window: 8,
        slack_ms: history(&slack_a),
        mb_per_s: if stalled(due) { 180.0 } else { FPS * FRAME_MB },
        fps: if stalled(due) { 3.0 } else { FPS },
    };
    let b = StreamView {
        name: "B /mnt/nfs/plate/frame.%07d.dpx".into(),
        presented: due - decode_b - unreadable_b,
        dropped: Drops { decode: decode_b, unreadable: unreadable_b, ..Drops::default() },
        buffered: 4 + (due % 5) as u32,
        window: 8,
        slack_ms: history(&slack_b),
        mb_per_s: FPS * FRAME_MB * 0.98,
        fps: FPS * 0.98,
    };
    let stages = vec![
        StageView { name: "read".into(), cpu_percent: 11.0 + 4.0 * t.sin(), p99_ms: Some(8.4) },
        StageView { name: "decode".into(), cpu_percent: 182.0 + 9.0 * (t / 2.0).cos(), p99_ms: Some(35.2) },
        StageView { name: "output".into(), cpu_percent: 3.5, p99_ms: (t > 1.0).then_some(1.2) },
    ];
    let clients = (0..n_clients)
        .map(|rank| {
            let lost = u64::from(rank) * due / 200;
            ClientView {
                rank,
                host: format!("render{:02}", rank + 1),
                presented: 2 * due - lost,
                dropped: Drops { storage: lost, ..Drops::default() },
                fps: 2.0 * FPS - f64::from(rank) * 0.2,
                mb_per_s: 2.0 * FPS * FRAME_MB - f64::from(rank) * 7.0,
            }
        })
        .collect();
    DashboardView {
        title: "playsim play nfs://filer/export/seq  DPX 4K 24 fps  2 streams  (demo)".into(),
        elapsed,
        planned: Some(planned),
        streams: vec![a, b],
        stages,
        clients,
        key_hint: None,
        status: Some(format!("demo: made-up counters; A stalls on storage every 4 s, frame {due}")),
    }
}
