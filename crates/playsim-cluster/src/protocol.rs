//! The messages between a client and rank 0, as JSON in point-to-point MPI messages. Every
//! exchange is rank 0 with one client; no rank ever waits in a collective, where a dead peer
//! would hold it forever (Debian's OpenMPI has no fault tolerance).

use serde::{Deserialize, Serialize};

/// Every MPI message of a run carries this tag, and one [`Message`] in JSON.
pub(crate) const TAG: i32 = 19;

/// What ranks tell each other. A run is one round (`play`) or several (a capacity search's
/// trials, a scenario's passes), numbered from 0; a message of another round is ignored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Message {
    /// Client to rank 0: its preroll is in (no error), or it could not open its source.
    Ready { round: u32, host: String, error: Option<String> },
    /// Rank 0 to a client: the clock round trip `seq`; answered at once with a [`Message::Pong`].
    Ping { seq: u32 },
    /// Client to rank 0: its wall clock when it answered ping `seq`, in ns since the epoch.
    Pong { seq: u32, wall_ns: u64 },
    /// Rank 0 to a client: frame 0 falls due at `start_wall_ns` on rank 0's clock, and the
    /// client's clock reads `offset_ns` more than rank 0's (measured over `rtt_ns`).
    Start { round: u32, start_wall_ns: u64, offset_ns: i64, rtt_ns: u64 },
    /// Rank 0 to a client: the run does not start, for `reason`.
    Abort { round: u32, reason: String },
    /// Client to rank 0: its running counts, a few times a second (opaque here).
    Snapshot { round: u32, json: String },
    /// Client to rank 0: its whole report, once its run is over (opaque here).
    Final { round: u32, json: String },
    /// Rank 0 to a client: the round is over and merged; its exit code, and what the caller
    /// wants every client to know (a capacity trial's verdict).
    Done { round: u32, exit_code: u8, payload: String },
}

impl Message {
    pub(crate) fn encode(&self) -> Vec<u8> {
        // A message is strings and numbers: serialising it cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Message, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_and_garbage_is_an_error() {
        let messages = [
            Message::Ready { round: 0, host: "ws-1".into(), error: Some("no such file".into()) },
            Message::Ping { seq: 3 },
            Message::Pong { seq: 3, wall_ns: u64::MAX },
            Message::Start { round: 1, start_wall_ns: 1, offset_ns: -5, rtt_ns: 9 },
            Message::Abort { round: 1, reason: "client 2 failed".into() },
            Message::Snapshot { round: 2, json: "{}".into() },
            Message::Final { round: 2, json: "{\"status\":\"complete\"}".into() },
            Message::Done { round: 2, exit_code: 3, payload: "{\"passed\":true}".into() },
        ];
        for m in messages {
            assert_eq!(Message::decode(&m.encode()).unwrap(), m);
        }
        assert!(Message::decode(b"\xff\x00not json").is_err());
    }
}
