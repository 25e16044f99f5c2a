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

    /// The wall-clock time of the origin, as time since the Unix epoch: the report's start
    /// time is this plus [`Clock::now`], so a run's times all come from its one clock (and
    /// runs on several machines can be given one origin). A clock with no wall time (a
    /// test's paused one) may leave it at the epoch.
    fn wall_origin(&self) -> Duration {
        Duration::ZERO
    }

    /// Whether [`Clock::block_until`] can wait for this clock's time on a plain thread. A
    /// clock whose time moves only with an async runtime (tokio's paused clock) cannot.
    fn can_block(&self) -> bool {
        false
    }

    /// Blocks the calling thread until `deadline`, never waking early. Only meaningful when
    /// [`Clock::can_block`]; the default returns at once.
    ///
    /// The engine presents a frame on the thread that woke at its deadline, so no hop through
    /// a busy async runtime lies between the deadline and the presentation.
    fn block_until(&self, _deadline: Duration) {}
}
