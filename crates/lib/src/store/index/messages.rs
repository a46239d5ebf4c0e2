//! Message rows as the index holds them, and the queries that read them
//! whole: a page of a role's mail, the filtered history, one message, its
//! place in a reply tree.
//!
//! Owns [`MessageRow`] (the typed row every listing reads) and the columns
//! behind it; it decides nothing about how a row is shown (that is the app's
//! wire shape) and holds no rule of its own beyond "not deleted".

use std::collections::{BTreeMap, HashMap};

use rusqlite::params;
use rusqlite::types::Value as Sql;
use serde_json::Value;

use super::Index;
use super::rows::{At, FromRow, Named};
use crate::core::ids::{RecordId, Role};
use crate::core::vocab::{DebtStatus, Kind, WorkStatus};
use crate::store::error::StoreResult;

/// Declares the columns of a [`MessageRow`] once: the SELECT list
/// ([`MESSAGE_COLUMNS`], each expression named by its column) and the names
/// in their order, from which [`MessageRow::from_row`] finds each column by
/// its name at compile time (no count kept by hand, no lookup per row).
macro_rules! message_columns {
    ($first:ident = $first_sql:literal $(, $name:ident = $sql:literal)* $(,)?) => {
        /// Columns every message query selects first, each named; the
        /// viewer's `read_ms, opened_ms` follow them.
        pub(super) const MESSAGE_COLUMNS: &str = concat!(
            $first_sql, " AS ", stringify!($first) $(, ", ", $sql, " AS ", stringify!($name))*
        );
        /// The names of [`MESSAGE_COLUMNS`] and the viewer's two, in order.
        const VIEWED_COLUMNS: &[&str] =
            &[stringify!($first) $(, stringify!($name))*, "read_ms", "opened_ms"];
    };
}

message_columns!(
    id = "m.id",
    from_role = "m.from_role",
    to_json = "m.to_json",
    topic = "m.topic",
    body = "(SELECT body FROM bodies b WHERE b.rowid = m.body_row)",
    action_required = "m.action_required",
    reply_to = "m.reply_to",
    kind = "m.kind",
    work_status = "m.work_status",
    addenda = "m.addenda",
    decision_requested = "m.decision_requested",
    ms = "m.ms",
    deleted_ms = "m.deleted_ms",
    body_sha256 = "m.body_sha256",
    body_bytes = "m.body_bytes",
    body_chars = "m.body_chars",
    n = "m.n",
    c = "m.c",
    status = "m.status",
    resolved_by = "m.resolved_by",
    resolved_ms = "m.resolved_ms",
    resolution_note = "m.resolution_note",
    confirmed = "m.confirmed",
    blocked_by = "m.blocked_by",
    last_move_ms = "m.last_move_ms",
    pin_key = "m.pin_key",
    about = "m.about",
    voters = "m.voters",
    retired_ms = "m.retired_ms",
    revised_ms = "m.revised_ms",
    acks = "m.acks",
    round_conflict = "m.round_conflict",
);

/// Adds `messages.body_row` to an index made before messages kept their
/// current body's rowid, filled from `bodies` (the newest row of each).
/// Nothing to do in a new file, whose schema is yet to be made.
pub(super) fn add_body_row(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('messages')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if !columns.is_empty() && !columns.iter().any(|c| c == "body_row") {
        conn.execute_batch(
            "ALTER TABLE messages ADD COLUMN body_row INTEGER; \
             UPDATE messages SET body_row = \
             (SELECT max(b.rowid) FROM bodies b WHERE b.message_id = messages.id);",
        )?;
    }
    Ok(())
}

