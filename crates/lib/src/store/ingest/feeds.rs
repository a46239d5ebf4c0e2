//! What a pass knows of each feed ([`FeedState`]): its role, its key (none
//! until an admit), a key replacement waiting for its seq, the last record
//! applied and whether it is frozen. Loaded from the index at the start of a
//! pass, changed by what the pass applies, saved at its end.

use ed25519_dalek::VerifyingKey;
use rusqlite::{OptionalExtension as _, params};

use super::Ingest;
use super::cache::ScanCache;
use crate::core::chain::Head;
use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, RecordId};
use crate::core::record::{self, parse_pubkey};
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::index::FeedRow;

#[derive(Clone, Debug)]
pub(super) struct FeedState {
    pub(super) role: String,
    pub(super) pubkey: Option<VerifyingKey>,
    /// An owner-signed key replacement that starts at a seq not reached yet.
    pub(super) pending_key: Option<(u64, VerifyingKey)>,
    pub(super) head: Option<Head>,
    pub(super) frozen: Option<String>,
    pub(super) dirty: bool,
}

impl FeedState {
    /// True when the state says nothing a new [`Ingest::feed_state`] would
    /// not: no key (not admitted), no record applied, not frozen.
    pub(super) fn is_blank(&self) -> bool {
        self.pubkey.is_none()
            && self.pending_key.is_none()
            && self.head.is_none()
            && self.frozen.is_none()
    }
}

impl Ingest<'_, '_> {
    pub(super) fn load_feeds(&mut self, cache: &mut ScanCache) -> StoreResult<()> {
        let p = self.index.path();
        let mut st = self
            .index
            .conn()
            .prepare_cached(
                "SELECT feed, role, pubkey, head_seq, head_id, head_ms, head_c, frozen FROM feeds",
            )
            .db(p)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                    r.get::<_, Option<String>>(7)?,
                ))
            })
            .db(p)?;
        for row in rows {
            let (feed, role, pubkey, seq, id, ms, c, frozen) = row.db(p)?;
            let Ok(feed) = FeedId::try_from(feed) else {
                continue;
            };
            let head = match (id.as_deref().and_then(RecordId::parse), ms, c) {
                (Some(id), Some(ms), Some(c)) if seq > 0 => Some(Head {
                    seq: seq as u64,
                    id,
                    hlc: Hlc(ms, c as u32),
                }),
                _ => None,
            };
            let pubkey = pubkey.as_deref().and_then(|k| cache.key(k));
            self.feeds.insert(
                feed,
                FeedState {
                    role,
                    pubkey,
                    pending_key: None,
                    head,
                    frozen,
                    dirty: false,
                },
            );
        }
        Ok(())
    }

    /// Owner key replacements whose first seq the feed has not reached yet.
    pub(super) fn load_pending_keys(&mut self) -> StoreResult<()> {
        let p = self.index.path();
        let mut st = self
            .index
            .conn()
            .prepare_cached("SELECT feed, from_seq, pubkey FROM key_changes ORDER BY from_seq")
            .db(p)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .db(p)?;
        for row in rows {
            let (feed, from, key) = row.db(p)?;
            let (Ok(feed), Some(key)) = (FeedId::try_from(feed), parse_pubkey(&key)) else {
                continue;
            };
            if let Some(st) = self.feeds.get_mut(&feed)
                && st.head.map_or(0, |h| h.seq) < from as u64
                && st.pending_key.is_none()
            {
                st.pending_key = Some((from as u64, key));
            }
        }
        Ok(())
    }

    pub(super) fn save_feeds(&mut self) -> StoreResult<()> {
        for (_, s) in self
            .feeds
            .iter_mut()
            .filter(|(_, s)| s.dirty && s.is_blank())
        {
            // Nothing to keep: no key, no record, not frozen (a folder
            // nobody admitted, junk included). Every later pass would load
            // the row for nothing; a feed without one starts blank anyway.
            s.dirty = false;
        }
        for (feed, s) in self.feeds.iter_mut().filter(|(_, s)| s.dirty) {
            self.index.save_feed(&FeedRow {
                feed: feed.to_string(),
                role: &s.role,
                pubkey: s.pubkey.as_ref().map(record::pubkey_hex),
                head_seq: s.head.map_or(0, |h| h.seq as i64),
                head_id: s.head.map(|h| h.id.hex()),
                head_ms: s.head.map(|h| h.hlc.0),
                head_c: s.head.map(|h| h.hlc.1),
                frozen: s.frozen.as_deref(),
            })?;
            s.dirty = false;
        }
        Ok(())
    }

    pub(super) fn feed_state(&mut self, feed: &FeedId) -> &mut FeedState {
        // Looked up before any copy of the id is made: a pass asks several
        // times per feed, for thousands of feeds when junk folders abound.
        if !self.feeds.contains_key(feed) {
            let state = FeedState {
                role: feed.role().to_owned(),
                pubkey: if feed.is_owner() {
                    self.owner_key
                } else {
                    None
                },
                pending_key: None,
                head: None,
                frozen: None,
                dirty: true,
            };
            self.feeds.insert(feed.clone(), state);
        }
        self.feeds
            .get_mut(feed)
            .expect("the feed's state was inserted above")
    }

    pub(super) fn id_at(&self, feed: &FeedId, seq: u64) -> StoreResult<Option<RecordId>> {
        let id: Option<String> = self
            .index
            .conn()
            .prepare_cached("SELECT id FROM records WHERE feed = ?1 AND seq = ?2")
            .and_then(|mut s| {
                s.query_row(params![feed.to_string(), seq as i64], |r| r.get(0))
                    .optional()
            })
            .db(self.index.path())?;
        Ok(id.as_deref().and_then(RecordId::parse))
    }
}
