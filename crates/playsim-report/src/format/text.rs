//! The plain-text summary printed at the end of a run.
//!
//! It reads like the tools engineers already know: Flame's dropped-frame
//! counters by cause (video disk, GPU, broadcast), then frametest's frame and
//! data rates, then per-stage latency percentiles, CPU use and memory.

use std::collections::BTreeSet;

use crate::model::{
    ClientReport, ClientState, DropCauseName, Drops, MountReport, Percentiles, PoolBuffers, Report,
    RunStatus, StageLatency, StreamReport,
};
use crate::rendering::{RenderError, Renderer};

/// The end-of-run summary ([`summary`]'s text): the `text` renderer.
#[derive(Clone, Copy, Debug, Default)]
pub struct SummaryText;

impl Renderer<Report> for SummaryText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn render(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), RenderError> {
        Ok(out.write_all(summary(report).as_bytes())?)
    }
}

/// Width of the label column of `label  value` lines.
const LABEL: usize = 20;
/// Unreadable frames listed by name; the rest are counted.
const UNREADABLE_SHOWN: usize = 5;
/// The mount options the summary shows, in this order (the JSON has them all): those
/// that shape reads. `sec` is shown only when it is not plain `sys` (Kerberos costs CPU).
const MOUNT_OPTIONS_SHOWN: [&str; 14] = [
    "vers",
    "proto",
    "rsize",
    "nconnect",
    "max_connect",
    "hard",
    "soft",
    "softerr",
    "sec",
    "xprtsec",
    "fsc",
    "cache",
    "multichannel",
    "max_channels",
];

