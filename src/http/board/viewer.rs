//! Who may look at which board, and how a link becomes a cookie.
//!
//! A board opens to a view key of its own channel only: presented as
//! `Authorization: Bearer csv_…`, or through the cookie of a board session.
//! A session is opened by a link's one-time nonce (`?n=`, 60 s): the nonce
//! is burned and answered with a 303 to the bare page that sets the cookie,
//! so the secret leaves the address bar and the history at once. Role and
//! admin tokens never open a board. Every failure counts against the
//! caller's address (behind a local proxy, the one it forwards), like a
//! wrong token on `/mcp`.
//!
//! Each channel of each server has its own cookie: named
//! `cs_board_<server id>_<channel>` at `Path=/board/<channel>`, the server id
//! derived from the home's server secret and the address listened on
//! (`core::proof`). A browser keeps boards of several channels, and of
//! servers on several ports of one host (cookies ignore ports), open side
//! by side; none logs another out.

use std::net::SocketAddr;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};

use super::refusal;
use crate::core::ids::is_slug;
use crate::core::proof::server_id;
use crate::http::Shared;
use crate::http::identity::{Identity, bearer, caller_address, resolve};
use crate::store::ChannelDir;
use crate::store::access::ViewKey;
use crate::store::now_ms;

/// What every board cookie's name starts with.
pub const COOKIE_PREFIX: &str = "cs_board_";

/// The name of the board cookie of channel `channel` on the server whose id
/// is `server`; `None` for a name no channel has (not a slug), which no
/// cookie is looked up or set for.
pub fn cookie_name(server: &str, channel: &str) -> Option<String> {
    is_slug(channel).then(|| format!("{COOKIE_PREFIX}{server}_{channel}"))
}

/// This server's board cookie name for channel `channel`.
fn cookie_name_here(state: &Shared, channel: &str) -> Result<Option<String>, Refused> {
    let secret = state.access().server_secret().map_err(|e| unreadable(&e))?;
    Ok(cookie_name(&server_id(&secret, state.listen), channel))
}

/// The secret a board request looks with.
#[derive(Clone, Debug)]
pub enum Credential {
    /// A board session's secret, from the cookie.
    Cookie(String),
    /// A view key, from `Authorization: Bearer`.
    Bearer(String),
}

/// A request allowed to look at a board.
#[derive(Debug)]
pub struct Viewer {
    /// How it presented it (to check, later, that it still stands).
    pub credential: Credential,
    /// The channel.
    pub dir: ChannelDir,
}

/// The value of the cookie named `name` in `headers`, if any.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The viewer of the board of channel `name`, or the page refusing it.
pub async fn authorize(
    state: &Shared,
    peer: SocketAddr,
    headers: &HeaderMap,
    name: &str,
) -> Result<Viewer, Response> {
    let caller = caller_address(peer, headers);
    let own = match cookie_name_here(state, name) {
        Ok(own) => own.and_then(|n| cookie(headers, &n)),
        Err(refused) => return Err(refused.page()),
    };
    let found = match (own, bearer(headers)) {
        (Some(c), _) => lookup_cookie(state, &c).map(|k| (k, Credential::Cookie(c))),
        (None, Some(secret)) => {
            lookup_bearer(state, secret).map(|k| (k, Credential::Bearer(secret.to_owned())))
        }
        (None, None) => Err(Refused::SignIn("This board is private.")),
    };
    let (key, credential) = match found {
        Ok(f) => f,
        Err(refused) => {
            state.throttle.refuse_after_pause(caller).await;
            return Err(refused.page());
        }
    };
    if key.channel.name != name {
        state.throttle.refuse_after_pause(caller).await;
        return Err(refusal::forbidden(&format!(
            "This key opens the board of channel '{}' only.",
            key.channel.name
        )));
    }
    state.throttle.succeeded(caller);
    let Some(dir) = state.hosting.find_ref(&key.channel) else {
        return Err(refusal::not_found(name));
    };
    Ok(Viewer { credential, dir })
}

/// True while `credential` still opens its board (not revoked, not ended).
pub fn still_open(state: &Shared, credential: &Credential) -> bool {
    let access = state.access();
    let now = now_ms();
    match credential {
        Credential::Cookie(c) => access.find_board_session(c, now).ok().flatten().is_some(),
        Credential::Bearer(k) => access.find_view_key(k, now).ok().flatten().is_some(),
    }
}

