//! `cargo xtask vm`: real NFS over RDMA and over TCP, with the Linux kernel's NFS server and
//! client and soft-RoCE, in a qemu guest.
//!
//! This host's kernel has neither nfsd nor RDMA; Debian's own kernel in a guest has both. The
//! guest image (debootstrap of bookworm with the NFS, RDMA and playsim runtime packages, as an
//! ext4 image made with `mkfs.ext4 -d`, no loop mount) is built once and cached outside the
//! repository, keyed on the kernel package's version and the package list. Each run boots it
//! (read-only, `snapshot=on`) with two 9p shares: `payload` (the host-built playsim, the guest
//! script `xtask/vm/guest.sh`, generated DPX and EXR sequences and their md5s) and `out` (where
//! the guest writes its reports). The guest decodes each sequence over four paths to the same
//! export, caches dropped before each run, and checks the decoded frames against the host's
//! md5s: a `proto=tcp` and a `proto=rdma` kernel mount, playsim's own NFS client over TCP
//! (`nfs://`) and over RDMA (`nfs+rdma://`, issue 18). It makes one paced run per path,
//! restarts nfsd in the middle of an `nfs+rdma://` run (which must count storage drops and a
//! reconnect, and finish its report), records a capture through both kernel mounts and
//! playsim's NFS client (a scenario of record runs, each byte-identical to the same recording
//! on the guest's tmpfs), and measures the bench rows ([`bench`]). While it then
//! waits, the host reads the same export with playsim's userspace NFS client through qemu's
//! hostfwd ports. Then the guest powers off and the host checks the reports ([`checks`]) and
//! prints the runs side by side.
//!
//! Also in the guest: netem on the guest's lo (20 ms ±5 ms, 1% loss; the host's kernel has no
//! netem) while the kernel client and playsim's play at 4 fps, each run completing with no decode
//! or unreadable drop (rows of the reliability report); and SMB: Samba's smbd shares the export
//! (the kernel's ksmbd oopses on Debian's 6.1 kernel), cifs mounts it plain, with `multichannel`
//! and with `seal`, and playsim plays from each and over its own `smb://`, signed and with
//! `?seal=on`, the host checking each report's label. SMB Direct cannot run: Debian's kernel builds
//! neither its client nor its server. It is an xtask step rather than a cargo test because what it
//! needs (apt, the release binary, an image cache outside the repository) is xtask's; it says RAN
//! or SKIPPED and why (`PLAYSIM_SKIP_VM=1`, not x86_64, no qemu, under 4 GB free).

mod bench;
mod checks;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::deps::{self, Package};
use crate::process;

/// Host packages the guest tier needs.
const VM_PACKAGES: &[Package] = &[
    Package { name: "qemu-system-x86", why: "boots the test guest with Linux's NFS server and soft-RoCE" },
    Package { name: "debootstrap", why: "builds the guest's Debian root filesystem" },
    Package { name: "e2fsprogs", why: "mkfs.ext4 -d makes the guest image without a loop mount" },
];

/// Guest packages besides the libraries the playsim binary links. playsim's RDMA transport
/// loads libibverbs and librdmacm with dlopen at run time (rdma-mummy-sys), so ldd does not
/// name them: they are listed here, with the tools the bench rows and checks run.
const GUEST_PACKAGES: &[&str] = &[
    "linux-image-amd64",
    "initramfs-tools",
    "kmod",
    "udev",
    "iproute2",
    "procps",
    "nfs-kernel-server",
    "nfs-common",
    "rpcbind",
    "rdma-core",
    "ibverbs-providers",
    "busybox",
    // Loaded by playsim's nfs+rdma:// transport at run time, not linked.
    "libibverbs1",
    "librdmacm1",
    // ibv_devices, rping and ib_write_bw (the verbs limit), fio (the kernel mount's row).
    "ibverbs-utils",
    "rdmacm-utils",
    "perftest",
    "fio",
    // The SMB server (Samba: the kernel's ksmbd oopses on this kernel) and the kernel client's
    // mount helper.
    "samba",
    "cifs-utils",
];

/// Frames per sequence: soft-RoCE under emulation moves 35-50 MB/s, so keep the media small.
const N_FRAMES: u32 = 12;
const PRESET: &str = "2k-dci";

