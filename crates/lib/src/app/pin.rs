//! pin_set, pin_get, pin_list, pin_history: versioned rules.
//!
//! The approval rule is `Consent::check_pin_set`, run here before writing and
//! for `dry_run` (through the same path, writing nothing), and by the fold at
//! the record's place in the order. Pin rows are read from the index.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::body::op_body;
use super::refusal::{AppError, AppResult, check_length, check_one_line};
use super::retirement::retired_by;
use super::rows::{FieldsArg, Listing, Projected, Projection, project, short};
use super::send::PIN_KEY_MAX;
use super::session::{Named, Session, lookup};
use crate::core::consent::Blocked;
use crate::core::ids::RecordId;
use crate::core::op::{Op, PinSet};
use crate::core::rules::Refusal;
use crate::core::timestamp::format_rfc3339;
use crate::store::Index;
use crate::store::fold::consent;
use crate::store::fold::message::load_message;
use crate::store::index::PinSelect;

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

/// What pin_set was asked to do: the tool's parameters.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct PinRequest {
    /// The pin key. team-charter, contract-version, glossary and any key once approved are
    /// protected.
    pub key: String,
    /// Title of this version (one line).
    pub title: String,
    /// A version label, e.g. "v3".
    pub version: String,
    /// The text (for an approved change, the agreed text), or body_ref.
    #[serde(default)]
    pub body: String,
    /// Instead of body: a sealed upload's id.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// The agreed proposal for this key; required on a protected key.
    #[serde(default)]
    pub approved_by: Option<String>,
    /// True: check only, write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Adds a version to a pin, or (dry_run) says whether it would be accepted.
pub fn pin_set(s: &mut Session, req: PinRequest) -> AppResult<PinWrite> {
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
                        refusal: Refusal::Value(format!(
                            "approved_by message {raw} not found; list_messages or \
                             search_messages shows the ids this role can see"
                        )),
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
        return Ok(PinWrite::DryRun(match build(s.index())? {
            Ok(set) => PinDryRun {
                dry_run: true,
                ok: true,
                written: false,
                would_write: Some(WouldWrite {
                    key: set.key,
                    version: set.version,
                    body_sha256: body.sha256,
                    body_length_bytes: body.length_bytes,
                    body_length_chars: body.length_chars,
                }),
                problem: None,
                missing_agrees: None,
            },
            Err(b) => PinDryRun {
                dry_run: true,
                ok: false,
                written: false,
                would_write: None,
                problem: Some(b.refusal.to_string()),
                missing_agrees: Some(b.missing_agrees),
            },
        }));
    }
    let writer = s.announce()?;
    let (rec, ()) = s.channel_mut().append(&writer, |ix| match build(ix)? {
        Ok(set) => Ok((Op::PinSet(set), ())),
        Err(b) => Err(match b.refusal {
            Refusal::Value(m) => AppError::value(m),
            Refusal::Permission(m) => AppError::permission(m),
        }),
    })?;
    let ix = s.index();
    let row = pin_row(ix, PinSelect::Record(&rec.id.hex()))?
        .into_iter()
        .next()
        .ok_or_else(|| {
            AppError::value(format!(
                "pin '{key}' was written but did not stand; pin_get shows the version of \
                 '{key}' that stands"
            ))
        })?;
    Ok(PinWrite::Written(PinWritten {
        body_length_chars: row.body_length_chars,
        key: row.key,
        body_length_bytes: row.body_length_bytes,
        body_sha256: row.body_sha256,
        version: row.version,
        updated_by: row.updated_by,
        updated_at: row.updated_at,
        approved_by: row.approved_by,
        superseded: retired_by(ix, &rec.id)?,
    }))
}

/// What pin_set answers: the version written, or a dry run's verdict.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PinWrite {
    /// The version written (without id, title and body), with what it retired.
    Written(PinWritten),
    /// `dry_run=true`: what would happen.
    DryRun(PinDryRun),
}

/// pin_set's answer to `dry_run=true`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PinDryRun {
    /// Always true.
    pub dry_run: bool,
    /// Whether the write would be allowed.
    pub ok: bool,
    /// Always false.
    pub written: bool,
    /// What would be written, when allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_write: Option<WouldWrite>,
    /// Why not, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Agrees still missing, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub missing_agrees: Option<Vec<crate::core::ids::Role>>,
}

/// The version a dry run would write.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WouldWrite {
    /// Pin key.
    pub key: String,
    /// Version label.
    pub version: String,
    /// sha256 of the body.
    pub body_sha256: String,
    /// Body length in bytes.
    pub body_length_bytes: u64,
    /// Body length in characters.
    pub body_length_chars: u64,
}

/// One version of a pin, whole (pin_get, pin_history).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PinVersion {
    /// Short id of the record.
    pub id: String,
    /// Pin key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Verbatim text.
    pub body: String,
    /// Version label.
    pub version: String,
    /// The role that wrote it.
    pub updated_by: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Short id of the approving proposal.
    pub approved_by: Option<String>,
    /// sha256 of the body.
    pub body_sha256: String,
    /// Body length in bytes.
    pub body_length_bytes: i64,
    /// Body length in characters.
    pub body_length_chars: i64,
}

