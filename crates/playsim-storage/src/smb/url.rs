//! `smb://[user@]host[:port]/share/path[?vers=&sign=&seal=]` URLs: parsed, checked, and shown
//! without what must not be shown.

use std::fmt;

/// The part of an `smb://` URL at fault: the URL parts every transport blames.
pub use crate::error::UrlPart as SmbUrlPart;

/// A valid `smb://` location, for messages that refuse one.
pub const SMB_URL_EXAMPLE: &str = "smb://filer/media/shot/shot.%07d.dpx";

/// The URL options, for messages.
const OPTIONS: &str = "vers=3.1.1|3.0.2|3.0|2.1|2.0.2, sign=on|off, seal=on|off";

/// An SMB dialect, as `mount.cifs`'s `vers=` spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SmbDialect {
    /// SMB 2.0.2.
    Smb2_0_2,
    /// SMB 2.1.
    Smb2_1,
    /// SMB 3.0.
    Smb3_0,
    /// SMB 3.0.2.
    Smb3_0_2,
    /// SMB 3.1.1, the default.
    #[default]
    Smb3_1_1,
}

impl SmbDialect {
    /// Parses `vers=`'s value.
    pub fn parse(text: &str) -> Option<SmbDialect> {
        Some(match text {
            "2.0.2" | "2.02" => SmbDialect::Smb2_0_2,
            "2.1" => SmbDialect::Smb2_1,
            "3.0" | "3" => SmbDialect::Smb3_0,
            "3.0.2" | "3.02" => SmbDialect::Smb3_0_2,
            "3.1.1" | "3.11" => SmbDialect::Smb3_1_1,
            _ => return None,
        })
    }

    /// As `vers=` spells it: `3.1.1`.
    pub fn as_str(self) -> &'static str {
        match self {
            SmbDialect::Smb2_0_2 => "2.0.2",
            SmbDialect::Smb2_1 => "2.1",
            SmbDialect::Smb3_0 => "3.0",
            SmbDialect::Smb3_0_2 => "3.0.2",
            SmbDialect::Smb3_1_1 => "3.1.1",
        }
    }
}

impl fmt::Display for SmbDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed `smb://` URL. It holds no password: one in the URL is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmbUrl {
    text: String,
    user: Option<String>,
    host: String,
    port: u16,
    share: String,
    path: String,
    dialect: SmbDialect,
    sign: bool,
    seal: bool,
}

impl SmbUrl {
    /// Parses `text`; the error names the part at fault and shows a valid example. A password
    /// (`user:password@`) is refused, and the error does not repeat it.
    pub fn parse(text: &str) -> Result<SmbUrl, crate::Error> {
        let shown = redact(text);
        let bad = |part: SmbUrlPart, reason: String| crate::Error::Url { url: shown.clone(), part, reason };
        let rest = match text.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("smb") => rest,
            _ => {
                return Err(bad(SmbUrlPart::Url, format!("not an smb:// URL; for example {SMB_URL_EXAMPLE}")))
            }
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo), hostport),
            None => (None, authority),
        };
        let user = match userinfo {
            Some(userinfo) if userinfo.contains(':') => {
                return Err(bad(
                    SmbUrlPart::Credentials,
                    format!(
                        "a password in the URL is refused: it would show in `ps`, shell history and the \
                         report; give it with --smb-credentials FILE (username= and password= lines, as \
                         mount.cifs reads) or the environment ({} and {}), for example {SMB_URL_EXAMPLE}",
                        super::USER_ENV,
                        super::PASSWORD_ENV
                    ),
                ))
            }
            Some("") => return Err(bad(SmbUrlPart::Credentials, "the user before `@` is empty".into())),
            Some(user) => Some(user.to_owned()),
            None => None,
        };
        let (host, port) = split_host_port(hostport).map_err(|reason| bad(SmbUrlPart::Port, reason))?;
        if host.is_empty() {
            return Err(bad(SmbUrlPart::Host, format!("no host; for example {SMB_URL_EXAMPLE}")));
        }
        let (share, path) = path.split_once('/').unwrap_or((path, ""));
        if share.is_empty() {
            return Err(bad(
                SmbUrlPart::Share,
                format!("no share after the host; for example {SMB_URL_EXAMPLE} (share `media`)"),
            ));
        }
        let mut url = SmbUrl {
            text: text.to_owned(),
            user,
            host,
            port,
            share: share.to_owned(),
            path: format!("/{}", path.trim_matches('/')),
            dialect: SmbDialect::default(),
            sign: true,
            seal: false,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let on_off = |value: &str| match value {
                "on" | "yes" | "true" | "1" => Ok(true),
                "off" | "no" | "false" | "0" => Ok(false),
                _ => Err(bad(
                    SmbUrlPart::Option,
                    format!("{key}={value}: give on or off, for example {key}=on"),
                )),
            };
            match key {
                "vers" => {
                    url.dialect = SmbDialect::parse(value).ok_or_else(|| {
                        bad(SmbUrlPart::Option, format!("vers={value}: give 3.1.1, 3.0.2, 3.0, 2.1 or 2.0.2"))
                    })?;
                }
                "seal" => url.seal = on_off(value)?,
                "sign" => url.sign = on_off(value)?,
                _ => {
                    return Err(bad(SmbUrlPart::Option, format!("unknown option `{key}`; known: {OPTIONS}")))
                }
            }
        }
        Ok(url)
    }

    /// True when `text` is meant as an SMB URL (it starts with `smb://`, any case).
    pub fn is_smb_url(text: &str) -> bool {
        text.split_once("://").is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("smb"))
    }

    /// The URL as given (it holds no password).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The user named in the URL, if any.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The host name or address, without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port: the URL's, else 445.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port` to dial, with brackets around an IPv6 address.
    pub fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The share's name.
    pub fn share(&self) -> &str {
        &self.share
    }

    /// The path inside the share, from its root: `/shot/shot.%07d.dpx`, or `/` for the share.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The dialect asked for (`?vers=`, 3.1.1 by default).
    pub fn dialect(&self) -> SmbDialect {
        self.dialect
    }

    /// Whether signing was asked for when the server does not require it (`?sign=`, on by
    /// default). A server that requires signing is signed for either way.
    pub fn sign(&self) -> bool {
        self.sign
    }

    /// Whether encryption was asked for (`?seal=on`).
    pub fn seal(&self) -> bool {
        self.seal
    }

    /// `path` (a path inside the share) as a URL, for messages: `smb://host:port/share/path`.
    pub fn display_path(&self, path: &str) -> String {
        format!("smb://{}/{}/{}", self.addr(), self.share, path.trim_start_matches('/'))
    }
}

