//! The rules of a message's lifecycle: who may delete, resolve, confirm,
//! reopen or move the work status of a message, in which state.
//!
//! One function, [`check`], answers for both sides of a write: the app calls
//! it on the current state before writing (a refusal is the tool's answer and
//! nothing is written), and the fold calls it at the record's place in the
//! total order (a refusal there marks the record conflicted, without effect).
//! So a write refused on one machine is exactly a write that loses everywhere.
//! Rules that look at another message (a blocker's state) are the app's.

use super::ids::Role;
use super::message::Message;
use super::op::Op;
use super::vocab::{DebtStatus, Kind, WorkStatus};

/// Why an operation may not happen, in the two kinds agents know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Bad input or a refused state change.
    #[error("{0}")]
    Value(String),
    /// Acting outside one's part in the message.
    #[error("{0}")]
    Permission(String),
}

/// What a permitted operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It changes the state.
    Apply,
    /// It repeats what already holds (`already_*`): nothing changes and
    /// nothing needs to be written.
    Noop,
}

/// Decides `op` by `role` on message `m`.
pub fn check(m: &Message, role: &Role, op: &Op) -> Result<Verdict, Refusal> {
    let id = m.id.short();
    let party = || {
        if m.is_party(role) {
            Ok(())
        } else {
            let to: Vec<&str> = m.send.to.iter().map(Role::as_str).collect();
            Err(Refusal::Permission(format!(
                "'{role}' is not a party to message {id} (from '{}' to {to:?}) — only its author and \
                 recipients can do that",
                m.from
            )))
        }
    };
    let debt = |what: &str| {
        m.debt.as_ref().ok_or_else(|| {
            Refusal::Value(format!(
                "message {id} has action_required=false, nothing to {what}; reply to it instead, \
                 or send a message with action_required=true"
            ))
        })
    };
    if m.deleted.is_some() {
        return match op {
            // Two parties deleting concurrently meant the same thing.
            Op::Delete(_) => Ok(Verdict::Noop),
            Op::Read(_) | Op::Opened(_) => Ok(Verdict::Noop),
            _ => Err(Refusal::Value(format!(
                "message {id} was deleted; list_messages shows the live messages"
            ))),
        };
    }
    match op {
        Op::Delete(_) => {
            party()?;
            if let Some(pin) = m.approved {
                return Err(Refusal::Value(format!(
                    "message {id} is the approval record for a pin version ({}) — approval records \
                     are kept for good and cannot be deleted",
                    pin.id.short()
                )));
            }
            if m.send.kind == Some(Kind::Proc) && &m.from != role {
                return Err(Refusal::Permission(format!(
                    "message {id} is a proposal (kind='proc'); only its author '{}' can delete it. \
                     Vote on it instead (acknowledge with 'reject', or 'void' to declare the round dead)",
                    m.from
                )));
            }
            match &m.debt {
                Some(d) if d.status == DebtStatus::Open => Err(Refusal::Value(format!(
                    "message {id} is an open obligation — resolve_message it first; deleting must not \
                     silently close a debt"
                ))),
                Some(d) if !d.confirmed => Err(Refusal::Value(format!(
                    "message {id} is resolved but not yet confirmed — the other side still has to \
                     confirm_resolution (or reopen_message) before it can be deleted"
                ))),
                _ => Ok(Verdict::Apply),
            }
        }
        Op::Resolve(_) => {
            party()?;
            let d = debt("resolve")?;
            Ok(if d.status == DebtStatus::Resolved {
                Verdict::Noop
            } else {
                Verdict::Apply
            })
        }
        Op::Confirm(_) => {
            party()?;
            let d = debt("confirm")?;
            let Some(res) = d
                .resolved
                .as_ref()
                .filter(|_| d.status == DebtStatus::Resolved)
            else {
                return Err(Refusal::Value(format!(
                    "message {id} is not resolved — confirm_resolution follows resolve_message, \
                     so wait until it is resolved"
                )));
            };
            if &res.by == role {
                return Err(Refusal::Permission(format!(
                    "'{role}' resolved message {id} and cannot also confirm their own resolution — the \
                     other side confirms it"
                )));
            }
            Ok(if d.confirmed {
                Verdict::Noop
            } else {
                Verdict::Apply
            })
        }
        Op::Reopen(_) => {
            party()?;
            let d = debt("reopen")?;
            Ok(if d.status == DebtStatus::Open {
                Verdict::Noop
            } else {
                Verdict::Apply
            })
        }
        Op::WorkStatus(w) => {
            party()?;
            if w.blocked_by.is_some() && w.value != WorkStatus::Blocked {
                return Err(Refusal::Value(
                    "'blocked_by' is only valid with work_status='blocked'; drop 'blocked_by', or \
                     set work_status='blocked'"
                        .to_owned(),
                ));
            }
            let same = m.work_status == Some(w.value)
                && m.blocked_by
                    == (if w.value == WorkStatus::Blocked {
                        w.blocked_by
                    } else {
                        None
                    });
            // Re-setting the current value is a no-op for whoever set it, unless
            // a reopen came since; by the other side it is a real move (the ball).
            // A repeat stays a silent no-op even when its author had not seen
            // the move it repeats (two devices of one role): never a conflict.
            // ('done' never repeats: it needs done_local, below.)
            let mine_since_reopen = m
                .ws_last
                .as_ref()
                .is_some_and(|l| &l.role == role && m.last_reopen.is_none_or(|r| l.key > r));
            if same && mine_since_reopen && w.value != WorkStatus::Done {
                return Ok(Verdict::Noop);
            }
            if w.base != m.ws_last.as_ref().map(|l| l.key.id) {
                let winner = m.ws_last.as_ref().map_or_else(String::new, |l| {
                    format!(" ({} by '{}')", l.key.id.short(), l.role)
                });
                return Err(Refusal::Value(format!(
                    "the work status of message {id} moved{winner} since this move was decided; \
                     read it again (get_thread) and decide again"
                )));
            }
            if w.value == WorkStatus::Done {
                if m.work_status != Some(WorkStatus::DoneLocal) {
                    let now = m.work_status.map_or("null", WorkStatus::as_str);
                    return Err(Refusal::Value(format!(
                        "current work_status must be 'done_local' to set 'done' (it is '{now}') — the \
                         executor declares done_local first, then the other side confirms with done"
                    )));
                }
                let declared_by = m.ws_last.as_ref().map_or(&m.from, |l| &l.role);
                if declared_by == role {
                    return Err(Refusal::Permission(format!(
                        "'done' must be confirmed by the other side — '{role}' declared done_local itself"
                    )));
                }
            }
            Ok(Verdict::Apply)
        }
        Op::Read(_) | Op::Opened(_) => {
            if m.deliveries.contains_key(role) {
                Ok(Verdict::Apply)
            } else {
                Err(Refusal::Permission(format!(
                    "message {id} is not addressed to '{role}', and only its recipients mark it \
                     read; mark only messages addressed to '{role}' (read_inbox lists them)"
                )))
            }
        }
        Op::Revise(r) => {
            if &m.from != role {
                return Err(Refusal::Permission(format!(
                    "only the author re-issues its body — message {id} was written by '{}'; reply \
                     to it instead",
                    m.from
                )));
            }
            if let Some(pin) = m.approved {
                return Err(Refusal::Value(format!(
                    "message {id} is the approval record for a pin version ({}) — it cannot be \
                     revised; send a new proposal for further changes",
                    pin.id.short()
                )));
            }
            let topic_same = r.topic.as_ref().is_none_or(|t| *t == m.text.topic);
            let body_same = match (&r.body_ref, &m.text.body_ref) {
                (Some(a), Some(b)) => a == b,
                (None, None) => r.body == m.text.body,
                _ => false,
            };
            Ok(if topic_same && body_same {
                Verdict::Noop
            } else {
                Verdict::Apply
            })
        }
        Op::Ack(a) => {
            if &m.from == role {
                return Err(Refusal::Value(format!(
                    "cannot acknowledge your own message {id} (sender agreement is implicit); \
                     acknowledge other roles' messages only"
                )));
            }
            if a.body_sha256 != m.text.sha256 {
                return Err(Refusal::Value(format!(
                    "message {id} was re-issued after you read it (body_sha256 is now {}) — read it \
                     again, then acknowledge the text as it stands",
                    m.text.sha256
                )));
            }
            Ok(Verdict::Apply)
        }
        Op::Send(_)
        | Op::FeedInit(_)
        | Op::Admit(_)
        | Op::Invite(_)
        | Op::Claim(_)
        | Op::AddRole(_)
        | Op::ReplaceKey(_)
        | Op::PinSet(_)
        | Op::Backfill(_)
        | Op::UndoBackfill(_)
        | Op::UploadChunk(_)
        | Op::Seal(_)
        | Op::Summary(_)
        | Op::Note(_) => Err(Refusal::Value(
            "this op does not act on a message".to_owned(),
        )),
    }
}
