//! playsim's fuzz targets: every parser that sees bytes from outside (a file it did not
//! write, a server it does not control, a URL or a file a user typed), each as a plain
//! function of the bytes that must return without panicking, hanging or allocating beyond
//! what the input justifies.
//!
//! The same functions are driven two ways:
//! - by libFuzzer, through `cargo xtask fuzz [TARGET] [--time S]` (the cargo-fuzz project in
//!   `fuzz/`, on a nightly toolchain; without one, xtask says SKIPPED and why);
//! - on stable, by `tests/replay.rs`, which runs every committed input of `corpus/TARGET/`
//!   (seeded from the fixtures) and `crashes/TARGET/` (every crash found, kept as a
//!   regression) through its target: part of `cargo xtask test`.
//!
//! A new parser adds one function here and one line in [`TARGETS`]; `fuzz/` gets a
//! two-line binary of the same name.

#![deny(missing_docs)]

use std::path::Path;

use playsim_core::DecodedFrame;

/// A fuzz target: its name (the directory of its corpus and crashes, and its libFuzzer
/// binary) and the function the input goes through.
pub struct Target {
    /// The name, e.g. `dpx_header`.
    pub name: &'static str,
    /// Runs one input; must return for any bytes.
    pub run: fn(&[u8]),
    /// Cheap enough per input for CI's short live run (a header or a URL, not a whole frame).
    pub cheap: bool,
}

/// Every target, one line each.
pub const TARGETS: &[Target] = &[
    Target { name: "dpx_header", run: dpx_header, cheap: true },
    Target { name: "dpx_decode", run: dpx_decode, cheap: false },
    Target { name: "url", run: url, cheap: true },
    Target { name: "rdma_reply", run: rdma_reply, cheap: true },
    Target { name: "nfs_reply", run: nfs_reply, cheap: true },
    Target { name: "scenario_toml", run: scenario_toml, cheap: true },
    Target { name: "report_json", run: report_json, cheap: true },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The DPX header parser (`DpxHeader::parse`): a scanner's or a half-copied file's first bytes.
pub fn dpx_header(data: &[u8]) {
    let _ = playsim_dpx::DpxHeader::parse(data);
}

/// A whole DPX frame through the decoder, from memory: the header, the layout it claims,
/// and the unpacking of every line.
pub fn dpx_decode(data: &[u8]) {
    let mut frame = DecodedFrame::default();
    let _ = playsim_dpx::DpxDecoder.decode_dpx(data, &mut frame);
}

/// Every URL form a user can type: `nfs://`, `nfs+rdma://` and `sim://`, as text.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = playsim_storage::transport::scheme_of(text);
    let _ = playsim_storage::nfs::NfsUrl::parse(text);
    let _ = playsim_media::SimUrl::parse(text);
}

/// The RPC-over-RDMA transport header of a server's reply (`playsim_rdma::header::decode_reply`).
pub fn rdma_reply(data: &[u8]) {
    let _ = playsim_rdma::header::decode_reply(data);
}

/// A server's RPC reply as playsim's NFS client decodes it: the RPC header (xid, accepted,
/// verifier, accept status), then the result as LOOKUP, GETATTR, FSINFO, READDIRPLUS, MNT
/// and EXPORT results, and a READ's data copied and placed (XDR by nfs3_types and by hand).
pub fn nfs_reply(data: &[u8]) {
    playsim_storage::nfs::decode_any_reply(data);
}

/// A scenario file (`playsim run FILE.toml`), checked as `Scenario::parse` checks it.
pub fn scenario_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = playsim_settings::scenario::Scenario::parse(text, Path::new("/fuzz/scenario.toml"));
}

/// A JSON report, as `playsim compare` reads it.
pub fn report_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = playsim_report::json::from_str(text);
}
