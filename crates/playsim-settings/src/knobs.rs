//! The one settings list: every run knob that is both a `play` flag and a scenario key is a row
//! of `run_knobs!` (below), with its flag, its key, its parser, its default and its help.
//!
//! From that one table come clap's flag groups ([`PlayKnobs`], [`LocalReadKnobs`],
//! [`DecoderKnobs`], flattened by `play`, `capacity` and `decode`; [`Knob::help`] and the parsers
//! for a command that takes one knob of a group under its own field), the scenario file's keys (in
//! `scenario/file.rs`, through the same parsers), the [`Knob`] names errors are spelt with, and
//! [`Settings`]: the knobs given, merged stream over run over file, made into a
//! [`PlayRequest`] with every default applied here and nowhere else.
//!
//! Adding a knob is one row in the table, plus its use in [`Settings::request`].
//!
//! A transport's own knobs (`--nconnect`, `--smb-credentials`, ...) are not rows here: the
//! transport declares them ([`playsim_storage::transport::KnobGroup`]), the CLI flattens them
//! all as [`TransportKnobs`](crate::TransportKnobs), and [`Settings::transport`] keeps the
//! values given, in order, until [`Settings::transport_options`] applies them.

use std::path::PathBuf;

use playsim_core::{FrameRate, Pacing};
use playsim_engine::{ConfigError, ConfigField, EngineConfig};
use playsim_media::DecodeOptions;
use playsim_storage::transport::{knob, GivenKnob, TransportOptions};
use playsim_storage::{IoEngine, DEFAULT_BLOCK_SIZE};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::order::{FrameRange, PlayOrder};
use crate::parse::{self, OrderKind};
use crate::request::PlayRequest;

/// The rate a run plays at when no rate is given and the source states none (an image sequence).
pub const DEFAULT_FPS: FrameRate = FrameRate::FILM;

