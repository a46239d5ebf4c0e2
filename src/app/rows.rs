//! Message rows as agents see them: the wire shape, `fields` projection and
//! the listing envelope with its truncation marker.
//!
//! Owns the mapping from index rows to JSON (ids shortened, times in RFC 3339,
//! `to` a string for one recipient and a sorted list for several). It does no
//! filtering of its own; queries live with their tools.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::refusal::{AppError, AppResult};
use crate::core::ids::{MESSAGE_ID_LEN, Role};
use crate::core::timestamp::{days_between, format_rfc3339};

/// Columns every message query selects first, in [`MessageRow::from_sql`]'s order.
pub const MESSAGE_COLUMNS: &str = "m.id, m.from_role, m.to_json, m.topic, \
    (SELECT body FROM bodies b WHERE b.message_id = m.id ORDER BY b.rowid DESC LIMIT 1), \
    m.action_required, m.reply_to, m.kind, m.work_status, m.addenda, m.decision_requested, \
    m.ms, m.deleted_ms, m.body_sha256, m.body_bytes, m.body_chars, m.n, m.c, m.status, \
    m.resolved_by, m.resolved_ms, m.resolution_note, m.confirmed, m.blocked_by, m.last_move_ms, \
    m.pin_key, m.about, m.voters, m.retired_ms, m.revised_ms, m.acks, m.round_conflict";

/// Index of the first column a query selects after [`MESSAGE_COLUMNS`] and
/// the viewer's `read_ms, opened_ms`.
pub const AFTER_MESSAGE_COLUMNS: usize = 34;

/// The listing set of `fields="headers"`: everything but the bodies.
pub const MESSAGE_HEADERS: &[&str] = &[
    "id",
    "from",
    "to",
    "topic",
    "created_at",
    "kind",
    "work_status",
    "status",
    "action_required",
    "pin_key",
    "acks",
    "age_days",
    "idle_days",
    "snippet",
    "match",
    "obligation",
    "body_sha256",
    "body_length_bytes",
    "body_length_chars",
];

/// Every field a message row may carry.
pub const MESSAGE_FIELDS: &[&str] = &[
    "id",
    "from",
    "to",
    "topic",
    "body",
    "action_required",
    "reply_to",
    "created_at",
    "read_at",
    "status",
    "resolved_by",
    "resolved_at",
    "resolution_note",
    "kind",
    "work_status",
    "blocked_by",
    "deleted_at",
    "pin_key",
    "about_message_id",
    "voters",
    "superseded_at",
    "opened_at",
    "addenda",
    "addendum",
    "decision_requested",
    "revised_at",
    "recipients",
    "body_sha256",
    "body_length_bytes",
    "body_length_chars",
    "acks",
    "age_days",
    "idle_days",
    "snippet",
    "match",
    "obligation",
    "round_conflict",
];

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
    pub fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
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

    /// Adds `age_days` (since creation) and `idle_days` (since the last move).
    pub fn with_ages(&self, mut row: Map<String, Value>, now_ms: i64) -> Map<String, Value> {
        row.insert("age_days".into(), json!(days_between(self.ms, now_ms)));
        row.insert(
            "idle_days".into(),
            json!(days_between(self.last_move_ms, now_ms)),
        );
        row
    }

    /// The short id agents see.
    pub fn short_id(&self) -> String {
        short(&self.id)
    }

    /// True if more than one role received it.
    pub fn is_multi(&self) -> bool {
        self.to.len() > 1
    }

    /// The full wire shape. `viewer` adds the viewer's own `addendum`.
    pub fn to_json(&self, viewer: Option<&Role>) -> Map<String, Value> {
        let to = if self.is_multi() {
            json!(self.to)
        } else {
            json!(self.to.first())
        };
        let mut m = Map::new();
        m.insert("id".into(), json!(self.short_id()));
        m.insert("from".into(), json!(self.from));
        m.insert("to".into(), to);
        m.insert("topic".into(), json!(self.topic));
        m.insert("body".into(), json!(self.body));
        m.insert("action_required".into(), json!(self.action_required));
        m.insert(
            "reply_to".into(),
            json!(self.reply_to.as_deref().map(short)),
        );
        m.insert("created_at".into(), json!(format_rfc3339(self.ms)));
        m.insert("read_at".into(), json!(self.read_ms.map(format_rfc3339)));
        m.insert("status".into(), json!(self.status));
        m.insert("resolved_by".into(), json!(self.resolved_by));
        m.insert(
            "resolved_at".into(),
            json!(self.resolved_ms.map(format_rfc3339)),
        );
        m.insert("resolution_note".into(), json!(self.resolution_note));
        m.insert("kind".into(), json!(self.kind));
        m.insert("work_status".into(), json!(self.work_status));
        m.insert(
            "blocked_by".into(),
            json!(self.blocked_by.as_deref().map(short)),
        );
        m.insert(
            "deleted_at".into(),
            json!(self.deleted_ms.map(format_rfc3339)),
        );
        m.insert("pin_key".into(), json!(self.pin_key));
        m.insert(
            "about_message_id".into(),
            json!(self.about.as_deref().map(short)),
        );
        m.insert("voters".into(), json!(self.voters));
        m.insert(
            "superseded_at".into(),
            json!(self.retired_ms.map(format_rfc3339)),
        );
        m.insert(
            "opened_at".into(),
            json!(self.opened_ms.map(format_rfc3339)),
        );
        m.insert("addenda".into(), json!(self.addenda));
        if let Some(v) = viewer {
            m.insert("addendum".into(), json!(self.addenda.get(v.as_str())));
        }
        m.insert("decision_requested".into(), json!(self.decision_requested));
        m.insert(
            "revised_at".into(),
            json!(self.revised_ms.map(format_rfc3339)),
        );
        m.insert("body_sha256".into(), json!(self.body_sha256));
        m.insert("body_length_bytes".into(), json!(self.body_bytes));
        m.insert("body_length_chars".into(), json!(self.body_chars));
        if let Some(a) = &self.acks {
            m.insert("acks".into(), a.clone());
        }
        if let Some(w) = &self.round_conflict {
            m.insert("round_conflict".into(), json!({ "winner": short(w) }));
        }
        m
    }
}

