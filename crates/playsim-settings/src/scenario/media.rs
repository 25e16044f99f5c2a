//! A scenario's synthetic media: what `generate` writes, whether it is there already, and
//! writing it. DPX and EXR sequences come from playsim's own generator; ProRes clips (and, for
//! `playsim matrix`, H.264 and DNxHR HQX clips, [`VideoClip`]) from the `ffmpeg` command, as
//! `cargo xtask fixtures` makes its clips.
//!
//! A directory (or clip) playsim generated carries a recipe file beside the frames, so a
//! changed `generate` table makes the media again and a directory playsim did not make is
//! never written into.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use playsim_core::{FramePreset, FrameRate};
use playsim_media::GenerateOptions;

use super::ScenarioError;

/// The recipe file inside a generated sequence's directory (sequence discovery skips names
/// that start with a dot).
const RECIPE: &str = ".playsim-generate";
/// What the recipe says until the media is complete, so an interrupted run is redone.
const INCOMPLETE: &str = "incomplete\n";
/// Grain added to generated ProRes, as `cargo xtask fixtures` adds to its full-size clips, so
/// that a frame costs what real footage costs to decode.
const GRAIN_STRENGTH: u32 = 12;

/// Media a stream's `generate` table describes.
#[derive(Clone, Debug, PartialEq)]
pub enum Generate {
    /// A DPX or EXR sequence, written by [`playsim_media::generate_sequence`].
    Sequence(GenerateOptions),
    /// A ProRes clip, written by the `ffmpeg` command.
    ProRes(ProRes),
    /// A clip of any codec [`VideoCodec`] names, written by the `ffmpeg` command.
    Video(VideoClip),
}

/// A ProRes clip of synthetic pictures (FFmpeg's testsrc2 with grain).
#[derive(Clone, Debug, PartialEq)]
pub struct ProRes {
    /// The `.mov` file.
    pub path: PathBuf,
    /// Frame size (even width and height).
    pub preset: FramePreset,
    /// Frames in the clip.
    pub frames: u64,
    /// The clip's own frame rate.
    pub rate: FrameRate,
    /// The ProRes 422 flavour.
    pub profile: ProResProfile,
}

/// A clip of synthetic pictures (FFmpeg's testsrc2 with grain, as the ProRes clips) in any of
/// the codecs [`VideoCodec`] names.
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

/// Whether a stream's media is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MediaState {
    /// Present (generated by this recipe, or a local path that exists).
    Present,
    /// Missing or made by another recipe: it will be generated (the reason says which).
    WillGenerate(String),
    /// Cannot be played here as things stand; the reason says what to do.
    Missing(String),
    /// A URL: checked when the run starts.
    Remote,
}

impl Generate {
    /// The media's path: the sequence's directory or the clip.
    pub fn path(&self) -> &Path {
        match self {
            Generate::Sequence(options) => &options.dir,
            Generate::ProRes(clip) => &clip.path,
            Generate::Video(clip) => &clip.path,
        }
    }

    /// What makes the media, as a command a person could run.
    pub fn recipe(&self) -> String {
        self.command(self.path())
    }

    /// The recipe file's content: the command run from the media's own directory, so that the
    /// media is still recognised when the tree it is in moves.
    fn recipe_in_place(&self) -> String {
        match self {
            Generate::Sequence(_) => self.command(Path::new(".")),
            Generate::ProRes(_) | Generate::Video(_) => {
                self.command(Path::new(self.path().file_name().unwrap_or_default()))
            }
        }
    }

    /// The command that writes the media to `path`.
    fn command(&self, path: &Path) -> String {
        match self {
            Generate::Sequence(o) => {
                let mut command = format!(
                    "playsim generate {} --preset {} --frames {} --format {}",
                    shell_word(&path.to_string_lossy()),
                    o.preset,
                    o.n_frames,
                    o.format.name()
                );
                // Each writer option is the flag of the same name; those at their default are
                // left out unless the writer names them always (so recipes keep their text).
                let writer = o.format.writer();
                for (key, value) in o.format.settings() {
                    let Some(option) = writer.option(key) else { continue };
                    if option.always_in_command || value != option.default {
                        command.push_str(&format!(" --{} {value}", key.replace('_', "-")));
                    }
                }
                if o.alpha && !writer.rgba_by_default {
                    command.push_str(" --alpha");
                }
                command
            }
            Generate::ProRes(clip) => clip.clip().command(path),
            Generate::Video(clip) => clip.command(path),
        }
    }

