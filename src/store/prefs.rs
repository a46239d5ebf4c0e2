//! `local.json`: per-device preferences of one channel (never synced).
//!
//! Holds what only this device should remember, such as which build's news
//! each role has already been shown. A missing or unreadable file is an empty
//! one: preferences must never stop a tool.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{IoContext as _, StoreResult};

/// The preferences.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Prefs {
    /// The build whose news each role has seen.
    #[serde(default)]
    pub seen_build: BTreeMap<String, String>,
}

impl Prefs {
    fn path(state_dir: &Path) -> PathBuf {
        state_dir.join("local.json")
    }

    /// Reads the preferences (defaults if absent or unreadable).
    pub fn load(state_dir: &Path) -> Self {
        std::fs::read(Self::path(state_dir))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes them atomically (temporary file, then rename).
    pub fn save(&self, state_dir: &Path) -> StoreResult<()> {
        std::fs::create_dir_all(state_dir).at(state_dir)?;
        let path = Self::path(state_dir);
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(self).expect("prefs serialize");
        std::fs::write(&tmp, bytes).at(&tmp)?;
        std::fs::rename(&tmp, &path).at(&path)?;
        Ok(())
    }
}