/// The end-of-run summary: plain text, no colour, about 30 lines for one stream.
///
/// ```
/// let report = playsim_report::Report { schema_version: 1, ..Default::default() };
/// let text = playsim_report::render::summary(&report);
/// assert!(text.starts_with("playsim : complete in 0.00 s"));
/// ```
pub fn summary(report: &Report) -> String {
    let mut out = Vec::new();
    out.push(header(report));
    sources(report, &mut out);
    out.push(line("settings", &settings(report)));
    out.push(String::new());
    drops_table(report, &mut out);
    out.push(String::new());
    rates(report, &mut out);
    if !report.clients.is_empty() {
        out.push(String::new());
        clients_table(report, &mut out);
    }
    // A merged report's streams are many: its latency is the run-wide table alone (the JSON
    // has each stream's).
    let merged = !report.clients.is_empty();
    if !merged {
        for s in &report.streams {
            out.push(String::new());
            latency_table(&s.latency, &latency_title(s, report.streams.len() > 1), &mut out);
        }
    }
    if let Some(latency) = report.latency.as_ref().filter(|_| merged || report.streams.len() > 1) {
        out.push(String::new());
        let title = if merged { "latency ms, all clients" } else { "latency ms, all streams" };
        latency_table(latency, title, &mut out);
    }
    out.push(String::new());
    cpu(report, &mut out);
    memory(report, &mut out);
    presenter(report, &mut out);
    unreadable(report, &mut out);
    if let Some(error) = &report.error {
        out.push(line("error", error));
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// A warning when a paced stream's presentation thread could not be raised above normal
/// priority: its pacing error then measures the machine's scheduling, not only playsim.
fn presenter(r: &Report, out: &mut Vec<String>) {
    if r.streams.iter().any(|s| s.presenter_priority.as_deref() == Some("normal")) {
        out.push(line(
            "presentation",
            "at normal priority (real-time was refused): the pacing error includes this machine's \
             scheduling delays; run as root or grant CAP_SYS_NICE for a real-time presentation thread",
        ));
    }
}

/// `playsim 0.1.0: complete in 10.50 s, fps 24, transport nfs, source /mnt/shot`.
fn header(r: &Report) -> String {
    let duration = format!("{:.2} s", r.duration_s);
    let status = match r.status {
        RunStatus::Complete => format!("complete in {duration}"),
        RunStatus::Partial => format!("partial, stopped after {duration}"),
        RunStatus::Failed => format!("failed after {duration}"),
    };
    let mut h = format!("playsim {}: {status}", r.playsim_version);
    let fps = if r.settings.fps.is_empty() {
        distinct(r.streams.iter().map(|s| s.fps.as_str()))
    } else {
        r.settings.fps.clone()
    };
    if !fps.is_empty() {
        h.push_str(&format!(", fps {fps}"));
    }
    let transports = distinct(r.streams.iter().map(|s| s.storage.transport.as_str()));
    if !transports.is_empty() {
        h.push_str(&format!(", transport {transports}"));
    }
    match r.streams.as_slice() {
        [] => {}
        [s] => h.push_str(&format!(", source {}", s.source.location)),
        // The clients of a merged run often play one source: it is named once.
        many if !r.clients.is_empty() => {
            h.push_str(&format!(", sources {}", distinct(many.iter().map(|s| s.source.location.as_str()))));
        }
        many => {
            let sources: Vec<&str> = many.iter().map(|s| s.source.location.as_str()).collect();
            h.push_str(&format!(", sources {}", sources.join(", ")));
        }
    }
    h
}

/// The media and storage lines, one of each per stream.
fn sources(r: &Report, out: &mut Vec<String>) {
    let several = r.streams.len() > 1;
    let tag = |s: &StreamReport| if several { format!("[{}] ", s.name) } else { String::new() };
    for s in &r.streams {
        let src = &s.source;
        let mut media = format!("{}{}, {}", tag(s), src.pattern, src.format);
        if src.width > 0 && src.height > 0 {
            media.push_str(&format!(" {}x{}", src.width, src.height));
        }
        if let Some(rate) = &src.frame_rate {
            media.push_str(&format!(" at {rate}"));
        }
        media.push_str(&format!(", frames {}-{} ({} frames", src.first_frame, src.last_frame, src.n_frames));
        match src.gaps.len() {
            0 => media.push(')'),
            1 => media.push_str(", 1 gap)"),
            n => media.push_str(&format!(", {n} gaps)")),
        }
        out.push(line("media", &media));
        // The decoder line only when it says more than the format's name (a backend, threads).
        if !s.source.decoder.is_empty() && s.source.decoder != s.source.format {
            let mut decoder = format!("{}{}", tag(s), s.source.decoder);
            if !s.source.pixel_format.is_empty() {
                decoder.push_str(&format!(", to {}", s.source.pixel_format));
            }
            out.push(line("decoder", &decoder));
        }
        if let Some(index) = &src.index {
            out.push(line("index", &format!("{}{index}", tag(s))));
        }
        if !src.output_path.is_empty() {
            out.push(line("output", &format!("{}{}", tag(s), src.output_path)));
        }
    }
    for s in &r.streams {
        let st = &s.storage;
        let mut parts =
            vec![format!("{}{}", tag(s), st.transport), format!("{} blocks", bytes(st.block_size))];
        if st.direct {
            parts.push("direct".into());
        }
        parts.push(format!("{} reads", st.n_reads));
        if st.cold.requested {
            let mut cold = format!("cold: {} files dropped", st.cold.files_dropped);
            if let Some(m) = &st.cold.message {
                cold.push_str(&format!(" ({m})"));
            }
            parts.push(cold);
        }
        // Options last: mount options can be long.
        parts.extend(st.options.iter().map(|(k, v)| format!("{k}={v}")));
        out.push(line("storage", &parts.join(", ")));
        if let Some(mount) = &st.mount {
            out.push(line("storage mount", &format!("{}{}", tag(s), mount_line(mount))));
        }
    }
}

/// `/mnt/isilon: nfs over rdma (vers=4.2, proto=rdma, rsize=1048576, nconnect=8, hard)`.
fn mount_line(m: &MountReport) -> String {
    let mut text = format!("{}: {}", m.mount_point, m.transport);
    let shown: Vec<String> = MOUNT_OPTIONS_SHOWN
        .iter()
        .filter_map(|&key| {
            let value = m.options.get(key)?;
            match (key, value.as_str()) {
                ("sec", "sys") => None,
                (_, "") => Some(key.to_owned()),
                _ => Some(format!("{key}={value}")),
            }
        })
        .collect();
    if !shown.is_empty() {
        text.push_str(&format!(" ({})", shown.join(", ")));
    }
    text
}

fn settings(r: &Report) -> String {
    let s = &r.settings;
    let mut parts = vec![
        format!("preroll {}", s.preroll),
        format!("prefetch {}", s.prefetch),
        format!("io depth {}", s.io_depth),
        format!("decode threads {}", s.decode_threads),
        if s.output_threads > 1 && s.output_stage != "none" {
            format!("output {} on {} threads", s.output_stage, s.output_threads)
        } else {
            format!("output {}", s.output_stage)
        },
    ];
    for (on, name) in [(s.no_drop, "no-drop"), (s.loop_playback, "loop"), (s.verify, "verify")] {
        if on {
            parts.push(name.into());
        }
    }
    if let Some(n) = s.frames {
        parts.push(format!("frames {n}"));
    }
    if let Some(d) = s.duration_s {
        parts.push(format!("duration {d} s"));
    }
    if let Some(n) = s.max_drops {
        parts.push(format!("max drops {n}"));
    }
    match (s.order.as_str(), s.seed) {
        ("" | "forward", _) => {}
        (order, Some(seed)) => parts.push(format!("order {order} (seed {seed})")),
        (order, None) => parts.push(format!("order {order}")),
    }
    if let Some(range) = &s.range {
        parts.push(format!("range {range}"));
    }
    parts.join(", ")
}

/// Flame's counters: one row per cause, one column per stream, and a total
/// column when there are several.
fn drops_table(r: &Report, out: &mut Vec<String>) {
    // A merged report's drops by client are in its clients table: here, their total.
    let mut columns: Vec<(String, Drops)> = if r.clients.is_empty() {
        r.streams.iter().map(|s| (s.name.clone(), s.dropped)).collect()
    } else {
        Vec::new()
    };
    if columns.len() != 1 {
        columns.push(("total".into(), r.totals.dropped));
    }
    let widths: Vec<usize> = columns.iter().map(|(name, _)| name.len().max(6)).collect();
    let row = |label: &str, cell: &dyn Fn(&Drops) -> String| {
        let mut l = format!("{label:<22}");
        for ((_, d), w) in columns.iter().zip(&widths) {
            l.push_str(&format!("  {:>w$}", cell(d)));
        }
        l.trim_end().to_owned()
    };
    let mut head = format!("{:<22}", "dropped frames");
    for ((name, _), w) in columns.iter().zip(&widths) {
        head.push_str(&format!("  {name:>w$}"));
    }
    out.push(head.trim_end().to_owned());
    for cause in DropCauseName::ALL {
        out.push(row(&format!("  {}", cause.label()), &|d| d.get(cause).to_string()));
    }
    out.push(row("  total", &|d| d.total().to_string()));
}

/// frametest's lines: frames, fastest and slowest frame, data and frame rate.
fn rates(r: &Report, out: &mut Vec<String>) {
    let t = &r.totals;
    let dropped = t.dropped.total();
    out.push(line(
        "frames presented",
        &format!("{} of {} due{}", t.presented, t.frames_due, percent(t.presented, t.frames_due)),
    ));
    let sum = |count: fn(&crate::StreamReport) -> u64| r.streams.iter().map(count).sum::<u64>();
    let skips: Vec<String> = [
        (sum(|s| s.read_skipped), "read"),
        (sum(|s| s.decode_skipped), "decoded"),
        (sum(|s| s.output_skipped), "output"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(n, stage)| format!(", {n} not {stage}"))
    .collect();
    let skipped = if skips.is_empty() {
        String::new()
    } else {
        format!("{} as they could not be in time", skips.concat())
    };
    out.push(line("frames dropped", &format!("{dropped}{}{skipped}", percent(dropped, t.frames_due))));
    if r.settings.no_drop {
        let late: u64 = r.streams.iter().map(|s| s.late_frames).sum();
        out.push(line("frames late", &format!("{late}, waited {:.1} ms in all", t.stall_ms)));
    }
    // The MB/s of a frame is the mean frame size over that frame's read time.
    let frames_read: u64 = r.streams.iter().map(|s| s.latency.read.count).sum();
    let mean_frame_bytes = if frames_read > 0 { t.bytes_read as f64 / frames_read as f64 } else { 0.0 };
    let read = r.streams.iter().map(|s| &s.latency.read).filter(|p| p.count > 0);
    let fastest = read.clone().map(|p| p.min_ms).reduce(f64::min);
    let slowest = read.map(|p| p.max_ms).reduce(f64::max);
    for (label, ms) in [("fastest frame", fastest), ("slowest frame", slowest)] {
        let text = match ms {
            Some(ms) if ms > 0.0 => format!("{ms:.3} ms ({:.1} MB/s)", mean_frame_bytes / 1e6 / (ms / 1e3)),
            Some(ms) => format!("{ms:.3} ms"),
            None => "-".into(),
        };
        out.push(line(label, &text));
    }
    out.push(line("data rate", &format!("{:.1} MB/s", t.mb_per_s)));
    out.push(line("frame rate", &format!("{:.2} fps", t.fps)));
    if let Some(line_text) = bottleneck_line(r) {
        out.push(line("bottleneck", &line_text));
    }
}

/// The run's bottleneck with each stage's utilisation (its busiest stream's), and the drops
/// decided before the frame's work was done: "decode; busy storage 12%, decode 98%, output
/// 40%; dropped early 31: decode 30, output 1".
fn bottleneck_line(r: &Report) -> Option<String> {
    let t = &r.totals;
    if t.bottleneck.is_empty() {
        return None;
    }
    let busiest = |stage: fn(&crate::StageUtilisation) -> f64| {
        r.streams.iter().map(|s| stage(&s.utilisation)).fold(0.0, f64::max)
    };
    let mut text = format!(
        "{}; busy storage {:.0}%, decode {:.0}%, output {:.0}%",
        t.bottleneck,
        100.0 * busiest(|u| u.storage),
        100.0 * busiest(|u| u.decode),
        100.0 * busiest(|u| u.output),
    );
    let early = t.early_drops;
    if early.total() > 0 {
        let by_cause: Vec<String> =
            early.iter().filter(|&(_, n)| n > 0).map(|(cause, n)| format!("{} {n}", cause.word())).collect();
        text.push_str(&format!("; dropped early {}: {}", early.total(), by_cause.join(", ")));
    }
    Some(text)
}

fn latency_title(s: &StreamReport, named: bool) -> String {
    if named {
        format!("latency ms, {}", s.name)
    } else {
        "latency ms".to_owned()
    }
}

fn latency_table(l: &StageLatency, title: &str, out: &mut Vec<String>) {
    out.push(format!("{title:<16}{:>9}{:>9}{:>9}{:>9}{:>9}", "p50", "p90", "p99", "p99.9", "max"));
    let rows = [
        ("open", &l.open),
        ("read", &l.read),
        ("close", &l.close),
        ("decode", &l.decode),
        ("output", &l.output),
        ("slack", &l.slack),
        ("pacing error", &l.pacing_error),
    ];
    for (name, p) in rows {
        let mut row = format!("  {name:<14}");
        for v in [p.p50_ms, p.p90_ms, p.p99_ms, p.p999_ms, p.max_ms] {
            row.push_str(&format!("{:>9}", cell_ms(p, v)));
        }
        out.push(row);
    }
}

fn cpu(r: &Report, out: &mut Vec<String>) {
    let c = &r.cpu;
    out.push(line("cpu process", &format!("user {}, sys {}", secs(c.process_user_s), secs(c.process_sys_s))));
    if r.totals.bytes_read > 0 {
        // The client's cost of a gigabyte: the process's own time plus the (system-wide)
        // softirq time, where the kernel receives the network traffic.
        out.push(line(
            "cpu per GB",
            &format!(
                "user {}, sys {}, softirq {}, total {}",
                secs(c.user_s_per_gb),
                secs(c.sys_s_per_gb),
                secs(c.softirq_s_per_gb),
                secs(c.total_s_per_gb)
            ),
        ));
    }
    let st = &c.stages;
    out.push(line(
        "cpu stages",
        &format!("read {}, decode {}, output {}", secs(st.read_s), secs(st.decode_s), secs(st.output_s)),
    ));
    let sy = &c.system;
    out.push(line(
        "cpu system",
        &format!(
            "user {}, sys {}, softirq {}, iowait {}",
            secs(sy.user_s),
            secs(sy.system_s),
            secs(sy.softirq_s),
            secs(sy.iowait_s)
        ),
    ));
}

/// `memory  peak RSS 803.6 MB; buffers 8 encoded 283.2 MB, 5 decoded 265.4 MB, 3 output 71.3 MB`:
/// the buffers summed over the streams. Nothing for a report with neither figure (older ones).
fn memory(r: &Report, out: &mut Vec<String>) {
    let pools = r.streams.iter().map(|s| s.pool_buffers).fold(PoolBuffers::default(), |a, b| PoolBuffers {
        encoded: a.encoded + b.encoded,
        decoded: a.decoded + b.decoded,
        output: a.output + b.output,
        encoded_bytes: a.encoded_bytes + b.encoded_bytes,
        decoded_bytes: a.decoded_bytes + b.decoded_bytes,
        output_bytes: a.output_bytes + b.output_bytes,
    });
    let n_buffers = pools.encoded + pools.decoded + pools.output;
    let peak = r.memory.peak_rss_bytes;
    if peak == 0 && n_buffers == 0 {
        return;
    }
    let mut text = if peak > 0 { format!("peak RSS {}", megabytes(peak)) } else { "peak RSS -".to_owned() };
    if n_buffers > 0 {
        text.push_str(&format!(
            "; buffers {} encoded {}, {} decoded {}",
            pools.encoded,
            megabytes(pools.encoded_bytes),
            pools.decoded,
            megabytes(pools.decoded_bytes),
        ));
        // Reports of older versions had a pool of their own for the v210 output; now it is
        // packed into the frame's encoded buffer, and this part is left out.
        if pools.output > 0 {
            text.push_str(&format!(", {} output {}", pools.output, megabytes(pools.output_bytes)));
        }
    }
    out.push(line("memory", &text));
}

fn unreadable(r: &Report, out: &mut Vec<String>) {
    let listed: usize = r.streams.iter().map(|s| s.unreadable.len()).sum();
    let counted = usize::try_from(r.totals.dropped.unreadable).unwrap_or(usize::MAX);
    let total = listed.max(counted);
    if total == 0 {
        return;
    }
    out.push(line("unreadable frames", &total.to_string()));
    let several = r.streams.len() > 1;
    let frames = r.streams.iter().flat_map(|s| s.unreadable.iter().map(move |u| (s, u)));
    let mut shown = 0;
    for (s, u) in frames.take(UNREADABLE_SHOWN) {
        let tag = if several { format!("[{}] ", s.name) } else { String::new() };
        out.push(format!("  {tag}#{}: {}", u.frame_idx, u.message));
        shown += 1;
    }
    if total > shown {
        out.push(format!("  ... and {} more", total - shown));
    }
}

/// A merged report's row per client, then the cluster's figures on one line:
///
/// ```text
/// client  host   transport  streams    fps  dropped s/d/o/u   MB/s  CPU s/GB  peak RSS MB  ...
///      0  hosta  sim              2  47.00          10/0/0/0   48.0      7.29        104.9  ...
/// cluster             3 clients (openmpi 4.1.4), 0 lost, start skew 0.214 ms, max clock offset 0.031 ms
/// IOR window          13.00 s from the first start to the last end: 96.2 MB/s, 73.69 fps
/// ```
fn clients_table(r: &Report, out: &mut Vec<String>) {
    let state = |c: &ClientReport| match (c.state, c.last_heard_s) {
        (ClientState::Lost, Some(s)) => format!("lost at {s:.2} s"),
        (ClientState::Lost, None) => "lost".to_owned(),
        (ClientState::Reported, _) => status_name(c.status).to_owned(),
        (ClientState::Idle, _) => "idle".to_owned(),
    };
    let dash = |text: &str| if text.is_empty() { "-".to_owned() } else { text.to_owned() };
    // (heading, right-aligned, cell)
    type Column<'a> = (&'static str, bool, Box<dyn Fn(&ClientReport) -> String + 'a>);
    let columns: Vec<Column> = vec![
        ("client", true, Box::new(|c| c.rank.to_string())),
        ("host", false, Box::new(|c| dash(&c.host))),
        ("transport", false, Box::new(|c| dash(&c.transport))),
        ("streams", true, Box::new(|c| c.streams.to_string())),
        ("fps", true, Box::new(|c| format!("{:.2}", c.fps))),
        (
            "dropped s/d/o/u",
            true,
            Box::new(|c| {
                let counts: Vec<String> = c.dropped.by_cause().iter().map(u64::to_string).collect();
                counts.join("/")
            }),
        ),
        ("MB/s", true, Box::new(|c| format!("{:.1}", c.mb_per_s))),
        ("CPU s/GB", true, Box::new(|c| format!("{:.2}", c.cpu_s_per_gb))),
        ("peak RSS MB", true, Box::new(|c| format!("{:.1}", c.peak_rss_bytes as f64 / 1e6))),
        ("priority", false, Box::new(|c| dash(c.presenter_priority.as_deref().unwrap_or_default()))),
        ("offset ms", true, Box::new(|c| format!("{:.3}", c.clock_offset_ms))),
        ("state", false, Box::new(state)),
    ];
    let cells: Vec<Vec<String>> =
        r.clients.iter().map(|c| columns.iter().map(|col| (col.2)(c)).collect()).collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, col)| cells.iter().map(|row| row[i].len()).fold(col.0.len(), usize::max))
        .collect();
    let render_row = |texts: Vec<&str>| {
        let parts: Vec<String> = texts
            .iter()
            .zip(&columns)
            .zip(&widths)
            .map(|((text, col), &w)| if col.1 { format!("{text:>w$}") } else { format!("{text:<w$}") })
            .collect();
        parts.join("  ").trim_end().to_owned()
    };
    out.push(render_row(columns.iter().map(|c| c.0).collect()));
    for row in &cells {
        out.push(render_row(row.iter().map(String::as_str).collect()));
    }
    if let Some(c) = &r.cluster {
        let window_s = c.last_end_ns.saturating_sub(c.first_start_ns) as f64 / 1e9;
        let launcher = if c.launcher.is_empty() { String::new() } else { format!(" ({})", c.launcher) };
        out.push(line(
            "cluster",
            &format!(
                "{} clients{launcher}, {} lost, start skew {:.3} ms, max clock offset {:.3} ms",
                c.n_clients, c.n_lost, c.start_skew_ms, c.max_clock_offset_ms
            ),
        ));
        out.push(line(
            "IOR window",
            &format!(
                "{window_s:.2} s from the first start to the last end: {:.1} MB/s, {:.2} fps",
                r.totals.mb_per_s, r.totals.fps
            ),
        ));
    }
}

fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial",
        RunStatus::Failed => "failed",
    }
}

