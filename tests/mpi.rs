//! Several clients in one run: `mpirun --oversubscribe -np 3 playsim play ...` on this machine,
//! with OpenMPI's own launcher, against `sim://` links and NFS-Ganesha on loopback.
//!
//! mpirun's MPMD form (`-np 2 playsim play A : -np 1 playsim play B`) gives clients different
//! sources in one run: here, one client a link too slow for the rate.
//!
//! Run as root (as CI does) with OpenMPI's allow-run-as-root switch. The shared-memory
//! transport's single-copy mechanism needs ptrace rights that a container may not give, so
//! it is off: playsim's messages are small.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use playsim::report::{ClientState, RunStatus};

use crate::util::{generate, read_report, run, KillOnDrop, Run, SMALL_PRESET};

/// Held by each test for its whole run: one run of 3 ranks at a time on this 2-core machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `mpirun` with the switches this machine needs: oversubscribed (3 ranks on 2 cores), as
/// root when the tests run as root, and no single-copy shared memory.
fn mpirun() -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"]);
    if rustix::process::geteuid().is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// One app context of an MPMD command line: `-np N playsim ARGS...`, `:` between contexts.
fn context(cmd: &mut Command, n: u32, args: &[&str]) {
    cmd.args(["-np", &n.to_string()]).arg(env!("CARGO_BIN_EXE_playsim")).args(args);
}

/// A `sim://` link of `bw` carrying small DPX frames, 48 of them (2 s at 24 fps).
fn link(name: &str, bw: &str) -> String {
    format!("sim://{name}?bw={bw}&lat=1ms&jitter=1ms&seed=3&format=dpx&preset={SMALL_PRESET}&frames=48")
}

fn client_report(json: &Path, rank: u32) -> PathBuf {
    json.with_file_name(format!("run.client-{rank}.json"))
}

