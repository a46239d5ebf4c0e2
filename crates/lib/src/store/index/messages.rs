//! Message rows as the index holds them, and the queries that read them
//! whole: a page of a role's mail, the filtered history, one message, its
//! place in a reply tree.
//!
//! Owns [`MessageRow`] (the typed row every listing reads) and the columns
//! behind it; it decides nothing about how a row is shown (that is the app's
//! wire shape) and holds no rule of its own beyond "not deleted".

use std::collections::BTreeMap;

use rusqlite::types::Value as Sql;
use rusqlite::{OptionalExtension as _, params};
use serde_json::Value;

use super::Index;
use crate::core::ids::MESSAGE_ID_LEN;
use crate::core::vocab::DebtStatus;
use crate::store::error::{SqlContext as _, StoreResult};

/// Columns every message query selects first, in [`MessageRow::from_sql`]'s order.
pub(super) const MESSAGE_COLUMNS: &str = "m.id, m.from_role, m.to_json, m.topic, \
    (SELECT body FROM bodies b WHERE b.message_id = m.id ORDER BY b.rowid DESC LIMIT 1), \
    m.action_required, m.reply_to, m.kind, m.work_status, m.addenda, m.decision_requested, \
    m.ms, m.deleted_ms, m.body_sha256, m.body_bytes, m.body_chars, m.n, m.c, m.status, \
    m.resolved_by, m.resolved_ms, m.resolution_note, m.confirmed, m.blocked_by, m.last_move_ms, \
    m.pin_key, m.about, m.voters, m.retired_ms, m.revised_ms, m.acks, m.round_conflict";

/// Index of the first column a query selects after [`MESSAGE_COLUMNS`] and
/// the viewer's `read_ms, opened_ms`.
pub(super) const AFTER_MESSAGE_COLUMNS: usize = 34;

/// The read state of a row without a viewer: the single recipient's; a
/// multi-recipient message has none of its own, so it always looks unread.
pub(super) const SINGLE_RECIPIENT_STATE: &str = "\
    (SELECT read_ms FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0), \
    (SELECT opened_ms FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0)";

/// One message as read from the index, with the viewer's delivery state.
#[derive(Clone, Debug)]
pub struct MessageRow {
    /// Full record id.
    pub id: String,
    /// Author.
    pub from: String,
    /// Recipients, sorted.
    pub to: Vec<String>,
    /// Subject.
    pub topic: String,
    /// Shared body.
    pub body: String,
    /// A debt?
    pub action_required: bool,
    /// Full id of the parent.
    pub reply_to: Option<String>,
    /// Kind.
    pub kind: Option<String>,
    /// Current work status.
    pub work_status: Option<String>,
    /// Per-recipient tails.
    pub addenda: BTreeMap<String, String>,
    /// Whether a decision is asked for.
    pub decision_requested: bool,
    /// Creation time (ms).
    pub ms: i64,
    /// Tombstone time (ms).
    pub deleted_ms: Option<i64>,
    /// sha256 of the body.
    pub body_sha256: String,
    /// Body length in bytes.
    pub body_bytes: i64,
    /// Body length in characters.
    pub body_chars: i64,
    /// Local ingest sequence of the send record.
    pub n: i64,
    /// Clock counter of the send record (with `ms`, the total order).
    pub c: i64,
    /// Debt status (`open`, `resolved`), for debts.
    pub status: Option<String>,
    /// Who resolved the debt.
    pub resolved_by: Option<String>,
    /// When it was resolved (ms).
    pub resolved_ms: Option<i64>,
    /// The resolution's note.
    pub resolution_note: Option<String>,
    /// True once the current resolution is confirmed.
    pub confirmed: bool,
    /// Full id of the blocking debt.
    pub blocked_by: Option<String>,
    /// Time of the latest lifecycle event (ms).
    pub last_move_ms: i64,
    /// The pin key of a proposal.
    pub pin_key: Option<String>,
    /// Full id of the message this one is about.
    pub about: Option<String>,
    /// The declared electorate.
    pub voters: Option<Vec<String>>,
    /// When it was retired (ms).
    pub retired_ms: Option<i64>,
    /// When it was last revised (ms).
    pub revised_ms: Option<i64>,
    /// The consent tally of a proposal.
    pub acks: Option<Value>,
    /// For a second round on a key: the round that holds it.
    pub round_conflict: Option<String>,
    /// The viewer's (or the single recipient's) read time.
    pub read_ms: Option<i64>,
    /// The viewer's (or the single recipient's) first delivery time.
    pub opened_ms: Option<i64>,
}

