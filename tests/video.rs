//! Video files FFmpeg wrote, end to end: decode against FFmpeg's framemd5, playback at a
//! clip's own rate, mixes with image sequences, and damaged, truncated or unsupported files.
//!
//! The clips are the tiny committed fixtures in `fixtures/video/` (256x144, 12 frames at
//! 24000/1001, see its README). Their hashes are checked twice: against the committed
//! `.framemd5` files and against the ffmpeg CLI installed now, so a different FFmpeg shows.
//! Damaged copies are made in a temporary directory; nothing here is mocked.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use playsim::report::{Drops, Report, RunStatus};

use crate::util::{ffmpeg, generate, playsim, read_report, run, Run, SMALL_PRESET};

/// A committed clip and what decoding and playing it must give.
struct Clip {
    file: &'static str,
    /// The pixel format FFmpeg 5.1 decodes it to.
    pixel_format: &'static str,
    /// The report's `decode_mode`.
    decode_mode: &'static str,
    /// How the report's `index` line may say the packet index was built (one of these).
    index: &'static [&'static str],
}

const CLIPS: [Clip; 4] = [
    Clip {
        file: "prores-422hq-tiny.mov",
        pixel_format: "yuv422p10le",
        decode_mode: "independent",
        index: &["container's tables"],
    },
    // FFmpeg 5.1 decodes ProRes 4444 at 12 bits, whatever depth it was encoded from.
    Clip {
        file: "prores-4444-tiny.mov",
        pixel_format: "yuva444p12le",
        decode_mode: "independent",
        index: &["container's tables"],
    },
    Clip {
        file: "h264-tiny.mp4",
        pixel_format: "yuv420p",
        decode_mode: "in_order",
        index: &["container's tables"],
    },
    Clip {
        file: "dnxhr-hqx-tiny.mxf",
        pixel_format: "yuv422p10le",
        decode_mode: "independent",
        // FFmpeg's MXF demuxer keeps the index table segments to itself; playsim reads them.
        index: &["container's tables"],
    },
];

/// Frames in each committed clip.
const N_FRAMES: u64 = 12;
/// The committed clips' rate.
const CLIP_RATE: &str = "24000/1001";

/// The ProRes clip the damage tests copy.
const PRORES: &str = "prores-422hq-tiny.mov";
/// The frames the corrupt-packet test damages.
const CORRUPT: [u64; 2] = [3, 7];

