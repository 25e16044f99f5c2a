//! The scenario file's TOML shape, its values (parsed by the same parsers as the command
//! line's flags) and the checks that turn it into a [`Scenario`]: every refusal names the
//! file, the line and the key, and shows a valid line.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use playsim_core::{FramePreset, Pacing};
use playsim_media::{GenerateFormat, GenerateFormatError, GenerateOptions};
use playsim_storage::transport::GivenKnob;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::hints::{example_of, toml_error, MINIMAL};
use super::media::{Generate, ProRes};
use super::{
    CacheMode, RecordFlag, RecordValue, Scenario, ScenarioError, ScenarioRecord, ScenarioRun, ScenarioStream,
};
use crate::knobs::{self, keys, run_knobs, Knob, Settings, Text, DEFAULT_FPS};
use crate::parse;
use crate::request::SourceSettings;
use playsim_media::ProResProfile;

/// The most frames `generate` may write for one stream: a guard against a typo filling the disk.
const MAX_GENERATED_FRAMES: u64 = 100_000;

/// Parses `text`, read from `path`, into a scenario. Relative sources are resolved against
/// `path`'s directory.
pub(super) fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let mut document = DeTable::parse(text).map_err(|e| toml_error(text, path, &e))?;
    let checker = Checker { text, path, transport: TransportKeys::default() };
    let transport = checker.take_transport_keys(document.get_mut())?;
    let file = FileTable::deserialize(toml::de::Deserializer::from(document))
        .map_err(|e| toml_error(text, path, &e))?;
    Checker { transport, ..checker }.scenario(file)
}

// ---- the transports' keys ----

/// The transports' keys of each table (`nconnect = 4`, `smb_credentials = "..."`), taken out
/// of the file before serde reads the rest: the registry knows them, not the tables' types.
#[derive(Default)]
struct TransportKeys {
    /// The top of the file's.
    top: Vec<GivenKnob>,
    /// Each `[[run]]`'s, by its index.
    runs: HashMap<usize, Vec<GivenKnob>>,
    /// Each stream table's, by its run's index (`None`: a top-level `[[stream]]`) and its own.
    streams: HashMap<(Option<usize>, usize), Vec<GivenKnob>>,
}

// ---- the file's shape ----

