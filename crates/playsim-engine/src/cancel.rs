//! A one-shot cancellation signal shared by a run's tasks (Ctrl-C, fatal errors).

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Once cancelled, stays cancelled; every waiter wakes.
#[derive(Debug, Default)]
pub struct CancelToken {
    flag: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// Cancels the run.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
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