impl MessageRow {
    /// Reads [`MESSAGE_COLUMNS`] followed by `read_ms, opened_ms`.
    pub(super) fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        let to_json: String = r.get(2)?;
        let addenda: Option<String> = r.get(9)?;
        Ok(Self {
            id: r.get(0)?,
            from: r.get(1)?,
            to: serde_json::from_str(&to_json).unwrap_or_default(),
            topic: r.get(3)?,
            body: r.get(4)?,
            action_required: r.get(5)?,
            reply_to: r.get(6)?,
            kind: r.get(7)?,
            work_status: r.get(8)?,
            addenda: addenda
                .and_then(|a| serde_json::from_str(&a).ok())
                .unwrap_or_default(),
            decision_requested: r.get(10)?,
            ms: r.get(11)?,
            deleted_ms: r.get(12)?,
            body_sha256: r.get(13)?,
            body_bytes: r.get(14)?,
            body_chars: r.get(15)?,
            n: r.get(16)?,
            c: r.get(17)?,
            status: r.get(18)?,
            resolved_by: r.get(19)?,
            resolved_ms: r.get(20)?,
            resolution_note: r.get(21)?,
            confirmed: r.get(22)?,
            blocked_by: r.get(23)?,
            last_move_ms: r.get(24)?,
            pin_key: r.get(25)?,
            about: r.get(26)?,
            voters: r
                .get::<_, Option<String>>(27)?
                .and_then(|v| serde_json::from_str(&v).ok()),
            retired_ms: r.get(28)?,
            revised_ms: r.get(29)?,
            acks: r
                .get::<_, Option<String>>(30)?
                .and_then(|v| serde_json::from_str(&v).ok()),
            round_conflict: r.get(31)?,
            read_ms: r.get(32)?,
            opened_ms: r.get(33)?,
        })
    }

    /// The short id agents see.
    pub fn short_id(&self) -> String {
        self.id.chars().take(MESSAGE_ID_LEN).collect()
    }

    /// True if more than one role received it.
    pub fn is_multi(&self) -> bool {
        self.to.len() > 1
    }
}

/// A message as a glance at recent traffic shows it: its header and the
/// start of its current text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrafficLine {
    /// Full id.
    pub id: String,
    /// Author.
    pub from: String,
    /// Recipients, sorted.
    pub to: Vec<String>,
    /// Subject.
    pub topic: String,
    /// Kind, if any.
    pub kind: Option<String>,
    /// A debt?
    pub action_required: bool,
    /// Creation time (ms).
    pub ms: i64,
    /// The first characters of its current text.
    pub excerpt: String,
}

/// The filters of the unranked history (list_messages). Values are taken as
/// given: the use case validates them first.
#[derive(Clone, Debug, Default)]
pub struct MessageFilter {
    /// Substring of the topic.
    pub topic: Option<String>,
    /// Substring of the topic or of any body the message had.
    pub text: Option<String>,
    /// Author.
    pub from_role: Option<String>,
    /// A recipient; the row then carries that recipient's read state.
    pub to_role: Option<String>,
    /// Unread only (by `to_role`, else by the single recipient).
    pub unread_only: bool,
    /// Created at or after this time (ms).
    pub since_ms: Option<i64>,
    /// Debt status.
    pub status: Option<DebtStatus>,
    /// Kind.
    pub kind: Option<String>,
    /// Work status.
    pub work_status: Option<String>,
    /// The structural pin key of a proposal.
    pub pin_key: Option<String>,
}

/// A message id found by prefix, with what tells whether it may still be named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixMatch {
    /// The full id.
    pub id: String,
    /// A tombstone.
    pub deleted: bool,
    /// Retired (superseded).
    pub retired: bool,
}

