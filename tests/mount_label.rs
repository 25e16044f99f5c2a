//! A run through a kernel mount is labelled with the mount's transport and options, in the
//! JSON report and the summary. The mount comes from mountinfo text (this machine cannot mount
//! NFS over RDMA; the guest tests of issue 6 can), the rest of the run is real.

use std::sync::Arc;

use anyhow::{Context, Result};
use playsim::engine::StreamSpec;
use playsim::report::render;
use playsim::storage::mountinfo::{find_mount, parse_mountinfo};
use playsim::storage::{LocalOptions, LocalStorage};
use playsim::{EngineConfig, OutputStage, Pacing, Simulation};

use crate::util::{generate, SMALL_PRESET};

/// A line of /proc/self/mountinfo for an NFS 4.2 mount over RDMA, as Linux writes it.
const RDMA_MOUNT: &str = "812 29 0:61 / /mnt/flame\\040media rw,relatime shared:420 - nfs4 192.168.50.1:/export/media rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,nconnect=4,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=192.168.50.2,local_lock=none,addr=192.168.50.1";

#[test]
fn a_run_through_an_rdma_mount_says_rdma() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    generate(tmp.path(), SMALL_PRESET, 4, &[])?;
    let mounts = parse_mountinfo(RDMA_MOUNT);
    let mount =
        find_mount(&mounts, std::path::Path::new("/mnt/flame media/shot")).context("no mount found")?;
    let storage = LocalStorage::new(LocalOptions::default())?.with_mount(Some(mount.to_label()));
    let source = playsim::media::open_source(tmp.path())?;
    let config = EngineConfig { pacing: Pacing::Max, output: OutputStage::None, ..EngineConfig::default() };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let simulation = runtime.block_on(async {
        let stream = StreamSpec::new("stream 0", source, Arc::new(storage));
        Simulation::builder().config(config).stream(stream).build()
    });
    let report = runtime.block_on(simulation.map_err(anyhow::Error::msg)?.run());
    let label = report.streams[0].storage.mount.as_ref().context("no mount in the report")?;
    anyhow::ensure!(label.transport == "nfs over rdma", "transport {:?}", label.transport);
    anyhow::ensure!(label.mount_point == "/mnt/flame media", "mount point {:?}", label.mount_point);
    anyhow::ensure!(label.options.get("proto").map(String::as_str) == Some("rdma"), "{:?}", label.options);
    anyhow::ensure!(label.options.get("nconnect").map(String::as_str) == Some("4"), "{:?}", label.options);
    let summary = render::summary(&report);
    let line = summary.lines().find(|l| l.starts_with("storage mount")).context("no mount line")?;
    anyhow::ensure!(line.contains("nfs over rdma") && line.contains("proto=rdma"), "{line}");
    anyhow::ensure!(report.totals.presented == 4, "presented {}", report.totals.presented);
    Ok(())
}
