//! `nfs://` and `nfs+rdma://` URLs: host, port, the path on the server with its sequence
//! tokens, the options libnfs names (`export`, `mountport`, `nfsport`, `uid`, `gid`), and
//! `proto` (`tcp` or `rdma`, as a kernel mount's option).
//!
//! Sequence tokens in the last path segment (`%07d`, `%d`, `#`, `@`) are pattern tokens,
//! not percent-escapes or a fragment: they are pulled out before the rest is percent-decoded.

use std::fmt;

pub use crate::error::UrlPart;

/// The example every URL error shows.
pub const URL_EXAMPLE: &str = "nfs://filer:2049/media/shot/shot.%07d.dpx?mountport=20048&uid=1000&gid=1000";

/// The URL schemes of NFS, without `://`: over TCP, and RPC-over-RDMA.
const SCHEMES: [&str; 2] = ["nfs", "nfs+rdma"];

/// The values `?proto=` takes.
const PROTOS: [&str; 2] = ["tcp", "rdma"];

/// A parsed `nfs://host[:port]/path[?options]` (or `nfs+rdma://`) URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfsUrl {
    raw: String,
    /// The scheme, lower-case, without `://`: `nfs` or `nfs+rdma`.
    scheme: &'static str,
    /// The scheme and the authority as given, for naming files in messages.
    origin: String,
    host: String,
    path: String,
    export: Option<String>,
    mount_port: Option<u16>,
    nfs_port: Option<u16>,
    uid: Option<u32>,
    gid: Option<u32>,
    proto: Option<&'static str>,
}

impl NfsUrl {
    /// True when `text` is meant as an NFS URL (it starts with `nfs://` or `nfs+rdma://`, any
    /// case), so that a malformed one is refused as a URL rather than looked for as a local file.
    pub fn is_nfs_url(text: &str) -> bool {
        scheme_of(text).is_some()
    }

    /// Parses `text`; the error says which part is malformed and shows a valid example.
    pub fn parse(text: &str) -> Result<NfsUrl, crate::Error> {
        let bad = |part: UrlPart, reason: String| crate::Error::Url {
            url: text.to_owned(),
            part,
            reason: format!("{reason} (for example {URL_EXAMPLE})"),
        };
        let Some(scheme) = scheme_of(text) else {
            return Err(bad(UrlPart::Url, "an nfs url starts with nfs://".into()));
        };
        let origin_len = scheme.len() + 3;
        let rest = &text[origin_len..];
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(bad(UrlPart::Host, "user names are not supported: give ?uid= and ?gid=".into()));
        }
        let (host, port) = split_host_port(authority).map_err(|r| bad(UrlPart::Port, r))?;
        if host.is_empty() {
            return Err(bad(UrlPart::Host, "the host is missing".into()));
        }
        if !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b)) {
            return Err(bad(UrlPart::Host, format!("`{host}` is not a host name or address")));
        }
        if path.is_empty() || path == "/" {
            return Err(bad(UrlPart::Path, "the path on the server is missing".into()));
        }
        let path = decode_path(path).map_err(|r| bad(UrlPart::Path, r))?;
        let mut url = NfsUrl {
            raw: text.to_owned(),
            scheme,
            origin: format!("{}{authority}", &text[..origin_len]),
            host: host.to_owned(),
            path,
            export: None,
            mount_port: None,
            nfs_port: port,
            uid: None,
            gid: None,
            proto: None,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value).map_err(|r| bad(UrlPart::Option, r))?;
            let number = |what: &str| {
                value
                    .parse::<u32>()
                    .map_err(|_| bad(UrlPart::Option, format!("{what}={value} is not a number")))
            };
            let port = |what: &str| -> Result<u16, crate::Error> {
                match value.parse::<u16>() {
                    Ok(p) if p > 0 => Ok(p),
                    _ => Err(bad(UrlPart::Port, format!("{what}={value} is not a port (1 to 65535)"))),
                }
            };
            match key {
                "export" => {
                    if !value.starts_with('/') {
                        return Err(bad(UrlPart::Export, format!("export={value} must be an absolute path")));
                    }
                    url.export = Some(trim_trailing_slash(&value).to_owned());
                }
                "mountport" => url.mount_port = Some(port("mountport")?),
                "nfsport" => url.nfs_port = Some(port("nfsport")?),
                "uid" => url.uid = Some(number("uid")?),
                "gid" => url.gid = Some(number("gid")?),
                "proto" => {
                    let proto =
                        PROTOS.into_iter().find(|p| p.eq_ignore_ascii_case(&value)).ok_or_else(|| {
                            bad(
                                UrlPart::Option,
                                format!("proto={value} is not a protocol: tcp or rdma, as in ?proto=rdma"),
                            )
                        })?;
                    url.proto = Some(proto);
                }
                other => {
                    return Err(bad(
                        UrlPart::Option,
                        format!(
                            "unknown option `{other}`: known are export, mountport, nfsport, uid, gid, proto"
                        ),
                    ))
                }
            }
        }
        if let Some(export) = &url.export {
            if !is_path_prefix(export, &url.path) {
                return Err(bad(
                    UrlPart::Export,
                    format!("export={export} does not contain the path {}", url.path),
                ));
            }
        }
        Ok(url)
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The scheme, lower-case, without `://`: `nfs`, or `nfs+rdma` for RPC-over-RDMA.
    pub fn scheme(&self) -> &str {
        self.scheme
    }

    /// The transport `?proto=` asks for, lower-case (`tcp` or `rdma`), if given. The URL
    /// does not choose its transport itself: `nfs://...?proto=rdma` is for the RDMA transport
    /// to take, as `nfs+rdma://` is.
    pub fn proto(&self) -> Option<&str> {
        self.proto
    }

    /// The host name or address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The path on the server, percent-decoded, sequence tokens kept (`/media/shot.%07d.dpx`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The export given with `?export=`, if any.
    pub fn export(&self) -> Option<&str> {
        self.export.as_deref()
    }

    /// The MOUNT service's port, when given (else the portmapper is asked).
    pub fn mount_port(&self) -> Option<u16> {
        self.mount_port
    }

    /// The NFS service's port, when given as `host:port` or `?nfsport=` (else the portmapper is asked).
    pub fn nfs_port(&self) -> Option<u16> {
        self.nfs_port
    }

    /// The AUTH_SYS user id to send (default 0 when run as root, else the process's).
    pub fn uid(&self) -> Option<u32> {
        self.uid
    }

    /// The AUTH_SYS group id to send.
    pub fn gid(&self) -> Option<u32> {
        self.gid
    }

    /// `nfs://host[:port]` (the scheme as given) followed by `path`, for naming a file on the
    /// server in messages.
    pub fn display_path(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }
}

