//! The SMB rows of `cargo xtask bench` (issue 21, point 4, on this host): reading a 4K DPX
//! sequence over `smb://` from a real Samba `smbd` on loopback, playsim's own client against
//! `smbclient`'s `get` from the same server, of the same files, in the same run.
//!
//! The playsim side is `playsim frametest -r -t 1` on the share's directory: it reads each file
//! whole (open, read, close) and does nothing else with the bytes, which is what `smbclient`'s
//! `get FILE /dev/null` does. `playsim play --fps max` would add the DPX decode, which smbclient
//! does not do, and its figures would measure the decoder more than the client. `-t 1` reads one
//! file at a time, as smbclient's `get`s do one after another; each side may keep several READs
//! of the file in flight (smbclient's pull window, playsim's credits).
//!
//! The anchor is one `smbclient` process whose `-c` runs a `get` of every file into `/dev/null`
//! (not `mget`, which writes the files to the local disk and would put the disk in the figures).
//! Both sides are whole processes measured from outside the same way (`process::run_measured`):
//! wall time from start to exit, connect and login included on both, and user + system CPU.
//! Bytes are the sum of the local files' sizes, checked against what each side says it read.
//!
//! Protection: each side runs signed (`sign=on`, smbclient `--client-protection=sign`), unsigned
//! (`sign=off`, `=off`) and encrypted (`seal=on`, `=encrypt`), alternating. The throughput row is
//! the signed one; a CPU row for each setting puts playsim's CPU per GB beside smbclient's with the
//! same setting, and each keeps its cost over unsigned on both sides: what signing and encryption
//! cost a client, the figure users need. AES-GMAC signing and AES-GCM encryption are RustCrypto's
//! in playsim (the `smb2` crate) and gnutls's in smbclient.
//!
//! The minor faults per GB of each side are kept as extra figures: each READ's data comes back
//! from the `smb2` crate in buffers of its own of the read size (1 MiB), over glibc's starting
//! mmap threshold, and with glibc's default settings their pages went back to the kernel and were
//! faulted in again for every READ (662k faults per GB against smbclient's 98k, 0.53× its
//! throughput). The client now sets the thresholds `playsim_core::malloc` sets (74k a GB).
//!
//! On loopback smbd shares the machine with the client. Its CPU (its connection children, reaped
//! by the parent when the client leaves) and the machine's busy time are kept as extra figures.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use playsim_testserver::SmbServer;

use crate::bench::{median, Bench, BenchRow};
use crate::process;

/// Frames in the sequence: 4K DCI 10-bit DPX frames of 35.4 MB; 8 is 283 MB, 3 is 106 MB.
const SMB_N_FRAMES: u32 = 8;
const SMB_N_FRAMES_SHORT: u32 = 3;
/// Measured runs of each side, after one warm-up of each; alternating, the median kept.
const SMB_RUNS: usize = 5;
const SMB_RUNS_SHORT: usize = 3;
/// The directory of the sequence in the share.
const SEQ: &str = "seq";
/// The frames' names, as `playsim generate` writes them and `frametest --name` takes them.
const NAME_PATTERN: &str = "frame.%07d.dpx";

