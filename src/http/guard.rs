//! The checks every request passes before any route sees it.
//!
//! - `Host` must name this server: the loopback names of the listening port,
//!   the listening address itself, or a name given with `--allow-host` (what
//!   a reverse proxy forwards). A page on another site that resolves its own
//!   name to 127.0.0.1 (DNS rebinding) sends its own name and is refused.
//! - `Origin`, when a browser sends one, must be one of those hosts too: a
//!   page elsewhere cannot drive the server from a browser that can reach it.
//! - A body declared larger than the limit is refused at once. No body is
//!   read here: a route reads one ([`read_body`]) only after the caller's
//!   secret checked out, up to the limit and within
//!   [`connections::BODY_TIMEOUT`](super::connections::BODY_TIMEOUT).
//! - The caller's address is settled once: the connection's peer, or, when
//!   the peer is a reverse proxy named by `--trusted-proxy`, the last
//!   address in `X-Forwarded-For` that is not one of those proxies. Routes
//!   read it from `ConnectInfo`, which this replaces. Anyone else's
//!   `X-Forwarded-For` is ignored: a caller cannot choose its address.
//! - An answer other than a refusal (below 400, on a route other than
//!   `/healthz`) means the caller showed a good secret: its connection is
//!   then no longer a stranger's (`connections`).
//!
//! `/healthz` is exempt from the Host check (a load balancer's probe names
//! whatever it likes); it carries nothing.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use super::Shared;
use super::connections::{Admitted, BODY_TIMEOUT};

/// The rules of one server.
#[derive(Clone, Debug)]
pub struct Guard {
    /// Accepted `host[:port]` values, lowercase.
    hosts: BTreeSet<String>,
    /// Accepted host names whatever the port (`--allow-host` without one).
    any_port: BTreeSet<String>,
    body_limit: usize,
    /// The reverse proxies whose `X-Forwarded-For` is believed.
    trusted_proxies: Vec<IpAddr>,
}

impl Guard {
    /// The rules for a server listening on `listen`, also accepting
    /// `allowed` (each `name` or `name:port`), believing the
    /// `X-Forwarded-For` of `trusted_proxies` only.
    pub fn new(
        listen: SocketAddr,
        allowed: &[String],
        body_limit: usize,
        trusted_proxies: &[IpAddr],
    ) -> Self {
        let port = listen.port();
        let mut hosts: BTreeSet<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|h| format!("{h}:{port}"))
            .collect();
        hosts.insert(listen.to_string());
        let mut any_port = BTreeSet::new();
        for a in allowed {
            let a = a.trim().to_ascii_lowercase();
            if a.is_empty() {
                continue;
            }
            if has_port(&a) {
                hosts.insert(a);
            } else {
                any_port.insert(a);
            }
        }
        Self {
            hosts,
            any_port,
            body_limit,
            trusted_proxies: trusted_proxies.iter().map(IpAddr::to_canonical).collect(),
        }
    }

    /// The address a request from `peer` comes from: `peer`'s own, unless
    /// `peer` is a trusted proxy; then the last address of
    /// `X-Forwarded-For` (the one the proxies saw) that is not a trusted
    /// proxy itself. The addresses before it are the caller's to choose.
    pub fn caller(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.ip();
        if !self.is_trusted_proxy(peer) {
            return peer;
        }
        let forwarded: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect();
        for hop in forwarded.iter().rev() {
            let Ok(ip) = hop.trim().parse::<IpAddr>() else {
                // Unreadable: what came before it cannot be placed either.
                return peer;
            };
            if !self.is_trusted_proxy(ip) {
                return ip;
            }
        }
        peer
    }

    /// True when `ip` is a reverse proxy named by `--trusted-proxy`.
    pub fn is_trusted_proxy(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.contains(&ip.to_canonical())
    }

    /// The reverse proxies named by `--trusted-proxy`.
    pub fn trusted_proxies(&self) -> &[IpAddr] {
        &self.trusted_proxies
    }

    /// True when a `Host` header value names this server.
    pub fn host_ok(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        self.hosts.contains(&host) || self.any_port.contains(host_part(&host))
    }

    /// True when an `Origin` header value is this server's.
    pub fn origin_ok(&self, origin: &str) -> bool {
        let rest = origin
            .strip_prefix("http://")
            .map(|r| (r, "80"))
            .or_else(|| origin.strip_prefix("https://").map(|r| (r, "443")));
        let Some((authority, default_port)) = rest else {
            return false;
        };
        if authority.contains('/') {
            return false;
        }
        let with_port = if has_port(authority) {
            authority.to_owned()
        } else {
            format!("{authority}:{default_port}")
        };
        self.host_ok(&with_port)
    }

    /// The largest body accepted.
    pub fn body_limit(&self) -> usize {
        self.body_limit
    }
}

