//! A message: the state the fold derives from its records.
//!
//! A message is created by one `send` record; every later record that targets
//! it (read, opened, delete, …) is applied in the channel's total order by
//! [`Message::apply`] (the fold is `core::message_fold`'s: the rules read
//! this state, the fold reads the rules). The state of a message is a pure function of its own
//! records, so the index can re-fold one message when a late record arrives
//! and get exactly what a full rebuild gets.
//!
//! A transition that is illegal at its place in the order is kept as a
//! [`Conflict`] and changes nothing; a legal replay (marking read twice) is a
//! silent no-op. This module must not touch files, SQLite or the clock.

use std::collections::BTreeMap;

use super::hlc::{Hlc, OrderKey};
use super::ids::{RecordId, Role, sha256_hex};
use super::op::{BodyRef, Op, Send};
use super::vocab::{DebtStatus, Decision, Kind, WorkStatus};

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

/// How a message was retired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retired {
    /// By a live rule (a pin write, a vote, a deletion): permanent.
    Live,
    /// By a cleanup pass naming these keys: can be undone.
    Backfill(Vec<String>),
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

/// The text of a message as it stands (the send's, or the latest revision's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text {
    /// Subject line.
    pub topic: String,
    /// The inline body (empty when the body is an upload).
    pub body: String,
    /// The sealed upload that is the body.
    pub body_ref: Option<BodyRef>,
    /// Hex sha256 of the body's bytes (the upload's digest for a body_ref).
    pub sha256: String,
}

impl Text {
    pub(crate) fn new(topic: &str, body: &str, body_ref: Option<&BodyRef>) -> Self {
        Self {
            topic: topic.to_owned(),
            body: body.to_owned(),
            sha256: body_ref.map_or_else(|| sha256_hex(body.as_bytes()), |r| r.sha256.clone()),
            body_ref: body_ref.cloned(),
        }
    }

    /// True if `needle` occurs literally (case-sensitive) in the topic or the
    /// inline body. The text of an upload is not known to the fold.
    pub fn mentions(&self, needle: &str) -> bool {
        self.topic.contains(needle) || self.body.contains(needle)
    }
}

/// One role's current decision on a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The ack record.
    pub key: OrderKey,
    /// The decision.
    pub decision: Decision,
    /// Its note.
    pub note: Option<String>,
    /// The body digest it was cast on.
    pub body_sha256: String,
    /// The pin version its author had seen.
    pub pin_head: Option<RecordId>,
}

/// Why a message no longer waits for anything (superseded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retirement {
    /// The record whose effect retired it.
    pub key: OrderKey,
    /// The role that wrote that record.
    pub role: Role,
    /// True when a cleanup pass did it (the only kind that can be undone).
    pub backfill: bool,
    /// The keys a cleanup pass named.
    pub pin_keys: Vec<String>,
}