/// The table of run knobs, handed to `$callback` (after `[$args]`) to generate from.
///
/// Rows are grouped by the clap group that holds their flags. In each group:
/// - `values`: `Name field: Type = default, "default as typed", flag "...", key "...", parser,
///   "help", [, extra clap attributes];`
/// - `options` (no default: absent means "not given"): the same without the default;
/// - `switches` (a flag that turns something on; a boolean key): `Name field, flag "...",
///   key "...", invert (the key means the opposite of the flag), "help";`.
macro_rules! run_knobs {
    ($callback:ident $($args:tt)*) => {
        $callback! {
            [$($args)*]
            /// A run's rate, length, order and pipeline (`play`, `capacity`).
            PlayKnobs {
                values {
                    Order order: OrderKind = OrderKind::Forward, "forward", flag "order", key "order",
                        parse::order,
                        "Play order: forward, reverse, or random (a shuffle, repeatable with --seed)", [];
                    Seed seed: u64 = 1, "1", flag "seed", key "seed", parse::whole,
                        "The random order's seed", [];
                    Preroll preroll: u32 = EngineConfig::default().preroll, "5", flag "preroll",
                        key "preroll", parse::preroll,
                        "Frames that must be ready before playback starts (frametest -b)", [];
                    Prefetch prefetch: u32 = EngineConfig::default().prefetch, "8", flag "prefetch",
                        key "prefetch", parse::count,
                        "Frames the pipeline may hold ahead of presentation", [];
                    IoDepth io_depth: u32 = EngineConfig::default().io_depth, "4", flag "io-depth",
                        key "io_depth", parse::count, "Frame reads in flight at once", [];
                    MaxBuffer max_buffer: u64 = playsim_engine::default_max_buffer(),
                        "a quarter of the available memory, 256M to 4G", flag "max-buffer",
                        key "max_buffer", parse::memory_size,
                        "Bytes the prefetch windows' frames (read, not yet presented) may hold at \
                         once, over all streams, e.g. 2GiB, 512M (the frame next due always \
                         reads)", [];
                    DecodeThreads decode_threads: u32 = playsim_engine::default_decode_threads(),
                        "all cores", flag "decode-threads", key "decode_threads", parse::threads,
                        "Decode threads", [];
                    OutputStage output_stage: playsim_engine::OutputStage = EngineConfig::default().output, "v210",
                        flag "output-stage", key "output_stage", parse::output_stage,
                        "Work done per frame before its deadline: v210 (pack to 10-bit 4:2:2, as an \
                         SDI output driver does) or none", [];
                    OutputThreads output_threads: u32 = EngineConfig::default().output_threads, "1",
                        flag "output-threads", key "output_threads", parse::threads,
                        "Output threads a stream: frames it packs at once", [];
                }
                options {
                    Fps fps: Pacing, flag "fps", key "fps", parse::pacing,
                        "Frame rate: 24, 23.976, 25, 29.97, 59.94, 60000/1001, ... or max (no \
                         pacing) [default: a video file's own rate, else 24]", [];
                    Frames frames: u64, flag "frames", key "frames", parse::positive,
                        "Frames to play (with --loop, the source repeats until then)",
                        [, conflicts_with = "duration"];
                    Duration duration: std::time::Duration, flag "duration", key "duration", parse::duration,
                        "Playback time, e.g. 10s, 1.5m, 600", [];
                    Range range: FrameRange, flag "range", key "range", parse::range,
                        "Play only these frame numbers, e.g. 100-199", [];
                }
                switches {
                    Loop loop_playback, flag "loop", key "loop", invert false,
                        "Start again at the first frame after the last";
                    NoDrop no_drop, flag "no-drop", key "no_drop", invert false,
                        "Wait for late frames instead of dropping them, and report the stall time";
                    Decode skip_decode, flag "no-decode", key "decode", invert true,
                        "Read the frames and do not decode them (the load frametest and fio put on \
                         storage): a frame is ready when read, and there is no output stage";
                    Verify verify, flag "verify", key "verify", invert false,
                        "Check every decoded frame against the frame index in its pixels (generated \
                         media)";
                }
            }
            /// How local files are read, the local transport's settings (`play`, `capacity`,
            /// `frametest`).
            LocalReadKnobs {
                values {
                    BlockSize block_size: usize = DEFAULT_BLOCK_SIZE, "1M", flag "block-size",
                        key "block_size", parse::bytes,
                        "Bytes per read request from local files, e.g. 1M, 512K, 4096 (a URL's client \
                         has a read size of its own)", [];
                    IoEngine io_engine: playsim_storage::IoEngine = IoEngine::default(), "pread", flag "io-engine",
                        key "io_engine", parse::io_engine,
                        "How local files are read: pread (one block after another, a thread per \
                         frame) or io_uring (all of a frame's blocks in flight at once, into \
                         registered buffers; falls back to pread, saying why, where io_uring is \
                         disabled)", [];
                }
                options {}
                switches {
                    Direct direct, flag "direct", key "direct", invert false,
                        "Read local files with O_DIRECT, bypassing the page cache (playsim's NFS \
                         client has no cache)";
                }
            }
            /// Decoder settings (`play`, `decode`).
            DecoderKnobs {
                values {
                    ExrBackend exr_backend: playsim_exr::Backend = playsim_exr::Backend::default_available(),
                        "openexr with the openexr feature, else exrs", flag "exr-backend",
                        key "exr_backend", parse::exr_backend,
                        "EXR decoding library: openexr (the C++ library the applications use) or \
                         exrs (pure Rust)", [];
                    CodecThreads codec_threads: u32 = EngineConfig::default().codec_threads, "1",
                        flag "codec-threads", key "codec_threads", parse::codec_threads,
                        "Threads inside one frame's decode (OpenEXR's per-file threads, exrs' block \
                         decompression)", [];
                }
                options {}
                switches {}
            }
        }
    };
}
pub(crate) use run_knobs;

