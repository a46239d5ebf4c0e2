//! The local SQLite index: schema, connection settings, transactions, the
//! full-text index's upkeep and the digest.
//!
//! The index is a cache folded from the feeds: deleting it loses nothing. It
//! lives under the home's state folder (never in the shared folder: WAL needs
//! local disk) in a file named after its schema version, so a new schema simply
//! starts a new file and rebuilds it.
//!
//! `store` owns the index: the connection never leaves `store`, and every
//! query the use cases need is a method of [`Index`] with a name from the
//! domain, returning typed rows, in the child module of its noun (`debts`,
//! `ball`, `proposals`, `messages`, `search` …). Every write is a method of
//! [`IndexTx`], which only [`Index::write`] hands out, in `write/` by noun
//! (what a folded message writes is `write::messages`); ingest and the
//! folds decide when.

mod ball;
mod checkpoint;
mod conflicts;
mod debts;
mod deliveries;
mod events;
mod feeds;
pub mod fts_layout;
mod history;
mod memory;
mod messages;
mod notes;
mod pins;
mod problems;
mod proposals;
mod rows;
mod schema;
mod search;
mod uploads;
mod work;
mod write;

pub use crate::store::error::CorruptColumn;
pub use ball::Ball;
pub use conflicts::ConflictTarget;
pub use debts::{DebtLine, DebtPage, DebtState};
pub use feeds::{AdmittedFeed, RecordLine};
pub use history::{Before, Touch};
pub use memory::{MemoryItem, MemoryStamp, SummaryRow};
pub use messages::{MessageFilter, MessageRow, PrefixMatch};
pub use notes::NoteRow;
pub use pins::PinSelect;
pub use problems::ProblemKind;
pub use proposals::OpenProposal;
pub use search::{PhraseHit, SearchScope};
pub use work::IndexWork;
pub use write::{FeedRow, IndexTx, ShownBody};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _};
use sha2::{Digest as _, Sha256};

use crate::core::message::Conflict;
use crate::store::error::{IoContext as _, SqlContext as _, StoreResult};
use schema::{SCHEMA, schema_stamp};

/// The schema version; part of the file name.
pub const SCHEMA_VERSION: u32 = 10;

/// FTS5's own default for `hashsize`, kept outside bulk passes: an ordinary
/// pass holds a few bodies, and a server's memory stays small.
const FTS_BUFFER: i64 = 1 << 20;
/// FTS5's own default for `automerge`.
const FTS_AUTOMERGE: i64 = 4;
/// `hashsize` while a rebuild's bodies are indexed: 100k bodies flushed every 1 MiB left
/// hundreds of segments that automerge rewrote again and again (the whole
/// rebuild went from 24.5 s to 18.4 s with this, automerge off and one
/// `optimize`).
const REBUILD_FTS_BUFFER: i64 = 64 << 20;
/// `hashsize` for another pass that more than doubles the index, which a
/// server may run (the first search of a fresh index): the insert of 100k
/// bodies took 6.7 s with 16 MiB, 6.0 s with 64 MiB, 10.6 s with 1 MiB.
const BULK_FTS_BUFFER: i64 = 16 << 20;
/// Body rows the full-text index takes per transaction when it is far
/// behind (after a rebuild): about a second of FTS5's work on this project's
/// bench machine (100k bodies of ~700 characters took 7.3 s), so a writer or
/// a search of another process waits at most that long for its turn.
pub const SEARCH_BATCH: i64 = 16_384;

/// How far the full-text index is behind its body rows
/// ([`Index::search_backlog`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchBacklog {
    /// Body rows (one per send or revision) the full-text index holds.
    pub indexed: i64,
    /// Body rows in all.
    pub total: i64,
}

/// An open index connection.
pub struct Index {
    conn: Connection,
    path: PathBuf,
    /// Body rows per step of a large full-text backlog
    /// ([`SEARCH_BATCH`] unless set: [`Self::set_search_batch`]).
    search_batch: i64,
    /// The thread that checkpoints the log, in a long-lived process
    /// ([`Self::checkpoint_in_background`]).
    checkpointer: Option<checkpoint::Checkpointer>,
    /// True while a write transaction that [`Self::write_held`] left open
    /// waits for its commit ([`Self::settle`]).
    held: std::cell::Cell<bool>,
}

