//! The filesystem and mount options under a local path, from /proc/self/mountinfo.
//!
//! A "local" path may be a disk, a kernel NFS mount over TCP or RDMA, or an SMB
//! share, and which one decides what a run measures. [`mount_of`] finds the
//! mount a path is on; [`Mount::label`] says how its bytes travel ("nfs over
//! rdma", "smb direct (rdma)", "local (ext4)") and [`Mount::report_options`]
//! picks the options that matter for reading (vers, proto, rsize, nconnect, ...).
//!
//! ```
//! use std::path::Path;
//! use playsim_storage::mountinfo::{find_mount, parse_mountinfo};
//!
//! let text = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
//!             45 27 0:42 / /mnt/fast rw,relatime - nfs4 192.168.1.10:/export \
//!             rw,vers=4.2,rsize=1048576,hard,proto=rdma,port=20049,addr=192.168.1.10\n";
//! let mounts = parse_mountinfo(text);
//! let mount = find_mount(&mounts, Path::new("/mnt/fast/shot/shot.0001001.dpx")).unwrap();
//! assert_eq!(mount.label(), "nfs over rdma");
//! assert!(mount.is_rdma());
//! assert_eq!(find_mount(&mounts, Path::new("/mnt/fastest")).unwrap().label(), "local (ext4)");
//! ```

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use playsim_core::MountLabel;

/// Where the kernel lists the mounts of the calling process's mount namespace.
pub const MOUNTINFO_PATH: &str = "/proc/self/mountinfo";

/// One line of /proc/self/mountinfo, with its octal escapes (`\040` for a space) decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    /// The directory of the filesystem that is mounted here ("/" unless a bind mount).
    pub root: PathBuf,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The filesystem type: "nfs", "nfs4", "cifs", "ext4", ...
    pub fstype: String,
    /// What is mounted: "10.0.0.5:/ifs/media", "//server/share", "/dev/vda", ...
    pub source: String,
    /// The options of this mount point (rw, relatime, ...), as key and value.
    pub mount_options: Vec<(String, Option<String>)>,
    /// The filesystem's own options (NFS: vers, proto, rsize, ...), as key and value.
    pub super_options: Vec<(String, Option<String>)>,
}

/// The mount `path` is on, from /proc/self/mountinfo; `None` when that cannot be read.
///
/// The path is made absolute and canonical where it exists. A path that does not
/// exist, such as a frame pattern `/mnt/x/shot.%07d.dpx`, is placed by its nearest
/// existing ancestor. This reads a small file from procfs: it blocks only briefly.
pub fn mount_of(path: &Path) -> Option<Mount> {
    let text = std::fs::read(MOUNTINFO_PATH).ok()?;
    let mounts = parse_mountinfo_bytes(&text);
    find_mount(&mounts, &resolve(path)).cloned()
}

/// Every well-formed line of a mountinfo text (see proc(5)); odd lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    parse_mountinfo_bytes(text.as_bytes())
}

/// As [`parse_mountinfo`], for the raw bytes (mount points need not be UTF-8).
pub fn parse_mountinfo_bytes(text: &[u8]) -> Vec<Mount> {
    text.split(|&b| b == b'\n').filter_map(parse_line).collect()
}

/// The mount whose mount point is the longest component-wise prefix of `path`
/// (`/mnt/a` is not a prefix of `/mnt/ab`); of equal mount points, the later line,
/// which is the mount on top. `path` should be absolute and canonical.
pub fn find_mount<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    let mut best: Option<(usize, &Mount)> = None;
    for mount in mounts {
        if !path.starts_with(&mount.mount_point) {
            continue;
        }
        let depth = mount.mount_point.components().count();
        if best.is_none_or(|(best_depth, _)| depth >= best_depth) {
            best = Some((depth, mount));
        }
    }
    best.map(|(_, mount)| mount)
}

impl Mount {
    /// The value of option `key`, looked up in the filesystem's options first, then
    /// in the mount point's; `Some("")` for a flag without a value.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.super_options
            .iter()
            .chain(&self.mount_options)
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    /// Whether the filesystem is NFS (any version).
    pub fn is_nfs(&self) -> bool {
        matches!(self.fstype.as_str(), "nfs" | "nfs4")
    }

