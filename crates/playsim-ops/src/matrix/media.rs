//! The rows of `playsim matrix`: the format registry's matrix variants by name (`dpx-4k-dci`,
//! `exr-piz-uhd`, `prores-hq-uhd`, or `FORMAT:WxH`; see [`playsim_media::MatrixVariant`]), and
//! the media each plays: a `sim://` URL with the row's format and size, media given with
//! `--media`, or media generated under `LOCATION/matrix-media/` by playsim's own writers or
//! the `ffmpeg` command, as the variant says, through the scenario's `generate` code and its
//! recipe files.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use playsim_core::{FramePreset, FrameRate};
use playsim_media::{GenerateFormat, GenerateOptions, MatrixVariant};
use playsim_settings::scenario::{Generate, MediaState, VideoClip};
use playsim_storage::transport::{MediaAsked, TransportOptions};

use super::upload::Upload;
use crate::Error;

/// The rows of the default matrix (issue 23's formats).
pub const DEFAULT_ROWS: &str =
    "dpx-2k,dpx-4k-dci,dpx-8k-dci,exr-piz-uhd,exr-piz-6k,prores-hq-uhd,h264-uhd,dnxhr-hqx-uhd";

/// The rows of the default write matrix (`--write`): the default rows that `record` can
/// encode (it writes no H.264 or DNxHR).
pub const DEFAULT_WRITE_ROWS: &str = "dpx-2k,dpx-4k-dci,dpx-8k-dci,exr-piz-uhd,exr-piz-6k,prores-hq-uhd";

/// The most bytes a generated row's media may take: a row that would need more for window x
/// rate frames is made shorter, and loops (said in the matrix's cold note).
pub const ROW_BYTES_CAP: u64 = 1_500_000_000;

/// Frames a generated clip encodes (2 s at 24 fps, two of H.264's 24-frame GOPs); they are
/// repeated, copied, to the clip's length, each copy its own bytes on storage.
const DISTINCT_CLIP_FRAMES: u64 = 48;

/// The fewest frames a generated sequence gets, whatever its size.
const MIN_FRAMES: u64 = 8;

/// A row asked for: its name, format and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixRowSpec {
    /// The name as given.
    pub name: String,
    /// The format's variant, from the format registry.
    pub format: &'static MatrixVariant,
    /// The frame size.
    pub preset: FramePreset,
}

impl FromStr for MatrixRowSpec {
    type Err = String;

    /// `FORMAT-PRESET` (`dpx-4k-dci`, `exr-piz-6k`: a matrix variant's prefix) or
    /// `FORMAT:WxH` (`dpx:256x144`: a variant's word); see [`playsim_media::parse_matrix_row`].
    fn from_str(s: &str) -> Result<MatrixRowSpec, String> {
        let name = s.trim();
        let refuse = |why: String| {
            format!(
                "'{s}' is not a matrix row: {why}; give FORMAT-PRESET (dpx-2k, dpx-4k-dci, exr-piz-uhd, \
                 prores-hq-uhd, h264-uhd, dnxhr-hqx-uhd, tiff-uhd) or FORMAT:WxH (for example dpx:256x144)"
            )
        };
        let (format, preset) = playsim_media::parse_matrix_row(name).map_err(refuse)?;
        Ok(MatrixRowSpec { name: name.to_owned(), format, preset })
    }
}

/// A row ready to play.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixMedia {
    /// The row's name.
    pub name: String,
    /// The format's word.
    pub format: String,
    /// `WxH`.
    pub size: String,
    /// What is played: a directory, a clip, a URL.
    pub media: String,
    /// Frames in the media, when known.
    pub frames: Option<u64>,
}

impl MatrixMedia {
    /// Whether a trial of `window` at `rate` plays more frames than the media has.
    pub fn loops_at(&self, window: Duration, rate: Option<FrameRate>) -> bool {
        match (self.frames, rate) {
            (Some(frames), Some(rate)) => rate.frames_in(window) > frames,
            _ => false,
        }
    }
}

/// A row's media and what it takes to make it.
#[derive(Clone, Debug)]
pub struct MediaPlan {
    /// The row, ready to play once generated.
    pub row: MatrixMedia,
    /// How to make it, when playsim makes it; `None` for a URL or media given, or media on a
    /// server already.
    pub generate: Option<Generate>,
    /// Where it is copied once made, for a location on a server (made first in a local
    /// staging directory).
    pub upload: Option<Upload>,
    /// Bytes it will take (an estimate for compressed formats; 0 when present already).
    pub bytes: u64,
    /// Seconds it will take to make, roughly (0 when present already).
    pub seconds: f64,
}

