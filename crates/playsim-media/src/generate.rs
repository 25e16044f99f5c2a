//! Writing a synthetic test sequence to disk, in parallel across worker threads.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use playsim_core::{DecodedFrame, FramePreset, MAX_DIMENSION};

use crate::{Error, GenerateFormat};

/// Digits of the frame number in generated file names.
pub const GENERATED_PADDING: usize = 7;

/// What [`generate_sequence`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerateOptions {
    /// The directory to write into; it is created if missing.
    pub dir: PathBuf,
    /// The file name stem: files are `NAME.%07d.EXT`.
    pub name: String,
    /// Frame size.
    pub preset: FramePreset,
    /// Frames to write.
    pub n_frames: u64,
    /// The number of the first frame.
    pub start_frame: u64,
    /// The format and its writer options.
    pub format: GenerateFormat,
    /// Writes RGBA rather than RGB.
    pub alpha: bool,
    /// Worker threads; 0 means one per available core.
    pub threads: usize,
}

impl GenerateOptions {
    /// `n_frames` frames of `preset` into `dir`, named `frame.%07d.dpx` from
    /// frame 0, as 10-bit big-endian RGB DPX, one thread per core.
    pub fn new(dir: impl Into<PathBuf>, preset: FramePreset, n_frames: u64) -> GenerateOptions {
        GenerateOptions {
            dir: dir.into(),
            name: "frame".to_owned(),
            preset,
            n_frames,
            start_frame: 0,
            format: GenerateFormat::default(),
            alpha: false,
            threads: 0,
        }
    }

    /// The printf-style pattern of the files written, inside `dir`.
    pub fn pattern(&self) -> PathBuf {
        self.dir.join(format!("{}.%0{GENERATED_PADDING}d.{}", self.name, self.format.extension()))
    }

    /// The path of frame number `frame`.
    pub fn path_for(&self, frame: u64) -> PathBuf {
        self.dir.join(format!("{}.{frame:0GENERATED_PADDING$}.{}", self.name, self.format.extension()))
    }
}

/// What [`generate_sequence`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerateSummary {
    /// Frames written.
    pub n_frames: u64,
    /// Bytes written, all files together.
    pub bytes_written: u64,
    /// The files' printf-style pattern, e.g. `dir/frame.%07d.dpx`.
    pub pattern: PathBuf,
    /// Bytes per file, on average (rounded down).
    pub mean_frame_bytes: u64,
}

/// Writes `opts.n_frames` synthetic frames as a sequence, each encoded by the writer of
/// `opts.format`'s entry in the format table (e.g. [`crate::render_frame`]'s pixels for DPX).
///
/// Frame number `n` carries `n` as its index in the pixels. Frames are spread
/// over `opts.threads` workers, each reusing its own frame and output buffer.
/// `progress` is called, from the workers, with the count of frames written so
/// far after each one. The first error stops the workers; it names its file.
pub fn generate_sequence(
    opts: &GenerateOptions,
    progress: impl Fn(u64) + Sync,
) -> Result<GenerateSummary, Error> {
    let invalid = |reason: String| Error::InvalidOptions { path: opts.dir.clone(), reason };
    let (width, height) = opts.preset.dimensions();
    if width == 0 || height == 0 || width > MAX_DIMENSION || height > MAX_DIMENSION {
        return Err(invalid(format!("frame size {width}x{height} is not within 1..={MAX_DIMENSION}")));
    }
    if opts.n_frames == 0 {
        return Err(invalid("no frames to write (n_frames is 0)".to_owned()));
    }
    if opts.format.writer().clip {
        return Err(invalid(format!(
            "{} writes one clip, not a file a frame: record it with playsim record DIR --format {} --fps max",
            opts.format.name(),
            opts.format.name()
        )));
    }
    if opts.name.is_empty() || opts.name.contains(['/', '\\', '%', '\0']) {
        return Err(invalid(format!("name '{}' must be non-empty, without '/', '\\' or '%'", opts.name)));
    }
    if opts.start_frame.checked_add(opts.n_frames - 1).is_none() {
        return Err(invalid(format!("frames {} + {} overflow", opts.start_frame, opts.n_frames)));
    }
    std::fs::create_dir_all(&opts.dir).map_err(|e| Error::io("create directory", &opts.dir, e))?;

    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let threads = threads.min(usize::try_from(opts.n_frames).unwrap_or(usize::MAX));
    let work = Work {
        next: AtomicU64::new(0),
        n_done: AtomicU64::new(0),
        bytes_written: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        first_error: Mutex::new(None),
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| work.run(opts, (width, height), &progress));
        }
    });

    if let Some((_, e)) = work.first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let bytes_written = work.bytes_written.into_inner();
    Ok(GenerateSummary {
        n_frames: opts.n_frames,
        bytes_written,
        pattern: opts.pattern(),
        mean_frame_bytes: bytes_written / opts.n_frames,
    })
}