/// The two rows: throughput, and client CPU per GB with smbclient signing and encrypting.
pub fn run(bench: &Bench) -> Result<Vec<BenchRow>> {
    let playsim = bench.playsim.as_path();
    for program in ["smbd", "smbclient"] {
        if !process::on_path(program) && !Path::new("/usr/sbin").join(program).is_file() {
            bail!("no `{program}` on PATH: the SMB rows need Samba (`apt-get install samba smbclient`)");
        }
    }
    let n_frames = bench.pick(SMB_N_FRAMES, SMB_N_FRAMES_SHORT);
    let n_runs = bench.pick(SMB_RUNS, SMB_RUNS_SHORT);
    let seq_dir = bench.out_dir.join(bench.pick("dpx-4k-dci-smb", "dpx-4k-dci-smb-short"));
    crate::ensure_sequence(playsim, "4k-dci", n_frames, &seq_dir)?;

    let server = SmbServer::start().context("cannot start Samba's smbd for the SMB rows")?;
    let share_seq = server.export_dir().join(SEQ);
    crate::bench_nfs::link_sequence(&seq_dir, &share_seq)?;
    let files = sorted_files(&share_seq)?;
    let total_bytes: u64 = files.iter().map(|(_, size)| size).sum();
    // The share's files are the local ones (hard links): reading them here puts them in the page
    // cache smbd reads from.
    for (path, _) in &files {
        crate::bench::read_through_page_cache(path)?;
    }
    let resident = crate::bench_nfs::resident_fraction(&share_seq)?.min(1.0);
    println!("page cache holds {:.1}% of the sequence", resident * 100.0);
    let server_pid = server.pid().context("smbd is not running")?;

    let sides = Sides { playsim, server: &server, files: &files, total_bytes };
    println!(
        "\nSMB read: {n_frames} frames ({:.0} MB) from smbd on loopback; a warm-up and {n_runs} runs of each \
         side (playsim and smbclient, each signed, unsigned and encrypted), alternating",
        total_bytes as f64 / 1e6
    );
    let mut playsim_runs: [Vec<ReadRun>; 3] = Default::default();
    let mut smbclient_runs: [Vec<ReadRun>; 3] = Default::default();
    for run_idx in 0..=n_runs {
        for protection in Protection::ALL {
            let run = measure(server_pid, total_bytes, || sides.playsim_read(&bench.out_dir, protection))?;
            run.print(&format!("playsim frametest -r -t 1, {}", protection.playsim_option()));
            if run_idx > 0 {
                playsim_runs[protection as usize].push(run);
            }
            let run = measure(server_pid, total_bytes, || sides.smbclient_read(protection))?;
            run.print(&format!("smbclient {}", protection.smbclient_flag()));
            if run_idx > 0 {
                smbclient_runs[protection as usize].push(run);
            }
        }
    }
    drop(server);

    let playsim_figures = playsim_runs.each_ref().map(|runs| ReadFigures::median(runs));
    let smbclient_figures = smbclient_runs.each_ref().map(|runs| ReadFigures::median(runs));
    let n_cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) as f64;
    for protection in Protection::ALL {
        for (side, figures) in [
            ("playsim", &playsim_figures[protection as usize]),
            ("smbclient", &smbclient_figures[protection as usize]),
        ] {
            if figures.busy_cpus / n_cpus >= 0.9 {
                println!(
                    "with {side} ({}), {:.2} of {n_cpus} CPUs were busy ({:.2} of them smbd's): the machine, \
                     which smbd and any other work share, bounds the throughput, so the client's CPU per GB \
                     decides it",
                    protection.name(),
                    figures.busy_cpus,
                    figures.server_cpu_s_per_gb * figures.mb_per_s / 1e3,
                );
            }
        }
    }
    let over_off = |figures: &[ReadFigures; 3], protection: Protection| {
        figures[protection as usize].cpu_s_per_gb / figures[Protection::Off as usize].cpu_s_per_gb
    };
    for protection in [Protection::Sign, Protection::Encrypt] {
        println!(
            "{}'s client CPU over unsigned: playsim {:.2}×, smbclient {:.2}×",
            protection.name(),
            over_off(&playsim_figures, protection),
            over_off(&smbclient_figures, protection),
        );
    }
    let what = format!("4K DPX, {n_frames} files, over smb:// (Samba smbd, loopback, SMB 3.1.1)");
    let smbclient_name = "smbclient -m SMB3, `get FILE /dev/null` of every file, one process";
    let signed = Protection::Sign as usize;
    let context = |row: BenchRow| {
        row.extra("playsim_server_cpu_s_per_gb", playsim_figures[signed].server_cpu_s_per_gb)
            .extra("smbclient_sign_server_cpu_s_per_gb", smbclient_figures[signed].server_cpu_s_per_gb)
            .extra("playsim_machine_busy_fraction", playsim_figures[signed].busy_cpus / n_cpus)
            .extra("smbclient_sign_machine_busy_fraction", smbclient_figures[signed].busy_cpus / n_cpus)
            .extra("page_cache_resident_fraction", resident)
    };
    let spread = |runs: &[ReadRun], pick: fn(f64, f64) -> f64, figure: fn(&ReadRun) -> f64| {
        runs.iter().map(figure).fold(f64::NAN, pick)
    };
    let mut throughput = BenchRow::rate(
        &format!("SMB read throughput, {what}, signed, playsim frametest -r -t 1"),
        "MB/s",
        playsim_figures[signed].mb_per_s,
        &format!("{smbclient_name}, {}, wall time (median of {n_runs})", Protection::Sign.smbclient_flag()),
        smbclient_figures[signed].mb_per_s,
    )
    .extra("playsim_mb_per_s_min", spread(&playsim_runs[signed], f64::min, ReadRun::mb_per_s))
    .extra("playsim_mb_per_s_max", spread(&playsim_runs[signed], f64::max, ReadRun::mb_per_s))
    .extra("smbclient_mb_per_s_min", spread(&smbclient_runs[signed], f64::min, ReadRun::mb_per_s))
    .extra("smbclient_mb_per_s_max", spread(&smbclient_runs[signed], f64::max, ReadRun::mb_per_s));
    for protection in [Protection::Off, Protection::Encrypt] {
        let name = protection.name();
        throughput = throughput
            .extra(&format!("playsim_{name}_mb_per_s"), playsim_figures[protection as usize].mb_per_s)
            .extra(&format!("smbclient_{name}_mb_per_s"), smbclient_figures[protection as usize].mb_per_s);
    }
    let mut rows = vec![context(throughput)];
    // Lower is better: each ratio is smbclient's CPU per GB over playsim's, with the same protection.
    for protection in Protection::ALL {
        let (i, name) = (protection as usize, protection.name());
        let row = BenchRow::time(
            &format!("SMB read client CPU, {what}, {name}, playsim {}", protection.playsim_option()),
            "CPU s/GB",
            playsim_figures[i].cpu_s_per_gb,
            &format!(
                "{smbclient_name}, {}, client user + system CPU (median of {n_runs})",
                protection.smbclient_flag()
            ),
            smbclient_figures[i].cpu_s_per_gb,
        )
        .extra("playsim_cpu_s_per_gb_min", spread(&playsim_runs[i], f64::min, ReadRun::cpu_s_per_gb))
        .extra("playsim_cpu_s_per_gb_max", spread(&playsim_runs[i], f64::max, ReadRun::cpu_s_per_gb))
        .extra("smbclient_cpu_s_per_gb_min", spread(&smbclient_runs[i], f64::min, ReadRun::cpu_s_per_gb))
        .extra("smbclient_cpu_s_per_gb_max", spread(&smbclient_runs[i], f64::max, ReadRun::cpu_s_per_gb))
        .extra("playsim_over_unsigned_cpu", over_off(&playsim_figures, protection))
        .extra("smbclient_over_unsigned_cpu", over_off(&smbclient_figures, protection))
        .extra("playsim_user_s_per_gb", playsim_figures[i].user_s_per_gb)
        .extra("smbclient_user_s_per_gb", smbclient_figures[i].user_s_per_gb)
        .extra("playsim_minor_faults_per_gb", playsim_figures[i].faults_per_gb)
        .extra("smbclient_minor_faults_per_gb", smbclient_figures[i].faults_per_gb);
        rows.push(context(row));
    }
    Ok(rows)
}