    /// Bytes the media takes, when that can be known before writing it (uncompressed DPX).
    pub fn estimated_bytes(&self) -> Option<u64> {
        let Generate::Sequence(o) = self else { return None };
        let file_bytes = o.format.encoder().file_bytes(o.preset.dimensions(), o.alpha)?;
        Some(file_bytes * o.n_frames)
    }

    /// Whether the media is there, made by this recipe.
    pub fn state(&self) -> MediaState {
        match self {
            Generate::Sequence(o) => sequence_state(o, &self.recipe_in_place()),
            Generate::ProRes(clip) => clip.clip().state(&self.recipe_in_place(), &self.recipe()),
            Generate::Video(clip) => clip.state(&self.recipe_in_place(), &self.recipe()),
        }
    }

    /// Writes the media unless it is there already; `log` hears what is done.
    pub fn ensure(&self, log: &mut dyn FnMut(&str)) -> Result<(), ScenarioError> {
        let recipe = self.recipe();
        match self.state() {
            MediaState::Present | MediaState::Remote => return Ok(()),
            MediaState::Missing(why) => return Err(ScenarioError::whole(self.path(), why)),
            MediaState::WillGenerate(why) => {
                log(&format!("generating {} ({why}): {recipe}", self.path().display()))
            }
        }
        let in_place = self.recipe_in_place();
        match self {
            Generate::Sequence(o) => write_sequence(o, &in_place),
            Generate::ProRes(clip) => clip.clip().write(&in_place, &recipe),
            Generate::Video(clip) => clip.write(&in_place, &recipe),
        }
    }
}

fn sequence_state(o: &GenerateOptions, recipe: &str) -> MediaState {
    let dir = &o.dir;
    if !dir.exists() {
        return MediaState::WillGenerate("missing".into());
    }
    if !dir.is_dir() {
        return MediaState::Missing(format!(
            "{} is not a directory: point source at a directory for generate to write into",
            dir.display()
        ));
    }
    match fs::read_to_string(dir.join(RECIPE)) {
        Ok(old) if old == recipe_text(recipe) => {
            let last = o.start_frame + o.n_frames;
            match (o.start_frame..last).find(|&f| !o.path_for(f).is_file()) {
                None => MediaState::Present,
                Some(f) => MediaState::WillGenerate(format!("frame {f} is missing")),
            }
        }
        Ok(old) if old == INCOMPLETE => MediaState::WillGenerate("an earlier generate did not finish".into()),
        Ok(_) => MediaState::WillGenerate("made by another generate table".into()),
        Err(_) => match fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
            Ok(true) => MediaState::WillGenerate("empty".into()),
            _ => MediaState::Missing(format!(
                "{} holds files playsim's generate did not write: give generate a new directory, \
                 or remove generate to play what is there",
                dir.display()
            )),
        },
    }
}

fn recipe_text(recipe: &str) -> String {
    format!("{recipe}\n")
}

fn write_sequence(o: &GenerateOptions, recipe: &str) -> Result<(), ScenarioError> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        ScenarioError::whole(path, format!("cannot {what}: {e}"))
    };
    fs::create_dir_all(&o.dir).map_err(|e| io("create the directory", &o.dir, e))?;
    let recipe_path = o.dir.join(RECIPE);
    fs::write(&recipe_path, INCOMPLETE).map_err(|e| io("write the recipe", &recipe_path, e))?;
    // Frames an earlier recipe wrote would join the new sequence: remove them first. The
    // recipe file says this directory is playsim's, so nothing else is in it.
    let entries = fs::read_dir(&o.dir).map_err(|e| io("list the directory", &o.dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&format!("{}.", o.name)) && (name.ends_with(".dpx") || name.ends_with(".exr")) {
            fs::remove_file(entry.path()).map_err(|e| io("remove an old frame", &entry.path(), e))?;
        }
    }
    playsim_media::generate_sequence(o, |_| {})
        .map_err(|e| ScenarioError::whole(&o.dir, format!("generating the sequence failed: {e}")))?;
    fs::write(&recipe_path, recipe_text(recipe)).map_err(|e| io("write the recipe", &recipe_path, e))
}

