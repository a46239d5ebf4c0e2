//! The server's connections: accepting them, how many it holds, and how
//! long one may stay silent.
//!
//! Until a caller has shown a good secret it is a stranger, and a stranger
//! must not be able to hold the server's sockets, memory or time:
//!
//! - a request head must arrive whole within [`HEAD_TIMEOUT`] of the
//!   connection being ready for it, the first head as well as the next one
//!   on a kept-alive connection (so an idle keep-alive ends then too);
//! - a body is read only after the route has checked the secret (`mcp`),
//!   and then within [`BODY_TIMEOUT`] (`guard::read_body`); a refused
//!   request's body is never read, its connection is closed after the
//!   answer;
//! - at most [`Limits::per_address`] connections from one address (an
//!   address named by `--trusted-proxy` is exempt: every caller behind it
//!   shares it), at most [`Limits::strangers`] connections that have not
//!   shown a good secret, at most [`Limits::total`] in all. When a new
//!   connection would pass a limit, the oldest stranger connection of that
//!   address (or of all) is closed to make room; when none is left to
//!   close, the new one is. A connection that has shown a good secret
//!   ([`Admitted::authenticated`]) is never closed this way, so a flood of
//!   strangers delays a caller with a token by one accept at most.
//!
//! Owns the accept loop and this table; it knows nothing of routes or
//! secrets (the routes say when a connection has shown a good one).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How long a request head may take to arrive, counted from when the
/// connection is ready for it (accepted, or done with the previous answer).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an authenticated request's body may take to arrive whole.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait before accepting again when the process is out of file
/// descriptors (after closing a stranger to free one).
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// How many connections the server holds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections in all.
    pub total: usize,
    /// Connections that have not shown a good secret.
    pub strangers: usize,
    /// Connections from one address (not a trusted proxy).
    pub per_address: usize,
}

impl Default for Limits {
    /// Well below the usual 1,024 file descriptors a process may open, with
    /// room left for the channels' files and the index.
    fn default() -> Self {
        Self {
            total: 512,
            strangers: 256,
            per_address: 64,
        }
    }
}

/// What a request knows of its connection (a request extension).
#[derive(Debug, Default)]
pub struct Admitted {
    authenticated: AtomicBool,
    close: CancellationToken,
}

impl Admitted {
    /// Records that a request of this connection showed a good secret: the
    /// connection is no longer closed to make room for others.
    pub fn authenticated(&self) {
        self.authenticated.store(true, Ordering::Relaxed);
    }

    /// True once a request of this connection showed a good secret.
    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Relaxed)
    }
}

/// The open connections, oldest first.
#[derive(Debug)]
pub struct Connections {
    limits: Limits,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, (IpAddr, Arc<Admitted>)>,
    per_address: HashMap<IpAddr, usize>,
}

impl Table {
    fn strangers(&self) -> usize {
        self.open
            .values()
            .filter(|(_, a)| !a.is_authenticated())
            .count()
    }

    /// Closes the oldest stranger connection (of `ip` when given); false
    /// when there is none.
    fn close_oldest_stranger(&mut self, ip: Option<IpAddr>) -> bool {
        let oldest = self
            .open
            .iter()
            .find(|(_, (at, a))| !a.is_authenticated() && ip.is_none_or(|ip| *at == ip))
            .map(|(id, _)| *id);
        match oldest {
            Some(id) => {
                self.remove(id);
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some((ip, admitted)) = self.open.remove(&id) {
            admitted.close.cancel();
            if let Some(n) = self.per_address.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    self.per_address.remove(&ip);
                }
            }
        }
    }
}

/// A connection's place in the table, given back when dropped.
struct Slot {
    id: u64,
    admitted: Arc<Admitted>,
    connections: Arc<Connections>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().remove(self.id);
    }
}

