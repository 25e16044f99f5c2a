//! The simulated link: a bandwidth shared fairly by the transfers on it, then a latency
//! and a seeded jitter per request, timed by the run's clock.
//!
//! The bandwidth is processor sharing between streams: while `k` streams have a request
//! crossing, each moves at `bw / k`, and a stream's own requests cross one after another
//! in the order they came. It is computed with a virtual clock (the work each crossing
//! transfer has been served since the link was made), in exact integers, and woken only
//! when a transfer ends: one task per busy link sleeps until the next end, so nothing sleeps per block
//! (tokio's timer has a 1 ms granularity) and a paused tokio clock gives exact times.
//!
//! One `read_at` (one frame: the engine reads a frame with one call) is one request of `n`
//! bytes:
//!
//! 1. *Transfer.* Work is counted in bits × 10⁹, so the link serves exactly `bw` units per
//!    nanosecond; `served` is the work each crossing transfer has received. A transfer of `w`
//!    units that starts when `served = s` ends when `served = s + w`, at
//!    `at + ceil((s + w − served)·k / bw)` ns. No float is accumulated.
//! 2. *Delay.* It completes at its transfer's end + `lat` + a jitter drawn from `dist`:
//!    exponential with mean `jitter` (the default) or an exact integer uniform in 0..=`jitter` ns.
//!    The draw is a SplitMix64 hash of the seed, the stream's number on the link, the path and
//!    the offset, so a request's delay does not depend on the order in which concurrent requests
//!    arrive, and a seed gives the same delays in every run.
//! 3. *Time.* A busy link has one task that sleeps until the next transfer ends, ends it at its
//!    exact time, starts the stream's next one and computes again; a new request only postpones
//!    the next end, so the task wakes early, never late. Each reader then sleeps once, until its
//!    completion time.
//!
//! A request abandoned by its caller still occupies the link until it ends, as a real player
//! that reads frames it then drops wastes bandwidth. `bw` is goodput: for 100GbE's ~94 Gbit/s of
//! TCP payload give `bw=94Gbit`. Links are shared by name and by the identity of the run's one
//! clock (`SimLink::shared`), so two runs never meet; one name with two settings is refused.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use playsim_core::{splitmix64, Clock};
use tokio::sync::oneshot;

use crate::Error;

/// How the jitter added to each request's latency is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JitterDist {
    /// Exponential with mean `jitter`, as queueing delays are.
    #[default]
    Exp,
    /// Uniform in `[0, jitter]`.
    Uniform,
}

impl JitterDist {
    /// The name used in `sim://` URLs and reports: `exp` or `uniform`.
    pub fn name(&self) -> &'static str {
        match self {
            JitterDist::Exp => "exp",
            JitterDist::Uniform => "uniform",
        }
    }
}

/// What a link does to a request: its bandwidth, latency and jitter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinkParams {
    /// The link's bandwidth in bits per second, shared by all transfers on it; `None` is
    /// unlimited (a request costs its latency alone).
    pub bits_per_s: Option<u64>,
    /// Added to every request once its bytes have crossed the link.
    pub latency: Duration,
    /// The scale of the random delay added to every request (see [`JitterDist`]).
    pub jitter: Duration,
    /// The jitter's distribution.
    pub dist: JitterDist,
    /// The seed of the jitter: the same seed gives every request the same delay.
    pub seed: u64,
}

impl LinkParams {
    /// The settings as the report shows them: bw, lat, jitter, dist, seed.
    pub fn describe(&self) -> Vec<(String, String)> {
        let bw = match self.bits_per_s {
            Some(bits) => format!("{} ({})", si_rate(bits / 8, "B/s"), si_rate(bits, "bit/s")),
            None => "unlimited".to_owned(),
        };
        vec![
            ("bw".to_owned(), bw),
            ("lat".to_owned(), format!("{:?}", self.latency)),
            ("jitter".to_owned(), format!("{:?}", self.jitter)),
            ("dist".to_owned(), self.dist.name().to_owned()),
            ("seed".to_owned(), self.seed.to_string()),
        ]
    }

