//! What the test's TCP proxies share: accepting a client, dialing the target for it, and a
//! lock that survives a panicked pump thread.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Accepts clients on `listener` until `stopping` is set (the proxy's drop sets it, then
/// connects once to wake the accept), counts each in `n_accepted`, connects it to `target`, and
/// hands `serve` the pair (client, server), both with TCP_NODELAY. A target that refuses is
/// passed on as a closed connection.
pub(crate) fn accept_pairs(
    listener: &TcpListener,
    target: SocketAddr,
    stopping: &AtomicBool,
    n_accepted: &AtomicU64,
    mut serve: impl FnMut(TcpStream, TcpStream),
) {
    for client in listener.incoming() {
        if stopping.load(Ordering::Relaxed) {
            return;
        }
        let Ok(client) = client else { continue };
        n_accepted.fetch_add(1, Ordering::Relaxed);
        let Ok(server) = TcpStream::connect(target) else { continue };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        serve(client, server);
    }
}

/// Locks `mutex`, also after a thread panicked holding it: the proxies' state stays usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
