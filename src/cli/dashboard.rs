//! `--tui`: the live dashboard of `play`, `run`, `capacity` and `matrix`, drawn by
//! `playsim-dashboard` on a thread of its own from the engine's [`LiveView`], a few times a
//! second. The presenter never waits for it: a view is taken under each stream's lock for as
//! long as copying its counters takes.
//!
//! A command that runs several simulations (a scenario's runs, a search's trials) puts each in
//! the [`LiveSlot`] as it starts; the dashboard follows whichever runs now.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use playsim::engine::{LiveCounters, LiveView};
use playsim_dashboard::{ClientView, Dashboard, DashboardView, Drops, StageView, StreamView, Target};

/// The simulation the dashboard shows, and a line about where the command is.
#[derive(Clone, Default)]
pub struct LiveSlot(Arc<Mutex<Slot>>);

#[derive(Default)]
struct Slot {
    live: Option<Arc<LiveCounters>>,
    status: Option<String>,
}

impl LiveSlot {
    /// Shows `live` from now on.
    pub fn show(&self, live: Arc<LiveCounters>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).live = Some(live);
    }

    /// Sets the status line (`capacity: trial 3 of at most 12, 4 streams`).
    pub fn status(&self, status: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).status = Some(status);
    }

    fn get(&self) -> (Option<Arc<LiveCounters>>, Option<String>) {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (slot.live.clone(), slot.status.clone())
    }
}

/// A search's watch that puts each trial on the dashboard, with a status line saying which
/// trial of how many at most (`what`: `capacity`, or a matrix cell).
pub fn trial_watch(slot: LiveSlot, what: &'static str, max: u32, trials: u32) -> playsim::TrialWatch {
    let most = super::most_trials(max) * trials;
    let started = Mutex::new(0u32);
    Arc::new(move |candidate, live| {
        let mut k = started.lock().unwrap_or_else(|e| e.into_inner());
        *k += 1;
        slot.status(format!("{what}: trial {} of at most {most}: {candidate}", *k));
        slot.show(live);
    })
}

/// Whether `--tui` can draw here; says why not on stderr when it cannot.
pub fn wanted(tui: bool, quiet: bool) -> bool {
    if !tui || quiet {
        return false;
    }
    if !std::io::stdout().is_terminal() {
        eprintln!("playsim: --tui: standard output is not a terminal; the dashboard is off");
        return false;
    }
    true
}

/// Starts the dashboard on this process's terminal, titled `title`, over what `slot` holds;
/// `planned` is the run's length when known, else worked out from the frames the first stream
/// plays at `fps`. `None`, having said why, when it cannot start.
pub fn start(
    title: String,
    slot: LiveSlot,
    planned: Option<Duration>,
    fps: Option<f64>,
) -> Option<Dashboard> {
    start_on(Target::Stdout, title, slot, planned, fps)
}

/// [`start`] on `target` (under mpirun, rank 0 draws on its controlling terminal).
pub fn start_on(
    target: Target,
    title: String,
    slot: LiveSlot,
    planned: Option<Duration>,
    fps: Option<f64>,
) -> Option<Dashboard> {
    let mut rates = Rates::default();
    let source = move || {
        let (live, status) = slot.get();
        let view = live.as_ref().and_then(|l| l.view());
        let frames = view.as_ref().and_then(|v| v.streams.first()).and_then(|s| s.frames_planned);
        let mut shown = rates.view(view.as_ref());
        shown.title = title.clone();
        shown.planned = planned.or_else(|| match (frames, fps) {
            (Some(frames), Some(fps)) if fps > 0.0 => Some(Duration::from_secs_f64(frames as f64 / fps)),
            _ => None,
        });
        shown.status = status;
        shown
    };
    match Dashboard::builder().target(target).start(source) {
        Ok(dashboard) => Some(dashboard),
        Err(e) => {
            eprintln!("playsim: --tui: the dashboard cannot start ({e}); going on without it");
            None
        }
    }
}

/// Stops the dashboard, leaving its last counters on the normal screen.
pub fn stop(dashboard: Option<Dashboard>) {
    if let Some(dashboard) = dashboard {
        if let Err(e) = dashboard.stop() {
            eprintln!("playsim: --tui: {e}");
        }
    }
}