/// Generates the knob names, the clap groups, [`Settings`] and the scenario values from the table.
macro_rules! settings_items {
    (
        [$($args:tt)*]
        $(
            $(#[doc = $gdoc:literal])*
            $group:ident {
                values { $(
                    $vname:ident $vfield:ident : $vty:ty = $vdefault:expr, $vshown:literal,
                    flag $vflag:literal, key $vkey:literal, $vparse:expr, $vhelp:literal, [$($vclap:tt)*];
                )* }
                options { $(
                    $oname:ident $ofield:ident : $oty:ty, flag $oflag:literal, key $okey:literal,
                    $oparse:expr, $ohelp:literal, [$($oclap:tt)*];
                )* }
                switches { $(
                    $sname:ident $sfield:ident, flag $sflag:literal, key $skey:literal,
                    invert $sinvert:literal, $shelp:literal;
                )* }
            }
        )*
    ) => {
        /// A run knob, by which errors name the flag (`--prefetch`) or the key (`prefetch =`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Knob {
            $($(
                #[doc = concat!("`--", $vflag, "`, `", $vkey, " =`.")]
                $vname,
            )* $(
                #[doc = concat!("`--", $oflag, "`, `", $okey, " =`.")]
                $oname,
            )* $(
                #[doc = concat!("`--", $sflag, "`, `", $skey, " =`.")]
                $sname,
            )*)*
        }

        impl Knob {
            /// Every knob, in the table's order.
            pub const ALL: &'static [Knob] = &[$($(Knob::$vname,)* $(Knob::$oname,)* $(Knob::$sname,)*)*];

            /// The command-line flag, without its dashes: `io-depth`.
            pub fn flag(self) -> &'static str {
                match self {
                    $($(Knob::$vname => $vflag,)* $(Knob::$oname => $oflag,)* $(Knob::$sname => $sflag,)*)*
                }
            }

            /// The scenario key: `io_depth`.
            pub fn key(self) -> &'static str {
                match self {
                    $($(Knob::$vname => $vkey,)* $(Knob::$oname => $okey,)* $(Knob::$sname => $skey,)*)*
                }
            }

            /// The flag's help, its default included (`... [default: 1]`) for knobs that have
            /// one: for a command that takes one knob of a group under its own field.
            pub fn help(self) -> &'static str {
                match self {
                    $($(Knob::$vname => concat!($vhelp, " [default: ", $vshown, "]"),)*
                      $(Knob::$oname => $ohelp,)* $(Knob::$sname => $shelp,)*)*
                }
            }

            /// The default as `--help` shows it, for knobs that have one.
            pub fn shown_default(self) -> Option<&'static str> {
                match self {
                    $($(Knob::$vname => Some($vshown),)*)*
                    _ => None,
                }
            }
        }

        $(
            $(#[doc = $gdoc])*
            #[derive(clap::Args, Clone, Debug, Default)]
            pub struct $group {
                $(
                    #[doc = $vhelp]
                    #[arg(long = $vflag, value_parser = $vparse, allow_hyphen_values = true,
                          help = concat!($vhelp, " [default: ", $vshown, "]") $($vclap)*)]
                    pub $vfield: Option<$vty>,
                )*
                $(
                    #[doc = $ohelp]
                    #[arg(long = $oflag, value_parser = $oparse, allow_hyphen_values = true,
                          help = $ohelp $($oclap)*)]
                    pub $ofield: Option<$oty>,
                )*
                $(
                    #[doc = $shelp]
                    #[arg(long = $sflag, help = $shelp)]
                    pub $sfield: bool,
                )*
            }

            impl $group {
                /// Writes the flags given into `settings`.
                pub fn apply(&self, settings: &mut Settings) {
                    $(if self.$vfield.is_some() { settings.$vfield = self.$vfield; })*
                    // Through `Clone`: an option's type need not be `Copy` (a file's path).
                    $(if self.$ofield.is_some() { settings.$ofield = Clone::clone(&self.$ofield); })*
                    $(if self.$sfield { settings.$sfield = Some(true); })*
                }
            }
        )*

        /// The knobs given (on the command line, or in a scenario's tables); `None` takes the
        /// enclosing table's, then the default.
        #[derive(Clone, Debug, Default)]
        pub struct Settings {
            $($(
                #[doc = $vhelp]
                pub $vfield: Option<$vty>,
            )* $(
                #[doc = $ohelp]
                pub $ofield: Option<$oty>,
            )* $(
                #[doc = $shelp]
                pub $sfield: Option<bool>,
            )*)*
            /// Where each knob was given in a scenario file (byte offsets), nearest table first.
            pub given_at: Vec<(Knob, usize)>,
            /// The transports' knobs given, farthest first: applied in this order, the nearest
            /// value of a knob wins.
            pub transport: Vec<GivenKnob>,
        }

        impl Settings {
            /// Each knob these settings give, else `base`'s.
            fn each_over(self, base: &Settings) -> Settings {
                let mut given_at = self.given_at;
                given_at.extend(base.given_at.iter().copied());
                let mut transport = base.transport.clone();
                transport.extend(self.transport);
                Settings {
                    $($(
                        $vfield: self.$vfield.or(base.$vfield),
                    )* $(
                        $ofield: self.$ofield.or_else(|| Clone::clone(&base.$ofield)),
                    )* $(
                        $sfield: self.$sfield.or(base.$sfield),
                    )*)*
                    given_at,
                    transport,
                }
            }
        }

        /// Resolved knobs: the value given, else the default (written in the table only).
        #[allow(clippy::unnecessary_lazy_evaluations)]
        impl Settings {
            $($(
                #[doc = concat!("`", $vkey, "`, or its default (", $vshown, ").")]
                pub fn $vfield(&self) -> $vty {
                    self.$vfield.unwrap_or_else(|| $vdefault)
                }
            )* $(
                #[doc = concat!("`", $skey, "` as the flag means it, or off.")]
                pub fn $sfield(&self) -> bool {
                    self.$sfield.unwrap_or(false)
                }
            )*)*
        }

        /// Each knob's scenario value: the TOML scalar as text, through the flag's parser.
        pub(crate) mod keys {
            use super::*;
            $($(
                #[doc = concat!("`", $vkey, " =`.")]
                #[derive(Clone, Copy)]
                pub(crate) struct $vname(pub(crate) $vty);

                impl<'de> Deserialize<'de> for $vname {
                    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$vname, D::Error> {
                        let text = Text::deserialize(deserializer)?.0;
                        ($vparse)(&text).map($vname).map_err(de::Error::custom)
                    }
                }
            )* $(
                #[doc = concat!("`", $okey, " =`.")]
                #[derive(Clone)]
                pub(crate) struct $oname(pub(crate) $oty);

                impl<'de> Deserialize<'de> for $oname {
                    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$oname, D::Error> {
                        let text = Text::deserialize(deserializer)?.0;
                        ($oparse)(&text).map($oname).map_err(de::Error::custom)
                    }
                }
            )*)*
        }
    };
}

