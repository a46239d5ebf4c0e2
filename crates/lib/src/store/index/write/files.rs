//! Ingest's cursors: how far each segment file was read.
//!
//! Owns every write on `files`; must not decide what a cursor means
//! (ingest does).

use rusqlite::params;

use super::IndexTx;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Records how far the segment `rel` was read: its stamp (`size` -1
    /// makes the next pass look at it again), the offset, and the length
    /// and hash of the tail before it.
    pub fn save_cursor(
        &self,
        rel: &str,
        size: i64,
        mtime_ns: i64,
        offset: u64,
        tail_len: u64,
        tail_hash: &str,
    ) -> StoreResult<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO files(path, size, mtime_ns, offset, tail_len, tail_hash) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(path) DO UPDATE SET size = excluded.size, \
                 mtime_ns = excluded.mtime_ns, offset = excluded.offset, tail_len = excluded.tail_len, \
                 tail_hash = excluded.tail_hash",
            )
            .and_then(|mut s| {
                s.execute(params![rel, size, mtime_ns, offset as i64, tail_len as i64, tail_hash])
            })
            .db(self.path())?;
        Ok(())
    }
}
