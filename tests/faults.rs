//! Faults that are not the server's own (issue 20, point 3): the path to a real NFS-Ganesha
//! stalled, slowed, reset and rate-limited through a userspace [`FaultProxy`] (this kernel has
//! no netem); local frame files truncated, removed or replaced while they play; report paths
//! that cannot be written, refused before the run. Each test records a reliability row from
//! what it measured, then asserts.

#[cfg(feature = "nfs")]
mod path {
    use std::time::{Duration, SystemTime};

    use anyhow::{ensure, Result};
    use playsim::report::{Report, RunStatus};
    use playsim_testserver::{FaultProxy, NfsServer};

    use crate::nfs::{
        fault_server, longest_storage_outage, option, paced_run, presented_after, sleep_until, FAULTS,
    };
    use crate::util::{record_reliability, ReliabilityRow, ReliabilityTable, Run};

    const FPS: f64 = 24.0;

    /// The server, and proxies in front of its NFS and MOUNT ports.
    struct Proxied {
        server: NfsServer,
        nfs: FaultProxy,
        mount: FaultProxy,
    }

    impl Proxied {
        fn start() -> Result<Proxied> {
            let server = fault_server()?;
            let nfs = FaultProxy::start(([127, 0, 0, 1], server.nfs_port()).into())?;
            let mount = FaultProxy::start(([127, 0, 0, 1], server.mount_port()).into())?;
            Ok(Proxied { server, nfs, mount })
        }

        /// The sequence's URL through the proxies.
        fn url(&self) -> String {
            let direct = format!("mountport={}&nfsport={}", self.server.mount_port(), self.server.nfs_port());
            let proxied = format!("mountport={}&nfsport={}", self.mount.port(), self.nfs.port());
            self.server.url("dpx").replace(&direct, &proxied)
        }
    }

    /// The most frames a fault may cost: (outage + restart + 1 s) × fps + prefetch.
    fn loss_bound(report: &Report, outage: Duration, restart: Duration) -> u64 {
        let seconds = (outage + restart + Duration::from_secs(1)).as_secs_f64();
        (seconds * FPS).ceil() as u64 + u64::from(report.settings.prefetch)
    }

    /// Seconds from `fault_end` to the first frame presented at or after it.
    fn recover_s(report: &Report, fault_end: SystemTime) -> Option<f64> {
        let end_unix_ns = fault_end.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_nanos();
        let end_ns = u64::try_from(end_unix_ns).ok()?.checked_sub(report.origin_unix_ns)?;
        let first = report.streams[0]
            .timeline
            .iter()
            .filter_map(|f| f.presented_ns)
            .filter(|&p| p >= end_ns)
            .min()?;
        Some((first - end_ns) as f64 / 1e9)
    }

    /// Fails unless the run completed, lost no frame to decode or unreadable data, lost at most
    /// `bound` in all, and presented more than a second's worth after `resumed_from_s`.
    fn ensure_survived(done: &Run, report: &Report, bound: u64, resumed_from_s: f64) -> Result<()> {
        let d = &report.totals.dropped;
        ensure!(report.status == RunStatus::Complete, "status {:?}\n{done}", report.status);
        ensure!(d.decode + d.unreadable == 0, "drops not attributed to storage {d:?}:\n{done}");
        ensure!(d.total() <= bound, "{} frames lost, more than the bound {bound}:\n{done}", d.total());
        let resumed = presented_after(report, resumed_from_s);
        ensure!(resumed > 24, "playback did not resume ({resumed} frames after {resumed_from_s} s):\n{done}");
        Ok(())
    }

    /// What [`ensure_survived`] checks, as the reliability row's `survived`.
    fn survived(report: &Report, bound: u64, resumed_from_s: f64) -> bool {
        let d = &report.totals.dropped;
        report.status == RunStatus::Complete
            && d.decode + d.unreadable == 0
            && d.total() <= bound
            && presented_after(report, resumed_from_s) > 24
    }

    /// A token-bucket rate limit (`tbf`) on the traffic from one local port, on `lo`: an HTB
    /// root (prio is not in this kernel) whose `u32` filter sends the port's packets to a class
    /// with `tbf` as its qdisc; every other packet takes HTB's unshaped direct queue. Removed
    /// when dropped, also when the test fails.
    struct RateLimit;