/// Time limits of each step.
const DEBOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(20 * 60);
const MKFS_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const BOOT_TO_READY_TIMEOUT: Duration = Duration::from_secs(20 * 60);
const POWEROFF_TIMEOUT: Duration = Duration::from_secs(60);
const HOST_CHECK_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// `cargo xtask vm`.
#[derive(clap::Args, Default)]
pub struct VmArgs {
    /// Where the guest image is cached [default: $PLAYSIM_VM_CACHE, else ~/.cache/playsim/vm].
    #[arg(long)]
    cache_dir: Option<PathBuf>,
}

/// What a guest run produced.
struct Outcome {
    /// Where the reports are.
    out: PathBuf,
    /// The playsim that ran, whose `compare` prints them.
    playsim: PathBuf,
    /// Lines of the guest's results file, with the host's verdicts on the fault run and the
    /// bench rows appended.
    results: Vec<String>,
    /// Every check that failed; the tier fails when there is one, after printing the outcome.
    failures: Vec<String>,
    /// The bench rows' table.
    bench_table: String,
    elapsed: Duration,
}

/// Runs the whole tier and prints the side-by-side comparison.
pub fn run(args: &VmArgs) -> Result<()> {
    let outcome = run_tier(args)?;
    print_outcome(&outcome)?;
    verdict(&outcome)
}

/// The tier inside `cargo xtask test`: runs when this machine can boot the guest, and says
/// clearly that it ran, or why not.
pub fn test_tier() -> Result<()> {
    if let Some(why) = skip_reason()? {
        println!("vm tier: SKIPPED: {why}");
        return Ok(());
    }
    let outcome = run_tier(&VmArgs::default())?;
    print_outcome(&outcome)?;
    verdict(&outcome)?;
    println!(
        "vm tier: RAN in {:.0} s: kernel NFS and playsim's own client, each over TCP and over RDMA \
         (soft-RoCE), frames bit-exact",
        outcome.elapsed.as_secs_f64()
    );
    Ok(())
}

/// Fails when any check failed, listing them and the results file.
fn verdict(outcome: &Outcome) -> Result<()> {
    ensure!(
        outcome.failures.is_empty(),
        "the guest tier failed:\n  {}\n(results:\n  {})",
        outcome.failures.join("\n  "),
        outcome.results.join("\n  ")
    );
    Ok(())
}