/// `playsim decode --md5` of each clip gives the committed framemd5 and the live ffmpeg's.
#[test]
fn decode_md5_matches_committed_and_live_framemd5() -> Result<()> {
    let mut failures = Vec::new();
    for clip in &CLIPS {
        let path = clip_path(clip.file);
        let committed = committed_md5s(clip.file)?;
        ensure!(committed.len() == N_FRAMES as usize, "{}.framemd5 has {committed:?}", clip.file);
        let live = framemd5_hashes(&ffmpeg(&["-i", path_str(&path)?, "-f", "framemd5", "-"])?);
        if live != committed {
            failures.push(format!(
                "{}: the installed ffmpeg's framemd5 differs from the committed one (another FFmpeg \
                 version?)\nlive      {live:?}\ncommitted {committed:?}",
                clip.file
            ));
        }

        let done = run(playsim().arg("decode").arg(&path).arg("--md5"))?;
        done.ensure_code(0).with_context(|| format!("decode --md5 of {}", clip.file))?;
        let lines = decode_lines(&done)?;
        let numbers: Vec<u64> = lines.iter().map(|l| l.frame).collect();
        let md5s: Vec<&str> = lines.iter().map(|l| l.md5.as_str()).collect();
        let expected_numbers: Vec<u64> = (0..N_FRAMES).collect();
        if numbers != expected_numbers || md5s != committed {
            failures.push(format!("{}: expected framemd5 {committed:?}\n{done}", clip.file));
        }
        let odd: Vec<&DecodeLine> =
            lines.iter().filter(|l| l.format != clip.pixel_format || l.size != "256x144").collect();
        if !odd.is_empty() {
            failures
                .push(format!("{}: expected {} 256x144 on every line\n{done}", clip.file, clip.pixel_format));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// With no `--fps` each clip plays at its own rate, every frame on time, through v210 from its planes.
#[test]
fn clips_play_at_their_own_rate() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let mut failures = Vec::new();
    for clip in &CLIPS {
        let json = tmp.path().join(format!("{}.json", clip.file));
        let (done, report) = play(&[clip_path(clip.file)], &[], &json)?;
        done.ensure_code(0).with_context(|| clip.file)?;
        if let Err(e) = check_own_rate(clip, &report) {
            failures.push(format!("{}: {e:#}\n{done}", clip.file));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

fn check_own_rate(clip: &Clip, report: &Report) -> Result<()> {
    ensure!(report.status == RunStatus::Complete, "status {:?} {:?}", report.status, report.error);
    ensure!(report.streams.len() == 1, "{} streams", report.streams.len());
    let stream = &report.streams[0];
    let source = &stream.source;
    ensure!(stream.fps == CLIP_RATE, "stream fps {:?}", stream.fps);
    ensure!(source.frame_rate.as_deref() == Some(CLIP_RATE), "frame_rate {:?}", source.frame_rate);
    ensure!(source.decode_mode == clip.decode_mode, "decode_mode {:?}", source.decode_mode);
    ensure!(source.pixel_format == clip.pixel_format, "pixel_format {:?}", source.pixel_format);
    let index = source.index.as_deref().unwrap_or_default();
    ensure!(
        clip.index.iter().any(|how| index.contains(how)),
        "index {index:?} should say one of {:?}",
        clip.index
    );
    ensure!(source.output_path.contains("no RGB detour"), "output_path {:?}", source.output_path);
    ensure!(
        source.output_path.contains(clip.pixel_format),
        "output_path {:?} should name {}",
        source.output_path,
        clip.pixel_format
    );
    ensure!(source.n_frames == N_FRAMES, "n_frames {}", source.n_frames);
    ensure!(stream.presented == N_FRAMES, "presented {}", stream.presented);
    ensure!(stream.dropped == Drops::default(), "drops {:?}", stream.dropped);
    ensure!(stream.timeline.len() == N_FRAMES as usize, "timeline of {}", stream.timeline.len());
    // Frame i falls due i * 1001/24000 s after t0: the clip's rate, not the default 24.
    for (i, record) in stream.timeline.iter().enumerate() {
        let due = record.due_ns.saturating_sub(stream.t0_ns);
        let expected = i as u64 * 1001 * 1_000_000_000 / 24_000;
        ensure!(due.abs_diff(expected) <= 1, "frame {i} due at +{due} ns, expected +{expected} ns");
    }
    Ok(())
}

/// `--fps 25` overrides a clip's own rate.
#[test]
fn fps_overrides_the_clip_rate() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("r.json");
    let n_frames = 6;
    let (done, report) =
        play(&[clip_path(PRORES)], &["--fps", "25", "--frames", &n_frames.to_string()], &json)?;
    done.ensure_code(0)?;
    ensure!(report.settings.fps == "25", "settings.fps {:?}", report.settings.fps);
    let stream = report.streams.first().context("no stream in the report")?;
    ensure!(stream.fps == "25", "stream fps {:?}:\n{done}", stream.fps);
    ensure!(
        stream.source.frame_rate.as_deref() == Some(CLIP_RATE),
        "the clip's own rate should still be reported: {:?}",
        stream.source.frame_rate
    );
    ensure!(stream.presented == n_frames, "presented {}:\n{done}", stream.presented);
    let dues: Vec<u64> = stream.timeline.iter().map(|r| r.due_ns - stream.t0_ns).collect();
    let expected: Vec<u64> = (0..n_frames).map(|i| i * 40_000_000).collect();
    ensure!(dues == expected, "due times {dues:?}, expected every 40 ms");
    Ok(())
}

/// ProRes, H.264 and a DPX sequence, two streams each, on one clock.
#[test]
fn video_and_dpx_sources_mix_across_streams() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, N_FRAMES, &[])?;
    let json = tmp.path().join("r.json");
    let sources = [clip_path(PRORES), clip_path("h264-tiny.mp4"), seq];
    let (done, report) =
        play(&sources, &["--streams", "2", "--fps", "max", "--frames", &N_FRAMES.to_string()], &json)?;
    done.ensure_code(0)?;
    ensure!(report.status == RunStatus::Complete, "status {:?}:\n{done}", report.status);
    let seen: Vec<(&str, &str, u64)> = report
        .streams
        .iter()
        .map(|s| (s.source.format.as_str(), s.source.decode_mode.as_str(), s.presented))
        .collect();
    let expected = [
        ("mov/prores", "independent", N_FRAMES),
        ("mov/prores", "independent", N_FRAMES),
        ("mov/h264", "in_order", N_FRAMES),
        ("mov/h264", "in_order", N_FRAMES),
        ("dpx", "independent", N_FRAMES),
        ("dpx", "independent", N_FRAMES),
    ];
    ensure!(seen == expected, "streams (format, decode mode, presented) {seen:?}:\n{done}");
    ensure!(report.totals.dropped == Drops::default(), "drops {:?}:\n{done}", report.totals.dropped);
    ensure!(report.totals.presented == 6 * N_FRAMES, "presented {}", report.totals.presented);
    Ok(())
}

/// Two clips at different rates need `--fps`; the refusal names both rates and shows one.
#[test]
fn sources_at_different_rates_need_fps() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let clip_25 = tmp.path().join("pal.mov");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=s=256x144:r=25",
        "-frames:v",
        "6",
        "-c:v",
        "prores_ks",
        path_str(&clip_25)?,
    ])?;
    let sources = [clip_path(PRORES), clip_25];
    let json = tmp.path().join("refused.json");
    let (done, report) = play(&sources, &[], &json)?;
    done.ensure_code(1)?;
    let error = report.error.as_deref().unwrap_or_default();
    ensure!(report.status == RunStatus::Failed, "status {:?}", report.status);
    for text in [done.stderr.as_str(), error] {
        // Without the paths, which could hold any digits.
        let mut text = text.to_owned();
        for source in &sources {
            text = text.replace(path_str(source)?, "");
        }
        ensure!(
            text.contains(CLIP_RATE) && text.contains("25") && text.contains("--fps"),
            "the refusal should name 24000/1001 and 25 and point at --fps: {text:?}"
        );
        ensure!(text.contains("for example --fps "), "the refusal should show an example: {text:?}");
    }

    let json = tmp.path().join("max.json");
    let (done, report) = play(&sources, &["--fps", "max", "--frames", "6"], &json)?;
    done.ensure_code(0).context("with --fps the pair should play")?;
    let presented: Vec<u64> = report.streams.iter().map(|s| s.presented).collect();
    ensure!(presented == [6, 6], "presented per stream {presented:?}");
    let rates: Vec<Option<&str>> = report.streams.iter().map(|s| s.source.frame_rate.as_deref()).collect();
    ensure!(
        rates[0] == Some(CLIP_RATE) && rates[1].is_some_and(|r| r.starts_with("25")),
        "own rates {rates:?}"
    );
    Ok(())
}

