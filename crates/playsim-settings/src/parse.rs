//! The value parsers: each knob's text (a flag's value, a scenario value written as text) goes
//! through one of these, so the command line and scenario files accept the same spellings.
//! Messages name the value and show a valid one; the caller adds the flag or the key.

use std::time::Duration;

use playsim_core::{FramePreset, Pacing};
use playsim_engine::OutputStage;
use playsim_storage::IoEngine;

use crate::order::FrameRange;
pub use playsim_core::units::{parse_bytes as bytes, parse_duration as duration};

/// The play order's kind, as `--order` and `order =` name it (the seed is a knob of its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OrderKind {
    /// First to last.
    #[default]
    Forward,
    /// Last to first.
    Reverse,
    /// A shuffle, the same for the same seed.
    Random,
}

/// A frame rate (`24`, `23.976`, `60000/1001`) or `max` (no pacing).
pub fn pacing(s: &str) -> Result<Pacing, String> {
    s.parse().map_err(|e: playsim_core::ParseError| e.to_string())
}

/// A frame size: a preset name or `WxH`.
pub fn preset(s: &str) -> Result<FramePreset, String> {
    s.parse().map_err(|e: playsim_core::ParseError| e.to_string())
}

/// A file's path, as `--smb-credentials` takes: not empty. Whether it can be read is checked
/// when it is used, naming the file.
pub fn file_path(s: &str) -> Result<std::path::PathBuf, String> {
    if s.trim().is_empty() {
        return Err("the path is empty (for example /etc/playsim/filer.cred)".into());
    }
    Ok(std::path::PathBuf::from(s))
}

/// The most frames, reads, streams or repeats a count may ask for: each is a task, a slot or
/// a stream of buffers, and more than this would hold more than a machine has.
pub const MAX_COUNT: u32 = 1024;
/// The most threads of a pool (decode, output): each is an OS thread with its stack.
pub const MAX_THREADS: u32 = 1024;
/// The most threads inside one frame's decode (FFmpeg's and OpenEXR's own, per decoder).
pub const MAX_CODEC_THREADS: u32 = 64;

/// A whole number from 1 to [`MAX_COUNT`].
pub fn count(s: &str) -> Result<u32, String> {
    bounded(s, MAX_COUNT, "", 8)
}

/// A pool's threads: 1 to [`MAX_THREADS`].
pub fn threads(s: &str) -> Result<u32, String> {
    bounded(s, MAX_THREADS, " threads", 8)
}

/// Threads inside one frame's decode: 1 to [`MAX_CODEC_THREADS`].
pub fn codec_threads(s: &str) -> Result<u32, String> {
    bounded(s, MAX_CODEC_THREADS, " threads", 4)
}

/// A whole number from 1 to `max`; refusals say the range and show `example`.
fn bounded(s: &str, max: u32, unit: &str, example: u32) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n @ 1..) if n <= u64::from(max) => Ok(n as u32),
        Ok(0) => Err(format!("'{s}' must be at least 1 (for example {example})")),
        Ok(_) => Err(format!(
            "'{s}' is more than {max}{unit}, the most a machine can hold (for example {example})"
        )),
        Err(_) if !s.trim().is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit()) => Err(format!(
            "'{s}' is more than {max}{unit}, the most a machine can hold (for example {example})"
        )),
        Err(_) => Err(format!("'{s}' is not a positive whole number (for example {example})")),
    }
}

/// A memory size for `--max-buffer`: `2GiB`, `512M`, `1T`, bytes; at most the machine's memory
/// (`MemTotal`).
pub fn memory_size(s: &str) -> Result<u64, String> {
    let total = playsim_engine::probe::meminfo_bytes("MemTotal");
    memory_size_within(s, total)
}

/// [`memory_size`] against a machine of `total` bytes (`None`: unknown, 1 TiB is then the most).
fn memory_size_within(s: &str, total: Option<u64>) -> Result<u64, String> {
    let example = "for example 2GiB, 512M or 1073741824";
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits_end);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!("invalid size '{s}': a whole number and a unit, B, K, M, G or T ({example})"))
        }
    };
    let limit = total.unwrap_or(1 << 40);
    let too_large = || {
        format!(
            "'{s}' is more than this machine's memory, {:.1} GiB ({example})",
            limit as f64 / f64::from(1u32 << 30)
        )
    };
    let n: u64 = match num.parse() {
        Ok(n) => n,
        Err(_) if !num.is_empty() => return Err(too_large()),
        Err(_) => return Err(format!("invalid size '{s}': it must start with a whole number ({example})")),
    };
    let bytes = n.checked_mul(scale).ok_or_else(too_large)?;
    if bytes == 0 {
        return Err(format!("invalid size '{s}': it must be positive ({example})"));
    }
    if bytes > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A positive whole number, as `--frames` takes.
pub fn positive(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive whole number (for example 96)")),
    }
}

/// A whole number, 0 included.
pub fn whole(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| format!("'{s}' is not a whole number (for example 0 or 10)"))
}

