//! Message rows as agents see them: the wire shape, `fields` projection and
//! the listing envelope with its truncation marker.
//!
//! Owns the mapping from index rows to [`MessageView`] (ids shortened, times
//! in RFC 3339, `to` a string for one recipient and a sorted list for
//! several), the result shapes every listing shares ([`Listing`],
//! [`Projected`]) and their schemas. It does no filtering of its own; the
//! queries are the index's (`store::index`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::refusal::{AppError, AppResult};
use crate::core::ids::{MESSAGE_ID_LEN, RecordId, Role};
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

impl MessageView {
    /// The full wire shape of `row`. `viewer` adds the viewer's own `addendum`.
    /// The row is taken, not borrowed: its texts (the body above all) move
    /// into the view instead of being copied.
    pub fn of(row: MessageRow, viewer: Option<&Role>) -> Self {
        let to = if row.is_multi() {
            Recipients::Many(row.to.iter().map(Role::to_string).collect())
        } else {
            Recipients::One(row.to.first().map(Role::to_string))
        };
        let addendum = viewer.map(|v| row.addenda.get(v).cloned());
        Self {
            id: row.short_id(),
            from: row.from.to_string(),
            to,
            topic: row.topic,
            body: row.body,
            action_required: row.action_required,
            reply_to: row.reply_to.as_ref().map(RecordId::short),
            created_at: format_rfc3339(row.ms),
            read_at: row.read_ms.map(format_rfc3339),
            status: row.status.map(|s| s.as_str().to_owned()),
            resolved_by: row.resolved_by.as_ref().map(Role::to_string),
            resolved_at: row.resolved_ms.map(format_rfc3339),
            resolution_note: row.resolution_note,
            kind: row.kind.map(|k| k.as_str().to_owned()),
            work_status: row.work_status.map(|w| w.as_str().to_owned()),
            blocked_by: row.blocked_by.as_ref().map(RecordId::short),
            deleted_at: row.deleted_ms.map(format_rfc3339),
            pin_key: row.pin_key,
            about_message_id: row.about.as_ref().map(RecordId::short),
            voters: row
                .voters
                .as_ref()
                .map(|v| v.iter().map(Role::to_string).collect()),
            superseded_at: row.retired_ms.map(format_rfc3339),
            opened_at: row.opened_ms.map(format_rfc3339),
            addenda: row
                .addenda
                .into_iter()
                .map(|(r, t)| (r.to_string(), t))
                .collect(),
            addendum,
            decision_requested: row.decision_requested,
            revised_at: row.revised_ms.map(format_rfc3339),
            body_sha256: Some(row.body_sha256),
            body_length_bytes: Some(row.body_bytes),
            body_length_chars: Some(row.body_chars),
            acks: row.acks,
            round_conflict: row
                .round_conflict
                .as_ref()
                .map(|w| RoundConflict { winner: w.short() }),
            age_days: None,
            idle_days: None,
            snippet: None,
            match_: None,
            obligation: None,
        }
    }

    /// [`Self::of`] with `age_days` (since creation) and `idle_days`
    /// (since the last move).
    pub fn aged(row: MessageRow, viewer: Option<&Role>, now_ms: i64) -> Self {
        Self {
            age_days: Some(days_between(row.ms, now_ms)),
            idle_days: Some(days_between(row.last_move_ms, now_ms)),
            ..Self::of(row, viewer)
        }
    }
}

