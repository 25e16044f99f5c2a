//! The output stage's per-frame work: packing a 4K DCI rgb48le frame to v210, on one thread.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use playsim::core::{DecodedFrame, IoBuf};
use playsim::engine::v210;

fn pack_4k_dci(c: &mut Criterion) {
    let mut frame = DecodedFrame::default();
    playsim::media::render_frame(4096, 2160, 7, false, &mut frame);
    let mut out = IoBuf::default();
    let mut group = c.benchmark_group("v210_pack");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(frame.data.len() as u64));
    group.bench_function("4k-dci-rgb48", |b| b.iter(|| v210::pack(&frame, &mut out)));
    group.finish();
}

criterion_group!(benches, pack_4k_dci);
criterion_main!(benches);