/// The state the workers share.
struct Work {
    /// The next frame position to take.
    next: AtomicU64,
    n_done: AtomicU64,
    bytes_written: AtomicU64,
    /// Set on the first error, so the other workers stop early.
    stop: AtomicBool,
    /// The failure with the lowest frame number seen, with that number.
    first_error: Mutex<Option<(u64, Error)>>,
}

impl Work {
    /// One worker: takes frames until none are left or one has failed.
    fn run(&self, opts: &GenerateOptions, size: (u32, u32), progress: &(impl Fn(u64) + Sync)) {
        let mut frame = DecodedFrame::default();
        let mut encoded = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= opts.n_frames {
                break;
            }
            let number = opts.start_frame + i;
            match write_frame(opts, number, size, &mut frame, &mut encoded) {
                Ok(bytes) => {
                    self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
                    progress(self.n_done.fetch_add(1, Ordering::Relaxed) + 1);
                }
                Err(e) => {
                    self.stop.store(true, Ordering::Relaxed);
                    if let Ok(mut slot) = self.first_error.lock() {
                        if !matches!(*slot, Some((n, _)) if n < number) {
                            *slot = Some((number, e));
                        }
                    }
                }
            }
        }
    }
}

/// Renders, encodes and writes one frame; returns the bytes written.
fn write_frame(
    opts: &GenerateOptions,
    number: u64,
    (width, height): (u32, u32),
    frame: &mut DecodedFrame,
    encoded: &mut Vec<u8>,
) -> Result<u64, Error> {
    let path = opts.path_for(number);
    opts.format
        .encoder()
        .encode(number, (width, height), opts.alpha, frame, encoded)
        .map_err(|message| Error::Encode { path: path.clone(), message })?;
    std::fs::write(&path, &encoded[..]).map_err(|e| Error::io("write", &path, e))?;
    Ok(encoded.len() as u64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{open_source, read_frame_index, render_frame, render_frame_f32, Sequence};
    use playsim_core::{FrameExtent, PixelFormat};
    use playsim_exr::Compression;
    use std::sync::atomic::AtomicU64;

    fn small(dir: &std::path::Path, n_frames: u64) -> GenerateOptions {
        GenerateOptions {
            start_frame: 98,
            threads: 2,
            ..GenerateOptions::new(dir, FramePreset::Custom { width: 320, height: 180 }, n_frames)
        }
    }

    #[test]
    fn refuses_bad_options_naming_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let cases = [
            GenerateOptions { n_frames: 0, ..small(&dir, 1) },
            GenerateOptions { name: "a/b".to_owned(), ..small(&dir, 1) },
            GenerateOptions { name: String::new(), ..small(&dir, 1) },
            GenerateOptions { start_frame: u64::MAX, ..small(&dir, 2) },
            GenerateOptions { preset: FramePreset::Custom { width: 0, height: 10 }, ..small(&dir, 1) },
        ];
        for opts in cases {
            let err = generate_sequence(&opts, |_| {}).unwrap_err();
            assert!(matches!(err, Error::InvalidOptions { .. }), "{err}");
            assert!(err.to_string().contains(&*dir.to_string_lossy()), "{err}");
        }
        assert!(!dir.exists());
    }

    #[test]
    fn a_directory_that_cannot_be_created_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = generate_sequence(&small(&file.join("sub"), 1), |_| {}).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(err.to_string().contains(&*file.join("sub").to_string_lossy()), "{err}");
    }

    #[test]
    fn names_and_pattern() {
        let opts = small(std::path::Path::new("/x"), 3);
        assert_eq!(opts.path_for(98), PathBuf::from("/x/frame.0000098.dpx"));
        assert_eq!(opts.path_for(12_345_678), PathBuf::from("/x/frame.12345678.dpx"));
        assert_eq!(opts.pattern(), PathBuf::from("/x/frame.%07d.dpx"));
    }

    // Needs playsim-dpx's writer and decoder.
    #[test]
    fn writes_a_sequence_that_plays_back_with_its_indices() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("seq");
        let calls = AtomicU64::new(0);
        let max_seen = AtomicU64::new(0);
        let summary = generate_sequence(&small(&dir, 5), |n| {
            calls.fetch_add(1, Ordering::Relaxed);
            max_seen.fetch_max(n, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!((calls.into_inner(), max_seen.into_inner()), (5, 5));
        assert_eq!(summary.n_frames, 5);
        assert_eq!(summary.pattern, dir.join("frame.%07d.dpx"));
        assert_eq!(summary.mean_frame_bytes, summary.bytes_written / 5);
        // 10-bit RGB packs 3 samples in 4 bytes, plus a header.
        assert!(summary.mean_frame_bytes >= 320 * 180 * 4, "{summary:?}");

        let seq = Sequence::discover(&dir).unwrap();
        assert_eq!(
            (seq.pattern().as_str(), seq.first_frame(), seq.last_frame()),
            ("frame.%07d.dpx", 98, 102)
        );
        let source = open_source(&summary.pattern).unwrap();
        let decoder = source.decoder();
        let mut decoded = DecodedFrame::default();
        for idx in 0..source.n_frames() {
            let FrameExtent::File { path } = source.extent(idx) else { panic!("frame {idx} missing") };
            let bytes = std::fs::read(&path).unwrap();
            decoder.decode(&bytes, &mut decoded).unwrap();
            assert_eq!(read_frame_index(&decoded), Some(source.frame_number(idx)), "{}", path.display());
            // 10-bit samples are bit-replicated, so the round trip is exact.
            let mut expected = DecodedFrame::default();
            render_frame(320, 180, source.frame_number(idx), false, &mut expected);
            assert!(decoded.data == expected.data, "{} does not round-trip", path.display());
        }
    }

    // Needs playsim-dpx's writer.
    #[test]
    fn writes_rgba_and_little_endian() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = GenerateOptions {
            alpha: true,
            format: GenerateFormat::parse("dpx", &[("bit_depth", "16"), ("endian", "little")]).unwrap(),
            threads: 1,
            ..small(tmp.path(), 2)
        };
        let summary = generate_sequence(&opts, |_| {}).unwrap();
        assert!(summary.mean_frame_bytes >= 320 * 180 * 8, "{summary:?}");
        let bytes = std::fs::read(opts.path_for(99)).unwrap();
        assert_eq!(bytes.get(..4), Some(&b"XPDS"[..]));
    }

    #[test]
    fn writes_tiff_that_decodes_to_the_rendered_frames() {
        let tmp = tempfile::tempdir().unwrap();
        for (bit_depth, endian, alpha) in [(16, "big", false), (8, "little", true)] {
            let depth = bit_depth.to_string();
            let opts = GenerateOptions {
                format: GenerateFormat::parse("tiff", &[("bit_depth", &depth), ("endian", endian)]).unwrap(),
                alpha,
                threads: 1,
                ..small(&tmp.path().join(format!("{bit_depth}")), 2)
            };
            let summary = generate_sequence(&opts, |_| {}).unwrap();
            assert_eq!(summary.pattern, opts.dir.join("frame.%07d.tif"));
            let source = open_source(&summary.pattern).unwrap();
            assert_eq!(source.decoder().name(), "tiff");
            let mut decoded = DecodedFrame::default();
            for number in [98, 99] {
                let bytes = std::fs::read(opts.path_for(number)).unwrap();
                source.decoder().decode(&bytes, &mut decoded).unwrap();
                assert_eq!(read_frame_index(&decoded), Some(number));
                let mut expected = DecodedFrame::default();
                render_frame(320, 180, number, alpha, &mut expected);
                if bit_depth == 8 {
                    // 8 bits keep each sample's high byte, widened back by 257.
                    expected.data.chunks_exact_mut(2).for_each(|s| s[0] = s[1]);
                }
                assert!(decoded.data == expected.data, "{bit_depth}-bit frame {number} differs");
            }
        }
        let err = GenerateFormat::parse("tiff", &[("bit_depth", "10")]).unwrap_err();
        assert!(err.to_string().contains("tiff files are written at 8 or 16 bits"), "{err}");
    }

    fn exr(compression: Compression) -> GenerateFormat {
        GenerateFormat::parse("exr", &[("compression", compression.name())]).unwrap()
    }

    /// Decodes an EXR file with the `exr` crate into canonical pixels (R, G, B
    /// and A when present, as f32), with the file's compression.
    fn read_with_exr_crate(bytes: &[u8]) -> (exr::prelude::Compression, DecodedFrame) {
        use exr::prelude::{read, FlatSamples, ReadChannels, ReadLayers};
        let image = read()
            .no_deep_data()
            .largest_resolution_level()
            .all_channels()
            .first_valid_layer()
            .all_attributes()
            .from_buffered(std::io::Cursor::new(bytes))
            .unwrap();
        let layer = image.layer_data;
        let planes: Vec<Vec<f32>> = ["R", "G", "B", "A"]
            .iter()
            .filter_map(|name| layer.channel_data.list.iter().find(|c| c.name.to_string() == *name))
            .map(|c| match &c.sample_data {
                FlatSamples::F16(v) => v.iter().map(|h| h.to_f32()).collect(),
                other => panic!("channel {} is not half: {other:?}", c.name),
            })
            .collect();
        let format = if planes.len() == 4 { PixelFormat::RgbaF32Le } else { PixelFormat::RgbF32Le };
        let mut frame = DecodedFrame::default();
        frame.reset(layer.size.0 as u32, layer.size.1 as u32, format);
        for (i, sample) in frame.data.chunks_exact_mut(4).enumerate() {
            sample.copy_from_slice(&planes[i % planes.len()][i / planes.len()].to_le_bytes());
        }
        (layer.encoding.compression, frame)
    }

    #[test]
    fn writes_exr_that_reads_back_bit_exactly_with_its_indices() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("exr");
        use exr::prelude::Compression as ExrCompression;
        let cases = [
            (true, Compression::Piz, ExrCompression::PIZ, 3),
            (false, Compression::Zip, ExrCompression::ZIP16, 1),
        ];
        for (alpha, compression, exr_compression, n_frames) in cases {
            let opts = GenerateOptions { format: exr(compression), alpha, ..small(&dir, n_frames) };
            let summary = generate_sequence(&opts, |_| {}).unwrap();
            assert_eq!(summary.pattern, dir.join("frame.%07d.exr"));
            assert_eq!(opts.path_for(98), dir.join("frame.0000098.exr"));
            // Grain keeps the files at roughly half of the raw half-float size.
            let raw = 320 * 180 * if alpha { 8 } else { 6 };
            assert!(summary.mean_frame_bytes > raw / 3 && summary.mean_frame_bytes < raw, "{summary:?}");
            for number in 98..98 + n_frames {
                let path = opts.path_for(number);
                let (written, decoded) = read_with_exr_crate(&std::fs::read(&path).unwrap());
                assert_eq!(written, exr_compression);
                assert_eq!(read_frame_index(&decoded), Some(number), "{}", path.display());
                let mut expected = DecodedFrame::default();
                render_frame_f32(320, 180, number, alpha, &mut expected);
                assert_eq!(decoded.format, expected.format);
                assert!(decoded.data == expected.data, "{} does not round-trip", path.display());
            }
        }
    }

    // Needs playsim-exr's decoders: the exrs backend, and the openexr one in a build with
    // playsim-exr's `openexr` feature.
    #[test]
    fn generated_exr_decodes_with_every_backend() {
        use playsim_exr::{Backend, ExrDecoder, ExrOptions};
        let tmp = tempfile::tempdir().unwrap();
        let opts = GenerateOptions { format: exr(Compression::Piz), alpha: true, ..small(tmp.path(), 2) };
        generate_sequence(&opts, |_| {}).unwrap();
        for &backend in Backend::available() {
            let decoder = ExrDecoder::new(ExrOptions { backend, ..ExrOptions::default() });
            let mut decoded = DecodedFrame::default();
            for number in [98, 99] {
                let path = opts.path_for(number);
                let info = decoder.decode_exr(&std::fs::read(&path).unwrap(), &mut decoded).unwrap();
                assert_eq!((info.compression, info.tiled), (Compression::Piz, false));
                assert_eq!(read_frame_index(&decoded), Some(number), "{backend}: {}", path.display());
                let mut expected = DecodedFrame::default();
                render_frame_f32(320, 180, number, true, &mut expected);
                assert!(decoded.data == expected.data, "{backend}: {} does not round-trip", path.display());
            }
        }
    }

    #[test]
    fn refuses_exr_compressions_it_cannot_write() {
        for compression in [Compression::Dwaa, Compression::Dwab] {
            let err = GenerateFormat::parse("exr", &[("compression", compression.name())]).unwrap_err();
            assert!(err.to_string().contains(compression.name()), "{err}");
            assert!(err.to_string().contains("playsim cannot write it"), "{err}");
        }
        assert_eq!(exr(Compression::Piz).extension(), "exr");
    }
}