/// One message as agents see it (the rows of read_inbox, list_messages,
/// search_messages, get_thread, open_obligations, ready_work, awaiting_ack,
/// and a reply wait_for_reply hands over). Fields serialize in this order.
/// Lean: a field that would be null or empty is left out (absent means
/// null), and so are the body's hash and lengths of a message no vote or
/// revision binds to, unless `fields` names them ([`Row::plain`]).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MessageView {
    /// Short id.
    pub id: String,
    /// Author role.
    pub from: String,
    /// One recipient, or the sorted list of several.
    pub to: Recipients,
    /// Subject line.
    pub topic: String,
    /// Shared body.
    pub body: String,
    /// A debt?
    pub action_required: bool,
    /// Short id of the parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// The viewer's (or single recipient's) read time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<String>,
    /// Debt status (`open`, `resolved`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Who resolved the debt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<String>,
    /// When it was resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    /// The resolution's note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_note: Option<String>,
    /// Kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Current work status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_status: Option<String>,
    /// Short id of the blocking debt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// Tombstone time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<String>,
    /// The pin key of a proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin_key: Option<String>,
    /// Short id of the message this one is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about_message_id: Option<String>,
    /// The declared electorate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voters: Option<Vec<String>>,
    /// When it was retired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<String>,
    /// The viewer's (or single recipient's) first delivery time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<String>,
    /// Per-recipient tails.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub addenda: BTreeMap<String, String>,
    /// The viewer's own tail (only for a viewer).
    #[serde(skip_serializing_if = "is_null_or_none")]
    pub addendum: Option<Option<String>>,
    /// Whether a decision is asked for.
    pub decision_requested: bool,
    /// When it was last revised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revised_at: Option<String>,
    /// sha256 of the body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_sha256: Option<String>,
    /// Body length in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_length_bytes: Option<i64>,
    /// Body length in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_length_chars: Option<i64>,
    /// The consent tally of a proposal, as the index keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acks: Option<Value>,
    /// For a second round on a key: the round that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_conflict: Option<RoundConflict>,
    /// Days since creation (debt listings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_days: Option<f64>,
    /// Days since the last move (debt listings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_days: Option<f64>,
    /// The matching excerpt (search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// How it matched: `fts` or `substring` (search).
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_: Option<String>,
    /// The debt side of a proposal (awaiting_ack); null when it is no debt.
    #[serde(skip_serializing_if = "is_null_or_none")]
    pub obligation: Option<Option<Obligation>>,
}

/// `to`: a string for one recipient, a sorted list for several.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Recipients {
    /// The one recipient.
    One(Option<String>),
    /// Several, sorted.
    Many(Vec<String>),
}

/// The round that holds a pin key.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RoundConflict {
    /// Short id of the holding round.
    pub winner: String,
}

/// The debt state of a proposal that is also a debt.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Obligation {
    /// `open` or `resolved`.
    pub status: Option<String>,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    /// When.
    pub resolved_at: Option<String>,
    /// Whether the resolution is confirmed.
    pub confirmed: bool,
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

/// A validated projection: the names in the order asked, each marked when it
/// was named itself (not through `headers`).
#[derive(Clone, Debug)]
pub struct Projection(Vec<(String, bool)>);

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
                "headers" => out.extend(headers.iter().map(|s| ((*s).to_owned(), false))),
                "from_role" => out.push(("from".into(), true)),
                "to_role" => out.push(("to".into(), true)),
                other if allowed.contains(&other) => out.push((n, true)),
                _ => unknown.push(n),
            }
        }
        if !unknown.is_empty() {
            return Err(AppError::value(format!(
                "unknown field(s) {unknown:?} in 'fields'; pass only allowed ones, {allowed:?}, \
                 or \"headers\""
            )));
        }
        // Once each, where first asked; named if it was named anywhere.
        let mut once: Vec<(String, bool)> = Vec::with_capacity(out.len());
        for (name, named) in out {
            match once.iter_mut().find(|(n, _)| *n == name) {
                Some(seen) => seen.1 |= named,
                None => once.push((name, named)),
            }
        }
        Ok(Some(Self(once)))
    }

    /// The projected names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// Keeps only the projected keys of the row. A name asked for by
    /// itself is always there, null when the row has no value for it; one
    /// that came with `headers` only when it has a value (absent means null).
    pub fn apply(&self, row: Map<String, Value>) -> Map<String, Value> {
        let mut row = row;
        let mut out = Map::new();
        for (k, named) in &self.0 {
            match row.remove(k) {
                Some(v) => {
                    out.insert(k.clone(), v);
                }
                None if *named => {
                    out.insert(k.clone(), Value::Null);
                }
                None => {}
            }
        }
        out
    }
}

