//! `cargo xtask fixtures`: video test media written by the system `ffmpeg`, each frame's number burned in.
//!
//! Without `--tiny` it makes the full-size clips (UHD, hundreds of MB each) in `<target>/fixtures/video/`;
//! they are never committed. They carry grain, so that they cost to decode what real footage costs, and
//! each has a `.recipe` file beside it with the command that made it: a clip whose recipe has changed
//! since is made again. With `--tiny` it rewrites instead the small clips committed in `fixtures/video/`,
//! each with its `.framemd5` (FFmpeg's own decode, which tests compare against), plus `CHECKSUMS.sha256`
//! and `README.md`. Another FFmpeg may not encode byte for byte the same, so the tiny clips are remade
//! only on request.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::{deps, process, target_dir};

#[derive(Args)]
pub struct FixturesArgs {
    /// Frames in each full-size clip.
    #[arg(
        long,
        default_value_t = FULL_N_FRAMES,
        value_parser = clap::value_parser!(u32).range(1..),
        conflicts_with = "tiny"
    )]
    frames: u32,
    /// Encode the full-size clips even where they exist (a clip is otherwise kept when its `.recipe`
    /// file shows it was made by the same command, frame count included).
    #[arg(long, conflicts_with = "tiny")]
    force: bool,
    /// Rewrite the committed tiny clips in fixtures/video/ with their hashes, and make nothing else.
    #[arg(long)]
    tiny: bool,
}

/// Makes the full-size clips, or with `--tiny` the committed tiny ones.
pub fn run(args: FixturesArgs) -> Result<()> {
    deps::run()?;
    let font = font()?;
    if args.tiny {
        make_tiny(font)
    } else {
        make_full(font, args.frames, args.force).map(|_| ())
    }
}

/// Makes the full-size clips that are missing or were made by another recipe, with the default length,
/// as `cargo xtask fixtures` does; returns the directory that holds them.
pub fn ensure_full() -> Result<PathBuf> {
    make_full(font()?, FULL_N_FRAMES, false)
}

/// Every clip's frame rate: a rational one that is not a whole number, as in real deliveries.
const RATE: &str = "24000/1001";
/// Where the tiny clips are committed, relative to the project root.
const TINY_DIR: &str = "fixtures/video";
const TINY_N_FRAMES: u32 = 12;
/// Frames in each full-size clip unless `--frames` says otherwise: two seconds.
const FULL_N_FRAMES: u32 = 48;
/// Strength of the grain on the full-size clips (FFmpeg's noise filter, 0..100 on 8-bit values). It
/// brings ProRes 422 HQ UHD to about 3.8 MB a frame, near the 3.7 of real footage at its nominal
/// 707 Mb/s; testsrc2's flat colours alone make 1.2 MB, which decodes faster than real footage does.
const GRAIN_STRENGTH: u32 = 12;
const CHECKSUMS: &str = "CHECKSUMS.sha256";
/// The first font found is burned in. The committed md5s depend on it, so the order must not change.
const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
];

/// Which set of clips: full-size under target/, or tiny and committed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Set {
    Full,
    Tiny,
}

impl Set {
    /// The size's part of a file name, as in `h264-uhd.mp4`.
    fn name(self) -> &'static str {
        match self {
            Set::Full => "uhd",
            Set::Tiny => "tiny",
        }
    }

    /// Width and height. The dnxhd encoder refuses anything under 256x120 for DNxHR; 256x144 is 16:9 in
    /// whole 16x16 macroblocks.
    fn dims(self) -> (u32, u32) {
        match self {
            Set::Full => (3840, 2160),
            Set::Tiny => (256, 144),
        }
    }
}

