//! A message and the fold that derives its state from records.
//!
//! A message is created by one `send` record; every later record that targets
//! it (read, opened, delete, …) is applied in the channel's total order by
//! [`Message::apply`]. The state of a message is a pure function of its own
//! records, so the index can re-fold one message when a late record arrives
//! and get exactly what a full rebuild gets.
//!
//! A transition that is illegal at its place in the order is kept as a
//! [`Conflict`] and changes nothing; a legal replay (marking read twice) is a
//! silent no-op. This module must not touch files, SQLite or the clock.

use std::collections::BTreeMap;

use super::hlc::{Hlc, OrderKey};
use super::ids::{RecordId, Role};
use super::op::{Op, Send};
use super::rules::{self, Verdict};
use super::vocab::{DebtStatus, WorkStatus};

/// A verified record as the fold sees it: its order, its author's role (from
/// the verified feed, never from the op) and its op.
#[derive(Clone, Copy, Debug)]
pub struct Applied<'a> {
    /// Place in the total order.
    pub key: OrderKey,
    /// The role whose feed signed the record.
    pub role: &'a Role,
    /// The operation.
    pub op: &'a Op,
}

/// Per-recipient delivery state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// First `read` by this recipient.
    pub read: Option<Hlc>,
    /// First `opened` (delivery through read_inbox) to this recipient.
    pub opened: Option<Hlc>,
}

/// One lifecycle event (message_history).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The record that caused it.
    pub key: OrderKey,
    /// Event name, e.g. `work_status:in_progress`.
    pub event: String,
    /// Who did it.
    pub role: Role,
    /// Free text.
    pub note: Option<String>,
}

/// A record that lost at its place in the order: kept, flagged, without effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The losing record.
    pub record: OrderKey,
    /// Its author.
    pub role: Role,
    /// Its op name.
    pub op: &'static str,
    /// Why it could not apply.
    pub reason: String,
    /// The record that decided the outcome, when there is one.
    pub winner: Option<RecordId>,
}

/// The debt side of an `action_required` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Debt {
    /// Open or resolved.
    pub status: DebtStatus,
    /// The current resolution, while resolved.
    pub resolved: Option<Resolution>,
    /// True once the other side confirmed the current resolution.
    pub confirmed: bool,
}

/// Who resolved a debt, when, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// The resolving role.
    pub by: Role,
    /// The resolve record.
    pub at: OrderKey,
    /// Its note.
    pub note: Option<String>,
}

/// The latest work-status move: which record, by whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The record (the `send` itself for a status set at send time).
    pub key: OrderKey,
    /// Who moved it.
    pub role: Role,
}

/// The derived state of one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Id of the `send` record.
    pub id: RecordId,
    /// Author role.
    pub from: Role,
    /// Creation stamp.
    pub created: Hlc,
    /// What was sent.
    pub send: Send,
    /// The delete record that tombstoned it.
    pub deleted: Option<OrderKey>,
    /// One entry per recipient.
    pub deliveries: BTreeMap<Role, Delivery>,
    /// The debt, for an `action_required` message.
    pub debt: Option<Debt>,
    /// Current work status.
    pub work_status: Option<WorkStatus>,
    /// The debt this work waits for (with `blocked`).
    pub blocked_by: Option<RecordId>,
    /// The latest work-status move.
    pub ws_last: Option<Move>,
    /// The latest reopen.
    pub last_reopen: Option<OrderKey>,
    /// Lifecycle events, in order.
    pub events: Vec<Event>,
    /// Records that could not apply.
    pub conflicts: Vec<Conflict>,
}