/// The consent tally of a message: who must agree and who has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The electorate, sorted: declared voters, else recipients, never the author.
    pub electorate: Vec<Role>,
    /// Electorate members whose current vote is `agree`.
    pub agreed: Vec<Role>,
    /// Electorate members without a current `agree`.
    pub missing: Vec<Role>,
    /// Every current decision, outsiders included.
    pub decisions: BTreeMap<Role, Decision>,
    /// Current decisions from outside the electorate.
    pub outsiders: BTreeMap<Role, Decision>,
    /// Votes cast on an earlier text: each role's decision there.
    pub stale: BTreeMap<Role, Decision>,
    /// Electorate members who voted `void` on the current text.
    pub void_by: Vec<Role>,
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
    /// The text as it stands.
    pub text: Text,
    /// The latest revision.
    pub revised: Option<OrderKey>,
    /// Each role's latest decision.
    pub votes: BTreeMap<Role, Vote>,
    /// The pin version this proposal approved (set by the consent fold).
    pub approved: Option<OrderKey>,
    /// Retired (superseded), and why (set by the consent fold).
    pub retired: Option<Retirement>,
    /// For a second round opened on a key: the round that holds the key.
    pub round_conflict: Option<RecordId>,
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
            text: Text::new(&send.topic, &send.body, send.body_ref.as_ref()),
            revised: None,
            votes: BTreeMap::new(),
            approved: None,
            retired: None,
            round_conflict: None,
        }
    }

    /// True if `role` wrote or received this message.
    pub fn is_party(&self, role: &Role) -> bool {
        &self.from == role || self.deliveries.contains_key(role)
    }

    /// True if more than one role received it.
    pub fn is_multi(&self) -> bool {
        self.send.to.len() > 1
    }

    /// The place of its `send` in the total order.
    pub fn created_key(&self) -> OrderKey {
        OrderKey {
            hlc: self.created,
            id: self.id,
        }
    }

    /// True for a proposal (`kind="proc"`).
    pub fn is_proposal(&self) -> bool {
        self.send.kind == Some(Kind::Proc)
    }

    /// True while the message is neither deleted nor retired.
    pub fn is_live(&self) -> bool {
        self.deleted.is_none() && self.retired.is_none()
    }

    /// The voters its author declared, if any. The one reading of `voters`
    /// every rule goes through: a declared list that is empty names nobody,
    /// so it declares nothing (this client never writes one, another client
    /// may), and the message counts as one without declared voters.
    pub fn declared_voters(&self) -> Option<&[Role]> {
        self.send.voters.as_deref().filter(|v| !v.is_empty())
    }

    /// The electorate: declared voters, else recipients, never the author.
    pub fn electorate(&self) -> Vec<Role> {
        let base = self.declared_voters().unwrap_or(&self.send.to).to_vec();
        let mut out: Vec<Role> = base.into_iter().filter(|r| r != &self.from).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The consent tally on the current text.
    pub fn tally(&self) -> Tally {
        let electorate = self.electorate();
        let mut t = Tally {
            agreed: Vec::new(),
            missing: Vec::new(),
            decisions: BTreeMap::new(),
            outsiders: BTreeMap::new(),
            stale: BTreeMap::new(),
            void_by: Vec::new(),
            electorate,
        };
        for (role, v) in &self.votes {
            if v.body_sha256 != self.text.sha256 {
                t.stale.insert(role.clone(), v.decision);
                continue;
            }
            t.decisions.insert(role.clone(), v.decision);
            if t.electorate.contains(role) {
                if v.decision == Decision::Void {
                    t.void_by.push(role.clone());
                }
            } else {
                t.outsiders.insert(role.clone(), v.decision);
            }
        }
        for r in &t.electorate {
            if t.decisions.get(r) == Some(&Decision::Agree) {
                t.agreed.push(r.clone());
            } else {
                t.missing.push(r.clone());
            }
        }
        t
    }

    /// True while this proposal holds its pin key open: a live proposal with
    /// a key, not declared void by its electorate on the current text.
    pub fn holds_round(&self) -> Option<&str> {
        let key = self.send.pin_key.as_deref()?;
        (self.is_proposal() && self.is_live() && self.tally().void_by.is_empty()).then_some(key)
    }

    /// True when this proposal waits for `role`'s decision (awaiting_ack):
    /// a live proposal that asks for a decision and is not a nudge, addressed
    /// to `role`, `role` is in its electorate, and `role` has not voted on
    /// its current text. The one definition: the index stores
    /// [`Self::awaiting`], and every query reads that.
    pub fn awaits(&self, role: &Role) -> bool {
        self.is_proposal()
            && self.is_live()
            && self.send.decision_requested
            && self.send.about.is_none()
            && self.deliveries.contains_key(role)
            && self.electorate().contains(role)
            && self
                .votes
                .get(role)
                .is_none_or(|v| v.body_sha256 != self.text.sha256)
    }

    /// Every role this proposal waits for (see [`Self::awaits`]), sorted.
    pub fn awaiting(&self) -> Vec<Role> {
        self.deliveries
            .keys()
            .filter(|r| self.awaits(r))
            .cloned()
            .collect()
    }

    /// Retires the message at `key` (consent fold). No effect if it is not live.
    pub fn retire(&mut self, key: OrderKey, role: &Role, how: Retired, note: String) -> bool {
        if !self.is_live() {
            return false;
        }
        let (event, backfill, pin_keys) = match how {
            Retired::Live => ("superseded", false, Vec::new()),
            Retired::Backfill(keys) => ("superseded_backfill", true, keys),
        };
        self.retired = Some(Retirement {
            key,
            role: role.clone(),
            backfill,
            pin_keys,
        });
        self.events.push(Event {
            key,
            event: event.to_owned(),
            role: role.clone(),
            note: Some(note),
        });
        true
    }

    /// Undoes a cleanup pass's retirement (consent fold).
    pub fn restore(&mut self, key: OrderKey, role: &Role, note: Option<String>) -> bool {
        if !self.retired.as_ref().is_some_and(|r| r.backfill) || self.deleted.is_some() {
            return false;
        }
        self.retired = None;
        self.events.push(Event {
            key,
            event: "superseded_undone".to_owned(),
            role: role.clone(),
            note,
        });
        true
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Ids, Note, Target, WorkStatusMove};
    use crate::vocab::WorkStatus;

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
    fn an_empty_declared_voters_list_declares_nobody_and_waits_for_the_recipients() {
        let mut s = send(&["b", "c"]);
        s.kind = Some(Kind::Proc);
        s.pin_key = Some("glossary".into());
        let electorate_of = |voters: Option<Vec<Role>>| {
            let mut s = s.clone();
            s.voters = voters;
            let m = Message::create(key(1, b"p"), &role("a"), &s);
            (
                m.declared_voters().map(<[Role]>::to_vec),
                m.electorate(),
                m.awaiting(),
            )
        };
        let everyone = vec![role("b"), role("c")];
        assert_eq!(
            electorate_of(None),
            (None, everyone.clone(), everyone.clone())
        );
        // Another client may write `"voters": []`: the same as none declared.
        assert_eq!(
            electorate_of(Some(Vec::new())),
            (None, everyone.clone(), everyone)
        );
        let only_c = vec![role("c")];
        assert_eq!(
            electorate_of(Some(only_c.clone())),
            (Some(only_c.clone()), only_c.clone(), only_c)
        );
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
        s.kind = Some(crate::vocab::Kind::Proc);
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
