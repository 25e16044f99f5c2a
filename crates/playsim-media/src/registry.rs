//! The table of file formats playsim can play, and opening a location as a [`Source`].

use std::path::Path;
use std::sync::Arc;

use playsim_core::{Decoder, Source, Storage};

use crate::{Error, Sequence, SequenceSource};

/// How decoders are set up: the per-format options from the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// EXR backend, threads inside a frame, and layer.
    pub exr: playsim_exr::ExrOptions,
    /// FFmpeg's threads per video decoder.
    pub video: playsim_ffmpeg::VideoOptions,
}

/// A file format that sequences can be played in.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    /// The format's name, as in reports (`dpx`).
    pub name: &'static str,
    /// Lower-case file extensions, without the dot.
    pub extensions: &'static [&'static str],
    /// Makes the format's decoder.
    pub decoder: fn(&DecodeOptions) -> Arc<dyn Decoder>,
}

/// Every known format. Adding a format is one entry here.
const FORMATS: &[Format] = &[
    Format { name: "dpx", extensions: &["dpx"], decoder: dpx_decoder },
    Format { name: "exr", extensions: &["exr"], decoder: exr_decoder },
];

/// The known formats, in the order they are listed in messages.
pub fn formats() -> &'static [Format] {
    FORMATS
}

/// The format whose extensions include `extension` (any case, no dot).
pub fn format_for_extension(extension: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.extensions.iter().any(|e| e.eq_ignore_ascii_case(extension)))
}

/// Discovers the sequence at `location` (see [`Sequence::discover`]) and
/// opens it with the decoder for its file extension, with default options.
///
/// Refuses a format with no decoder, listing the known ones.
pub fn open_source(location: &Path) -> Result<Arc<dyn Source>, Error> {
    open_source_with(location, &DecodeOptions::default())
}

/// Opens what is at `location` for playback: a video file (by its extension, see
/// [`playsim_ffmpeg::VIDEO_EXTENSIONS`]), whose container is read through `storage`,
/// or else an image sequence, discovered through `storage` (its lookups and listings).
///
/// Must run inside a tokio runtime (the demuxer waits for the storage on a blocking thread).
pub async fn open_location(
    location: &Path,
    options: &DecodeOptions,
    storage: Arc<dyn Storage>,
) -> Result<Arc<dyn Source>, Error> {
    if playsim_ffmpeg::is_video_file(location) {
        let source = playsim_ffmpeg::open(location, storage, &options.video).await?;
        return Ok(Arc::new(source));
    }
    let sequence = Sequence::discover_on(location, storage.as_ref()).await?;
    sequence_source(sequence, options)
}

/// [`open_source`] with decoder options.
pub fn open_source_with(location: &Path, options: &DecodeOptions) -> Result<Arc<dyn Source>, Error> {
    sequence_source(Sequence::discover(location)?, options)
}

/// The source playing `sequence` with the decoder for its file extension.
fn sequence_source(sequence: Sequence, options: &DecodeOptions) -> Result<Arc<dyn Source>, Error> {
    let extension = sequence.extension().unwrap_or("none");
    let Some(format) = format_for_extension(extension) else {
        return Err(Error::Unsupported {
            path: sequence.pattern_path(),
            extension: extension.to_owned(),
            known: FORMATS.iter().map(|f| f.name).collect::<Vec<_>>().join(", "),
        });
    };
    Ok(Arc::new(SequenceSource::new(sequence, (format.decoder)(options))))
}

fn dpx_decoder(_: &DecodeOptions) -> Arc<dyn Decoder> {
    Arc::new(playsim_dpx::DpxDecoder)
}

fn exr_decoder(options: &DecodeOptions) -> Arc<dyn Decoder> {
    Arc::new(playsim_exr::ExrDecoder::new(options.exr.clone()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn opens_dpx_by_extension_in_any_case() {
        let tmp = tempfile::tempdir().unwrap();
        for f in 1..=3 {
            fs::write(tmp.path().join(format!("a.{f:04}.DPX")), b"x").unwrap();
        }
        let source = open_source(tmp.path()).unwrap();
        assert_eq!(source.n_frames(), 3);
        assert_eq!(source.decoder().name(), "dpx");
        assert_eq!(source.info().format, "dpx");
    }

    #[test]
    fn refuses_unknown_formats_listing_the_known_ones() {
        let tmp = tempfile::tempdir().unwrap();
        for f in 1..=3 {
            fs::write(tmp.path().join(format!("a.{f:04}.tif")), b"x").unwrap();
            fs::write(tmp.path().join(format!("b.{f:04}")), b"x").unwrap();
        }
        let err = open_source(tmp.path()).err().unwrap();
        let msg = err.to_string();
        assert!(matches!(err, Error::Unsupported { .. }), "{msg}");
        assert!(msg.contains("'tif'") && msg.contains("known formats: dpx"), "{msg}");
        assert!(msg.contains(&*tmp.path().join("a.%04d.tif").to_string_lossy()), "{msg}");
        let err = open_source(&tmp.path().join("b.%04d")).err().unwrap();
        assert!(err.to_string().contains("'none'"), "{err}");
    }

    #[test]
    fn every_extension_belongs_to_one_format() {
        for format in formats() {
            for ext in format.extensions {
                assert_eq!(format_for_extension(ext).map(|f| f.name), Some(format.name));
                assert_eq!(*ext, ext.to_ascii_lowercase());
            }
            assert_eq!((format.decoder)(&DecodeOptions::default()).name(), format.name);
        }
    }
}
