//! Exact rational frame rates and the due-time arithmetic built on them.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::ParseError;

/// An exact frame rate `num/den` frames per second, kept in lowest terms.
///
/// Due times are computed from the frame index in integer arithmetic, so a
/// long run never accumulates rounding error: frame `i` is due
/// `floor(i * den * 1e9 / num)` nanoseconds after the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameRate {
    num: u32,
    den: u32,
}

const EXAMPLE: &str = "24, 23.976, 59.94 or 60000/1001";

impl FrameRate {
    /// 24 frames per second, film's rate.
    pub const FILM: FrameRate = FrameRate { num: 24, den: 1 };

    /// Builds `num/den`, reduced. Both must be non-zero.
    pub fn new(num: u32, den: u32) -> Result<FrameRate, ParseError> {
        if num == 0 || den == 0 {
            return Err(ParseError::new(
                "frame rate",
                &format!("{num}/{den}"),
                "numerator and denominator must be positive",
                EXAMPLE,
            ));
        }
        let g = gcd(num, den);
        Ok(FrameRate { num: num / g, den: den / g })
    }

    /// The numerator (frames).
    pub fn num(&self) -> u32 {
        self.num
    }

    /// The denominator (seconds).
    pub fn den(&self) -> u32 {
        self.den
    }

    /// Nanoseconds from the start of the stream to the due time of frame `frame_idx`.
    pub fn due_offset_ns(&self, frame_idx: u64) -> u64 {
        let ns = u128::from(frame_idx) * u128::from(self.den) * 1_000_000_000 / u128::from(self.num);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// [`due_offset_ns`](Self::due_offset_ns) as a `Duration`.
    pub fn due_offset(&self, frame_idx: u64) -> Duration {
        Duration::from_nanos(self.due_offset_ns(frame_idx))
    }

    /// The number of whole frames that fall due within `span` (frames 0..n with due < span).
    pub fn frames_in(&self, span: Duration) -> u64 {
        // Smallest n with n*den*1e9/num >= span_ns, i.e. ceil(span_ns*num/(den*1e9)).
        let span_ns = span.as_nanos();
        let denom = u128::from(self.den) * 1_000_000_000;
        let n = (span_ns * u128::from(self.num)).div_ceil(denom);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// The rate as a float, for display only.
    pub fn as_f64(&self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }
}

impl fmt::Display for FrameRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

impl FromStr for FrameRate {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<FrameRate, ParseError> {
        let t = s.trim();
        let bad = |reason: &str| ParseError::new("frame rate", s, reason, EXAMPLE);
        // The NTSC-family rates are written as rounded decimals; they mean N*1000/1001.
        let ntsc = match t {
            "23.976" | "23.98" => Some(24_000),
            "29.97" => Some(30_000),
            "47.952" | "47.95" => Some(48_000),
            "59.94" => Some(60_000),
            "119.88" => Some(120_000),
            _ => None,
        };
        if let Some(num) = ntsc {
            return FrameRate::new(num, 1001);
        }
        if let Some((n, d)) = t.split_once('/') {
            let num: u32 = n.trim().parse().map_err(|_| bad("numerator is not a whole number"))?;
            let den: u32 = d.trim().parse().map_err(|_| bad("denominator is not a whole number"))?;
            return FrameRate::new(num, den).map_err(|_| bad("numerator and denominator must be positive"));
        }
        // An exact decimal such as 24, 25 or 12.5.
        let (int_part, frac_part) = t.split_once('.').unwrap_or((t, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(bad("empty"));
        }
        if !int_part.bytes().all(|b| b.is_ascii_digit()) || !frac_part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("not a number"));
        }
        if frac_part.len() > 6 {
            return Err(bad("too many decimals"));
        }
        let den = 10u32.pow(frac_part.len() as u32);
        let digits = format!("{int_part}{frac_part}");
        let num: u32 = digits.parse().map_err(|_| bad("too large"))?;
        if num == 0 {
            return Err(bad("must be positive"));
        }
        if u64::from(num) > 1000 * u64::from(den) {
            return Err(bad("above 1000 fps"));
        }
        FrameRate::new(num, den)
    }
}

/// How a stream is paced: at an exact rate, or as fast as frames become ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pacing {
    /// Frame `i` falls due at `t0 + i/rate`.
    Rate(FrameRate),
    /// No pacing: every frame is due as soon as it is ready (`--fps max`).
    Max,
}

impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pacing::Rate(r) => r.fmt(f),
            Pacing::Max => f.write_str("max"),
        }
    }
}

impl FromStr for Pacing {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Pacing, ParseError> {
        if s.trim().eq_ignore_ascii_case("max") {
            return Ok(Pacing::Max);
        }
        s.parse()
            .map(Pacing::Rate)
            .map_err(|e: ParseError| ParseError { example: "24, 23.976, 59.94, 60000/1001 or max", ..e })
    }
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> (u32, u32) {
        let r: FrameRate = s.parse().unwrap();
        (r.num(), r.den())
    }

    #[test]
    fn parses_the_broadcast_rates() {
        assert_eq!(rate("23.976"), (24000, 1001));
        assert_eq!(rate("24"), (24, 1));
        assert_eq!(rate("25"), (25, 1));
        assert_eq!(rate("29.97"), (30000, 1001));
        assert_eq!(rate("30"), (30, 1));
        assert_eq!(rate("48"), (48, 1));
        assert_eq!(rate("50"), (50, 1));
        assert_eq!(rate("59.94"), (60000, 1001));
        assert_eq!(rate("60"), (60, 1));
        assert_eq!(rate("119.88"), (120000, 1001));
        assert_eq!(rate("120"), (120, 1));
        assert_eq!(rate("60000/1001"), (60000, 1001));
        assert_eq!(rate("48/2"), (24, 1));
        assert_eq!(rate("12.5"), (25, 2));
    }

    #[test]
    fn refuses_bad_rates_with_an_example() {
        for bad in ["", "0", "abc", "24/0", "-5", "1e3", "5000", "24.5.1"] {
            let err = bad.parse::<FrameRate>().unwrap_err();
            assert!(err.to_string().contains("for example"), "{err}");
        }
    }

    #[test]
    fn due_times_are_exact_at_59_94() {
        let r: FrameRate = "59.94".parse().unwrap();
        // 35,999 * 1001 / 60000 s = 600.5833166... s
        assert_eq!(r.due_offset_ns(35_999), 600_583_316_666);
        assert_eq!(r.due_offset_ns(36_000), 600_600_000_000);
        assert_eq!(r.frames_in(Duration::from_secs(600)), 35_965);
    }

    #[test]
    fn pacing_parses_max() {
        assert_eq!("max".parse::<Pacing>().unwrap(), Pacing::Max);
        assert!("maximum".parse::<Pacing>().unwrap_err().to_string().contains("max"));
    }
}
