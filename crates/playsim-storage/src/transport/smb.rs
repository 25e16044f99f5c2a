//! The `smb` transport: `smb://` URLs, read and written by the `smb2` crate's SMB2/3 client
//! (see [`crate::smb`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::Storage;

use super::{
    CreateMissing, KnobGroup, Location, OpenContext, Transport, TransportOptions, OWN_CLIENT_NO_CACHE,
};
use crate::smb::{SmbOptions, SmbStorage, SmbUrl, SmbWriter, SMB_KNOBS, SMB_URL_EXAMPLE};
use crate::write::WriteStorage;
use crate::{ColdOutcome, Error};

/// `smb://[user@]host[:port]/share/path[?vers=&seal=]`; options: [`SmbOptions`] (the
/// credentials file among them).
#[derive(Clone, Copy, Debug, Default)]
pub struct SmbTransport;

#[async_trait::async_trait]
impl Transport for SmbTransport {
    fn name(&self) -> &'static str {
        "smb"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["smb"]
    }

    fn example(&self) -> &'static str {
        SMB_URL_EXAMPLE
    }

    fn knobs(&self) -> Option<&'static KnobGroup> {
        Some(&SMB_KNOBS)
    }

    fn cache_note(&self) -> Option<&'static str> {
        Some(OWN_CLIENT_NO_CACHE)
    }

    /// Where the credentials come from (a file's path, not its contents), and the timeout.
    fn describe_options(&self, options: &TransportOptions) -> String {
        let smb = options.get::<SmbOptions>();
        let credentials = match &smb.credentials_file {
            Some(file) => format!("credentials from {}", file.display()),
            None => "credentials from the environment".to_owned(),
        };
        format!("{credentials}, timeout {:?}", smb.timeout)
    }

    /// A server's SMB2/3 message as the `smb2` crate parses it, through the entry points it
    /// exposes for fuzzing (the `fuzzing` feature; without it, nothing). The first byte picks
    /// the parser, the rest is the message: the whole receive path (compound split, then each
    /// sub-message's header), one message's header and body by its command, the encryption and
    /// compression transform headers, and the reply bodies with offsets and lengths of their
    /// own (NEGOTIATE, CREATE with its contexts, QUERY_INFO, a directory listing, an error's
    /// context chain, a DFS referral).
    fn fuzz_reply(&self, bytes: &[u8]) {
        #[cfg(feature = "fuzzing")]
        {
            let Some((&selector, message)) = bytes.split_first() else { return };
            let parsers: [fn(&[u8]); 10] = [
                smb2::fuzzing::fuzz_frame_parse,
                smb2::fuzzing::fuzz_sub_frame_parse,
                smb2::fuzzing::fuzz_transform_header_parse,
                smb2::fuzzing::fuzz_compression_transform_header_parse,
                smb2::fuzzing::fuzz_negotiate_response_parse,
                smb2::fuzzing::fuzz_create_response_parse,
                smb2::fuzzing::fuzz_query_info_response_parse,
                smb2::fuzzing::fuzz_directory_entries_parse,
                smb2::fuzzing::fuzz_error_context_walk,
                smb2::fuzzing::fuzz_dfs_referral_response_parse,
            ];
            parsers[usize::from(selector) % parsers.len()](message);
        }
        #[cfg(not(feature = "fuzzing"))]
        let _ = bytes;
    }

    /// Connects, logs in and connects to the share, so that a bad URL, host, port, share, path
    /// or password is refused here, naming the part at fault.
    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        let url = SmbUrl::parse(location)?;
        let mut options = context.options.get::<SmbOptions>();
        options.create_missing |= context.options.get::<CreateMissing>().0;
        let index = SmbStorage::connect(&url, &options).await?;
        Ok(Arc::new(SmbLocation {
            path: PathBuf::from(url.path()),
            url: location.to_owned(),
            index: Arc::new(index),
        }))
    }
}

/// A path on an SMB share, and the client that found it.
#[derive(Debug)]
struct SmbLocation {
    /// The path inside the share, from its root.
    path: PathBuf,
    /// The URL as given (it holds no password: one is refused): reports name the source by it.
    url: String,
    index: Arc<SmbStorage>,
}

#[async_trait::async_trait]
impl Location for SmbLocation {
    fn path(&self) -> &Path {
        &self.path
    }

    fn report_name(&self) -> Option<String> {
        Some(self.url.clone())
    }

    fn index_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        Ok(Arc::clone(&self.index) as Arc<dyn Storage>)
    }

    /// A new client with its own connection and session.
    async fn reader_storage(&self) -> Result<Arc<dyn Storage>, Error> {
        Ok(Arc::new(self.index.another_client().await?))
    }

    fn drop_cache(&self, _paths: &[PathBuf]) -> ColdOutcome {
        ColdOutcome {
            files_dropped: 0,
            message: Some(
                "smb: playsim's client caches nothing, and the server's cache is the server's".into(),
            ),
        }
    }

    /// playsim's SMB client on a connection and session of its own, with the URL's `sign=`
    /// and `seal=` (CREATE, WRITE, FLUSH, SET_INFO rename); `direct` has no meaning over SMB.
    async fn writer_storage(&self, _direct: bool) -> Option<Result<Arc<dyn WriteStorage>, Error>> {
        let client = self.index.another_client().await;
        Some(client.map(|client| Arc::new(SmbWriter::new(client)) as Arc<dyn WriteStorage>))
    }

    fn describe(&self, _reader: &dyn Storage) -> String {
        "playsim's SMB client (the smb2 crate)".into()
    }
}
