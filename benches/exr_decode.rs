//! EXR decode from memory on one thread, for each backend: a 4K DCI half RGBA PIZ frame.
//!
//! The frame is `PLAYSIM_BENCH_EXR` when set (so `cargo xtask bench` times the
//! same file as its plain OpenEXR reader), otherwise a synthetic film-grain
//! frame written before timing.
//!
//! The time is the process's CPU time (see `common/process_cpu.rs`): the row's anchor, the
//! plain OpenEXR reader, reports CPU time too, and a shared machine's load then cancels out.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use playsim::core::DecodedFrame;
use playsim::exr::write::{write_exr, WriteOptions};
use playsim::exr::{Backend, ExrDecoder, ExrOptions};

#[path = "common/process_cpu.rs"]
mod process_cpu;
use process_cpu::ProcessCpuTime;

fn input() -> Vec<u8> {
    if let Some(path) = std::env::var_os("PLAYSIM_BENCH_EXR") {
        return std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read PLAYSIM_BENCH_EXR: {e}"));
    }
    let mut frame = DecodedFrame::default();
    playsim::media::render_frame_f32(4096, 2160, 0, true, &mut frame);
    let mut bytes = Vec::new();
    write_exr(&frame, &WriteOptions::default(), &mut bytes).unwrap_or_else(|e| panic!("cannot write: {e}"));
    bytes
}

fn decode_4k_piz(c: &mut Criterion<ProcessCpuTime>) {
    let bytes = input();
    let mut group = c.benchmark_group("exr_decode");
    group.sample_size(10);
    // `cargo xtask bench --short` (CI) measures for less time.
    if std::env::var_os("PLAYSIM_BENCH_SHORT").is_some() {
        group
            .measurement_time(std::time::Duration::from_secs(2))
            .warm_up_time(std::time::Duration::from_secs(1));
    }
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    for &backend in Backend::available() {
        let decoder = ExrDecoder::new(ExrOptions::new(backend));
        let mut out = DecodedFrame::default();
        group.bench_function(format!("4k-dci-half-rgba-piz/{backend}"), |b| {
            b.iter(|| decoder.decode_exr(&bytes, &mut out).unwrap_or_else(|e| panic!("decode failed: {e}")))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ProcessCpuTime::default());
    targets = decode_4k_piz
}
criterion_main!(benches);
