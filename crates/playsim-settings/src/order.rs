//! Play order and range (`--order forward|reverse|random --seed N`, `--range A-B`), as
//! frametest and players allow: plain data; the facade picks and reorders a source's frames by them.

/// The order frames are played in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlayOrder {
    /// First to last.
    #[default]
    Forward,
    /// Last to first.
    Reverse,
    /// A shuffle, repeatable with its seed.
    Random {
        /// The shuffle's seed.
        seed: u64,
    },
}

impl PlayOrder {
    /// The name in reports: "forward", "reverse" or "random".
    pub fn name(self) -> &'static str {
        match self {
            PlayOrder::Forward => "forward",
            PlayOrder::Reverse => "reverse",
            PlayOrder::Random { .. } => "random",
        }
    }
}

/// Frame numbers `first..=last`, as `--range A-B` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRange {
    /// The first frame number played.
    pub first: u64,
    /// The last frame number played.
    pub last: u64,
}

impl std::str::FromStr for FrameRange {
    type Err = String;

    fn from_str(text: &str) -> Result<FrameRange, String> {
        let bad = || format!("'{text}' is not a frame range (for example --range 100-199)");
        let (a, b) = text.trim().split_once('-').ok_or_else(bad)?;
        let (first, last) =
            (a.trim().parse::<u64>().map_err(|_| bad())?, b.trim().parse::<u64>().map_err(|_| bad())?);
        if first > last {
            return Err(format!(
                "range {text} runs backwards: give the first frame first, for example --range 100-199"
            ));
        }
        Ok(FrameRange { first, last })
    }
}

impl std::fmt::Display for FrameRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_refuse_with_an_example() {
        assert_eq!("100-199".parse::<FrameRange>().unwrap(), FrameRange { first: 100, last: 199 });
        for bad in ["100", "a-b", "9-3", "-5", ""] {
            let err = bad.parse::<FrameRange>().unwrap_err();
            assert!(err.contains("for example --range 100-199"), "{bad}: {err}");
        }
    }
}
