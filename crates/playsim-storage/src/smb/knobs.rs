//! The knobs of playsim's SMB client: `--smb-credentials` (and its scenario key), parsed into
//! [`SmbOptions`].

use std::path::PathBuf;

use super::SmbOptions;
use crate::knob::{set_with, KnobGroup, TransportKnob};

/// playsim's SMB client settings, for `smb://` sources and destinations.
pub static SMB_KNOBS: KnobGroup = KnobGroup {
    heading: "playsim's SMB client (smb://)",
    knobs: &[TransportKnob {
        flag: "smb-credentials",
        key: "smb_credentials",
        help: "A file of username= and password= lines (mount.cifs's credentials format) for smb:// \
               sources; without it, PLAYSIM_SMB_USER and PLAYSIM_SMB_PASSWORD. A password is never taken \
               from the URL, shown nor reported",
        shown_default: None,
        value_name: "FILE",
        per_stream: false,
        example: "smb_credentials = \"/etc/playsim/filer.cred\"  (username= and password= lines)",
        apply: |text, options| {
            set_with(text, options, file_path, |o: &mut SmbOptions, v| o.credentials_file = Some(v))
        },
    }],
};

/// A file's path, as `--smb-credentials` takes: not empty. Whether it can be read is checked
/// when it is used, naming the file.
pub fn file_path(s: &str) -> Result<PathBuf, String> {
    if s.trim().is_empty() {
        return Err("the path is empty (for example /etc/playsim/filer.cred)".into());
    }
    Ok(PathBuf::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::TransportOptions;

    #[test]
    fn the_credentials_file_reaches_the_options() {
        let mut options = TransportOptions::new();
        assert_eq!((SMB_KNOBS.knobs[0].apply)("/etc/playsim/filer.cred", &mut options), Ok(()));
        assert_eq!(
            options.get::<SmbOptions>().credentials_file,
            Some(PathBuf::from("/etc/playsim/filer.cred"))
        );
        assert!(file_path(" ").unwrap_err().contains("for example"));
    }
}
