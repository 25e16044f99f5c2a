//! [`NfsStorage`]: files on an NFSv3 server, read with playsim's own client (the `nfs`
//! feature), over TCP or another RPC transport ([`RpcConnector`]).

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use playsim_core::{
    DirEntry, EntryKind, IoBuf, Storage, StorageError, StorageErrorKind, StorageFile, StorageInfo,
    StorageStats,
};

use super::channel::{BufferIdentity, Credential, RpcConnector};
use super::client::{self, mount_status_name, MountService, NfsFailure, NfsPool, Node, PoolConfig};
use super::cpu::CpuMeter;
use super::rpc::TcpConnector;
use super::url::{self, NfsUrl, UrlPart};
use super::{NfsOptions, Resolver};

/// Files on an NFSv3 server, read with playsim's own client.
pub struct NfsStorage {
    inner: Arc<Inner>,
}

struct Inner {
    url: NfsUrl,
    export: String,
    root: Arc<[u8]>,
    pool: NfsPool,
    /// The RPC transport of the NFS calls; a second client uses the same.
    connector: Arc<dyn RpcConnector>,
    config: PoolConfig,
    rsize: usize,
    server_rtmax: u32,
    options: NfsOptions,
    nfs_addr: SocketAddr,
    mount_addr: SocketAddr,
    credential: Credential,
    /// Handles and attributes by server path.
    nodes: Mutex<HashMap<String, Node>>,
    n_reads: AtomicU64,
    bytes: AtomicU64,
    cpu_ns: Arc<AtomicU64>,
    n_lookups: AtomicU64,
}

impl fmt::Debug for NfsStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NfsStorage")
            .field("url", &self.inner.url.as_str())
            .field("export", &self.inner.export)
            .finish_non_exhaustive()
    }
}

impl NfsStorage {
    /// Connects to the server `url` names and mounts the export holding its path, over TCP.
    /// Checks that the path (or, for a pattern, its directory) exists. Each failure names the
    /// part of the URL at fault. Must run inside a tokio runtime.
    pub async fn connect(url: &NfsUrl, options: &NfsOptions) -> Result<NfsStorage, crate::Error> {
        NfsStorage::connect_with(url, options, Arc::new(TcpConnector)).await
    }