/// `host` split into its name and its port, if it has one (`[::1]:80`,
/// `name:80`; a bare IPv6 literal has none).
fn split_port(host: &str) -> (&str, Option<&str>) {
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if host.starts_with('[') {
        return match host.split_once("]:") {
            Some((h, p)) if digits(p) => (&host[..=h.len()], Some(p)),
            _ => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if digits(p) && !h.contains(':') => (h, Some(p)),
        _ => (host, None),
    }
}

fn has_port(host: &str) -> bool {
    split_port(host).1.is_some()
}

/// `host` without its port.
fn host_part(host: &str) -> &str {
    split_port(host).0
}

/// A JSON error answer.
pub fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

/// The middleware: Host, Origin, the declared body size and the caller's
/// address, then the route.
pub async fn check(State(state): State<Shared>, mut request: Request, next: Next) -> Response {
    let guard = &state.guard;
    let healthz = request.uri().path() == "/healthz";
    if !healthz {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !guard.host_ok(host) {
            return refuse(
                StatusCode::MISDIRECTED_REQUEST,
                "invalid Host header: this server answers only the names it listens by; call it \
                 by one of them, or have its owner add the name with --allow-host",
            );
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let ok = origin.to_str().is_ok_and(|o| guard.origin_ok(o));
            if !ok {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "this Origin may not call the server; open the page from the server's own \
                     address, or have its owner add the name with --allow-host",
                );
            }
        }
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > guard.body_limit as u64) {
        return too_large(guard);
    }
    if let Some(&ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() {
        let caller = guard.caller(peer, request.headers());
        if caller != peer.ip() {
            request
                .extensions_mut()
                .insert(ConnectInfo(SocketAddr::new(caller, peer.port())));
        }
    }
    let connection = request.extensions().get::<Arc<Admitted>>().cloned();
    let answer = next.run(request).await;
    if !healthz
        && answer.status().as_u16() < 400
        && let Some(c) = connection
    {
        c.authenticated();
    }
    answer
}

fn too_large(guard: &Guard) -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!(
            "the request body is larger than {} bytes; send less at once (a long document goes \
             through upload_content in parts)",
            guard.body_limit
        ),
    )
}

/// The body of an authenticated request, read whole: up to the limit (413
/// past it) and within [`BODY_TIMEOUT`] (408 after it; the connection is
/// then closed, the rest of the body unread).
pub async fn read_body(guard: &Guard, body: Body) -> Result<Bytes, Response> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, guard.body_limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_length_limit(&e) => Err(too_large(guard)),
        Ok(Err(e)) => Err(refuse(
            StatusCode::BAD_REQUEST,
            &format!("the request body could not be read ({e}); send the request again"),
        )),
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} s: send it whole at once",
                BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// True when reading a body failed because it passed the limit.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.to_string().contains("length limit exceeded") {
            return true;
        }
        source = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            "127.0.0.1:8765".parse().unwrap(),
            &["board.example.org".into(), "proxy.internal:9000".into()],
            1024,
            &["10.0.0.9".parse().unwrap(), "10.0.0.8".parse().unwrap()],
        )
    }

    #[test]
    fn only_this_servers_names_pass_as_host() {
        let g = guard();
        for ok in [
            "127.0.0.1:8765",
            "localhost:8765",
            "LOCALHOST:8765",
            "[::1]:8765",
            "board.example.org",
            "board.example.org:443",
            "proxy.internal:9000",
        ] {
            assert!(g.host_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "127.0.0.1",
            "127.0.0.1:8766",
            "evil.example:8765",
            "proxy.internal:9001",
            "proxy.internal",
            "localhost",
        ] {
            assert!(!g.host_ok(bad), "{bad}");
        }
    }

    #[test]
    fn only_this_servers_origins_pass() {
        let g = guard();
        assert!(g.origin_ok("http://127.0.0.1:8765"));
        assert!(g.origin_ok("https://board.example.org"));
        assert!(!g.origin_ok("http://evil.example:8765"));
        assert!(!g.origin_ok("null"));
        assert!(!g.origin_ok("http://127.0.0.1:8765/x"));
        assert!(!g.origin_ok("ftp://127.0.0.1:8765"));
        assert!(!g.origin_ok("http://proxy.internal"));
    }

    #[test]
    fn a_forwarded_address_counts_only_from_a_trusted_proxy() {
        let g = guard();
        let mut h = HeaderMap::new();
        h.insert(
            "x-forwarded-for",
            "192.0.2.1, 203.0.113.7, 10.0.0.8".parse().unwrap(),
        );
        let proxy: SocketAddr = "10.0.0.9:5000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // Past the trusted hops, the first address a trusted proxy saw.
        assert_eq!(g.caller(proxy, &h), ip("203.0.113.7"));
        // Anyone else's header is theirs to make up: not believed, not even
        // from loopback.
        assert_eq!(g.caller(local, &h), ip("127.0.0.1"));
        assert_eq!(g.caller(proxy, &HeaderMap::new()), ip("10.0.0.9"));
        h.insert("x-forwarded-for", "203.0.113.7, junk".parse().unwrap());
        assert_eq!(g.caller(proxy, &h), ip("10.0.0.9"));
    }
}
