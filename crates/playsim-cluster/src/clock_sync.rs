//! Each client's clock offset against rank 0's, from round trips: rank 0 notes when it sent
//! a ping and when the answer came back, the client notes its own time in between. With the
//! two legs taken as equal, the client's clock read `offset` more than rank 0's at the
//! midpoint. The round trip bounds the error, so the shortest of several is kept (as NTP's
//! clock filter does).

/// One round trip, all times in nanoseconds since the Unix epoch on the clock that read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundTrip {
    /// Rank 0's clock when it sent the ping.
    pub sent_ns: u64,
    /// The client's clock when it answered.
    pub peer_ns: u64,
    /// Rank 0's clock when the answer came.
    pub received_ns: u64,
}

/// A client's clock against rank 0's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockOffset {
    /// The client's clock minus rank 0's, in nanoseconds.
    pub offset_ns: i64,
    /// The round trip it was measured over: the offset is within half of it.
    pub rtt_ns: u64,
}

/// The offset from the round trip that took the least time; `None` with no round trip, or
/// only ones whose answer came before the ping was sent (a clock that went backwards).
///
/// ```
/// use playsim_cluster::clock_sync::{estimate, ClockOffset, RoundTrip};
///
/// // The client's clock is 5 µs ahead; the second round trip is the tighter one.
/// let trips = [
///     RoundTrip { sent_ns: 1_000, peer_ns: 56_000, received_ns: 100_000 },
///     RoundTrip { sent_ns: 200_000, peer_ns: 207_000, received_ns: 204_000 },
/// ];
/// assert_eq!(estimate(&trips), Some(ClockOffset { offset_ns: 5_000, rtt_ns: 4_000 }));
/// ```
pub fn estimate(trips: &[RoundTrip]) -> Option<ClockOffset> {
    let best =
        trips.iter().filter(|t| t.received_ns >= t.sent_ns).min_by_key(|t| t.received_ns - t.sent_ns)?;
    let rtt_ns = best.received_ns - best.sent_ns;
    let midpoint = i128::from(best.sent_ns) + i128::from(rtt_ns / 2);
    let offset = i128::from(best.peer_ns) - midpoint;
    let offset_ns = i64::try_from(offset).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX });
    Some(ClockOffset { offset_ns, rtt_ns })
}

/// `rank0_ns`, a time on rank 0's clock, on a client's clock that reads `offset_ns` more.
pub fn to_client_clock(rank0_ns: u64, offset_ns: i64) -> u64 {
    rank0_ns.saturating_add_signed(offset_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tightest_round_trip_wins_and_behind_clocks_are_negative() {
        let trips = [
            RoundTrip { sent_ns: 10_000, peer_ns: 2_000, received_ns: 30_000 },
            RoundTrip { sent_ns: 40_000, peer_ns: 38_000, received_ns: 42_000 },
            RoundTrip { sent_ns: 50_000, peer_ns: 45_000, received_ns: 60_000 },
        ];
        assert_eq!(estimate(&trips), Some(ClockOffset { offset_ns: -3_000, rtt_ns: 2_000 }));
        assert_eq!(to_client_clock(1_000_000, -3_000), 997_000);
        assert_eq!(to_client_clock(1_000, -3_000), 0, "saturates, never wraps");
    }

    #[test]
    fn no_usable_round_trip_gives_no_offset() {
        assert_eq!(estimate(&[]), None);
        assert_eq!(estimate(&[RoundTrip { sent_ns: 10, peer_ns: 5, received_ns: 9 }]), None);
    }

    #[test]
    fn extreme_clocks_saturate_instead_of_overflowing() {
        let far = estimate(&[RoundTrip { sent_ns: 0, peer_ns: u64::MAX, received_ns: 0 }]);
        assert_eq!(far, Some(ClockOffset { offset_ns: i64::MAX, rtt_ns: 0 }));
    }
}
