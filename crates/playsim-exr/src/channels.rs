//! Which channels a decode returns, and in what order: the canonical layout.

use playsim_core::PixelFormat;

use crate::{ChannelInfo, Compression, Error, ExrInfo, SampleType};

/// The largest data window decoded: 2^28 pixels (16K × 16K).
pub const MAX_PIXELS: u64 = 1 << 28;
/// The largest decoded frame: 4 GiB.
pub const MAX_DECODED_BYTES: u64 = 4 << 30;

/// The channels a decode returns, in canonical order, with the resulting pixel format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedChannels {
    /// Channels in output order.
    pub channels: Vec<ChannelInfo>,
    /// The layout of the decoded frame.
    pub format: PixelFormat,
    /// Data window width.
    pub width: u32,
    /// Data window height.
    pub height: u32,
}

/// Chooses the channels of `info` to decode.
///
/// Within the default layer (`layer` is `None`: full names) or layer `NAME`
/// (channels `NAME.*`, matched on the rest of the name): R, G, B, A in that
/// order, those that exist; with none of them, every channel of the layer in
/// the file's order (alphabetical, as EXR stores them). Refuses subsampled
/// channels and data windows over [`MAX_PIXELS`] before anything is allocated.
pub fn select_channels(info: &ExrInfo, layer: Option<&str>) -> Result<SelectedChannels, Error> {
    let (width, height) = info.data_size();
    if width == 0 || height == 0 {
        return Err(Error::malformed(format!("empty or inverted data window {:?}", info.data_window)));
    }
    if width.saturating_mul(height) > MAX_PIXELS {
        return Err(Error::limit(format!(
            "data window {width}x{height} is larger than the {MAX_PIXELS}-pixel limit"
        )));
    }
    let in_layer: Vec<(&str, &ChannelInfo)> = match layer {
        None => info.channels.iter().map(|c| (c.name.as_str(), c)).collect(),
        Some(l) => {
            let prefix = format!("{l}.");
            info.channels.iter().filter_map(|c| c.name.strip_prefix(&prefix).map(|rest| (rest, c))).collect()
        }
    };
    if in_layer.is_empty() {
        let layers: Vec<&str> =
            info.channels.iter().filter_map(|c| c.name.rsplit_once('.').map(|(l, _)| l)).collect();
        return Err(Error::unsupported(format!(
            "layer '{}' not found (layers in the file: {})",
            layer.unwrap_or(""),
            if layers.is_empty() { "none".to_owned() } else { dedup(layers).join(", ") }
        )));
    }
    let rgba: Vec<&ChannelInfo> = ["R", "G", "B", "A"]
        .iter()
        .filter_map(|want| in_layer.iter().find(|(n, _)| n == want).map(|(_, c)| *c))
        .collect();
    let channels: Vec<ChannelInfo> = if rgba.is_empty() {
        in_layer.iter().map(|(_, c)| (*c).clone()).collect()
    } else {
        rgba.into_iter().cloned().collect()
    };
    if let Some(c) = channels.iter().find(|c| c.x_sampling != 1 || c.y_sampling != 1) {
        return Err(Error::unsupported(format!(
            "channel {} is subsampled ({}x{}), which is not supported",
            c.name, c.x_sampling, c.y_sampling
        )));
    }
    let n = u8::try_from(channels.len())
        .map_err(|_| Error::limit(format!("{} channels selected, more than 255", channels.len())))?;
    if width * height * u64::from(n) * 4 > MAX_DECODED_BYTES {
        return Err(Error::limit(format!(
            "data window {width}x{height} with {n} channels is larger than the {MAX_DECODED_BYTES}-byte limit"
        )));
    }
    let floats = channels.iter().all(|c| c.sample != SampleType::Uint);
    let names: Vec<&str> = channels.iter().map(|c| c.name.rsplit('.').next().unwrap_or("")).collect();
    let format = match (floats, names.as_slice()) {
        (true, ["R", "G", "B"]) => PixelFormat::RgbF32Le,
        (true, ["R", "G", "B", "A"]) => PixelFormat::RgbaF32Le,
        _ => PixelFormat::Samples32Le { channels: n },
    };
    // Both fit: their product is at most MAX_PIXELS.
    let (width, height) =
        (u32::try_from(width).unwrap_or(u32::MAX), u32::try_from(height).unwrap_or(u32::MAX));
    Ok(SelectedChannels { channels, format, width, height })
}

/// Refuses a data window that decodes to more bytes than a file of `file_len` bytes of
/// `compression` can hold, before the frame is allocated: a damaged window in a 10 KB file
/// must not cost a 4 GiB frame (the `exr_decode` fuzz target's allocation limit).
///
/// The bound is each method's largest possible expansion, from stored bytes (2 or 4 per
/// sample) to canonical ones (4 per sample), so no well-formed file is refused: 2 for none;
/// 128 for RLE (a run is 2 bytes for 128); 5 for B44 (14 bytes per 32) and 22 for B44A
/// (3 bytes for a flat block); 4200 for the zlib methods (deflate expands at most 1032
/// times, PXR24 stores 3 bytes per float); and 2^17 for PIZ and DWA, whose run-length and
/// DCT stages come before or after zlib.
/// Refuses a selection that decodes to more than `limit` bytes (the caller's
/// [`crate::ExrOptions::max_decoded_bytes`]), before the frame is allocated.
pub(crate) fn check_within(selected: &SelectedChannels, limit: u64) -> Result<(), Error> {
    let decoded = decoded_bytes(selected);
    if decoded > limit {
        return Err(Error::limit(format!(
            "a {}x{} data window of {} channels decodes to {decoded} bytes, more than the {limit}-byte limit",
            selected.width,
            selected.height,
            selected.channels.len()
        )));
    }
    Ok(())
}

