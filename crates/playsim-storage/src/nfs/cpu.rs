//! The client's CPU time: the thread CPU time spent polling its futures, summed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use rustix::time::ClockId;

/// Adds the thread CPU time spent polling a future to a shared counter. Polls run on tokio's
/// worker threads between other tasks' polls, so each poll is timed by itself.
pub(crate) struct CpuMeter<F> {
    future: Pin<Box<F>>,
    cpu_ns: Arc<AtomicU64>,
}

impl<F: Future> CpuMeter<F> {
    pub fn new(future: F, cpu_ns: Arc<AtomicU64>) -> CpuMeter<F> {
        CpuMeter { future: Box::pin(future), cpu_ns }
    }
}

impl<F: Future> Future for CpuMeter<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let before = thread_cpu_ns();
        let result = self.future.as_mut().poll(cx);
        self.cpu_ns.fetch_add(thread_cpu_ns().saturating_sub(before), Ordering::Relaxed);
        result
    }
}

fn thread_cpu_ns() -> u64 {
    let now = rustix::time::clock_gettime(ClockId::ThreadCPUTime);
    u64::try_from(now.tv_sec).unwrap_or(0).saturating_mul(1_000_000_000)
        + u64::try_from(now.tv_nsec).unwrap_or(0)
}