/// Why this machine cannot run the tier, if it cannot.
fn skip_reason() -> Result<Option<String>> {
    if std::env::var_os("PLAYSIM_SKIP_VM").is_some_and(|v| v == "1") {
        return Ok(Some("PLAYSIM_SKIP_VM=1".into()));
    }
    if std::env::consts::ARCH != "x86_64" {
        return Ok(Some(format!("the guest is x86_64 and this machine is {}", std::env::consts::ARCH)));
    }
    if !process::on_path("apt-get") && !process::on_path("qemu-system-x86_64") {
        return Ok(Some("no qemu-system-x86_64 and no apt-get to install it".into()));
    }
    let cache = cache_root(&VmArgs::default())?;
    let free = free_bytes(cache.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/")))?;
    if free < 4 << 30 {
        return Ok(Some(format!("only {} MB free for the guest image cache", free >> 20)));
    }
    Ok(None)
}

fn run_tier(args: &VmArgs) -> Result<Outcome> {
    let start = Instant::now();
    deps::run()?;
    deps::ensure(VM_PACKAGES)?;
    let target = crate::target_dir()?;
    let playsim = build_playsim(&target)?;
    let image = ensure_image(args, &playsim)?;
    let work = target.join("vm");
    let payload = work.join("payload");
    let out = work.join("out");
    prepare_payload(&playsim, &payload)?;
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out)?;
    let (nfs_port, mount_port) = (free_port()?, free_port()?);
    boot_and_run(&image, &payload, &out, &playsim, nfs_port, mount_port)?;

    let mut results: Vec<String> = fs::read_to_string(out.join("results.txt"))
        .context("the guest wrote no results")?
        .lines()
        .map(str::to_owned)
        .collect();
    // The host's verdicts on the fault run and the bench rows join the results file.
    let bench = bench::evaluate(&out);
    let mut verdicts = vec![fault_line(&out)];
    verdicts.extend(checks::NETEM_PATHS.iter().map(|path| netem_line(&out, path)));
    verdicts.extend(checks::SMB_PATHS.iter().map(|path| {
        match load_report(&out.join(format!("smb-{path}.json"))) {
            Ok(report) => checks::smb_label_line(path, &report),
            Err(why) => format!("SMB-LABEL {path} FAILED ({why})"),
        }
    }));
    record_reliability_rows(&verdicts)?;
    verdicts.extend(bench.lines);
    let mut file = fs::OpenOptions::new().append(true).open(out.join("results.txt"))?;
    for line in &verdicts {
        writeln!(file, "{line}")?;
    }
    results.extend(verdicts);

    let mut failures: Vec<String> = results.iter().filter(|l| checks::is_failure(l)).cloned().collect();
    let mut expected: Vec<(String, String)> = Vec::new();
    for seq in ["dpx", "exr"] {
        for path in [
            "tcp",
            "rdma",
            "userspace-tcp",
            "userspace-tcp-guest",
            "userspace-rdma",
            "userspace-rdma-nconnect4",
        ] {
            expected.push((format!("MD5 {seq} {path} "), format!("MD5 {seq} {path} OK")));
        }
    }
    expected.push(("SCENARIO tcp-vs-rdma ".into(), "SCENARIO tcp-vs-rdma OK".into()));
    for path in checks::GUEST_PATHS {
        expected.push((format!("PACED {path} "), format!("PACED {path} OK")));
    }
    expected.push(("FAULT rdma ".into(), "FAULT rdma OK".into()));
    for path in checks::NETEM_PATHS {
        expected.push((format!("NETEM {path} "), format!("NETEM {path} OK")));
    }
    expected.push(("LISTING userspace-rdma ".into(), "LISTING userspace-rdma OK".into()));
    expected.push(("MATRIX userspace-rdma ".into(), "MATRIX userspace-rdma OK".into()));
    for path in checks::RECORD_PATHS {
        expected.push((format!("RECORD {path} "), format!("RECORD {path} OK")));
    }
    expected.push(("SMB setup ".into(), "SMB setup OK".into()));
    for path in checks::SMB_PATHS {
        expected.push((format!("SMB {path} "), format!("SMB {path} OK")));
    }
    for (prefix, line) in &expected {
        // A line that failed is already among the failures; a line missing altogether is one.
        if !results.iter().any(|l| l.starts_with(prefix.as_str())) {
            failures.push(format!("no `{line}` in the results"));
        }
    }

    // Each report names its transport; the paced runs are complete.
    for seq in ["dpx", "exr"] {
        for transport in ["tcp", "rdma", "userspace-tcp"] {
            let path = out.join(format!("{seq}-{transport}.json"));
            let checked = load_report(&path).and_then(|r| checks::check_label(transport, &r));
            if let Err(e) = checked {
                failures.push(format!("{seq} over {transport}: {e}"));
            }
        }
    }
    // The scenario's two runs: a kernel mount each, named in the report like `play`'s.
    for transport in ["tcp", "rdma"] {
        let path = out.join("scenario").join(format!("pair-{transport}-1.json"));
        let checked = load_report(&path).and_then(|r| checks::check_label(transport, &r));
        if let Err(e) = checked {
            failures.push(format!("scenario over {transport}: {e}"));
        }
    }
    // The record runs: every frame written, each through the storage its path names.
    for path in checks::RECORD_PATHS {
        let file = out.join("record").join(format!("rec-{path}-1.json"));
        if let Err(e) = load_report(&file).and_then(|figures| checks::check_record(path, &figures)) {
            failures.push(format!("record over {path}: {e}"));
        }
    }
    for path in checks::GUEST_PATHS {
        let file = out.join(format!("paced-{path}.json"));
        let checked = load_report(&file)
            .and_then(|r| checks::check_complete(&r).and_then(|()| checks::check_label(path, &r)));
        if let Err(e) = checked {
            failures.push(format!("paced run over {path}: {e}"));
        }
    }
    Ok(Outcome { out, playsim, results, failures, bench_table: bench.table, elapsed: start.elapsed() })
}

/// A report the guest or the host wrote, parsed.
fn load_report(path: &Path) -> std::result::Result<Value, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("no report {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))
}

