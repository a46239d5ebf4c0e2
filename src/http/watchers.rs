//! One folder watcher per hosted channel, shared by everything in the server
//! that waits for the folder to change: the roles' MCP services
//! (`wait_for_mail`), `/status?wait=`, the board's event streams and the
//! background sync.
//!
//! Owns starting each channel's watcher once and keeping it for the
//! server's life. A watcher costs an inotify instance, and the system allows
//! few of them per user (128 by default): one per consumer and role would
//! run out with a dozen channels. It must not decide what a change means;
//! each consumer catches up and looks for itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::store::ChannelDir;
use crate::store::Watcher;

/// The watchers of the channels started so far, by channel id.
#[derive(Default)]
pub struct Watchers {
    by_channel: Mutex<HashMap<String, Option<Arc<Watcher>>>>,
}

impl Watchers {
    /// The watcher of `dir`'s feeds, started on first use. `None` when the
    /// folder cannot be watched (said once): its consumers then look again
    /// on their own intervals.
    pub fn of(&self, dir: &ChannelDir) -> Option<Arc<Watcher>> {
        let mut by_channel = self
            .by_channel
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        by_channel
            .entry(dir.id().to_owned())
            .or_insert_with(|| match Watcher::start(&dir.feeds()) {
                Ok(w) => Some(Arc::new(w)),
                Err(e) => {
                    tracing::warn!("{e}; waits on this channel look again on their intervals");
                    None
                }
            })
            .clone()
    }
}
