//! The merged report of a run of several clients (`mpirun -np N playsim ...`): every client's
//! report, or its last snapshot, made into one [`Report`] on one time line.
//!
//! The rules:
//!
//! - **One time line.** A client's origin in rank 0's wall time is its `origin_unix_ns` minus
//!   its clock offset (its wall clock minus rank 0's). The merged report's origin is the
//!   earliest of these; every client's stream times (`t0_ns`, every [`FrameRecord`] time) are
//!   shifted by its origin minus the merged one. The merged `origin_unix_ns` and
//!   `started_at_unix_s` are the merged origin; `duration_s` runs from it to the last client's
//!   end of run.
//! - **Streams.** Every client's streams, in rank order, renamed `client K/<name>`, with
//!   `client = Some(K)`.
//! - **Totals in IOR's manner.** A client's start is its earliest stream `t0` (of the streams
//!   that had a frame due), its end its latest `t0 + span`, in merged time; bytes and frames
//!   presented are taken over the window from the first start to the last end. Frames due,
//!   presented, drops (cause by cause), early drops, bytes and stall are summed over the
//!   clients, those known only by a snapshot included. The bottleneck is
//!   [`Totals::limiting_stage`] over the merged drops and streams, as for a single run.
//! - **Latency** is the clients' histograms merged (`latency_histograms`), summarised once: not
//!   an average of percentiles. A client known only by a snapshot adds none.
//! - **CPU**: process and stage seconds summed over the clients (a snapshot's user+sys
//!   seconds count as user); system-wide seconds (/proc/stat: softirq) summed over the hosts,
//!   since clients on one host each saw the whole host (the one that saw the most counts);
//!   the per-GB figures are over the summed bytes. **Memory**: the
//!   peak and the end RSS are the largest client's, the pool bytes summed.
//! - **Status**: failed if any client failed; else partial if any client is partial, lost, or
//!   was never heard from; else complete. The error is the first client's error in rank order,
//!   prefixed `client K (host): `; with none, a lost client's last-heard time.
//! - **Settings, environment and version** are rank 0's (the first client with a report); the
//!   client rows carry the hosts.
//! - **A client known only by a snapshot** (lost, or rank 0 stopped by SIGTERM before its
//!   report came) has a row from the snapshot (fps = presented over the time since its first
//!   frame fell due) and no streams. A lost client is marked in its row (state `lost`,
//!   `last_heard_s`) and counted in `cluster.n_lost`; its counts are kept. A client whose
//!   report has no stream and no error had nothing to play (state `idle`): it has a row and
//!   counts in `n_clients`, and its origin is not the merged one. A client neither
//!   reported nor snapshotted has a row of zeros and a partial status.
//! - **No client at all** (`merge(vec![], ..)`) gives a valid report with status failed, the
//!   error "no client reported", no streams and a cluster of 0 clients.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{
    ClientReport, ClientState, ClusterReport, CpuReport, Drops, FrameRecord, LatencyHistograms, MemoryReport,
    Report, RunStatus, StageCpu, StreamReport, SystemCpu, Totals, SCHEMA_VERSION,
};

/// What rank 0 knows of one client when it merges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientInput {
    /// Its MPI rank.
    pub rank: u32,
    /// The host it ran on.
    pub host: String,
    /// The client's full report (its final one), or None when only snapshots arrived.
    pub report: Option<Report>,
    /// The last snapshot heard from it, used when `report` is None (a lost client, or SIGTERM
    /// at rank 0).
    pub snapshot: Option<ClientSnapshot>,
    /// Lost: it stopped reporting; `last_heard_unix_ns` says when it was last heard (in rank
    /// 0's wall time).
    pub lost: bool,
    /// When it was last heard from, ns since the Unix epoch on rank 0's wall clock.
    pub last_heard_unix_ns: Option<u64>,
    /// This client's wall clock minus rank 0's, in ns.
    pub clock_offset_ns: i64,
    /// The round trip the offset was measured with, in ns.
    pub clock_rtt_ns: u64,
    /// Its own report (`R.client-K.json`), when it wrote one.
    pub report_path: Option<String>,
}

/// A client's running counts, small enough to send a few times a second (its JSON is under
/// 1 KiB).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientSnapshot {
    /// The client's run origin, ns since the Unix epoch on its own wall clock.
    pub origin_unix_ns: u64,
    /// Its first frame's due time, ns from its origin, once started.
    #[serde(default)]
    pub t0_ns: Option<u64>,
    /// ns from its origin to this snapshot.
    pub elapsed_ns: u64,
    /// Streams it plays.
    pub streams: u32,
    /// Frames presented so far.
    pub presented: u64,
    /// Frames dropped so far, by cause.
    pub dropped: Drops,
    /// Bytes read so far.
    pub bytes_read: u64,
    /// Process CPU seconds (user + system) so far.
    pub cpu_s: f64,
    /// The process's peak resident memory so far, in bytes.
    pub peak_rss_bytes: u64,
    /// Its streams' transports, distinct, joined with ", ".
    #[serde(default)]
    pub transport: String,
    /// Complete only in the final snapshot.
    pub status: RunStatus,
}