    impl RateLimit {
        /// Limits what `port` sends to `rate` (tc's spelling, e.g. `2mbit`); `Err` says why it
        /// cannot (no tc, no htb or tbf in the kernel, not root, `lo` already shaped).
        fn on_source_port(port: u16, rate: &str) -> Result<RateLimit, String> {
            let root = tc(&["qdisc", "show", "dev", "lo", "root"])?;
            if !root.trim().is_empty() && !root.contains("noqueue") {
                return Err(format!("lo already has a root qdisc, left alone: {}", root.trim()));
            }
            tc(&["qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb"])?;
            // From here on, dropping the guard removes what was added.
            let guard = RateLimit;
            tc(&["class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"])?;
            // The burst holds one of lo's largest (64 KiB, segmentation offload) packets.
            tc(&[
                "qdisc", "add", "dev", "lo", "parent", "1:10", "handle", "10:", "tbf", "rate", rate, "burst",
                "128kb", "latency", "1s",
            ])?;
            let port = port.to_string();
            tc(&[
                "filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match",
                "ip", "sport", &port, "0xffff", "flowid", "1:10",
            ])?;
            Ok(guard)
        }
    }

    impl Drop for RateLimit {
        fn drop(&mut self) {
            if let Err(e) = tc(&["qdisc", "del", "dev", "lo", "root"]) {
                eprintln!("could not remove the rate limit from lo: {e}");
            }
        }
    }

    /// Runs `tc` with `args`; its output, or why it failed.
    fn tc(args: &[&str]) -> Result<String, String> {
        let output = std::process::Command::new("tc").args(args).output().map_err(|e| format!("tc: {e}"))?;
        if !output.status.success() {
            return Err(format!("tc {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The path to the server rate-limited with `tbf` to 2 Mbit/s (about 11 of these frames a
    /// second, of the 24 due) for 3 s: storage drops only, within the bound, and playback
    /// recovers once the limit is lifted. Skipped, saying why, where tc cannot shape `lo`.
    #[test]
    fn a_rate_limited_path_costs_storage_drops_only() -> Result<()> {
        let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let proxied = Proxied::start()?;
        let limited = Duration::from_secs(3);
        let mut lifted = SystemTime::now();
        let mut skipped = None;
        let (done, report) = paced_run(&proxied.url(), 8, &[], |started| {
            sleep_until(started, Duration::from_secs(2));
            match RateLimit::on_source_port(proxied.nfs.port(), "2mbit") {
                Ok(limit) => {
                    std::thread::sleep(limited);
                    drop(limit);
                }
                Err(reason) => skipped = Some(reason),
            }
            lifted = SystemTime::now();
            Ok(())
        })?;
        if let Some(reason) = skipped {
            println!("SKIPPED: no tbf rate limit on lo: {reason}");
            return Ok(());
        }
        done.ensure_no_panic()?;
        let d = &report.totals.dropped;
        let bound = loss_bound(&report, limited, Duration::ZERO);
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "path rate-limited to 2 Mbit/s for 3 s (tc tbf)".into(),
            survived: survived(&report, bound, 6.5) && d.storage > 0,
            frames_lost: Some(d.total()),
            bound: Some(bound),
            recover_s: recover_s(&report, lifted),
            outcome: format!("drops {d:?}, longest run of storage drops {}", longest_storage_outage(&report)),
        })?;
        done.ensure_code(0)?;
        ensure!(d.storage > 0, "no storage drops at 2 Mbit/s:\n{done}");
        ensure_survived(&done, &report, bound, 6.5)
    }

    /// Nothing forwarded either way for 3 s: the frames due meanwhile are storage drops, and
    /// playback resumes when the path does, with no reconnect.
    #[test]
    fn a_path_stalled_for_3_s_costs_storage_drops_then_playback_resumes() -> Result<()> {
        let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let proxied = Proxied::start()?;
        let stall = Duration::from_secs(3);
        let mut stall_end = SystemTime::now();
        let (done, report) = paced_run(&proxied.url(), 8, &[], |started| {
            sleep_until(started, Duration::from_secs(2));
            proxied.nfs.stall(stall);
            stall_end = SystemTime::now() + stall;
            Ok(())
        })?;
        done.ensure_no_panic()?;
        let d = &report.totals.dropped;
        let bound = loss_bound(&report, stall, Duration::ZERO);
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "path stalled 3 s (proxy)".into(),
            survived: survived(&report, bound, 6.0) && d.storage > 0,
            frames_lost: Some(d.total()),
            bound: Some(bound),
            recover_s: recover_s(&report, stall_end),
            outcome: format!(
                "storage drops {}, longest run {}, reconnects {}",
                d.storage,
                longest_storage_outage(&report),
                option(&report, "reconnects")
            ),
        })?;
        done.ensure_code(0)?;
        ensure!(d.storage > 0, "no storage drops while the path stalled:\n{done}");
        ensure_survived(&done, &report, bound, 6.0)
    }

