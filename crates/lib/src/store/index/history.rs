//! The history of the channel as records: every record that touched one
//! message, and the channel's moves (sends, work statuses, resolutions,
//! votes, pins …) newest first, a page at a time.
//!
//! Owns the reading of those records back into ops for a person's view (the
//! board's detail page and its activity timeline). It decides nothing about
//! what a record did to the state (that is the fold's, stored elsewhere in
//! the index) and every read is bounded by a limit.

use rusqlite::params;

use super::Index;
use super::proposals::CastVote;
use super::rows::{At, FromRow, Named};
use crate::core::op::{Op, OpKind};
use crate::core::record;
use crate::store::error::StoreResult;

/// The ops a person's activity timeline shows: what moves the state of a
/// message, a vote or a pin. Deliveries (`opened`, `read`), membership,
/// uploads and memory records are left to `log`.
pub const MOVES: [OpKind; 9] = [
    OpKind::Send,
    OpKind::Revise,
    OpKind::WorkStatus,
    OpKind::Resolve,
    OpKind::Confirm,
    OpKind::Reopen,
    OpKind::Ack,
    OpKind::Delete,
    OpKind::PinSet,
];

/// One accepted record, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The record's full id.
    pub record: String,
    /// Its author's role.
    pub role: String,
    /// Its time (ms).
    pub ms: i64,
    /// Its clock counter (with `ms` and `record`, its place in the order).
    pub c: i64,
    /// What it did.
    pub op: Op,
}

/// A message's header, without its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageHead {
    /// Author.
    pub from: String,
    /// Subject.
    pub topic: String,
    /// Time of its send (ms).
    pub ms: i64,
    /// Clock counter of its send.
    pub c: i64,
    /// A tombstone.
    pub deleted: bool,
}

/// Where a page of the activity timeline starts: strictly before this place
/// in the total order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Before {
    /// Time (ms).
    pub ms: i64,
    /// Clock counter.
    pub c: i64,
    /// Record id (full, or the prefix a link carried: compared as text).
    pub record: String,
}

impl Index {
    /// The first `limit + 1` records that touched message `id` (full id), in
    /// the total order: its `send`, every record that targets it (deliveries,
    /// work statuses, resolutions, votes, revisions, its deletion) and the pin
    /// versions it approved.
    pub fn touches_of(&self, id: &str, limit: usize) -> StoreResult<Vec<Touch>> {
        let sql = "SELECT id, role, ms, c, body FROM (\
             SELECT r.id, r.role, r.ms, r.c, r.body FROM records r WHERE r.id = ?1 \
             UNION SELECT r.id, r.role, r.ms, r.c, r.body FROM targets t \
             JOIN records r ON r.n = t.n WHERE t.target = CAST(?1 AS TEXT) \
             UNION SELECT r.id, r.role, r.ms, r.c, r.body FROM pins p \
             JOIN records r ON r.id = p.record WHERE p.approved_by = ?1) \
             ORDER BY ms, c, id LIMIT ?2";
        let rows: Vec<Touched> = self.rows(sql, params![id, limit as i64 + 1])?;
        Ok(rows.into_iter().filter_map(|t| t.0).collect())
    }

    /// The newest `limit + 1` records of the kinds in [`MOVES`] that sort
    /// before `before` (every one when `None`), newest first. Walks
    /// `records_order` backwards: the cost is the page's (and the records of
    /// other kinds it steps over), not the history's.
    pub fn history_page(&self, before: Option<&Before>, limit: usize) -> StoreResult<Vec<Touch>> {
        let moves =
            serde_json::to_string(&MOVES.map(OpKind::as_str)).expect("a list of words serializes");
        let (ms, c, record) = match before {
            Some(b) => (b.ms, b.c, b.record.as_str()),
            None => (i64::MAX, i64::MAX, ""),
        };
        let sql = "SELECT r.id, r.role, r.ms, r.c, r.body FROM records r \
             WHERE r.op IN (SELECT value FROM json_each(?1)) \
             AND (r.ms < ?2 OR (r.ms = ?2 AND (r.c < ?3 OR (r.c = ?3 AND r.id < ?4)))) \
             ORDER BY r.ms DESC, r.c DESC, r.id DESC LIMIT ?5";
        let rows: Vec<Touched> = self.rows(sql, params![moves, ms, c, record, limit as i64 + 1])?;
        Ok(rows.into_iter().filter_map(|t| t.0).collect())
    }

    /// The header of message `id` (full id), if it is here.
    pub fn message_head(&self, id: &str) -> StoreResult<Option<MessageHead>> {
        self.row_opt(
            "SELECT from_role, topic, ms, c, deleted_ms IS NOT NULL AS deleted FROM messages \
             WHERE id = ?1",
            [id],
        )
    }

    /// Every role's standing decision on message `id` (full id), by role.
    pub fn votes_of(&self, id: &str) -> StoreResult<Vec<CastVote>> {
        self.rows(
            "SELECT role, decision, stale, ms, note FROM votes WHERE message_id = ?1 \
             ORDER BY role",
            [id],
        )
    }

    /// The subject of message `id` (full id), if it is here.
    pub fn topic_of(&self, id: &str) -> StoreResult<Option<String>> {
        self.scalar_opt("SELECT topic FROM messages WHERE id = ?1", [id])
    }
}

impl FromRow for MessageHead {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            from: r.get("from_role")?,
            topic: r.get("topic")?,
            ms: r.get("ms")?,
            c: r.get("c")?,
            deleted: r.get("deleted")?,
        })
    }
}

/// A row of `records` decoded; `None` for an op this build does not know
/// (ingest stores those as they came). A body that does not decode at all
/// was never stored by ingest, which checked it: an error naming it.
struct Touched(Option<Touch>);

impl FromRow for Touched {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let body: String = r.get("body")?;
        let op = match record::decode_body(&body) {
            Ok((_, _, op)) => op,
            Err(e) => {
                let at = At {
                    table: "records",
                    row: &id,
                };
                return Err(at.corrupt("body", e.to_string()));
            }
        };
        Ok(Self(match op {
            Some(op) => Some(Touch {
                role: r.get("role")?,
                ms: r.get("ms")?,
                c: r.get("c")?,
                op,
                record: id,
            }),
            None => None,
        }))
    }
}