impl ClientSnapshot {
    /// The final snapshot of a finished run's report: its counts at the end, for a rank 0 that
    /// is stopped before the report itself arrives.
    pub fn of_report(report: &Report) -> ClientSnapshot {
        let t = &report.totals;
        ClientSnapshot {
            origin_unix_ns: origin_of(report),
            t0_ns: first_start(&report.streams),
            elapsed_ns: seconds_to_ns(report.duration_s),
            streams: count_u32(report.streams.len()),
            presented: t.presented,
            dropped: t.dropped,
            bytes_read: t.bytes_read,
            cpu_s: report.cpu.process_user_s + report.cpu.process_sys_s,
            peak_rss_bytes: report.memory.peak_rss_bytes,
            transport: transports(&report.streams),
            status: report.status,
        }
    }
}

/// The merged report of `clients` (in any order; merged in rank order), launched by
/// `launcher` ("openmpi 4.1.4"). Never fails: see the module's rules for what each figure is.
pub fn merge(mut clients: Vec<ClientInput>, launcher: &str) -> Report {
    clients.sort_by_key(|c| c.rank);
    // Each client's origin in rank 0's wall time, when anything was heard from it.
    let origins: Vec<Option<u64>> = clients.iter().map(origin_in_rank0_time).collect();
    let merged_origin = origins.iter().flatten().copied().min().unwrap_or(0);
    let shifts: Vec<u64> = origins.iter().map(|o| o.map_or(0, |o| o.saturating_sub(merged_origin))).collect();

    let mut streams = Vec::new();
    for (client, &shift) in clients.iter().zip(&shifts) {
        if let Some(report) = &client.report {
            streams.extend(report.streams.iter().map(|s| shifted_stream(s, client.rank, shift)));
        }
    }
    let rows: Vec<ClientReport> =
        clients.iter().zip(&shifts).map(|(c, &shift)| client_row(c, shift, merged_origin)).collect();

    let mut totals = Totals::default();
    for (client, row) in clients.iter().zip(&rows) {
        // Saturating throughout: a report read from a file may hold any count.
        totals.frames_due = totals.frames_due.saturating_add(row.frames_due);
        totals.presented = totals.presented.saturating_add(row.presented);
        totals.dropped += row.dropped;
        totals.bytes_read = totals.bytes_read.saturating_add(row.bytes_read);
        if let Some(report) = &client.report {
            totals.early_drops += report.totals.early_drops;
            totals.stall_ms += report.totals.stall_ms;
        }
    }
    let first_start_ns = rows.iter().filter_map(|r| r.start_ns).min();
    let last_end_ns = rows.iter().filter_map(|r| r.end_ns).max();
    let window_s = match (first_start_ns, last_end_ns) {
        (Some(start), Some(end)) => end.saturating_sub(start) as f64 / 1e9,
        _ => 0.0,
    };
    if window_s > 0.0 {
        totals.fps = totals.presented as f64 / window_s;
        totals.mb_per_s = totals.bytes_read as f64 / 1e6 / window_s;
    }
    totals.bottleneck = Totals::limiting_stage(&totals.dropped, &streams).to_owned();

    let latency_histograms = clients
        .iter()
        .filter_map(|c| c.report.as_ref()?.latency_histograms.as_ref())
        .fold(None, |merged: Option<LatencyHistograms>, h| {
            let mut merged = merged.unwrap_or_default();
            merged.merge(h);
            Some(merged)
        });

    let (status, error) = status_and_error(&clients, &rows);
    let first = clients.iter().find_map(|c| c.report.as_ref());
    let duration_ns = clients
        .iter()
        .zip(&shifts)
        .filter_map(|(c, &shift)| {
            let run_ns = match (&c.report, &c.snapshot) {
                (Some(r), _) => seconds_to_ns(r.duration_s),
                (None, Some(s)) => s.elapsed_ns,
                (None, None) => return None,
            };
            Some(shift.saturating_add(run_ns))
        })
        .max()
        .unwrap_or(0);
    let n_lost = count_u32(clients.iter().filter(|c| c.lost).count());
    let cluster = ClusterReport {
        launcher: launcher.to_owned(),
        n_clients: count_u32(clients.len()),
        n_lost,
        start_skew_ms: start_skew_ns(&clients, &shifts) as f64 / 1e6,
        max_clock_offset_ms: rows.iter().map(|r| r.clock_offset_ms.abs()).fold(0.0, f64::max),
        first_start_ns: first_start_ns.unwrap_or(0),
        last_end_ns: last_end_ns.unwrap_or(0),
    };
    Report {
        schema_version: SCHEMA_VERSION,
        status,
        error,
        playsim_version: first
            .map_or_else(|| env!("CARGO_PKG_VERSION").to_owned(), |r| r.playsim_version.clone()),
        started_at_unix_s: merged_origin / 1_000_000_000,
        duration_s: duration_ns as f64 / 1e9,
        environment: first.map(|r| r.environment.clone()).unwrap_or_default(),
        settings: first.map(|r| r.settings.clone()).unwrap_or_default(),
        cpu: merged_cpu(&clients, totals.bytes_read),
        memory: merged_memory(&clients),
        totals,
        streams,
        origin_unix_ns: merged_origin,
        latency: latency_histograms.as_ref().map(LatencyHistograms::percentiles),
        latency_histograms,
        clients: rows,
        cluster: Some(cluster),
    }
}