/// A .mov cut in half has no 'moov' (FFmpeg writes it last): an error naming the file.
#[test]
fn truncated_mov_without_moov_fails_with_a_report() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let path = tmp.path().join("truncated.mov");
    let bytes = std::fs::read(clip_path(PRORES))?;
    let (moov, _) = top_level_box(&bytes, b"moov")?;
    let half = bytes.len() / 2;
    ensure!(moov > half, "the fixture's moov is at {moov}, not in the half cut off");
    std::fs::write(&path, &bytes[..half])?;
    ensure_refused(tmp.path(), &path, &["moov"])
}

/// Two packets overwritten with garbage: exactly those frames are unreadable, the rest play.
///
/// Frame 3 loses its frame header, so FFmpeg's ProRes decoder refuses the packet. Frame 7
/// keeps its header but gets garbage in its slice data, which the decoder decodes as best
/// it can, flagging the picture as damaged: unreadable too, not a good frame.
#[test]
fn corrupt_packets_are_unreadable_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let path = tmp.path().join("corrupt.mov");
    let mut bytes = std::fs::read(clip_path(PRORES))?;
    let packets = packet_ranges(&clip_path(PRORES))?;
    ensure!(packets.len() == N_FRAMES as usize, "ffprobe found packets {packets:?}");
    let mut seed = 0x5eed_u64;
    for frame in CORRUPT {
        let (pos, size) = packets[frame as usize];
        let packet = bytes.get_mut(pos..pos + size).context("ffprobe's packet is past the end")?;
        ensure!(&packet[4..8] == b"icpf", "packet {frame} at {pos} is not a ProRes frame");
        if frame == CORRUPT[0] {
            garble(&mut packet[..64], &mut seed);
        }
        garble(&mut packet[size / 4..size * 3 / 4], &mut seed);
    }
    std::fs::write(&path, &bytes)?;
    let name = path_str(&path)?;

    let json = tmp.path().join("r.json");
    let (done, report) = play(std::slice::from_ref(&path), &["--fps", "max"], &json)?;
    done.ensure_code(0)?;
    ensure!(report.status == RunStatus::Complete, "status {:?}:\n{done}", report.status);
    let stream = report.streams.first().context("no stream in the report")?;
    let n_bad = CORRUPT.len() as u64;
    ensure!(
        stream.dropped == Drops { unreadable: n_bad, ..Drops::default() },
        "drops {:?}:\n{done}",
        stream.dropped
    );
    ensure!(stream.presented == N_FRAMES - n_bad, "presented {}:\n{done}", stream.presented);
    let listed: Vec<(u64, u64)> = stream.unreadable.iter().map(|u| (u.frame_idx, u.frame_number)).collect();
    ensure!(listed == CORRUPT.map(|f| (f, f)), "unreadable (index, number) {listed:?}");
    for (u, frame) in stream.unreadable.iter().zip(CORRUPT) {
        ensure!(
            u.message.contains(&format!("frame {frame} (index {frame})")) && u.message.contains(name),
            "message should name frame {frame} and {name}: {:?}",
            u.message
        );
        ensure!(u.path == name, "path {:?} is not {name}", u.path);
    }
    let details: Vec<&str> = stream.unreadable.iter().map(|u| u.message.as_str()).collect();
    ensure!(details[0].contains("Invalid data found"), "frame {}: {:?}", CORRUPT[0], details[0]);
    ensure!(details[1].contains("damaged picture"), "frame {}: {:?}", CORRUPT[1], details[1]);
    for record in &stream.timeline {
        let bad = CORRUPT.contains(&record.frame_number);
        ensure!(record.presented_ns.is_some() != bad, "timeline record {record:?}");
    }

    // decode --md5: the good frames hash as before, the bad ones are named, and it fails.
    let done = run(playsim().arg("decode").arg(&path).arg("--md5"))?;
    done.ensure_code(1)?;
    let committed = committed_md5s(PRORES)?;
    let expected: Vec<(u64, &str)> =
        (0..N_FRAMES).filter(|f| !CORRUPT.contains(f)).map(|f| (f, committed[f as usize].as_str())).collect();
    let lines = decode_lines(&done)?;
    let hashed: Vec<(u64, &str)> = lines.iter().map(|l| (l.frame, l.md5.as_str())).collect();
    ensure!(hashed == expected, "decode --md5 of the good frames:\n{done}");
    for frame in CORRUPT {
        let prefix = format!("unreadable: frame {frame} (index {frame}) in {name}");
        ensure!(done.stderr.lines().any(|l| l.starts_with(&prefix)), "stderr should say {prefix:?}:\n{done}");
    }
    Ok(())
}