impl MediaPlan {
    /// Makes the media unless it is there, saying what it does to `log`; for a server, in
    /// the staging directory (then [`MediaPlan::copy`]).
    pub fn ensure(&self, log: &mut dyn FnMut(&str)) -> Result<(), Error> {
        let Some(generate) = &self.generate else { return Ok(()) };
        generate.ensure(log).map_err(|e| Error::Engine(e.to_string()))
    }

    /// Checks whether media to copy to a server is there whole already: then nothing is
    /// made or copied.
    pub async fn check_server(&mut self) -> Result<(), Error> {
        let Some(upload) = &self.upload else { return Ok(()) };
        if upload.is_done().await? {
            self.generate = None;
            self.upload = None;
            self.bytes = 0;
            self.seconds = 0.0;
        }
        Ok(())
    }

    /// Copies media made in the staging directory to its server, saying what it does to
    /// `log`; nothing for media that stays where it is made.
    pub async fn copy(&self, log: &mut dyn FnMut(&str)) -> Result<(), Error> {
        let (Some(upload), Some(generate)) = (&self.upload, &self.generate) else { return Ok(()) };
        upload.copy(generate.path(), log).await.map(|_| ())
    }
}

/// The media of every row at `location`: for `sim://`, the URL with the row's format, size
/// and frames; for a row in `given` (`--media ROW=PATH`), that; else media in
/// `LOCATION/matrix-media/ROW` of `frames` frames (fewer when that would take more than
/// [`ROW_BYTES_CAP`]), made there for a local `location`, or for a URL made in `stage` and
/// copied there through the transport's writer.
pub fn plan_media(
    location: &str,
    rows: &[MatrixRowSpec],
    given: &[(String, String)],
    frames: u64,
    stage: &Path,
    transport: &TransportOptions,
) -> Result<Vec<MediaPlan>, Error> {
    let mut plans = Vec::with_capacity(rows.len());
    for spec in rows {
        let (width, height) = spec.preset.dimensions();
        let mut row = MatrixMedia {
            name: spec.name.clone(),
            format: spec.format.word.to_owned(),
            size: format!("{width}x{height}"),
            media: String::new(),
            frames: None,
        };
        if let Some((_, media)) = given.iter().find(|(name, _)| *name == spec.name) {
            row.media = media.clone();
            plans.push(MediaPlan { row, generate: None, upload: None, bytes: 0, seconds: 0.0 });
            continue;
        }
        let asked = MediaAsked { name: &spec.name, format: spec.format.word, width, height, frames };
        if let Some(made) = made_media(location, &asked) {
            row.media = made?;
            row.frames = Some(frames);
            plans.push(MediaPlan { row, generate: None, upload: None, bytes: 0, seconds: 0.0 });
            continue;
        }
        if location.contains("://") {
            let mut plan = local_plan(stage, spec, row, frames);
            let name = plan
                .generate
                .as_ref()
                .and_then(|g| g.path().file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| spec.name.clone());
            plan.row.media = url_join(location, &format!("matrix-media/{name}"));
            plan.upload = Some(Upload { location: location.to_owned(), name, transport: transport.clone() });
            // The staged copy may be there from an earlier matrix; the server's is not.
            if plan.bytes == 0 {
                plan.bytes = plan.generate.as_ref().and_then(Generate::estimated_bytes).unwrap_or(0);
            }
            plans.push(plan);
            continue;
        }
        plans.push(local_plan(Path::new(location), spec, row, frames));
    }
    Ok(plans)
}

/// A write row's format as `record` writes it, and its frame size.
pub type RecordedFormat = (GenerateFormat, FramePreset);

