//! OpenEXR decoding for playsim, with two backends that produce the same pixels.
//!
//! - [`Backend::OpenExr`]: the OpenEXR C++ library that Resolve, Flame and Nuke
//!   use, through a small C++ shim that reads from playsim's buffer (so the
//!   storage read stays playsim's, and is measured by the engine).
//!   It is compiled in with the `openexr` cargo feature (on by default).
//! - [`Backend::Exrs`]: the pure-Rust `exr` crate, in every build.
//!
//! Canonical pixels: the data window, row by row; channels R, G, B, A (those that
//! exist), or, with none of them, all channels in the file's (alphabetical) order;
//! `--exr-layer NAME` picks the channels named `NAME.*`. Half and float samples
//! become f32 little-endian, converted exactly; uint samples become u32 little-endian.
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(clippy::unwrap_used)]

mod channels;
mod error;
mod exrs;
mod header;
// The FFI to the OpenEXR C++ shim, the one module allowed `unsafe`, each block with a `// SAFETY:` line.
#[allow(unsafe_code)]
mod openexr;
pub mod write;

pub use channels::{select_channels, SelectedChannels, MAX_DECODED_BYTES, MAX_PIXELS};
pub use error::{Error, ErrorKind};
pub use header::{probe_data_size, ChannelInfo, Compression, ExrInfo, SampleType};

use std::fmt;
use std::str::FromStr;

use playsim_core::{DecodeError, DecodedFrame, Decoder, FileBytes, FormatDescriptor, Probe};

/// OpenEXR for the format registry: `.exr` files starting `76 2f 31 01`, whose size is the
/// (first part's) data window, read from the header.
pub const FORMAT: FormatDescriptor =
    FormatDescriptor { name: "exr", extensions: &["exr"], magic: &[&header::MAGIC], probe };

fn probe(bytes: &FileBytes<'_>) -> Probe {
    match probe_data_size(bytes.head()) {
        Some((width, height)) => Probe::Size { width, height },
        None => Probe::Unknown,
    }
}

/// Which library decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The OpenEXR C++ library, through playsim's shim.
    OpenExr,
    /// The pure-Rust `exr` crate.
    Exrs,
}

impl Backend {
    /// The backends compiled into this build, the default first.
    pub fn available() -> &'static [Backend] {
        if openexr::AVAILABLE {
            &[Backend::OpenExr, Backend::Exrs]
        } else {
            &[Backend::Exrs]
        }
    }

    /// `openexr` in a build with the `openexr` feature, else `exrs`.
    pub fn default_available() -> Backend {
        Backend::available()[0]
    }

    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::OpenExr => "openexr",
            Backend::Exrs => "exrs",
        }
    }

    /// Whether this backend can decode `compression`. Both decode all ten methods:
    /// exr 1.74.2 decodes DWAA/DWAB bit-exactly like OpenEXR 3.1 (checked on the fixtures).
    pub fn supports(&self, compression: Compression) -> bool {
        let _ = compression;
        true
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = String;

    fn from_str(s: &str) -> Result<Backend, String> {
        let backend = match s.trim() {
            "openexr" => Backend::OpenExr,
            "exrs" => Backend::Exrs,
            _ => return Err(format!("unknown EXR backend '{s}' (for example openexr or exrs)")),
        };
        if !Backend::available().contains(&backend) {
            return Err(format!(
                "the {backend} backend needs the cargo feature `{backend}`, which this build of playsim \
                 was built without (rebuild with --features {backend}, or use exrs)"
            ));
        }
        Ok(backend)
    }
}

/// How EXR frames are decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExrOptions {
    /// The decoding library.
    pub backend: Backend,
    /// Threads used inside one frame (OpenEXR's per-file thread count, exrs'
    /// parallel block decompression); 1 decodes a frame on the calling thread only.
    pub codec_threads: u32,
    /// The layer to decode (`NAME` picks channels `NAME.R`, `NAME.G`, ...); `None` for the default layer.
    pub layer: Option<String>,
    /// The most bytes a decoded frame may take (at most [`MAX_DECODED_BYTES`]); a larger
    /// data window is refused before anything is allocated. A well-formed PIZ or DWA file of
    /// 10 KB may decode to a gigabyte, so a caller short of memory (a fuzzer) sets less.
    pub max_decoded_bytes: u64,
}

impl ExrOptions {
    /// `backend` with one codec thread, the default layer and the largest frames.
    pub fn new(backend: Backend) -> ExrOptions {
        ExrOptions { backend, codec_threads: 1, layer: None, max_decoded_bytes: MAX_DECODED_BYTES }
    }
}

impl Default for ExrOptions {
    fn default() -> Self {
        ExrOptions::new(Backend::default_available())
    }
}

/// Decodes EXR frames to canonical pixels with the chosen backend.
#[derive(Clone, Debug, Default)]
pub struct ExrDecoder {
    options: ExrOptions,
}

impl ExrDecoder {
    /// A decoder with `options`.
    pub fn new(options: ExrOptions) -> ExrDecoder {
        ExrDecoder { options }
    }

    /// The options in use.
    pub fn options(&self) -> &ExrOptions {
        &self.options
    }

    /// Decodes `encoded` into `out`, returning the file's header summary.
    ///
    /// The first decode in the process sets malloc's thresholds so that the decoders'
    /// per-file scratch stays in the heap between frames (see `malloc.rs`).
    pub fn decode_exr(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<ExrInfo, Error> {
        playsim_core::malloc::keep_scratch_in_heap();
        match self.options.backend {
            Backend::OpenExr => openexr::decode(encoded, &self.options, out),
            Backend::Exrs => exrs::decode(encoded, &self.options, out),
        }
    }
}

impl Decoder for ExrDecoder {
    fn name(&self) -> &'static str {
        "exr"
    }

    fn describe(&self) -> String {
        let library = match self.options.backend {
            Backend::OpenExr => format!("openexr {}", openexr_version().unwrap_or_default()),
            Backend::Exrs => "exrs (exr crate)".to_owned(),
        };
        let threads = self.options.codec_threads;
        let layer = self.options.layer.as_deref().map(|l| format!(", layer {l}")).unwrap_or_default();
        format!(
            "exr: {}, {threads} codec thread{}{layer}",
            library.trim_end(),
            if threads == 1 { "" } else { "s" }
        )
    }

    fn decode(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError> {
        self.decode_exr(encoded, out).map(drop).map_err(DecodeError::from)
    }
}

/// The OpenEXR library's version, when the `openexr` backend is compiled in.
pub fn openexr_version() -> Option<String> {
    openexr::version()
}
