//! The error of this crate: a transport that cannot be built as configured, or an NFS
//! source that cannot be reached.
//!
//! Failures of the calls themselves (open, read, close) are
//! [`playsim_core::StorageError`]s, because they cross the `Storage` seam.
//!
//! The parts of a URL an error can blame, [`UrlPart`], are every transport's, defined here
//! below the transports that build these errors, so that this module imports none of them.

use std::fmt;

/// A transport could not be built from its options, or could not reach its server.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is out of range, e.g. a zero block size, or a block size
    /// that O_DIRECT cannot use. The message says which option and why.
    #[error("invalid storage option: {0}")]
    InvalidOption(String),
    /// A transport's URL is malformed, its credentials are missing or refused, or the server
    /// refused what it names; `part` says which part of the URL is at fault. It never holds a
    /// password.
    #[error("{url}: {part}: {reason}")]
    Url {
        /// The URL as given, any password in it replaced by `***`.
        url: String,
        /// The part at fault.
        part: UrlPart,
        /// Why, in one line.
        reason: String,
    },
    /// The location needs a transport this build was made without.
    #[error(
        "{location}: this playsim was built without the `{feature}` feature, which reads it; rebuild with \
         --features {feature} (for example cargo build --release --features {feature}), or give a location \
         this build reads, for example {examples}"
    )]
    Disabled {
        /// The location as given.
        location: String,
        /// The cargo feature that adds its transport.
        feature: &'static str,
        /// Valid locations of the transports this build has.
        examples: String,
    },
    /// The location cannot be used; the message names it and says why.
    #[error("{0}")]
    Location(String),
}

/// Which part of a URL (or of the server's answer to it) is at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlPart {
    /// The URL as a whole (scheme, shape).
    Url,
    /// The host name or address.
    Host,
    /// A port (from `host:port`, `?mountport=` or `?nfsport=`).
    Port,
    /// The export the path lies in (NFS).
    Export,
    /// The share (SMB).
    Share,
    /// The path inside the export or the share.
    Path,
    /// A `?key=value` option.
    Option,
    /// The credentials (a file, the environment, `?uid=` and `?gid=`): missing, unreadable, or
    /// refused by the server.
    Credentials,
}

impl fmt::Display for UrlPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlPart::Url => "url",
            UrlPart::Host => "host",
            UrlPart::Port => "port",
            UrlPart::Export => "export",
            UrlPart::Share => "share",
            UrlPart::Path => "path",
            UrlPart::Option => "option",
            UrlPart::Credentials => "credentials",
        })
    }
}
