//! A transport's own settings: each a command-line flag and a scenario key, declared by the
//! transport's module in a [`KnobGroup`] and read by the CLI and the scenario parser from the
//! registry, so that a new transport's knobs need no row anywhere else.
//!
//! A knob's value is text (a flag's value, a scenario scalar written as text), which the knob
//! parses and writes into the transport's options in a [`TransportOptions`]. Settings given at
//! several levels (a scenario's file, its run, its stream; the command line) are applied in
//! that order, so the nearest wins, knob by knob.

use std::fmt;

use crate::options::TransportOptions;

/// One setting of a transport: `--nconnect 4` on the command line, `nconnect = 4` in a
/// scenario file.
pub struct TransportKnob {
    /// The command-line flag, without its dashes: `nconnect`.
    pub flag: &'static str,
    /// The scenario key: `nconnect`.
    pub key: &'static str,
    /// The flag's help, without its default.
    pub help: &'static str,
    /// The default as `--help` shows it, when the knob has one.
    pub shown_default: Option<&'static str>,
    /// The value's name in `--help`: `NCONNECT`, `FILE`.
    pub value_name: &'static str,
    /// Whether a scenario's `[[stream]]` table may set it for its own streams.
    pub per_stream: bool,
    /// A valid scenario line, for refusals: `nconnect = 4  (1 to 64)`.
    pub example: &'static str,
    /// Parses `text` and writes the value into `options`; a refusal says what is wrong with
    /// the value and shows a valid one (the caller names the flag or the key).
    pub apply: fn(text: &str, options: &mut TransportOptions) -> Result<(), String>,
}

impl TransportKnob {
    /// The flag's help, its default included (`... [default: 1]`) when it has one.
    pub fn help_with_default(&self) -> String {
        match self.shown_default {
            Some(default) => format!("{} [default: {default}]", self.help),
            None => self.help.to_owned(),
        }
    }

    /// Checks `text` as this knob's value, without keeping it.
    pub fn check(&self, text: &str) -> Result<(), String> {
        (self.apply)(text, &mut TransportOptions::new())
    }
}

impl fmt::Debug for TransportKnob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportKnob").field("flag", &self.flag).field("key", &self.key).finish()
    }
}

/// The knobs of one options type: transports that read the same options share one group
/// (`nfs://` and `nfs+rdma://` read [`crate::nfs::NfsOptions`]), and the CLI shows it once.
#[derive(Debug)]
pub struct KnobGroup {
    /// What the knobs set, as `--help` heads them: `playsim's NFS client (nfs://, nfs+rdma://)`.
    pub heading: &'static str,
    /// The knobs, in `--help`'s order.
    pub knobs: &'static [TransportKnob],
}

/// A knob's value as given, with where: what the settings keep until they make a run's
/// [`TransportOptions`].
#[derive(Clone, Debug)]
pub struct GivenKnob {
    /// The knob.
    pub knob: &'static TransportKnob,
    /// Its value as text.
    pub text: String,
    /// Where a scenario file gives it (a byte offset), if it does.
    pub offset: Option<usize>,
}

impl GivenKnob {
    /// Writes the value into `options`.
    pub fn apply(&self, options: &mut TransportOptions) -> Result<(), String> {
        (self.knob.apply)(&self.text, options)
    }
}

/// Applies `given` in order (so a later value of a knob wins) onto `options`. The values were
/// checked when they were given; one that fails now is reported with its knob's flag.
pub fn apply_all(given: &[GivenKnob], options: &mut TransportOptions) -> Result<(), String> {
    for value in given {
        value.apply(options).map_err(|e| format!("--{} {}: {e}", value.knob.flag, value.text))?;
    }
    Ok(())
}

/// Set by `record` and `frametest -w` among a location's options: the location names a
/// directory to write into, which may not exist yet. A transport with a server checks only
/// its place on the server at open, and its writer makes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateMissing(pub bool);

/// A knob's value parsed by `parse` and stored by `store` into the options of type `T`: the
/// body of most knobs' [`TransportKnob::apply`].
pub fn set_with<T, V>(
    text: &str,
    options: &mut TransportOptions,
    parse: fn(&str) -> Result<V, String>,
    store: fn(&mut T, V),
) -> Result<(), String>
where
    T: std::any::Any + Clone + Default + Send + Sync,
{
    let value = parse(text)?;
    let mut typed = options.get::<T>();
    store(&mut typed, value);
    options.set(typed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq)]
    struct Knobs {
        depth: u32,
    }

    static DEPTH: TransportKnob = TransportKnob {
        flag: "depth",
        key: "depth",
        help: "Depth",
        shown_default: Some("0"),
        value_name: "DEPTH",
        per_stream: true,
        example: "depth = 2",
        apply: |text, options| {
            set_with(
                text,
                options,
                |s| s.trim().parse::<u32>().map_err(|e| e.to_string()),
                |k: &mut Knobs, v| k.depth = v,
            )
        },
    };

    #[test]
    fn the_nearest_value_wins_and_a_bad_one_names_the_flag() {
        let given = |text: &str| GivenKnob { knob: &DEPTH, text: text.to_owned(), offset: None };
        let mut options = TransportOptions::new();
        assert_eq!(apply_all(&[given("3"), given("5")], &mut options), Ok(()));
        assert_eq!(options.get::<Knobs>().depth, 5);
        let refused = apply_all(&[given("x")], &mut options).unwrap_err();
        assert!(refused.starts_with("--depth x: "), "{refused}");
        assert_eq!(DEPTH.help_with_default(), "Depth [default: 0]");
        assert!(DEPTH.check("-1").is_err());
    }
}
