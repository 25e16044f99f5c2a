//! Why a frame missed its deadline: the Flame-style drop causes.

use serde::{Deserialize, Serialize};

/// The stage a frame was held in when its deadline passed.
///
/// These mirror Flame's debug counters: video disk (storage), GPU (decode) and
/// broadcast (output), plus frames that could not be read or decoded at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// The frame's bytes were not fully read.
    Storage,
    /// Read, but not decoded.
    Decode,
    /// Decoded, but the output work was not finished.
    Output,
    /// The read or the decode failed: a corrupt or missing frame.
    Unreadable,
}

impl DropCause {
    /// All causes, in report order.
    pub const ALL: [DropCause; 4] =
        [DropCause::Storage, DropCause::Decode, DropCause::Output, DropCause::Unreadable];

    /// The lower-case name used in reports.
    pub fn name(&self) -> &'static str {
        match self {
            DropCause::Storage => "storage",
            DropCause::Decode => "decode",
            DropCause::Output => "output",
            DropCause::Unreadable => "unreadable",
        }
    }
}

/// Dropped frames counted by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropCounters {
    /// Frames whose bytes were not read in time.
    pub storage: u64,
    /// Frames read but not decoded in time.
    pub decode: u64,
    /// Frames decoded but not through the output stage in time.
    pub output: u64,
    /// Frames that could not be read or decoded.
    pub unreadable: u64,
}

impl DropCounters {
    /// Counts one drop.
    pub fn add(&mut self, cause: DropCause) {
        *self.get_mut(cause) += 1;
    }

    /// The count for one cause.
    pub fn get(&self, cause: DropCause) -> u64 {
        match cause {
            DropCause::Storage => self.storage,
            DropCause::Decode => self.decode,
            DropCause::Output => self.output,
            DropCause::Unreadable => self.unreadable,
        }
    }

    fn get_mut(&mut self, cause: DropCause) -> &mut u64 {
        match cause {
            DropCause::Storage => &mut self.storage,
            DropCause::Decode => &mut self.decode,
            DropCause::Output => &mut self.output,
            DropCause::Unreadable => &mut self.unreadable,
        }
    }

    /// All drops.
    pub fn total(&self) -> u64 {
        self.storage + self.decode + self.output + self.unreadable
    }

    /// Adds another set of counters into this one.
    pub fn merge(&mut self, other: &DropCounters) {
        for c in DropCause::ALL {
            *self.get_mut(c) += other.get(c);
        }
    }
}
