//! The [`Dashboard`] handle and its drawing thread: a frame every refresh, keys in between.

use std::io::{self, BufWriter, Write};
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::Signal;

use crate::backend::TtyBackend;
use crate::draw::draw;
use crate::plain::plain_text_within;
use crate::tty::{Screen, Target, Tty};
use crate::view::DashboardView;

/// How often the dashboard is drawn unless told otherwise.
pub const DEFAULT_REFRESH: Duration = Duration::from_millis(250);
/// The shortest refresh: a shorter one is raised to this.
pub const MIN_REFRESH: Duration = Duration::from_millis(100);
/// How often the whole screen is repainted rather than only the cells that changed, so that a
/// line some other thread printed over the dashboard does not stay.
const REPAINT_EVERY: Duration = Duration::from_secs(2);
/// Room for a whole frame of a large terminal, so that a frame goes out in one write.
const FRAME_BUFFER_BYTES: usize = 256 * 1024;

/// A live dashboard on a terminal, drawn on a thread of its own until [`Dashboard::stop`].
///
/// Starting one puts the terminal in raw mode and on its alternate screen; the thread then calls
/// the caller's `source` for a [`DashboardView`] and draws it, at most once a refresh, and
/// between frames waits for keys:
///
/// - `q` or Esc hides the dashboard: the terminal is put back as it was and the thread ends;
///   the run goes on (and the caller, seeing [`Dashboard::is_shown`] false, may go back to
///   its progress line).
/// - Ctrl-C, which raw mode delivers as a key rather than as a signal, puts the terminal back
///   and then sends `SIGINT` to this process, so that the program's own Ctrl-C handling runs
///   (playsim's finishes a partial report) on a terminal in its usual modes, with its message
///   on the normal screen; a program that does not handle `SIGINT` dies of it, as it would
///   have without the dashboard, and does not leave the terminal raw.
///
/// [`Dashboard::stop`] and dropping the handle end the thread and put the terminal back, and,
/// unless turned off with [`DashboardBuilder::final_snapshot`], print the last counters as
/// [`plain_text`](crate::plain_text) (names cut to the terminal's width) on the normal screen,
/// so that what was shown does not vanish with the alternate screen (not after `q`: the
/// dashboard was put away on purpose). A panic on any thread puts the terminal back before its
/// message is printed.
///
/// The terminal is never touched from the caller's thread after [`Dashboard::start`] returns,
/// and the `source` is only called on the dashboard's thread: it should be quick (a look at
/// atomic counters), as the keys wait while it runs.
pub struct Dashboard {
    screen: Arc<Screen>,
    snapshot_on_stop: Arc<AtomicBool>,
    final_snapshot: bool,
    wake: UnixStream,
    thread: Option<JoinHandle<io::Result<()>>>,
}

/// Options for a [`Dashboard`]: where, how often, and whether to leave a snapshot.
#[derive(Clone, Debug)]
pub struct DashboardBuilder {
    target: Target,
    refresh: Duration,
    final_snapshot: bool,
}

impl Default for DashboardBuilder {
    fn default() -> Self {
        DashboardBuilder { target: Target::Stdout, refresh: DEFAULT_REFRESH, final_snapshot: true }
    }
}

impl DashboardBuilder {
    /// The terminal to draw on; standard output's by default.
    pub fn target(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// How often to draw: [`DEFAULT_REFRESH`] by default, never more often than [`MIN_REFRESH`].
    pub fn refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh;
        self
    }

    /// Whether stopping prints the last counters on the normal screen (on by default).
    pub fn final_snapshot(mut self, on: bool) -> Self {
        self.final_snapshot = on;
        self
    }

