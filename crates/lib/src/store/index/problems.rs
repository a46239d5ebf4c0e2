//! Problems: what ingest found in the folder and could not apply, or that
//! stands in the way of applying it.
//!
//! Owns [`ProblemKind`], the one list of kinds and the one place that renders
//! each to the word stored in the index's `problems` table and shown to users
//! (`verify`, `log`, the status alarms). Ingest decides when a problem is
//! recorded or cleared; this module only names and reads them.

use std::fmt;

use rusqlite::params;

use super::Index;
use super::rows::{FromRow, Named};
use crate::store::error::StoreResult;

/// What kind of problem a line, file or feed has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProblemKind {
    /// A line that is not a record (not JSON, not UTF-8, over 1 MiB): skipped.
    Garbage,
    /// A record that fails a check (signature, channel, feed, chain): never applied.
    Quarantine,
    /// Two valid records at one seq: the feed is frozen after the common part.
    Fork,
    /// An op this version does not know: the feed is frozen.
    UnknownOp,
    /// A feed nobody admitted: its records wait.
    Unadmitted,
    /// A second admit of a feed with another key: the first stands.
    SecondClaim,
    /// A record dated more than 5 minutes ahead of local time: held.
    Held,
    /// A record dated more than 24 hours ahead: its feed's clock is wrong.
    Clock,
    /// A symlink, FIFO, socket, device, or a folder with a segment's name.
    WrongType,
    /// A file or folder with a name no feed uses (named by `verify` only).
    Stray,
    /// A segment past the size bound: not read.
    Oversize,
    /// A feed whose signed head names records its files do not hold.
    Cut,
    /// A claim of an invitation that is refused (a wrong proof, a used or
    /// expired invitation): never admitted.
    Invitation,
}

impl ProblemKind {
    /// Every kind.
    pub const ALL: [Self; 13] = [
        Self::Garbage,
        Self::Quarantine,
        Self::Fork,
        Self::UnknownOp,
        Self::Unadmitted,
        Self::SecondClaim,
        Self::Held,
        Self::Clock,
        Self::WrongType,
        Self::Stray,
        Self::Oversize,
        Self::Cut,
        Self::Invitation,
    ];

    /// The word stored in the index and shown to users.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Garbage => "garbage",
            Self::Quarantine => "quarantine",
            Self::Fork => "fork",
            Self::UnknownOp => "unknown_op",
            Self::Unadmitted => "unadmitted",
            Self::SecondClaim => "second_claim",
            Self::Held => "held",
            Self::Clock => "clock",
            Self::WrongType => "wrong_type",
            Self::Stray => "stray",
            Self::Oversize => "oversize",
            Self::Cut => "cut",
            Self::Invitation => "invitation",
        }
    }

    /// The kind a stored word names.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// True for the kinds that are alarms: trouble a session should hear of.
    /// Unreadable lines and stray files are harmless (ignored) and left to
    /// `verify`.
    pub const fn is_alarm(self) -> bool {
        !matches!(self, Self::Garbage | Self::Stray)
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ProblemKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ProblemKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl rusqlite::ToSql for ProblemKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for ProblemKind {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let word = v.as_str()?;
        Self::parse(word).ok_or_else(|| {
            rusqlite::types::FromSqlError::Other(format!("unknown problem kind '{word}'").into())
        })
    }
}

/// A line or feed that ingest could not apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// The segment file, relative to the channel folder.
    pub path: String,
    /// Byte offset of the line.
    pub offset: u64,
    /// The record id, when the line was a record.
    pub record: Option<String>,
    /// The feed.
    pub feed: Option<String>,
    /// Why.
    pub reason: String,
}

impl Index {
    /// Every problem recorded by ingest, in the order they were found.
    pub fn problems(&self) -> StoreResult<Vec<Problem>> {
        self.rows(
            "SELECT kind, path, offset, record, feed, reason FROM problems ORDER BY n",
            [],
        )
    }

    /// The first `limit + 1` problems that are alarms
    /// ([`ProblemKind::is_alarm`]), in the order they were found (every one
    /// when `limit` is `usize::MAX`). Looked up by kind, so the rows of
    /// harmless problems (a garbage line in each of thousands of junk
    /// segments) are never read.
    pub fn alarm_problems(&self, limit: usize) -> StoreResult<Vec<Problem>> {
        self.problems_of_kinds(true, limit)
    }

    /// The first `limit + 1` problems that are not alarms (unreadable lines
    /// and files no feed uses), in the order they were found: harmless to
    /// the channel, and still what makes `verify` exit 1.
    pub fn quiet_problems(&self, limit: usize) -> StoreResult<Vec<Problem>> {
        self.problems_of_kinds(false, limit)
    }

