//! `cargo xtask deps`: installs the Debian packages playsim needs, skipping those already present.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::process;

/// A Debian package the project needs, and why.
pub struct Package {
    pub name: &'static str,
    pub why: &'static str,
}

/// Every system package the project needs. fio is the local-read anchor of the bench (`io` rows).
/// NFS-Ganesha, rpcbind and libnfs serve and read `nfs://` in the integration tests and the bench
/// (through crates/playsim-testserver).
pub const PACKAGES: &[Package] = &[
    Package {
        name: "ffmpeg",
        why: "the ffmpeg CLI writes reference media for the integration tests and is the bench's anchor",
    },
    Package { name: "pkg-config", why: "-sys crates find native libraries (libav*, OpenEXR) through it" },
    Package { name: "build-essential", why: "cc/c++/make for crates that build C or C++ code" },
    Package {
        name: "libopenexr-dev",
        why:
            "the OpenEXR C++ library (3.1) behind playsim-exr's openexr backend and the bench's plain reader",
    },
    Package {
        name: "libavcodec-dev",
        why: "FFmpeg's decoders (5.1), linked by playsim-ffmpeg via ffmpeg-next",
    },
    Package {
        name: "libavformat-dev",
        why: "FFmpeg's demuxers, reading containers through playsim's storage",
    },
    Package { name: "libavutil-dev", why: "FFmpeg's utilities, needed by libavcodec and libavformat" },
    Package { name: "clang", why: "ffmpeg-sys-next generates its FFmpeg bindings with bindgen" },
    Package { name: "libclang-dev", why: "libclang, which bindgen loads to read FFmpeg's headers" },
    Package {
        name: "cmake",
        why: "rdma-mummy-sys (the `rdma` feature) builds its loader of libibverbs and librdmacm with it",
    },
    Package {
        name: "libopenmpi-dev",
        why: "OpenMPI's headers and mpicc, which the `mpi` crate (the `mpi` feature) builds against",
    },
    Package { name: "openmpi-bin", why: "mpirun, which starts several playsim clients as one run" },
    Package { name: "fonts-dejavu-core", why: "the font of PNG plots and of the fixtures' frame numbers" },
    Package {
        name: "nfs-ganesha",
        why: "the NFS server (ganesha.nfsd) that playsim-testserver runs on loopback",
    },
    Package { name: "nfs-ganesha-vfs", why: "Ganesha's VFS backend, which exports a local directory" },
    Package { name: "samba", why: "the SMB server (smbd, smbpasswd) that playsim-testserver runs on loopback for smb://" },
    Package { name: "smbclient", why: "Samba's client: checks the test server's share, and the anchor of the smb:// bench" },
    Package { name: "rpcbind", why: "the portmapper Ganesha must register with, or it exits" },
    Package {
        name: "libnfs-utils",
        why: "nfs-ls and friends, an independent NFS client to check the test server with",
    },
    Package { name: "libnfs-dev", why: "libnfs, the bench's NFS anchor (benches/anchors/libnfs_read.c)" },
    Package {
        name: "libtiff-tools",
        why: "tiffcp, libtiff's reader and writer, makes the tiled, big-endian and float TIFF files FFmpeg does not",
    },
    Package {
        name: "chromium",
        why: "headless Chromium opens the one-file HTML reports in the browser tier: a DOM check and a screenshot",
    },
    Package { name: "tmux", why: "the dashboard (--tui) is tested in a tmux pane: keys sent, the pane captured" },
    Package {
        name: "fio",
        why: "the bench's local-read anchor: the same files, block size and reads in flight as playsim",
    },
];

/// Installs whichever of [`PACKAGES`] are missing; does nothing when all are present.
pub fn run() -> Result<()> {
    ensure(PACKAGES)
}

/// Installs whichever of `packages` are missing; does nothing when all are present.
pub fn ensure(packages: &[Package]) -> Result<()> {
    let names: Vec<&str> = packages.iter().map(|p| p.name).collect();
    if !process::on_path("dpkg-query") {
        // Not Debian-like: we cannot tell what is installed, so say what is needed and go on.
        println!("deps: warning: no dpkg-query, not a Debian-like system; make sure these are installed:");
        for p in packages {
            println!("  {:<16} {}", p.name, p.why);
        }
        return Ok(());
    }

    let missing = missing_of(packages)?;
    if missing.is_empty() {
        println!("deps: all {} packages present", names.len());
        return Ok(());
    }
    println!("deps: installing {} missing of {} packages:", missing.len(), names.len());
    for p in &missing {
        println!("  {:<16} {}", p.name, p.why);
    }
    let missing_names: Vec<&str> = missing.iter().map(|p| p.name).collect();
    let install_line = format!(
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {}",
        missing_names.join(" ")
    );
    if !process::on_path("apt-get") {
        bail!("deps: missing {}, and there is no apt-get to install them", missing_names.join(" "));
    }

    let sudo = if is_root()? {
        false
    } else if process::on_path("sudo") && Command::new("sudo").args(["-n", "true"]).output()?.status.success()
    {
        true
    } else {
        bail!(
            "deps: missing {}; not root and no password-less sudo, so install them yourself:\n  \
             sudo sh -c '{install_line}'",
            missing_names.join(" ")
        );
    };
    let apt_get = || {
        if sudo {
            // `env` because sudo may drop DEBIAN_FRONTEND from the environment it passes on.
            let mut cmd = Command::new("sudo");
            cmd.args(["-n", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]);
            cmd
        } else {
            let mut cmd = Command::new("apt-get");
            cmd.env("DEBIAN_FRONTEND", "noninteractive");
            cmd
        }
    };
    process::run(apt_get().arg("update")).context("deps: apt-get update failed")?;
    process::run(apt_get().args(["install", "-y", "--no-install-recommends"]).args(&missing_names))
        .with_context(|| format!("deps: installing {} failed", missing_names.join(" ")))?;

    let still_missing = missing_of(missing.iter().copied())?;
    if !still_missing.is_empty() {
        let still: Vec<&str> = still_missing.iter().map(|p| p.name).collect();
        bail!("deps: apt-get succeeded but {} still not installed", still.join(" "));
    }
    println!("deps: installed {}", missing_names.join(" "));
    Ok(())
}

fn missing_of<'a>(packages: impl IntoIterator<Item = &'a Package>) -> Result<Vec<&'a Package>> {
    let mut missing = Vec::new();
    for p in packages {
        if !is_installed(p.name)? {
            missing.push(p);
        }
    }
    Ok(missing)
}

fn is_installed(package: &str) -> Result<bool> {
    // An unknown package makes dpkg-query exit 1 with a message on stderr: that just means "missing".
    let output = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .context("cannot run dpkg-query")?;
    Ok(output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "install ok installed")
}

pub fn is_root() -> Result<bool> {
    Ok(process::read(Command::new("id").arg("-u"))? == "0")
}
