//! Play order and range applied to a source (`--order`, `--range`, as frametest and players
//! allow): a source whose frames are another's, picked and reordered.

use std::sync::Arc;

use playsim_core::{Decoder, FrameExtent, FrameRate, Source, SourceInfo};

use crate::{Error, FrameRange, PlayOrder};

/// `source` with its frames picked by `range` and put in `order`; `source` itself when both
/// leave it as it is. A long-GOP video cannot be played out of order or from mid-GOP: its
/// decoder needs the packets in decode order from a key frame, so that is refused.
pub fn reorder(
    source: Arc<dyn Source>,
    order: PlayOrder,
    range: Option<FrameRange>,
) -> Result<Arc<dyn Source>, Error> {
    if order == PlayOrder::Forward && range.is_none() {
        return Ok(source);
    }
    let location = source.info().location;
    if source.decoder().in_order().is_some() {
        return Err(Error::Engine(format!(
            "{location} is long-GOP video, decoded in order from a key frame: --order and --range need an \
             intra-only format (ProRes, DNxHR, DPX, EXR), for example play it with --order forward and no --range"
        )));
    }
    let mut map: Vec<u64> = (0..source.n_frames())
        .filter(|&i| range.is_none_or(|r| (r.first..=r.last).contains(&source.frame_number(i))))
        .collect();
    if map.is_empty() {
        let (first, last) =
            (source.frame_number(0), source.frame_number(source.n_frames().saturating_sub(1)));
        let range = range.map_or_else(String::new, |r| r.to_string());
        return Err(Error::Engine(format!(
            "--range {range} selects no frame of {location} (its frames are {first}-{last}), for example --range {first}-{last}"
        )));
    }
    match order {
        PlayOrder::Forward => {}
        PlayOrder::Reverse => map.reverse(),
        PlayOrder::Random { seed } => playsim_core::shuffle(&mut map, seed),
    }
    Ok(Arc::new(Reordered { inner: source, map }))
}

/// Another source's frames, picked and reordered.
struct Reordered {
    inner: Arc<dyn Source>,
    /// Play position → the inner source's index.
    map: Vec<u64>,
}

impl Reordered {
    fn inner_idx(&self, idx: u64) -> u64 {
        usize::try_from(idx).ok().and_then(|i| self.map.get(i)).copied().unwrap_or(idx)
    }
}

impl Source for Reordered {
    fn info(&self) -> SourceInfo {
        self.inner.info()
    }

    fn n_frames(&self) -> u64 {
        self.map.len() as u64
    }

    fn frame_number(&self, idx: u64) -> u64 {
        self.inner.frame_number(self.inner_idx(idx))
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        self.inner.extent(self.inner_idx(idx))
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        self.inner.decoder()
    }

    fn is_keyframe(&self, idx: u64) -> bool {
        self.inner.is_keyframe(self.inner_idx(idx))
    }

    fn frame_rate(&self) -> Option<FrameRate> {
        self.inner.frame_rate()
    }

    fn dimensions(&self) -> Option<(u32, u32)> {
        self.inner.dimensions()
    }
}
