//! [`SmbStorage`]: files on an SMB2/3 share, read with the `smb2` crate's client (the `smb`
//! feature).

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use playsim_core::{
    DirEntry, EntryKind, IoBuf, Storage, StorageError, StorageErrorKind, StorageFile, StorageInfo,
    StorageStats,
};
use smb2::client::connection::Connection;
use smb2::types::Dialect;
use smb2::{ClientConfig, ErrorKind, FileReader, SmbClient, Tree};

use super::runtime::ClientRuntime;
use super::url::SmbDialect;
use super::{SmbCredentials, SmbOptions, SmbUrl, SmbUrlPart};

/// Tries of a read whose connection is lost, each on a new one, before its frame is unreadable.
const READ_ATTEMPTS: usize = 3;

/// How long the TCP connect may take, within the request timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Files on an SMB2/3 share, read with the `smb2` crate's client: one TCP connection and
/// session, each frame's READs in flight together within the server's credits.
pub struct SmbStorage {
    inner: Arc<Inner>,
}

/// The client behind an [`SmbStorage`], shared by its files and by the write side
/// ([`super::SmbWriter`]).
pub(super) struct Inner {
    pub(super) url: SmbUrl,
    options: SmbOptions,
    credentials: SmbCredentials,
    /// The client, kept for its session and to reconnect: opens, lookups and listings go
    /// through the share and a clone of the connection, so that they run side by side (several
    /// CREATEs in flight).
    client: Arc<tokio::sync::Mutex<SmbClient>>,
    /// The share as connected now, and how many reconnects ago.
    session: std::sync::Mutex<Session>,
    /// Held while a reconnect is under way, so that the reads that found the connection gone
    /// together reconnect once.
    reconnecting: tokio::sync::Mutex<()>,
    reconnects: AtomicU64,
    pub(super) connection: Connection,
    pub(super) negotiated: Negotiated,
    read_size: usize,
    n_reads: AtomicU64,
    bytes: AtomicU64,
    /// Last, so that the client and its handles are dropped before their runtime stops.
    pub(super) runtime: ClientRuntime,
}

/// The share's tree, valid for the session of one generation: a reconnect makes a new session,
/// in which the old tree's and files' ids mean nothing.
#[derive(Clone)]
pub(super) struct Session {
    pub(super) tree: Arc<Tree>,
    pub(super) generation: u64,
}

/// What the server and the client settled on, for the report.
#[derive(Clone, Debug)]
pub(super) struct Negotiated {
    pub(super) dialect: String,
    pub(super) signing: Option<String>,
    pub(super) cipher: Option<String>,
    max_read_size: u32,
    pub(super) max_write_size: u32,
}

impl fmt::Debug for SmbStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbStorage")
            .field("url", &self.inner.url.as_str())
            .field("user", &self.inner.credentials.user)
            .finish_non_exhaustive()
    }
}

impl SmbStorage {
    /// Connects to the server `url` names, logs in with the credentials of `options` (a file,
    /// else the environment), checks the dialect and encryption asked for, connects to the share
    /// and checks that the URL's path (or, for a pattern, its directory) exists. Each failure
    /// names the part at fault, in one line that never holds the password. Must run inside a
    /// tokio runtime.
    pub async fn connect(url: &SmbUrl, options: &SmbOptions) -> Result<SmbStorage, crate::Error> {
        options.validate()?;
        let credentials = SmbCredentials::load(url, options)?;
        let storage = SmbStorage::connect_as(url, options, credentials).await?;
        storage.check_path().await.map_err(|(part, reason)| storage.inner.fail(part, reason))?;
        Ok(storage)
    }

    /// A second client of the same share, as another workstation would be: its own connection,
    /// session and counters. Each stream of a run reads through its own.
    pub async fn another_client(&self) -> Result<SmbStorage, crate::Error> {
        let inner = &self.inner;
        SmbStorage::connect_as(&inner.url, &inner.options, inner.credentials.clone()).await
    }

    /// The URL this storage was connected with.
    pub fn url(&self) -> &SmbUrl {
        &self.inner.url
    }

