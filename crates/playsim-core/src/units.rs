//! Parsing of quantities as flags and scenario keys give them: byte sizes and durations, with
//! examples in every refusal. Pure, so that a transport can parse its own knobs with them.

use std::time::Duration;

/// Parses a byte size: `4096`, `512K`, `1M`, `1MiB`, `2G` (powers of 1024).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let bad = |why: &str| format!("invalid size '{text}': {why} (for example 1M, 512K or 4096)");
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits_end);
    let n: usize = num.parse().map_err(|_| bad("it must start with a whole number"))?;
    let scale: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(bad("unknown unit")),
    };
    let bytes = n.checked_mul(scale).ok_or_else(|| bad("too large"))?;
    if bytes == 0 {
        return Err(bad("it must be positive"));
    }
    if bytes > 1 << 30 {
        return Err(bad("larger than 1G"));
    }
    Ok(bytes)
}

/// Parses a duration: `10` or `10s`, `1.5m`, `2h`, `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| format!("invalid duration '{text}': {why} (for example 10s, 1.5m or 600)");
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad("it must start with a number"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad("unknown unit")),
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 366.0 * 86400.0) {
        return Err(bad("it must be positive and at most a year"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("1M"), Ok(1 << 20));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        for bad in ["", "0", "1X", "-1", "M", "2G"] {
            assert!(parse_bytes(bad).unwrap_err().contains("for example"), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "abc", "-5", "0", "5 parsecs"] {
            assert!(parse_duration(bad).unwrap_err().contains("for example"), "{bad}");
        }
    }
}
