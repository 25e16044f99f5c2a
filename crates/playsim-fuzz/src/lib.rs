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
//! A new parser adds one function here, one line in [`TARGETS`] and one in
//! [`catalog::CATALOG`] (which xtask reads without linking the parsers); `fuzz/` gets a
//! two-line binary of the same name.
//!
//! The targets cover the DPX header and decoder, every URL form, each registered transport's
//! replies (`transport_reply`, through `Transport::fuzz_reply`: the NFS client's RPC and results,
//! the RPC-over-RDMA header, the smb2 crate's receive path), scenario TOML, the report JSON
//! `compare` reads, whole EXR frames through every backend compiled in, TIFF, playsim's MXF index
//! reader, and sequence patterns over names held in memory. Third-party decoders that size buffers
//! from what a file claims are fenced in playsim before they run (EXR attribute sizes as OpenEXR
//! 3.1.5 reads them, the data window and tiles against the file, exrs' DWA counters; TIFF entry
//! counts and tiles); their crash inputs name the library version that failed.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::path::Path;

use playsim_core::{DecodedFrame, EntryKind};

pub mod catalog;

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
    Target { name: "transport_reply", run: transport_reply, cheap: true },
    Target { name: "scenario_toml", run: scenario_toml, cheap: true },
    Target { name: "report_json", run: report_json, cheap: true },
    Target { name: "exr_decode", run: exr_decode, cheap: false },
    Target { name: "tiff_decode", run: tiff_decode, cheap: false },
    Target { name: "mxf_index", run: mxf_index, cheap: false },
    Target { name: "sequence_pattern", run: sequence_pattern, cheap: true },
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

/// Every URL form a user can type: `nfs://`, `nfs+rdma://`, `smb://` and `sim://`, as text.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = playsim_storage::transport::scheme_of(text);
    let _ = playsim_storage::nfs::NfsUrl::parse(text);
    let _ = playsim_storage::smb::SmbUrl::parse(text);
    let _ = playsim_media::SimUrl::parse(text);
}