    /// The client, for the write side.
    pub(super) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    async fn connect_as(
        url: &SmbUrl,
        options: &SmbOptions,
        credentials: SmbCredentials,
    ) -> Result<SmbStorage, crate::Error> {
        // `smb2` returns each READ's data in buffers of its own, freed when the frame is
        // copied out; kept in malloc's heap, they are not faulted in again for every READ.
        playsim_core::malloc::keep_scratch_in_heap();
        let fail = |part: SmbUrlPart, reason: String| crate::Error::Url {
            url: url.as_str().to_owned(),
            part,
            reason,
        };
        let config = ClientConfig {
            addr: url.addr(),
            timeout: CONNECT_TIMEOUT.min(options.timeout),
            username: credentials.user.clone(),
            password: credentials.password.clone(),
            domain: credentials.domain.clone(),
            auto_reconnect: false,
            // Frames do not compress, and LZ4 on every reply would cost CPU for nothing.
            compression: false,
            // `sign=off` leaves a session the server does not require signed unsigned, as the
            // kernel's cifs does by default; `seal=on` encrypts it, as `mount.cifs -o seal` does.
            // Both are kept across a reconnect, since the crate sets them up in every session.
            signing: url.sign(),
            encryption: url.seal(),
            dfs_enabled: false,
            response_timeout: Some(options.timeout),
            ..ClientConfig::default()
        };
        let user = credentials.user.clone();
        let addr = url.addr();
        let runtime = ClientRuntime::start()
            .map_err(|e| fail(SmbUrlPart::Url, format!("cannot start the smb client's thread: {e}")))?;
        // Bounded twice: the crate's connect and response timeouts, and this one around all of it.
        let connecting = runtime.run(async move { SmbClient::connect(config).await });
        let mut client = match tokio::time::timeout(options.timeout + CONNECT_TIMEOUT, connecting).await {
            Err(_) => {
                return Err(fail(
                    SmbUrlPart::Port,
                    format!("no answer from {addr} within {:?}", options.timeout),
                ))
            }
            Ok(Err(panicked)) => return Err(fail(SmbUrlPart::Port, panicked)),
            Ok(Ok(Err(e))) => {
                let (part, reason) = login_failure(&e, &addr, &user);
                return Err(fail(part, reason));
            }
            Ok(Ok(Ok(client))) => client,
        };
        let params =
            client.params().ok_or_else(|| fail(SmbUrlPart::Port, format!("{addr} negotiated nothing")))?;
        let asked = url.dialect();
        if dialect_of(params.dialect) != asked {
            return Err(fail(
                SmbUrlPart::Option,
                format!(
                    "the server chose {} and not the {} asked for (vers={asked}): the smb2 crate offers \
                     every dialect and the server picks; give vers={}, or set the server's `server max \
                     protocol`",
                    params.dialect,
                    asked,
                    dialect_of(params.dialect)
                ),
            ));
        }
        if url.seal() && !client.connection().should_encrypt() {
            return Err(fail(
                SmbUrlPart::Option,
                format!(
                    "seal=on: {addr} agreed no cipher ({}, server capabilities {:?}), so this session \
                     cannot be encrypted; leave seal out, or use SMB 3.x with encryption enabled on \
                     the server (Samba: `server smb encrypt = if_required` or stronger)",
                    params.dialect, params.capabilities
                ),
            ));
        }
        let share = url.share().to_owned();
        let tree = {
            let connecting = runtime.run(async move {
                let tree = client.connect_share(&share).await;
                (client, tree)
            });
            match tokio::time::timeout(options.timeout, connecting).await {
                Ok(Err(panicked)) => return Err(fail(SmbUrlPart::Share, panicked)),
                Err(_) => {
                    let share = url.share();
                    return Err(fail(
                        SmbUrlPart::Share,
                        format!("no answer from {addr} to connect `{share}`"),
                    ));
                }
                Ok(Ok((returned, Ok(tree)))) => {
                    client = returned;
                    tree
                }
                Ok(Ok((_, Err(e)))) => {
                    let share = url.share();
                    let reason = match e.kind() {
                        ErrorKind::NotFound => format!("{addr} has no share `{share}` ({e})"),
                        ErrorKind::AccessDenied | ErrorKind::AuthRequired => {
                            format!("user `{user}` may not use share `{share}` on {addr} ({e})")
                        }
                        _ => format!("cannot connect to share `{share}` on {addr}: {e}"),
                    };
                    return Err(fail(SmbUrlPart::Share, reason));
                }
            }
        };
        let diagnostics = client.diagnostics().primary;
        let negotiated = Negotiated {
            dialect: dialect_of(params.dialect).as_str().to_owned(),
            // An encrypted message carries no signature: the cipher's tag covers it.
            signing: if client.connection().should_encrypt() {
                Some("by encryption".to_owned())
            } else {
                diagnostics.signing.algorithm.filter(|_| diagnostics.signing.active).map(|a| format!("{a:?}"))
            },
            cipher: client
                .connection()
                .should_encrypt()
                .then(|| params.cipher.map_or_else(|| "AES-128-CCM".to_owned(), |c| format!("{c:?}"))),
            max_read_size: params.max_read_size,
            max_write_size: params.max_write_size,
        };
        let read_size = options.read_size.min(params.max_read_size as usize).max(1);
        let connection = client.connection().clone();
        Ok(SmbStorage {
            inner: Arc::new(Inner {
                url: url.clone(),
                options: options.clone(),
                credentials,
                client: Arc::new(tokio::sync::Mutex::new(client)),
                session: std::sync::Mutex::new(Session { tree: Arc::new(tree), generation: 0 }),
                reconnecting: tokio::sync::Mutex::new(()),
                reconnects: AtomicU64::new(0),
                connection,
                negotiated,
                read_size,
                n_reads: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                runtime,
            }),
        })
    }

