//! What the host checks in the guest's reports: each path's storage label, that the paced runs
//! completed, that the nfs+rdma run survived the server's restart (issue 18, point 4), that
//! netem's loss and delay on the path cost only storage drops (issue 20, point 3), and that each
//! SMB run's label says what was asked (issue 21, point 3).

use serde_json::Value;

/// The paths the guest reads the export over, as its results lines and report names spell them.
pub const GUEST_PATHS: [&str; 4] = ["tcp", "rdma", "userspace-tcp-guest", "userspace-rdma"];

/// The transport playsim's own RPC-over-RDMA client names in its reports.
pub const RDMA_TRANSPORT: &str = "nfs over rdma (playsim)";

/// Checks that a report read over `path` names that path's transport: a kernel mount's proto
/// (`tcp`, `rdma`) from the mount's options, playsim's own clients by their transport and proto.
/// `userspace-tcp` is the host's read through qemu's hostfwd.
pub fn check_label(path: &str, report: &Value) -> Result<(), String> {
    let storage = &report["streams"][0]["storage"];
    let transport = &storage["transport"];
    let proto = &storage["options"]["proto"];
    let (want_transport, want_proto) = match path {
        "userspace-tcp" => ("nfs", None),
        "userspace-tcp-guest" => ("nfs", Some("tcp")),
        "userspace-rdma" => (RDMA_TRANSPORT, Some("rdma")),
        _ => {
            let proto = &storage["mount"]["options"]["proto"];
            return if proto == path {
                Ok(())
            } else {
                Err(format!("the report's mount says proto={proto}, not {path}"))
            };
        }
    };
    if transport != want_transport {
        return Err(format!("transport {transport}, not \"{want_transport}\""));
    }
    match want_proto {
        Some(want) if proto != want => Err(format!("storage.options.proto {proto}, not \"{want}\"")),
        _ => Ok(()),
    }
}

/// The paths the guest records over, besides its tmpfs: the kernel mounts and playsim's client.
pub const RECORD_PATHS: [&str; 4] = ["tcp", "rdma", "userspace-tcp-guest", "userspace-rdma"];

/// Checks a record run's figures (`record --json`, one repetition of the guest's record
/// scenario) over `path`: every frame written, none dropped, and the storage it names is the
/// path's (the kernel mount with its proto, or playsim's NFS client).
pub fn check_record(path: &str, figures: &Value) -> Result<(), String> {
    let (written, dropped) = (&figures["frames_written"], &figures["frames_dropped"]);
    if written != 8 || dropped != 0 {
        return Err(format!("{written} frames written and {dropped} dropped, not 8 and 0"));
    }
    let storage = figures["info"]["storage"].as_str().unwrap_or_default();
    let wanted = match path {
        "userspace-tcp-guest" => "nfs:// export /export (playsim's NFSv3 client,".to_owned(),
        "userspace-rdma" => "nfs+rdma:// export /export (playsim's NFSv3 client over RDMA,".to_owned(),
        _ => format!("nfs over {path} on /mnt/{path}"),
    };
    if storage.contains(&wanted) {
        Ok(())
    } else {
        Err(format!("its storage is \"{storage}\", which does not say \"{wanted}\""))
    }
}

/// Checks that a run's report is complete: every frame fell due and was presented or dropped.
pub fn check_complete(report: &Value) -> Result<(), String> {
    match report["status"].as_str() {
        Some("complete") => Ok(()),
        Some(status) => {
            Err(format!("status {status}: {}", report["error"].as_str().unwrap_or("no error given")))
        }
        None => Err("the report has no status".to_owned()),
    }
}

/// What the guest left of the fault run.
pub struct FaultRun<'a> {
    /// The exit status of `playsim play`, when it ended.
    pub exit: Option<i32>,
    /// Its report, when it wrote one that parses.
    pub report: Option<&'a Value>,
    /// Its stderr.
    pub stderr: &'a str,
    /// When the guest stopped and restarted nfsd.
    pub timeline: &'a str,
}

/// The results line of the fault run: `FAULT rdma OK drops=N reconnects=M` when playsim exited
/// 0 with a complete report, the fault was injected while it ran, and the report counts storage
/// drops and at least one reconnect; else `FAULT rdma FAILED (why)`.
pub fn fault_line(run: &FaultRun<'_>) -> String {
    match fault_verdict(run) {
        Ok((drops, reconnects)) => format!("FAULT rdma OK drops={drops} reconnects={reconnects}"),
        Err(why) => format!("FAULT rdma FAILED ({why})"),
    }
}

