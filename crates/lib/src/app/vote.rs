//! acknowledge, get_acknowledgements and awaiting_ack: decisions on messages.
//!
//! A vote is bound to the bytes it was cast on (the body digest) and to the
//! pin version its author saw; the tally and the approval rule live in
//! `core` (`Message::tally`, `Consent::check_pin_set`). This module checks a
//! vote before writing it and shapes the answers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::lifecycle::live_message;
use super::pin;
use super::refusal::{AppError, AppResult, check_length, check_limit};
use super::retirement::retired_by;
use super::rows::{
    DatedListing, FieldsArg, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView, Obligation,
    Projected, Projection, listing, project,
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

/// What acknowledge was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AckRequest {
    /// The message (not your own).
    pub message_id: String,
    /// agree, reject, needs_changes or void (the subject is gone).
    pub decision: String,
    /// Why.
    #[serde(default)]
    pub note: Option<String>,
    /// The body_sha256 you read: refused if the text changed since.
    #[serde(default)]
    pub expect_body_sha256: Option<String>,
}

/// Records the caller's decision on a message.
pub fn acknowledge(
    s: &mut Session,
    message_id: &str,
    decision: &str,
    note: Option<String>,
    expect_body_sha256: Option<&str>,
) -> AppResult<Vote> {
    let me = s.role()?;
    let decision = Decision::parse_field(decision.trim(), "decision")
        .map_err(|e| AppError::value(e.to_string()))?;
    if let Some(n) = &note {
        check_length("note", n, NOTE_MAX)?;
    }
    let expect = expect_body_sha256.map(|e| e.trim().to_lowercase());
    let writer = s.announce()?;
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
    Ok(Vote {
        message_id: id.short(),
        role: me,
        decision,
        note,
        created_at: format_rfc3339(rec.header.hlc.ms()),
        superseded: Some(superseded),
        stale: None,
    })
}

/// One vote: what acknowledge answers (with `superseded`) and each entry of
/// a tally's `acknowledgements` (with `stale`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Vote {
    /// Short id of the proposal.
    pub message_id: String,
    /// The voter.
    #[schemars(with = "String")]
    pub role: Role,
    /// agree, disagree, abstain or void.
    #[schemars(with = "String")]
    pub decision: Decision,
    /// The voter's note.
    pub note: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// Messages this vote retired (acknowledge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Vec<String>>,
    /// True if the text changed since the vote (tally).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
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

/// What get_acknowledgements was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct TallyRequest {
    /// The message.
    pub message_id: String,
    /// "headers" (the tally without notes), or field names.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// The consent state of one message.
pub fn get_acknowledgements(
    s: &mut Session,
    message_id: &str,
    fields: Option<&FieldsArg>,
) -> AppResult<Projected<Tally>> {
    let proj = Projection::parse(fields, TALLY_FIELDS, TALLY_HEADERS)?;
    s.catch_up()?;
    let roster = s.roster();
    let ix = s.index();
    let m = live_message(ix, &roster, message_id)?;
    Ok(project(proj.as_ref(), tally(&m, &roster)))
}

fn tally(m: &Message, roster: &[Role]) -> Tally {
    let t = m.tally();
    let acknowledgements = m
        .votes
        .iter()
        .map(|(role, v)| Vote {
            message_id: m.id.short(),
            role: role.clone(),
            decision: v.decision,
            note: v.note.clone(),
            created_at: format_rfc3339(v.key.hlc.ms()),
            superseded: None,
            stale: Some(v.body_sha256 != m.text.sha256),
        })
        .collect();
    let declared = m.declared_voters().is_some();
    let outsiders = (!t.outsiders.is_empty()).then(|| t.outsiders.clone());
    Tally {
        message_id: m.id.short(),
        acknowledgements,
        agreed: t.agreed.len(),
        needed: t.electorate.len(),
        missing: t.missing.clone(),
        decisions: t.decisions.clone(),
        voters: t.electorate.clone(),
        declared_dead_by: (!t.void_by.is_empty()).then(|| t.void_by.clone()),
        from_non_voters: outsiders.clone().filter(|_| declared),
        from_non_recipients: outsiders.filter(|_| !declared),
        quenched_by_revision: (!t.stale.is_empty()).then(|| t.stale.clone()),
        roles: roster.to_vec(),
        roles_source: "channel-registry",
        body_sha256: m.text.sha256.clone(),
        generated_at: format_rfc3339(now_ms()),
    }
}

/// The consent tally of a proposal (get_acknowledgements).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Tally {
    /// Short id.
    pub message_id: String,
    /// Every vote standing, one per role.
    pub acknowledgements: Vec<Vote>,
    /// Fresh agrees from the electorate.
    pub agreed: usize,
    /// Size of the electorate.
    pub needed: usize,
    /// Voters still to agree.
    #[schemars(with = "Vec<String>")]
    pub missing: Vec<Role>,
    /// Each voter's decision, outsiders included.
    #[schemars(with = "BTreeMap<String, String>")]
    pub decisions: BTreeMap<Role, Decision>,
    /// The electorate.
    #[schemars(with = "Vec<String>")]
    pub voters: Vec<Role>,
    /// Voters who declared the subject dead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub declared_dead_by: Option<Vec<Role>>,
    /// Decisions from outside a declared electorate.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub from_non_voters: Option<BTreeMap<Role, Decision>>,
    /// Decisions from outside the recipients.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub from_non_recipients: Option<BTreeMap<Role, Decision>>,
    /// Votes cast on a text a revision replaced: each role's decision there.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub quenched_by_revision: Option<BTreeMap<Role, Decision>>,
    /// The channel's roles.
    #[schemars(with = "Vec<String>")]
    pub roles: Vec<Role>,
    /// Where the roles come from.
    pub roles_source: &'static str,
    /// sha256 of the current text.
    pub body_sha256: String,
    /// RFC 3339.
    pub generated_at: String,
}

impl super::rows::Row for Tally {}

/// What awaiting_ack was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AwaitingRequest {
    /// Whose pending decisions (default: yours).
    #[serde(default)]
    pub to_role: Option<String>,
    /// How many of the oldest, and which fields.
    #[serde(flatten)]
    pub page: super::request::Page<{ super::request::LIMIT_HUNDRED }>,
    /// Only proposals by this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only proposals for this pin key.
    #[serde(default)]
    pub pin_key: Option<String>,
}

/// Proposals waiting for `to_role`'s decision (default: the caller), oldest first.
pub fn awaiting_ack(
    s: &mut Session,
    to_role: Option<&str>,
    limit: i64,
    fields: Option<&FieldsArg>,
    from_role: Option<&str>,
    pin_key: Option<&str>,
) -> AppResult<DatedListing<Projected<MessageView>>> {
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
    for r in rows {
        let row = MessageView {
            obligation: Some(obligation(&r)),
            ..MessageView::aged(r, viewer.as_ref(), now)
        };
        out.push(project(proj.as_ref(), row));
    }
    Ok(DatedListing {
        listing: listing(
            out,
            limit,
            overflow,
            "more proposals wait; raise 'limit' (at most 1000)",
        ),
        generated_at: format_rfc3339(now),
    })
}

/// The debt side of a proposal that is also a debt, else null.
fn obligation(r: &MessageRow) -> Option<Obligation> {
    r.action_required.then(|| Obligation {
        status: r.status.map(|s| s.as_str().to_owned()),
        resolved_by: r.resolved_by.as_ref().map(Role::to_string),
        resolved_at: r.resolved_ms.map(format_rfc3339),
        confirmed: r.confirmed,
    })
}
