//! The local book of compaction work: workers, their jobs, the leases on the
//! lines a job holds, and the lines that failed; `compaction.sqlite3` in this
//! home's state folder of the channel.
//!
//! Every server process of this home on this channel shares the one file, so
//! two workers here never hold a lease on the same line. It is never in the
//! channel folder and never synced: another machine knows nothing of it, and
//! learns that a line is done the only way that counts, when its summary
//! record arrives. Owns this database and nothing else: which lines are worth
//! a job, what a job says and what a submit writes are the app's
//! (`app::compaction`); every time here is passed in.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::store::error::{IoContext as _, SqlContext as _, StoreError, StoreResult};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workers(
    id TEXT PRIMARY KEY,
    started_ms INTEGER NOT NULL,
    seen_ms INTEGER NOT NULL,
    view TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS jobs(
    id TEXT PRIMARY KEY,
    worker TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    state TEXT NOT NULL,
    tasks TEXT NOT NULL,
    text TEXT NOT NULL,
    read TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS leases(
    line TEXT PRIMARY KEY,
    job TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS failures(
    line TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
";

/// One task of a job as the book keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeasedTask {
    /// The line to write (full id).
    pub line: String,
    /// `item` or `merge`.
    pub kind: String,
    /// What its summary covers (full ids): the item, or the two halves.
    pub covers: Vec<String>,
}

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Handed out, not yet submitted or given back.
    Open,
    /// Its lines were written.
    Submitted,
    /// Given back.
    Released,
}

impl JobState {
    fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Submitted => "submitted",
            Self::Released => "released",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "submitted" => Self::Submitted,
            "released" => Self::Released,
            _ => Self::Open,
        }
    }
}

/// A job as the book keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRow {
    /// Its id.
    pub id: String,
    /// The worker it was handed to.
    pub worker: String,
    /// When its leases run out (ms), unless it is read or submitted first.
    pub expires_ms: i64,
    /// Where it stands.
    pub state: JobState,
    /// Its tasks, in order.
    pub tasks: Vec<LeasedTask>,
    /// Its whole text.
    pub text: String,
    /// Which of its pages were handed out.
    pub read: Vec<bool>,
}

/// What is busy when a job is chosen: lines leased to an open job, and
/// lines paused after failures.
#[derive(Clone, Debug, Default)]
pub struct Busy {
    /// Leased lines, with when their lease runs out (ms).
    pub leased: HashMap<String, i64>,
    /// Paused lines.
    pub paused: HashSet<String>,
}

impl Busy {
    /// True when the line `hex` is neither leased nor paused: a worker may
    /// take it.
    pub fn is_free(&self, hex: &str) -> bool {
        !self.leased.contains_key(hex) && !self.paused.contains(hex)
    }
}

/// A job to record: its tasks, text and number of pages.
pub struct NewJob {
    /// Its tasks, in order.
    pub tasks: Vec<LeasedTask>,
    /// Its whole text.
    pub text: String,
    /// How many pages the text has.
    pub pages: usize,
}

/// A line paused after failures (what the tests read back).
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paused {
    /// The line (full id).
    pub line: String,
    /// Failures so far.
    pub count: i64,
    /// The last reason given.
    pub reason: String,
}

/// The book of one channel in one home.
pub struct Leases {
    conn: Connection,
    path: PathBuf,
}

fn new_id(prefix: &str) -> String {
    let mut rnd = [0u8; 8];
    getrandom::fill(&mut rnd).expect("the OS random source works");
    format!("{prefix}{}", hex::encode(rnd))
}

impl Leases {
    /// Opens (creating if needed) the book in `state_dir`.
    pub fn open(state_dir: &Path) -> StoreResult<Self> {
        std::fs::create_dir_all(state_dir).at(state_dir)?;
        let path = state_dir.join("compaction.sqlite3");
        let conn = Connection::open(&path).db(&path)?;
        conn.busy_timeout(Duration::from_secs(10)).db(&path)?;
        conn.pragma_update(None, "journal_mode", "WAL").db(&path)?;
        conn.execute_batch(SCHEMA).db(&path)?;
        Ok(Self { conn, path })
    }