/// An unknown fourcc in the sample description: "unsupported codec", naming the file and tag.
#[test]
fn unknown_codec_tag_is_unsupported() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let path = tmp.path().join("zzzz.mov");
    let mut bytes = std::fs::read(clip_path(PRORES))?;
    // The one sample description box is in moov: its size and type, version and flags,
    // entry count, then the first entry's size and format (the fourcc).
    let (moov, moov_size) = top_level_box(&bytes, b"moov")?;
    let moov_bytes = bytes.get(moov..moov + moov_size).context("moov runs past the end")?;
    let stsd = moov_bytes.windows(4).position(|w| w == b"stsd").context("no 'stsd' box in moov")?;
    let tag = moov + stsd + 16;
    ensure!(bytes.get(tag..tag + 4) == Some(&b"apch"[..]), "no 'apch' sample description at {tag}");
    bytes[tag..tag + 4].copy_from_slice(b"zzzz");
    std::fs::write(&path, &bytes)?;
    ensure_refused(tmp.path(), &path, &["unsupported codec", "zzzz"])
}

/// A file with only audio: "no video stream".
#[test]
fn audio_only_file_has_no_video_stream() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let path = tmp.path().join("audio.mov");
    ffmpeg(&["-f", "lavfi", "-i", "sine=d=1", "-c:a", "pcm_s16le", path_str(&path)?])?;
    ensure_refused(tmp.path(), &path, &["no video stream"])
}

