//! The lifecycle of a message: resolve, confirm, reopen, work status, history.
//!
//! Every step is decided by `core::rules::check` on the message's folded
//! state, the same function the fold applies to records from other machines;
//! so a step refused here is a step that would lose anywhere. Repeats
//! (`already_*`) write nothing.

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult, check_length};
use super::rows::{Listing, short};
use super::send::NOTE_MAX;
use super::session::{Session, find_live, lookup_live};
use crate::core::ids::{RecordId, Role};
use crate::core::message::{Applied, Message};
use crate::core::op::{Note, Op, WorkStatusMove};
use crate::core::record::Record;
use crate::core::rules::{self, Refusal, Verdict};
use crate::core::timestamp::format_rfc3339;
use crate::core::vocab::{DebtStatus, WorkStatus};
use crate::store::Index;
use crate::store::fold::message::{load_message, load_message_alone};

impl From<Refusal> for AppError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Value(m) => Self::Value(m),
            Refusal::Permission(m) => Self::Permission(m),
        }
    }
}

/// Loads the live message `raw` names, or the refusal.
pub fn live_message(ix: &Index, roster: &[Role], raw: &str) -> AppResult<Message> {
    Ok(live_message_alone(ix, roster, raw)?.0)
}

/// [`live_message`], and whether it is the message's fold alone
/// ([`load_message_alone`]).
fn live_message_alone(ix: &Index, roster: &[Role], raw: &str) -> AppResult<(Message, bool)> {
    let id = find_live(ix, "message_id", raw)?;
    load_message_alone(ix, roster, &id)?.ok_or_else(|| not_found(raw))
}

fn not_found(raw: &str) -> AppError {
    AppError::value(format!(
        "message {raw} not found; list_messages or \
         search_messages shows the ids this role can see"
    ))
}

/// Runs one lifecycle step: `build` makes the op from the current state, the
/// rules decide, and the op is written unless it is a repeat. Returns the
/// record (if one was written) and the state after the step.
fn step(
    s: &mut Session,
    raw: &str,
    build: impl FnOnce(&Index, &Message) -> AppResult<Op>,
) -> AppResult<(Option<Record>, Message)> {
    let me = s.role()?;
    let writer = s.announce()?;
    let roster = s.roster();
    let (rec, (before, alone, op)) = s.channel_mut().append_if(&writer, |ix| {
        let (m, alone) = live_message_alone(ix, &roster, raw)?;
        let op = build(ix, &m)?;
        let verdict = rules::check(&m, &me, &op)?;
        let written = (verdict == Verdict::Apply).then(|| op.clone());
        Ok::<_, AppError>((written, (m, alone, op)))
    })?;
    let after = match &rec {
        // Nothing written: the state read under the write lock stands.
        None => before,
        // The record's clock follows every record the index held, so it is
        // the message's last: applied to the state read under the same lock,
        // it gives what folding the message again gives, without reading its
        // records back after the publish, on the answer's path.
        Some(r) if alone => {
            let mut m = before;
            m.apply(Applied {
                key: r.order_key(),
                role: &me,
                op: &op,
            });
            m
        }
        Some(_) => load_message(s.index(), &roster, &before.id)?.ok_or_else(|| not_found(raw))?,
    };
    debug_assert_eq!(
        Some(&after),
        load_message(s.index(), &roster, &after.id)?.as_ref(),
        "a step's answer is the message's fold"
    );
    Ok((rec, after))
}

fn note_of(field: &str, note: Option<String>) -> AppResult<Option<String>> {
    if let Some(n) = &note {
        check_length(field, n, NOTE_MAX)?;
    }
    Ok(note)
}

/// What resolve_message answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Resolution {
    /// Short id.
    pub id: String,
    /// The debt status after the call.
    pub status: Option<&'static str>,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    /// RFC 3339.
    pub resolved_at: Option<String>,
    /// The resolution's note.
    pub resolution_note: Option<String>,
    /// True if it was resolved before this call (nothing written).
    pub already_resolved: bool,
    /// Short ids of the tasks this resolution unblocked (when written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unblocked: Option<Vec<String>>,
}

fn resolution(m: &Message, already_resolved: bool) -> Resolution {
    let res = m.debt.as_ref().and_then(|d| d.resolved.as_ref());
    Resolution {
        id: m.id.short(),
        status: m.debt.as_ref().map(|d| d.status.as_str()),
        resolved_by: res.map(|r| r.by.to_string()),
        resolved_at: res.map(|r| format_rfc3339(r.at.hlc.ms())),
        resolution_note: res.and_then(|r| r.note.clone()),
        already_resolved,
        unblocked: None,
    }
}

/// What resolve_message was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ResolveRequest {
    /// The debt.
    pub message_id: String,
    /// What was done, or why it is withdrawn.
    #[serde(default)]
    pub resolution_note: Option<String>,
}

/// Resolves a debt the caller is party to. `unblocked` lists the tasks that
/// were blocked on it.
pub fn resolve_message(
    s: &mut Session,
    message_id: &str,
    resolution_note: Option<String>,
) -> AppResult<Resolution> {
    let note = note_of("resolution_note", resolution_note)?;
    let (rec, m) = step(s, message_id, |_, m| {
        Ok(Op::Resolve(Note { id: m.id, note }))
    })?;
    let mut out = resolution(&m, rec.is_none());
    if rec.is_some() {
        out.unblocked = Some(blocked_on(s.index(), &m.id)?);
    }
    Ok(out)
}

/// Live tasks whose work status is `blocked` on `id`.
fn blocked_on(ix: &Index, id: &RecordId) -> AppResult<Vec<String>> {
    let ids = ix.blocked_on(&id.hex())?;
    Ok(ids.iter().map(|i| short(i)).collect())
}

