//! pin_set, pin_get, pin_list, pin_history: versioned rules.
//!
//! The approval rule is `Consent::check_pin_set`, run here before writing and
//! for `dry_run` (through the same path, writing nothing), and by the fold at
//! the record's place in the order. Pin rows are read from the index.

use serde_json::{Map, Value, json};

use super::body::op_body;
use super::refusal::{AppError, AppResult, check_length, check_one_line};
use super::retirement::retired_by;
use super::rows::{FieldsArg, Projection, project, short};
use super::send::PIN_KEY_MAX;
use super::session::{Named, Session, lookup};
use crate::core::consent::Blocked;
use crate::core::ids::RecordId;
use crate::core::op::{Op, PinSet};
use crate::core::rules::Refusal;
use crate::core::timestamp::format_rfc3339;
use crate::store::Index;
use crate::store::consent;
use crate::store::index::PinSelect;
use crate::store::message::load_message;

/// Longest pin title, in characters.
pub const TITLE_MAX: usize = 200;
/// Longest version label, in characters.
pub const VERSION_MAX: usize = 80;

/// The fields of a pin row `fields="headers"` keeps.
pub const PIN_HEADERS: &[&str] = &[
    "key",
    "title",
    "version",
    "updated_by",
    "updated_at",
    "approved_by",
    "body_sha256",
    "body_length_bytes",
];

/// Every field of a pin row.
pub const PIN_FIELDS: &[&str] = &[
    "id",
    "key",
    "title",
    "body",
    "version",
    "updated_by",
    "updated_at",
    "approved_by",
    "body_sha256",
    "body_length_bytes",
    "body_length_chars",
];

/// What pin_set was asked to do.
#[derive(Clone, Debug, Default)]
pub struct PinRequest {
    /// The key.
    pub key: String,
    /// The version's title.
    pub title: String,
    /// The version label.
    pub version: String,
    /// The text (empty with `body_ref`).
    pub body: String,
    /// A sealed upload (id prefix) whose text is the body.
    pub body_ref: Option<String>,
    /// The approving proposal (id prefix).
    pub approved_by: Option<String>,
    /// Check only; write nothing.
    pub dry_run: bool,
}

/// Adds a version to a pin, or (dry_run) says whether it would be accepted.
pub fn pin_set(s: &mut Session, req: PinRequest) -> AppResult<Value> {
    let _ = s.role()?;
    let key = required("key", &req.key, PIN_KEY_MAX)?;
    let title = required("title", &req.title, TITLE_MAX)?;
    if req.body.is_empty() && req.body_ref.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(AppError::value(
            "'body' is required — the verbatim text of this version (for a proposal's text, the \
             text that was agreed), or body_ref, a sealed upload",
        ));
    }
    // A sealed upload never changes, so the body resolved here is the body written.
    s.catch_up()?;
    let body = op_body(s.index(), req.body.clone(), req.body_ref.as_deref())?;
    let version = required("version", &req.version, VERSION_MAX)?;
    let roster = s.roster();
    let build = |ix: &Index| -> AppResult<Result<PinSet, Blocked>> {
        let approved_by = match &req.approved_by {
            // Rule 2 of the approval rule: a dry run reports it like the others.
            Some(raw) => match lookup(ix, Named::Message, "approved_by", raw) {
                Ok(Some(f)) => Some(f.id),
                Ok(None) => {
                    return Ok(Err(Blocked {
                        refusal: Refusal::Value(format!("approved_by message {raw} not found")),
                        missing_agrees: Vec::new(),
                        winner: None,
                    }));
                }
                Err(AppError::Value(why)) => {
                    return Ok(Err(Blocked {
                        refusal: Refusal::Value(why),
                        missing_agrees: Vec::new(),
                        winner: None,
                    }));
                }
                Err(e) => return Err(e),
            },
            None => None,
        };
        let mut state = consent::load_around(ix, &roster, approved_by, [key.clone()])?.consent;
        // A message that takes no part in consent (not a proposal) is still
        // named in the refusal, by its own fold.
        if let Some(id) = approved_by
            && !state.messages.contains_key(&id)
            && let Some(m) = load_message(ix, &roster, &id)?
        {
            state.messages.insert(id, m);
        }
        let set = PinSet {
            key: key.clone(),
            title: title.clone(),
            version: version.clone(),
            body: body.body.clone(),
            body_ref: body.body_ref.clone(),
            approved_by,
            base: state.head(&key).map(|h| h.key.id),
        };
        Ok(state.check_pin_set(&set).map(|()| set))
    };
    if req.dry_run {
        s.catch_up()?;
        return Ok(match build(s.index())? {
            Ok(set) => json!({
                "dry_run": true, "ok": true, "written": false,
                "would_write": {
                    "key": set.key, "version": set.version,
                    "body_sha256": body.sha256,
                    "body_length_bytes": body.length_bytes,
                    "body_length_chars": body.length_chars,
                },
            }),
            Err(b) => json!({
                "dry_run": true, "ok": false, "written": false,
                "problem": b.refusal.to_string(),
                "missing_agrees": b.missing_agrees,
            }),
        });
    }
    let writer = s.writer()?;
    let (rec, ()) = s.channel_mut().append(&writer, |ix| match build(ix)? {
        Ok(set) => Ok((Op::PinSet(set), ())),
        Err(b) => Err(match b.refusal {
            Refusal::Value(m) => AppError::value(m),
            Refusal::Permission(m) => AppError::permission(m),
        }),
    })?;
    let ix = s.index();
    let mut row = pin_row(ix, PinSelect::Record(&rec.id.hex()))?
        .into_iter()
        .next()
        .ok_or_else(|| AppError::value(format!("pin '{key}' was written but did not stand")))?;
    row.remove("id");
    row.remove("title");
    row.remove("body");
    row.insert("superseded".into(), json!(retired_by(ix, &rec.id)?));
    Ok(Value::Object(row))
}

