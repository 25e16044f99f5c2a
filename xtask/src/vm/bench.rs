//! The guest's bench rows (issue 18, point 5): playsim's `nfs+rdma://` client against the kernel's
//! RDMA mount (fio) and against `ib_write_bw` on the same soft-RoCE device, with playsim's
//! `nfs://` over TCP for reference; and (issue 21, point 4) playsim's `smb://` client against the
//! kernel's cifs mount of the same Samba share (fio, same block size and reads in flight).
//!
//! The guest (`xtask/vm/guest.sh`) runs the rows in alternation, three rounds, caches dropped
//! before each run, and writes one line per run to `bench-runs.tsv`: the row, the round, the
//! exit status, the wall time, the whole guest's CPU seconds from `/proc/stat` and the file that
//! holds the tool's own figures. Here each run's bytes and MB/s are read from that file, the
//! runs go to `bench.tsv`, and each row's median (min-max) is printed with the ratios the issue
//! asks for. A row that could not be measured prints why; bench rows never fail the tier.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::Value;

/// The rows, in the table's order: the name the guest gives each, and what it measures.
pub const ROWS: [(&str, &str); 6] = [
    (KERNEL_RDMA, "kernel NFS over RDMA: fio O_DIRECT, 1M reads, 16 in flight"),
    (PLAYSIM_RDMA, "playsim nfs+rdma://: frametest -r -t 1 --rsize 1M"),
    ("playsim-nfs-tcp", "playsim nfs:// over TCP: the same, for reference"),
    (IB_WRITE_BW, "ib_write_bw -R, 100 x 1 MiB: the verbs limit"),
    (KERNEL_SMB, "kernel SMB 3.1.1 (cifs, cache=none) from smbd: fio O_DIRECT, 1M reads, 16 in flight"),
    (PLAYSIM_SMB, "playsim smb:// from smbd: frametest -r -t 1 (1 MiB READs, sign=off as the kernel mount)"),
];

const KERNEL_RDMA: &str = "kernel-rdma-fio";
const PLAYSIM_RDMA: &str = "playsim-nfs-rdma";
const IB_WRITE_BW: &str = "ib_write_bw";
const KERNEL_SMB: &str = "kernel-smb-fio";
const PLAYSIM_SMB: &str = "playsim-smb";

/// The message size the guest gives `ib_write_bw -s`.
const IB_MESSAGE_BYTES: u64 = 1 << 20;

/// The line every bench table ends with.
pub const SOFT_ROCE_NOTE: &str =
    "soft-RoCE is RDMA done by the guest's CPU: these figures prove the path and its \
     overhead relative to the kernel client, not RDMA's speed";

/// One run of one row, as the guest recorded it and as its figures file says.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The row's name, e.g. `kernel-rdma-fio`.
    pub row: String,
    /// 1, 2, 3: the round it ran in.
    pub round: u32,
    /// Wall time of the command, in seconds.
    pub wall_s: f64,
    /// The whole guest's CPU time over the command: user, system, irq and softirq.
    pub cpu_s: f64,
    /// What it moved, or why it has no figures.
    pub measured: Result<Measured, String>,
}

/// A successful run's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Bytes the run moved.
    pub bytes: u64,
    /// Its throughput as the tool measured it, in MB/s of 10^6 bytes.
    pub mb_per_s: f64,
}

impl Run {
    /// The guest's CPU seconds per GB (10^9 bytes) moved.
    pub fn cpu_s_per_gb(&self) -> Option<f64> {
        let measured = self.measured.as_ref().ok()?;
        (measured.bytes > 0).then(|| self.cpu_s / (measured.bytes as f64 / 1e9))
    }
}

/// The bench's outcome: the table and one results line per row.
pub struct Bench {
    /// The printed table, ending in [`SOFT_ROCE_NOTE`].
    pub table: String,
    /// `BENCH ROW OK ...` or `BENCH ROW FAILED (why)`, one per row.
    pub lines: Vec<String>,
}