    /// Opens the book only if it exists (a status line must create nothing).
    pub fn open_existing(state_dir: &Path) -> StoreResult<Option<Self>> {
        if state_dir.join("compaction.sqlite3").is_file() {
            Self::open(state_dir).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Starts a worker; returns its id.
    pub fn start_worker(&self, now_ms: i64) -> StoreResult<String> {
        let id = new_id("w");
        self.conn
            .execute(
                "INSERT INTO workers(id, started_ms, seen_ms) VALUES (?1, ?2, ?2)",
                params![id, now_ms],
            )
            .db(&self.path)?;
        Ok(id)
    }

    /// The view a worker was last shown (shown lines), `None` for a worker
    /// this book does not know.
    pub fn worker_view(&self, worker: &str) -> StoreResult<Option<Vec<String>>> {
        let view: Option<String> = self
            .conn
            .query_row("SELECT view FROM workers WHERE id = ?1", [worker], |r| {
                r.get(0)
            })
            .optional()
            .db(&self.path)?;
        view.map(|v| self.decode("workers", "view", worker, &v))
            .transpose()
    }

    /// The JSON column `table.column` of row `row`, decoded: a value that
    /// does not decode is an error naming it, not an empty default.
    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        table: &'static str,
        column: &'static str,
        row: &str,
        text: &str,
    ) -> StoreResult<T> {
        serde_json::from_str(text).map_err(|e| StoreError::CorruptColumn {
            path: self.path.clone(),
            source: Box::new(crate::store::index::CorruptColumn {
                table,
                column,
                row: row.to_owned(),
                reason: e.to_string(),
            }),
            fix: "It holds only this home's compaction leases: stop this home's servers on \
                  the channel and delete the file to start the book afresh",
        })
    }

    /// The worker's open job that still holds its leases, if any.
    pub fn open_job_of(&self, worker: &str, now_ms: i64) -> StoreResult<Option<JobRow>> {
        let id: Option<String> = self
            .conn
            .query_row(
                "SELECT id FROM jobs WHERE worker = ?1 AND state = 'open' AND expires_ms > ?2 \
                 ORDER BY created_ms DESC LIMIT 1",
                params![worker, now_ms],
                |r| r.get(0),
            )
            .optional()
            .db(&self.path)?;
        match id {
            Some(id) => self.job(&id),
            None => Ok(None),
        }
    }

    /// What is busy now, for a status.
    pub fn busy_now(&self, now_ms: i64) -> StoreResult<Busy> {
        Self::busy_in(&self.conn, &self.path, now_ms)
    }

    /// Chooses and records a job for `worker`, in one transaction so that two
    /// processes never lease one line: `pick` sees what is busy and returns
    /// the job (or `None`: nothing to hand out). The worker's view is set to
    /// `view` with it. Leases run until `expires_ms`.
    pub fn claim<E: From<StoreError>>(
        &mut self,
        worker: &str,
        now_ms: i64,
        expires_ms: i64,
        view: &[String],
        pick: impl FnOnce(&Busy) -> Result<Option<NewJob>, E>,
    ) -> Result<Option<JobRow>, E> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .db(&path)?;
        // Expired leases go: their lines are free again.
        tx.execute("DELETE FROM leases WHERE expires_ms <= ?1", [now_ms])
            .db(&path)?;
        let busy = Self::busy_in(&tx, &path, now_ms)?;
        let Some(job) = pick(&busy)? else {
            tx.execute(
                "UPDATE workers SET seen_ms = ?2 WHERE id = ?1",
                params![worker, now_ms],
            )
            .db(&path)?;
            tx.commit().db(&path)?;
            return Ok(None);
        };
        let id = new_id("j");
        let tasks = serde_json::to_string(&job.tasks).expect("tasks serialize");
        let read = serde_json::to_string(&vec![false; job.pages]).expect("bools serialize");
        tx.execute(
            "INSERT INTO jobs(id, worker, created_ms, expires_ms, state, tasks, text, read) \
             VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7)",
            params![id, worker, now_ms, expires_ms, tasks, job.text, read],
        )
        .db(&path)?;
        for t in &job.tasks {
            tx.execute(
                "INSERT OR REPLACE INTO leases(line, job, expires_ms) VALUES (?1, ?2, ?3)",
                params![t.line, id, expires_ms],
            )
            .db(&path)?;
        }
        tx.execute(
            "UPDATE workers SET seen_ms = ?2, view = ?3 WHERE id = ?1",
            params![
                worker,
                now_ms,
                serde_json::to_string(view).expect("strings serialize")
            ],
        )
        .db(&path)?;
        tx.commit().db(&path)?;
        Ok(Some(JobRow {
            id,
            worker: worker.to_owned(),
            expires_ms,
            state: JobState::Open,
            tasks: job.tasks,
            text: job.text,
            read: vec![false; job.pages],
        }))
    }