    /// Whether the filesystem is SMB (the kernel's cifs client).
    pub fn is_smb(&self) -> bool {
        matches!(self.fstype.as_str(), "cifs" | "smb3" | "smb2" | "smbfs")
    }

    /// Whether reads go over the network, as far as the filesystem type tells.
    pub fn is_network(&self) -> bool {
        self.is_nfs() || self.is_smb() || NETWORK_FSTYPES.contains(&self.fstype.as_str())
    }

    /// Whether reads go over RDMA: NFS with `proto=rdma` (or the `rdma` option), SMB Direct,
    /// or Lustre on an o2ib network.
    pub fn is_rdma(&self) -> bool {
        self.link() == Some(Link::Rdma)
    }

    /// How the bytes travel, for the report: "nfs over rdma", "nfs over tcp",
    /// "smb direct (rdma)", "smb", "ceph", "fuse (sshfs)", "memory (tmpfs)", "local (ext4)".
    pub fn label(&self) -> String {
        let fstype = self.fstype.as_str();
        if self.is_nfs() {
            return match self.link() {
                Some(link) => format!("nfs over {}", link.name()),
                None => "nfs".to_owned(),
            };
        }
        if self.is_smb() {
            return if self.is_rdma() { "smb direct (rdma)".to_owned() } else { "smb".to_owned() };
        }
        if fstype == "lustre" && self.is_rdma() {
            return "lustre over rdma (o2ib)".to_owned();
        }
        if let Some(kind) = fstype.strip_prefix("fuse.") {
            return format!("fuse ({kind})");
        }
        if NETWORK_FSTYPES.contains(&fstype) {
            return fstype.to_owned();
        }
        if matches!(fstype, "tmpfs" | "ramfs") {
            return format!("memory ({fstype})");
        }
        format!("local ({fstype})")
    }

    /// The options that matter for reading, for the report, in a fixed order:
    /// `fstype` and `source` first, then for NFS vers, proto, port, rsize, wsize,
    /// nconnect, hard/soft/softerr, timeo, retrans, sec, ... and for SMB vers, rdma,
    /// rsize, wsize, cache, multichannel, .... A flag such as `hard` has an empty value.
    pub fn report_options(&self) -> Vec<(String, String)> {
        let mut options =
            vec![("fstype".to_owned(), self.fstype.clone()), ("source".to_owned(), self.source.clone())];
        let keys: &[&str] = if self.is_nfs() {
            NFS_KEYS
        } else if self.is_smb() {
            SMB_KEYS
        } else {
            &[]
        };
        for key in keys {
            if let Some(value) = self.super_option(key) {
                options.push(((*key).to_owned(), value.to_owned()));
            }
        }
        if self.is_smb() {
            // `multichannel` asks for channels; the session says how many it has (a server with
            // one interface may grant one).
            let debug_data = std::fs::read_to_string(CIFS_DEBUG_DATA).unwrap_or_default();
            if let Some(channels) = smb_session_channels(&debug_data, &self.source) {
                options.push(("channels".to_owned(), channels.to_string()));
            }
        }
        options
    }

    /// The mount as the report carries it (the options without fstype and source,
    /// which have fields of their own).
    pub fn to_label(&self) -> MountLabel {
        MountLabel {
            mount_point: self.mount_point.display().to_string(),
            fstype: self.fstype.clone(),
            source: self.source.clone(),
            transport: self.label(),
            options: self
                .report_options()
                .into_iter()
                .filter(|(k, _)| k != "fstype" && k != "source")
                .collect(),
        }
    }