/// The client's origin in rank 0's wall time: its own origin minus its clock offset.
fn origin_in_rank0_time(client: &ClientInput) -> Option<u64> {
    if is_idle(client) {
        return None;
    }
    let own = match (&client.report, &client.snapshot) {
        (Some(r), _) => origin_of(r),
        (None, Some(s)) => s.origin_unix_ns,
        (None, None) => return None,
    };
    let rank0 = i128::from(own) - i128::from(client.clock_offset_ns);
    Some(u64::try_from(rank0.max(0)).unwrap_or(u64::MAX))
}

/// A report's origin on its wall clock; for a report of an earlier version, which has none,
/// its start in whole seconds.
fn origin_of(report: &Report) -> u64 {
    if report.origin_unix_ns > 0 {
        report.origin_unix_ns
    } else {
        report.started_at_unix_s.saturating_mul(1_000_000_000)
    }
}

/// The stream as client `rank` played it, on the merged time line.
fn shifted_stream(stream: &StreamReport, rank: u32, shift: u64) -> StreamReport {
    let mut s = stream.clone();
    s.name = format!("client {rank}/{}", stream.name);
    s.client = Some(rank);
    s.t0_ns = s.t0_ns.saturating_add(shift);
    if shift > 0 {
        for f in &mut s.timeline {
            shift_frame(f, shift);
        }
    }
    s
}

fn shift_frame(f: &mut FrameRecord, shift: u64) {
    f.due_ns = f.due_ns.saturating_add(shift);
    for t in [
        &mut f.read_start_ns,
        &mut f.read_done_ns,
        &mut f.decode_done_ns,
        &mut f.output_done_ns,
        &mut f.presented_ns,
    ]
    .into_iter()
    .flatten()
    {
        *t = t.saturating_add(shift);
    }
}

/// A client that had nothing to play: its report has no stream and nothing went wrong.
fn is_idle(client: &ClientInput) -> bool {
    client.report.as_ref().is_some_and(|r| {
        r.streams.is_empty()
            && r.status == RunStatus::Complete
            && r.error.is_none()
            && r.totals.frames_due == 0
    })
}

/// The client's row, from its report, else its last snapshot, else zeros.
fn client_row(c: &ClientInput, shift: u64, merged_origin: u64) -> ClientReport {
    let mut row = ClientReport {
        rank: c.rank,
        host: c.host.clone(),
        state: if c.lost {
            ClientState::Lost
        } else if is_idle(c) {
            ClientState::Idle
        } else {
            ClientState::Reported
        },
        last_heard_s: c.last_heard_unix_ns.map(|t| (i128::from(t) - i128::from(merged_origin)) as f64 / 1e9),
        clock_offset_ms: c.clock_offset_ns as f64 / 1e6,
        clock_rtt_ms: c.clock_rtt_ns as f64 / 1e6,
        report_path: c.report_path.clone(),
        ..ClientReport::default()
    };
    if let Some(r) = &c.report {
        let t = &r.totals;
        let first = r.streams.first();
        row.status = r.status;
        row.error = r.error.clone();
        row.transport = transports(&r.streams);
        row.mount = first
            .and_then(|s| s.storage.mount.as_ref())
            .map(|m| format!("{} at {}", m.transport, m.mount_point));
        row.streams = count_u32(r.streams.len());
        row.frames_due = t.frames_due;
        row.presented = t.presented;
        row.dropped = t.dropped;
        row.bytes_read = t.bytes_read;
        row.fps = t.fps;
        row.mb_per_s = t.mb_per_s;
        row.cpu_s_per_gb = r.cpu.total_s_per_gb;
        row.peak_rss_bytes = r.memory.peak_rss_bytes;
        row.presenter_priority = first.and_then(|s| s.presenter_priority.clone());
        row.start_ns = first_start(&r.streams).map(|t| t.saturating_add(shift));
        row.end_ns = last_end(&r.streams).map(|t| t.saturating_add(shift));
    } else if let Some(s) = &c.snapshot {
        row.status = s.status;
        row.transport = s.transport.clone();
        row.streams = s.streams;
        row.frames_due = s.presented.saturating_add(s.dropped.total());
        row.presented = s.presented;
        row.dropped = s.dropped;
        row.bytes_read = s.bytes_read;
        let played_s = s.t0_ns.map_or(0.0, |t0| s.elapsed_ns.saturating_sub(t0) as f64 / 1e9);
        if played_s > 0.0 {
            row.fps = s.presented as f64 / played_s;
            row.mb_per_s = s.bytes_read as f64 / 1e6 / played_s;
        }
        if s.bytes_read > 0 {
            row.cpu_s_per_gb = s.cpu_s / (s.bytes_read as f64 / 1e9);
        }
        row.peak_rss_bytes = s.peak_rss_bytes;
        row.start_ns = s.t0_ns.map(|t| t.saturating_add(shift));
        row.end_ns = s.t0_ns.map(|_| s.elapsed_ns.saturating_add(shift));
    } else {
        row.status = RunStatus::Partial;
        row.error = Some("nothing was heard from it: no report, no snapshot".to_owned());
    }
    row
}

