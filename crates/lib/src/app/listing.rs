//! list_messages: the unranked, filtered view of the whole history.

use super::refusal::{AppError, AppResult, check_length, check_limit};
use super::rows::{
    FieldsArg, Listing, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView, Projected,
    Projection, listing, project,
};
use super::session::Session;
use crate::core::timestamp::parse_since;
use crate::core::vocab::{DebtStatus, Kind, WorkStatus};
use crate::store::index::MessageFilter;

/// Longest `topic` or `text` filter.
pub const FILTER_MAX: usize = 200;

/// The filters of list_messages.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ListFilter {
    /// Substring of the topic.
    #[serde(default)]
    pub topic: Option<String>,
    /// Only from this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only to this role.
    #[serde(default)]
    pub to_role: Option<String>,
    /// Only unread ones (per recipient with to_role).
    #[serde(default)]
    pub unread_only: bool,
    /// Only since this ISO-8601 time or date.
    #[serde(default)]
    pub since: Option<String>,
    /// Debt status: open or resolved.
    #[serde(default)]
    pub status: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// proposed, in_progress, done_local, needs_you, done or blocked.
    #[serde(default)]
    pub work_status: Option<String>,
    /// Substring of topic or body.
    #[serde(default)]
    pub text: Option<String>,
    /// Only proposals for this pin key.
    #[serde(default)]
    pub pin_key: Option<String>,
}

/// What list_messages was asked for: the tool's parameters.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ListRequest {
    /// Which messages.
    #[serde(flatten)]
    pub filter: ListFilter,
    /// How many of the newest, and which fields.
    #[serde(flatten)]
    pub page: super::request::Page<{ super::request::LIMIT_HUNDRED }>,
}

/// Non-deleted messages matching `f`, newest first.
pub fn list_messages(
    s: &mut Session,
    f: &ListFilter,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<MessageView>>> {
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let mut q = MessageFilter {
        unread_only: f.unread_only,
        ..MessageFilter::default()
    };
    if let Some(t) = &f.topic {
        check_length("topic", t, FILTER_MAX)?;
        q.topic = Some(t.clone());
    }
    if let Some(t) = &f.text {
        check_length("text", t, FILTER_MAX)?;
        q.text = Some(t.clone());
    }
    q.from_role = f.from_role.as_ref().map(|r| r.trim().to_owned());
    q.to_role = f.to_role.as_ref().map(|r| r.trim().to_owned());
    if let Some(since) = &f.since {
        q.since_ms = Some(parse_since(since).map_err(|e| AppError::value(e.to_string()))?);
    }
    if let Some(st) = &f.status {
        q.status = Some(
            DebtStatus::parse_field(st, "status").map_err(|e| AppError::value(e.to_string()))?,
        );
    }
    if let Some(k) = &f.kind {
        Kind::parse_field(k, "kind").map_err(|e| AppError::value(e.to_string()))?;
        q.kind = Some(k.clone());
    }
    if let Some(w) = &f.work_status {
        WorkStatus::parse_field(w, "work_status").map_err(|e| AppError::value(e.to_string()))?;
        q.work_status = Some(w.clone());
    }
    // The structural link only: a mention in the text is not a pin key.
    q.pin_key = f.pin_key.as_ref().map(|k| k.trim().to_owned());
    s.catch_up()?;
    let mut rows: Vec<MessageRow> = s.index().messages_matching(&q, limit)?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let out = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), MessageView::of(r, None)))
        .collect();
    Ok(listing(
        out,
        limit,
        overflow,
        "more messages match; narrow the filters (since, from_role, kind…) or raise 'limit' (at most 1000)",
    ))
}