/// A video file that is not there: an error naming it.
#[test]
fn missing_video_file_fails_with_a_report() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    ensure_refused(tmp.path(), &tmp.path().join("no-such-clip.mov"), &[])
}

/// The path of a committed clip.
fn clip_path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/video").join(file)
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().with_context(|| format!("{} is not utf-8", path.display()))
}

/// The hash column of `ffmpeg -f framemd5` output.
fn framemd5_hashes(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit(',').next())
        .map(|h| h.trim().to_owned())
        .collect()
}

/// The hash column of a clip's committed `.framemd5`.
fn committed_md5s(file: &str) -> Result<Vec<String>> {
    let path = clip_path(&format!("{file}.framemd5"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(framemd5_hashes(&text))
}

/// One line of `playsim decode --md5`: `FRAME FORMAT WxH MD5`.
#[derive(Debug)]
struct DecodeLine {
    frame: u64,
    format: String,
    size: String,
    md5: String,
}

fn decode_lines(done: &Run) -> Result<Vec<DecodeLine>> {
    done.stdout
        .lines()
        .map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [frame, format, size, md5] if md5.len() == 32 => Ok(DecodeLine {
                frame: frame.parse().with_context(|| format!("frame number in {line:?}"))?,
                format: format.to_owned(),
                size: size.to_owned(),
                md5: md5.to_owned(),
            }),
            _ => bail!("decode --md5 printed {line:?}, not `FRAME FORMAT WxH MD5`:\n{done}"),
        })
        .collect()
}

/// Plays `sources` quietly with `args`, writing the JSON report to `json`.
fn play(sources: &[PathBuf], args: &[&str], json: &Path) -> Result<(Run, Report)> {
    let done = run(playsim().arg("play").args(sources).args(args).arg("--quiet").arg("--json").arg(json))?;
    done.ensure_no_panic()?;
    let report = read_report(json).with_context(|| format!("no report after:\n{done}"))?;
    Ok((done, report))
}

/// `play` and `decode --md5` of `path` both fail with exit code 1 and an error naming the
/// file and containing each of `words`; the play's JSON report says failed, with that error.
fn ensure_refused(tmp: &Path, path: &Path, words: &[&str]) -> Result<()> {
    let name = path_str(path)?;
    let says_it = |text: &str| text.contains(name) && words.iter().all(|w| text.contains(w));
    let json = tmp.join("refused.json");
    let (done, report) = play(&[path.to_owned()], &["--fps", "max"], &json)?;
    done.ensure_code(1)?;
    ensure!(
        done.stderr.lines().any(|l| l.contains("error") && says_it(l)),
        "the error should name {name} and say {words:?}:\n{done}"
    );
    ensure!(report.status == RunStatus::Failed, "status {:?}", report.status);
    let error = report.error.as_deref().unwrap_or_default();
    ensure!(says_it(error), "report error {error:?} should name {name} and say {words:?}");
    ensure!(report.totals.presented == 0, "presented {}", report.totals.presented);

    let done = run(playsim().arg("decode").arg(path).arg("--md5"))?;
    done.ensure_code(1)?;
    ensure!(done.stdout.is_empty(), "decode hashed something:\n{done}");
    ensure!(says_it(&done.stderr), "decode's error should name {name} and say {words:?}:\n{done}");
    Ok(())
}

/// The offset and size of the top-level MOV/MP4 box of `kind`.
fn top_level_box(bytes: &[u8], kind: &[u8; 4]) -> Result<(usize, usize)> {
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + 8) {
        let size = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if &header[4..8] == kind {
            return Ok((at, size));
        }
        ensure!(size >= 8, "box at {at} has size {size}: the fixture is not a plain MOV/MP4");
        at += size;
    }
    bail!("no top-level '{}' box", String::from_utf8_lossy(kind))
}