/// A row of `T` cut down to the names a `fields` parameter asked for, or
/// whole when it is absent. Its schema is `T`'s with every property
/// optional, so it admits every projection.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Projected<T> {
    /// No projection: the typed row.
    Whole(T),
    /// The fields asked for, in the order asked.
    Cut(Map<String, Value>),
}

impl<T> Projected<T> {
    /// The typed row, when no projection cut it.
    pub fn whole(&self) -> Option<&T> {
        match self {
            Self::Whole(row) => Some(row),
            Self::Cut(_) => None,
        }
    }

    /// [`Self::whole`], by value.
    pub fn into_whole(self) -> Option<T> {
        match self {
            Self::Whole(row) => Some(row),
            Self::Cut(_) => None,
        }
    }
}

impl<T: JsonSchema> JsonSchema for Projected<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("{}Projected", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = T::json_schema(generator);
        schema.remove("required");
        schema
    }
}

/// A row a listing answers with.
pub trait Row: Serialize + Sized {
    /// The row as a listing answers it when `fields` does not choose:
    /// without what a reader can derive from the rest. `fields` can still
    /// name every field.
    fn plain(self) -> Self {
        self
    }
}

impl Row for MessageView {
    /// The hash and lengths of the body stay where something binds to them:
    /// a proposal (a vote names the body it read) and a revised body.
    fn plain(mut self) -> Self {
        let bound = self.kind.as_deref() == Some("proposal") || self.revised_at.is_some();
        if !bound {
            self.body_sha256 = None;
            self.body_length_bytes = None;
            self.body_length_chars = None;
        }
        self
    }
}

/// For a field whose null is left out as well as its absence.
fn is_null_or_none<T>(v: &Option<Option<T>>) -> bool {
    !matches!(v, Some(Some(_)))
}

/// Applies an optional projection to a typed row: its plain form
/// ([`Row::plain`]) when there is none.
pub fn project<T: Row>(p: Option<&Projection>, row: T) -> Projected<T> {
    let Some(p) = p else {
        return Projected::Whole(row.plain());
    };
    let Value::Object(map) = serde_json::to_value(&row).expect("rows serialize to JSON") else {
        unreachable!("rows are structs");
    };
    Projected::Cut(p.apply(map))
}

/// The listing envelope `{result: [...]}`, with `truncated` when more rows
/// matched than `limit`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Listing<R> {
    /// The rows.
    pub result: Vec<R>,
    /// Present when rows were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// Why and where a listing stopped.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Truncated {
    /// The limit applied.
    pub limit: usize,
    /// Rows returned.
    pub returned: usize,
    /// How to get the rest.
    pub note: String,
    /// `work` when a search ran out of budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A listing stamped with the time it was made.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DatedListing<R> {
    /// The rows and their truncation marker.
    #[serde(flatten)]
    pub listing: Listing<R>,
    /// RFC 3339.
    pub generated_at: String,
}

/// The listing of `rows` (callers fetch `limit + 1` and pass `overflow`).
pub fn listing<R>(rows: Vec<R>, limit: usize, overflow: bool, note: &str) -> Listing<R> {
    let returned = rows.len();
    Listing {
        result: rows,
        truncated: overflow.then(|| Truncated {
            limit,
            returned,
            note: note.to_owned(),
            reason: None,
        }),
    }
}

impl<R> Listing<R> {
    /// Every row, never truncated.
    pub fn whole(rows: Vec<R>) -> Self {
        Self {
            result: rows,
            truncated: None,
        }
    }
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
        assert!(headers.names().any(|n| n == "topic"));
        assert!(!headers.names().any(|n| n == "body"));
        let aliased = Projection::parse(
            Some(&FieldsArg::Many(vec!["from_role".into(), "to_role".into()])),
            MESSAGE_FIELDS,
            MESSAGE_HEADERS,
        )
        .unwrap()
        .unwrap();
        assert_eq!(aliased.names().collect::<Vec<_>>(), ["from", "to"]);
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
        let v = serde_json::to_value(listing(vec![1], 1, true, "n")).unwrap();
        assert_eq!(v["truncated"]["returned"], 1);
        let v = serde_json::to_value(listing(Vec::<i32>::new(), 5, false, "n")).unwrap();
        assert!(v.get("truncated").is_none());
    }
}