    /// Takes over the terminal and starts the drawing thread.
    ///
    /// Fails, leaving the terminal as it was, when the target is not a terminal, when this
    /// process is not in the terminal's foreground, or when the terminal refuses raw mode.
    pub fn start<F>(self, source: F) -> io::Result<Dashboard>
    where
        F: FnMut() -> DashboardView + Send + 'static,
    {
        let tty = Tty::open(&self.target)?;
        tty.check_foreground()?;
        let size = tty.size();
        let writer = BufWriter::with_capacity(FRAME_BUFFER_BYTES, tty.output.try_clone()?);
        let terminal = Terminal::new(TtyBackend::new(writer, size))?;
        let (wake, woken) = UnixStream::pair()?;
        let screen = Screen::enter(&tty)?;
        let snapshot_on_stop = Arc::new(AtomicBool::new(false));
        let drawer = Drawer {
            tty,
            terminal,
            screen: Arc::clone(&screen),
            hidden_by_key: Arc::new(AtomicBool::new(false)),
            snapshot_on_stop: Arc::clone(&snapshot_on_stop),
            woken,
            refresh: self.refresh.max(MIN_REFRESH),
        };
        let spawned =
            std::thread::Builder::new().name("playsim-dashboard".into()).spawn(move || drawer.run(source));
        let thread = match spawned {
            Ok(thread) => thread,
            Err(e) => {
                let _ = screen.restore();
                return Err(e);
            }
        };
        Ok(Dashboard {
            screen,
            snapshot_on_stop,
            final_snapshot: self.final_snapshot,
            wake,
            thread: Some(thread),
        })
    }
}

impl Dashboard {
    /// Options beyond [`Dashboard::start`]'s.
    pub fn builder() -> DashboardBuilder {
        DashboardBuilder::default()
    }

    /// Starts a dashboard on `target`, drawn every `refresh` (at least [`MIN_REFRESH`]) from
    /// the views `source` returns, with a snapshot printed when it stops. See
    /// [`DashboardBuilder::start`] for when it fails.
    pub fn start<F>(target: Target, refresh: Duration, source: F) -> io::Result<Dashboard>
    where
        F: FnMut() -> DashboardView + Send + 'static,
    {
        Dashboard::builder().target(target).refresh(refresh).start(source)
    }

    /// Whether the dashboard is still on the screen: false once `q`, Esc or Ctrl-C put it
    /// away, once a panic did, or once the terminal went away.
    pub fn is_shown(&self) -> bool {
        self.screen.is_shown()
    }

    /// Ends the drawing thread, puts the terminal back and prints the snapshot (see
    /// [`Dashboard`]).
    ///
    /// An error says that the terminal failed (it hung up, a write failed) or that the `source`
    /// panicked; the terminal is put back all the same, and the run is not concerned.
    pub fn stop(mut self) -> io::Result<()> {
        let snapshot = self.final_snapshot;
        self.finish(snapshot)
    }

    fn finish(&mut self, snapshot: bool) -> io::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        self.snapshot_on_stop.store(snapshot, Ordering::SeqCst);
        // The thread waits on the other end: end of stream wakes it at once.
        let _ = self.wake.shutdown(Shutdown::Both);
        let outcome = match thread.join() {
            Ok(outcome) => outcome,
            Err(_) => Err(io::Error::other("the dashboard's view source panicked")),
        };
        let restored = self.screen.restore();
        outcome.and(restored)
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        // No snapshot while unwinding: the panic's message is the thing to read.
        let snapshot = self.final_snapshot && !std::thread::panicking();
        let _ = self.finish(snapshot);
    }
}

/// The key hint of a dashboard behind a launcher: its keys come a line at a time from standard
/// input (`with_keys`), or not at all; Ctrl-C goes to the launcher, which stops the run.
fn launched_key_hint(with_keys: bool) -> &'static str {
    if with_keys {
        "q then Enter hides the dashboard, Ctrl-C stops the run"
    } else {
        "Ctrl-C stops the run"
    }
}

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// `q` or Esc: put the dashboard away.
    Hide,
    /// Ctrl-C: stop the run.
    Interrupt,
}

