//! The output stage's per-frame work: packing a 4K DCI rgb48le frame to v210, on one thread,
//! with the kernel `pack` picks and with the plain per-pixel reference it is checked against.
//!
//! `PLAYSIM_BENCH_SHORT=1` (the bench suite's short mode) takes fewer, shorter samples.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use playsim::core::{DecodedFrame, IoBuf};
use playsim::engine::v210;

fn pack_4k_dci(c: &mut Criterion) {
    let mut frame = DecodedFrame::default();
    playsim::media::render_frame(4096, 2160, 7, false, &mut frame);
    let mut out = IoBuf::default();
    // The first pack allocates the output; timing covers the steady state.
    v210::pack(&frame, &mut out);
    let short = std::env::var_os("PLAYSIM_BENCH_SHORT").is_some_and(|v| !v.is_empty() && v != "0");
    let (n_samples, measure_s, warm_up_s) = if short { (10, 2, 1) } else { (20, 5, 2) };
    let mut group = c.benchmark_group("v210_pack");
    // Each iteration takes milliseconds: samples of a fixed number of iterations.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(n_samples)
        .measurement_time(Duration::from_secs(measure_s))
        .warm_up_time(Duration::from_secs(warm_up_s));
    group.throughput(Throughput::Bytes(frame.data.len() as u64));
    group.bench_function("4k-dci-rgb48", |b| b.iter(|| v210::pack(&frame, &mut out)));
    group.bench_function("4k-dci-rgb48-reference", |b| b.iter(|| v210::pack_reference(&frame, &mut out)));
    group.finish();
}

criterion_group!(benches, pack_4k_dci);
criterion_main!(benches);