    /// [`connect`](Self::connect), with the NFS calls over `connector`'s transport (MOUNT and
    /// the portmapper stay on TCP, as the kernel client's do). The NFS port is the URL's
    /// (`host:port`, `?nfsport=`), else the transport's default, else the portmapper's.
    pub async fn connect_with(
        url: &NfsUrl,
        options: &NfsOptions,
        connector: Arc<dyn RpcConnector>,
    ) -> Result<NfsStorage, crate::Error> {
        options.validate()?;
        let fail =
            |part: UrlPart, reason: String| crate::Error::Url { url: url.as_str().to_owned(), part, reason };
        let ip = resolve(url.host(), options.resolver.clone()).await.map_err(|r| fail(UrlPart::Host, r))?;
        let credential = Credential {
            uid: url.uid().unwrap_or_else(|| rustix::process::geteuid().as_raw()),
            gid: url.gid().unwrap_or_else(|| rustix::process::getegid().as_raw()),
            machine_name: rustix::system::uname().nodename().to_string_lossy().into_owned(),
        };
        let timeout = options.timeout;
        let port_of = |given: Option<u16>, program: u32| {
            let credential = credential.clone();
            async move {
                match given {
                    Some(port) => Ok(port),
                    None => client::portmap_port(ip, program, 3, &credential, timeout)
                        .await
                        .map_err(|r| format!("{r}; give the ports with ?mountport= and ?nfsport=")),
                }
            }
        };
        let mount_port = port_of(url.mount_port(), nfs3_types::mount::PROGRAM)
            .await
            .map_err(|r| fail(UrlPart::Port, r))?;
        let nfs_port =
            port_of(url.nfs_port().or_else(|| connector.default_nfs_port()), nfs3_types::nfs3::PROGRAM)
                .await
                .map_err(|r| fail(UrlPart::Port, r))?;
        let mount_addr = SocketAddr::new(ip, mount_port);
        let nfs_addr = SocketAddr::new(ip, nfs_port);

        let mount = tokio::time::timeout(timeout, MountService::connect(mount_addr, &credential))
            .await
            .map_err(|_| format!("no answer from the mount service at {mount_addr}"))
            .and_then(|r| r.map_err(|e| connect_failure(mount_addr, "mount service", &e)))
            .map_err(|r| fail(UrlPart::Port, r))?;
        let export = match url.export() {
            Some(export) => export.to_owned(),
            None => {
                let exports = tokio::time::timeout(timeout, mount.exports())
                    .await
                    .unwrap_or_else(|_| Err(format!("the mount service at {mount_addr} did not answer")))
                    .map_err(|r| fail(UrlPart::Export, r))?;
                choose_export(&exports, url.path()).map_err(|r| fail(UrlPart::Export, r))?
            }
        };
        let mounted = tokio::time::timeout(timeout, mount.mount(&export))
            .await
            .unwrap_or_else(|_| Err(format!("the mount service at {mount_addr} did not answer")));
        let root = match mounted.map_err(|r| fail(UrlPart::Export, r))? {
            Ok(root) => root,
            Err(status @ (1 | 13)) => {
                return Err(fail(
                    UrlPart::Credentials,
                    format!(
                        "the server refused to mount {export} for uid {} gid {}: {}",
                        credential.uid,
                        credential.gid,
                        mount_status_name(status)
                    ),
                ))
            }
            Err(status) => {
                return Err(fail(
                    UrlPart::Export,
                    format!("cannot mount {export}: {}", mount_status_name(status)),
                ))
            }
        };
        drop(mount);

        let config = PoolConfig {
            nconnect: options.nconnect as usize,
            in_flight: options.in_flight as usize,
            timeout,
            credential: credential.clone(),
        };
        let pool = NfsPool::connect(nfs_addr, config.clone(), Arc::clone(&connector))
            .await
            .map_err(|e| fail(UrlPart::Port, connect_failure(nfs_addr, "nfs service", &e)))?;
        let describe_call = |e: NfsFailure| format!("the nfs service at {nfs_addr} failed: {e}");
        let (rtmax, _rtpref) =
            pool.read_sizes(&root).await.map_err(|e| fail(UrlPart::Port, describe_call(e)))?;
        let rsize = if rtmax > 0 { options.rsize.min(rtmax as usize) } else { options.rsize };
        let storage = NfsStorage {
            inner: Arc::new(Inner {
                url: url.clone(),
                export: export.clone(),
                root: Arc::from(root),
                pool,
                connector,
                config,
                rsize,
                server_rtmax: rtmax,
                options: options.clone(),
                nfs_addr,
                mount_addr,
                credential,
                nodes: Mutex::new(HashMap::new()),
                n_reads: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                cpu_ns: Arc::new(AtomicU64::new(0)),
                n_lookups: AtomicU64::new(0),
            }),
        };
        storage.check_path().await.map_err(|r| fail(UrlPart::Path, r))?;
        Ok(storage)
    }

    /// A second client of the same server and export, as another workstation would be: its
    /// own connections (through the same transport) and counters, and a copy of this one's
    /// handle cache (so it needs no LOOKUPs for files this one has listed). Each stream of a
    /// run reads through its own.
    pub async fn another_client(&self) -> Result<NfsStorage, crate::Error> {
        let inner = &self.inner;
        let config = inner.config.clone();
        let connector = inner.connector.fresh();
        let pool =
            NfsPool::connect(inner.nfs_addr, config.clone(), Arc::clone(&connector)).await.map_err(|e| {
                crate::Error::Url {
                    url: inner.url.as_str().to_owned(),
                    part: UrlPart::Port,
                    reason: connect_failure(inner.nfs_addr, "nfs service", &e),
                }
            })?;
        let nodes = lock(&inner.nodes).clone();
        Ok(NfsStorage {
            inner: Arc::new(Inner {
                url: inner.url.clone(),
                export: inner.export.clone(),
                root: Arc::clone(&inner.root),
                pool,
                connector,
                config,
                rsize: inner.rsize,
                server_rtmax: inner.server_rtmax,
                options: inner.options.clone(),
                nfs_addr: inner.nfs_addr,
                mount_addr: inner.mount_addr,
                credential: inner.credential.clone(),
                nodes: Mutex::new(nodes),
                n_reads: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                cpu_ns: Arc::new(AtomicU64::new(0)),
                n_lookups: AtomicU64::new(0),
            }),
        })
    }

    /// The URL this storage was connected with.
    pub fn url(&self) -> &NfsUrl {
        &self.inner.url
    }

    /// The export mounted.
    pub fn export(&self) -> &str {
        &self.inner.export
    }