/// The previous view, for rates over the time between two (on the run's clock).
#[derive(Default)]
struct Rates {
    last: Option<LiveView>,
    shown: DashboardView,
}

impl Rates {
    /// The dashboard's view of `now`; with no run (between trials), the last one shown.
    fn view(&mut self, now: Option<&LiveView>) -> DashboardView {
        let Some(now) = now else { return self.shown.clone() };
        let before =
            self.last.as_ref().filter(|b| b.elapsed < now.elapsed && b.streams.len() == now.streams.len());
        let seconds = before.map_or(now.elapsed, |b| now.elapsed - b.elapsed).as_secs_f64();
        let per_second = |now: u64, before: u64| {
            if seconds > 0.0 {
                now.saturating_sub(before) as f64 / seconds
            } else {
                0.0
            }
        };
        let streams = now
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let b = before.and_then(|b| b.streams.get(i));
                StreamView {
                    name: s.name.clone(),
                    presented: s.presented,
                    dropped: drops(&s.dropped),
                    buffered: u32::try_from(s.buffered).unwrap_or(u32::MAX),
                    window: u32::try_from(s.window).unwrap_or(u32::MAX),
                    slack_ms: s.recent_slack.iter().map(|&ns| ns as f64 / 1e6).collect(),
                    mb_per_s: per_second(s.bytes_read, b.map_or(0, |b| b.bytes_read)) / 1e6,
                    fps: per_second(s.presented, b.map_or(0, |b| b.presented)),
                }
            })
            .collect();
        let stages = now
            .stages
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let cpu_before = before.and_then(|b| b.stages.get(i)).map_or(Duration::ZERO, |b| b.cpu);
                StageView {
                    name: st.name.to_owned(),
                    cpu_percent: if seconds > 0.0 {
                        st.cpu.saturating_sub(cpu_before).as_secs_f64() / seconds * 100.0
                    } else {
                        0.0
                    },
                    p99_ms: st.p99.map(|d| d.as_secs_f64() * 1e3),
                }
            })
            .collect();
        self.shown = DashboardView {
            elapsed: now.elapsed,
            streams,
            stages,
            clients: Vec::<ClientView>::new(),
            ..DashboardView::default()
        };
        self.last = Some(now.clone());
        self.shown.clone()
    }
}

fn drops(d: &playsim::core::DropCounters) -> Drops {
    Drops { storage: d.storage, decode: d.decode, output: d.output, unreadable: d.unreadable }
}

#[cfg(test)]
mod tests {
    use super::*;
    use playsim::engine::{LiveStage, LiveStream};

    fn view(elapsed_s: u64, presented: u64, bytes: u64, decode_cpu_ms: u64) -> LiveView {
        LiveView {
            elapsed: Duration::from_secs(elapsed_s),
            streams: vec![LiveStream {
                name: "a".into(),
                presented,
                bytes_read: bytes,
                buffered: 3,
                window: 8,
                recent_slack: vec![2_000_000, -1_000_000],
                ..LiveStream::default()
            }],
            stages: vec![LiveStage {
                name: "decode",
                cpu: Duration::from_millis(decode_cpu_ms),
                p99: Some(Duration::from_micros(4500)),
            }],
        }
    }

    #[test]
    fn rates_are_taken_between_two_views_on_the_runs_clock() {
        let mut rates = Rates::default();
        let first = rates.view(Some(&view(2, 48, 96_000_000, 1000)));
        assert_eq!((first.streams[0].fps, first.streams[0].mb_per_s), (24.0, 48.0));
        let second = rates.view(Some(&view(4, 98, 196_000_000, 2500)));
        let s = &second.streams[0];
        assert_eq!((s.fps, s.mb_per_s, s.buffered, s.window), (25.0, 50.0, 3, 8));
        assert_eq!(s.slack_ms, [2.0, -1.0]);
        assert_eq!(second.stages[0].cpu_percent, 75.0);
        assert_eq!(second.stages[0].p99_ms, Some(4.5));
        // Between two trials there is no run: the last view stays.
        assert_eq!(rates.view(None), second);
        // A new trial starts its clock again: its rates are its own.
        let next = rates.view(Some(&view(1, 24, 0, 0)));
        assert_eq!(next.streams[0].fps, 24.0);
    }
}
