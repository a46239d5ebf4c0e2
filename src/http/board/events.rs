//! `GET /board/<channel>/events`: server-sent events, one `change` event
//! whenever the channel's folder changes, for the page's script to reload
//! its content.
//!
//! The folder watcher's wake-ups are hints (`store::folder::watcher`): a burst of
//! them (a sync landing many files) is gathered for a moment into one
//! event. A stream ends when the server shuts down, and within a second of
//! its key or board session ending (`revoke_board_access`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::viewer::{Credential, still_open};
use crate::http::Shared;
use crate::store::Watcher;

/// How long a burst of changes is gathered into one event.
pub const GATHER: Duration = Duration::from_millis(150);
/// How often a stream checks that its key still stands.
pub const RECHECK: Duration = Duration::from_secs(1);

struct Stream_ {
    state: Shared,
    credential: Credential,
    changes: watch::Receiver<u64>,
    shutdown: CancellationToken,
    recheck: tokio::time::Interval,
    // Keeps the watcher alive while the stream is.
    _watcher: Arc<Watcher>,
}

/// The event stream of the channel `watcher` watches, for a viewer with
/// `credential`.
pub fn stream(
    state: Shared,
    watcher: Arc<Watcher>,
    credential: Credential,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut changes = watcher.subscribe();
    changes.mark_unchanged();
    let mut recheck = tokio::time::interval(RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let s = Stream_ {
        shutdown: state.shutdown.child_token(),
        state,
        credential,
        changes,
        recheck,
        _watcher: watcher,
    };
    let events = futures::stream::unfold(s, |mut s| async move {
        loop {
            tokio::select! {
                () = s.shutdown.cancelled() => return None,
                changed = s.changes.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    tokio::time::sleep(GATHER).await;
                    let generation = *s.changes.borrow_and_update();
                    if !still_open(&s.state, &s.credential) {
                        return None;
                    }
                    let event = Event::default().event("change").data(generation.to_string());
                    return Some((Ok(event), s));
                }
                _ = s.recheck.tick() => {
                    if !still_open(&s.state, &s.credential) {
                        return None;
                    }
                }
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