/// Generates a table of the scenario file that takes every run knob (at the top of the file
/// for every run, or in a `[[run]]`), besides its own fields. serde's `flatten` cannot be
/// combined with `deny_unknown_fields`, so the knobs are written into each table.
macro_rules! scenario_table {
    (
        [$(#[doc = $tdoc:literal])* $table:ident { $($(#[$fmeta:meta])* $tfield:ident : $tty:ty,)* }]
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
        $(#[doc = $tdoc])*
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $table {
            $($(#[$fmeta])* $tfield: $tty,)*
            $($(
                #[serde(rename = $vkey)]
                $vfield: Option<Spanned<keys::$vname>>,
            )* $(
                #[serde(rename = $okey)]
                $ofield: Option<Spanned<keys::$oname>>,
            )* $(
                #[serde(rename = $skey)]
                $sfield: Option<Spanned<bool>>,
            )*)*
        }

        impl $table {
            /// The run settings this table gives, each with where it is given, with the
            /// transports' keys taken out of it (`transport`).
            fn settings(&self, checker: &Checker<'_>, transport: &[GivenKnob]) -> Result<Settings, ScenarioError> {
                if let (Some(frames), Some(_)) = (&self.frames, &self.duration) {
                    return Err(checker.at(
                        frames.span().start,
                        "give frames or duration, not both (for example duration = \"10s\")",
                    ));
                }
                let mut settings = Settings { transport: transport.to_vec(), ..Settings::default() };
                $($(
                    if let Some(given) = &self.$vfield {
                        settings.$vfield = Some(given.get_ref().0);
                        settings.given_at.push((Knob::$vname, given.span().start));
                    }
                )* $(
                    if let Some(given) = &self.$ofield {
                        settings.$ofield = Some(Clone::clone(&given.get_ref().0));
                        settings.given_at.push((Knob::$oname, given.span().start));
                    }
                )* $(
                    if let Some(given) = &self.$sfield {
                        settings.$sfield = Some(*given.get_ref() != $sinvert);
                        settings.given_at.push((Knob::$sname, given.span().start));
                    }
                )*)*
                Ok(settings)
            }
        }
    };
}

run_knobs!(scenario_table
    /// The whole file.
    FileTable {
        name: Option<Spanned<String>>,
        description: Option<String>,
        repeat: Option<Count>,
        cache: Option<CacheKey>,
        #[serde(default)]
        stream: Vec<Spanned<StreamTable>>,
        #[serde(default)]
        run: Vec<Spanned<RunTable>>,
    }
);

run_knobs!(scenario_table
    /// One `[[run]]`: streams played together on one clock.
    RunTable {
        name: Option<Spanned<String>>,
        description: Option<String>,
        client: Option<Spanned<Client>>,
        #[serde(default)]
        stream: Vec<Spanned<StreamTable>>,
        record: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
        keep: Option<bool>,
    }
);

/// One `[[stream]]` (or `[[run.stream]]`): a source and the streams that read it, with the
/// run knobs a stream may set for itself.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamTable {
    source: Spanned<String>,
    count: Option<Count>,
    fps: Option<keys::Fps>,
    start_offset: Option<Offset>,
    decode_threads: Option<keys::DecodeThreads>,
    decode: Option<bool>,
    block_size: Option<keys::BlockSize>,
    direct: Option<bool>,
    io_engine: Option<keys::IoEngine>,
    generate: Option<Spanned<GenerateTable>>,
}

/// `generate = { ... }`: the synthetic media a stream plays, written when missing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateTable {
    format: crate::knobs::Text,
    preset: Preset,
    frames: Frames,
    bit_depth: Option<BitDepth>,
    endian: Option<EndianKey>,
    alpha: Option<bool>,
    compression: Option<ExrCompression>,
    profile: Option<ProfileKey>,
    fps: Option<keys::Fps>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CacheKey {
    Cold,
    Warm,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum EndianKey {
    Big,
    Little,
}

// ---- the values that are not run knobs: each read as text (a TOML string, integer, float
// or boolean) and parsed by the command line's own parser, so both accept the same spellings ----

/// A value type read from [`Text`] by `parse`.
macro_rules! text_value {
    ($(#[$meta:meta])* $name:ident($ty:ty), $parse:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        struct $name($ty);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let text = Text::deserialize(deserializer)?.0;
                let parse: fn(&str) -> Result<$ty, String> = $parse;
                parse(&text).map($name).map_err(de::Error::custom)
            }
        }
    };
}

text_value!(
    /// `start_offset`: a duration, or zero.
    Offset(Duration),
    parse::offset
);
text_value!(
    /// `repeat`, `count`: a whole number of 1 or more.
    Count(u32),
    parse::count
);
text_value!(
    /// A run's `client`: the rank (from 0) that plays it under mpirun.
    Client(u32),
    |s| parse::whole(s).and_then(|n| {
        u32::try_from(n).map_err(|_| format!("'{s}' is too large a client number (for example client = 2)"))
    })
);
text_value!(
    /// generate's `frames`: a whole number of 1 or more.
    Frames(u64),
    parse::positive
);
text_value!(
    /// `compression` of generated EXR, as `generate --compression`.
    ExrCompression(playsim_exr::Compression),
    |s| s.parse::<playsim_exr::Compression>()
);
text_value!(
    /// `preset`, as `generate --preset`.
    Preset(FramePreset),
    parse::preset
);
text_value!(
    /// `bit_depth`: DPX 8, 10 or 16; TIFF 8 or 16 (the format's writer checks which).
    BitDepth(u8),
    parse::bit_depth
);

/// The tables of the array of tables `key` in `table` (`[[stream]]`, `[[run]]`); none when it
/// is missing or not an array of tables (serde refuses that).
fn tables_of<'t, 'i>(table: &'t mut DeTable<'i>, key: &str) -> impl Iterator<Item = &'t mut DeTable<'i>> {
    let items = match table.get_mut(key).map(|v| v.get_mut()) {
        Some(DeValue::Array(items)) => items.iter_mut(),
        _ => [].iter_mut(),
    };
    items.filter_map(|item| match item.get_mut() {
        DeValue::Table(table) => Some(table),
        _ => None,
    })
}

// ---- checks ----

struct Checker<'a> {
    text: &'a str,
    path: &'a Path,
    transport: TransportKeys,
}

impl Checker<'_> {
    /// Takes the transports' keys out of `document`'s tables (a stream's table keeps those
    /// a stream may not set, for serde to refuse), each value checked by its knob's parser.
    fn take_transport_keys(&self, document: &mut DeTable<'_>) -> Result<TransportKeys, ScenarioError> {
        let mut keys = TransportKeys { top: self.take_knobs(document, false)?, ..TransportKeys::default() };
        for (j, stream) in tables_of(document, "stream").enumerate() {
            keys.streams.insert((None, j), self.take_knobs(stream, true)?);
        }
        let runs: Vec<&mut DeTable<'_>> = tables_of(document, "run").collect();
        for (i, run) in runs.into_iter().enumerate() {
            keys.runs.insert(i, self.take_knobs(run, false)?);
            for (j, stream) in tables_of(run, "stream").enumerate() {
                keys.streams.insert((Some(i), j), self.take_knobs(stream, true)?);
            }
        }
        Ok(keys)
    }

    /// The transports' keys of `table`, taken out of it (only those a stream may set, where
    /// `stream`).
    fn take_knobs(&self, table: &mut DeTable<'_>, stream: bool) -> Result<Vec<GivenKnob>, ScenarioError> {
        let registry = crate::transport_knobs::registry();
        let mut given = Vec::new();
        let found: Vec<String> = table
            .iter()
            .map(|(key, _)| key.get_ref().to_string())
            .filter(|key| registry.knob_by_key(key).is_some_and(|k| !stream || k.per_stream))
            .collect();
        for key in found {
            let (Some(knob), Some(value)) = (registry.knob_by_key(&key), table.remove(key.as_str())) else {
                continue;
            };
            let offset = value.span().start;
            let text = match value.get_ref() {
                DeValue::String(s) => s.to_string(),
                DeValue::Integer(n) => n.to_string(),
                DeValue::Float(x) => x.to_string(),
                DeValue::Boolean(b) => b.to_string(),
                _ => {
                    return Err(self.at(
                        offset,
                        format!("{key} must be a string or a number (for example: {})", knob.example),
                    ))
                }
            };
            knob.check(&text)
                .map_err(|e| self.at(offset, format!("{e}\n  for example: {}", example_of(&key))))?;
            given.push(GivenKnob { knob, text, offset: Some(offset) });
        }
        Ok(given)
    }

    /// An error at byte `offset` of the file.
    fn at(&self, offset: usize, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.path, self.text, offset, message.into())
    }

    fn scenario(&self, file: FileTable) -> Result<Scenario, ScenarioError> {
        let top = file.settings(self, &self.transport.top)?;
        let name = match &file.name {
            Some(name) => self.name(name)?,
            None => {
                let stem =
                    self.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let cleaned: String = stem.chars().map(|c| if is_name_char(c) { c } else { '-' }).collect();
                if cleaned.is_empty() {
                    "scenario".to_owned()
                } else {
                    cleaned
                }
            }
        };
        let runs = match (file.stream.is_empty(), file.run.is_empty()) {
            (false, false) => {
                let offset = file.run.first().map_or(0, |r| r.span().start);
                return Err(self.at(
                    offset,
                    "give either [[stream]] tables (one run) or [[run]] tables, each with its \
                     [[run.stream]]s, not both; for example:\n      [[run]]\n      name = \"tcp\"\n      \
                     [[run.stream]]\n      source = \"/mnt/nfs-tcp/shot\"",
                ));
            }
            (true, true) => {
                return Err(ScenarioError::whole(
                    self.path,
                    format!("no stream to play: add one, for example:\n      {MINIMAL}"),
                ))
            }
            (false, true) => vec![self.run(None, None, "run1".to_owned(), None, &file.stream, &top)?],
            (true, false) => {
                let mut runs: Vec<ScenarioRun> = Vec::with_capacity(file.run.len());
                for (i, table) in file.run.iter().enumerate() {
                    let run = table.get_ref();
                    let run_name = match &run.name {
                        Some(name) => self.name(name)?,
                        None => format!("run{}", i + 1),
                    };
                    if runs.iter().any(|r| r.name == run_name) {
                        let offset = run.name.as_ref().map_or(table.span().start, |n| n.span().start);
                        return Err(self.at(
                            offset,
                            format!("two runs are named '{run_name}': give each its own name = \"...\""),
                        ));
                    }
                    if let Some(record) = &run.record {
                        runs.push(self.record_run(table, i, run_name, record)?);
                        continue;
                    }
                    if let Some(true) = run.keep {
                        return Err(self.at(
                            table.span().start,
                            format!("run '{run_name}': keep is for a record run's files; remove it"),
                        ));
                    }
                    if run.stream.is_empty() {
                        return Err(self.at(
                            table.span().start,
                            format!(
                                "run '{run_name}' has no stream: add one after it, for example:\n      \
                                 [[run.stream]]\n      source = \"media/shot\"\n      \
                                 (or make it a record run: record = {{ destination = \"out\", fps = 24 }})"
                            ),
                        ));
                    }
                    let settings = run.settings(self, self.run_knobs(i))?.over(&top);
                    let mut made = self.run(
                        Some(i),
                        Some(table.span().start),
                        run_name,
                        run.description.clone(),
                        &run.stream,
                        &settings,
                    )?;
                    made.client = run.client.as_ref().map(|c| c.get_ref().0);
                    made.client_offset = run.client.as_ref().map(|c| c.span().start);
                    runs.push(made);
                }
                runs
            }
        };
        self.same_media_same_table(&runs)?;
        Ok(Scenario {
            name,
            description: file.description,
            path: self.path.to_owned(),
            repeat: file.repeat.map_or(1, |r| r.0),
            cache: match file.cache {
                Some(CacheKey::Warm) => CacheMode::Warm,
                Some(CacheKey::Cold) | None => CacheMode::Cold,
            },
            runs,
        })
    }

    /// Two `generate` tables for one path would make the media again at every run: refused.
    fn same_media_same_table(&self, runs: &[ScenarioRun]) -> Result<(), ScenarioError> {
        let streams: Vec<&ScenarioStream> = runs.iter().flat_map(|r| &r.streams).collect();
        for (i, stream) in streams.iter().enumerate() {
            let Some(generate) = &stream.generate else { continue };
            let earlier = streams[..i]
                .iter()
                .find(|s| s.generate.as_ref().is_some_and(|g| g.path() == generate.path() && g != generate));
            if let Some(earlier) = earlier {
                return Err(self.at(
                    offset_of_line(self.text, stream.line),
                    format!(
                        "{} is generated by line {} with another generate table: give both the same \
                         table, or keep it on one of them only",
                        generate.path().display(),
                        earlier.line
                    ),
                ));
            }
        }
        Ok(())
    }

    fn name(&self, name: &Spanned<String>) -> Result<String, ScenarioError> {
        let text = name.get_ref();
        if text.is_empty() || !text.chars().all(is_name_char) {
            return Err(self.at(
                name.span().start,
                format!(
                    "name '{text}' must be letters, digits, '-', '_' and '.', as it names the report \
                     files (for example name = \"tcp-4k\")"
                ),
            ));
        }
        Ok(text.clone())
    }

    /// A `[[run]]` with a `record` table: record's flags, as keys, checked by the facade (which
    /// parses them with record's own command line) before anything runs.
    /// The transports' keys of the `i`-th `[[run]]`.
    fn run_knobs(&self, i: usize) -> &[GivenKnob] {
        self.transport.runs.get(&i).map_or(&[], Vec::as_slice)
    }

    fn record_run(
        &self,
        table: &Spanned<RunTable>,
        run_idx: usize,
        name: String,
        record: &Spanned<BTreeMap<String, Spanned<toml::Value>>>,
    ) -> Result<ScenarioRun, ScenarioError> {
        let run = table.get_ref();
        if let Some(stream) = run.stream.first() {
            return Err(self.at(
                stream.span().start,
                format!(
                    "run '{name}' records: it has a record table, so it plays no [[run.stream]]; \
                     put the streams in a run of their own"
                ),
            ));
        }
        let settings = run.settings(self, self.run_knobs(run_idx))?;
        let transport = settings.transport.first().and_then(|g| Some((g.knob.key, g.offset?)));
        if let Some((key, offset)) = settings.given_at.first().map(|(k, at)| (k.key(), *at)).or(transport) {
            return Err(self.at(
                offset,
                format!(
                    "run '{name}' records: its settings go in its record table, with record's flag \
                     names (for example record = {{ destination = \"out\", fps = 24, frames = 48 }}); \
                     move {key} there or remove it"
                ),
            ));
        }
        let mut destination = None;
        let mut flags = Vec::new();
        for (key, value) in record.get_ref() {
            let offset = value.span().start;
            let text = match value.get_ref() {
                toml::Value::String(s) => RecordValue::Text(s.clone()),
                toml::Value::Integer(n) => RecordValue::Text(n.to_string()),
                toml::Value::Float(x) => RecordValue::Text(x.to_string()),
                toml::Value::Boolean(b) => RecordValue::Switch(*b),
                _ => {
                    return Err(self.at(
                        offset,
                        format!(
                            "record's {key} must be a string, a number or true/false (for example \
                             record = {{ destination = \"out\", format = \"dpx\", fps = 24 }})"
                        ),
                    ))
                }
            };
            if key == "destination" {
                match text {
                    RecordValue::Text(given) if !given.trim().is_empty() => {
                        destination = Some((given, offset))
                    }
                    _ => {
                        return Err(self.at(
                            offset,
                            format!(
                                "record's destination is a directory or a URL such as {} (for example \
                                 destination = \"../target/scenario-record/dpx-4k\")",
                                crate::transport_knobs::registry().file_url_examples()
                            ),
                        ))
                    }
                }
                continue;
            }
            flags.push(RecordFlag { key: key.clone(), value: text, offset });
        }
        let Some((given, offset)) = destination else {
            return Err(self.at(
                record.span().start,
                format!(
                    "run '{name}': record needs a destination, the directory it writes into (for \
                     example record = {{ destination = \"../target/scenario-record/dpx-4k\", fps = 24 }})"
                ),
            ));
        };
        let is_url = playsim_storage::transport::scheme_of(&given).is_some();
        let path = if is_url { PathBuf::from(&given) } else { self.resolve(&given) };
        let record = ScenarioRecord {
            given,
            destination: path,
            flags,
            keep: run.keep.unwrap_or(false),
            offset,
            line: line_of(self.text, record.span().start),
        };
        Ok(ScenarioRun {
            name,
            description: run.description.clone(),
            request: Settings::default().request(Vec::new()),
            streams: Vec::new(),
            client: run.client.as_ref().map(|c| c.get_ref().0),
            client_offset: run.client.as_ref().map(|c| c.span().start),
            record: Some(record),
        })
    }

    fn run(
        &self,
        run_idx: Option<usize>,
        offset: Option<usize>,
        name: String,
        description: Option<String>,
        tables: &[Spanned<StreamTable>],
        settings: &Settings,
    ) -> Result<ScenarioRun, ScenarioError> {
        let mut request = settings.request(Vec::new());
        request.engine.validate().map_err(|e| {
            let message = format!("run '{name}': {}", knobs::as_keys(&e));
            // At the value that broke the limit, else at the limit's, else at the run.
            let given = [Some(e.field()), e.limit_field()]
                .into_iter()
                .flatten()
                .filter_map(Knob::of_engine_field)
                .find_map(|knob| settings.offset_of(knob));
            match given.or(offset) {
                Some(offset) => self.at(offset, message),
                None => ScenarioError::whole(self.path, message),
            }
        })?;
        let mut streams = Vec::with_capacity(tables.len());
        for (stream_idx, table) in tables.iter().enumerate() {
            let own = self.transport.streams.get(&(run_idx, stream_idx)).map_or(&[][..], Vec::as_slice);
            let stream = self.stream(table, settings, own)?;
            request.sources.push(stream.source.clone());
            request.per_source.push(stream.settings.clone());
            streams.push(stream);
        }
        request.streams_per_source = 1;
        Ok(ScenarioRun {
            name,
            description,
            request,
            streams,
            client: None,
            client_offset: None,
            record: None,
        })
    }

    /// A stream table, with the transports' keys taken out of it (`transport`).
    fn stream(
        &self,
        table: &Spanned<StreamTable>,
        run: &Settings,
        transport: &[GivenKnob],
    ) -> Result<ScenarioStream, ScenarioError> {
        let line = line_of(self.text, table.span().start);
        let stream = table.get_ref();
        let given = stream.source.get_ref();
        if given.trim().is_empty() {
            return Err(
                self.at(stream.source.span().start, "source is empty (for example source = \"media/shot\")")
            );
        }
        let is_url = playsim_storage::transport::scheme_of(given).is_some();
        let source = if is_url { PathBuf::from(given) } else { self.resolve(given) };
        let own = Settings { transport: transport.to_vec(), ..Settings::default() };
        let settings = SourceSettings {
            streams: Some(stream.count.map_or(1, |c| c.0)),
            pacing: stream.fps.as_ref().map(|f| f.0),
            start_offset: stream.start_offset.map_or(Duration::ZERO, |o| o.0),
            decode_threads: stream.decode_threads.map(|c| c.0),
            block_size: stream.block_size.map(|b| b.0),
            direct: stream.direct,
            io_engine: stream.io_engine.map(|e| e.0),
            skip_decode: stream.decode.map(|decode| !decode),
            transport: (!transport.is_empty()).then(|| own.over(run).transport_options()),
        };
        let generate = match &stream.generate {
            None => None,
            Some(table) if is_url => {
                return Err(self.at(
                    table.span().start,
                    format!(
                        "generate writes local files, and source '{given}' is a URL: generate the \
                         media where the server can see it (playsim generate DIR --preset hd --frames 48) \
                         and remove generate here"
                    ),
                ))
            }
            Some(table) => {
                Some(self.generate(table, &source, stream.fps.as_ref().map(|f| f.0).or(run.fps))?)
            }
        };
        Ok(ScenarioStream { given: given.clone(), source, line, settings, generate })
    }

    fn generate(
        &self,
        table: &Spanned<GenerateTable>,
        source: &Path,
        stream_fps: Option<Pacing>,
    ) -> Result<Generate, ScenarioError> {
        let at = |message: String| self.at(table.span().start, message);
        let g = table.get_ref();
        if g.frames.0 > MAX_GENERATED_FRAMES {
            return Err(at(format!(
                "generate frames = {} is more than {MAX_GENERATED_FRAMES}: loop over fewer frames \
                 instead (for example frames = 96 with loop = true)",
                g.frames.0
            )));
        }
        let only = |key: &str, present: bool, format: &str| -> Result<(), ScenarioError> {
            if present {
                Err(at(format!(
                    "generate's {key} is for format = \"{format}\" only: remove it (for example \
                     generate = {{ format = \"dpx\", preset = \"hd\", frames = 48, bit_depth = 10 }})"
                )))
            } else {
                Ok(())
            }
        };
        let extension = source.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
        let format = g.format.0.trim().to_ascii_lowercase();
        if format != "prores" {
            only("profile", g.profile.is_some(), "prores")?;
            only("fps", g.fps.is_some(), "prores")?;
            // A frame file or pattern of any playable format, or a video file, is not a directory.
            let names_a_file = playsim_media::formats()
                .iter()
                .any(|f| extension.as_deref().is_some_and(|e| f.extensions.contains(&e)));
            let is_sequence_name =
                source.file_name().is_some_and(|n| n.to_string_lossy().contains(['%', '#', '@']))
                    || names_a_file;
            if is_sequence_name {
                return Err(at(format!(
                    "with generate, source must be a directory to write frame.%07d.{format} into, not a \
                     file or pattern: {} (for example source = \"media/shot-hd\")",
                    source.display()
                )));
            }
            // Every option given goes to the format's writer in the table, the same parser as
            // `playsim generate` and `sim://`: it refuses a key the format does not take.
            let mut options: Vec<(&str, String)> = Vec::new();
            if let Some(bits) = g.bit_depth {
                options.push(("bit_depth", bits.0.to_string()));
            }
            if let Some(endian) = g.endian {
                options.push((
                    "endian",
                    if matches!(endian, EndianKey::Little) { "little" } else { "big" }.into(),
                ));
            }
            if let Some(compression) = g.compression {
                options.push(("compression", compression.0.name().to_owned()));
            }
            let pairs: Vec<(&str, &str)> = options.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let parsed = GenerateFormat::parse(&format, &pairs).map_err(|e| match e {
                // The sequence writers, and prores, which a scenario makes with the ffmpeg CLI.
                GenerateFormatError::Unknown { .. } => at(format!(
                    "generate format = \"{}\" is not one playsim writes: {} or prores (for example \
                     generate = {{ format = \"dpx\", preset = \"hd\", frames = 48 }})",
                    g.format.0,
                    playsim_media::writable_names(|w| !w.clip)
                )),
                other => at(format!("generate: {other}")),
            })?;
            return Ok(Generate::Sequence(GenerateOptions {
                format: parsed.clone(),
                // EXR sequences are half RGBA, as `playsim generate` writes them.
                alpha: g.alpha.unwrap_or(false) || parsed.writer().rgba_by_default,
                ..GenerateOptions::new(source, g.preset.0, g.frames.0)
            }));
        }
        for (key, present) in [
            ("bit_depth", g.bit_depth.is_some()),
            ("endian", g.endian.is_some()),
            ("alpha", g.alpha.is_some()),
            ("compression", g.compression.is_some()),
        ] {
            if present {
                return Err(at(format!(
                    "generate's {key} is not for ProRes: remove it (for example generate = \
                     {{ format = \"prores\", preset = \"hd\", frames = 300, profile = \"standard\" }})"
                )));
            }
        }
        if extension.as_deref() != Some("mov") {
            return Err(at(format!(
                "with generate format = \"prores\", source must be the .mov file to write: {} \
                 (for example source = \"media/prores-hd-30.mov\")",
                source.display()
            )));
        }
        let (width, height) = g.preset.0.dimensions();
        if width % 2 != 0 || height % 2 != 0 {
            return Err(at(format!(
                "ProRes 4:2:2 needs an even width and height, not {width}x{height} (for example preset = \"hd\")"
            )));
        }
        let rate = match g.fps.as_ref().map(|f| f.0).or(stream_fps) {
            Some(Pacing::Rate(rate)) => rate,
            Some(Pacing::Max) if g.fps.is_some() => {
                return Err(
                    at("a clip needs a frame rate, not max (for example fps = 30 in generate)".into()),
                )
            }
            _ => DEFAULT_FPS,
        };
        Ok(Generate::ProRes(ProRes {
            path: source.to_owned(),
            preset: g.preset.0,
            frames: g.frames.0,
            rate,
            profile: g.profile.map_or(ProResProfile::Standard, |p| p.0),
        }))
    }

    /// A source path from the file: relative ones are taken from the scenario file's directory,
    /// so that a scenario plays the same media from wherever it is run. `..` is resolved
    /// against the directory's real path, then lexically.
    fn resolve(&self, given: &str) -> PathBuf {
        let given = Path::new(given);
        if given.is_absolute() {
            return lexically_normal(given);
        }
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let base = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        lexically_normal(&base.join(given))
    }
}

/// `path` without `.` components, and with each `..` taking off the component before it.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            Component::ParentDir if out.has_root() => {}
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The byte offset where 1-based `line` starts in `text`.
fn offset_of_line(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n').nth(line - 2).map_or(text.len(), |(i, _)| i + 1)
}

/// 1-based line of byte `offset` in `text`.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes().iter().take(offset).filter(|&&b| b == b'\n').count() + 1
}