    /// A filesystem option (NFS and SMB keep theirs in the super options); `Some("")` for a flag.
    fn super_option(&self, key: &str) -> Option<&str> {
        self.super_options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    /// The network link of a network filesystem, when the options say.
    fn link(&self) -> Option<Link> {
        if self.is_nfs() {
            // proto is tcp, tcp6, udp, udp6, rdma or rdma6; the legacy `rdma` option implies it.
            let proto = self.super_option("proto");
            if self.super_option("rdma").is_some() || proto.is_some_and(|p| p.starts_with("rdma")) {
                return Some(Link::Rdma);
            }
            return match proto {
                Some(p) if p.starts_with("tcp") => match self.super_option("xprtsec") {
                    Some(sec) if sec != "none" => Some(Link::Tls),
                    _ => Some(Link::Tcp),
                },
                Some(p) if p.starts_with("udp") => Some(Link::Udp),
                // 20049 is the port NFS over RDMA listens on; without a proto it is the best hint.
                None if self.super_option("port") == Some("20049") => Some(Link::Rdma),
                _ => None,
            };
        }
        if self.is_smb() {
            // The cifs client lists `rdma` among its options when it uses SMB Direct.
            return Some(if self.super_option("rdma").is_some() { Link::Rdma } else { Link::Tcp });
        }
        if self.fstype == "lustre" && self.source.contains("@o2ib") {
            return Some(Link::Rdma);
        }
        None
    }
}

/// How a network filesystem's requests travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Tcp,
    Tls,
    Udp,
    Rdma,
}

impl Link {
    fn name(self) -> &'static str {
        match self {
            Link::Tcp => "tcp",
            Link::Tls => "tcp (tls)",
            Link::Udp => "udp",
            Link::Rdma => "rdma",
        }
    }
}

/// NFS options worth reporting, in report order.
const NFS_KEYS: &[&str] = &[
    "vers",
    "proto",
    "port",
    "rsize",
    "wsize",
    "nconnect",
    "max_connect",
    "hard",
    "soft",
    "softerr",
    "timeo",
    "retrans",
    "sec",
    "xprtsec",
    "rdma",
    "fsc",
    "noac",
    "addr",
    "clientaddr",
];

/// The cifs client's state: its servers, their sessions with their channels, and the shares
/// each session has connected.
const CIFS_DEBUG_DATA: &str = "/proc/fs/cifs/DebugData";

/// The channels of the cifs session that holds the share `source` (`//server/share`), from the
/// text of /proc/fs/cifs/DebugData: 1, plus its `Extra Channels: N` when it has any. `None`
/// when no session lists the share. A session starts at a line `N) Address: ...` (or
/// `N) Name: ...`) with `Uses:`, and lists its shares as `N) \\server\share Mounts: ...`.
pub fn smb_session_channels(debug_data: &str, source: &str) -> Option<u32> {
    let share = source.trim_start_matches('/').replace('/', "\\");
    let share = format!("\\\\{}", share.to_ascii_lowercase());
    let mut channels = 1;
    for line in debug_data.lines().map(str::trim) {
        let numbered =
            line.split_once(") ").filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if let Some((_, rest)) = numbered {
            if (rest.starts_with("Address: ") || rest.starts_with("Name: ")) && rest.contains(" Uses: ") {
                channels = 1;
            } else if rest.to_ascii_lowercase().split_whitespace().next() == Some(share.as_str()) {
                return Some(channels);
            }
        } else if let Some(n) = line.strip_prefix("Extra Channels: ") {
            channels = 1 + n.trim().parse::<u32>().ok()?;
        }
    }
    None
}

/// SMB (cifs) options worth reporting, in report order.
const SMB_KEYS: &[&str] =
    &["vers", "rdma", "rsize", "wsize", "cache", "multichannel", "max_channels", "seal", "addr"];

/// Filesystem types, other than NFS and SMB, whose reads go over the network.
const NETWORK_FSTYPES: &[&str] =
    &["ceph", "lustre", "gpfs", "beegfs", "wekafs", "glusterfs", "9p", "afs", "orangefs", "pvfs2", "davfs"];

/// Makes `path` absolute and resolves it through its nearest existing ancestor.
fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |dir| dir.join(path))
    };
    // A path that does not exist yet cannot be a mount point itself, so the mount
    // of its nearest existing ancestor is its mount.
    absolute.ancestors().find_map(|a| std::fs::canonicalize(a).ok()).unwrap_or(absolute)
}

