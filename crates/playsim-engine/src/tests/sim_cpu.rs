//! Simulated cores for engine tests: work that must share a fixed number of cores, on
//! tokio's clock, so a paused-clock test can make reads, decodes and outputs compete for
//! CPU as they do on a real machine.
//!
//! The model is processor sharing, as a kernel's fair scheduler approximates: with `cores`
//! cores and `n` jobs running, each job progresses at `min(1, cores / n)` of a core. A job
//! of `work` CPU time therefore takes `work` of wall time alone and longer when more jobs
//! run than there are cores. Every job's remaining work is advanced to the present at each
//! start and finish, and each job sleeps until its own projected finish, or until the
//! number of running jobs changes.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// A machine of `cores` cores, shared by every job run on it.
pub(super) struct SimCpu {
    cores: u32,
    state: Mutex<CpuState>,
    changed: Notify,
}

struct CpuState {
    /// Remaining work of each running job, in nanoseconds of one core, by job id.
    jobs: Vec<(u64, f64)>,
    next_id: u64,
    /// When `jobs` was last advanced.
    updated: Instant,
    /// CPU time handed out so far, in nanoseconds.
    spent_ns: f64,
}

/// Work below this many nanoseconds counts as done (float rounding).
const DONE_NS: f64 = 1.0;

impl SimCpu {
    pub(super) fn new(cores: u32) -> SimCpu {
        SimCpu {
            cores: cores.max(1),
            state: Mutex::new(CpuState {
                jobs: Vec::new(),
                next_id: 0,
                updated: Instant::now(),
                spent_ns: 0.0,
            }),
            changed: Notify::new(),
        }
    }

    /// Runs `work` of CPU time on the shared cores; returns when it is done.
    pub(super) async fn run(&self, work: Duration) {
        if work.is_zero() {
            return;
        }
        let id = {
            let mut st = self.lock();
            self.advance(&mut st);
            let id = st.next_id;
            st.next_id += 1;
            st.jobs.push((id, work.as_nanos() as f64));
            id
        };
        self.changed.notify_waiters();
        let _leave = LeaveOnDrop { cpu: self, id };
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let eta = {
                let mut st = self.lock();
                self.advance(&mut st);
                let remaining = st.jobs.iter().find(|j| j.0 == id).map_or(0.0, |j| j.1);
                if remaining < DONE_NS {
                    return; // `_leave` removes the job and tells the others.
                }
                let running = st.jobs.iter().filter(|j| j.1 >= DONE_NS).count();
                Duration::from_nanos((remaining / self.rate(running)).ceil() as u64)
            };
            tokio::select! {
                _ = tokio::time::sleep(eta) => {}
                _ = &mut changed => {}
            }
        }
    }

    /// CPU time spent by every job so far.
    pub(super) fn spent(&self) -> Duration {
        let mut st = self.lock();
        self.advance(&mut st);
        Duration::from_nanos(st.spent_ns as u64)
    }

    /// The share of a core each of `n` running jobs gets.
    fn rate(&self, n: usize) -> f64 {
        (f64::from(self.cores) / n.max(1) as f64).min(1.0)
    }

    /// Brings every job's remaining work to the present. Piecewise: a job that finishes partway
    /// gives its share of the cores to the others from that moment, though its waiter hears of
    /// it only at its next wake-up (tokio's timer ticks in milliseconds).
    fn advance(&self, st: &mut CpuState) {
        let now = Instant::now();
        let mut left = now.saturating_duration_since(st.updated).as_nanos() as f64;
        st.updated = now;
        while left > 0.0 {
            let running: Vec<usize> = (0..st.jobs.len()).filter(|&i| st.jobs[i].1 >= DONE_NS).collect();
            if running.is_empty() {
                return;
            }
            let rate = self.rate(running.len());
            let first_done = running.iter().map(|&i| st.jobs[i].1).fold(f64::INFINITY, f64::min) / rate;
            let step = first_done.min(left);
            for &i in &running {
                let done = (step * rate).min(st.jobs[i].1);
                st.jobs[i].1 -= done;
                st.spent_ns += done;
            }
            left -= step;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CpuState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Takes a job off the cores when it finishes or its future is dropped.
struct LeaveOnDrop<'a> {
    cpu: &'a SimCpu,
    id: u64,
}

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        {
            let mut st = self.cpu.lock();
            self.cpu.advance(&mut st);
            st.jobs.retain(|j| j.0 != self.id);
        }
        self.cpu.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn jobs_within_the_cores_run_at_full_speed() {
        let cpu = Arc::new(SimCpu::new(2));
        let start = Instant::now();
        let (a, b) = (Arc::clone(&cpu), Arc::clone(&cpu));
        tokio::join!(a.run(10 * MS), b.run(10 * MS));
        assert_eq!(start.elapsed(), 10 * MS);
        assert_eq!(cpu.spent(), 20 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn more_jobs_than_cores_share_them() {
        // Three jobs of 10 ms on two cores: each gets 2/3 of a core, all finish at 15 ms.
        let cpu = Arc::new(SimCpu::new(2));
        let start = Instant::now();
        let done = |c: Arc<SimCpu>| async move {
            c.run(10 * MS).await;
            Instant::now()
        };
        let (a, b, c) = tokio::join!(done(Arc::clone(&cpu)), done(Arc::clone(&cpu)), done(Arc::clone(&cpu)));
        for t in [a, b, c] {
            assert_eq!(t - start, 15 * MS);
        }
        // A 4 ms job beside a 10 ms one on one core: half a core each until the short one is
        // done at 8 ms, then the long one alone for its last 6 ms.
        let cpu = Arc::new(SimCpu::new(1));
        let start = Instant::now();
        let run = |c: Arc<SimCpu>, work: Duration| async move {
            c.run(work).await;
            Instant::now()
        };
        let (short, long) = tokio::join!(run(Arc::clone(&cpu), 4 * MS), run(Arc::clone(&cpu), 10 * MS));
        assert_eq!(short - start, 8 * MS);
        assert_eq!(long - start, 14 * MS);
    }
}