    /// Every connection reset (RST) mid-run: the transport reconnects through the proxy at
    /// once, counts it, and the run completes having lost at most a second's frames.
    #[test]
    fn a_reset_path_costs_a_reconnect_and_the_run_completes() -> Result<()> {
        let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let proxied = Proxied::start()?;
        let mut reset = (0, SystemTime::now());
        let (done, report) = paced_run(&proxied.url(), 6, &[], |started| {
            sleep_until(started, Duration::from_secs(2));
            reset = (proxied.nfs.reset_all(), SystemTime::now());
            Ok(())
        })?;
        done.ensure_no_panic()?;
        let d = &report.totals.dropped;
        let bound = loss_bound(&report, Duration::ZERO, Duration::ZERO);
        let reconnects: u64 = option(&report, "reconnects").parse().unwrap_or(0);
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "path reset, RST on every connection (proxy)".into(),
            survived: survived(&report, bound, 4.0) && reconnects >= 1,
            frames_lost: Some(d.total()),
            bound: Some(bound),
            recover_s: recover_s(&report, reset.1),
            outcome: format!(
                "{} connection(s) reset, {reconnects} reconnect(s), reconnect_wait_s {}, drops {d:?}",
                reset.0,
                option(&report, "reconnect_wait_s")
            ),
        })?;
        done.ensure_code(0)?;
        ensure!(reset.0 >= 1, "no connection open through the proxy to reset");
        ensure!(reconnects >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
        ensure!(proxied.nfs.n_accepted() >= 2, "the transport did not connect again");
        ensure_survived(&done, &report, bound, 4.0)
    }

    /// One of two connections closed (FIN both ways, as a server closing a client it thinks
    /// idle) mid-run: the transport notices, connects again through the proxy, counts it, and
    /// the run completes having lost at most a second's frames.
    #[test]
    fn a_connection_dropped_mid_run_costs_a_reconnect_and_the_run_completes() -> Result<()> {
        let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let proxied = Proxied::start()?;
        let mut closed = (false, SystemTime::now());
        let (done, report) = paced_run(&proxied.url(), 6, &["--nconnect", "2"], |started| {
            sleep_until(started, Duration::from_secs(2));
            closed = (proxied.nfs.close_one(), SystemTime::now());
            Ok(())
        })?;
        done.ensure_no_panic()?;
        let d = &report.totals.dropped;
        let bound = loss_bound(&report, Duration::ZERO, Duration::ZERO);
        let reconnects: u64 = option(&report, "reconnects").parse().unwrap_or(0);
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "one of 2 connections closed, FIN (proxy)".into(),
            survived: survived(&report, bound, 4.0) && reconnects >= 1,
            frames_lost: Some(d.total()),
            bound: Some(bound),
            recover_s: recover_s(&report, closed.1),
            outcome: format!(
                "{reconnects} reconnect(s), reconnect_wait_s {}, drops {d:?}",
                option(&report, "reconnect_wait_s")
            ),
        })?;
        done.ensure_code(0)?;
        ensure!(closed.0, "no connection open through the proxy to close");
        ensure!(reconnects >= 1, "no reconnect counted: {:?}", report.streams[0].storage.options);
        ensure_survived(&done, &report, bound, 4.0)
    }

    /// A delay on every chunk: 10 ms (within a frame's 42 ms) costs nothing, then 150 ms for
    /// 3 s (fewer than 24 chunks a second get through) costs storage drops, never decode or
    /// unreadable ones, and playback recovers when the delay ends.
    #[test]
    fn a_delay_per_chunk_costs_storage_drops_only_and_only_beyond_the_budget() -> Result<()> {
        let _one_at_a_time = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let proxied = Proxied::start()?;
        let slow = Duration::from_secs(3);
        let mut slow_end = SystemTime::now();
        let (done, report) = paced_run(&proxied.url(), 9, &[], |started| {
            proxied.nfs.set_delay(Duration::from_millis(10));
            sleep_until(started, Duration::from_secs(3));
            proxied.nfs.set_delay(Duration::from_millis(150));
            std::thread::sleep(slow);
            proxied.nfs.set_delay(Duration::ZERO);
            slow_end = SystemTime::now();
            Ok(())
        })?;
        done.ensure_no_panic()?;
        let d = &report.totals.dropped;
        // The slow phase is an outage of at most its length; the 150 ms of the chunk in
        // flight when it ends count as a restart.
        let bound = loss_bound(&report, slow, Duration::from_millis(150));
        // Frames due in the first 2.5 s, at 10 ms a chunk: within budget.
        let early_drops = report.streams[0]
            .timeline
            .iter()
            .filter(|f| f.cause.is_some() && f.due_ns < 2_500_000_000 && f.due_ns > 500_000_000)
            .count();
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "path delayed 150 ms per chunk for 3 s (proxy)".into(),
            survived: survived(&report, bound, 7.0) && early_drops == 0,
            frames_lost: Some(d.total()),
            bound: Some(bound),
            recover_s: recover_s(&report, slow_end),
            outcome: format!("drops {d:?}; at 10 ms per chunk {early_drops}"),
        })?;
        done.ensure_code(0)?;
        ensure!(early_drops == 0, "{early_drops} frames dropped at 10 ms per chunk:\n{done}");
        ensure!(d.storage > 0, "no storage drops at 150 ms per chunk:\n{done}");
        ensure_survived(&done, &report, bound, 7.0)
    }
}

