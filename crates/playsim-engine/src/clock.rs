//! The clocks the engine can be given: tokio's (pausable, for tests) and a precise wall clock.

use std::time::Duration;

use playsim_core::{Clock, SleepFuture};

/// Time from tokio's clock. Under `start_paused` tests it advances only when
/// every task waits, so runs are exact and instant.
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
    wall_origin: Duration,
}

impl TokioClock {
    /// A clock whose origin is now, and whose wall origin is the epoch (see
    /// [`TokioClock::with_wall_origin`]). Must be called inside a tokio runtime.
    pub fn new() -> TokioClock {
        TokioClock { origin: tokio::time::Instant::now(), wall_origin: Duration::ZERO }
    }

    /// This clock with its origin at `wall_origin` since the Unix epoch, for reports.
    pub fn with_wall_origin(self, wall_origin: Duration) -> TokioClock {
        TokioClock { wall_origin, ..self }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep_until(&self, deadline: Duration) -> SleepFuture {
        Box::pin(tokio::time::sleep_until(self.origin + deadline))
    }

    fn wall_origin(&self) -> Duration {
        self.wall_origin
    }
}

/// How long before a deadline the precise clock stops sleeping and spins.
const SPIN_WINDOW: Duration = Duration::from_micros(150);

/// The monotonic wall clock, waking with sub-millisecond accuracy.
///
/// tokio's timer wheel has a 1 ms granularity, too coarse for 59.94 fps
/// presentation. A wait runs on a blocking thread instead: `nanosleep` until
/// shortly before the deadline, then a short spin on the monotonic clock. The
/// spin costs at most [`SPIN_WINDOW`] of CPU per frame.
#[derive(Clone, Copy, Debug)]
pub struct PreciseClock {
    origin: std::time::Instant,
    /// The origin's wall-clock time, since the Unix epoch.
    wall_origin: Duration,
}

impl PreciseClock {
    /// A clock whose origin is now, on the monotonic clock and on the wall clock.
    pub fn new() -> PreciseClock {
        let origin = std::time::Instant::now();
        let wall_origin =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        PreciseClock { origin, wall_origin }
    }

    /// This clock with its origin at `wall_origin` since the Unix epoch: the origin that
    /// clients of one run agree on.
    pub fn with_wall_origin(self, wall_origin: Duration) -> PreciseClock {
        PreciseClock { wall_origin, ..self }
    }
}

impl Default for PreciseClock {
    fn default() -> Self {
        PreciseClock::new()
    }
}

impl Clock for PreciseClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep_until(&self, deadline: Duration) -> SleepFuture {
        let target = self.origin + deadline;
        Box::pin(async move {
            if target <= std::time::Instant::now() {
                return;
            }
            let waited = tokio::task::spawn_blocking(move || precise_wait(target)).await;
            if waited.is_err() {
                // The blocking pool is shutting down; fall back to tokio's timer.
                tokio::time::sleep_until(tokio::time::Instant::from_std(target)).await;
            }
        })
    }

    fn can_block(&self) -> bool {
        true
    }

    fn wall_origin(&self) -> Duration {
        self.wall_origin
    }

    fn block_until(&self, deadline: Duration) {
        precise_wait(self.origin + deadline);
    }
}

fn precise_wait(target: std::time::Instant) {
    let now = std::time::Instant::now();
    if let Some(coarse) = target.checked_duration_since(now).and_then(|d| d.checked_sub(SPIN_WINDOW)) {
        std::thread::sleep(coarse);
    }
    while std::time::Instant::now() < target {
        std::hint::spin_loop();
    }
}

/// A run's one clock, as a request carries it: the clock the caller gives, or by default a
/// [`PreciseClock`] made now. Everything a run opens, reads and writes is timed by it, so that
/// a record's source and destination, or a matrix's cells, share one origin.
#[derive(Clone)]
pub struct RunClock(pub std::sync::Arc<dyn playsim_core::Clock>);

impl RunClock {
    /// The clock.
    pub fn get(&self) -> std::sync::Arc<dyn playsim_core::Clock> {
        std::sync::Arc::clone(&self.0)
    }
}

impl Default for RunClock {
    fn default() -> RunClock {
        RunClock(std::sync::Arc::new(PreciseClock::new()))
    }
}

impl std::fmt::Debug for RunClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunClock({:?})", self.0.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn precise_clock_never_wakes_early() {
        let clock = PreciseClock::new();
        for i in 1..=5u64 {
            let deadline = Duration::from_millis(3 * i);
            clock.sleep_until(deadline).await;
            assert!(clock.now() >= deadline);
        }
    }

    #[test]
    fn precise_clock_blocks_until_the_deadline() {
        let clock = PreciseClock::new();
        assert!(clock.can_block());
        for i in 1..=5u64 {
            let deadline = Duration::from_millis(2 * i);
            clock.block_until(deadline);
            assert!(clock.now() >= deadline);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = TokioClock::new();
        assert!(!clock.can_block(), "paused time moves only with the runtime");
        clock.sleep_until(Duration::from_secs(600)).await;
        assert_eq!(clock.now(), Duration::from_secs(600));
    }
}