impl Message {
    /// The state right after the `send` record `key` by `from`.
    pub fn create(key: OrderKey, from: &Role, send: &Send) -> Self {
        let deliveries = send
            .to
            .iter()
            .map(|r| (r.clone(), Delivery::default()))
            .collect();
        let mut events = Vec::new();
        if let Some(ws) = send.work_status {
            events.push(Event {
                key,
                event: format!("work_status:{ws}"),
                role: from.clone(),
                note: Some("set at send time".to_owned()),
            });
        }
        Self {
            id: key.id,
            from: from.clone(),
            created: key.hlc,
            send: send.clone(),
            deleted: None,
            deliveries,
            debt: send.action_required.then_some(Debt {
                status: DebtStatus::Open,
                resolved: None,
                confirmed: false,
            }),
            work_status: send.work_status,
            blocked_by: None,
            ws_last: send.work_status.map(|_| Move {
                key,
                role: from.clone(),
            }),
            last_reopen: None,
            events,
            conflicts: Vec::new(),
        }
    }

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

    /// True if `role` wrote or received this message.
    pub fn is_party(&self, role: &Role) -> bool {
        &self.from == role || self.deliveries.contains_key(role)
    }

    /// True if more than one role received it.
    pub fn is_multi(&self) -> bool {
        self.send.to.len() > 1
    }

    /// The time of the latest lifecycle event (creation if none): what
    /// `idle_days` counts from.
    pub fn last_move(&self) -> Hlc {
        self.events.last().map_or(self.created, |e| e.key.hlc)
    }

    /// True when the addressee of an open debt has taken it: the latest work
    /// status move is theirs and came after the latest reopen.
    pub fn taken(&self) -> bool {
        let Some(addressee) = self.send.to.first() else {
            return false;
        };
        self.ws_last.as_ref().is_some_and(|l| {
            &l.role == addressee
                && l.key.id != self.id
                && self.last_reopen.is_none_or(|r| l.key > r)
        })
    }