/// One kind of clip: codec, container and pixel format, the same in both sets.
struct Clip {
    /// The file name before the size, as in `prores-422hq` (then `-uhd.mov`).
    stem: &'static str,
    /// The file extension, which is also the name of FFmpeg's muxer.
    container: &'static str,
    pix_fmt: &'static str,
    codec_args: &'static [&'static str],
    /// Added for the tiny clip only: a lower quality keeps the committed files small.
    tiny_args: &'static [&'static str],
    /// Added for the full-size clip only, to bring its data rate near a real file's.
    full_args: &'static [&'static str],
}

const CLIPS: [Clip; 4] = [
    Clip {
        stem: "prores-422hq",
        container: "mov",
        pix_fmt: "yuv422p10le",
        codec_args: &["-c:v", "prores_ks", "-profile:v", "3"],
        tiny_args: &["-qscale:v", "16"],
        full_args: &[],
    },
    Clip {
        stem: "prores-4444",
        container: "mov",
        pix_fmt: "yuva444p10le",
        codec_args: &["-c:v", "prores_ks", "-profile:v", "4"],
        tiny_args: &["-qscale:v", "16"],
        // prores_ks gives each macroblock 20 times its profile's bits when there is alpha, so a grainy
        // picture takes 23 MB a frame. 1425 bits, what it gives 4444 without alpha at this size,
        // makes 5.7 MB, near Apple's 1061 Mb/s for 4444 UHD at 23.976 (alpha extra).
        full_args: &["-bits_per_mb", "1425"],
    },
    Clip {
        stem: "h264",
        container: "mp4",
        pix_fmt: "yuv420p",
        codec_args: &["-c:v", "libx264", "-preset", "veryfast", "-g", "24", "-bf", "2"],
        tiny_args: &[],
        full_args: &[],
    },
    Clip {
        stem: "dnxhr-hqx",
        container: "mxf",
        pix_fmt: "yuv422p10le",
        codec_args: &["-c:v", "dnxhd", "-profile:v", "dnxhr_hqx"],
        tiny_args: &[],
        full_args: &[],
    },
];

impl Clip {
    fn file_name(&self, set: Set) -> String {
        format!("{}-{}.{}", self.stem, set.name(), self.container)
    }

    fn has_alpha(&self) -> bool {
        self.pix_fmt.starts_with("yuva")
    }
}

fn make_full(font: &str, n_frames: u32, force: bool) -> Result<PathBuf> {
    let dir = target_dir()?.join("fixtures").join("video");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let start = Instant::now();
    let mut made = Vec::new();
    for clip in &CLIPS {
        let path = dir.join(clip.file_name(Set::Full));
        let recipe_path = with_suffix(&path, ".recipe");
        let recipe = recipe(clip, n_frames, font);
        // An unreadable recipe is as good as none: the clip is made again, and writing the recipe
        // afterwards says why it cannot be read.
        let same_recipe = fs::read_to_string(&recipe_path).is_ok_and(|old| old == recipe);
        let exists = file_size(&path)?.is_some_and(|n_bytes| n_bytes > 0);
        let note = if exists && !force && same_recipe {
            println!("keeping {} (--force encodes it again)", path.display());
            "kept".to_owned()
        } else {
            if exists && !force {
                println!(
                    "{} does not match its recipe in {} (missing or different); encoding it again",
                    path.display(),
                    recipe_path.display()
                );
            }
            // The recipe is written only once the clip is in place, so it never names a clip not made yet.
            let elapsed = encode(clip, Set::Full, n_frames, font, &path)?;
            fs::write(&recipe_path, &recipe)
                .with_context(|| format!("cannot write {}", recipe_path.display()))?;
            let n_bytes = file_size(&path)?.unwrap_or(0);
            format!(
                "encoded in {:.1}s, {} a frame",
                elapsed.as_secs_f64(),
                human_size(n_bytes / u64::from(n_frames))
            )
        };
        made.push((path, note));
    }
    println!("fixtures: full-size clips in {} ({:.1}s):", dir.display(), start.elapsed().as_secs_f64());
    print_files(&made)?;
    Ok(dir)
}