/// The place of column `name` in [`VIEWED_COLUMNS`]; a name that is not
/// there fails the build (the function runs in a `const` block).
const fn place(name: &str) -> usize {
    let mut i = 0;
    while i < VIEWED_COLUMNS.len() {
        let (a, b) = (VIEWED_COLUMNS[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a column of MESSAGE_COLUMNS")
}

/// Reads column `$name` of a message row by its name, placed at compile time.
macro_rules! col {
    ($row:expr, $name:literal) => {
        viewed($row, const { place($name) })
    };
}

/// Column `i` of a message row; a debug build checks the statement named it
/// as [`VIEWED_COLUMNS`] does (a query that selected otherwise).
fn viewed<T: rusqlite::types::FromSql>(r: &Named<'_, '_>, i: usize) -> rusqlite::Result<T> {
    debug_assert_eq!(
        r.name(i),
        Some(VIEWED_COLUMNS[i]),
        "message query selects column {i} otherwise"
    );
    r.get(i)
}

/// The read state from one joined delivery row `t`: the single recipient's
/// ([`SINGLE_RECIPIENT_JOIN`]), or a recipient filter's. One lookup per row,
/// where a subquery per column made two.
pub(super) const JOINED_STATE: &str = "t.read_ms AS read_ms, t.opened_ms AS opened_ms";

/// The delivery row `t` that gives a row without a viewer its read state:
/// the single recipient's. A multi-recipient message has none of its own, so
/// it always looks unread; a single recipient has one row, so the join adds
/// no row.
pub(super) const SINGLE_RECIPIENT_JOIN: &str =
    "LEFT JOIN deliveries t ON t.message_id = m.id AND m.multi = 0";

/// The viewer's read state from its delivery row `d`.
pub(super) const VIEWER_STATE: &str = "d.read_ms AS read_ms, d.opened_ms AS opened_ms";

/// One message as read from the index, with the viewer's delivery state.
#[derive(Clone, Debug)]
pub struct MessageRow {
    /// Full record id.
    pub id: RecordId,
    /// Author.
    pub from: Role,
    /// Recipients, sorted.
    pub to: Vec<Role>,
    /// Subject.
    pub topic: String,
    /// Shared body.
    pub body: String,
    /// A debt?
    pub action_required: bool,
    /// Full id of the parent.
    pub reply_to: Option<RecordId>,
    /// Kind.
    pub kind: Option<Kind>,
    /// Current work status.
    pub work_status: Option<WorkStatus>,
    /// Per-recipient tails.
    pub addenda: BTreeMap<Role, String>,
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
    pub status: Option<DebtStatus>,
    /// Who resolved the debt.
    pub resolved_by: Option<Role>,
    /// When it was resolved (ms).
    pub resolved_ms: Option<i64>,
    /// The resolution's note.
    pub resolution_note: Option<String>,
    /// True once the current resolution is confirmed.
    pub confirmed: bool,
    /// Full id of the blocking debt.
    pub blocked_by: Option<RecordId>,
    /// Time of the latest lifecycle event (ms).
    pub last_move_ms: i64,
    /// The pin key of a proposal.
    pub pin_key: Option<String>,
    /// Full id of the message this one is about.
    pub about: Option<RecordId>,
    /// The declared electorate.
    pub voters: Option<Vec<Role>>,
    /// When it was retired (ms).
    pub retired_ms: Option<i64>,
    /// When it was last revised (ms).
    pub revised_ms: Option<i64>,
    /// The consent tally of a proposal.
    pub acks: Option<Value>,
    /// For a second round on a key: the round that holds it.
    pub round_conflict: Option<RecordId>,
    /// The viewer's (or the single recipient's) read time.
    pub read_ms: Option<i64>,
    /// The viewer's (or the single recipient's) first delivery time.
    pub opened_ms: Option<i64>,
}

impl FromRow for MessageRow {
    /// Reads [`MESSAGE_COLUMNS`] followed by `read_ms, opened_ms`, each
    /// stored id, role and state parsed and each JSON column decoded: a
    /// value that does not is an error naming it, not a default.
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let raw_id: String = col!(r, "id")?;
        let at = At {
            table: "messages",
            row: &raw_id,
        };
        let id = |column, v: Option<String>| -> rusqlite::Result<Option<RecordId>> {
            v.map(|v| at.decode(column, &v)).transpose()
        };
        let addenda: Option<String> = col!(r, "addenda")?;
        let voters: Option<String> = col!(r, "voters")?;
        let acks: Option<String> = col!(r, "acks")?;
        let kind: Option<String> = col!(r, "kind")?;
        let work_status: Option<String> = col!(r, "work_status")?;
        let status: Option<String> = col!(r, "status")?;
        let resolved_by: Option<String> = col!(r, "resolved_by")?;
        let from: String = col!(r, "from_role")?;
        let to: String = col!(r, "to_json")?;
        Ok(Self {
            id: at.decode("id", &raw_id)?,
            from: at.decode("from_role", &from)?,
            to: match lone_recipient(&to) {
                Some(role) => vec![at.decode("to_json", role)?],
                None => at.decode_json("to_json", &to)?,
            },
            topic: col!(r, "topic")?,
            body: col!(r, "body")?,
            action_required: col!(r, "action_required")?,
            reply_to: id("reply_to", col!(r, "reply_to")?)?,
            kind: kind.map(|k| at.decode("kind", &k)).transpose()?,
            work_status: work_status
                .map(|w| at.decode("work_status", &w))
                .transpose()?,
            addenda: addenda
                .map(|a| at.decode_json("addenda", &a))
                .transpose()?
                .unwrap_or_default(),
            decision_requested: col!(r, "decision_requested")?,
            ms: col!(r, "ms")?,
            deleted_ms: col!(r, "deleted_ms")?,
            body_sha256: col!(r, "body_sha256")?,
            body_bytes: col!(r, "body_bytes")?,
            body_chars: col!(r, "body_chars")?,
            n: col!(r, "n")?,
            c: col!(r, "c")?,
            status: status.map(|s| at.decode("status", &s)).transpose()?,
            resolved_by: resolved_by
                .map(|b| at.decode("resolved_by", &b))
                .transpose()?,
            resolved_ms: col!(r, "resolved_ms")?,
            resolution_note: col!(r, "resolution_note")?,
            confirmed: col!(r, "confirmed")?,
            blocked_by: id("blocked_by", col!(r, "blocked_by")?)?,
            last_move_ms: col!(r, "last_move_ms")?,
            pin_key: col!(r, "pin_key")?,
            about: id("about", col!(r, "about")?)?,
            voters: voters.map(|v| at.decode_json("voters", &v)).transpose()?,
            retired_ms: col!(r, "retired_ms")?,
            revised_ms: col!(r, "revised_ms")?,
            acks: acks.map(|v| at.decode_json("acks", &v)).transpose()?,
            round_conflict: id("round_conflict", col!(r, "round_conflict")?)?,
            read_ms: col!(r, "read_ms")?,
            opened_ms: col!(r, "opened_ms")?,
        })
    }
}

/// The one role of a `to_json` that names one (`["backend"]`, what nearly
/// every message has), read without a JSON parser: a listing reads it for
/// every row. Anything else (several roles, an escape) is left to the parser.
fn lone_recipient(to_json: &str) -> Option<&str> {
    let role = to_json.strip_prefix("[\"")?.strip_suffix("\"]")?;
    (!role.contains(['"', '\\'])).then_some(role)
}

impl MessageRow {
    /// The short id agents see.
    pub fn short_id(&self) -> String {
        self.id.short()
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

impl FromRow for TrafficLine {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "messages",
            row: &id,
        };
        Ok(Self {
            to: at.json(r, "to_json")?,
            from: r.get("from_role")?,
            topic: r.get("topic")?,
            kind: r.get("kind")?,
            action_required: r.get("action_required")?,
            ms: r.get("ms")?,
            excerpt: r.get::<_, Option<String>>("excerpt")?.unwrap_or_default(),
            id,
        })
    }
}

/// A message's author and recipients.
struct Audience {
    from: String,
    to: Vec<String>,
}

impl FromRow for Audience {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "messages",
            row: &id,
        };
        Ok(Self {
            from: r.get("from_role")?,
            to: at.json(r, "to_json")?,
        })
    }
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

impl FromRow for PrefixMatch {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get("id")?,
            deleted: r.get("deleted")?,
            retired: r.get("retired")?,
        })
    }
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
        self.rows(
            "SELECT m.id, m.from_role, m.to_json, m.topic, m.kind, m.action_required, m.ms, \
             substr((SELECT body FROM bodies b WHERE b.rowid = m.body_row), 1, ?2) \
             AS excerpt FROM messages m \
             WHERE m.deleted_ms IS NULL ORDER BY m.ms DESC, m.c DESC, m.id DESC LIMIT ?1",
            params![limit as i64, excerpt_chars as i64],
        )
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
            "SELECT {MESSAGE_COLUMNS}, {VIEWER_STATE} FROM deliveries d \
             JOIN messages m ON m.id = d.message_id \
             WHERE d.role = ?1 AND d.deleted = 0 {} \
             ORDER BY d.ms DESC, d.c DESC, d.message_id DESC LIMIT ?2",
            if unread_only {
                "AND d.read_ms IS NULL"
            } else {
                ""
            }
        );
        self.rows(&sql, params![role, limit as i64 + 1])
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
        // The read state shown, from one delivery row `t` joined per message
        // (one lookup, where a subquery per column made two).
        let (from, order) = if let Some(r) = &f.to_role {
            // That role's: the message must have been delivered to it. The
            // role's deliveries are walked newest first (`deliveries_inbox`
            // holds them in that order, the message id last), each joined to
            // its message: a page costs the limit's rows, where walking every
            // message and looking up its delivery read the whole channel for
            // a role few messages go to. A delivery's time is its message's.
            let a = arg(Sql::Text(r.clone()), &mut args);
            cond.push(format!("t.role = {a}"));
            (
                "deliveries t CROSS JOIN messages m ON m.id = t.message_id".to_owned(),
                "t.ms DESC, t.c DESC, t.message_id DESC",
            )
        } else {
            // The row's own read state: the single recipient's; a multi-recipient
            // message has none of its own, so it always looks unread here.
            (
                format!("messages m {SINGLE_RECIPIENT_JOIN}"),
                "m.ms DESC, m.c DESC, m.id DESC",
            )
        };
        if f.unread_only {
            cond.push("t.read_ms IS NULL".to_owned());
        }
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
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, {JOINED_STATE} FROM {from} WHERE {} \
             ORDER BY {order} LIMIT {lim}",
            cond.join(" AND ")
        );
        self.rows(&sql, rusqlite::params_from_iter(args.iter()))
    }

    /// One message (tombstones too) by full id, with the single recipient's
    /// read state.
    pub fn message_row(&self, id: &str) -> StoreResult<Option<MessageRow>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, {JOINED_STATE} FROM messages m {SINGLE_RECIPIENT_JOIN} \
             WHERE m.id = ?1"
        );
        self.row_opt(&sql, [id])
    }

    /// The messages of `ids` (full ids; tombstones too) that exist, each with
    /// its single recipient's read state, in one query: what
    /// [`Self::message_row`] gives for each, in no set order.
    pub fn message_rows(&self, ids: &[&str]) -> StoreResult<Vec<MessageRow>> {
        self.message_rows_by("m.id", ids)
    }

    /// The messages at `rows` (rowid in the index and full id, as a search's
    /// first pass read them), in their order, as [`Self::message_rows`]
    /// gives them: one lookup each by integer key instead of two by a
    /// 64-character id. `None` where the row is gone or no longer that
    /// message's (another process folded it again since).
    pub fn message_rows_at(&self, rows: &[(i64, &str)]) -> StoreResult<Vec<Option<MessageRow>>> {
        let at: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let mut found: HashMap<String, MessageRow> = self
            .message_rows_by("m.rowid", &at)?
            .into_iter()
            .map(|r| (r.id.hex(), r))
            .collect();
        Ok(rows.iter().map(|(_, id)| found.remove(*id)).collect())
    }

    /// The messages whose `key` column is one of `keys`, in one query.
    fn message_rows_by<K: serde::Serialize>(
        &self,
        key: &str,
        keys: &[K],
    ) -> StoreResult<Vec<MessageRow>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, {JOINED_STATE} FROM messages m {SINGLE_RECIPIENT_JOIN} \
             WHERE {key} IN (SELECT value FROM json_each(?1))"
        );
        let keys = serde_json::to_string(keys).expect("strings and integers serialize");
        self.rows(&sql, [keys])
    }

    /// The full id of the message `id` replies to, if any.
    pub fn parent_of(&self, id: &str) -> StoreResult<Option<String>> {
        Ok(self
            .scalar_opt::<Option<String>>("SELECT reply_to FROM messages WHERE id = ?1", [id])?
            .flatten())
    }

    /// The full ids of the replies to `id`, tombstones included.
    pub fn children_of(&self, id: &str) -> StoreResult<Vec<String>> {
        self.values("SELECT id FROM messages WHERE reply_to = ?1", [id])
    }

    /// The local ingest number of message `id`: what arrived later has a
    /// higher one.
    pub fn ingest_number(&self, id: &str) -> StoreResult<Option<i64>> {
        self.scalar_opt("SELECT n FROM messages WHERE id = ?1", [id])
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
            "SELECT {MESSAGE_COLUMNS}, {VIEWER_STATE} FROM messages m \
             JOIN deliveries d ON d.message_id = m.id AND d.role = ?2 \
             WHERE m.reply_to = ?1 AND m.deleted_ms IS NULL AND m.n > ?3 {} \
             ORDER BY m.ms, m.c, m.id LIMIT 1",
            if include_read {
                ""
            } else {
                "AND d.read_ms IS NULL"
            }
        );
        self.row_opt(&sql, params![parent, role, after_n.unwrap_or(-1)])
    }

    /// Messages whose id lies in `[lo, hi)` (an id prefix and the bound past
    /// it), at most `max` of them.
    pub fn messages_with_prefix(
        &self,
        lo: &str,
        hi: &str,
        max: usize,
    ) -> StoreResult<Vec<PrefixMatch>> {
        self.rows(
            "SELECT id, deleted_ms IS NOT NULL AS deleted, retired_ms IS NOT NULL AS retired \
             FROM messages WHERE id >= ?1 AND id < ?2 LIMIT ?3",
            params![lo, hi, max as i64],
        )
    }

    /// The author of message `id`.
    pub fn author_of(&self, id: &str) -> StoreResult<Option<String>> {
        self.scalar_opt("SELECT from_role FROM messages WHERE id = ?1", [id])
    }

    /// The author and recipients of message `id`.
    pub fn audience_of(&self, id: &str) -> StoreResult<Option<(String, Vec<String>)>> {
        let row: Option<Audience> = self.row_opt(
            "SELECT id, from_role, to_json FROM messages WHERE id = ?1",
            [id],
        )?;
        Ok(row.map(|a| (a.from, a.to)))
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

    /// A message row of a real index file with `column` overwritten by
    /// `value` behind the index's back, read again.
    fn read_with(column: &str, value: &str) -> (String, StoreResult<Option<MessageRow>>) {
        use crate::core::op::{Op, Send};
        let dir = tempfile::tempdir().unwrap();
        let path = Index::path_in(dir.path());
        let ix = Index::open(&path, &"c".repeat(64)).unwrap();
        let sent = crate::store::fold::records::fixture::put(
            &ix,
            "a",
            1,
            1_000,
            &Op::Send(Send {
                to: vec![crate::core::ids::Role::new("b").unwrap()],
                topic: "pay".into(),
                body: "pay 10".into(),
                action_required: true,
                addenda: [(
                    crate::core::ids::Role::new("b").unwrap(),
                    "by friday".to_owned(),
                )]
                .into(),
                ..Send::default()
            }),
        );
        assert!(
            ix.write(|tx| crate::store::fold::message::refold_with(tx, &sent.id, None, None))
                .unwrap()
        );
        let id = sent.id.hex();
        assert!(
            ix.message_row(&id).unwrap().is_some(),
            "the row reads whole"
        );
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                &format!("UPDATE messages SET {column} = ?1 WHERE id = ?2"),
                [value, &id],
            )
            .unwrap();
        let read = ix.message_row(&id);
        (id, read)
    }

    #[test]
    fn rows_read_together_are_the_rows_read_one_by_one() {
        use crate::core::op::{Op, Send};
        let dir = tempfile::tempdir().unwrap();
        let ix = Index::open(&Index::path_in(dir.path()), &"c".repeat(64)).unwrap();
        let ids: Vec<String> = (1..=3)
            .map(|seq| {
                let sent = crate::store::fold::records::fixture::put(
                    &ix,
                    "a",
                    seq,
                    1_000 * seq as i64,
                    &Op::Send(Send {
                        to: vec![crate::core::ids::Role::new("b").unwrap()],
                        topic: format!("t{seq}"),
                        body: format!("body {seq}"),
                        ..Send::default()
                    }),
                );
                assert!(
                    ix.write(|tx| crate::store::fold::message::refold_with(
                        tx, &sent.id, None, None
                    ))
                    .unwrap()
                );
                sent.id.hex()
            })
            .collect();
        // Rows as text, in a set order.
        let sorted = |rows: Vec<MessageRow>| {
            let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
            v.sort();
            v
        };
        let missing = "f".repeat(64);
        let asked = [ids[2].as_str(), missing.as_str(), ids[0].as_str()];
        let together = sorted(ix.message_rows(&asked).unwrap());
        let alone = sorted(
            [&ids[2], &ids[0]]
                .iter()
                .map(|id| ix.message_row(id).unwrap().unwrap())
                .collect(),
        );
        assert_eq!(together, alone);
        assert!(ix.message_rows(&[]).unwrap().is_empty());
        // The same rows by their place in the index; a rowid of no row
        // gives none.
        let at: Vec<(i64, &str)> = [&ids[2], &ids[0]]
            .iter()
            .map(|id| {
                let row = ix
                    .scalar("SELECT rowid FROM messages WHERE id = ?1", [id.as_str()])
                    .unwrap();
                (row, id.as_str())
            })
            .chain([(i64::MAX, missing.as_str())])
            .collect();
        let by_row = sorted(
            ix.message_rows_at(&at)
                .unwrap()
                .into_iter()
                .flatten()
                .collect(),
        );
        assert_eq!(by_row, alone);
        assert!(ix.message_rows_at(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_lone_recipient_is_read_as_the_parser_reads_it() {
        for to in [
            r#"["backend"]"#,
            r#"["a","b"]"#,
            r#"["a\u0062"]"#,
            r#"["b\"]"#,
            "[]",
            r#"[ "b" ]"#,
        ] {
            let parsed: Option<Vec<String>> = serde_json::from_str(to).ok();
            match lone_recipient(to) {
                Some(role) => assert_eq!(parsed, Some(vec![role.to_owned()]), "{to}"),
                None => assert!(
                    parsed.is_none_or(|p| p.len() != 1 || to != format!("[\"{}\"]", p[0])),
                    "{to} names one role plainly and should take the short way"
                ),
            }
        }
    }

    #[test]
    fn a_stored_value_that_does_not_decode_fails_the_read_naming_its_column() {
        for (column, bad) in [
            ("to_json", "[\"b\""),
            ("addenda", "{not json"),
            ("voters", "\"b\""),
            ("acks", "{"),
            ("to_json", "[\"Not A Role\"]"),
            ("from_role", "Not A Role"),
            ("reply_to", "abc"),
            ("kind", "gossip"),
            ("status", "closed"),
        ] {
            let (id, read) = read_with(column, bad);
            let err = match read {
                Ok(row) => panic!("{column} = {bad:?} read as {row:?}"),
                Err(e) => e.to_string(),
            };
            assert!(
                err.contains(&format!("column messages.{column} of row {id}"))
                    && err.contains("countersign reindex"),
                "{err}"
            );
        }
    }

    #[test]
    fn an_index_file_from_before_gains_each_messages_current_body_row_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = Index::path_in(dir.path());
        drop(Index::open(&path, "c").unwrap());
        let id = format!("{:064x}", 7);
        {
            // A message revised once, as an index file made before held it:
            // two body rows, the newer one current, and no `body_row` (nor
            // the index on it).
            let c = rusqlite::Connection::open(&path).unwrap();
            c.execute_batch(
                "DROP INDEX messages_body_row; ALTER TABLE messages DROP COLUMN body_row; \
                 PRAGMA user_version = 0",
            )
            .unwrap();
            c.execute(
                "INSERT INTO messages(id, n, from_role, to_json, multi, topic, action_required, \
                 decision_requested, ms, c, body_sha256, body_bytes, body_chars, last_move_ms) \
                 VALUES (?1, 1, 'a', '[\"b\"]', 0, 't', 0, 0, 1, 0, '', 3, 3, 1)",
                [&id],
            )
            .unwrap();
            for body in ["first", "second"] {
                c.execute(
                    "INSERT INTO bodies(message_id, topic, body) VALUES (?1, 't', ?2)",
                    [&id, body],
                )
                .unwrap();
            }
        }
        let ix = Index::open(&path, "c").unwrap();
        let rows = ix.messages_matching(&MessageFilter::default(), 5).unwrap();
        assert_eq!(
            rows.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
            ["second"]
        );
        let indexed: i64 = ix
            .conn()
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'messages_body_row'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 1, "the index on the new column is made too");
    }

    #[test]
    fn like_escapes_wildcards() {
        assert_eq!(like_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }

    #[test]
    fn a_quiet_roles_page_costs_what_its_own_messages_cost_not_the_channels() {
        let mut ix = Index::in_memory("c").unwrap();
        let put = |ix: &Index, id: usize, from: &str, to: &str| {
            let id_hex = format!("{id:064x}");
            ix.conn()
                .execute(
                    "INSERT INTO messages(id, n, from_role, to_json, multi, topic, \
                     action_required, decision_requested, ms, c, body_sha256, body_bytes, \
                     body_chars, last_move_ms) \
                     VALUES (?1, ?2, ?3, json_array(?4), 0, 't', 0, 0, ?2, 0, '', 0, 0, ?2)",
                    params![id_hex, id as i64, from, to],
                )
                .unwrap();
            ix.conn()
                .execute(
                    "INSERT INTO bodies(message_id, topic, body) VALUES (?1, 't', 'b')",
                    [&id_hex],
                )
                .unwrap();
            ix.conn()
                .execute(
                    "UPDATE messages SET body_row = last_insert_rowid() WHERE id = ?1",
                    [&id_hex],
                )
                .unwrap();
            ix.conn()
                .execute(
                    "INSERT INTO deliveries(role, message_id, ms, c, deleted, n) \
                     VALUES (?1, ?2, ?3, 0, 0, ?3)",
                    params![to, id_hex, id as i64],
                )
                .unwrap();
        };
        // The quiet roles wrote and were written to first; the busy ones since.
        for id in 0..10 {
            put(&ix, id, "quiet", "seldom");
        }
        for id in 10..20_010 {
            put(&ix, id, "busy", "often");
        }
        let page = |ix: &mut Index, f: MessageFilter| {
            let work = ix.count_work().unwrap();
            let rows = ix.messages_matching(&f, 5).unwrap();
            assert_eq!(rows.len(), 6);
            assert_eq!(rows[0].id.hex(), format!("{:064x}", 9), "newest first");
            work.instructions()
        };
        // Six rows cost a few hundred SQLite instructions (counted per
        // thousand); walking past the 20,000 newer ones costs a hundred
        // times more.
        let by_author = page(
            &mut ix,
            MessageFilter {
                from_role: Some("quiet".to_owned()),
                ..MessageFilter::default()
            },
        );
        assert!(by_author < 10_000, "{by_author} instructions by author");
        let by_recipient = page(
            &mut ix,
            MessageFilter {
                to_role: Some("seldom".to_owned()),
                ..MessageFilter::default()
            },
        );
        assert!(
            by_recipient < 10_000,
            "{by_recipient} instructions by recipient"
        );
    }
}
