//! `--tui`: the live dashboard of `play`, `run`, `capacity` and `matrix`, drawn by
//! `playsim-dashboard` on a thread of its own from the engine's [`LiveView`], a few times a
//! second. The presenter never waits for it: a view is taken under each stream's lock for as
//! long as copying its counters takes.
//!
//! A command that runs several simulations (a scenario's runs, a search's trials) puts each in
//! the [`LiveSlot`] as it starts; the dashboard follows whichever runs now.
//!
//! Under mpirun, rank 0 draws it on its controlling terminal behind the launcher
//! ([`launcher_target`]): its own streams, and a row per client from the snapshots every client
//! sends rank 0 a few times a second ([`ClientFeed`]).
//!
//! Under mpirun rank 0 draws on `/dev/tty` as `Target::Launched`: it leaves the terminal's modes
//! alone (changing them from the background would stop it with SIGTTOU), so Ctrl-C goes to mpirun,
//! which SIGTERMs every rank, and rank 0 puts the terminal back in its SIGTERM handler; `q` reaches
//! it through its stdin a line at a time. It is refused, with the reason, when mpirun is not in
//! the terminal's foreground, the terminal has `tostop`, or rank 0 has no terminal. The dashboard
//! is off with `--quiet` or when stdout is not a terminal. `tests/dashboard.rs` and `tests/mpi.rs`
//! check the counters left on the screen against the JSON reports.

use std::collections::BTreeMap;
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
    clients: Option<ClientFeed>,
}

/// The clients' latest counts, as rank 0 last heard them: called on the dashboard's thread at
/// each refresh, so it must be quick.
pub type ClientFeed = Arc<dyn Fn() -> Vec<ClientCounts> + Send + Sync>;

