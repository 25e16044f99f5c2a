//! A [`Source`] over a file sequence: one file per frame, gaps as missing frames.

use std::sync::Arc;

use playsim_core::{Decoder, FrameExtent, Source, SourceInfo};

use crate::Sequence;

/// Plays a [`Sequence`] from its first to its last frame number, gaps included.
///
/// Position `idx` is frame number `first + idx`; a frame number with no file
/// has the extent [`FrameExtent::Missing`], which the engine counts as unreadable.
pub struct SequenceSource {
    sequence: Sequence,
    decoder: Arc<dyn Decoder>,
    info: SourceInfo,
}

impl SequenceSource {
    /// A source playing `sequence` with `decoder`.
    pub fn new(sequence: Sequence, decoder: Arc<dyn Decoder>) -> SequenceSource {
        let info = SourceInfo {
            location: sequence.location().display().to_string(),
            pattern: sequence.pattern(),
            format: decoder.name().to_owned(),
            first_frame: sequence.first_frame(),
            last_frame: sequence.last_frame(),
            n_frames: sequence.n_frames(),
            gaps: sequence.gaps(),
            frame_rate: None,
            index: None,
        };
        SequenceSource { sequence, decoder, info }
    }

    /// The sequence played.
    pub fn sequence(&self) -> &Sequence {
        &self.sequence
    }
}

impl Source for SequenceSource {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn n_frames(&self) -> u64 {
        self.sequence.n_frames()
    }

    fn frame_number(&self, idx: u64) -> u64 {
        self.sequence.first_frame().saturating_add(idx)
    }

    /// Positions past the end are reported as missing rather than panicking.
    fn extent(&self, idx: u64) -> FrameExtent {
        let frame = self.frame_number(idx);
        let path = self.sequence.path_for(frame);
        if idx < self.n_frames() && self.sequence.contains(frame) {
            FrameExtent::File { path }
        } else {
            FrameExtent::Missing { expected: path }
        }
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        Arc::clone(&self.decoder)
    }
}

impl std::fmt::Debug for SequenceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequenceSource")
            .field("sequence", &self.sequence)
            .field("decoder", &self.decoder.name())
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use playsim_dpx::DpxDecoder;
    use std::fs;

    #[test]
    fn positions_map_to_files_and_gaps() {
        let tmp = tempfile::tempdir().unwrap();
        for f in [100u64, 101, 103] {
            fs::write(tmp.path().join(format!("shot.{f:07}.dpx")), b"x").unwrap();
        }
        let seq = Sequence::discover(tmp.path()).unwrap();
        let source = SequenceSource::new(seq, Arc::new(DpxDecoder));
        assert_eq!(source.n_frames(), 4);
        assert_eq!(source.frame_number(2), 102);
        assert_eq!(source.extent(0), FrameExtent::File { path: tmp.path().join("shot.0000100.dpx") });
        assert_eq!(source.extent(2), FrameExtent::Missing { expected: tmp.path().join("shot.0000102.dpx") });
        assert_eq!(source.extent(3), FrameExtent::File { path: tmp.path().join("shot.0000103.dpx") });
        assert!(matches!(source.extent(4), FrameExtent::Missing { .. }));
        assert!(matches!(source.extent(u64::MAX), FrameExtent::Missing { .. }));
        let info = source.info();
        assert_eq!(info.location, tmp.path().display().to_string());
        assert_eq!(info.pattern, "shot.%07d.dpx");
        assert_eq!(info.format, "dpx");
        assert_eq!((info.first_frame, info.last_frame, info.n_frames), (100, 103, 4));
        assert_eq!(info.gaps, vec![102]);
        assert_eq!(source.decoder().name(), "dpx");
    }
}
