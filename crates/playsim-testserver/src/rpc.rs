//! A minimal ONC RPC client (RFC 5531, record marking over a stream): only the calls this crate
//! makes, to rpcbind (GETPORT, SET, UNSET) and to Ganesha's MOUNT service (EXPORT).
//!
//! It is hand-written rather than taken from an RPC crate because these four calls are a few dozen
//! lines of XDR, and the userspace NFS client under test must not be the thing that checks the
//! server it is tested against.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::Error;

/// The NFS program.
pub(crate) const NFS_PROG: u32 = 100_003;
/// The MOUNT program.
pub(crate) const MOUNT_PROG: u32 = 100_005;

const PMAP_PROG: u32 = 100_000;
const PMAP_PORT: u16 = 111;
const IPPROTO_TCP: u32 = 6;
/// rpcbind accepts SET and UNSET only over its Unix socket (or from a privileged loopback port
/// when started with `-L`), and takes the caller's owner from the socket's credentials.
const RPCBIND_SOCKETS: [&str; 2] = ["/run/rpcbind.sock", "/var/run/rpcbind.sock"];
/// Longest wait for a connection or a reply.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest reply accepted: an export list of a test server is a few hundred bytes.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// The port rpcbind maps `prog`/`vers` over TCP to (portmapper v2 GETPORT), `None` when unmapped.
pub(crate) fn pmap_getport(prog: u32, vers: u32) -> Result<Option<u16>, Error> {
    let what = || format!("rpcbind GETPORT {prog} v{vers}");
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, PMAP_PORT));
    let mut args = Xdr::default();
    args.u32(prog).u32(vers).u32(IPPROTO_TCP).u32(0);
    let reply =
        call_tcp(addr, PMAP_PROG, 2, 3, Auth::None, &args.0).map_err(|d| rpc_error(what(), addr, d))?;
    let port = Reader::new(&reply).u32().ok_or_else(|| rpc_error(what(), addr, "short reply".into()))?;
    match u16::try_from(port) {
        Ok(0) => Ok(None),
        Ok(port) => Ok(Some(port)),
        Err(_) => Err(rpc_error(what(), addr, format!("port {port} out of range"))),
    }
}

/// Maps `prog`/`vers` over `netid` to the universal address `uaddr` (rpcbind v4 SET); false
/// when rpcbind refuses, e.g. because the mapping exists.
pub(crate) fn rpcb_set(prog: u32, vers: u32, netid: &str, uaddr: &str) -> Result<bool, Error> {
    rpcb_change(1, "SET", prog, vers, netid, uaddr)
}

/// Removes the mapping of `prog`/`vers` over `netid` (rpcbind v4 UNSET); false when there was none
/// or rpcbind refuses.
pub(crate) fn rpcb_unset(prog: u32, vers: u32, netid: &str) -> Result<bool, Error> {
    rpcb_change(2, "UNSET", prog, vers, netid, "")
}

/// The directories the MOUNT service on 127.0.0.1:`port` exports to us (MOUNT v3 EXPORT), as
/// `showmount -e` lists them.
pub(crate) fn mount_exports(port: u16) -> Result<Vec<String>, Error> {
    let what = || "mount EXPORT".to_owned();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let reply = call_tcp(addr, MOUNT_PROG, 3, 5, Auth::Sys, &[]).map_err(|d| rpc_error(what(), addr, d))?;
    parse_exports(&reply).ok_or_else(|| rpc_error(what(), addr, "malformed export list".into()))
}

fn rpcb_change(
    proc_: u32,
    name: &str,
    prog: u32,
    vers: u32,
    netid: &str,
    uaddr: &str,
) -> Result<bool, Error> {
    let what = format!("rpcbind {name} {prog} v{vers} {netid}");
    let Some(path) = RPCBIND_SOCKETS.iter().map(Path::new).find(|p| p.exists()) else {
        return Err(Error::Rpc { what, addr: RPCBIND_SOCKETS.join(" or "), detail: "no such socket".into() });
    };
    let mut args = Xdr::default();
    // The owner is ignored: rpcbind takes it from the socket's credentials.
    args.u32(prog).u32(vers).string(netid).string(uaddr).string("superuser");
    let addr = path.display().to_string();
    let reply = UnixStream::connect(path)
        .and_then(|s| {
            s.set_read_timeout(Some(CALL_TIMEOUT))?;
            s.set_write_timeout(Some(CALL_TIMEOUT))?;
            Ok(s)
        })
        .map_err(|e| e.to_string())
        .and_then(|s| call(s, PMAP_PROG, 4, proc_, Auth::None, &args.0))
        .map_err(|detail| Error::Rpc { what: what.clone(), addr: addr.clone(), detail })?;
    let ok =
        Reader::new(&reply).u32().ok_or_else(|| Error::Rpc { what, addr, detail: "short reply".into() })?;
    Ok(ok != 0)
}

fn rpc_error(what: String, addr: SocketAddr, detail: String) -> Error {
    Error::Rpc { what, addr: addr.to_string(), detail }
}

#[derive(Clone, Copy)]
enum Auth {
    None,
    /// AUTH_SYS as root: what `showmount` sends; Ganesha's MOUNT service wants credentials.
    Sys,
}

