//! `/status` and `/hook-status`: what a role has waiting, for a role token.
//!
//! `countersign status` and `countersign hook stop` run on a machine without
//! the channel folder read these (`COUNTERSIGN_URL`, `COUNTERSIGN_TOKEN`):
//! `/status` answers the JSON `countersign status` prints beside the folder
//! (`app::status::status_report`, one type for both), `/hook-status` only
//! whose counters they are and the counters (`app::status::hook_status`).
//! Only a role token reads them: a view key or the admin token has no role.
//!
//! `/status?wait=N` holds the answer up to N seconds (at most 50) until some
//! actionable counter is non-zero, looking again whenever the folder watcher
//! reports a change and at least every second. Waiting is bounded: at most
//! [`MAX_WAITING`] requests in all and [`MAX_WAITING_PER_TOKEN`] per token,
//! else 429 with `Retry-After`. A waiting request that goes away frees its
//! place at once.
//!
//! Owns the routes, the sessions they read through (one per channel and
//! role, kept open) and the waiting places; it decides nothing about
//! counters, which are `app::status`'s.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use serde::Serialize;

use super::Shared;
use super::connections::Admitted;
use super::guard::refuse;
use super::hosting::{not_hosted, role_session};
use super::identity::{Identity, authenticate};
use crate::app::Session;
use crate::app::status::{Summary, hook_status, status_report};
use crate::store::Watcher;
use crate::store::access::RoleToken;

/// The longest `?wait=` honoured, in seconds.
pub const MAX_WAIT_S: u64 = 50;
/// Requests waiting at once, in all.
pub const MAX_WAITING: usize = 64;
/// Requests waiting at once with one token.
pub const MAX_WAITING_PER_TOKEN: usize = 8;
/// How often a waiting request looks again when the folder says nothing
/// (folders on network mounts give no events).
const RECHECK: Duration = Duration::from_secs(1);
/// What a 429 asks the caller to wait, in seconds.
const RETRY_AFTER_S: u64 = 5;

/// The sessions and waiting places of a server's status
/// routes.
#[derive(Default)]
pub struct Status {
    opened: Mutex<HashMap<(String, String), Arc<Opened>>>,
    waiting: Mutex<Waiting>,
}

/// One role's session, kept open between requests.
struct Opened {
    session: Mutex<Session>,
    /// The channel's shared folder watcher (`None`: the folder cannot be
    /// watched, and waits look every second).
    watcher: Option<Arc<Watcher>>,
}

#[derive(Default)]
struct Waiting {
    total: usize,
    by_token: HashMap<String, usize>,
}

/// A place among the waiting requests, given back when dropped (the answer
/// sent, or the caller gone).
struct Place {
    state: Shared,
    token: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut w = lock(&self.state.status.waiting);
        w.total = w.total.saturating_sub(1);
        if let Some(n) = w.by_token.get_mut(&self.token) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                w.by_token.remove(&self.token);
            }
        }
    }
}

/// Takes a waiting place for `token`, or `None` when the server or the
/// token has as many waiting as it allows.
fn take_place(state: &Shared, token: &str) -> Option<Place> {
    let mut w = lock(&state.status.waiting);
    let mine = w.by_token.get(token).copied().unwrap_or(0);
    if w.total >= MAX_WAITING || mine >= MAX_WAITING_PER_TOKEN {
        return None;
    }
    w.total += 1;
    *w.by_token.entry(token.to_owned()).or_default() += 1;
    Some(Place {
        state: state.clone(),
        token: token.to_owned(),
    })
}

/// `GET /status[?wait=N]`: the role's status report.
pub async fn status(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    extensions: Extensions,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let token = match role_token(&state, peer, &headers, &extensions).await {
        Ok(t) => t,
        Err(refusal) => return refusal,
    };
    let opened = match open(&state, &token).await {
        Ok(o) => o,
        Err(refusal) => return refusal,
    };
    let wait = wait_seconds(query.as_deref());
    if wait == 0 {
        return read(&opened, status_report).await;
    }
    let Some(_place) = take_place(&state, &token.id) else {
        let mut answer = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "too many waiting status requests (at most {MAX_WAITING} in all and \
                 {MAX_WAITING_PER_TOKEN} per token): try again in {RETRY_AFTER_S} s"
            ),
        );
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
        return answer;
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
    let mut changes = opened.watcher.as_deref().map(Watcher::subscribe);
    loop {
        if let Some(rx) = &mut changes {
            rx.borrow_and_update();
        }
        let seen = look(&opened, status_report).await;
        let done = match &seen {
            Ok((sum, _)) => !sum.pending().is_empty(),
            Err(_) => true,
        };
        if done || tokio::time::Instant::now() >= deadline || state.shutdown.is_cancelled() {
            return answer(seen);
        }
        let pause = tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + RECHECK));
        match &mut changes {
            Some(rx) => tokio::select! {
                () = pause => {}
                () = state.shutdown.cancelled() => {}
                changed = rx.changed() => if changed.is_err() { changes = None },
            },
            None => tokio::select! {
                () = pause => {}
                () = state.shutdown.cancelled() => {}
            },
        }
    }
}