/// `profile = "hq"` in a `generate` table: a ProRes profile by its name.
#[derive(Clone, Copy)]
struct ProfileKey(ProResProfile);

impl<'de> Deserialize<'de> for ProfileKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ProfileKey, D::Error> {
        Text::deserialize(deserializer)?.0.parse().map(ProfileKey).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::hints::KEY_EXAMPLES;
    use playsim_storage::IoEngine;
    use std::path::PathBuf;

    fn parse_text(text: &str) -> Result<Scenario, ScenarioError> {
        crate::testutil::transports();
        parse(text, Path::new("dir/test.toml"))
    }

    fn refusal(text: &str) -> String {
        match parse_text(text) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_key_has_an_example_that_parses() {
        // Each example line, put in the table it belongs to, parses.
        for (key, example) in KEY_EXAMPLES {
            let line = example.split("  (").next().unwrap_or(example);
            let text = match *key {
                "stream" | "run" => line.to_owned(),
                "record" | "keep" => format!(
                    "[[run]]\n{}{line}",
                    if *key == "keep" { "record = { destination = \"o\" }\n" } else { "" }
                ),
                "source" | "count" | "start_offset" | "generate" => format!("[[stream]]\n{line}"),
                "format" | "preset" | "bit_depth" | "endian" | "alpha" => format!(
                    "[[stream]]\nsource = \"m\"\ngenerate = {{ format = \"dpx\", preset = \"hd\", frames = 2, {} }}",
                    if *key == "format" || *key == "preset" { String::new() } else { line.to_owned() }
                )
                .replace(", }", " }"),
                "compression" => format!(
                    "[[stream]]\nsource = \"m\"\ngenerate = {{ format = \"exr\", preset = \"hd\", frames = 2, {line} }}"
                ),
                "profile" => format!(
                    "[[stream]]\nsource = \"m.mov\"\ngenerate = {{ format = \"prores\", preset = \"hd\", frames = 2, {line} }}"
                ),
                _ => format!("{line}\n[[stream]]\nsource = \"m\""),
            };
            let text = if text.contains("source") || text.contains("record") {
                text
            } else {
                format!("{text}\nsource = \"m\"")
            };
            let text = if *key == "run" { format!("{text}\n") } else { text };
            if let Err(e) = parse_text(&text) {
                panic!("the example of {key} is refused:\n{text}\n{e}");
            }
        }
    }

    #[test]
    fn one_run_of_streams_with_their_own_settings() {
        let text = r#"
name = "mix"
repeat = 2
cache = "warm"
fps = 24
duration = "10s"
decode_threads = 2
io_depth = 6

[[stream]]
source = "media/a"
count = 3
fps = 59.94
start_offset = "2s"
decode_threads = 1
block_size = "512K"

[[stream]]
source = "/abs/b.%07d.dpx"
direct = true
"#;
        let s = parse_text(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.name.as_str(), s.repeat, s.cache), ("mix", 2, CacheMode::Warm));
        assert_eq!(s.runs.len(), 1);
        let run = &s.runs[0];
        assert_eq!(run.name, "run1");
        let r = &run.request;
        assert_eq!(r.sources, vec![PathBuf::from("dir/media/a"), PathBuf::from("/abs/b.%07d.dpx")]);
        assert_eq!(r.engine.pacing.to_string(), "24");
        assert_eq!((r.engine.duration, r.engine.frames), (Some(Duration::from_secs(10)), None));
        assert_eq!((r.engine.decode_threads, r.engine.io_depth), (2, 6));
        assert!(!r.rate_from_source);
        let a = &r.per_source[0];
        assert_eq!(a.streams, Some(3));
        assert_eq!(a.pacing.map(|p| p.to_string()).as_deref(), Some("60000/1001"));
        assert_eq!(a.start_offset, Duration::from_secs(2));
        assert_eq!((a.decode_threads, a.block_size, a.direct), (Some(1), Some(512 << 10), None));
        let b = &r.per_source[1];
        assert_eq!(
            (b.streams, b.pacing, b.start_offset, b.direct),
            (Some(1), None, Duration::ZERO, Some(true))
        );
    }

