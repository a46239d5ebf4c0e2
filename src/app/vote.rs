//! acknowledge, get_acknowledgements and awaiting_ack: decisions on messages.
//!
//! A vote is bound to the bytes it was cast on (the body digest) and to the
//! pin version its author saw; the tally and the approval rule live in
//! `core` (`Message::tally`, `Consent::check_pin_set`). This module checks a
//! vote before writing it and shapes the answers.

use serde_json::{Map, Value, json};

use super::lifecycle::live_message;
use super::pin;
use super::refusal::{AppError, AppResult, check_length, check_limit};
use super::retirement::retired_by;
use super::rows::{
    FieldsArg, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageJson as _, MessageRow, Projection, listing,
    project,
};
use super::send::NOTE_MAX;
use super::session::Session;
use crate::core::ids::Role;
use crate::core::message::Message;
use crate::core::op::{Ack, Op};
use crate::core::rules;
use crate::core::timestamp::format_rfc3339;
use crate::core::vocab::Decision;
use crate::store::channel::now_ms;

/// Records the caller's decision on a message.
pub fn acknowledge(
    s: &mut Session,
    message_id: &str,
    decision: &str,
    note: Option<String>,
    expect_body_sha256: Option<&str>,
) -> AppResult<Value> {
    let me = s.role()?;
    let decision = Decision::parse_field(decision.trim(), "decision")
        .map_err(|e| AppError::value(e.to_string()))?;
    if let Some(n) = &note {
        check_length("note", n, NOTE_MAX)?;
    }
    let expect = expect_body_sha256.map(|e| e.trim().to_lowercase());
    let writer = s.writer()?;
    let roster = s.roster();
    let (rec, id) = s.channel_mut().append(&writer, |ix| {
        let m = live_message(ix, &roster, message_id)?;
        if let Some(e) = &expect
            && *e != m.text.sha256
        {
            return Err(AppError::value(format!(
                "message {} was re-issued after you read it: its body_sha256 is now {} (you \
                 expected {e}) — read it again (message_history shows the revision), then vote on \
                 the text as it stands",
                m.id.short(),
                m.text.sha256
            )));
        }
        // The index's pins are the folded state as of this catch-up.
        let pin_head = match &m.send.pin_key {
            Some(k) => pin::head(ix, k)?,
            None => None,
        };
        let op = Op::Ack(Ack {
            id: m.id,
            decision,
            note: note.clone(),
            body_sha256: m.text.sha256.clone(),
            pin_head,
        });
        rules::check(&m, &me, &op)?;
        Ok::<_, AppError>((op, m.id))
    })?;
    let superseded = retired_by(s.index(), &rec.id)?;
    Ok(json!({
        "message_id": id.short(),
        "role": me,
        "decision": decision,
        "note": note,
        "created_at": format_rfc3339(rec.header.hlc.ms()),
        "superseded": superseded,
    }))
}

/// Tally fields `fields="headers"` keeps.
const TALLY_HEADERS: &[&str] = &[
    "agreed",
    "needed",
    "missing",
    "decisions",
    "voters",
    "from_non_voters",
    "from_non_recipients",
    "quenched_by_revision",
    "declared_dead_by",
];

/// Every field of get_acknowledgements.
const TALLY_FIELDS: &[&str] = &[
    "message_id",
    "acknowledgements",
    "agreed",
    "needed",
    "missing",
    "decisions",
    "voters",
    "declared_dead_by",
    "from_non_voters",
    "from_non_recipients",
    "quenched_by_revision",
    "roles",
    "roles_source",
    "body_sha256",
    "generated_at",
];

/// The consent state of one message.
pub fn get_acknowledgements(
    s: &mut Session,
    message_id: &str,
    fields: Option<&FieldsArg>,
) -> AppResult<Value> {
    let proj = Projection::parse(fields, TALLY_FIELDS, TALLY_HEADERS)?;
    s.catch_up()?;
    let roster = s.roster();
    let ix = s.index();
    let m = live_message(ix, &roster, message_id)?;
    let out = tally_json(&m, &roster);
    Ok(project(proj.as_ref(), out))
}

fn tally_json(m: &Message, roster: &[Role]) -> Map<String, Value> {
    let t = m.tally();
    let acks: Vec<Value> = m
        .votes
        .iter()
        .map(|(role, v)| {
            json!({
                "message_id": m.id.short(),
                "role": role,
                "decision": v.decision,
                "note": v.note,
                "created_at": format_rfc3339(v.key.hlc.ms()),
                "stale": v.body_sha256 != m.text.sha256,
            })
        })
        .collect();
    let mut o = Map::new();
    o.insert("message_id".into(), json!(m.id.short()));
    o.insert("acknowledgements".into(), Value::Array(acks));
    o.insert("agreed".into(), json!(t.agreed.len()));
    o.insert("needed".into(), json!(t.electorate.len()));
    o.insert("missing".into(), json!(t.missing));
    o.insert("decisions".into(), json!(t.decisions));
    o.insert("voters".into(), json!(t.electorate));
    if !t.void_by.is_empty() {
        o.insert("declared_dead_by".into(), json!(t.void_by));
    }
    if !t.outsiders.is_empty() {
        let declared = m.declared_voters().is_some();
        let key = if declared {
            "from_non_voters"
        } else {
            "from_non_recipients"
        };
        o.insert(key.into(), json!(t.outsiders));
    }
    if !t.stale.is_empty() {
        o.insert("quenched_by_revision".into(), json!(t.stale));
    }
    o.insert("roles".into(), json!(roster));
    o.insert("roles_source".into(), json!("channel-registry"));
    o.insert("body_sha256".into(), json!(m.text.sha256));
    o.insert("generated_at".into(), json!(format_rfc3339(now_ms())));
    o
}

/// Proposals waiting for `to_role`'s decision (default: the caller), oldest first.
pub fn awaiting_ack(
    s: &mut Session,
    to_role: Option<&str>,
    limit: i64,
    fields: Option<&FieldsArg>,
    from_role: Option<&str>,
    pin_key: Option<&str>,
) -> AppResult<Value> {
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let role = match to_role {
        Some(r) => r.trim().to_owned(),
        None => s.role()?.to_string(),
    };
    s.catch_up()?;
    let ix = s.index();
    let mut rows: Vec<MessageRow> = ix.awaiting_votes_page(
        &role,
        from_role.map(str::trim),
        pin_key.map(str::trim),
        limit,
    )?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let now = now_ms();
    let viewer = Role::new(&role).ok();
    let mut out = Vec::new();
    for r in &rows {
        let mut row = r.with_ages(r.to_json(viewer.as_ref()), now);
        row.insert("obligation".into(), obligation(r));
        out.push(project(proj.as_ref(), row));
    }
    let mut env = listing(
        out,
        limit,
        overflow,
        "more proposals wait; raise 'limit' (at most 1000)",
    );
    env["generated_at"] = json!(format_rfc3339(now));
    Ok(env)
}

/// The debt side of a proposal that is also a debt, else null.
fn obligation(r: &MessageRow) -> Value {
    if !r.action_required {
        return Value::Null;
    }
    json!({
        "status": r.status,
        "resolved_by": r.resolved_by,
        "resolved_at": r.resolved_ms.map(format_rfc3339),
        "confirmed": r.confirmed,
    })
}