#[test]
fn three_clients_make_one_run_and_only_the_slow_link_drops() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let csv = dir.path().join("run.csv");
    // A 160x32 10-bit DPX frame is 22,528 bytes: 24 fps needs 541 kB/s. Clients 0 and 1 each
    // have a link of 20 MB/s, client 2 one of 200 kB/s (37% of the need).
    let (fast_0, fast_1, slow) = (link("a", "20MB/s"), link("b", "20MB/s"), link("c", "200kB/s"));
    let common = ["--fps", "24", "--quiet", "--json", json.to_str().context("path")?, "--csv"];
    let csv_arg = csv.to_str().context("path")?;
    let mut cmd = mpirun();
    let play = |url: &str| -> Vec<String> {
        let mut args = vec!["play".to_owned(), url.to_owned()];
        args.extend(common.iter().map(|s| (*s).to_owned()));
        args.push(csv_arg.to_owned());
        args
    };
    for (i, url) in [&fast_0, &fast_1, &slow].into_iter().enumerate() {
        if i > 0 {
            cmd.arg(":");
        }
        let args = play(url);
        context(&mut cmd, 1, &args.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let started = Instant::now();
    let done = run(&mut cmd)?;
    done.ensure_code(0)?;
    let merged = read_report(&json)?;
    ensure!(merged.status == RunStatus::Complete, "{:?}: {:?}\n{done}", merged.status, merged.error);
    ensure!(merged.clients.len() == 3, "{} client rows\n{done}", merged.clients.len());
    for (rank, client) in merged.clients.iter().enumerate() {
        ensure!(client.rank == rank as u32 && client.state == ClientState::Reported, "{client:?}");
        ensure!(client.transport == "sim" && client.streams == 1, "{client:?}");
        ensure!(client.frames_due == 48, "client {rank}: {} frames due", client.frames_due);
    }
    let (c0, c1, c2) = (&merged.clients[0], &merged.clients[1], &merged.clients[2]);
    ensure!(c0.dropped.total() == 0 && c1.dropped.total() == 0, "clean links dropped: {c0:?} {c1:?}");
    ensure!(c2.dropped.storage >= 12, "the slow link's client drops on storage: {:?}", c2.dropped);
    ensure!(c2.dropped.total() == c2.dropped.storage, "{:?}", c2.dropped);
    // Totals are the clients' sums, cause by cause.
    let storage: u64 = merged.clients.iter().map(|c| c.dropped.storage).sum();
    ensure!(
        merged.totals.dropped.storage == storage && merged.totals.frames_due == 3 * 48,
        "{:?}",
        merged.totals
    );
    // The streams keep their client, in the report and in the timeline CSV.
    ensure!(merged.streams.len() == 3, "{} streams", merged.streams.len());
    for (rank, stream) in merged.streams.iter().enumerate() {
        ensure!(stream.client == Some(rank as u32), "{}: {:?}", stream.name, stream.client);
        ensure!(stream.name.starts_with(&format!("client {rank}")), "{}", stream.name);
    }
    let timeline = std::fs::read_to_string(&csv)?;
    let header = timeline.lines().next().unwrap_or_default();
    ensure!(header.ends_with(",client"), "{header}");
    let slow_rows = timeline.lines().filter(|l| l.ends_with(",2") && l.contains(",storage,")).count() as u64;
    ensure!(slow_rows == c2.dropped.storage, "{slow_rows} storage rows for client 2, {:?}", c2.dropped);
    // One start: the clients' first frames within a few ms of each other on a loaded 2-core
    // machine (the bench measures the skew itself); clocks on one host agree to well under 1 ms.
    let cluster = merged.cluster.as_ref().context("no cluster figures")?;
    ensure!(cluster.n_clients == 3 && cluster.n_lost == 0, "{cluster:?}");
    ensure!(cluster.start_skew_ms < 20.0, "start skew {} ms", cluster.start_skew_ms);
    ensure!(cluster.max_clock_offset_ms.abs() < 5.0, "clock offset {} ms", cluster.max_clock_offset_ms);
    ensure!(cluster.launcher.contains("Open MPI"), "{}", cluster.launcher);
    // Every client wrote its own report beside the merged one.
    for rank in 0..3 {
        let own = read_report(&client_report(&json, rank))?;
        ensure!(own.totals.frames_due == 48, "client {rank}'s own report: {:?}", own.totals);
    }
    ensure!(done.stdout.contains("client"), "the summary names the clients:\n{done}");
    eprintln!("mpi: 3 clients on sim:// in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn a_client_that_cannot_open_its_source_fails_the_run_before_the_start() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let missing = dir.path().join("no-such-sequence");
    let json_arg = json.to_str().context("path")?;
    let good = link("a", "20MB/s");
    let mut cmd = mpirun();
    context(&mut cmd, 2, &["play", &good, "--fps", "24", "--quiet", "--json", json_arg]);
    cmd.arg(":");
    context(
        &mut cmd,
        1,
        &["play", missing.to_str().context("path")?, "--fps", "24", "--quiet", "--json", json_arg],
    );
    let done = run(&mut cmd)?;
    done.ensure_no_panic()?;
    ensure!(done.code != Some(0), "the run must fail:\n{done}");
    let merged = read_report(&json)?;
    ensure!(merged.status == RunStatus::Failed, "{:?}", merged.status);
    let error = merged.error.clone().unwrap_or_default();
    ensure!(error.contains("client 2") && error.contains("no-such-sequence"), "{error}");
    ensure!(
        merged.totals.frames_due == 0,
        "no frame falls due in a run that never started: {:?}",
        merged.totals
    );
    Ok(())
}

#[test]
fn a_killed_client_leaves_a_merged_report_and_the_other_clients_reports() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    // 20 s of frames: the run is killed long before it ends.
    let url = format!("sim://lan?bw=50MB/s&format=dpx&preset={SMALL_PRESET}&frames=480");
    let mut cmd = mpirun();
    context(&mut cmd, 3, &["play", &url, "--fps", "24", "--quiet", "--json", json.to_str().context("path")?]);
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    cmd.stdout(std::fs::File::create(&stdout)?).stderr(std::fs::File::create(&stderr)?);
    let mut mpirun = KillOnDrop(cmd.spawn().context("starting mpirun")?);
    let victim = wait_for_rank(mpirun.0.id(), 2, Duration::from_secs(30))?;
    // Let the run start and the snapshots flow, then kill client 2 outright.
    std::thread::sleep(Duration::from_secs(4));
    rustix::process::kill_process(victim, rustix::process::Signal::KILL).context("killing client 2")?;
    let status = mpirun.wait_for(Duration::from_secs(30))?;
    let done = Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&stdout)?,
        stderr: std::fs::read_to_string(&stderr)?,
    };
    done.ensure_no_panic()?;
    ensure!(!status.success(), "mpirun reports the dead rank:\n{done}");
    let merged = read_report(&json).with_context(|| format!("no merged report\n{done}"))?;
    ensure!(merged.status != RunStatus::Complete, "{:?}", merged.status);
    ensure!(merged.clients.len() == 3, "{:?}\n{done}", merged.clients);
    let lost = &merged.clients[2];
    ensure!(lost.state == ClientState::Lost && lost.last_heard_s.is_some(), "{lost:?}\n{done}");
    for client in &merged.clients[..2] {
        ensure!(client.presented > 24, "client {} kept its counts: {client:?}", client.rank);
    }
    for rank in 0..2 {
        let own =
            read_report(&client_report(&json, rank)).with_context(|| format!("client {rank}\n{done}"))?;
        ensure!(own.totals.presented > 24, "client {rank}: {:?}", own.totals);
    }
    Ok(())
}