/// A `label  value` line with the value in the second column.
fn line(label: &str, value: &str) -> String {
    format!("{label:<LABEL$}{value}")
}

/// The distinct values, in order of first appearance, comma-separated.
fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut seen = BTreeSet::new();
    let kept: Vec<&str> = values.filter(|v| !v.is_empty() && seen.insert(*v)).collect();
    kept.join(", ")
}

/// ` (97.5%)`, or nothing when there is nothing to divide by.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return String::new();
    }
    format!(" ({:.1}%)", part as f64 * 100.0 / whole as f64)
}

/// Milliseconds to about four significant figures; "-" for no samples.
fn cell_ms(p: &Percentiles, v: f64) -> String {
    if p.count == 0 {
        return "-".into();
    }
    let decimals = match v.abs() {
        a if a < 10.0 => 3,
        a if a < 100.0 => 2,
        a if a < 10_000.0 => 1,
        _ => 0,
    };
    format!("{v:.decimals$}")
}

/// Megabytes (10^6 bytes) to one decimal.
fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / 1e6)
}

fn secs(s: f64) -> String {
    format!("{s:.2} s")
}

/// A byte count in the largest binary unit that divides it.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} B")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{MountReport, RunStatus, UnreadableFrame};
    use crate::testutil::sample_report;

    #[test]
    fn one_stream() {
        let text = summary(&sample_report());
        println!("{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "playsim 0.1.0: complete in 10.50 s, fps 24, transport nfs, source /mnt/nfs/shot"
        );
        let expected_blocks = [
            "dropped frames          stream 0\n\
             \x20 storage (video disk)         3\n\
             \x20 decode (CPU/GPU)             1\n\
             \x20 output (broadcast)           0\n\
             \x20 unreadable                   2\n\
             \x20 total                        6\n",
            "frames presented    234 of 240 due (97.5%)\n\
             frames dropped      6 (2.5%)\n\
             fastest frame       12.345 ms (2867.4 MB/s)\n\
             slowest frame       88.100 ms (401.8 MB/s)\n\
             data rate           842.5 MB/s\n\
             frame rate          23.40 fps\n\
             bottleneck          storage; busy storage 42%, decode 91%, output 12%; dropped early 2: storage 1, \
             decode 1\n",
            "latency ms            p50      p90      p99    p99.9      max\n\
             \x20 open              0.120    0.250    0.900    1.200    1.500\n\
             \x20 read              20.10    30.00    55.00    80.00    88.10\n\
             \x20 close             0.006    0.011    0.050    0.061    0.061\n\
             \x20 decode            14.20    17.90    25.31    31.00    31.00\n\
             \x20 output            2.400    2.900    3.300    3.400    3.400\n\
             \x20 slack             21.30    35.70    39.40    40.10    41.00\n\
             \x20 pacing error      0.012    0.098    0.410    1.750    2.300\n",
            "cpu process         user 41.25 s, sys 6.50 s\n\
             cpu per GB          user 4.90 s, sys 0.77 s, softirq 0.33 s, total 5.99 s\n\
             cpu stages          read 5.75 s, decode 38.00 s, output 3.12 s\n\
             cpu system          user 42.00 s, sys 9.25 s, softirq 2.75 s, iowait 1.50 s\n\
             memory              peak RSS 803.6 MB; buffers 8 encoded 283.2 MB, 2 decoded 106.2 MB, \
             3 output 71.3 MB\n\
             unreadable frames   2\n\
             \x20 #99: frame 1100: /mnt/nfs/shot/shot.0001100.dpx: no such file\n\
             \x20 #150: frame 1151: /mnt/nfs/shot/shot.0001151.dpx: bad magic 0x00000000 at offset 0\n",
        ];
        for block in expected_blocks {
            assert!(text.contains(block), "missing block:\n{block}\nin:\n{text}");
        }
        assert!(lines.contains(
            &"media               shot.%07d.dpx, dpx 4096x2160, frames 1001-1240 (240 frames, 1 gap)"
        ));
        assert!(lines.contains(
            &"storage             nfs, 1 MiB blocks, direct, 8092 reads, cold: 239 files dropped, \
              server=10.0.0.5:/export"
        ));
        assert!(lines.contains(
            &"settings            preroll 4, prefetch 8, io depth 4, decode threads 8, output v210, max drops 10"
        ));
        assert!(lines
            .contains(&"output              v210 from rgb48le: BT.709 RGB to YCbCr 4:2:2 in fixed point"));
        assert!(lines.len() <= 38, "{} lines", lines.len());
        assert!(lines.iter().all(|l| l.len() <= 110 && l.trim_end() == *l), "{text}");
        assert!(!text.contains('\x1b'));
    }

    #[test]
    fn a_merged_report_has_a_row_per_client_and_the_cluster_figures() {
        let text = summary(&crate::testutil::merged_sample());
        println!("{text}");
        let lines: Vec<&str> = text.lines().collect();
        let expected = "\
client  host   transport  streams    fps  dropped s/d/o/u  MB/s  CPU s/GB  peak RSS MB  priority  offset ms  state
     0  hosta  sim              2  47.00         10/0/0/0  48.0      7.29        104.9  -             0.000  complete
     1  hostb  nfs              1  20.00        0/30/10/0  48.0      7.29        104.9  -           500.000  complete
     2  hostc  local            1  24.00          0/0/0/2  24.2     12.07        104.9  -          -250.000  complete
     3  hostd  sim              2  24.00          3/0/0/0  24.8     12.63        314.6  -             0.000  lost at 4.60 s
cluster             4 clients (openmpi 4.1.4), 1 lost, start skew 2100.000 ms, max clock offset 500.000 ms
IOR window          13.00 s from the first start to the last end: 103.8 MB/s, 81.08 fps
";
        assert!(text.contains(expected), "missing:\n{expected}\nin:\n{text}");
        // The drops by client are in the clients table: the drops table has the total alone.
        assert!(text.contains("dropped frames           total\n  storage (video disk)      13\n"), "{text}");
        assert!(text.contains("latency ms, all clients"), "{text}");
        assert!(!text.contains("latency ms, client 0/stream 0"), "one latency table, not one a stream");
        // The clients table is as wide as its cells; the rest keeps to 110 columns.
        let table = lines.iter().position(|l| l.starts_with("client  host")).unwrap();
        // (And the header names every source.)
        let narrow = lines.iter().enumerate().filter(|(i, _)| *i > 0 && !(table..=table + 4).contains(i));
        assert!(narrow.map(|(_, l)| l).all(|l| l.len() <= 110), "{text}");
        assert!(lines.iter().all(|l| l.trim_end() == *l), "{text}");
    }

    #[test]
    fn several_streams_get_a_run_wide_latency_table() {
        let mut r = sample_report();
        r.streams.push(r.streams[0].clone());
        r.streams[1].name = "stream 1".into();
        let text = summary(&r);
        assert!(!text.contains("all streams"), "none without the run-wide figures");
        r.latency = Some(r.streams[0].latency.clone());
        let text = summary(&r);
        assert!(text.contains("latency ms, stream 1"), "{text}");
        assert!(text.contains("latency ms, all streams"), "{text}");
        r.streams.truncate(1);
        assert!(!summary(&r).contains("all streams"), "one stream's table is the run's");
    }

    #[test]
    fn several_streams_get_columns_and_a_total() {
        let mut r = sample_report();
        let mut b = r.streams[0].clone();
        b.name = "B".into();
        b.source.location = "/mnt/local/shot".into();
        b.storage.transport = "local".into();
        b.dropped = Drops { storage: 10, decode: 0, output: 2, unreadable: 0 };
        b.unreadable.clear();
        r.streams[0].name = "A".into();
        r.totals.dropped = Drops { storage: 13, decode: 1, output: 2, unreadable: 2 };
        r.totals.frames_due = 480;
        r.totals.presented = 462;
        r.totals.bytes_read *= 2;
        r.totals.mb_per_s *= 2.0;
        r.totals.fps = 46.2;
        r.streams.push(b);
        let text = summary(&r);
        println!("{text}");
        assert!(text.starts_with(
            "playsim 0.1.0: complete in 10.50 s, fps 24, transport nfs, local, sources /mnt/nfs/shot, /mnt/local/shot\n"
        ));
        assert!(text.contains(
            "dropped frames               A       B   total\n\
             \x20 storage (video disk)       3      10      13\n\
             \x20 decode (CPU/GPU)           1       0       1\n\
             \x20 output (broadcast)         0       2       2\n\
             \x20 unreadable                 2       0       2\n\
             \x20 total                      6      12      18\n"
        ));
        assert!(text.contains(
            "frames presented    462 of 480 due (96.2%)\n\
             frames dropped      18 (3.8%)\n\
             fastest frame       12.345 ms (2867.4 MB/s)\n\
             slowest frame       88.100 ms (401.8 MB/s)\n\
             data rate           1684.9 MB/s\n\
             frame rate          46.20 fps\n"
        ));
        assert!(text.contains("\nlatency ms, A         p50"));
        assert!(text.contains("\nlatency ms, B         p50"));
        assert!(text.contains("\nmedia               [B] shot.%07d.dpx, dpx 4096x2160"));
        assert!(text.contains("\n  [A] #99: frame 1100"));

        // Frames skipped before a stage, summed over the streams, stage by stage.
        (r.streams[0].read_skipped, r.streams[1].read_skipped, r.streams[1].output_skipped) = (3, 5, 1);
        let text = summary(&r);
        assert!(
            text.contains(
                "frames dropped      18 (3.8%), 8 not read, 1 not output as they could not be in time\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn failed_run_shows_the_error_and_more_unreadable_frames() {
        let mut r = sample_report();
        r.status = RunStatus::Failed;
        r.error = Some("reading /mnt/nfs/shot/shot.0001200.dpx: connection reset".into());
        r.totals.dropped.unreadable = 9;
        r.streams[0].unreadable = (0..8)
            .map(|i| UnreadableFrame {
                frame_idx: i,
                message: format!("bad frame {i}"),
                ..Default::default()
            })
            .collect();
        let text = summary(&r);
        assert!(text.starts_with("playsim 0.1.0: failed after 10.50 s,"));
        assert!(text.contains("\nunreadable frames   9\n  #0: bad frame 0\n"));
        assert!(text.contains("\n  #4: bad frame 4\n  ... and 4 more\n"));
        assert!(text
            .ends_with("\nerror               reading /mnt/nfs/shot/shot.0001200.dpx: connection reset\n"));

        r.status = RunStatus::Partial;
        r.error = Some("interrupted".into());
        let text = summary(&r);
        assert!(text.starts_with("playsim 0.1.0: partial, stopped after 10.50 s,"));
        assert!(text.ends_with("\nerror               interrupted\n"));
    }

    #[test]
    fn empty_report_renders_dashes_not_nan() {
        let text = summary(&Report::default());
        println!("{text}");
        assert!(text.contains("\nfastest frame       -\n"));
        assert!(text.contains("\nframes presented    0 of 0 due\n"));
        assert!(!text.contains("NaN") && !text.contains("inf"));
        let mut r = sample_report();
        r.streams[0].latency.close = Percentiles::default();
        r.settings.no_drop = true;
        r.totals.stall_ms = 1234.56;
        let text = summary(&r);
        assert!(text.contains("\n  close                 -        -        -        -        -\n"));
        assert!(text.contains("\nframes late         4, waited 1234.6 ms in all\n"));
    }

    #[test]
    fn a_mount_gets_its_own_line() {
        let mut r = sample_report();
        let st = &mut r.streams[0].storage;
        st.transport = "local".into();
        st.options.clear();
        let options = [
            ("vers", "4.2"),
            ("proto", "rdma"),
            ("port", "20049"),
            ("rsize", "1048576"),
            ("wsize", "1048576"),
            ("nconnect", "8"),
            ("hard", ""),
            ("timeo", "600"),
            ("retrans", "2"),
            ("sec", "sys"),
            ("addr", "192.168.1.10"),
        ];
        st.mount = Some(MountReport {
            mount_point: "/mnt/isilon".into(),
            fstype: "nfs4".into(),
            source: "192.168.1.10:/export".into(),
            transport: "nfs over rdma".into(),
            options: options.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        });
        let text = summary(&r);
        println!("{text}");
        assert!(text.contains(
            "\nstorage             local, 1 MiB blocks, direct, 8092 reads, cold: 239 files dropped\n\
             storage mount       /mnt/isilon: nfs over rdma (vers=4.2, proto=rdma, rsize=1048576, nconnect=8, hard)\n"
        ));
        assert!(text.lines().all(|l| l.len() <= 110), "{text}");
        assert!(text.lines().count() <= 39, "{text}");

        // Kerberos is worth a mention; a local disk has nothing more to say.
        let mut b = r.streams[0].clone();
        b.name = "B".into();
        b.storage.mount = Some(MountReport {
            mount_point: "/".into(),
            fstype: "ext4".into(),
            source: "/dev/nvme0n1p2".into(),
            transport: "local (ext4)".into(),
            options: Default::default(),
        });
        if let Some(m) = r.streams[0].storage.mount.as_mut() {
            m.options.insert("sec".into(), "krb5p".into());
        }
        r.streams[0].name = "A".into();
        r.streams.push(b);
        let text = summary(&r);
        assert!(text.contains(
            "\nstorage mount       [A] /mnt/isilon: nfs over rdma (vers=4.2, proto=rdma, \
                               rsize=1048576, nconnect=8, hard, sec=krb5p)\n"
        ));
        assert!(text.contains("\nstorage mount       [B] /: local (ext4)\n"));
    }

    #[test]
    fn no_bytes_no_cost_per_gb() {
        let mut r = sample_report();
        r.totals.bytes_read = 0;
        let text = summary(&r);
        assert!(text.contains("\ncpu process         user 41.25 s, sys 6.50 s\ncpu stages "));
        assert!(!text.contains("per GB"));
    }

    #[test]
    fn a_presentation_thread_at_normal_priority_is_pointed_out() {
        let mut r = sample_report();
        assert!(!summary(&r).contains("\npresentation"), "nothing to say by default");
        r.streams[0].presenter_priority = Some("real-time".into());
        assert!(!summary(&r).contains("\npresentation"));
        r.streams[0].presenter_priority = Some("normal".into());
        assert!(summary(&r).contains("\npresentation        at normal priority (real-time was refused)"));
    }

    #[test]
    fn memory_line_sums_the_streams_and_needs_a_figure() {
        let mut r = sample_report();
        r.streams.push(r.streams[0].clone());
        let text = summary(&r);
        assert!(
            text.contains(
                "\nmemory              peak RSS 803.6 MB; buffers 16 encoded 566.4 MB, \
                 4 decoded 212.3 MB, 6 output 142.7 MB\n"
            ),
            "{text}"
        );
        // A report from before the figures: no line at all, rather than zeros.
        r.memory = Default::default();
        for s in &mut r.streams {
            s.pool_buffers = Default::default();
        }
        assert!(!summary(&r).contains("\nmemory"));
        // Buffers but no peak (/proc unreadable): a dash; no output pool (v210 is packed into
        // the encoded buffers): no output part.
        r.streams[0].pool_buffers.encoded = 1;
        assert!(summary(&r)
            .contains("\nmemory              peak RSS -; buffers 1 encoded 0.0 MB, 0 decoded 0.0 MB\n"));
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(1 << 20), "1 MiB");
        assert_eq!(bytes(4 << 20), "4 MiB");
        assert_eq!(bytes(65536), "64 KiB");
        assert_eq!(bytes(1000), "1000 B");
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(3 << 30), "3 GiB");
    }
}