impl Connections {
    /// An empty table kept within `limits`.
    pub fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            table: Mutex::new(Table::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a new connection from `ip` (`exempt`: a trusted proxy,
    /// not held to the per-address limit), making room by closing older
    /// strangers; `None` when there is no room.
    fn admit(self: &Arc<Self>, ip: IpAddr, exempt: bool) -> Option<Slot> {
        let mut t = self.lock();
        let from_ip = t.per_address.get(&ip).copied().unwrap_or(0);
        if !exempt && from_ip >= self.limits.per_address && !t.close_oldest_stranger(Some(ip)) {
            return None;
        }
        if (t.strangers() >= self.limits.strangers || t.open.len() >= self.limits.total)
            && !t.close_oldest_stranger(None)
            && t.open.len() >= self.limits.total
        {
            return None;
        }
        let id = t.next;
        t.next += 1;
        let admitted = Arc::new(Admitted::default());
        t.open.insert(id, (ip, Arc::clone(&admitted)));
        *t.per_address.entry(ip).or_default() += 1;
        Some(Slot {
            id,
            admitted,
            connections: Arc::clone(self),
        })
    }

    /// How many connections are open, and how many of them are strangers.
    #[cfg(test)]
    pub fn count(&self) -> (usize, usize) {
        let t = self.lock();
        (t.open.len(), t.strangers())
    }
}

/// Accepts connections on `listener` and serves `app` on each (HTTP/1.1)
/// until `stop` resolves; then stops accepting, lets each request under way
/// finish and answer, and returns. `trusted` are the reverse proxies'
/// addresses (no per-address limit).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    trusted: Vec<IpAddr>,
    stop: impl Future<Output = ()>,
) {
    let connections = Connections::new(limits);
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = &mut stop => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors (or another passing failure): free
                // one held by a stranger, wait a moment, accept again.
                tracing::warn!("cannot accept a connection: {e}");
                connections.lock().close_oldest_stranger(None);
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let Some(slot) = connections.admit(peer.ip(), trusted.contains(&peer.ip())) else {
            tracing::debug!("{peer}: no room for another connection; closed");
            continue;
        };
        let watched = graceful.watcher();
        tokio::spawn(connection(stream, peer, slot, app.clone(), watched));
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Serves one connection until it ends, times out or is closed for room.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    slot: Slot,
    app: Router,
    graceful: hyper_util::server::graceful::Watcher,
) {
    // Answers are written whole in one go; waiting for more to send would
    // only delay them.
    let _ = stream.set_nodelay(true);
    let admitted = Arc::clone(&slot.admitted);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(Arc::clone(&admitted));
        let mut app = app.clone();
        tower_service::Service::call(&mut app, request.map(Body::new))
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    let close = slot.admitted.close.clone();
    tokio::select! {
        ended = graceful.watch(served) => {
            if let Err(e) = ended {
                tracing::debug!("{peer}: connection ended: {e}");
            }
        }
        () = close.cancelled() => tracing::debug!("{peer}: closed to make room"),
    }
    drop(slot);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            total: 6,
            strangers: 4,
            per_address: 3,
        }
    }

    #[test]
    fn a_new_connection_closes_the_oldest_stranger_of_its_address() {
        let c = Connections::new(limits());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let slots: Vec<Slot> = (0..3).map(|_| c.admit(a, false).unwrap()).collect();
        let fourth = c.admit(a, false).unwrap();
        assert!(slots[0].admitted.close.is_cancelled());
        assert!(!slots[1].admitted.close.is_cancelled());
        assert_eq!(c.count(), (3, 3));
        // Once all of them have shown a secret, there is no room for a
        // fourth from that address.
        for s in &slots[1..] {
            s.admitted.authenticated();
        }
        fourth.admitted.authenticated();
        assert!(c.admit(a, false).is_none());
        // A trusted proxy is not held to the per-address limit.
        let more = c.admit(a, true);
        assert!(more.is_some());
        drop(slots);
        assert_eq!(c.count(), (2, 1));
        drop((fourth, more));
        assert_eq!(c.count(), (0, 0));
    }

    #[test]
    fn strangers_make_room_for_each_other_but_never_take_an_authenticated_place() {
        let c = Connections::new(limits());
        let ips: Vec<IpAddr> = (1..=8u8).map(|i| IpAddr::from([10, 0, 0, i])).collect();
        let known: Vec<Slot> = ips[..2]
            .iter()
            .map(|ip| c.admit(*ip, false).unwrap())
            .collect();
        for s in &known {
            s.admitted.authenticated();
        }
        let strangers: Vec<Slot> = ips[2..]
            .iter()
            .map(|ip| c.admit(*ip, false).unwrap())
            .collect();
        assert_eq!(c.count(), (6, 4));
        assert!(strangers[0].admitted.close.is_cancelled());
        assert!(strangers[1].admitted.close.is_cancelled());
        assert!(!known.iter().any(|s| s.admitted.close.is_cancelled()));
    }
}
