//! The thread that makes and drives a ring, shared by the reader ([`super::UringReader`])
//! and the writer ([`super::UringWriter`]): requests come over a channel, an eventfd the
//! ring polls wakes the thread, and a [`Driver`] turns requests into operations and
//! completions into answers (the `io-uring` feature).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::Arc;

use rustix::event::{eventfd, EventfdFlags};

use super::sys::{Completion, Ring, WAKE};
use super::UringOptions;
use crate::read_plan::thread_cpu_ns;

/// What a ring thread does with its requests: the reader's frames, the writer's writes.
pub(super) trait Driver {
    /// One request from the storage.
    type Request: Send + 'static;

    /// The ring the driver queues on.
    fn ring(&mut self) -> &mut Ring;

    /// Takes a request (its operations are queued by [`Driver::fill`]).
    fn start(&mut self, request: Self::Request);

    /// Queues operations while the ring has room.
    fn fill(&mut self);

    /// Handles the completion of one of the driver's operations (never the wake-up poll).
    fn complete(&mut self, completion: Completion);

    /// True when no request is left unanswered.
    fn is_idle(&self) -> bool;

    /// The ring failed: answers every request left with `err`.
    fn fail_all(&mut self, err: &io::Error);

    /// Where the thread's CPU time is counted.
    fn cpu_ns(&self) -> &AtomicU64;
}

/// A ring thread, as its storage sees it.
pub(super) struct RingThread<R> {
    /// Requests to the thread; `None` once dropping.
    requests: Option<mpsc::Sender<R>>,
    /// Written to wake the thread; its ring polls it.
    wake: Arc<OwnedFd>,
    entries: u32,
    /// The thread, for tests to join; in use it is never joined: it ends on its own once
    /// the storage is dropped and its operations have completed.
    #[cfg(test)]
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How a ring thread is set up: its name, and the operations its ring must have.
pub(super) struct Setup {
    /// The thread's name (at most 15 bytes, Linux's limit).
    pub name: &'static str,
    /// Whether the kernel has the operations the driver uses.
    pub has_ops: fn(&Ring) -> io::Result<bool>,
    /// Why the ring cannot be used when it lacks them.
    pub lacks: &'static str,
}

impl<R: Send + 'static> RingThread<R> {
    /// Sets up a ring on a new thread, and on it the driver `make` gives for the ring; the
    /// error says why io_uring cannot be used here.
    pub fn start<D, F>(options: &UringOptions, setup: Setup, make: F) -> Result<RingThread<R>, String>
    where
        D: Driver<Request = R>,
        F: FnOnce(Ring) -> D + Send + 'static,
    {
        if let Some(errno) = options.fail_setup {
            return Err(setup_failure(&io::Error::from_raw_os_error(errno), options.entries));
        }
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(|errno| format!("cannot make the eventfd that wakes the io_uring thread: {errno}"))?;
        let wake = Arc::new(wake);
        let (requests, incoming) = mpsc::channel();
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let options = *options;
        let thread_wake = Arc::clone(&wake);
        #[cfg_attr(not(test), allow(unused_variables))]
        let thread = std::thread::Builder::new()
            .name(setup.name.into())
            .spawn(move || {
                // The ring is made on the thread that drives it: the kernel lets only its
                // issuer enter a single-issuer ring.
                let ring = match make_ring(&options, &thread_wake, &setup) {
                    Ok(ring) => ring,
                    Err(why) => {
                        let _ = ready_tx.send(Err(why));
                        return;
                    }
                };
                let entries = ring.entries();
                let mut driver = make(ring);
                let _ = ready_tx.send(Ok(entries));
                drive(&mut driver, &incoming, &thread_wake);
            })
            .map_err(|err| format!("cannot start the io_uring thread: {err}"))?;
        let entries =
            ready.recv().map_err(|_| "the io_uring thread stopped while setting up".to_owned())??;
        Ok(RingThread {
            requests: Some(requests),
            wake,
            entries,
            #[cfg(test)]
            thread: Some(thread),
        })
    }

    /// Hands `request` to the thread and wakes it.
    pub fn send(&self, request: R) -> Result<(), String> {
        let requests = self.requests.as_ref().ok_or("the io_uring thread is closing")?;
        requests.send(request).map_err(|_| "the io_uring thread has stopped".to_owned())?;
        self.poke();
        Ok(())
    }

    /// Closes the request channel and waits for the thread to end, which it does once every
    /// operation in flight has completed.
    #[cfg(test)]
    pub fn close_and_join(mut self) -> std::thread::Result<()> {
        self.requests = None;
        self.poke();
        match self.thread.take() {
            Some(thread) => thread.join(),
            None => Ok(()),
        }
    }
}

