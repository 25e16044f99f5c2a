//! A proxy between an SMB client and a real server (Samba's smbd) that spoils the server's READ
//! replies on command: the SMB counterpart of [`crate::HostileServer`], which plays a whole NFS
//! server; an SMB server is too large to play, so this one edits a real one's messages.
//!
//! It reads the server's stream message by message (Direct TCP framing: a zero byte and a
//! 24-bit length, then the SMB2 message), forwards each one, and spoils the next READ
//! responses it was told to ([`SmbProxy::spoil_reads`]):
//! - [`SmbMisbehaviour::Corrupt`]: a byte of the data flipped, as a bad NIC or a buggy
//!   middlebox would; the message's signature no longer matches;
//! - [`SmbMisbehaviour::Cut`]: half the message sent, then the connection closed;
//! - [`SmbMisbehaviour::Late`]: the message held back for a while, the others behind it sent
//!   meanwhile (SMB2 replies may come in any order).
//!
//! It also keeps the first messages of each command it forwards ([`SmbProxy::recorded`]): real
//! server replies, the `smb_reply` fuzz target's seeds.
//!
//! Each connection is two threads: the client's bytes go through as they come, the server's a
//! message at a time.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::proxy::{accept_pairs, lock};
use crate::Error;

/// The SMB2 command code of READ.
const SMB2_READ: u16 = 0x0008;
/// The header flag of a server's response.
const SMB2_FLAGS_SERVER_TO_REDIR: u32 = 0x0000_0001;
/// NTSTATUS of an interim response (the real one follows).
const STATUS_PENDING: u32 = 0x0000_0103;
/// The SMB2 header's size: the data of a READ response comes after it.
const SMB2_HEADER_BYTES: usize = 64;
/// Messages kept per command for [`SmbProxy::recorded`].
const RECORDED_PER_COMMAND: usize = 2;
/// The largest message recorded (a READ response of a small frame fits).
const MAX_RECORDED_BYTES: usize = 64 * 1024;

/// What the proxy does to a READ response it spoils.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmbMisbehaviour {
    /// Flips one byte of the data, near its end.
    Corrupt,
    /// Sends the first half of the message, then closes the connection both ways.
    Cut,
    /// Holds the message back this long.
    Late(Duration),
}

/// A running proxy on 127.0.0.1 to one SMB server; dropping it closes every connection.
pub struct SmbProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    target: SocketAddr,
    /// The misbehaviour and how many more READ responses get it.
    spoil: Mutex<Option<(SmbMisbehaviour, u64)>>,
    misbehaved: AtomicU64,
    n_accepted: AtomicU64,
    recorded: Mutex<BTreeMap<u16, Vec<Vec<u8>>>>,
    connections: Mutex<Vec<TcpStream>>,
    stopping: AtomicBool,
}

impl SmbProxy {
    /// Listens on 127.0.0.1 on a free port and forwards every connection to `target` (smbd's
    /// address), spoiling nothing until asked.
    pub fn start(target: SocketAddr) -> Result<SmbProxy, Error> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("binding the SMB proxy", e))?;
        let addr = listener.local_addr().map_err(|e| Error::io("the SMB proxy's address", e))?;
        let shared = Arc::new(Shared {
            target,
            spoil: Mutex::new(None),
            misbehaved: AtomicU64::new(0),
            n_accepted: AtomicU64::new(0),
            recorded: Mutex::new(BTreeMap::new()),
            connections: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::Builder::new()
            .name(format!("smb-proxy-{}", addr.port()))
            .spawn(move || accept_loop(&listener, &accepting))
            .map_err(|e| Error::io("starting the SMB proxy's thread", e))?;
        Ok(SmbProxy { addr, shared, acceptor: Some(acceptor) })
    }

    /// The proxy's port, for an `smb://host:PORT/` URL.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Spoils the next `n` READ responses (successful ones, not interim) with `misbehaviour`.
    pub fn spoil_reads(&self, misbehaviour: SmbMisbehaviour, n: u64) {
        *lock(&self.shared.spoil) = Some((misbehaviour, n));
    }

    /// READ responses spoiled so far.
    pub fn misbehaved(&self) -> u64 {
        self.shared.misbehaved.load(Ordering::Relaxed)
    }

    /// Connections accepted since the start.
    pub fn n_accepted(&self) -> u64 {
        self.shared.n_accepted.load(Ordering::Relaxed)
    }

    /// The first messages the server sent of each command, unspoiled, without their Direct TCP
    /// framing, by command code (up to 2 each, of at most 64 KiB).
    pub fn recorded(&self) -> BTreeMap<u16, Vec<Vec<u8>>> {
        lock(&self.shared.recorded).clone()
    }
}