    fn busy_in(conn: &Connection, path: &Path, now_ms: i64) -> StoreResult<Busy> {
        let mut busy = Busy::default();
        let mut st = conn
            .prepare("SELECT line, expires_ms FROM leases WHERE expires_ms > ?1")
            .db(path)?;
        let rows = st
            .query_map([now_ms], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .db(path)?;
        for row in rows {
            let (line, until) = row.db(path)?;
            busy.leased.insert(line, until);
        }
        let mut st = conn
            .prepare("SELECT line FROM failures WHERE count >= ?1")
            .db(path)?;
        let rows = st
            .query_map([FAILURES_TO_PAUSE], |r| r.get::<_, String>(0))
            .db(path)?;
        for row in rows {
            busy.paused.insert(row.db(path)?);
        }
        Ok(busy)
    }

    /// The job `id`, if this book has it.
    pub fn job(&self, id: &str) -> StoreResult<Option<JobRow>> {
        let row = self
            .conn
            .query_row(
                "SELECT id, worker, expires_ms, state, tasks, text, read FROM jobs WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()
            .db(&self.path)?;
        row.map(|(id, worker, expires_ms, state, tasks, text, read)| {
            Ok(JobRow {
                tasks: self.decode("jobs", "tasks", &id, &tasks)?,
                read: self.decode("jobs", "read", &id, &read)?,
                id,
                worker,
                expires_ms,
                state: JobState::parse(&state),
                text,
            })
        })
        .transpose()
    }

    /// Notes that page `page` of job `id` was handed out, and renews the
    /// job's leases until `expires_ms` (a worker reading is a worker alive).
    pub fn mark_read(&self, job: &JobRow, page: usize, expires_ms: i64) -> StoreResult<()> {
        let mut read = job.read.clone();
        if let Some(p) = read.get_mut(page) {
            *p = true;
        }
        let read = serde_json::to_string(&read).expect("bools serialize");
        self.conn
            .execute(
                "UPDATE jobs SET read = ?2, expires_ms = MAX(expires_ms, ?3) WHERE id = ?1",
                params![job.id, read, expires_ms],
            )
            .db(&self.path)?;
        self.conn
            .execute(
                "UPDATE leases SET expires_ms = MAX(expires_ms, ?2) WHERE job = ?1",
                params![job.id, expires_ms],
            )
            .db(&self.path)?;
        Ok(())
    }

    /// Closes job `id` as submitted: its leases go, and its lines' failures
    /// are forgotten.
    pub fn finish(&mut self, job: &JobRow) -> StoreResult<()> {
        let path = self.path.clone();
        let tx = self.conn.transaction().db(&path)?;
        tx.execute(
            "UPDATE jobs SET state = ?2 WHERE id = ?1",
            params![job.id, JobState::Submitted.as_str()],
        )
        .db(&path)?;
        tx.execute("DELETE FROM leases WHERE job = ?1", [&job.id])
            .db(&path)?;
        for t in &job.tasks {
            tx.execute("DELETE FROM failures WHERE line = ?1", [&t.line])
                .db(&path)?;
        }
        tx.commit().db(&path)
    }

    /// Gives job `id` back: its leases go; when `failed`, each of its lines
    /// counts one failure more. Returns each line's failures so far.
    pub fn release(
        &mut self,
        job: &JobRow,
        reason: &str,
        failed: Failed<'_>,
        now_ms: i64,
    ) -> StoreResult<Vec<(String, i64)>> {
        let path = self.path.clone();
        let tx = self.conn.transaction().db(&path)?;
        tx.execute(
            "UPDATE jobs SET state = ?2 WHERE id = ?1",
            params![job.id, JobState::Released.as_str()],
        )
        .db(&path)?;
        tx.execute("DELETE FROM leases WHERE job = ?1", [&job.id])
            .db(&path)?;
        let mut counts = Vec::new();
        for t in &job.tasks {
            if failed.counts(&t.line) {
                tx.execute(
                    "INSERT INTO failures(line, count, reason, at_ms) VALUES (?1, 1, ?2, ?3) \
                     ON CONFLICT(line) DO UPDATE SET count = count + 1, reason = ?2, at_ms = ?3",
                    params![t.line, reason, now_ms],
                )
                .db(&path)?;
            }
            let n: Option<i64> = tx
                .query_row(
                    "SELECT count FROM failures WHERE line = ?1",
                    [&t.line],
                    |r| r.get(0),
                )
                .optional()
                .db(&path)?;
            counts.push((t.line.clone(), n.unwrap_or(0)));
        }
        tx.commit().db(&path)?;
        Ok(counts)
    }

    /// The lines paused after [`FAILURES_TO_PAUSE`] failures.
    #[cfg(test)]
    pub fn paused(&self) -> StoreResult<Vec<Paused>> {
        let mut st = self
            .conn
            .prepare("SELECT line, count, reason FROM failures WHERE count >= ?1 ORDER BY line")
            .db(&self.path)?;
        let rows = st
            .query_map([FAILURES_TO_PAUSE], |r| {
                Ok(Paused {
                    line: r.get(0)?,
                    count: r.get(1)?,
                    reason: r.get(2)?,
                })
            })
            .db(&self.path)?;
        rows.collect::<Result<Vec<_>, _>>().db(&self.path)
    }

    /// The lines with failures whose id starts with `prefix`.
    pub fn failed_lines(&self, prefix: &str) -> StoreResult<Vec<String>> {
        let mut st = self
            .conn
            .prepare("SELECT line FROM failures WHERE substr(line, 1, length(?1)) = ?1")
            .db(&self.path)?;
        let rows = st
            .query_map([prefix], |r| r.get::<_, String>(0))
            .db(&self.path)?;
        rows.collect::<Result<Vec<_>, _>>().db(&self.path)
    }

    /// Forgets the failures of `line`: it is offered again.
    pub fn resume(&self, line: &str) -> StoreResult<bool> {
        let n = self
            .conn
            .execute("DELETE FROM failures WHERE line = ?1", [line])
            .db(&self.path)?;
        Ok(n > 0)
    }
}

/// Which lines of a job given back count a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed<'a> {
    /// None: the job is given back unfinished.
    None,
    /// Every line of the job.
    All,
    /// Only this line (full id): its neighbours in the job are innocent.
    Line(&'a str),
}

impl Failed<'_> {
    fn counts(self, line: &str) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Line(l) => l == line,
        }
    }
}