    /// The first `limit + 1` problems whose kind is an alarm or not, as
    /// `alarm` says, in the order they were found.
    fn problems_of_kinds(&self, alarm: bool, limit: usize) -> StoreResult<Vec<Problem>> {
        let kinds: Vec<&str> = ProblemKind::ALL
            .into_iter()
            .filter(|k| k.is_alarm() == alarm)
            .map(ProblemKind::as_str)
            .collect();
        let kinds = serde_json::to_string(&kinds).expect("a list of words serializes");
        // SQLite takes a negative limit for none.
        let limit = i64::try_from(limit).map_or(-1, |l| l.saturating_add(1));
        self.rows(
            "SELECT kind, path, offset, record, feed, reason FROM problems \
             WHERE kind IN (SELECT value FROM json_each(?1)) ORDER BY n LIMIT ?2",
            params![kinds, limit],
        )
    }

    /// The problems of `kinds` recorded for `feed` (a feed id, or the scope
    /// of a folder listing): their kind and path.
    pub(in crate::store) fn problems_of_feed(
        &self,
        kinds: &[ProblemKind],
        feed: &str,
    ) -> StoreResult<Vec<(ProblemKind, String)>> {
        let mut out = Vec::new();
        for kind in kinds {
            let rows: Vec<(ProblemKind, String)> = self.rows(
                "SELECT kind, path FROM problems WHERE kind = ?1 AND feed = ?2 ORDER BY n",
                params![kind, feed],
            )?;
            out.extend(rows);
        }
        Ok(out)
    }

    /// The feeds (or listing scopes) that problems of `kinds` are recorded
    /// for, with the kind: one query for a pass that lists every feed
    /// folder, instead of one per folder.
    pub(in crate::store) fn feeds_with_problems(
        &self,
        kinds: &[ProblemKind],
    ) -> StoreResult<Vec<(String, ProblemKind)>> {
        let mut out = Vec::new();
        for kind in kinds {
            let rows: Vec<(String, ProblemKind)> = self.rows(
                "SELECT DISTINCT feed, kind FROM problems WHERE kind = ?1 AND feed IS NOT NULL",
                [kind],
            )?;
            out.extend(rows);
        }
        Ok(out)
    }

    /// The records (full ids) that problems of `kind` name.
    pub(in crate::store) fn problem_records(&self, kind: ProblemKind) -> StoreResult<Vec<String>> {
        self.values(
            "SELECT record FROM problems WHERE kind = ?1 AND record IS NOT NULL",
            [kind],
        )
    }

    /// How many problems of `kind` stand (records held, for one).
    pub fn problem_count(&self, kind: ProblemKind) -> StoreResult<i64> {
        self.scalar("SELECT count(*) FROM problems WHERE kind = ?1", [kind])
    }
}

impl FromRow for Problem {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            kind: r.get("kind")?,
            path: r.get("path")?,
            offset: r.get::<_, i64>("offset")? as u64,
            record: r.get("record")?,
            feed: r.get("feed")?,
            reason: r.get("reason")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_renders_to_its_stored_word_and_back() {
        let words: Vec<&str> = ProblemKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            words,
            [
                "garbage",
                "quarantine",
                "fork",
                "unknown_op",
                "unadmitted",
                "second_claim",
                "held",
                "clock",
                "wrong_type",
                "stray",
                "oversize",
                "cut",
                "invitation"
            ]
        );
        for k in ProblemKind::ALL {
            assert_eq!(ProblemKind::parse(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
        }
        assert_eq!(ProblemKind::parse("Garbage"), None);
        assert_eq!(ProblemKind::parse(""), None);
    }

    #[test]
    fn only_garbage_and_strays_are_not_alarms() {
        let quiet: Vec<_> = ProblemKind::ALL
            .into_iter()
            .filter(|k| !k.is_alarm())
            .collect();
        assert_eq!(quiet, [ProblemKind::Garbage, ProblemKind::Stray]);
    }

    #[test]
    fn a_problem_reads_back_with_its_kind() {
        let ix = Index::in_memory("c").unwrap();
        for (n, kind) in [ProblemKind::Held, ProblemKind::Clock, ProblemKind::Held]
            .into_iter()
            .enumerate()
        {
            ix.conn
                .execute(
                    "INSERT INTO problems(kind, path, offset, feed, reason) VALUES (?1, 'p', ?2, 'f', 'r')",
                    rusqlite::params![kind, n as i64],
                )
                .unwrap();
        }
        let kinds: Vec<_> = ix.problems().unwrap().into_iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [ProblemKind::Held, ProblemKind::Clock, ProblemKind::Held]
        );
        assert_eq!(ix.problem_count(ProblemKind::Held).unwrap(), 2);
        assert_eq!(ix.problem_count(ProblemKind::Cut).unwrap(), 0);
        // A word no kind renders to is a fault, not a silent guess.
        ix.conn
            .execute(
                "INSERT INTO problems(kind, path, offset, reason) VALUES ('nonsense', 'p', 9, 'r')",
                [],
            )
            .unwrap();
        assert!(ix.problems().is_err());
    }
}