/// The results line of the server fault in the middle of the nfs+rdma run, from what the guest
/// left in `out`: the exit status, the report, stderr and when nfsd stopped and came back.
fn fault_line(out: &Path) -> String {
    let read = |name: &str| fs::read_to_string(out.join(name)).unwrap_or_default();
    let exit = read("fault-rdma.exit").trim().parse().ok();
    let report = load_report(&out.join("fault-rdma.json")).ok();
    let stderr = read("fault-rdma.err");
    let timeline = read("fault-rdma.timeline");
    checks::fault_line(&checks::FaultRun {
        exit,
        report: report.as_ref(),
        stderr: &stderr,
        timeline: &timeline,
    })
}

/// The results line of the run over `path` behind netem's loss and delay.
fn netem_line(out: &Path, path: &str) -> String {
    let read = |name: &str| fs::read_to_string(out.join(name)).unwrap_or_default();
    let report = load_report(&out.join(format!("netem-{path}.json"))).ok();
    let (exit, stderr) = (read(&format!("netem-{path}.exit")), read(&format!("netem-{path}.err")));
    checks::netem_line(&checks::NetemRun { path, exit: &exit, report: report.as_ref(), stderr: &stderr }).0
}

/// The guest's faults as rows of `cargo xtask reliability`'s report (appended to
/// `target/reliability/rows/rows.jsonl`, as the integration tests do): the nfsd restart in the
/// nfs+rdma run and the runs behind netem, from their results lines.
fn record_reliability_rows(lines: &[String]) -> Result<()> {
    let dir = crate::reliability::report_dir()?.join("rows");
    fs::create_dir_all(&dir)?;
    let mut file = fs::OpenOptions::new().create(true).append(true).open(dir.join("rows.jsonl"))?;
    for line in lines {
        let (name, lost_key) = if line.starts_with("FAULT rdma ") {
            ("guest: knfsd stopped 3 s mid nfs+rdma run (soft-RoCE)".to_owned(), "drops=")
        } else if let Some(rest) = line.strip_prefix("NETEM ") {
            let path = rest.split_whitespace().next().unwrap_or_default();
            (format!("guest: netem 20 ms ±5 ms, 1% loss, {path} at 4 fps"), "storage=")
        } else {
            continue;
        };
        let frames_lost = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(lost_key))
            .and_then(|n| n.parse::<u64>().ok());
        let row = serde_json::json!({
            "table": "fault",
            "name": name,
            "survived": !checks::is_failure(line),
            "frames_lost": frames_lost,
            "bound": null,
            "recover_s": null,
            "outcome": line,
        });
        writeln!(file, "{row}")?;
    }
    Ok(())
}

