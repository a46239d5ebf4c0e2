//! `local.json`: per-device preferences of one channel (never synced).
//!
//! Holds what only this device should remember, such as which build's news
//! each role has already been shown, and the sync remote. A missing or unreadable file is an empty
//! one: preferences must never stop a tool.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::core::remote_target::{self, RemoteKind, TargetError};
use crate::store::error::StoreResult;
use crate::store::home::state_file;

/// The file's name in the state folder.
const FILE: &str = "local.json";

/// The preferences.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Prefs {
    /// The build whose news each role has seen.
    #[serde(default)]
    pub seen_build: BTreeMap<String, String>,
    /// Where `countersign sync` moves the folder (absent: this channel is not synced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<Remote>,
}

/// A sync remote, chosen with `init --git-remote/--rclone-remote` or `remote set`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", content = "target", rename_all = "lowercase")]
pub enum Remote {
    /// The channel folder is a git work tree pushing to and pulling from this URL.
    Git(String),
    /// An rclone remote, `REMOTE:PATH` (or a local path).
    Rclone(String),
}

impl Remote {
    /// The remote of `kind` at `target`.
    pub fn new(kind: RemoteKind, target: String) -> Self {
        match kind {
            RemoteKind::Git => Self::Git(target),
            RemoteKind::Rclone => Self::Rclone(target),
        }
    }

    /// How it travels.
    pub fn kind(&self) -> RemoteKind {
        match self {
            Self::Git(_) => RemoteKind::Git,
            Self::Rclone(_) => RemoteKind::Rclone,
        }
    }

    /// The git URL or the rclone `REMOTE:PATH`.
    pub fn target(&self) -> &str {
        match self {
            Self::Git(t) | Self::Rclone(t) => t,
        }
    }

    /// Checks that git or rclone can only read the target as a place.
    pub fn check(&self) -> Result<(), TargetError> {
        remote_target::check(self.kind(), self.target())
    }
}

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Git(url) => write!(f, "git {url}"),
            Self::Rclone(target) => write!(f, "rclone {target}"),
        }
    }
}

impl Prefs {
    /// Reads the preferences (defaults if absent or unreadable).
    pub fn load(state_dir: &Path) -> Self {
        state_file::load(state_dir, FILE).unwrap_or_default()
    }

    /// Writes them atomically (temporary file, then rename).
    pub fn save(&self, state_dir: &Path) -> StoreResult<()> {
        state_file::save(state_dir, FILE, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_files_without_a_remote_still_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("local.json"),
            br#"{"seen_build":{"backend":"0.1.0"}}"#,
        )
        .unwrap();
        let p = Prefs::load(dir.path());
        assert_eq!(p.seen_build["backend"], "0.1.0");
        assert_eq!(p.remote, None);
    }

    #[test]
    fn the_remote_round_trips_in_a_fixed_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = Prefs {
            remote: Some(Remote::Rclone("box:team/chan".into())),
            ..Prefs::default()
        };
        p.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("local.json")).unwrap();
        assert!(
            text.contains(r#""remote": {"#) && text.contains(r#""kind": "rclone""#),
            "{text}"
        );
        assert_eq!(Prefs::load(dir.path()), p);
    }
}
