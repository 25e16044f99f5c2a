//! [`SmbCredentials`]: who an `smb://` client logs in as, from a `mount.cifs` credentials file or
//! the environment; never from the URL, never shown.

use std::fmt;
use std::path::Path;

use super::{SmbOptions, SmbUrl, SmbUrlPart};

/// The environment variable naming the user when neither the URL nor a credentials file does.
pub const USER_ENV: &str = "PLAYSIM_SMB_USER";
/// The environment variable holding the password when no credentials file is given.
pub const PASSWORD_ENV: &str = "PLAYSIM_SMB_PASSWORD";

/// A user, password and domain to log in with. `Debug` shows no password, and nothing in
/// playsim prints or reports one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SmbCredentials {
    /// The user; empty for a guest login.
    pub user: String,
    /// The password; empty for a guest login.
    pub password: String,
    /// The domain; empty for the server's own accounts.
    pub domain: String,
}

impl fmt::Debug for SmbCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbCredentials")
            .field("user", &self.user)
            .field("password", &if self.password.is_empty() { "" } else { "***" })
            .field("domain", &self.domain)
            .finish()
    }
}

impl SmbCredentials {
    /// The credentials for `url`: the credentials file of `options` if given, else the
    /// environment ([`USER_ENV`], [`PASSWORD_ENV`]); a user in the URL takes precedence over
    /// either's. No user and no password at all is a guest login; a user with no password is
    /// refused, naming where a password may come from.
    pub fn load(url: &SmbUrl, options: &SmbOptions) -> Result<SmbCredentials, crate::Error> {
        let bad = |reason: String| crate::Error::Url {
            url: url.as_str().to_owned(),
            part: SmbUrlPart::Credentials,
            reason,
        };
        let mut credentials = match &options.credentials_file {
            Some(file) => SmbCredentials::from_file(file).map_err(bad)?,
            None => SmbCredentials {
                user: std::env::var(USER_ENV).unwrap_or_default(),
                password: std::env::var(PASSWORD_ENV).unwrap_or_default(),
                domain: String::new(),
            },
        };
        if let Some(user) = url.user() {
            credentials.user = user.to_owned();
        }
        if !credentials.user.is_empty() && credentials.password.is_empty() {
            let source = match &options.credentials_file {
                Some(file) => format!("{} has no password= line", file.display()),
                None => format!("{PASSWORD_ENV} is not set"),
            };
            return Err(bad(format!(
                "no password for user `{}`: {source}; give --smb-credentials FILE (username= and \
                 password= lines, mode 0600) or set {PASSWORD_ENV}",
                credentials.user
            )));
        }
        Ok(credentials)
    }

    /// Reads a `mount.cifs` credentials file: `username=` (or `user=`), `password=` (or
    /// `pass=`) and `domain=` (or `dom=`) lines; blank lines and `#` comments are skipped. The
    /// error names the file and line, and never quotes the file.
    pub fn from_file(path: &Path) -> Result<SmbCredentials, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the credentials file {}: {e}", path.display()))?;
        SmbCredentials::parse(&text).map_err(|reason| format!("{}: {reason}", path.display()))
    }

    fn parse(text: &str) -> Result<SmbCredentials, String> {
        let mut credentials = SmbCredentials::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(format!(
                    "line {} is not `key=value`: give username=NAME and password=SECRET lines",
                    i + 1
                ));
            };
            // mount.cifs keeps everything after `=` in a password, spaces included.
            match key.trim() {
                "username" | "user" => credentials.user = value.trim().to_owned(),
                "password" | "pass" => credentials.password = value.trim_end_matches(['\r', '\n']).to_owned(),
                "domain" | "dom" | "workgroup" => credentials.domain = value.trim().to_owned(),
                other => {
                    return Err(format!(
                        "line {}: unknown key `{other}`; known: username, password, domain",
                        i + 1
                    ))
                }
            }
        }
        Ok(credentials)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_cifs_file_is_read() {
        let c =
            SmbCredentials::parse("# for the filer\nusername=ann\npassword=p a=ss\ndomain=STUDIO\n").unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str(), c.domain.as_str()), ("ann", "p a=ss", "STUDIO"));
        let short = SmbCredentials::parse("user=bob\npass=x\n").unwrap();
        assert_eq!((short.user.as_str(), short.password.as_str()), ("bob", "x"));
    }

    #[test]
    fn a_bad_line_is_named_without_quoting_it() {
        let err = SmbCredentials::parse("username=ann\nsecret-without-key\n").unwrap_err();
        assert!(err.starts_with("line 2 is not `key=value`"), "{err}");
        assert!(!err.contains("secret"), "{err}");
        assert!(SmbCredentials::parse("pwd=x").unwrap_err().contains("unknown key `pwd`"));
    }

    #[test]
    fn debug_hides_the_password() {
        let c = SmbCredentials { user: "ann".into(), password: "hunter2".into(), domain: String::new() };
        let shown = format!("{c:?}");
        assert!(shown.contains("ann") && !shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn a_user_without_password_is_refused_and_the_url_user_wins() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("creds");
        std::fs::write(&file, "username=ann\n").unwrap();
        let url = SmbUrl::parse("smb://filer/media").unwrap();
        let options = SmbOptions { credentials_file: Some(file.clone()), ..SmbOptions::default() };
        let err = SmbCredentials::load(&url, &options).unwrap_err().to_string();
        assert!(err.contains("no password for user `ann`") && err.contains("no password= line"), "{err}");
        std::fs::write(&file, "username=ann\npassword=pw\n").unwrap();
        let url = SmbUrl::parse("smb://bob@filer/media").unwrap();
        let c = SmbCredentials::load(&url, &options).unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str()), ("bob", "pw"));
    }
}
