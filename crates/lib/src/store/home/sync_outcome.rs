//! `last_sync.json`: how this device's last sync of a channel ended (never
//! synced).
//!
//! Owns the file's format and its atomic replacement. The board reads it to
//! show this machine's own sync health, which no record in the folder can
//! tell. A missing or unreadable file reads as "no sync recorded": it must
//! never stop a sync or a board.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::store::error::StoreResult;
use crate::store::home::state_file;

/// The file's name in the state folder.
const FILE: &str = "last_sync.json";

/// The end of one sync on this device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SyncOutcome {
    /// When it ended (ms since the epoch, this machine's clock).
    pub at_ms: i64,
    /// Why it failed; `None` when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tries it took.
    pub attempts: u32,
    /// A fingerprint of this device's feed files as the sync found them
    /// (`crate::sync::own_fingerprint`), when it succeeded: while they are
    /// unchanged, a later sync has nothing of this device's to publish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<u64>,
}

/// The most bytes of an error kept (a remote's message can be long).
const ERROR_BYTES: usize = 400;

impl SyncOutcome {
    /// A finished sync; `error` is cut to a bounded length.
    pub fn new(at_ms: i64, error: Option<&str>, attempts: u32) -> Self {
        let error = error.map(|e| {
            let mut end = e.len().min(ERROR_BYTES);
            while !e.is_char_boundary(end) {
                end -= 1;
            }
            e[..end].to_owned()
        });
        Self {
            at_ms,
            error,
            attempts,
            published: None,
        }
    }

    /// The same, noting the fingerprint of this device's feeds it published.
    pub fn with_published(self, published: Option<u64>) -> Self {
        Self { published, ..self }
    }

    /// The last sync recorded here, if any (an unreadable file is none).
    pub fn load(state_dir: &Path) -> Option<Self> {
        state_file::load(state_dir, FILE)
    }

    /// Records it atomically (temporary file, then rename).
    pub fn save(&self, state_dir: &Path) -> StoreResult<()> {
        state_file::save(state_dir, FILE, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_round_trips_and_a_long_error_is_cut_on_a_char_boundary() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(SyncOutcome::load(dir.path()), None);
        let long = "é".repeat(ERROR_BYTES);
        let o = SyncOutcome::new(7, Some(&long), 3).with_published(Some(u64::MAX));
        assert!(o.error.as_ref().unwrap().len() <= ERROR_BYTES);
        o.save(dir.path()).unwrap();
        assert_eq!(SyncOutcome::load(dir.path()), Some(o));
        std::fs::write(dir.path().join("last_sync.json"), b"{not json").unwrap();
        assert_eq!(SyncOutcome::load(dir.path()), None);
    }
}