#[test]
fn three_clients_play_from_nfs_ganesha_over_playsims_own_client() -> Result<()> {
    let _one = one_at_a_time();
    let server = playsim_testserver::NfsServer::start().context("starting nfs-ganesha")?;
    generate(&server.export_dir().join("dpx"), SMALL_PRESET, 24, &[])?;
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let url = server.url("dpx/");
    let mut cmd = mpirun();
    context(&mut cmd, 3, &["play", &url, "--fps", "24", "--quiet", "--json", json.to_str().context("path")?]);
    let done = run(&mut cmd)?;
    done.ensure_code(0)?;
    let merged = read_report(&json)?;
    ensure!(
        merged.status == RunStatus::Complete && merged.clients.len() == 3,
        "{:?}\n{done}",
        merged.clients
    );
    for client in &merged.clients {
        ensure!(client.transport == "nfs", "{client:?}");
        ensure!((client.frames_due, client.presented) == (24, 24), "client {}: {client:?}", client.rank);
        // Every client read every frame itself: 24 frames of 22,528 bytes.
        ensure!(client.bytes_read == 24 * 22_528, "client {}: {} bytes", client.rank, client.bytes_read);
        ensure!(client.cpu_s_per_gb > 0.0, "client {}: no CPU per GB", client.rank);
    }
    ensure!(merged.totals.bytes_read == 3 * 24 * 22_528, "{:?}", merged.totals);
    ensure!(merged.streams.iter().all(|s| s.storage.transport == "nfs"), "{:?}", merged.streams.len());
    Ok(())
}

#[test]
fn capacity_by_clients_names_the_client_and_cause_that_failed_first() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("capacity.json");
    let json_arg = json.to_str().context("path")?;
    // Clients 0 and 1 have links of 20 MB/s, client 2 one of 300 kB/s (55% of 24 fps's need):
    // two clients play clean, the third makes the run drop, on storage.
    let (fast, slow) = (link("a", "20MB/s"), link("a", "300kB/s"));
    let flags =
        ["--by", "clients", "--fps", "24", "--window", "2s", "--trials", "1", "--quiet", "--json", json_arg];
    let mut cmd = mpirun();
    context(&mut cmd, 2, &[&["capacity", fast.as_str()][..], &flags].concat());
    cmd.arg(":");
    context(&mut cmd, 1, &[&["capacity", slow.as_str()][..], &flags].concat());
    let done = run(&mut cmd)?;
    done.ensure_code(0)?;
    let found: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    ensure!(found["by"] == "clients" && found["clients"] == 3 && found["max"] == 3, "{found}");
    ensure!(found["best"] == 2 && found["limit"] == "storage", "{found}\n{done}");
    ensure!(found["first_drop"]["client"] == 2 && found["first_drop"]["cause"] == "storage", "{found}");
    let candidates: Vec<u64> = found["trials"]
        .as_array()
        .context("trials")?
        .iter()
        .filter_map(|t| t["candidate"].as_u64())
        .collect();
    ensure!(candidates == [1, 2, 3], "{candidates:?}");
    ensure!(done.stdout.contains("3 failed for storage (first on client 2"), "{done}");
    Ok(())
}

