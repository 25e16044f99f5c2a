//! The table of formats playsim can play, image sequences and video containers alike:
//! recognising a file, opening it as a [`Source`], and reading its frame size.
//!
//! Each entry pairs what a codec crate knows of its files (a [`FormatDescriptor`]: name,
//! extensions, magic, size probe) with how playsim opens them: a decoder for every file of
//! a sequence, or a whole container opened through the storage; how it writes test frames;
//! and the rows of `playsim matrix` it offers ([`MatrixVariant`]s: the video entry's are its
//! codecs). Adding a format is one crate or module and one entry in [`FORMATS`].

use std::future::Future;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use playsim_core::{
    Decoder, FileBytes, FormatDescriptor, FrameExtent, IoBuf, Probe, Source, Storage, StorageFile,
};

#[cfg(feature = "ffmpeg")]
use crate::writer::PRORES_WRITER;
use crate::writer::{FrameWriter, DPX_WRITER, EXR_WRITER, TIFF_WRITER};
use crate::{Error, MatrixVariant, ProResProfile, Sequence, SequenceSource, VideoCodec, WriterSettings};

/// How decoders are set up: the per-format options from the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// EXR backend, threads inside a frame, and layer.
    pub exr: playsim_exr::ExrOptions,
    /// FFmpeg's threads per video decoder.
    pub video: playsim_ffmpeg::VideoOptions,
}

/// Makes the decoder every frame of a sequence goes through.
pub type MakeDecoder = fn(&DecodeOptions) -> Arc<dyn Decoder>;

/// Opens a container file (its path on the storage) as a source.
pub type OpenContainer = fn(PathBuf, Arc<dyn Storage>, DecodeOptions) -> OpenFuture;

/// What [`OpenContainer`] returns: the source, once the container's index is read.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<Arc<dyn Source>, Error>> + Send>>;

/// How a format's frames are stored, and so how it is opened.
#[derive(Clone, Copy, Debug)]
pub enum FormatKind {
    /// One file per frame, numbered: a [`Sequence`] whose files all go through one decoder.
    Sequence {
        /// Makes that decoder.
        decoder: MakeDecoder,
    },
    /// One file holding every frame (a video container), opened through the storage.
    Container {
        /// Opens it.
        open: OpenContainer,
    },
    /// Recognised, but this build left out the cargo feature that plays it: a location in
    /// the format is refused with a message naming the feature.
    NeedsFeature {
        /// The cargo feature, e.g. `ffmpeg`.
        feature: &'static str,
        /// Whether the format is a container (one file) rather than a sequence.
        container: bool,
    },
}

/// A file format that playsim can play.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    /// The format's name, as in reports (`dpx`).
    pub name: &'static str,
    /// Lower-case file extensions, without the dot.
    pub extensions: &'static [&'static str],
    /// The byte strings a file of the format starts with; empty when it has none at offset 0.
    pub magic: &'static [&'static [u8]],
    /// Reads the frame size from some of a frame file's bytes.
    pub probe: fn(&FileBytes<'_>) -> Probe,
    /// How it is opened.
    pub kind: FormatKind,
    /// How it writes test frames (`playsim generate`, `sim://`), where it can.
    pub writer: Option<&'static FrameWriter>,
    /// The rows of `playsim matrix` it offers, with the numbers that size and time their media.
    pub matrix: &'static [MatrixVariant],
}

impl Format {
    /// A format of numbered frame files described by `format`, decoded by `decoder`'s decoders.
    pub const fn sequence(format: FormatDescriptor, decoder: MakeDecoder) -> Format {
        Format::of(format, FormatKind::Sequence { decoder })
    }

    /// A container format described by `format`, opened by `open`.
    pub const fn container(format: FormatDescriptor, open: OpenContainer) -> Format {
        Format::of(format, FormatKind::Container { open })
    }