impl ProRes {
    /// The clip as a [`VideoClip`] of ProRes, which writes it.
    pub fn clip(&self) -> VideoClip {
        VideoClip {
            path: self.path.clone(),
            preset: self.preset,
            frames: self.frames,
            rate: self.rate,
            codec: VideoCodec::ProRes(self.profile),
            distinct: None,
        }
    }
}

impl VideoClip {
    /// The command that writes the clip to `out`.
    fn command(&self, out: &Path) -> String {
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

    /// The recipe file beside the clip: `.NAME.playsim-generate`.
    fn recipe_path(&self) -> PathBuf {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.path.with_file_name(format!(".{name}{RECIPE}"))
    }

    /// `in_place` identifies the clip in its recipe file; `recipe` is the command shown.
    fn state(&self, in_place: &str, recipe: &str) -> MediaState {
        if !self.path.exists() {
            return match ffmpeg_version() {
                Some(_) => MediaState::WillGenerate("missing".into()),
                None => MediaState::Missing(format!(
                    "missing, and generating it needs the ffmpeg command (apt-get install ffmpeg); \
                     or make it elsewhere with: {recipe}"
                )),
            };
        }
        match fs::read_to_string(self.recipe_path()) {
            Ok(old) if old == recipe_text(in_place) => MediaState::Present,
            Ok(_) if ffmpeg_version().is_none() => MediaState::Missing(format!(
                "made by another generate table, and remaking it needs the ffmpeg command; or run: {recipe}"
            )),
            Ok(_) => MediaState::WillGenerate("made by another generate table".into()),
            Err(_) => MediaState::Missing(format!(
                "{} exists and playsim's generate did not write it: give generate another file name, \
                 or remove generate to play it as it is",
                self.path.display()
            )),
        }
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

    fn write(&self, in_place: &str, recipe: &str) -> Result<(), ScenarioError> {
        if ffmpeg_version().is_none() {
            return Err(ScenarioError::whole(
                &self.path,
                format!("generating it needs the ffmpeg command (apt-get install ffmpeg); or run: {recipe}"),
            ));
        }
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)
                .map_err(|e| ScenarioError::whole(dir, format!("cannot create the directory: {e}")))?;
        }
        let recipe_path = self.recipe_path();
        let _ = fs::remove_file(&recipe_path);
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
                ScenarioError::whole(&self.path, format!("cannot run ffmpeg: {e}"))
            })?;
            if !output.status.success() {
                cleanup();
                let stderr = String::from_utf8_lossy(&output.stderr);
                return Err(ScenarioError::whole(
                    &self.path,
                    format!("ffmpeg failed ({}): {}", output.status, stderr.trim()),
                ));
            }
        }
        if let Some(short) = &short {
            let _ = fs::remove_file(short);
        }
        fs::rename(&part, &self.path).map_err(|e| {
            ScenarioError::whole(&self.path, format!("cannot rename {}: {e}", part.display()))
        })?;
        fs::write(&recipe_path, recipe_text(in_place))
            .map_err(|e| ScenarioError::whole(&recipe_path, format!("cannot write the recipe: {e}")))
    }
}