/// The release playsim, with the `rdma` feature when the workspace has one, so that the guest
/// can read `nfs+rdma://` whether or not the feature is on by default; never with `mpi` (the
/// guest has no MPI library).
fn build_playsim(target: &Path) -> Result<PathBuf> {
    let metadata = process::read(process::cargo().args(["metadata", "--format-version", "1", "--no-deps"]))?;
    let metadata: Value = serde_json::from_str(&metadata).context("cannot parse cargo metadata")?;
    let has_rdma = metadata["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|p| p["name"] == "playsim"))
        .is_some_and(|playsim| playsim["features"].get("rdma").is_some());
    if !has_rdma {
        println!("vm: playsim has no `rdma` feature yet: its nfs+rdma:// lines will fail");
        process::run(process::cargo().args(["build", "--release", "--bin", "playsim"]))?;
        return Ok(target.join("release").join(format!("playsim{}", std::env::consts::EXE_SUFFIX)));
    }
    process::run(process::cargo().args(["build", "--release", "--bin", "playsim", "--features", "rdma"]))?;
    Ok(target.join("release").join(format!("playsim{}", std::env::consts::EXE_SUFFIX)))
}

/// The cache directory for images.
fn cache_root(args: &VmArgs) -> Result<PathBuf> {
    if let Some(dir) = &args.cache_dir {
        return Ok(dir.clone());
    }
    if let Some(dir) = std::env::var_os("PLAYSIM_VM_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("no $HOME for the image cache; give --cache-dir")?;
    Ok(PathBuf::from(home).join(".cache/playsim/vm"))
}

/// A built guest image.
struct Image {
    dir: PathBuf,
}

impl Image {
    fn kernel(&self) -> PathBuf {
        self.dir.join("vmlinuz")
    }
    fn initrd(&self) -> PathBuf {
        self.dir.join("initrd.img")
    }
    fn rootfs(&self) -> PathBuf {
        self.dir.join("rootfs.img")
    }
}

/// The cached image for this kernel version and package list, built when missing.
fn ensure_image(args: &VmArgs, playsim: &Path) -> Result<Image> {
    let kernel_version = process::read(Command::new("apt-cache").args(["policy", "linux-image-amd64"]))?
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:").map(|v| v.trim().to_owned()))
        .filter(|v| v != "(none)")
        .context("apt-cache knows no linux-image-amd64 (is this Debian with bookworm's lists?)")?;
    let mut packages: Vec<String> = GUEST_PACKAGES.iter().map(|p| (*p).to_owned()).collect();
    packages.extend(runtime_packages(playsim)?);
    packages.sort();
    packages.dedup();
    let key = format!("bookworm-{kernel_version}-{:016x}", fnv1a(packages.join(",").as_bytes()));
    let image = Image { dir: cache_root(args)?.join(key) };
    if image.rootfs().exists() && image.kernel().exists() && image.initrd().exists() {
        println!("vm: guest image cached in {}", image.dir.display());
        return Ok(image);
    }
    println!("vm: building the guest image in {} (debootstrap, about 2-3 min)", image.dir.display());
    let building = image.dir.with_extension("building");
    let _ = fs::remove_dir_all(&building);
    fs::create_dir_all(&building)?;
    let rootfs = building.join("rootfs");
    let started = Instant::now();
    run_with_timeout(
        Command::new("debootstrap")
            .args(["--variant=minbase", &format!("--include={}", packages.join(",")), "bookworm"])
            .arg(&rootfs),
        DEBOOTSTRAP_TIMEOUT,
        "debootstrap",
    )?;
    println!("vm: debootstrap took {:.0} s", started.elapsed().as_secs_f64());
    for dir in
        ["var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"]
    {
        let _ = fs::remove_dir_all(rootfs.join(dir));
    }
    fs::write(rootfs.join("etc/hostname"), "playsim-guest\n")?;
    fs::write(rootfs.join("etc/hosts"), "127.0.0.1 localhost playsim-guest\n")?;
    let init = rootfs.join("init.sh");
    fs::write(&init, include_str!("../vm/init.sh"))?;
    set_executable(&init)?;
    copy_boot_file(&rootfs, "vmlinuz-", &building.join("vmlinuz"))?;
    copy_boot_file(&rootfs, "initrd.img-", &building.join("initrd.img"))?;
    let image_file = building.join("rootfs.img");
    fs::File::create(&image_file)?.set_len(2 << 30)?;
    run_with_timeout(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-L", "playsim-guest", "-d"])
            .arg(&rootfs)
            .arg(&image_file),
        MKFS_TIMEOUT,
        "mkfs.ext4",
    )?;
    fs::remove_dir_all(&rootfs)?;
    let _ = fs::remove_dir_all(&image.dir);
    fs::rename(&building, &image.dir)?;
    println!("vm: image built in {:.0} s", started.elapsed().as_secs_f64());
    Ok(image)
}

/// The Debian packages that hold the libraries `binary` links directly.
fn runtime_packages(binary: &Path) -> Result<Vec<String>> {
    let ldd = process::read(Command::new("ldd").arg(binary))?;
    let mut packages = Vec::new();
    for line in ldd.lines() {
        let Some(path) = line.split("=>").nth(1).and_then(|rest| rest.split_whitespace().next()) else {
            continue;
        };
        if !path.starts_with('/') {
            continue;
        }
        // Debian's merged /usr: dpkg knows the /usr/lib path.
        let candidates = [path.to_owned(), format!("/usr{path}")];
        for candidate in candidates {
            let Ok(output) = Command::new("dpkg").args(["-S", &candidate]).output() else { continue };
            if output.status.success() {
                let text = String::from_utf8_lossy(&output.stdout);
                if let Some(package) = text.split(':').next() {
                    packages.push(package.trim().to_owned());
                }
                break;
            }
        }
    }
    packages.sort();
    packages.dedup();
    Ok(packages)
}

/// The payload: playsim, the guest script, the media and their md5s.
fn prepare_payload(playsim: &Path, payload: &Path) -> Result<()> {
    fs::create_dir_all(payload.join("expected"))?;
    fs::copy(playsim, payload.join("playsim")).context("copying playsim into the payload")?;
    let guest = payload.join("guest.sh");
    fs::write(&guest, include_str!("../vm/guest.sh"))?;
    set_executable(&guest)?;
    for (name, extra) in [("dpx", &[][..]), ("exr", &["--format", "exr", "--compression", "piz"][..])] {
        let dir = payload.join("media").join(name);
        if count_files(&dir) != N_FRAMES as usize {
            let _ = fs::remove_dir_all(&dir);
            process::run(
                Command::new(playsim)
                    .args(["generate", "--preset", PRESET, "--frames", &N_FRAMES.to_string()])
                    .args(extra)
                    .arg(&dir),
            )?;
        }
        let md5 = process::read(Command::new(playsim).args(["decode", "--md5"]).arg(&dir))?;
        // One line per frame, each ending in a newline, as the guest's output has.
        fs::write(payload.join("expected").join(format!("{name}.md5")), format!("{}\n", md5.trim_end()))?;
    }
    Ok(())
}

/// What the console reader saw.
enum Console {
    Line(String),
    Closed,
}

/// Boots the guest, runs the host's userspace-NFS checks when the guest is ready, and waits
/// for it to power off. On any failure the console's tail is in the error.
fn boot_and_run(
    image: &Image,
    payload: &Path,
    out: &Path,
    playsim: &Path,
    nfs_port: u16,
    mount_port: u16,
) -> Result<()> {
    let accel = if kvm_usable() {
        vec!["-enable-kvm", "-cpu", "host"]
    } else {
        vec!["-accel", "tcg,thread=multi", "-cpu", "max"]
    };
    println!(
        "vm: booting the guest ({})",
        if accel[0] == "-enable-kvm" { "kvm" } else { "tcg: no usable kvm" }
    );
    let mut qemu = Command::new("qemu-system-x86_64");
    qemu.args(&accel)
        .args(["-m", "3G", "-smp", "2", "-nographic", "-no-reboot", "-monitor", "none", "-serial", "stdio"])
        .arg("-kernel")
        .arg(image.kernel())
        .arg("-initrd")
        .arg(image.initrd())
        .args(["-append", "console=ttyS0 root=/dev/vda rootfstype=ext4 rw init=/init.sh quiet panic=-1"])
        .arg("-drive")
        .arg(format!("file={},if=virtio,format=raw,snapshot=on", image.rootfs().display()))
        .args([
            "-netdev",
            &format!(
                "user,id=n0,hostfwd=tcp:127.0.0.1:{nfs_port}-:2049,hostfwd=tcp:127.0.0.1:{mount_port}-:20048"
            ),
        ])
        .args(["-device", "virtio-net-pci,netdev=n0"])
        .arg("-virtfs")
        .arg(format!("local,path={},mount_tag=payload,security_model=none,readonly=on", payload.display()))
        .arg("-virtfs")
        .arg(format!("local,path={},mount_tag=out,security_model=none", out.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = qemu.spawn().context("cannot start qemu-system-x86_64")?;
    let stdout = child.stdout.take().context("no qemu stdout")?;
    let stderr = child.stderr.take().context("no qemu stderr")?;
    let (tx, rx) = mpsc::channel();
    let console_log = out.join("console.log");
    let mut log = fs::File::create(&console_log)?;
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(Console::Line(line));
            }
            let _ = tx.send(Console::Closed);
        });
    }
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(Console::Line(format!("qemu: {line}")));
        }
    });
    let mut tail: Vec<String> = Vec::new();
    let fail = |why: String, tail: &[String]| -> anyhow::Error {
        anyhow::anyhow!(
            "{why}\n--- guest console (last lines; all of it in {}):\n{}",
            console_log.display(),
            tail.join("\n")
        )
    };
    let started = Instant::now();
    let mut deadline = started + BOOT_TO_READY_TIMEOUT;
    let mut host_checked = false;
    let result = loop {
        let now = Instant::now();
        if now >= deadline {
            break Err(fail(format!("the guest did not finish within {:?}", deadline - started), &tail));
        }
        match rx.recv_timeout(deadline - now) {
            Ok(Console::Line(line)) => {
                writeln!(log, "[{:7.2}] {line}", started.elapsed().as_secs_f64())?;
                if line.starts_with("PLAYSIM-GUEST") {
                    println!("vm: [{:5.1} s] {line}", started.elapsed().as_secs_f64());
                }
                tail.push(line.clone());
                if tail.len() > 40 {
                    tail.remove(0);
                }
                if line.contains("PLAYSIM-GUEST-FAIL") {
                    break Err(fail(format!("the guest failed: {line}"), &tail));
                }
                if line.contains("PLAYSIM-GUEST-READY-FOR-HOST") && !host_checked {
                    host_checked = true;
                    let checked = host_checks(playsim, payload, out, nfs_port, mount_port);
                    fs::write(out.join("poweroff"), "host checks done\n")?;
                    if let Err(e) = checked {
                        break Err(fail(
                            format!("the host's checks of the guest's NFS server failed: {e:#}"),
                            &tail,
                        ));
                    }
                    deadline = Instant::now() + POWEROFF_TIMEOUT;
                }
                if line.contains("PLAYSIM-GUEST-DONE") {
                    deadline = deadline.min(Instant::now() + POWEROFF_TIMEOUT);
                }
            }
            Ok(Console::Closed) => {
                break if host_checked {
                    Ok(())
                } else {
                    Err(fail("the guest stopped before it was ready".into(), &tail))
                };
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(fail("lost the guest's console".into(), &tail))
            }
        }
    };
    // The guest powers itself off; make sure qemu is gone either way.
    let waited = Instant::now();
    while child.try_wait()?.is_none() && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if child.try_wait()?.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    println!("vm: guest ran for {:.0} s", started.elapsed().as_secs_f64());
    result
}

