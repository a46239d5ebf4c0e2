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
use super::vocab::Kind;

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
    /// Lifecycle events, in order.
    pub events: Vec<Event>,
    /// Records that could not apply.
    pub conflicts: Vec<Conflict>,
}

impl Message {
    /// The state right after the `send` record `key` by `from`.
    pub fn create(key: OrderKey, from: &Role, send: &Send) -> Self {
        let deliveries = send.to.iter().map(|r| (r.clone(), Delivery::default())).collect();
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

    /// Applies one record that targets this message, at its place in the order.
    pub fn apply(&mut self, rec: Applied<'_>) {
        match rec.op {
            Op::Read(_) | Op::Opened(_) => self.apply_delivery(rec),
            Op::Delete(_) => self.apply_delete(rec),
            // Creation and membership ops never target a message.
            Op::Send(_) | Op::FeedInit(_) | Op::Admit(_) => {}
        }
    }

    fn conflict(&mut self, rec: Applied<'_>, reason: String, winner: Option<RecordId>) {
        self.conflicts.push(Conflict {
            record: rec.key,
            role: rec.role.clone(),
            op: rec.op.name(),
            reason,
            winner,
        });
    }

    fn apply_delivery(&mut self, rec: Applied<'_>) {
        let Some(delivery) = self.deliveries.get_mut(rec.role) else {
            let reason = format!("message {} is not addressed to '{}'", self.id.short(), rec.role);
            return self.conflict(rec, reason, None);
        };
        // Reading a tombstone changes nothing; reading twice keeps the first time.
        if self.deleted.is_some() {
            return;
        }
        let slot = if matches!(rec.op, Op::Read(_)) { &mut delivery.read } else { &mut delivery.opened };
        if slot.is_none() {
            *slot = Some(rec.key.hlc);
        }
    }

    fn apply_delete(&mut self, rec: Applied<'_>) {
        if self.deleted.is_some() {
            return;
        }
        if !self.is_party(rec.role) {
            let reason = format!("'{}' is not a party to message {}", rec.role, self.id.short());
            return self.conflict(rec, reason, None);
        }
        if self.send.kind == Some(Kind::Proc) && &self.from != rec.role {
            let reason = "only its author may delete a proposal".to_owned();
            return self.conflict(rec, reason, None);
        }
        self.deleted = Some(rec.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::op::{Ids, Target};
    use crate::core::vocab::WorkStatus;

    fn role(s: &str) -> Role {
        Role::new(s).unwrap()
    }

    fn key(ms: i64, tag: &[u8]) -> OrderKey {
        OrderKey { hlc: Hlc(ms, 0), id: RecordId::of_body(tag) }
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
            Applied { key: key(5, b"r1"), role: &b, op: &read },
            Applied { key: key(3, b"o1"), role: &b, op: &opened },
            Applied { key: key(7, b"r2"), role: &b, op: &read },
            Applied { key: key(9, b"r3"), role: &c, op: &read },
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
                Applied { key: key(2, b"r"), role: &x, op: &read },
                Applied { key: key(3, b"d"), role: &x, op: &del },
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
                Applied { key: key(2, b"d"), role: &b, op: &del },
                Applied { key: key(3, b"r"), role: &b, op: &read },
                Applied { key: key(4, b"d2"), role: &b, op: &del },
            ],
        );
        assert_eq!(m.deleted, Some(key(2, b"d")));
        assert!(m.deliveries[&b].read.is_none());
        assert!(m.conflicts.is_empty());
    }

    #[test]
    fn only_the_author_deletes_a_proposal() {
        let mut s = send(&["b"]);
        s.kind = Some(Kind::Proc);
        let id = key(1, b"s").id;
        let del = Op::Delete(Target { id });
        let b = role("b");
        let m = Message::fold(
            key(1, b"s"),
            &role("a"),
            &s,
            [Applied { key: key(2, b"d"), role: &b, op: &del }],
        );
        assert!(m.deleted.is_none());
        assert_eq!(m.conflicts.len(), 1);
    }
}