impl Drop for SmbProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for socket in std::mem::take(&mut *lock(&self.shared.connections)) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    accept_pairs(listener, shared.target, &shared.stopping, &shared.n_accepted, |client, server| {
        let (Ok(client_in), Ok(server_out), Ok(server_in), Ok(client_out)) =
            (client.try_clone(), server.try_clone(), server.try_clone(), client.try_clone())
        else {
            return;
        };
        lock(&shared.connections).extend([client, server]);
        let _ = std::thread::Builder::new()
            .name("smb-proxy-up".into())
            .spawn(move || forward_raw(client_in, server_out));
        let shared = Arc::clone(shared);
        let _ = std::thread::Builder::new()
            .name("smb-proxy-down".into())
            .spawn(move || forward_messages(server_in, client_out, &shared));
    });
}

/// The client's bytes, as they come, until either side ends.
fn forward_raw(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// The server's messages, one at a time, each spoiled if its turn has come. A late message is
/// sent by a thread of its own, so the messages behind it go on.
fn forward_messages(mut from: TcpStream, to: TcpStream, shared: &Shared) {
    let to = Arc::new(Mutex::new(to));
    let send = |to: &Mutex<TcpStream>, frame: &[u8], message: &[u8]| {
        let mut to = lock(to);
        to.write_all(frame).and_then(|()| to.write_all(message)).is_ok()
    };
    let mut frame = [0u8; 4];
    while !shared.stopping.load(Ordering::Relaxed) {
        if from.read_exact(&mut frame).is_err() {
            break;
        }
        let len = u32::from_be_bytes(frame) as usize & 0x00ff_ffff;
        let mut message = vec![0u8; len];
        if from.read_exact(&mut message).is_err() {
            break;
        }
        record(shared, &message);
        let spoil = is_read_response(&message).then(|| take_spoil(shared)).flatten();
        match spoil {
            None => {}
            Some(SmbMisbehaviour::Corrupt) => {
                let at = message.len() - 1;
                message[at] ^= 0xff;
            }
            Some(SmbMisbehaviour::Cut) => {
                let _ = send(&to, &frame, &message[..len / 2]);
                let _ = lock(&to).shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
                return;
            }
            Some(SmbMisbehaviour::Late(delay)) => {
                let to = Arc::clone(&to);
                let _ = std::thread::Builder::new().name("smb-proxy-late".into()).spawn(move || {
                    std::thread::sleep(delay);
                    let _ = send(&to, &frame, &message);
                });
                continue;
            }
        }
        if !send(&to, &frame, &message) {
            break;
        }
    }
    let _ = lock(&to).shutdown(Shutdown::Both);
}

/// Whether `message` is a server's successful (or final) READ response.
fn is_read_response(message: &[u8]) -> bool {
    let field = |at: usize| message.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    message.starts_with(b"\xfeSMB")
        && message.get(12..14) == Some(&SMB2_READ.to_le_bytes())
        && field(16).is_some_and(|flags| flags & SMB2_FLAGS_SERVER_TO_REDIR != 0)
        && field(8).is_some_and(|status| status != STATUS_PENDING)
        && message.len() > SMB2_HEADER_BYTES
}

/// The misbehaviour for this READ response, if one is due; counts it.
fn take_spoil(shared: &Shared) -> Option<SmbMisbehaviour> {
    let mut spoil = lock(&shared.spoil);
    let (misbehaviour, left) = (*spoil)?;
    *spoil = (left > 1).then_some((misbehaviour, left - 1));
    shared.misbehaved.fetch_add(1, Ordering::Relaxed);
    Some(misbehaviour)
}

fn record(shared: &Shared, message: &[u8]) {
    if !message.starts_with(b"\xfeSMB") || message.len() > MAX_RECORDED_BYTES {
        return;
    }
    let Some(command) = message.get(12..14).map(|b| u16::from_le_bytes([b[0], b[1]])) else { return };
    let mut recorded = lock(&shared.recorded);
    let kept = recorded.entry(command).or_default();
    if kept.len() < RECORDED_PER_COMMAND {
        kept.push(message.to_vec());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(command: u16, flags: u32, status: u32) -> Vec<u8> {
        let mut m = vec![0u8; SMB2_HEADER_BYTES];
        m[..4].copy_from_slice(b"\xfeSMB");
        m[8..12].copy_from_slice(&status.to_le_bytes());
        m[12..14].copy_from_slice(&command.to_le_bytes());
        m[16..20].copy_from_slice(&flags.to_le_bytes());
        m
    }

    #[test]
    fn only_final_read_responses_are_spoiled() {
        let with_data = |mut m: Vec<u8>| {
            m.extend([0u8; 32]);
            m
        };
        assert!(is_read_response(&with_data(header(SMB2_READ, 1, 0))));
        assert!(!is_read_response(&with_data(header(SMB2_READ, 0, 0))), "a request");
        assert!(!is_read_response(&with_data(header(SMB2_READ, 1, STATUS_PENDING))), "interim");
        assert!(!is_read_response(&with_data(header(0x0005, 1, 0))), "a CREATE");
        assert!(!is_read_response(&header(SMB2_READ, 1, 0)), "no body");
    }
}
