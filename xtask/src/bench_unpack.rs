//! The "DPX unpack speed" row of `cargo xtask bench` (section `dpx`): playsim's unpack of a
//! 4K DCI 10-bit frame in GB/s on one core, against memcpy's bandwidth measured in the same run.
//!
//! Both come from one run of the criterion bench `benches/dpx_decode.rs`: the decode of one
//! frame from memory (`dpx_decode/4k-dci-10bit`, which is the unpack: the header is a few
//! hundred nanoseconds of its milliseconds) and copies of buffers of the frame's encoded and
//! decoded sizes (`memcpy/encoded-size`, `memcpy/decoded-size`), all on one thread, all far
//! larger than the caches.
//!
//! What is compared is bytes moved per second, read plus written. An unpack reads the
//! encoded frame (E = 35.4 MB) and writes the decoded one (D = 1.5 E = 53.1 MB): E + D bytes.
//! A copy of n bytes reads n and writes n: 2n bytes. The anchor is the copy of the decoded size,
//! the larger (two 53 MB buffers); the encoded-size copy is kept as an extra, as are the
//! unpack's input and output rates alone. The sizes are criterion's own throughputs
//! (`benchmark.json`), which the bench sets to the bytes moved, so nothing here assumes them.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{bail, Context, Result};

use crate::bench::{criterion_dir, criterion_mean_ns, Bench, BenchRow};
use crate::process;

/// The issue's target: the unpack moves at least half the bytes per second memcpy does.
const TARGET_RATIO: f64 = 0.5;

/// The criterion ids this row reads, in `<group>/<function>` form.
const UNPACK_ID: &str = "dpx_decode/4k-dci-10bit";
const COPY_ENCODED_ID: &str = "memcpy/encoded-size";
const COPY_DECODED_ID: &str = "memcpy/decoded-size";

pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    let started = SystemTime::now();
    let mut cmd = crate::bench::cargo_bench();
    // Only this row's benchmarks; the synthetic frame (noise), so that the row stands alone.
    cmd.args(["--bench", "dpx_decode", "--", "--noplot", "^(dpx_decode/4k-dci-10bit|memcpy/)"])
        .env_remove("PLAYSIM_BENCH_DPX");
    if bench.short {
        cmd.env("PLAYSIM_BENCH_SHORT", "1");
    } else {
        cmd.env_remove("PLAYSIM_BENCH_SHORT");
    }
    process::run(&mut cmd)?;

    let dir = criterion_dir(&bench.target);
    let measure = |id: &str| -> Result<Measured> {
        let new = dir.join(id).join("new");
        Ok(Measured {
            mean_ns: criterion_mean_ns(&new.join("estimates.json"), started)?,
            bytes_moved: criterion_throughput_bytes(&new.join("benchmark.json"))?,
        })
    };
    let figures = Figures {
        unpack: measure(UNPACK_ID)?,
        copy_encoded: measure(COPY_ENCODED_ID)?,
        copy_decoded: measure(COPY_DECODED_ID)?,
    };
    let row = figures.row()?;
    println!(
        "DPX unpack: {:.2} GB/s moved ({:.2} ms/frame) against memcpy's {:.2} GB/s: {:.2}×",
        row.playsim,
        figures.unpack.mean_ns / 1e6,
        row.anchor,
        row.ratio
    );
    Ok(vec![row])
}

/// One criterion benchmark: its mean time per iteration and the bytes one iteration moves.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Measured {
    mean_ns: f64,
    bytes_moved: u64,
}