/// `GET /hook-status`: whose counters, and the counters.
pub async fn hook(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    extensions: Extensions,
    headers: HeaderMap,
) -> Response {
    let token = match role_token(&state, peer, &headers, &extensions).await {
        Ok(t) => t,
        Err(refusal) => return refusal,
    };
    match open(&state, &token).await {
        Ok(opened) => read(&opened, hook_status).await,
        Err(refusal) => refusal,
    }
}

/// The caller's role token, or the answer refusing it.
async fn role_token(
    state: &Shared,
    peer: SocketAddr,
    headers: &HeaderMap,
    extensions: &Extensions,
) -> Result<RoleToken, Response> {
    let connection = extensions.get::<Arc<Admitted>>().map(Arc::as_ref);
    match authenticate(state, peer, headers, connection).await? {
        Identity::Role(token) => Ok(token),
        Identity::Admin | Identity::Viewer(_) => Err(refuse(
            StatusCode::FORBIDDEN,
            "status needs a channel role token (`countersign token create --role R`): a view key \
             or the admin token has no role whose status it could read",
        )),
    }
}

/// `wait=N` of the query: seconds, at most [`MAX_WAIT_S`]; anything not a
/// whole non-negative number is 0 (no wait).
fn wait_seconds(query: Option<&str>) -> u64 {
    query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.strip_prefix("wait="))
        .next_back()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        .min(MAX_WAIT_S)
}

/// The session of `token`'s role, opened on first use and kept while its
/// channel is hosted.
async fn open(state: &Shared, token: &RoleToken) -> Result<Arc<Opened>, Response> {
    let key = (token.channel.id.clone(), token.role.clone());
    let Some(dir) = state.hosting.find_ref(&token.channel) else {
        lock(&state.status.opened).remove(&key);
        return Err(not_hosted(token));
    };
    if let Some(o) = lock(&state.status.opened).get(&key) {
        return Ok(o.clone());
    }
    let watcher = state.watchers.of(&dir);
    let session = role_session(&state.home, dir, token).await?;
    let opened = Arc::new(Opened {
        session: Mutex::new(session),
        watcher,
    });
    Ok(lock(&state.status.opened)
        .entry(key)
        .or_insert(opened)
        .clone())
}

type Reader<T> = fn(&mut Session) -> crate::app::AppResult<(Summary, T)>;

/// Reads through the role's session, off the async threads.
async fn look<T: Send + 'static>(
    opened: &Arc<Opened>,
    reader: Reader<T>,
) -> Result<(Summary, T), String> {
    let o = opened.clone();
    match tokio::task::spawn_blocking(move || reader(&mut lock(&o.session))).await {
        Ok(Ok(seen)) => Ok(seen),
        Ok(Err(e)) => Err(format!("cannot read the channel: {e}")),
        Err(e) => Err(format!("cannot read the channel: {e}")),
    }
}

/// One read, answered.
async fn read<T: Serialize + Send + 'static>(opened: &Arc<Opened>, reader: Reader<T>) -> Response {
    answer(look(opened, reader).await)
}

fn answer<T: Serialize>(seen: Result<(Summary, T), String>) -> Response {
    match seen {
        Ok((_, body)) => axum::Json(body).into_response(),
        Err(e) => {
            tracing::error!("{e}");
            refuse(StatusCode::SERVICE_UNAVAILABLE, &e)
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_whole_seconds_capped_and_anything_else_is_none() {
        assert_eq!(wait_seconds(None), 0);
        assert_eq!(wait_seconds(Some("wait=7")), 7);
        assert_eq!(wait_seconds(Some("x=1&wait=3")), 3);
        assert_eq!(wait_seconds(Some("wait=3600")), MAX_WAIT_S);
        assert_eq!(wait_seconds(Some("wait=-1")), 0);
        assert_eq!(wait_seconds(Some("wait=1.5")), 0);
        assert_eq!(wait_seconds(Some("wait=")), 0);
        assert_eq!(wait_seconds(Some("waiting=9")), 0);
    }
}