/// Escapes `%`, `_` and `\` for a LIKE pattern with `ESCAPE '\'`.
pub fn like_pattern(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

impl Index {
    /// The newest `limit` live messages, newest first, with the first
    /// `excerpt_chars` characters of each one's current text. Read backwards
    /// from `messages_order`: the cost is the limit's, not the history's.
    pub fn recent_traffic(
        &self,
        limit: usize,
        excerpt_chars: usize,
    ) -> StoreResult<Vec<TrafficLine>> {
        self.conn
            .prepare_cached(
                "SELECT m.id, m.from_role, m.to_json, m.topic, m.kind, m.action_required, m.ms, \
                 substr((SELECT body FROM bodies b WHERE b.message_id = m.id \
                 ORDER BY b.rowid DESC LIMIT 1), 1, ?2) FROM messages m \
                 WHERE m.deleted_ms IS NULL ORDER BY m.ms DESC, m.c DESC, m.id DESC LIMIT ?1",
            )
            .and_then(|mut st| {
                st.query_map(params![limit as i64, excerpt_chars as i64], |r| {
                    let to: String = r.get(2)?;
                    Ok(TrafficLine {
                        id: r.get(0)?,
                        from: r.get(1)?,
                        to: serde_json::from_str(&to).unwrap_or_default(),
                        topic: r.get(3)?,
                        kind: r.get(4)?,
                        action_required: r.get(5)?,
                        ms: r.get(6)?,
                        excerpt: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
                    })
                })?
                .collect()
            })
            .db(&self.path)
    }

    /// The newest `limit + 1` messages delivered to `role` (not deleted; only
    /// unread ones if asked), newest first, with the role's read state.
    pub fn inbox_page(
        &self,
        role: &str,
        unread_only: bool,
        limit: usize,
    ) -> StoreResult<Vec<MessageRow>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, d.read_ms, d.opened_ms FROM deliveries d \
             JOIN messages m ON m.id = d.message_id \
             WHERE d.role = ?1 AND d.deleted = 0 {} \
             ORDER BY d.ms DESC, d.c DESC, d.message_id DESC LIMIT ?2",
            if unread_only {
                "AND d.read_ms IS NULL"
            } else {
                ""
            }
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_map(params![role, limit as i64 + 1], MessageRow::from_sql)?
                    .collect()
            })
            .db(&self.path)
    }

    /// The newest `limit + 1` live messages matching `f`, newest first.
    pub fn messages_matching(
        &self,
        f: &MessageFilter,
        limit: usize,
    ) -> StoreResult<Vec<MessageRow>> {
        let mut cond = vec!["m.deleted_ms IS NULL".to_owned()];
        let mut args: Vec<Sql> = Vec::new();
        let arg = |v: Sql, args: &mut Vec<Sql>| {
            args.push(v);
            format!("?{}", args.len())
        };
        if let Some(t) = &f.topic {
            let a = arg(Sql::Text(like_pattern(t)), &mut args);
            cond.push(format!("m.topic LIKE {a} ESCAPE '\\'"));
        }
        if let Some(t) = &f.text {
            let a = arg(Sql::Text(like_pattern(t)), &mut args);
            cond.push(format!(
                "(m.topic LIKE {a} ESCAPE '\\' OR EXISTS (SELECT 1 FROM bodies b WHERE b.message_id = m.id \
                 AND b.body LIKE {a} ESCAPE '\\'))"
            ));
        }
        if let Some(r) = &f.from_role {
            let a = arg(Sql::Text(r.clone()), &mut args);
            cond.push(format!("m.from_role = {a}"));
        }
        let read_expr = if let Some(r) = &f.to_role {
            let a = arg(Sql::Text(r.clone()), &mut args);
            cond.push(format!(
                "EXISTS (SELECT 1 FROM deliveries t WHERE t.message_id = m.id AND t.role = {a}{})",
                if f.unread_only {
                    " AND t.read_ms IS NULL"
                } else {
                    ""
                }
            ));
            format!("(SELECT read_ms FROM deliveries t WHERE t.message_id = m.id AND t.role = {a})")
        } else {
            // The row's own read state: the single recipient's; a multi-recipient
            // message has none of its own, so it always looks unread here.
            let single =
                "(SELECT read_ms FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0)";
            if f.unread_only {
                cond.push(format!("{single} IS NULL"));
            }
            single.to_owned()
        };
        if let Some(ms) = f.since_ms {
            let a = arg(Sql::Integer(ms), &mut args);
            cond.push(format!("m.ms >= {a}"));
        }
        if let Some(st) = f.status {
            cond.push(format!("m.status = '{}'", st.as_str()));
        }
        if let Some(k) = &f.kind {
            let a = arg(Sql::Text(k.clone()), &mut args);
            cond.push(format!("m.kind = {a}"));
        }
        if let Some(w) = &f.work_status {
            let a = arg(Sql::Text(w.clone()), &mut args);
            cond.push(format!("m.work_status = {a}"));
        }
        if let Some(k) = &f.pin_key {
            // The structural link only: a mention in the text is not a pin key.
            let a = arg(Sql::Text(k.clone()), &mut args);
            cond.push(format!("m.pin_key = {a}"));
        }
        let lim = arg(Sql::Integer(limit as i64 + 1), &mut args);
        let opened_expr = read_expr.replace("read_ms", "opened_ms");
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, {read_expr}, {opened_expr} FROM messages m WHERE {} \
             ORDER BY m.ms DESC, m.c DESC, m.id DESC LIMIT {lim}",
            cond.join(" AND ")
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_map(
                    rusqlite::params_from_iter(args.iter()),
                    MessageRow::from_sql,
                )?
                .collect()
            })
            .db(&self.path)
    }

    /// One message (tombstones too) by full id, with the single recipient's
    /// read state.
    pub fn message_row(&self, id: &str) -> StoreResult<Option<MessageRow>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, {SINGLE_RECIPIENT_STATE} FROM messages m WHERE m.id = ?1"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| st.query_row([id], MessageRow::from_sql).optional())
            .db(&self.path)
    }

    /// The full id of the message `id` replies to, if any.
    pub fn parent_of(&self, id: &str) -> StoreResult<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT reply_to FROM messages WHERE id = ?1")
            .and_then(|mut st| {
                st.query_row([id], |r| r.get::<_, Option<String>>(0))
                    .optional()
            })
            .db(&self.path)?
            .flatten())
    }

    /// The full ids of the replies to `id`, tombstones included.
    pub fn children_of(&self, id: &str) -> StoreResult<Vec<String>> {
        self.conn
            .prepare_cached("SELECT id FROM messages WHERE reply_to = ?1")
            .and_then(|mut st| st.query_map([id], |r| r.get(0))?.collect())
            .db(&self.path)
    }

    /// The local ingest number of message `id`: what arrived later has a
    /// higher one.
    pub fn ingest_number(&self, id: &str) -> StoreResult<Option<i64>> {
        self.conn
            .prepare_cached("SELECT n FROM messages WHERE id = ?1")
            .and_then(|mut st| st.query_row([id], |r| r.get::<_, i64>(0)).optional())
            .db(&self.path)
    }

    /// The earliest live reply to `parent` delivered to `role` (unread unless
    /// `include_read`; ingested after `after_n` if given), with the role's
    /// read state.
    pub fn first_reply(
        &self,
        parent: &str,
        role: &str,
        after_n: Option<i64>,
        include_read: bool,
    ) -> StoreResult<Option<MessageRow>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, d.read_ms, d.opened_ms FROM messages m \
             JOIN deliveries d ON d.message_id = m.id AND d.role = ?2 \
             WHERE m.reply_to = ?1 AND m.deleted_ms IS NULL AND m.n > ?3 {} \
             ORDER BY m.ms, m.c, m.id LIMIT 1",
            if include_read {
                ""
            } else {
                "AND d.read_ms IS NULL"
            }
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_row(
                    params![parent, role, after_n.unwrap_or(-1)],
                    MessageRow::from_sql,
                )
                .optional()
            })
            .db(&self.path)
    }

    /// Messages whose id lies in `[lo, hi)` (an id prefix and the bound past
    /// it), at most `max` of them.
    pub fn messages_with_prefix(
        &self,
        lo: &str,
        hi: &str,
        max: usize,
    ) -> StoreResult<Vec<PrefixMatch>> {
        self.conn
            .prepare_cached(
                "SELECT id, deleted_ms IS NOT NULL, retired_ms IS NOT NULL FROM messages \
                 WHERE id >= ?1 AND id < ?2 LIMIT ?3",
            )
            .and_then(|mut st| {
                st.query_map(params![lo, hi, max as i64], |r| {
                    Ok(PrefixMatch {
                        id: r.get(0)?,
                        deleted: r.get(1)?,
                        retired: r.get(2)?,
                    })
                })?
                .collect()
            })
            .db(&self.path)
    }

    /// The author of message `id`.
    pub fn author_of(&self, id: &str) -> StoreResult<Option<String>> {
        self.conn
            .prepare_cached("SELECT from_role FROM messages WHERE id = ?1")
            .and_then(|mut st| st.query_row([id], |r| r.get(0)).optional())
            .db(&self.path)
    }

    /// The author and recipients of message `id`.
    pub fn audience_of(&self, id: &str) -> StoreResult<Option<(String, Vec<String>)>> {
        let row: Option<(String, String)> = self
            .conn
            .prepare_cached("SELECT from_role, to_json FROM messages WHERE id = ?1")
            .and_then(|mut st| {
                st.query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .db(&self.path)?;
        Ok(row.map(|(from, to)| (from, serde_json::from_str(&to).unwrap_or_default())))
    }
}

/// Rows made by hand, for the unit tests of lookups by id elsewhere in the
/// crate (a real row comes from the fold).
#[cfg(test)]
impl Index {
    /// A bare live message row with id `id`.
    pub(crate) fn put_bare_message(&self, id: &str) {
        self.conn
            .execute(
                "INSERT INTO messages(id, n, from_role, to_json, multi, topic, \
                 action_required, decision_requested, ms, c, body_sha256, body_bytes, body_chars, \
                 last_move_ms) VALUES (?1, 1, 'a', '[\"b\"]', 0, 't', 0, 1, 1, 0, '', 1, 1, 1)",
                [id],
            )
            .unwrap();
    }

    /// A bare upload row with id `id`.
    pub(crate) fn put_bare_upload(&self, id: &str) {
        self.conn
            .execute(
                "INSERT INTO uploads(id, uploader, ms, c, chunks, length_bytes, length_chars, \
                 sha256) VALUES (?1, 'a', 1, 0, 1, 1, 1, '')",
                [id],
            )
            .unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_escapes_wildcards() {
        assert_eq!(like_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }
}
