//! The OpenEXR C++ library backend, through playsim's shim (`shim/exr_shim.cpp`).
//!
//! The shim reads from playsim's buffer through an `Imf::IStream` over memory,
//! so the storage read stays playsim's. A decode makes two calls: the header
//! (without the offset table or pixels), from which [`crate::select_channels`]
//! picks the channels and refuses oversized windows before anything is
//! allocated, then the pixels, which OpenEXR writes straight into the frame.
//! Compressed chunks are decompressed straight from playsim's buffer (the stream
//! says it is memory-mapped); uncompressed parts are copied chunk by chunk,
//! because OpenEXR 3.1 reads a short uncompressed chunk past its end.
//! This module and `malloc.rs` (two `mallopt` calls) hold the crate's only `unsafe` code.
//!
//! Compiled in with the `openexr` cargo feature (on by default; `build.rs` then finds
//! OpenEXR >= 3.0 with pkg-config or fails the build); without it every decode is refused
//! as unsupported, naming the feature.

use playsim_core::DecodedFrame;

use crate::{Error, ExrInfo, ExrOptions};

/// Whether the shim was compiled in (the `openexr` feature).
pub(crate) const AVAILABLE: bool = cfg!(feature = "openexr");

/// Decodes `encoded` into `out` with OpenEXR, returning the header summary.
#[cfg(feature = "openexr")]
pub(crate) fn decode(encoded: &[u8], options: &ExrOptions, out: &mut DecodedFrame) -> Result<ExrInfo, Error> {
    shim::decode(encoded, options, out)
}

/// Without the library, every decode is refused.
#[cfg(not(feature = "openexr"))]
pub(crate) fn decode(
    _encoded: &[u8],
    _options: &ExrOptions,
    _out: &mut DecodedFrame,
) -> Result<ExrInfo, Error> {
    Err(Error::unsupported(
        "the openexr backend needs the cargo feature `openexr`, which this build of playsim was built \
         without (rebuild with --features openexr, or decode with the exrs backend)",
    ))
}

/// Writes `halves` (a `size` frame of `channels` interleaved half samples, R G B and A) as a
/// scan-line EXR file through OpenEXR into `out`.
#[cfg(feature = "openexr")]
pub(crate) fn encode(
    halves: &[u16],
    size: (u32, u32),
    channels: usize,
    compression: crate::Compression,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    shim::encode(halves, size, channels, compression, out)
}

/// Without the library, every write through it is refused.
#[cfg(not(feature = "openexr"))]
pub(crate) fn encode(
    _halves: &[u16],
    _size: (u32, u32),
    _channels: usize,
    _compression: crate::Compression,
    _out: &mut Vec<u8>,
) -> Result<(), Error> {
    Err(Error::unsupported(
        "the openexr writer needs the cargo feature `openexr`, which this build of playsim was built \
         without (write with the exrs backend)",
    ))
}

/// The OpenEXR version the shim was compiled against, e.g. `3.1.5`.
pub(crate) fn version() -> Option<String> {
    #[cfg(feature = "openexr")]
    {
        Some(shim::version())
    }
    #[cfg(not(feature = "openexr"))]
    {
        None
    }
}

/// The most threads one file may ask OpenEXR for.
#[cfg(feature = "openexr")]
const MAX_CODEC_THREADS: u32 = 1024;

#[cfg(feature = "openexr")]
mod shim {
    use std::ffi::{c_char, c_void, CStr, CString};

    use playsim_core::DecodedFrame;

    use super::MAX_CODEC_THREADS;
    use crate::{ChannelInfo, Compression, Error, ExrInfo, ExrOptions, SampleType};

    /// The declarations of `shim/exr_shim.h`.
    mod ffi {
        use std::ffi::{c_char, c_int, c_void};

        pub const OK: c_int = 0;
        pub const MALFORMED: c_int = 1;
        pub const UNSUPPORTED: c_int = 2;
        pub const BAD_ARGUMENT: c_int = 3;
        pub const OUT_OF_MEMORY: c_int = 4;

        pub const UINT: i32 = 0;
        pub const HALF: i32 = 1;
        pub const FLOAT: i32 = 2;

        #[repr(C)]
        #[derive(Default)]
        pub struct Header {
            pub data_window: [i32; 4],
            pub display_window: [i32; 4],
            pub compression: i32,
            pub tiled: i32,
            pub n_channels: i32,
            pub n_chunks: u64,
            pub min_bytes: u64,
        }

        pub type BytesFn = unsafe extern "C" fn(ctx: *mut c_void, data: *const u8, len: usize);

        pub type ChannelFn = unsafe extern "C" fn(
            ctx: *mut c_void,
            name: *const c_char,
            name_len: usize,
            pixel_type: i32,
            x_sampling: i32,
            y_sampling: i32,
        );

