//! The NFS rows of `cargo xtask bench`: throughput and CPU seconds per GB reading a 4K DPX sequence
//! over `nfs://` from a real NFS-Ganesha on loopback, playsim's client (`benches/nfs_read.rs`)
//! against libnfs's async API (`benches/anchors/libnfs_read.c`), in the same run.
//!
//! Debian's fio is built without its libnfs engine, so the anchor is libnfs itself: a small C
//! program with the same READ size and the same number of READs in flight. Both sides read the
//! same files from the server's page cache (read once locally first, and checked with `fincore`),
//! both report the bytes, the wall time and their own user + system CPU time, and both report a
//! fingerprint of the data that must equal the one computed here from the local files.
//!
//! On loopback the server shares the machine with the client, and the network work of both ends
//! lands in system-wide softirq time; that, the machine's busy time and the server's own CPU time
//! are kept as extra figures, not as part of the targets.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use playsim_testserver::NfsServer;

use crate::bench::{median, Bench, BenchRow};
use crate::process::{self, USER_HZ};

/// Frames in the sequence: 96 4K DCI 10-bit DPX frames of 35.4 MB, 3.4 GB. A run lasts a couple
/// of seconds at 2 GB/s, and the sequence is in memory once: the export's files are hard links to
/// those under `target/bench/`.
const NFS_N_FRAMES: u32 = 96;
const NFS_N_FRAMES_SHORT: u32 = 16;
/// Bytes per READ on both sides: Linux's default rsize and Ganesha's default largest READ.
const READ_SIZE: usize = 1 << 20;
/// READs in flight on both sides.
const IN_FLIGHT: usize = 8;
/// Connections playsim's client spreads its READs over; libnfs has one.
const NCONNECTS: [u32; 2] = [1, 4];
/// Measured runs of each side, after one warm-up of each; alternating, the median kept.
const NFS_RUNS: usize = 5;

