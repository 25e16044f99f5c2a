//! A view with known numbers for the tests.

use std::time::Duration;

use crate::view::{DashboardView, Drops, StageView, StreamView};

/// Two streams (A dropping for storage and output, B for decode and unreadable frames), three
/// stages, no clients, 1:23 into a 5-minute run.
pub(crate) fn sample_view() -> DashboardView {
    DashboardView {
        title: "playsim play nfs://host/export/seq  DPX 4K 24 fps  2 streams".into(),
        elapsed: Duration::from_secs(83),
        planned: Some(Duration::from_secs(300)),
        streams: vec![
            StreamView {
                name: "A".into(),
                presented: 1992,
                dropped: Drops { storage: 3, decode: 0, output: 1, unreadable: 0 },
                buffered: 6,
                window: 8,
                slack_ms: vec![10.0, -3.5, 20.0, 15.0, 12.0],
                mb_per_s: 1185.2,
                fps: 24.0,
            },
            StreamView {
                name: "B".into(),
                presented: 1990,
                dropped: Drops { storage: 0, decode: 7, output: 0, unreadable: 2 },
                buffered: 1,
                window: 8,
                slack_ms: vec![5.0, 3.0, 2.0],
                mb_per_s: 1190.4,
                fps: 23.9,
            },
        ],
        stages: vec![
            StageView { name: "read".into(), cpu_percent: 12.5, p99_ms: Some(8.1) },
            StageView { name: "decode".into(), cpu_percent: 180.0, p99_ms: Some(35.2) },
            StageView { name: "output".into(), cpu_percent: 4.0, p99_ms: None },
        ],
        clients: Vec::new(),
        status: Some("matrix: dpx-4k @ 24 fps, trial 3 of 41, 2 streams".into()),
    }
}
