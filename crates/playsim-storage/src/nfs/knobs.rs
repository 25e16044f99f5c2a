//! The knobs of playsim's NFS client, which `nfs://` and `nfs+rdma://` share: `--nconnect`,
//! `--rsize`, `--nfs-timeout` (and their scenario keys), each parsed into [`NfsOptions`].

use playsim_core::units;

use super::NfsOptions;
use crate::knob::{set_with, KnobGroup, TransportKnob};

/// playsim's NFS client settings, for `nfs://` and `nfs+rdma://` sources and destinations.
pub static NFS_KNOBS: KnobGroup = KnobGroup {
    heading: "playsim's NFS client (nfs://, nfs+rdma://)",
    knobs: &[
        TransportKnob {
            flag: "nconnect",
            key: "nconnect",
            help: "TCP connections to the NFS server per stream, like Linux's nconnect mount option",
            shown_default: Some("1"),
            value_name: "NCONNECT",
            per_stream: true,
            example: "nconnect = 4  (1 to 64)",
            apply: |text, options| set_with(text, options, nconnect, |o: &mut NfsOptions, v| o.nconnect = v),
        },
        TransportKnob {
            flag: "rsize",
            key: "rsize",
            help: "Bytes per NFS READ, e.g. 1M, 256K (capped by the server's largest)",
            shown_default: Some("1M"),
            value_name: "RSIZE",
            per_stream: true,
            example: "rsize = \"1M\"  (4K to 64M)",
            apply: |text, options| set_with(text, options, rsize, |o: &mut NfsOptions, v| o.rsize = v),
        },
        TransportKnob {
            flag: "nfs-timeout",
            key: "nfs_timeout",
            help: "How long an NFS call may go unanswered, through reconnects, before the run ends, e.g. 30s",
            shown_default: Some("30s"),
            value_name: "NFS_TIMEOUT",
            per_stream: true,
            example: "nfs_timeout = \"30s\"",
            apply: |text, options| {
                set_with(text, options, units::parse_duration, |o: &mut NfsOptions, v| o.timeout = v)
            },
        },
    ],
};

/// TCP connections per stream: 1 to 64.
pub fn nconnect(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 1..=64) => Ok(n),
        _ => Err(format!("'{s}' is not a connection count from 1 to 64 (for example 4)")),
    }
}

/// Bytes per NFS READ: 4K to 64M.
pub fn rsize(s: &str) -> Result<usize, String> {
    match units::parse_bytes(s) {
        Ok(n) if (4096..=64 << 20).contains(&n) => Ok(n),
        _ => Err(format!("read size '{s}' is out of range: 4K to 64M (for example 1M)")),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::options::TransportOptions;

    #[test]
    fn every_default_shown_in_help_is_the_default() {
        let default = NfsOptions::default();
        let mut options = TransportOptions::new();
        for knob in NFS_KNOBS.knobs {
            let shown = knob.shown_default.unwrap_or_default();
            assert_eq!((knob.apply)(shown, &mut options), Ok(()), "{}", knob.flag);
        }
        let set = options.get::<NfsOptions>();
        assert_eq!(
            (set.nconnect, set.rsize, set.timeout),
            (default.nconnect, default.rsize, default.timeout)
        );
    }

    #[test]
    fn values_are_checked_with_an_example() {
        assert_eq!(nconnect("4"), Ok(4));
        assert!(nconnect("65").unwrap_err().contains("for example 4"));
        assert_eq!(rsize("256K"), Ok(256 << 10));
        assert!(rsize("1000000000000000000").unwrap_err().contains("4K to 64M"));
        let mut options = TransportOptions::new();
        assert_eq!((NFS_KNOBS.knobs[2].apply)("5s", &mut options), Ok(()));
        assert_eq!(options.get::<NfsOptions>().timeout, Duration::from_secs(5));
    }
}