/// The two rows (MB/s, CPU s/GB) for each of [`NCONNECTS`].
pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    let playsim = bench.playsim.as_path();
    let bench_dir = bench.out_dir.clone();
    let n_frames = bench.pick(NFS_N_FRAMES, NFS_N_FRAMES_SHORT);
    let n_runs = bench.pick(NFS_RUNS, 1);
    let seq_dir = bench_dir.join(bench.pick("dpx-4k-dci-nfs", "dpx-4k-dci-nfs-short"));
    crate::ensure_sequence(playsim, "4k-dci", n_frames, &seq_dir)?;
    let anchor = build_anchor(&bench_dir)?;
    let reader = build_reader()?;

    let server = NfsServer::start().context("cannot start NFS-Ganesha for the NFS rows")?;
    let export_seq = server.export_dir().join("seq");
    link_sequence(&seq_dir, &export_seq)?;
    // The files under the export are the local ones (hard links), so reading them here fills
    // the page cache the server reads from, and gives the fingerprint both sides must match.
    let expected = local_fingerprint(&export_seq, READ_SIZE)?;
    let resident = resident_fraction(&export_seq)?;
    println!("page cache holds {:.1}% of the sequence", resident.min(1.0) * 100.0);
    if resident < 0.99 {
        println!("warning: the sequence is not all in memory; the server will read part of it from disk");
    }

    // libnfs mounts the export and reads the directory in it; playsim takes the directory's URL.
    let export_url = server.url("");
    let anchor_args = [export_url, "/seq".to_owned(), READ_SIZE.to_string(), IN_FLIGHT.to_string()];
    let seq_url = server.url("seq/");
    let server_pid = server.pid().context("NFS-Ganesha is not running")?;

    let mut anchor_runs = Vec::new();
    let mut playsim_runs: Vec<Vec<ReadRun>> = vec![Vec::new(); NCONNECTS.len()];
    println!(
        "\nNFS read: {n_frames} frames, {READ_SIZE} B READs, {IN_FLIGHT} in flight; a warm-up and \
         {n_runs} runs of each side"
    );
    for run_idx in 0..=n_runs {
        let mut cmd = Command::new(&anchor);
        cmd.args(&anchor_args);
        let run = measure(&mut cmd, server_pid, &expected)?;
        run.print("libnfs");
        // The first run of each side wakes the server's caches and the CPU's clocks.
        if run_idx > 0 {
            anchor_runs.push(run);
        }
        for (nconnect, runs) in NCONNECTS.iter().zip(&mut playsim_runs) {
            let mut cmd = Command::new(&reader);
            cmd.arg(&seq_url).args([READ_SIZE.to_string(), IN_FLIGHT.to_string(), nconnect.to_string()]);
            let run = measure(&mut cmd, server_pid, &expected)?;
            run.print(&format!("playsim nconnect {nconnect}"));
            if run_idx > 0 {
                runs.push(run);
            }
        }
    }
    // fincore counts whole pages, so a file whose size is not a multiple of 4 KiB reads as a
    // little over 100%.
    let resident = resident.min(resident_fraction(&export_seq)?).min(1.0);
    drop(server);

    let anchor = ReadFigures::median(&anchor_runs);
    let read_mib = READ_SIZE >> 20;
    let n_cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) as f64;
    let anchor_name = format!(
        "libnfs 4 async API (nfs_pread_async), 1 connection, {IN_FLIGHT} READs of {read_mib} MiB in flight, same \
         files"
    );
    let mut rows = Vec::new();
    for (nconnect, runs) in NCONNECTS.iter().zip(&playsim_runs) {
        let playsim = ReadFigures::median(runs);
        let what = format!(
            "4K DPX over nfs:// (Ganesha, loopback), {read_mib} MiB READs, {IN_FLIGHT} in flight, playsim nconnect \
             {nconnect}"
        );
        report_saturation(&what, &playsim, &anchor, n_cpus);
        // The server's and the kernel's share, which the targets leave out: on loopback both ends'
        // network work is softirq time, and Ganesha shares the CPUs with the client.
        let context = |row: BenchRow| {
            row.extra("playsim_softirq_s_per_gb", playsim.softirq_s_per_gb)
                .extra("libnfs_softirq_s_per_gb", anchor.softirq_s_per_gb)
                .extra("playsim_server_cpu_s_per_gb", playsim.server_cpu_s_per_gb)
                .extra("libnfs_server_cpu_s_per_gb", anchor.server_cpu_s_per_gb)
                .extra("playsim_server_cpus", playsim.server_cpus)
                .extra("libnfs_server_cpus", anchor.server_cpus)
                .extra("playsim_machine_busy_fraction", playsim.busy_cpus / n_cpus)
                .extra("libnfs_machine_busy_fraction", anchor.busy_cpus / n_cpus)
        };
        let spread = |runs: &[ReadRun], pick: fn(f64, f64) -> f64| {
            runs.iter().map(ReadRun::mb_per_s).fold(f64::NAN, pick)
        };
        rows.push(context(
            BenchRow::rate(
                &format!("NFS read throughput, {what}"),
                "MB/s",
                playsim.mb_per_s,
                &format!("{anchor_name}, wall time (median of {n_runs})"),
                anchor.mb_per_s,
            )
            .extra("playsim_mb_per_s_min", spread(runs, f64::min))
            .extra("playsim_mb_per_s_max", spread(runs, f64::max))
            .extra("libnfs_mb_per_s_min", spread(&anchor_runs, f64::min))
            .extra("libnfs_mb_per_s_max", spread(&anchor_runs, f64::max))
            .extra("page_cache_resident_fraction", resident),
        ));
        // "No more CPU per GB": lower is better, so the ratio is libnfs's over playsim's.
        rows.push(context(
            BenchRow::time(
                &format!("NFS read CPU, {what}"),
                "CPU s/GB",
                playsim.cpu_s_per_gb,
                &format!("{anchor_name}, client user + system CPU (median of {n_runs})"),
                anchor.cpu_s_per_gb,
            )
            .extra("playsim_user_s_per_gb", playsim.user_s_per_gb)
            .extra("libnfs_user_s_per_gb", anchor.user_s_per_gb),
        ));
    }
    Ok(rows)
}