/// The `.recipe` file of a full-size clip: the command that makes it, with the output named bare. A
/// clip is kept only while this is unchanged, so a change to the graph, the codec arguments or the
/// length makes it anew.
fn recipe(clip: &Clip, n_frames: u32, font: &str) -> String {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(encode_args(clip, Set::Full, n_frames, font)).arg(clip.file_name(Set::Full));
    format!("{}\n", process::display(&cmd))
}

fn make_tiny(font: &str) -> Result<()> {
    let dir = Path::new(TINY_DIR);
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let checksums_path = dir.join(CHECKSUMS);
    let old_checksums = match fs::read_to_string(&checksums_path) {
        Ok(text) => parse_checksums(&text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", checksums_path.display())),
    };

    let mut clip_paths = Vec::new();
    for clip in &CLIPS {
        let path = dir.join(clip.file_name(Set::Tiny));
        encode(clip, Set::Tiny, TINY_N_FRAMES, font, &path)?;
        let mut framemd5 = Command::new("ffmpeg");
        framemd5.args(["-hide_banner", "-i"]).arg(&path).args(["-f", "framemd5", "-"]);
        let output = process::run_capture(&mut framemd5)?;
        let md5_path = with_suffix(&path, ".framemd5");
        fs::write(&md5_path, &output.stdout)
            .with_context(|| format!("cannot write {}", md5_path.display()))?;
        clip_paths.push(path);
    }

    // sha256sum names files as given; the committed list names them bare, so that
    // `cd fixtures/video && sha256sum -c CHECKSUMS.sha256` checks them.
    let output = process::run_capture(Command::new("sha256sum").arg("--").args(&clip_paths))?;
    let checksums = bare_names(&String::from_utf8_lossy(&output.stdout))?;
    fs::write(&checksums_path, &checksums)
        .with_context(|| format!("cannot write {}", checksums_path.display()))?;
    let new_checksums = parse_checksums(&checksums);

    let version = process::read(Command::new("ffmpeg").arg("-version"))?;
    // Its first line, without the copyright that follows the version.
    let version = version.lines().next().and_then(|line| line.split(" Copyright").next());
    let version = version.unwrap_or("ffmpeg version unknown");
    let readme_path = dir.join("README.md");
    fs::write(&readme_path, readme(version, font))
        .with_context(|| format!("cannot write {}", readme_path.display()))?;

    let mut made = Vec::new();
    for path in clip_paths {
        let name = file_name(&path);
        let note = match (old_checksums.get(&name), new_checksums.get(&name)) {
            (None, _) => "new",
            (Some(old), Some(new)) if old == new => "unchanged",
            _ => "changed",
        };
        let md5_path = with_suffix(&path, ".framemd5");
        made.push((path, note.to_owned()));
        made.push((md5_path, String::new()));
    }
    made.push((checksums_path, String::new()));
    made.push((readme_path, String::new()));
    println!(
        "fixtures: tiny clips in {} (new, changed or unchanged against the old {CHECKSUMS}):",
        dir.display()
    );
    print_files(&made)
}

/// Encodes `clip` into `out` through a `.part` file, so that an interrupted run leaves no half clip
/// under the real name; returns how long the encode took.
fn encode(clip: &Clip, set: Set, n_frames: u32, font: &str, out: &Path) -> Result<Duration> {
    let part = with_suffix(out, ".part");
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-hide_banner", "-nostdin", "-loglevel", "warning", "-stats", "-y"])
        .args(encode_args(clip, set, n_frames, font))
        .arg(&part);
    let start = Instant::now();
    if let Err(err) = process::run(&mut cmd) {
        // A failed ffmpeg leaves an empty or truncated file; it is of no use, and the error says why.
        let _ = fs::remove_file(&part);
        return Err(err);
    }
    let elapsed = start.elapsed();
    if file_size(&part)?.unwrap_or(0) == 0 {
        bail!("ffmpeg succeeded but left no data in {}", part.display());
    }
    fs::rename(&part, out)
        .with_context(|| format!("cannot rename {} to {}", part.display(), out.display()))?;
    Ok(elapsed)
}

/// ffmpeg's arguments for `clip`, up to (not including) the output file.
fn encode_args(clip: &Clip, set: Set, n_frames: u32, font: &str) -> Vec<String> {
    let mut args: Vec<String> = vec!["-f".into(), "lavfi".into(), "-i".into(), source_graph(clip, set, font)];
    args.extend([
        "-frames:v".into(),
        n_frames.to_string(),
        "-an".into(),
        "-map_metadata".into(),
        "-1".into(),
    ]);
    args.extend(clip.codec_args.iter().map(|&arg| arg.to_owned()));
    args.extend(["-pix_fmt".into(), clip.pix_fmt.into()]);
    match set {
        Set::Full => args.extend(clip.full_args.iter().map(|&arg| arg.to_owned())),
        Set::Tiny => {
            args.extend(clip.tiny_args.iter().map(|&arg| arg.to_owned()));
            // x264 picks its thread count from the machine's cores and its bitstream depends on that
            // count, so only a fixed count gives the same bytes on another machine.
            args.extend(["-threads".into(), "1".into()]);
        }
    }
    // Bit-exact mode leaves out libavformat's and libavcodec's version strings, the creation time and
    // MXF's random UIDs, so that a rerun writes the same bytes (x264 still writes its own version).
    args.extend(["-fflags", "+bitexact", "-flags:v", "+bitexact", "-f", clip.container].map(String::from));
    args
}

/// The lavfi graph that draws the clip: testsrc2's moving pattern with the frame number large in the
/// middle. For alpha the background is half transparent and the drawings opaque, so the alpha plane
/// carries something. The graph ends in the encoder's pixel format so that lavfi draws in it: left to
/// itself the lavfi input hands ffmpeg yuv420p, which loses the alpha and half the 4:2:2 chroma.
///
/// The full-size clips get grain before the number is drawn, so that the number stays crisp. The
/// noise filter works on 8-bit planes only, so the pattern is drawn in the 8-bit form of the encoder's
/// layout (4:2:2 stays 4:2:2) and widened to 10 bits at the end. The grain changes every frame, as film
/// grain and sensor noise do, and leaves the alpha plane clean, as a matte is.
fn source_graph(clip: &Clip, set: Set, font: &str) -> String {
    let (width, height) = set.dims();
    let alpha = if clip.has_alpha() { ":alpha=128" } else { "" };
    let grain = match set {
        Set::Full => {
            let s = GRAIN_STRENGTH;
            format!(
                "format={},noise=c0s={s}:c0f=t+u:c1s={s}:c1f=t+u:c2s={s}:c2f=t+u,",
                clip.pix_fmt.trim_end_matches("10le")
            )
        }
        Set::Tiny => String::new(),
    };
    let font_size = height / 3;
    let border = (height / 48).max(1);
    format!(
        "testsrc2=size={width}x{height}:rate={RATE}{alpha},{grain}\
         drawtext=fontfile={font}:text=%{{frame_num}}:fontsize={font_size}:fontcolor=white:\
         borderw={border}:bordercolor=black:x=(w-text_w)/2:y=(h-text_h)/2,\
         format={}",
        clip.pix_fmt
    )
}

/// fixtures/video/README.md: how each committed file was made, one line each.
fn readme(ffmpeg_version: &str, font: &str) -> String {
    let (width, height) = Set::Tiny.dims();
    let mut text = format!(
        "# Tiny video fixtures\n\n\
         Written by `cargo xtask fixtures --tiny` (xtask/src/fixtures.rs) with `{ffmpeg_version}`; rerun it \
         rather than edit them. Each clip is {width}x{height} (DNxHR's smallest is 256x120), {RATE} fps, \
         {TINY_N_FRAMES} frames, no audio, with the frame number drawn in {font}. Another FFmpeg may encode \
         other bytes; the md5s are what tests compare.\n\n"
    );
    for clip in &CLIPS {
        let name = clip.file_name(Set::Tiny);
        let mut cmd = Command::new("ffmpeg");
        cmd.args(encode_args(clip, Set::Tiny, TINY_N_FRAMES, font)).arg(&name);
        let _ = writeln!(text, "- `{name}`: `{}`", process::display(&cmd));
    }
    let _ = writeln!(
        text,
        "- `NAME.framemd5`: `ffmpeg -hide_banner -i NAME -f framemd5 -` (the hash is the last column)"
    );
    let _ = writeln!(
        text,
        "- `{CHECKSUMS}`: `sha256sum` of the clips, checked by `sha256sum -c {CHECKSUMS}` in this directory"
    );
    text
}

/// The first of [`FONTS`] that is installed.
fn font() -> Result<&'static str> {
    FONTS.into_iter().find(|font| Path::new(font).is_file()).with_context(|| {
        format!("none of {} is installed (`cargo xtask deps` installs fonts-dejavu-core)", FONTS.join(", "))
    })
}