/// Each video packet's byte offset and size, as ffprobe finds them.
fn packet_ranges(path: &Path) -> Result<Vec<(usize, usize)>> {
    let output = match Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v", "-show_entries", "packet=pos,size", "-of", "json"])
        .arg(path)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "the ffprobe CLI is not installed (needed to find packets to damage): run `cargo xtask deps`"
            )
        }
        Err(e) => return Err(e).context("cannot run ffprobe"),
    };
    ensure!(output.status.success(), "ffprobe failed: {}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).context("parsing ffprobe's json")?;
    let field = |packet: &serde_json::Value, name: &str| -> Result<usize> {
        let text = packet[name].as_str().with_context(|| format!("packet without {name}: {packet}"))?;
        text.parse().with_context(|| format!("packet {name} {text:?}"))
    };
    json["packets"]
        .as_array()
        .context("ffprobe listed no packets")?
        .iter()
        .map(|p| Ok((field(p, "pos")?, field(p, "size")?)))
        .collect()
}

/// Overwrites `bytes` with xorshift noise from `seed`: garbage, but the same every run.
fn garble(bytes: &mut [u8], seed: &mut u64) {
    for byte in bytes {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *byte = (*seed >> 24) as u8;
    }
}

/// The format registry's `probe_dimensions` (what `--no-decode` reports) takes each clip's
/// size from its container, with no read beyond those that opened it.
#[test]
fn probe_dimensions_takes_each_clips_size_from_its_container() -> Result<()> {
    use playsim::core::Storage;
    use std::sync::Arc;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    for clip in &CLIPS {
        let local = playsim::storage::LocalStorage::new(playsim::storage::LocalOptions::default())?;
        let storage: Arc<dyn Storage> = Arc::new(local);
        let (size, reads_to_open, reads_after) = runtime.block_on(async {
            let options = playsim::DecodeOptions::default();
            let source =
                playsim::media::open_location(&clip_path(clip.file), &options, Arc::clone(&storage)).await?;
            let reads_to_open = storage.stats().n_reads;
            let size = playsim::media::probe_dimensions(source.as_ref(), storage.as_ref()).await;
            anyhow::Ok((size, reads_to_open, storage.stats().n_reads))
        })?;
        ensure!(size == Some((256, 144)), "{}: probe_dimensions gave {size:?}", clip.file);
        ensure!(
            reads_after == reads_to_open,
            "{}: the probe read {} times",
            clip.file,
            reads_after - reads_to_open
        );
    }
    Ok(())
}

/// `playsim record --format prores` of `n` frames of 160x32 into `dest`, with `extra` flags.
fn record_prores(dest: &Path, n: u64, extra: &[&str]) -> Result<Run> {
    let done = run(playsim()
        .arg("record")
        .arg(dest)
        .args(["--format", "prores", "--preset", SMALL_PRESET, "--frames", &n.to_string()])
        .args(extra))?;
    done.ensure_no_panic()?;
    Ok(done)
}

/// The md5s of `ffmpeg -f framemd5` of `path`, and of `playsim decode --md5`.
fn both_decodes(path: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let ffmpeg_md5s = framemd5_hashes(&ffmpeg(&["-i", path_str(path)?, "-f", "framemd5", "-"])?);
    let done = run(playsim().arg("decode").arg(path).arg("--md5"))?;
    done.ensure_code(0)?;
    let playsim_md5s = decode_lines(&done)?.into_iter().map(|l| l.md5).collect();
    Ok((ffmpeg_md5s, playsim_md5s))
}

