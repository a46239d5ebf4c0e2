//! read_inbox and mark_read: delivery and read state of the caller's mail.
//!
//! Reading records delivery (`opened`), never reading; only mark_read writes
//! `read`. Both are per recipient, so a multi-recipient message is read by
//! each of its roles separately.

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult, check_limit};
use super::rows::{
    FieldsArg, Listing, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView, Projected,
    Projection, listing, project,
};
use super::session::{Session, find};
use crate::core::ids::RecordId;
use crate::core::op::{Ids, Op};
use crate::core::timestamp::format_rfc3339;
use crate::store::Index;

/// What read_inbox was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ReadInboxRequest {
    /// Only messages not marked read.
    #[serde(default = "super::request::yes")]
    pub unread_only: bool,
    /// How many of the newest, and which fields.
    #[serde(flatten)]
    pub page: super::request::Page<{ super::request::LIMIT_FIFTY }>,
}

/// Messages delivered to the caller, newest `limit` of them, oldest first.
pub fn read_inbox(
    s: &mut Session,
    unread_only: bool,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<MessageView>>> {
    inbox(s, unread_only, limit, fields, true)
}

/// The caller's mail as [`read_inbox`] lists it, recording nothing: a
/// person looking at a role's inbox hands nothing over, so no counter of
/// the role's session changes.
pub fn peek_inbox(
    s: &mut Session,
    unread_only: bool,
    limit: i64,
) -> AppResult<Listing<Projected<MessageView>>> {
    inbox(s, unread_only, limit, None, false)
}

fn inbox(
    s: &mut Session,
    unread_only: bool,
    limit: i64,
    fields: Option<&FieldsArg>,
    deliver: bool,
) -> AppResult<Listing<Projected<MessageView>>> {
    let me = s.role()?;
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    s.catch_up()?;
    let mut rows: Vec<MessageRow> = s.index().inbox_page(me.as_str(), unread_only, limit)?;
    // The window is anchored at the newest mail: overflow drops the oldest.
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    rows.reverse();
    let unopened: Vec<RecordId> = rows
        .iter()
        .filter(|r| r.opened_ms.is_none())
        .map(|r| r.id)
        .collect();
    let out: Vec<_> = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), MessageView::of(r, Some(&me))))
        .collect();
    if deliver && !unopened.is_empty() {
        let writer = s.announce()?;
        s.channel_mut().append(&writer, |_| {
            Ok::<_, AppError>((Op::Opened(Ids { ids: unopened }), ()))
        })?;
    }
    Ok(listing(
        out,
        limit,
        overflow,
        "older messages matched but were left out (the newest are shown); page the rest with \
         list_messages(to_role=<you>, unread_only=true)",
    ))
}

/// What mark_read was asked to do: the tool's parameters.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct MarkReadRequest {
    /// One message (or message_ids).
    #[serde(default)]
    pub message_id: Option<String>,
    /// Several messages, all or none.
    #[serde(default)]
    pub message_ids: Option<Vec<String>>,
}

/// Marks one message (`message_id`) or a batch (`message_ids`) read.
pub fn mark_read(
    s: &mut Session,
    message_id: Option<&str>,
    message_ids: Option<&[String]>,
) -> AppResult<MarkRead> {
    let me = s.role()?;
    let (ids, single) = match (message_id, message_ids) {
        (Some(id), None) => (vec![id.to_owned()], true),
        (None, Some(ids)) => (ids.to_vec(), false),
        _ => {
            return Err(AppError::value(
                "pass exactly one of 'message_id' (one message) or 'message_ids' (a list)",
            ));
        }
    };
    if ids.is_empty() {
        return Ok(MarkRead::Many(Vec::new()));
    }
    let writer = s.announce()?;
    let (rec, found) = s.channel_mut().append_if(&writer, |ix| {
        let prefix = if single { "" } else { "nothing was marked: " };
        let field = if single { "message_id" } else { "message_ids" };
        let mut found: Vec<(String, RecordId, Option<i64>)> = Vec::new();
        for raw in &ids {
            let f = find(ix, field, raw).map_err(|e| AppError::value(format!("{prefix}{e}")))?;
            if f.deleted {
                return Err(AppError::value(format!(
                    "{prefix}message {raw} not found; list_messages or \
                     search_messages shows the ids this role can see"
                )));
            }
            let Some(read_ms) = delivery_read(ix, &f.id, me.as_str())? else {
                return Err(AppError::permission(format!(
                    "{prefix}message {raw} is not addressed to '{me}', and only its recipients can \
                     mark it read; mark only messages addressed to '{me}' (read_inbox lists them)"
                )));
            };
            if !found.iter().any(|(_, id, _)| *id == f.id) {
                found.push((raw.clone(), f.id, read_ms));
            }
        }
        let fresh: Vec<RecordId> = found
            .iter()
            .filter(|(_, _, r)| r.is_none())
            .map(|(_, id, _)| *id)
            .collect();
        let op = (!fresh.is_empty()).then_some(Op::Read(Ids { ids: fresh }));
        Ok::<_, AppError>((op, found))
    })?;
    let now = rec.map(|r| r.header.hlc.ms());
    let mut results: Vec<Marked> = found
        .iter()
        .map(|(_, id, read)| Marked {
            id: id.short(),
            read_at: read.or(now).map(format_rfc3339),
            already_read: read.is_some(),
        })
        .collect();
    Ok(match results.pop() {
        Some(one) if single => MarkRead::One(one),
        last => {
            results.extend(last);
            MarkRead::Many(results)
        }
    })
}

/// What mark_read answers: the one message of `message_id`, or a list for
/// `message_ids`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MarkRead {
    /// For `message_id`.
    One(Marked),
    /// For `message_ids`, in the order given (repeats once).
    Many(Vec<Marked>),
}

/// One message marked read.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Marked {
    /// Short id.
    pub id: String,
    /// When it was (or had already been) marked read.
    pub read_at: Option<String>,
    /// True if it was read before this call.
    pub already_read: bool,
}

/// `Some(read_ms)` if the message is delivered to `role`, `None` if not.
fn delivery_read(ix: &Index, id: &RecordId, role: &str) -> AppResult<Option<Option<i64>>> {
    Ok(ix.read_state(&id.hex(), role)?)
}