/// The action in a read's worth of bytes from a terminal in raw mode, if any; Ctrl-C wins.
///
/// Escape sequences (arrow and function keys, Alt with a key) are skipped; an Esc counts only
/// when nothing follows it in the same read, as a key sequence arrives in one.
pub(crate) fn action(bytes: &[u8]) -> Option<Action> {
    const CTRL_C: u8 = 0x03;
    const ESC: u8 = 0x1b;
    let mut found = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            CTRL_C => return Some(Action::Interrupt),
            b'q' | b'Q' => found = found.or(Some(Action::Hide)),
            ESC => match bytes.get(i + 1) {
                None | Some(&ESC) => found = found.or(Some(Action::Hide)),
                Some(b'[' | b'O') => {
                    // CSI or SS3: parameters up to a final byte in 0x40..=0x7e.
                    i += 2;
                    while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                        i += 1;
                    }
                }
                // Alt with a key: skip the key.
                Some(_) => i += 1,
            },
            _ => {}
        }
        i += 1;
    }
    found
}

/// The drawing thread's state.
struct Drawer {
    tty: Tty,
    terminal: Terminal<TtyBackend<BufWriter<std::fs::File>>>,
    screen: Arc<Screen>,
    hidden_by_key: Arc<AtomicBool>,
    snapshot_on_stop: Arc<AtomicBool>,
    woken: UnixStream,
    refresh: Duration,
}

/// What the wait between frames ended with.
enum Wake {
    Timeout,
    Keys,
    /// Launched: standard input, where the keys came from, was closed.
    KeysGone,
    Stop,
    HungUp,
}

impl Drawer {
    fn run<F: FnMut() -> DashboardView>(mut self, mut source: F) -> io::Result<()> {
        self.screen.set_drawer(std::thread::current().id());
        let mut keys = true;
        let mut next_frame = Instant::now();
        let mut next_repaint = Instant::now() + REPAINT_EVERY;
        loop {
            let timeout = next_frame.saturating_duration_since(Instant::now());
            match self.wait(keys, Some(timeout)) {
                Wake::Stop => break,
                Wake::HungUp => {
                    let _ = self.give_back();
                    return Err(io::Error::other("the dashboard's terminal hung up"));
                }
                Wake::Keys => match self.read_keys() {
                    Ok(Some(Action::Hide)) => {
                        self.hidden_by_key.store(true, Ordering::SeqCst);
                        return self.give_back();
                    }
                    Ok(Some(Action::Interrupt)) => {
                        self.give_back()?;
                        rustix::process::kill_process(rustix::process::getpid(), Signal::INT)?;
                        // The program stops the run and then the dashboard, which prints the
                        // snapshot: wait for that, drawing nothing on the restored terminal.
                        while !matches!(self.wait(false, None), Wake::Stop) {}
                        break;
                    }
                    Ok(None) => {}
                    // Not readable after all (standard output opened for writing only), or
                    // the end of a launcher's standard input: go on without keys.
                    Err(_) => keys = false,
                },
                Wake::KeysGone => keys = false,
                Wake::Timeout => {}
            }
            if Instant::now() < next_frame {
                continue;
            }
            let mut view = source();
            if self.tty.launched && view.key_hint.is_none() {
                view.key_hint = Some(launched_key_hint(keys && self.tty.keys.is_some()).to_owned());
            }
            let repaint = Instant::now() >= next_repaint;
            if repaint {
                next_repaint = Instant::now() + REPAINT_EVERY;
            }
            let drawn = {
                let Some(_gate) = self.screen.frame_gate() else {
                    // A panic elsewhere put the terminal back.
                    return Ok(());
                };
                self.terminal.backend_mut().size = self.tty.size();
                let cleared = if repaint { self.terminal.clear() } else { Ok(()) };
                cleared.and_then(|()| self.terminal.draw(|frame| draw(frame, &view)).map(drop))
            };
            if let Err(e) = drawn {
                let _ = self.give_back();
                return Err(e);
            }
            next_frame = Instant::now() + self.refresh;
        }
        let snapshot =
            self.snapshot_on_stop.load(Ordering::SeqCst) && !self.hidden_by_key.load(Ordering::SeqCst);
        let view = snapshot.then(&mut source);
        self.give_back()?;
        if let Some(view) = view {
            let width = usize::from(self.tty.size().width);
            self.tty.output.write_all(plain_text_within(&view, width).as_bytes())?;
            self.tty.output.flush()?;
        }
        Ok(())
    }

