//! Where a source lives: the transports this build has, one registration line each, and a
//! location opened through them as a source.

use std::path::Path;
use std::sync::Arc;

use playsim_core::{Clock, Decoder, FrameExtent, FrameRate, Source, SourceInfo};
use playsim_media::DecodeOptions;
#[cfg(feature = "nfs")]
use playsim_storage::transport::NfsTransport;
use playsim_storage::transport::{LocalTransport, Location, OpenContext, TransportOptions, Transports};

use crate::Error;

/// Adds the transports of this build to `registry`: plain paths through the kernel,
/// `nfs://` through playsim's NFS client (the `nfs` feature), `nfs+rdma://` (and
/// `nfs://...?proto=rdma`) through the same client over RPC-over-RDMA (the `rdma` feature),
/// `smb://` through the smb2 crate's SMB2/3 client (the `smb` feature), `sim://` over a
/// simulated link.
/// A transport behind a cargo feature the build lacks is registered as disabled, so that its
/// URLs are refused naming the feature. A new transport is one line here (two with a feature).
pub fn register_enabled_transports(registry: &mut Transports) {
    registry.register(Arc::new(LocalTransport));
    #[cfg(feature = "nfs")]
    registry.register(Arc::new(NfsTransport));
    #[cfg(not(feature = "nfs"))]
    registry.register_disabled("nfs", "nfs", Some(&playsim_storage::nfs::NFS_KNOBS));
    #[cfg(feature = "rdma")]
    registry.register(Arc::new(playsim_rdma::NfsRdmaTransport));
    #[cfg(not(feature = "rdma"))]
    registry.register_disabled("nfs+rdma", "rdma", Some(&playsim_storage::nfs::NFS_KNOBS));
    #[cfg(feature = "smb")]
    registry.register(Arc::new(playsim_storage::transport::SmbTransport));
    #[cfg(not(feature = "smb"))]
    registry.register_disabled("smb", "smb", Some(&playsim_storage::smb::SMB_KNOBS));
    registry.register(Arc::new(playsim_media::SimTransport));
}

/// The transports of this build (see [`register_enabled_transports`]): the process's
/// registry, whose knobs the CLI's flags and the scenario parser read.
pub fn transports() -> &'static Transports {
    playsim_storage::transport::install(register_enabled_transports)
}

/// Opens `location` with its transport and `options`, on the run's `clock`, so that a bad
/// URL, host, port, export or path is refused here, naming the part at fault.
pub(crate) async fn open(
    location: &Path,
    options: TransportOptions,
    clock: &Arc<dyn Clock>,
) -> Result<Arc<dyn Location>, Error> {
    let context = OpenContext { options, clock: Arc::clone(clock) };
    transports().open(&location.to_string_lossy(), &context).await.map_err(Error::Storage)
}

/// The source at `location`: the one its transport makes (`sim://`), or else the one found
/// on its index storage by [`playsim_media::open_location`], named in reports by the location
/// as given when its transport says so (a URL, whose path is the server's).
pub(crate) async fn open_source(
    location: &dyn Location,
    decode: &DecodeOptions,
) -> Result<Arc<dyn Source>, Error> {
    if let Some(own) = location.own_source() {
        return own.map_err(Error::Storage);
    }
    let index = location.index_storage().map_err(Error::Storage)?;
    let source = playsim_media::open_location(location.path(), decode, index).await.map_err(Error::Source)?;
    Ok(match location.report_name() {
        Some(name) => Arc::new(NamedSource { inner: source, location: name }),
        None => source,
    })
}

/// A source named in reports by the location it was given as rather than by its path on
/// its storage.
struct NamedSource {
    inner: Arc<dyn Source>,
    location: String,
}

impl Source for NamedSource {
    fn is_keyframe(&self, idx: u64) -> bool {
        self.inner.is_keyframe(idx)
    }

    fn info(&self) -> SourceInfo {
        SourceInfo { location: self.location.clone(), ..self.inner.info() }
    }

    fn n_frames(&self) -> u64 {
        self.inner.n_frames()
    }

    fn frame_number(&self, idx: u64) -> u64 {
        self.inner.frame_number(idx)
    }

    fn extent(&self, idx: u64) -> FrameExtent {
        self.inner.extent(idx)
    }

    fn decoder(&self) -> Arc<dyn Decoder> {
        self.inner.decoder()
    }

    fn frame_rate(&self) -> Option<FrameRate> {
        self.inner.frame_rate()
    }

    fn dimensions(&self) -> Option<(u32, u32)> {
        self.inner.dimensions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_goes_to_its_transport_or_names_the_feature_it_needs() {
        let name = |location: &str| transports().find(location).map(|t| t.name());
        assert_eq!(name("/mnt/shot/frame.%07d.dpx"), Ok("local"));
        assert_eq!(name("sim://lan?frames=4"), Ok("sim"));
        #[cfg(feature = "nfs")]
        assert_eq!(name("nfs://filer/media/shot.%07d.dpx"), Ok("nfs"));
        #[cfg(feature = "rdma")]
        {
            assert_eq!(name("nfs+rdma://filer/media/shot.%07d.dpx"), Ok("nfs+rdma"));
            assert_eq!(name("nfs://filer/media/shot.%07d.dpx?proto=rdma"), Ok("nfs+rdma"));
        }
        #[cfg(not(feature = "rdma"))]
        {
            let refused = name("nfs+rdma://filer/media/shot.%07d.dpx").unwrap_err().to_string();
            assert!(refused.contains("`rdma` feature"), "{refused}");
        }
        #[cfg(not(feature = "nfs"))]
        {
            let refused = name("nfs://filer/media/shot.%07d.dpx").unwrap_err().to_string();
            assert!(refused.contains("`nfs` feature") && refused.contains("--features nfs"), "{refused}");
        }
    }
}
