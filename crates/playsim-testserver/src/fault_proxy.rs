//! A userspace TCP proxy that injects faults on the path to a server: a delay on each chunk it
//! forwards, a stall (nothing forwarded for a while), a reset of every connection (RST), and
//! one connection closed. For a kernel without netem: tests put it between playsim and a real
//! NFS-Ganesha by naming its port as the URL's `nfsport=` (and `mountport=`).
//!
//! ```
//! use std::io::{Read, Write};
//! use std::net::{TcpListener, TcpStream};
//! use std::time::Duration;
//!
//! use playsim_testserver::FaultProxy;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = TcpListener::bind("127.0.0.1:0")?;
//! let proxy = FaultProxy::start(server.local_addr()?)?;
//! let mut client = TcpStream::connect(proxy.addr())?;
//! let (mut accepted, _) = server.accept()?;
//! proxy.set_delay(Duration::from_millis(10)); // each chunk waits 10 ms
//! client.write_all(b"ping")?;
//! let mut got = [0u8; 4];
//! accepted.read_exact(&mut got)?;
//! assert_eq!(&got, b"ping");
//! assert_eq!(proxy.reset_all(), 1); // the client sees ECONNRESET
//! # Ok(())
//! # }
//! ```
//!
//! Each connection is two threads, one per direction, that read a chunk (up to 64 KiB), wait
//! out a stall and the delay, and write it on. They read with a short timeout so that they see
//! a reset or the proxy's end while idle. A reset sets SO_LINGER to zero on both sockets of
//! every connection and lets the threads close them: the last close then sends RST instead of
//! FIN, as a crashed or rebooted middlebox would.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::proxy::{accept_pairs, lock};
use crate::Error;

/// How long a forwarding thread blocks in a read before it looks at the proxy's state again.
const POLL: Duration = Duration::from_millis(20);
/// The most bytes forwarded as one chunk.
const CHUNK_BYTES: usize = 64 * 1024;

/// A running proxy on 127.0.0.1 to one target address; dropping it closes every connection.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// What the proxy's threads share: the faults in force and the live connections.
struct Shared {
    target: SocketAddr,
    delay_ns: AtomicU64,
    stalled_until: Mutex<Option<Instant>>,
    connections: Mutex<Vec<Arc<Connection>>>,
    n_accepted: AtomicU64,
    stopping: AtomicBool,
}

/// One proxied connection: the client's socket and ours to the target.
struct Connection {
    client: TcpStream,
    server: TcpStream,
    /// Set when the connection is to end (reset, closed or the proxy stopping).
    closing: AtomicBool,
    /// Set when it is reset: its threads then close without FIN, so that close sends RST.
    reset: AtomicBool,
}

impl FaultProxy {
    /// Listens on 127.0.0.1 on a free port and forwards every connection to `target`, with no
    /// fault until one is asked for.
    pub fn start(target: SocketAddr) -> Result<FaultProxy, Error> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("binding the fault proxy", e))?;
        let addr = listener.local_addr().map_err(|e| Error::io("the fault proxy's address", e))?;
        let shared = Arc::new(Shared {
            target,
            delay_ns: AtomicU64::new(0),
            stalled_until: Mutex::new(None),
            connections: Mutex::new(Vec::new()),
            n_accepted: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::Builder::new()
            .name(format!("fault-proxy-{}", addr.port()))
            .spawn(move || accept_loop(&listener, &accepting))
            .map_err(|e| Error::io("starting the fault proxy's thread", e))?;
        Ok(FaultProxy { addr, shared, acceptor: Some(acceptor) })
    }

    /// The address clients connect to (127.0.0.1 and the proxy's port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy's port, for a URL's `nfsport=` or `mountport=`.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Delays every chunk forwarded from now on, either way, by `delay` (zero for none).
    pub fn set_delay(&self, delay: Duration) {
        let ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.shared.delay_ns.store(ns, Ordering::Relaxed);
    }

    /// Forwards nothing, either way, for `duration` from now; connections stay open and what
    /// arrives meanwhile waits. Returns at once.
    pub fn stall(&self, duration: Duration) {
        *lock(&self.shared.stalled_until) = Some(Instant::now() + duration);
    }

    /// Resets every open connection: both its client and its server see RST. Returns how many
    /// there were. New connections are accepted as before.
    pub fn reset_all(&self) -> usize {
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for connection in &connections {
            connection.end(true);
        }
        connections.len()
    }

    /// Closes the oldest open connection with FIN both ways, as a server that closes an idle
    /// client does. Returns whether there was one.
    pub fn close_one(&self) -> bool {
        let mut connections = lock(&self.shared.connections);
        if connections.is_empty() {
            return false;
        }
        let oldest = connections.remove(0);
        drop(connections);
        oldest.end(false);
        true
    }

    /// Connections open now.
    pub fn n_open(&self) -> usize {
        lock(&self.shared.connections).len()
    }

    /// Connections accepted since the start.
    pub fn n_accepted(&self) -> u64 {
        self.shared.n_accepted.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Relaxed);
        // Wake the acceptor, which blocks in accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for connection in std::mem::take(&mut *lock(&self.shared.connections)) {
            connection.end(false);
        }
    }
}