/// `sha256sum` output with each file named by its bare name.
fn bare_names(sha256sum_output: &str) -> Result<String> {
    let mut out = String::new();
    for line in sha256sum_output.lines() {
        let (hash, path) =
            line.split_once("  ").with_context(|| format!("unexpected sha256sum line `{line}`"))?;
        let _ = writeln!(out, "{hash}  {}", file_name(Path::new(path)));
    }
    Ok(out)
}

/// A sha256sum list as file name → hash.
fn parse_checksums(text: &str) -> BTreeMap<String, String> {
    let pairs = text.lines().filter_map(|line| line.split_once("  "));
    pairs.map(|(hash, name)| (name.to_owned(), hash.to_owned())).collect()
}

/// Prints each file with its size and a note.
fn print_files(files: &[(PathBuf, String)]) -> Result<()> {
    for (path, note) in files {
        let n_bytes = file_size(path)?.with_context(|| format!("{} is missing", path.display()))?;
        let line = format!("  {:<32} {:>10}  {note}", file_name(path), human_size(n_bytes));
        println!("{}", line.trim_end());
    }
    Ok(())
}

fn human_size(n_bytes: u64) -> String {
    let n = n_bytes as f64;
    match n_bytes {
        0..=9_999 => format!("{n_bytes} B"),
        10_000..=999_999 => format!("{:.1} kB", n / 1e3),
        _ => format!("{:.1} MB", n / 1e6),
    }
}

