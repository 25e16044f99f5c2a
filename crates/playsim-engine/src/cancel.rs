//! A one-shot cancellation signal shared by a run's tasks (Ctrl-C, fatal errors).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;

/// Once cancelled, stays cancelled; every waiter wakes.
#[derive(Debug, Default)]
pub struct CancelToken {
    flag: AtomicBool,
    notify: Notify,
    /// Why the run had to stop, when an error stopped it (the first one is kept).
    failure: Mutex<Option<String>>,
}

impl CancelToken {
    /// Cancels the run.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Cancels the run because of an error that would fail every later frame the same way
    /// (an NFS server that stopped answering); the run ends as failed with `message`.
    pub fn fail(&self, message: String) {
        self.failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(message);
        self.cancel();
    }

    /// The error that stopped the run, if one did.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Completes when cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}