    /// The URL's path exists; for a pattern (`shot.%07d.dpx`), its directory does.
    async fn check_path(&self) -> Result<(), (SmbUrlPart, String)> {
        let path = self.inner.url.path().to_owned();
        if path == "/" {
            return Ok(());
        }
        match self.kind(Path::new(&path)).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                let (parent, name) = path.rsplit_once('/').unwrap_or(("", &path));
                let is_pattern = name.contains('%') || name.contains('#') || name.contains('@');
                let parent = if parent.is_empty() { "/" } else { parent };
                if is_pattern && matches!(self.kind(Path::new(parent)).await, Ok(Some(EntryKind::Dir))) {
                    return Ok(());
                }
                if self.inner.options.create_missing {
                    return Ok(()); // a destination the writer makes
                }
                Err((SmbUrlPart::Path, format!("{path} is not in share `{}`", self.inner.url.share())))
            }
            Err(e) => Err((SmbUrlPart::Path, e.message)),
        }
    }
}

impl Inner {
    pub(super) fn session(&self) -> Session {
        self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Reconnects after the connection of generation `seen` was lost: a new socket, session and
    /// tree, the credentials as before. A no-op when another caller has reconnected since
    /// `seen`. Bounded by the crate's reconnect policy and the request timeout.
    pub(super) async fn reconnect(&self, seen: u64) -> Result<(), StorageError> {
        let _one_at_a_time = self.reconnecting.lock().await;
        if self.session().generation != seen {
            return Ok(());
        }
        let client = Arc::clone(&self.client);
        let share = self.url.share().to_owned();
        let reconnecting = self.runtime.run(async move {
            let mut client = client.lock().await;
            client.reconnect().await?;
            client.connect_share(&share).await
        });
        let lost = |reason: String| {
            StorageError::new(
                StorageErrorKind::Unavailable,
                format!("lost the connection to {} and could not reconnect: {reason}", self.url.addr()),
            )
        };
        let tree = match tokio::time::timeout(self.options.timeout + CONNECT_TIMEOUT, reconnecting).await {
            Err(_) => return Err(lost(format!("no answer within {:?}", self.options.timeout))),
            Ok(Err(panicked)) => return Err(lost(panicked)),
            Ok(Ok(Err(e))) => return Err(lost(e.to_string())),
            Ok(Ok(Ok(tree))) => tree,
        };
        let mut session = self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *session = Session { tree: Arc::new(tree), generation: seen + 1 };
        self.reconnects.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Opens `relative` for reading in the current session.
    async fn open_reader(&self, relative: &str) -> Result<(FileReader, u64), (StorageError, bool)> {
        let Session { tree, generation } = self.session();
        let opening = {
            let connection = self.connection.clone();
            let relative = relative.to_owned();
            async move { smb2::client::stream::open_file_reader(tree, connection, &relative).await }
        };
        match self.runtime.run(opening).await {
            Err(reason) => Err((self.panicked("open", relative, reason), false)),
            Ok(Err(e)) => Err((self.error("open", relative, &e), connection_lost(&e))),
            Ok(Ok(reader)) => Ok((reader, generation)),
        }
    }

    fn fail(&self, part: SmbUrlPart, reason: String) -> crate::Error {
        crate::Error::Url { url: self.url.as_str().to_owned(), part, reason }
    }

    fn error(&self, what: &str, path: &str, e: &smb2::Error) -> StorageError {
        StorageError::new(error_kind(e), format!("cannot {what} {}: {e}", self.url.display_path(path)))
    }

    fn panicked(&self, what: &str, path: &str, reason: String) -> StorageError {
        StorageError::new(
            StorageErrorKind::Io,
            format!("cannot {what} {}: {reason}", self.url.display_path(path)),
        )
    }
}

/// How the storage classes `e`: a lost connection or a timeout is `Unavailable`.
pub(super) fn error_kind(e: &smb2::Error) -> StorageErrorKind {
    match e.kind() {
        ErrorKind::NotFound => StorageErrorKind::NotFound,
        ErrorKind::IsADirectory | ErrorKind::NotADirectory => StorageErrorKind::NotAFile,
        ErrorKind::ConnectionLost | ErrorKind::TimedOut | ErrorKind::SessionExpired => {
            StorageErrorKind::Unavailable
        }
        _ => StorageErrorKind::Io,
    }
}

/// Whether `e` says the connection (or its session) is gone, so that a reconnect may help.
pub(super) fn connection_lost(e: &smb2::Error) -> bool {
    matches!(e.kind(), ErrorKind::ConnectionLost | ErrorKind::SessionExpired)
        || matches!(e, smb2::Error::HandleInvalidated { .. })
}

/// The part at fault and why, for a failed connect and login.
fn login_failure(e: &smb2::Error, addr: &str, user: &str) -> (SmbUrlPart, String) {
    match e.kind() {
        ErrorKind::AuthRequired | ErrorKind::AccessDenied => (
            SmbUrlPart::Credentials,
            if user.is_empty() {
                format!("{addr} refused a guest login ({e}); give --smb-credentials FILE")
            } else {
                format!("{addr} refused user `{user}` with this password ({e})")
            },
        ),
        ErrorKind::TimedOut => (SmbUrlPart::Port, format!("no answer from {addr}: {e}")),
        _ => {
            let text = e.to_string();
            let reason = if text.contains("refused") || text.contains("could not connect") {
                format!("nothing accepts SMB connections at {addr} ({e}); is the host and port right?")
            } else {
                format!("cannot connect to {addr}: {e}")
            };
            (SmbUrlPart::Port, reason)
        }
    }
}

fn dialect_of(dialect: Dialect) -> SmbDialect {
    match dialect {
        Dialect::Smb2_0_2 => SmbDialect::Smb2_0_2,
        Dialect::Smb2_1 => SmbDialect::Smb2_1,
        Dialect::Smb3_0 => SmbDialect::Smb3_0,
        Dialect::Smb3_0_2 => SmbDialect::Smb3_0_2,
        Dialect::Smb3_1_1 => SmbDialect::Smb3_1_1,
    }
}

/// A path of the Storage seam (`/shot/a.dpx`) as the share knows it (`shot/a.dpx`).
pub(super) fn share_path(path: &Path) -> Result<String, StorageError> {
    let text = path.to_str().ok_or_else(|| {
        StorageError::new(StorageErrorKind::Invalid, format!("cannot use {}: not UTF-8", path.display()))
    })?;
    Ok(text.trim_matches('/').to_owned())
}

#[async_trait::async_trait]
impl Storage for SmbStorage {
    fn info(&self) -> StorageInfo {
        let inner = &self.inner;
        let negotiated = &inner.negotiated;
        let options = [
            ("server", inner.url.addr()),
            ("share", inner.url.share().to_owned()),
            ("user", inner.credentials.user.clone()),
            ("dialect", negotiated.dialect.clone()),
            ("signing", negotiated.signing.clone().unwrap_or_else(|| "off".into())),
            ("encryption", negotiated.cipher.clone().unwrap_or_else(|| "off".into())),
            // The smb2 crate opens one connection and has no multichannel.
            ("channels", "1".to_owned()),
            ("credits", inner.connection.credits().to_string()),
            ("reconnects", inner.reconnects.load(Ordering::Relaxed).to_string()),
            ("read_size", inner.read_size.to_string()),
            ("server_max_read", negotiated.max_read_size.to_string()),
            ("timeout_s", inner.options.timeout.as_secs_f64().to_string()),
            ("client", "smb2 crate".to_owned()),
        ];
        StorageInfo {
            transport: "smb".into(),
            block_size: inner.read_size,
            direct: false,
            options: options.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            ..StorageInfo::default()
        }
    }

    async fn open(&self, path: &Path) -> Result<Box<dyn StorageFile>, StorageError> {
        let relative = share_path(path)?;
        let inner = Arc::clone(&self.inner);
        let (reader, generation) = match inner.open_reader(&relative).await {
            Ok(opened) => opened,
            Err((_, true)) => {
                inner.reconnect(inner.session().generation).await?;
                inner.open_reader(&relative).await.map_err(|(e, _)| e)?
            }
            Err((e, false)) => return Err(e),
        };
        if reader.info().is_directory {
            return Err(StorageError::new(
                StorageErrorKind::NotAFile,
                format!("cannot open {}: it is a directory", inner.url.display_path(&relative)),
            ));
        }
        let reader = std::sync::Mutex::new((Arc::new(reader), generation));
        Ok(Box::new(SmbFile { inner, path: relative, reader }))
    }

    fn stats(&self) -> StorageStats {
        StorageStats {
            n_reads: self.inner.n_reads.load(Ordering::Relaxed),
            bytes: self.inner.bytes.load(Ordering::Relaxed),
            cpu_ns: self.inner.runtime.cpu_ns(),
        }
    }

    async fn kind(&self, path: &Path) -> Result<Option<EntryKind>, StorageError> {
        let relative = share_path(path)?;
        if relative.is_empty() {
            return Ok(Some(EntryKind::Dir));
        }
        let inner = Arc::clone(&self.inner);
        let stat = {
            let (tree, mut connection) = (inner.session().tree, inner.connection.clone());
            let relative = relative.clone();
            async move { tree.stat(&mut connection, &relative).await }
        };
        match inner.runtime.run(stat).await.map_err(|reason| inner.panicked("look up", &relative, reason))? {
            Ok(info) => Ok(Some(if info.is_directory { EntryKind::Dir } else { EntryKind::File })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(inner.error("look up", &relative, &e)),
        }
    }

    async fn list_dir(&self, dir: &Path) -> Result<Vec<DirEntry>, StorageError> {
        let relative = share_path(dir)?;
        let inner = Arc::clone(&self.inner);
        let listing = {
            let (tree, mut connection) = (inner.session().tree, inner.connection.clone());
            let relative = relative.clone();
            async move { tree.list_directory(&mut connection, &relative).await }
        };
        let listed = inner
            .runtime
            .run(listing)
            .await
            .map_err(|reason| inner.panicked("list", &relative, reason))?
            .map_err(|e| inner.error("list", &relative, &e))?;
        Ok(listed
            .into_iter()
            .filter(|entry| entry.name != "." && entry.name != "..")
            .map(|entry| DirEntry {
                kind: if entry.is_directory { EntryKind::Dir } else { EntryKind::File },
                size: entry.size,
                name: entry.name,
            })
            .collect())
    }
}

/// An open file on the share: its reader (a handle the server keeps open) and the generation of
/// the session it was opened in; after a reconnect, the file is opened again in the new one.
struct SmbFile {
    inner: Arc<Inner>,
    path: String,
    reader: std::sync::Mutex<(Arc<FileReader>, u64)>,
}

impl SmbFile {
    /// Opens the file again, in the current session.
    async fn reopen(&self) -> Result<(), StorageError> {
        let (reader, generation) = self.inner.open_reader(&self.path).await.map_err(|(e, _)| e)?;
        *self.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            (Arc::new(reader), generation);
        Ok(())
    }

    fn reader(&self) -> (Arc<FileReader>, u64) {
        let reader = self.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (Arc::clone(&reader.0), reader.1)
    }

    /// `len` bytes at `offset` through `reader`; on failure, the error and whether the
    /// connection was lost.
    async fn read_with(
        &self,
        reader: &Arc<FileReader>,
        offset: u64,
        len: usize,
        buf: &mut IoBuf,
    ) -> Result<usize, (StorageError, bool)> {
        let read_size = self.inner.read_size;
        let chunks: Vec<_> = (0..len)
            .step_by(read_size)
            .map(|start| {
                let reader = Arc::clone(reader);
                let chunk_len = read_size.min(len - start) as u64;
                let chunk_offset = offset + start as u64;
                self.inner.runtime.run(async move { reader.read_at(chunk_offset, chunk_len).await })
            })
            .collect();
        let what = format!("read {len} bytes at offset {offset} of");
        let mut total = 0;
        for (i, result) in futures_util::future::join_all(chunks).await.into_iter().enumerate() {
            let data = match result {
                Err(reason) => return Err((self.inner.panicked(&what, &self.path, reason), false)),
                Ok(Err(e)) => return Err((self.inner.error(&what, &self.path, &e), connection_lost(&e))),
                Ok(Ok(data)) => data,
            };
            self.inner.n_reads.fetch_add(1, Ordering::Relaxed);
            self.inner.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
            let start = i * read_size;
            let n = data.len().min(len - start);
            buf[start..start + n].copy_from_slice(&data[..n]);
            total = start + n;
            if n < read_size.min(len - start) {
                // The file ended inside this chunk; later chunks read nothing.
                break;
            }
        }
        buf.truncate(total);
        Ok(total)
    }
}

#[async_trait::async_trait]
impl StorageFile for SmbFile {
    fn size(&self) -> u64 {
        self.reader().0.size()
    }

    /// `len` bytes at `offset` as READs of the read size, all sent at once: the crate holds each
    /// until the server's credits allow it, so as many are in flight as the server grants. When
    /// the connection is lost (a reset, a server that closed it, a reply cut), the client
    /// reconnects, opens the file again in the new session and reads once more: the frame is
    /// late, not lost, and the run goes on. A reconnect that fails is the error (the server is
    /// gone: the run ends, with its report); a read whose connection is lost on every one of
    /// [`READ_ATTEMPTS`] tries, each on a new connection, fails alone (its frame unreadable).
    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError> {
        let mut last_error = None;
        for _ in 0..READ_ATTEMPTS {
            let (reader, generation) = self.reader();
            if generation != self.inner.session().generation {
                // Opened in a session a reconnect has ended since.
                self.reopen().await?;
                continue;
            }
            buf.prepare(len);
            match self.read_with(&reader, offset, len, buf).await {
                Ok(n) => return Ok(n),
                Err((e, false)) if self.inner.session().generation == generation => return Err(e),
                Err((e, _)) => last_error = Some(e),
            }
            drop(reader);
            self.inner.reconnect(generation).await?;
            self.reopen().await?;
        }
        let e = last_error.map_or_else(String::new, |e| e.message);
        Err(StorageError::new(
            StorageErrorKind::Io,
            format!("{e}, on each of {READ_ATTEMPTS} connections in turn (the connection lost at every try)"),
        ))
    }

    async fn close(self: Box<Self>) -> Result<(), StorageError> {
        let SmbFile { inner, path, reader } = *self;
        let (reader, generation) = reader.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A reader still shared by a read in flight closes its handle when dropped; one of a
        // session a reconnect has ended has no handle left to close.
        if generation != inner.session().generation {
            return Ok(());
        }
        let Ok(reader) = Arc::try_unwrap(reader) else { return Ok(()) };
        match inner.runtime.run(reader.close()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(inner.error("close", &path, &e)),
            Err(reason) => Err(inner.panicked("close", &path, reason)),
        }
    }
}
