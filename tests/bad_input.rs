//! Damaged sequences: every bad frame is counted as unreadable, named, and the run goes on.
//!
//! Each case damages one frame of a generated sequence (truncated, wrong
//! magic, absurd dimensions, empty, missing, a directory, a dangling symlink)
//! and plays it with the real binary: the run must complete, count exactly
//! that frame as unreadable with a message naming its file and number, and
//! present every other frame.

use std::path::Path;

use anyhow::{ensure, Context, Result};
use playsim::report::{DropCauseName, Drops, Report, RunStatus, UnreadableFrame};

use crate::util::{frame_path, generate, playsim, read_report, run, Damage, SMALL_PRESET};

/// Frames in each damaged sequence.
const N_FRAMES: u64 = 12;
/// The frame damaged in the one-damage cases: in the middle, so a gap stays a gap.
const DAMAGED: u64 = 5;

#[test]
fn truncated_frame_is_unreadable() -> Result<()> {
    one_damaged_frame(Damage::Truncate).map(drop)
}

#[test]
fn wrong_magic_is_unreadable() -> Result<()> {
    one_damaged_frame(Damage::WrongMagic).map(drop)
}

#[test]
fn absurd_dimensions_are_unreadable() -> Result<()> {
    one_damaged_frame(Damage::AbsurdDimensions).map(drop)
}

#[test]
fn huge_area_is_unreadable_without_allocating() -> Result<()> {
    one_damaged_frame(Damage::HugeArea).map(drop)
}

#[test]
fn oversized_frame_is_unreadable_without_reading_it() -> Result<()> {
    let report = one_damaged_frame(Damage::Oversized)?;
    let message = &report.streams[0].unreadable[0].message;
    ensure!(message.contains("frame limit"), "unexpected message: {message}");
    Ok(())
}

#[test]
fn zero_length_frame_is_unreadable() -> Result<()> {
    one_damaged_frame(Damage::ZeroLength).map(drop)
}

#[test]
fn missing_frame_is_an_unreadable_gap() -> Result<()> {
    let report = one_damaged_frame(Damage::Missing)?;
    let source = &report.streams[0].source;
    ensure!(source.gaps == [DAMAGED], "gaps {:?}, expected [{DAMAGED}]", source.gaps);
    ensure!(
        (source.first_frame, source.last_frame, source.n_frames) == (0, N_FRAMES - 1, N_FRAMES),
        "the sequence should still span the gap: {source:?}"
    );
    Ok(())
}

#[test]
fn directory_named_like_a_frame_is_unreadable() -> Result<()> {
    one_damaged_frame(Damage::Directory).map(drop)
}

#[test]
fn dangling_symlink_is_unreadable() -> Result<()> {
    one_damaged_frame(Damage::DanglingSymlink).map(drop)
}

/// A paced run over a sequence with every kind of damage at once, including
/// the first frame (which playsim also reads for the frame size) and the last.
#[test]
fn paced_run_with_many_damaged_frames() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, N_FRAMES, &[])?;
    let damaged = [
        (0, Damage::AbsurdDimensions),
        (2, Damage::Truncate),
        (4, Damage::WrongMagic),
        (6, Damage::ZeroLength),
        (7, Damage::Missing),
        (9, Damage::Directory),
        (N_FRAMES - 1, Damage::DanglingSymlink),
    ];
    for (frame, damage) in damaged {
        damage.apply(&frame_path(&seq, frame))?;
    }
    let json = tmp.path().join("r.json");
    let done = run(playsim().arg("play").arg(&seq).args(["--fps", "25", "--quiet", "--json"]).arg(&json))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    let n_damaged = damaged.len() as u64;
    ensure!(report.status == RunStatus::Complete, "status {:?}:\n{done}", report.status);
    ensure!(
        report.totals.dropped == Drops { unreadable: n_damaged, ..Drops::default() },
        "drops {:?}, expected {n_damaged} unreadable and no others:\n{done}",
        report.totals.dropped
    );
    ensure!(
        report.totals.presented == N_FRAMES - n_damaged,
        "presented {}:\n{done}",
        report.totals.presented
    );
    let stream = &report.streams[0];
    let listed: Vec<u64> = stream.unreadable.iter().map(|u| u.frame_number).collect();
    let expected: Vec<u64> = damaged.iter().map(|(frame, _)| *frame).collect();
    ensure!(listed == expected, "unreadable frames {listed:?}, expected {expected:?}");
    for (u, (frame, damage)) in stream.unreadable.iter().zip(damaged) {
        ensure_names_frame(u, &seq, frame).with_context(|| format!("{damage:?}"))?;
    }
    for record in &stream.timeline {
        let bad = expected.contains(&record.frame_number);
        ensure!(
            (record.cause == Some(DropCauseName::Unreadable)) == bad
                && record.presented_ns.is_some() != bad
                && (bad || record.cause.is_none()),
            "timeline record {record:?}"
        );
    }
    Ok(())
}