    /// A format described by `format` that this build cannot play without `feature`.
    pub const fn needs_feature(format: FormatDescriptor, feature: &'static str, container: bool) -> Format {
        Format::of(format, FormatKind::NeedsFeature { feature, container })
    }

    const fn of(format: FormatDescriptor, kind: FormatKind) -> Format {
        let FormatDescriptor { name, extensions, magic, probe } = format;
        Format { name, extensions, magic, probe, kind, writer: None, matrix: &[] }
    }

    /// The same format, writing test frames with `writer`.
    pub const fn with_writer(self, writer: &'static FrameWriter) -> Format {
        Format { writer: Some(writer), ..self }
    }

    /// The same format, offering `matrix`'s rows to `playsim matrix`.
    pub const fn with_matrix(self, matrix: &'static [MatrixVariant]) -> Format {
        Format { matrix, ..self }
    }

    /// True for a container: one file holding every frame.
    pub fn is_container(&self) -> bool {
        matches!(self.kind, FormatKind::Container { .. } | FormatKind::NeedsFeature { container: true, .. })
    }

    /// A decoder for the frames of a sequence in this format; `None` for a container, or when
    /// the build cannot play it.
    pub fn decoder(&self, options: &DecodeOptions) -> Option<Arc<dyn Decoder>> {
        match self.kind {
            FormatKind::Sequence { decoder } => Some(decoder(options)),
            FormatKind::Container { .. } | FormatKind::NeedsFeature { .. } => None,
        }
    }

    fn descriptor(&self) -> FormatDescriptor {
        FormatDescriptor {
            name: self.name,
            extensions: self.extensions,
            magic: self.magic,
            probe: self.probe,
        }
    }
}

/// Every known format, in the order they are listed in messages. Adding a format is one entry
/// here; `.with_writer` lets `playsim generate` and `sim://` make its frames too, and
/// `.with_matrix` gives `playsim matrix` its rows.
const FORMATS: &[Format] = &[
    Format::sequence(playsim_dpx::FORMAT, |_| Arc::new(playsim_dpx::DpxDecoder))
        .with_writer(&DPX_WRITER)
        .with_matrix(&[MatrixVariant {
            prefix: "dpx",
            word: "dpx",
            writer: Some(WriterSettings { name: "dpx", options: &[] }),
            clip: None,
            // 10-bit RGB packs a pixel in 4 bytes.
            bytes_per_pixel: 4.0,
            seconds_per_megapixel: 0.016,
        }]),
    Format::sequence(playsim_exr::FORMAT, |options| {
        Arc::new(playsim_exr::ExrDecoder::new(options.exr.clone()))
    })
    .with_writer(&EXR_WRITER)
    .with_matrix(&[MatrixVariant {
        prefix: "exr-piz",
        word: "exr",
        writer: Some(WriterSettings { name: "exr", options: &[("compression", "piz")] }),
        clip: None,
        // PIZ of the generated pictures, half RGBA: about 57%.
        bytes_per_pixel: 4.5,
        seconds_per_megapixel: 0.14,
    }]),
    Format::sequence(playsim_tiff::FORMAT, |_| Arc::new(playsim_tiff::TiffDecoder))
        .with_writer(&TIFF_WRITER)
        .with_matrix(&[MatrixVariant {
            prefix: "tiff",
            word: "tiff",
            writer: Some(WriterSettings { name: "tiff", options: &[] }),
            clip: None,
            // 16-bit RGB.
            bytes_per_pixel: 6.0,
            seconds_per_megapixel: 0.03,
        }]),
    #[cfg(feature = "ffmpeg")]
    Format::container(VIDEO, open_video).with_writer(&PRORES_WRITER).with_matrix(VIDEO_MATRIX),
    #[cfg(not(feature = "ffmpeg"))]
    Format::needs_feature(VIDEO, "ffmpeg", true).with_matrix(VIDEO_MATRIX),
];

