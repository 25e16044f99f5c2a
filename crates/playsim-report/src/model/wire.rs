//! The run report as its JSON holds it: read back (refusing another schema version), and the
//! copy that is written, every number that JSON cannot hold made 0.
//!
//! The writing is a format's ([`crate::format::json`]); what is read and written is the
//! model's, so that the comparison and the merge read reports without a format.

use crate::model::error::Error;
use crate::model::{Percentiles, Report, SCHEMA_VERSION};

/// Reads a report from JSON.
///
/// Fields this version does not know (added by a later version) are ignored;
/// a report whose `schema_version` is not [`SCHEMA_VERSION`] is refused.
pub fn from_str(text: &str) -> Result<Report, Error> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if let Some(found) = value.get("schema_version").and_then(serde_json::Value::as_u64) {
        if found != u64::from(SCHEMA_VERSION) {
            return Err(Error::UnsupportedVersion { found: u32::try_from(found).unwrap_or(u32::MAX) });
        }
    }
    Ok(serde_json::from_value(value)?)
}

/// The report with every non-finite number replaced by 0: what its JSON holds.
pub(crate) fn finite(report: &Report) -> Report {
    let mut r = report.clone();
    let mut numbers: Vec<&mut f64> = vec![&mut r.duration_s, &mut r.totals.fps, &mut r.totals.mb_per_s];
    numbers.push(&mut r.totals.stall_ms);
    if let Some(d) = r.settings.duration_s.as_mut() {
        numbers.push(d);
    }
    let cpu = &mut r.cpu;
    numbers.extend([
        &mut cpu.process_user_s,
        &mut cpu.process_sys_s,
        &mut cpu.user_s_per_gb,
        &mut cpu.sys_s_per_gb,
        &mut cpu.softirq_s_per_gb,
        &mut cpu.total_s_per_gb,
    ]);
    numbers.extend([&mut cpu.stages.read_s, &mut cpu.stages.decode_s, &mut cpu.stages.output_s]);
    let sys = &mut cpu.system;
    numbers.extend([&mut sys.user_s, &mut sys.nice_s, &mut sys.system_s, &mut sys.idle_s]);
    numbers.extend([&mut sys.iowait_s, &mut sys.irq_s, &mut sys.softirq_s, &mut sys.steal_s]);
    for s in &mut r.streams {
        numbers.extend([&mut s.fps_achieved, &mut s.mb_per_s, &mut s.stall_ms]);
        let l = &mut s.latency;
        for p in [&mut l.open, &mut l.read, &mut l.close, &mut l.decode, &mut l.output, &mut l.slack] {
            numbers.extend(percentile_numbers(p));
        }
        numbers.extend(percentile_numbers(&mut l.pacing_error));
    }
    if let Some(l) = r.latency.as_mut() {
        for p in [&mut l.open, &mut l.read, &mut l.close, &mut l.decode, &mut l.output, &mut l.slack] {
            numbers.extend(percentile_numbers(p));
        }
        numbers.extend(percentile_numbers(&mut l.pacing_error));
    }
    for c in &mut r.clients {
        numbers.extend([
            &mut c.fps,
            &mut c.mb_per_s,
            &mut c.cpu_s_per_gb,
            &mut c.clock_offset_ms,
            &mut c.clock_rtt_ms,
        ]);
        numbers.extend(c.last_heard_s.as_mut());
    }
    if let Some(c) = r.cluster.as_mut() {
        numbers.extend([&mut c.start_skew_ms, &mut c.max_clock_offset_ms]);
    }
    for x in numbers {
        if !x.is_finite() {
            *x = 0.0;
        }
    }
    r
}

fn percentile_numbers(p: &mut Percentiles) -> [&mut f64; 7] {
    [
        &mut p.min_ms,
        &mut p.mean_ms,
        &mut p.p50_ms,
        &mut p.p90_ms,
        &mut p.p99_ms,
        &mut p.p999_ms,
        &mut p.max_ms,
    ]
}
