//! Media for a matrix on a server (`nfs://`, `smb://`): made in a local staging directory by
//! the same writers as local media, then copied to `LOCATION/matrix-media/` through the
//! transport's writer, the storage `record` writes with. A row's copy is published last by a
//! marker file, `.ROW.complete`, so that a copy cut short is made again and never played.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use playsim_core::{Clock, StorageErrorKind};
use playsim_storage::transport::TransportOptions;
use playsim_storage::write::{Stability, WriteStorage};

use crate::Error;

/// Bytes a write carries while copying.
const CHUNK: usize = 4 << 20;

/// Where a row's staged media goes on the server.
#[derive(Clone, Debug)]
pub struct Upload {
    /// The matrix's location, as given (a URL).
    pub location: String,
    /// The media's name in `LOCATION/matrix-media/`: a sequence's directory or a clip's file.
    pub name: String,
    /// The transport's options (NFS client settings, SMB credentials), as the trials get them.
    pub transport: TransportOptions,
}

impl Upload {
    /// The marker's name, in `matrix-media/`.
    fn marker(&self) -> String {
        format!(".{}.complete", self.name)
    }

    /// Whether the row's media is on the server whole (its marker is there).
    pub async fn is_done(&self) -> Result<bool, Error> {
        let (location, dir) = self.open().await?;
        let index = location.index_storage().map_err(Error::Storage)?;
        match index.open(&dir.join(self.marker())).await {
            Ok(file) => {
                let _ = file.close().await;
                Ok(true)
            }
            Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::Engine(format!("cannot look for {}: {}", self.marker(), e.message))),
        }
    }

    /// Copies `staged` (a directory of frames or one file) to the server, then its marker;
    /// says what it does to `log`. Returns the bytes copied.
    pub async fn copy(&self, staged: &Path, log: &mut dyn FnMut(&str)) -> Result<u64, Error> {
        let (location, dir) = self.open().await?;
        let storage = match location.writer_storage(false).await {
            Some(storage) => storage.map_err(Error::Storage)?,
            None => {
                return Err(Error::Engine(format!(
                    "{} cannot be written: point every row at media there with --media ROW=URL",
                    self.location
                )))
            }
        };
        let failed = |e: playsim_storage::write::WriteError| Error::Engine(format!("copying the media: {e}"));
        storage.create_dir_all(&dir).await.map_err(failed)?;
        let target = dir.join(&self.name);
        let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
        if staged.is_dir() {
            storage.create_dir_all(&target).await.map_err(failed)?;
            let mut names: Vec<PathBuf> = std::fs::read_dir(staged)
                .map_err(|e| Error::Engine(format!("reading {}: {e}", staged.display())))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            names.sort();
            for path in names {
                let Some(name) = path.file_name() else { continue };
                files.push((target.join(name), path.clone()));
            }
        } else {
            files.push((target.clone(), staged.to_path_buf()));
        }
        let base = self.location.split('?').next().unwrap_or_default().trim_end_matches('/');
        log(&format!("copying {} file(s) to {base}/matrix-media/{}", files.len(), self.name));
        let mut copied = 0;
        let total = files.len();
        for (k, (to, from)) in files.iter().enumerate() {
            copied += copy_file(&*storage, from, to).await?;
            if (k + 1) % 50 == 0 && k + 1 < total {
                log(&format!("copied {} of {total} files", k + 1));
            }
        }
        let marker = dir.join(self.marker());
        let file = storage.create(&marker).await.map_err(failed)?;
        let note: Arc<[u8]> = format!("{copied} bytes in {total} files\n").into_bytes().into();
        file.write_at(0, note, Stability::FileSync).await.map_err(failed)?;
        file.close().await.map_err(failed)?;
        Ok(copied)
    }

    /// The matrix's location opened, and its `matrix-media` directory on the server.
    async fn open(&self) -> Result<(Arc<dyn playsim_storage::transport::Location>, PathBuf), Error> {
        let clock: Arc<dyn Clock> = playsim_engine::RunClock::default().get();
        let location =
            crate::location::open(Path::new(&self.location), self.transport.clone(), &clock).await?;
        let dir = location.path().join("matrix-media");
        Ok((location, dir))
    }
}

/// Copies the local file `from` to `to` through `storage`: written under a temporary name,
/// then renamed, as `record` publishes a frame. Returns its bytes.
async fn copy_file(storage: &dyn WriteStorage, from: &Path, to: &Path) -> Result<u64, Error> {
    use std::io::Read;
    let failed = |e: playsim_storage::write::WriteError| Error::Engine(format!("copying the media: {e}"));
    let read_failed = |e: std::io::Error| Error::Engine(format!("reading {}: {e}", from.display()));
    // Read on the caller's thread: the copy is all the matrix does meanwhile.
    let mut local = std::fs::File::open(from).map_err(read_failed)?;
    let part = to.with_file_name(format!(
        ".{}.part",
        to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let file = storage.create(&part).await.map_err(failed)?;
    let mut offset = 0u64;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let mut filled = 0;
        while filled < CHUNK {
            let n = local.read(&mut buf[filled..]).map_err(read_failed)?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 {
            break;
        }
        file.write_at(offset, Arc::from(&buf[..filled]), Stability::Unstable).await.map_err(failed)?;
        offset += filled as u64;
        if filled < CHUNK {
            break;
        }
    }
    file.sync().await.map_err(failed)?;
    file.close().await.map_err(failed)?;
    storage.rename(&part, to).await.map_err(failed)?;
    Ok(offset)
}
