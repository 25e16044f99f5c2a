//! Ganesha's configuration file for one test server, and the export specs it is made from.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Error;

/// An extra export of a test server, next to its main one: a directory of its own, with its
/// own access rules, so that tests can provoke MOUNT errors (or squashed uids).
///
/// ```
/// use playsim_testserver::{AccessType, ExportSpec};
///
/// // Refused to everyone: MOUNT answers MNT3ERR_ACCES.
/// let denied = ExportSpec { access_type: AccessType::None, ..ExportSpec::new("denied") };
/// // Read-write, but only for a client that is not us: refused to 127.0.0.1 too.
/// let elsewhere = ExportSpec { clients: Some("192.0.2.1".into()), ..ExportSpec::new("elsewhere") };
/// # let _ = (denied, elsewhere);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSpec {
    /// Its name: the directory is `<server root>/<name>` (see
    /// [`NfsServer::extra_export_dir`](crate::NfsServer::extra_export_dir)) and the NFSv4
    /// pseudo path `/<name>`. ASCII letters, digits, `-` and `_`; not `export` nor `ganesha`.
    pub name: String,
    /// What clients may do (for the clients in [`clients`](Self::clients) only, when set).
    pub access_type: AccessType,
    /// Which uids are mapped to the anonymous user.
    pub squash: Squash,
    /// When set, only these clients (Ganesha's `Clients` syntax: addresses, CIDR networks,
    /// host names, `*`, comma-separated) get `access_type`, and everyone else gets no access.
    pub clients: Option<String>,
    /// More parameter lines for the EXPORT block, verbatim, e.g. `Anonymous_Uid = 65534;`.
    /// They must not repeat a parameter this spec already writes (Export_Id, Path, Pseudo,
    /// Protocols, Transports, Access_Type, Squash, SecType).
    pub extra_params: String,
}

impl ExportSpec {
    /// A read-write export without root squashing, named `name`.
    pub fn new(name: &str) -> Self {
        ExportSpec {
            name: name.to_owned(),
            access_type: AccessType::ReadWrite,
            squash: Squash::NoRootSquash,
            clients: None,
            extra_params: String::new(),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let invalid =
            |reason: &str| Error::InvalidExport { name: self.name.clone(), reason: reason.to_owned() };
        if self.name.is_empty()
            || !self.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(invalid("a name is ASCII letters, digits, `-` and `_`"));
        }
        if self.name == MAIN_EXPORT || self.name == STATE_DIR {
            return Err(invalid("the name is taken by the server's own directories"));
        }
        if let Some(clients) = &self.clients {
            if clients.trim().is_empty() || clients.contains([';', '{', '}']) {
                return Err(invalid("`clients` is a non-empty comma-separated list"));
            }
        }
        if self.extra_params.contains(['{', '}']) {
            return Err(invalid("`extra_params` are parameter lines, not blocks"));
        }
        Ok(())
    }
}

/// What the clients of an export may do: Ganesha's `Access_Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessType {
    /// Read and write (`RW`).
    ReadWrite,
    /// Read only (`RO`).
    ReadOnly,
    /// Metadata only, e.g. directory listings and attributes, no file data (`MDONLY`).
    MetadataOnly,
    /// Nothing: MOUNT is refused with MNT3ERR_ACCES (`None`).
    None,
}

impl AccessType {
    fn keyword(self) -> &'static str {
        match self {
            AccessType::ReadWrite => "RW",
            AccessType::ReadOnly => "RO",
            AccessType::MetadataOnly => "MDONLY",
            AccessType::None => "None",
        }
    }
}

/// Which client uids an export maps to its anonymous uid: Ganesha's `Squash`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Squash {
    /// Root stays root (`No_Root_Squash`).
    NoRootSquash,
    /// Root becomes the anonymous uid and gid (`Root_Squash`).
    RootSquash,
    /// Every uid becomes the anonymous uid and gid (`All_Squash`).
    AllSquash,
}

impl Squash {
    fn keyword(self) -> &'static str {
        match self {
            Squash::NoRootSquash => "No_Root_Squash",
            Squash::RootSquash => "Root_Squash",
            Squash::AllSquash => "All_Squash",
        }
    }
}

/// The main export's directory name under the server's root.
pub(crate) const MAIN_EXPORT: &str = "export";
/// The directory under the server's root holding Ganesha's config, log, pid file and state.
pub(crate) const STATE_DIR: &str = "ganesha";

/// Everything the configuration file names.
pub(crate) struct ConfigParams<'a> {
    pub nfs_port: u16,
    pub mount_port: u16,
    /// Bind every address (no `Bind_addr`) instead of 127.0.0.1.
    pub bind_any: bool,
    pub recovery_dir: &'a Path,
    pub main_export: &'a Path,
    /// Extra exports with their directories.
    pub extra_exports: &'a [(ExportSpec, PathBuf)],
}