/// `playsim decode --md5` hashes the good frames, names the bad one, and fails.
#[test]
fn decode_md5_reports_a_damaged_frame_and_fails() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, N_FRAMES, &[])?;
    Damage::WrongMagic.apply(&frame_path(&seq, DAMAGED))?;
    let done = run(playsim().arg("decode").arg(&seq).arg("--md5"))?;
    done.ensure_no_panic()?;
    ensure!(done.code.is_some_and(|c| c != 0), "a damaged sequence should fail decode:\n{done}");
    let numbers: Vec<&str> = done.stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let expected: Vec<String> = (0..N_FRAMES).filter(|&f| f != DAMAGED).map(|f| f.to_string()).collect();
    ensure!(numbers == expected, "frames hashed {numbers:?}, expected {expected:?}:\n{done}");
    ensure!(
        done.stdout.lines().all(|l| l.split_whitespace().last().is_some_and(|h| h.len() == 32)),
        "every line should end with an md5:\n{done}"
    );
    let name = file_name(&frame_path(&seq, DAMAGED));
    ensure!(
        done.stderr.lines().any(|l| mentions_frame(l, DAMAGED) && l.contains(&name)),
        "stderr should name frame {DAMAGED} and {name}:\n{done}"
    );
    Ok(())
}

/// Damages frame [`DAMAGED`] of a fresh sequence, plays it at full speed and
/// checks the outcome that every kind of damage must have.
fn one_damaged_frame(damage: Damage) -> Result<Report> {
    let tmp = tempfile::tempdir()?;
    let seq = tmp.path().join("seq");
    generate(&seq, SMALL_PRESET, N_FRAMES, &[])?;
    damage.apply(&frame_path(&seq, DAMAGED))?;
    let json = tmp.path().join("r.json");
    let done = run(playsim().arg("play").arg(&seq).args(["--fps", "max", "--quiet", "--json"]).arg(&json))?;
    done.ensure_code(0)?;
    let report = read_report(&json)?;
    ensure!(report.status == RunStatus::Complete, "status {:?}:\n{done}", report.status);
    ensure!(report.totals.dropped.unreadable == 1, "drops {:?}:\n{done}", report.totals.dropped);
    ensure!(report.totals.presented == N_FRAMES - 1, "presented {}:\n{done}", report.totals.presented);
    let stream = report.streams.first().context("no stream in the report")?;
    ensure!(stream.unreadable.len() == 1, "unreadable list {:?}", stream.unreadable);
    let u = &stream.unreadable[0];
    ensure!(u.frame_number == DAMAGED && u.frame_idx == DAMAGED, "wrong frame: {u:?}");
    ensure_names_frame(u, &seq, DAMAGED)?;
    // The text summary lists the frame with its message.
    ensure!(
        done.stdout.lines().any(|l| l.starts_with("unreadable frames") && l.trim_end().ends_with(" 1")),
        "summary should count 1 unreadable frame:\n{done}"
    );
    ensure!(
        done.stdout.lines().any(|l| l.contains(&format!("#{DAMAGED}: ")) && l.contains(&u.message)),
        "summary should list frame {DAMAGED} with its message:\n{done}"
    );
    Ok(report)
}

/// The message of an unreadable frame names its number and its file.
fn ensure_names_frame(u: &UnreadableFrame, seq: &Path, frame: u64) -> Result<()> {
    let name = file_name(&frame_path(seq, frame));
    ensure!(
        mentions_frame(&u.message, frame) && u.message.contains(&name),
        "message should name frame {frame} and {name}: {:?}",
        u.message
    );
    ensure!(u.path.ends_with(&name), "path {:?} is not {name}", u.path);
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Whether `text` says "frame N" for exactly this number (not "frame 15" for 1).
fn mentions_frame(text: &str, frame: u64) -> bool {
    text.match_indices("frame ").any(|(at, word)| {
        let rest = &text[at + word.len()..];
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        rest[..digits].parse() == Ok(frame)
    })
}