/// One mountinfo line, or `None` when it is not one.
///
/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`:
/// mount id, parent id, major:minor, root, mount point, mount options, optional
/// fields ended by "-", then fstype, source and super options.
fn parse_line(line: &[u8]) -> Option<Mount> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let sep = 6 + fields.get(6..)?.iter().position(|f| *f == b"-")?;
    let number = |f: &[u8]| std::str::from_utf8(f).ok()?.parse::<u64>().ok();
    number(fields[0])?;
    number(fields[1])?;
    let (major, minor) = std::str::from_utf8(fields[2]).ok()?.split_once(':')?;
    number(major.as_bytes())?;
    number(minor.as_bytes())?;
    let root = path(fields[3]);
    let mount_point = path(fields[4]);
    if !mount_point.is_absolute() {
        return None;
    }
    let fstype = text(fields.get(sep + 1)?);
    if fstype.is_empty() {
        return None;
    }
    Some(Mount {
        root,
        mount_point,
        fstype,
        source: text(fields.get(sep + 2)?),
        mount_options: options(fields[5]),
        // Always present in the kernel's output; tolerated missing.
        super_options: fields.get(sep + 3).map_or_else(Vec::new, |f| options(f)),
    })
}

/// Comma-separated options as key and value; the escapes are decoded after
/// splitting, so an escaped comma (`\054`) stays inside its option.
fn options(field: &[u8]) -> Vec<(String, Option<String>)> {
    field
        .split(|&b| b == b',')
        .filter(|o| !o.is_empty())
        .map(|o| match o.iter().position(|&b| b == b'=') {
            Some(eq) => (text(&o[..eq]), Some(text(&o[eq + 1..]))),
            None => (text(o), None),
        })
        .collect()
}

fn path(field: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(&unescape(field)))
}

fn text(field: &[u8]) -> String {
    String::from_utf8_lossy(&unescape(field)).into_owned()
}

/// Decodes the kernel's octal escapes (`\040` space, `\011` tab, `\012` newline,
/// `\134` backslash); a backslash not followed by three octal digits stays as it is.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' {
            if let Some(&[a, b, c]) = field.get(i + 1..i + 4) {
                let octal = |d: u8| (b'0'..=b'7').contains(&d).then(|| u32::from(d - b'0'));
                if let (Some(a), Some(b), Some(c)) = (octal(a), octal(b), octal(c)) {
                    // \400 and above do not fit a byte: not an escape the kernel writes.
                    if let Ok(byte) = u8::try_from(a * 64 + b * 8 + c) {
                        out.push(byte);
                        i += 4;
                        continue;
                    }
                }
            }
        }
        out.push(field[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/fs/cifs/DebugData of kernel 6.1 with two sessions on one server: the first with
    /// one channel and the share `media`, the second with 2 extra channels and `grade`.
    const DEBUG_DATA: &str = "Display Internal CIFS Data Structures for Debugging
---------------------------------------------------
CIFS Version 2.40
Servers:
1) ConnectionId: 0x1 Hostname: 10.0.2.15
Number of credits: 8190,1,1 Dialect 0x311
TCP status: 1 Instance: 1

\tSessions:
\t1) Address: 10.0.2.15 Uses: 1 Capability: 0x300067\tSession Status: 1
\tSecurity type: RawNTLMSSP  SessionId: 0x1d encrypted
\tUser: 0 Cred User: 0

\tShares:
\t0) IPC: \\\\10.0.2.15\\IPC$ Mounts: 1 DevInfo: 0x0 Attributes: 0x0
\t1) \\\\10.0.2.15\\media Mounts: 1 DevInfo: 0x20 Attributes: 0x1006f

\t2) Address: 10.0.2.15 Uses: 1 Capability: 0x300067\tSession Status: 1
\tSecurity type: RawNTLMSSP  SessionId: 0x2d

\tExtra Channels: 2
\t\tChannel: 2 ConnectionId: 0x2
\t\tChannel: 3 ConnectionId: 0x3

\tShares:
\t0) IPC: \\\\10.0.2.15\\IPC$ Mounts: 1 DevInfo: 0x0 Attributes: 0x0
\t1) \\\\10.0.2.15\\Grade Mounts: 1 DevInfo: 0x20 Attributes: 0x1006f
";

    #[test]
    fn an_smb_mounts_channels_come_from_its_session_in_debug_data() {
        assert_eq!(smb_session_channels(DEBUG_DATA, "//10.0.2.15/media"), Some(1));
        assert_eq!(smb_session_channels(DEBUG_DATA, "//10.0.2.15/grade"), Some(3), "share names ignore case");
        assert_eq!(smb_session_channels(DEBUG_DATA, "//10.0.2.15/other"), None);
        assert_eq!(smb_session_channels(DEBUG_DATA, "//10.0.2.1/media"), None);
        assert_eq!(smb_session_channels("", "//10.0.2.15/media"), None);
        // Cut anywhere: an answer or none, never a panic.
        for cut in 0..DEBUG_DATA.len() {
            if DEBUG_DATA.is_char_boundary(cut) {
                let _ = smb_session_channels(&DEBUG_DATA[..cut], "//10.0.2.15/grade");
            }
        }
    }

    const ROOT: &str = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard";
    const ISILON: &str = "45 27 0:42 / /mnt/isilon rw,relatime shared:1 - nfs 10.0.0.5:/ifs/media \
        rw,vers=3,rsize=1048576,wsize=1048576,namlen=255,hard,nconnect=8,proto=tcp,timeo=600,retrans=2,\
        sec=sys,mountaddr=10.0.0.5,mountvers=3,mountport=300,mountproto=tcp,local_lock=none,addr=10.0.0.5";
    const RDMA: &str = "46 27 0:43 / /mnt/fast rw,relatime shared:2 master:7 - nfs4 192.168.1.10:/export \
        rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,\
        sec=sys,clientaddr=192.168.1.20,local_lock=none,addr=192.168.1.10";
    const SMB_DIRECT: &str = "47 27 0:44 / /mnt/smb rw,relatime - cifs //fs1/media rw,vers=3.1.1,\
        cache=strict,username=render,uid=0,noforceuid,gid=0,noforcegid,addr=10.0.0.9,soft,nounix,\
        serverino,mapposix,rdma,rsize=4194304,wsize=4194304,bsize=1048576,echo_interval=60,actimeo=1";

    fn mounts(lines: &[&str]) -> Vec<Mount> {
        parse_mountinfo(&lines.join("\n"))
    }

    fn label_of(mounts: &[Mount], path: &str) -> Option<String> {
        find_mount(mounts, Path::new(path)).map(Mount::label)
    }

    #[test]
    fn parses_an_nfs_over_tcp_line() {
        let m = &mounts(&[ISILON])[0];
        assert_eq!(m.root, Path::new("/"));
        assert_eq!(m.mount_point, Path::new("/mnt/isilon"));
        assert_eq!((m.fstype.as_str(), m.source.as_str()), ("nfs", "10.0.0.5:/ifs/media"));
        assert_eq!(m.mount_options, [("rw".to_owned(), None), ("relatime".to_owned(), None)]);
        assert_eq!(m.option("nconnect"), Some("8"));
        assert_eq!(m.option("hard"), Some(""));
        assert_eq!(m.option("relatime"), Some(""));
        assert_eq!(m.option("soft"), None);
        assert_eq!(m.label(), "nfs over tcp");
        assert!(m.is_network() && !m.is_rdma());
        let options: Vec<String> = m
            .report_options()
            .iter()
            .map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k}={v}") })
            .collect();
        assert_eq!(
            options,
            [
                "fstype=nfs",
                "source=10.0.0.5:/ifs/media",
                "vers=3",
                "proto=tcp",
                "rsize=1048576",
                "wsize=1048576",
                "nconnect=8",
                "hard",
                "timeo=600",
                "retrans=2",
                "sec=sys",
                "addr=10.0.0.5",
            ]
        );
    }

    #[test]
    fn nfs_over_rdma_says_rdma() {
        let m = &mounts(&[RDMA])[0];
        assert_eq!(m.label(), "nfs over rdma");
        assert!(m.is_rdma());
        let label = m.to_label();
        assert_eq!(label.mount_point, "/mnt/fast");
        assert_eq!((label.fstype.as_str(), label.source.as_str()), ("nfs4", "192.168.1.10:/export"));
        assert_eq!(label.transport, "nfs over rdma");
        let get = |key: &str| label.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        assert_eq!((get("vers"), get("proto"), get("port")), (Some("4.2"), Some("rdma"), Some("20049")));
        assert_eq!(get("fstype"), None, "fstype has its own field");
        assert_eq!(label.options[0], ("vers".to_owned(), "4.2".to_owned()));

        // The legacy `rdma` option, proto=rdma6, and a bare RDMA port all say RDMA.
        for supers in ["rw,vers=3,rdma,port=20049", "rw,vers=4.1,proto=rdma6", "rw,vers=3,port=20049"] {
            let line = format!("50 27 0:50 / /mnt/r rw - nfs h:/e {supers}");
            assert_eq!(mounts(&[&line])[0].label(), "nfs over rdma", "{supers}");
        }
        for (supers, label) in [
            ("rw,vers=3,proto=udp", "nfs over udp"),
            ("rw,vers=4.2,proto=tcp6", "nfs over tcp"),
            ("rw,vers=4.2,proto=tcp,xprtsec=tls", "nfs over tcp (tls)"),
            ("rw,vers=4.2", "nfs"),
        ] {
            let line = format!("50 27 0:50 / /mnt/r rw - nfs4 h:/e {supers}");
            assert_eq!(mounts(&[&line])[0].label(), label, "{supers}");
        }
    }

    #[test]
    fn smb_direct_and_plain_smb() {
        let m = &mounts(&[SMB_DIRECT])[0];
        assert_eq!(m.label(), "smb direct (rdma)");
        assert!(m.is_rdma() && m.is_smb());
        let options = m.report_options();
        let keys: Vec<&str> = options.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["fstype", "source", "vers", "rdma", "rsize", "wsize", "cache", "addr"]);
        let plain = SMB_DIRECT.replace(",rdma,", ",").replace(" cifs ", " smb3 ");
        assert_eq!(mounts(&[&plain])[0].label(), "smb");
    }

    #[test]
    fn other_filesystems() {
        for (fstype, source, label) in [
            ("ext4", "/dev/nvme0n1p2", "local (ext4)"),
            ("xfs", "/dev/md0", "local (xfs)"),
            ("tmpfs", "tmpfs", "memory (tmpfs)"),
            ("ceph", "10.0.0.1:6789:/", "ceph"),
            ("lustre", "10.0.0.1@o2ib:/lfs", "lustre over rdma (o2ib)"),
            ("lustre", "10.0.0.1@tcp:/lfs", "lustre"),
            ("fuse.sshfs", "me@host:/media", "fuse (sshfs)"),
        ] {
            let line = format!("60 27 8:1 / /data rw - {fstype} {source} rw");
            let m = &mounts(&[&line])[0];
            assert_eq!(m.label(), label);
            assert_eq!(m.report_options().len(), 2, "{fstype}: fstype and source only");
        }
    }

    #[test]
    fn octal_escapes_are_decoded() {
        let line =
            r"70 27 0:60 /sub\134dir /mnt/my\040media\011x rw - cifs //fs1/my\040share rw,username=a\054b";
        let m = &mounts(&[line])[0];
        assert_eq!(m.mount_point, Path::new("/mnt/my media\tx"));
        assert_eq!(m.root, Path::new(r"/sub\dir"));
        assert_eq!(m.source, "//fs1/my share");
        assert_eq!(m.option("username"), Some("a,b"), "an escaped comma stays in its option");
        // Not escapes: a lone backslash, too few digits, a non-octal digit, a value over 255.
        assert_eq!(unescape(br"a\b\04\089\777\"), br"a\b\04\089\777\");
        assert_eq!(unescape(br"\012\134\040"), b"\n\\ ");
    }

    #[test]
    fn longest_component_prefix_wins() {
        let list = mounts(&[ROOT, ISILON, "48 27 0:45 / /mnt/isilon/proj rw - ext4 /dev/sdb rw"]);
        assert_eq!(label_of(&list, "/mnt/isilon/shot/f.0001.dpx").as_deref(), Some("nfs over tcp"));
        assert_eq!(label_of(&list, "/mnt/isilon").as_deref(), Some("nfs over tcp"));
        assert_eq!(label_of(&list, "/mnt/isilon/proj/a").as_deref(), Some("local (ext4)"));
        // /mnt/isilon is not a prefix of /mnt/isilon2, nor /mnt/isilon/proj of /mnt/isilon/project.
        let m = find_mount(&list, Path::new("/mnt/isilon2/x")).expect("root");
        assert_eq!(m.mount_point, Path::new("/"));
        let m = find_mount(&list, Path::new("/mnt/isilon/project/x")).expect("isilon");
        assert_eq!(m.mount_point, Path::new("/mnt/isilon"));
        assert!(find_mount(&list, Path::new("relative/path")).is_none());
        assert!(find_mount(&[], Path::new("/")).is_none());
    }

    #[test]
    fn a_later_mount_on_the_same_point_wins() {
        let list = mounts(&[ROOT, ISILON, &RDMA.replace("/mnt/fast", "/mnt/isilon")]);
        assert_eq!(label_of(&list, "/mnt/isilon/a").as_deref(), Some("nfs over rdma"));
    }

    #[test]
    fn odd_lines_are_skipped() {
        let text = [
            "",
            "garbage",
            "1 2 3",
            "x 27 0:42 / /mnt rw - nfs h:/e rw",
            "45 27 042 / /mnt rw - nfs h:/e rw",
            "45 27 0:42 / /mnt rw nfs h:/e rw",
            "45 27 0:42 / relative rw - nfs h:/e rw",
            "45 27 0:42 / /mnt rw -",
            "45 27 0:42 / /mnt rw - nfs",
            "45 27 0:42 / /mnt rw -  h:/e rw",
            "- - - - - - - - -",
            "45 27 0:42 / /mnt\\",
            ROOT,
            "45 27 0:42 / /mnt/ok rw - nfs h:/e",
            "\u{fffd}\u{0} \\\\\\ 0:0 - -",
        ]
        .join("\n");
        let list = parse_mountinfo(&text);
        let points: Vec<&Path> = list.iter().map(|m| m.mount_point.as_path()).collect();
        assert_eq!(points, [Path::new("/"), Path::new("/mnt/ok")]);
        assert!(list[1].super_options.is_empty());
        // CRLF line ends and non-UTF-8 bytes do not get in the way.
        let list = parse_mountinfo_bytes(b"27 1 254:0 / /m\xff rw - ext4 /dev/\xfe rw\r\n");
        assert_eq!(list[0].mount_point.as_os_str().as_bytes(), b"/m\xff");
        assert_eq!(list[0].super_options, [("rw".to_owned(), None)]);
    }

    #[test]
    fn the_real_mountinfo_places_root_and_missing_paths() {
        let root = mount_of(Path::new("/")).expect("/ is on some mount");
        assert_eq!(root.mount_point, Path::new("/"));
        assert!(!root.fstype.is_empty());
        let dir = tempfile::tempdir().expect("tempdir");
        let pattern = dir.path().join("shot/shot.%07d.dpx");
        let by_pattern = mount_of(&pattern).expect("a pattern is placed by its ancestor");
        let by_dir = mount_of(dir.path()).expect("the directory's mount");
        assert_eq!(by_pattern, by_dir);
        assert!(dir.path().starts_with(&by_dir.mount_point));
        // A relative path is placed from the current directory.
        let relative = mount_of(Path::new("no/such/frame.0001.dpx")).expect("cwd's mount");
        let cwd = mount_of(&std::env::current_dir().expect("cwd")).expect("cwd's mount");
        assert_eq!(relative, cwd);
        // procfs itself is a mount of its own.
        assert_eq!(mount_of(Path::new("/proc/self/mountinfo")).expect("procfs").fstype, "proc");
    }
}
