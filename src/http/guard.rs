//! The checks every request passes before any route sees it.
//!
//! - `Host` must name this server: the loopback names of the listening port,
//!   the listening address itself, or a name given with `--allow-host` (what
//!   a reverse proxy forwards). A page on another site that resolves its own
//!   name to 127.0.0.1 (DNS rebinding) sends its own name and is refused.
//! - `Origin`, when a browser sends one, must be one of those hosts too: a
//!   page elsewhere cannot drive the server from a browser that can reach it.
//! - The body is read whole, up to the limit; a larger one is refused before
//!   any handler runs.
//!
//! `/healthz` is exempt from the Host check (a load balancer's probe names
//! whatever it likes); it carries nothing.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use super::Shared;

/// The rules of one server.
#[derive(Clone, Debug)]
pub struct Guard {
    /// Accepted `host[:port]` values, lowercase.
    hosts: BTreeSet<String>,
    /// Accepted host names whatever the port (`--allow-host` without one).
    any_port: BTreeSet<String>,
    body_limit: usize,
}

impl Guard {
    /// The rules for a server listening on `listen`, also accepting
    /// `allowed` (each `name` or `name:port`).
    pub fn new(listen: SocketAddr, allowed: &[String], body_limit: usize) -> Self {
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
        }
    }

    /// The `host[:port]` values accepted with an explicit port (for rmcp's
    /// own check, which must agree).
    pub fn host_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.hosts.iter().map(|h| host_part(h).to_owned()).collect();
        names.extend(self.any_port.iter().cloned());
        names.sort();
        names.dedup();
        names
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

/// The middleware: Host, Origin and body size, then the route.
pub async fn check(State(state): State<Shared>, request: Request, next: Next) -> Response {
    let guard = &state.guard;
    if request.uri().path() != "/healthz" {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !guard.host_ok(host) {
            return refuse(StatusCode::MISDIRECTED_REQUEST, "invalid Host header");
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let ok = origin.to_str().is_ok_and(|o| guard.origin_ok(o));
            if !ok {
                return refuse(StatusCode::FORBIDDEN, "this Origin may not call the server");
            }
        }
    }
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is larger than {} bytes", guard.body_limit),
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > guard.body_limit as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, guard.body_limit).await else {
        return too_large();
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            "127.0.0.1:8765".parse().unwrap(),
            &["board.example.org".into(), "proxy.internal:9000".into()],
            1024,
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
}