/// Says when the machine, not the client, bounds the throughput: its CPUs nearly all busy during
/// the runs, shared by Ganesha and the client.
fn report_saturation(what: &str, playsim: &ReadFigures, anchor: &ReadFigures, n_cpus: f64) {
    for (side, figures) in [("playsim", playsim), ("libnfs", anchor)] {
        if figures.busy_cpus / n_cpus >= 0.9 {
            println!(
                "{what}: with {side}, {:.2} of {n_cpus} CPUs were busy, {:.2} of them Ganesha's and {:.2} the \
                 client's: the machine, which the server shares, bounds the throughput",
                figures.busy_cpus,
                figures.server_cpus,
                figures.cpu_s_per_gb * figures.mb_per_s / 1e3,
            );
        }
    }
}

/// One run of either side: what it printed, and what the machine and the server spent meanwhile.
#[derive(Clone, Debug)]
struct ReadRun {
    bytes: u64,
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    /// System-wide softirq time over the run (both ends' network work on loopback).
    softirq_s: f64,
    /// System-wide busy (not idle, not iowait) time over the run, summed over CPUs: every
    /// process's, the rest of a shared machine's included.
    busy_s: f64,
    /// The server process's user + system time over the run.
    server_cpu_s: f64,
}

impl ReadRun {
    fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.wall_s
    }

    fn per_gb(&self, seconds: f64) -> f64 {
        seconds / (self.bytes as f64 / 1e9)
    }

    fn print(&self, side: &str) {
        println!(
            "  {side}: {:.0} MB/s, {:.3} CPU s/GB (user {:.3}), softirq {:.3} s/GB, server {:.3} s/GB, machine busy {:.2} CPUs",
            self.mb_per_s(),
            self.per_gb(self.user_s + self.sys_s),
            self.per_gb(self.user_s),
            self.per_gb(self.softirq_s),
            self.per_gb(self.server_cpu_s),
            self.busy_s / self.wall_s,
        );
    }
}

/// The median of each figure of several runs, on its own.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ReadFigures {
    mb_per_s: f64,
    cpu_s_per_gb: f64,
    user_s_per_gb: f64,
    softirq_s_per_gb: f64,
    server_cpu_s_per_gb: f64,
    /// The server's CPU time a second: how many CPUs it kept busy.
    server_cpus: f64,
    /// CPUs busy (all processes) on average over the run.
    busy_cpus: f64,
}

impl ReadFigures {
    fn median(runs: &[ReadRun]) -> ReadFigures {
        let of = |figure: fn(&ReadRun) -> f64| median(runs.iter().map(figure).collect());
        ReadFigures {
            mb_per_s: of(ReadRun::mb_per_s),
            cpu_s_per_gb: of(|run| run.per_gb(run.user_s + run.sys_s)),
            user_s_per_gb: of(|run| run.per_gb(run.user_s)),
            softirq_s_per_gb: of(|run| run.per_gb(run.softirq_s)),
            server_cpu_s_per_gb: of(|run| run.per_gb(run.server_cpu_s)),
            server_cpus: of(|run| run.server_cpu_s / run.wall_s),
            busy_cpus: of(|run| run.busy_s / run.wall_s),
        }
    }
}

