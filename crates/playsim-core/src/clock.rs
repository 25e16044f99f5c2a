//! The one injectable clock that the engine reads.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future returned by [`Clock::sleep_until`].
pub type SleepFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Monotonic time for the engine, measured from the clock's own origin.
///
/// Only the engine reads it. Tests inject a clock on tokio's paused time so
/// that a ten-minute run completes instantly and exactly; real runs use a clock
/// whose `sleep_until` wakes with sub-millisecond accuracy.
pub trait Clock: Send + Sync + 'static {
    /// Time elapsed since the clock's origin.
    fn now(&self) -> Duration;

    /// Completes at (or as soon as possible after) `deadline`, measured from the origin.
    fn sleep_until(&self, deadline: Duration) -> SleepFuture;
}
