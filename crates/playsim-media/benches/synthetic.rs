//! How long one synthetic frame takes to render, at the sizes the generator writes.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use playsim_core::{DecodedFrame, FramePreset};
use playsim_media::render_frame;

fn render(c: &mut Criterion) {
    let mut group = c.benchmark_group("render_frame");
    for preset in [FramePreset::Hd, FramePreset::Dci4k] {
        let (width, height) = preset.dimensions();
        group.throughput(Throughput::Elements(u64::from(width) * u64::from(height)));
        let mut frame = DecodedFrame::default();
        let mut index = 0;
        group.bench_function(preset.to_string(), |b| {
            b.iter(|| {
                index += 1;
                render_frame(width, height, index, false, &mut frame);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