/// Runs one side, with the machine's and the server's CPU time read around it, and checks what it
/// read: every byte of the sequence, with the fingerprint of the local files.
fn measure(cmd: &mut Command, server_pid: u32, expected: &Fingerprint) -> Result<ReadRun> {
    let system_before = SystemCpu::read()?;
    let server_before = process_cpu_s(server_pid)?;
    let output = process::run_capture(cmd)?;
    let server_cpu_s = process_cpu_s(server_pid)? - server_before;
    let system = SystemCpu::read()?.since(&system_before);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line: serde_json::Value = serde_json::from_str(stdout.trim())
        .with_context(|| format!("`{}` printed no JSON line: {stdout}", process::display(cmd)))?;
    let number = |name: &str| {
        line.get(name).and_then(serde_json::Value::as_f64).with_context(|| format!("no {name} in {line}"))
    };
    let bytes = line
        .get("bytes")
        .and_then(serde_json::Value::as_u64)
        .with_context(|| format!("no bytes in {line}"))?;
    let fingerprint = line.get("fingerprint").and_then(serde_json::Value::as_str).unwrap_or_default();
    if bytes != expected.bytes || fingerprint != expected.hex() {
        bail!(
            "`{}` read {bytes} bytes with fingerprint {fingerprint}; the local files are {} bytes with \
             fingerprint {}",
            process::display(cmd),
            expected.bytes,
            expected.hex()
        );
    }
    // A reconnect on loopback is a fault in the client, and its backoff would be in the figures.
    if line.get("reconnects").and_then(serde_json::Value::as_u64).is_some_and(|n| n > 0) {
        println!("warning: playsim's client reconnected during the run: {line}");
    }
    Ok(ReadRun {
        bytes,
        wall_s: number("wall_s")?,
        user_s: number("user_s")?,
        sys_s: number("sys_s")?,
        softirq_s: system.softirq_s,
        busy_s: system.busy_s,
        server_cpu_s,
    })
}

/// Compiles the libnfs anchor with gcc.
fn build_anchor(bench_dir: &Path) -> Result<PathBuf> {
    if !Path::new("/usr/include/nfsc/libnfs.h").exists() {
        bail!("no /usr/include/nfsc/libnfs.h: the NFS rows need libnfs-dev");
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/anchors/libnfs_read.c");
    let binary = bench_dir.join("libnfs_read");
    fs::create_dir_all(bench_dir)?;
    process::run(Command::new("gcc").args(["-O2", "-Wall", "-o"]).arg(&binary).arg(&source).arg("-lnfs"))?;
    Ok(binary)
}

/// Builds `benches/nfs_read.rs` as `cargo bench` does (release, bench profile) and returns the
/// executable cargo reports.
fn build_reader() -> Result<PathBuf> {
    let mut cmd = crate::bench::cargo_bench();
    cmd.args(["--bench", "nfs_read", "--no-run", "--message-format=json-render-diagnostics"]);
    println!("$ {}", process::display(&cmd));
    let messages = process::read(&mut cmd)?;
    bench_executable(&messages, "nfs_read").context("cargo built no nfs_read bench executable")
}

/// The executable of bench `name` in cargo's JSON messages.
fn bench_executable(messages: &str, name: &str) -> Option<PathBuf> {
    messages.lines().filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok()).find_map(
        |message| {
            let is_it = message["reason"] == "compiler-artifact"
                && message["target"]["name"] == name
                && message["target"]["kind"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k == "bench"));
            is_it.then(|| message["executable"].as_str().map(PathBuf::from)).flatten()
        },
    )
}

/// Makes `to` hold the frames of `from` as hard links (copies where the file systems differ).
pub(crate) fn link_sequence(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))? {
        let source = entry?.path();
        let dest = to.join(source.file_name().context("a file with no name")?);
        if fs::hard_link(&source, &dest).is_err() {
            fs::copy(&source, &dest)
                .with_context(|| format!("cannot copy {} to {}", source.display(), dest.display()))?;
        }
    }
    Ok(())
}

/// The bytes and fingerprint of every file in `dir`, read as the two sides read them.
struct Fingerprint {
    bytes: u64,
    sum: u64,
}