    #[test]
    fn io_engine_is_a_run_key_and_a_stream_key() {
        let text = "io_engine = \"io_uring\"\n[[stream]]\nsource = \"a\"\n[[stream]]\nsource = \"b\"\nio_engine = \"pread\"\n";
        let s = parse_text(text).unwrap_or_else(|e| panic!("{e}"));
        let r = &s.runs[0].request;
        assert_eq!(r.io_engine, IoEngine::IoUring);
        assert_eq!((r.per_source[0].io_engine, r.per_source[1].io_engine), (None, Some(IoEngine::Pread)));
        let plain = parse_text("[[stream]]\nsource = \"a\"\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plain.runs[0].request.io_engine, IoEngine::Pread);
    }

    #[test]
    fn runs_inherit_the_top_and_override_it() {
        let text = r#"
fps = 24
frames = 100
nconnect = 4
[[run]]
name = "tcp"
[[run.stream]]
source = "/mnt/nfs-tcp/shot"
[[run]]
fps = "max"
duration = 5
[[run.stream]]
source = "nfs://filer/media/shot"
rsize = "256K"
"#;
        let s = parse_text(text).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = s.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["tcp", "run2"]);
        let (tcp, second) = (&s.runs[0].request, &s.runs[1].request);
        assert_eq!((tcp.engine.frames, tcp.engine.duration), (Some(100), None));
        assert_eq!((second.engine.frames, second.engine.duration), (None, Some(Duration::from_secs(5))));
        assert_eq!(second.engine.pacing, Pacing::Max);
        assert_eq!(second.sources, vec![PathBuf::from("nfs://filer/media/shot")]);
        use playsim_storage::nfs::NfsOptions;
        let nfs = second.per_source[0].transport.as_ref().map(|t| t.get::<NfsOptions>());
        assert_eq!(nfs.map(|n| (n.nconnect, n.rsize)), Some((4, 256 << 10)));
        assert_eq!(tcp.transport.get::<NfsOptions>().nconnect, 4);
        assert_eq!((s.repeat, s.cache), (1, CacheMode::Cold));
        assert_eq!(s.name, "test");
    }

