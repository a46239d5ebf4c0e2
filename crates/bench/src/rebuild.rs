//! Where a rebuild spends its time: its parts (decoding, signature checks,
//! the full-text index) measured alone over the seeded channel's files.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use ed25519_dalek::VerifyingKey;

use super::seed::Seeded;
use countersign::core::ids::Role;
use countersign::core::op::Op;
use countersign::core::record::parse_pubkey;
use countersign::core::signature::Batch;
use countersign::store::KeyName;
use countersign::store::segments;
use countersign::store::survey;

/// The parts of a rebuild measured on their own, over the same files.
pub struct RebuildParts {
    records: usize,
    decode: Duration,
    verify: Duration,
    verify_two_threads: Duration,
    verify_batch: Duration,
    fts_bodies: usize,
    plain_insert: Duration,
    fts_insert: Duration,
    commit: Duration,
}

impl RebuildParts {
    pub fn measure(seeded: &Seeded, scratch: &Path) -> anyhow::Result<Self> {
        let dir = &seeded.dir;
        let ch = dir.id();
        let owner = parse_pubkey(&dir.genesis().owner_pubkey).context("owner key")?;
        let key_of = |role: &str| -> anyhow::Result<VerifyingKey> {
            if role.starts_with('_') {
                return Ok(owner);
            }
            let role = Role::new(role)?;
            let k = seeded
                .home
                .load_key(ch, KeyName::Role(&role))?
                .with_context(|| format!("key of {role}"))?;
            Ok(k.verifying_key())
        };
        // The body rows, then the full-text index fed from them in one
        // statement, as ingest does at the end of a pass. The two tables are
        // the index's `bodies` and `bodies_fts` (store::index's schema), in a
        // database of their own so they are timed without the other tables;
        // a change there belongs here too.
        let db = rusqlite::Connection::open(scratch.join("parts.sqlite3"))?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.pragma_update(None, "synchronous", "NORMAL")?;
        db.pragma_update(None, "cache_size", -64 * 1024)?;
        db.execute_batch(
            "CREATE TABLE bodies(rowid INTEGER PRIMARY KEY, message_id TEXT NOT NULL, \
             topic TEXT NOT NULL, body TEXT NOT NULL);
             CREATE VIRTUAL TABLE bodies_fts USING fts5(topic, body, content='bodies', \
             content_rowid='rowid', tokenize='trigram');
             BEGIN;",
        )?;
        let mut me = Self {
            records: 0,
            decode: Duration::ZERO,
            verify: Duration::ZERO,
            verify_two_threads: Duration::ZERO,
            verify_batch: Duration::ZERO,
            fts_bodies: 0,
            plain_insert: Duration::ZERO,
            fts_insert: Duration::ZERO,
            commit: Duration::ZERO,
        };
        for (feed_id, path) in survey::list_feeds(&dir.feeds())? {
            let key = key_of(feed_id.role())?;
            for seg in survey::list_segments(&path)? {
                let t = Instant::now();
                let lines = segments::read_lines(&seg.path, 0)?;
                let recs: Vec<_> = lines.into_iter().filter_map(|l| l.record.ok()).collect();
                me.decode += t.elapsed();
                me.records += recs.len();
                let t = Instant::now();
                ensure!(
                    recs.iter().all(|r| r.verify(&key)),
                    "a signature failed in {}",
                    seg.path.display()
                );
                me.verify += t.elapsed();
                let t = Instant::now();
                let (left, right) = recs.split_at(recs.len() / 2);
                let ok = std::thread::scope(|s| {
                    let h = s.spawn(|| left.iter().all(|r| r.verify(&key)));
                    let b = right.iter().all(|r| r.verify(&key));
                    h.join().unwrap_or(false) && b
                });
                ensure!(ok, "a signature failed in {}", seg.path.display());
                me.verify_two_threads += t.elapsed();
                // Batches of 64 on one thread, as ingest's read-ahead checks
                // them (the same rule as one by one: core::signature).
                let t = Instant::now();
                for chunk in recs.chunks(64) {
                    let mut batch = Batch::new();
                    for r in chunk {
                        r.queue(&key, &mut batch);
                    }
                    ensure!(batch.holds(), "a batch failed in {}", seg.path.display());
                }
                me.verify_batch += t.elapsed();
                let t = Instant::now();
                let mut st = db.prepare_cached(
                    "INSERT INTO bodies(message_id, topic, body) VALUES (?1, ?2, ?3)",
                )?;
                for r in &recs {
                    if let Some(Op::Send(s)) = &r.op {
                        st.execute(rusqlite::params![r.id.hex(), s.topic, s.body])?;
                    }
                }
                me.plain_insert += t.elapsed();
                me.fts_bodies += recs
                    .iter()
                    .filter(|r| matches!(r.op, Some(Op::Send(_))))
                    .count();
            }
        }
        let t = Instant::now();
        db.execute_batch(
            "INSERT INTO bodies_fts(rowid, topic, body) SELECT rowid, topic, body FROM bodies",
        )?;
        me.fts_insert = t.elapsed();
        let t = Instant::now();
        db.execute_batch("COMMIT")?;
        me.commit = t.elapsed();
        Ok(me)
    }

    pub fn print(&self, rebuild: Duration, accepted: usize) {
        let s = |d: Duration| d.as_secs_f64();
        let per_record = |d: Duration| s(d) * 1e6 / self.records.max(1) as f64;
        let row = |label: &str, d: Duration, note: String| {
            let pct = 100.0 * s(d) / s(rebuild);
            let line = format!("  {label:<48} {:>7.2} s {pct:>5.1}%   {note}", s(d));
            println!("{}", line.trim_end());
        };
        println!(
            "\nWhere a rebuild goes ({accepted} records in {:.2} s; parts measured alone over the \
             same files):",
            s(rebuild)
        );
        row(
            "read + decode every line (strict JSON)",
            self.decode,
            String::new(),
        );
        row(
            "verify every signature one by one, 2 threads",
            self.verify_two_threads,
            format!(
                "(1 thread: {:.2} s, {:.1} µs/record; batches of 64 as ingest checks them, \
                 1 thread: {:.2} s, {:.1} µs/record)",
                s(self.verify),
                per_record(self.verify),
                s(self.verify_batch),
                per_record(self.verify_batch),
            ),
        );
        row(
            &format!("FTS5 trigram index of {} bodies", self.fts_bodies),
            self.fts_insert,
            format!(
                "(one INSERT…SELECT; the body rows alone {:.2} s, commit {:.2} s)",
                s(self.plain_insert),
                s(self.commit)
            ),
        );
        let rest = rebuild.saturating_sub(self.decode + self.verify_two_threads + self.fts_insert);
        row(
            "the rest: rows, per-message fold (by difference)",
            rest,
            String::new(),
        );
    }
}