fn fault_verdict(run: &FaultRun<'_>) -> Result<(u64, u64), String> {
    let exit = run.exit.ok_or("playsim play did not finish")?;
    if exit != 0 {
        let why = run.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(format!("exit {exit}: {why}"));
    }
    if !run.timeline.contains("nfsd back") {
        return Err(format!("the fault was not injected: {}", run.timeline.trim()));
    }
    let report = run.report.ok_or("no report fault-rdma.json")?;
    check_complete(report)?;
    let drops = report["totals"]["dropped"]["storage"].as_u64().ok_or("no totals.dropped.storage")?;
    let reconnects = report["streams"][0]["storage"]["options"]["reconnects"]
        .as_str()
        .and_then(|r| r.parse::<u64>().ok())
        .ok_or("no streams[0].storage.options.reconnects")?;
    if drops == 0 || reconnects == 0 {
        return Err(format!(
            "drops={drops} reconnects={reconnects}: a server restart must show as storage drops and a reconnect"
        ));
    }
    Ok((drops, reconnects))
}

/// The paths the guest plays behind netem's loss and delay, as its file names spell them.
pub const NETEM_PATHS: [&str; 2] = ["tcp", "userspace-tcp-guest"];

/// What the guest left of a run behind netem: its exit status (or why it did not run), report
/// and stderr.
pub struct NetemRun<'a> {
    /// The path, one of [`NETEM_PATHS`].
    pub path: &'a str,
    /// `netem-PATH.exit`: the exit status, or why the qdisc could not be added.
    pub exit: &'a str,
    /// Its report, when it wrote one that parses.
    pub report: Option<&'a Value>,
    /// Its stderr (and tc's).
    pub stderr: &'a str,
}

/// The drops a netem run counted: storage, and the others (decode, unreadable) that loss and
/// delay on the path must never cause.
pub struct NetemDrops {
    pub storage: u64,
    pub output: u64,
    pub presented: u64,
}

/// The results line of a run behind netem: `NETEM PATH OK storage=N output=M presented=P` when
/// playsim exited 0 with a complete report, something was presented, and the path's loss and
/// delay cost no decode and no unreadable frame; else `NETEM PATH FAILED (why)`.
pub fn netem_line(run: &NetemRun<'_>) -> (String, Option<NetemDrops>) {
    match netem_verdict(run) {
        Ok(d) => (
            format!(
                "NETEM {} OK storage={} output={} presented={}",
                run.path, d.storage, d.output, d.presented
            ),
            Some(d),
        ),
        Err(why) => (format!("NETEM {} FAILED ({why})", run.path), None),
    }
}

fn netem_verdict(run: &NetemRun<'_>) -> Result<NetemDrops, String> {
    let exit = run.exit.trim();
    if exit != "0" {
        let why = run.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(format!("exit {}: {why}", if exit.is_empty() { "none" } else { exit }));
    }
    let report = run.report.ok_or("no report")?;
    check_complete(report)?;
    let dropped = &report["totals"]["dropped"];
    let count = |cause: &str| dropped[cause].as_u64().ok_or(format!("no totals.dropped.{cause}"));
    let (decode, unreadable) = (count("decode")?, count("unreadable")?);
    if decode + unreadable > 0 {
        return Err(format!(
            "decode={decode} unreadable={unreadable}: loss and delay on the path must show as storage drops"
        ));
    }
    let presented = report["totals"]["presented"].as_u64().ok_or("no totals.presented")?;
    if presented == 0 {
        return Err("nothing presented".into());
    }
    Ok(NetemDrops { storage: count("storage")?, output: count("output")?, presented })
}

/// The ways the guest mounts Samba's share with the kernel's cifs client, as its results lines
/// and report names spell them, and `userspace` and `userspace-seal`: playsim's own `smb://`
/// client, signed and with `?seal=on`.
pub const SMB_PATHS: [&str; 5] = ["plain", "multichannel", "seal", "userspace", "userspace-seal"];

/// The results line of the SMB run over `path` (one of [`SMB_PATHS`]):
/// `SMB-LABEL PATH OK dialect=3.1.1 channels=N ...` when its report is complete and labels the
/// path as asked (a kernel mount: SMB 3.1.1, with `multichannel` or `seal` exactly where
/// asked, and its session's channels; playsim's client: transport smb, dialect 3.1.1); else
/// `SMB-LABEL PATH FAILED (why)`.
pub fn smb_label_line(path: &str, report: &Value) -> String {
    match smb_label(path, report) {
        Ok(label) => format!("SMB-LABEL {path} OK {label}"),
        Err(why) => format!("SMB-LABEL {path} FAILED ({why})"),
    }
}

