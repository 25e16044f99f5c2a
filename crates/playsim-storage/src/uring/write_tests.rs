//! The io_uring write engine's own ring and thread: a short write finished, dropped writes.
//! `LocalWriteStorage` writing through it, against real files, is tested in
//! `write/uring_tests.rs`.

use super::*;
use crate::testutil::pattern;

fn bytes(data: &[u8]) -> WriteBytes {
    Arc::from(data)
}

/// A short write has its rest written: the kernel's answer to the first WRITE is cut to
/// 1,000 bytes as it reaches the writer, which then submits the other 7,192 again.
#[test]
fn a_short_write_has_its_rest_submitted_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wake = Arc::new(rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).expect("eventfd"));
    let ring = match Ring::new(8, wake) {
        Ok(ring) => ring,
        Err(err) => {
            eprintln!("io_uring is not available on this machine: {err}");
            return;
        }
    };
    let counters = Arc::new(crate::write_parts::WriteCounters::default());
    let mut writer = Writer::new(ring, counters);
    let path = dir.path().join("short");
    let file = Arc::new(File::create(&path).expect("create"));
    let data = pattern(8_192);
    let (reply, mut answer) = oneshot::channel();
    writer.start(Job { file, kind: JobKind::Write { offset: 0, data: bytes(&data), direct: false }, reply });
    let mut completions = Vec::new();
    let mut n_ops = 0;
    while matches!(answer.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
        writer.fill();
        writer.ring().submit_and_wait(1).expect("submit");
        writer.ring().completions(&mut completions);
        for mut completion in completions.drain(..) {
            n_ops += 1;
            if n_ops == 1 {
                assert_eq!(completion.result, 8_192);
                completion.result = 1_000;
            }
            writer.complete(completion);
        }
        assert!(n_ops < 10, "the write never finished");
    }
    assert_eq!(n_ops, 2, "one WRITE, and one for its rest");
    assert!(std::fs::read(&path).expect("read") == data);
}

#[tokio::test]
async fn dropped_writes_keep_their_bytes_until_the_kernel_is_done() {
    use std::future::Future;

    let dir = tempfile::tempdir().expect("tempdir");
    let counters = Arc::new(crate::write_parts::WriteCounters::default());
    let writer = match UringWriter::start(&UringOptions { entries: 8, ..UringOptions::default() }, counters) {
        Ok(writer) => writer,
        Err(why) => {
            eprintln!("io_uring is not available on this machine: {why}");
            return;
        }
    };
    let path = dir.path().join("dropped");
    let file = Arc::new(File::create(&path).expect("create"));
    for _ in 0..4 {
        // Sent by the first poll, then dropped, with its only reference to the bytes: the
        // ring's clone keeps them alive until the last of its 8 WRITEs completes.
        let mut write = Box::pin(writer.write(Arc::clone(&file), 0, bytes(&pattern(8 * WRITE_CHUNK)), false));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ = write.as_mut().poll(&mut cx);
    }
    let last = pattern(WRITE_CHUNK);
    writer.write(Arc::clone(&file), 0, bytes(&last), false).await.expect("the ring answers");
    writer.sync(Arc::clone(&file), true).await.expect("sync");
    writer.close_and_join().expect("the thread ends without a panic");
    let written = std::fs::read(&path).expect("read");
    assert!(written.len() <= 8 * WRITE_CHUNK && written[..WRITE_CHUNK] == last[..]);
}