run_knobs!(settings_items);

impl Knob {
    /// The knob that sets an engine field.
    pub fn of_engine_field(field: ConfigField) -> Option<Knob> {
        match field {
            ConfigField::Preroll => Some(Knob::Preroll),
            ConfigField::Prefetch => Some(Knob::Prefetch),
            ConfigField::IoDepth => Some(Knob::IoDepth),
            ConfigField::DecodeThreads => Some(Knob::DecodeThreads),
            ConfigField::OutputThreads => Some(Knob::OutputThreads),
            ConfigField::CodecThreads => Some(Knob::CodecThreads),
            _ => None,
        }
    }

    /// As the command line spells it: `--prefetch`, or with a value `--prefetch 8`.
    pub fn as_flag(self, value: Option<impl std::fmt::Display>) -> String {
        match value {
            Some(value) => format!("--{} {value}", self.flag()),
            None => format!("--{}", self.flag()),
        }
    }

    /// As a scenario file spells it: `prefetch`, or with a value `prefetch = 8`.
    pub fn as_key(self, value: Option<impl std::fmt::Display>) -> String {
        match value {
            Some(value) => format!("{} = {value}", self.key()),
            None => self.key().to_owned(),
        }
    }
}

/// The engine's refusal, each field spelt as its flag: `--preroll 9 cannot exceed --prefetch 8 ...`.
pub fn as_flags(error: &ConfigError) -> String {
    error.spelt(&|field, value| match Knob::of_engine_field(field) {
        Some(knob) => knob.as_flag(value),
        None => value.map_or_else(|| field.name().to_owned(), |v| format!("{} {v}", field.name())),
    })
}