impl Fingerprint {
    fn hex(&self) -> String {
        format!("{:016x}", self.sum)
    }
}

/// Reads every file of `dir` (which also puts it in the page cache) and computes the fingerprint
/// both sides print: files in name order, cut into `read_size` chunks, [`chunk_fingerprint`]
/// summed over the chunks.
fn local_fingerprint(dir: &Path, read_size: usize) -> Result<Fingerprint> {
    let mut paths: Vec<PathBuf> =
        fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    paths.retain(|path| path.is_file());
    paths.sort();
    let mut fingerprint = Fingerprint { bytes: 0, sum: 0 };
    let mut chunk = vec![0u8; read_size];
    for (file_idx, path) in paths.iter().enumerate() {
        let mut file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut offset = 0u64;
        loop {
            let n = read_full(&mut file, &mut chunk)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if n == 0 {
                break;
            }
            fingerprint.sum = fingerprint.sum.wrapping_add(chunk_fingerprint(file_idx, offset, &chunk[..n]));
            fingerprint.bytes += n as u64;
            offset += n as u64;
        }
    }
    Ok(fingerprint)
}

fn read_full(file: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read(&mut buf[done..])? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// The fingerprint of one chunk, as `libnfs_read.c` and `benches/nfs_read.rs` compute it: its
/// first and last 8 bytes (little-endian, fewer for a chunk under 8 bytes), mixed with where it lies.
fn chunk_fingerprint(file_idx: usize, offset: u64, data: &[u8]) -> u64 {
    let le64 = |bytes: &[u8]| bytes.iter().take(8).rev().fold(0u64, |v, &b| (v << 8) | u64::from(b));
    let first = le64(data);
    let last = le64(&data[data.len().saturating_sub(8)..]);
    mix64(first ^ offset ^ ((file_idx as u64) << 48)) ^ mix64(last.wrapping_add(data.len() as u64))
}

/// splitmix64's finaliser.
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The fraction of the bytes of `dir`'s files in the page cache, by `fincore`; 1 when there is
/// no fincore (util-linux), which is said.
pub(crate) fn resident_fraction(dir: &Path) -> Result<f64> {
    if !process::on_path("fincore") {
        println!("no fincore: cannot check that the sequence is in the page cache");
        return Ok(1.0);
    }
    let mut cmd = Command::new("fincore");
    cmd.args(["--bytes", "--noheadings", "--raw", "--output", "RES,SIZE"]);
    for entry in fs::read_dir(dir)? {
        cmd.arg(entry?.path());
    }
    let text = process::read(&mut cmd)?;
    let (resident, size) = parse_fincore(&text).context("cannot parse fincore's output")?;
    Ok(if size == 0 { 1.0 } else { resident as f64 / size as f64 })
}

/// Sums the `RES SIZE` lines of `fincore --bytes --raw --output RES,SIZE`.
fn parse_fincore(text: &str) -> Option<(u64, u64)> {
    text.lines().try_fold((0, 0), |(resident, size), line| {
        let mut fields = line.split_whitespace().map(str::parse::<u64>);
        Some((resident + fields.next()?.ok()?, size + fields.next()?.ok()?))
    })
}

/// System-wide CPU time from the first line of `/proc/stat`, in seconds summed over CPUs.
///
/// (playsim-engine's `SystemCpuSnapshot` reads the same line; the xtask keeps its own few lines
/// rather than build the engine, which needs the native libraries `deps` installs.)
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SystemCpu {
    softirq_s: f64,
    /// Everything but idle and iowait.
    busy_s: f64,
}

impl SystemCpu {
    fn read() -> Result<SystemCpu> {
        let text = fs::read_to_string("/proc/stat").context("cannot read /proc/stat")?;
        SystemCpu::parse(&text).context("cannot parse the cpu line of /proc/stat")
    }

    fn parse(text: &str) -> Option<SystemCpu> {
        let line = text.lines().find_map(|line| line.strip_prefix("cpu "))?;
        let ticks: Vec<u64> = line.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
        // user nice system idle iowait irq softirq steal [guest guest_nice, already in user and nice]
        let at = |i: usize| ticks.get(i).copied().unwrap_or(0) as f64 / USER_HZ;
        let busy_s = (0..8).filter(|&i| i != 3 && i != 4).map(at).sum();
        Some(SystemCpu { softirq_s: at(6), busy_s })
    }

    fn since(&self, earlier: &SystemCpu) -> SystemCpu {
        SystemCpu { softirq_s: self.softirq_s - earlier.softirq_s, busy_s: self.busy_s - earlier.busy_s }
    }
}

/// A process's user + system time so far, from `/proc/<pid>/stat` (fields 14 and 15).
fn process_cpu_s(pid: u32) -> Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let text = fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse_process_cpu_s(&text).with_context(|| format!("cannot parse {path}"))
}