/// Ganesha's configuration: NFSv3 over TCP only, on 127.0.0.1, without NLM and RQUOTA (which
/// would need more ports), no grace period (so a restarted server serves at once).
pub(crate) fn render(p: &ConfigParams<'_>) -> String {
    let mut conf = format!(
        "NFS_CORE_PARAM {{\n\
         {bind}\
         \tNFS_Port = {nfs};\n\
         \tMNT_Port = {mnt};\n\
         \tNLM_Port = 0;\n\
         \tRquota_Port = 0;\n\
         \tProtocols = 3;\n\
         \tEnable_NLM = false;\n\
         \tEnable_RQUOTA = false;\n\
         \tEnable_UDP = false;\n\
         }}\n\
         NFS_KRB5 {{ Active_krb5 = false; }}\n\
         NFSV4 {{ Graceless = true; RecoveryRoot = \"{recovery}\"; }}\n\
         LOG {{ Default_Log_Level = EVENT; }}\n",
        bind = if p.bind_any { "" } else { "\tBind_addr = 127.0.0.1;\n" },
        nfs = p.nfs_port,
        mnt = p.mount_port,
        recovery = p.recovery_dir.display(),
    );
    let main = ExportSpec::new(MAIN_EXPORT);
    write_export(&mut conf, 1, &main, p.main_export);
    for (i, (spec, dir)) in p.extra_exports.iter().enumerate() {
        write_export(&mut conf, i + 2, spec, dir);
    }
    conf
}

fn write_export(conf: &mut String, export_id: usize, spec: &ExportSpec, dir: &Path) {
    let (access, client) = match &spec.clients {
        None => (spec.access_type, None),
        Some(clients) => (AccessType::None, Some(clients)),
    };
    // Writing to a String cannot fail.
    let _ = write!(
        conf,
        "EXPORT {{\n\
         \tExport_Id = {export_id};\n\
         \tPath = \"{path}\";\n\
         \tPseudo = \"/{name}\";\n\
         \tProtocols = 3;\n\
         \tTransports = TCP;\n\
         \tAccess_Type = {access};\n\
         \tSquash = {squash};\n\
         \tSecType = sys;\n",
        path = dir.display(),
        name = spec.name,
        access = access.keyword(),
        squash = spec.squash.keyword(),
    );
    for line in spec.extra_params.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let _ = writeln!(conf, "\t{line}");
    }
    if let Some(clients) = client {
        let _ = writeln!(
            conf,
            "\tCLIENT {{ Clients = {clients}; Access_Type = {}; }}",
            spec.access_type.keyword()
        );
    }
    conf.push_str("\tFSAL { Name = VFS; }\n}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(ExportSpec::new("denied-1_b").validate().is_ok());
        for bad in ["", "a/b", "a b", "export", "ganesha", "x;y"] {
            assert!(ExportSpec::new(bad).validate().is_err(), "{bad:?} accepted");
        }
        let blocky = ExportSpec { extra_params: "CLIENT { }".into(), ..ExportSpec::new("x") };
        assert!(blocky.validate().is_err());
        let no_clients = ExportSpec { clients: Some(" ".into()), ..ExportSpec::new("x") };
        assert!(no_clients.validate().is_err());
    }

    #[test]
    fn config_names_ports_paths_and_rules() {
        let extra = [(
            ExportSpec {
                access_type: AccessType::ReadOnly,
                squash: Squash::AllSquash,
                clients: Some("192.0.2.1".into()),
                extra_params: "Anonymous_Uid = 65534;\n".into(),
                ..ExportSpec::new("other")
            },
            PathBuf::from("/r/other"),
        )];
        let conf = render(&ConfigParams {
            nfs_port: 21001,
            mount_port: 21002,
            bind_any: false,
            recovery_dir: Path::new("/r/ganesha/state"),
            main_export: Path::new("/r/export"),
            extra_exports: &extra,
        });
        for expected in [
            "NFS_CORE_PARAM {\n\tBind_addr = 127.0.0.1;\n\tNFS_Port = 21001;",
            "MNT_Port = 21002;",
            "RecoveryRoot = \"/r/ganesha/state\";",
            "Export_Id = 1;\n\tPath = \"/r/export\";\n\tPseudo = \"/export\";",
            "Export_Id = 2;\n\tPath = \"/r/other\";\n\tPseudo = \"/other\";",
            "Access_Type = None;\n\tSquash = All_Squash;",
            "\tAnonymous_Uid = 65534;\n",
            "CLIENT { Clients = 192.0.2.1; Access_Type = RO; }",
        ] {
            assert!(conf.contains(expected), "{expected:?} not in:\n{conf}");
        }
        assert_eq!(conf.matches('{').count(), conf.matches('}').count());
    }
}