/// Local frame files damaged while they play.
mod local {
    use std::fs::File;

    use std::time::Duration;

    use anyhow::{ensure, Result};
    use playsim::report::RunStatus;

    use crate::util::{
        frame_path, generate, playsim, record_reliability, Background, ReliabilityRow, ReliabilityTable,
        SMALL_PRESET,
    };

    /// A looping 24 fps run of a 24-frame DPX sequence on local disk; 2 s in, frame 5 is cut to
    /// half, frame 10 removed and frame 15 replaced (renamed over) by a file of junk. Each is
    /// unreadable from then on, named by file and index, and every other frame goes on playing.
    #[test]
    fn frames_truncated_removed_or_replaced_mid_run_are_unreadable_and_the_run_goes_on() -> Result<()> {
        let tmp = tempfile::tempdir()?;
        let seq = tmp.path().join("seq");
        generate(&seq, SMALL_PRESET, 24, &[])?;
        let json = tmp.path().join("r.json");
        let mut child = Background::spawn(
            playsim()
                .arg("play")
                .arg(&seq)
                .args(["--fps", "24", "--loop", "--quiet", "--duration", "5s", "--json"])
                .arg(&json),
            tmp.path(),
        )?;
        std::thread::sleep(Duration::from_secs(2).saturating_sub(child.started.elapsed()));
        let (truncated, removed, replaced) =
            (frame_path(&seq, 5), frame_path(&seq, 10), frame_path(&seq, 15));
        let len = std::fs::metadata(&truncated)?.len();
        File::options().write(true).open(&truncated)?.set_len(len / 2)?;
        std::fs::remove_file(&removed)?;
        let junk = seq.join("junk.tmp");
        std::fs::write(&junk, vec![0x5a; usize::try_from(len)?])?;
        std::fs::rename(&junk, &replaced)?;
        let (done, report) = child.finish(Duration::from_secs(60), &json)?;
        let stream = &report.streams[0];
        let d = &report.totals.dropped;
        let damaged = [(5, &truncated), (10, &removed), (15, &replaced)];
        // Every damaged frame is listed, by its number and file, with a message naming the file,
        // the frame and its index in the stream.
        let named = damaged.iter().all(|(number, path)| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            stream.unreadable.iter().any(|u| {
                u.frame_number == *number
                    && u.path.ends_with(&name)
                    && u.message.contains(&name)
                    && u.message.contains(&format!("frame {number} (index {})", u.frame_idx))
            })
        });
        // Frames after the damage, and not damaged, still presented.
        let presented_later = stream
            .timeline
            .iter()
            .filter(|f| f.due_ns > 3_000_000_000 && f.presented_ns.is_some())
            .filter(|f| ![5, 10, 15].contains(&f.frame_number))
            .count();
        let first_message = stream.unreadable.first().map_or("", |u| u.message.as_str());
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "local frames truncated, removed, replaced mid-run".into(),
            survived: report.status == RunStatus::Complete
                && d.unreadable > 0
                && named
                && presented_later > 24,
            frames_lost: Some(d.total()),
            bound: None,
            recover_s: None,
            outcome: format!("unreadable {}, e.g. {first_message}", d.unreadable),
        })?;
        done.ensure_code(0)?;
        ensure!(report.status == RunStatus::Complete, "status {:?}\n{done}", report.status);
        ensure!(d.unreadable > 0, "no unreadable frames: {d:?}\n{done}");
        ensure!(
            named,
            "the damaged frames 5, 10 and 15 are not all named by number and file: {:#?}",
            stream.unreadable
        );
        ensure!(
            presented_later > 24,
            "only {presented_later} undamaged frames presented after the damage:\n{done}"
        );
        Ok(())
    }
}