fn call_tcp(
    addr: SocketAddr,
    prog: u32,
    vers: u32,
    proc_: u32,
    auth: Auth,
    args: &[u8],
) -> Result<Vec<u8>, String> {
    let stream = TcpStream::connect_timeout(&addr, CALL_TIMEOUT).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(CALL_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(CALL_TIMEOUT)).map_err(|e| e.to_string())?;
    call(stream, prog, vers, proc_, auth, args)
}

/// Sends one call and returns the bytes of its result, after the accepted-reply header.
fn call(
    mut stream: impl Read + Write,
    prog: u32,
    vers: u32,
    proc_: u32,
    auth: Auth,
    args: &[u8],
) -> Result<Vec<u8>, String> {
    static NEXT_XID: AtomicU32 = AtomicU32::new(0);
    let xid = std::process::id().wrapping_shl(16) ^ NEXT_XID.fetch_add(1, Ordering::Relaxed);

    let mut msg = Xdr::default();
    msg.u32(xid).u32(0).u32(2).u32(prog).u32(vers).u32(proc_);
    match auth {
        Auth::None => msg.u32(0).u32(0),
        Auth::Sys => {
            let mut body = Xdr::default();
            body.u32(0).string("playsim-testserver").u32(0).u32(0).u32(0);
            msg.u32(1).opaque(&body.0)
        }
    };
    msg.u32(0).u32(0); // verifier: AUTH_NONE
    msg.0.extend_from_slice(args);

    let len = u32::try_from(msg.0.len()).map_err(|_| "call too large".to_owned())?;
    let mut record = (0x8000_0000 | len).to_be_bytes().to_vec();
    record.extend_from_slice(&msg.0);
    stream.write_all(&record).map_err(|e| format!("cannot send: {e}"))?;

    let reply = read_record(&mut stream)?;
    let mut r = Reader::new(&reply);
    let short = || "short reply".to_owned();
    if r.u32().ok_or_else(short)? != xid {
        return Err("reply to another call".into());
    }
    if r.u32().ok_or_else(short)? != 1 {
        return Err("not a reply".into());
    }
    if r.u32().ok_or_else(short)? != 0 {
        return Err("call denied (bad rpc version or credentials)".into());
    }
    let _verifier_flavor = r.u32().ok_or_else(short)?;
    let _verifier = r.opaque().ok_or_else(short)?;
    match r.u32().ok_or_else(short)? {
        0 => Ok(r.rest().to_vec()),
        1 => Err("program unavailable".into()),
        2 => Err("program version mismatch".into()),
        3 => Err("procedure unavailable".into()),
        4 => Err("garbage arguments".into()),
        other => Err(format!("call not accepted (status {other})")),
    }
}

/// Reads one record (all its fragments).
fn read_record(stream: &mut impl Read) -> Result<Vec<u8>, String> {
    let mut reply = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        stream.read_exact(&mut mark).map_err(|e| format!("no reply: {e}"))?;
        let mark = u32::from_be_bytes(mark);
        let len = (mark & 0x7fff_ffff) as usize;
        if reply.len() + len > MAX_REPLY_BYTES {
            return Err(format!("reply larger than {MAX_REPLY_BYTES} bytes"));
        }
        let start = reply.len();
        reply.resize(start + len, 0);
        stream.read_exact(&mut reply[start..]).map_err(|e| format!("truncated reply: {e}"))?;
        if mark & 0x8000_0000 != 0 {
            return Ok(reply);
        }
    }
}

/// `exports` of RFC 1813 (MOUNT v3): a list of (directory, list of groups).
fn parse_exports(reply: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader::new(reply);
    let mut dirs = Vec::new();
    while r.u32()? != 0 {
        dirs.push(String::from_utf8_lossy(r.opaque()?).into_owned());
        while r.u32()? != 0 {
            r.opaque()?;
        }
    }
    Some(dirs)
}

#[derive(Default)]
struct Xdr(Vec<u8>);

impl Xdr {
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn opaque(&mut self, bytes: &[u8]) -> &mut Self {
        // Callers pass short names and addresses; a length past u32 cannot occur.
        self.u32(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(bytes);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }

    fn string(&mut self, s: &str) -> &mut Self {
        self.opaque(s.as_bytes())
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn u32(&mut self) -> Option<u32> {
        let bytes = self.buf.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    }

    fn opaque(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        let bytes = self.buf.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len.next_multiple_of(4);
        Some(bytes)
    }

    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_list_parses() {
        let mut x = Xdr::default();
        x.u32(1).string("/tmp/a/export").u32(1).string("*").u32(0);
        x.u32(1).string("/b").u32(0);
        x.u32(0);
        assert_eq!(parse_exports(&x.0), Some(vec!["/tmp/a/export".to_owned(), "/b".to_owned()]));
        assert_eq!(parse_exports(&x.0[..10]), None);
    }

    #[test]
    fn strings_are_padded_to_four_bytes() {
        let mut x = Xdr::default();
        x.string("tcp6");
        x.string("tcp");
        assert_eq!(x.0, b"\0\0\0\x04tcp6\0\0\0\x03tcp\0");
    }
}
