//! Transports behind one trait and one registry: what a location (a plain path, or a URL
//! whose scheme names a transport) is opened with.
//!
//! A [`Transport`] opens a location into a [`Location`]: the path of the source on its
//! storage, the storage that finds it, a storage of its own for each reader, and its
//! answers for a cold run and for the report. [`Transports`] holds the transports a build
//! has, found by scheme; the facade fills it in one function (`register_enabled_transports`),
//! one line a transport, in the spirit of Symphonia's `register_enabled_codecs`. Adding a
//! transport is its module plus that line: nothing outside this crate matches on which
//! transport a source came through.
//!
//! Options are typed and travel in one [`TransportOptions`] map keyed by their type, so that
//! a transport reads its own (`options.get::<NfsOptions>()`) and a new transport's options
//! need no field anywhere else. Its knobs (flags and scenario keys) are a [`KnobGroup`] it
//! declares ([`Transport::knobs`]); the CLI and the scenario parser find them in the registry.
//!
//! The process's registry is made once, by [`install`] (the facade passes its
//! `register_enabled_transports`), and read by [`installed`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use playsim_core::{Clock, Source, Storage};

use crate::write::WriteStorage;
use crate::{ColdOutcome, Error};

mod local;
#[cfg(feature = "nfs")]
mod nfs;
#[cfg(feature = "smb")]
mod smb;

pub use crate::knob::{self, CreateMissing, GivenKnob, KnobGroup, TransportKnob};
pub use crate::options::TransportOptions;
pub use local::LocalTransport;
#[cfg(feature = "nfs")]
pub use nfs::{nfs_options, open_nfs_location, NfsTransport};
#[cfg(feature = "smb")]
pub use smb::SmbTransport;

/// A way to reach storage: local paths through the kernel, `nfs://` through playsim's NFS
/// client, `sim://` over a simulated link, and later `nfs+rdma://` and `smb://`.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Its name in messages and reports: `local`, `nfs`, `sim`.
    fn name(&self) -> &'static str;

    /// The URL schemes it serves, without `://` (`["nfs"]`), or none for plain paths.
    /// The registry sends a location here when it starts with one of them and `://`.
    fn schemes(&self) -> &'static [&'static str];

    /// True when this transport takes `location` although its scheme is another's: an
    /// alias such as `nfs://host/path?proto=rdma`, which the `nfs+rdma` transport serves.
    /// The registry asks every transport before it looks at schemes.
    fn claims(&self, _location: &str) -> bool {
        false
    }

    /// A valid location of this transport, for messages that refuse one.
    fn example(&self) -> &'static str;

    /// Its own knobs (flags and scenario keys), when it has any: transports that read one
    /// options type return the same group.
    fn knobs(&self) -> Option<&'static KnobGroup> {
        None
    }

    /// Its settings among `options`, in words, for a plan: `block 1M, O_DIRECT, io_uring`,
    /// `nconnect 4, rsize 1M`; empty when it has none.
    fn describe_options(&self, _options: &TransportOptions) -> String {
        String::new()
    }

    /// What a read through this transport may find cached, in words, for a summary that says
    /// whether reads were cold (the matrix's); `None` for plain paths, whose page cache the
    /// run's own settings (`--direct`, `--cold`) decide.
    fn cache_note(&self) -> Option<&'static str> {
        None
    }

    /// The location of this transport that makes the media `asked` for (the matrix's rows,
    /// each a format at a size): `location` with what the transport needs to make it. `None`
    /// when the transport finds media rather than making it (every transport that holds files),
    /// an error naming what it cannot make.
    fn made_media(&self, _location: &str, _asked: &MediaAsked<'_>) -> Option<Result<String, Error>> {
        None
    }

    /// Whether its locations hold files that can be written and read back (frametest's,
    /// a recording's); not so for a transport that makes its frames (`sim://`).
    fn holds_files(&self) -> bool {
        true
    }

    /// Runs `bytes`, as a server's reply would arrive, through this transport's reply parsers,
    /// and drops what they make: the fuzz targets' way in (`transport_reply` dispatches to each
    /// registered transport). It must return for any bytes, without panicking or allocating
    /// beyond what they justify. A transport with no server (local files, `sim://`) has none.
    fn fuzz_reply(&self, _bytes: &[u8]) {}

    /// Opens `location`, which [`Transports::find`] gave this transport: parses it, and
    /// reaches its server if it has one, so that a bad location is refused here, with a
    /// message naming the part at fault.
    async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error>;
}