/// The rows of a write matrix at `location`: each records into `LOCATION/matrix-write/ROW`,
/// with the format `record` writes it in and its size. `sim://` holds no files, and H.264 and
/// DNxHR rows are refused, as `record` encodes neither.
pub fn plan_write_rows(
    location: &str,
    rows: &[MatrixRowSpec],
) -> Result<(Vec<MatrixMedia>, Vec<RecordedFormat>), Error> {
    if let Some(scheme) =
        crate::transports().find(location).ok().filter(|t| !t.holds_files()).map(|t| t.name())
    {
        return Err(Error::Engine(format!(
            "--write records files, and {scheme}:// makes frames in memory: give a directory, a mount or \
             a server (for example playsim matrix /mnt/nas/m --write)"
        )));
    }
    let mut media = Vec::with_capacity(rows.len());
    let mut formats = Vec::with_capacity(rows.len());
    for spec in rows {
        let Some(writer) = spec.format.writer else {
            return Err(Error::Engine(format!(
                "--write: record encodes no {}: leave row {} out (for example --write --formats {DEFAULT_WRITE_ROWS})",
                spec.format.word, spec.name
            )));
        };
        let format = writer.parse().map_err(|e| Error::Engine(e.to_string()))?;
        let (width, height) = spec.preset.dimensions();
        let dir = format!("matrix-write/{}", spec.name.replace([':', '/'], "-"));
        let path = if location.contains("://") {
            url_join(location, &dir)
        } else {
            Path::new(location).join(&dir).to_string_lossy().into_owned()
        };
        media.push(MatrixMedia {
            name: spec.name.clone(),
            format: spec.format.word.to_owned(),
            size: format!("{width}x{height}"),
            media: path,
            frames: None,
        });
        formats.push((format, spec.preset));
    }
    Ok((media, formats))
}

/// `url` with `tail` appended to its path (before any query).
fn url_join(url: &str, tail: &str) -> String {
    let (path, query) = url.split_once('?').map_or((url, None), |(p, q)| (p, Some(q)));
    let joined = format!("{}/{tail}", path.trim_end_matches('/'));
    match query {
        Some(q) => format!("{joined}?{q}"),
        None => joined,
    }
}

/// The media `location`'s transport makes for `asked`, when it makes its frames (`sim://`).
fn made_media(location: &str, asked: &MediaAsked<'_>) -> Option<Result<String, Error>> {
    let transport = crate::transports().find(location).ok()?;
    transport.made_media(location, asked).map(|made| made.map_err(Error::Storage))
}

/// A row's media under `location/matrix-media/`, with its size and time to make.
fn local_plan(location: &Path, spec: &MatrixRowSpec, mut row: MatrixMedia, frames: u64) -> MediaPlan {
    let (width, height) = spec.preset.dimensions();
    let pixels = f64::from(width) * f64::from(height);
    let dir = location.join("matrix-media");
    let file_name = spec.name.replace([':', '/'], "-");
    let generate = match spec.format.clip {
        Some(codec) => {
            let frame_bytes = (pixels * spec.format.bytes_per_pixel) as u64;
            Generate::Video(VideoClip {
                path: dir.join(format!("{file_name}.{}", codec.container())),
                preset: spec.preset,
                frames: capped_frames(frames, frame_bytes),
                rate: FrameRate::FILM,
                codec,
                distinct: Some(DISTINCT_CLIP_FRAMES),
            })
        }
        None => {
            // The formats' own defaults, which always parse.
            let format = spec.format.writer.and_then(|w| w.parse().ok()).unwrap_or_default();
            let alpha = format.writer().rgba_by_default;
            let frame_bytes = format
                .encoder()
                .file_bytes((width, height), alpha)
                .unwrap_or((pixels * spec.format.bytes_per_pixel) as u64);
            Generate::Sequence(GenerateOptions {
                format,
                alpha,
                threads: 0,
                ..GenerateOptions::new(dir.join(&file_name), spec.preset, capped_frames(frames, frame_bytes))
            })
        }
    };
    let (n_frames, n_encoded) = match &generate {
        Generate::Sequence(o) => (o.n_frames, o.n_frames),
        Generate::Video(clip) => (clip.frames, clip.distinct.unwrap_or(clip.frames).min(clip.frames)),
        Generate::ProRes(clip) => (clip.frames, clip.frames),
    };
    row.media = generate.path().to_string_lossy().into_owned();
    row.frames = Some(n_frames);
    let present = generate.state() == MediaState::Present;
    let bytes = if present {
        0
    } else {
        generate.estimated_bytes().unwrap_or((pixels * spec.format.bytes_per_pixel) as u64 * n_frames)
    };
    let seconds = if present {
        0.0
    } else {
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        pixels / 1e6 * spec.format.seconds_per_megapixel * n_encoded as f64 / cores
    };
    MediaPlan { row, generate: Some(generate), upload: None, bytes, seconds }
}

