//! The value parsers: each knob's text (a flag's value, a scenario value written as text) goes
//! through one of these, so the command line and scenario files accept the same spellings.
//! Messages name the value and show a valid one; the caller adds the flag or the key.

use std::time::Duration;

use playsim_core::{FramePreset, Pacing};
use playsim_engine::OutputStage;
use playsim_storage::IoEngine;

use crate::order::FrameRange;
pub use crate::units::{parse_bytes as bytes, parse_duration as duration};

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

/// A whole number of 1 or more.
pub fn count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        Ok(_) => Err(format!("'{s}' must be at least 1 (for example 8)")),
        Err(_) => Err(format!("'{s}' is not a positive whole number (for example 8)")),
    }
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

/// A whole number of frames, 0 to start at once, as `--preroll` takes.
pub fn preroll(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("'{s}' is not a whole number (for example 5, or 0 to start at once)"))
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
    let n = bytes(s)?;
    if (4096..=64 << 20).contains(&n) {
        Ok(n)
    } else {
        Err(format!("read size '{s}' is out of range: 4K to 64M (for example 1M)"))
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
