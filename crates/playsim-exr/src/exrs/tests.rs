//! Tests of the exrs backend against files written and decoded by OpenEXR
//! (`tests/data`, made by `tests/data/make.py`), and against broken files.

use md5::{Digest, Md5};
use playsim_core::{DecodedFrame, PixelFormat};

use super::*;
use crate::{Backend, ErrorKind};

macro_rules! fixtures {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/", $name)))),*]
    };
}

/// Every file in tests/data.
const FILES: &[(&str, &[u8])] = fixtures![
    "decreasing_y_zips.exr",
    "id_uint_rle.exr",
    "layers_zip.exr",
    "mipmap_piz.exr",
    "multipart_zip.exr",
    "rgb_float_b44.exr",
    "rgb_float_pxr24.exr",
    "rgb_float_zip.exr",
    "rgb_half_b44_lossy.exr",
    "rgb_half_b44a_lossy.exr",
    "rgb_half_dwaa.exr",
    "rgb_half_dwab.exr",
    "rgba_half_b44.exr",
    "rgba_half_b44a.exr",
    "rgba_half_none.exr",
    "rgba_half_piz.exr",
    "rgba_half_pxr24.exr",
    "rgba_half_rle.exr",
    "rgba_half_zip.exr",
    "rgba_half_zips.exr",
    "ripmap_zip.exr",
    "tiled_big_tiles_rle.exr",
    "tiled_rgba_half_piz.exr",
    "tiled_xyz_mixed_zip.exr",
    "window_negative_zip.exr",
    "window_offset_piz.exr",
    "xyz_mixed_b44.exr",
    "xyz_mixed_none.exr",
    "xyz_mixed_piz.exr",
    "xyz_mixed_pxr24.exr",
    "xyz_mixed_rle.exr",
    "xyz_mixed_zips.exr",
    "z_float_pxr24_lossy.exr",
    "z_float_zip.exr",
];

const EXPECTED: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/expected.tsv"));

fn file(name: &str) -> &'static [u8] {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytes)| *bytes)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

fn options(threads: u32, layer: Option<&str>) -> ExrOptions {
    ExrOptions { codec_threads: threads, layer: layer.map(str::to_owned), ..ExrOptions::new(Backend::Exrs) }
}

fn decode_with(encoded: &[u8], threads: u32, layer: Option<&str>) -> Result<(ExrInfo, DecodedFrame), Error> {
    let mut out = DecodedFrame::default();
    let info = decode(encoded, &options(threads, layer), &mut out)?;
    Ok((info, out))
}

fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The error of decoding `encoded`, which must fail without a panic inside `exr`.
fn error_of(encoded: &[u8], threads: u32) -> Error {
    match decode_with(encoded, threads, None) {
        Ok(_) => panic!("decoded a broken file"),
        Err(e) => {
            assert!(!e.message().contains("panicked"), "{e}");
            e
        }
    }
}

/// Byte offset of the first offset table, and the first chunk's offset.
fn table_and_first_chunk(encoded: &[u8]) -> (usize, usize) {
    let (_, table) = read_meta(encoded).unwrap();
    let first = u64::from_le_bytes(encoded[table..table + 8].try_into().unwrap());
    (table, first as usize)
}

/// A small deterministic generator for garbage and mutations (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn every_fixture_matches_openexr_on_one_and_several_threads() {
    let mut n = 0;
    for line in EXPECTED.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let [name, layer, width, height, channels, md5] = f[..] else { panic!("bad line {line}") };
        let layer = (layer != "-").then_some(layer);
        for threads in [1, 2, 3] {
            let (info, out) = decode_with(file(name), threads, layer)
                .unwrap_or_else(|e| panic!("{name} layer {layer:?} threads {threads}: {e}"));
            let what = format!("{name} layer {layer:?} threads {threads}");
            assert_eq!(
                (out.width.to_string(), out.height.to_string()),
                (width.into(), height.into()),
                "{what}"
            );
            let n_channels = channels.split(',').count();
            assert_eq!(out.format.map(|f| f.channels()), Some(n_channels), "{what}");
            let selected = select_channels(&info, layer).unwrap();
            let names: Vec<&str> = selected.channels.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names.join(","), channels, "{what}");
            assert_eq!(md5_hex(&out.data), md5, "{what}: pixels differ from OpenEXR's");
        }
        n += 1;
    }
    // Every fixture but the DWA ones (checked against the openexr backend below) is checked.
    let listed: Vec<&str> = EXPECTED.lines().filter_map(|l| l.split('\t').next()).collect();
    for (name, _) in FILES.iter().filter(|(n, _)| !n.contains("_dwa")) {
        assert!(listed.contains(name), "{name} is not in expected.tsv");
    }
    assert!(n >= 30, "only {n} expectations");
}

