//! The terminal the dashboard draws on: finding it, raw mode and the alternate screen, its size,
//! and putting it back as it was, from any thread and from a panic.
//!
//! Everything goes through the terminal's own file descriptors (rustix's termios calls), not
//! through crossterm's process-wide terminal functions, which always act on standard input or
//! `/dev/tty`: a dashboard on a tty path set by the caller then reads its keys from, sets raw
//! mode on, and measures the terminal it draws on.

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, OnceLock, TryLockError, Weak};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crossterm::cursor::{Hide, Show};
use crossterm::queue;
use crossterm::style::{Attribute, ResetColor, SetAttribute};
use crossterm::terminal::{Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::layout::Size;
use rustix::termios::{self, OptionalActions, SpecialCodeIndex, Termios};

/// Where the dashboard draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Target {
    /// The terminal on the process's standard output. Keys are read from standard input when it
    /// is that terminal, else from `/dev/tty`, else from standard output's own descriptor.
    #[default]
    Stdout,
    /// A terminal device by its path, opened for reading and writing: `/dev/tty` (the
    /// controlling terminal) for a process whose standard output is a pipe. Keys are read from
    /// the same device.
    Tty(PathBuf),
    /// The terminal (by its path, `/dev/tty`) of a process that a launcher started behind it, as
    /// `mpirun` starts rank 0: in a process group of its own, while the launcher stays in the
    /// terminal's foreground and reads its keys. The dashboard draws there but leaves the
    /// terminal's modes alone (from the background, changing them would stop the process with
    /// `SIGTTOU`), so the keys stay the launcher's: Ctrl-C stops the run through `mpirun`, as it
    /// does without a dashboard. The dashboard's own keys come from standard input when it is
    /// a pipe, which `mpirun` feeds rank 0 from its own a line at a time: `q` then Enter puts
    /// the dashboard away.
    Launched(PathBuf),
}

impl Target {
    /// The process's controlling terminal, `/dev/tty`.
    pub fn controlling_terminal() -> Target {
        Target::Tty(PathBuf::from("/dev/tty"))
    }

    /// The controlling terminal of a process started by a launcher such as `mpirun`:
    /// [`Target::Launched`] on `/dev/tty`.
    pub fn launcher_terminal() -> Target {
        Target::Launched(PathBuf::from("/dev/tty"))
    }
}

/// Whether the dashboard can be shown on `target`: it is a terminal, and this process is in its
/// foreground (a background job that switched the terminal to raw mode would be stopped by
/// `SIGTTOU`).
///
/// The caller turns the dashboard off when this is false, and also with `--quiet`: without a
/// terminal (output to a file or a pipe, a batch job, CI) the run shows its usual progress
/// line, or nothing.
pub fn is_terminal_available(target: &Target) -> bool {
    check_terminal(target).is_ok()
}

/// [`is_terminal_available`], with the reason when there is no terminal to draw on (for the
/// caller to say why the dashboard is off).
pub fn check_terminal(target: &Target) -> io::Result<()> {
    Tty::open(target).and_then(|tty| tty.check_foreground())
}

/// An open terminal: where frames are written and where keys, modes and size come from.
pub(crate) struct Tty {
    /// Frames are written here (a duplicate of the descriptor, so that closing it leaves standard
    /// output open).
    pub(crate) output: File,
    /// The terminal's size is read through it, and its modes read and set.
    pub(crate) control: OwnedFd,
    /// Where keys are read from: the terminal itself, or (launched) standard input when it is a
    /// pipe; none when there is nowhere to read them.
    pub(crate) keys: Option<OwnedFd>,
    /// Started behind a launcher ([`Target::Launched`]): the terminal's modes are left alone,
    /// keys come a line at a time, and the end of them is not the end of the terminal.
    pub(crate) launched: bool,
}