/// Reads the guest's `bench-runs.tsv` and the figures files under `out/bench`, writes
/// `out/bench.tsv` and builds the table. Never fails: what is missing is said in the table.
pub fn evaluate(out: &Path) -> Bench {
    let bench_dir = out.join("bench");
    let runs = match fs::read_to_string(out.join("bench-runs.tsv")) {
        Ok(tsv) => parse_runs(&tsv, |name| {
            let path = bench_dir.join(name);
            let figures =
                fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()));
            let stderr = fs::read_to_string(bench_dir.join(format!("{name}.err"))).unwrap_or_default();
            (figures, stderr)
        }),
        Err(_) => Vec::new(),
    };
    let why_none = if out.join("bench-runs.tsv").exists() {
        fs::read_to_string(bench_dir.join("frametest-write.failed"))
            .map(|text| format!("writing the frametest frames failed: {}", last_line(&text)))
            .unwrap_or_else(|_| "no run recorded".to_owned())
    } else {
        "the guest wrote no bench-runs.tsv".to_owned()
    };
    let _ = fs::write(out.join("bench.tsv"), runs_tsv(&runs));
    let (table, lines) = render(&runs, &why_none, &mounted_rsize(out));
    Bench { table, lines }
}

/// Parses `bench-runs.tsv`; `read(figures_name)` gives a figures file's text (or why it has
/// none) and the run's stderr.
pub fn parse_runs(tsv: &str, read: impl Fn(&str) -> (Result<String, String>, String)) -> Vec<Run> {
    let mut runs = Vec::new();
    for line in tsv.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [row, round, exit, wall_s, user_s, system_s, irq_s, softirq_s, figures] = fields[..] else {
            continue;
        };
        let number = |s: &str| s.trim().parse::<f64>().unwrap_or(0.0);
        let cpu_s = number(user_s) + number(system_s) + number(irq_s) + number(softirq_s);
        let (figures, stderr) = read(figures);
        let measured = if exit.trim() != "0" {
            // A run that failed may have left no figures: its stderr says why.
            let why = last_line(&stderr);
            Err(if why.is_empty() { format!("exit {exit}") } else { format!("exit {exit}: {why}") })
        } else {
            figures.and_then(|text| measure(row, &text))
        };
        runs.push(Run {
            row: row.to_owned(),
            round: round.trim().parse().unwrap_or(0),
            wall_s: number(wall_s),
            cpu_s,
            measured,
        });
    }
    runs
}

/// A run's bytes and MB/s from its tool's own output.
pub fn measure(row: &str, text: &str) -> Result<Measured, String> {
    match row {
        KERNEL_RDMA | KERNEL_SMB => measure_fio(text),
        IB_WRITE_BW => measure_ib_write_bw(text),
        _ => measure_frametest(text),
    }
}

/// fio's `--output-format=json`: the job's read bytes and bandwidth. fio may print notes
/// before the JSON (`fio: opendir added 12 files`).
fn measure_fio(text: &str) -> Result<Measured, String> {
    let json = text.find('{').map_or("", |at| &text[at..]);
    let json: Value = serde_json::from_str(json).map_err(|e| format!("fio's JSON does not parse: {e}"))?;
    let job = &json["jobs"][0];
    if job["error"].as_i64().is_some_and(|e| e != 0) {
        return Err(format!("fio's job ended with error {}", job["error"]));
    }
    let bytes = job["read"]["io_bytes"].as_u64().ok_or("fio's JSON has no jobs[0].read.io_bytes")?;
    let bw = job["read"]["bw_bytes"].as_f64().ok_or("fio's JSON has no jobs[0].read.bw_bytes")?;
    Ok(Measured { bytes, mb_per_s: bw / 1e6 })
}

