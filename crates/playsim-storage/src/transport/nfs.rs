//! The `nfs` transport: `nfs://` URLs, read by playsim's own NFSv3 client (see [`crate::nfs`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::Storage;

use super::{size_text, Location, OpenContext, Transport, TransportOptions};
use crate::nfs::{NfsOptions, NfsStorage, NfsUrl, URL_EXAMPLE};
use crate::{ColdOutcome, Error};

/// `nfs://host[:port]/path[?export=&mountport=&nfsport=&uid=&gid=]`; options: [`NfsOptions`].
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

    fn describe_options(&self, options: &TransportOptions) -> String {
        let nfs = options.get::<NfsOptions>();
        format!("nconnect {}, rsize {}", nfs.nconnect, size_text(nfs.rsize))
    }

    /// Connects to the server and mounts the export, so that a bad URL, host, port, export
    /// or path is refused here, naming the part at fault.
    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        let url = NfsUrl::parse(location)?;
        let options = context.options.get::<NfsOptions>();
        options.validate()?;
        let index = NfsStorage::connect(&url, &options).await?;
        Ok(Arc::new(NfsLocation {
            path: PathBuf::from(url.path()),
            url: location.to_owned(),
            index: Arc::new(index),
        }))
    }
}

/// A path on an NFS server, and the client that found it.
#[derive(Debug)]
struct NfsLocation {
    path: PathBuf,
    /// The URL as given: reports name the source by it, not by its path on the server.
    url: String,
    index: Arc<NfsStorage>,
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

    fn describe(&self, _reader: &dyn Storage) -> String {
        "playsim's NFS client".into()
    }
}
