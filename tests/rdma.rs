//! `nfs+rdma://` on a host without an RDMA device (this one, and CI's): one line that says so
//! and names the device check, no panic, and a report for the failed run. The client itself
//! runs against knfsd over soft-RoCE in the guest tier (`cargo xtask vm`).

use anyhow::{ensure, Result};
use playsim::report::RunStatus;

use crate::util::{playsim, read_report, run};

#[test]
fn without_a_device_nfs_rdma_is_refused_in_one_line_naming_ibv_devices() -> Result<()> {
    if playsim_rdma::no_device_reason().is_none() {
        println!("skipped: this host has an RDMA device, so nfs+rdma:// is not refused here");
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let json = tmp.path().join("run.json");
    let json_arg = json.to_string_lossy().into_owned();
    for location in ["nfs+rdma://127.0.0.1/export/shot.%07d.dpx", "nfs://127.0.0.1/export/shot?proto=rdma"] {
        let played = run(playsim().args(["play", location, "--json", &json_arg]))?;
        played.ensure_no_panic()?;
        played.ensure_code(1)?;
        let lines: Vec<&str> = played.stderr.lines().filter(|l| !l.contains("report written")).collect();
        ensure!(lines.len() == 1, "expected one line for {location}, got:\n{}", played.stderr);
        ensure!(
            lines[0].contains(location)
                && lines[0].contains("no RDMA device")
                && lines[0].contains("ibv_devices"),
            "{location}: {}",
            lines[0]
        );
        let report = read_report(&json)?;
        ensure!(report.status == RunStatus::Failed, "{location}: the report says {:?}", report.status);

        let decoded = run(playsim().args(["decode", "--md5", location]))?;
        decoded.ensure_no_panic()?;
        decoded.ensure_code(1)?;
        ensure!(decoded.stderr.contains("ibv_devices"), "{location}: {}", decoded.stderr);
    }
    Ok(())
}

#[test]
fn a_bad_nfs_rdma_url_is_refused_naming_its_part_before_any_device_check() -> Result<()> {
    let refused = run(playsim().args(["decode", "--md5", "nfs+rdma:///no-host/shot"]))?;
    refused.ensure_no_panic()?;
    refused.ensure_code(1)?;
    ensure!(refused.stderr.contains("host"), "{}", refused.stderr);
    ensure!(!refused.stderr.contains("ibv_devices"), "{}", refused.stderr);
    Ok(())
}