    /// The delay added to a request after its transfer: the latency plus a jitter drawn
    /// from a hash of the seed and `key`, so that it does not depend on the order in which
    /// concurrent requests arrive.
    pub fn delay(&self, key: u64) -> Duration {
        let jitter_ns = u64::try_from(self.jitter.as_nanos()).unwrap_or(u64::MAX);
        if jitter_ns == 0 {
            return self.latency;
        }
        let r = splitmix64(self.seed ^ splitmix64(key));
        let drawn_ns = match self.dist {
            // The high 64 bits of r * (jitter + 1): an exact integer uniform in 0..=jitter.
            JitterDist::Uniform => ((u128::from(r) * (u128::from(jitter_ns) + 1)) >> 64) as u64,
            JitterDist::Exp => {
                // u in (0, 1]: 53 random bits, never 0, so the logarithm is finite (at most
                // 36.7 means).
                let u = ((r >> 11) + 1) as f64 / (1u64 << 53) as f64;
                (-u.ln() * jitter_ns as f64).round() as u64
            }
        };
        self.latency.saturating_add(Duration::from_nanos(drawn_ns))
    }
}

/// A link that transfers share: a name, its settings, and the transfers on it now.
pub struct SimLink {
    name: String,
    params: LinkParams,
    clock: Arc<dyn Clock>,
    state: Arc<Mutex<Flows>>,
    streams: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SimLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimLink").field("name", &self.name).field("params", &self.params).finish()
    }
}

/// Every named link alive, to share a link between the sources of one run that name it.
static LINKS: Mutex<Vec<Weak<SimLink>>> = Mutex::new(Vec::new());

