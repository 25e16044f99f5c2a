//! Admission and skip policy: whether a frame can still be ready by its deadline before
//! each stage starts work on it, judged from the stages' recent times.

use super::*;

/// What a frame about to be read can still make (see [`StreamCtx::read_outlook`]).
pub(super) enum ReadOutlook {
    InTime,
    /// Its read, decode and output cannot all finish in time: skipped, blamed on storage.
    TooLateToRead,
    /// Its decode and output alone cannot finish in time: skipped, blamed on decode.
    TooLateToDecode,
}

impl StreamCtx {
    /// Frame `idx`'s deadline, when a frame that cannot make it may be skipped: paced
    /// playback once it has started, without `--no-drop` (which waits for every frame).
    pub(super) fn skippable_due(&self, st: &StreamState, idx: u64) -> Option<Duration> {
        let Pacing::Rate(rate) = self.cfg.pacing else { return None };
        if self.cfg.no_drop {
            return None;
        }
        Some(Duration::from_nanos(st.t0_ns?) + rate.due_offset(idx))
    }

    /// The fastest of the stream's recent outputs (zero without an output stage).
    pub(super) fn fastest_output(&self, st: &StreamState) -> Duration {
        if self.output.is_some() {
            st.recent_output.fastest().unwrap_or_default()
        } else {
            Duration::ZERO
        }
    }

    /// True when frame `idx`, about to start decoding at `now`, cannot be decoded and output
    /// before it falls due even as fast as the fastest of the stream's recent decodes and
    /// outputs: a frame that might still make it is always tried.
    pub(super) fn cannot_make_it(&self, idx: u64, now: Duration) -> bool {
        let st = self.lock();
        let (Some(due), Some(decode)) = (self.skippable_due(&st, idx), st.recent_decode.fastest()) else {
            return false;
        };
        now + decode + self.fastest_output(&st) > due
    }

    /// True when frame `idx`, about to start its output at `now`, cannot finish it before it
    /// falls due even as fast as the fastest of the stream's recent outputs. Without this, an
    /// output stage at its limit that falls one frame behind stays behind: each output
    /// finishes just after its frame's deadline, and nearly every frame drops.
    pub(super) fn cannot_output_in_time(&self, idx: u64, now: Duration) -> bool {
        let st = self.lock();
        let (Some(due), Some(output)) = (self.skippable_due(&st, idx), st.recent_output.fastest()) else {
            return false;
        };
        now + output > due
    }

    /// Whether frame `idx`, about to start its read at `now`, can still be read, decoded and
    /// output before it falls due, as fast as the fastest of the stream's recent reads,
    /// decodes and outputs: the storage side of [`StreamCtx::cannot_make_it`]. A read that
    /// cannot finish in time would only take bandwidth and an I/O slot from frames that
    /// still can, and a link short of bandwidth by a few percent then dropped half the
    /// frames (frametest's rule never issues such a read either). A frame too late even
    /// without its read is the decode's to skip.
    pub(super) fn read_outlook(&self, idx: u64, now: Duration) -> ReadOutlook {
        let st = self.lock();
        let (Some(due), Some(read)) = (self.skippable_due(&st, idx), st.recent_read.fastest()) else {
            return ReadOutlook::InTime;
        };
        let mut after = Duration::ZERO;
        if self.decoder.decodes() {
            after += st.recent_decode.fastest().unwrap_or_default() + self.fastest_output(&st);
        }
        if now + after > due {
            ReadOutlook::TooLateToDecode
        } else if now + read + after > due {
            ReadOutlook::TooLateToRead
        } else {
            ReadOutlook::InTime
        }
    }
}

/// The last few times of a stage.
#[derive(Default)]
pub(super) struct RecentTimes(std::collections::VecDeque<Duration>);

impl RecentTimes {
    const KEPT: usize = 16;

    pub(super) fn push(&mut self, time: Duration) {
        if self.0.len() == Self::KEPT {
            self.0.pop_front();
        }
        self.0.push_back(time);
    }

    pub(super) fn fastest(&self) -> Option<Duration> {
        self.0.iter().min().copied()
    }
}
