//! Consent: the channel-wide fold of proposals, votes, pins and retirement.
//!
//! Most of a message's state depends on its own records only ([`Message`]).
//! Consent does not: a pin write retires every proposal for its key, a vote or
//! a deletion retires the nudges about a message (and theirs, transitively), a
//! second round on a key loses to the open one, and whether a pin write is
//! allowed depends on the votes on another message *at that write's place in
//! the order*. So the messages that take part (proposals, nudges, their
//! targets, approval records) are folded together here, with every pin write
//! and cleanup pass, in one pass in total order.
//!
//! [`Consent::check_pin_set`] is the one approval rule: the app runs it before
//! writing (and for `dry_run`), and the fold runs it at the record's place, so a
//! pin write refused on one machine is exactly one that loses everywhere.
//! This module must not touch files, SQLite or the clock.

use std::collections::BTreeMap;

use super::hlc::OrderKey;
use super::ids::{RecordId, Role, roles_list as names, sha256_hex};
use super::message::{Applied, Conflict, Message, Retired};
use super::op::{Backfill, Op, OpKind, PinSet, Send, UndoBackfill};
use super::rules::Refusal;
use super::timestamp::format_rfc3339;
use super::vocab::Decision;

/// Keys that need approval from their very first version.
pub const RESERVED_KEYS: &[&str] = &["team-charter", "contract-version", "glossary"];

/// One version of a pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinVersion {
    /// The pin_set record.
    pub key: OrderKey,
    /// Who wrote it.
    pub role: Role,
    /// What was written.
    pub set: PinSet,
}

impl PinVersion {
    /// Hex sha256 of the pinned body (the upload's digest for a body_ref).
    pub fn sha256(&self) -> String {
        self.set.body_ref.as_ref().map_or_else(
            || sha256_hex(self.set.body.as_bytes()),
            |r| r.sha256.clone(),
        )
    }
}

/// A pin write that was refused, with the roles whose agreement is missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// The refusal (the problem text).
    pub refusal: Refusal,
    /// Roles whose current `agree` is missing or stale.
    pub missing_agrees: Vec<Role>,
    /// The record that decided against it, when one did.
    pub winner: Option<RecordId>,
}

impl Blocked {
    fn value(msg: String) -> Self {
        Self {
            refusal: Refusal::Value(msg),
            missing_agrees: Vec::new(),
            winner: None,
        }
    }
}

/// A pin write that lost at its place in the order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinConflict {
    /// The pin key.
    pub pin_key: String,
    /// The losing record and why.
    pub conflict: Conflict,
}

/// The consent state of a channel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consent {
    /// The roster (needed for proposals without declared voters).
    pub roster: Vec<Role>,
    /// The messages taking part, by full id.
    pub messages: BTreeMap<RecordId, Message>,
    /// Every pin key's versions, oldest first.
    pub pins: BTreeMap<String, Vec<PinVersion>>,
    /// Pin writes that lost.
    pub conflicts: Vec<PinConflict>,
    /// Nudges by target.
    nudges: BTreeMap<RecordId, Vec<RecordId>>,
}