/// Why a presented secret opens no board (kept small; drawn as a page by
/// [`Refused::page`]).
enum Refused {
    /// 401 with this reason.
    SignIn(&'static str),
    /// 403 with this reason.
    Forbidden(&'static str),
    /// 500: the access database cannot be read.
    Unreadable,
}

impl Refused {
    fn page(self) -> Response {
        match self {
            Self::SignIn(why) => refusal::sign_in(why),
            Self::Forbidden(why) => refusal::forbidden(why),
            Self::Unreadable => refusal::broken(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server cannot read its access database.",
            ),
        }
    }
}

fn lookup_cookie(state: &Shared, secret: &str) -> Result<ViewKey, Refused> {
    match state.access().find_board_session(secret, now_ms()) {
        Ok(Some(key)) => Ok(key),
        Ok(None) => Err(Refused::SignIn(
            "This browser's board session has ended: its key was revoked or expired.",
        )),
        Err(e) => Err(unreadable(&e)),
    }
}

fn lookup_bearer(state: &Shared, secret: &str) -> Result<ViewKey, Refused> {
    match resolve(state, secret) {
        Ok(Some(Identity::Viewer(key))) => Ok(key),
        Ok(Some(Identity::Role(_) | Identity::Admin)) => Err(Refused::Forbidden(
            "Role and admin tokens never open a board: it opens with a view key of its own \
             channel (`countersign board`, or the board_link tool).",
        )),
        Ok(None) => Err(Refused::SignIn("This key is unknown, revoked or expired.")),
        Err(e) => Err(unreadable(&e)),
    }
}

fn unreadable(e: &dyn std::fmt::Display) -> Refused {
    tracing::error!("cannot read the access database: {e}");
    Refused::Unreadable
}

/// `GET /board/<name>?n=<nonce>`: burns the nonce and answers 303 to the
/// bare page with the session's cookie (`Secure` when the request came
/// through https, as a reverse proxy says with `X-Forwarded-Proto`).
pub async fn login(
    state: &Shared,
    peer: SocketAddr,
    headers: &HeaderMap,
    name: &str,
    nonce: &str,
) -> Response {
    let caller = caller_address(peer, headers);
    let now = now_ms();
    let redeemed = state.access().redeem_nonce(nonce, now);
    let (session, expires_ms, key) = match redeemed {
        Ok(Some(r)) => r,
        Ok(None) => {
            state.throttle.refuse_after_pause(caller).await;
            return refusal::sign_in(
                "This link was used already, or it is more than 60 seconds old, or its key was \
                 revoked.",
            );
        }
        Err(e) => return unreadable(&e).page(),
    };
    if key.channel.name != name {
        state.throttle.refuse_after_pause(caller).await;
        return refusal::forbidden(&format!(
            "This link opens the board of channel '{}' only.",
            key.channel.name
        ));
    }
    state.throttle.succeeded(caller);
    let cookie_as = match cookie_name_here(state, name) {
        Ok(Some(n)) => n,
        Ok(None) => return refusal::not_found(name),
        Err(refused) => return refused.page(),
    };
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    let max_age = (expires_ms - now).max(0) / 1000;
    let channel = &key.channel.name;
    let cookie = format!(
        "{cookie_as}={session}; HttpOnly; SameSite=Strict; Path=/board/{channel}; \
         Max-Age={max_age}{}",
        if https { "; Secure" } else { "" }
    );
    let location = format!("/board/{channel}");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let h = response.headers_mut();
    if let (Ok(l), Ok(c)) = (
        HeaderValue::from_str(&location),
        HeaderValue::from_str(&cookie),
    ) {
        h.insert(header::LOCATION, l);
        h.insert(header::SET_COOKIE, c);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_cookie_is_found_among_others() {
        let name = cookie_name("0123456789ab", "local").unwrap();
        assert_eq!(name, "cs_board_0123456789ab_local");
        let mut h = HeaderMap::new();
        assert_eq!(cookie(&h, &name), None);
        h.insert(
            header::COOKIE,
            "a=1; cs_board_0123456789ab_other=csb_y; cs_board_0123456789ab_local=csb_x; b=2"
                .parse()
                .unwrap(),
        );
        assert_eq!(cookie(&h, &name).as_deref(), Some("csb_x"));
        h.insert(
            header::COOKIE,
            "cs_board_0123456789ab_localx=1; cs_board_0123456789ab_local="
                .parse()
                .unwrap(),
        );
        assert_eq!(cookie(&h, &name), None);
        assert_eq!(cookie_name("0123456789ab", "../x"), None);
    }
}