/// A whole number of frames, 0 to start at once, up to [`MAX_COUNT`], as `--preroll` takes.
pub fn preroll(s: &str) -> Result<u32, String> {
    match s.trim() {
        "0" => Ok(0),
        _ => bounded(s, MAX_COUNT, " frames", 5).map_err(|e| {
            e.replace("not a positive whole number", "not a whole number")
                .replace(")", ", or 0 to start at once)")
        }),
    }
}

/// Frame numbers `A-B`.
pub fn range(s: &str) -> Result<FrameRange, String> {
    s.parse()
}

/// TCP connections per stream: 1 to 64.
pub fn nconnect(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 1..=64) => Ok(n),
        _ => Err(format!("'{s}' is not a connection count from 1 to 64 (for example 4)")),
    }
}

/// Bytes per NFS READ: 4K to 64M.
pub fn rsize(s: &str) -> Result<usize, String> {
    match bytes(s) {
        Ok(n) if (4096..=64 << 20).contains(&n) => Ok(n),
        _ => Err(format!("read size '{s}' is out of range: 4K to 64M (for example 1M)")),
    }
}

/// `v210` or `none`.
pub fn output_stage(s: &str) -> Result<OutputStage, String> {
    match s.trim() {
        "v210" => Ok(OutputStage::V210),
        "none" => Ok(OutputStage::None),
        _ => Err(format!("output stage '{s}' is not known: one of v210, none (for example v210)")),
    }
}

/// `forward`, `reverse` or `random`.
pub fn order(s: &str) -> Result<OrderKind, String> {
    match s.trim() {
        "forward" => Ok(OrderKind::Forward),
        "reverse" => Ok(OrderKind::Reverse),
        "random" => Ok(OrderKind::Random),
        _ => Err(format!("order '{s}' is not known: one of forward, reverse, random (for example forward)")),
    }
}

/// `pread` or `io_uring` (also spelt `io-uring`).
pub fn io_engine(s: &str) -> Result<IoEngine, String> {
    s.parse()
        .map_err(|_| format!("io engine '{s}' is not known: one of pread, io_uring (for example io_uring)"))
}

/// `openexr` or `exrs`, refused when not in this build.
pub fn exr_backend(s: &str) -> Result<playsim_exr::Backend, String> {
    s.parse()
}

/// A duration, or zero (a stream's start offset).
pub fn offset(s: &str) -> Result<Duration, String> {
    match s.trim().trim_end_matches(['s', 'm', 'h']).parse::<f64>() {
        Ok(0.0) => Ok(Duration::ZERO),
        _ => duration(s),
    }
}

/// Bits per sample: 8, 10 or 16.
pub fn bit_depth(s: &str) -> Result<u8, String> {
    match s.trim() {
        "8" => Ok(8),
        "10" => Ok(10),
        "16" => Ok(16),
        _ => Err(format!("bit depth '{s}' is not supported (for example 10; also 8 or 16)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_threads_are_bounded() {
        assert_eq!(count("8"), Ok(8));
        assert_eq!(count("1024"), Ok(1024));
        for absurd in ["1025", "4294967295", "18446744073709551616"] {
            let refusal = count(absurd).unwrap_err();
            assert!(refusal.contains("more than 1024") && refusal.contains("for example 8"), "{refusal}");
        }
        assert!(count("0").unwrap_err().contains("at least 1"));
        assert!(count("x").unwrap_err().contains("not a positive whole number"));
        assert!(threads("4294967295").unwrap_err().contains("more than 1024 threads"));
        assert!(codec_threads("65").unwrap_err().contains("more than 64 threads"));
        assert_eq!((preroll("0"), preroll("5")), (Ok(0), Ok(5)));
        let refusal = preroll("4294967296").unwrap_err();
        assert!(
            refusal.contains("more than 1024 frames") && refusal.contains("for example 5, or 0"),
            "{refusal}"
        );
        assert!(preroll("x")
            .unwrap_err()
            .contains("not a whole number (for example 5, or 0 to start at once)"));
        assert!(rsize("1000000000000000000").unwrap_err().contains("4K to 64M"));
    }

    #[test]
    fn memory_sizes_fit_the_machine() {
        let machine = Some(16 << 30);
        assert_eq!(memory_size_within("2GiB", machine), Ok(2 << 30));
        assert_eq!(memory_size_within("512M", machine), Ok(512 << 20));
        assert_eq!(memory_size_within("4096", machine), Ok(4096));
        for absurd in ["1T", "1000000000000000000", "99999999999999999999999", "17G"] {
            let refusal = memory_size_within(absurd, machine).unwrap_err();
            assert!(refusal.contains("16.0 GiB") && refusal.contains("for example 2GiB"), "{refusal}");
        }
        for bad in ["0", "G", "2 parsecs", "1e18"] {
            assert!(memory_size_within(bad, machine).unwrap_err().contains("for example 2GiB"), "{bad}");
        }
    }
}
