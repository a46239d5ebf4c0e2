//! The fold of one message: its records applied in the channel's total
//! order, each decided by `core::rules` at its place.
//!
//! Owns [`Message::fold`] and [`Message::apply`]: what a permitted record
//! changes, and the conflict kept for a refused one (with the record that
//! decided against it). The state itself is `core::message`'s and the
//! decisions are `core::rules`'; this module only carries them out, so the
//! rules read a message without the message reading the rules. Like the
//! rest of core it touches no files, SQLite or clock.

use super::hlc::OrderKey;
use super::ids::{RecordId, Role};
use super::message::{Applied, Conflict, Event, Message, Move, Resolution, Text, Vote};
use super::op::{Op, Send};
use super::rules::{self, Verdict};
use super::vocab::{DebtStatus, Decision, WorkStatus};

impl Message {
    /// Folds a message from its `send` and the records that target it. The
    /// records are sorted here, so any arrival order gives the same state.
    pub fn fold<'a>(
        send_key: OrderKey,
        from: &Role,
        send: &Send,
        ops: impl IntoIterator<Item = Applied<'a>>,
    ) -> Self {
        let mut ops: Vec<Applied<'a>> = ops.into_iter().collect();
        ops.sort_by_key(|a| a.key);
        ops.dedup_by_key(|a| a.key);
        let mut m = Self::create(send_key, from, send);
        for op in ops {
            m.apply(op);
        }
        m
    }

    /// Applies one record that targets this message, at its place in the
    /// order: what the rules refuse is kept as a conflict and changes nothing.
    /// Returns true if it changed the state.
    pub fn apply(&mut self, rec: Applied<'_>) -> bool {
        match rules::check(self, rec.role, rec.op) {
            Ok(Verdict::Apply) => {
                self.effect(rec);
                true
            }
            Ok(Verdict::Noop) => false,
            Err(refusal) => {
                let winner = self.winner_against(rec.op);
                self.conflicts.push(Conflict {
                    record: rec.key,
                    role: rec.role.clone(),
                    op: rec.op.name(),
                    reason: refusal.to_string(),
                    winner,
                });
                false
            }
        }
    }

    /// The record that decided against a conflicting op, when one did.
    fn winner_against(&self, op: &Op) -> Option<RecordId> {
        if let Some(d) = self.deleted {
            return Some(d.id);
        }
        // A debt in the way is open since its latest reopen, or resolved by
        // its current resolution.
        let debt_state = || match self.debt.as_ref().and_then(|d| d.resolved.as_ref()) {
            Some(r) => Some(r.at.id),
            None => self.last_reopen.map(|k| k.id),
        };
        match op {
            Op::Confirm(_) | Op::Delete(_) => debt_state(),
            Op::WorkStatus(_) => self.ws_last.as_ref().map(|l| l.key.id),
            Op::Ack(_) | Op::Revise(_) => self.approved.or(self.revised).map(|k| k.id),
            _ => None,
        }
    }

    fn event(&mut self, rec: Applied<'_>, event: String, note: Option<String>) {
        self.events.push(Event {
            key: rec.key,
            event,
            role: rec.role.clone(),
            note,
        });
    }

    fn effect(&mut self, rec: Applied<'_>) {
        match rec.op {
            Op::Read(_) | Op::Opened(_) => {
                let d = self
                    .deliveries
                    .get_mut(rec.role)
                    .expect("the rules checked the recipient");
                let slot = if matches!(rec.op, Op::Read(_)) {
                    &mut d.read
                } else {
                    &mut d.opened
                };
                // Reading twice keeps the first time.
                slot.get_or_insert(rec.key.hlc);
            }
            Op::Delete(_) => self.deleted = Some(rec.key),
            Op::Resolve(n) => {
                let d = self.debt.as_mut().expect("the rules checked the debt");
                d.status = DebtStatus::Resolved;
                d.resolved = Some(Resolution {
                    by: rec.role.clone(),
                    at: rec.key,
                    note: n.note.clone(),
                });
                d.confirmed = false;
                self.event(rec, "resolve".into(), n.note.clone());
            }
            Op::Confirm(n) => {
                self.debt
                    .as_mut()
                    .expect("the rules checked the debt")
                    .confirmed = true;
                self.event(rec, "resolution_confirmed".into(), n.note.clone());
            }
            Op::Reopen(n) => {
                let d = self.debt.as_mut().expect("the rules checked the debt");
                d.status = DebtStatus::Open;
                d.resolved = None;
                d.confirmed = false;
                self.last_reopen = Some(rec.key);
                self.event(rec, "reopen".into(), n.note.clone());
            }
            Op::WorkStatus(w) => {
                self.work_status = Some(w.value);
                self.blocked_by = if w.value == WorkStatus::Blocked {
                    w.blocked_by
                } else {
                    None
                };
                self.ws_last = Some(Move {
                    key: rec.key,
                    role: rec.role.clone(),
                });
                self.event(rec, format!("work_status:{}", w.value), w.note.clone());
            }
            Op::Revise(r) => {
                let old = self.text.clone();
                let topic = r.topic.as_deref().unwrap_or(&old.topic);
                self.text = Text::new(topic, &r.body, r.body_ref.as_ref());
                self.revised = Some(rec.key);
                let size = |t: &Text| match &t.body_ref {
                    Some(_) => "upload".to_owned(),
                    None => format!("{} B", t.body.len()),
                };
                let mut note = format!(
                    "body {} ({}) → {} ({})",
                    old.sha256,
                    size(&old),
                    self.text.sha256,
                    size(&self.text)
                );
                if let Some(n) = &r.note {
                    note.push_str("; ");
                    note.push_str(n);
                }
                self.event(rec, "revision".into(), Some(note));
            }
            Op::Ack(a) => {
                self.votes.insert(
                    rec.role.clone(),
                    Vote {
                        key: rec.key,
                        decision: a.decision,
                        note: a.note.clone(),
                        body_sha256: a.body_sha256.clone(),
                        pin_head: a.pin_head,
                    },
                );
                if a.decision == Decision::Void {
                    self.event(rec, "declared_dead".into(), a.note.clone());
                }
            }
            // Creation, membership and channel-wide ops never target a message.
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
            | Op::Note(_) => {}
        }
    }
}