    /// Puts the terminal back, through ratatui first so that it does not show the cursor again
    /// when dropped, on the normal screen.
    fn give_back(&mut self) -> io::Result<()> {
        let _ = self.terminal.show_cursor();
        self.screen.restore()
    }

    /// Waits up to `timeout` (for ever with `None`) for keys (when `keys`) or the stop.
    fn wait(&self, keys: bool, timeout: Option<Duration>) -> Wake {
        let events = PollFlags::IN;
        let mut fds = vec![PollFd::from_borrowed_fd(self.woken.as_fd(), events)];
        if let Some(input) = self.tty.keys.as_ref().filter(|_| keys) {
            fds.push(PollFd::from_borrowed_fd(input.as_fd(), events));
        }
        let timeout = timeout.map(|t| Timespec {
            tv_sec: t.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: t.subsec_nanos().into(),
        });
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(0) | Err(_) => Wake::Timeout,
            Ok(_) if !fds[0].revents().is_empty() => Wake::Stop,
            Ok(_) => {
                let revents = fds.get(1).map(PollFd::revents).unwrap_or_else(PollFlags::empty);
                let ended = revents.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL);
                if self.tty.launched {
                    // A pipe may hold the last keys and be closed at once: keys first.
                    if revents.contains(PollFlags::IN) {
                        Wake::Keys
                    } else if ended {
                        Wake::KeysGone
                    } else {
                        Wake::Timeout
                    }
                } else if ended {
                    Wake::HungUp
                } else if revents.contains(PollFlags::IN) {
                    Wake::Keys
                } else {
                    Wake::Timeout
                }
            }
        }
    }

    fn read_keys(&self) -> io::Result<Option<Action>> {
        let Some(input) = &self.tty.keys else { return Ok(None) };
        let mut bytes = [0u8; 64];
        match rustix::io::read(input, &mut bytes) {
            // The end of a launcher's standard input (a raw terminal reads 0 bytes for none).
            Ok(0) if self.tty.launched => Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => Ok(action(&bytes[..n])),
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;
    use crate::testutil::{sample_view, Pty};
    use crate::tty::is_terminal_available;

    /// The tests that start a dashboard take turns: the panic hook puts back every dashboard's
    /// terminal, so one test's panicking source would hide another's dashboard.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
        TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    const ENTER: &str = "\x1b[?1049h";
    const LEAVE: &str = "\x1b[?1049l";

    /// The sample view, with the first stream's presented count going up by one a call.
    fn counting(calls: &Arc<AtomicU64>) -> impl FnMut() -> DashboardView + Send + 'static {
        let calls = Arc::clone(calls);
        move || {
            let mut view = sample_view();
            view.streams[0].presented = 5000 + calls.fetch_add(1, Ordering::SeqCst);
            view
        }
    }

    fn start_on(pty: &Pty, refresh: Duration, calls: &Arc<AtomicU64>) -> Dashboard {
        Dashboard::start(Target::Tty(pty.path.clone()), refresh, counting(calls)).expect("start")
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What was written after the dashboard left the alternate screen.
    fn after_leaving(output: &str) -> &str {
        output.split_once(LEAVE).map_or("", |(_, after)| after)
    }

    #[test]
    fn it_draws_in_raw_mode_on_the_alternate_screen_and_q_gives_the_terminal_back() {
        let _turn = one_at_a_time();
        let pty = Pty::new(100, 30);
        assert!(is_terminal_available(&Target::Tty(pty.path.clone())));
        let calls = Arc::new(AtomicU64::new(0));
        // Asked for a frame a millisecond, it draws one every MIN_REFRESH at most.
        let dashboard = start_on(&pty, Duration::from_millis(1), &calls);
        let started = Instant::now();
        pty.wait_for("a frame", |out| {
            out.contains(ENTER) && out.contains("video disk") && out.contains("5000")
        });
        assert!(!pty.is_cooked(), "raw mode while the dashboard is shown");
        assert!(dashboard.is_shown());
        wait_until("a few frames", || calls.load(Ordering::SeqCst) >= 3);
        let frames = calls.load(Ordering::SeqCst);
        let most = started.elapsed().as_millis() / MIN_REFRESH.as_millis() + 2;
        assert!(u128::from(frames) <= most, "{frames} frames in {:?}", started.elapsed());

        pty.type_keys(b"q");
        wait_until("q to hide the dashboard", || !dashboard.is_shown());
        pty.wait_for("the normal screen", |out| out.contains(LEAVE));
        assert!(pty.is_cooked(), "the terminal's modes are back");
        dashboard.stop().expect("stop");
        let output = pty.output();
        assert!(!after_leaving(&output).contains("video disk"), "no snapshot after q: {output:?}");
        let frames = calls.load(Ordering::SeqCst);
        std::thread::sleep(MIN_REFRESH * 2);
        assert_eq!(calls.load(Ordering::SeqCst), frames, "no frames after q");
    }

    #[test]
    fn stopping_puts_the_terminal_back_and_leaves_the_counters_on_the_normal_screen() {
        let _turn = one_at_a_time();
        let pty = Pty::new(80, 24);
        let calls = Arc::new(AtomicU64::new(0));
        let dashboard = start_on(&pty, DEFAULT_REFRESH, &calls);
        pty.wait_for("a frame", |out| out.contains("video disk"));
        dashboard.stop().expect("stop");
        assert!(pty.is_cooked());
        let output = pty.wait_for("the snapshot", |out| after_leaving(out).contains("matrix:"));
        let snapshot = after_leaving(&output);
        // The last view, taken when stopping, as plain text (newlines made CR LF by the
        // terminal, back in its usual modes).
        let last = 5000 + calls.load(Ordering::SeqCst) - 1;
        assert!(snapshot.starts_with("playsim play nfs://"), "{snapshot:?}");
        assert!(snapshot.contains(&format!("\r\nA            {last}           3")), "{snapshot:?}");
        assert!(snapshot.ends_with("2 streams\r\n"), "plain text, last: {snapshot:?}");
        assert!(!snapshot.contains('\x1b'), "plain text: {snapshot:?}");

        // Without the snapshot, and by dropping the handle.
        let pty = Pty::new(80, 24);
        let dashboard = Dashboard::builder()
            .target(Target::Tty(pty.path.clone()))
            .final_snapshot(false)
            .start(sample_view)
            .expect("start");
        pty.wait_for("a frame", |out| out.contains("video disk"));
        drop(dashboard);
        assert!(pty.is_cooked());
        let output = pty.wait_for("the normal screen", |out| out.contains(LEAVE));
        assert!(!after_leaving(&output).contains("video disk"));
    }

    #[test]
    fn ctrl_c_gives_the_terminal_back_then_raises_sigint() {
        let _turn = one_at_a_time();
        let interrupted = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
            .expect("a SIGINT handler");
        let pty = Pty::new(80, 24);
        let calls = Arc::new(AtomicU64::new(0));
        let dashboard = start_on(&pty, MIN_REFRESH, &calls);
        pty.wait_for("a frame", |out| out.contains("video disk"));
        pty.type_keys(b"\x03");
        wait_until("SIGINT", || interrupted.load(Ordering::SeqCst));
        // The program's handler found the terminal as usual.
        assert!(pty.is_cooked());
        assert!(!dashboard.is_shown());
        assert!(pty.output().contains(LEAVE));
        // It then stops the dashboard, which prints the counters.
        dashboard.stop().expect("stop");
        pty.wait_for("the snapshot", |out| after_leaving(out).contains("video disk"));
    }

    #[test]
    fn behind_a_launcher_it_draws_without_touching_the_terminals_modes() {
        let _turn = one_at_a_time();
        let pty = Pty::new(80, 24);
        let target = Target::Launched(pty.path.clone());
        assert!(is_terminal_available(&target));
        let calls = Arc::new(AtomicU64::new(0));
        let dashboard = Dashboard::start(target, MIN_REFRESH, counting(&calls)).expect("start");
        let output = pty.wait_for("a frame", |out| out.contains(ENTER) && out.contains("video disk"));
        // The launcher keeps the terminal as it was: its Ctrl-C, its echo, its lines.
        assert!(pty.is_cooked(), "the modes are left alone");
        assert!(output.contains("Ctrl-C stops the run"), "{output:?}");
        assert!(!output.contains("q hides the dashboard,"), "q is not read raw: {output:?}");
        // Bytes typed on the terminal are the launcher's, not the dashboard's.
        pty.type_keys(b"q");
        std::thread::sleep(MIN_REFRESH * 3);
        assert!(dashboard.is_shown());
        dashboard.stop().expect("stop");
        assert!(pty.is_cooked());
        pty.wait_for("the snapshot", |out| after_leaving(out).contains("video disk"));
    }

    #[test]
    fn a_panicking_source_gives_the_terminal_back() {
        let _turn = one_at_a_time();
        let pty = Pty::new(80, 24);
        let calls = Arc::new(AtomicU64::new(0));
        let mut counting = counting(&calls);
        let source = move || {
            let view = counting();
            assert!(view.streams[0].presented < 5002, "a source that fails on its third call");
            view
        };
        let target = Target::Tty(pty.path.clone());
        let dashboard = Dashboard::start(target, MIN_REFRESH, source).expect("start");
        pty.wait_for("the normal screen", |out| out.contains(LEAVE));
        assert!(pty.is_cooked());
        assert!(!dashboard.is_shown());
        let error = dashboard.stop().expect_err("the source panicked");
        assert!(error.to_string().contains("panicked"), "{error}");
    }

    #[test]
    fn the_handle_can_move_to_another_thread() {
        fn send_and_sync<T: Send + Sync>() {}
        send_and_sync::<Dashboard>();
        send_and_sync::<DashboardView>();
    }

    #[test]
    fn no_dashboard_without_a_terminal() {
        for path in ["/dev/null", "/nonexistent/tty"] {
            let target = Target::Tty(path.into());
            assert!(!is_terminal_available(&target), "{path}");
            let error = Dashboard::start(target, DEFAULT_REFRESH, DashboardView::default)
                .err()
                .expect("no dashboard");
            assert!(error.to_string().contains(path), "{error}");
        }
    }

    #[test]
    fn q_esc_and_ctrl_c_are_the_keys_and_sequences_are_not() {
        assert_eq!(action(b"q"), Some(Action::Hide));
        assert_eq!(action(b"Q"), Some(Action::Hide));
        assert_eq!(action(b"\x1b"), Some(Action::Hide), "a lone Esc");
        assert_eq!(action(b"\x1b\x1b"), Some(Action::Hide));
        assert_eq!(action(b"\x03"), Some(Action::Interrupt));
        assert_eq!(action(b"q\x03"), Some(Action::Interrupt), "Ctrl-C wins");
        assert_eq!(action(b"x \r"), None);
        // Up arrow, F5, Alt-q, an SS3 arrow: none of them is Esc or q.
        assert_eq!(action(b"\x1b[A"), None);
        assert_eq!(action(b"\x1b[15~"), None);
        assert_eq!(action(b"\x1bq"), None);
        assert_eq!(action(b"\x1bOB"), None);
        assert_eq!(action(b"\x1b[A q"), Some(Action::Hide));
        assert_eq!(action(b""), None);
        // A line from a launcher's standard input.
        assert_eq!(action(b"q\n"), Some(Action::Hide));
    }
}