/// `playsim frametest --json`: the bytes and data rate (MB = 10^6 bytes), all frames read.
fn measure_frametest(text: &str) -> Result<Measured, String> {
    let json: Value =
        serde_json::from_str(text).map_err(|e| format!("frametest's JSON does not parse: {e}"))?;
    let failed = json["frames_failed"].as_u64().unwrap_or(0);
    if failed > 0 {
        let first = json["errors"][0].as_str().unwrap_or("no message");
        return Err(format!("{failed} frames failed: {first}"));
    }
    let bytes = json["bytes"].as_u64().ok_or("frametest's JSON has no bytes")?;
    let mb_per_s = json["data_rate_mb_per_s"].as_f64().ok_or("frametest's JSON has no data_rate_mb_per_s")?;
    Ok(Measured { bytes, mb_per_s })
}

/// `ib_write_bw`'s result line, `#bytes #iterations BW-peak BW-average MsgRate`. perftest's
/// "MB/sec" is MiB/s, converted here to MB/s of 10^6 bytes like the other rows.
fn measure_ib_write_bw(text: &str) -> Result<Measured, String> {
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 || fields[0].parse::<u64>() != Ok(IB_MESSAGE_BYTES) {
            continue;
        }
        let (Ok(iterations), Ok(average_mib)) = (fields[1].parse::<u64>(), fields[3].parse::<f64>()) else {
            continue;
        };
        return Ok(Measured {
            bytes: iterations * IB_MESSAGE_BYTES,
            mb_per_s: average_mib * (1u64 << 20) as f64 / 1e6,
        });
    }
    Err("no result line (#bytes #iterations BW peak BW average) in ib_write_bw's output".to_owned())
}

/// The runs as `bench.tsv`: one line per run with its MB/s and CPU seconds per GB.
fn runs_tsv(runs: &[Run]) -> String {
    let mut tsv = String::from("row\tround\tmb_per_s\tbytes\twall_s\tcpu_s\tcpu_s_per_gb\tproblem\n");
    for run in runs {
        let (mb_per_s, bytes, problem) = match &run.measured {
            Ok(m) => (format!("{:.1}", m.mb_per_s), m.bytes.to_string(), String::new()),
            Err(why) => (String::new(), String::new(), why.replace(['\t', '\n'], " ")),
        };
        let per_gb = run.cpu_s_per_gb().map(|v| format!("{v:.2}")).unwrap_or_default();
        let _ = writeln!(
            tsv,
            "{}\t{}\t{mb_per_s}\t{bytes}\t{:.2}\t{:.2}\t{per_gb}\t{problem}",
            run.row, run.round, run.wall_s, run.cpu_s
        );
    }
    tsv
}