/// Explicit failures after which a line pauses until it is resumed.
pub const FAILURES_TO_PAUSE: i64 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    fn task(line: &str) -> LeasedTask {
        LeasedTask {
            line: line.into(),
            kind: "item".into(),
            covers: vec![line.into()],
        }
    }

    fn job(tasks: &[&str]) -> NewJob {
        NewJob {
            tasks: tasks.iter().map(|t| task(t)).collect(),
            text: "text".into(),
            pages: 1,
        }
    }

    #[test]
    fn two_books_on_one_file_never_lease_one_line_twice() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Leases::open(dir.path()).unwrap();
        let mut b = Leases::open(dir.path()).unwrap();
        let wa = a.start_worker(0).unwrap();
        let wb = b.start_worker(0).unwrap();
        let ja = a
            .claim::<StoreError>(&wa, 0, 100, &[], |_| Ok(Some(job(&["l1", "l2"]))))
            .unwrap()
            .unwrap();
        // The other process sees both lines leased until 100.
        let seen = std::cell::RefCell::new(Busy::default());
        b.claim::<StoreError>(&wb, 50, 150, &[], |busy| {
            *seen.borrow_mut() = busy.clone();
            Ok(None)
        })
        .unwrap();
        assert_eq!(seen.borrow().leased.get("l1"), Some(&100));
        // After expiry they are free.
        b.claim::<StoreError>(&wb, 100, 200, &[], |busy| {
            assert!(busy.leased.is_empty());
            Ok(None)
        })
        .unwrap();
        // Failures pause a line after three; resume frees it.
        for _ in 0..3 {
            a.release(&ja, "unreadable", Failed::All, 10).unwrap();
        }
        assert_eq!(a.paused().unwrap().len(), 2);
        assert_eq!(a.failed_lines("l1").unwrap(), vec!["l1".to_owned()]);
        assert!(a.resume("l1").unwrap());
        assert_eq!(a.paused().unwrap().len(), 1);
    }

    #[test]
    fn a_json_column_that_does_not_decode_fails_the_read_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = Leases::open(dir.path()).unwrap();
        let w = book.start_worker(0).unwrap();
        let j = book
            .claim::<StoreError>(&w, 0, 100, &[], |_| Ok(Some(job(&["l1"]))))
            .unwrap()
            .unwrap();
        let raw = Connection::open(dir.path().join("compaction.sqlite3")).unwrap();
        raw.execute("UPDATE jobs SET tasks = '[{' WHERE id = ?1", [&j.id])
            .unwrap();
        raw.execute("UPDATE workers SET view = 'nope' WHERE id = ?1", [&w])
            .unwrap();
        let err = book.job(&j.id).unwrap_err().to_string();
        assert!(
            err.contains(&format!("column jobs.tasks of row {}", j.id)),
            "{err}"
        );
        let err = book.worker_view(&w).unwrap_err().to_string();
        assert!(
            err.contains(&format!("column workers.view of row {w}")),
            "{err}"
        );
    }
}