/// The [`Transport::cache_note`] of a transport read by playsim's own client.
pub const OWN_CLIENT_NO_CACHE: &str =
    "playsim's own client keeps no cache: every read of every stream crosses \
     the transport to the server, whose own cache is part of the storage measured";

/// Media a transport that makes its frames is asked for ([`Transport::made_media`]).
#[derive(Clone, Copy, Debug)]
pub struct MediaAsked<'a> {
    /// The name the media goes by in messages (the matrix's row: `dpx-4k-dci`).
    pub name: &'a str,
    /// The format's word, as `playsim generate --format` takes it: `dpx`, `exr`.
    pub format: &'a str,
    /// The frame size.
    pub width: u32,
    /// The frame size.
    pub height: u32,
    /// Frames to make, unless the location names its own count.
    pub frames: u64,
}

/// What a transport may use to open a location besides the location itself.
#[derive(Clone)]
pub struct OpenContext {
    /// The typed options of every transport; each reads its own.
    pub options: TransportOptions,
    /// The run's clock: a simulated link times its transfers by it, and the sources of
    /// one run that name the same link share it.
    pub clock: Arc<dyn Clock>,
}

/// A location opened by its transport.
#[async_trait::async_trait]
pub trait Location: Send + Sync {
    /// The path of the source on its storage: what sequence discovery and the container
    /// reader are given.
    fn path(&self) -> &Path;

    /// The name the report gives the source when it is not [`Location::path`]: the URL
    /// it was given as, for a transport whose paths are the server's.
    fn report_name(&self) -> Option<String> {
        None
    }

    /// The storage that finds the source: lists a sequence, looks up files, indexes a
    /// container. Its reads are nobody's stream's.
    fn index_storage(&self) -> Result<Arc<dyn Storage>, Error>;

    /// A storage of one reader's own, so that each stream's reads and counters are its own,
    /// as an independent client's would be.
    async fn reader_storage(&self) -> Result<Arc<dyn Storage>, Error>;

    /// Drops `paths` (the source's files) from the caches this transport can reach, for a
    /// cold run. A transport with no cache of its own says so in the outcome's message.
    fn drop_cache(&self, paths: &[PathBuf]) -> ColdOutcome;

    /// How the frames travel, in words, for summaries: `local files with O_DIRECT, ext4 on
    /// /`, `playsim's NFS client`. `reader` is one of this location's reader storages.
    fn describe(&self, reader: &dyn Storage) -> String;

    /// The storage that writes files here (`record`), with O_DIRECT where `direct` and the
    /// transport has it, and the engine of its options where it has a choice (local files:
    /// [`crate::LocalOptions::io_engine`]); `None` for a transport that only reads.
    async fn writer_storage(&self, _direct: bool) -> Option<Result<Arc<dyn WriteStorage>, Error>> {
        None
    }

    /// The source itself, when this transport makes its frames rather than finding files
    /// (`sim://`); `None` when the source is to be found on [`Location::index_storage`].
    fn own_source(&self) -> Option<Result<Arc<dyn Source>, Error>> {
        None
    }
}

/// The transports of this build, found by a location's scheme.
#[derive(Clone, Default)]
pub struct Transports {
    enabled: Vec<Arc<dyn Transport>>,
    /// Schemes this build knows but was built without, with the cargo feature that adds them.
    disabled: Vec<(&'static str, &'static str)>,
    /// The knobs of every transport, enabled or not (flags and keys are the same in every
    /// build), each group once, in registration order.
    knob_groups: Vec<&'static KnobGroup>,
}

impl Transports {
    /// No transport yet.
    pub fn new() -> Transports {
        Transports::default()
    }

    /// Adds `transport`. A later transport serving the same scheme (or plain paths) is
    /// found first, so an embedder may replace a built-in one.
    pub fn register(&mut self, transport: Arc<dyn Transport>) -> &mut Transports {
        self.add_knobs(transport.knobs());
        self.enabled.insert(0, transport);
        self
    }

    /// Records that locations of `scheme` need the cargo feature `feature`, which this
    /// build does not have: they are refused with a message naming it. Its `knobs` are still
    /// taken, so that flags and scenario keys are the same in every build.
    pub fn register_disabled(
        &mut self,
        scheme: &'static str,
        feature: &'static str,
        knobs: Option<&'static KnobGroup>,
    ) -> &mut Transports {
        self.add_knobs(knobs);
        self.disabled.push((scheme, feature));
        self
    }

