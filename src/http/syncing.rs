//! The hosted channels of `serve` synced with their remotes in the
//! background (on by default; `--sync-every` sets the period or turns it
//! off), as `countersign mcp` syncs its one channel (the same `mcp::syncer`
//! loop: every period, and about a second after each own write; a channel
//! with no remote is left alone). What HTTP agents send then reaches the
//! other machines without anyone running `countersign sync`.
//!
//! Owns which channels have a sync loop running (one each, started when the
//! server starts or when a channel is created); the folder watchers they
//! listen to are the server's shared ones (`watchers`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::mcp::{summarizer, syncer};
use std::sync::Arc;

use crate::store::Watcher;
use crate::store::{ChannelDir, Home};

/// The background syncs of a server.
#[derive(Default)]
pub struct Syncing {
    every: Option<Duration>,
    /// Channel id → the watcher its loop listens to (kept alive here).
    running: Mutex<HashMap<String, Option<Arc<Watcher>>>>,
}

impl Syncing {
    /// Syncs every `every`, or never when `None`.
    pub fn new(every: Option<Duration>) -> Self {
        Self {
            every,
            running: Mutex::default(),
        }
    }

    /// Starts the background sync of `dir` with `home`, woken by `watcher`
    /// (on its interval alone when `None`), unless syncing is off or it runs
    /// already. Must be called inside the server's runtime.
    /// Background compaction with a model (`mcp::summarizer`) starts with
    /// it, whether syncing is on or off.
    pub fn start(&self, dir: &ChannelDir, home: &Home, watcher: Option<Arc<Watcher>>) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.contains_key(dir.id()) {
            return;
        }
        tokio::spawn(summarizer::run(dir.clone(), home.clone(), None, true));
        if let Some(every) = self.every {
            let changes = watcher.as_deref().map(Watcher::subscribe);
            tokio::spawn(syncer::run(dir.clone(), home.clone(), every, changes));
        }
        running.insert(dir.id().to_owned(), watcher);
    }
}
