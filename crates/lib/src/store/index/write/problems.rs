//! Recording and clearing problems: what ingest found in the folder and
//! could not apply.
//!
//! Owns every write on `problems`; must not decide when a problem stands
//! (ingest and `store::fold::invitation` do) nor how a kind is named
//! (`index::problems`).

use rusqlite::params;

use super::super::ProblemKind;
use super::IndexTx;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Records a problem unless one of its kind stands at `path` and
    /// `offset` already: the number of problems added (0 or 1).
    pub(in crate::store) fn record_problem(
        &self,
        kind: ProblemKind,
        path: &str,
        offset: u64,
        record: Option<&str>,
        feed: &str,
        reason: &str,
    ) -> StoreResult<usize> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO problems(kind, path, offset, record, feed, reason) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| s.execute(params![kind, path, offset as i64, record, feed, reason]))
            .db(&self.path)
    }

    /// Clears the `garbage` problems at `path` whose offset is below `below`
    /// and not in `still`: lines that a read of the whole file found to be
    /// records now (a repair put back the bytes a crash zeroed). The number
    /// cleared.
    pub(in crate::store) fn clear_garbage_gone(
        &self,
        path: &str,
        below: u64,
        still: &[u64],
    ) -> StoreResult<usize> {
        let below = i64::try_from(below).unwrap_or(i64::MAX);
        let still = serde_json::to_string(still).expect("offsets serialize");
        self.conn
            .prepare_cached(
                "DELETE FROM problems WHERE kind = ?1 AND path = ?2 AND offset < ?3 \
                 AND offset NOT IN (SELECT value FROM json_each(?4))",
            )
            .and_then(|mut st| st.execute(params![ProblemKind::Garbage, path, below, still]))
            .db(&self.path)
    }

    /// Clears the problems of `kind` at `path`.
    pub(in crate::store) fn clear_problems_at(
        &self,
        kind: ProblemKind,
        path: &str,
    ) -> StoreResult<()> {
        self.conn
            .prepare_cached("DELETE FROM problems WHERE kind = ?1 AND path = ?2")
            .and_then(|mut st| st.execute(params![kind, path]))
            .db(&self.path)?;
        Ok(())
    }

    /// Clears the problems of `kind` recorded for `feed`.
    pub(in crate::store) fn clear_problems_of_feed(
        &self,
        kind: ProblemKind,
        feed: &str,
    ) -> StoreResult<()> {
        self.conn
            .prepare_cached("DELETE FROM problems WHERE kind = ?1 AND feed = ?2")
            .and_then(|mut st| st.execute(params![kind, feed]))
            .db(&self.path)?;
        Ok(())
    }

    /// Clears the problems of `kinds` about record `record` (full id).
    pub(in crate::store) fn clear_problems_of_record(
        &self,
        kinds: &[ProblemKind],
        record: &str,
    ) -> StoreResult<()> {
        for kind in kinds {
            self.conn
                .prepare_cached("DELETE FROM problems WHERE kind = ?1 AND record = ?2")
                .and_then(|mut st| st.execute(params![kind, record]))
                .db(&self.path)?;
        }
        Ok(())
    }
}
