//! Video clips of synthetic pictures made by the `ffmpeg` command (FFmpeg's testsrc2 with
//! grain), as `cargo xtask fixtures` makes its clips: the codecs and their encoder settings,
//! the command lines, and running them. A scenario's `generate` table and `playsim matrix`
//! make their ProRes, H.264 and DNxHR clips this way; the recipe file that says a clip is
//! playsim's is the caller's.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use playsim_core::{FramePreset, FrameRate};

use crate::Error;

/// Grain added to generated clips, as `cargo xtask fixtures` adds to its full-size clips, so
/// that a frame costs what real footage costs to decode.
const GRAIN_STRENGTH: u32 = 12;

/// A clip of synthetic pictures (FFmpeg's testsrc2 with grain) in any of the codecs
/// [`VideoCodec`] names.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoClip {
    /// The clip's file (`.mov`, `.mp4` or `.mxf`, as [`VideoCodec::container`] says).
    pub path: PathBuf,
    /// Frame size (even width and height).
    pub preset: FramePreset,
    /// Frames in the clip.
    pub frames: u64,
    /// The clip's own frame rate.
    pub rate: FrameRate,
    /// The codec and its flavour.
    pub codec: VideoCodec,
    /// Encode only this many frames and repeat them, copied as they are (`-stream_loop -1 -c
    /// copy`), up to `frames`: each frame is still its own bytes in the file, read from
    /// storage, at a fraction of the encoding time (prores_ks takes about 0.7 s of CPU a UHD
    /// frame). `None` encodes every frame.
    pub distinct: Option<u64>,
}

/// The codecs a [`VideoClip`] is written in, with the encoder settings `cargo xtask fixtures`
/// uses for its full-size clips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoCodec {
    /// ProRes 422 in a `.mov` (prores_ks).
    ProRes(ProResProfile),
    /// H.264 long-GOP in an `.mp4` (libx264 veryfast, a GOP of 24, 2 B-frames).
    H264,
    /// DNxHR HQX in an `.mxf` (dnxhd).
    DnxhrHqx,
}

impl VideoCodec {
    /// The container: the file's extension and FFmpeg's muxer.
    pub fn container(self) -> &'static str {
        match self {
            VideoCodec::ProRes(_) => "mov",
            VideoCodec::H264 => "mp4",
            VideoCodec::DnxhrHqx => "mxf",
        }
    }

    /// The encoder's pixel format.
    fn pix_fmt(self) -> &'static str {
        match self {
            VideoCodec::ProRes(_) | VideoCodec::DnxhrHqx => "yuv422p10le",
            VideoCodec::H264 => "yuv420p",
        }
    }

    /// The encoder and its settings, as `-c:v ...` arguments.
    fn codec_args(self) -> Vec<String> {
        let args: &[&str] = match self {
            VideoCodec::ProRes(_) => &["-c:v", "prores_ks", "-profile:v"],
            VideoCodec::H264 => &["-c:v", "libx264", "-preset", "veryfast", "-g", "24", "-bf", "2"],
            VideoCodec::DnxhrHqx => &["-c:v", "dnxhd", "-profile:v", "dnxhr_hqx"],
        };
        let mut args: Vec<String> = args.iter().map(|&a| a.to_owned()).collect();
        if let VideoCodec::ProRes(profile) = self {
            args.push(profile.number().to_string());
        }
        args
    }
}

/// ProRes 422 flavours, by FFmpeg's `prores_ks` profile number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProResProfile {
    /// ProRes 422 Proxy.
    Proxy,
    /// ProRes 422 LT.
    Lt,
    /// ProRes 422.
    Standard,
    /// ProRes 422 HQ.
    Hq,
}

impl ProResProfile {
    /// Every profile, in `prores_ks`'s order.
    pub const ALL: [ProResProfile; 4] =
        [ProResProfile::Proxy, ProResProfile::Lt, ProResProfile::Standard, ProResProfile::Hq];

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            ProResProfile::Proxy => "proxy",
            ProResProfile::Lt => "lt",
            ProResProfile::Standard => "standard",
            ProResProfile::Hq => "hq",
        }
    }

    fn number(self) -> u8 {
        match self {
            ProResProfile::Proxy => 0,
            ProResProfile::Lt => 1,
            ProResProfile::Standard => 2,
            ProResProfile::Hq => 3,
        }
    }
}

impl FromStr for ProResProfile {
    type Err = String;

    /// A profile by its name, in any case.
    fn from_str(s: &str) -> Result<ProResProfile, String> {
        ProResProfile::ALL
            .into_iter()
            .find(|p| p.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("unknown ProRes profile '{s}' (for example standard; also proxy, lt, hq)"))
    }
}

impl VideoClip {
    /// The `ffmpeg` command lines that write the clip to `out`, joined by ` && `, as a person
    /// could run them.
    pub fn command(&self, out: &Path) -> String {
        let passes: Vec<String> = self
            .passes(out)
            .iter()
            .map(|args| {
                let args: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
                format!("ffmpeg {}", args.join(" "))
            })
            .collect();
        passes.join(" && ")
    }