/// `record --format prores` writes one fragmented MOV, `frame.mov`: ProRes 422 HQ (`apch`),
/// 10-bit 4:2:2, at the rate asked, every frame there. FFmpeg's decode of it and playsim's are
/// the same, md5 for md5 (issue 22's round trip for ProRes), and playsim plays it. With
/// `--direct` (O_DIRECT: whole 4096-byte blocks until the last write) the file is the same.
#[test]
fn a_prores_recording_is_one_fragmented_mov_that_ffmpeg_and_playsim_decode_alike() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("ingest");
    record_prores(&dest, 12, &["--fps", "24000/1001"])?.ensure_code(0)?;
    let names: Vec<String> = std::fs::read_dir(&dest)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_>>()?;
    ensure!(names == ["frame.mov"], "{names:?}");
    let clip = dest.join("frame.mov");
    let probe = crate::util::run_tool(
        "ffprobe",
        "ffprobe (FFmpeg)",
        &[
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,codec_tag_string,profile,pix_fmt,r_frame_rate,width",
            "-of",
            "compact",
            path_str(&clip)?,
        ],
    )?;
    for want in [
        "codec_name=prores",
        "profile=HQ",
        "codec_tag_string=apch",
        "pix_fmt=yuv422p10le",
        "r_frame_rate=24000/1001",
        "width=160",
    ] {
        ensure!(probe.contains(want), "ffprobe says {probe:?}, not {want}");
    }
    let (ffmpeg_md5s, playsim_md5s) = both_decodes(&clip)?;
    ensure!(ffmpeg_md5s.len() == 12, "ffmpeg decodes {} frames", ffmpeg_md5s.len());
    ensure!(ffmpeg_md5s == playsim_md5s, "ffmpeg {ffmpeg_md5s:?}\nplaysim {playsim_md5s:?}");
    // Frames differ from each other: the generator's moving picture, with its index.
    ensure!(ffmpeg_md5s[0] != ffmpeg_md5s[1], "frames 0 and 1 are the same picture");

    let json = tmp.path().join("play.json");
    let (done, report) = play(std::slice::from_ref(&clip), &["--fps", "24000/1001"], &json)?;
    done.ensure_code(0)?;
    ensure!(report.totals.presented == 12 && report.status == RunStatus::Complete, "{done}");

    let direct = tmp.path().join("direct");
    record_prores(&direct, 12, &["--fps", "24000/1001", "--direct"])?.ensure_code(0)?;
    let (a, b) = (std::fs::read(&clip)?, std::fs::read(direct.join("frame.mov"))?);
    ensure!(a == b, "with --direct the clip is {} bytes against {}", b.len(), a.len());
    Ok(())
}

/// A clip cut short, as a crash or a full disk leaves it, plays up to its last whole fragment:
/// FFmpeg decodes the frames before the cut, the same pictures as in the whole clip. Ctrl-C
/// mid-recording leaves a clip holding every frame it counted as written.
#[test]
fn a_prores_clip_cut_short_or_interrupted_keeps_its_whole_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("whole");
    record_prores(&dest, 12, &["--fps", "max"])?.ensure_code(0)?;
    let whole = std::fs::read(dest.join("frame.mov"))?;
    let (all, _) = both_decodes(&dest.join("frame.mov"))?;
    let cut = tmp.path().join("cut.mov");
    std::fs::write(&cut, &whole[..whole.len() * 6 / 10])?;
    let kept = framemd5_hashes(&ffmpeg(&["-i", path_str(&cut)?, "-f", "framemd5", "-"])?);
    ensure!((5..12).contains(&kept.len()), "{} frames decode from 60% of the clip", kept.len());
    ensure!(kept[..] == all[..kept.len()], "the cut clip's frames differ from the whole one's");

    let stopped = tmp.path().join("stopped");
    let json = tmp.path().join("r.json");
    let mut cmd = playsim();
    cmd.arg("record")
        .arg(&stopped)
        .args(["--format", "prores", "--preset", SMALL_PRESET, "--fps", "24", "--frames", "2400", "--json"])
        .arg(&json);
    let done = crate::util::interrupt_after(&mut cmd, tmp.path(), std::time::Duration::from_millis(1500))?;
    done.ensure_no_panic()?;
    ensure!(done.code == Some(130), "{done}");
    let figures: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let written = figures["frames_written"].as_u64().unwrap_or(0);
    ensure!(written >= 1, "{figures}");
    let decoded =
        framemd5_hashes(&ffmpeg(&["-i", path_str(&stopped.join("frame.mov"))?, "-f", "framemd5", "-"])?);
    ensure!(decoded.len() as u64 == written, "{} frames decode of {written} written", decoded.len());
    Ok(())
}