/// The `conflicts` column of a folded entity (a message, an upload): its
/// conflicted records as a JSON list, or NULL when there are none.
pub(super) fn conflicts_json(conflicts: &[Conflict]) -> Option<String> {
    (!conflicts.is_empty()).then(|| {
        let list: Vec<_> = conflicts
            .iter()
            .map(|c| {
                serde_json::json!({
                    "record": c.record.id.hex(), "role": c.role, "op": c.op,
                    "reason": c.reason, "winner": c.winner.map(|w| w.hex()),
                })
            })
            .collect();
        serde_json::Value::from(list).to_string()
    })
}

/// How many prepared statements a connection keeps. One tool call runs a few
/// dozen distinct statements (ingest, the fold, the use case); rusqlite's
/// default of 16 made every call parse most of them again.
const STATEMENT_CACHE: usize = 256;

/// The write-ahead log size past which an idle server checkpoints it. Well
/// under SQLite's own threshold (1000 pages, about 4 MB), so that a write
/// seldom crosses that one and pays for the checkpoint itself.
const WAL_TIDY_BYTES: u64 = 1 << 20;

impl Index {
    /// The index file of a channel inside its state folder.
    pub fn path_in(state_dir: &Path) -> PathBuf {
        state_dir.join(format!("index.v{SCHEMA_VERSION}.sqlite3"))
    }

    /// Opens (creating if needed) the index at `path` for channel `channel_id`.
    pub fn open(path: &Path, channel_id: &str) -> StoreResult<Self> {
        // Search reads FTS5's storage directly: refuse a SQLite it would
        // misread. A file this build already checked against says so in
        // `meta` (see below); a new file is checked before it is made.
        let new = !path.exists();
        if new {
            fts_layout::check()?;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        let conn = Connection::open(path).db(path)?;
        conn.busy_timeout(Duration::from_secs(10)).db(path)?;
        conn.pragma_update(None, "journal_mode", "WAL").db(path)?;
        conn.pragma_update(None, "synchronous", "NORMAL").db(path)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // The query planner stability guarantee: a statement keeps the plan
        // it was prepared with whatever values are bound. Without it SQLite
        // marks a statement whose plan looked at a bound value to be prepared
        // again once its bindings are cleared, which the statement cache does
        // every time it takes one back: many of a call's statements were
        // compiled anew on every call. Every condition a partial index
        // depends on is written as a literal, never a parameter, so no plan
        // needs the values.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .db(path)?;
        let me = Self {
            conn,
            path: path.to_path_buf(),
            search_batch: SEARCH_BATCH,
            checkpointer: None,
            held: std::cell::Cell::new(false),
        };
        let stamp: i32 = me
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .db(path)?;
        if stamp == schema_stamp() {
            me.check_fts_layout()?;
            return Ok(me);
        }
        if !new {
            fts_layout::check()?;
        }
        // Creating the schema races with other processes opening a new index;
        // IMMEDIATE serializes them and IF NOT EXISTS makes the loser a no-op.
        me.conn.execute_batch("BEGIN IMMEDIATE").db(path)?;
        // `body_row` before the batch, which indexes it.
        let made = messages::add_body_row(&me.conn)
            .and_then(|()| me.conn.execute_batch(SCHEMA))
            .and_then(|()| notes::add_folder_columns(&me.conn))
            .and_then(|()| me.conn.pragma_update(None, "user_version", schema_stamp()))
            .db(path)
            .and_then(|()| {
                me.conn
                    .execute(
                        "INSERT OR IGNORE INTO meta(key, value) VALUES ('channel_id', ?1)",
                        [channel_id],
                    )
                    .db(path)
            })
            .and_then(|_| me.stamp_fts_layout());
        match made {
            Ok(_) => me.conn.execute_batch("COMMIT").db(path)?,
            Err(e) => {
                let _ = me.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
        Ok(me)
    }

    /// Runs the FTS5 self-test ([`fts_layout::check`]) unless this file's
    /// `meta` says a process of this very build passed it: the self-test
    /// builds and queries a table of its own, a tenth of a server's start,
    /// and its outcome depends on the build alone.
    fn check_fts_layout(&self) -> StoreResult<()> {
        let Some(stamp) = fts_layout::stamp() else {
            return fts_layout::check();
        };
        let seen: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'fts_layout'", [], |r| {
                r.get(0)
            })
            .optional()
            .db(&self.path)?;
        if seen.as_deref() == Some(stamp) {
            return Ok(());
        }
        fts_layout::check()?;
        self.stamp_fts_layout().map(|_| ())
    }

    /// Notes in `meta` that this build's FTS5 self-test passed.
    fn stamp_fts_layout(&self) -> StoreResult<usize> {
        let Some(stamp) = fts_layout::stamp() else {
            return Ok(0);
        };
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_layout', ?1)",
                [stamp],
            )
            .db(&self.path)
    }