/// The first line of `ffmpeg -version`, or `None` when there is no ffmpeg command.
pub fn ffmpeg_version() -> Option<String> {
    let output = Command::new("ffmpeg").arg("-version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or("").to_owned())
}

/// `word` quoted for a POSIX shell when it needs to be.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=+,%".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hd(dir: &Path, frames: u64) -> Generate {
        Generate::Sequence(GenerateOptions {
            threads: 1,
            ..GenerateOptions::new(dir, FramePreset::Custom { width: 64, height: 16 }, frames)
        })
    }

    #[test]
    fn a_sequence_is_made_once_and_again_when_its_recipe_changes() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("seq");
        let two = hd(&dir, 2);
        assert_eq!(two.state(), MediaState::WillGenerate("missing".into()));
        let mut heard = Vec::new();
        two.ensure(&mut |line| heard.push(line.to_owned())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(heard.len(), 1);
        assert!(heard[0].contains("playsim generate"), "{heard:?}");
        assert_eq!(two.state(), MediaState::Present);
        two.ensure(&mut |_| panic!("made again")).unwrap_or_else(|e| panic!("{e}"));
        // The tree it is in moves: it is still the same media.
        let moved = tmp.path().join("moved");
        fs::rename(&dir, &moved).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(hd(&moved, 2).state(), MediaState::Present);
        fs::rename(&moved, &dir).unwrap_or_else(|e| panic!("{e}"));
        // Fewer frames: the old third frame must not stay in the directory.
        let three = hd(&dir, 3);
        three.ensure(&mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let one = hd(&dir, 1);
        assert_eq!(one.state(), MediaState::WillGenerate("made by another generate table".into()));
        one.ensure(&mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let frames = fs::read_dir(&dir)
            .map(|d| d.flatten().filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count());
        assert_eq!(frames.ok(), Some(1));
    }

    #[test]
    fn a_directory_playsim_did_not_make_is_not_written_into() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        fs::write(tmp.path().join("precious.dpx"), b"mine").unwrap_or_else(|e| panic!("{e}"));
        let g = hd(tmp.path(), 2);
        assert!(matches!(g.state(), MediaState::Missing(why) if why.contains("did not write")));
        assert!(g.ensure(&mut |_| {}).is_err());
        assert_eq!(fs::read(tmp.path().join("precious.dpx")).ok().as_deref(), Some(&b"mine"[..]));
    }

    #[test]
    fn sizes_and_recipes() {
        let g = Generate::Sequence(GenerateOptions::new("m", FramePreset::Dci4k, 10));
        assert_eq!(g.estimated_bytes(), Some((4096 * 4 * 2160 + 2048) * 10));
        let clip = Generate::ProRes(ProRes {
            path: "media/hd 30.mov".into(),
            preset: FramePreset::Hd,
            frames: 300,
            rate: FrameRate::new(30, 1).unwrap_or(FrameRate::FILM),
            profile: ProResProfile::Standard,
        });
        let recipe = clip.recipe();
        assert!(recipe.starts_with("ffmpeg -hide_banner"), "{recipe}");
        assert!(recipe.contains("testsrc2=size=1920x1080:rate=30/1"), "{recipe}");
        assert!(recipe.contains("-profile:v 2") && recipe.ends_with(" 'media/hd 30.mov'"), "{recipe}");
        assert_eq!(clip.estimated_bytes(), None);
        let Generate::ProRes(prores) = &clip else { unreachable!() };
        let h264 =
            Generate::Video(VideoClip { codec: VideoCodec::H264, path: "m/h.mp4".into(), ..prores.clip() });
        let recipe = h264.recipe();
        assert!(recipe.contains(",format=yuv420p,noise=") && recipe.contains("noise=c0s=12"), "{recipe}");
        assert!(
            recipe.contains("-c:v libx264 -preset veryfast -g 24 -bf 2 -pix_fmt yuv420p -f mp4 m/h.mp4"),
            "{recipe}"
        );
        let dnxhr =
            Generate::Video(VideoClip { codec: VideoCodec::DnxhrHqx, distinct: Some(24), ..prores.clip() });
        let recipe = dnxhr.recipe();
        assert!(
            recipe.contains("-frames:v 24 -an -c:v dnxhd -profile:v dnxhr_hqx -pix_fmt yuv422p10le -f mxf 'media/hd 30.mov.distinct' && ffmpeg ")
                && recipe.ends_with("-stream_loop -1 -i 'media/hd 30.mov.distinct' -frames:v 300 -c copy -f mxf 'media/hd 30.mov'"),
            "{recipe}"
        );
    }
}
