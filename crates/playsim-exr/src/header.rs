//! What a decode needs to know about an EXR file, whichever backend read it.

use std::fmt;

/// The type of one channel's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SampleType {
    /// 16-bit float; canonical f32.
    Half,
    /// 32-bit float; canonical f32.
    Float,
    /// 32-bit unsigned integer; canonical u32.
    Uint,
}

/// One channel of a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChannelInfo {
    /// Full name, e.g. `R` or `diffuse.R`.
    pub name: String,
    /// Sample type.
    pub sample: SampleType,
    /// Horizontal subsampling (1 for full resolution).
    pub x_sampling: u32,
    /// Vertical subsampling (1 for full resolution).
    pub y_sampling: u32,
}

/// An EXR compression method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// No compression.
    None,
    /// Run-length.
    Rle,
    /// Zlib, one scanline per block.
    Zips,
    /// Zlib, 16 scanlines per block.
    Zip,
    /// Wavelet + Huffman, 32 scanlines per block.
    Piz,
    /// Lossy 24-bit float + zlib.
    Pxr24,
    /// Lossy 4×4 blocks.
    B44,
    /// B44 with flat-area optimisation.
    B44a,
    /// DCT-based lossy, 32 scanlines.
    Dwaa,
    /// DCT-based lossy, 256 scanlines.
    Dwab,
}

impl Compression {
    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Rle => "rle",
            Compression::Zips => "zips",
            Compression::Zip => "zip",
            Compression::Piz => "piz",
            Compression::Pxr24 => "pxr24",
            Compression::B44 => "b44",
            Compression::B44a => "b44a",
            Compression::Dwaa => "dwaa",
            Compression::Dwab => "dwab",
        }
    }

    /// Every method, in the file format's numbering order.
    pub const ALL: [Compression; 10] = [
        Compression::None,
        Compression::Rle,
        Compression::Zips,
        Compression::Zip,
        Compression::Piz,
        Compression::Pxr24,
        Compression::B44,
        Compression::B44a,
        Compression::Dwaa,
        Compression::Dwab,
    ];
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Compression, String> {
        Compression::ALL.into_iter().find(|c| c.name() == s.trim().to_ascii_lowercase()).ok_or_else(|| {
            format!("unknown EXR compression '{s}' (for example piz; also none, rle, zips, zip, pxr24, b44, b44a, dwaa, dwab)")
        })
    }
}

/// A summary of an EXR file's (first part's) header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExrInfo {
    /// Data window, inclusive: (x_min, y_min, x_max, y_max).
    pub data_window: (i32, i32, i32, i32),
    /// Display window, inclusive.
    pub display_window: (i32, i32, i32, i32),
    /// Every channel, in the file's order.
    pub channels: Vec<ChannelInfo>,
    /// Compression.
    pub compression: Compression,
    /// Tiled rather than scanline.
    pub tiled: bool,
}

impl ExrInfo {
    /// Width and height of the data window (0 when it is inverted).
    pub fn data_size(&self) -> (u64, u64) {
        let (x0, y0, x1, y1) = self.data_window;
        let w = i64::from(x1) - i64::from(x0) + 1;
        let h = i64::from(y1) - i64::from(y0) + 1;
        (u64::try_from(w).unwrap_or(0), u64::try_from(h).unwrap_or(0))
    }
}

/// The four bytes every EXR file starts with.
pub(crate) const MAGIC: [u8; 4] = [0x76, 0x2f, 0x31, 0x01];

