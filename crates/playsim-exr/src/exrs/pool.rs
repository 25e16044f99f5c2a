//! Rayon pools for decompressing the blocks of a frame in parallel: one pool per
//! thread count, built on first use and kept for the life of the process.
//!
//! Frames decoded at the same time with the same `codec_threads` share one pool,
//! so the exrs backend never runs more than `codec_threads` threads per count in use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// More threads than this is a mistake, not a machine: the count is capped here.
const MAX_THREADS: usize = 256;

/// The pool of `threads` threads (capped at [`MAX_THREADS`]), or `None` if the
/// system will not start threads, in which case the caller decodes on its own thread.
pub(super) fn get(threads: usize) -> Option<Arc<ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let threads = threads.clamp(1, MAX_THREADS);
    let mut pools = POOLS.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(pool) = pools.get(&threads) {
        return Some(Arc::clone(pool));
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("exrs-{threads}-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    pools.insert(threads, Arc::clone(&pool));
    Some(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pool_per_thread_count_with_exactly_that_many_threads() {
        let a = get(3).unwrap();
        let b = get(3).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.current_num_threads(), 3);
        assert_eq!(get(2).unwrap().current_num_threads(), 2);
    }
}
