//! Probes of the machine, of CPU time and of memory: the environment for the report,
//! process and thread CPU clocks, system-wide CPU time from `/proc/stat`, and the
//! process's resident memory from `/proc/self/status`.
//!
//! Linux reports CPU time in `/proc` in clock ticks of `USER_HZ`, which the
//! kernel fixes at 100 a second on every architecture playsim runs on (it is
//! what `sysconf(_SC_CLK_TCK)` returns), so tick counts are read as 10 ms each.

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use playsim_report::{Environment, SystemCpu};
use rustix::time::{clock_gettime, ClockId};

/// Clock ticks a second in `/proc` (`USER_HZ`).
pub const USER_HZ: u64 = 100;

/// The machine: host name, kernel, CPUs this process may use. Libraries are
/// left for the caller to fill in.
pub fn environment() -> Environment {
    let uts = rustix::system::uname();
    let hostname = uts.nodename().to_string_lossy().into_owned();
    let kernel = format!("{} {}", uts.sysname().to_string_lossy(), uts.release().to_string_lossy());
    // available_parallelism honours CPU affinity and cgroup quotas, which is
    // what bounds the decode pool.
    let cpus = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
    Environment { hostname, kernel, cpus, libraries: BTreeMap::new() }
}

/// The CPU time the whole process (every thread) has used since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessCpu {
    /// User mode.
    pub user: Duration,
    /// Kernel mode.
    pub sys: Duration,
}

impl ProcessCpu {
    /// The process's CPU time now.
    ///
    /// Read from `/proc/self/stat`, whose utime and stime are the figures
    /// `getrusage(RUSAGE_SELF)` gives (rustix 0.38 has no `getrusage`), in
    /// 10 ms ticks. If `/proc` cannot be read, the process CPU clock is
    /// returned as user time, so that totals still add up.
    pub fn now() -> ProcessCpu {
        ProcessCpu::read().unwrap_or_else(|_| ProcessCpu {
            user: duration(clock_gettime(ClockId::ProcessCPUTime)),
            sys: Duration::ZERO,
        })
    }

    /// The process's CPU time now, from `/proc/self/stat`.
    pub fn read() -> io::Result<ProcessCpu> {
        let text = std::fs::read_to_string("/proc/self/stat")?;
        ProcessCpu::parse_stat(&text).ok_or_else(|| malformed("/proc/self/stat", &text))
    }

    /// Parses the utime and stime fields (14 and 15) of a `/proc/<pid>/stat` line.
    pub fn parse_stat(text: &str) -> Option<ProcessCpu> {
        // The command name (field 2) is in parentheses and may itself hold
        // spaces and parentheses, so count fields from the last ')'.
        let after_comm = &text[text.rfind(')')? + 1..];
        let mut fields = after_comm.split_ascii_whitespace().skip(11);
        let user = fields.next()?.parse().ok()?;
        let sys = fields.next()?.parse().ok()?;
        Some(ProcessCpu { user: ticks(user), sys: ticks(sys) })
    }

    /// User plus kernel time.
    pub fn total(&self) -> Duration {
        self.user + self.sys
    }

    /// The CPU time used between `earlier` and `self`.
    pub fn since(&self, earlier: &ProcessCpu) -> ProcessCpu {
        ProcessCpu { user: self.user.saturating_sub(earlier.user), sys: self.sys.saturating_sub(earlier.sys) }
    }
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), to
/// the nanosecond.
pub fn thread_cpu_now() -> Duration {
    duration(clock_gettime(ClockId::ThreadCPUTime))
}

/// The process's resident memory, from `/proc/self/status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// The most physical memory the process has held at once since it started (`VmHWM`),
    /// in bytes.
    pub peak_rss_bytes: u64,
    /// The physical memory it holds now (`VmRSS`), in bytes.
    pub rss_bytes: u64,
}