use crate::select_channels;

#[test]
fn pixel_formats_follow_the_channels() {
    let format = |name: &str, layer: Option<&str>| decode_with(file(name), 1, layer).unwrap().1.format;
    assert_eq!(format("rgba_half_piz.exr", None), Some(PixelFormat::RgbaF32Le));
    assert_eq!(format("rgb_float_zip.exr", None), Some(PixelFormat::RgbF32Le));
    assert_eq!(format("layers_zip.exr", Some("diffuse")), Some(PixelFormat::RgbF32Le));
    assert_eq!(format("xyz_mixed_piz.exr", None), Some(PixelFormat::Samples32Le { channels: 3 }));
    assert_eq!(format("z_float_zip.exr", None), Some(PixelFormat::Samples32Le { channels: 1 }));
}

#[test]
fn header_summary() {
    let (info, _) = decode_with(file("window_offset_piz.exr"), 1, None).unwrap();
    assert_eq!(info.data_window, (5, 7, 25, 41));
    assert_eq!(info.display_window, (0, 0, 63, 63));
    assert_eq!(info.compression, Compression::Piz);
    assert!(!info.tiled);
    let names: Vec<&str> = info.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["A", "B", "G", "R"]);

    let (info, _) = decode_with(file("tiled_xyz_mixed_zip.exr"), 1, None).unwrap();
    assert!(info.tiled);
    assert_eq!(info.data_window, (3, -4, 23, 30));
    assert_eq!(info.compression, Compression::Zip);
    let channels: Vec<(&str, SampleType, u32)> =
        info.channels.iter().map(|c| (c.name.as_str(), c.sample, c.x_sampling)).collect();
    assert_eq!(
        channels,
        [("X", SampleType::Half, 1), ("Y", SampleType::Float, 1), ("Z", SampleType::Uint, 1)]
    );

    let (info, _) = decode_with(file("window_negative_zip.exr"), 1, None).unwrap();
    assert_eq!(info.data_window, (-20, -3, 0, 31));
    assert_eq!(info.display_window, (0, 0, 15, 15));

    // Only the first part of a multi-part file.
    let (info, _) = decode_with(file("multipart_zip.exr"), 1, None).unwrap();
    assert_eq!(info.channels.len(), 3);
    assert!(!info.tiled);

    let methods = [
        ("rgba_half_none.exr", Compression::None),
        ("rgba_half_rle.exr", Compression::Rle),
        ("rgba_half_zips.exr", Compression::Zips),
        ("rgba_half_zip.exr", Compression::Zip),
        ("rgba_half_piz.exr", Compression::Piz),
        ("rgba_half_pxr24.exr", Compression::Pxr24),
        ("rgba_half_b44.exr", Compression::B44),
        ("rgba_half_b44a.exr", Compression::B44a),
    ];
    for (name, compression) in methods {
        assert_eq!(decode_with(file(name), 1, None).unwrap().0.compression, compression, "{name}");
    }
}

#[test]
fn half_specials_are_converted_exactly() {
    // make.py puts these half bit patterns at the start of R's first row (not in the PIZ and B44 files).
    let halves: [u16; 11] =
        [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00];
    let (_, out) = decode_with(file("rgba_half_zip.exr"), 1, None).unwrap();
    for (x, bits) in halves.iter().enumerate() {
        let at = x * 16; // RGBA f32: R is the first sample of each 16-byte pixel
        let got = u32::from_le_bytes(out.data[at..at + 4].try_into().unwrap());
        assert_eq!(got, f16::from_bits(*bits).to_f32().to_bits(), "half {bits:#06x}");
    }
    assert_eq!(f32::from_le_bytes(out.data[2 * 16..2 * 16 + 4].try_into().unwrap()), 2f32.powi(-24));
}