impl Tty {
    pub(crate) fn open(target: &Target) -> io::Result<Tty> {
        match target {
            Target::Stdout => {
                let stdout = io::stdout();
                if !stdout.is_terminal() {
                    return Err(not_a_terminal(Path::new("standard output")));
                }
                let output = File::from(stdout.as_fd().try_clone_to_owned()?);
                let stdin = io::stdin();
                let input = if stdin.is_terminal() {
                    stdin.as_fd().try_clone_to_owned()?
                } else {
                    match open_tty(Path::new("/dev/tty")) {
                        Ok(file) => OwnedFd::from(file),
                        Err(_) => output.as_fd().try_clone_to_owned()?,
                    }
                };
                let keys = Some(input.try_clone()?);
                Ok(Tty { output, control: input, keys, launched: false })
            }
            Target::Tty(path) => {
                let file = open_tty(path)?;
                if !file.is_terminal() {
                    return Err(not_a_terminal(path));
                }
                let input = file.as_fd().try_clone_to_owned()?;
                let keys = Some(input.try_clone()?);
                Ok(Tty { output: file, control: input, keys, launched: false })
            }
            Target::Launched(path) => {
                let file = open_tty(path)?;
                if !file.is_terminal() {
                    return Err(not_a_terminal(path));
                }
                let control = file.as_fd().try_clone_to_owned()?;
                Ok(Tty { output: file, control, keys: piped_stdin()?, launched: true })
            }
        }
    }

    /// Refuses a terminal whose foreground process group is another one: changing its modes
    /// would stop this process with `SIGTTOU`, reading keys with `SIGTTIN`.
    ///
    /// Launched, the foreground must be the launcher's (this process's parent's) group, and the
    /// terminal must let background processes write (`stty -tostop`, the usual setting).
    pub(crate) fn check_foreground(&self) -> io::Result<()> {
        let Ok(foreground) = termios::tcgetpgrp(&self.control) else {
            // Not this process's controlling terminal: no job control applies to it.
            return Ok(());
        };
        let own = rustix::process::getpgrp();
        if !self.launched {
            if foreground != own {
                return Err(io::Error::other(
                    "the terminal's foreground is another process group (a background job cannot \
                     show the dashboard)",
                ));
            }
            return Ok(());
        }
        let launcher =
            rustix::process::getppid().and_then(|parent| rustix::process::getpgid(Some(parent)).ok());
        if foreground != own && Some(foreground) != launcher {
            return Err(io::Error::other(
                "the launcher is not in the terminal's foreground (started as a background job?)",
            ));
        }
        if termios::tcgetattr(&self.control)?.local_modes.contains(termios::LocalModes::TOSTOP) {
            return Err(io::Error::other(
                "the terminal stops processes that write to it from the background (stty tostop)",
            ));
        }
        Ok(())
    }

    /// The terminal's size in cells; 80 by 24 when it does not say (a new pseudo-terminal says
    /// 0 by 0).
    pub(crate) fn size(&self) -> Size {
        match termios::tcgetwinsize(&self.control) {
            Ok(w) if w.ws_col > 0 && w.ws_row > 0 => Size::new(w.ws_col, w.ws_row),
            _ => Size::new(80, 24),
        }
    }
}

fn open_tty(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        // A process without a controlling terminal must not acquire this one by opening it.
        .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display())))
}

/// A duplicate of standard input when it is a pipe or a socket (what a launcher feeds rank 0
/// from its own), for keys; `None` otherwise (`/dev/null`, a file).
fn piped_stdin() -> io::Result<Option<OwnedFd>> {
    let stdin = io::stdin();
    let Ok(stat) = rustix::fs::fstat(&stdin) else { return Ok(None) };
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket => {
            Ok(Some(stdin.as_fd().try_clone_to_owned()?))
        }
        _ => Ok(None),
    }
}

fn not_a_terminal(what: &Path) -> io::Error {
    io::Error::other(format!("{} is not a terminal", what.display()))
}

/// The terminal in the dashboard's modes (raw, alternate screen, cursor hidden), and what it
/// takes to put it back. Shared by the drawing thread, the [`crate::Dashboard`] handle and the
/// panic hook; whichever restores first does it, the others find it done.
pub(crate) struct Screen {
    output: OwnedFd,
    control: OwnedFd,
    /// The modes to put back; none when the dashboard left them alone (launched).
    saved: Option<Termios>,
    shown: AtomicBool,
    /// Held while a frame is written, so that the terminal is not restored half-way through
    /// one (the rest of the frame would land on the normal screen).
    gate: Mutex<()>,
    /// The drawing thread, which the panic hook does not wait for: if it panicked while holding
    /// the gate, it will never let go.
    drawer: OnceLock<ThreadId>,
}