/// The median, min and max of `values` (not empty).
fn spread(values: &mut [f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
    Some((median, values[0], values[n - 1]))
}

/// A row's medians: MB/s and CPU s/GB, over its successful runs.
#[derive(Debug, Clone, Copy)]
struct RowFigures {
    mb_per_s: (f64, f64, f64),
    cpu_s_per_gb: (f64, f64, f64),
    n_ok: usize,
    n_runs: usize,
}

fn row_figures(runs: &[Run], row: &str) -> Result<RowFigures, String> {
    let of_row: Vec<&Run> = runs.iter().filter(|r| r.row == row).collect();
    let mut rates: Vec<f64> =
        of_row.iter().filter_map(|r| r.measured.as_ref().ok().map(|m| m.mb_per_s)).collect();
    let mut per_gb: Vec<f64> = of_row.iter().filter_map(|r| r.cpu_s_per_gb()).collect();
    match (spread(&mut rates), spread(&mut per_gb)) {
        (Some(mb_per_s), Some(cpu_s_per_gb)) => {
            Ok(RowFigures { mb_per_s, cpu_s_per_gb, n_ok: rates.len(), n_runs: of_row.len() })
        }
        _ => Err(match of_row.iter().find_map(|r| r.measured.as_ref().err()) {
            Some(why) => format!("no run succeeded ({} tried): {why}", of_row.len()),
            None => "not run".to_owned(),
        }),
    }
}

/// The table and the results lines.
fn render(runs: &[Run], why_none: &str, rdma_rsize: &str) -> (String, Vec<String>) {
    let mut table = String::new();
    let n_rounds = runs.iter().map(|r| r.round).max().unwrap_or(0);
    let _ = writeln!(
        table,
        "bench rows in the guest: one file set (8 frametest 2k frames, 100 MB), {n_rounds} rounds, rows in \
         alternation, caches dropped before each run; median (min-max); CPU is the whole guest's \
         (user+system+irq+softirq from /proc/stat); kernel RDMA mount {rdma_rsize}"
    );
    let _ = writeln!(table, "  {:<18} {:<26} {:<24} what", "row", "MB/s", "CPU s/GB");
    let mut lines = Vec::new();
    let mut figures = Vec::new();
    for (row, what) in ROWS {
        let found = if runs.is_empty() { Err(why_none.to_owned()) } else { row_figures(runs, row) };
        match &found {
            Ok(f) => {
                let (m, lo, hi) = f.mb_per_s;
                let (c, clo, chi) = f.cpu_s_per_gb;
                let note = if f.n_ok < f.n_runs {
                    format!(" ({} of {} runs)", f.n_ok, f.n_runs)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    table,
                    "  {row:<18} {:<26} {:<24} {what}{note}",
                    format!("{m:.1} ({lo:.1}-{hi:.1})"),
                    format!("{c:.2} ({clo:.2}-{chi:.2})")
                );
                lines.push(format!("BENCH {row} OK {m:.1} MB/s {c:.2} CPU s/GB{note}"));
            }
            Err(why) => {
                let _ = writeln!(table, "  {row:<18} no figures: {why}");
                lines.push(format!("BENCH {row} FAILED ({why})"));
            }
        }
        figures.push((row, found.ok()));
    }
    let get = |name: &str| figures.iter().find(|(row, _)| *row == name).and_then(|(_, f)| *f);
    let ratio = |a: Option<RowFigures>, b: Option<RowFigures>, pick: fn(&RowFigures) -> f64| match (a, b) {
        (Some(a), Some(b)) if pick(&b) > 0.0 => format!("{:.2}x", pick(&a) / pick(&b)),
        (None, _) => "n/a (no figures of playsim's client)".to_owned(),
        _ => "n/a (no figures to divide by)".to_owned(),
    };
    let (rdma, kernel, ib) = (get(PLAYSIM_RDMA), get(KERNEL_RDMA), get(IB_WRITE_BW));
    let _ = writeln!(
        table,
        "  nfs+rdma / kernel RDMA mount: throughput {} (target >= 1.0x), CPU per GB {} (target <= 1.0x)",
        ratio(rdma, kernel, |f| f.mb_per_s.0),
        ratio(rdma, kernel, |f| f.cpu_s_per_gb.0)
    );
    let _ = writeln!(
        table,
        "  nfs+rdma / ib_write_bw: throughput {} (target >= 0.8x)",
        ratio(rdma, ib, |f| f.mb_per_s.0)
    );
    let (smb, kernel_smb) = (get(PLAYSIM_SMB), get(KERNEL_SMB));
    let _ = writeln!(
        table,
        "  smb:// / kernel SMB mount: throughput {} (target >= 1.0x), CPU per GB {} (target <= 1.0x)",
        ratio(smb, kernel_smb, |f| f.mb_per_s.0),
        ratio(smb, kernel_smb, |f| f.cpu_s_per_gb.0)
    );
    let _ = writeln!(table, "{SOFT_ROCE_NOTE}");
    (table, lines)
}

/// The kernel RDMA mount's rsize as the server granted it, from the guest's /proc/mounts.
fn mounted_rsize(out: &Path) -> String {
    let mounts = fs::read_to_string(out.join("mounts.txt")).unwrap_or_default();
    mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("/mnt/rdma"))
        .and_then(|l| l.split([',', ' ']).find(|o| o.starts_with("rsize=")).map(str::to_owned))
        .unwrap_or_else(|| "rsize unknown".to_owned())
}