/// The video entry's matrix rows, one a codec, made by the `ffmpeg` command. The bytes a pixel
/// are the clips as `cargo xtask fixtures` measured them (ProRes 422 HQ UHD with grain: 3.8 MB
/// a frame); the seconds are prores_ks's 0.68 s a UHD frame, dnxhd's 0.71 and x264 veryfast's
/// 0.13 with the grain. `record` writes ProRes only.
const VIDEO_MATRIX: &[MatrixVariant] = &[
    MatrixVariant {
        prefix: "prores-hq",
        word: "prores",
        writer: Some(WriterSettings { name: "prores", options: &[("profile", "hq")] }),
        clip: Some(VideoCodec::ProRes(ProResProfile::Hq)),
        bytes_per_pixel: 0.46,
        seconds_per_megapixel: 0.082,
    },
    MatrixVariant {
        prefix: "h264",
        word: "h264",
        writer: None,
        clip: Some(VideoCodec::H264),
        bytes_per_pixel: 0.15,
        seconds_per_megapixel: 0.015,
    },
    MatrixVariant {
        prefix: "dnxhr-hqx",
        word: "dnxhr",
        writer: None,
        clip: Some(VideoCodec::DnxhrHqx),
        bytes_per_pixel: 0.46,
        seconds_per_megapixel: 0.086,
    },
];

/// Video containers, demuxed and decoded by FFmpeg. The extensions are listed here rather
/// than taken from `playsim-ffmpeg`, so that a build without that crate still recognises
/// them and can refuse them by name (a test keeps the two lists equal). FFmpeg probes a
/// container's contents itself, so no magic is given.
const VIDEO: FormatDescriptor = FormatDescriptor {
    name: "video",
    extensions: &["mov", "mp4", "m4v", "mxf", "mkv", "avi", "mts", "m2ts", "ts"],
    magic: &[],
    // A container states its size; the source reports it (`Source::dimensions`).
    probe: |_| Probe::Unknown,
};

#[cfg(feature = "ffmpeg")]
fn open_video(path: PathBuf, storage: Arc<dyn Storage>, options: DecodeOptions) -> OpenFuture {
    Box::pin(async move {
        let source = playsim_ffmpeg::open(&path, storage, &options.video).await?;
        Ok(Arc::new(source) as Arc<dyn Source>)
    })
}

/// The known formats, in the order they are listed in messages.
pub fn formats() -> &'static [Format] {
    FORMATS
}

/// The format whose extensions include `extension` (any case, no dot).
pub fn format_for_extension(extension: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.descriptor().has_extension(extension))
}

/// The format whose magic `head`, a file's first bytes, starts with.
pub fn format_for_magic(head: &[u8]) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.descriptor().matches_magic(head))
}

/// The format of the file at `path` whose first bytes are `head`: by its extension, or by
/// its magic when the extension names no format.
pub fn format_for_file(path: &Path, head: &[u8]) -> Option<&'static Format> {
    extension_of(path).and_then(format_for_extension).or_else(|| format_for_magic(head))
}

/// Discovers the sequence at `location` (see [`Sequence::discover`]) and
/// opens it with the decoder for its file extension, with default options.
///
/// Refuses a format with no decoder, listing the known ones.
pub fn open_source(location: &Path) -> Result<Arc<dyn Source>, Error> {
    open_source_with(location, &DecodeOptions::default())
}