/// What confirm_resolution was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ConfirmRequest {
    /// The resolved debt.
    pub message_id: String,
    /// A remark.
    #[serde(default)]
    pub note: Option<String>,
}

/// Confirms the other side's resolution of a debt.
pub fn confirm_resolution(
    s: &mut Session,
    message_id: &str,
    note: Option<String>,
) -> AppResult<Confirmation> {
    let note = note_of("note", note)?;
    let (rec, m) = step(s, message_id, |_, m| {
        Ok(Op::Confirm(Note { id: m.id, note }))
    })?;
    Ok(Confirmation {
        id: m.id.short(),
        already_confirmed: rec.is_none(),
    })
}

/// What confirm_resolution answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Confirmation {
    /// Short id.
    pub id: String,
    /// True if it was confirmed before this call (nothing written).
    pub already_confirmed: bool,
}

/// What reopen_message answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Reopening {
    /// Short id.
    pub id: String,
    /// Always `open`.
    pub status: &'static str,
    /// True if it was open before this call (nothing written).
    pub already_open: bool,
}

/// What set_work_status answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WorkStatusSet {
    /// Short id.
    pub id: String,
    /// The status now.
    pub work_status: &'static str,
    /// The status before (only when written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<Option<&'static str>>,
    /// True if it already had this status (nothing written).
    pub already_set: bool,
}

/// What reopen_message was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ReopenRequest {
    /// The resolved debt.
    pub message_id: String,
    /// Why it is not done.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Reopens a resolved debt (also after a confirmation).
pub fn reopen_message(
    s: &mut Session,
    message_id: &str,
    reason: Option<String>,
) -> AppResult<Reopening> {
    let note = note_of("reason", reason)?;
    let (rec, m) = step(s, message_id, |_, m| {
        Ok(Op::Reopen(Note { id: m.id, note }))
    })?;
    Ok(Reopening {
        id: m.id.short(),
        status: DebtStatus::Open.as_str(),
        already_open: rec.is_none(),
    })
}

/// What set_work_status was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct WorkStatusRequest {
    /// The message whose work moves.
    pub message_id: String,
    /// proposed, in_progress, done_local, needs_you, done or blocked.
    pub work_status: String,
    /// Why (kept in message_history).
    #[serde(default)]
    pub note: Option<String>,
    /// With blocked: the open debt it waits for.
    #[serde(default)]
    pub blocked_by: Option<String>,
}

/// Moves the work status of a message the caller is party to.
pub fn set_work_status(
    s: &mut Session,
    message_id: &str,
    work_status: &str,
    note: Option<String>,
    blocked_by: Option<&str>,
) -> AppResult<WorkStatusSet> {
    let value = WorkStatus::parse_field(work_status, "work_status")
        .map_err(|e| AppError::value(e.to_string()))?;
    let note = note_of("note", note)?;
    if blocked_by.is_some() && value != WorkStatus::Blocked {
        return Err(AppError::value(
            "'blocked_by' is only valid with work_status='blocked'; drop 'blocked_by', or set \
             work_status='blocked'",
        ));
    }
    let mut previous = None;
    let (rec, m) = step(s, message_id, |ix, m| {
        previous = m.work_status;
        let blocker = blocked_by.map(|raw| check_blocker(ix, raw)).transpose()?;
        Ok(Op::WorkStatus(WorkStatusMove {
            id: m.id,
            value,
            blocked_by: blocker,
            note,
            base: m.ws_last.as_ref().map(|l| l.key.id),
        }))
    })?;
    Ok(WorkStatusSet {
        id: m.id.short(),
        work_status: value.as_str(),
        previous: rec.is_some().then(|| previous.map(WorkStatus::as_str)),
        already_set: rec.is_none(),
    })
}

/// A blocker must be a live, open debt: anything else could never be resolved
/// and would block forever.
fn check_blocker(ix: &Index, raw: &str) -> AppResult<RecordId> {
    let id = lookup_live(ix, "blocked_by", raw)?.ok_or_else(|| {
        AppError::value(format!(
            "blocked_by message {raw} not found; list_messages or \
             search_messages shows the ids this role can see"
        ))
    })?;
    let b = load_message(ix, &[], &id)?.ok_or_else(|| {
        AppError::value(format!(
            "blocked_by message {raw} not found; list_messages or \
             search_messages shows the ids this role can see"
        ))
    })?;
    match &b.debt {
        None => Err(AppError::value(format!(
            "blocked_by message {raw} is not action_required — nothing could ever resolve it, so the \
             task would block forever; block on a debt, or use 'blocked' without blocked_by"
        ))),
        Some(d) if d.status == DebtStatus::Resolved => Err(AppError::value(format!(
            "blocked_by message {raw} is already resolved — not a blocker; block on an open \
             debt, or use 'blocked' without blocked_by"
        ))),
        Some(_) => Ok(id),
    }
}

/// What message_history was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct HistoryRequest {
    /// The message.
    pub message_id: String,
}

/// Every lifecycle event of a live message, oldest first.
pub fn message_history(s: &mut Session, message_id: &str) -> AppResult<Listing<Event>> {
    s.catch_up()?;
    let ix = s.index();
    let id = find_live(ix, "message_id", message_id)?;
    let rows: Vec<Event> = ix
        .events_of(&id.hex())?
        .into_iter()
        .map(|e| Event {
            message_id: id.short(),
            event: e.event,
            role: e.role,
            note: e.note,
            created_at: format_rfc3339(e.ms),
        })
        .collect();
    Ok(Listing::whole(rows))
}

/// One event in a message's history.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Event {
    /// Short id of the message.
    pub message_id: String,
    /// What happened.
    pub event: String,
    /// Who did it.
    pub role: String,
    /// Its note.
    pub note: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}