impl ProcessMemory {
    /// The process's resident memory now.
    pub fn read() -> io::Result<ProcessMemory> {
        let text = std::fs::read_to_string("/proc/self/status")?;
        ProcessMemory::parse_status(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "malformed /proc/self/status: no VmHWM and VmRSS lines",
            )
        })
    }

    /// Parses the `VmHWM` and `VmRSS` lines of a `/proc/<pid>/status` text. The kernel
    /// writes them in "kB", which are KiB (1024 bytes).
    pub fn parse_status(text: &str) -> Option<ProcessMemory> {
        let kib = |key: &str| -> Option<u64> {
            let value = text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
            let number = value.trim().strip_suffix("kB")?.trim_end();
            number.parse::<u64>().ok()?.checked_mul(1024)
        };
        Some(ProcessMemory { peak_rss_bytes: kib("VmHWM")?, rss_bytes: kib("VmRSS")? })
    }
}

/// The name of threads that work for the decode stage but are not the engine's: a codec
/// library's own threads (FFmpeg's frame and slice threads, named so by playsim-ffmpeg when a
/// decoder opens them). Their CPU is the decode stage's ([`CodecThreadsCpu`]).
pub const CODEC_THREAD_NAME: &str = "playsim-codec";

/// The CPU time of each thread named [`CODEC_THREAD_NAME`] at one moment, by thread id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodecThreadsCpu(BTreeMap<u64, Duration>);

impl CodecThreadsCpu {
    /// The codec threads' CPU now, from /proc/self/task/TID/{comm,stat} (clock-tick
    /// resolution); empty where /proc cannot be read.
    pub fn now() -> CodecThreadsCpu {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return CodecThreadsCpu::default() };
        let mut threads = BTreeMap::new();
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u64>().ok()) else { continue };
            let dir = task.path();
            let named =
                std::fs::read_to_string(dir.join("comm")).is_ok_and(|c| c.trim_end() == CODEC_THREAD_NAME);
            let cpu = named.then(|| std::fs::read_to_string(dir.join("stat")).ok()).flatten();
            if let Some(cpu) = cpu.as_deref().and_then(ProcessCpu::parse_stat) {
                threads.insert(tid, cpu.total());
            }
        }
        CodecThreadsCpu(threads)
    }

    /// The CPU the codec threads used since `earlier`: all of a thread's that was not there
    /// then. (A thread that ended meanwhile is missed: decoders live as long as their source.)
    pub fn since(&self, earlier: &CodecThreadsCpu) -> Duration {
        self.0
            .iter()
            .map(|(tid, cpu)| cpu.saturating_sub(earlier.0.get(tid).copied().unwrap_or_default()))
            .sum()
    }
}

/// One line of /proc/meminfo in bytes (`MemTotal`, `MemAvailable`, ...), or `None` when the
/// file or the line cannot be read.
pub fn meminfo_bytes(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, key)
}

/// The `key` line of a /proc/meminfo text in bytes (the kernel writes "kB", which are KiB).
fn parse_meminfo(text: &str, key: &str) -> Option<u64> {
    let value = text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    value.trim().strip_suffix("kB")?.trim_end().parse::<u64>().ok()?.checked_mul(1024)
}

/// System-wide CPU time by kind, in ticks summed over all CPUs: the first
/// (`cpu `) line of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemCpuSnapshot {
    /// User mode (guest time included, as the kernel counts it).
    pub user: u64,
    /// User mode at low priority.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

impl SystemCpuSnapshot {
    /// Reads `/proc/stat` now.
    pub fn read() -> io::Result<SystemCpuSnapshot> {
        let text = std::fs::read_to_string("/proc/stat")?;
        SystemCpuSnapshot::parse(&text).ok_or_else(|| malformed("/proc/stat", &text))
    }

    /// Parses the text of `/proc/stat`. Columns a kernel does not have
    /// (older kernels stop before steal) read as 0; at least four are needed.
    pub fn parse(text: &str) -> Option<SystemCpuSnapshot> {
        let line = text.lines().find_map(|l| l.strip_prefix("cpu "))?;
        let values: Vec<u64> =
            line.split_ascii_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
        if values.len() < 4 {
            return None;
        }
        let at = |i: usize| values.get(i).copied().unwrap_or(0);
        Some(SystemCpuSnapshot {
            user: at(0),
            nice: at(1),
            system: at(2),
            idle: at(3),
            iowait: at(4),
            irq: at(5),
            softirq: at(6),
            steal: at(7),
        })
    }

