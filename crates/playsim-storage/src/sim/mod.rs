//! Simulated storage: objects held in memory, read over a modelled link.
//!
//! A [`SimLink`] has a bandwidth in bits per second (or none: unlimited), shared fairly by
//! the transfers on it at each moment (processor sharing, as TCP flows share a wire), and
//! each request completes a latency plus a seeded jitter after its last byte crossed. A
//! [`SimStorage`] serves [`SimObject`]s by path; each stream reads through a
//! [`SimStorage::reader`] of its own over a link, and the streams that hold the same
//! link share its bandwidth. Links are timed by the run's [`Clock`](playsim_core::Clock),
//! so under a paused tokio clock every time is exact.
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use std::time::Duration;
//! use playsim_core::{Clock, IoBuf, SleepFuture, Storage};
//! use playsim_storage::sim::{LinkParams, SimLink, SimObject, SimStorage};
//!
//! struct Tokio(tokio::time::Instant);
//! impl Clock for Tokio {
//!     fn now(&self) -> Duration { self.0.elapsed() }
//!     fn sleep_until(&self, d: Duration) -> SleepFuture { Box::pin(tokio::time::sleep_until(self.0 + d)) }
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let clock: Arc<dyn Clock> = Arc::new(Tokio(tokio::time::Instant::now()));
//! // 1 GB/s = 8 Gbit/s, and 2 ms after the last byte.
//! let params = LinkParams { bits_per_s: Some(8_000_000_000), latency: Duration::from_millis(2), ..LinkParams::default() };
//! let link = SimLink::shared("lan", params, &clock)?;
//! // A frame of 100 MB whose bytes nobody looks at (SimObject::bytes serves real ones).
//! let frame = SimObject::sized(100_000_000);
//! let objects = HashMap::from([("sim://lan/frame.0000000.dpx".into(), frame)]);
//! let storage = SimStorage::new(objects, 1 << 20).reader(link);
//!
//! let file = storage.open("sim://lan/frame.0000000.dpx".as_ref()).await?;
//! let mut buf = IoBuf::default();
//! file.read_at(0, 100_000_000, &mut buf).await?;
//! // 100 MB at 1 GB/s, then the latency.
//! assert_eq!(clock.now(), Duration::from_millis(102));
//! assert_eq!(storage.info().transport, "sim");
//! # Ok(())
//! # }
//! ```

mod link;
mod storage;

pub use link::{JitterDist, LinkParams, SimLink};
pub use storage::{SimObject, SimStorage};