/// What protects the messages: the same three settings on both sides.
#[derive(Clone, Copy, Debug)]
enum Protection {
    Sign = 0,
    Off = 1,
    Encrypt = 2,
}

impl Protection {
    const ALL: [Protection; 3] = [Protection::Sign, Protection::Off, Protection::Encrypt];

    fn name(self) -> &'static str {
        match self {
            Protection::Sign => "signed",
            Protection::Off => "unsigned",
            Protection::Encrypt => "encrypted",
        }
    }

    /// smbclient's `--client-protection`.
    fn smbclient_flag(self) -> &'static str {
        match self {
            Protection::Sign => "--client-protection=sign",
            Protection::Off => "--client-protection=off",
            Protection::Encrypt => "--client-protection=encrypt",
        }
    }

    /// playsim's `smb://` URL option.
    fn playsim_option(self) -> &'static str {
        match self {
            Protection::Sign => "sign=on",
            Protection::Off => "sign=off",
            Protection::Encrypt => "seal=on",
        }
    }
}

/// What both sides read, and how to run each.
struct Sides<'a> {
    playsim: &'a Path,
    server: &'a SmbServer,
    /// The share's files, in name order, with their sizes.
    files: &'a [(PathBuf, u64)],
    total_bytes: u64,
}

impl Sides<'_> {
    /// `playsim frametest -r -t 1 smb://…/share/seq`, checked: every file transferred, every byte.
    fn playsim_read(&self, out_dir: &Path, protection: Protection) -> Result<(Command, ChildCheck)> {
        let json = out_dir.join("smb-frametest.json");
        let _ = fs::remove_file(&json);
        let mut cmd = Command::new(self.playsim);
        cmd.args(["frametest", "-r", "-t", "1", "--name", NAME_PATTERN, "--smb-credentials"])
            .arg(self.server.credentials_file())
            .arg("--json")
            .arg(&json)
            .arg(format!("{}?{}", self.server.url(SEQ), protection.playsim_option()));
        Ok((
            cmd,
            ChildCheck::FrametestJson { json, n_files: self.files.len() as u64, bytes: self.total_bytes },
        ))
    }

    /// One smbclient process that `get`s every file into /dev/null.
    fn smbclient_read(&self, protection: Protection) -> Result<(Command, ChildCheck)> {
        let gets: Vec<String> = self
            .files
            .iter()
            .map(|(path, _)| {
                let name =
                    path.file_name().and_then(|n| n.to_str()).context("a frame name that is not UTF-8")?;
                Ok(format!("get {SEQ}/{name} /dev/null"))
            })
            .collect::<Result<_>>()?;
        let mut cmd = Command::new("smbclient");
        cmd.arg(format!("//127.0.0.1/{}", self.server.share()))
            .args(["-p", &self.server.port().to_string(), "-m", "SMB3", protection.smbclient_flag(), "-A"])
            .arg(self.server.credentials_file())
            .args(["-c", &gets.join("; ")]);
        Ok((cmd, ChildCheck::SmbclientGets { n_files: self.files.len() }))
    }
}

