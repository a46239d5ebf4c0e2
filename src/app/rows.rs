//! Message rows as agents see them: the wire shape, `fields` projection and
//! the listing envelope with its truncation marker.
//!
//! Owns the mapping from index rows to JSON (ids shortened, times in RFC 3339,
//! `to` a string for one recipient and a sorted list for several). It does no
//! filtering of its own; the queries are the index's (`store::index`).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::refusal::{AppError, AppResult};
use crate::core::ids::{MESSAGE_ID_LEN, Role};
use crate::core::timestamp::{days_between, format_rfc3339};
pub use crate::store::index::MessageRow;

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

/// The wire shape of a message row (the row itself is the index's).
pub trait MessageJson {
    /// Adds `age_days` (since creation) and `idle_days` (since the last move).
    fn with_ages(&self, row: Map<String, Value>, now_ms: i64) -> Map<String, Value>;

    /// The full wire shape. `viewer` adds the viewer's own `addendum`.
    fn to_json(&self, viewer: Option<&Role>) -> Map<String, Value>;
}

impl MessageJson for MessageRow {
    fn with_ages(&self, mut row: Map<String, Value>, now_ms: i64) -> Map<String, Value> {
        row.insert("age_days".into(), json!(days_between(self.ms, now_ms)));
        row.insert(
            "idle_days".into(),
            json!(days_between(self.last_move_ms, now_ms)),
        );
        row
    }

    fn to_json(&self, viewer: Option<&Role>) -> Map<String, Value> {
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