    /// The RPC transport's `proto`, as a kernel mount names it: `tcp`, or `rdma`.
    pub fn proto(&self) -> &'static str {
        self.inner.connector.proto()
    }

    /// The read size in use: the one asked for, capped by the server's rtmax.
    pub fn rsize(&self) -> usize {
        self.inner.rsize
    }

    /// Connections replaced after they broke, so far.
    pub fn reconnects(&self) -> u64 {
        self.inner.pool.reconnects()
    }

    /// The longest time one call waited for a reconnect to answer it, so far
    /// (the `reconnect_wait_s` report option).
    pub fn longest_reconnect_wait(&self) -> std::time::Duration {
        self.inner.pool.longest_reconnect_wait()
    }

    /// LOOKUPs sent so far (discovery fills the handle cache, so playback needs none).
    pub fn n_lookups(&self) -> u64 {
        self.inner.n_lookups.load(Ordering::Relaxed)
    }

    /// Another handle on the same client: its connections, export and handle cache.
    pub(super) fn clone_handle(&self) -> NfsStorage {
        NfsStorage { inner: Arc::clone(&self.inner) }
    }

    /// The export's root file handle.
    pub(super) fn root_handle(&self) -> Arc<[u8]> {
        Arc::clone(&self.inner.root)
    }

    /// `future` with the thread CPU time of its polls counted as this client's, as its reads'
    /// is: the write side's calls go through it.
    pub(super) fn metered<F: std::future::Future>(&self, future: F) -> CpuMeter<F> {
        CpuMeter::new(future, Arc::clone(&self.inner.cpu_ns))
    }

    /// The client's CPU time so far, in nanoseconds: the polls of its calls and the transport's
    /// work outside them.
    pub(super) fn cpu_ns(&self) -> u64 {
        self.inner.cpu_ns.load(Ordering::Relaxed) + self.inner.connector.background_cpu_ns()
    }

    /// The connections.
    pub(super) fn pool(&self) -> &NfsPool {
        &self.inner.pool
    }

    /// The handle and attributes of server path `path` (cached, or by LOOKUPs).
    pub(super) async fn node_of(&self, path: &str) -> Result<Node, StorageError> {
        self.inner.node(path).await
    }

    /// Drops `path` from the handle cache, after a rename or remove changed what it names.
    pub(super) fn forget(&self, path: &Path) {
        if let Some(text) = path.to_str() {
            lock(&self.inner.nodes).remove(text.trim_end_matches('/'));
        }
    }

    /// The write-side error of a failed call on `path`, classed and worded as a read's is.
    pub(super) fn write_error(
        &self,
        op: crate::write::WriteOp,
        path: &Path,
        failure: NfsFailure,
    ) -> crate::write::WriteError {
        let shown = path.to_string_lossy();
        let e = self.inner.failure(op.verb(), &shown, failure);
        // The read path's message says "cannot {what} {path}: why"; keep the why.
        let prefix = format!("cannot {} {}: ", op.verb(), self.inner.url.display_path(&shown));
        let reason = e.message.strip_prefix(&prefix).unwrap_or(&e.message).to_owned();
        let named = std::path::PathBuf::from(self.inner.url.display_path(&shown));
        crate::write::WriteError::new(e.kind, op, &named, reason)
    }

    /// The URL's path exists; for a pattern (`shot.%07d.dpx`), its directory does.
    async fn check_path(&self) -> Result<(), String> {
        let path = self.inner.url.path().trim_end_matches('/');
        let path = if path.is_empty() { "/" } else { path };
        match self.inner.node(path).await {
            Ok(_) => Ok(()),
            Err(_) if self.inner.options.create_missing && url::is_path_prefix(&self.inner.export, path) => {
                Ok(())
            }
            Err(e) if e.kind == StorageErrorKind::NotFound => {
                let parent = path.rsplit_once('/').map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
                if parent != path && self.inner.node(parent).await.is_ok() && !is_missing_plain_file(path) {
                    return Ok(());
                }
                Err(format!("{path} is not in export {}: {}", self.inner.export, e.message))
            }
            Err(e) => Err(e.message),
        }
    }
}

/// True when the last segment of `path` names one file (no sequence token), so its absence
/// is an error now rather than a pattern to look for.
fn is_missing_plain_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    !(name.contains('%') || name.contains('#') || name.contains('@'))
}