/// `generate --format prores` is refused with the record command that makes a clip; a bad
/// profile is refused with the valid ones.
#[test]
fn prores_is_made_by_record_and_its_profile_is_checked() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let done = run(playsim()
        .arg("generate")
        .arg(tmp.path().join("g"))
        .args(["--format", "prores", "--frames", "4"]))?;
    done.ensure_code(2).or_else(|_| done.ensure_code(1))?;
    ensure!(done.stderr.contains("writes one clip") && done.stderr.contains("playsim record"), "{done}");
    let bad = record_prores(&tmp.path().join("r"), 2, &["--profile", "ultra"])?;
    ensure!(bad.code != Some(0), "{bad}");
    ensure!(bad.stderr.contains("proxy, lt, standard or hq") && bad.stderr.contains("--profile hq"), "{bad}");
    let bad = record_prores(&tmp.path().join("r"), 2, &["--ffmpeg-encoder", "apple"])?;
    ensure!(bad.code != Some(0), "{bad}");
    ensure!(
        bad.stderr.contains("prores_ks or prores_aw") && bad.stderr.contains("--ffmpeg-encoder prores_aw"),
        "{bad}"
    );
    // prores_aw writes the same kind of clip.
    let aw = tmp.path().join("aw");
    record_prores(&aw, 3, &["--ffmpeg-encoder", "prores_aw", "--fps", "max"])?.ensure_code(0)?;
    let (ffmpeg_md5s, playsim_md5s) = both_decodes(&aw.join("frame.mov"))?;
    ensure!(ffmpeg_md5s.len() == 3 && ffmpeg_md5s == playsim_md5s, "{ffmpeg_md5s:?} {playsim_md5s:?}");
    Ok(())
}

/// `record --source` of long-GOP H.264 (B-frames, so decode order is not presentation order)
/// into ProRes: every packet goes through one in-order decoder, and the pictures come out in
/// presentation order, looping over the 12-frame source. Frame k of the clip is the source's
/// picture k mod 12: the closest of all 12 by luma PSNR, and above 40 dB (ProRes HQ is lossy).
#[test]
fn a_long_gop_source_is_transcoded_to_prores_in_presentation_order() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dest = tmp.path().join("transcode");
    let source = clip_path("h264-tiny.mp4");
    let done = run(playsim().arg("record").arg(&dest).args([
        "--source",
        path_str(&source)?,
        "--format",
        "prores",
        "--fps",
        "max",
        "--frames",
        "24",
    ]))?;
    done.ensure_code(0)?;
    done.ensure_no_panic()?;
    ensure!(done.stdout.contains("Frames written: 24 of 24"), "{done}");
    let raw = |path: &Path, out: &Path| -> Result<Vec<Vec<u16>>> {
        ffmpeg(&[
            "-i",
            path_str(path)?,
            "-fps_mode",
            "passthrough",
            "-pix_fmt",
            "yuv422p10le",
            "-f",
            "rawvideo",
            path_str(out)?,
        ])?;
        let bytes = std::fs::read(out)?;
        let (luma, frame) = (256 * 144 * 2, 256 * 144 * 4);
        Ok(bytes
            .chunks_exact(frame)
            .map(|f| f[..luma].chunks_exact(2).map(|s| u16::from_le_bytes([s[0], s[1]])).collect())
            .collect())
    };
    let clip = raw(&dest.join("frame.mov"), &tmp.path().join("clip.raw"))?;
    let original = raw(&source, &tmp.path().join("source.raw"))?;
    ensure!(clip.len() == 24 && original.len() == 12, "{} and {} frames", clip.len(), original.len());
    let psnr = |a: &[u16], b: &[u16]| {
        let mse = a.iter().zip(b).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
            / a.len() as f64;
        10.0 * (1023.0f64.powi(2) / mse.max(1e-9)).log10()
    };
    for (k, picture) in clip.iter().enumerate() {
        let scores: Vec<f64> = original.iter().map(|o| psnr(picture, o)).collect();
        let best = (0..12).max_by(|&i, &j| scores[i].total_cmp(&scores[j])).unwrap_or(0);
        ensure!(
            best == k % 12 && scores[best] > 40.0,
            "clip frame {k}: closest source picture {best}, {scores:?}"
        );
    }
    Ok(())
}
