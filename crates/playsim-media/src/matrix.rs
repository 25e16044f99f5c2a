//! The rows of `playsim matrix` that each registered format offers: a [`MatrixVariant`] is a
//! flavour of a format (EXR with PIZ, ProRes 422 HQ) with its row names' prefix, how its
//! media is made, whether `record` writes it and `sim://` serves it, and the numbers that size
//! and time making its media. The variants live on the formats' entries in the registry
//! ([`crate::Format::matrix`]); the matrix, `sim://` and this module read them from there.

use playsim_core::FramePreset;

use crate::{formats, writers, FrameWriter, GenerateFormat, GenerateFormatError, VideoCodec};

/// A registered writer by name, with options (`key=value`) as [`GenerateFormat::parse`]
/// takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterSettings {
    /// The writer's name (`exr`).
    pub name: &'static str,
    /// Its options (`compression=piz`); those not given keep their defaults.
    pub options: &'static [(&'static str, &'static str)],
}

impl WriterSettings {
    /// The format and options, parsed by the writer; refused when no writer of the name is
    /// registered in this build (ProRes without the `ffmpeg` feature).
    pub fn parse(&self) -> Result<GenerateFormat, GenerateFormatError> {
        GenerateFormat::parse(self.name, self.options)
    }

    /// The registered writer of the name, if this build has it.
    pub fn writer(&self) -> Option<&'static FrameWriter> {
        writers().find(|w| w.name == self.name)
    }
}

/// A row of `playsim matrix` that a format offers, named `PREFIX-PRESET` (`exr-piz-uhd`) or
/// `WORD:WxH` (`exr:512x288`). Two variants are the same when their prefixes are.
#[derive(Clone, Copy, Debug)]
pub struct MatrixVariant {
    /// The prefix of its row names (`exr-piz` in `exr-piz-uhd`); unique in the registry.
    pub prefix: &'static str,
    /// The format's word: `FORMAT:WxH` rows name it (the first variant with the word), and the
    /// matrix report's `format` says it (`exr`).
    pub word: &'static str,
    /// The writer and options that write its frames: what `record` writes for it (`matrix
    /// --write`), and what makes its media to play when it is no [`MatrixVariant::clip`].
    /// `None` when `record` cannot write it.
    pub writer: Option<WriterSettings>,
    /// For media made as a clip by the `ffmpeg` command, its codec.
    pub clip: Option<VideoCodec>,
    /// Bytes a frame takes per pixel, roughly, where the writer cannot say exactly (a
    /// compressed frame): sizes a row's media against the matrix's byte cap.
    pub bytes_per_pixel: f64,
    /// CPU seconds to make a megapixel of a frame, roughly, as measured on this project's
    /// 2-core machine: an estimate to print, never relied on; a loaded machine takes longer.
    pub seconds_per_megapixel: f64,
}

impl PartialEq for MatrixVariant {
    fn eq(&self, other: &MatrixVariant) -> bool {
        self.prefix == other.prefix
    }
}

impl Eq for MatrixVariant {}

impl MatrixVariant {
    /// The name of its row at `preset` (`exr-piz-uhd`).
    pub fn row_name(&self, preset: FramePreset) -> String {
        format!("{}-{preset}", self.prefix)
    }

    /// The writer and options `sim://` makes its frames with, when `sim://` serves it: frame
    /// files (no clip) of a writer whose [`FrameWriter::in_sim`] says so.
    pub fn sim_writer(&self) -> Option<WriterSettings> {
        let settings = self.writer.filter(|_| self.clip.is_none())?;
        settings.writer().filter(|w| w.in_sim).map(|_| settings)
    }
}

/// Every registered format's matrix variants, in registry order.
pub fn matrix_variants() -> impl Iterator<Item = &'static MatrixVariant> {
    formats().iter().flat_map(|f| f.matrix)
}

/// The variant and frame size a matrix row's name gives: `WORD:SIZE` (`dpx:256x144`) or
/// `PREFIX-SIZE` (`exr-piz-uhd`), SIZE a preset name or `WxH`. Refused with the reason alone
/// (the caller says what a row is).
pub fn parse_matrix_row(name: &str) -> Result<(&'static MatrixVariant, FramePreset), String> {
    let name = name.trim();
    let (variant, size) = if let Some((word, size)) = name.split_once(':') {
        let variant = matrix_variants()
            .find(|v| v.word == word)
            .ok_or_else(|| format!("no format is called {word}"))?;
        (variant, size)
    } else {
        // The longest prefix wins, so that `exr-piz` is not read as `exr` with size `piz-uhd`.
        matrix_variants()
            .filter_map(|v| Some((v, name.strip_prefix(v.prefix)?.strip_prefix('-')?)))
            .max_by_key(|(v, _)| v.prefix.len())
            .ok_or_else(|| "it starts with no format".to_owned())?
    };
    let preset = size.parse::<FramePreset>().map_err(|e| e.to_string())?;
    Ok((variant, preset))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_formats_matrix_variants_parse_back_as_rows_and_round_trip_their_names() {
        let sizes = [FramePreset::Dci4k, FramePreset::Uhd, FramePreset::Custom { width: 256, height: 144 }];
        let mut prefixes = Vec::new();
        for format in formats() {
            for variant in format.matrix {
                assert!(!prefixes.contains(&variant.prefix), "{} twice", variant.prefix);
                prefixes.push(variant.prefix);
                for preset in sizes {
                    let name = variant.row_name(preset);
                    assert_eq!(parse_matrix_row(&name), Ok((variant, preset)), "{name}");
                    let (parsed, _) = parse_matrix_row(&name).unwrap();
                    assert_eq!(parsed.row_name(preset), name);
                    let (width, height) = preset.dimensions();
                    let (by_word, size) =
                        parse_matrix_row(&format!("{}:{width}x{height}", variant.word)).unwrap();
                    assert_eq!((by_word.word, size.dimensions()), (variant.word, (width, height)));
                }
                // Each is made somehow: by the ffmpeg command, or by a writer (in this build).
                assert!(variant.clip.is_some() || variant.writer.is_some(), "{}", variant.prefix);
                if let Some(settings) = variant.writer.filter(|s| s.writer().is_some()) {
                    assert!(settings.parse().is_ok(), "{}: {:?}", variant.prefix, settings.parse());
                }
                assert!(variant.bytes_per_pixel > 0.0 && variant.seconds_per_megapixel > 0.0);
            }
        }
        let rows: Vec<&str> = matrix_variants().map(|v| v.prefix).collect();
        assert_eq!(rows, ["dpx", "exr-piz", "tiff", "prores-hq", "h264", "dnxhr-hqx"]);
        let sim: Vec<&str> =
            matrix_variants().filter(|v| v.sim_writer().is_some()).map(|v| v.prefix).collect();
        assert_eq!(sim, ["dpx", "exr-piz"]);
    }

    #[test]
    fn rows_that_name_no_variant_are_refused_with_the_reason() {
        assert_eq!(parse_matrix_row("gif:10x10"), Err("no format is called gif".to_owned()));
        assert_eq!(parse_matrix_row("exr-uhd"), Err("it starts with no format".to_owned()));
        assert!(parse_matrix_row("dpx-huge").unwrap_err().contains("huge"));
    }
}
