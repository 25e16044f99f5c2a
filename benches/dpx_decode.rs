//! DPX decode speed: one 4K DCI 10-bit frame decoded from memory on one thread.
//!
//! The input is built before timing: a noisy 4096x2160 frame written with
//! `write_dpx`, or the bytes of the file named by `PLAYSIM_BENCH_DPX`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use playsim_core::{DecodedFrame, Decoder, PixelFormat};
use playsim_dpx::{write_dpx, DpxDecoder, WriteOptions};

const WIDTH: u32 = 4096;
const HEIGHT: u32 = 2160;

/// The encoded frame to decode: the file named by `PLAYSIM_BENCH_DPX`, or a synthetic one.
fn input() -> Vec<u8> {
    if let Some(path) = std::env::var_os("PLAYSIM_BENCH_DPX") {
        return std::fs::read(&path)
            .unwrap_or_else(|e| panic!("cannot read PLAYSIM_BENCH_DPX={}: {e}", path.to_string_lossy()));
    }
    // Noise, so that no pattern in the data flatters the decoder.
    let mut frame = DecodedFrame::default();
    frame.reset(WIDTH, HEIGHT, PixelFormat::Rgb48Le);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for sample in frame.data.chunks_exact_mut(2) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        sample.copy_from_slice(&(state as u16).to_le_bytes());
    }
    let mut encoded = Vec::new();
    write_dpx(&frame, &WriteOptions::default(), &mut encoded).expect("write_dpx of a valid frame");
    encoded
}

fn dpx_decode(c: &mut Criterion) {
    let encoded = input();
    let mut out = DecodedFrame::default();
    // The first decode allocates the output; timing covers the steady state.
    DpxDecoder.decode(&encoded, &mut out).expect("the bench input decodes");

    let mut group = c.benchmark_group("dpx_decode");
    group.sample_size(20).measurement_time(Duration::from_secs(8)).warm_up_time(Duration::from_secs(2));
    group.throughput(Throughput::Bytes(encoded.len() as u64));
    group.bench_function("4k-dci-10bit", |b| {
        b.iter(|| DpxDecoder.decode(black_box(&encoded), black_box(&mut out)));
    });
    group.finish();
}

criterion_group!(benches, dpx_decode);
criterion_main!(benches);