/// Opens what is at `location` for playback: a container (a video file, by its extension),
/// read through `storage`, or else an image sequence, discovered through `storage` (its
/// lookups and listings), in the format its extension names or, when that names none, its
/// first file's magic.
///
/// Must run inside a tokio runtime (the demuxer waits for the storage on a blocking thread).
pub async fn open_location(
    location: &Path,
    options: &DecodeOptions,
    storage: Arc<dyn Storage>,
) -> Result<Arc<dyn Source>, Error> {
    // A container is known by its name alone: FFmpeg probes the rest itself.
    if let Some(format) = extension_of(location).and_then(format_for_extension).filter(|f| f.is_container()) {
        return match format.kind {
            FormatKind::Container { open } => open(location.to_owned(), storage, options.clone()).await,
            _ => Err(needs_feature(location.to_owned(), format)),
        };
    }
    let sequence = Sequence::discover_on(location, storage.as_ref()).await?;
    let format = match sequence.extension().and_then(format_for_extension) {
        Some(format) => Some(format),
        None => read_head(storage.as_ref(), &sequence.path_for(sequence.first_frame())).await,
    };
    sequence_source(sequence, format, options)
}

/// [`open_source`] with decoder options.
pub fn open_source_with(location: &Path, options: &DecodeOptions) -> Result<Arc<dyn Source>, Error> {
    let sequence = Sequence::discover(location)?;
    let format = sequence.extension().and_then(format_for_extension).or_else(|| {
        let mut head = Vec::with_capacity(MAGIC_BYTES);
        let file = std::fs::File::open(sequence.path_for(sequence.first_frame())).ok()?;
        file.take(MAGIC_BYTES as u64).read_to_end(&mut head).ok()?;
        format_for_magic(&head)
    });
    sequence_source(sequence, format, options)
}

/// The frame size of `source`: what the source knows itself (a container, a `sim://`
/// source), or else what the format's probe reads from the first bytes of the first
/// frame file that can be read, through `storage` (the first 16 frames are tried). `None`
/// when no frame can be read or none is in a known format (raw frames).
///
/// `--no-decode` reports it, since no decode tells the size then.
pub async fn probe_dimensions(source: &dyn Source, storage: &dyn Storage) -> Option<(u32, u32)> {
    if let Some(size) = source.dimensions() {
        return Some(size);
    }
    for idx in 0..source.n_frames().min(PROBE_FRAMES) {
        let FrameExtent::File { path } = source.extent(idx) else { continue };
        let Ok(file) = storage.open(&path).await else { continue };
        let size = probe_file(file.as_ref(), &path).await;
        // Only read from; a failed close changes nothing that was read.
        let _ = file.close().await;
        if size.is_some() {
            return size;
        }
    }
    None
}

/// Frames [`probe_dimensions`] tries before giving up: a sequence may start with gaps or damage.
const PROBE_FRAMES: u64 = 16;

/// Bytes read for a probe, at the start of a file and at most once more where the probe
/// asks: enough for any DPX or EXR header and a TIFF directory of thousands of entries.
const PROBE_BYTES: u64 = 64 << 10;

/// Bytes read to recognise a file by its magic.
const MAGIC_BYTES: usize = 16;

/// Reads are aligned to this, so that a storage reading with O_DIRECT can serve them.
const PROBE_ALIGN: u64 = 4096;

/// The frame size of `file` (at `path`), by the probe of its format; see [`probe_dimensions`].
async fn probe_file(file: &dyn StorageFile, path: &Path) -> Option<(u32, u32)> {
    let file_size = file.size();
    let mut head = IoBuf::default();
    let n = file.read_at(0, file_size.min(PROBE_BYTES) as usize, &mut head).await.ok()?;
    let head = head.get(..n)?;
    let format = format_for_file(path, head)?;
    let offset = match (format.probe)(&FileBytes::new(file_size, &[(0, head)])) {
        Probe::Size { width, height } => return Some((width, height)),
        Probe::ReadAt(offset) if offset < file_size => offset,
        Probe::ReadAt(_) | Probe::Unknown => return None,
    };
    let start = offset / PROBE_ALIGN * PROBE_ALIGN;
    let mut more = IoBuf::default();
    let n = file.read_at(start, (file_size - start).min(PROBE_BYTES) as usize, &mut more).await.ok()?;
    let windows = [(0, head), (start, more.get(..n)?)];
    match (format.probe)(&FileBytes::new(file_size, &windows)) {
        Probe::Size { width, height } => Some((width, height)),
        Probe::ReadAt(_) | Probe::Unknown => None,
    }
}

