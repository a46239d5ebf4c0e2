//! revise_message: the author re-issues a message's text under the same id.
//!
//! Votes are bound to the body's digest, so a revision makes every earlier
//! vote stale by itself; this module reports which ones went stale.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::body::op_body;
use super::lifecycle::live_message;
use super::refusal::{AppError, AppResult, check_length, check_one_line};
use super::send::{NOTE_MAX, TOPIC_HINT, TOPIC_MAX};
use super::session::Session;
use crate::core::message::Message;
use crate::core::op::{Op, Revise};
use crate::core::rules::{self, Verdict};
use crate::core::timestamp::format_rfc3339;
use crate::store::fold::body::message_body;
use crate::store::fold::message::load_message;

/// What revise_message was asked to do: the tool's parameters.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct ReviseRequest {
    /// Your message.
    pub message_id: String,
    /// The whole new body (or body_ref).
    #[serde(default)]
    pub body: String,
    /// Instead of body: a sealed upload's id.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// A new topic (omit to keep it).
    #[serde(default)]
    pub topic: Option<String>,
    /// What changed and why.
    #[serde(default)]
    pub note: Option<String>,
}

/// Re-issues the body (and maybe the topic) of the caller's own message.
pub fn revise_message(s: &mut Session, req: ReviseRequest) -> AppResult<Revision> {
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
    let writer = s.announce()?;
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
    let after = load_message(s.index(), &roster, &before.id)?.ok_or_else(|| {
        AppError::value(format!(
            "message {} not found; list_messages or \
             search_messages shows the ids this role can see",
            req.message_id
        ))
    })?;
    // The lengths of an upload's text are the index's (the fold knows its digest only).
    let shown = message_body(s.index(), &after.text)?;
    Ok(Revision {
        id: after.id.short(),
        unchanged: rec.is_none(),
        revised_at: after.revised.map(|k| format_rfc3339(k.hlc.ms())),
        previous_body_sha256: rec.is_some().then(|| before.text.sha256.clone()),
        quenched_votes: rec.is_some().then(|| fresh_voters(&before)),
        body_sha256: shown.sha256,
        body_length_bytes: shown.bytes,
        body_length_chars: shown.chars,
    })
}

/// What revise_message answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Revision {
    /// Short id.
    pub id: String,
    /// True if the text and topic were already these (nothing written).
    pub unchanged: bool,
    /// When it was last revised.
    pub revised_at: Option<String>,
    /// The digest of the text replaced (when written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_body_sha256: Option<String>,
    /// Roles whose votes on the old text no longer count (when written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quenched_votes: Option<Vec<String>>,
    /// sha256 of the text now.
    pub body_sha256: String,
    /// Its length in bytes.
    pub body_length_bytes: i64,
    /// Its length in characters.
    pub body_length_chars: i64,
}

/// Roles whose vote was on the text as it stood.
fn fresh_voters(m: &Message) -> Vec<String> {
    m.votes
        .iter()
        .filter(|(_, v)| v.body_sha256 == m.text.sha256)
        .map(|(r, _)| r.to_string())
        .collect()
}
