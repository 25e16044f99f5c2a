//! Serves directories over NFS-Ganesha on loopback for hand-run measurements, until stdin
//! closes (Ctrl-D) or the process is stopped:
//!
//! ```sh
//! cargo run --release -p playsim-testserver --example serve -- /tmp/m/dpx4k
//! # prints nfs://127.0.0.1/.../export/dpx4k?mountport=...&nfsport=...
//! ```
//!
//! Each directory's files are hard-linked (or copied, across file systems) into the export
//! under the directory's own name, so the server's page cache holds the same pages as a local
//! run's.

use std::error::Error;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use playsim_testserver::NfsServer;

fn main() -> Result<(), Box<dyn Error>> {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        return Err("usage: serve DIR... (e.g. serve /tmp/m/dpx4k)".into());
    }
    let server = NfsServer::start()?;
    for dir in &dirs {
        let name = dir.file_name().ok_or_else(|| format!("{} has no name", dir.display()))?;
        let into = server.export_dir().join(name);
        link_files(dir, &into)?;
        println!("{}", server.url(&name.to_string_lossy()));
    }
    eprintln!("serving until stdin closes");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    Ok(())
}

fn link_files(from: &Path, to: &Path) -> Result<(), Box<dyn Error>> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let source = entry?.path();
        let Some(name) = source.file_name() else { continue };
        let dest = to.join(name);
        if fs::hard_link(&source, &dest).is_err() {
            fs::copy(&source, &dest)?;
        }
    }
    Ok(())
}