        extern "C" {
            pub fn exr_shim_read_header(
                data: *const u8,
                len: usize,
                header: *mut Header,
                on_channel: ChannelFn,
                ctx: *mut c_void,
                err: *mut c_char,
                err_len: usize,
            ) -> c_int;

            pub fn exr_shim_read_pixels(
                data: *const u8,
                len: usize,
                names: *const *const c_char,
                n_names: usize,
                threads: i32,
                out: *mut u8,
                out_len: usize,
                err: *mut c_char,
                err_len: usize,
            ) -> c_int;

            pub fn exr_shim_write(
                halves: *const u16,
                n_halves: usize,
                width: i32,
                height: i32,
                n_channels: i32,
                compression: i32,
                on_bytes: BytesFn,
                ctx: *mut c_void,
                err: *mut c_char,
                err_len: usize,
            ) -> c_int;

            pub fn exr_shim_version() -> *const c_char;
        }
    }

    /// Room for the shim's error message.
    const ERR_LEN: usize = 1024;

    pub(super) fn decode(
        encoded: &[u8],
        options: &ExrOptions,
        out: &mut DecodedFrame,
    ) -> Result<ExrInfo, Error> {
        // Before OpenEXR reads an attribute, whose claimed size it allocates first.
        crate::header::check_attribute_sizes(encoded)?;
        let (info, chunks) = read_header(encoded)?;
        // Before allocating: refuses huge windows, subsampling, unknown layers.
        let selected = crate::select_channels(&info, options.layer.as_deref())?;
        // Then an offset table that the file cannot hold (the shim refuses it
        // too, but only after the output is allocated).
        if chunks.min_bytes > encoded.len() as u64 {
            return Err(Error::malformed(format!(
                "the header describes {} chunks, more than a {}-byte file can hold (damaged size or truncated file)",
                chunks.n_chunks,
                encoded.len()
            )));
        }
        crate::channels::check_fits_in_file(&selected, info.compression, encoded.len())?;
        crate::channels::check_within(&selected, options.max_decoded_bytes)?;
        let names = selected
            .channels
            .iter()
            .map(|c| CString::new(c.name.as_str()))
            .collect::<Result<Vec<CString>, _>>()
            .map_err(|_| Error::malformed("a channel name contains a NUL byte"))?;
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        // OpenEXR's 0 threads decodes on the calling thread: that is codec_threads 1.
        let threads = match options.codec_threads {
            0 | 1 => 0,
            n => i32::try_from(n.min(MAX_CODEC_THREADS)).unwrap_or(0),
        };
        out.reset(selected.width, selected.height, selected.format);
        let mut err = [0u8; ERR_LEN];
        // SAFETY: `encoded` and `out.data` are live slices whose pointers and lengths
        // are passed together; the shim only reads `encoded` (OpenEXR's decompressors
        // take `const char *`) and writes only inside `out.data`, because it checks
        // that the data window it reads from the file needs exactly `out.data.len()`
        // bytes before building the frame buffer. `name_ptrs` points at
        // `names.len()` NUL-terminated strings owned by `names`, which outlives the
        // call; `err` is writable for `ERR_LEN` bytes and the shim NUL-terminates
        // it. The shim catches every C++ exception, so none unwinds into Rust.
        let code = unsafe {
            ffi::exr_shim_read_pixels(
                encoded.as_ptr(),
                encoded.len(),
                name_ptrs.as_ptr(),
                name_ptrs.len(),
                threads,
                out.data.as_mut_ptr(),
                out.data.len(),
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        check(code, &err)?;
        if cfg!(target_endian = "big") {
            // The shim writes host-order samples; canonical pixels are little-endian.
            for sample in out.data.chunks_exact_mut(4) {
                sample.reverse();
            }
        }
        Ok(info)
    }

    pub(super) fn encode(
        halves: &[u16],
        (width, height): (u32, u32),
        channels: usize,
        compression: crate::Compression,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        // The file format's (and Imf::Compression's) number: its place in `ALL`, as a decode
        // reads it back.
        let code = Compression::ALL.iter().position(|c| *c == compression);
        let (Some(Ok(code)), Ok(w), Ok(h), Ok(n)) =
            (code.map(i32::try_from), i32::try_from(width), i32::try_from(height), i32::try_from(channels))
        else {
            return Err(Error::limit(format!("a {width}x{height} frame is too large to write")));
        };
        let mut err = [0u8; ERR_LEN];
        let ctx: *mut Vec<u8> = out;
        // SAFETY: `halves` is a live slice passed with its length, which the shim checks
        // against width * height * channels before reading it, and only reads; `ctx` is
        // `out`, a live `Vec<u8>` borrowed mutably for the whole call, and `append` is the
        // only code that uses it, once, while the shim runs; `err` is writable for
        // `ERR_LEN` bytes and the shim NUL-terminates it. The shim catches every C++
        // exception, so none unwinds into Rust.
        let code = unsafe {
            ffi::exr_shim_write(
                halves.as_ptr(),
                halves.len(),
                w,
                h,
                n,
                code,
                append,
                ctx.cast(),
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        check(code, &err)
    }

    /// The shim's `on_bytes`: appends the written file to the `Vec<u8>` behind `ctx`.
    unsafe extern "C" fn append(ctx: *mut c_void, data: *const u8, len: usize) {
        if ctx.is_null() || (data.is_null() && len > 0) {
            return;
        }
        // SAFETY: `ctx` is the `Vec<u8>` `encode` passed, alive and not otherwise used
        // during the call; `data` points at `len` bytes the shim owns until we return.
        let (out, bytes) = unsafe {
            (
                &mut *ctx.cast::<Vec<u8>>(),
                if len == 0 { &[][..] } else { std::slice::from_raw_parts(data, len) },
            )
        };
        out.extend_from_slice(bytes);
    }

    pub(super) fn version() -> String {
        // SAFETY: the shim returns a pointer to a static NUL-terminated string
        // (OPENEXR_VERSION_STRING), valid for the whole program.
        unsafe { CStr::from_ptr(ffi::exr_shim_version()) }.to_string_lossy().into_owned()
    }

    /// What the channel callback collects.
    #[derive(Default)]
    struct Channels {
        channels: Vec<ChannelInfo>,
        error: Option<Error>,
    }

    /// Lower bounds on the first part's chunks and on the bytes they take.
    struct ChunkBound {
        n_chunks: u64,
        min_bytes: u64,
    }

    fn read_header(encoded: &[u8]) -> Result<(ExrInfo, ChunkBound), Error> {
        let mut raw = ffi::Header::default();
        let mut collected = Channels::default();
        let mut err = [0u8; ERR_LEN];
        // SAFETY: `encoded` is a live slice passed with its length, and is only
        // read; `raw` is a writable `repr(C)` struct matching `exr_shim_header`;
        // `ctx` is `collected`, which outlives the call and is accessed only by
        // `on_channel`, which the shim calls synchronously during this call; `err`
        // is writable for `ERR_LEN` bytes and the shim NUL-terminates it. The shim
        // catches every C++ exception, so none unwinds into Rust.
        let code = unsafe {
            ffi::exr_shim_read_header(
                encoded.as_ptr(),
                encoded.len(),
                &mut raw,
                on_channel,
                (&mut collected as *mut Channels).cast::<c_void>(),
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        check(code, &err)?;
        if let Some(e) = collected.error {
            return Err(e);
        }
        if usize::try_from(raw.n_channels).ok() != Some(collected.channels.len()) {
            return Err(Error::malformed("the OpenEXR header's channel count does not match its channels"));
        }
        let compression = usize::try_from(raw.compression)
            .ok()
            .and_then(|i| Compression::ALL.get(i).copied())
            .ok_or_else(|| Error::unsupported(format!("unknown compression method {}", raw.compression)))?;
        let [x0, y0, x1, y1] = raw.data_window;
        let [dx0, dy0, dx1, dy1] = raw.display_window;
        let info = ExrInfo {
            data_window: (x0, y0, x1, y1),
            display_window: (dx0, dy0, dx1, dy1),
            channels: collected.channels,
            compression,
            tiled: raw.tiled != 0,
        };
        Ok((info, ChunkBound { n_chunks: raw.n_chunks, min_bytes: raw.min_bytes }))
    }

    /// Called by the shim for each channel of the header, in the file's order.
    /// It must not unwind: it only converts and pushes.
    unsafe extern "C" fn on_channel(
        ctx: *mut c_void,
        name: *const c_char,
        name_len: usize,
        pixel_type: i32,
        x_sampling: i32,
        y_sampling: i32,
    ) {
        // SAFETY: `ctx` is the `&mut Channels` that `read_header` passed to the
        // shim, alive and not otherwise borrowed while the shim runs.
        let collected = unsafe { &mut *ctx.cast::<Channels>() };
        // SAFETY: the shim passes `name_len` readable bytes at `name`, valid for
        // the duration of this call.
        let name = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), name_len) };
        let name = String::from_utf8_lossy(name).into_owned();
        let sample = match pixel_type {
            ffi::HALF => SampleType::Half,
            ffi::FLOAT => SampleType::Float,
            ffi::UINT => SampleType::Uint,
            other => {
                collected.error.get_or_insert_with(|| {
                    Error::malformed(format!("channel {name} has unknown sample type {other}"))
                });
                return;
            }
        };
        // Zero or negative sampling is refused by OpenEXR's header check; 0 here
        // would be refused as subsampled anyway.
        let x_sampling = u32::try_from(x_sampling).unwrap_or(0);
        let y_sampling = u32::try_from(y_sampling).unwrap_or(0);
        collected.channels.push(ChannelInfo { name, sample, x_sampling, y_sampling });
    }

    /// Turns a shim return code and message into a result.
    fn check(code: i32, err: &[u8]) -> Result<(), Error> {
        if code == ffi::OK {
            return Ok(());
        }
        let message = message(err);
        Err(match code {
            ffi::UNSUPPORTED => Error::unsupported(message),
            ffi::OUT_OF_MEMORY => Error::limit(message),
            // A shim argument that does not fit the file cannot come from a
            // well-formed file read twice; report the file, not a crash.
            ffi::MALFORMED | ffi::BAD_ARGUMENT => Error::malformed(message),
            other => Error::malformed(format!("openexr shim returned unknown code {other}: {message}")),
        })
    }

    /// The shim's message in playsim's style: lower-case sentences joined by
    /// colons, no full stop, and without the empty file name OpenEXR quotes (the
    /// engine adds the real file and frame).
    fn message(err: &[u8]) -> String {
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        let text = String::from_utf8_lossy(&err[..end]);
        // OpenEXR writes `... image file "NAME". REASON`; the stream has no name.
        let text = text.replace(" \"\". ", ": ").replace(" \"\"", "");
        let text = text.trim().trim_end_matches('.').trim_end();
        if text.is_empty() {
            return "the OpenEXR library failed without a message".to_owned();
        }
        text.split(": ").map(lower_first).collect::<Vec<_>>().join(": ")
    }

    /// `Error in X` becomes `error in X`; a first word with other capitals
    /// (`OpenEXR`, `PIZ`) is kept as written.
    fn lower_first(s: &str) -> String {
        let first_word = s.split(' ').next().unwrap_or("");
        let mut chars = first_word.chars();
        match chars.next() {
            Some(c) if c.is_uppercase() && !chars.any(char::is_uppercase) => {
                c.to_lowercase().chain(s[c.len_utf8()..].chars()).collect()
            }
            _ => s.to_owned(),
        }
    }
}

#[cfg(test)]
#[cfg(not(feature = "openexr"))]
mod tests_without_the_feature {
    use playsim_core::DecodedFrame;

    use super::*;
    use crate::ErrorKind;

    #[test]
    fn without_the_feature_decode_is_unsupported_naming_it() {
        assert_eq!(crate::Backend::available(), [crate::Backend::Exrs]);
        let err = decode(b"", &ExrOptions::default(), &mut DecodedFrame::default()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert!(err.message().contains("feature `openexr`"), "{err}");
        assert_eq!(version(), None);
    }

    #[test]
    fn without_the_feature_the_backend_is_refused_naming_it() {
        let err = "openexr".parse::<crate::Backend>().unwrap_err();
        assert!(err.contains("cargo feature `openexr`") && err.contains("exrs"), "{err}");
        assert_eq!("exrs".parse::<crate::Backend>(), Ok(crate::Backend::Exrs));
        assert_eq!(ExrOptions::default().backend, crate::Backend::Exrs);
    }
}

/// The backend against OpenEXR's own files and damaged ones; only with the library.
#[cfg(test)]
#[cfg(feature = "openexr")]
mod tests {
    use std::path::PathBuf;

    use md5::{Digest, Md5};
    use playsim_core::{DecodedFrame, PixelFormat};

    use super::*;
    use crate::{Backend, Compression, ErrorKind, SampleType};

    fn data_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data-openexr")
    }

    fn read(name: &str) -> Vec<u8> {
        std::fs::read(data_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn options(codec_threads: u32, layer: Option<&str>) -> ExrOptions {
        ExrOptions { codec_threads, layer: layer.map(str::to_owned), ..ExrOptions::new(Backend::OpenExr) }
    }

    fn decode_with(
        bytes: &[u8],
        codec_threads: u32,
        layer: Option<&str>,
    ) -> Result<(ExrInfo, DecodedFrame), Error> {
        let mut out = DecodedFrame::default();
        let info = decode(bytes, &options(codec_threads, layer), &mut out)?;
        Ok((info, out))
    }

    fn md5_hex(bytes: &[u8]) -> String {
        Md5::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// One line of expected.tsv (written by make.py).
    struct Expected {
        file: String,
        layer: Option<String>,
        compression: Compression,
        tiled: bool,
        width: u32,
        height: u32,
        format: PixelFormat,
        md5: String,
    }

    fn expected() -> Vec<Expected> {
        let tsv = std::fs::read_to_string(data_dir().join("expected.tsv")).unwrap();
        tsv.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                assert_eq!(f.len(), 8, "{line}");
                let format = match f[6] {
                    "rgb" => PixelFormat::RgbF32Le,
                    "rgba" => PixelFormat::RgbaF32Le,
                    s => PixelFormat::Samples32Le {
                        channels: s.trim_start_matches("samples").parse().unwrap(),
                    },
                };
                Expected {
                    file: f[0].to_owned(),
                    layer: (f[1] != "-").then(|| f[1].to_owned()),
                    compression: f[2].parse().unwrap(),
                    tiled: f[3] == "1",
                    width: f[4].parse().unwrap(),
                    height: f[5].parse().unwrap(),
                    format,
                    md5: f[7].to_owned(),
                }
            })
            .collect()
    }

    #[test]
    fn version_is_the_library_version() {
        let v = version().unwrap();
        assert!(v.starts_with("3."), "{v}");
        assert_eq!(v.split('.').count(), 3, "{v}");
    }

    #[test]
    fn canonical_pixels_match_openexr_python_for_every_file() {
        let cases = expected();
        assert!(cases.len() >= 30, "expected.tsv has {} lines", cases.len());
        // Every compression is covered, scanline and tiled.
        for c in Compression::ALL {
            assert!(cases.iter().any(|e| e.compression == c && !e.tiled), "no scanline {c} file");
        }
        assert!(cases.iter().filter(|e| e.tiled).count() >= 8);
        for e in &cases {
            let bytes = read(&e.file);
            for threads in [1, 2] {
                let what = format!("{} layer {:?} codec_threads {threads}", e.file, e.layer);
                let (info, out) = decode_with(&bytes, threads, e.layer.as_deref())
                    .unwrap_or_else(|err| panic!("{what}: {err}"));
                assert_eq!(info.compression, e.compression, "{what}");
                assert_eq!(info.tiled, e.tiled, "{what}");
                assert_eq!(
                    (out.width, out.height, out.format),
                    (e.width, e.height, Some(e.format)),
                    "{what}"
                );
                assert_eq!(
                    out.data.len(),
                    (e.width * e.height) as usize * e.format.bytes_per_pixel(),
                    "{what}"
                );
                assert_eq!(md5_hex(&out.data), e.md5, "{what}");
            }
        }
    }

    #[test]
    fn windows_and_channels_come_from_the_header() {
        let (info, _) = decode_with(&read("scan-piz-half-rgba.exr"), 1, None).unwrap();
        assert_eq!(info.data_window, (5, 3, 37, 42));
        assert_eq!(info.display_window, (0, 0, 47, 47));
        let names: Vec<&str> = info.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "G", "R"]);
        assert!(info.channels.iter().all(|c| c.sample == SampleType::Half && c.x_sampling == 1));

        let (info, _) = decode_with(&read("scan-rle-negative-window.exr"), 1, None).unwrap();
        assert_eq!(info.data_window, (-7, -5, 20, 30));

        let (info, _) = decode_with(&read("scan-zip-mixed-rgb.exr"), 1, None).unwrap();
        let samples: Vec<(&str, SampleType)> =
            info.channels.iter().map(|c| (c.name.as_str(), c.sample)).collect();
        assert_eq!(samples, [("B", SampleType::Uint), ("G", SampleType::Float), ("R", SampleType::Half)]);
    }

    #[test]
    fn half_converts_exactly_and_the_origin_is_the_data_window_corner() {
        // make.py puts exact specials at the start of every half/float channel's first row.
        let (_, out) = decode_with(&read("scan-none-half-rgba.exr"), 1, None).unwrap();
        let first: Vec<f32> = out
            .data
            .chunks_exact(4)
            .step_by(4)
            .take(5)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(first[0], 5.960_464_5e-8, "smallest half subnormal");
        assert_eq!(first[1], 65504.0);
        assert!(first[2] == 0.0 && first[2].is_sign_negative());
        assert_eq!(first[3], -1.5);
        assert_eq!(first[4], f32::INFINITY);
    }

    #[test]
    fn a_missing_layer_and_deep_data_are_unsupported() {
        let err = decode_with(&read("scan-piz-layers.exr"), 1, Some("specular")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(err.message().contains("diffuse"), "{err}");
        let err = decode_with(&read("deep-zips.exr"), 1, None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(err.message().contains("deep"), "{err}");
        // A compression method from a later OpenEXR (HTJ2K is 11 in 3.4).
        for method in [10u8, 11, 200] {
            let mut bytes = read("scan-zip-half-rgba.exr");
            let at = attribute(&bytes, "compression");
            bytes[at] = method;
            let err = decode_with(&bytes, 1, None).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
            assert!(err.message().contains("unknown compression"), "{err}");
        }
    }

    /// Where the (single-part) header ends and the offset table starts.
    fn header_end(bytes: &[u8]) -> usize {
        let mut at = 8;
        loop {
            let name_end = at + bytes[at..].iter().position(|&b| b == 0).unwrap();
            if name_end == at {
                return at + 1;
            }
            let type_end = name_end + 1 + bytes[name_end + 1..].iter().position(|&b| b == 0).unwrap();
            let size = u32::from_le_bytes(bytes[type_end + 1..type_end + 5].try_into().unwrap()) as usize;
            at = type_end + 5 + size;
        }
    }

    /// The offset of the value of attribute `name`.
    fn attribute(bytes: &[u8], name: &str) -> usize {
        let key = format!("{name}\0");
        let at = bytes.windows(key.len()).position(|w| w == key.as_bytes()).unwrap();
        let type_end = at + key.len() + bytes[at + key.len()..].iter().position(|&b| b == 0).unwrap();
        type_end + 5
    }

    fn offsets(bytes: &[u8], n: usize) -> Vec<usize> {
        let table = header_end(bytes);
        (0..n)
            .map(|i| u64::from_le_bytes(bytes[table + 8 * i..table + 8 * i + 8].try_into().unwrap()) as usize)
            .collect()
    }

    fn assert_err(bytes: &[u8], kind: ErrorKind, what: &str) -> Error {
        for threads in [1, 2] {
            match decode_with(bytes, threads, None) {
                Ok(_) => panic!("{what}: decoded"),
                Err(e) => {
                    eprintln!("{what}: {e}");
                    assert_eq!(e.kind(), kind, "{what}: {e}");
                    assert!(!e.message().is_empty());
                    assert!(!e.message().ends_with('.'), "{what}: {e}");
                }
            }
        }
        decode_with(bytes, 1, None).unwrap_err()
    }

    #[test]
    fn empty_and_garbage_input_are_malformed() {
        let err = assert_err(b"", ErrorKind::Malformed, "empty");
        assert!(err.message().contains("not an OpenEXR file"), "{err}");
        let garbage: Vec<u8> = (0u32..4096).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert_err(&garbage, ErrorKind::Malformed, "garbage");
        // A valid preamble followed by garbage.
        let mut preamble = read("scan-piz-half-rgba.exr")[..8].to_vec();
        preamble.extend_from_slice(&garbage);
        assert_err(&preamble, ErrorKind::Malformed, "preamble and garbage");
        // Cut inside the header.
        assert_err(&read("scan-piz-half-rgba.exr")[..100], ErrorKind::Malformed, "cut header");
    }

    #[test]
    fn a_truncated_piz_file_is_malformed() {
        let bytes = read("scan-piz-half-rgba.exr");
        let cut = &bytes[..bytes.len() * 6 / 10];
        let err = assert_err(cut, ErrorKind::Malformed, "piz cut at 60%");
        assert!(err.message().contains("end of file"), "{err}");
    }

    #[test]
    fn a_corrupt_offset_table_is_malformed() {
        let good = read("scan-piz-half-rgba.exr");
        let table = header_end(&good);
        // 40 lines in 32-line chunks: two entries.
        assert_eq!(offsets(&good, 2)[0], table + 16);
        let patch = |values: [u64; 2]| {
            let mut bytes = good.clone();
            for (i, v) in values.iter().enumerate() {
                bytes[table + 8 * i..table + 8 * i + 8].copy_from_slice(&v.to_le_bytes());
            }
            bytes
        };
        assert_err(&patch([u64::MAX / 2, u64::MAX / 2]), ErrorKind::Malformed, "offsets past the end");
        assert_err(&patch([(good.len() - 4) as u64; 2]), ErrorKind::Malformed, "offsets near the end");
        assert_err(&patch([0, 0]), ErrorKind::Malformed, "zero offsets");
        assert_err(&patch([8, 8]), ErrorKind::Malformed, "offsets into the header");
        let [a, b] = [offsets(&good, 2)[0] as u64, offsets(&good, 2)[1] as u64];
        assert_err(&patch([b, a]), ErrorKind::Malformed, "swapped offsets");
        // A tiled file's table too.
        let tiled = read("tiled-piz-half-rgb.exr");
        let mut bytes = tiled.clone();
        let t = header_end(&tiled);
        bytes[t..t + 8].copy_from_slice(&(tiled.len() as u64 * 3).to_le_bytes());
        assert_err(&bytes, ErrorKind::Malformed, "tiled offset past the end");
    }

    #[test]
    fn corrupt_piz_huffman_data_is_malformed() {
        let good = read("scan-piz-half-rgba.exr");
        let chunk = offsets(&good, 2)[0];
        // A chunk: y (4), size (4), then PIZ data: the bitmap's min and max
        // (2 + 2), the bitmap, the Huffman data's length (4), then the Huffman
        // header: im, iM, table length, bit count, 4 unused bytes, and the code table.
        let data = chunk + 8;
        let min = u16::from_le_bytes([good[data], good[data + 1]]) as usize;
        let max = u16::from_le_bytes([good[data + 2], good[data + 3]]) as usize;
        let bitmap = if min <= max { max - min + 1 } else { 0 };
        let huf = data + 4 + bitmap + 4;
        let mut bytes = good.clone();
        bytes[huf..huf + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_err(&bytes, ErrorKind::Malformed, "huffman table size");
        let mut bytes = good.clone();
        bytes[huf + 12..huf + 16].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
        assert_err(&bytes, ErrorKind::Malformed, "huffman bit count");
        let mut bytes = good.clone();
        bytes[huf + 20..huf + 60].fill(0xff);
        assert_err(&bytes, ErrorKind::Malformed, "huffman code table");
    }

    #[test]
    fn a_huge_data_window_is_refused_before_allocating() {
        let good = read("scan-piz-half-rgba.exr");
        let at = attribute(&good, "dataWindow");
        let patch = |window: [i32; 4]| {
            let mut bytes = good.clone();
            for (i, v) in window.iter().enumerate() {
                bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
            bytes
        };
        assert_err(&patch([0, 0, 99_999, 99_999]), ErrorKind::Limit, "huge window");
        assert_err(&patch([0, 0, 300_000_000, 0]), ErrorKind::Limit, "huge width");
        let err = decode_with(&patch([i32::MIN, i32::MIN, i32::MAX, i32::MAX]), 1, None).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Limit | ErrorKind::Malformed), "{err}");
        assert_err(&patch([10, 10, 5, 5]), ErrorKind::Malformed, "inverted window");
    }

    #[test]
    fn a_tile_far_larger_than_the_window_is_refused_before_openexr_sizes_its_buffers_by_it() {
        // OpenEXR 3.1.5 sizes its tile buffers and compressors by the tile description:
        // 2^16 x 2^16 tiles over a small window cost 518 MB in a 361-byte file (kept in
        // crates/playsim-fuzz/crashes/exr_decode/).
        eprintln!("found with OpenEXR 3.1.5; linked: {}", version().unwrap_or_default());
        let good = read("tiled-zip-half-rgb.exr");
        let tiles = attribute(&good, "tiles");
        let with_tiles = |x: u32, y: u32| {
            let mut bytes = good.clone();
            bytes[tiles..tiles + 4].copy_from_slice(&x.to_le_bytes());
            bytes[tiles + 4..tiles + 8].copy_from_slice(&y.to_le_bytes());
            bytes
        };
        let err = assert_err(&with_tiles(1 << 16, 1 << 16), ErrorKind::Malformed, "huge tiles");
        assert!(err.message().contains("65536x65536 tiles of 6 bytes a pixel"), "{err}");
        // A tile larger than the window but within 16 MiB is a small image in big tiles:
        // OpenEXR reads it (or reports its chunks as damaged), without the refusal.
        match decode_with(&with_tiles(512, 512), 1, None) {
            Ok(_) => {}
            Err(e) => assert!(!e.message().contains("damaged tile size"), "{e}"),
        }
    }

    #[test]
    fn an_offset_table_larger_than_the_file_is_refused_before_openexr_allocates_it() {
        // OpenEXR allocates and zero-fills the offset table first: 2^28 one-pixel
        // tiles in an 8 KB file cost 3 GB and seconds before the shim checked.
        let mut bytes = read("tiled-zip-half-rgb.exr");
        let tiles = attribute(&bytes, "tiles");
        bytes[tiles..tiles + 8].copy_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0]);
        let window = attribute(&bytes, "dataWindow");
        for (i, v) in [0i32, 0, 16383, 16383].iter().enumerate() {
            bytes[window + 4 * i..window + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        let err = assert_err(&bytes, ErrorKind::Malformed, "one-pixel tiles");
        assert!(err.message().contains("268435456 chunks"), "{err}");
        // One-line chunks, 2^28 lines: within the pixel limit, but a 2 GB table.
        let mut bytes = read("scan-none-half-rgba.exr");
        let window = attribute(&bytes, "dataWindow");
        for (i, v) in [0i32, 0, 0, (1 << 28) - 1].iter().enumerate() {
            bytes[window + 4 * i..window + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        let err = assert_err(&bytes, ErrorKind::Malformed, "2^28 lines");
        assert!(err.message().contains("chunks, more than a"), "{err}");
    }

    #[test]
    fn openexr_3_1_5_allocates_what_an_attribute_claims_so_a_claim_past_the_end_is_refused_first() {
        // OpenEXR 3.1.5 resizes a string (or unknown) attribute's value to its claimed size
        // and zero-fills it before reading: 1.9 GB and 2 s from a 1311-byte file (kept in
        // crates/playsim-fuzz/crashes/exr_decode/). playsim walks the header first.
        eprintln!("found with OpenEXR 3.1.5; linked: {}", version().unwrap_or_default());
        let good = read("scan-piz-half-rgba.exr");
        // A string attribute "note" of one byte, first in the header (the offset table is
        // left as it was: the claim must be refused before any chunk is read).
        let with_note = |claim: i32| {
            let mut bytes = good[..8].to_vec();
            bytes.extend(b"note\0string\0");
            bytes.extend(claim.to_le_bytes());
            bytes.push(b'x');
            bytes.extend(&good[8..]);
            bytes
        };
        let (_, reference) = decode_with(&good, 1, None).unwrap();
        for claim in [1i32 << 30, i32::MAX, -1] {
            let err = assert_err(&with_note(claim), ErrorKind::Malformed, "attribute claim");
            assert!(err.message().contains(&format!("note claims {claim} bytes")), "{err}");
        }
        // A fixed-size value is read for its type's size, whatever the size field says: the
        // library reads such a file, and so does playsim.
        let size_at = attribute(&good, "compression") - 4;
        let mut lying = good.clone();
        lying[size_at..size_at + 4].copy_from_slice(&(1i32 << 30).to_le_bytes());
        let (_, decoded) = decode_with(&lying, 1, None).unwrap();
        assert!(decoded.data == reference.data);
    }

    #[test]
    fn a_window_larger_than_the_file_could_decode_to_is_refused_by_both_backends_before_allocating() {
        // A 16K x 16K window in a small PIZ file is 4 GiB of frame, within the limits, but
        // no PIZ stream of that size expands so far (past the exr_decode fuzz target's 2 GB limit).
        for (file, window) in [
            ("scan-piz-half-rgba.exr", [0i32, 0, 16383, 16383]),
            ("scan-none-half-rgba.exr", [0, 0, 4095, 255]),
        ] {
            let mut bytes = read(file);
            let at = attribute(&bytes, "dataWindow");
            for (i, v) in window.iter().enumerate() {
                bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
            for &backend in Backend::available() {
                let mut out = DecodedFrame::default();
                let options = ExrOptions::new(backend);
                let err = crate::ExrDecoder::new(options).decode_exr(&bytes, &mut out).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Malformed, "{file} {backend}: {err}");
                assert!(err.message().contains("file can hold"), "{file} {backend}: {err}");
                assert!(out.data.is_empty(), "{file} {backend}: allocated {} bytes", out.data.len());
            }
        }
    }

    #[test]
    fn a_frame_larger_than_max_decoded_bytes_is_refused_by_both_backends_before_allocating() {
        let bytes = read("scan-piz-half-rgba.exr");
        for &backend in Backend::available() {
            let (width, height) = {
                let mut out = DecodedFrame::default();
                crate::ExrDecoder::new(ExrOptions::new(backend)).decode_exr(&bytes, &mut out).unwrap();
                (u64::from(out.width), u64::from(out.height))
            };
            let frame_bytes = width * height * 4 * 4;
            for (limit, fits) in [(frame_bytes, true), (frame_bytes - 1, false)] {
                let options = ExrOptions { max_decoded_bytes: limit, ..ExrOptions::new(backend) };
                let mut out = DecodedFrame::default();
                match crate::ExrDecoder::new(options).decode_exr(&bytes, &mut out) {
                    Ok(_) => assert!(fits, "{backend}: {limit} bytes allowed a {frame_bytes}-byte frame"),
                    Err(err) => {
                        assert!(!fits, "{backend}: {err}");
                        assert_eq!(err.kind(), ErrorKind::Limit, "{backend}: {err}");
                        assert!(
                            err.message().contains(&format!("more than the {limit}-byte limit")),
                            "{err}"
                        );
                        assert!(out.data.is_empty(), "{backend}: allocated {} bytes", out.data.len());
                    }
                }
            }
        }
    }

    #[test]
    fn a_short_uncompressed_chunk_does_not_read_past_the_buffer() {
        // OpenEXR 3.1 reads an uncompressed chunk for as many bytes as its lines
        // need, whatever size the chunk declares; from a memory-mapped stream that
        // read ran past playsim's buffer (a segfault at the end of a mapping). Here
        // the data window becomes one line of 4M pixels (32 MB of half RGBA) while
        // the first chunk, y = 3, still declares one 33-pixel line.
        let mut bytes = read("scan-none-half-rgba.exr");
        let at = attribute(&bytes, "dataWindow");
        for (i, v) in [5i32, 3, 5 + (4 << 20) - 1, 3].iter().enumerate() {
            bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        match decode_with(&bytes, 1, None) {
            // OpenEXR's own line buffer is read instead: garbage, but no fault.
            Ok((_, out)) => assert_eq!((out.width, out.height), (4 << 20, 1)),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Malformed, "{e}"),
        }
    }

    #[test]
    fn every_truncation_and_many_byte_flips_fail_cleanly() {
        let mut n_errors = 0;
        let mut n_runs = 0;
        for name in ["scan-piz-half-rgba.exr", "tiled-dwab-half-rgb.exr", "scan-zip-float-rgb.exr"] {
            let good = read(name);
            for cut in (0..good.len()).step_by(61) {
                n_runs += 1;
                n_errors += usize::from(decode_with(&good[..cut], 1, None).is_err());
            }
            // Seeded byte flips past the preamble; the result may decode (lossy
            // data has no checksum) but must not crash or panic.
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..200 {
                let mut bytes = good.clone();
                for _ in 0..4 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let at = 8 + (state % (good.len() as u64 - 8)) as usize;
                    bytes[at] ^= (state >> 56) as u8 | 1;
                }
                n_runs += 1;
                if let Ok((_, out)) = decode_with(&bytes, 1, None) {
                    let bytes_per_pixel = out.format.unwrap().bytes_per_pixel();
                    assert_eq!(out.data.len(), out.width as usize * out.height as usize * bytes_per_pixel);
                } else {
                    n_errors += 1;
                }
            }
        }
        eprintln!("{n_errors} of {n_runs} damaged inputs were refused");
        assert!(n_errors > n_runs / 4, "{n_errors} of {n_runs}");
    }
}