impl Measured {
    /// Bytes moved per second, in GB/s (10^9 bytes).
    fn gb_per_s(&self) -> f64 {
        self.bytes_moved as f64 / self.mean_ns
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Figures {
    unpack: Measured,
    copy_encoded: Measured,
    copy_decoded: Measured,
}

impl Figures {
    /// The row, after checking that the three benchmarks are of one frame: the unpack moves
    /// the encoded size plus the decoded size.
    fn row(&self) -> Result<BenchRow> {
        let encoded = self.copy_encoded.bytes_moved / 2;
        let decoded = self.copy_decoded.bytes_moved / 2;
        if encoded + decoded != self.unpack.bytes_moved || encoded == 0 {
            bail!(
                "criterion's throughputs do not describe one frame: the unpack moves {} bytes, \
                 the copies {} and {} (expected the unpack's to be half their sum)",
                self.unpack.bytes_moved,
                self.copy_encoded.bytes_moved,
                self.copy_decoded.bytes_moved
            );
        }
        let seconds = self.unpack.mean_ns / 1e9;
        Ok(BenchRow::rate(
            "DPX unpack, 4K DCI 10-bit, 1 core",
            "GB/s",
            self.unpack.gb_per_s(),
            &format!(
                "memcpy of the decoded size ({:.1} MB), 1 core; both in bytes read + written",
                decoded as f64 / 1e6
            ),
            self.copy_decoded.gb_per_s(),
        )
        .target(TARGET_RATIO)
        .extra("unpack_input_gb_per_s", encoded as f64 / seconds / 1e9)
        .extra("unpack_output_gb_per_s", decoded as f64 / seconds / 1e9)
        .extra("unpack_ms_per_frame", self.unpack.mean_ns / 1e6)
        .extra("memcpy_encoded_size_gb_per_s", self.copy_encoded.gb_per_s())
        .extra("ratio_to_memcpy_encoded_size", self.unpack.gb_per_s() / self.copy_encoded.gb_per_s()))
    }
}

/// The bytes of `Throughput::Bytes` in a criterion `benchmark.json`.
fn criterion_throughput_bytes(path: &Path) -> Result<u64> {
    let text = fs::read_to_string(path).with_context(|| format!("criterion wrote no {}", path.display()))?;
    parse_throughput_bytes(&text).with_context(|| format!("no throughput.Bytes in {}", path.display()))
}

fn parse_throughput_bytes(text: &str) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value["throughput"]["Bytes"].as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: u64 = 35_391_488;
    const D: u64 = 53_084_160;

    fn figures(unpack_ms: f64, copy_encoded_ms: f64, copy_decoded_ms: f64) -> Figures {
        Figures {
            unpack: Measured { mean_ns: unpack_ms * 1e6, bytes_moved: E + D },
            copy_encoded: Measured { mean_ns: copy_encoded_ms * 1e6, bytes_moved: 2 * E },
            copy_decoded: Measured { mean_ns: copy_decoded_ms * 1e6, bytes_moved: 2 * D },
        }
    }

    #[test]
    fn compares_bytes_moved_per_second() {
        // 88.5 MB moved in 4 ms is 22.1 GB/s; 106.2 MB copied in 4 ms is 26.5 GB/s.
        let row = figures(4.0, 2.7, 4.0).row().unwrap();
        assert!((row.playsim - 22.118_912).abs() < 1e-6, "{}", row.playsim);
        assert!((row.anchor - 26.54208).abs() < 1e-6, "{}", row.anchor);
        assert!((row.ratio - 0.8333).abs() < 1e-3 && row.pass, "{}", row.ratio);
        assert_eq!(row.unit, "GB/s");
        assert_eq!(row.target_ratio, 0.5);
        assert!(row.anchor_name.contains("53.1 MB"), "{}", row.anchor_name);
        assert!((row.extra["unpack_input_gb_per_s"] - 8.847_872).abs() < 1e-6);
        assert!((row.extra["unpack_output_gb_per_s"] - 13.27104).abs() < 1e-6);
        assert_eq!(row.extra["unpack_ms_per_frame"], 4.0);
        // Half as fast as the copy per byte moved, or slower, is off target.
        assert!(!figures(10.0, 2.7, 4.0).row().unwrap().pass);
    }

    #[test]
    fn refuses_figures_of_different_frames() {
        let mut f = figures(4.0, 2.7, 4.0);
        f.copy_encoded.bytes_moved += 2;
        let err = f.row().err().expect("refused");
        assert!(err.to_string().contains("do not describe one frame"), "{err}");
    }

    #[test]
    fn parses_criterion_benchmark_json() {
        let json = r#"{"group_id":"memcpy","function_id":"decoded-size","value_str":null,
            "throughput":{"Bytes":106168320},"full_id":"memcpy/decoded-size"}"#;
        assert_eq!(parse_throughput_bytes(json), Some(106_168_320));
        assert_eq!(parse_throughput_bytes(r#"{"throughput":null}"#), None);
    }
}