/// The format of the file at `path` on `storage` by its first bytes' magic, if it can be read.
async fn read_head(storage: &dyn Storage, path: &Path) -> Option<&'static Format> {
    let file = storage.open(path).await.ok()?;
    let mut head = IoBuf::default();
    let read = file.read_at(0, file.size().min(MAGIC_BYTES as u64) as usize, &mut head).await;
    let _ = file.close().await;
    format_for_magic(head.get(..read.ok()?)?)
}

/// The source playing `sequence` in `format`, or why it cannot be played.
fn sequence_source(
    sequence: Sequence,
    format: Option<&'static Format>,
    options: &DecodeOptions,
) -> Result<Arc<dyn Source>, Error> {
    let extension = sequence.extension().unwrap_or("none");
    let Some(format) = format else {
        return Err(Error::Unsupported {
            path: sequence.pattern_path(),
            extension: extension.to_owned(),
            known: FORMATS.iter().map(|f| f.name).collect::<Vec<_>>().join(", "),
        });
    };
    match format.kind {
        FormatKind::Sequence { decoder } => Ok(Arc::new(SequenceSource::new(sequence, decoder(options)))),
        // Numbered container files are no sequence in any build, with the feature or without.
        FormatKind::Container { .. } | FormatKind::NeedsFeature { container: true, .. } => {
            Err(Error::NotASequence { path: sequence.pattern_path(), format: format.name.to_owned() })
        }
        FormatKind::NeedsFeature { container: false, .. } => {
            Err(needs_feature(sequence.pattern_path(), format))
        }
    }
}

fn needs_feature(path: PathBuf, format: &Format) -> Error {
    let feature = match format.kind {
        FormatKind::NeedsFeature { feature, .. } => feature,
        FormatKind::Sequence { .. } | FormatKind::Container { .. } => "",
    };
    Error::NeedsFeature { path, format: format.name.to_owned(), feature: feature.to_owned() }
}

