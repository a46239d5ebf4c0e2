//! The board at `/board/<channel>`: a page a person leaves open to watch a
//! channel.
//!
//! Owns the board's routes: the page ([`page`], drawn from `app::board`'s
//! view by a pure function, with its chart [`chart`]), its event stream
//! ([`events`]), its attention strip ([`strip`]), the pages below it (one
//! message, one pin, older activity: [`detail`], linked by [`links`]),
//! who may look and how a link becomes a cookie ([`viewer`]),
//! the HTML refusals ([`refusal`]) and the headers every answer carries
//! ([`headers`]); also the one HTML escaper ([`html`]) and how times read
//! ([`when`]), and the proof `countersign board` asks for before it hands
//! this server a link ([`proof`]). It reads through `app` only and never
//! writes a record.

pub mod chart;
pub mod contrast;
pub mod detail;
pub mod events;
pub mod headers;
pub mod html;
pub mod links;
pub mod page;
pub mod reader;
pub mod refusal;
pub mod strip;
pub mod viewer;
pub mod when;

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use axum::routing::get;

use super::Shared;
use crate::app::refusal::AppError;
use crate::core::proof::{board_proof, is_challenge};
use crate::store::now_ms;
use reader::Reader;
use viewer::Viewer;

/// The board's routes, each answer with [`headers::secure`]'s headers.
pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/board/{channel}", get(show))
        .route("/board/{channel}/events", get(events))
        .route("/board/{channel}/proof", get(proof))
        .route("/board/{channel}/m/{id}", get(message))
        .route("/board/{channel}/pin/{key}", get(pin))
        .route("/board/{channel}/activity", get(activity))
        .layer(axum::middleware::map_response(headers::secure))
}

/// `GET /board/<channel>`: the page; with `?n=<nonce>`, the exchange of a
/// link's nonce for the cookie.
async fn show(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(nonce) = query.get("n") {
        return viewer::login(&state, peer, &headers, &name, nonce).await;
    }
    let viewer = match viewer::authorize(&state, peer, &headers, &name).await {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    let reader = match open(&state, &viewer).await {
        Ok(r) => r,
        Err(refused) => return refused,
    };
    let drawn = tokio::task::spawn_blocking(move || reader.page(now_ms())).await;
    match drawn {
        Ok(Ok(html)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response(),
        Ok(Err(e)) => {
            tracing::error!("board of {name}: {e:#}");
            refusal::broken(
                StatusCode::SERVICE_UNAVAILABLE,
                "The channel cannot be read right now; the server's log says why.",
            )
        }
        Err(e) => refusal::broken(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `GET /board/<channel>/m/<id>`: one message (`id`: a prefix of 6 to 64
/// hex characters of its id).
async fn message(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let missing = format!("No message of this channel has an id starting with '{id}'.");
    let drawn = below(&state, peer, &headers, &name, move |r, now| {
        r.message(&id, now)
    })
    .await;
    drawn.unwrap_or_else(|| refusal::page(StatusCode::NOT_FOUND, "No such message", &missing))
}

/// `GET /board/<channel>/pin/<key>`: one pin, its text in full and its
/// versions.
async fn pin(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((name, key)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    below(&state, peer, &headers, &name, move |r, now| {
        r.pin(&key, now).map(Some)
    })
    .await
    .unwrap_or_else(|| refusal::not_found(&name))
}

/// `GET /board/<channel>/activity?before=<cursor>`: the channel's moves
/// before the cursor an "older" link carries.
async fn activity(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let before = query.get("before").cloned();
    below(&state, peer, &headers, &name, move |r, now| {
        r.activity(before.as_deref(), now).map(Some)
    })
    .await
    .unwrap_or_else(|| refusal::not_found(&name))
}

/// A page below the board, for a viewer of its channel: `draw` runs off
/// the async threads and gives the page, or `None` when what the address
/// names is not there (the caller answers 404 in its words). A refusal of
/// the app (a malformed id or cursor) is a 400 saying why; a fault is a 503
/// whose reason goes to the log.
async fn below(
    state: &Shared,
    peer: SocketAddr,
    headers: &HeaderMap,
    name: &str,
    draw: impl FnOnce(&Reader, i64) -> anyhow::Result<Option<String>> + Send + 'static,
) -> Option<Response> {
    let viewer = match viewer::authorize(state, peer, headers, name).await {
        Ok(v) => v,
        Err(refused) => return Some(refused),
    };
    let reader = match open(state, &viewer).await {
        Ok(r) => r,
        Err(refused) => return Some(refused),
    };
    let drawn = tokio::task::spawn_blocking(move || draw(&reader, now_ms())).await;
    Some(match drawn {
        Ok(Ok(Some(html))) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response(),
        Ok(Ok(None)) => return None,
        Ok(Err(e)) => match e.downcast_ref::<AppError>() {
            Some(refusal @ (AppError::Value(_) | AppError::Permission(_))) => refusal::page(
                StatusCode::BAD_REQUEST,
                "This address names nothing here",
                &refusal.to_string(),
            ),
            _ => {
                tracing::error!("board of {name}: {e:#}");
                refusal::broken(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The channel cannot be read right now; the server's log says why.",
                )
            }
        },
        Err(e) => refusal::broken(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    })
}

/// `GET /board/<channel>/events`: the page's event stream.
async fn events(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let viewer = match viewer::authorize(&state, peer, &headers, &name).await {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    match state.watchers.of(&viewer.dir) {
        Some(watcher) => events::stream(state.clone(), watcher, viewer.credential).into_response(),
        None => refusal::broken(
            StatusCode::SERVICE_UNAVAILABLE,
            "This channel's folder cannot be watched: the page refreshes itself every 30 seconds.",
        ),
    }
}

/// `GET /board/<channel>/proof?c=<challenge>`: proves that this server
/// holds its home's server secret and serves `channel` on the address it
/// listens on (`core::proof::board_proof`), so `countersign board` hands a
/// link only to a server of its own home, never to whatever answers on the
/// port. Asking needs no secret; the answer gives away nothing else.
async fn proof(
    State(state): State<Shared>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(challenge) = query.get("c").filter(|c| is_challenge(c)) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(serde_json::json!({
                "error": "c: send a challenge of 64 lowercase hex digits as ?c=…"
            })),
        )
            .into_response();
    };
    let Some(dir) = state.hosting.find(&name) else {
        return refusal::not_found(&name);
    };
    let secret = state.access().server_secret();
    match secret {
        Ok(secret) => axum::Json(serde_json::json!({
            "listen": state.listen.to_string(),
            "channel_id": dir.id(),
            "proof": board_proof(&secret, state.listen, dir.id(), challenge),
        }))
        .into_response(),
        Err(e) => {
            tracing::error!("cannot read the access database: {e}");
            refusal::broken(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server cannot read its access database.",
            )
        }
    }
}

/// The reader of the viewer's channel, opened on first use.
async fn open(state: &Shared, viewer: &Viewer) -> Result<std::sync::Arc<Reader>, Response> {
    let (s, dir) = (state.clone(), viewer.dir.clone());
    match tokio::task::spawn_blocking(move || s.board.get(dir, &s.home)).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => {
            tracing::error!("cannot open a board: {e:#}");
            Err(refusal::broken(
                StatusCode::SERVICE_UNAVAILABLE,
                "The channel cannot be opened right now; the server's log says why.",
            ))
        }
        Err(e) => Err(refusal::broken(
            StatusCode::INTERNAL_SERVER_ERROR,
            &e.to_string(),
        )),
    }
}