/// How a side's run is checked to have read the whole set.
enum ChildCheck {
    /// frametest's `--json` figures: every file transferred, none failed, all the bytes.
    FrametestJson { json: PathBuf, n_files: u64, bytes: u64 },
    /// smbclient printed a `getting file` line for every file.
    SmbclientGets { n_files: usize },
}

impl ChildCheck {
    fn check(&self, cmd: &Command, stdout: &str, stderr: &str) -> Result<()> {
        match self {
            ChildCheck::FrametestJson { json, n_files, bytes } => {
                let text =
                    fs::read_to_string(json).with_context(|| format!("cannot read {}", json.display()))?;
                let figures: serde_json::Value =
                    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", json.display()))?;
                let number = |name: &str| figures.get(name).and_then(serde_json::Value::as_u64);
                let got = (number("frames_transferred"), number("frames_failed"), number("bytes"));
                if got != (Some(*n_files), Some(0), Some(*bytes)) {
                    bail!(
                        "`{}` transferred {:?} files ({:?} failed) and {:?} bytes; the set is {n_files} files of \
                         {bytes} bytes",
                        process::display(cmd),
                        got.0,
                        got.1,
                        got.2
                    );
                }
            }
            ChildCheck::SmbclientGets { n_files } => {
                let got = count_gets(stdout) + count_gets(stderr);
                if got != *n_files {
                    bail!("`{}` got {got} files of {n_files}:\n{stdout}{stderr}", process::display(cmd));
                }
            }
        }
        Ok(())
    }
}

/// smbclient's `getting file \seq\frame.0000000.dpx of size N as /dev/null` lines.
fn count_gets(text: &str) -> usize {
    text.lines().filter(|line| line.trim_start().starts_with("getting file ")).count()
}

/// One run of either side: its cost measured from outside, and what the machine and smbd spent.
#[derive(Clone, Debug)]
struct ReadRun {
    bytes: u64,
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    /// System-wide busy (not idle, not iowait) time over the run, summed over CPUs.
    busy_s: f64,
    /// smbd's CPU over the run: its parent's own and that of the children it reaped.
    server_cpu_s: f64,
    /// The client's minor page faults.
    minor_faults: u64,
}

