//! Every registered transport's knobs as one clap flag group, [`TransportKnobs`], which each
//! command that reaches storage flattens: a transport's flags come from its own declaration in
//! the registry (`playsim_storage::transport::install`), never from a list here.

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use playsim_storage::transport::{installed, GivenKnob, Transports};

use crate::Settings;

/// The transports' flags given on the command line (`--nconnect 4`, `--smb-credentials FILE`),
/// in the order of the registry's knobs.
#[derive(Clone, Debug, Default)]
pub struct TransportKnobs {
    /// The values given, each checked by its knob's parser.
    pub given: Vec<GivenKnob>,
}

impl TransportKnobs {
    /// Writes the flags given into `settings` (after what they hold: these win).
    pub fn apply(&self, settings: &mut Settings) {
        settings.transport.extend(self.given.iter().cloned());
    }
}

/// The process's transports, or none before the facade installs them.
pub(crate) fn registry() -> &'static Transports {
    static NONE: std::sync::OnceLock<Transports> = std::sync::OnceLock::new();
    installed().unwrap_or_else(|| NONE.get_or_init(Transports::new))
}

impl FromArgMatches for TransportKnobs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<TransportKnobs, clap::Error> {
        let mut given = Vec::new();
        for knob in registry().knobs() {
            if let Ok(Some(text)) = matches.try_get_one::<String>(knob.key) {
                given.push(GivenKnob { knob, text: text.clone(), offset: None });
            }
        }
        Ok(TransportKnobs { given })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = TransportKnobs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for TransportKnobs {
    fn augment_args(mut command: Command) -> Command {
        for group in registry().knob_groups() {
            for knob in group.knobs {
                let check = move |text: &str| knob.check(text).map(|()| text.to_owned());
                command = command.arg(
                    Arg::new(knob.key)
                        .long(knob.flag)
                        .value_name(knob.value_name)
                        .help(knob.help_with_default())
                        .help_heading(group.heading)
                        .allow_hyphen_values(true)
                        .value_parser(check),
                );
            }
        }
        command
    }

    fn augment_args_for_update(command: Command) -> Command {
        TransportKnobs::augment_args(command)
    }
}