impl Screen {
    /// Puts the terminal in raw mode (keys arrive one by one, Ctrl-C as a byte; reads return at
    /// once), unless launched, and switches to the alternate screen, with the cursor hidden.
    pub(crate) fn enter(tty: &Tty) -> io::Result<Arc<Screen>> {
        let saved = if tty.launched { None } else { Some(termios::tcgetattr(&tty.control)?) };
        let screen = Arc::new(Screen {
            output: tty.output.as_fd().try_clone_to_owned()?,
            control: tty.control.as_fd().try_clone_to_owned()?,
            saved: saved.clone(),
            shown: AtomicBool::new(false),
            gate: Mutex::new(()),
            drawer: OnceLock::new(),
        });
        if let Some(saved) = saved {
            let mut raw = saved;
            raw.make_raw();
            // A read returns what is there, or nothing, without waiting: the drawing thread
            // polls first, and a read must not block if someone else took the bytes.
            raw.special_codes[SpecialCodeIndex::VMIN] = 0;
            raw.special_codes[SpecialCodeIndex::VTIME] = 0;
            termios::tcsetattr(&tty.control, OptionalActions::Now, &raw)?;
        }
        // From here on, restoring has something to undo.
        screen.shown.store(true, Ordering::SeqCst);
        register_for_panics(&screen);
        let mut bytes = Vec::new();
        queue!(bytes, EnterAlternateScreen, Hide, Clear(ClearType::All))?;
        if let Err(e) = write_all(&screen.output, &bytes) {
            let _ = screen.restore();
            return Err(e);
        }
        Ok(screen)
    }

    /// Whether the terminal is still the dashboard's.
    pub(crate) fn is_shown(&self) -> bool {
        self.shown.load(Ordering::SeqCst)
    }

    /// The gate to hold while writing a frame; `None` once the terminal was restored.
    pub(crate) fn frame_gate(&self) -> Option<MutexGuard<'_, ()>> {
        let guard = self.gate.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.is_shown().then_some(guard)
    }

    /// Names the drawing thread (see `drawer`).
    pub(crate) fn set_drawer(&self, thread: ThreadId) {
        let _ = self.drawer.set(thread);
    }

    /// Leaves the alternate screen, shows the cursor and restores the terminal's modes, once;
    /// later calls do nothing.
    pub(crate) fn restore(&self) -> io::Result<()> {
        if !self.shown.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let mut bytes = Vec::new();
        queue!(bytes, ResetColor, SetAttribute(Attribute::Reset), Show, LeaveAlternateScreen)?;
        // Both, even when the first fails: a terminal left in raw mode is the worse half.
        let written = write_all(&self.output, &bytes);
        let modes = match &self.saved {
            Some(saved) => termios::tcsetattr(&self.control, OptionalActions::Now, saved),
            None => Ok(()),
        };
        written?;
        modes?;
        Ok(())
    }

    /// [`Screen::restore`] from the panic hook: waits a moment for a frame being written to end,
    /// but not for ever, and not for the drawing thread itself.
    fn restore_after_panic(&self) {
        let on_drawer = self.drawer.get() == Some(&std::thread::current().id());
        let deadline = Instant::now() + Duration::from_millis(200);
        let _guard = loop {
            match self.gate.try_lock() {
                Ok(guard) => break Some(guard),
                Err(TryLockError::Poisoned(poisoned)) => break Some(poisoned.into_inner()),
                Err(TryLockError::WouldBlock) if on_drawer || Instant::now() >= deadline => break None,
                Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        let _ = self.restore();
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Writes all of `bytes` straight to the descriptor (not through a buffered writer whose
/// contents might be half a frame).
pub(crate) fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The screens in the dashboard's modes, for the panic hook.
static SCREENS: Mutex<Vec<Weak<Screen>>> = Mutex::new(Vec::new());

/// Restores the terminal before a panic's message is printed, so that the message lands on the
/// normal screen (on the alternate one it would vanish with it) of a terminal in its usual
/// modes: a panic on any thread, not only one that unwinds through the [`crate::Dashboard`].
fn register_for_panics(screen: &Arc<Screen>) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // `try_lock`: a panic while the list is held (it never is for long) skips the
            // restore rather than deadlocking.
            let screens: Vec<Arc<Screen>> = match SCREENS.try_lock() {
                Ok(list) => list.iter().filter_map(Weak::upgrade).collect(),
                Err(TryLockError::Poisoned(list)) => {
                    list.into_inner().iter().filter_map(Weak::upgrade).collect()
                }
                Err(TryLockError::WouldBlock) => Vec::new(),
            };
            for screen in screens {
                screen.restore_after_panic();
            }
            previous(info);
        }));
    });
    let mut list = SCREENS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    list.retain(|s| s.strong_count() > 0);
    list.push(Arc::downgrade(screen));
}