    #[test]
    fn a_typo_is_refused_with_its_line_and_a_suggestion() {
        let message = refusal("repeat = 2\n[[stream]]\nsource = \"a\"\nfsp = 24\n");
        assert!(message.contains("dir/test.toml:4:1"), "{message}");
        assert!(message.contains("unknown field `fsp`"), "{message}");
        assert!(message.contains("did you mean `fps`? for example: fps = 24"), "{message}");
        let top = refusal("repaet = 2\n[[stream]]\nsource = \"a\"\n");
        assert!(top.contains(":1:1") && top.contains("did you mean `repeat`?"), "{top}");
        let far = refusal("[[stream]]\nsource = \"a\"\nwibble = 1\n");
        assert!(far.contains("the keys of [[stream]] are: source, count"), "{far}");
        let inline = refusal(
            "[[stream]]\nsource = \"a\"\ngenerate = { format = \"dpx\", presett = \"hd\", frames = 2 }\n",
        );
        assert!(inline.contains(":3:") && inline.contains("did you mean `preset`?"), "{inline}");
    }

    #[test]
    fn a_bad_value_is_refused_with_its_line_and_an_example() {
        for (text, line, wants) in [
            ("[[stream]]\nsource = \"a\"\nfps = \"fast\"\n", 3, "for example: fps = 24"),
            ("duration = \"10 parsecs\"\n[[stream]]\nsource = \"a\"\n", 1, "for example: duration = \"10s\""),
            ("[[stream]]\nsource = \"a\"\ncount = 0\n", 3, "count = 3"),
            ("cache = \"tepid\"\n[[stream]]\nsource = \"a\"\n", 1, "cache = \"cold\""),
            ("[[stream]]\nsource = \"a\"\nrsize = \"1K\"\n", 3, "rsize = \"1M\""),
            ("[[stream]]\nsource = \"a\"\nio_engine = \"aio\"\n", 3, "io_engine = \"io_uring\""),
            ("[[stream]]\nsource = \"a\"\ngenerate = { format = \"dpx\", preset = \"huge\", frames = 2 }\n", 3, "preset = \"4k-dci\""),
            ("[[stream]]\n", 1, "source = \"media/shot\""),
        ] {
            let message = refusal(text);
            assert!(message.contains(&format!("dir/test.toml:{line}:")), "{message}");
            assert!(message.contains(wants), "{wants} in {message}");
        }
    }

