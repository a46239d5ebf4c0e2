//! The write-ahead log's checkpoints, taken off the commits of a long-lived
//! process.
//!
//! SQLite copies its log back into the database file (a checkpoint) inside
//! the commit that takes the log past 1,000 pages. A durable write commits
//! about twenty pages, so in a burst of writes every fiftieth or so paid for
//! the checkpoint too: 8 ms instead of 1.3. A process that keeps its index
//! open (the MCP server, `serve`) hands the checkpoints to a thread of its
//! own, with a connection of its own, which checkpoints passively: it copies
//! what no reader still needs and never waits for anyone. Should the thread
//! fall far behind, a commit checkpoints the log itself, as SQLite would,
//! so the log stays bounded.
//!
//! Owns that thread and its connection; must not write rows.

use std::os::raw::c_int;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

use crate::store::error::{IoContext as _, SqlContext as _, StoreResult};

/// Log pages past which the thread is asked to checkpoint: four times
/// SQLite's own threshold, so one checkpoint serves about 200 sends instead
/// of 50, and a page written by many of them is copied back once. Each
/// checkpoint still makes the writes of its moment wait for the disk.
/// (Small under test, as is [`SELF_AT`], so the tests' logs are too.)
const ASK_AT: c_int = if cfg!(test) { 100 } else { 4_000 };

/// Log pages past which a commit checkpoints itself: the thread did not keep
/// up (64 MB of log).
const SELF_AT: c_int = if cfg!(test) { 400 } else { 16_000 };

/// The thread that checkpoints one connection's log, and what that
/// connection's commits tell it.
pub struct Checkpointer {
    /// The log's length in pages after the connection's last commit.
    pages: Arc<AtomicI32>,
    /// The log's length when the thread was last asked.
    asked_at: AtomicI32,
    requests: SyncSender<()>,
}

impl Checkpointer {
    /// Moves `conn`'s checkpoints to a thread with its own connection to
    /// `path`; the thread ends when this is dropped.
    pub fn start(conn: &mut Connection, path: &Path) -> StoreResult<Self> {
        let (requests, asked) = sync_channel::<()>(1);
        let db = path.to_path_buf();
        std::thread::Builder::new()
            .name("index-checkpoint".into())
            .spawn(move || run(&db, &asked))
            .at(path)?;
        let pages = Arc::new(AtomicI32::new(0));
        let seen = Arc::clone(&pages);
        conn.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, n: c_int| {
            seen.store(n, Ordering::Relaxed);
            // The commit has happened when the hook runs, and an error
            // returned here would be reported as the commit's: a write
            // journaled and published would answer that it failed. A
            // checkpoint that cannot run now (another connection holds the
            // checkpoint lock) is tried again at the next commit, as
            // SQLite's own automatic checkpoint is.
            if n >= SELF_AT
                && let Err(e) = wal.checkpoint_v2(CheckpointMode::PASSIVE)
            {
                tracing::debug!("a commit's own checkpoint: {e}");
            }
            Ok(())
        }))
        .db(path)?;
        Ok(Self {
            pages,
            asked_at: AtomicI32::new(0),
            requests,
        })
    }

    /// Called once a commit has returned: asks the thread for a checkpoint
    /// when the log has grown past [`ASK_AT`], and again each time it has
    /// grown by a quarter of that since. Asked here rather than from the
    /// hook, which runs inside the commit, so that the thread starts on a
    /// log the commit is done with.
    ///
    /// Not at every commit past the mark: in a burst of writes the log does
    /// not start over (SQLite restarts it only at a write that begins when
    /// every page was copied back, and each commit adds pages meanwhile),
    /// so asking at every commit had the thread checkpoint, and sync the
    /// database file, once per write, on the core the journal's fsync runs
    /// on.
    pub fn after_commit(&self) {
        let n = self.pages.load(Ordering::Relaxed);
        if ask_due(n, self.asked_at.load(Ordering::Relaxed)) {
            self.asked_at.store(n, Ordering::Relaxed);
            self.ask();
        }
    }

    /// Asks the thread for a checkpoint now (an idle server whose log has
    /// grown, [`super::Index::checkpoint_if_grown`]).
    pub fn ask(&self) {
        // Already asked and not yet done: one request is enough.
        let _ = self.requests.try_send(());
    }
}