/// A server's reply through a registered transport's reply parsers
/// (`Transport::fuzz_reply`): `NAME`, a NUL, then the reply routes it to the transport of that
/// name (`nfs`: the RPC header and each NFS procedure's result; `nfs+rdma`: the RPC-over-RDMA
/// header; `smb`: the smb2 crate's receive path and reply bodies, the next byte picking the
/// parser). Input without a known name goes, by its first byte, to one of the transports in
/// name order, so that a new transport is fuzzed as soon as it is registered.
pub fn transport_reply(data: &[u8]) {
    let registry = playsim::transports();
    let mut transports: Vec<_> = registry.enabled().collect();
    transports.sort_by_key(|t| t.name());
    let named = data.iter().position(|&b| b == 0).and_then(|end| {
        let transport = transports.iter().find(|t| t.name().as_bytes() == &data[..end])?;
        Some((transport, &data[end + 1..]))
    });
    let chosen = named.or_else(|| {
        let (&selector, rest) = data.split_first()?;
        Some((transports.get(usize::from(selector) % transports.len().max(1))?, rest))
    });
    if let Some((transport, reply)) = chosen {
        transport.fuzz_reply(reply);
    }
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

/// The largest decoded EXR frame the fuzz target lets a backend allocate. A well-formed
/// 10 KB PIZ or DWA file may decode to 1.3 GB (its expansion bound, see
/// `check_fits_in_file`); `cargo xtask fuzz` reports any single allocation over 256 MiB
/// (`-malloc_limit_mb`) as a finding, with its stack, so the target keeps legitimate frames
/// under it. Frames up to 64 MiB still take every path.
pub const FUZZ_MAX_DECODED_BYTES: u64 = 64 << 20;

/// A whole EXR frame from memory through every backend compiled in (the OpenEXR C++ library
/// through playsim's shim, and exrs): the header, the channel choice, the offset table and
/// every chunk's decompression, for frames up to [`FUZZ_MAX_DECODED_BYTES`].
pub fn exr_decode(data: &[u8]) {
    let mut frame = DecodedFrame::default();
    for &backend in playsim_exr::Backend::available() {
        let options = playsim_exr::ExrOptions {
            max_decoded_bytes: FUZZ_MAX_DECODED_BYTES,
            ..playsim_exr::ExrOptions::new(backend)
        };
        let _ = playsim_exr::ExrDecoder::new(options).decode_exr(data, &mut frame);
    }
}

/// A whole TIFF frame from memory through playsim's TIFF decoder: the header, the first
/// directory, and every strip or tile.
pub fn tiff_decode(data: &[u8]) {
    let mut frame = DecodedFrame::default();
    let _ = playsim_tiff::TiffDecoder.decode_tiff(data, &mut frame);
}

/// A whole MXF file from memory through playsim's own MXF index reader (the one in front of
/// FFmpeg): the Random Index Pack or the chain of partition packs, the index table segments,
/// and the KLV headers at the start of each edit unit.
pub fn mxf_index(data: &[u8]) {
    let _ = playsim_ffmpeg::mxf_index_from_memory(data);
}

/// Sequence patterns and discovery over odd names. The first byte picks what the location
/// is (a directory, a file, or nothing: a pattern such as `shot.%07d.dpx`, `####` or `@@@`),
/// the first line of the rest is the location and every further line a name in its
/// directory. A sequence found must name files that are there.
pub fn sequence_pattern(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let location = lines.next().unwrap_or_default();
    // A listing's names never hold a separator or a NUL.
    let names: Vec<String> =
        lines.filter(|n| !n.is_empty() && !n.contains(['/', '\0'])).map(str::to_owned).collect();
    let _ = playsim_media::parse_pattern_parts(location);
    let kind = match selector % 3 {
        0 => Some(EntryKind::Dir),
        1 => Some(EntryKind::File),
        _ => None,
    };
    let Ok(sequence) = playsim_media::Sequence::discover_in_names(Path::new(location), kind, names.clone())
    else {
        return;
    };
    let (first, last) = (sequence.first_frame(), sequence.last_frame());
    assert!(first <= last && sequence.n_frames() <= playsim_media::MAX_FRAME_RANGE);
    assert!(sequence.contains(first) && sequence.contains(last));
    let _ = (sequence.pattern(), sequence.path_for(last), sequence.extension());
    if kind != Some(EntryKind::File) {
        for frame in [first, last] {
            let name = format!(
                "{}{frame:0width$}{}",
                sequence.prefix(),
                sequence.suffix(),
                width = sequence.padding()
            );
            assert!(
                names.contains(&name),
                "frame {frame} of {} is {name}, which is not listed",
                sequence.pattern()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{catalog, TARGETS};

    #[test]
    fn the_catalog_xtask_reads_names_every_target_with_its_cost() {
        let targets: Vec<(&str, bool)> = TARGETS.iter().map(|t| (t.name, t.cheap)).collect();
        let catalog: Vec<(&str, bool)> = catalog::CATALOG.iter().map(|e| (e.name, e.cheap)).collect();
        assert_eq!(targets, catalog);
    }

    /// Each committed `transport_reply` input names a registered transport, so that it reaches
    /// the parsers it was found or written for, and every transport with reply parsers has seeds.
    #[test]
    fn every_transport_reply_input_names_a_registered_transport() {
        let registry = playsim::transports();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut seeded = std::collections::BTreeSet::new();
        for kind in ["corpus", "crashes"] {
            let dir = root.join(kind).join("transport_reply");
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let data = std::fs::read(entry.path()).unwrap_or_default();
                let name = data.split(|&b| b == 0).next().map(String::from_utf8_lossy).unwrap_or_default();
                assert!(
                    registry.enabled().any(|t| t.name() == name),
                    "{} names no registered transport: '{name}'",
                    entry.path().display()
                );
                seeded.insert(name.into_owned());
            }
        }
        assert_eq!(seeded.into_iter().collect::<Vec<_>>(), ["nfs", "nfs+rdma", "smb"]);
    }
}