fn connect_failure(addr: SocketAddr, service: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!("{addr} refused the connection to the {service}"),
        _ => format!("cannot connect to the {service} at {addr}: {e}"),
    }
}

/// The longest exported directory that holds `path`.
fn choose_export(exports: &[String], path: &str) -> Result<String, String> {
    if exports.is_empty() {
        return Err("the server lists no exports: give the export with ?export=/path".into());
    }
    exports
        .iter()
        .filter(|e| url::is_path_prefix(e, path))
        .max_by_key(|e| e.trim_end_matches('/').len())
        .map(|e| {
            let trimmed = e.trim_end_matches('/');
            if trimmed.is_empty() { "/" } else { trimmed }.to_owned()
        })
        .ok_or_else(|| format!("no export holds {path} (the server exports {})", exports.join(", ")))
}

async fn resolve(host: &str, resolver: Option<Resolver>) -> Result<IpAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    let name = host.to_owned();
    let addresses = tokio::task::spawn_blocking(move || match resolver {
        Some(resolve) => resolve(&name),
        None => {
            use std::net::ToSocketAddrs;
            (name.as_str(), 0).to_socket_addrs().map(|a| a.map(|s| s.ip()).collect())
        }
    })
    .await
    .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
    .map_err(|e| format!("host `{host}` not found: {e}"))?;
    // Prefer IPv4, as servers' exports usually name v4 clients.
    addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addresses.first())
        .copied()
        .ok_or_else(|| format!("host `{host}` not found: it has no address"))
}

impl Inner {
    fn error(&self, kind: StorageErrorKind, what: &str, path: &str, why: &str) -> StorageError {
        StorageError::new(kind, format!("cannot {what} {}: {why}", self.url.display_path(path)))
    }

    /// The error of a failed call about `path`, naming the server (an unavailable or fatal
    /// failure's message names it already).
    fn failure(&self, what: &str, path: &str, failure: NfsFailure) -> StorageError {
        let kind = match failure {
            NfsFailure::Unavailable(_) | NfsFailure::Fatal(_) => StorageErrorKind::Unavailable,
            NfsFailure::Status(2) => StorageErrorKind::NotFound,
            NfsFailure::Status(21) => StorageErrorKind::NotAFile,
            _ => StorageErrorKind::Io,
        };
        let why = match &failure {
            NfsFailure::Unavailable(m) | NfsFailure::Fatal(m) => m.clone(),
            NfsFailure::Status(_) | NfsFailure::Protocol(_) => {
                format!("nfs server {}: {failure}", self.nfs_addr)
            }
        };
        self.error(kind, what, path, &why)
    }

    /// The handle and attributes of server path `path`, from the cache or by LOOKUPs from the
    /// export's root.
    async fn node(&self, path: &str) -> Result<Node, StorageError> {
        if let Some(node) = self.cached(path) {
            return Ok(node);
        }
        if !url::is_path_prefix(&self.export, path) {
            return Err(self.error(
                StorageErrorKind::NotFound,
                "open",
                path,
                &format!("it is outside the export {}", self.export),
            ));
        }
        let relative = path[self.export.len().min(path.len())..].trim_matches('/');
        let mut node = Node { handle: Arc::clone(&self.root), is_dir: true, size: 0 };
        let mut walked = self.export.trim_end_matches('/').to_owned();
        for component in relative.split('/').filter(|c| !c.is_empty() && *c != ".") {
            walked.push('/');
            walked.push_str(component);
            if let Some(cached) = self.cached(&walked) {
                node = cached;
                continue;
            }
            if !node.is_dir {
                return Err(self.error(
                    StorageErrorKind::NotFound,
                    "open",
                    path,
                    "a component is not a directory",
                ));
            }
            self.n_lookups.fetch_add(1, Ordering::Relaxed);
            node =
                self.pool.lookup(&node.handle, component).await.map_err(|e| self.failure("open", path, e))?;
            self.remember(&walked, &node);
        }
        Ok(node)
    }

    fn cached(&self, path: &str) -> Option<Node> {
        lock(&self.nodes).get(path.trim_end_matches('/')).cloned()
    }

    fn remember(&self, path: &str, node: &Node) {
        lock(&self.nodes).insert(path.trim_end_matches('/').to_owned(), node.clone());
    }

