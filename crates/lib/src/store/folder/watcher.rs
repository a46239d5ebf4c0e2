//! The folder watcher: wakes waiting calls when any feed file changes.
//!
//! Events are hints, never facts: whatever arrives (a create, an append, a
//! rename, an overflow) only bumps a generation counter, and the waiter then
//! catches up and looks for itself. Folders that deliver no events (network
//! mounts, some synced folders) are covered by the waiters' periodic rescan.

use std::path::Path;

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::watch;

use crate::store::error::{StoreError, StoreResult};

/// A running watcher on a channel's `feeds/` folder. Dropping it stops it.
pub struct Watcher {
    _inner: RecommendedWatcher,
    generation: watch::Receiver<u64>,
}

impl Watcher {
    /// Starts watching `feeds` recursively.
    pub fn start(feeds: &Path) -> StoreResult<Self> {
        let (tx, rx) = watch::channel(0u64);
        // A symlink in the folder is never followed: it could lead the
        // recursive watch anywhere in the file system (to `/`, say).
        let config = notify::Config::default().with_follow_symlinks(false);
        let mut inner = notify::RecommendedWatcher::new(
            move |res: notify::Result<notify::Event>| {
                // Errors (an inotify overflow among them) count as "something changed".
                let relevant = match &res {
                    Ok(ev) => ev.paths.is_empty() || ev.paths.iter().any(|p| !is_noise(p)),
                    Err(_) => true,
                };
                if relevant {
                    tx.send_modify(|g| *g = g.wrapping_add(1));
                }
            },
            config,
        )
        .map_err(|e| watch_error(feeds, e))?;
        std::fs::create_dir_all(feeds).map_err(|e| {
            StoreError::Io(crate::store::error::PathError {
                path: feeds.to_path_buf(),
                source: e,
            })
        })?;
        inner
            .watch(feeds, RecursiveMode::Recursive)
            .map_err(|e| watch_error(feeds, e))?;
        Ok(Self {
            _inner: inner,
            generation: rx,
        })
    }

    /// A receiver whose value changes whenever something in the folder did.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.clone()
    }
}

/// Paths whose changes say nothing about records: git's own folder and
/// temporary or partial files.
fn is_noise(p: &Path) -> bool {
    p.components().any(|c| c.as_os_str() == ".git")
        || p.extension().is_some_and(|e| e == "tmp" || e == "partial")
}

fn watch_error(path: &Path, source: notify::Error) -> StoreError {
    StoreError::Watch {
        path: path.to_path_buf(),
        source,
    }
}
