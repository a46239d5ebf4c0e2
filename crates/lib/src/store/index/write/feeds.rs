//! Feeds as ingest leaves them: each feed's key, role and chain head, and
//! the owner's key replacements that start at a later seq.
//!
//! Owns every write on `feeds` and `key_changes`; must not decide whether a
//! feed is admitted or a key may change (ingest does).

use rusqlite::params;

use super::IndexTx;
use crate::core::ids::FeedId;
use crate::store::error::{SqlContext as _, StoreResult};

/// One feed's row as ingest saves it.
pub struct FeedRow<'r> {
    /// The feed id.
    pub feed: String,
    /// Its role.
    pub role: &'r str,
    /// The hex public key it writes with (`None`: nobody admitted it).
    pub pubkey: Option<String>,
    /// The seq of its last record applied (0: none).
    pub head_seq: i64,
    /// That record's full id.
    pub head_id: Option<String>,
    /// That record's clock: milliseconds and counter.
    pub head_ms: Option<i64>,
    /// See `head_ms`.
    pub head_c: Option<u32>,
    /// Why it is frozen, if it is.
    pub frozen: Option<&'r str>,
}

impl IndexTx<'_> {
    /// Saves one feed's row, inserted or replaced whole.
    pub fn save_feed(&self, row: &FeedRow<'_>) -> StoreResult<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO feeds(feed, role, pubkey, head_seq, head_id, head_ms, head_c, frozen) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(feed) DO UPDATE SET \
                 role = excluded.role, pubkey = excluded.pubkey, head_seq = excluded.head_seq, \
                 head_id = excluded.head_id, head_ms = excluded.head_ms, head_c = excluded.head_c, \
                 frozen = excluded.frozen",
            )
            .and_then(|mut st| {
                st.execute(params![
                    row.feed,
                    row.role,
                    row.pubkey,
                    row.head_seq,
                    row.head_id,
                    row.head_ms,
                    row.head_c,
                    row.frozen,
                ])
            })
            .db(self.path())?;
        Ok(())
    }

    /// Keeps an owner's replacement of `feed`'s key by `pubkey` from seq
    /// `from_seq` on.
    pub fn change_key(&self, feed: &FeedId, from_seq: u64, pubkey: &str) -> StoreResult<()> {
        self.conn()
            .prepare_cached(
                "INSERT OR REPLACE INTO key_changes(feed, from_seq, pubkey) \
                 VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![feed.to_string(), from_seq as i64, pubkey]))
            .db(self.path())?;
        Ok(())
    }
}