/// `text` with any password between `user:` and `@` replaced by `***`, for messages.
pub(crate) fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else { return text.to_owned() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match authority.rsplit_once('@') {
        Some((userinfo, hostport)) if userinfo.contains(':') => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:***@{hostport}{}", &rest[authority_end..])
        }
        _ => text.to_owned(),
    }
}

fn split_host_port(hostport: &str) -> Result<(String, u16), String> {
    const DEFAULT_PORT: u16 = 445;
    let parse_port = |port: &str| match port.parse::<u16>() {
        Ok(0) | Err(_) => {
            Err(format!("`{port}` is not a port (1 to 65535), for example smb://filer:445/media"))
        }
        Ok(port) => Ok(port),
    };
    if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{hostport}`: an IPv6 address needs its closing `]`"))?;
        return match after.strip_prefix(':') {
            Some(port) => Ok((host.to_owned(), parse_port(port)?)),
            None if after.is_empty() => Ok((host.to_owned(), DEFAULT_PORT)),
            None => Err(format!("`{hostport}`: expected `:port` after `]`")),
        };
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => Ok((host.to_owned(), parse_port(port)?)),
        None => Ok((hostport.to_owned(), DEFAULT_PORT)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_host_port_share_and_path() {
        let url = SmbUrl::parse("smb://ann@filer:4455/media/shot/shot.%07d.dpx?vers=3.0.2&seal=on").unwrap();
        assert_eq!(
            (url.user(), url.host(), url.port(), url.share(), url.path()),
            (Some("ann"), "filer", 4455, "media", "/shot/shot.%07d.dpx")
        );
        assert_eq!(
            (url.dialect(), url.seal(), url.addr()),
            (SmbDialect::Smb3_0_2, true, "filer:4455".into())
        );
        let plain = SmbUrl::parse("SMB://[::1]/media").unwrap();
        assert_eq!(
            (plain.host(), plain.port(), plain.path(), plain.addr()),
            ("::1", 445, "/", "[::1]:445".into())
        );
        assert_eq!((plain.dialect(), plain.sign(), plain.seal()), (SmbDialect::Smb3_1_1, true, false));
        let unsigned = SmbUrl::parse("smb://filer/media?sign=off").unwrap();
        assert!(!unsigned.sign());
    }

    #[test]
    fn a_password_in_the_url_is_refused_without_repeating_it() {
        let err = SmbUrl::parse("smb://ann:hunter2@filer/media/a.dpx").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(
            err.starts_with("smb://ann:***@filer/media/a.dpx: credentials: a password in the URL is refused")
        );
        assert!(err.contains("--smb-credentials FILE") && err.contains("PLAYSIM_SMB_PASSWORD"), "{err}");
    }

    #[test]
    fn bad_parts_are_named_with_an_example() {
        let part = |text: &str| match SmbUrl::parse(text).unwrap_err() {
            crate::Error::Url { part, reason, .. } => (part, reason),
            other => panic!("{other}"),
        };
        assert_eq!(part("smb://filer").0, SmbUrlPart::Share);
        assert_eq!(part("smb:///media").0, SmbUrlPart::Host);
        assert_eq!(part("smb://filer:0/media").0, SmbUrlPart::Port);
        assert_eq!(part("smb://filer:x/media").0, SmbUrlPart::Port);
        assert_eq!(part("nfs://filer/media").0, SmbUrlPart::Url);
        let (p, reason) = part("smb://filer/media?vers=4");
        assert_eq!(p, SmbUrlPart::Option);
        assert!(reason.contains("3.1.1"), "{reason}");
        assert!(part("smb://filer/media?sign=maybe").1.contains("give on or off"));
        assert!(part("smb://filer/media?nconnect=4").1.contains("known: vers="));
    }
}
