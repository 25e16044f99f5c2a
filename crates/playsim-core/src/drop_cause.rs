//! Why a frame missed its deadline: the Flame-style drop causes, and the one type that counts
//! drops by cause (the engine's counters, the report's `dropped`, the dashboard's columns).
//!
//! ```
//! use playsim_core::{DropCause, DropCounters};
//! let mut drops = DropCounters::default();
//! drops.add(DropCause::Decode);
//! drops += DropCounters { storage: 2, ..DropCounters::default() };
//! assert_eq!(drops.total(), 3);
//! assert_eq!(drops.main_cause(), Some(DropCause::Storage));
//! let words: Vec<String> = drops.iter().map(|(c, n)| format!("{} {n}", c.word())).collect();
//! assert_eq!(words, ["storage 2", "decode 1", "output 0", "unreadable 0"]);
//! ```

use std::iter::Sum;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// The stage a frame was held in when its deadline passed.
///
/// These mirror Flame's debug counters: video disk (storage), CPU/GPU (decode) and
/// broadcast (output), plus frames that could not be read or decoded at all.
/// Reports write a cause as its [`word`](DropCause::word); their schema calls the type
/// `DropCauseName`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(rename = "DropCauseName", description = "The drop cause, as written in reports.")
)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// Not fully read.
    Storage,
    /// Not decoded.
    Decode,
    /// Output not finished.
    Output,
    /// Read or decode failed.
    Unreadable,
}

impl DropCause {
    /// All causes, in Flame's order (the order of reports, tables and legends).
    pub const ALL: [DropCause; 4] =
        [DropCause::Storage, DropCause::Decode, DropCause::Output, DropCause::Unreadable];

    /// The cause as a word, as reports write it: `storage`, `decode`, `output` or `unreadable`.
    pub const fn word(self) -> &'static str {
        match self {
            DropCause::Storage => "storage",
            DropCause::Decode => "decode",
            DropCause::Output => "output",
            DropCause::Unreadable => "unreadable",
        }
    }

    /// The name of Flame's debug counter for the cause: `video disk`, `CPU/GPU`, `broadcast`,
    /// `unreadable`.
    pub const fn flame_counter(self) -> &'static str {
        match self {
            DropCause::Storage => "video disk",
            DropCause::Decode => "CPU/GPU",
            DropCause::Output => "broadcast",
            DropCause::Unreadable => "unreadable",
        }
    }

    /// The cause's word with its [Flame counter](DropCause::flame_counter), as tables and
    /// legends show it:
    /// `storage (video disk)`, `decode (CPU/GPU)`, `output (broadcast)`, `unreadable`.
    pub const fn label(self) -> &'static str {
        match self {
            DropCause::Storage => "storage (video disk)",
            DropCause::Decode => "decode (CPU/GPU)",
            DropCause::Output => "output (broadcast)",
            DropCause::Unreadable => "unreadable",
        }
    }

    /// Its position in [`DropCause::ALL`], for counters kept in an array.
    pub const fn index(self) -> usize {
        match self {
            DropCause::Storage => 0,
            DropCause::Decode => 1,
            DropCause::Output => 2,
            DropCause::Unreadable => 3,
        }
    }
}

/// Dropped frames counted by cause: [`add`](DropCounters::add) counts one drop, `+=` adds
/// another set of counters.
///
/// Sums saturate rather than overflow: a report read from a file may hold any count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Drops", description = "Dropped frames by cause."))]
pub struct DropCounters {
    /// Bytes not read by the deadline (Flame's video-disk counter).
    pub storage: u64,
    /// Read but not decoded by the deadline (Flame's GPU counter).
    pub decode: u64,
    /// Decoded but not through the output stage (Flame's broadcast counter).
    pub output: u64,
    /// The read or decode failed: corrupt or missing frames.
    pub unreadable: u64,
}

impl DropCounters {
    /// Counters whose count for each cause is `count(cause)`.
    pub fn from_fn(mut count: impl FnMut(DropCause) -> u64) -> DropCounters {
        DropCounters {
            storage: count(DropCause::Storage),
            decode: count(DropCause::Decode),
            output: count(DropCause::Output),
            unreadable: count(DropCause::Unreadable),
        }
    }

    /// Counts one drop.
    pub fn add(&mut self, cause: DropCause) {
        let n = self.get_mut(cause);
        *n = n.saturating_add(1);
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
        self.by_cause().into_iter().fold(0, u64::saturating_add)
    }

    /// The four counts in Flame's order: storage, decode, output, unreadable.
    pub fn by_cause(&self) -> [u64; 4] {
        [self.storage, self.decode, self.output, self.unreadable]
    }

    /// Each cause with its count, in Flame's order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (DropCause, u64)> {
        let counts = *self;
        DropCause::ALL.into_iter().map(move |cause| (cause, counts.get(cause)))
    }

    /// The cause of the most drops, a tie going to the later stage; `None` when nothing
    /// dropped.
    pub fn main_cause(&self) -> Option<DropCause> {
        self.iter().filter(|(_, n)| *n > 0).max_by_key(|(_, n)| *n).map(|(cause, _)| cause)
    }
}

impl AddAssign for DropCounters {
    fn add_assign(&mut self, other: DropCounters) {
        for (cause, n) in other.iter() {
            let sum = self.get_mut(cause);
            *sum = sum.saturating_add(n);
        }
    }
}

impl Sum for DropCounters {
    fn sum<I: Iterator<Item = DropCounters>>(iter: I) -> DropCounters {
        iter.fold(DropCounters::default(), |mut sum, d| {
            sum += d;
            sum
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_in_flames_order_with_their_words() {
        let words: Vec<&str> = DropCause::ALL.iter().map(|c| c.word()).collect();
        assert_eq!(words, ["storage", "decode", "output", "unreadable"]);
        for (i, cause) in DropCause::ALL.into_iter().enumerate() {
            assert_eq!(cause.index(), i);
            let (word, flame) = (cause.word(), cause.flame_counter());
            let label = if word == flame { word.to_owned() } else { format!("{word} ({flame})") };
            assert_eq!(cause.label(), label);
        }
    }

    #[test]
    fn counts_add_up_and_saturate() {
        let mut a = DropCounters::default();
        a.add(DropCause::Output);
        a.add(DropCause::Output);
        a.add(DropCause::Storage);
        assert_eq!(a, DropCounters { storage: 1, output: 2, ..DropCounters::default() });
        assert_eq!(a.iter().map(|(_, n)| n).collect::<Vec<_>>(), a.by_cause());
        let big = DropCounters { unreadable: u64::MAX, ..DropCounters::default() };
        let mut sum = a;
        sum += big;
        assert_eq!((sum.output, sum.unreadable), (2, u64::MAX));
        assert_eq!(sum.total(), u64::MAX);
        assert_eq!([a, a, a].into_iter().sum::<DropCounters>().output, 6);
        assert_eq!(DropCounters::from_fn(|c| c.index() as u64).by_cause(), [0, 1, 2, 3]);
    }

    #[test]
    fn the_main_cause_has_the_most_drops_and_a_tie_goes_to_the_later_stage() {
        assert_eq!(DropCounters::default().main_cause(), None);
        let d = DropCounters { storage: 3, decode: 5, output: 5, unreadable: 1 };
        assert_eq!(d.main_cause(), Some(DropCause::Output));
        assert_eq!(
            DropCounters { unreadable: 1, ..DropCounters::default() }.main_cause(),
            Some(DropCause::Unreadable)
        );
    }
}