/// The size of the file at `path`, or `None` when there is none.
fn file_size(path: &Path) -> Result<Option<u64>> {
    match fs::metadata(path) {
        Ok(metadata) => Ok(Some(metadata.len())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot stat {}", path.display())),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |name| name.to_string_lossy().into_owned())
}

/// `path` with `suffix` added to its file name: `a.mov` → `a.mov.part`.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    path.with_file_name(format!("{}{suffix}", file_name(path)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: FixturesArgs,
    }

    #[test]
    fn cli_parses() {
        let cli = Cli::try_parse_from(["fixtures"]).unwrap();
        assert_eq!((cli.args.frames, cli.args.force, cli.args.tiny), (FULL_N_FRAMES, false, false));
        let cli = Cli::try_parse_from(["fixtures", "--frames", "5", "--force"]).unwrap();
        assert_eq!((cli.args.frames, cli.args.force), (5, true));
        assert!(Cli::try_parse_from(["fixtures", "--tiny"]).unwrap().args.tiny);
        assert!(Cli::try_parse_from(["fixtures", "--tiny", "--frames", "5"]).is_err());
        assert!(Cli::try_parse_from(["fixtures", "--tiny", "--force"]).is_err());
        assert!(Cli::try_parse_from(["fixtures", "--frames", "0"]).is_err());
    }

    #[test]
    fn file_names() {
        let names = |set| CLIPS.iter().map(|clip| clip.file_name(set)).collect::<Vec<_>>();
        assert_eq!(
            names(Set::Full),
            ["prores-422hq-uhd.mov", "prores-4444-uhd.mov", "h264-uhd.mp4", "dnxhr-hqx-uhd.mxf"]
        );
        assert_eq!(
            names(Set::Tiny),
            ["prores-422hq-tiny.mov", "prores-4444-tiny.mov", "h264-tiny.mp4", "dnxhr-hqx-tiny.mxf"]
        );
    }

    #[test]
    fn only_tiny_clips_are_single_threaded() {
        for clip in &CLIPS {
            let tiny = encode_args(clip, Set::Tiny, 12, FONTS[0]).join(" ");
            let full = encode_args(clip, Set::Full, 48, FONTS[0]).join(" ");
            assert!(tiny.contains("-threads 1") && !full.contains("-threads"), "{tiny} / {full}");
            assert!(tiny.contains("size=256x144") && full.contains("size=3840x2160"));
            assert!(full.contains("-frames:v 48 ") && full.ends_with(&format!("-f {}", clip.container)));
            assert!(full.contains(&format!("-pix_fmt {} ", clip.pix_fmt)));
        }
    }

    #[test]
    fn graph_draws_in_the_encoders_format_with_alpha_only_where_kept() {
        for clip in &CLIPS {
            let graph = source_graph(clip, Set::Tiny, FONTS[0]);
            assert!(graph.ends_with(&format!(",format={}", clip.pix_fmt)), "{graph}");
            assert_eq!(graph.contains(":alpha="), clip.pix_fmt == "yuva444p10le", "{graph}");
        }
    }

    #[test]
    fn only_full_clips_have_grain_which_spares_alpha() {
        for clip in &CLIPS {
            let tiny = source_graph(clip, Set::Tiny, FONTS[0]);
            let full = source_graph(clip, Set::Full, FONTS[0]);
            assert!(!tiny.contains("noise") && tiny.starts_with("testsrc2=size=256x144"), "{tiny}");
            // Grain before the number, in 8 bits of the encoder's layout, on no fourth (alpha) plane.
            let grain = full.find("noise=").unwrap();
            assert!(grain < full.find("drawtext=").unwrap(), "{full}");
            assert!(!full.contains("c3s") && !full.contains("alls"), "{full}");
            let eight_bit = full.split(",noise=").next().unwrap().rsplit("format=").next().unwrap();
            assert!(!eight_bit.contains("10") && clip.pix_fmt.starts_with(eight_bit), "{full}");
        }
    }

    #[test]
    fn a_recipe_changes_with_the_length_and_names_the_clip_bare() {
        let clip = &CLIPS[0];
        let recipe_48 = recipe(clip, 48, FONTS[0]);
        assert!(recipe_48.starts_with("ffmpeg -f lavfi -i 'testsrc2=size=3840x2160"), "{recipe_48}");
        assert!(recipe_48.ends_with(" prores-422hq-uhd.mov\n"), "{recipe_48}");
        assert_ne!(recipe_48, recipe(clip, 24, FONTS[0]));
    }

    #[test]
    fn checksums_name_files_bare() {
        let listed = bare_names("0123  fixtures/video/a.mov\nabcd  fixtures/video/b c.mp4\n").unwrap();
        assert_eq!(listed, "0123  a.mov\nabcd  b c.mp4\n");
        let parsed = parse_checksums(&listed);
        assert_eq!(parsed.get("b c.mp4").map(String::as_str), Some("abcd"));
        assert!(bare_names("no separator").is_err());
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(161_318), "161.3 kB");
        assert_eq!(human_size(312_400_000), "312.4 MB");
    }
}