fn last_line(text: &str) -> String {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IB_OUTPUT: &str = "\
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
Conflicting CPU frequency values detected: 1496.133000 != 1529.788000. CPU Frequency is not max.
 1048576    500              180.12             178.50             0.000179
---------------------------------------------------------------------------------------
";

    #[test]
    fn ib_write_bw_figures_are_converted_from_mib() {
        let m = measure(IB_WRITE_BW, IB_OUTPUT).expect("a result line");
        assert_eq!(m.bytes, 500 << 20);
        assert!((m.mb_per_s - 178.50 * 1.048_576).abs() < 1e-9);
        assert!(measure(IB_WRITE_BW, "Couldn't connect to 10.0.2.15:18515").is_err());
    }

    #[test]
    fn fio_and_frametest_figures_are_read_from_their_json() {
        let fio = "fio: opendir added 12 files\n\
                   {\"jobs\":[{\"error\":0,\"read\":{\"io_bytes\":300000000,\"bw_bytes\":45000000}}]}";
        assert_eq!(measure(KERNEL_RDMA, fio), Ok(Measured { bytes: 300_000_000, mb_per_s: 45.0 }));
        let frametest = r#"{"bytes":300000000,"data_rate_mb_per_s":44.5,"frames_failed":0,"errors":[]}"#;
        assert_eq!(measure(PLAYSIM_RDMA, frametest), Ok(Measured { bytes: 300_000_000, mb_per_s: 44.5 }));
        let failed =
            r#"{"bytes":0,"data_rate_mb_per_s":0,"frames_failed":2,"errors":["frame000000.dpx: gone"]}"#;
        assert_eq!(measure(PLAYSIM_RDMA, failed), Err("2 frames failed: frame000000.dpx: gone".to_owned()));
    }

    #[test]
    fn rows_take_the_median_and_a_failed_row_says_why() {
        let tsv = "row\tround\texit\twall_s\tuser_s\tsystem_s\tirq_s\tsoftirq_s\toutput\n\
                   kernel-rdma-fio\t1\t0\t7.0\t1\t2\t0\t1\tf1\n\
                   playsim-nfs-rdma\t1\t1\t0.2\t0\t0\t0\t0\tp1\n\
                   kernel-rdma-fio\t2\t0\t7.0\t1\t2\t0\t3\tf2\n\
                   playsim-nfs-rdma\t2\t1\t0.2\t0\t0\t0\t0\tp2\n\
                   kernel-rdma-fio\t3\t0\t7.0\t1\t2\t0\t2\tf3\n";
        let runs = parse_runs(tsv, |name| {
            let rate = match name {
                "f1" => 40,
                "f2" => 50,
                "f3" => 45,
                _ => {
                    let stderr = "playsim: error: no transport serves nfs+rdma://\n";
                    return (Err("no such file".to_owned()), stderr.to_owned());
                }
            };
            (
                Ok(format!(
                    r#"{{"jobs":[{{"error":0,"read":{{"io_bytes":1000000000,"bw_bytes":{rate}000000}}}}]}}"#
                )),
                String::new(),
            )
        });
        assert_eq!(runs.len(), 5);
        assert_eq!(runs[0].cpu_s_per_gb(), Some(4.0));
        let (table, lines) = render(&runs, "", "rsize=524288");
        assert!(lines.contains(&"BENCH kernel-rdma-fio OK 45.0 MB/s 5.00 CPU s/GB".to_owned()), "{lines:?}");
        assert!(
            lines.contains(
                &"BENCH playsim-nfs-rdma FAILED (no run succeeded (2 tried): exit 1: playsim: error: no \
                  transport serves nfs+rdma://)"
                    .to_owned()
            ),
            "{lines:?}"
        );
        assert!(lines.contains(&"BENCH ib_write_bw FAILED (not run)".to_owned()), "{lines:?}");
        assert!(table.contains("45.0 (40.0-50.0)"), "{table}");
        assert!(table.contains("throughput n/a (no figures of playsim's client)"), "{table}");
        assert!(table.ends_with(&format!("{SOFT_ROCE_NOTE}\n")));
    }
}
