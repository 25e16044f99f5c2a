//! The registry the settings' tests parse with: every transport's knobs, as the facade's has
//! them, without opening anything.

use std::sync::Arc;

use playsim_storage::transport::{install, LocalTransport, Transports};

/// Installs a registry with the NFS and SMB clients' knobs (their transports disabled: these
/// tests open no location).
pub(crate) fn transports() -> &'static Transports {
    install(|registry| {
        registry.register(Arc::new(LocalTransport));
        registry.register_disabled("nfs", "nfs", Some(&playsim_storage::nfs::NFS_KNOBS));
        registry.register_disabled("smb", "smb", Some(&playsim_storage::smb::SMB_KNOBS));
    })
}
