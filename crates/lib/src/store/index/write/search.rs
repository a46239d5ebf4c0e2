//! The full-text index's upkeep: body rows reach `bodies_fts` in batches
//! (ingest leaves them out of its own transaction), in bulk after a
//! rebuild, a step at a time when far behind.
//!
//! Owns every write on `bodies_fts` and the `fts_rowid` / `fts_filling` /
//! `fts_stale` marks in `meta`; must not decide when a step runs (`Channel`
//! does).

use rusqlite::params;

use super::super::{BULK_FTS_BUFFER, FTS_AUTOMERGE, FTS_BUFFER, REBUILD_FTS_BUFFER};
use super::IndexTx;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Adds the body rows written since the last call to the full-text index,
    /// in one statement (inside the caller's transaction). A pass that more
    /// than doubles the index (the first indexing of a channel's bodies) is
    /// done in bulk, as a rebuild's is ([`Self::index_search_step`]), with a
    /// smaller buffer since a server may be the one doing it. Each such
    /// pass at least doubles the rows, so its merge costs at most twice the
    /// final index over a channel's life.
    pub fn index_new_bodies(&self) -> StoreResult<()> {
        self.empty_stale_search_index()?;
        let (done, last) = self.fts_progress()?;
        let bulk = (last - done > done).then_some(BULK_FTS_BUFFER);
        self.index_bodies(done, last, bulk)
    }

    /// Indexes body rows `done + 1 ..= last`. In bulk (`Some(buffer)`), FTS5
    /// keeps up to `buffer` bytes of terms in memory with automatic merges
    /// off, then merges everything into one segment and gets its defaults
    /// back. One segment also makes searches faster: a phrase query opens one
    /// iterator per trigram per segment, and at 100k bodies the bench's
    /// 11-character term took 0.5 ms in `MATCH` instead of 1.2 ms (27
    /// segments).
    fn index_bodies(&self, done: i64, last: i64, bulk: Option<i64>) -> StoreResult<()> {
        if last <= done {
            return Ok(());
        }
        if let Some(buffer) = bulk {
            self.fts_bulk_settings(buffer)?;
        }
        self.index_body_range(done, last)?;
        if bulk.is_some() {
            self.fts_merge_and_restore()?;
        }
        Ok(())
    }

    /// Sets FTS5's term buffer to `buffer` bytes and turns automatic merges
    /// off. These settings live in the FTS5 table itself, so they outlast the
    /// transaction: [`Self::fts_merge_and_restore`] gives the defaults back.
    fn fts_bulk_settings(&self, buffer: i64) -> StoreResult<()> {
        self.fts_set("hashsize", buffer)?;
        self.fts_set("automerge", 0)
    }

    /// Merges the full-text index into one segment, then gives FTS5 its
    /// defaults back for the small batches that follow.
    fn fts_merge_and_restore(&self) -> StoreResult<()> {
        self.conn
            .execute_batch("INSERT INTO bodies_fts(bodies_fts) VALUES ('optimize')")
            .db(&self.path)?;
        self.fts_set("hashsize", FTS_BUFFER)?;
        self.fts_set("automerge", FTS_AUTOMERGE)
    }

    /// Sets one of FTS5's options of the full-text table.
    fn fts_set(&self, option: &str, value: i64) -> StoreResult<()> {
        self.conn
            .prepare_cached("INSERT INTO bodies_fts(bodies_fts, rank) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![option, value]))
            .db(&self.path)?;
        Ok(())
    }

    /// Adds body rows `done + 1 ..= upto` to the full-text index in one
    /// statement and records `upto` as indexed, in the same transaction: the
    /// mark never runs ahead of the rows it covers.
    fn index_body_range(&self, done: i64, upto: i64) -> StoreResult<()> {
        let p = &self.path;
        self.conn
            .prepare_cached(
                "INSERT INTO bodies_fts(rowid, topic, body) \
                 SELECT rowid, topic, body FROM bodies WHERE rowid > ?1 AND rowid <= ?2 \
                 ORDER BY rowid",
            )
            .and_then(|mut s| s.execute([done, upto]))
            .db(p)?;
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_rowid', ?1)")
            .and_then(|mut s| s.execute([upto.to_string()]))
            .db(p)?;
        Ok(())
    }

    /// Marks the full-text index as holding none of the body rows, for a
    /// rebuild that has just emptied them: an `fts_stale` mark says its
    /// entries are of rows thrown away, and the next step empties it
    /// ([`Self::index_search_step`]). Emptying it here, on the path the
    /// tools wait for, took 29 ms of a 10k rebuild's 0.4 s (FTS5 walks every
    /// page of its own tables); searches refuse meanwhile
    /// ([`Index::search_backlog`]), so the stale entries are never read.
    pub(super) fn forget_search_index(&self) -> StoreResult<()> {
        self.conn
            .execute_batch(
                "DELETE FROM meta WHERE key = 'fts_rowid';
                 INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_stale', '1');",
            )
            .db(&self.path)
    }

    /// Empties the full-text index if a rebuild left it stale
    /// ([`Self::forget_search_index`]), before any row is added to it.
    fn empty_stale_search_index(&self) -> StoreResult<()> {
        if !self.fts_stale()? {
            return Ok(());
        }
        self.conn
            .execute_batch(
                "INSERT INTO bodies_fts(bodies_fts) VALUES ('delete-all');
                 DELETE FROM meta WHERE key = 'fts_stale';",
            )
            .db(&self.path)
    }

    /// One step of bringing the full-text index up to date, inside the
    /// caller's transaction; true when it is then complete.
    ///
    /// A backlog of at most [`SEARCH_BATCH`] body rows (what writes and syncs
    /// leave) is indexed at once ([`Self::index_new_bodies`]). A larger one
    /// (after a rebuild, which commits the rows without their full-text
    /// index) is filled that many rows per step, each step its own
    /// transaction, so that writers and searches of other processes get the
    /// index between steps: FTS5 collects each batch with merging off, and
    /// the last step merges everything into one segment and restores FTS5's
    /// defaults. A `fts_filling` mark in `meta` says a fill is under way, so
    /// a fill cut short (a crash) is finished the same way by whoever steps
    /// next, never left with merging off.
    pub fn index_search_step(&self) -> StoreResult<bool> {
        self.empty_stale_search_index()?;
        let (done, last) = self.fts_progress()?;
        let filling = self.fts_filling()?;
        if !filling {
            if last - done <= self.search_batch {
                self.index_new_bodies()?;
                return Ok(true);
            }
            self.fts_bulk_settings(REBUILD_FTS_BUFFER)?;
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_filling', '1')",
                    [],
                )
                .db(&self.path)?;
        }
        let upto = last.min(done.saturating_add(self.search_batch));
        if upto > done {
            self.index_body_range(done, upto)?;
        }
        if upto < last {
            return Ok(false);
        }
        self.fts_merge_and_restore()?;
        self.conn
            .execute("DELETE FROM meta WHERE key = 'fts_filling'", [])
            .db(&self.path)?;
        Ok(true)
    }
}
