//! The derived rows of one folded message: its row in `messages`, its
//! deliveries, events, votes, and a new `bodies` row when its text changed;
//! and their removal when its send is taken back.
//!
//! Owns what a folded message becomes in the index, so the read model
//! (`store::fold::message`) and the consent fold write it alike. It decides
//! nothing: every column is what `core` folded, the body what
//! `store::fold::body` says it is.

use rusqlite::{OptionalExtension as _, params};

use super::super::{Index, conflicts_json};
use super::IndexTx;
use crate::core::ids::RecordId;
use crate::core::message::Message;
use crate::store::error::{SqlContext as _, StoreResult};

/// What a message's (or a pin version's) text shows, as its rows store it:
/// the digests, and the text itself, read only when a new body row is
/// written. `store::fold::body::Body` is the one there is; the trait keeps the
/// index from importing what reads uploads.
pub trait ShownBody {
    /// Hex sha256 of the text.
    fn sha256(&self) -> &str;
    /// Length in bytes (0 while pending).
    fn bytes(&self) -> i64;
    /// Length in characters (0 while pending).
    fn chars(&self) -> i64;
    /// The text (empty while pending).
    fn text(&self, ix: &Index) -> StoreResult<String>;
}

impl IndexTx<'_> {
    /// Writes the derived rows of one message (inside the caller's transaction).
    /// `n` is the local ingest sequence of its `send` record; `body` is
    /// what its text shows (`store::fold::body` decides).
    pub fn write_message(&self, m: &Message, n: i64, body: &impl ShownBody) -> StoreResult<()> {
        let p = self.path();
        let id = m.id.hex();
        let before: Option<(String, String, i64)> = self
            .conn()
            .prepare_cached("SELECT topic, body_sha256, body_bytes FROM messages WHERE id = ?1")
            .and_then(|mut s| {
                s.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .db(p)?;
        let deleted_ms = m.deleted.map(|k| k.hlc.ms());
        let conflicts = conflicts_json(&m.conflicts);
        let s = &m.send;
        let text = &m.text;
        let l = Lifecycle::of(m);
        let c = Consented::of(m);
        // A new text row when the text changed: a revision, or the text of
        // an upload that was sealed here after the message arrived (its
        // length moves from 0). The message row keeps its rowid (`None`:
        // the row it has stays).
        let body_row = if before.as_ref()
            != Some(&(text.topic.clone(), body.sha256().to_owned(), body.bytes()))
        {
            let shown = body.text(self)?;
            self.conn()
                .prepare_cached("INSERT INTO bodies(message_id, topic, body) VALUES (?1, ?2, ?3)")
                .and_then(|mut st| st.execute(params![id, text.topic, shown]))
                .db(p)?;
            Some(self.conn().last_insert_rowid())
        } else {
            None
        };
        // One statement: a new message is inserted whole; an existing one has
        // only what the fold can change rewritten (its `n` and what was sent stay).
        let to_json = serde_json::to_string(&s.to).expect("roles serialize");
        let addenda = (!s.addenda.is_empty())
            .then(|| serde_json::to_string(&s.addenda).expect("addenda serialize"));
        let voters = m
            .declared_voters()
            .map(|v| serde_json::to_string(v).expect("roles serialize"));
        self.conn()
            .prepare_cached(
                "INSERT INTO messages(id, n, from_role, to_json, multi, action_required, \
                 reply_to, kind, addenda, decision_requested, ms, c, pin_key, about, voters, \
                 deleted_ms, conflicts, work_status, status, resolved_by, resolved_ms, \
                 resolution_note, confirmed, blocked_by, ws_by, taken, last_move_ms, topic, \
                 body_sha256, body_bytes, body_chars, revised_ms, retired_ms, retired_backfill, \
                 round_conflict, approved, acks, awaiting, body_row) VALUES (?1, ?2, ?3, ?4, \
                 ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, \
                 ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, \
                 ?38, ?39) ON \
                 CONFLICT(id) DO UPDATE SET deleted_ms = excluded.deleted_ms, conflicts = \
                 excluded.conflicts, work_status = excluded.work_status, status = \
                 excluded.status, resolved_by = excluded.resolved_by, resolved_ms = \
                 excluded.resolved_ms, resolution_note = excluded.resolution_note, confirmed = \
                 excluded.confirmed, blocked_by = excluded.blocked_by, ws_by = excluded.ws_by, \
                 taken = excluded.taken, last_move_ms = excluded.last_move_ms, topic = \
                 excluded.topic, body_sha256 = excluded.body_sha256, body_bytes = \
                 excluded.body_bytes, body_chars = excluded.body_chars, revised_ms = \
                 excluded.revised_ms, retired_ms = excluded.retired_ms, retired_backfill = \
                 excluded.retired_backfill, round_conflict = excluded.round_conflict, approved \
                 = excluded.approved, acks = excluded.acks, awaiting = excluded.awaiting, \
                 body_row = coalesce(excluded.body_row, body_row)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    id,
                    n,
                    m.from.as_str(),
                    to_json,
                    m.is_multi(),
                    s.action_required,
                    s.reply_to.map(|r| r.hex()),
                    s.kind.map(|k| k.as_str()),
                    addenda,
                    s.decision_requested,
                    m.created.ms(),
                    m.created.1,
                    s.pin_key,
                    s.about.map(|a| a.hex()),
                    voters,
                    deleted_ms,
                    conflicts,
                    l.work_status,
                    l.status,
                    l.resolved_by,
                    l.resolved_ms,
                    l.resolution_note,
                    l.confirmed,
                    l.blocked_by,
                    l.ws_by,
                    l.taken,
                    l.last_move_ms,
                    text.topic,
                    body.sha256(),
                    body.bytes(),
                    body.chars(),
                    c.revised_ms,
                    c.retired_ms,
                    c.retired_backfill,
                    c.round_conflict,
                    c.approved,
                    c.acks,
                    c.awaiting,
                    body_row,
                ])
            })
            .db(p)?;
        if let Some(r) = &text.body_ref {
            self.conn()
                .prepare_cached(
                    "INSERT OR IGNORE INTO body_refs(upload, message_id) VALUES (?1, ?2)",
                )
                .and_then(|mut st| st.execute(params![r.upload.hex(), id]))
                .db(p)?;
        }
        if before.is_some() {
            self.conn()
                .prepare_cached("DELETE FROM votes WHERE message_id = ?1")
                .and_then(|mut st| st.execute([&id]))
                .db(p)?;
        }
        let mut vote = self
            .conn()
            .prepare_cached(
                "INSERT INTO votes(message_id, role, decision, note, ms, record, body_sha256, \
                 pin_head, stale) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .db(p)?;
        for (role, v) in &m.votes {
            vote.execute(params![
                id,
                role.as_str(),
                v.decision.as_str(),
                v.note,
                v.key.hlc.ms(),
                v.key.id.hex(),
                v.body_sha256,
                v.pin_head.map(|h| h.hex()),
                v.body_sha256 != text.sha256,
            ])
            .db(p)?;
        }
        let mut up = self
            .conn()
            .prepare_cached(
                "INSERT INTO deliveries(role, message_id, ms, c, read_ms, opened_ms, deleted, n) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(role, message_id) DO UPDATE SET \
                 read_ms = excluded.read_ms, opened_ms = excluded.opened_ms, \
                 deleted = excluded.deleted",
            )
            .db(p)?;
        for (role, d) in &m.deliveries {
            up.execute(params![
                role.as_str(),
                id,
                m.created.ms(),
                m.created.1,
                d.read.map(|h| h.ms()),
                d.opened.map(|h| h.ms()),
                m.deleted.is_some(),
                n,
            ])
            .db(p)?;
        }
        // A message's events are written only with its row, and go with it.
        if before.is_some() {
            self.conn()
                .prepare_cached("DELETE FROM events WHERE message_id = ?1")
                .and_then(|mut s| s.execute([&id]))
                .db(p)?;
        }
        let mut ins = self
            .conn()
            .prepare_cached(
                "INSERT INTO events(message_id, pos, event, role, note, ms, record) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .db(p)?;
        for (pos, e) in m.events.iter().enumerate() {
            ins.execute(params![
                id,
                pos as i64,
                e.event,
                e.role.as_str(),
                e.note,
                e.key.hlc.ms(),
                e.key.id.hex()
            ])
            .db(p)?;
        }
        Ok(())
    }

    /// Removes every derived row of one message (inside the caller's
    /// transaction): its send was taken back (a fork). Its search rows leave
    /// the full-text index too.
    pub fn remove_message(&self, id: &RecordId) -> StoreResult<()> {
        let p = &self.path;
        let id = id.hex();
        let done: i64 = self
            .conn
            .prepare_cached("SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'fts_rowid'), 0)")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db(p)?;
        self.conn
            .prepare_cached(
                "INSERT INTO bodies_fts(bodies_fts, rowid, topic, body) \
                 SELECT 'delete', rowid, topic, body FROM bodies WHERE message_id = ?1 AND rowid <= ?2",
            )
            .and_then(|mut s| s.execute(params![id, done]))
            .db(p)?;
        for sql in [
            "DELETE FROM bodies WHERE message_id = ?1",
            "DELETE FROM events WHERE message_id = ?1",
            "DELETE FROM votes WHERE message_id = ?1",
            "DELETE FROM deliveries WHERE message_id = ?1",
            "DELETE FROM messages WHERE id = ?1",
        ] {
            self.conn
                .prepare_cached(sql)
                .and_then(|mut s| s.execute([&id]))
                .db(p)?;
        }
        Ok(())
    }
}