fn smb_label(path: &str, report: &Value) -> Result<String, String> {
    check_complete(report)?;
    let storage = &report["streams"][0]["storage"];
    if let Some(kind) = path.strip_prefix("userspace") {
        let options = &storage["options"];
        if storage["transport"] != "smb" || options["dialect"] != "3.1.1" {
            return Err(format!("transport {}, dialect {}", storage["transport"], options["dialect"]));
        }
        let sealed = kind == "-seal";
        if (text(&options["encryption"]) != "off") != sealed {
            return Err(format!(
                "encryption {} {}",
                options["encryption"],
                if sealed { "with seal=on" } else { "without seal" }
            ));
        }
        return Ok(format!(
            "dialect=3.1.1 signing={} encryption={} channels={}",
            text(&options["signing"]),
            text(&options["encryption"]),
            text(&options["channels"])
        ));
    }
    let mount = &storage["mount"];
    let options = &mount["options"];
    if mount["transport"] != "smb" {
        return Err(format!("the mount's transport is {}, not \"smb\"", mount["transport"]));
    }
    if options["vers"] != "3.1.1" {
        return Err(format!("the mount's vers is {}, not 3.1.1", options["vers"]));
    }
    for (option, wanted) in [("multichannel", path == "multichannel"), ("seal", path == "seal")] {
        if options.get(option).is_some() != wanted {
            return Err(format!(
                "the mount's options {options} {} {option}",
                if wanted { "lack" } else { "have" }
            ));
        }
    }
    let channels = options["channels"].as_str().ok_or("the label gives no channels (from DebugData)")?;
    Ok(format!("vers=3.1.1 channels={channels}{}", if path == "seal" { " seal" } else { "" }))
}

/// A JSON string's text, or `-`.
fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("-")
}

