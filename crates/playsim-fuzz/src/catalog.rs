//! The fuzz targets by name and cost, with no dependency at all.
//!
//! `cargo xtask` includes this file (by `#[path]`) to choose which targets to run, rather than
//! linking this crate: the parsers need FFmpeg's and OpenEXR's libraries, which xtask itself
//! installs, so it must build before they are there. A test in `lib.rs` keeps this list and
//! [`TARGETS`](crate::TARGETS) the same.

/// A fuzz target's name and whether it is cheap enough per input for CI's short live run (a
/// header or a URL, not a whole frame).
pub struct Entry {
    /// The name: the directory of its corpus and crashes, and its libFuzzer binary.
    pub name: &'static str,
    /// Cheap enough for the short live run.
    pub cheap: bool,
}

/// Every target, in the order of `TARGETS`.
pub const CATALOG: &[Entry] = &[
    Entry { name: "dpx_header", cheap: true },
    Entry { name: "dpx_decode", cheap: false },
    Entry { name: "url", cheap: true },
    Entry { name: "transport_reply", cheap: true },
    Entry { name: "scenario_toml", cheap: true },
    Entry { name: "report_json", cheap: true },
    Entry { name: "exr_decode", cheap: false },
    Entry { name: "tiff_decode", cheap: false },
    Entry { name: "mxf_index", cheap: false },
    Entry { name: "sequence_pattern", cheap: true },
];

/// The entry called `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    CATALOG.iter().find(|e| e.name == name)
}