    /// Reads `out.len()` bytes at `offset` (fewer at the end of the file) with READs of
    /// `rsize`, all in flight together; `out` lies in the frame buffer `buffer`. Returns the
    /// bytes read.
    async fn read_into(
        &self,
        path: &str,
        handle: &[u8],
        offset: u64,
        out: &mut [u8],
        buffer: BufferIdentity,
    ) -> Result<usize, StorageError> {
        let rsize = self.rsize;
        let chunks = out.chunks_mut(rsize).enumerate().map(|(i, chunk)| {
            let chunk_offset = offset + (i * rsize) as u64;
            self.read_chunk(path, handle, chunk_offset, chunk, buffer)
        });
        let results = futures_util::future::join_all(chunks).await;
        let mut total = 0;
        for result in results {
            let n = result?;
            total += n;
            if n < rsize {
                // The file ended inside this chunk; later chunks read nothing.
                break;
            }
        }
        Ok(total)
    }

    /// One chunk: a READ, and more READs if the server returns less than asked before the end.
    async fn read_chunk(
        &self,
        path: &str,
        handle: &[u8],
        offset: u64,
        out: &mut [u8],
        buffer: BufferIdentity,
    ) -> Result<usize, StorageError> {
        let mut done = 0;
        while done < out.len() {
            let (n, eof) =
                self.pool.read(handle, offset + done as u64, &mut out[done..], buffer).await.map_err(
                    |e| self.failure(&format!("read {} bytes at offset {offset} of", out.len()), path, e),
                )?;
            self.n_reads.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            done += n;
            if eof || n == 0 {
                break;
            }
        }
        Ok(done)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait::async_trait]
impl Storage for NfsStorage {
    fn info(&self) -> StorageInfo {
        let inner = &self.inner;
        let options = [
            ("server", inner.nfs_addr.to_string()),
            ("mount_service", inner.mount_addr.to_string()),
            ("export", inner.export.clone()),
            ("vers", "3".to_owned()),
            ("proto", inner.connector.proto().to_owned()),
            ("nconnect", inner.options.nconnect.to_string()),
            ("rsize", inner.rsize.to_string()),
            ("server_rtmax", inner.server_rtmax.to_string()),
            ("in_flight_per_connection", inner.options.in_flight.to_string()),
            ("timeout_s", inner.options.timeout.as_secs_f64().to_string()),
            ("uid", inner.credential.uid.to_string()),
            ("gid", inner.credential.gid.to_string()),
            ("reconnects", inner.pool.reconnects().to_string()),
            // The longest outage a call waited through before a reconnect answered it.
            ("reconnect_wait_s", format!("{:.3}", inner.pool.longest_reconnect_wait().as_secs_f64())),
            ("lookups", inner.n_lookups.load(Ordering::Relaxed).to_string()),
        ];
        let mut options: Vec<(String, String)> =
            options.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        options.extend(inner.connector.report_options());
        StorageInfo {
            transport: inner.connector.transport_name().into(),
            block_size: inner.rsize,
            direct: false,
            options,
            warnings: inner.connector.warnings(),
            ..StorageInfo::default()
        }
    }

    async fn open(&self, path: &Path) -> Result<Box<dyn StorageFile>, StorageError> {
        let path = path_str(path)?;
        let node = CpuMeter::new(self.inner.node(&path), Arc::clone(&self.inner.cpu_ns)).await?;
        if node.is_dir {
            return Err(self.inner.error(StorageErrorKind::NotAFile, "open", &path, "it is a directory"));
        }
        Ok(Box::new(NfsFile { inner: Arc::clone(&self.inner), path, node }))
    }

    fn stats(&self) -> StorageStats {
        StorageStats {
            n_reads: self.inner.n_reads.load(Ordering::Relaxed),
            bytes: self.inner.bytes.load(Ordering::Relaxed),
            cpu_ns: self.cpu_ns(),
        }
    }

