//! [`ClientRuntime`]: the tokio runtime an SMB client runs on, one worker thread of its own, so
//! that the client's CPU time is measured whole and a panic inside the `smb2` crate is caught.
//!
//! The crate does its receiving (reading replies, checking their signatures, decrypting) in a
//! task it spawns on the runtime it was called from. Run on the engine's runtime, that work would
//! be nobody's: measuring only the polls of our own futures (as the NFS client does, whose replies
//! are read inside those polls) would leave most of an SMB client's CPU out of the report. Here
//! every task of the client runs on one thread, whose CPU time is added up between its unpark
//! and its park.

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustix::time::ClockId;

thread_local! {
    /// The worker thread's CPU time when it last woke.
    static WOKE_AT_NS: Cell<u64> = const { Cell::new(0) };
}

/// A runtime of one worker thread for one SMB client, and that thread's CPU time so far.
pub(crate) struct ClientRuntime {
    /// `None` once shut down (in `Drop`).
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    cpu_ns: Arc<AtomicU64>,
}

impl ClientRuntime {
    /// Starts the worker thread.
    pub(crate) fn start() -> std::io::Result<ClientRuntime> {
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let parked = Arc::clone(&cpu_ns);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("playsim-smb")
            .enable_all()
            .on_thread_unpark(|| WOKE_AT_NS.with(|at| at.set(thread_cpu_ns())))
            .on_thread_park(move || {
                // Before the first park, `WOKE_AT_NS` is 0: the thread's whole time so far.
                let woke_at = WOKE_AT_NS.with(Cell::get);
                parked.fetch_add(thread_cpu_ns().saturating_sub(woke_at), Ordering::Relaxed);
            })
            .build()?;
        let handle = runtime.handle().clone();
        Ok(ClientRuntime { runtime: Some(runtime), handle, cpu_ns })
    }

    /// The worker thread's CPU time so far, in nanoseconds.
    pub(crate) fn cpu_ns(&self) -> u64 {
        self.cpu_ns.load(Ordering::Relaxed)
    }

    /// Runs `future` on the client's thread and waits for it from any runtime. A panic inside it
    /// comes back as an error naming the smb2 crate, instead of unwinding through the engine
    /// (which catches decoders' panics, not storages').
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, String> {
        self.handle.spawn(future).await.map_err(|e| {
            if e.is_panic() {
                let payload = e.into_panic();
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                format!("the smb2 crate panicked: {message}")
            } else {
                "the smb client's runtime has shut down".to_owned()
            }
        })
    }
}

impl Drop for ClientRuntime {
    /// Shuts the runtime down without waiting: a storage is dropped inside the engine's runtime,
    /// where a blocking shutdown would panic.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn thread_cpu_ns() -> u64 {
    let now = rustix::time::clock_gettime(ClockId::ThreadCPUTime);
    u64::try_from(now.tv_sec).unwrap_or(0).saturating_mul(1_000_000_000)
        + u64::try_from(now.tv_nsec).unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_on_the_client_thread_is_counted_and_a_panic_comes_back_as_an_error() {
        let runtime = ClientRuntime::start().unwrap();
        // 30 ms of the thread's own CPU, however busy the machine (a wall-clock spin got 19 ms
        // of CPU in 30 ms beside a fuzzer and the other tests).
        let spun = runtime
            .run(async {
                let start = thread_cpu_ns();
                let mut x = 0u64;
                while thread_cpu_ns() - start < 30_000_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                x
            })
            .await;
        assert!(spun.is_ok());
        // Its time is in once the thread has parked again after the task.
        for _ in 0..200 {
            if runtime.cpu_ns() >= 30_000_000 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(runtime.cpu_ns() >= 30_000_000, "{} ns", runtime.cpu_ns());
        let panicked: Result<(), String> = runtime.run(async { panic!("injected") }).await;
        assert_eq!(panicked, Err("the smb2 crate panicked: injected".to_owned()));
        drop(runtime); // inside a runtime: must not panic
    }
}
