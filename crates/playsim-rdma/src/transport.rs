//! The `nfs+rdma` transport: `nfs+rdma://host[:port]/path`, and `nfs://host/path?proto=rdma`
//! as its alias, read by playsim's NFS client over RPC-over-RDMA.

use std::sync::Arc;

use playsim_storage::nfs::{NfsOptions, NfsUrl, NFS_KNOBS};
use playsim_storage::transport::{
    nfs_options, open_nfs_location, size_text, KnobGroup, Location, OpenContext, Transport, TransportOptions,
    OWN_CLIENT_NO_CACHE,
};
use playsim_storage::Error;

use crate::connection::CREDITS_WANTED;
use crate::RdmaConnector;

/// A valid `nfs+rdma://` location, for messages.
pub const RDMA_URL_EXAMPLE: &str = "nfs+rdma://filer/media/shot/shot.%07d.dpx";

/// `nfs+rdma://host/path[?export=&mountport=&nfsport=&uid=&gid=]` (the NFS port defaults to
/// 20049; MOUNT and portmap go over TCP, as the kernel client's do); options: [`NfsOptions`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NfsRdmaTransport;

#[async_trait::async_trait]
impl Transport for NfsRdmaTransport {
    fn name(&self) -> &'static str {
        "nfs+rdma"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["nfs+rdma"]
    }

    fn claims(&self, location: &str) -> bool {
        is_rdma_alias(location)
    }

    fn example(&self) -> &'static str {
        RDMA_URL_EXAMPLE
    }

    /// The NFS client's knobs, shared with `nfs://`.
    fn knobs(&self) -> Option<&'static KnobGroup> {
        Some(&NFS_KNOBS)
    }

    fn cache_note(&self) -> Option<&'static str> {
        Some(OWN_CLIENT_NO_CACHE)
    }

    fn describe_options(&self, options: &TransportOptions) -> String {
        let nfs = options.get::<NfsOptions>();
        format!("nconnect {}, rsize {}, over RDMA", nfs.nconnect, size_text(nfs.rsize))
    }

    /// A server's RPC-over-RDMA transport header (the chunk lists a reply carries); the RPC
    /// message inside is the NFS client's, which `nfs://`'s `fuzz_reply` takes.
    fn fuzz_reply(&self, bytes: &[u8]) {
        let _ = crate::header::decode_reply(bytes);
    }

    /// Checks for an RDMA device, then connects and mounts as `nfs://` does, so that a bad
    /// URL, host, port, export or path is refused here, naming the part at fault.
    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        let url = NfsUrl::parse(location)?;
        let mut options = nfs_options(&context.options);
        options.validate()?;
        if let Some(reason) = crate::no_device_reason() {
            return Err(Error::Location(format!("{location}: {reason}")));
        }
        // The server's credit grant bounds the calls in flight on each connection.
        options.in_flight = options.in_flight.max(CREDITS_WANTED);
        open_nfs_location(
            location,
            url,
            &options,
            Arc::new(RdmaConnector::new()),
            "playsim's NFS client over RDMA",
        )
        .await
    }
}

/// True for `nfs://...?proto=rdma`: the kernel mount option's spelling, taken as an alias of
/// `nfs+rdma://`.
pub(crate) fn is_rdma_alias(location: &str) -> bool {
    let Some(rest) = location
        .strip_prefix("nfs://")
        .or_else(|| location.get(..6).filter(|s| s.eq_ignore_ascii_case("nfs://")).map(|_| &location[6..]))
    else {
        return false;
    };
    let Some((_, query)) = rest.split_once('?') else { return false };
    query.split('&').any(|pair| pair.eq_ignore_ascii_case("proto=rdma"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_rdma_is_claimed_and_nothing_else_is() {
        assert!(is_rdma_alias("nfs://filer/media/a.%04d.dpx?proto=rdma"));
        assert!(is_rdma_alias("NFS://filer/media?nconnect=2&PROTO=RDMA"));
        assert!(!is_rdma_alias("nfs://filer/media?proto=tcp"));
        assert!(!is_rdma_alias("nfs://filer/media/proto=rdma"));
        assert!(!is_rdma_alias("/mnt/nfs/a?proto=rdma"));
    }
}