/// `wanted` frames, or as many of `frame_bytes` as [`ROW_BYTES_CAP`] holds (at least
/// [`MIN_FRAMES`]).
fn capped_frames(wanted: u64, frame_bytes: u64) -> u64 {
    wanted.min((ROW_BYTES_CAP / frame_bytes.max(1)).max(MIN_FRAMES)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_named_format_then_preset_or_format_colon_size() {
        let row = |s: &str| s.parse::<MatrixRowSpec>();
        for name in DEFAULT_ROWS.split(',') {
            assert!(row(name).is_ok(), "{name}: {:?}", row(name));
        }
        assert_eq!(
            row("exr-piz-6k").map(|r| (r.format.prefix, r.preset)),
            Ok(("exr-piz", FramePreset::Dci6k))
        );
        assert_eq!(
            row("dpx:256x144").map(|r| (r.format.prefix, r.preset)),
            Ok(("dpx", FramePreset::Custom { width: 256, height: 144 }))
        );
        let refused = row("mpeg2-uhd").unwrap_err();
        assert!(
            refused.contains("'mpeg2-uhd' is not a matrix row") && refused.contains("dpx:256x144"),
            "{refused}"
        );
        assert!(row("dpx-huge").is_err() && row("gif:10x10").is_err());
    }

    #[test]
    fn the_default_write_rows_are_the_default_rows_that_record_writes() {
        let writable: Vec<&str> = (DEFAULT_ROWS.split(','))
            .filter(|name| name.parse::<MatrixRowSpec>().is_ok_and(|r| r.format.writer.is_some()))
            .collect();
        assert_eq!(writable.join(","), DEFAULT_WRITE_ROWS);
    }

    #[test]
    fn sim_rows_are_the_url_with_the_rows_format_and_size() {
        let rows: Vec<MatrixRowSpec> =
            ["dpx:256x144", "exr:512x288"].iter().map(|r| r.parse().unwrap()).collect();
        let plans = plan_media(
            "sim://lan?bw=1Gbit",
            &rows,
            &[],
            48,
            Path::new("/stage"),
            &TransportOptions::default(),
        )
        .unwrap();
        assert_eq!(plans[0].row.media, "sim://lan?bw=1Gbit&format=dpx&preset=256x144&frames=48");
        assert_eq!(plans[1].row.media, "sim://lan?bw=1Gbit&format=exr&preset=512x288&frames=48");
        assert!(plans.iter().all(|p| p.generate.is_none() && p.bytes == 0));
        let h264 = vec!["h264-uhd".parse().unwrap()];
        assert!(plan_media("sim://lan", &h264, &[], 48, Path::new("/stage"), &TransportOptions::default())
            .is_err());
        assert!(plan_media(
            "sim://lan?format=exr",
            &rows,
            &[],
            48,
            Path::new("/stage"),
            &TransportOptions::default()
        )
        .is_err());
        let nfs = plan_media(
            "nfs://filer/x?nconnect=2",
            &rows,
            &[],
            48,
            Path::new("/stage"),
            &TransportOptions::default(),
        )
        .unwrap();
        assert_eq!(nfs[0].row.media, "nfs://filer/x/matrix-media/dpx-256x144?nconnect=2");
        assert_eq!(
            nfs[0].generate.as_ref().map(|g| g.path().to_path_buf()),
            Some("/stage/matrix-media/dpx-256x144".into())
        );
        let upload = nfs[0].upload.as_ref().unwrap();
        assert_eq!(
            (upload.location.as_str(), upload.name.as_str()),
            ("nfs://filer/x?nconnect=2", "dpx-256x144")
        );
        assert_eq!(nfs[0].bytes, (256 * 144 * 4 + 2048) * 48);
    }

    #[test]
    fn local_rows_are_generated_under_matrix_media_and_capped_in_size() {
        let rows: Vec<MatrixRowSpec> =
            ["dpx:256x144", "dpx-8k-dci", "prores-hq-uhd"].iter().map(|r| r.parse().unwrap()).collect();
        let plans = plan_media(
            "/no/such/m",
            &rows,
            &[("prores-hq-uhd".into(), "/a/clip.mov".into())],
            300,
            Path::new("/s"),
            &TransportOptions::default(),
        )
        .unwrap();
        assert_eq!(plans[0].row.media, "/no/such/m/matrix-media/dpx-256x144");
        assert_eq!((plans[0].row.frames, plans[0].bytes), (Some(300), (256 * 144 * 4 + 2048) * 300));
        // 8K DCI DPX is 141.6 MB a frame: 10 fit in the cap.
        assert_eq!(plans[1].row.frames, Some(10));
        assert!(plans[1].bytes <= ROW_BYTES_CAP);
        assert_eq!((plans[2].row.media.as_str(), plans[2].generate.is_none()), ("/a/clip.mov", true));
    }
}