fn required(field: &str, v: &str, max: usize) -> AppResult<String> {
    let v = v.trim();
    if v.is_empty() {
        return Err(AppError::value(format!("'{field}' is required")));
    }
    check_length(field, v, max)?;
    check_one_line(field, v, "; the text of the version belongs in 'body'")?;
    Ok(v.to_owned())
}

/// The current version of `key` with its body, or null.
pub fn pin_get(s: &mut Session, key: &str) -> AppResult<Value> {
    s.catch_up()?;
    let rows = pin_row(s.index(), PinSelect::Latest(key.trim()))?;
    Ok(rows.into_iter().next().map_or(Value::Null, Value::Object))
}

/// The current version of every key, without bodies, ordered by key.
pub fn pin_list(s: &mut Session) -> AppResult<Value> {
    s.catch_up()?;
    Ok(json!({ "result": current_pins(s.index())? }))
}

/// The current version of every key, without bodies (channel_status, status pins).
pub fn current_pins(ix: &Index) -> AppResult<Vec<Value>> {
    let rows = pin_row(ix, PinSelect::Current)?;
    Ok(rows
        .into_iter()
        .map(|mut r| {
            r.remove("body");
            Value::Object(r)
        })
        .collect())
}

/// Every version of `key`, newest first.
pub fn pin_history(s: &mut Session, key: &str, fields: Option<&FieldsArg>) -> AppResult<Value> {
    let proj = Projection::parse(fields, PIN_FIELDS, PIN_HEADERS)?;
    s.catch_up()?;
    let mut rows = pin_row(s.index(), PinSelect::History(key.trim()))?;
    rows.reverse();
    let out: Vec<Value> = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), r))
        .collect();
    Ok(json!({ "result": out }))
}

/// The pin versions `select` names, ordered by key and version.
fn pin_row(ix: &Index, select: PinSelect<'_>) -> AppResult<Vec<Map<String, Value>>> {
    Ok(ix
        .pin_versions(select)?
        .into_iter()
        .map(|v| {
            let mut m = Map::new();
            m.insert("id".into(), json!(short(&v.record)));
            m.insert("key".into(), json!(v.key));
            m.insert("title".into(), json!(v.title));
            m.insert("body".into(), json!(v.body));
            m.insert("version".into(), json!(v.version));
            m.insert("updated_by".into(), json!(v.role));
            m.insert("updated_at".into(), json!(format_rfc3339(v.ms)));
            m.insert(
                "approved_by".into(),
                json!(v.approved_by.as_deref().map(short)),
            );
            m.insert("body_sha256".into(), json!(v.sha256));
            m.insert("body_length_bytes".into(), json!(v.bytes));
            m.insert("body_length_chars".into(), json!(v.chars));
            m
        })
        .collect())
}

/// The id of the current version of `key`, if any.
pub fn head(ix: &Index, key: &str) -> AppResult<Option<RecordId>> {
    let id = ix.pin_head(key)?;
    Ok(id.as_deref().and_then(RecordId::parse))
}
