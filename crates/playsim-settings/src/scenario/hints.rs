//! Hints for refused scenario files: a valid line for every key, the key nearest a typo,
//! and TOML errors rewritten to name the file, the line and the key.

use std::path::Path;

use super::ScenarioError;
use crate::transport_knobs::registry;

/// A valid line for every key but the transports' (whose knobs carry their own example),
/// shown when a key or its value is refused.
pub(super) const KEY_EXAMPLES: &[(&str, &str)] = &[
    ("name", "name = \"resolve-4k\"  (letters, digits, '-', '_' and '.')"),
    ("description", "description = \"3 streams of 4K DCI DPX at 60 fps\""),
    ("repeat", "repeat = 3"),
    ("cache", "cache = \"cold\"  (or \"warm\")"),
    ("fps", "fps = 24  (or 23.976, \"24000/1001\", \"max\")"),
    ("frames", "frames = 240"),
    ("duration", "duration = \"10s\"  (or \"1.5m\", \"500ms\", 10)"),
    ("loop", "loop = true"),
    ("decode_threads", "decode_threads = 2"),
    ("codec_threads", "codec_threads = 1"),
    ("preroll", "preroll = 5"),
    ("prefetch", "prefetch = 8"),
    ("io_depth", "io_depth = 4"),
    ("max_buffer", "max_buffer = \"2GiB\"  (or \"512M\", bytes)"),
    ("output_stage", "output_stage = \"v210\"  (or \"none\")"),
    ("output_threads", "output_threads = 2"),
    ("no_drop", "no_drop = true"),
    ("decode", "decode = false  (read the bytes only, as frametest and fio do)"),
    ("verify", "verify = true"),
    ("order", "order = \"forward\"  (or \"reverse\", \"random\")"),
    ("seed", "seed = 7"),
    ("range", "range = \"100-199\""),
    ("exr_backend", "exr_backend = \"exrs\"  (or \"openexr\", with the openexr feature)"),
    ("block_size", "block_size = \"1M\"  (or \"512K\", 4096)"),
    ("direct", "direct = true"),
    ("io_engine", "io_engine = \"io_uring\"  (or \"pread\")"),
    ("source", "source = \"media/shot\"  (a directory, pattern, video file or URL)"),
    ("count", "count = 3"),
    ("start_offset", "start_offset = \"2s\"  (or 0)"),
    ("generate", "generate = { format = \"dpx\", preset = \"hd\", frames = 48 }"),
    ("format", "format = \"dpx\"  (or \"exr\", \"tiff\", \"prores\")"),
    ("preset", "preset = \"4k-dci\"  (or hd, uhd, 2k, 4k, 2k-dci, 6k, 8k-dci, 8k-uhd, 1920x1080)"),
    ("bit_depth", "bit_depth = 10  (or 8, 16)"),
    ("endian", "endian = \"big\"  (or \"little\")"),
    ("alpha", "alpha = true"),
    ("compression", "compression = \"piz\"  (or none, rle, zips, zip, pxr24, b44, b44a)"),
    ("profile", "profile = \"standard\"  (or proxy, lt, hq)"),
    (
        "record",
        "record = { destination = \"out/capture\", format = \"dpx\", fps = 24, frames = 48 }  (record's flags, _ for -)",
    ),
    ("keep", "keep = true  (a record run keeps its last repetition's files)"),
    ("stream", "[[stream]]\n      source = \"media/shot\""),
    ("run", "[[run]]\n      name = \"tcp\"\n      [[run.stream]]\n      source = \"/mnt/nfs-tcp/shot\""),
];

/// A whole scenario, the smallest that runs.
pub(super) const MINIMAL: &str = "[[stream]]\n      source = \"media/shot\"\n      fps = 24";

/// `error` from reading `text` (the file at `path`), with its line quoted and a valid line for
/// the key at fault: the nearest known key for an unknown one, the key's example for a bad value.
pub(super) fn toml_error(text: &str, path: &Path, error: &toml::de::Error) -> ScenarioError {
    let message = error.message().trim_end().to_owned();
    let Some(span) = error.span() else {
        return ScenarioError::whole(path, message);
    };
    let hint = if let Some(key) = unknown_key(&message) {
        let mut known = expected_keys(&message);
        // The transports' keys were taken out of the file before serde read it: a table that
        // takes the run knobs takes them too (a stream's table, those a stream may set).
        if known.contains(&"fps") {
            let stream = known.contains(&"source");
            known.extend(registry().knobs().filter(|k| !stream || k.per_stream).map(|k| k.key));
        }
        match closest(&key, &known) {
            Some(near) => format!("did you mean `{near}`? for example: {}", example_of(near)),
            None => {
                let table = if known.contains(&"source") {
                    "[[stream]]"
                } else if known.contains(&"format") {
                    "generate"
                } else if known.contains(&"repeat") {
                    "the top of the file"
                } else {
                    "[[run]]"
                };
                format!(
                    "the keys of {table} are: {}; for example: {}",
                    known.join(", "),
                    known.first().map_or(MINIMAL, |k| example_of(k))
                )
            }
        }
    } else if let Some(key) = key_before(text, span.start) {
        format!("for example: {}", example_of(&key))
    } else if let Some(key) = missing_key(&message) {
        format!("for example: {}", example_of(&key))
    } else {
        format!("a valid scenario looks like:\n      {MINIMAL}")
    };
    ScenarioError::at_span(path, text, span, format!("{message}\n  {hint}"))
}

/// The key serde refused as unknown: "unknown field `fsp`, expected ...".
fn unknown_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// The key serde found missing: "missing field `source`".
fn missing_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// The keys serde listed as expected after an unknown one.
fn expected_keys(message: &str) -> Vec<&str> {
    let Some((_, list)) = message.split_once("expected") else { return Vec::new() };
    list.split('`').skip(1).step_by(2).collect()
}

/// The key whose value starts at `offset` (`key = value`), also inside an inline table.
fn key_before(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?.trim_end();
    let before = before.strip_suffix('=')?.trim_end();
    let key: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!key.is_empty()).then_some(key)
}

pub(super) fn example_of(key: &str) -> &'static str {
    match KEY_EXAMPLES.iter().find(|(k, _)| *k == key) {
        Some((_, example)) => example,
        None => registry().knob_by_key(key).map_or(MINIMAL, |knob| knob.example),
    }
}

/// The known key nearest `key`, if it is near enough to be a typo.
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let key = key.to_ascii_lowercase().replace('-', "_");
    known
        .iter()
        .map(|k| (edit_distance(&key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4) || k.contains(key.as_str()) || key.contains(k))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb { diagonal } else { 1 + diagonal.min(above).min(row[j]) };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_knob_has_an_example() {
        for knob in crate::Knob::ALL {
            let example = KEY_EXAMPLES.iter().find(|(key, _)| *key == knob.key());
            assert!(
                example.is_some_and(|(key, line)| line.starts_with(&format!("{key} = "))),
                "add an example line for {} to KEY_EXAMPLES",
                knob.key()
            );
        }
    }

    #[test]
    fn keys_are_found_before_their_values() {
        assert_eq!(key_before("a = 1\nfps = ", 12).as_deref(), Some("fps"));
        assert_eq!(key_before("g = { preset = ", 15).as_deref(), Some("preset"));
        assert_eq!(key_before("[[stream]]", 10), None);
        assert_eq!(closest("fsp", &["fps", "frames"]), Some("fps"));
        assert_eq!(closest("wibble", &["fps", "frames"]), None);
    }
}