#[test]
fn a_scenario_places_its_runs_on_the_clients_and_plays_them_at_once() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let scenario = dir.path().join("three.toml");
    // Runs a and b by round-robin on clients 0 and 1; c, the slow one, given to client 2.
    std::fs::write(
        &scenario,
        format!(
            "name = \"three\"\nfps = 24\n\
             [[run]]\nname = \"a\"\n[[run.stream]]\nsource = \"{}\"\n\
             [[run]]\nname = \"b\"\n[[run.stream]]\nsource = \"{}\"\n\
             [[run]]\nname = \"c\"\nclient = 2\n[[run.stream]]\nsource = \"{}\"\n",
            link("a", "20MB/s"),
            link("b", "20MB/s"),
            link("c", "200kB/s")
        ),
    )?;
    let reports = dir.path().join("reports");
    let mut cmd = mpirun();
    context(
        &mut cmd,
        3,
        &[
            "run",
            scenario.to_str().context("path")?,
            "--quiet",
            "--json-dir",
            reports.to_str().context("path")?,
        ],
    );
    let done = run(&mut cmd)?;
    done.ensure_code(0)?;
    let merged = read_report(&reports.join("three-a+b+c-1.json"))?;
    ensure!(merged.clients.len() == 3 && merged.streams.len() == 3, "{:?}", merged.clients);
    let storage: Vec<u64> = merged.clients.iter().map(|c| c.dropped.storage).collect();
    ensure!(storage[0] == 0 && storage[1] == 0 && storage[2] >= 12, "{storage:?}");
    // The tally gives each run from its client's row.
    ensure!(
        done.stdout.contains("run a: 1 repetition(s)") && done.stdout.contains("run c: 1 repetition(s)"),
        "{done}"
    );
    let c_line = done.stdout.lines().find(|l| l.starts_with("run c:")).unwrap_or_default();
    ensure!(c_line.contains(&format!("storage {}", storage[2])), "{c_line}");
    // A run placed beyond the clients is refused before anything plays.
    std::fs::write(&scenario, std::fs::read_to_string(&scenario)?.replace("client = 2", "client = 7"))?;
    let mut cmd = mpirun();
    context(&mut cmd, 3, &["run", scenario.to_str().context("path")?, "--quiet"]);
    let refused = run(&mut cmd)?;
    refused.ensure_no_panic()?;
    ensure!(refused.code != Some(0), "{refused}");
    ensure!(
        refused.stderr.contains("run 'c' is placed on client 7, but this run has 3 client(s)"),
        "{refused}"
    );
    Ok(())
}