/// Report paths that cannot be written, refused before the run.
mod report_paths {
    use std::time::{Duration, Instant};

    use anyhow::{ensure, Result};

    use crate::util::{
        generate, playsim, record_reliability, run, ReliabilityRow, ReliabilityTable, SMALL_PRESET,
    };

    /// Each output flag of `play` (and frametest's) given a path that cannot be written: a
    /// missing directory, a file where the directory should be, a directory where the file
    /// should be, a read-only place (/proc, read-only even for root). playsim exits 2 within a
    /// second (the run asked for would take 30 s), naming the flag and the path, writes none of
    /// the other outputs, and leaves an existing report as it was.
    #[test]
    fn unwritable_report_paths_are_refused_before_the_run() -> Result<()> {
        let tmp = tempfile::tempdir()?;
        let seq = tmp.path().join("seq");
        generate(&seq, SMALL_PRESET, 4, &[])?;
        let file = tmp.path().join("a-file");
        std::fs::write(&file, b"")?;
        let existing = tmp.path().join("existing.json");
        std::fs::write(&existing, b"{\"an\": \"earlier report\"}")?;
        let t = |rel: &str| tmp.path().join(rel).display().to_string();
        let cases: Vec<(&str, String, &str)> = vec![
            ("--json", "/nonexistent/dir/r.json".into(), "the directory /nonexistent/dir does not exist"),
            ("--csv", format!("{}/r.csv", file.display()), "is not a directory"),
            ("--json", seq.display().to_string(), "it is a directory"),
            ("--live-csv", "/proc/playsim-live.csv".into(), "cannot open it for writing"),
            ("--plot", t("missing/run.svg"), "does not exist"),
            ("--output", t("missing/run.json"), "does not exist"),
        ];
        let mut slowest = Duration::ZERO;
        let mut failures = Vec::new();
        for (flag, path, reason) in &cases {
            let started = Instant::now();
            let done = run(playsim()
                .arg("play")
                .arg(&seq)
                .args(["--fps", "24", "--loop", "--duration", "30s", "--quiet"])
                .arg("--output")
                .arg(&existing)
                .args([*flag, path.as_str()]))?;
            let took = started.elapsed();
            slowest = slowest.max(took);
            let named = format!("{flag} {path}: cannot be written: ");
            if done.code != Some(2) || took > Duration::from_secs(1) || !done.stderr.contains(&named) {
                failures.push(format!("{flag} {path}: exit {:?} after {took:?}:\n{done}", done.code));
            } else if !done.stderr.contains(reason) || !done.stderr.contains("for example") {
                failures.push(format!("{flag} {path}: expected {reason:?} and an example:\n{done}"));
            }
        }
        let kept = std::fs::read(&existing)? == b"{\"an\": \"earlier report\"}";
        let leftovers: Vec<String> = crate::util::file_names(tmp.path())?;
        // frametest's outputs are checked the same way.
        let frametest = run(playsim()
            .args(["frametest", "-r", "sd", "-n", "1", "-x", "/nonexistent/dir/t.csv"])
            .arg(&seq))?;
        if frametest.code != Some(2)
            || !frametest.stderr.contains("-x /nonexistent/dir/t.csv: cannot be written")
        {
            failures.push(format!("frametest -x:\n{frametest}"));
        }
        // So is a scenario's page, written when every run has played.
        let scenario = tmp.path().join("s.toml");
        std::fs::write(
            &scenario,
            format!("name = \"s\"\n[[run]]\nname = \"a\"\n[[run.stream]]\nsource = \"{}\"\n", seq.display()),
        )?;
        let scenario_run =
            run(playsim().arg("run").arg(&scenario).args(["--html", "/nonexistent/dir/s.html"]))?;
        if scenario_run.code != Some(2)
            || !scenario_run.stderr.contains("--html /nonexistent/dir/s.html: cannot be written")
        {
            failures.push(format!("run --html:\n{scenario_run}"));
        }
        std::fs::remove_file(&scenario)?;
        record_reliability(&ReliabilityRow {
            table: ReliabilityTable::Fault,
            name: "report paths that cannot be written".into(),
            survived: failures.is_empty() && kept,
            frames_lost: None,
            bound: None,
            recover_s: None,
            outcome: format!("{} cases refused with exit 2, the slowest in {slowest:.2?}", cases.len() + 2),
        })?;
        ensure!(failures.is_empty(), "{}", failures.join("\n\n"));
        ensure!(kept, "the existing report was changed");
        ensure!(leftovers == ["a-file", "existing.json", "seq"], "files left behind: {leftovers:?}");
        Ok(())
    }
}