    fn add_knobs(&mut self, group: Option<&'static KnobGroup>) {
        if let Some(group) = group {
            if !self.knob_groups.iter().any(|g| std::ptr::eq(*g, group)) {
                self.knob_groups.push(group);
            }
        }
    }

    /// The schemes this build knows but was built without, each with the cargo feature that
    /// adds it.
    pub fn disabled(&self) -> &[(&'static str, &'static str)] {
        &self.disabled
    }

    /// The knob groups of every registered transport, enabled or not, each once.
    pub fn knob_groups(&self) -> &[&'static KnobGroup] {
        &self.knob_groups
    }

    /// Every transport's knobs, group by group.
    pub fn knobs(&self) -> impl Iterator<Item = &'static TransportKnob> + '_ {
        self.knob_groups.iter().flat_map(|g| g.knobs.iter())
    }

    /// The knob whose scenario key is `key`.
    pub fn knob_by_key(&self, key: &str) -> Option<&'static TransportKnob> {
        self.knobs().find(|k| k.key == key)
    }

    /// The knob whose flag is `flag` (without its dashes).
    pub fn knob_by_flag(&self, flag: &str) -> Option<&'static TransportKnob> {
        self.knobs().find(|k| k.flag == flag)
    }

    /// The transports, latest registered first.
    pub fn enabled(&self) -> impl Iterator<Item = &Arc<dyn Transport>> {
        self.enabled.iter()
    }

    /// The transport for `location`: the one serving its scheme when it starts with
    /// `scheme://`, else the one serving plain paths.
    ///
    /// A scheme no transport serves is refused, listing the ones this build has, or naming
    /// the cargo feature that adds it.
    pub fn find(&self, location: &str) -> Result<&Arc<dyn Transport>, Error> {
        if let Some(claimed) = self.enabled.iter().find(|t| t.claims(location)) {
            return Ok(claimed);
        }
        let scheme = scheme_of(location);
        let found = self.enabled.iter().find(|t| match scheme {
            Some(scheme) => t.schemes().iter().any(|s| s.eq_ignore_ascii_case(scheme)),
            None => t.schemes().is_empty(),
        });
        if let Some(transport) = found {
            return Ok(transport);
        }
        let Some(scheme) = scheme else {
            return Err(Error::Location(format!(
                "{location}: this build has no transport for plain paths; give a URL, for example {}",
                self.examples()
            )));
        };
        if let Some((_, feature)) = self.disabled.iter().find(|(s, _)| s.eq_ignore_ascii_case(scheme)) {
            return Err(Error::Disabled {
                location: location.to_owned(),
                feature,
                examples: self.examples(),
            });
        }
        Err(Error::Location(format!(
            "{location}: no transport serves {scheme}://; give a local path or one of: {}",
            self.examples()
        )))
    }

    /// Opens `location` with its transport (see [`Transports::find`] and [`Transport::open`]).
    pub async fn open(&self, location: &str, context: &OpenContext) -> Result<Arc<dyn Location>, Error> {
        self.find(location)?.open(location, context).await
    }

    fn examples(&self) -> String {
        self.examples_where(|_| true)
    }

    /// The examples of the enabled transports `keep` keeps, in registration order, for a
    /// message: `nfs://filer/export/shot, smb://filer/share/shot`.
    pub fn examples_where(&self, keep: impl Fn(&dyn Transport) -> bool) -> String {
        let mut examples: Vec<&str> =
            self.enabled.iter().filter(|t| keep(t.as_ref())).map(|t| t.example()).collect();
        examples.reverse();
        examples.join(", ")
    }

    /// The examples of the transports whose URLs name files on a server (they hold files and
    /// have a scheme), for a message that asks for a place to write or read frame files.
    pub fn file_url_examples(&self) -> String {
        self.examples_where(|t| t.holds_files() && !t.schemes().is_empty())
    }
}

impl fmt::Debug for Transports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.enabled.iter().map(|t| t.name()).collect();
        f.debug_struct("Transports").field("enabled", &names).field("disabled", &self.disabled).finish()
    }
}

static INSTALLED: OnceLock<Transports> = OnceLock::new();

