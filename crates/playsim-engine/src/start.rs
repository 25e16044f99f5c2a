//! The common start of clients that play one run together (several processes or machines).
//!
//! Within one process the streams start together through the presenter's start gate. A
//! [`StartBarrier`] extends that gate across processes: once every local stream has its
//! preroll, the engine asks the barrier for the common start, and frame 0 of every stream
//! falls due then, on every client.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The future a [`StartBarrier`] answers with.
pub type StartFuture = Pin<Box<dyn Future<Output = Result<Duration, String>> + Send>>;

/// Agrees with the other clients of a run on when playback starts.
pub trait StartBarrier: Send + Sync {
    /// Called once, when every stream of this client has its preroll, at `ready_at` on the
    /// run's clock (time since the clock's origin, as [`playsim_core::Clock::now`] gives).
    /// Answers the common start on the same clock, at or after `ready_at`; or why the run
    /// cannot start (another client failed to open its source), which fails the run.
    fn open(&self, ready_at: Duration) -> StartFuture;
}