impl Connection {
    /// Ends the connection: with RST (SO_LINGER 0, then the threads close it) or with FIN.
    fn end(&self, reset: bool) {
        if reset {
            self.reset.store(true, Ordering::Release);
            for socket in [&self.client, &self.server] {
                let _ = socket2::SockRef::from(socket).set_linger(Some(Duration::ZERO));
            }
        } else {
            let _ = self.client.shutdown(Shutdown::Both);
            let _ = self.server.shutdown(Shutdown::Both);
        }
        self.closing.store(true, Ordering::Release);
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    accept_pairs(listener, shared.target, &shared.stopping, &shared.n_accepted, |client, server| {
        let Ok(sockets) = clones(&client, &server) else { return };
        let connection = Arc::new(Connection {
            client,
            server,
            closing: AtomicBool::new(false),
            reset: AtomicBool::new(false),
        });
        lock(&shared.connections).push(Arc::clone(&connection));
        let [client_in, server_out, server_in, client_out] = sockets;
        for (from, to) in [(client_in, server_out), (server_in, client_out)] {
            let (shared, connection) = (Arc::clone(shared), Arc::clone(&connection));
            let _ = std::thread::Builder::new()
                .name("fault-proxy-pump".into())
                .spawn(move || pump(from, to, &shared, &connection));
        }
    });
}

/// The four handles the two forwarding threads own: client in, server out, server in, client
/// out. The connection keeps its own, dropped with it.
fn clones(client: &TcpStream, server: &TcpStream) -> std::io::Result<[TcpStream; 4]> {
    for socket in [client, server] {
        socket.set_read_timeout(Some(POLL))?;
    }
    Ok([client.try_clone()?, server.try_clone()?, server.try_clone()?, client.try_clone()?])
}

/// Forwards `from` to `to` chunk by chunk, with the stall and the delay in force, until either
/// side ends or the connection is ended; then closes its half of both.
fn pump(mut from: TcpStream, mut to: TcpStream, shared: &Shared, connection: &Connection) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    let live = || !connection.closing.load(Ordering::Acquire) && !shared.stopping.load(Ordering::Relaxed);
    while live() {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => break,
        };
        loop {
            let stalled_until = *lock(&shared.stalled_until);
            match stalled_until {
                Some(until) if Instant::now() < until && live() => std::thread::sleep(POLL),
                _ => break,
            }
        }
        let delay = Duration::from_nanos(shared.delay_ns.load(Ordering::Relaxed));
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        if !live() || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    // The other direction sees its read end and stops too; with SO_LINGER 0 (a reset) the
    // last of the handles to close sends RST.
    connection.closing.store(true, Ordering::Release);
    if !connection.reset.load(Ordering::Acquire) {
        let _ = to.shutdown(Shutdown::Write);
    }
    let mut connections = lock(&shared.connections);
    connections.retain(|c| !std::ptr::eq(Arc::as_ptr(c), connection));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proxy to a listener of our own, one client connected through it, and the server's end.
    fn connected() -> (FaultProxy, TcpStream, TcpStream) {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = FaultProxy::start(server.local_addr().unwrap()).unwrap();
        let client = TcpStream::connect(proxy.addr()).unwrap();
        let (accepted, _) = server.accept().unwrap();
        client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        accepted.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        (proxy, client, accepted)
    }

    fn echo_once(client: &mut TcpStream, server: &mut TcpStream) -> Duration {
        let start = Instant::now();
        client.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        server.read_exact(&mut got).unwrap();
        server.write_all(&got).unwrap();
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        start.elapsed()
    }

    #[test]
    fn a_stall_holds_the_data_until_it_ends_and_a_delay_slows_each_chunk() {
        let (proxy, mut client, mut server) = connected();
        assert!(echo_once(&mut client, &mut server) < Duration::from_millis(500));
        proxy.stall(Duration::from_millis(300));
        assert!(echo_once(&mut client, &mut server) >= Duration::from_millis(300));
        proxy.set_delay(Duration::from_millis(100));
        // Two chunks, one each way.
        assert!(echo_once(&mut client, &mut server) >= Duration::from_millis(200));
        assert_eq!((proxy.n_open(), proxy.n_accepted()), (1, 1));
    }

    #[test]
    fn a_reset_reaches_both_ends_as_rst_and_a_close_as_eof() {
        let (proxy, mut client, mut server) = connected();
        echo_once(&mut client, &mut server);
        assert_eq!(proxy.reset_all(), 1);
        let mut buf = [0u8; 4];
        let err = client.read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
        assert_eq!(server.read(&mut buf).unwrap_err().kind(), ErrorKind::ConnectionReset);

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = FaultProxy::start(listener.local_addr().unwrap()).unwrap();
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        while proxy.n_open() == 0 {
            std::thread::sleep(POLL);
        }
        assert!(proxy.close_one());
        assert_eq!(client.read(&mut buf).unwrap(), 0);
        assert!(!proxy.close_one());
    }
}
