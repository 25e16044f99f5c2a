//! What each panel of the comparison figure shows: its caption, its axis, and its bars, each
//! part naming the measure it reads and what it stands for ([`Swatch`]), from which the figure
//! picks its colour. The types are `pub` inside a private module, so that the sealed
//! [`Compared`](super::Compared) can name them while no one outside can.

use super::{Measure, RecordMeasure};
use crate::model::record::{RecordCause, RECORD_CAUSES};
use crate::model::DropCauseName;

/// What a part of a bar stands for, so that it is coloured as the other figures colour it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swatch {
    /// Drops of a playback cause.
    Drop(DropCauseName),
    /// Drops of a record cause.
    RecordDrop(RecordCause),
    /// Failed frames, counted without a cause.
    Failed,
    /// The read stage (playback).
    Read,
    /// The decode stage (playback).
    Decode,
    /// The output stage (playback).
    Output,
    /// Waiting in the queue (record).
    QueueWait,
    /// The encode stage (record).
    Encode,
    /// The write stage (record).
    Write,
    /// The sync (record).
    Sync,
    /// A figure on its own (a bar that stands for one figure).
    Bar,
    /// User CPU time.
    CpuUser,
    /// System CPU time.
    CpuSys,
    /// Soft-interrupt CPU time.
    CpuSoftirq,
}

/// One part of a bar: what it is called, what it stands for and the figure it shows.
pub struct Part<M> {
    pub(crate) name: &'static str,
    pub(crate) swatch: Swatch,
    pub(crate) measure: M,
}

/// How a panel's figures stand on each run's slot.
pub enum Bars<M> {
    /// One bar per run.
    Single(M),
    /// One bar per run, its parts stacked.
    Stacked(Vec<Part<M>>),
    /// The parts side by side in each run's slot.
    Grouped(Vec<Part<M>>),
}

/// A panel: its caption, the y axis's description, its bars, and what it says when every
/// bar is 0.
pub struct Panel<M> {
    pub(crate) caption: &'static str,
    pub(crate) y_desc: &'static str,
    pub(crate) bars: Bars<M>,
    pub(crate) if_empty: &'static str,
}

/// A panel of `bars` that says `zero in every run` when all are 0.
fn panel<M>(caption: &'static str, y_desc: &'static str, bars: Bars<M>) -> Panel<M> {
    Panel { caption, y_desc, bars, if_empty: "zero in every run" }
}

/// A playback report's panels.
pub(crate) fn play_panels() -> Vec<Panel<Measure>> {
    vec![
        panel("frame rate", "frames per second presented", Bars::Single(Measure::Fps)),
        Panel {
            if_empty: "no drops in any run",
            ..panel(
                "dropped frames by cause",
                "frames dropped",
                Bars::Stacked(
                    DropCauseName::ALL
                        .into_iter()
                        .map(|cause| Part {
                            name: cause.word(),
                            swatch: Swatch::Drop(cause),
                            measure: Measure::DroppedBy(cause),
                        })
                        .collect(),
                ),
            )
        },
        panel("data rate read", "MB/s (MB = 10⁶ bytes)", Bars::Single(Measure::MbPerS)),
        panel(
            "p99 latency per stage",
            "p99 latency (ms)",
            Bars::Grouped(vec![
                Part { name: "read", swatch: Swatch::Read, measure: Measure::ReadP99 },
                Part { name: "decode", swatch: Swatch::Decode, measure: Measure::DecodeP99 },
                Part { name: "output", swatch: Swatch::Output, measure: Measure::OutputP99 },
            ]),
        ),
        panel(
            "CPU per GB read",
            "CPU s per GB (GB = 10⁹ bytes)",
            Bars::Stacked(vec![
                Part { name: "user", swatch: Swatch::CpuUser, measure: Measure::CpuUser },
                Part { name: "sys", swatch: Swatch::CpuSys, measure: Measure::CpuSys },
                Part { name: "softirq", swatch: Swatch::CpuSoftirq, measure: Measure::CpuSoftirq },
            ]),
        ),
    ]
}

/// A record run's panels: the write side's figures, in the record plot's colours.
pub(crate) fn record_panels() -> Vec<Panel<RecordMeasure>> {
    let mut drops: Vec<Part<RecordMeasure>> = RECORD_CAUSES
        .into_iter()
        .map(|cause| Part {
            name: cause.name(),
            swatch: Swatch::RecordDrop(cause),
            measure: RecordMeasure::DroppedBy(cause),
        })
        .collect();
    drops.push(Part { name: "failed", swatch: Swatch::Failed, measure: RecordMeasure::Failed });
    vec![
        panel("frame rate", "frames per second written", Bars::Single(RecordMeasure::Fps)),
        Panel {
            if_empty: "no drops or failures in any run",
            ..panel("dropped and failed frames by cause", "frames dropped or failed", Bars::Stacked(drops))
        },
        panel("data rate written", "MB/s (MB = 10⁶ bytes)", Bars::Single(RecordMeasure::MbPerS)),
        panel(
            "p99 latency per stage",
            "p99 latency (ms)",
            Bars::Grouped(vec![
                Part { name: "queue wait", swatch: Swatch::QueueWait, measure: RecordMeasure::QueueWaitP99 },
                Part { name: "encode", swatch: Swatch::Encode, measure: RecordMeasure::EncodeP99 },
                Part { name: "write", swatch: Swatch::Write, measure: RecordMeasure::WriteP99 },
                Part { name: "sync", swatch: Swatch::Sync, measure: RecordMeasure::SyncP99 },
                Part { name: "total", swatch: Swatch::Bar, measure: RecordMeasure::TotalP99 },
            ]),
        ),
        panel(
            "CPU per GB written",
            "CPU s per GB (GB = 10⁹ bytes)",
            Bars::Stacked(vec![
                Part { name: "input", swatch: Swatch::CpuSoftirq, measure: RecordMeasure::CpuInput },
                Part { name: "encode", swatch: Swatch::CpuUser, measure: RecordMeasure::CpuEncode },
                Part { name: "write", swatch: Swatch::CpuSys, measure: RecordMeasure::CpuWrite },
            ]),
        ),
    ]
}