/// From the host, playsim's own NFS client reads the guest's kernel NFS server over TCP
/// (qemu's hostfwd): the same md5s, and a report per sequence.
fn host_checks(playsim: &Path, payload: &Path, out: &Path, nfs_port: u16, mount_port: u16) -> Result<()> {
    let mut results = fs::OpenOptions::new().append(true).open(out.join("results.txt"))?;
    for seq in ["dpx", "exr"] {
        let url = format!("nfs://127.0.0.1/export/{seq}/?nfsport={nfs_port}&mountport={mount_port}");
        let md5 =
            read_with_timeout(Command::new(playsim).args(["decode", "--md5", &url]), HOST_CHECK_TIMEOUT)?;
        let expected = fs::read_to_string(payload.join("expected").join(format!("{seq}.md5")))?;
        let verdict = if md5.trim_end() == expected.trim_end() { "OK" } else { "MISMATCH" };
        writeln!(results, "MD5 {seq} userspace-tcp {verdict} {} frames", md5.lines().count())?;
        let json = out.join(format!("{seq}-userspace-tcp.json"));
        run_with_timeout(
            Command::new(playsim).args(["play", &url, "--fps", "max", "--quiet", "--json"]).arg(&json),
            HOST_CHECK_TIMEOUT,
            "playsim play over nfs://",
        )?;
        println!("vm: host read {seq} from the guest's knfsd over nfs://: md5 {verdict}");
    }
    Ok(())
}

