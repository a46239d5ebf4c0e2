//! Feeds as the index knows them: their keys, heads and state, and the
//! records they brought.

use super::Index;
use super::rows::{FromRow, Named};
use crate::store::error::{SqlContext as _, StoreResult};

/// An admitted feed, as the index holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmittedFeed {
    /// The feed id.
    pub feed: String,
    /// Its current key (hex).
    pub pubkey: String,
    /// The seq of its last record here.
    pub head_seq: i64,
    /// The clock time of its last record here (ms).
    pub head_ms: Option<i64>,
    /// Why it is frozen, if it is.
    pub frozen: Option<String>,
}

/// One accepted record, as `log` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLine {
    /// Full id.
    pub id: String,
    /// Its feed.
    pub feed: String,
    /// Its seq.
    pub seq: i64,
    /// Its clock time (ms).
    pub ms: i64,
    /// Its op.
    pub op: String,
    /// The signed body's bytes.
    pub body: String,
}

impl FromRow for AdmittedFeed {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            feed: r.get("feed")?,
            pubkey: r.get("pubkey")?,
            head_seq: r.get("head_seq")?,
            head_ms: r.get("head_ms")?,
            frozen: r.get("frozen")?,
        })
    }
}

impl Index {
    /// The key `feed` currently writes with (hex), `None` if nobody admitted it.
    pub fn feed_key(&self, feed: &str) -> StoreResult<Option<String>> {
        let key: Option<Option<String>> =
            self.scalar_opt("SELECT pubkey FROM feeds WHERE feed = ?1", [feed])?;
        Ok(key.flatten())
    }

    /// Every admitted feed, by feed id.
    pub fn admitted_feeds(&self) -> StoreResult<Vec<AdmittedFeed>> {
        self.rows(
            "SELECT feed, pubkey, head_seq, head_ms, frozen FROM feeds \
             WHERE pubkey IS NOT NULL ORDER BY feed",
            [],
        )
    }

    /// The clock time of the latest accepted record (ms), if any.
    pub fn newest_record_ms(&self) -> StoreResult<Option<i64>> {
        self.scalar("SELECT max(ms) FROM records", [])
    }

    /// Calls `each` with every accepted record in the channel's total order,
    /// one at a time (a channel's records may not fit in memory at once).
    pub fn each_record<E: From<crate::store::StoreError>>(
        &self,
        mut each: impl FnMut(RecordLine) -> Result<(), E>,
    ) -> Result<(), E> {
        let p = &self.path;
        let mut st = self
            .conn
            .prepare("SELECT id, feed, seq, ms, op, body FROM records ORDER BY ms, c, id")
            .db(p)?;
        let mut rows = st.query([]).db(p)?;
        while let Some(r) = rows.next().db(p)? {
            let line = (|| {
                Ok::<_, rusqlite::Error>(RecordLine {
                    id: r.get(0)?,
                    feed: r.get(1)?,
                    seq: r.get(2)?,
                    ms: r.get(3)?,
                    op: r.get(4)?,
                    body: r.get(5)?,
                })
            })()
            .db(p)?;
            each(line)?;
        }
        Ok(())
    }
}
