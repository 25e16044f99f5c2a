//! The `nfs` transport: `nfs://` URLs, read by playsim's own NFSv3 client (see [`crate::nfs`])
//! over TCP; and [`open_nfs_location`], with which a transport of another RPC transport
//! (`nfs+rdma://`, in playsim-rdma) opens its locations with the same client.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::Storage;

use super::{
    size_text, CreateMissing, KnobGroup, Location, OpenContext, Transport, TransportOptions,
    OWN_CLIENT_NO_CACHE,
};
use crate::nfs::{
    NfsOptions, NfsStorage, NfsUrl, NfsWriter, RpcConnector, TcpConnector, UrlPart, NFS_KNOBS, URL_EXAMPLE,
};
use crate::write::WriteStorage;
use crate::{ColdOutcome, Error};

/// `nfs://host[:port]/path[?export=&mountport=&nfsport=&uid=&gid=&proto=tcp]`, over TCP; options:
/// [`NfsOptions`]. A URL with `?proto=rdma` is refused here, naming the transport that takes it.
#[derive(Clone, Copy, Debug, Default)]
pub struct NfsTransport;

#[async_trait::async_trait]
impl Transport for NfsTransport {
    fn name(&self) -> &'static str {
        "nfs"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["nfs"]
    }

    fn example(&self) -> &'static str {
        URL_EXAMPLE
    }

    fn knobs(&self) -> Option<&'static KnobGroup> {
        Some(&NFS_KNOBS)
    }

    fn cache_note(&self) -> Option<&'static str> {
        Some(OWN_CLIENT_NO_CACHE)
    }

    fn describe_options(&self, options: &TransportOptions) -> String {
        let nfs = options.get::<NfsOptions>();
        format!("nconnect {}, rsize {}", nfs.nconnect, size_text(nfs.rsize))
    }

    /// A server's RPC reply through the NFS client's decoders (the RPC header, then each
    /// procedure's result, and a READ's data placed).
    fn fuzz_reply(&self, bytes: &[u8]) {
        crate::nfs::decode_any_reply(bytes);
    }

    /// Connects to the server and mounts the export, so that a bad URL, host, port, export
    /// or path is refused here, naming the part at fault.
    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        let url = NfsUrl::parse(location)?;
        if url.proto() == Some("rdma") {
            return Err(Error::Url {
                url: location.to_owned(),
                part: UrlPart::Option,
                reason: "nfs://...?proto=rdma needs the rdma transport (nfs+rdma://, the `rdma` feature); \
                         for example nfs+rdma://filer/media/shot/shot.%07d.dpx"
                    .into(),
            });
        }
        let options = nfs_options(&context.options);
        open_nfs_location(location, url, &options, Arc::new(TcpConnector), "playsim's NFS client").await
    }
}

/// The NFS client's options among `options`, with [`CreateMissing`] (`record`'s destination)
/// applied: what an NFS transport, over TCP or another RPC transport, opens a location with.
pub fn nfs_options(options: &TransportOptions) -> NfsOptions {
    let mut nfs = options.get::<NfsOptions>();
    nfs.create_missing |= options.get::<CreateMissing>().0;
    nfs
}

/// Opens `location` (parsed as `url`) with playsim's NFS client, its NFS calls over
/// `connector`'s RPC transport: checks `options`, connects and mounts the export (so that a
/// bad URL, host, port, export or path is refused here, naming the part at fault), and returns
/// the location, whose readers are further clients over the same transport. `describe` is
/// what summaries call the client (`playsim's NFS client`). The `nfs` transport is this over
/// [`TcpConnector`]; an `nfs+rdma` transport is this over its own connector.
pub async fn open_nfs_location(
    location: &str,
    url: NfsUrl,
    options: &NfsOptions,
    connector: Arc<dyn RpcConnector>,
    describe: &'static str,
) -> Result<Arc<dyn Location>, Error> {
    options.validate()?;
    let index = NfsStorage::connect_with(&url, options, connector).await?;
    Ok(Arc::new(NfsLocation {
        path: PathBuf::from(url.path()),
        url: location.to_owned(),
        index: Arc::new(index),
        describe,
    }))
}

/// A path on an NFS server, and the client that found it.
#[derive(Debug)]
struct NfsLocation {
    path: PathBuf,
    /// The URL as given: reports name the source by it, not by its path on the server.
    url: String,
    index: Arc<NfsStorage>,
    /// What summaries call the client.
    describe: &'static str,
}

#[async_trait::async_trait]
impl Location for NfsLocation {
    fn path(&self) -> &Path {
        &self.path
    }

    fn report_name(&self) -> Option<String> {
        Some(self.url.clone())
    }

    fn index_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        Ok(Arc::clone(&self.index) as Arc<dyn Storage>)
    }

    /// A new client with its own connections, and the index's handle cache, so that no
    /// reader pays LOOKUPs.
    async fn reader_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        Ok(Arc::new(self.index.another_client().await?))
    }

    fn drop_cache(&self, _paths: &[PathBuf]) -> ColdOutcome {
        ColdOutcome {
            files_dropped: 0,
            message: Some(
                "nfs: playsim's own client caches nothing, and the server's cache is the server's".into(),
            ),
        }
    }

    /// playsim's NFS client on connections of its own (CREATE, WRITE, COMMIT, RENAME);
    /// `direct` has no meaning over NFS (each file is committed at close, as the kernel's
    /// client does).
    async fn writer_storage(&self, _direct: bool) -> Option<Result<Arc<dyn WriteStorage>, Error>> {
        let writer = async {
            let client = self.index.another_client().await?;
            NfsWriter::new(client).await.map_err(|e| Error::Location(e.to_string()))
        };
        Some(writer.await.map(|w| Arc::new(w) as Arc<dyn WriteStorage>))
    }

    fn describe(&self, _reader: &dyn Storage) -> String {
        self.describe.into()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use playsim_core::{Clock, SleepFuture};

    use super::*;

    /// A clock the refusal never reads.
    struct StoppedClock;

    impl Clock for StoppedClock {
        fn now(&self) -> Duration {
            Duration::ZERO
        }

        fn sleep_until(&self, _deadline: Duration) -> SleepFuture {
            Box::pin(std::future::ready(()))
        }
    }

    #[tokio::test]
    async fn nfs_with_proto_rdma_is_refused_naming_the_rdma_transport() {
        let context = OpenContext { options: TransportOptions::new(), clock: Arc::new(StoppedClock) };
        let location = "nfs://192.0.2.1/media/shot.%07d.dpx?proto=rdma";
        let Err(err) = NfsTransport.open(location, &context).await else { panic!("opened") };
        assert_eq!(
            err.to_string(),
            "nfs://192.0.2.1/media/shot.%07d.dpx?proto=rdma: option: nfs://...?proto=rdma needs the rdma \
             transport (nfs+rdma://, the `rdma` feature); for example nfs+rdma://filer/media/shot/shot.%07d.dpx"
        );
    }
}