fn extension_of(path: &Path) -> Option<&str> {
    path.extension().and_then(|e| e.to_str())
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
        // (`tif` was the unknown extension here until TIFF was added.)
        let tmp = tempfile::tempdir().unwrap();
        for f in 1..=3 {
            fs::write(tmp.path().join(format!("a.{f:04}.xyz")), b"x").unwrap();
            fs::write(tmp.path().join(format!("b.{f:04}")), b"x").unwrap();
        }
        let err = open_source(tmp.path()).err().unwrap();
        let msg = err.to_string();
        assert!(matches!(err, Error::Unsupported { .. }), "{msg}");
        assert!(msg.contains("'xyz'") && msg.contains("known formats: dpx"), "{msg}");
        assert!(msg.contains(&*tmp.path().join("a.%04d.xyz").to_string_lossy()), "{msg}");
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
            match format.kind {
                FormatKind::Sequence { decoder } => {
                    assert_eq!(decoder(&DecodeOptions::default()).name(), format.name)
                }
                FormatKind::Container { .. } => assert!(format.decoder(&DecodeOptions::default()).is_none()),
                // Only video, and only in a build without FFmpeg.
                FormatKind::NeedsFeature { feature, .. } => {
                    assert!(cfg!(not(feature = "ffmpeg")) && (format.name, feature) == ("video", "ffmpeg"));
                    assert!(format.decoder(&DecodeOptions::default()).is_none());
                }
            }
            for magic in format.magic {
                assert_eq!(format_for_magic(magic).map(|f| f.name), Some(format.name));
            }
        }
        let names: Vec<&str> = formats().iter().map(|f| f.name).collect();
        assert_eq!(names, ["dpx", "exr", "tiff", "video"]);
    }

    #[test]
    fn the_video_entry_lists_ffmpegs_extensions() {
        assert_eq!(VIDEO.extensions, playsim_ffmpeg::VIDEO_EXTENSIONS);
        for ext in VIDEO.extensions {
            let path = PathBuf::from(format!("clip.{}", ext.to_uppercase()));
            assert!(playsim_ffmpeg::is_video_file(&path));
            assert!(format_for_file(&path, b"").is_some_and(|f| f.is_container()), "{ext}");
        }
    }

    /// Three frame files named `name.000N` (no extension) holding `head`, in a new directory.
    fn files_without_extension(head: &[u8]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for f in 1..=3 {
            fs::write(tmp.path().join(format!("shot.{f:04}")), head).unwrap();
        }
        tmp
    }

    #[test]
    fn files_without_a_known_extension_are_recognised_by_magic() {
        for (head, name) in
            [(&b"SDPX...."[..], "dpx"), (&b"XPDS"[..], "dpx"), (&b"v/1\x01\x02\0\0\0"[..], "exr")]
        {
            let tmp = files_without_extension(head);
            let source = open_source(&tmp.path().join("shot.%04d")).unwrap();
            assert_eq!(source.decoder().name(), name);
        }
        for head in [&b"II*\0\x08\0\0\0"[..], &b"MM\0*"[..]] {
            assert_eq!(format_for_file(Path::new("scan.0001.img"), head).map(|f| f.name), Some("tiff"));
        }
        // The extension, when it names a format, wins over the bytes (the decoder then says what is wrong).
        assert_eq!(format_for_file(Path::new("a.dpx"), b"II*\0").map(|f| f.name), Some("dpx"));
        assert!(format_for_magic(b"\x89PNG").is_none() && format_for_magic(b"").is_none());
    }

    #[test]
    fn numbered_container_files_are_not_a_sequence() {
        let tmp = tempfile::tempdir().unwrap();
        for f in 1..=3 {
            fs::write(tmp.path().join(format!("clip.{f:04}.mov")), b"x").unwrap();
        }
        let err = open_source(tmp.path()).err().unwrap();
        assert!(matches!(err, Error::NotASequence { .. }), "{err}");
        assert!(err.to_string().contains("video files each hold a whole clip"), "{err}");
    }

    #[test]
    fn a_format_without_its_feature_is_refused_naming_the_feature() {
        static UNBUILT: Format = Format::needs_feature(playsim_tiff::FORMAT, "tiff", false);
        let unbuilt = &UNBUILT;
        let tmp = files_without_extension(b"II*\0");
        let sequence = Sequence::discover(&tmp.path().join("shot.%04d")).unwrap();
        let err = sequence_source(sequence, Some(unbuilt), &DecodeOptions::default()).err().unwrap();
        assert!(matches!(err, Error::NeedsFeature { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("tiff files need playsim built with the cargo feature 'tiff'"), "{msg}");
        assert!(msg.contains(&*tmp.path().join("shot.%04d").to_string_lossy()), "{msg}");
        assert!(unbuilt.decoder(&DecodeOptions::default()).is_none() && !unbuilt.is_container());
        let video = Format::needs_feature(VIDEO, "ffmpeg", true);
        assert!(video.is_container());
        let msg = needs_feature(PathBuf::from("/m/clip.mov"), &video).to_string();
        assert!(msg.contains("/m/clip.mov") && msg.contains("cargo feature 'ffmpeg'"), "{msg}");
    }

    /// `n` frames `name.000N[.ext]` in `dir`, each `file(N)`.
    fn write_frames(dir: &Path, name: &str, n: u64, file: impl Fn(u64) -> Vec<u8>) {
        fs::create_dir_all(dir).unwrap();
        for i in 1..=n {
            fs::write(dir.join(name.replace("N", &format!("{i:04}"))), file(i)).unwrap();
        }
    }

    /// The size `probe_dimensions` reports for what `open_location` opens at `location`.
    async fn probed(location: &Path) -> Option<(u32, u32)> {
        let storage: Arc<dyn Storage> =
            Arc::new(playsim_storage::LocalStorage::new(playsim_storage::LocalOptions::default()).unwrap());
        let source = open_location(location, &DecodeOptions::default(), Arc::clone(&storage)).await.unwrap();
        probe_dimensions(source.as_ref(), storage.as_ref()).await
    }

    #[tokio::test]
    async fn probes_every_formats_frame_size_through_the_storage() {
        use playsim_core::{DecodedFrame, PixelFormat};
        let tmp = tempfile::tempdir().unwrap();
        let mut frame = DecodedFrame::default();
        crate::render_frame(96, 40, 1, true, &mut frame);
        let dpx = |_| {
            let mut out = Vec::new();
            let opts = playsim_dpx::WriteOptions { bit_depth: 10, endian: playsim_dpx::Endian::Big };
            playsim_dpx::write_dpx(&frame, &opts, &mut out).unwrap();
            out
        };
        write_frames(&tmp.path().join("dpx"), "a.N.dpx", 2, dpx);
        // FFmpeg and libtiff put a TIFF's directory after the pixels; so does write_tiff,
        // and at 208x160 16-bit RGBA the pixels are more than the first read's 64 KiB.
        let mut big = DecodedFrame::default();
        big.reset(208, 160, PixelFormat::Rgba64Le);
        let tiff = |_| {
            let mut out = Vec::new();
            playsim_tiff::write_tiff(&big, &playsim_tiff::WriteOptions::default(), &mut out).unwrap();
            assert!(out.len() as u64 > PROBE_BYTES);
            out
        };
        write_frames(&tmp.path().join("tiff"), "a.N.tif", 2, tiff);
        // No extension: the magic says TIFF. The first frame is empty and the second damaged,
        // so the third gives the size.
        write_frames(&tmp.path().join("bare"), "b.N", 3, |i| {
            if i == 3 {
                tiff(i)
            } else {
                tiff(i)[..i as usize * 8].to_vec()
            }
        });
        let mut half = DecodedFrame::default();
        crate::render_frame_f32(72, 24, 1, false, &mut half);
        let exr = |_| {
            let mut out = Vec::new();
            let opts = playsim_exr::write::WriteOptions {
                compression: playsim_exr::Compression::Zip,
                sample: playsim_exr::SampleType::Half,
                parallel: false,
            };
            playsim_exr::write::write_exr(&half, &opts, &mut out).unwrap();
            out
        };
        write_frames(&tmp.path().join("exr"), "a.N.exr", 1, exr);
        write_frames(&tmp.path().join("junk"), "a.N.dpx", 2, |_| vec![0; 3000]);

        assert_eq!(probed(&tmp.path().join("dpx")).await, Some((96, 40)));
        assert_eq!(probed(&tmp.path().join("tiff")).await, Some((208, 160)));
        assert_eq!(probed(&tmp.path().join("bare/b.%04d")).await, Some((208, 160)));
        assert_eq!(probed(&tmp.path().join("exr")).await, Some((72, 24)));
        assert_eq!(probed(&tmp.path().join("junk")).await, None);
    }

    #[test]
    fn sim_sources_know_their_size_without_a_read() {
        let url = crate::SimUrl::parse("sim://?preset=160x32&format=exr&frames=2&distinct=1").unwrap();
        let source = Arc::new(crate::SimFrames::generate(&url).unwrap()).source(&DecodeOptions::default());
        assert_eq!(source.dimensions(), Some((160, 32)));
        let raw = crate::SimUrl::parse("sim://?frame_bytes=1000&frames=2").unwrap();
        let source = Arc::new(crate::SimFrames::generate(&raw).unwrap()).source(&DecodeOptions::default());
        assert_eq!(source.dimensions(), None);
    }
}