/// Failed if any client failed; else partial if any client is partial or lost; else
/// complete. The error: the first client error in rank order, else a lost client's last word.
fn status_and_error(clients: &[ClientInput], rows: &[ClientReport]) -> (RunStatus, Option<String>) {
    if clients.is_empty() {
        return (RunStatus::Failed, Some("no client reported (a run of 0 clients)".to_owned()));
    }
    let status = if rows.iter().any(|r| r.status == RunStatus::Failed) {
        RunStatus::Failed
    } else if rows.iter().any(|r| r.status == RunStatus::Partial || r.state == ClientState::Lost) {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    let label = |r: &ClientReport| format!("client {} ({})", r.rank, r.host);
    // A failure's error comes before a stop's, so that the error says why the status is what
    // it is.
    let failed = rows.iter().find(|r| r.status == RunStatus::Failed && r.error.is_some());
    let error = failed
        .or_else(|| rows.iter().find(|r| r.error.is_some()))
        .and_then(|r| Some(format!("{}: {}", label(r), r.error.as_deref()?)))
        .or_else(|| {
            let lost = rows.iter().find(|r| r.state == ClientState::Lost)?;
            Some(match lost.last_heard_s {
                Some(s) => {
                    format!("{}: stopped reporting (lost), last heard {s:.3} s after the start", label(lost))
                }
                None => format!("{}: stopped reporting (lost)", label(lost)),
            })
        });
    (status, error)
}

/// The spread of the clients' first presentations (frame 0's presented time, else its due
/// time; a snapshot's first due time), in ns.
fn start_skew_ns(clients: &[ClientInput], shifts: &[u64]) -> u64 {
    let firsts: Vec<u64> = clients
        .iter()
        .zip(shifts)
        .filter_map(|(c, &shift)| {
            let first = match (&c.report, &c.snapshot) {
                (Some(r), _) => r
                    .streams
                    .iter()
                    .filter_map(|s| s.timeline.iter().find(|f| f.frame_idx == 0))
                    .map(|f| f.presented_ns.unwrap_or(f.due_ns))
                    .min(),
                (None, Some(s)) => s.t0_ns,
                (None, None) => None,
            };
            first.map(|t| t.saturating_add(shift))
        })
        .collect();
    match (firsts.iter().min(), firsts.iter().max()) {
        (Some(min), Some(max)) => max - min,
        _ => 0,
    }
}

fn merged_cpu(clients: &[ClientInput], bytes_read: u64) -> CpuReport {
    let mut cpu = CpuReport::default();
    // The system-wide figures (/proc/stat) are the host's: clients on one host each saw the
    // whole host over the same run, so a host counts once, by its client that saw the most.
    let mut per_host: Vec<(&str, &SystemCpu)> = Vec::new();
    for c in clients {
        match (&c.report, &c.snapshot) {
            (Some(r), _) => {
                let (from, into) = (&r.cpu, &mut cpu);
                into.process_user_s += from.process_user_s;
                into.process_sys_s += from.process_sys_s;
                add_stages(&mut into.stages, &from.stages);
                match per_host.iter_mut().find(|(host, _)| *host == c.host) {
                    Some(seen) if system_total(&from.system) > system_total(seen.1) => seen.1 = &from.system,
                    Some(_) => {}
                    None => per_host.push((&c.host, &from.system)),
                }
            }
            (None, Some(s)) => cpu.process_user_s += s.cpu_s,
            (None, None) => {}
        }
    }
    for (_, system) in per_host {
        add_system(&mut cpu.system, system);
    }
    let gb = bytes_read as f64 / 1e9;
    if gb > 0.0 {
        cpu.user_s_per_gb = cpu.process_user_s / gb;
        cpu.sys_s_per_gb = cpu.process_sys_s / gb;
        cpu.softirq_s_per_gb = cpu.system.softirq_s / gb;
        cpu.total_s_per_gb = (cpu.process_user_s + cpu.process_sys_s + cpu.system.softirq_s) / gb;
    }
    cpu
}

fn system_total(s: &SystemCpu) -> f64 {
    s.user_s + s.nice_s + s.system_s + s.idle_s + s.iowait_s + s.irq_s + s.softirq_s + s.steal_s
}

fn add_stages(into: &mut StageCpu, from: &StageCpu) {
    into.read_s += from.read_s;
    into.decode_s += from.decode_s;
    into.output_s += from.output_s;
}

fn add_system(into: &mut SystemCpu, from: &SystemCpu) {
    into.user_s += from.user_s;
    into.nice_s += from.nice_s;
    into.system_s += from.system_s;
    into.idle_s += from.idle_s;
    into.iowait_s += from.iowait_s;
    into.irq_s += from.irq_s;
    into.softirq_s += from.softirq_s;
    into.steal_s += from.steal_s;
}

fn merged_memory(clients: &[ClientInput]) -> MemoryReport {
    let mut memory = MemoryReport::default();
    for c in clients {
        match (&c.report, &c.snapshot) {
            (Some(r), _) => {
                memory.peak_rss_bytes = memory.peak_rss_bytes.max(r.memory.peak_rss_bytes);
                memory.rss_bytes = memory.rss_bytes.max(r.memory.rss_bytes);
                memory.pool_bytes = memory.pool_bytes.saturating_add(r.memory.pool_bytes);
            }
            (None, Some(s)) => memory.peak_rss_bytes = memory.peak_rss_bytes.max(s.peak_rss_bytes),
            (None, None) => {}
        }
    }
    memory
}

/// The earliest `t0` of the streams that had a frame due.
fn first_start(streams: &[StreamReport]) -> Option<u64> {
    streams.iter().filter(|s| s.frames_due > 0).map(|s| s.t0_ns).min()
}

/// The latest end of span of the streams that had a frame due.
fn last_end(streams: &[StreamReport]) -> Option<u64> {
    streams.iter().filter(|s| s.frames_due > 0).map(|s| s.t0_ns.saturating_add(s.span_ns)).max()
}

/// The streams' transports, distinct, in order of first appearance, joined with ", ".
fn transports(streams: &[StreamReport]) -> String {
    let mut seen = BTreeSet::new();
    let kept: Vec<&str> = streams
        .iter()
        .map(|s| s.storage.transport.as_str())
        .filter(|t| !t.is_empty() && seen.insert(*t))
        .collect();
    kept.join(", ")
}

fn seconds_to_ns(s: f64) -> u64 {
    // `as` saturates, and turns NaN into 0.
    (s * 1e9) as u64
}

fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use hdrhistogram::Histogram;

    use super::*;
    use crate::model::{DropCauseName, Percentiles};
    use crate::testutil::{
        client_input as input, client_report, lost_client, read_samples, slack_samples, three_clients,
        SyntheticStream, MS, S, T,
    };
    use crate::{SignedHistogram, HISTOGRAM_SIGFIG};

    #[test]
    fn system_wide_cpu_counts_each_host_once() {
        let distinct = merge(three_clients(), "openmpi 4.1.4");
        let mut clients = three_clients();
        for c in &mut clients {
            c.host = "one-host".into();
        }
        let one_host = merge(clients, "openmpi 4.1.4");
        let (a, b) = (&distinct.cpu, &one_host.cpu);
        assert_eq!((a.process_user_s, a.process_sys_s), (b.process_user_s, b.process_sys_s));
        assert_eq!(a.system.softirq_s, 1.5, "three hosts, 0.5 s each");
        assert_eq!(b.system.softirq_s, 0.5, "one host seen by three clients counts once");
        assert!(b.total_s_per_gb < a.total_s_per_gb);
    }

    #[test]
    fn an_idle_client_has_a_row_and_changes_nothing_else() {
        let busy = merge(three_clients(), "openmpi 4.1.4");
        let mut clients = three_clients();
        // Idle, with an origin before everyone's: it must not become the merged origin.
        let idle = Report { origin_unix_ns: T - 5 * S, ..Report::default() };
        clients.push(input(3, "hostd", idle, 0));
        let merged = merge(clients, "openmpi 4.1.4");
        let row = &merged.clients[3];
        assert_eq!((row.state, row.streams, row.frames_due, row.start_ns), (ClientState::Idle, 0, 0, None));
        assert_eq!(merged.origin_unix_ns, busy.origin_unix_ns);
        assert_eq!(merged.totals, busy.totals);
        assert_eq!(merged.status, RunStatus::Complete);
        assert_eq!(merged.cluster.as_ref().map(|c| (c.n_clients, c.n_lost)), Some((4, 0)));
        assert!(
            crate::format::text::summary(&merged).contains("idle"),
            "{}",
            crate::format::text::summary(&merged)
        );
    }

    #[test]
    fn totals_are_sums_and_drops_are_summed_cause_by_cause() {
        let merged = merge(three_clients(), "openmpi 4.1.4");
        let t = &merged.totals;
        assert_eq!(t.frames_due, 240 + 240 + 240 + 290);
        assert_eq!(t.presented, 240 + 230 + 200 + 288);
        assert_eq!(t.dropped, Drops { storage: 10, decode: 30, output: 10, unreadable: 2 });
        assert_eq!(t.early_drops, Drops { storage: 4, decode: 7, ..Drops::default() });
        assert_eq!(t.bytes_read, 480 * 1_000_000 + 240 * 2_000_000 + 290 * 1_000_000);
        assert_eq!(t.stall_ms, 4.0 * 1.5);
        assert_eq!(t.bottleneck, "decode", "the cause of most drops, over every client");
        assert_eq!(merged.status, RunStatus::Complete);
        assert_eq!(merged.error, None);

        let rows = &merged.clients;
        assert_eq!(rows.iter().map(|r| r.rank).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(rows.iter().map(|r| r.host.as_str()).collect::<Vec<_>>(), ["hosta", "hostb", "hostc"]);
        assert_eq!(rows.iter().map(|r| r.streams).collect::<Vec<_>>(), [2, 1, 1]);
        assert_eq!(rows[1].dropped, Drops { decode: 30, output: 10, ..Drops::default() });
        assert_eq!(rows[1].transport, "nfs");
        assert_eq!((rows[0].fps, rows[0].presented), (47.0, 470), "a client's own rate, over its span");
        assert_eq!(rows[1].clock_offset_ms, 500.0);
        assert_eq!(rows[2].clock_offset_ms, -250.0);
        assert_eq!(rows[0].clock_rtt_ms, 0.04);
        assert_eq!(rows[2].report_path.as_deref(), Some("run.client-2.json"));
        assert!(rows.iter().all(|r| r.state == ClientState::Reported && r.status == RunStatus::Complete));
        let one = client_report(T, &[SyntheticStream::default(), SyntheticStream::default()], &[], &[]);
        assert_eq!(rows[0].cpu_s_per_gb, one.cpu.total_s_per_gb);
        assert_eq!(rows[0].peak_rss_bytes, 100 << 20);

        // CPU summed, per GB over the summed bytes; the largest peak, the pools summed.
        let gb = t.bytes_read as f64 / 1e9;
        assert_eq!((merged.cpu.process_user_s, merged.cpu.process_sys_s), (6.0, 3.0));
        assert_eq!(merged.cpu.total_s_per_gb, (6.0 + 3.0 + 1.5) / gb);
        assert_eq!(merged.cpu.stages.decode_s, 4.5);
        assert_eq!(
            merged.memory,
            MemoryReport { peak_rss_bytes: 100 << 20, rss_bytes: 80 << 20, pool_bytes: 30 << 20 }
        );
        let cluster = merged.cluster.as_ref().unwrap();
        assert_eq!((cluster.launcher.as_str(), cluster.n_clients, cluster.n_lost), ("openmpi 4.1.4", 3, 0));
        assert_eq!(cluster.max_clock_offset_ms, 500.0);
    }

    #[test]
    fn rates_are_taken_over_the_first_start_to_the_last_end() {
        let merged = merge(three_clients(), "openmpi 4.1.4");
        let rows = &merged.clients;
        // Starts: 0.1 s, 2 s + 0.2 s, 1 s + 0.1 s; ends: + 10 s, + 10 s, + 12 s.
        assert_eq!(
            rows.iter().map(|r| r.start_ns).collect::<Vec<_>>(),
            [Some(100 * MS), Some(2_200 * MS), Some(1_100 * MS)]
        );
        assert_eq!(
            rows.iter().map(|r| r.end_ns).collect::<Vec<_>>(),
            [Some(10_100 * MS), Some(12_200 * MS), Some(13_100 * MS)]
        );
        let cluster = merged.cluster.as_ref().unwrap();
        assert_eq!((cluster.first_start_ns, cluster.last_end_ns), (100 * MS, 13_100 * MS));
        let t = &merged.totals;
        assert_eq!(t.fps, 958.0 / 13.0);
        assert_eq!(t.mb_per_s, 1_250.0 / 13.0);
        assert_eq!(merged.duration_s, 1.0 + 12.5, "to the last client's end of run");
    }

    #[test]
    fn streams_are_put_on_one_time_line_and_keep_their_client() {
        let clients = three_clients();
        let own = clients[0].report.clone().unwrap().streams[0].clone();
        let merged = merge(clients, "openmpi 4.1.4");
        assert_eq!(merged.origin_unix_ns, T, "the earliest client origin, in rank 0's time");
        assert_eq!(merged.started_at_unix_s, T / S);
        let names: Vec<&str> = merged.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["client 0/stream 0", "client 0/stream 1", "client 1/stream 0", "client 2/stream 0"]
        );
        assert_eq!(
            merged.streams.iter().map(|s| s.client).collect::<Vec<_>>(),
            [Some(0), Some(0), Some(1), Some(2)]
        );
        // Client 2's run started 1 s after rank 0's, in rank 0's time: every time moves by 1 s.
        let s = &merged.streams[3];
        assert_eq!(s.t0_ns, own.t0_ns + S);
        for (moved, was) in s.timeline.iter().zip(&own.timeline) {
            assert_eq!(moved.due_ns, was.due_ns + S);
            assert_eq!(moved.read_start_ns, was.read_start_ns.map(|t| t + S));
            assert_eq!(moved.read_done_ns, was.read_done_ns.map(|t| t + S));
            assert_eq!(moved.presented_ns, was.presented_ns.map(|t| t + S));
            assert_eq!(moved.decode_done_ns, None, "a stage not reached stays empty");
            assert_eq!((moved.frame_idx, moved.cause, moved.bytes), (was.frame_idx, was.cause, was.bytes));
        }
        assert_eq!(merged.streams[0].t0_ns, 100 * MS, "rank 0's own times stay");
        assert_eq!(merged.streams[2].timeline[1].cause, Some(DropCauseName::Storage));
    }

    #[test]
    fn latency_is_the_union_of_the_clients_samples() {
        let merged = merge(three_clients(), "openmpi 4.1.4");
        let mut read = Histogram::<u64>::new(HISTOGRAM_SIGFIG).unwrap();
        let mut slack = SignedHistogram::new();
        for rank in 0..3 {
            for ns in read_samples(rank) {
                read.record(ns).unwrap();
            }
            for ns in slack_samples(rank) {
                slack.record(ns);
            }
        }
        let latency = merged.latency.as_ref().unwrap();
        assert_eq!(latency.read, Percentiles::from_histogram_ns(&read));
        assert_eq!(latency.slack, slack.percentiles());
        assert_eq!(latency.read.count, 500 + 800 + 1_100);
        assert_eq!(latency.decode, Percentiles::default(), "no samples, none made up");
        assert_eq!(
            merged.latency_histograms.as_ref().unwrap().read,
            crate::model::histograms::buckets(&read)
        );
    }

    #[test]
    fn a_lost_client_keeps_its_last_counts_and_is_marked() {
        let mut clients = three_clients();
        clients.push(lost_client());
        let merged = merge(clients, "openmpi 4.1.4");
        let row = &merged.clients[3];
        assert_eq!((row.state, row.last_heard_s), (ClientState::Lost, Some(4.6)));
        assert_eq!((row.presented, row.frames_due, row.streams), (96, 99, 2));
        assert_eq!(row.fps, 24.0, "96 frames in the 4 s since its first frame fell due");
        assert_eq!(row.mb_per_s, 99.0 / 4.0);
        assert_eq!(row.cpu_s_per_gb, 1.25 / 0.099);
        assert_eq!((row.start_ns, row.end_ns), (Some(600 * MS), Some(4_600 * MS)));
        assert_eq!(merged.streams.len(), 4, "no stream from a snapshot");
        assert_eq!(merged.totals.presented, 958 + 96, "its counts are kept");
        assert_eq!(merged.totals.dropped.storage, 13);
        assert_eq!(merged.memory.peak_rss_bytes, 300 << 20);
        assert_eq!(merged.cpu.process_user_s, 6.0 + 1.25);
        assert_eq!(merged.latency.as_ref().unwrap().read.count, 2_400, "a snapshot adds no histogram");
        assert_eq!(merged.cluster.as_ref().unwrap().n_lost, 1);
        assert_eq!(merged.status, RunStatus::Partial);
        assert_eq!(
            merged.error.as_deref(),
            Some("client 3 (hostd): stopped reporting (lost), last heard 4.600 s after the start")
        );
    }

    #[test]
    fn only_snapshots_still_make_a_report() {
        // SIGTERM at rank 0 before any final report came: rows from snapshots, no streams.
        let mut only = lost_client();
        only.rank = 0;
        only.lost = false;
        let merged = merge(vec![only], "openmpi 4.1.4");
        assert_eq!(merged.origin_unix_ns, T + 500 * MS);
        assert_eq!(merged.clients[0].start_ns, Some(100 * MS));
        assert_eq!(merged.totals.fps, 24.0);
        assert_eq!((merged.latency.is_none(), merged.streams.is_empty()), (true, true));
        assert_eq!(merged.status, RunStatus::Partial);
        assert_eq!(merged.playsim_version, env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn a_failure_outranks_a_stop_and_names_its_client() {
        let mut clients = three_clients();
        let stopped = clients[0].report.as_mut().unwrap();
        stopped.status = RunStatus::Partial;
        stopped.error = Some("stopped before the end (interrupted)".into());
        let merged = merge(clients.clone(), "openmpi 4.1.4");
        assert_eq!(merged.status, RunStatus::Partial);
        assert_eq!(merged.error.as_deref(), Some("client 2 (hostc): stopped before the end (interrupted)"));
        let failed = clients[1].report.as_mut().unwrap();
        failed.status = RunStatus::Failed;
        failed.error = Some("reading frame 7: connection reset".into());
        let merged = merge(clients, "openmpi 4.1.4");
        assert_eq!(merged.status, RunStatus::Failed);
        assert_eq!(merged.error.as_deref(), Some("client 0 (hosta): reading frame 7: connection reset"));
        assert_eq!(merged.clients[0].status, RunStatus::Failed);
    }

    #[test]
    fn a_client_never_heard_from_makes_the_run_partial() {
        let mut clients = three_clients();
        clients.push(ClientInput { rank: 3, host: "hostd".into(), ..ClientInput::default() });
        let merged = merge(clients, "openmpi 4.1.4");
        assert_eq!(merged.status, RunStatus::Partial);
        assert_eq!(merged.origin_unix_ns, T, "a client with no origin does not move the time line");
        assert_eq!((merged.clients[3].presented, merged.clients[3].start_ns), (0, None));
        assert!(merged.error.as_deref().unwrap().starts_with("client 3 (hostd): nothing was heard"));
    }

    #[test]
    fn start_skew_is_the_spread_of_the_first_presentations() {
        // Two clients whose first frames fall due at the same instant in rank 0's time (after
        // the barrier); client 1 presents its first 300 us late.
        let c0 = client_report(T, &[SyntheticStream::default()], &[], &[]);
        let c1 = client_report(
            T + 2 * MS,
            &[SyntheticStream { t0_ns: 98 * MS, present_late_ns: 300_000, ..SyntheticStream::default() }],
            &[],
            &[],
        );
        let merged = merge(vec![input(0, "a", c0, 0), input(1, "b", c1, -1_500_000)], "openmpi 4.1.4");
        let cluster = merged.cluster.unwrap();
        // Client 1's origin in rank 0's time is T + 3.5 ms, its t0 98 ms: 101.5 ms against 100.
        assert_eq!(cluster.start_skew_ms, 1.8);
        assert_eq!(cluster.max_clock_offset_ms, 1.5);
    }

    #[test]
    fn no_client_gives_a_valid_failed_report() {
        let merged = merge(Vec::new(), "openmpi 4.1.4");
        assert_eq!(merged.status, RunStatus::Failed);
        assert_eq!(merged.error.as_deref(), Some("no client reported (a run of 0 clients)"));
        assert_eq!(merged.cluster.as_ref().map(|c| c.n_clients), Some(0));
        assert!(merged.streams.is_empty() && merged.clients.is_empty());
        assert_eq!(merged.schema_version, SCHEMA_VERSION);
        let back = crate::format::json::from_str(&crate::format::json::to_string_pretty(&merged)).unwrap();
        assert_eq!(back, merged);
        let text = crate::format::text::summary(&merged);
        assert!(text.contains("no client reported"), "{text}");
    }

    #[test]
    fn the_merged_report_reads_back_as_a_report() {
        let mut clients = three_clients();
        clients.push(lost_client());
        let merged = merge(clients, "openmpi 4.1.4");
        let text = crate::format::json::to_string_pretty(&merged);
        let back = crate::format::json::from_str(&text).unwrap();
        assert_eq!(back.clients, merged.clients);
        assert_eq!(back.cluster, merged.cluster);
        assert_eq!(back.latency_histograms, merged.latency_histograms);
        assert_eq!(back.streams, merged.streams);
        // serde_json reads a float back to within its last digit, not always to the bit.
        assert_eq!(
            (back.totals.presented, back.totals.dropped),
            (merged.totals.presented, merged.totals.dropped)
        );
        assert!((back.totals.fps - merged.totals.fps).abs() < 1e-9);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["clients"][3]["state"], "lost");
        assert_eq!(value["streams"][2]["client"], 1);
        assert!(value["streams"][0].get("client").is_some());
    }

    #[test]
    fn a_snapshot_is_small_and_a_report_gives_its_final_one() {
        let report = client_report(T, &[SyntheticStream::default(), SyntheticStream::default()], &[], &[]);
        let snapshot = ClientSnapshot {
            dropped: Drops { storage: u64::MAX, decode: u64::MAX, output: u64::MAX, unreadable: u64::MAX },
            transport: "nfs, sim, local".into(),
            ..ClientSnapshot::of_report(&report)
        };
        let json = serde_json::to_string(&snapshot).unwrap();
        assert!(json.len() < 1024, "{} bytes: {json}", json.len());
        let back: ClientSnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snapshot);
        let last = ClientSnapshot::of_report(&report);
        assert_eq!((last.origin_unix_ns, last.t0_ns, last.streams), (T, Some(100 * MS), 2));
        assert_eq!((last.presented, last.bytes_read, last.cpu_s), (480, 480_000_000, 3.0));
        assert_eq!(last.elapsed_ns, 10_500 * MS);
        // Hostile counts saturate rather than panic.
        let hostile = ClientInput { snapshot: Some(snapshot), ..ClientInput::default() };
        let merged = merge(vec![hostile.clone(), ClientInput { rank: 1, ..hostile }], "x");
        assert_eq!(merged.totals.dropped.storage, u64::MAX);
    }
}
