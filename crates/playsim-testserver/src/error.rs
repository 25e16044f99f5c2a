//! The error of this crate: a server that could not be started, restarted or asked something.

use std::path::PathBuf;
use std::time::Duration;

/// Starting, restarting or querying a test NFS server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program or module the server needs is not installed.
    #[error("{what} is not installed ({detail}): run `cargo xtask deps`")]
    Missing {
        /// What is missing, e.g. `ganesha.nfsd`.
        what: &'static str,
        /// Where it was looked for, or what said it is missing.
        detail: String,
    },
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file or program.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No rpcbind listens on 127.0.0.1:111 and one could not be started.
    #[error("rpcbind did not come up on 127.0.0.1:111 within {waited:?}: {detail}")]
    Rpcbind {
        /// How long we waited.
        waited: Duration,
        /// What happened to the rpcbind we started.
        detail: String,
    },
    /// Ganesha exited during startup or did not serve in time.
    #[error(
        "ganesha.nfsd on 127.0.0.1 (nfs port {nfs_port}, mount port {mount_port}) {reason}; \
         tail of {}:\n{log_tail}",
        log.display()
    )]
    NotUp {
        /// The NFS port it was given.
        nfs_port: u16,
        /// The MOUNT port it was given.
        mount_port: u16,
        /// What went wrong, e.g. `exited with exit status: 2` or `did not come up within 20s`.
        reason: String,
        /// Its log file (removed with the server's temporary directory).
        log: PathBuf,
        /// The last lines of its log, without the D-Bus and Kerberos noise.
        log_tail: String,
    },
    /// Samba's smbd exited during startup or did not listen in time.
    #[error("smbd on 127.0.0.1 (port {port}) {reason}; tail of {}:\n{log_tail}", log.display())]
    SmbNotUp {
        /// The port it was given.
        port: u16,
        /// What went wrong, e.g. `exited with exit status: 1`.
        reason: String,
        /// Its output file (removed with the server's temporary directory).
        log: PathBuf,
        /// The last lines of its output.
        log_tail: String,
    },
    /// An [`ExportSpec`](crate::ExportSpec) given to the builder is invalid.
    #[error("invalid export `{name}`: {reason}")]
    InvalidExport {
        /// The export's name.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// An RPC to rpcbind or to the server failed, or its reply was malformed.
    #[error("{what} via {addr} failed: {detail}")]
    Rpc {
        /// The call, e.g. `rpcbind SET`.
        what: String,
        /// Where it was sent.
        addr: String,
        /// Why it failed.
        detail: String,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}
