//! Pins: every pin version that stands, in order per key.
//!
//! The `pins` rows are written by the consent fold (`store::fold::consent`); these
//! queries only read them.

use super::Index;
use super::rows::{FromRow, Named};
use crate::store::error::StoreResult;

/// The current version of a key: the one with the highest position.
const LATEST: &str = "p.pos = (SELECT max(q.pos) FROM pins q WHERE q.key = p.key)";

/// Which pin versions to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinSelect<'a> {
    /// The current version of every key.
    Current,
    /// The current version of one key.
    Latest(&'a str),
    /// Every version of one key, oldest first.
    History(&'a str),
    /// The version a pin write made (its record's full id), if it stands.
    Record(&'a str),
}

/// One pin version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinVersion {
    /// The pin write's record (full id).
    pub record: String,
    /// The key.
    pub key: String,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
    /// The version label.
    pub version: String,
    /// Who wrote it.
    pub role: String,
    /// When (ms).
    pub ms: i64,
    /// The approving message (full id), if any.
    pub approved_by: Option<String>,
    /// sha256 of the body.
    pub sha256: String,
    /// Body length in bytes.
    pub bytes: i64,
    /// Body length in characters.
    pub chars: i64,
}

impl FromRow for PinVersion {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            record: r.get("record")?,
            key: r.get("key")?,
            title: r.get("title")?,
            body: r.get("body")?,
            version: r.get("version")?,
            role: r.get("role")?,
            ms: r.get("ms")?,
            approved_by: r.get("approved_by")?,
            sha256: r.get("sha256")?,
            bytes: r.get("bytes")?,
            chars: r.get("chars")?,
        })
    }
}

impl Index {
    /// The pin versions `select` names, ordered by key and version.
    pub fn pin_versions(&self, select: PinSelect<'_>) -> StoreResult<Vec<PinVersion>> {
        let (cond, args): (String, Vec<&str>) = match select {
            PinSelect::Current => (LATEST.to_owned(), Vec::new()),
            PinSelect::Latest(key) => (format!("p.key = ?1 AND {LATEST}"), vec![key]),
            PinSelect::History(key) => ("p.key = ?1".to_owned(), vec![key]),
            PinSelect::Record(id) => ("p.record = ?1".to_owned(), vec![id]),
        };
        let sql = format!(
            "SELECT p.record, p.key, p.title, p.body, p.version, p.role, p.ms, p.approved_by, \
             p.sha256, p.bytes, p.chars FROM pins p WHERE {cond} ORDER BY p.key, p.pos"
        );
        self.rows(&sql, rusqlite::params_from_iter(args))
    }

    /// The record of the current version of `key` (full id), if any.
    pub fn pin_head(&self, key: &str) -> StoreResult<Option<String>> {
        self.scalar_opt(
            &format!("SELECT p.record FROM pins p WHERE p.key = ?1 AND {LATEST}"),
            [key],
        )
    }
}