/// True if a log of `n` pages is due a checkpoint, the thread having last
/// been asked at `last` pages ([`Checkpointer::after_commit`]).
fn ask_due(n: c_int, last: c_int) -> bool {
    // `n < last`: the log started over since.
    n >= ASK_AT && (n < last || n - last >= ASK_AT / 4)
}

/// The thread: a passive checkpoint per request, until the requests end.
fn run(path: &Path, asked: &Receiver<()>) {
    let mut conn: Option<Connection> = None;
    while asked.recv().is_ok() {
        if conn.is_none() {
            conn = Connection::open(path)
                .inspect_err(|e| tracing::warn!("checkpoints of {}: {e}", path.display()))
                .ok();
        }
        // The pragma, not `wal_checkpoint_v2`: a connection that has not
        // read the database yet does not know it is in WAL mode, and the
        // call does nothing; the pragma reads it first.
        if let Some(c) = &conn
            && let Err(e) = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        {
            tracing::warn!("checkpoint of {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use super::*;

    /// A database in WAL mode at `path` whose checkpoints are the thread's,
    /// inside a transaction begun with `begin` that added `rows` rows of a
    /// page each.
    fn writing(path: &Path, begin: &str, rows: c_int) -> (Connection, Checkpointer) {
        let mut conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t(x BLOB)").unwrap();
        let checkpoints = Checkpointer::start(&mut conn, path).unwrap();
        conn.execute_batch(begin).unwrap();
        for _ in 0..rows {
            conn.execute("INSERT INTO t VALUES (zeroblob(4000))", [])
                .unwrap();
        }
        (conn, checkpoints)
    }

    #[test]
    fn a_commit_past_the_threshold_is_checkpointed_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ix.sqlite3");
        // One commit of well over ASK_AT pages of 4 KiB: the hook replaced
        // SQLite's own checkpoint in the commit, so the database file grows
        // only when the thread copies the log back.
        let rows = ASK_AT + 200;
        let (conn, checkpoints) = writing(&path, "BEGIN", rows);
        conn.execute_batch("COMMIT").unwrap();
        checkpoints.after_commit();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let len = std::fs::metadata(&path).unwrap().len();
            if len > u64::try_from(rows).unwrap() * 4_000 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the database file holds {len} bytes"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn the_thread_is_asked_past_the_mark_and_then_once_per_quarter_of_it() {
        assert!(!ask_due(ASK_AT - 1, 0));
        assert!(ask_due(ASK_AT, 0));
        // Commits that each add a few pages do not ask again...
        assert!(!ask_due(ASK_AT + 20, ASK_AT));
        assert!(!ask_due(ASK_AT + ASK_AT / 4 - 1, ASK_AT));
        // ...until the log has grown by a quarter of the mark.
        assert!(ask_due(ASK_AT + ASK_AT / 4, ASK_AT));
        // A log that started over and grew past the mark again is asked for.
        assert!(ask_due(ASK_AT, 3 * ASK_AT));
        assert!(!ask_due(ASK_AT - 1, 3 * ASK_AT));
    }

    /// Set while the test's second connection waits, holding the log's
    /// checkpoint lock, for the writer to commit.
    static HOLDING: AtomicBool = AtomicBool::new(false);
    /// Set once the writer's commit has returned.
    static COMMITTED: AtomicBool = AtomicBool::new(false);

    fn wait_for_the_commit(_: i32) -> bool {
        HOLDING.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(1));
        !COMMITTED.load(Ordering::SeqCst)
    }

    #[test]
    fn a_commit_whose_own_checkpoint_cannot_run_still_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ix.sqlite3");
        let (conn, _checkpoints) = writing(&path, "BEGIN IMMEDIATE", SELF_AT + 100);
        // Another process's full checkpoint takes the checkpoint lock, then
        // waits for the writer: the commit's own checkpoint finds it taken.
        let other = std::thread::spawn(move || {
            let mut c = Connection::open(&path).unwrap();
            c.busy_handler(Some(wait_for_the_commit)).unwrap();
            c.query_row("PRAGMA wal_checkpoint(FULL)", [], |_| Ok(()))
        });
        while !HOLDING.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let committed = conn.execute_batch("COMMIT");
        COMMITTED.store(true, Ordering::SeqCst);
        other.join().unwrap().unwrap();
        committed.expect("the commit happened; a checkpoint that could not run is no error");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, i64::from(SELF_AT + 100));
    }
}