    /// The CPU seconds of each kind spent between `self` and `later`.
    ///
    /// A counter that went backwards (iowait can, on some kernels) counts as 0.
    pub fn delta(&self, later: &SystemCpuSnapshot) -> SystemCpu {
        let secs = |a: u64, b: u64| b.saturating_sub(a) as f64 / USER_HZ as f64;
        SystemCpu {
            user_s: secs(self.user, later.user),
            nice_s: secs(self.nice, later.nice),
            system_s: secs(self.system, later.system),
            idle_s: secs(self.idle, later.idle),
            iowait_s: secs(self.iowait, later.iowait),
            irq_s: secs(self.irq, later.irq),
            softirq_s: secs(self.softirq, later.softirq),
            steal_s: secs(self.steal, later.steal),
        }
    }
}

fn ticks(n: u64) -> Duration {
    Duration::from_secs(n / USER_HZ) + Duration::from_nanos((n % USER_HZ) * (1_000_000_000 / USER_HZ))
}

fn duration(t: rustix::time::Timespec) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos)
}

fn malformed(path: &str, text: &str) -> io::Error {
    let first = text.lines().next().unwrap_or("");
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed {path}: cannot read CPU times from '{first}'"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Instant;

    use super::*;

    /// The head of a real /proc/stat (Linux 6.1, 2 CPUs).
    const PROC_STAT: &str = "\
cpu  4705 356 584 3699176 23060 0 277 12 0 0
cpu0 1393 280 283 1849590 11426 0 186 6 0 0
cpu1 3312 76 301 1849586 11634 0 91 6 0 0
intr 1012322 9 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0
ctxt 1994391
btime 1769000000
processes 8061
procs_running 1
procs_blocked 0
softirq 412633 0 71254 2 22117 21930 0 1 147268 0 150061
";

    #[test]
    fn codec_threads_count_what_they_used_since() {
        let earlier = CodecThreadsCpu(BTreeMap::from([(1, Duration::from_millis(10))]));
        let now =
            CodecThreadsCpu(BTreeMap::from([(1, Duration::from_millis(30)), (2, Duration::from_millis(5))]));
        assert_eq!(now.since(&earlier), Duration::from_millis(25));
        // This test's threads are not codec threads.
        assert_eq!(CodecThreadsCpu::now().since(&CodecThreadsCpu::default()), Duration::ZERO);
    }

    #[test]
    fn parses_meminfo_lines() {
        let text = "MemTotal:       24000000 kB\nMemFree:         5000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(parse_meminfo(text, "MemTotal"), Some(24_000_000 * 1024));
        assert_eq!(parse_meminfo(text, "MemAvailable"), Some(20_000_000 * 1024));
        assert_eq!(parse_meminfo(text, "SwapTotal"), None);
        assert!(meminfo_bytes("MemTotal").is_some_and(|b| b > 0));
    }

    #[test]
    fn parses_the_total_cpu_line() {
        let s = SystemCpuSnapshot::parse(PROC_STAT).unwrap();
        assert_eq!(
            s,
            SystemCpuSnapshot {
                user: 4705,
                nice: 356,
                system: 584,
                idle: 3_699_176,
                iowait: 23060,
                irq: 0,
                softirq: 277,
                steal: 12
            }
        );
    }

    #[test]
    fn short_and_malformed_lines() {
        let old = SystemCpuSnapshot::parse("cpu  10 20 30 40\n").unwrap();
        assert_eq!((old.idle, old.iowait, old.steal), (40, 0, 0));
        assert_eq!(SystemCpuSnapshot::parse("cpu  10 20 30\n"), None);
        assert_eq!(SystemCpuSnapshot::parse("cpu  10 x 30 40\n"), None);
        assert_eq!(SystemCpuSnapshot::parse("cpu0 10 20 30 40\n"), None);
        assert_eq!(SystemCpuSnapshot::parse(""), None);
    }

    #[test]
    fn delta_is_seconds_and_never_negative() {
        let a = SystemCpuSnapshot::parse(PROC_STAT).unwrap();
        let b = SystemCpuSnapshot {
            user: a.user + 250,
            system: a.system + 5,
            softirq: a.softirq + 1,
            iowait: a.iowait - 3,
            ..a
        };
        let d = a.delta(&b);
        assert_eq!(
            d,
            SystemCpu { user_s: 2.5, system_s: 0.05, softirq_s: 0.01, iowait_s: 0.0, ..SystemCpu::default() }
        );
    }

    #[test]
    fn parses_process_stat_with_an_awkward_name() {
        let line = "4242 (play sim) (x)) R 1 4242 4242 0 -1 4194560 2000 0 0 0 1234 56 0 0 20 0 9 0 100 \
                    123456789 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let cpu = ProcessCpu::parse_stat(line).unwrap();
        assert_eq!(cpu.user, Duration::from_millis(12_340));
        assert_eq!(cpu.sys, Duration::from_millis(560));
        assert_eq!(cpu.total(), Duration::from_millis(12_900));
        assert_eq!(ProcessCpu::parse_stat("4242 (x) R 1 2"), None);
        assert_eq!(ProcessCpu::parse_stat("no parenthesis"), None);
        let earlier = ProcessCpu { user: Duration::from_secs(1), sys: Duration::from_secs(1) };
        let since = cpu.since(&earlier);
        assert_eq!((since.user, since.sys), (Duration::from_millis(11_340), Duration::ZERO));
    }

    #[test]
    fn busy_loop_advances_process_and_thread_cpu() {
        let process_before = ProcessCpu::read().unwrap();
        let thread_before = thread_cpu_now();
        // Spin until this thread has used 60 ms of CPU (or 5 s have passed on
        // a machine too loaded to give it that).
        let start = Instant::now();
        let mut x = 1u64;
        while thread_cpu_now().saturating_sub(thread_before) < Duration::from_millis(60)
            && start.elapsed() < Duration::from_secs(5)
        {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let thread_used = thread_cpu_now().saturating_sub(thread_before);
        let process_used = ProcessCpu::now().since(&process_before);
        assert!(thread_used >= Duration::from_millis(60), "thread used {thread_used:?}");
        // The process clock ticks every 10 ms, so allow for one tick either side.
        assert!(process_used.total() + Duration::from_millis(20) >= thread_used, "{process_used:?}");
        assert!(process_used.user > Duration::ZERO, "{process_used:?}");
    }

    /// The memory lines of a real /proc/self/status (Linux 6.1), around others.
    const PROC_STATUS: &str = "\
Name:\tplaysim
Umask:\t0022
State:\tS (sleeping)
VmPeak:\t 1843372 kB
VmSize:\t 1712300 kB
VmLck:\t       0 kB
VmHWM:\t  803628 kB
VmRSS:\t  512044 kB
RssAnon:\t  498120 kB
Threads:\t9
";

    #[test]
    fn parses_peak_and_current_rss_in_kib() {
        let m = ProcessMemory::parse_status(PROC_STATUS).unwrap();
        assert_eq!(m, ProcessMemory { peak_rss_bytes: 803_628 * 1024, rss_bytes: 512_044 * 1024 });
        // VmHWMx is not VmHWM; a value without its unit or a missing line is refused.
        assert_eq!(ProcessMemory::parse_status("VmHWMx:\t1 kB\nVmRSS:\t1 kB\n"), None);
        assert_eq!(ProcessMemory::parse_status("VmHWM:\t12\nVmRSS:\t1 kB\n"), None);
        assert_eq!(ProcessMemory::parse_status("VmHWM:\t12 kB\n"), None);
        assert_eq!(ProcessMemory::parse_status("VmHWM:\t-1 kB\nVmRSS:\t1 kB\n"), None);
        assert_eq!(ProcessMemory::parse_status(""), None);
    }

    #[test]
    fn this_process_has_resident_memory() {
        let m = ProcessMemory::read().unwrap();
        assert!(m.rss_bytes > 0 && m.peak_rss_bytes >= m.rss_bytes, "{m:?}");
    }

    #[test]
    fn system_cpu_advances() {
        let a = SystemCpuSnapshot::read().unwrap();
        let b = SystemCpuSnapshot::read().unwrap();
        let d = a.delta(&b);
        assert!(d.user_s >= 0.0 && d.idle_s >= 0.0);
        assert!(a.user + a.system + a.idle > 0);
    }

    #[test]
    fn environment_names_the_machine() {
        let env = environment();
        assert!(!env.hostname.is_empty());
        assert!(env.kernel.starts_with("Linux "), "{}", env.kernel);
        assert!(env.cpus >= 1);
        assert!(env.libraries.is_empty());
    }
}