/// Prints each sequence's runs side by side with `playsim compare`: kernel NFS over TCP (the
/// baseline), over RDMA, and playsim's userspace client over TCP from the host; then the
/// scenario's table, the paced run of each of the guest's four paths, and the bench rows.
fn print_outcome(outcome: &Outcome) -> Result<()> {
    println!("\nvm results:\n  {}", outcome.results.join("\n  "));
    for seq in ["dpx", "exr"] {
        let reports: Vec<PathBuf> = ["tcp", "rdma", "userspace-tcp"]
            .iter()
            .map(|t| outcome.out.join(format!("{seq}-{t}.json")))
            .collect();
        println!("\n{seq}: {PRESET}, {N_FRAMES} frames, --fps max, cold");
        // Not `process::read`, which trims: the table's first line starts with spaces.
        let table = Command::new(&outcome.playsim).arg("compare").args(&reports).output()?;
        ensure!(table.status.success(), "playsim compare failed: {}", String::from_utf8_lossy(&table.stderr));
        print!("{}", String::from_utf8_lossy(&table.stdout));
    }
    // `playsim run`'s own table and tally for the scenario of the pair.
    let scenario = fs::read_to_string(outcome.out.join("scenario.txt")).unwrap_or_default();
    if let Some(at) = scenario.find("== pair: every repetition") {
        println!(
            "\nscenario (examples/tcp-vs-rdma.toml's shape): {PRESET} DPX, {N_FRAMES} frames at 24 fps, cold\n{}",
            &scenario[at..]
        );
    }
    // The paced run of each path, the kernel's TCP mount first as the baseline.
    let paced: Vec<PathBuf> = checks::GUEST_PATHS
        .iter()
        .map(|path| outcome.out.join(format!("paced-{path}.json")))
        .filter(|report| report.exists())
        .collect();
    println!("\npaced: {PRESET} DPX, --fps 24 --frames 48 --loop, one run per path (kernel mounts cold)");
    if paced.is_empty() {
        println!("  no paced report was written");
    } else {
        let table = Command::new(&outcome.playsim).arg("compare").args(&paced).output()?;
        ensure!(table.status.success(), "playsim compare failed: {}", String::from_utf8_lossy(&table.stderr));
        print!("{}", String::from_utf8_lossy(&table.stdout));
    }
    println!("\n{}", outcome.bench_table);
    println!(
        "soft-RoCE is RDMA done in software by the guest's emulated CPU: these figures show that the\n\
         path works and is labelled, not that RDMA is faster (see README, \"RDMA on real hardware\")."
    );
    println!("vm: the tier took {:.0} s", outcome.elapsed.as_secs_f64());
    Ok(())
}