impl SimLink {
    /// A link of its own, not shared with anyone who does not hold it.
    pub fn new(name: impl Into<String>, params: LinkParams, clock: Arc<dyn Clock>) -> Arc<SimLink> {
        Arc::new(SimLink {
            name: name.into(),
            params,
            clock,
            state: Arc::default(),
            streams: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The link named `name` on `clock`: the same object for every caller that names it on
    /// the same clock while any holder keeps it, so the streams of one run (which share its
    /// one clock) share the link's bandwidth, and runs on other clocks never meet it.
    ///
    /// Refuses settings that differ from those the link already has, naming both.
    pub fn shared(name: &str, params: LinkParams, clock: &Arc<dyn Clock>) -> Result<Arc<SimLink>, Error> {
        let mut links = LINKS.lock().unwrap_or_else(PoisonError::into_inner);
        links.retain(|l| l.strong_count() > 0);
        let same_run = |l: &SimLink| std::ptr::addr_eq(Arc::as_ptr(&l.clock), Arc::as_ptr(clock));
        if let Some(link) = links.iter().filter_map(Weak::upgrade).find(|l| l.name == name && same_run(l)) {
            if link.params != params {
                return Err(Error::InvalidOption(format!(
                    "link '{name}' is given two settings in one run ({} and {}): every sim:// url that \
                     names it must give the same bw, lat, jitter, dist and seed, or name another link",
                    link.params_text(),
                    LinkParams::text(&params)
                )));
            }
            return Ok(link);
        }
        let link = SimLink::new(name, params, Arc::clone(clock));
        links.push(Arc::downgrade(&link));
        Ok(link)
    }

    /// The link's name ("" for a link of one stream's own).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The link's settings.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// A number for the next stream that reads over the link, 0, 1, 2, ... in the order
    /// they are made: it keys the stream's jitter draws.
    pub fn next_stream(&self) -> u64 {
        self.streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Moves `bytes` for stream `stream` over the link, after the stream's earlier requests
    /// and sharing the link with the other streams' transfers, and returns when they have
    /// crossed plus the request's [`delay`](LinkParams::delay) for `key`. Gives the clock's
    /// time at which the request completes.
    ///
    /// A transfer whose caller stops waiting still occupies the link until it ends: the
    /// bytes were asked for.
    pub async fn request(&self, stream: u64, bytes: u64, key: u64) -> Duration {
        let crossed = self.transfer(stream, bytes).await;
        let done = crossed.saturating_add(self.params.delay(key));
        if done > self.clock.now() {
            self.clock.sleep_until(done).await;
        }
        done
    }

    /// Moves `bytes` over the link, returning the time the last one crossed.
    async fn transfer(&self, stream: u64, bytes: u64) -> Duration {
        let Some(bits_per_s) = self.params.bits_per_s.filter(|_| bytes > 0) else { return self.clock.now() };
        let (done, crossed) = oneshot::channel();
        let start_driver = {
            let mut flows = self.lock();
            // The clock is read under the lock, so the link's time never goes back.
            flows.advance_to(as_ns(self.clock.now()), bits_per_s);
            let work = u128::from(bytes) * 8 * NS_PER_S;
            flows.arrive(Transfer { stream, work, done: Some(done) });
            !std::mem::replace(&mut flows.driven, true)
        };
        if start_driver {
            tokio::spawn(drive(Arc::clone(&self.state), Arc::clone(&self.clock), bits_per_s));
        }
        match crossed.await {
            Ok(ns) => Duration::from_nanos(ns),
            // The driver was dropped with the runtime: there is no time left to wait for.
            Err(_) => self.clock.now(),
        }
    }

    fn params_text(&self) -> String {
        LinkParams::text(&self.params)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Flows> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LinkParams {
    fn text(&self) -> String {
        self.describe().iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

const NS_PER_S: u128 = 1_000_000_000;

/// The transfers on a link, with the virtual time of processor sharing.
///
/// Each stream is one flow: its requests cross one after another, in the order they came
/// (as replies on one connection do), and the streams with a request crossing share the
/// bandwidth equally. Work is counted in bits × 10⁹, so that a link of `bw` bits/s serves
/// exactly `bw` units per nanosecond. `served` is the work each crossing transfer has
/// received since the link was made, as of `at_ns`; a transfer of `w` units that starts
/// crossing when `served = s` ends when `served` reaches `s + w`.
#[derive(Default)]
struct Flows {
    served: u128,
    at_ns: u64,
    /// The transfer crossing for each stream that has one.
    crossing: Vec<Crossing>,
    /// Transfers behind their stream's crossing one, in the order they came.
    waiting: VecDeque<Transfer>,
    /// True while a task drives the link (sleeps until the next transfer ends).
    driven: bool,
}

struct Transfer {
    stream: u64,
    /// Bits × 10⁹.
    work: u128,
    /// Told the time it crossed.
    done: Option<oneshot::Sender<u64>>,
}

struct Crossing {
    /// The value of `served` at which the transfer has crossed.
    finish: u128,
    transfer: Transfer,
}

impl Flows {
    /// A transfer comes: it crosses now, or after its stream's transfers before it.
    fn arrive(&mut self, transfer: Transfer) {
        if self.crossing.iter().any(|c| c.transfer.stream == transfer.stream) {
            self.waiting.push_back(transfer);
        } else {
            self.crossing.push(Crossing { finish: self.served + transfer.work, transfer });
        }
    }

    /// Brings the virtual time to `now_ns`, ending (in order, each at its exact time) every
    /// transfer that crossed meanwhile and starting the next of its stream.
    fn advance_to(&mut self, now_ns: u64, bits_per_s: u64) {
        let bw = u128::from(bits_per_s);
        while let Some(next) = self.next_end(bits_per_s) {
            if next > now_ns {
                let k = self.crossing.len() as u128;
                self.served += u128::from(now_ns.saturating_sub(self.at_ns)) * bw / k;
                self.at_ns = now_ns;
                return;
            }
            let finish = self.crossing.iter().map(|c| c.finish).min().unwrap_or(self.served);
            self.served = self.served.max(finish);
            self.at_ns = next;
            let mut freed = Vec::new();
            self.crossing.retain_mut(|c| {
                if c.finish > finish {
                    return true;
                }
                if let Some(done) = c.transfer.done.take() {
                    // The caller may have stopped waiting; the transfer ended all the same.
                    let _ = done.send(next);
                }
                freed.push(c.transfer.stream);
                false
            });
            for stream in freed {
                if let Some(i) = self.waiting.iter().position(|t| t.stream == stream) {
                    if let Some(transfer) = self.waiting.remove(i) {
                        self.arrive(transfer);
                    }
                }
            }
        }
        self.at_ns = self.at_ns.max(now_ns);
    }

    /// When the first crossing transfer ends if no other stream comes, in ns of the clock.
    fn next_end(&self, bits_per_s: u64) -> Option<u64> {
        let finish = self.crossing.iter().map(|c| c.finish).min()?;
        let k = self.crossing.len() as u128;
        let remaining = finish.saturating_sub(self.served) * k;
        let ns = remaining.div_ceil(u128::from(bits_per_s));
        Some(self.at_ns.saturating_add(u64::try_from(ns).unwrap_or(u64::MAX)))
    }
}

/// Sleeps until the next transfer on the link ends, ends it, and so on until the link is
/// idle. A request that comes only postpones the next end (a new stream takes a share; a
/// stream's later request waits its turn), so waking at a time computed before it is
/// early, never late, and the driver just computes again.
async fn drive(state: Arc<Mutex<Flows>>, clock: Arc<dyn Clock>, bits_per_s: u64) {
    loop {
        let next = {
            let mut flows = state.lock().unwrap_or_else(PoisonError::into_inner);
            // Read under the lock, as `transfer` does.
            flows.advance_to(as_ns(clock.now()), bits_per_s);
            match flows.next_end(bits_per_s) {
                Some(next) => next,
                None => {
                    flows.driven = false;
                    return;
                }
            }
        };
        clock.sleep_until(Duration::from_nanos(next)).await;
    }
}

fn as_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `value unit` with an SI prefix, e.g. "4.5 GB/s" or "100 Gbit/s".
fn si_rate(value: u64, unit: &str) -> String {
    let prefixes = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    let v = value as f64;
    for (scale, prefix) in prefixes {
        if v >= scale {
            let scaled = format!("{:.3}", v / scale);
            let scaled = scaled.trim_end_matches('0').trim_end_matches('.');
            return format!("{scaled} {prefix}{unit}");
        }
    }
    format!("{value} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_in_si_units() {
        assert_eq!(si_rate(4_500_000_000, "B/s"), "4.5 GB/s");
        assert_eq!(si_rate(100_000_000_000, "bit/s"), "100 Gbit/s");
        assert_eq!(si_rate(12_345, "B/s"), "12.345 kB/s");
        assert_eq!(si_rate(999, "B/s"), "999 B/s");
    }

    #[test]
    fn uniform_jitter_stays_in_its_range_and_exp_has_its_mean() {
        let params = |dist| LinkParams {
            latency: Duration::from_micros(300),
            jitter: Duration::from_millis(1),
            dist,
            seed: 7,
            ..LinkParams::default()
        };
        let uniform = params(JitterDist::Uniform);
        let draws: Vec<Duration> = (0..20_000).map(|k| uniform.delay(k)).collect();
        assert!(draws.iter().all(|d| *d >= uniform.latency && *d <= uniform.latency + uniform.jitter));
        let mean_ns = |v: &[Duration]| v.iter().map(|d| d.as_nanos() as f64).sum::<f64>() / v.len() as f64;
        // Mean of U[0, 1 ms] is 0.5 ms; 20,000 draws put it within 1%.
        assert!((mean_ns(&draws) - 800_000.0).abs() < 5_000.0, "{}", mean_ns(&draws));
        let exp = params(JitterDist::Exp);
        let draws: Vec<Duration> = (0..20_000).map(|k| exp.delay(k)).collect();
        assert!((mean_ns(&draws) - 1_300_000.0).abs() < 20_000.0, "{}", mean_ns(&draws));
        // An exponential's median is ln 2 of its mean.
        let mut sorted = draws.clone();
        sorted.sort();
        let median = sorted[10_000].as_nanos() as f64 - 300_000.0;
        assert!((median - 693_147.0).abs() < 20_000.0, "{median}");
    }

    #[test]
    fn no_jitter_is_the_latency_alone() {
        let params = LinkParams { latency: Duration::from_micros(300), seed: 3, ..LinkParams::default() };
        assert_eq!(params.delay(12), Duration::from_micros(300));
    }
}
