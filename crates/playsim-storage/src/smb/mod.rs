//! SMB2/3: `smb://` sources read with no mount and no root, through the pure-Rust `smb2` crate's
//! client.
//!
//! [`SmbStorage::connect`] dials the server, negotiates (SMB 3.1.1 unless the URL's `?vers=`
//! asks for another dialect), logs in with NTLMv2 and connects to the share. A frame read is
//! split into READs of at most [`DEFAULT_READ_SIZE`] (capped by the server's MaxReadSize), all
//! in flight together within the credits the server grants. Directory listings give sequence
//! discovery what `nfs://` gives it.
//!
//! Credentials never travel in the URL: a password there is refused, since it would show in
//! `ps`, shell history and the report. They come from a file in `mount.cifs`'s format
//! (`--smb-credentials FILE`: `username=` and `password=` lines) or the environment
//! ([`USER_ENV`], [`PASSWORD_ENV`]), and are never echoed nor reported.
//!
//! What the `smb2` crate (0.39, with playsim's patch in `vendor/smb2`) lets a client choose,
//! and so what `smb://` offers:
//! - the dialect: it offers every dialect from 2.0.2 to 3.1.1 and the server picks; `?vers=`
//!   checks that the server picked the one asked for (3.1.1 by default) and refuses otherwise;
//! - signing: on by default for a logged-in session; `?sign=off` leaves it off unless the server
//!   requires it (an SMB 3.1.1 session still signs its TREE_CONNECTs, as the protocol requires);
//! - encryption: on when the server or the share asks for it, or with `?seal=on`; refused with
//!   `?seal=on` when the server agreed no cipher (SMB 2.x, or encryption off on the server);
//! - one channel: it has no multichannel.
//!
//! [`SmbWriter`] is the write side (`record` and `frametest -w` to an `smb://` directory): WRITEs
//! of up to [`DEFAULT_WRITE_SIZE`] all in flight, FLUSH for a sync (SMB has no UNSTABLE and
//! COMMIT), a rename that replaces its target.
//!
//! The client ([`SmbStorage`]) is the `smb` cargo feature (on by default). Its options, URLs and
//! credentials ([`SmbOptions`], [`SmbUrl`], [`SmbCredentials`]) are in every build, so that flags
//! and scenario keys are the same whichever features a build has.
//!
//! # Design notes (moved from ARCHITECTURE.md)
//!
//! - The client runs on a one-thread tokio runtime of its own (`runtime.rs`), so the crate's
//!   receive task's CPU (signatures, decryption) counts as the storage's and its panics come back
//!   as errors naming the crate.
//! - `vendor/smb2` is smb2 0.39.0 with playsim's patch (`vendor/smb2/PLAYSIM-PATCH.md`): 0.39.0
//!   signed every session and never offered the ENCRYPTION capability, so Samba agreed no cipher.
//!   `sign=` and `seal=` are set on the connection, so a reconnect sets them up again.
//! - A frame's READs of up to 1 MiB are all sent at once; the crate holds them until the server
//!   grants credits. The report labels the dialect, signing, encryption, channels (always 1),
//!   credits and reconnects. The client sets playsim-core's malloc thresholds at connect
//!   (`keep_scratch_in_heap`): the crate returns each READ's data in 1 MiB buffers of its own.
//! - A lost connection (reset, closed, a reply cut) is reconnected in place, then the share
//!   again: the share's tree belongs to a session generation, each open file knows the generation
//!   it was opened in and opens again in the new one, and the read is sent again, up to 3 tries
//!   each on a new connection. A reconnect that fails is `Unavailable` (the run ends with its
//!   report); a read lost on all 3 tries is that frame's error.
//! - Writes ([`SmbWriter`], `writes.rs`) use a client of their own (so the URL's `sign=`/`seal=`
//!   hold); `preallocate` is SET_INFO FileAllocationInformation, and free space is
//!   FileFsFullSizeInformation's caller-available bytes.

mod credentials;
mod knobs;
#[cfg(feature = "smb")]
mod runtime;
#[cfg(feature = "smb")]
mod storage;
mod url;
#[cfg(feature = "smb")]
mod writes;

use std::path::PathBuf;
use std::time::Duration;

pub use credentials::{SmbCredentials, PASSWORD_ENV, USER_ENV};
pub use knobs::SMB_KNOBS;
#[cfg(feature = "smb")]
pub use storage::SmbStorage;
pub use url::{SmbDialect, SmbUrl, SmbUrlPart, SMB_URL_EXAMPLE};
#[cfg(feature = "smb")]
pub use writes::SmbWriter;

/// Bytes per READ when the server allows it: 1 MiB, as Windows and Linux's cifs ask.
pub const DEFAULT_READ_SIZE: usize = 1 << 20;
/// Bytes per WRITE when the server allows it (its MaxWriteSize caps it): 1 MiB, as playsim's
/// NFS client writes.
pub const DEFAULT_WRITE_SIZE: usize = 1 << 20;
/// How long a request may go unanswered before the transport gives up.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of an `smb://` source's client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmbOptions {
    /// A file of `username=` and `password=` lines (`mount.cifs`'s credentials format); `None`
    /// takes them from the environment ([`USER_ENV`], [`PASSWORD_ENV`]).
    pub credentials_file: Option<PathBuf>,
    /// How long a request may go unanswered before the run ends.
    pub timeout: Duration,
    /// Bytes per READ; capped by the server's MaxReadSize.
    pub read_size: usize,
    /// The URL names a directory to write into, which may not exist yet: the connect does not
    /// check it, and the writer makes it (`create_dir_all`). Set by `record` and
    /// `frametest -w`, not by the user.
    pub create_missing: bool,
}

impl Default for SmbOptions {
    fn default() -> SmbOptions {
        SmbOptions {
            credentials_file: None,
            timeout: DEFAULT_TIMEOUT,
            read_size: DEFAULT_READ_SIZE,
            create_missing: false,
        }
    }
}

impl SmbOptions {
    /// Checks the options: a read size from 64 KiB to 8 MiB, a timeout of at least a second.
    pub fn validate(&self) -> Result<(), crate::Error> {
        if !(64 << 10..=8 << 20).contains(&self.read_size) {
            return Err(crate::Error::InvalidOption(format!(
                "smb read size {} is out of range: 64K to 8M, for example 1M",
                self.read_size
            )));
        }
        if self.timeout < Duration::from_secs(1) {
            return Err(crate::Error::InvalidOption(format!(
                "smb timeout {:?} is below 1s, for example 30s",
                self.timeout
            )));
        }
        Ok(())
    }
}
