//! DPX decode speed, and the memory bandwidth it is held against, on one thread.
//!
//! `dpx_decode/4k-dci-10bit` decodes one 4K DCI 10-bit frame from memory: a noisy 4096x2160
//! frame written with `write_dpx`, or the bytes of the file named by `PLAYSIM_BENCH_DPX`. The
//! `memcpy` group copies buffers of the frame's encoded and decoded sizes, the anchor of the
//! "DPX unpack speed" row of `cargo xtask bench` (`xtask/src/bench_unpack.rs`).
//!
//! Every figure's throughput is in bytes moved, read plus written: a decode reads the encoded
//! frame and writes the decoded one, a copy of n bytes reads n and writes n. All buffers are
//! far larger than the caches and are built, and written once, before timing.
//!
//! `PLAYSIM_BENCH_SHORT=1` (the bench suite's short mode) takes fewer, shorter samples.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput};
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

/// The sampling of every group: each iteration takes milliseconds, so samples of a fixed
/// number of iterations (flat) rather than criterion's growing ones.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    let short = std::env::var_os("PLAYSIM_BENCH_SHORT").is_some_and(|v| !v.is_empty() && v != "0");
    let (n_samples, measure_s, warm_up_s) = if short { (10, 2, 1) } else { (20, 8, 2) };
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(n_samples)
        .measurement_time(Duration::from_secs(measure_s))
        .warm_up_time(Duration::from_secs(warm_up_s));
}

fn dpx_decode(c: &mut Criterion) {
    let encoded = input();
    let mut out = DecodedFrame::default();
    // The first decode allocates the output; timing covers the steady state.
    DpxDecoder.decode(&encoded, &mut out).expect("the bench input decodes");
    let (encoded_len, decoded_len) = (encoded.len(), out.data.len());

    let mut group = c.benchmark_group("dpx_decode");
    configure(&mut group);
    group.throughput(Throughput::Bytes((encoded_len + decoded_len) as u64));
    group.bench_function("4k-dci-10bit", |b| {
        b.iter(|| DpxDecoder.decode(black_box(&encoded), black_box(&mut out)));
    });
    group.finish();
    drop((encoded, out));

    // One copy at a time, each pair of buffers allocated and written before it is timed.
    let mut group = c.benchmark_group("memcpy");
    configure(&mut group);
    for (name, len) in [("encoded-size", encoded_len), ("decoded-size", decoded_len)] {
        let src = vec![0x5au8; len];
        let mut dst = vec![0xa5u8; len];
        group.throughput(Throughput::Bytes(2 * len as u64));
        group.bench_function(name, |b| {
            b.iter(|| black_box(dst.as_mut_slice()).copy_from_slice(black_box(&src)));
        });
    }
    group.finish();
}

criterion_group!(benches, dpx_decode);
criterion_main!(benches);