impl super::rows::Row for PinVersion {}

// The field order of the two shapes below is the wire order of the versions
// before typed results, where fields were taken out of a preserve_order JSON
// map (a swap-remove moves the last field into the hole); it is kept so that
// answers stay byte for byte what they were.

/// The current version of a pin without its body (pin_list, channel_status,
/// `countersign status --view pins`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PinSummary {
    /// Short id of the record.
    pub id: String,
    /// Pin key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Body length in characters.
    pub body_length_chars: i64,
    /// Version label.
    pub version: String,
    /// The role that wrote it.
    pub updated_by: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Short id of the approving proposal.
    pub approved_by: Option<String>,
    /// sha256 of the body.
    pub body_sha256: String,
    /// Body length in bytes.
    pub body_length_bytes: i64,
}

impl From<PinVersion> for PinSummary {
    fn from(v: PinVersion) -> Self {
        Self {
            id: v.id,
            key: v.key,
            title: v.title,
            body_length_chars: v.body_length_chars,
            version: v.version,
            updated_by: v.updated_by,
            updated_at: v.updated_at,
            approved_by: v.approved_by,
            body_sha256: v.body_sha256,
            body_length_bytes: v.body_length_bytes,
        }
    }
}

/// The version pin_set wrote, with the messages it retired.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PinWritten {
    /// Body length in characters.
    pub body_length_chars: i64,
    /// Pin key.
    pub key: String,
    /// Body length in bytes.
    pub body_length_bytes: i64,
    /// sha256 of the body.
    pub body_sha256: String,
    /// Version label.
    pub version: String,
    /// The role that wrote it.
    pub updated_by: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Short id of the approving proposal.
    pub approved_by: Option<String>,
    /// Short ids of the messages this write retired.
    pub superseded: Vec<String>,
}

/// What pin_get answers: the current version, or nothing.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct PinLookup(pub Option<PinVersion>);

fn required(field: &str, v: &str, max: usize) -> AppResult<String> {
    let v = v.trim();
    if v.is_empty() {
        return Err(AppError::value(format!(
            "'{field}' is required; pass one line of at most {max} characters"
        )));
    }
    check_length(field, v, max)?;
    check_one_line(field, v, "; the text of the version belongs in 'body'")?;
    Ok(v.to_owned())
}

/// What pin_get was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct PinKeyRequest {
    /// The pin key.
    pub key: String,
}

/// The current version of `key` with its body, or null.
pub fn pin_get(s: &mut Session, key: &str) -> AppResult<PinLookup> {
    s.catch_up()?;
    let rows = pin_row(s.index(), PinSelect::Latest(key.trim()))?;
    Ok(PinLookup(rows.into_iter().next()))
}

/// The current version of every key, without bodies, ordered by key.
pub fn pin_list(s: &mut Session) -> AppResult<Listing<PinSummary>> {
    s.catch_up()?;
    Ok(Listing::whole(current_pins(s.index())?))
}

/// The current version of every key, without bodies (channel_status, status pins).
pub fn current_pins(ix: &Index) -> AppResult<Vec<PinSummary>> {
    let rows = pin_row(ix, PinSelect::Current)?;
    Ok(rows.into_iter().map(PinSummary::from).collect())
}

/// What pin_history was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct PinHistoryRequest {
    /// The pin key.
    pub key: String,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Every version of `key`, newest first.
pub fn pin_history(
    s: &mut Session,
    key: &str,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<PinVersion>>> {
    let proj = Projection::parse(fields, PIN_FIELDS, PIN_HEADERS)?;
    s.catch_up()?;
    let mut rows = pin_row(s.index(), PinSelect::History(key.trim()))?;
    rows.reverse();
    let out = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), r))
        .collect();
    Ok(Listing::whole(out))
}

/// Every version of `key` with its text, newest first (the board's pin page
/// and `countersign pin show`), after catching up with the folder.
pub fn versions(s: &mut Session, key: &str) -> AppResult<Vec<PinVersion>> {
    s.catch_up()?;
    let mut rows = pin_row(s.index(), PinSelect::History(key.trim()))?;
    rows.reverse();
    Ok(rows)
}

/// The pin versions `select` names, ordered by key and version.
fn pin_row(ix: &Index, select: PinSelect<'_>) -> AppResult<Vec<PinVersion>> {
    Ok(ix
        .pin_versions(select)?
        .into_iter()
        .map(|v| PinVersion {
            id: short(&v.record),
            key: v.key,
            title: v.title,
            body: v.body,
            version: v.version,
            updated_by: v.role,
            updated_at: format_rfc3339(v.ms),
            approved_by: v.approved_by.as_deref().map(short),
            body_sha256: v.sha256,
            body_length_bytes: v.bytes,
            body_length_chars: v.chars,
        })
        .collect())
}

/// The id of the current version of `key`, if any.
pub fn head(ix: &Index, key: &str) -> AppResult<Option<RecordId>> {
    let id = ix.pin_head(key)?;
    Ok(id.as_deref().and_then(RecordId::parse))
}