/// The pid of rank `rank` among mpirun's children, once it has started.
fn wait_for_rank(mpirun: u32, rank: u32, limit: Duration) -> Result<rustix::process::Pid> {
    let start = Instant::now();
    let wanted = format!("OMPI_COMM_WORLD_RANK={rank}");
    while start.elapsed() < limit {
        for entry in std::fs::read_dir("/proc")?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            // The parent pid is the second field after the command name's closing parenthesis.
            let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
            if parent != Some(mpirun.to_string().as_str()) {
                continue;
            }
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
            if environ.split(|&b| b == 0).any(|v| v == wanted.as_bytes()) {
                return i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw).context("pid");
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("rank {rank} of mpirun {mpirun} did not start within {limit:?}")
}

/// `mpirun -np 2 playsim play LINK ARGS --tui` in a tmux pane, as a user types it: mpirun's
/// standard input is the terminal, as rank 0's controlling terminal is.
fn dashboard_pane(json: &Path, args: &str) -> Result<crate::dashboard::Pane> {
    let root = if rustix::process::geteuid().is_root() { "--allow-run-as-root" } else { "" };
    let link = "sim://lan?bw=20MB/s&lat=1ms&jitter=0&seed=1&format=dpx&preset=256x144&frames=48";
    crate::dashboard::Pane::start(&format!(
        "mpirun --oversubscribe --mca btl_vader_single_copy_mechanism none {root} -np 2 {} play '{link}' \
         --streams 2 --loop --tui --json {} {args}; echo PLAYSIM-EXIT=$?; sleep 120",
        env!("CARGO_BIN_EXE_playsim"),
        json.display()
    ))
}

/// The rows of the last clients' table on `screen`: rank, presented, then drops by cause.
fn client_rows(screen: &str) -> Result<Vec<[u64; 6]>> {
    let lines: Vec<&str> = screen.lines().collect();
    let header = lines
        .iter()
        .rposition(|l| l.starts_with("rank host"))
        .with_context(|| format!("no clients' table:\n{screen}"))?;
    let mut rows = Vec::new();
    for line in &lines[header + 1..] {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(rank) = words.first().and_then(|w| w.parse::<u64>().ok()).filter(|_| words.len() == 9)
        else {
            break;
        };
        let counts: Vec<u64> = words[2..7].iter().map(|w| w.parse()).collect::<Result<_, _>>()?;
        rows.push([rank, counts[0], counts[1], counts[2], counts[3], counts[4]]);
    }
    Ok(rows)
}

#[test]
fn rank_0_draws_the_dashboard_with_a_row_per_client_and_leaves_the_merged_counts() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let pane = dashboard_pane(&json, "--duration 4s")?;
    let live = pane.wait_for("clients: 2 ranks", Duration::from_secs(30))?;
    for part in ["stream 1", "CPU/GPU", "p99 ms", "q then Enter hides the dashboard, Ctrl-C stops the run"] {
        ensure!(live.contains(part), "rank 0's dashboard lacks {part:?}:\n{live}");
    }
    ensure!(pane.on_alternate_screen()?, "drawn on the alternate screen:\n{live}");
    let screen = pane.wait_for("PLAYSIM-EXIT=0", Duration::from_secs(40))?;
    ensure!(!pane.on_alternate_screen()?, "the terminal is given back");
    let merged = read_report(&json)?;
    let want: Vec<[u64; 6]> = merged
        .clients
        .iter()
        .map(|c| {
            let d = &c.dropped;
            [c.rank.into(), c.presented, d.storage, d.decode, d.output, d.unreadable]
        })
        .collect();
    ensure!(want.len() == 2 && want.iter().all(|r| r[1] > 100), "{want:?}");
    ensure!(client_rows(&screen)? == want, "the clients' rows are not the merged report's:\n{screen}");
    Ok(())
}

#[test]
fn under_mpirun_q_enter_hides_the_dashboard_and_ctrl_c_stops_every_client_with_a_report() -> Result<()> {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir()?;
    let json = dir.path().join("run.json");
    let pane = dashboard_pane(&json, "--duration 60s")?;
    pane.wait_for("clients: 2 ranks", Duration::from_secs(30))?;
    // mpirun reads the terminal a line at a time and gives it to rank 0.
    pane.send_keys("q")?;
    pane.send_keys("Enter")?;
    let started = Instant::now();
    while pane.on_alternate_screen()? {
        ensure!(started.elapsed() < Duration::from_secs(10), "q Enter left the dashboard up");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The run goes on; Ctrl-C goes to mpirun, which stops every client.
    std::thread::sleep(Duration::from_secs(1));
    pane.send_keys("C-c")?;
    let screen = pane.wait_for("PLAYSIM-EXIT=", Duration::from_secs(40))?;
    ensure!(screen.contains("finishing the report"), "{screen}");
    let merged = read_report(&json)?;
    ensure!(merged.status == RunStatus::Partial, "{:?}\n{screen}", merged.status);
    ensure!(merged.clients.len() == 2 && merged.totals.presented > 0, "{:?}", merged.totals);
    Ok(())
}