/// True when /dev/kvm can boot a stock kernel: real hardware virtualisation, not kvm_pvm
/// (software nested virtualisation, which cannot).
fn kvm_usable() -> bool {
    let writable = fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_ok();
    let pvm = Path::new("/sys/module/kvm_pvm").exists();
    let cpu_flags = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let hardware = cpu_flags.split_whitespace().any(|f| f == "vmx" || f == "svm");
    writable && !pvm && hardware
}

fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |entries| entries.filter_map(|e| e.ok()).count())
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn free_bytes(path: &Path) -> Result<u64> {
    let df = process::read(Command::new("df").args(["--output=avail", "-B1"]).arg(path))?;
    df.lines().nth(1).and_then(|l| l.trim().parse().ok()).context("cannot read df's output")
}

fn copy_boot_file(rootfs: &Path, prefix: &str, to: &Path) -> Result<()> {
    let boot = rootfs.join("boot");
    let found = fs::read_dir(&boot)?
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .with_context(|| format!("no {prefix}* in {}", boot.display()))?;
    fs::copy(found.path(), to)?;
    Ok(())
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Runs `cmd` to the end, killing it after `limit`.
fn run_with_timeout(cmd: &mut Command, limit: Duration, what: &str) -> Result<()> {
    let output = output_with_timeout(cmd, limit, what)?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect();
        bail!("{what} failed ({}):\n{}", output.status, tail.join("\n"));
    }
    Ok(())
}

fn read_with_timeout(cmd: &mut Command, limit: Duration) -> Result<String> {
    let output = output_with_timeout(cmd, limit, "playsim")?;
    ensure!(
        output.status.success(),
        "{} failed: {}",
        process::display(cmd),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn output_with_timeout(cmd: &mut Command, limit: Duration, what: &str) -> Result<std::process::Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut err = Vec::new();
        if let Some(mut s) = stdout {
            let _ = std::io::Read::read_to_end(&mut s, &mut out);
        }
        if let Some(mut s) = stderr {
            let _ = std::io::Read::read_to_end(&mut s, &mut err);
        }
        let _ = tx.send((out, err));
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = rx.recv().unwrap_or_default();
    let _ = reader.join();
    Ok(std::process::Output { status, stdout, stderr })
}

/// 64-bit FNV-1a, for the image cache key (stable across Rust versions, unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_hash_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
