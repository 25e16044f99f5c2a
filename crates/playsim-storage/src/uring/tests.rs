//! The io_uring reader's own thread and messages. `LocalStorage` reading through it, against
//! real files, is tested in `local/uring_tests.rs`.

use playsim_core::IoBuf;

use super::*;
use crate::testutil::{pattern, write_file};

#[tokio::test]
async fn the_thread_ends_after_the_reads_of_dropped_futures_complete() {
    use std::future::Future;

    let dir = tempfile::tempdir().expect("tempdir");
    let data = pattern(4 << 20);
    let path = write_file(dir.path(), "big.dpx", &data);
    let options = UringOptions { entries: 8, ..UringOptions::default() };
    let counters = Arc::new(Counters::default());
    let reader = match UringReader::start(&options, Arc::clone(&counters)) {
        Ok(reader) => reader,
        Err(why) => {
            eprintln!("io_uring is not available on this machine: {why}");
            assert!(why.starts_with("io_uring_setup failed"), "{why}");
            return;
        }
    };
    let file = Arc::new(File::open(&path).expect("open"));
    let plan = crate::read_plan::plan_read(data.len() as u64, 0, data.len(), false).expect("plan");
    for _ in 0..4 {
        let mut buf = IoBuf::default();
        buf.prepare(plan.total);
        // Sent by the first poll, then dropped with 1,024 blocks of 4 KiB to read.
        let mut read = Box::pin(reader.read(buf, Arc::clone(&file), plan, 4096, false));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ = read.as_mut().poll(&mut cx);
    }
    let mut buf = IoBuf::default();
    buf.prepare(plan.total);
    let done = reader.read(buf, Arc::clone(&file), plan, 4096, false).await.expect("the ring answers");
    assert_eq!(done.result.as_ref().ok(), Some(&data.len()));
    assert!(done.buf[..] == data[..]);
    // Joins only once the ring has reaped every read of the dropped frames.
    reader.close_and_join().expect("the thread ends without a panic");
    let reads = counters.n_reads.load(Ordering::Relaxed);
    assert!((1024..=5 * 1024).contains(&reads), "{reads} reads");
}

#[test]
fn the_memlock_refusal_says_how_to_raise_the_limit() {
    let why = registration_refused(&io::Error::from_raw_os_error(libc::ENOMEM), 53_000_000);
    assert!(why.starts_with("registering a 53.0 MB buffer failed with ENOMEM"), "{why}");
    assert!(
        why.contains("RLIMIT_MEMLOCK") && why.contains("ulimit -l") && why.contains("CAP_IPC_LOCK"),
        "{why}"
    );
    let other = registration_refused(&io::Error::from_raw_os_error(libc::EFAULT), 4096);
    assert!(other.starts_with("registering a 0.0 MB buffer failed ("), "{other}");
}