/// Whether a results line records a failure. `BENCH` lines never do: bench rows print what
/// they got and never fail the tier.
pub fn is_failure(line: &str) -> bool {
    if line.starts_with("BENCH ") {
        return false;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let bad = words.iter().any(|w| matches!(*w, "FAILED" | "MISMATCH" | "FAIL"));
    bad || !words.contains(&"OK")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(transport: &str, proto: &str, mount_proto: Option<&str>) -> Value {
        let mut storage = json!({ "transport": transport, "options": { "proto": proto } });
        if let Some(p) = mount_proto {
            storage["mount"] = json!({ "options": { "proto": p } });
        }
        json!({ "status": "complete", "streams": [ { "storage": storage } ] })
    }

    #[test]
    fn each_path_wants_its_own_label() {
        assert_eq!(check_label("rdma", &report("local", "", Some("rdma"))), Ok(()));
        assert!(check_label("rdma", &report("local", "", Some("tcp"))).is_err());
        assert_eq!(check_label("userspace-tcp-guest", &report("nfs", "tcp", None)), Ok(()));
        assert_eq!(check_label("userspace-rdma", &report(RDMA_TRANSPORT, "rdma", None)), Ok(()));
        assert_eq!(
            check_label("userspace-rdma", &report("nfs", "tcp", None)),
            Err("transport \"nfs\", not \"nfs over rdma (playsim)\"".to_owned())
        );
        assert!(check_label("userspace-rdma", &report(RDMA_TRANSPORT, "tcp", None)).is_err());
    }

    #[test]
    fn the_fault_run_needs_drops_a_reconnect_and_a_complete_report() {
        let mut report = json!({
            "status": "complete",
            "totals": { "dropped": { "storage": 31 } },
            "streams": [ { "storage": { "options": { "reconnects": "1" } } } ]
        });
        let timeline = "nfsd stopped at uptime 300.1 s\nnfsd back at uptime 303.2 s: rdma 20049";
        let line = |report: &Value| {
            fault_line(&FaultRun { exit: Some(0), report: Some(report), stderr: "", timeline })
        };
        assert_eq!(line(&report), "FAULT rdma OK drops=31 reconnects=1");
        report["streams"][0]["storage"]["options"]["reconnects"] = json!("0");
        assert!(line(&report).starts_with("FAULT rdma FAILED (drops=31 reconnects=0"));
        report["status"] = json!("failed");
        assert!(line(&report).starts_with("FAULT rdma FAILED (status failed"));
        let refused = FaultRun {
            exit: Some(1),
            report: None,
            stderr: "playsim: error: nfs+rdma://10.0.2.15/export/dpx: no transport serves nfs+rdma://\n",
            timeline: "the run ended before the fault",
        };
        assert_eq!(
            fault_line(&refused),
            "FAULT rdma FAILED (exit 1: playsim: error: nfs+rdma://10.0.2.15/export/dpx: no transport serves \
             nfs+rdma://)"
        );
    }

    #[test]
    fn a_netem_run_must_complete_with_only_storage_and_output_drops() {
        let mut report = json!({
            "status": "complete",
            "totals": { "presented": 30, "dropped": { "storage": 9, "decode": 0, "output": 1, "unreadable": 0 } }
        });
        let line = |report: &Value, exit: &str| {
            netem_line(&NetemRun { path: "tcp", exit, report: Some(report), stderr: "tc: oops\n" }).0
        };
        assert_eq!(line(&report, "0\n"), "NETEM tcp OK storage=9 output=1 presented=30");
        assert_eq!(
            line(&report, "the qdisc could not be added"),
            "NETEM tcp FAILED (exit the qdisc could not be added: tc: oops)"
        );
        report["totals"]["dropped"]["unreadable"] = json!(2);
        assert!(line(&report, "0").starts_with("NETEM tcp FAILED (decode=0 unreadable=2"));
    }

    #[test]
    fn smb_labels_must_say_what_each_mount_asked_for() {
        let mount = |options: Value| {
            json!({"status": "complete", "streams": [{"storage": {"transport": "local",
                "mount": {"transport": "smb", "options": options}}}]})
        };
        let plain = mount(json!({"vers": "3.1.1", "channels": "1"}));
        assert_eq!(smb_label_line("plain", &plain), "SMB-LABEL plain OK vers=3.1.1 channels=1");
        assert!(smb_label_line("multichannel", &plain).contains("FAILED (the mount's options"));
        let multi = mount(json!({"vers": "3.1.1", "multichannel": "", "max_channels": "4", "channels": "1"}));
        assert_eq!(smb_label_line("multichannel", &multi), "SMB-LABEL multichannel OK vers=3.1.1 channels=1");
        let sealed = mount(json!({"vers": "3.1.1", "seal": "", "channels": "1"}));
        assert_eq!(smb_label_line("seal", &sealed), "SMB-LABEL seal OK vers=3.1.1 channels=1 seal");
        let no_channels = mount(json!({"vers": "3.1.1"}));
        assert!(smb_label_line("plain", &no_channels).contains("no channels"));
        let own = json!({"status": "complete", "streams": [{"storage": {"transport": "smb",
            "options": {"dialect": "3.1.1", "signing": "AesGmac", "encryption": "off", "channels": "1"}}}]});
        assert_eq!(
            smb_label_line("userspace", &own),
            "SMB-LABEL userspace OK dialect=3.1.1 signing=AesGmac encryption=off channels=1"
        );
        assert!(smb_label_line("userspace", &json!({"status": "failed"})).contains("FAILED (status failed"));
        assert!(smb_label_line("userspace-seal", &own).contains("FAILED (encryption \"off\" with seal=on)"));
        let own_sealed = json!({"status": "complete", "streams": [{"storage": {"transport": "smb",
            "options": {"dialect": "3.1.1", "signing": "by encryption", "encryption": "Aes128Gcm",
            "channels": "1"}}}]});
        assert_eq!(
            smb_label_line("userspace-seal", &own_sealed),
            "SMB-LABEL userspace-seal OK dialect=3.1.1 signing=by encryption encryption=Aes128Gcm channels=1"
        );
        assert!(smb_label_line("userspace", &own_sealed).contains("FAILED (encryption"));
    }

    #[test]
    fn failures_are_told_by_their_verdict_word() {
        assert!(!is_failure("MD5 dpx tcp OK 12 frames"));
        assert!(!is_failure("LDD OK"));
        assert!(is_failure("MD5 dpx userspace-rdma FAILED (exit 1: playsim: error: it said OK)"));
        assert!(is_failure("MD5 exr rdma MISMATCH"));
        assert!(!is_failure("RECORD rdma OK 8 frames, byte-identical to the local recording"));
        assert!(is_failure("PLAY dpx tcp FAILED (exit 1)"));
        assert!(!is_failure("BENCH playsim-nfs-rdma FAILED (no run succeeded)"));
    }

    #[test]
    fn a_record_run_must_write_every_frame_through_its_path() {
        let figures = |storage: &str, written: u64| json!({ "frames_written": written, "frames_dropped": 0, "info": { "storage": storage } });
        let kernel = figures("local files (page cache), nfs over rdma on /mnt/rdma", 8);
        assert_eq!(check_record("rdma", &kernel), Ok(()));
        assert!(check_record("tcp", &kernel).is_err_and(|e| e.contains("nfs over tcp on /mnt/tcp")));
        let own = figures("nfs:// export /export (playsim's NFSv3 client, WRITE 1024 KiB)", 8);
        assert_eq!(check_record("userspace-tcp-guest", &own), Ok(()));
        let short = figures("nfs:// export /export (playsim's NFSv3 client, WRITE 1024 KiB)", 7);
        assert!(check_record("userspace-tcp-guest", &short).is_err_and(|e| e.contains("7 frames written")));
        let rdma =
            figures("nfs+rdma:// export /export (playsim's NFSv3 client over RDMA, WRITE 1024 KiB)", 8);
        assert_eq!(check_record("userspace-rdma", &rdma), Ok(()));
        // Each of playsim's transports is told from the other.
        assert!(check_record("userspace-rdma", &own).is_err());
        assert!(check_record("userspace-tcp-guest", &rdma).is_err());
    }
}
