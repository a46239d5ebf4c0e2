//! Who is calling: the secret a request carries, turned into an identity.
//!
//! Identity comes from the bearer token only, never from tool arguments:
//! a role token acts as its role in its channel, the admin token reaches
//! the management tools and nothing else, a view key looks at one channel's
//! board and nothing else. Secrets are looked up by their SHA-256; the admin
//! token, which is not in the database, is compared in constant time. A
//! wrong secret counts against the caller's address and its answer waits
//! (`throttle`); a good one never waits, whatever others at its address do.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use sha2::{Digest as _, Sha256};

use super::Shared;
use super::connections::Admitted;
use super::guard::refuse;
use crate::store::access::{RoleToken, SecretKind, ViewKey};
use crate::store::now_ms;

/// A caller that presented a good secret.
#[derive(Clone, Debug)]
pub enum Identity {
    /// The admin token: the management tools.
    Admin,
    /// A role token: the mailbox tools as its role, `/status`.
    Role(RoleToken),
    /// A view key: one channel's board.
    Viewer(ViewKey),
}

/// The server's admin token, kept as its digest.
#[derive(Debug, Clone)]
pub struct AdminToken(Option<[u8; 32]>);

impl AdminToken {
    /// The check of `token` (none: no admin).
    pub fn new(token: Option<&str>) -> Self {
        Self(
            token
                .filter(|t| !t.trim().is_empty())
                .map(|t| Sha256::digest(t.as_bytes()).into()),
        )
    }

    /// True when an admin token is set.
    #[cfg(test)]
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// True when `presented` is the admin token. The digests are compared
    /// byte by byte without stopping early, so the time taken says nothing
    /// of how much matched.
    pub fn matches(&self, presented: &str) -> bool {
        let Some(want) = &self.0 else {
            return false;
        };
        let got: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        want.iter()
            .zip(got.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// The bearer secret of a request: `Authorization: Bearer <secret>`.
/// `None` when absent or not printable ASCII.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, secret) = value.trim().split_once(' ')?;
    let secret = secret.trim();
    (scheme.eq_ignore_ascii_case("bearer")
        && !secret.is_empty()
        && secret.bytes().all(|b| b.is_ascii_graphic()))
    .then_some(secret)
}

/// The identity behind `secret`, if it is a live one.
pub fn resolve(state: &Shared, secret: &str) -> anyhow::Result<Option<Identity>> {
    if state.admin.matches(secret) {
        return Ok(Some(Identity::Admin));
    }
    let access = state.access();
    Ok(match SecretKind::of(secret) {
        Some(SecretKind::RoleToken) => access.find_role_token(secret)?.map(Identity::Role),
        Some(SecretKind::ViewKey) => access
            .find_view_key(secret, now_ms())?
            .map(Identity::Viewer),
        _ => None,
    })
}

/// The address a request comes from, for slowing down failures: the
/// connection's peer as `guard` settled it (behind a `--trusted-proxy`, the
/// address the proxy forwarded). `headers` are not read: a header is the
/// caller's to make up.
pub fn caller_address(peer: SocketAddr, _headers: &HeaderMap) -> IpAddr {
    peer.ip()
}

/// The identity of a request, or the answer refusing it (401 JSON). The
/// secret is checked at once; only a wrong one waits before its refusal,
/// longer as its address keeps failing, so a caller with a good secret is
/// never slowed by another's failures. `connection` is told when the secret
/// checked out.
pub async fn authenticate(
    state: &Shared,
    peer: SocketAddr,
    headers: &HeaderMap,
    connection: Option<&Admitted>,
) -> Result<Identity, Response> {
    let Some(secret) = bearer(headers) else {
        return Err(refuse(
            StatusCode::UNAUTHORIZED,
            "missing or invalid bearer token: send `Authorization: Bearer <token>` (a role token \
             from `countersign token create`)",
        ));
    };
    match resolve(state, secret) {
        Ok(Some(identity)) => {
            if let Some(c) = connection {
                c.authenticated();
            }
            Ok(identity)
        }
        Ok(None) => {
            state
                .throttle
                .refuse_after_pause(caller_address(peer, headers))
                .await;
            Err(refuse(
                StatusCode::UNAUTHORIZED,
                "missing or invalid bearer token: it is unknown, revoked or expired — ask the \
                 server's owner for a new one (`countersign token create`)",
            ))
        }
        Err(e) => {
            tracing::error!("cannot check a token: {e:#}");
            Err(refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the server cannot read its access database",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_token_matches_itself_only() {
        let a = AdminToken::new(Some("s3cret-admin"));
        assert!(a.is_set());
        assert!(a.matches("s3cret-admin"));
        assert!(!a.matches("s3cret-admiN"));
        assert!(!a.matches(""));
        let none = AdminToken::new(Some("  "));
        assert!(!none.is_set());
        assert!(!none.matches("  "));
    }

    #[test]
    fn a_bearer_is_read_only_from_a_well_formed_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer cst_abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("cst_abc"));
        h.insert(header::AUTHORIZATION, "bearer  cst_abc ".parse().unwrap());
        assert_eq!(bearer(&h), Some("cst_abc"));
        h.insert(header::AUTHORIZATION, "Basic cst_abc".parse().unwrap());
        assert_eq!(bearer(&h), None);
        h.insert(
            header::AUTHORIZATION,
            axum::http::HeaderValue::from_bytes(b"Bearer caf\xc3\xa9").unwrap(),
        );
        assert_eq!(bearer(&h), None);
    }
}