fn decoded_bytes(selected: &SelectedChannels) -> u64 {
    u64::from(selected.width) * u64::from(selected.height) * 4 * selected.channels.len() as u64
}

pub(crate) fn check_fits_in_file(
    selected: &SelectedChannels,
    compression: Compression,
    file_len: usize,
) -> Result<(), Error> {
    let max_expansion: u64 = match compression {
        Compression::None => 2,
        Compression::Rle => 128,
        Compression::B44 => 5,
        Compression::B44a => 22,
        Compression::Zips | Compression::Zip | Compression::Pxr24 => 4200,
        Compression::Piz | Compression::Dwaa | Compression::Dwab => 1 << 17,
    };
    let decoded = decoded_bytes(selected);
    let most = (file_len as u64).saturating_mul(max_expansion);
    if decoded > most {
        return Err(Error::malformed(format!(
            "a {}x{} data window of {} channels decodes to {decoded} bytes, more than a {file_len}-byte {compression} \
             file can hold (damaged size or truncated file)",
            selected.width,
            selected.height,
            selected.channels.len()
        )));
    }
    Ok(())
}

fn dedup(mut v: Vec<&str>) -> Vec<&str> {
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(names: &[(&str, SampleType)]) -> ExrInfo {
        ExrInfo {
            data_window: (0, 0, 9, 4),
            display_window: (0, 0, 9, 4),
            channels: names
                .iter()
                .map(|(n, s)| ChannelInfo { name: (*n).into(), sample: *s, x_sampling: 1, y_sampling: 1 })
                .collect(),
            compression: Compression::Piz,
            tiled: false,
        }
    }

    fn names(s: &SelectedChannels) -> Vec<&str> {
        s.channels.iter().map(|c| c.name.as_str()).collect()
    }

    use SampleType::{Float, Half, Uint};

    #[test]
    fn rgba_come_first_in_order() {
        // EXR stores channels alphabetically: A, B, G, R, Z.
        let i = info(&[("A", Half), ("B", Half), ("G", Half), ("R", Half), ("Z", Float)]);
        let s = select_channels(&i, None).unwrap();
        assert_eq!(names(&s), ["R", "G", "B", "A"]);
        assert_eq!(s.format, PixelFormat::RgbaF32Le);
        assert_eq!((s.width, s.height), (10, 5));
    }

    #[test]
    fn without_rgba_all_channels_in_file_order() {
        let i = info(&[("X", Float), ("Y", Half), ("Z", Uint)]);
        let s = select_channels(&i, None).unwrap();
        assert_eq!(names(&s), ["X", "Y", "Z"]);
        assert_eq!(s.format, PixelFormat::Samples32Le { channels: 3 });
    }

    #[test]
    fn a_layer_picks_its_channels() {
        let i = info(&[
            ("B", Half),
            ("G", Half),
            ("R", Half),
            ("diffuse.B", Float),
            ("diffuse.G", Float),
            ("diffuse.R", Float),
        ]);
        let s = select_channels(&i, Some("diffuse")).unwrap();
        assert_eq!(names(&s), ["diffuse.R", "diffuse.G", "diffuse.B"]);
        assert_eq!(s.format, PixelFormat::RgbF32Le);
        let err = select_channels(&i, Some("specular")).unwrap_err();
        assert!(err.message().contains("layer 'specular' not found (layers in the file: diffuse)"), "{err}");
    }

    #[test]
    fn uint_rgb_is_not_float_rgb() {
        let i = info(&[("B", Uint), ("G", Uint), ("R", Uint)]);
        assert_eq!(select_channels(&i, None).unwrap().format, PixelFormat::Samples32Le { channels: 3 });
    }

    #[test]
    fn huge_and_empty_windows_are_refused_before_allocating() {
        let mut i = info(&[("R", Half)]);
        i.data_window = (0, 0, 999_999, 999_999);
        assert_eq!(select_channels(&i, None).unwrap_err().kind(), crate::ErrorKind::Limit);
        i.data_window = (i32::MIN, i32::MIN, i32::MAX, i32::MAX);
        assert_eq!(select_channels(&i, None).unwrap_err().kind(), crate::ErrorKind::Limit);
        i.data_window = (5, 5, 4, 4);
        assert_eq!(select_channels(&i, None).unwrap_err().kind(), crate::ErrorKind::Malformed);
    }

    #[test]
    fn subsampled_channels_are_refused() {
        let mut i = info(&[("Y", Half)]);
        i.channels[0].x_sampling = 2;
        assert_eq!(select_channels(&i, None).unwrap_err().kind(), crate::ErrorKind::Unsupported);
    }
}