    async fn kind(&self, path: &Path) -> Result<Option<EntryKind>, StorageError> {
        let path = path_str(path)?;
        match self.inner.node(&path).await {
            Ok(node) => Ok(Some(if node.is_dir { EntryKind::Dir } else { EntryKind::File })),
            Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn list_dir(&self, dir: &Path) -> Result<Vec<DirEntry>, StorageError> {
        let dir = path_str(dir)?;
        let inner = &self.inner;
        let node = inner.node(&dir).await?;
        if !node.is_dir {
            return Err(inner.error(StorageErrorKind::NotAFile, "list", &dir, "it is not a directory"));
        }
        let listed =
            inner.pool.read_dir_plus(&node.handle).await.map_err(|e| inner.failure("list", &dir, e))?;
        let base = dir.trim_end_matches('/');
        let mut entries = Vec::with_capacity(listed.len());
        for entry in listed {
            let path = format!("{base}/{}", entry.name);
            let node = match entry.node {
                Some(node) => node,
                // Servers may leave out a handle; look that entry up by itself.
                None => match inner.node(&path).await {
                    Ok(node) => node,
                    Err(e) if e.kind == StorageErrorKind::NotFound => continue,
                    // Listed, but its lookup failed: keep it uncached, so that opening it
                    // fails with the error (naming the server and the file) rather than the
                    // file seeming not to exist.
                    Err(_) => {
                        let (is_dir, size) = entry.attributes.unwrap_or((false, 0));
                        let kind = if is_dir { EntryKind::Dir } else { EntryKind::File };
                        entries.push(DirEntry { name: entry.name, kind, size });
                        continue;
                    }
                },
            };
            inner.remember(&path, &node);
            let kind = if node.is_dir { EntryKind::Dir } else { EntryKind::File };
            entries.push(DirEntry { name: entry.name, kind, size: node.size });
        }
        Ok(entries)
    }
}

fn path_str(path: &Path) -> Result<String, StorageError> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        StorageError::new(StorageErrorKind::Invalid, format!("cannot use {}: not UTF-8", path.display()))
    })
}

/// An open file on the server: its handle and the size it had when opened.
struct NfsFile {
    inner: Arc<Inner>,
    path: String,
    node: Node,
}

#[async_trait::async_trait]
impl StorageFile for NfsFile {
    fn size(&self) -> u64 {
        self.node.size
    }

    async fn read_at(&self, offset: u64, len: usize, buf: &mut IoBuf) -> Result<usize, StorageError> {
        buf.prepare(len);
        // A transport that registers memory (RDMA) knows the buffer by its allocation.
        let buffer = BufferIdentity { id: buf.id(), base: buf[..].as_ptr() as usize, len: buf.len() };
        let read = self.inner.read_into(&self.path, &self.node.handle, offset, &mut buf[..], buffer);
        let n = CpuMeter::new(read, Arc::clone(&self.inner.cpu_ns)).await?;
        // The server ended the file before the size it gave: the file changed, or the server
        // contradicts itself. Either way these bytes are not the file's, and saying so here
        // names the server, which a short read would not.
        if n < len && offset.saturating_add(len as u64) <= self.node.size {
            let why = format!(
                "nfs server {}: the file ends after {} bytes, though the server gave its size as {} \
                 (did it change?)",
                self.inner.nfs_addr,
                offset + n as u64,
                self.node.size
            );
            let what = format!("read {len} bytes at offset {offset} of");
            return Err(self.inner.error(StorageErrorKind::Io, &what, &self.path, &why));
        }
        buf.truncate(n);
        Ok(n)
    }

    async fn close(self: Box<Self>) -> Result<(), StorageError> {
        // NFSv3 has no open state: nothing to tell the server.
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_export_holding_the_path_wins() {
        let exports = vec!["/".to_owned(), "/media".to_owned(), "/media/show".to_owned(), "/med".to_owned()];
        assert_eq!(choose_export(&exports, "/media/show/a.dpx").unwrap(), "/media/show");
        assert_eq!(choose_export(&exports, "/media/other/a.dpx").unwrap(), "/media");
        assert_eq!(
            choose_export(&exports[2..], "/tmp/a").unwrap_err(),
            "no export holds /tmp/a (the server exports /media/show, /med)"
        );
        assert!(choose_export(&[], "/a").unwrap_err().contains("?export="));
    }

    #[tokio::test]
    async fn an_unknown_host_fails_through_the_injected_resolver() {
        let resolver: Resolver =
            Arc::new(|_| Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such host (injected)")));
        let url = NfsUrl::parse("nfs://no-such-filer.invalid/media/shot.%07d.dpx").unwrap();
        let options = NfsOptions { resolver: Some(resolver), ..NfsOptions::default() };
        let err = NfsStorage::connect(&url, &options).await.unwrap_err();
        let crate::Error::Url { part, .. } = &err else { panic!("{err}") };
        assert_eq!(*part, UrlPart::Host);
        assert_eq!(
            err.to_string(),
            "nfs://no-such-filer.invalid/media/shot.%07d.dpx: host: host `no-such-filer.invalid` not found: no such host (injected)"
        );
    }
}