/// The short (agent-facing) form of a full id.
pub fn short(full: &str) -> String {
    full.chars().take(MESSAGE_ID_LEN).collect()
}

/// The `fields` parameter: a list of names, or `"headers"`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum FieldsArg {
    /// One name (usually `"headers"`).
    One(String),
    /// Several names (`["headers"]` counts as `"headers"`).
    Many(Vec<String>),
}

/// A validated projection.
#[derive(Clone, Debug)]
pub struct Projection(Vec<String>);

impl Projection {
    /// Validates `fields` against `allowed`; `headers` expands to `headers`.
    pub fn parse(
        fields: Option<&FieldsArg>,
        allowed: &[&str],
        headers: &[&str],
    ) -> AppResult<Option<Self>> {
        let names: Vec<String> = match fields {
            None => return Ok(None),
            Some(FieldsArg::One(s)) => vec![s.clone()],
            Some(FieldsArg::Many(v)) => v.clone(),
        };
        if names.is_empty() {
            return Err(AppError::value(
                "'fields' cannot be empty — omit it for the full rows, or pass \"headers\"",
            ));
        }
        let mut out = Vec::new();
        let mut unknown = Vec::new();
        for n in names {
            let n = n.trim().to_owned();
            match n.as_str() {
                "headers" => out.extend(headers.iter().map(|s| (*s).to_owned())),
                "from_role" => out.push("from".into()),
                "to_role" => out.push("to".into()),
                other if allowed.contains(&other) => out.push(n),
                _ => unknown.push(n),
            }
        }
        if !unknown.is_empty() {
            return Err(AppError::value(format!(
                "unknown field(s) {unknown:?} — allowed: {allowed:?} or \"headers\""
            )));
        }
        out.dedup();
        Ok(Some(Self(out)))
    }

    /// Keeps only the projected keys present on the row.
    pub fn apply(&self, row: Map<String, Value>) -> Map<String, Value> {
        let mut row = row;
        let mut out = Map::new();
        for k in &self.0 {
            if let Some(v) = row.remove(k) {
                out.insert(k.clone(), v);
            }
        }
        out
    }
}

/// Applies an optional projection.
pub fn project(p: Option<&Projection>, row: Map<String, Value>) -> Value {
    Value::Object(match p {
        Some(p) => p.apply(row),
        None => row,
    })
}

/// The listing envelope `{result: [...]}`, with `truncated` when more rows
/// matched than `limit` (callers fetch `limit + 1` and pass `overflow`).
pub fn listing(rows: Vec<Value>, limit: usize, overflow: bool, note: &str) -> Value {
    let returned = rows.len();
    let mut env = Map::new();
    env.insert("result".into(), Value::Array(rows));
    if overflow {
        env.insert(
            "truncated".into(),
            json!({ "limit": limit, "returned": returned, "note": note }),
        );
    }
    Value::Object(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_rules() {
        let headers = Projection::parse(
            Some(&FieldsArg::One("headers".into())),
            MESSAGE_FIELDS,
            MESSAGE_HEADERS,
        )
        .unwrap()
        .unwrap();
        assert!(headers.0.contains(&"topic".to_owned()));
        assert!(!headers.0.contains(&"body".to_owned()));
        let aliased = Projection::parse(
            Some(&FieldsArg::Many(vec!["from_role".into(), "to_role".into()])),
            MESSAGE_FIELDS,
            MESSAGE_HEADERS,
        )
        .unwrap()
        .unwrap();
        assert_eq!(aliased.0, vec!["from", "to"]);
        let e = Projection::parse(
            Some(&FieldsArg::Many(vec![])),
            MESSAGE_FIELDS,
            MESSAGE_HEADERS,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("'fields' cannot be empty"), "{e}");
        let e = Projection::parse(
            Some(&FieldsArg::One("nope".into())),
            MESSAGE_FIELDS,
            MESSAGE_HEADERS,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("unknown field(s) [\"nope\"]"), "{e}");
    }

    #[test]
    fn envelope_marks_truncation() {
        let v = listing(vec![json!(1)], 1, true, "n");
        assert_eq!(v["truncated"]["returned"], 1);
        assert!(listing(vec![], 5, false, "n").get("truncated").is_none());
    }
}
