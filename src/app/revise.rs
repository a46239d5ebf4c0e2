//! revise_message: the author re-issues a message's text under the same id.
//!
//! Votes are bound to the body's digest, so a revision makes every earlier
//! vote stale by itself; this module reports which ones went stale.

use serde_json::{Value, json};

use super::body::op_body;
use super::lifecycle::live_message;
use super::refusal::{AppError, AppResult, check_length, check_one_line};
use super::send::{NOTE_MAX, TOPIC_HINT, TOPIC_MAX};
use super::session::Session;
use crate::core::message::Message;
use crate::core::op::{Op, Revise};
use crate::core::rules::{self, Verdict};
use crate::core::timestamp::format_rfc3339;
use crate::store::body::message_body;
use crate::store::message::load_message;

/// What revise_message was asked to do.
#[derive(Clone, Debug, Default)]
pub struct ReviseRequest {
    /// The message (id prefix).
    pub message_id: String,
    /// The new body (empty with `body_ref`).
    pub body: String,
    /// A sealed upload (id prefix) whose text is the new body.
    pub body_ref: Option<String>,
    /// A new topic (`None` keeps the current one).
    pub topic: Option<String>,
    /// Why.
    pub note: Option<String>,
}

/// Re-issues the body (and maybe the topic) of the caller's own message.
pub fn revise_message(s: &mut Session, req: ReviseRequest) -> AppResult<Value> {
    let me = s.role()?;
    let topic = match &req.topic {
        None => None,
        Some(t) if t.trim().is_empty() => {
            return Err(AppError::value(
                "'topic' cannot be empty — omit it to keep the current topic",
            ));
        }
        Some(t) => {
            let t = t.trim().to_owned();
            check_length("topic", &t, TOPIC_MAX)?;
            check_one_line("topic", &t, TOPIC_HINT)?;
            Some(t)
        }
    };
    if let Some(n) = &req.note {
        check_length("note", n, NOTE_MAX)?;
    }
    if req.body.is_empty() && req.body_ref.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(AppError::value(
            "'body' is required — the full new text of the message (it replaces the old one), or \
             body_ref, a sealed upload",
        ));
    }
    // A sealed upload never changes, so the body resolved here is the body written.
    s.catch_up()?;
    let body = op_body(s.index(), req.body.clone(), req.body_ref.as_deref())?;
    let writer = s.writer()?;
    let roster = s.roster();
    let (rec, before) = s.channel_mut().append_if(&writer, |ix| {
        let m = live_message(ix, &roster, &req.message_id)?;
        let op = Op::Revise(Revise {
            id: m.id,
            topic: topic.clone().filter(|t| *t != m.text.topic),
            body: body.body.clone(),
            body_ref: body.body_ref.clone(),
            note: req.note.clone(),
        });
        let verdict = rules::check(&m, &me, &op)?;
        Ok::<_, AppError>(((verdict == Verdict::Apply).then_some(op), m))
    })?;
    let after = load_message(s.index(), &roster, &before.id)?
        .ok_or_else(|| AppError::value(format!("message {} not found", req.message_id)))?;
    let mut out = json!({
        "id": after.id.short(),
        "unchanged": rec.is_none(),
        "revised_at": after.revised.map(|k| format_rfc3339(k.hlc.ms())),
    });
    if rec.is_some() {
        out["previous_body_sha256"] = json!(before.text.sha256);
        out["quenched_votes"] = json!(fresh_voters(&before));
    }
    // The lengths of an upload's text are the index's (the fold knows its digest only).
    let shown = message_body(s.index(), &after.text)?;
    out["body_sha256"] = json!(shown.sha256);
    out["body_length_bytes"] = json!(shown.bytes);
    out["body_length_chars"] = json!(shown.chars);
    Ok(out)
}

/// Roles whose vote was on the text as it stood.
fn fresh_voters(m: &Message) -> Vec<String> {
    m.votes
        .iter()
        .filter(|(_, v)| v.body_sha256 == m.text.sha256)
        .map(|(r, _)| r.to_string())
        .collect()
}
