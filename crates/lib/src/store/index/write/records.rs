//! Accepted records and the messages each acts on.
//!
//! Owns every write on `records` and `targets`; must not decide whether a
//! record is accepted (ingest does, after checking it).

use rusqlite::params;

use super::IndexTx;
use crate::core::ids::{FeedId, RecordId};
use crate::core::record::Record;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Stores `rec` of `feed`, accepted (verified and chained), with its
    /// feed's `role` and signature `sig`: its local ingest number `n`.
    pub fn insert_record(
        &self,
        feed: &FeedId,
        rec: &Record,
        role: &str,
        sig: &str,
    ) -> StoreResult<i64> {
        self.conn()
            .prepare_cached(
                "INSERT INTO records(id, feed, seq, ms, c, op, role, body, sig) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    rec.id.hex(),
                    feed.as_str(),
                    rec.header.seq as i64,
                    rec.header.hlc.0,
                    rec.header.hlc.1,
                    rec.op_name,
                    role,
                    rec.body,
                    sig,
                ])
            })
            .db(self.path())?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Says that record `n` acts on message `target`.
    pub fn add_target(&self, target: &RecordId, n: i64) -> StoreResult<()> {
        self.conn()
            .prepare_cached("INSERT OR IGNORE INTO targets(target, n) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![target.hex(), n]))
            .db(self.path())?;
        Ok(())
    }

    /// Forgets record `n` and what it acted on (a fork took it back).
    pub fn forget_record(&self, n: i64) -> StoreResult<()> {
        self.conn()
            .prepare_cached("DELETE FROM targets WHERE n = ?1")
            .and_then(|mut s| s.execute([n]))
            .db(self.path())?;
        self.conn()
            .prepare_cached("DELETE FROM records WHERE n = ?1")
            .and_then(|mut s| s.execute([n]))
            .db(self.path())?;
        Ok(())
    }
}