impl Consent {
    /// Folds `records` (creation of the messages taking part, every record that
    /// targets them, every pin write and cleanup pass) in total order.
    pub fn fold<'a>(roster: &[Role], records: impl IntoIterator<Item = Applied<'a>>) -> Self {
        let mut recs: Vec<Applied<'a>> = records.into_iter().collect();
        recs.sort_by_key(|a| a.key);
        recs.dedup_by_key(|a| a.key);
        let mut c = Self {
            roster: roster.to_vec(),
            ..Self::default()
        };
        for r in recs {
            c.apply(r);
        }
        c
    }

    /// Applies one record at its place in the order.
    pub fn apply(&mut self, rec: Applied<'_>) {
        match rec.op {
            Op::Send(s) => self.create(rec, s),
            Op::PinSet(p) => match self.check_pin_set(p) {
                Ok(()) => self.set_pin(rec, p),
                Err(b) => self.conflicts.push(PinConflict {
                    pin_key: p.key.clone(),
                    conflict: Conflict {
                        record: rec.key,
                        role: rec.role.clone(),
                        op: OpKind::PinSet.as_str(),
                        reason: b.refusal.to_string(),
                        winner: b.winner,
                    },
                }),
            },
            Op::Backfill(b) => self.backfill(rec, b),
            Op::UndoBackfill(u) => self.undo(rec, u),
            op => {
                for t in op.targets() {
                    let Some(m) = self.messages.get_mut(t) else {
                        continue;
                    };
                    if !m.apply(rec) {
                        continue;
                    }
                    match op {
                        Op::Delete(_) => {
                            let why = format!("target #{} was deleted", t.short());
                            self.cascade(*t, rec, &Retired::Live, &why);
                        }
                        Op::Ack(_) => self.retire_nudges_of(*t, rec),
                        _ => {}
                    }
                }
            }
        }
    }

    /// The proposal holding `key` open, if any.
    pub fn open_round(&self, key: &str) -> Option<&Message> {
        self.messages
            .values()
            .find(|m| m.holds_round() == Some(key))
    }

    /// The current version of `key`.
    pub fn head(&self, key: &str) -> Option<&PinVersion> {
        self.pins.get(key).and_then(|v| v.last())
    }

    /// True if writing `key` needs `approved_by`: a reserved key, or one ever
    /// written with approval.
    pub fn is_protected(&self, key: &str) -> bool {
        RESERVED_KEYS.contains(&key)
            || self
                .pins
                .get(key)
                .is_some_and(|v| v.iter().any(|p| p.set.approved_by.is_some()))
    }

    /// The roles whose agreement a pin write with proposal `p` needs, and
    /// whether they were declared (else: every role but the author).
    pub fn needed(&self, p: &Message) -> (Vec<Role>, bool) {
        match p.declared_voters() {
            Some(_) => (p.electorate(), true),
            None => (
                self.roster
                    .iter()
                    .filter(|r| **r != p.from)
                    .cloned()
                    .collect(),
                false,
            ),
        }
    }

    /// The approval rule of a pin write, checked in the protocol's order.
    pub fn check_pin_set(&self, set: &PinSet) -> Result<(), Blocked> {
        let key = set.key.as_str();
        let head = self.head(key);
        let Some(approved_by) = set.approved_by else {
            if self.is_protected(key) {
                let what = if head.is_some() {
                    "updating"
                } else {
                    "creating"
                };
                return Err(Blocked::value(format!(
                    "key '{key}' is protected (reserved, or previously updated with approval): \
                     {what} it requires 'approved_by' — the id of a proposal (kind='proc', \
                     pin_key='{key}') that the roles it needs agreed to"
                )));
            }
            return self.check_base(set, head);
        };
        let pid = approved_by.short();
        let p = self
            .messages
            .get(&approved_by)
            .filter(|m| m.deleted.is_none())
            .ok_or_else(|| {
                Blocked::value(format!(
                    "approved_by message {pid} not found; list_messages or \
                     search_messages shows the ids this role can see"
                ))
            })?;
        if !p.is_proposal() {
            let kind = p.send.kind.map_or("null", |k| k.as_str());
            return Err(Blocked::value(format!(
                "message {pid} is not a proposal (kind={kind}) — only a kind='proc' message can \
                 approve a pin; send one with pin_key='{key}' and collect the votes"
            )));
        }
        match p.send.pin_key.as_deref() {
            Some(k) if k != key => {
                return Err(Blocked::value(format!(
                    "message {pid} is a proposal for pin '{k}', not '{key}'; pass a proposal with \
                     pin_key='{key}' as approved_by"
                )));
            }
            Some(_) => {}
            None => {
                if !p.text.mentions(key) {
                    return Err(Blocked::value(format!(
                        "message {pid} does not name '{key}' — send proposals with \
                         pin_key='{key}'"
                    )));
                }
                if let Some(round) = self.open_round(key) {
                    return Err(Blocked::value(format!(
                        "message {pid} only mentions '{key}' in its text, and '{key}' has an open \
                         round (#{}) — approve with that round, or close it first",
                        round.id.short()
                    )));
                }
            }
        }
        let tally = p.tally();
        if !tally.void_by.is_empty() {
            return Err(Blocked::value(format!(
                "proposal {pid} was declared void by {} — a dead round cannot approve a pin; \
                 propose again",
                names(&tally.void_by)
            )));
        }
        let (needed, declared) = self.needed(p);
        if !tally.decisions.values().any(|d| *d == Decision::Agree) {
            return Err(Blocked {
                refusal: Refusal::Value(format!(
                    "message {pid} has no 'agree' acknowledgement, so the change is not agreed \
                     yet; wait for the voters' 'agree' (get_acknowledgements shows the votes)"
                )),
                missing_agrees: needed,
                winner: None,
            });
        }
        if let Some(spent) = p.approved {
            return Err(Blocked {
                winner: Some(spent.id),
                ..Blocked::value(format!(
                    "message {pid} already approved a pin update — propose again for further \
                     changes"
                ))
            });
        }
        let head_id = head.map(|h| h.key.id);
        let mut missing = Vec::new();
        let mut stale = Vec::new();
        for r in &needed {
            match p.votes.get(r) {
                Some(v) if v.decision == Decision::Agree && v.body_sha256 == p.text.sha256 => {
                    if v.pin_head != head_id {
                        stale.push(r.clone());
                    }
                }
                _ => missing.push(r.clone()),
            }
        }
        if !missing.is_empty() {
            let whose = if declared {
                format!("the roles it named ({})", names(&needed))
            } else {
                "ALL roles".to_owned()
            };
            return Err(Blocked {
                refusal: Refusal::Value(format!(
                    "'{key}' needs the consent of {whose}: proposal {pid} still lacks 'agree' from \
                     {}; wait for their 'agree' (get_acknowledgements shows the votes)",
                    names(&missing)
                )),
                missing_agrees: missing,
                winner: None,
            });
        }
        if !stale.is_empty() {
            let version = head.map_or_else(String::new, |h| format!(" ({})", h.set.version));
            return Err(Blocked {
                refusal: Refusal::Value(format!(
                    "the 'agree' of {} on proposal {pid} predates the current '{key}' version{version} \
                     — consent is stale; they acknowledge again on the new state, or propose again",
                    names(&stale)
                )),
                missing_agrees: stale,
                winner: head_id,
            });
        }
        self.check_base(set, head)
    }

    /// A write on a protected key must replace the version its author saw.
    fn check_base(&self, set: &PinSet, head: Option<&PinVersion>) -> Result<(), Blocked> {
        let head_id = head.map(|h| h.key.id);
        if set.base == head_id || !self.is_protected(&set.key) {
            return Ok(());
        }
        let h = head.expect("a base differs only when there is a head");
        Err(Blocked {
            winner: Some(h.key.id),
            ..Blocked::value(format!(
                "'{}' moved to version {} (#{}) since this version was decided — read it and \
                 propose again",
                set.key,
                h.set.version,
                h.key.id.short()
            ))
        })
    }

    fn create(&mut self, rec: Applied<'_>, s: &Send) {
        let mut m = Message::create(rec.key, rec.role, s);
        if let Some(t) = s.about {
            self.nudges.entry(t).or_default().push(m.id);
            if self.messages.get(&t).is_some_and(|t| !t.is_live()) {
                let why = format!("target #{} was already settled", t.short());
                m.retire(rec.key, rec.role, Retired::Live, why);
            }
        }
        if let (true, Some(key)) = (m.is_proposal(), s.pin_key.as_deref())
            && let Some(round) = self.open_round(key)
        {
            let winner = round.id;
            m.round_conflict = Some(winner);
            m.conflicts.push(Conflict {
                record: rec.key,
                role: rec.role.clone(),
                op: OpKind::Send.as_str(),
                reason: format!(
                    "a round on '{key}' was already open (#{}) when this one was opened",
                    winner.short()
                ),
                winner: Some(winner),
            });
            let why = format!("round conflict: #{} holds '{key}'", winner.short());
            m.retire(rec.key, rec.role, Retired::Live, why);
        }
        self.messages.insert(m.id, m);
    }

    fn set_pin(&mut self, rec: Applied<'_>, set: &PinSet) {
        let key = set.key.clone();
        if let Some(p) = set.approved_by.and_then(|id| self.messages.get_mut(&id)) {
            p.approved = Some(rec.key);
        }
        self.pins.entry(key.clone()).or_default().push(PinVersion {
            key: rec.key,
            role: rec.role.clone(),
            set: set.clone(),
        });
        let why = format!("'{key}' moved to version {}", set.version);
        let settled: Vec<RecordId> = self
            .messages
            .values()
            .filter(|m| m.is_proposal() && m.is_live())
            .filter(|m| match m.send.pin_key.as_deref() {
                Some(k) => k == key,
                None => m.text.mentions(&key),
            })
            .map(|m| m.id)
            .collect();
        for id in settled {
            self.retire(id, rec, &Retired::Live, &why);
        }
    }

    fn backfill(&mut self, rec: Applied<'_>, b: &Backfill) {
        let date = format_rfc3339(rec.key.hlc.ms());
        let words: Vec<String> = b
            .keys
            .iter()
            .zip(&b.words)
            .map(|(k, w)| format!("key {k} (word: #{})", w.short()))
            .collect();
        let why = format!(
            "backfill of the supersede rule, applied {}; {}",
            &date[..10.min(date.len())],
            words.join(", ")
        );
        let how = Retired::Backfill(b.keys.clone());
        for id in &b.ids {
            self.retire(*id, rec, &how, &why);
        }
    }

    fn undo(&mut self, rec: Applied<'_>, u: &UndoBackfill) {
        for id in &u.ids {
            if let Some(m) = self.messages.get_mut(id) {
                m.restore(rec.key, rec.role, u.reason.clone());
            }
        }
    }

    /// Retires `id` and, transitively, the nudges about it.
    fn retire(&mut self, id: RecordId, rec: Applied<'_>, how: &Retired, why: &str) {
        let Some(m) = self.messages.get_mut(&id) else {
            return;
        };
        if m.retire(rec.key, rec.role, how.clone(), why.to_owned()) {
            let why = format!("target settled: {why}");
            self.cascade(id, rec, how, &why);
        }
    }

    /// Retires the live nudges about `target`, and theirs.
    fn cascade(&mut self, target: RecordId, rec: Applied<'_>, how: &Retired, why: &str) {
        let mut todo = vec![target];
        while let Some(t) = todo.pop() {
            for n in self.nudges.get(&t).cloned().unwrap_or_default() {
                if let Some(m) = self.messages.get_mut(&n)
                    && m.retire(rec.key, rec.role, how.clone(), why.to_owned())
                {
                    todo.push(n);
                }
            }
        }
    }

    /// A vote on `target` retires its author's nudges about it.
    fn retire_nudges_of(&mut self, target: RecordId, rec: Applied<'_>) {
        let mine: Vec<RecordId> = self
            .nudges
            .get(&target)
            .into_iter()
            .flatten()
            .filter(|n| {
                self.messages
                    .get(n)
                    .is_some_and(|m| m.is_live() && m.deliveries.contains_key(rec.role))
            })
            .copied()
            .collect();
        let why = format!("acknowledged message {}", target.short());
        for n in mine {
            self.retire(n, rec, &Retired::Live, &why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlc::Hlc;
    use crate::op::Ack;
    use crate::vocab::Kind;

    fn role(s: &str) -> Role {
        Role::new(s).unwrap()
    }

    fn key(ms: i64, tag: &str) -> OrderKey {
        OrderKey {
            hlc: Hlc(ms, 0),
            id: RecordId::of_body(tag.as_bytes()),
        }
    }

    fn proposal(pin_key: Option<&str>, body: &str) -> Op {
        Op::Send(Send {
            to: vec![role("b")],
            topic: "p".into(),
            body: body.into(),
            kind: Some(Kind::Proc),
            decision_requested: true,
            pin_key: pin_key.map(str::to_owned),
            voters: pin_key.map(|_| vec![role("b")]),
            ..Send::default()
        })
    }

    fn agree(id: RecordId, body: &str, head: Option<RecordId>) -> Op {
        Op::Ack(Ack {
            id,
            decision: Decision::Agree,
            note: None,
            body_sha256: sha256_hex(body.as_bytes()),
            pin_head: head,
        })
    }

    fn set(version: &str, approved_by: RecordId, base: Option<RecordId>) -> Op {
        Op::PinSet(PinSet {
            key: "glossary".into(),
            title: "t".into(),
            version: version.into(),
            body: version.into(),
            body_ref: None,
            approved_by: Some(approved_by),
            base,
        })
    }

    /// Two approved writes to a protected key from the same base (decided apart): the
    /// later one in the order loses to the earlier, whatever order the records came in.
    #[test]
    fn two_writes_from_one_base_keep_the_first() {
        let (a, b) = (role("a"), role("b"));
        let (round, mention) = (key(1, "round"), key(2, "mention"));
        let recs = [
            (round, &a, proposal(Some("glossary"), "words")),
            (mention, &a, proposal(None, "the glossary, again")),
            (key(3, "ack1"), &b, agree(round.id, "words", None)),
            (
                key(4, "ack2"),
                &b,
                agree(mention.id, "the glossary, again", None),
            ),
            (key(5, "set1"), &a, set("v1", round.id, None)),
            (key(6, "set2"), &b, set("v1-bis", mention.id, None)),
        ];
        let roster = [a.clone(), b.clone()];
        let forward = Consent::fold(
            &roster,
            recs.iter().map(|(k, r, op)| Applied {
                key: *k,
                role: r,
                op,
            }),
        );
        let backward = Consent::fold(
            &roster,
            recs.iter().rev().map(|(k, r, op)| Applied {
                key: *k,
                role: r,
                op,
            }),
        );
        assert_eq!(forward, backward);
        let versions = &forward.pins["glossary"];
        assert_eq!(versions.len(), 1);
        assert_eq!(versions[0].set.version, "v1");
        assert_eq!(forward.conflicts.len(), 1);
        let c = &forward.conflicts[0].conflict;
        assert_eq!(c.record, key(6, "set2"));
        // The agree behind the second write was cast before v1 existed: it is stale
        // consent, and the version that won is named.
        assert_eq!(c.winner, Some(key(5, "set1").id));
        assert!(
            c.reason
                .contains("predates the current 'glossary' version (v1)"),
            "{}",
            c.reason
        );
        assert!(forward.messages[&round.id].approved.is_some());
        assert!(forward.messages[&mention.id].approved.is_none());
    }
}