    /// Applies one record that targets this message, at its place in the
    /// order: what the rules refuse is kept as a conflict and changes nothing.
    pub fn apply(&mut self, rec: Applied<'_>) {
        match rules::check(self, rec.role, rec.op) {
            Ok(Verdict::Apply) => self.effect(rec),
            Ok(Verdict::Noop) => {}
            Err(refusal) => {
                let winner = self.winner_against(rec.op);
                self.conflicts.push(Conflict {
                    record: rec.key,
                    role: rec.role.clone(),
                    op: rec.op.name(),
                    reason: refusal.to_string(),
                    winner,
                });
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
            // Creation and membership ops never target a message.
            Op::Send(_) | Op::FeedInit(_) | Op::Admit(_) | Op::AddRole(_) | Op::ReplaceKey(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::op::{Ids, Note, Target, WorkStatusMove};
    use crate::core::vocab::WorkStatus;

    fn role(s: &str) -> Role {
        Role::new(s).unwrap()
    }

    fn key(ms: i64, tag: &[u8]) -> OrderKey {
        OrderKey {
            hlc: Hlc(ms, 0),
            id: RecordId::of_body(tag),
        }
    }

    fn send(to: &[&str]) -> Send {
        Send {
            to: to.iter().map(|r| role(r)).collect(),
            topic: "t".into(),
            body: "b".into(),
            decision_requested: true,
            ..Send::default()
        }
    }

    #[test]
    fn send_time_status_is_an_event_by_the_sender() {
        let mut s = send(&["b"]);
        s.work_status = Some(WorkStatus::InProgress);
        let m = Message::create(key(1, b"s"), &role("a"), &s);
        assert_eq!(m.events.len(), 1);
        assert_eq!(m.events[0].event, "work_status:in_progress");
        assert_eq!(m.events[0].role, role("a"));
    }

    #[test]
    fn first_read_wins_and_order_does_not_matter() {
        let s = send(&["b", "c"]);
        let id = key(1, b"s").id;
        let read = Op::Read(Ids { ids: vec![id] });
        let opened = Op::Opened(Ids { ids: vec![id] });
        let (b, c) = (role("b"), role("c"));
        let recs = [
            Applied {
                key: key(5, b"r1"),
                role: &b,
                op: &read,
            },
            Applied {
                key: key(3, b"o1"),
                role: &b,
                op: &opened,
            },
            Applied {
                key: key(7, b"r2"),
                role: &b,
                op: &read,
            },
            Applied {
                key: key(9, b"r3"),
                role: &c,
                op: &read,
            },
        ];
        let forward = Message::fold(key(1, b"s"), &role("a"), &s, recs);
        let mut rev = recs;
        rev.reverse();
        let backward = Message::fold(key(1, b"s"), &role("a"), &s, rev);
        assert_eq!(forward, backward);
        assert_eq!(forward.deliveries[&b].read, Some(Hlc(5, 0)));
        assert_eq!(forward.deliveries[&b].opened, Some(Hlc(3, 0)));
        assert_eq!(forward.deliveries[&c].read, Some(Hlc(9, 0)));
    }

    #[test]
    fn outsiders_conflict_and_change_nothing() {
        let s = send(&["b"]);
        let id = key(1, b"s").id;
        let read = Op::Read(Ids { ids: vec![id] });
        let del = Op::Delete(Target { id });
        let x = role("x");
        let m = Message::fold(
            key(1, b"s"),
            &role("a"),
            &s,
            [
                Applied {
                    key: key(2, b"r"),
                    role: &x,
                    op: &read,
                },
                Applied {
                    key: key(3, b"d"),
                    role: &x,
                    op: &del,
                },
            ],
        );
        assert!(m.deleted.is_none());
        assert_eq!(m.conflicts.len(), 2);
        assert!(m.deliveries[&role("b")].read.is_none());
    }

    #[test]
    fn delete_is_a_tombstone_and_later_reads_do_nothing() {
        let s = send(&["b"]);
        let id = key(1, b"s").id;
        let read = Op::Read(Ids { ids: vec![id] });
        let del = Op::Delete(Target { id });
        let b = role("b");
        let m = Message::fold(
            key(1, b"s"),
            &role("a"),
            &s,
            [
                Applied {
                    key: key(2, b"d"),
                    role: &b,
                    op: &del,
                },
                Applied {
                    key: key(3, b"r"),
                    role: &b,
                    op: &read,
                },
                Applied {
                    key: key(4, b"d2"),
                    role: &b,
                    op: &del,
                },
            ],
        );
        assert_eq!(m.deleted, Some(key(2, b"d")));
        assert!(m.deliveries[&b].read.is_none());
        assert!(m.conflicts.is_empty());
    }

    #[test]
    fn only_the_author_deletes_a_proposal() {
        let mut s = send(&["b"]);
        s.kind = Some(crate::core::vocab::Kind::Proc);
        let id = key(1, b"s").id;
        let del = Op::Delete(Target { id });
        let b = role("b");
        let m = Message::fold(
            key(1, b"s"),
            &role("a"),
            &s,
            [Applied {
                key: key(2, b"d"),
                role: &b,
                op: &del,
            }],
        );
        assert!(m.deleted.is_none());
        assert_eq!(m.conflicts.len(), 1);
    }

    fn note(id: RecordId) -> Note {
        Note { id, note: None }
    }

    fn ws(id: RecordId, value: WorkStatus, base: Option<RecordId>) -> Op {
        Op::WorkStatus(WorkStatusMove {
            id,
            value,
            blocked_by: None,
            note: None,
            base,
        })
    }

    /// A debt from a to b, resolved by b at 2 and confirmed by a at 3.
    fn settled(extra: &[(OrderKey, &Role, &Op)]) -> Message {
        let mut s = send(&["b"]);
        s.action_required = true;
        let id = key(1, b"s").id;
        let (a, b) = (role("a"), role("b"));
        let resolve = Op::Resolve(note(id));
        let confirm = Op::Confirm(note(id));
        let mut recs = vec![
            Applied {
                key: key(2, b"res"),
                role: &b,
                op: &resolve,
            },
            Applied {
                key: key(3, b"conf"),
                role: &a,
                op: &confirm,
            },
        ];
        recs.extend(extra.iter().map(|(k, r, op)| Applied {
            key: *k,
            role: r,
            op,
        }));
        Message::fold(key(1, b"s"), &a, &s, recs)
    }

    #[test]
    fn a_delete_that_lost_to_a_concurrent_reopen_names_the_reopen() {
        let id = key(1, b"s").id;
        let (a, b) = (role("a"), role("b"));
        let reopen = Op::Reopen(note(id));
        let delete = Op::Delete(Target { id });
        let m = settled(&[
            (key(4, b"reopen"), &b, &reopen),
            (key(5, b"delete"), &a, &delete),
        ]);
        assert!(m.deleted.is_none());
        assert_eq!(m.debt.as_ref().unwrap().status, DebtStatus::Open);
        assert_eq!(m.conflicts.len(), 1);
        assert_eq!(m.conflicts[0].op, "delete");
        assert_eq!(m.conflicts[0].winner, Some(key(4, b"reopen").id));
        // The other order: the reopen loses to the delete.
        let m = settled(&[
            (key(5, b"reopen"), &b, &reopen),
            (key(4, b"delete"), &a, &delete),
        ]);
        assert_eq!(m.deleted, Some(key(4, b"delete")));
        assert_eq!(m.conflicts[0].op, "reopen");
        assert_eq!(m.conflicts[0].winner, Some(key(4, b"delete").id));
    }

    #[test]
    fn a_confirm_that_lost_to_a_concurrent_reopen_names_the_reopen() {
        let mut s = send(&["b"]);
        s.action_required = true;
        let id = key(1, b"s").id;
        let (a, b) = (role("a"), role("b"));
        let (resolve, reopen, confirm) = (
            Op::Resolve(note(id)),
            Op::Reopen(note(id)),
            Op::Confirm(note(id)),
        );
        let m = Message::fold(
            key(1, b"s"),
            &a,
            &s,
            [
                Applied {
                    key: key(2, b"res"),
                    role: &b,
                    op: &resolve,
                },
                Applied {
                    key: key(3, b"reopen"),
                    role: &b,
                    op: &reopen,
                },
                Applied {
                    key: key(4, b"conf"),
                    role: &a,
                    op: &confirm,
                },
            ],
        );
        assert_eq!(m.conflicts.len(), 1);
        assert_eq!(m.conflicts[0].winner, Some(key(3, b"reopen").id));
        assert!(m.events.iter().all(|e| e.event != "resolution_confirmed"));
    }

    #[test]
    fn concurrent_status_moves_one_wins_and_a_repeat_is_no_conflict() {
        let id = key(1, b"s").id;
        let (a, b) = (role("a"), role("b"));
        let s = send(&["b"]);
        let (x, y) = (
            ws(id, WorkStatus::InProgress, None),
            ws(id, WorkStatus::NeedsYou, None),
        );
        let m = Message::fold(
            key(1, b"s"),
            &a,
            &s,
            [
                Applied {
                    key: key(2, b"x"),
                    role: &b,
                    op: &x,
                },
                Applied {
                    key: key(3, b"y"),
                    role: &a,
                    op: &y,
                },
            ],
        );
        assert_eq!(m.work_status, Some(WorkStatus::InProgress));
        assert_eq!(m.conflicts.len(), 1);
        assert_eq!(m.conflicts[0].winner, Some(key(2, b"x").id));
        // The same move by the same role from two devices, neither seeing the other.
        let m = Message::fold(
            key(1, b"s"),
            &a,
            &s,
            [
                Applied {
                    key: key(2, b"x"),
                    role: &b,
                    op: &x,
                },
                Applied {
                    key: key(3, b"x2"),
                    role: &b,
                    op: &x,
                },
            ],
        );
        assert!(m.conflicts.is_empty(), "{:?}", m.conflicts);
        assert_eq!(m.events.len(), 1);
    }
}