    #[test]
    fn inconsistent_scenarios_are_refused() {
        for (text, wants) in [
            ("", "no stream to play"),
            ("frames = 2\nduration = \"1s\"\n[[stream]]\nsource = \"a\"\n", ":1:"),
            ("[[stream]]\nsource = \"a\"\n[[run]]\n[[run.stream]]\nsource = \"b\"\n", "not both"),
            ("[[run]]\nname = \"a\"\n[[run.stream]]\nsource = \"x\"\n[[run]]\nname = \"a\"\n[[run.stream]]\nsource = \"y\"\n", "two runs are named 'a'"),
            ("[[run]]\nname = \"a b\"\n[[run.stream]]\nsource = \"x\"\n", "letters, digits"),
            ("[[run]]\nname = \"empty\"\n", "has no stream"),
            ("preroll = 9\n[[stream]]\nsource = \"a\"\n", "preroll = 9 cannot exceed prefetch = 8"),
            ("[[stream]]\nsource = \"a/f.%07d.dpx\"\ngenerate = { format = \"dpx\", preset = \"hd\", frames = 2 }\n", "must be a directory"),
            ("[[stream]]\nsource = \"a\"\ngenerate = { format = \"prores\", preset = \"hd\", frames = 2 }\n", "the .mov file"),
            ("[[stream]]\nsource = \"a\"\ngenerate = { format = \"dpx\", preset = \"hd\", frames = 2, profile = \"hq\" }\n", "for format = \"prores\" only"),
            ("[[stream]]\nsource = \"nfs://h/x\"\ngenerate = { format = \"dpx\", preset = \"hd\", frames = 2 }\n", "is a URL"),
            ("[[stream]]\nsource = \"a\"\ngenerate = { format = \"dpx\", preset = \"hd\", frames = 2 }\n\
              [[stream]]\nsource = \"a\"\ngenerate = { format = \"dpx\", preset = \"hd\", frames = 3 }\n", ":4:1: dir/a is generated by line 1"),
        ] {
            let message = refusal(text);
            assert!(message.contains(wants), "{wants} in {message}");
        }
    }