fn parse_process_cpu_s(text: &str) -> Option<f64> {
    process::proc_stat_cpu_pair_s(text, 14).map(|(user, sys)| user + sys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_match_the_c_anchor() {
        // libnfs_read printed ad1b504dd60337f8 for these three files in an export, with READ_SIZE 1024.
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("b"), (0..3000u32).map(|i| (i * 7) as u8).collect::<Vec<u8>>()).unwrap();
        fs::write(tmp.path().join("a"), b"hi\n").unwrap();
        fs::write(tmp.path().join("c"), []).unwrap();
        let fingerprint = local_fingerprint(tmp.path(), 1024).unwrap();
        assert_eq!(fingerprint.bytes, 3003);
        assert_eq!(fingerprint.hex(), "ad1b504dd60337f8");
    }

    #[test]
    fn parses_proc_stat_and_fincore() {
        let stat = "cpu  100 5 50 1000 20 1 30 2 0 0\ncpu0 50 2 25 500 10 0 15 1 0 0\n";
        let cpu = SystemCpu::parse(stat).unwrap();
        assert!((cpu.softirq_s - 0.30).abs() < 1e-9 && (cpu.busy_s - 1.88).abs() < 1e-9, "{cpu:?}");
        assert_eq!(parse_fincore("1048576 2097152\n4096 4096\n"), Some((1052672, 2101248)));
        assert_eq!(parse_fincore("x y\n"), None);
        let proc_stat = "1234 (ganesha (nfsd)) S 1 1234 1234 0 -1 4194560 1 0 0 0 250 150 0 0 20 0";
        assert_eq!(parse_process_cpu_s(proc_stat), Some(4.0));
    }

    #[test]
    fn finds_the_bench_executable_in_cargos_messages() {
        let messages = r#"{"reason":"compiler-artifact","target":{"name":"playsim","kind":["lib"]},"executable":null}
{"reason":"compiler-artifact","target":{"name":"nfs_read","kind":["bench"]},"executable":"/t/release/deps/nfs_read-abc"}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            bench_executable(messages, "nfs_read"),
            Some(PathBuf::from("/t/release/deps/nfs_read-abc"))
        );
        assert_eq!(bench_executable(messages, "other"), None);
    }

    #[test]
    fn medians_of_runs() {
        let run = |mb: f64| ReadRun {
            bytes: 1_000_000_000,
            wall_s: 1000.0 / mb,
            user_s: 0.1,
            sys_s: 0.2,
            softirq_s: 0.3,
            busy_s: 1.0,
            server_cpu_s: 0.5,
        };
        let figures = ReadFigures::median(&[run(900.0), run(1000.0), run(1100.0)]);
        assert!((figures.mb_per_s - 1000.0).abs() < 1e-9);
        assert!((figures.cpu_s_per_gb - 0.3).abs() < 1e-9);
        assert!(median(Vec::new()).is_nan());
    }
}