/// The engine's refusal, each field spelt as its scenario key: `preroll = 9 cannot exceed prefetch = 8 ...`.
pub fn as_keys(error: &ConfigError) -> String {
    error.spelt(&|field, value| match Knob::of_engine_field(field) {
        Some(knob) => knob.as_key(value),
        None => value.map_or_else(|| field.name().to_owned(), |v| format!("{} {v}", field.name())),
    })
}

impl Settings {
    /// The settings the command line's flag groups give.
    pub fn from_flags(
        play: &PlayKnobs,
        local: &LocalReadKnobs,
        decoder: &DecoderKnobs,
        transport: &crate::TransportKnobs,
    ) -> Settings {
        let mut settings = Settings::default();
        play.apply(&mut settings);
        local.apply(&mut settings);
        decoder.apply(&mut settings);
        transport.apply(&mut settings);
        settings
    }

    /// These settings, with `base`'s where these give none. The length is one knob: a table
    /// that gives frames or a duration replaces the other's too.
    pub fn over(self, base: &Settings) -> Settings {
        let (frames, duration) = (self.frames, self.duration);
        let mut merged = self.each_over(base);
        if frames.is_some() || duration.is_some() {
            (merged.frames, merged.duration) = (frames, duration);
        }
        merged
    }

    /// Where `knob` was given in a scenario file, if it was.
    pub fn offset_of(&self, knob: Knob) -> Option<usize> {
        self.given_at.iter().find(|(k, _)| *k == knob).map(|(_, at)| *at)
    }

    /// The engine's settings.
    pub fn engine(&self) -> EngineConfig {
        EngineConfig {
            pacing: self.fps.unwrap_or(Pacing::Rate(DEFAULT_FPS)),
            preroll: self.preroll(),
            prefetch: self.prefetch(),
            io_depth: self.io_depth(),
            decode_threads: self.decode_threads(),
            output: self.output_stage(),
            output_threads: self.output_threads(),
            frames: self.frames,
            duration: self.duration,
            loop_playback: self.loop_playback(),
            no_drop: self.no_drop(),
            verify: self.verify(),
            codec_threads: self.codec_threads(),
            max_buffer: self.max_buffer(),
        }
    }

    /// The transports' options these settings give: each transport's defaults, with the knobs
    /// given applied in order. The values were checked when they were given (by clap or the
    /// scenario parser), so none is refused here.
    pub fn transport_options(&self) -> TransportOptions {
        let mut options = TransportOptions::new();
        // A value that was checked parses again: nothing to report.
        let _ = knob::apply_all(&self.transport, &mut options);
        options
    }

    /// The decoders' settings; `exr_layer` is a command-line flag only.
    pub fn decode_options(&self, exr_layer: Option<String>) -> DecodeOptions {
        let codec_threads = self.codec_threads();
        let mut options = DecodeOptions {
            exr: playsim_exr::ExrOptions {
                codec_threads,
                layer: exr_layer,
                ..playsim_exr::ExrOptions::new(self.exr_backend())
            },
            ..DecodeOptions::default()
        };
        options.video.codec_threads = codec_threads;
        options
    }

    /// The play order, with its seed.
    pub fn play_order(&self) -> PlayOrder {
        match self.order() {
            OrderKind::Forward => PlayOrder::Forward,
            OrderKind::Reverse => PlayOrder::Reverse,
            OrderKind::Random => PlayOrder::Random { seed: self.seed() },
        }
    }