impl<R> RingThread<R> {
    /// The ring's submission queue entries, as the kernel sized it.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// Wakes the thread. Failure is harmless: the counter is already non-zero (EAGAIN).
    fn poke(&self) {
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
    }
}

impl<R> Drop for RingThread<R> {
    /// Closes the request channel and wakes the thread, which ends once the operations in
    /// flight (of futures dropped before) have completed.
    fn drop(&mut self) {
        self.requests = None;
        self.poke();
    }
}

impl<R> std::fmt::Debug for RingThread<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingThread").field("entries", &self.entries).finish_non_exhaustive()
    }
}

/// Runs `driver` until the storage is dropped and its last operation has completed.
fn drive<D: Driver>(driver: &mut D, incoming: &mpsc::Receiver<D::Request>, wake: &OwnedFd) {
    let mut cpu_mark = thread_cpu_ns();
    let mut completions = Vec::new();
    let mut closed = false;
    loop {
        loop {
            match incoming.try_recv() {
                Ok(request) => driver.start(request),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        driver.fill();
        if closed && driver.is_idle() {
            break;
        }
        if closed && driver.ring().ops_in_flight() == 0 {
            // Not reachable (a request left is one with operations in flight), but waiting
            // here would wait for ever.
            driver.fail_all(&io::Error::other("requests left with no operation in flight"));
            break;
        }
        if !closed {
            // Cannot fail: operations leave one entry free for the poll. Were the queue
            // full, the completions of its operations would wake the thread anyway.
            let _ = driver.ring().arm_wake();
        }
        match driver.ring().submit_and_wait(1) {
            Ok(_) => {}
            Err(err) if matches!(err.raw_os_error(), Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)) => {}
            Err(err) => {
                driver.fail_all(&err);
                break;
            }
        }
        driver.ring().completions(&mut completions);
        for completion in completions.drain(..) {
            if completion.op == WAKE {
                // Reset the eventfd's counter so that the next poll waits for the next poke.
                let _ = rustix::io::read(wake, &mut [0u8; 8]);
            } else {
                driver.complete(completion);
            }
        }
        let now = thread_cpu_ns();
        driver.cpu_ns().fetch_add(now.saturating_sub(cpu_mark), Ordering::Relaxed);
        cpu_mark = now;
    }
    let now = thread_cpu_ns();
    driver.cpu_ns().fetch_add(now.saturating_sub(cpu_mark), Ordering::Relaxed);
}

/// The ring of `options`, checked to have the operations its driver uses.
fn make_ring(options: &UringOptions, wake: &Arc<OwnedFd>, setup: &Setup) -> Result<Ring, String> {
    let ring =
        Ring::new(options.entries, Arc::clone(wake)).map_err(|err| setup_failure(&err, options.entries))?;
    match (setup.has_ops)(&ring) {
        Ok(true) => Ok(ring),
        Ok(false) | Err(_) => Err(setup.lacks.to_owned()),
    }
}

/// Why io_uring cannot be set up, from `io_uring_setup`'s error: the cause, and what to change.
pub(super) fn setup_failure(err: &io::Error, entries: u32) -> String {
    let sysctl = match std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        Ok(value) => format!("the sysctl kernel.io_uring_disabled is {} here", value.trim()),
        Err(_) => "this kernel has no kernel.io_uring_disabled sysctl (it came in Linux 6.6)".to_owned(),
    };
    match err.raw_os_error() {
        Some(libc::EPERM) => format!(
            "io_uring_setup failed with EPERM ({err}): io_uring is turned off by the sysctl \
             kernel.io_uring_disabled (1 allows it only to processes with CAP_SYS_ADMIN or in the group \
             kernel.io_uring_group, 2 to none; `sysctl -w kernel.io_uring_disabled=0` allows it to all), \
             and {sysctl}; or a container's seccomp profile refuses it (Docker's and Podman's default \
             profiles do: run with a profile that allows io_uring_setup, io_uring_enter and io_uring_register)"
        ),
        Some(libc::ENOSYS) => format!(
            "io_uring_setup failed with ENOSYS ({err}): this kernel has no io_uring (Linux 5.1 or later \
             built with CONFIG_IO_URING has), or a seccomp profile hides it; {sysctl}"
        ),
        Some(libc::ENOMEM) => format!(
            "io_uring_setup failed with ENOMEM ({err}): no memory for a ring of {entries} entries \
             (a smaller ring needs less); {sysctl}"
        ),
        _ => format!("io_uring_setup failed ({err}); {sysctl}"),
    }
}