    #[test]
    fn generate_takes_the_streams_rate_and_the_formats_defaults() {
        let text = "[[stream]]\nsource = \"clip.mov\"\nfps = 30\ngenerate = { format = \"prores\", preset = \"hd\", frames = 60 }\n\
                    [[stream]]\nsource = \"exr\"\ngenerate = { format = \"exr\", preset = \"6k\", frames = 4 }\n";
        let s = parse_text(text).unwrap_or_else(|e| panic!("{e}"));
        let streams = &s.runs[0].streams;
        match &streams[0].generate {
            Some(Generate::ProRes(p)) => {
                assert_eq!(
                    (p.rate.to_string(), p.profile, p.frames),
                    ("30".to_owned(), ProResProfile::Standard, 60)
                );
                assert_eq!(p.path, PathBuf::from("dir/clip.mov"));
            }
            _ => panic!("expected ProRes"),
        }
        match &streams[1].generate {
            Some(Generate::Sequence(g)) => {
                assert!(g.alpha);
                assert_eq!(g.format, GenerateFormat::parse("exr", &[("compression", "piz")]).unwrap());
                assert_eq!(g.dir, PathBuf::from("dir/exr"));
            }
            _ => panic!("expected an EXR sequence"),
        }
    }

    /// A `generate` table takes any format the format table can write (TIFF too), its keys
    /// through that format's writer, which refuses a key the format does not take.
    #[test]
    fn generate_takes_every_writable_format_and_its_own_keys() {
        let text = "[[stream]]\nsource = \"tif\"\ngenerate = { format = \"tiff\", preset = \"hd\", frames = 4, bit_depth = 8, endian = \"big\" }\n";
        let s = parse_text(text).unwrap_or_else(|e| panic!("{e}"));
        match &s.runs[0].streams[0].generate {
            Some(Generate::Sequence(g)) => {
                let expected =
                    GenerateFormat::parse("tiff", &[("bit_depth", "8"), ("endian", "big")]).unwrap();
                assert_eq!(g.format, expected);
                assert_eq!(g.format.extension(), "tif");
            }
            _ => panic!("expected a TIFF sequence"),
        }
        let refused = refusal(
            "[[stream]]\nsource = \"d\"\ngenerate = { format = \"dpx\", preset = \"hd\", frames = 4, compression = \"zip\" }\n",
        );
        assert!(
            refused.contains(":3:") && refused.contains("compression does not apply to dpx"),
            "{refused}"
        );
        let unknown = refusal(
            "[[stream]]\nsource = \"d\"\ngenerate = { format = \"webp\", preset = \"hd\", frames = 4 }\n",
        );
        assert!(unknown.contains("dpx, exr, tiff or prores") && unknown.contains("for example"), "{unknown}");
    }