/// The size of the (first part's) data window, read from the attributes at the start of an
/// EXR file, without decoding anything: what a decode's canonical frame measures.
///
/// `None` when `head` is not EXR, ends before the `dataWindow` attribute, or the window is
/// empty or larger than `u32`.
pub fn probe_data_size(head: &[u8]) -> Option<(u32, u32)> {
    if !head.starts_with(&MAGIC) {
        return None;
    }
    // Attributes follow the magic and the 4-byte version field: name NUL, type NUL,
    // little-endian i32 size, value; an empty name ends the header.
    let mut at = 8;
    loop {
        let name = c_string(head, &mut at)?;
        if name.is_empty() {
            return None;
        }
        let kind = c_string(head, &mut at)?;
        let size = usize::try_from(i32::from_le_bytes(head.get(at..at + 4)?.try_into().ok()?)).ok()?;
        at += 4;
        let value = head.get(at..at.checked_add(size)?)?;
        at += size;
        if name == b"dataWindow" && kind == b"box2i" && size == 16 {
            let v =
                |i: usize| value.get(4 * i..4 * i + 4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            let (x0, y0, x1, y1) = (v(0)?, v(1)?, v(2)?, v(3)?);
            let width = u32::try_from(i64::from(x1) - i64::from(x0) + 1).ok()?;
            let height = u32::try_from(i64::from(y1) - i64::from(y0) + 1).ok()?;
            return (width > 0 && height > 0).then_some((width, height));
        }
    }
}

/// Walks every attribute of every header at the start of an EXR file as OpenEXR 3.1.5 reads
/// it, and refuses an attribute that would make the library allocate more than the file has
/// left.
///
/// OpenEXR 3.1.5 allocates and zero-fills the size a string, float vector, ID manifest or
/// unknown-type attribute claims before reading it (192 MiB from an 856-byte file, found by
/// the `exr_decode` fuzz target), so the OpenEXR backend runs this first. The walk must step
/// as the library does: a value of a fixed-size type (`int`, `box2i`, ...) is read for its
/// type's size whatever size the file claims for it, and a channel list up to its empty name.
/// Stepping by the claimed sizes instead, an `int` claiming 2 bytes put the walk two bytes
/// off the library's, and an unknown attribute the walk never saw claimed 541 MB (the fuzz
/// target again). Anything it cannot walk (no magic, a name without its NUL, a cut value) is
/// left for the library, which throws there before it allocates.
#[cfg_attr(not(feature = "openexr"), allow(dead_code))] // the OpenEXR backend's walk
pub(crate) fn check_attribute_sizes(encoded: &[u8]) -> Result<(), crate::Error> {
    if !encoded.starts_with(&MAGIC) {
        return Ok(());
    }
    let Some(version) = encoded.get(4..8).map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]])) else {
        return Ok(());
    };
    // Multi-part files hold one header after another, each ended by an empty name, and an
    // empty header after the last.
    let multipart = version & 0x1000 != 0;
    let mut at = 8;
    loop {
        let Some(name) = c_string(encoded, &mut at) else { return Ok(()) };
        if name.is_empty() {
            if !multipart || encoded.get(at) == Some(&0) {
                return Ok(());
            }
            continue;
        }
        let Some(kind) = c_string(encoded, &mut at) else { return Ok(()) };
        let Some(size) = encoded.get(at..at + 4).map(|v| i32::from_le_bytes([v[0], v[1], v[2], v[3]])) else {
            return Ok(());
        };
        at += 4;
        let left = encoded.len() - at;
        let claims_too_much = || {
            Err(crate::Error::malformed(format!(
                "header attribute {} claims {size} bytes, but the file has {left} left (damaged size or truncated file)",
                String::from_utf8_lossy(name)
            )))
        };
        let Ok(size) = usize::try_from(size) else { return claims_too_much() };
        let step = match attribute_read(kind) {
            AttributeRead::Fixed(n) => n,
            AttributeRead::ChannelList => {
                loop {
                    let Some(channel) = c_string(encoded, &mut at) else { return Ok(()) };
                    if channel.is_empty() {
                        break;
                    }
                    // Pixel type, pLinear and 3 reserved bytes, x and y sampling.
                    at += 16;
                }
                0
            }
            AttributeRead::Claimed { .. } | AttributeRead::FloatVector if size > left => {
                return claims_too_much()
            }
            AttributeRead::Claimed { extra } => size + extra,
            AttributeRead::FloatVector => size / 4 * 4,
        };
        at = at.saturating_add(step);
        if at > encoded.len() {
            return Ok(());
        }
    }
}

/// How OpenEXR 3.1.5 reads an attribute's value (each type's `readValueFrom`).
#[cfg_attr(not(feature = "openexr"), allow(dead_code))] // the OpenEXR backend's walk
enum AttributeRead {
    /// The type's own size, whatever the size field says.
    Fixed(usize),
    /// Channels up to an empty name, whatever the size field says.
    ChannelList,
    /// The size field's bytes, allocated first (plus `extra` read beyond them: an ID
    /// manifest reads an 8-byte length, then size - 4 bytes).
    Claimed { extra: usize },
    /// As many floats as the size field holds, allocated first.
    FloatVector,
}

#[cfg_attr(not(feature = "openexr"), allow(dead_code))] // the OpenEXR backend's walk
fn attribute_read(kind: &[u8]) -> AttributeRead {
    let fixed = match kind {
        b"compression" | b"envmap" | b"lineOrder" | b"deepImageState" => 1,
        b"int" | b"float" => 4,
        b"double" | b"rational" | b"timecode" | b"v2i" | b"v2f" => 8,
        b"tiledesc" => 9,
        b"v3i" | b"v3f" => 12,
        b"box2i" | b"box2f" | b"v2d" => 16,
        b"v3d" => 24,
        b"keycode" => 28,
        b"chromaticities" => 32,
        b"m33f" => 36,
        b"m44f" => 64,
        b"m33d" => 72,
        b"m44d" => 128,
        b"chlist" => return AttributeRead::ChannelList,
        b"floatvector" => return AttributeRead::FloatVector,
        b"idmanifest" => return AttributeRead::Claimed { extra: 4 },
        // string, stringvector, preview (whose size must match its dimensions), and every
        // type the library does not know (read as opaque bytes).
        _ => return AttributeRead::Claimed { extra: 0 },
    };
    AttributeRead::Fixed(fixed)
}