/// The process's registry, made by `register` the first time (later calls return the same
/// registry and ignore theirs): the facade's one place that lists the transports of a build.
pub fn install(register: fn(&mut Transports)) -> &'static Transports {
    INSTALLED.get_or_init(|| {
        let mut registry = Transports::new();
        register(&mut registry);
        registry
    })
}

/// The registry [`install`] made, or `None` before it: the CLI's flag groups and the scenario
/// parser read the transports' knobs from it.
pub fn installed() -> Option<&'static Transports> {
    INSTALLED.get()
}

/// `bytes` as a flag value: `1M`, `512K`, or a plain number when not a whole KiB.
pub fn size_text(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// The scheme of `location` when it starts with `scheme://` (a scheme being a letter, then
/// letters, digits, `+`, `-` or `.`, as RFC 3986 has it), else `None`: a plain path.
pub fn scheme_of(location: &str) -> Option<&str> {
    let (scheme, _) = location.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str, &'static [&'static str]);

    #[async_trait::async_trait]
    impl Transport for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn schemes(&self) -> &'static [&'static str] {
            self.1
        }
        fn example(&self) -> &'static str {
            self.0
        }
        async fn open(&self, _: &str, _: &OpenContext) -> Result<Arc<dyn Location>, Error> {
            Err(Error::InvalidOption(self.0.to_owned()))
        }
    }

    #[test]
    fn a_location_goes_to_the_transport_of_its_scheme() {
        let mut transports = Transports::new();
        transports
            .register(Arc::new(Named("local", &[])))
            .register(Arc::new(Named("nfs", &["nfs"])))
            .register_disabled("smb", "smb", None);
        let name = |location: &str| transports.find(location).map(|t| t.name());
        assert_eq!(name("/mnt/shot/frame.%07d.dpx"), Ok("local"));
        assert_eq!(name("relative/dir"), Ok("local"));
        assert_eq!(name("nfs://filer/x"), Ok("nfs"));
        assert_eq!(name("NFS://filer/x"), Ok("nfs"));
        // A path that merely contains "://" after a slash is a path.
        assert_eq!(name("/tmp/a://b"), Ok("local"));
        let disabled = transports.find("smb://filer/share").map(|t| t.name()).unwrap_err().to_string();
        assert!(disabled.contains("feature") && disabled.contains("smb"), "{disabled}");
        let unknown = transports.find("ftp://filer/x").map(|t| t.name()).unwrap_err().to_string();
        assert!(unknown.contains("ftp://") && unknown.contains("nfs"), "{unknown}");
    }

    #[test]
    fn a_later_transport_replaces_an_earlier_one_for_its_scheme() {
        let mut transports = Transports::new();
        transports.register(Arc::new(Named("nfs", &["nfs"]))).register(Arc::new(Named("mine", &["nfs"])));
        assert_eq!(transports.find("nfs://a/b").map(|t| t.name()), Ok("mine"));
        let none = transports.find("/local").map(|t| t.name()).unwrap_err().to_string();
        assert!(none.contains("plain paths"), "{none}");
    }

    #[test]
    fn options_are_found_by_their_type() {
        #[derive(Clone, Debug, Default, PartialEq)]
        struct Knobs(u32);
        let options = TransportOptions::new().with(Knobs(4)).with(7u64);
        assert_eq!(options.get::<Knobs>(), Knobs(4));
        assert_eq!(options.get::<u64>(), 7);
        assert_eq!(options.get::<u32>(), 0, "unset: the default");
        assert!(format!("{options:?}").contains("Knobs"));
    }

    #[test]
    fn sizes_read_as_flag_values() {
        assert_eq!(size_text(1 << 20), "1M");
        assert_eq!(size_text(4 << 20), "4M");
        assert_eq!(size_text(512 << 10), "512K");
        assert_eq!(size_text(1536 << 10), "1536K");
        assert_eq!(size_text(1000), "1000");
    }

    #[test]
    fn schemes_are_letters_first() {
        assert_eq!(scheme_of("nfs+rdma://h/p"), Some("nfs+rdma"));
        assert_eq!(scheme_of("sim://lan?bw=1G"), Some("sim"));
        assert_eq!(scheme_of("/abs/path"), None);
        assert_eq!(scheme_of("1x://h"), None);
        assert_eq!(scheme_of("://h"), None);
    }
}
