//! playsim's integration tests: one binary, one module per area. The areas that need a cargo
//! feature (`nfs`, `rdma`, `smb`, `ffmpeg`, `io-uring`, `mpi`) are compiled only with it; the rest is what a
//! `--no-default-features` build tests.

mod bad_input;
mod cli;
mod dashboard;
mod dpx_ffmpeg;
mod exr_bad_input;
mod exr_ffmpeg;
mod faults;
mod fixtures;
mod frametest;
#[cfg(feature = "nfs")]
mod hostile_nfs;
#[cfg(feature = "nfs")]
mod hostile_nfs_record;
#[cfg(feature = "smb")]
mod hostile_smb;
mod html;
#[cfg(feature = "io-uring")]
mod io_uring;
mod limits;
mod matrix;
mod mount_label;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "nfs")]
mod nfs;
#[cfg(feature = "rdma")]
mod rdma;
mod record;
mod scenario;
mod sim;
#[cfg(feature = "smb")]
mod smb;
mod tiff;
mod util;
#[cfg(feature = "ffmpeg")]
mod video;