/// The NUL-terminated string at `*at`, without its NUL; moves `*at` past it.
fn c_string<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let rest = bytes.get(*at..)?;
    let len = rest.iter().position(|&b| b == 0)?;
    *at += len + 1;
    Some(&rest[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An EXR header with `attributes` (name, type, value) and the end marker.
    fn header(attributes: &[(&str, &str, Vec<u8>)]) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend([2, 0, 0, 0]);
        for (name, kind, value) in attributes {
            bytes.extend(name.as_bytes());
            bytes.push(0);
            bytes.extend(kind.as_bytes());
            bytes.push(0);
            bytes.extend((value.len() as i32).to_le_bytes());
            bytes.extend(value);
        }
        bytes.push(0);
        bytes
    }

    fn box2i(x0: i32, y0: i32, x1: i32, y1: i32) -> Vec<u8> {
        [x0, y0, x1, y1].iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// An `int` attribute claiming 2 bytes (OpenEXR reads 4), then, where OpenEXR's reading
    /// goes on, an attribute of an unknown type claiming `claim` bytes.
    fn short_int_then_claim(claim: i32) -> Vec<u8> {
        let mut file = MAGIC.to_vec();
        file.extend([2, 0, 0, 0]);
        file.extend(b"chunkCount\0int\0");
        file.extend(2i32.to_le_bytes());
        // OpenEXR's int: these 2 bytes and the next 2, which a walk by the size field
        // would take for the end of the header and a next name.
        file.extend([7, 0, 0, 0]);
        file.extend(b"x\0opaque\0");
        file.extend(claim.to_le_bytes());
        file.extend([0; 16]);
        file.push(0);
        file
    }

    #[test]
    fn attributes_are_walked_as_openexr_reads_them_so_no_claim_hides_behind_a_short_size() {
        let err = check_attribute_sizes(&short_int_then_claim(541_261_824)).unwrap_err();
        assert!(err.message().contains("header attribute x claims 541261824 bytes"), "{err}");
        check_attribute_sizes(&short_int_then_claim(16)).unwrap();
        // Every type's value read for its own size, a channel list up to its empty name.
        let mut chlist = Vec::new();
        for c in ["B", "G", "R"] {
            chlist.extend(c.as_bytes());
            chlist.extend([0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        }
        chlist.push(0);
        let file = header(&[
            ("channels", "chlist", chlist),
            ("compression", "compression", vec![4]),
            ("dataWindow", "box2i", box2i(0, 0, 15, 15)),
            ("owner", "string", b"someone".to_vec()),
            ("xy", "v2f", vec![0; 8]),
            ("weights", "floatvector", vec![0; 12]),
            ("camera", "m44f", vec![0; 64]),
            ("tiles", "tiledesc", vec![0; 9]),
        ]);
        check_attribute_sizes(&file).unwrap();
        // A claim past the end, on each kind of attribute the library allocates for.
        for kind in ["string", "stringvector", "floatvector", "preview", "idmanifest", "unknownType"] {
            let mut file = header(&[("a", kind, vec![1, 2, 3, 4])]);
            let size_at = 8 + 2 + kind.len() + 1;
            file[size_at..size_at + 4].copy_from_slice(&100_000i32.to_le_bytes());
            let err = check_attribute_sizes(&file).unwrap_err();
            assert!(err.message().contains("claims 100000 bytes"), "{kind}: {err}");
        }
    }

    #[test]
    fn probe_reads_the_data_window_past_other_attributes() {
        let file = header(&[
            ("channels", "chlist", vec![0; 19]),
            ("compression", "compression", vec![4]),
            ("dataWindow", "box2i", box2i(-2, 10, 317, 189)),
            ("displayWindow", "box2i", box2i(0, 0, 1919, 1079)),
        ]);
        assert_eq!(probe_data_size(&file), Some((320, 180)));
        // Cut anywhere before the window's end: no size, and no panic.
        let end = file.windows(10).position(|w| w == b"dataWindow").unwrap() + 10 + 6 + 4 + 16;
        for cut in 0..end {
            assert_eq!(probe_data_size(&file[..cut]), None, "cut at {cut}");
        }
        assert_eq!(probe_data_size(&header(&[("dataWindow", "box2i", box2i(5, 0, 4, 0))])), None);
        assert_eq!(probe_data_size(&header(&[("a", "b", vec![1])])), None);
        assert_eq!(probe_data_size(b"SDPX"), None);
    }
}