use exr::prelude::f16;

#[test]
fn the_frame_allocation_is_reused() {
    let mut out = DecodedFrame::default();
    decode(file("rgba_half_piz.exr"), &options(1, None), &mut out).unwrap();
    let (ptr, first) = (out.data.as_ptr(), md5_hex(&out.data));
    out.data.iter_mut().for_each(|b| *b = 0xEE);
    decode(file("tiled_rgba_half_piz.exr"), &options(2, None), &mut out).unwrap();
    assert_eq!(out.data.as_ptr(), ptr);
    assert_eq!(md5_hex(&out.data), first);
}

#[test]
fn dwa_decodes_like_the_openexr_backend() {
    for name in ["rgb_half_dwaa.exr", "rgb_half_dwab.exr"] {
        let (_, ours) = decode_with(file(name), 1, None).unwrap();
        if crate::Backend::available().contains(&crate::Backend::OpenExr) {
            let reference = crate::ExrDecoder::new(crate::ExrOptions::new(crate::Backend::OpenExr));
            let mut theirs = DecodedFrame::default();
            reference.decode_exr(file(name), &mut theirs).unwrap();
            assert!(ours.data == theirs.data, "{name}: exrs and openexr differ");
        }
    }
}

#[test]
fn a_missing_layer_is_unsupported() {
    let e = decode_with(file("layers_zip.exr"), 1, Some("emission")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(
        e.message().contains("layer 'emission' not found (layers in the file: diffuse, specular)"),
        "{e}"
    );
}

#[test]
fn truncated_file_is_malformed() {
    let piz = file("rgba_half_piz.exr");
    for threads in [1, 2] {
        let e = error_of(&piz[..piz.len() * 6 / 10], threads);
        assert_eq!(e.kind(), ErrorKind::Malformed, "{e}");
        assert!(e.message().contains("truncated"), "{e}");
    }
    // Cut inside the header, and inside the offset table.
    let (table, _) = table_and_first_chunk(piz);
    for cut in [8, table / 2, table + 4] {
        let e = error_of(&piz[..cut], 1);
        assert_eq!(e.kind(), ErrorKind::Malformed, "cut at {cut}: {e}");
    }
}

#[test]
fn corrupt_offset_table_is_malformed() {
    let mut rng = Rng(0x5eed);
    for name in ["rgba_half_piz.exr", "tiled_rgba_half_piz.exr", "multipart_zip.exr", "rgba_half_zips.exr"] {
        let mut bytes = file(name).to_vec();
        let (table, first_chunk) = table_and_first_chunk(&bytes);
        for b in &mut bytes[table..first_chunk] {
            *b = rng.next() as u8;
        }
        let e = error_of(&bytes, 1);
        assert_eq!(e.kind(), ErrorKind::Malformed, "{name}: {e}");
        assert!(e.message().contains("offset table"), "{name}: {e}");

        // Offsets that point inside the file, at the wrong chunks.
        let mut bytes = file(name).to_vec();
        let second = u64::from_le_bytes(bytes[table + 8..table + 16].try_into().unwrap());
        bytes[table..table + 8].copy_from_slice(&second.to_le_bytes());
        let e = error_of(&bytes, 2);
        assert_eq!(e.kind(), ErrorKind::Malformed, "{name}: {e}");
        assert!(e.message().contains("corrupt offset table"), "{name}: {e}");
    }
}

#[test]
fn dwa_counters_larger_than_the_block_are_refused_before_exr_allocates_them() {
    // exr 1.74 sizes its inflate buffers from these counters (2 GiB from a 10 KB file).
    for name in ["rgb_half_dwaa.exr", "rgb_half_dwab.exr"] {
        let dwa = file(name);
        let (_, chunk) = table_and_first_chunk(dwa);
        // Chunk: y (4 bytes), size (4), then the DWA header: eleven u64 counters.
        for (counter, value) in
            [(1, 1u64 << 31), (6, 1 << 31), (7, 1 << 40), (8, 1 << 30), (9, u64::MAX >> 1)]
        {
            let mut bytes = dwa.to_vec();
            let at = chunk + 8 + 8 * counter;
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
            let e = error_of(&bytes, 1);
            assert_eq!(e.kind(), crate::ErrorKind::Malformed, "{name} counter {counter}: {e}");
            assert!(e.message().contains("DWA header claims"), "{name} counter {counter}: {e}");
        }
    }
}

#[test]
fn corrupt_piz_huffman_data_is_malformed() {
    let piz = file("rgba_half_piz.exr");
    let (_, chunk) = table_and_first_chunk(piz);
    // Chunk: y (4 bytes), size (4), then PIZ data: the wavelet range bitmap, the
    // Huffman stream's length (4), and the stream, which begins with its code table.
    let size = i32::from_le_bytes(piz[chunk + 4..chunk + 8].try_into().unwrap()) as usize;
    let data = chunk + 8;
    let min_non_zero = u16::from_le_bytes([piz[data], piz[data + 1]]) as usize;
    let max_non_zero = u16::from_le_bytes([piz[data + 2], piz[data + 3]]) as usize;
    let bitmap = if min_non_zero <= max_non_zero { max_non_zero - min_non_zero + 1 } else { 0 };
    let huffman = data + 4 + bitmap + 4;
    assert!(huffman + 40 < data + size, "the first chunk is too small to corrupt");

    // Corruptions that OpenEXR 3.5 also refuses ("Error decoding Huffman table", ...).
    let corrupt = |what: &str, b: &mut Vec<u8>| {
        let header = |field: usize| huffman + 4 * field..huffman + 4 * field + 4;
        match what {
            "inverted code table" => b[huffman + 20..huffman + 40].iter_mut().for_each(|x| *x = !*x),
            "code table of 0xff" => b[huffman + 20..huffman + 60].fill(0xFF),
            "zeroed stream" => b[huffman + 60..data + size].fill(0),
            "bit count past the end" => b[header(3)].copy_from_slice(&i32::MAX.to_le_bytes()),
            "code range past 65536" => b[header(0)].copy_from_slice(&70_000u32.to_le_bytes()),
            _ => unreachable!(),
        }
    };
    let corruptions = [
        "inverted code table",
        "code table of 0xff",
        "zeroed stream",
        "bit count past the end",
        "code range past 65536",
    ];
    for what in corruptions {
        let mut bytes = piz.to_vec();
        corrupt(what, &mut bytes);
        for threads in [1, 2] {
            let e = error_of(&bytes, threads);
            assert_eq!(e.kind(), ErrorKind::Malformed, "{what}: {e}");
            assert!(e.message().starts_with("scanline block at lines 0..=31: invalid"), "{what}: {e}");
        }
    }
}

#[test]
fn huge_data_window_is_refused_before_allocating() {
    const ATTRIBUTE: &[u8] = b"dataWindow\0box2i\0\x10\0\0\0";
    let mut bytes = file("rgba_half_piz.exr").to_vec();
    let at = bytes.windows(ATTRIBUTE.len()).position(|w| w == ATTRIBUTE).unwrap() + ATTRIBUTE.len();
    for (i, v) in [0i32, 0, 1_000_000, 1_000_000].iter().enumerate() {
        bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    let mut out = DecodedFrame::default();
    let e = decode(&bytes, &options(1, None), &mut out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(out.data.capacity() == 0, "allocated before refusing");

    // Selected channels within the limit, but not all the channels `exr` would decompress.
    let mut layers = file("layers_zip.exr").to_vec();
    let window = layers.windows(ATTRIBUTE.len()).position(|w| w == ATTRIBUTE).unwrap() + ATTRIBUTE.len();
    for (i, v) in [0i32, 0, 16383, 16383].iter().enumerate() {
        layers[window + 4 * i..window + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    let e = decode(&layers, &options(1, None), &mut out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.message().starts_with("the 7 channels of the 16384x16384 data window decode to"), "{e}");
    assert!(out.data.capacity() == 0, "allocated before refusing");

    // Beyond what OpenEXR allows at all.
    for (i, v) in [i32::MIN, i32::MIN, i32::MAX, i32::MAX].iter().enumerate() {
        bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    assert_eq!(error_of(&bytes, 1).kind(), ErrorKind::Malformed);
}

#[test]
fn empty_input_and_garbage_are_malformed() {
    let e = error_of(&[], 1);
    assert_eq!(e.kind(), ErrorKind::Malformed);
    assert!(e.message().contains("empty"), "{e}");

    let mut rng = Rng(0xbad_f00d);
    for len in [1, 3, 4, 8, 100, 4096] {
        let garbage: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        assert_eq!(error_of(&garbage, 1).kind(), ErrorKind::Malformed);
        // Garbage behind a valid magic number and version.
        let mut bytes = vec![0x76, 0x2f, 0x31, 0x01, 2, 0, 0, 0];
        bytes.extend_from_slice(&garbage);
        assert_ne!(error_of(&bytes, 1).kind(), ErrorKind::Limit);
    }
}

#[test]
fn deep_data_and_unknown_compression_are_unsupported() {
    // The type attribute of a scanline file, rewritten to say deep scanlines.
    let old: &[u8] = b"type\0string\0\x0d\0\0\0scanlineimage";
    let new: &[u8] = b"type\0string\0\x0c\0\0\0deepscanline";
    let piz = file("rgba_half_zips.exr");
    let at = piz.windows(old.len()).position(|w| w == old).unwrap();
    let deep = [&piz[..at], new, &piz[at + old.len()..]].concat();
    let e = error_of(&deep, 1);
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("deep"), "{e}");

    // Compression method 13 (zstd, OpenEXR 3.4) is one `exr` does not know.
    const ATTRIBUTE: &[u8] = b"compression\0compression\0\x01\0\0\0";
    let mut zstd = file("rgba_half_zip.exr").to_vec();
    let at = zstd.windows(ATTRIBUTE.len()).position(|w| w == ATTRIBUTE).unwrap() + ATTRIBUTE.len();
    zstd[at] = 13;
    let e = error_of(&zstd, 1);
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("13 (zstd)"), "{e}");
}

#[test]
fn a_panic_inside_exr_becomes_a_malformed_frame() {
    // exr's B44 decoder does OpenEXR's unsigned arithmetic with plain `+` and `-`:
    // on a corrupt block it overflows, which panics where overflow checks are on
    // (debug builds, tests) and wraps like OpenEXR's C code where they are off.
    // Block: first sample 0, shift 1, all differences 0, so 0 + 0 - bias < 0.
    let mut bytes = file("rgba_half_b44.exr").to_vec();
    let (_, chunk) = table_and_first_chunk(&bytes);
    bytes[chunk + 8..chunk + 8 + 14].copy_from_slice(&[0, 0, 1 << 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    for threads in [1, 2] {
        let result = decode_with(&bytes, threads, None);
        if cfg!(debug_assertions) {
            let e = result.map(drop).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Malformed);
            assert!(e.message().starts_with("the exr crate panicked on this file: attempt to"), "{e}");
        } else if let Err(e) = result {
            assert!(!e.message().contains("panicked"), "{e}");
        }
    }
}

/// Whether `e` is the overflow in exr's B44 decoder that debug builds turn into a panic.
fn known_b44_overflow(name: &str, e: &Error) -> bool {
    cfg!(debug_assertions) && name.contains("b44") && e.message().contains("with overflow")
}

#[test]
fn mutated_files_never_panic() {
    // Random byte changes in every fixture: each decode must return, Ok or Err,
    // without a panic inside `exr` (apart from the one above). 40 rounds here;
    // 1,500 (debug) and 6,000 (release) rounds per file found no other panic.
    let rounds = std::env::var("PLAYSIM_EXR_FUZZ_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let (mut n_ok, mut n_err) = (0, 0);
    for (name, original) in FILES {
        for round in 0..rounds {
            let mut bytes = original.to_vec();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(bytes.len());
                bytes[at] = match rng.below(4) {
                    0 => 0,
                    1 => 0xFF,
                    2 => bytes[at] ^ (1 << rng.below(8)),
                    _ => rng.next() as u8,
                };
            }
            match decode_with(&bytes, 1 + round % 2, None) {
                Ok(_) => n_ok += 1,
                Err(e) => {
                    assert!(!e.message().contains("panicked") || known_b44_overflow(name, &e), "{name}: {e}");
                    n_err += 1;
                }
            }
        }
    }
    // Both outcomes happen: mutations in pixel data often still decode.
    assert!(n_ok > 0 && n_err > 0, "{n_ok} decoded, {n_err} refused");
}