    /// The request that plays `sources`, one stream each, with these settings and the defaults
    /// for what they leave out.
    pub fn request(&self, sources: Vec<PathBuf>) -> PlayRequest {
        PlayRequest {
            sources,
            streams_per_source: 1,
            engine: self.engine(),
            block_size: self.block_size(),
            direct: self.direct(),
            io_engine: self.io_engine(),
            cold: false,
            decode: self.decode_options(None),
            rate_from_source: self.fps.is_none(),
            transport: self.transport_options(),
            order: self.play_order(),
            range: self.range,
            skip_decode: self.skip_decode(),
            per_source: Vec::new(),
        }
    }
}

/// A TOML scalar as the text of a command-line value: `24`, `23.976`, `"10s"`, `true`.
pub(crate) struct Text(pub(crate) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        struct TextVisitor;
        impl Visitor<'_> for TextVisitor {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        deserializer.deserialize_any(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_default_shown_in_help_is_the_default() {
        let none = Settings::default();
        let shown = |knob: Knob| knob.shown_default().unwrap_or_default();
        assert_eq!(parse::order(shown(Knob::Order)), Ok(none.order()));
        assert_eq!(parse::whole(shown(Knob::Seed)), Ok(none.seed()));
        assert_eq!(parse::preroll(shown(Knob::Preroll)), Ok(none.preroll()));
        assert_eq!(parse::count(shown(Knob::Prefetch)), Ok(none.prefetch()));
        assert_eq!(parse::count(shown(Knob::IoDepth)), Ok(none.io_depth()));
        assert!(parse::memory_size("256M").is_ok_and(|min| min <= none.max_buffer()));
        assert!(parse::memory_size("4G").is_ok_and(|max| none.max_buffer() <= max));
        assert_eq!(parse::output_stage(shown(Knob::OutputStage)), Ok(none.output_stage()));
        assert_eq!(parse::threads(shown(Knob::OutputThreads)), Ok(none.output_threads()));
        assert_eq!(parse::bytes(shown(Knob::BlockSize)), Ok(none.block_size()));
        assert_eq!(parse::io_engine(shown(Knob::IoEngine)), Ok(none.io_engine()));
        assert_eq!(parse::codec_threads(shown(Knob::CodecThreads)), Ok(none.codec_threads()));
        // The transports' knobs are checked where they are declared (playsim-storage).
    }

    #[test]
    fn a_knobs_help_shows_its_default() {
        assert_eq!(Knob::Seed.help(), "The random order's seed [default: 1]");
        assert_eq!(Knob::DecodeThreads.help(), "Decode threads [default: all cores]");
        assert!(Knob::Direct.help().starts_with("Read local files with O_DIRECT"));
    }

    #[test]
    fn the_local_read_group_gives_the_local_knobs() {
        let local = LocalReadKnobs { block_size: Some(4096), io_engine: None, direct: true };
        let settings = Settings::from_flags(
            &PlayKnobs::default(),
            &local,
            &DecoderKnobs::default(),
            &crate::TransportKnobs::default(),
        );
        let request = settings.request(vec![PathBuf::from("/m/a")]);
        assert_eq!((request.block_size, request.direct, request.io_engine), (4096, true, IoEngine::Pread));
    }

    #[test]
    fn flags_and_keys_are_spelt_alike() {
        for knob in Knob::ALL {
            let (flag, key) = (knob.flag(), knob.key());
            assert!(flag == key.replace('_', "-") || [("no-decode", "decode")].contains(&(flag, key)));
        }
    }

    #[test]
    fn engine_refusals_are_spelt_as_flags_and_as_keys() {
        let error = EngineConfig { preroll: 9, prefetch: 2, ..EngineConfig::default() }.validate().err();
        let flags = error.as_ref().map(as_flags).unwrap_or_default();
        assert!(flags.starts_with("--preroll 9 cannot exceed --prefetch 2"), "{flags}");
        assert!(flags.contains("for example --preroll 5 and --prefetch 8"), "{flags}");
        let keys = error.as_ref().map(as_keys).unwrap_or_default();
        assert!(keys.starts_with("preroll = 9 cannot exceed prefetch = 2"), "{keys}");
        let zero = EngineConfig { io_depth: 0, ..EngineConfig::default() }.validate().err();
        let keys = zero.as_ref().map(as_keys).unwrap_or_default();
        assert_eq!(keys, "io_depth must be at least 1 (for example io_depth = 4)");
    }

    #[test]
    fn the_smb_credentials_file_is_a_key_and_a_flag_and_reaches_the_transport_options() {
        use clap::{Args, FromArgMatches};
        use playsim_storage::smb::SmbOptions;
        crate::testutil::transports();
        let text =
            "smb_credentials = \"/etc/playsim/filer.cred\"\n[[stream]]\nsource = \"smb://filer/media/a\"\n";
        let scenario = crate::scenario::Scenario::parse(text, "t.toml".as_ref());
        let from_file = scenario.map(|s| s.runs[0].request.clone()).unwrap_or_else(|e| panic!("{e}"));
        let file = Some(PathBuf::from("/etc/playsim/filer.cred"));
        assert_eq!(from_file.transport.get::<SmbOptions>().credentials_file, file);
        let command = crate::TransportKnobs::augment_args(clap::Command::new("t"));
        let matches = command.try_get_matches_from(["t", "--smb-credentials", "/etc/playsim/filer.cred"]);
        let flags = matches.and_then(|m| crate::TransportKnobs::from_arg_matches(&m)).unwrap_or_default();
        let mut settings = Settings::default();
        flags.apply(&mut settings);
        let request = settings.request(vec![PathBuf::from("smb://filer/media/a")]);
        let options = request.transport_options(&crate::request::SourceSettings::default());
        assert_eq!(options.get::<SmbOptions>().credentials_file, file);
        let command = crate::TransportKnobs::augment_args(clap::Command::new("t"));
        let refused = command.try_get_matches_from(["t", "--smb-credentials", " "]).map(|_| ()).unwrap_err();
        assert!(refused.to_string().contains("for example"));
    }

    #[test]
    fn a_scenario_and_the_command_line_make_the_same_request() {
        use playsim_storage::nfs::NfsOptions;
        let transports = crate::testutil::transports();
        let text = "prefetch = 12\norder = \"random\"\nrsize = \"256K\"\n[[stream]]\nsource = \"/m/a\"\n";
        let scenario = crate::scenario::Scenario::parse(text, "t.toml".as_ref());
        let from_file = scenario.map(|s| s.runs[0].request.clone()).unwrap_or_else(|e| panic!("{e}"));
        let rsize = transports.knob_by_flag("rsize").map(|knob| GivenKnob {
            knob,
            text: "256K".into(),
            offset: None,
        });
        let flags = Settings {
            prefetch: Some(12),
            order: Some(OrderKind::Random),
            transport: rsize.into_iter().collect(),
            ..Settings::default()
        };
        let from_flags = flags.request(vec![PathBuf::from("/m/a")]);
        assert_eq!(from_file.engine, from_flags.engine);
        assert_eq!(
            (from_file.order, from_flags.order),
            (PlayOrder::Random { seed: 1 }, PlayOrder::Random { seed: 1 })
        );
        assert_eq!(
            (from_file.transport.get::<NfsOptions>().rsize, from_file.block_size),
            (from_flags.transport.get::<NfsOptions>().rsize, from_flags.block_size)
        );
        assert_eq!(from_file.transport.get::<NfsOptions>().rsize, 256 << 10);
        assert_eq!(
            (from_file.io_engine, from_file.direct, from_file.skip_decode, from_file.rate_from_source),
            (from_flags.io_engine, from_flags.direct, from_flags.skip_decode, from_flags.rate_from_source)
        );
    }

    #[test]
    fn a_length_replaces_the_enclosing_tables() {
        let top = Settings { frames: Some(100), ..Settings::default() };
        let run = Settings { duration: Some(Duration::from_secs(5)), ..Settings::default() };
        let merged = run.over(&top);
        assert_eq!((merged.frames, merged.duration), (None, Some(Duration::from_secs(5))));
        let inherited = Settings::default().over(&top);
        assert_eq!(inherited.frames, Some(100));
    }
}