impl ReadRun {
    fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.wall_s
    }

    fn per_gb(&self, seconds: f64) -> f64 {
        seconds / (self.bytes as f64 / 1e9)
    }

    fn cpu_s_per_gb(&self) -> f64 {
        self.per_gb(self.user_s + self.sys_s)
    }

    fn print(&self, side: &str) {
        println!(
            "  {side}: {:.0} MB/s, {:.3} CPU s/GB (user {:.3}), {:.0} faults/GB, smbd {:.3} s/GB, machine busy \
             {:.2} CPUs",
            self.mb_per_s(),
            self.cpu_s_per_gb(),
            self.per_gb(self.user_s),
            self.per_gb(self.minor_faults as f64),
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
    server_cpu_s_per_gb: f64,
    busy_cpus: f64,
    faults_per_gb: f64,
}

impl ReadFigures {
    fn median(runs: &[ReadRun]) -> ReadFigures {
        let of = |figure: fn(&ReadRun) -> f64| median(runs.iter().map(figure).collect());
        ReadFigures {
            mb_per_s: of(ReadRun::mb_per_s),
            cpu_s_per_gb: of(ReadRun::cpu_s_per_gb),
            user_s_per_gb: of(|run| run.per_gb(run.user_s)),
            server_cpu_s_per_gb: of(|run| run.per_gb(run.server_cpu_s)),
            busy_cpus: of(|run| run.busy_s / run.wall_s),
            faults_per_gb: of(|run| run.per_gb(run.minor_faults as f64)),
        }
    }
}

/// Runs one side measured from outside, with the machine's and smbd's CPU read around it, and
/// checks that it read the whole set.
fn measure(
    server_pid: u32,
    bytes: u64,
    side: impl FnOnce() -> Result<(Command, ChildCheck)>,
) -> Result<ReadRun> {
    let (mut cmd, check) = side()?;
    let busy_before = busy_s()?;
    let server_before = smbd_cpu_s(server_pid)?;
    let (output, cost) = process::run_measured(&mut cmd)?;
    let busy_s = busy_s()? - busy_before;
    // smbd's parent reaps the connection's child when the client leaves; give it the moment.
    std::thread::sleep(Duration::from_millis(200));
    let server_cpu_s = smbd_cpu_s(server_pid)? - server_before;
    check.check(&cmd, &String::from_utf8_lossy(&output.stdout), &String::from_utf8_lossy(&output.stderr))?;
    Ok(ReadRun {
        bytes,
        wall_s: cost.wall_s,
        user_s: cost.user_s,
        sys_s: cost.sys_s,
        busy_s,
        server_cpu_s,
        minor_faults: cost.minor_faults,
    })
}

/// The files of `dir` in name order, with their sizes.
fn sorted_files(dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let meta = fs::metadata(&path).with_context(|| format!("cannot stat {}", path.display()))?;
        if meta.is_file() {
            files.push((path, meta.len()));
        }
    }
    files.sort();
    Ok(files)
}

/// Busy (not idle, not iowait) CPU seconds of the whole machine so far, from `/proc/stat`.
fn busy_s() -> Result<f64> {
    let text = fs::read_to_string("/proc/stat").context("cannot read /proc/stat")?;
    parse_busy_s(&text).context("cannot parse the cpu line of /proc/stat")
}

fn parse_busy_s(text: &str) -> Option<f64> {
    let line = text.lines().find_map(|line| line.strip_prefix("cpu "))?;
    let ticks: Vec<u64> = line.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user and nice]
    let busy: u64 = (0..8).filter(|&i| i != 3 && i != 4).map(|i| ticks.get(i).copied().unwrap_or(0)).sum();
    Some(busy as f64 / process::USER_HZ)
}

/// smbd's CPU so far: the parent's user + system time and its reaped children's (fields 14-17 of
/// `/proc/<pid>/stat`).
fn smbd_cpu_s(pid: u32) -> Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let text = fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse_smbd_cpu_s(&text).with_context(|| format!("cannot parse {path}"))
}

fn parse_smbd_cpu_s(text: &str) -> Option<f64> {
    let (user, sys) = process::proc_stat_cpu_pair_s(text, 14)?;
    let (child_user, child_sys) = process::proc_stat_cpu_pair_s(text, 16)?;
    Some(user + sys + child_user + child_sys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_smbclients_gets() {
        let out = "getting file \\seq\\frame.0000000.dpx of size 35417088 as /dev/null (812.3 MegaBytes/sec)\n\
                   getting file \\seq\\frame.0000001.dpx of size 35417088 as /dev/null (800.0 MegaBytes/sec)\n\
                   NT_STATUS_OBJECT_NAME_NOT_FOUND opening remote file \\seq\\x\n";
        assert_eq!(count_gets(out), 2);
    }

    #[test]
    fn parses_proc_stat() {
        assert_eq!(parse_busy_s("cpu  100 5 50 1000 20 1 30 2 0 0\n"), Some(1.88));
        let stat = "1234 (smbd[127.0.0.1]) S 1 1234 1234 0 -1 4194560 1 0 0 0 250 150 30 20 20 0";
        assert_eq!(parse_smbd_cpu_s(stat), Some(4.5));
        assert_eq!(parse_smbd_cpu_s("1234 (smbd) S"), None);
    }

    #[test]
    fn medians_of_runs() {
        let run = |mb: f64| ReadRun {
            bytes: 1_000_000_000,
            wall_s: 1000.0 / mb,
            user_s: 0.1,
            sys_s: 0.2,
            busy_s: 1.0,
            server_cpu_s: 0.5,
            minor_faults: 1000,
        };
        let figures = ReadFigures::median(&[run(900.0), run(1000.0), run(1100.0)]);
        assert!((figures.mb_per_s - 1000.0).abs() < 1e-9);
        assert!((figures.cpu_s_per_gb - 0.3).abs() < 1e-9);
        assert!((figures.faults_per_gb - 1000.0).abs() < 1e-9);
    }
}