impl fmt::Display for NfsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// The scheme `text` starts with, followed by `://` (any case), among [`SCHEMES`].
fn scheme_of(text: &str) -> Option<&'static str> {
    // On bytes: a slice of the text at the scheme's length may cut a character in two.
    SCHEMES.into_iter().find(|scheme| {
        text.as_bytes().get(..scheme.len() + 3).is_some_and(|start| {
            start[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes()) && &start[scheme.len()..] == b"://"
        })
    })
}

/// True when `prefix` is `path` or a directory above it (component-wise: `/a` holds `/a/b`, not `/ab`).
pub(crate) fn is_path_prefix(prefix: &str, path: &str) -> bool {
    let prefix = trim_trailing_slash(prefix);
    prefix == "/"
        || path == prefix
        || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

fn trim_trailing_slash(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/"
    } else {
        trimmed
    }
}

fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    if let Some(rest) = authority.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err("an IPv6 address must be closed with ]".into());
        };
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, Some(parse_port(port)?))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(format!("unexpected `{after}` after the address")),
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Ok((host, Some(parse_port(port)?))),
        None => Ok((authority, None)),
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("`{text}` is not a port (1 to 65535)")),
    }
}

/// Percent-decodes `path`, except the sequence tokens of its last segment.
fn decode_path(path: &str) -> Result<String, String> {
    let (dir, last) = path.rsplit_once('/').unwrap_or(("", path));
    let mut decoded = percent_decode(dir)?;
    decoded.push('/');
    let mut rest = last;
    while !rest.is_empty() {
        if let Some(len) = token_len(rest) {
            decoded.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        // By characters: the path is the user's text, and a byte index may fall inside one.
        let next = rest.char_indices().skip(1).find(|&(_, c)| c == '%').map_or(rest.len(), |(i, _)| i);
        let (plain, tail) = if rest.starts_with('%') {
            // A `%` that does not start a token is an escape: exactly three characters.
            rest.split_at(rest.char_indices().nth(3).map_or(rest.len(), |(i, _)| i))
        } else {
            rest.split_at(next)
        };
        decoded.push_str(&percent_decode(plain)?);
        rest = tail;
    }
    if decoded.split('/').any(|c| c == "..") {
        return Err("`..` is not allowed in the path".into());
    }
    Ok(decoded)
}

/// The length of a printf frame-number token at the start of `text`: `%d` or `%0Nd`.
fn token_len(text: &str) -> Option<usize> {
    let digits = text.strip_prefix('%')?;
    let n_digits = digits.bytes().take_while(u8::is_ascii_digit).count();
    let valid = n_digits == 0 || digits.starts_with('0');
    (valid && digits.as_bytes().get(n_digits) == Some(&b'd')).then_some(n_digits + 2)
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex =
                text.get(i + 1..i + 3).ok_or_else(|| format!("`{}` is a broken %-escape", &text[i..]))?;
            let byte = u8::from_str_radix(hex, 16)
                .map_err(|_| format!("`%{hex}` is not a %-escape (two hex digits)"))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the path's %-escapes do not decode to UTF-8".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keeps_sequence_tokens_and_decodes_escapes() {
        let url = NfsUrl::parse("nfs://filer/media/My%20Shot/shot.%07d.dpx").unwrap();
        assert_eq!(url.host(), "filer");
        assert_eq!(url.path(), "/media/My Shot/shot.%07d.dpx");
        assert_eq!(url.nfs_port(), None);

        let url = NfsUrl::parse("nfs://filer/m/take%231.####.exr").unwrap();
        assert_eq!(url.path(), "/m/take#1.####.exr");
        let url = NfsUrl::parse("nfs://filer/m/a%25b.%d.dpx").unwrap();
        assert_eq!(url.path(), "/m/a%b.%d.dpx");
        let url = NfsUrl::parse("nfs://filer/m/a.@@@@.dpx").unwrap();
        assert_eq!(url.path(), "/m/a.@@@@.dpx");
        // `%20` in the last segment is still an escape, `%04d` a token.
        let url = NfsUrl::parse("nfs://filer/m/a%20b.%04d.dpx").unwrap();
        assert_eq!(url.path(), "/m/a b.%04d.dpx");
    }

    #[test]
    fn reads_ports_and_options() {
        let url = NfsUrl::parse("nfs://127.0.0.1:2049/export/dir/?mountport=20048&uid=1000&gid=100").unwrap();
        assert_eq!(url.nfs_port(), Some(2049));
        assert_eq!(url.mount_port(), Some(20048));
        assert_eq!((url.uid(), url.gid()), (Some(1000), Some(100)));
        assert_eq!(url.path(), "/export/dir/");

        let url = NfsUrl::parse("nfs://[::1]:22049/x/clip.mov?export=/x/&nfsport=2050").unwrap();
        assert_eq!(url.host(), "::1");
        assert_eq!(url.nfs_port(), Some(2050));
        assert_eq!(url.export(), Some("/x"));
    }

    #[test]
    fn refuses_malformed_urls_naming_the_part() {
        let cases = [
            ("http://filer/x", UrlPart::Url),
            ("nfs://", UrlPart::Host),
            ("nfs://filer", UrlPart::Path),
            ("nfs://filer/", UrlPart::Path),
            ("nfs://filer:99999/x", UrlPart::Port),
            ("nfs://filer:abc/x", UrlPart::Port),
            ("nfs://user@filer/x", UrlPart::Host),
            ("nfs://fi ler/x", UrlPart::Host),
            ("nfs://filer/x/%zz.dpx", UrlPart::Path),
            ("nfs://filer/x/../y.dpx", UrlPart::Path),
            ("nfs://filer/x?mountport=0", UrlPart::Port),
            ("nfs://filer/x?uid=root", UrlPart::Option),
            ("nfs://filer/x?timeout=3", UrlPart::Option),
            ("nfs://filer/x?proto=udp", UrlPart::Option),
            ("nfs+tcp://filer/x", UrlPart::Url),
            ("nfs+rdma:/filer/x", UrlPart::Url),
            ("nfs+rdma://", UrlPart::Host),
            ("nfs://filer/x/y?export=/z", UrlPart::Export),
            ("nfs://filer/x/y?export=z", UrlPart::Export),
        ];
        for (text, part) in cases {
            let err = NfsUrl::parse(text).unwrap_err();
            let crate::Error::Url { part: got, .. } = &err else { panic!("{text}: {err}") };
            assert_eq!(*got, part, "{text}: {err}");
            let message = err.to_string();
            assert!(message.contains(text) && message.contains("for example nfs://"), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn takes_the_rdma_scheme_and_the_proto_option() {
        let url = NfsUrl::parse("nfs+rdma://filer:20049/media/shot.%07d.dpx?mountport=20048").unwrap();
        assert_eq!((url.scheme(), url.host(), url.nfs_port()), ("nfs+rdma", "filer", Some(20049)));
        assert_eq!(url.path(), "/media/shot.%07d.dpx");
        assert_eq!(url.display_path("/media/a.dpx"), "nfs+rdma://filer:20049/media/a.dpx");
        assert_eq!(url.proto(), None);
        assert!(NfsUrl::is_nfs_url("NFS+RDMA://filer/x"));
        assert_eq!(NfsUrl::parse("NFS+RDMA://filer/x").unwrap().scheme(), "nfs+rdma");

        let url = NfsUrl::parse("nfs://filer/media/a.dpx?proto=rdma").unwrap();
        assert_eq!((url.scheme(), url.proto()), ("nfs", Some("rdma")));
        assert_eq!(NfsUrl::parse("nfs://filer/a?proto=TCP").unwrap().proto(), Some("tcp"));

        let err = NfsUrl::parse("nfs://filer/a?proto=udp").unwrap_err().to_string();
        assert!(err.contains("proto=udp is not a protocol: tcp or rdma, as in ?proto=rdma"), "{err}");
        // Another scheme gets the message it always got.
        let err = NfsUrl::parse("smb://filer/a").unwrap_err().to_string();
        assert!(err.contains("url: an nfs url starts with nfs:// (for example nfs://"), "{err}");
    }

    #[test]
    fn export_prefixes_are_whole_components() {
        assert!(is_path_prefix("/a", "/a/b"));
        assert!(is_path_prefix("/a/", "/a/b"));
        assert!(is_path_prefix("/a", "/a"));
        assert!(is_path_prefix("/", "/a"));
        assert!(!is_path_prefix("/a", "/ab"));
    }
}