/// The consent columns of a message row.
struct Consented {
    revised_ms: Option<i64>,
    retired_ms: Option<i64>,
    retired_backfill: bool,
    round_conflict: Option<String>,
    approved: Option<String>,
    acks: Option<String>,
    awaiting: Option<String>,
}

impl Consented {
    fn of(m: &Message) -> Self {
        let acks = m.is_proposal().then(|| {
            let t = m.tally();
            serde_json::json!({
                "agreed": t.agreed.len(),
                "needed": t.electorate.len(),
                "missing": t.missing,
            })
            .to_string()
        });
        Self {
            revised_ms: m.revised.map(|k| k.hlc.ms()),
            retired_ms: m.retired.as_ref().map(|r| r.key.hlc.ms()),
            retired_backfill: m.retired.as_ref().is_some_and(|r| r.backfill),
            round_conflict: m.round_conflict.map(|r| r.hex()),
            approved: m.approved.map(|k| k.id.hex()),
            acks,
            awaiting: Some(m.awaiting())
                .filter(|a| !a.is_empty())
                .map(|a| serde_json::to_string(&a).expect("roles serialize")),
        }
    }
}

/// The lifecycle columns of a message row.
struct Lifecycle {
    work_status: Option<&'static str>,
    status: Option<&'static str>,
    resolved_by: Option<String>,
    resolved_ms: Option<i64>,
    resolution_note: Option<String>,
    confirmed: bool,
    blocked_by: Option<String>,
    ws_by: Option<String>,
    taken: bool,
    last_move_ms: i64,
}

impl Lifecycle {
    fn of(m: &Message) -> Self {
        let res = m.debt.as_ref().and_then(|d| d.resolved.as_ref());
        Self {
            work_status: m.work_status.map(|w| w.as_str()),
            status: m.debt.as_ref().map(|d| d.status.as_str()),
            resolved_by: res.map(|r| r.by.to_string()),
            resolved_ms: res.map(|r| r.at.hlc.ms()),
            resolution_note: res.and_then(|r| r.note.clone()),
            confirmed: m.debt.as_ref().is_some_and(|d| d.confirmed),
            blocked_by: m.blocked_by.map(|b| b.hex()),
            ws_by: m.ws_last.as_ref().map(|l| l.role.to_string()),
            taken: m.taken(),
            last_move_ms: m.last_move().ms(),
        }
    }
}