    /// Writes the clip by running the `ffmpeg` command: first to `PATH.part` (and the
    /// distinct frames beside it), renamed to the clip's path once whole, so that an
    /// interrupted run leaves no clip that looks finished.
    pub fn write(&self) -> Result<(), Error> {
        let fail = |path: &Path, reason: String| Error::MakeClip { path: path.to_owned(), reason };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| fail(dir, format!("cannot create the directory: {e}")))?;
        }
        let mut part = self.path.clone().into_os_string();
        part.push(".part");
        let part = PathBuf::from(part);
        let short = self.distinct_part(&part).map(|(_, short)| short);
        let cleanup = || {
            let _ = fs::remove_file(&part);
            if let Some(short) = &short {
                let _ = fs::remove_file(short);
            }
        };
        for args in self.passes(&part) {
            let output = Command::new("ffmpeg").args(args).output().map_err(|e| {
                cleanup();
                fail(&self.path, format!("cannot run ffmpeg: {e}"))
            })?;
            if !output.status.success() {
                cleanup();
                let stderr = String::from_utf8_lossy(&output.stderr);
                return Err(fail(
                    &self.path,
                    format!("ffmpeg failed ({}): {}", output.status, stderr.trim()),
                ));
            }
        }
        if let Some(short) = &short {
            let _ = fs::remove_file(short);
        }
        fs::rename(&part, &self.path)
            .map_err(|e| fail(&self.path, format!("cannot rename {}: {e}", part.display())))
    }

    /// The clip's distinct frames, when fewer than its frames: the file they are encoded to
    /// first, beside `out`.
    fn distinct_part(&self, out: &Path) -> Option<(u64, PathBuf)> {
        let distinct = self.distinct.filter(|&d| d > 0 && d < self.frames)?;
        let mut short = out.as_os_str().to_owned();
        short.push(".distinct");
        Some((distinct, PathBuf::from(short)))
    }

    /// ffmpeg's arguments, a run each: the encode, and when the distinct frames are fewer,
    /// their copy repeated to the clip's length.
    fn passes(&self, out: &Path) -> Vec<Vec<String>> {
        let Some((distinct, short)) = self.distinct_part(out) else {
            return vec![self.ffmpeg_args(out, self.frames)];
        };
        let mut repeat: Vec<String> =
            ["-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-stream_loop", "-1", "-i"]
                .map(String::from)
                .to_vec();
        repeat.push(short.to_string_lossy().into_owned());
        repeat.extend(["-frames:v".to_owned(), self.frames.to_string()]);
        repeat.extend(["-c", "copy", "-f", self.codec.container()].map(String::from));
        repeat.push(out.to_string_lossy().into_owned());
        vec![self.ffmpeg_args(&short, distinct), repeat]
    }

    /// ffmpeg's arguments writing the clip to `out`: testsrc2 with changing grain, in the
    /// encoder's pixel format (the grain drawn on its 8-bit form: FFmpeg's noise filter works
    /// on 8-bit planes only), encoded as the codec says.
    fn ffmpeg_args(&self, out: &Path, frames: u64) -> Vec<String> {
        let (width, height) = self.preset.dimensions();
        let s = GRAIN_STRENGTH;
        let pix_fmt = self.codec.pix_fmt();
        let graph = format!(
            "testsrc2=size={width}x{height}:rate={}/{},format={},\
             noise=c0s={s}:c0f=t+u:c1s={s}:c1f=t+u:c2s={s}:c2f=t+u,format={pix_fmt}",
            self.rate.num(),
            self.rate.den(),
            pix_fmt.trim_end_matches("10le")
        );
        let mut args: Vec<String> =
            ["-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i"]
                .map(String::from)
                .to_vec();
        args.push(graph);
        args.extend(["-frames:v".to_owned(), frames.to_string(), "-an".to_owned()]);
        args.extend(self.codec.codec_args());
        args.extend(["-pix_fmt", pix_fmt, "-f", self.codec.container()].map(String::from));
        args.push(out.to_string_lossy().into_owned());
        args
    }
}

/// The first line of `ffmpeg -version`, or `None` when there is no ffmpeg command.
pub fn ffmpeg_command_version() -> Option<String> {
    let output = Command::new("ffmpeg").arg("-version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or("").to_owned())
}

/// `word` quoted for a POSIX shell when it needs to be, as commands shown to a person are.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=+,%".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_by_name_in_any_case() {
        for profile in ProResProfile::ALL {
            assert_eq!(profile.name().to_uppercase().parse(), Ok(profile));
        }
        let err = "ultra".parse::<ProResProfile>().unwrap_err();
        assert!(err.contains("'ultra'") && err.contains("for example standard"), "{err}");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