    #[test]
    fn a_record_run_keeps_its_keys_as_records_flags() {
        let s = parse_text(
            "name = \"w\"\nrepeat = 2\n[[run]]\nname = \"play\"\n[[run.stream]]\nsource = \"m\"\n\
             [[run]]\nname = \"capture\"\nkeep = true\nrecord = { destination = \"../out/cap\", format = \"dpx\", \
             bit_depth = 10, fps = 23.976, direct = true, encode = false }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.runs[0].record.is_none());
        let record = s.runs[1].record.as_ref().unwrap_or_else(|| panic!("not a record run"));
        assert_eq!(record.destination, Path::new("out/cap"), "resolved against the file's directory, dir/");
        assert!(record.keep);
        assert!(s.runs[1].streams.is_empty());
        let args = record.args(&|flag| flag == "--direct");
        assert_eq!(
            args,
            ["--bit-depth", "10", "--direct", "--encode", "off", "--format", "dpx", "--fps", "23.976"],
            "keys by name; a switch alone, on/off for a flag with a value"
        );
        let plan = s.plan(&|_, _| None);
        assert!(plan.contains("run capture: records into ../out/cap (line 10): bit_depth = 10, direct = true, encode = false"), "{plan}");
        assert!(plan.contains("the last repetition's files are kept"), "{plan}");
        assert_eq!(s.passes().len(), 4);
    }

    #[test]
    fn a_record_run_is_refused_when_it_mixes_in_playback() {
        let streams = refusal("[[run]]\nrecord = { destination = \"o\" }\n[[run.stream]]\nsource = \"m\"\n");
        assert!(streams.contains("it has a record table, so it plays no [[run.stream]]"), "{streams}");
        let knob = refusal("[[run]]\nfps = 24\nrecord = { destination = \"o\" }\n");
        assert!(knob.contains(":2:") && knob.contains("move fps there"), "{knob}");
        let no_dest = refusal("[[run]]\nrecord = { fps = 24 }\n");
        assert!(no_dest.contains("record needs a destination"), "{no_dest}");
        let table = refusal("[[run]]\nrecord = { destination = \"o\", fps = [24] }\n");
        assert!(table.contains("record's fps must be a string, a number or true/false"), "{table}");
        let keep = refusal("[[run]]\nkeep = true\n[[run.stream]]\nsource = \"m\"\n");
        assert!(keep.contains("keep is for a record run's files"), "{keep}");
    }

    #[test]
    fn paths_are_made_lexically_normal() {
        for (path, normal) in [
            ("examples/../target/m", "target/m"),
            ("/a/./b/../../c", "/c"),
            ("/..", "/"),
            ("../../x", "../../x"),
            ("a/..", "."),
        ] {
            assert_eq!(lexically_normal(Path::new(path)), PathBuf::from(normal), "{path}");
        }
    }
}