    /// An in-memory index (used by `verify`, which must not touch the real one).
    pub fn in_memory(channel_id: &str) -> StoreResult<Self> {
        fts_layout::check()?;
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().db(&path)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // As `open` does, so plans are the same in both.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .db(&path)?;
        conn.execute_batch(SCHEMA).db(&path)?;
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('channel_id', ?1)",
            [channel_id],
        )
        .db(&path)?;
        Ok(Self {
            conn,
            path,
            search_batch: SEARCH_BATCH,
            checkpointer: None,
            held: std::cell::Cell::new(false),
        })
    }

    /// Sets how many body rows one step of a large full-text backlog takes
    /// (at least 1). Only tests and the bench change it from
    /// [`SEARCH_BATCH`], to see a fill in several steps on a small channel.
    pub fn set_search_batch(&mut self, rows: i64) {
        self.search_batch = rows.max(1);
    }

    /// The connection, for the store's own statements: no SQL leaves
    /// `store` (the use cases call the query methods of this module's
    /// children).
    pub(in crate::store) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f`'s reads against one snapshot of the index: a commit by
    /// another connection (another process ingesting, another session of a
    /// server) lands before all of them or after all of them, never between
    /// two. Inside a transaction already, `f` simply runs in it.
    pub fn snapshot<T, E>(&self, f: impl FnOnce(&Self) -> Result<T, E>) -> Result<T, E>
    where
        E: From<crate::store::error::StoreError>,
    {
        if !self.conn.is_autocommit() {
            return f(self);
        }
        self.conn.execute_batch("BEGIN").db(&self.path)?;
        let out = f(self);
        // Nothing was written: ending it either way only lets the snapshot go.
        let _ = self.conn.execute_batch("COMMIT");
        out
    }

    /// Runs `f` inside one write transaction (`BEGIN IMMEDIATE`): either all of
    /// it lands or none of it. `f` gets the index's writes ([`IndexTx`]),
    /// which exist nowhere else.
    pub fn write<T, E>(&self, f: impl FnOnce(&IndexTx<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<crate::store::error::StoreError>,
    {
        self.transact("BEGIN IMMEDIATE", f)
    }

    /// Like [`Self::write`], but the transaction begins as a reader's
    /// (`BEGIN`) and takes the write lock at its first write: a pass that
    /// usually finds nothing to write does not wait for other writers. A
    /// write that finds another process's commit since its reads fails
    /// busy, and the caller runs it again with [`Self::write`].
    pub fn write_deferred<T, E>(&self, f: impl FnOnce(&IndexTx<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<crate::store::error::StoreError>,
    {
        self.transact("BEGIN", f)
    }

    /// Like [`Self::write`], but a transaction that succeeds is left open:
    /// its changes are visible on this connection at once and to others
    /// once [`Self::settle`] commits it (so does the next transaction begun
    /// here by any other method). For a write whose durability lies
    /// elsewhere (the journal), so that the commit can follow the answer.
    ///
    /// Called while such a transaction is open, `f` joins it, so that a
    /// run of writes shares one commit; a failing `f` then rolls back the
    /// whole run, as a failed commit would. No savepoint: SQLite would copy
    /// every page a write touches to a statement journal first, and past
    /// 64 KiB (a write touches about twenty pages) into a file.
    pub fn write_held<T, E>(&self, f: impl FnOnce(&IndexTx<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<crate::store::error::StoreError>,
    {
        if self.held.get() {
            return f(&IndexTx::begun(self)).inspect_err(|_| {
                self.held.set(false);
                let _ = self.conn.execute_batch("ROLLBACK");
            });
        }
        let out = self.begin_and_run("BEGIN IMMEDIATE", f)?;
        self.held.set(true);
        Ok(out)
    }

    /// True while a transaction [`Self::write_held`] left open waits for
    /// [`Self::settle`].
    pub fn is_held(&self) -> bool {
        self.held.get()
    }

    /// Commits the transaction [`Self::write_held`] left open, if any; true
    /// if there was one. A commit that fails rolls it back.
    pub fn settle(&self) -> StoreResult<bool> {
        if !self.held.replace(false) {
            return Ok(false);
        }
        self.commit().inspect_err(|_| {
            let _ = self.conn.execute_batch("ROLLBACK");
        })?;
        Ok(true)
    }

    fn transact<T, E>(
        &self,
        begin: &str,
        f: impl FnOnce(&IndexTx<'_>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<crate::store::error::StoreError>,
    {
        let out = self.begin_and_run(begin, f)?;
        self.commit()?;
        Ok(out)
    }

    /// Settles a held transaction, begins one with `begin` and runs `f` in
    /// it, rolling it back if `f` fails.
    fn begin_and_run<T, E>(
        &self,
        begin: &str,
        f: impl FnOnce(&IndexTx<'_>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<crate::store::error::StoreError>,
    {
        self.settle()?;
        self.conn.execute_batch(begin).db(&self.path)?;
        f(&IndexTx::begun(self)).inspect_err(|_| {
            let _ = self.conn.execute_batch("ROLLBACK");
        })
    }

    fn commit(&self) -> StoreResult<()> {
        self.conn.execute_batch("COMMIT").db(&self.path)?;
        if let Some(c) = &self.checkpointer {
            c.after_commit();
        }
        Ok(())
    }

    /// The last body row in the full-text index, and the last body row.
    fn fts_progress(&self) -> StoreResult<(i64, i64)> {
        let p = &self.path;
        let done: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_rowid'), 0)")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db(p)?;
        let last: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM bodies")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db(p)?;
        Ok((done, last))
    }

    /// True while a batched fill of the full-text index is under way (see
    /// [`IndexTx::index_search_step`]).
    fn fts_filling(&self) -> StoreResult<bool> {
        self.has_mark("fts_filling")
    }

    /// True while the full-text index holds entries of body rows a rebuild
    /// threw away (see [`IndexTx::index_search_step`]).
    fn fts_stale(&self) -> StoreResult<bool> {
        self.has_mark("fts_stale")
    }

    /// True if `meta` holds the key `mark`, whatever its value.
    fn has_mark(&self, mark: &str) -> StoreResult<bool> {
        self.scalar("SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)", [mark])
    }

    /// How far the full-text index is behind the body rows: `None` when it
    /// holds every one (and no fill is under way, and it holds nothing a
    /// rebuild threw away), else the rows it holds and the rows in all.
    pub fn search_backlog(&self) -> StoreResult<Option<SearchBacklog>> {
        if !self.search_tail_pending()? && !self.fts_filling()? && !self.fts_stale()? {
            return Ok(None);
        }
        let (indexed, total) = self.row(
            "SELECT count(*) FILTER (WHERE rowid <= COALESCE((SELECT CAST(value AS INTEGER) \
             FROM meta WHERE key = 'fts_rowid'), 0)), count(*) FROM bodies",
            [],
        )?;
        Ok(Some(SearchBacklog { indexed, total }))
    }

    /// True when bodies wait for the full-text index (see
    /// [`IndexTx::index_new_bodies`]).
    pub fn search_tail_pending(&self) -> StoreResult<bool> {
        self.scalar(
            "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_rowid'), 0) \
             < COALESCE((SELECT MAX(rowid) FROM bodies), 0)",
            [],
        )
    }

    /// A passive checkpoint of the write-ahead log once it holds more than
    /// [`WAL_TIDY_BYTES`]. Passive: it copies what no reader still needs and
    /// never waits. Where a checkpoint thread runs
    /// ([`Self::checkpoint_in_background`]), it is asked to do it, so the
    /// caller does not hold its session meanwhile.
    pub fn checkpoint_if_grown(&self) -> StoreResult<()> {
        self.settle()?;
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let size = std::fs::metadata(&wal).map_or(0, |m| m.len());
        if size <= WAL_TIDY_BYTES {
            return Ok(());
        }
        match &self.checkpointer {
            Some(c) => c.ask(),
            None => self
                .conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .db(&self.path)?,
        }
        Ok(())
    }

    /// Moves this connection's checkpoints of the write-ahead log off its
    /// commits, to a thread of their own ([`checkpoint`]): for a process that
    /// keeps the index open.
    pub fn checkpoint_in_background(&mut self) -> StoreResult<()> {
        self.checkpointer = Some(checkpoint::Checkpointer::start(&mut self.conn, &self.path)?);
        Ok(())
    }

    /// Turns SQLite's own checkpoint at commit off or back on (its default
    /// threshold). Off for a rebuild's one large transaction: the commit then
    /// returns once the log holds the new index, and copying it back into the
    /// database file (the whole index, and an fsync of each file) falls to
    /// the next commit past the threshold, after the tools answer. A process
    /// whose checkpoints a thread takes ([`Self::checkpoint_in_background`])
    /// is left as it is: the pragma would put SQLite's hook in place of the
    /// thread's.
    pub fn set_autocheckpoint(&self, on: bool) -> StoreResult<()> {
        if self.checkpointer.is_some() {
            return Ok(());
        }
        let pages = if on { 1000 } else { 0 };
        self.conn
            .pragma_update(None, "wal_autocheckpoint", pages)
            .db(&self.path)
    }

    /// Sets SQLite's page cache for this connection (KiB). Bulk work such as a
    /// rebuild wants a large one; a long-lived server keeps the default small.
    pub fn set_cache_kib(&self, kib: i64) -> StoreResult<()> {
        self.conn
            .pragma_update(None, "cache_size", -kib)
            .db(&self.path)
    }

    /// sha256 over a canonical dump of the derived state: messages, read
    /// state, events, votes, pins, conflicts, uploads, memory summaries and notes, keyed by full record
    /// ids with times from the records' clocks. Cursors, local ingest numbers, problems and the
    /// search tables are left out, so equal feeds give equal digests anywhere.
    pub fn digest(&self) -> StoreResult<String> {
        let p = &self.path;
        let mut h = Sha256::new();
        let dump = |sql: &str, h: &mut Sha256| -> StoreResult<()> {
            let mut st = self.conn.prepare(sql).db(p)?;
            let cols = st.column_count();
            let mut rows = st.query([]).db(p)?;
            while let Some(row) = rows.next().db(p)? {
                for i in 0..cols {
                    let v: rusqlite::types::Value = row.get(i).db(p)?;
                    h.update(format!("{v:?}\u{1f}").as_bytes());
                }
                h.update(b"\n");
            }
            h.update(b"\x1e");
            Ok(())
        };
        dump(
            "SELECT id, from_role, to_json, multi, topic, \
             (SELECT body FROM bodies b WHERE b.message_id = m.id ORDER BY b.rowid DESC LIMIT 1), \
             action_required, reply_to, kind, \
             work_status, addenda, decision_requested, ms, c, deleted_ms, body_sha256, conflicts, \
             status, resolved_by, resolved_ms, resolution_note, confirmed, blocked_by, ws_by, taken, \
             last_move_ms, body_bytes, body_chars, pin_key, about, voters, revised_ms, retired_ms, \
             retired_backfill, round_conflict, approved, acks, awaiting FROM messages m ORDER BY id",
            &mut h,
        )?;
        dump(
            "SELECT message_id, role, decision, note, ms, record, body_sha256, pin_head, stale \
             FROM votes ORDER BY message_id, role",
            &mut h,
        )?;
        dump(
            "SELECT record, key, pos, title, version, body, body_ref, approved_by, role, ms, sha256, \
             bytes, chars FROM pins ORDER BY key, pos",
            &mut h,
        )?;
        dump(
            "SELECT record, key, role, reason, winner, ms, c FROM pin_conflicts ORDER BY record",
            &mut h,
        )?;
        dump(
            "SELECT role, message_id, read_ms, opened_ms, deleted FROM deliveries \
             ORDER BY message_id, role",
            &mut h,
        )?;
        dump(
            "SELECT message_id, pos, event, role, note, ms, record FROM events ORDER BY message_id, pos",
            &mut h,
        )?;
        // The text of an upload is covered by its sha256; which chunks make it, by pos.
        dump(
            "SELECT id, uploader, label, ms, c, chunks, length_bytes, length_chars, sha256, \
             sealed_ms, seal, conflicts FROM uploads ORDER BY id",
            &mut h,
        )?;
        dump(
            "SELECT record, upload, pos FROM upload_chunks ORDER BY record",
            &mut h,
        )?;
        // Every summary of the memory, by record; which one stands follows
        // from their order.
        dump(
            "SELECT id, line, ms, c, covers, text FROM summaries ORDER BY id",
            &mut h,
        )?;
        // Every note, by record (its local ingest number left out).
        dump(
            "SELECT id, role, ms, c, kind, text, event, agent, session FROM notes ORDER BY id",
            &mut h,
        )?;
        Ok(hex::encode(h.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(ix: &Index, key: &str) -> Option<String> {
        ix.conn()
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .unwrap()
    }

    fn tables(ix: &Index, name: &str) -> i64 {
        ix.conn()
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                [name],
                |r| r.get(0),
            )
            .unwrap()
    }

    #[test]
    fn the_schema_batch_runs_only_when_the_stamp_differs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ix.sqlite3");
        let id = "c".repeat(64);
        let ix = Index::open(&path, &id).unwrap();
        // A table gone while the stamp matches stays gone: the batch was
        // skipped.
        ix.conn().execute_batch("DROP TABLE claims").unwrap();
        drop(ix);
        let ix = Index::open(&path, &id).unwrap();
        assert_eq!(tables(&ix, "claims"), 0);
        // Another stamp (another build's schema): the batch runs again.
        ix.conn().pragma_update(None, "user_version", 1).unwrap();
        drop(ix);
        let ix = Index::open(&path, &id).unwrap();
        assert_eq!(tables(&ix, "claims"), 1);
        let v: i32 = ix
            .conn()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, schema_stamp());
    }

    /// A partial index whose condition is an IN list of three or more
    /// values makes SQLite open and close a temporary b-tree at every insert
    /// into its table: a measurable share of each record a rebuild stores.
    #[test]
    fn inserting_a_record_or_its_rows_opens_no_temporary_btree() {
        let dir = tempfile::tempdir().unwrap();
        let ix = Index::open(&dir.path().join("ix.sqlite3"), &"c".repeat(64)).unwrap();
        let opcodes = |sql: &str| -> Vec<String> {
            let mut st = ix.conn().prepare(&format!("EXPLAIN {sql}")).unwrap();
            st.query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        for sql in [
            "INSERT INTO records(id, feed, seq, ms, c, op, role, body, sig) \
             VALUES ('i', 'f', 1, 2, 3, 'send', 'r', 'b', 's')",
            "INSERT OR IGNORE INTO targets(target, n) VALUES ('t', 1)",
            "INSERT INTO bodies(message_id, topic, body) VALUES ('m', 't', 'b')",
            "INSERT INTO deliveries(role, message_id, ms, c, deleted, n) \
             VALUES ('r', 'm', 1, 2, 0, 3)",
        ] {
            let ops = opcodes(sql);
            assert!(ops.iter().any(|o| o.ends_with("Insert")), "{sql}: {ops:?}");
            assert!(!ops.iter().any(|o| o == "OpenEphemeral"), "{sql}: {ops:?}");
        }
    }

    #[test]
    fn the_fts_layout_check_is_noted_per_file_and_redone_for_another_build() {
        let Some(stamp) = fts_layout::stamp() else {
            panic!("this build has no stamp: the check would run at every open");
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ix.sqlite3");
        let id = "c".repeat(64);
        let ix = Index::open(&path, &id).unwrap();
        assert_eq!(meta(&ix, "fts_layout").as_deref(), Some(stamp));
        // Checked by another build (another SQLite, other ranking code):
        // this one checks again and notes it.
        ix.conn()
            .execute(
                "UPDATE meta SET value = 'another build' WHERE key = 'fts_layout'",
                [],
            )
            .unwrap();
        drop(ix);
        let ix = Index::open(&path, &id).unwrap();
        assert_eq!(meta(&ix, "fts_layout").as_deref(), Some(stamp));
        // A file from before the note gains it.
        ix.conn()
            .execute("DELETE FROM meta WHERE key = 'fts_layout'", [])
            .unwrap();
        drop(ix);
        let ix = Index::open(&path, &id).unwrap();
        assert_eq!(meta(&ix, "fts_layout").as_deref(), Some(stamp));
    }

    #[test]
    fn a_snapshot_does_not_see_a_commit_made_between_its_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ix.sqlite3");
        let ours = Index::open(&path, &"c".repeat(64)).unwrap();
        let theirs = Index::open(&path, &"c".repeat(64)).unwrap();
        ours.conn()
            .execute_batch("CREATE TABLE scratch(x)")
            .unwrap();
        let count = |ix: &Index| -> i64 {
            ix.conn()
                .query_row("SELECT count(*) FROM scratch", [], |r| r.get(0))
                .unwrap()
        };
        let (before, after) = ours
            .snapshot(|ix| {
                let before = count(ix);
                theirs
                    .conn()
                    .execute("INSERT INTO scratch VALUES (1)", [])
                    .unwrap();
                Ok::<_, crate::store::error::StoreError>((before, count(ix)))
            })
            .unwrap();
        assert_eq!((before, after), (0, 0));
        assert_eq!(count(&ours), 1, "the next read sees the commit");
    }

    #[test]
    fn a_commit_with_autocheckpoint_off_leaves_the_log_to_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ix.sqlite3");
        let ix = Index::open(&path, &"c".repeat(64)).unwrap();
        ix.conn()
            .execute_batch("CREATE TABLE scratch(x BLOB)")
            .unwrap();
        let db_len = || std::fs::metadata(&path).unwrap().len();
        let before = db_len();
        // Well over SQLite's 1,000 pages in one commit, as a rebuild's is.
        ix.set_autocheckpoint(false).unwrap();
        ix.write(|ix| {
            for _ in 0..1_500 {
                ix.conn()
                    .execute("INSERT INTO scratch VALUES (zeroblob(4000))", [])
                    .unwrap();
            }
            Ok::<_, crate::store::error::StoreError>(())
        })
        .unwrap();
        assert_eq!(db_len(), before, "the commit copied the log back");
        // Back on, the next commit copies it.
        ix.set_autocheckpoint(true).unwrap();
        ix.write(|ix| {
            ix.conn()
                .execute("INSERT INTO scratch VALUES (1)", [])
                .unwrap();
            Ok::<_, crate::store::error::StoreError>(())
        })
        .unwrap();
        assert!(db_len() > before + 1_500 * 4_000, "{} bytes", db_len());
    }

    fn index_names(ix: &Index) -> Vec<String> {
        ix.conn()
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn plan(ix: &Index, sql: &str) -> String {
        plan_for(ix, sql, &[])
    }

    /// The plan of `sql` with its parameters bound to `args`.
    fn plan_for(ix: &Index, sql: &str, args: &[&str]) -> String {
        ix.conn()
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
            .join("\n")
    }

    #[test]
    fn an_index_file_from_before_gains_the_counters_indexes_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = Index::path_in(dir.path());
        drop(Index::open(&path, "c").unwrap());
        // The counters' indexes as an index file made before held them (by a
        // build that never stamped its files).
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "PRAGMA user_version = 0; DROP INDEX messages_debts_to; DROP INDEX messages_ws_to; \
                 DROP INDEX deliveries_unread_cover; \
                 CREATE INDEX messages_debts ON messages(status, deleted_ms, ms, c, id, taken, \
                 topic, confirmed, resolved_by, from_role) WHERE status IS NOT NULL; \
                 CREATE INDEX messages_ws ON messages(work_status, deleted_ms, ws_by, from_role, \
                 blocked_by, ms, c, id, topic) WHERE work_status IS NOT NULL; \
                 CREATE INDEX deliveries_unread ON deliveries(role, ms, c, opened_ms, n) \
                 WHERE read_ms IS NULL AND deleted = 0;",
            )
            .unwrap();
        let ix = Index::open(&path, "c").unwrap();
        let names = index_names(&ix);
        for new in [
            "messages_debts_to",
            "messages_ws_to",
            "deliveries_unread_cover",
        ] {
            assert!(names.iter().any(|n| n == new), "{new} missing: {names:?}");
        }
        for old in ["messages_debts", "messages_ws", "deliveries_unread"] {
            assert!(!names.iter().any(|n| n == old), "{old} left: {names:?}");
        }
    }

    #[test]
    fn a_file_stamped_with_this_schema_is_opened_without_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        let path = Index::path_in(dir.path());
        drop(Index::open(&path, "c").unwrap());
        let stamp = |c: &Connection| -> i32 {
            c.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap()
        };
        let c = Connection::open(&path).unwrap();
        assert_eq!(stamp(&c), schema_stamp());
        // An index dropped behind the build's back stays dropped: the batch
        // did not run again.
        c.execute_batch("DROP INDEX messages_reply").unwrap();
        drop(Index::open(&path, "c").unwrap());
        assert!(
            !index_names(&Index::open(&path, "c").unwrap()).contains(&"messages_reply".to_owned())
        );
        // Another schema's stamp: the batch runs and puts it back.
        c.execute_batch("PRAGMA user_version = 12345").unwrap();
        let ix = Index::open(&path, "c").unwrap();
        assert!(index_names(&ix).contains(&"messages_reply".to_owned()));
        assert_eq!(stamp(&c), schema_stamp());
    }

    #[test]
    fn the_counters_read_their_indexes_alone() {
        let ix = Index::in_memory("c").unwrap();
        let unread = plan(
            &ix,
            "SELECT count(*), coalesce(sum(opened_ms IS NULL), 0), coalesce(max(n), 0) \
             FROM deliveries WHERE role = 'a' AND deleted = 0 AND read_ms IS NULL",
        );
        assert!(
            unread.contains("COVERING INDEX deliveries_unread_cover"),
            "{unread}"
        );
        let debts = plan(
            &ix,
            "SELECT m.id, m.topic, m.taken FROM messages m WHERE m.status = 'open' \
             AND m.deleted_ms IS NULL AND instr(m.to_json, '\"a\"') > 0 ORDER BY m.ms, m.c, m.id",
        );
        assert!(
            debts.contains("COVERING INDEX messages_debts_to") && !debts.contains("TEMP B-TREE"),
            "{debts}"
        );
        let ws = plan(
            &ix,
            "SELECT m.id, m.topic, m.work_status, m.ws_by, m.blocked_by, m.ms, m.c FROM messages m \
             WHERE m.work_status IN ('needs_you', 'done_local') AND m.deleted_ms IS NULL \
             AND m.ws_by IS NOT 'a' AND (m.from_role = 'a' OR instr(m.to_json, '\"a\"') > 0)",
        );
        assert!(ws.contains("COVERING INDEX messages_ws_to"), "{ws}");
    }

    #[test]
    fn the_counters_own_statements_read_their_indexes_alone() {
        let ix = Index::in_memory("c").unwrap();
        let unread = plan_for(&ix, deliveries::UNREAD_MAIL, &["a"]);
        assert!(
            unread.contains("COVERING INDEX deliveries_unread_cover"),
            "{unread}"
        );
        let debts = plan_for(&ix, &debts::open_debts_sql(), &["a"]);
        assert!(
            debts.contains("COVERING INDEX messages_debts_to") && !debts.contains("TEMP B-TREE"),
            "{debts}"
        );
        let ball = plan_for(&ix, &ball::ball_sql(), &["a"]);
        assert!(ball.contains("COVERING INDEX messages_ws_to"), "{ball}");
    }

    #[test]
    fn the_awaited_proposals_page_walks_the_awaiting_messages_not_the_mail() {
        let ix = Index::in_memory("c").unwrap();
        let page = plan_for(&ix, &proposals::awaiting_page_sql(), &["a", "b", "k", "51"]);
        assert!(
            page.contains("SCAN m USING INDEX messages_awaiting") && !page.contains("TEMP B-TREE"),
            "{page}"
        );
    }

    #[test]
    fn the_boards_chart_reads_its_indexes_alone() {
        let ix = Index::in_memory("c").unwrap();
        let spans = plan_for(&ix, debts::DEBT_SPANS, &["0", "10"]);
        assert!(
            spans.contains("COVERING INDEX messages_debts_to")
                && spans.contains("COVERING INDEX messages_debt_closed")
                && !spans.contains("TEMP B-TREE"),
            "{spans}"
        );
    }
}