/// One client's running counts in a run on several (from its latest snapshot).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientCounts {
    /// The client's rank.
    pub rank: u32,
    /// The host it runs on.
    pub host: String,
    /// Which of its runs the counts are of (the run's origin): a new one starts its rates again.
    pub run: u64,
    /// The time from the run's origin to the counts.
    pub elapsed: Duration,
    /// Frames presented so far.
    pub presented: u64,
    /// Frames dropped so far, by cause.
    pub dropped: Drops,
    /// Bytes read so far.
    pub bytes_read: u64,
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

    /// Shows a row per client, from `feed`, under the streams.
    pub fn clients(&self, feed: ClientFeed) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clients = Some(feed);
    }

    fn get(&self) -> (Option<Arc<LiveCounters>>, Option<String>, Option<ClientFeed>) {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (slot.live.clone(), slot.status.clone(), slot.clients.clone())
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

/// Under mpirun, rank 0's terminal for `--tui`: its controlling terminal, behind the launcher.
/// `None` without `--tui`, with `--quiet`, or (having said why) when there is none to draw on:
/// rank 0 on another host than mpirun's, mpirun run as a background job, or output to a file.
pub fn launcher_target(tui: bool, quiet: bool) -> Option<Target> {
    if !tui || quiet {
        return None;
    }
    let target = Target::launcher_terminal();
    match playsim_dashboard::check_terminal(&target) {
        Ok(()) => Some(target),
        Err(e) => {
            eprintln!("playsim: --tui: rank 0 has no terminal to draw on ({e}); the dashboard is off");
            None
        }
    }
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
        let (live, status, clients) = slot.get();
        let view = live.as_ref().and_then(|l| l.view());
        let frames = view.as_ref().and_then(|v| v.streams.first()).and_then(|s| s.frames_planned);
        let mut shown = rates.view(view.as_ref());
        if let Some(feed) = clients {
            shown.clients = rates.clients(&feed());
        }
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
    /// Each client's previous counts, and the row last shown for it.
    clients: BTreeMap<u32, (ClientCounts, ClientView)>,
}

impl Rates {
    /// The dashboard's view of `now`; with no run (between trials), the last one shown.
    fn view(&mut self, now: Option<&LiveView>) -> DashboardView {
        let Some(now) = now else { return self.shown.clone() };
        // Once the run ended, its rates are over the whole run (what the snapshot left on the
        // screen says), not over the last moments, when the streams only drain their buffers.
        let before = self
            .last
            .as_ref()
            .filter(|b| !now.ended && b.elapsed < now.elapsed && b.streams.len() == now.streams.len());
        let seconds = before.map_or(now.elapsed, |b| now.elapsed - b.elapsed).as_secs_f64();
        let per_second = |now: u64, before: u64| per_second(now, before, seconds);
        let streams = now
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let b = before.and_then(|b| b.streams.get(i));
                StreamView {
                    name: s.name.clone(),
                    presented: s.presented,
                    dropped: s.dropped,
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
        self.shown = DashboardView { elapsed: now.elapsed, streams, stages, ..DashboardView::default() };
        self.last = Some(now.clone());
        self.shown.clone()
    }

    /// A row per client heard from, by rank, with rates since its previous counts (on its own
    /// clock; since its run's origin for the first counts of a run). A client with no counts
    /// now (between two rounds) keeps its last row.
    fn clients(&mut self, now: &[ClientCounts]) -> Vec<ClientView> {
        for counts in now {
            let before = self
                .clients
                .get(&counts.rank)
                .map(|(b, _)| b)
                .filter(|b| b.run == counts.run && b.elapsed <= counts.elapsed);
            if before.is_some_and(|b| b.elapsed == counts.elapsed) {
                // The same snapshot again: the row stands.
                continue;
            }
            let seconds = before.map_or(counts.elapsed, |b| counts.elapsed - b.elapsed).as_secs_f64();
            let per_second = |now: u64, before: u64| per_second(now, before, seconds);
            let row = ClientView {
                rank: counts.rank,
                host: counts.host.clone(),
                presented: counts.presented,
                dropped: counts.dropped,
                fps: per_second(counts.presented, before.map_or(0, |b| b.presented)),
                mb_per_s: per_second(counts.bytes_read, before.map_or(0, |b| b.bytes_read)) / 1e6,
            };
            self.clients.insert(counts.rank, (counts.clone(), row));
        }
        self.clients.values().map(|(_, row)| row.clone()).collect()
    }
}

/// The rate of a count that went from `before` to `now` in `seconds`; 0 over no time.
fn per_second(now: u64, before: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        now.saturating_sub(before) as f64 / seconds
    } else {
        0.0
    }
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
            ended: false,
        }
    }

    fn client(rank: u32, run: u64, elapsed_s: u64, presented: u64, bytes: u64) -> ClientCounts {
        ClientCounts {
            rank,
            host: format!("node-{rank}"),
            run,
            elapsed: Duration::from_secs(elapsed_s),
            presented,
            dropped: Drops { storage: rank.into(), ..Drops::default() },
            bytes_read: bytes,
        }
    }

    #[test]
    fn each_clients_row_has_rates_between_its_own_snapshots() {
        let mut rates = Rates::default();
        let rows = rates.clients(&[client(1, 7, 2, 48, 20_000_000), client(0, 7, 2, 50, 0)]);
        assert_eq!(rows.iter().map(|r| r.rank).collect::<Vec<_>>(), [0, 1], "by rank");
        assert_eq!((rows[1].fps, rows[1].mb_per_s, rows[1].host.as_str()), (24.0, 10.0, "node-1"));
        assert_eq!(rows[1].dropped.storage, 1);
        let rows = rates.clients(&[client(0, 7, 4, 100, 0), client(1, 7, 4, 96, 60_000_000)]);
        assert_eq!((rows[0].fps, rows[1].fps, rows[1].mb_per_s), (25.0, 24.0, 20.0));
        // The same snapshot again (none came since): the rates stand, not zero.
        let again = rates.clients(&[client(0, 7, 4, 100, 0), client(1, 7, 4, 96, 60_000_000)]);
        assert_eq!(again, rows);
        // Between two rounds rank 0 holds no snapshots: the last rows stay.
        assert_eq!(rates.clients(&[]), rows);
        // A new round (another origin) starts its rates from its own start.
        let next = rates.clients(&[client(1, 8, 1, 30, 5_000_000)]);
        assert_eq!((next[1].presented, next[1].fps, next[1].mb_per_s), (30, 30.0, 5.0));
        assert_eq!(next[0], rows[0]);
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
        // Its end: the rates over the whole run.
        let end = rates.view(Some(&LiveView { ended: true, ..view(4, 90, 0, 0) }));
        assert_eq!(end.streams[0].fps, 22.5);
    }
}
