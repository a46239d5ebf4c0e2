//! The cleanup pass: which live messages the retirement rules would have
//! retired had they existed when the history was written.
//!
//! Three kinds of candidate, from strongest to weakest:
//! - **key**: a live proposal created before the current version of a pin
//!   that claims it (by its `pin_key`, or by naming the key in its text when it
//!   has none);
//! - **target**: a live message whose `about` target is deleted or retired, or
//!   a proposal without one that cites such a dead message as `#id`;
//! - **reference**: a proposal citing (`#id`, one level) a message already in
//!   the candidate set.
//!
//! Approval records are never candidates. Pure: message lookups for citations
//! are passed in by the caller.

use std::collections::{BTreeMap, BTreeSet};

use super::consent::Consent;
use super::hlc::OrderKey;
use super::ids::{RecordId, Role};
use super::message::Message;

/// How a candidate was matched, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchKind {
    /// Claimed by a pin key.
    Key,
    /// Its target is dead.
    Target,
    /// It cites a candidate.
    Reference,
}

impl MatchKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Key => "key",
            Self::Target => "target",
            Self::Reference => "reference",
        }
    }
}

/// Why a candidate is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// A pin version that claims it.
    Key {
        /// The key.
        key: String,
        /// Its current version label.
        version: String,
        /// The version's record.
        at: OrderKey,
        /// Who wrote the version.
        by: Role,
        /// `pin_key` or `text`.
        matched_by: &'static str,
    },
    /// A dead message it is about or cites.
    Target {
        /// The dead message.
        target: RecordId,
        /// `deleted` or `superseded`.
        reason: &'static str,
        /// `target` (structural) or `target_text` (cited as `#id`).
        matched_by: &'static str,
    },
    /// A candidate it cites.
    Reference {
        /// The cited candidate.
        cites: RecordId,
    },
}

/// One candidate of the cleanup pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The message.
    pub id: RecordId,
    /// Every reason, key claims first.
    pub settled_by: Vec<Settled>,
    /// The keys that claim it, sorted.
    pub claimed_by: Vec<String>,
    /// The strongest match.
    pub kind: MatchKind,
}

/// What a citation `#prefix` in a text refers to: the message, and why it is
/// dead (`None` while it is live).
pub type Cited = Option<(RecordId, Option<&'static str>)>;

/// Every candidate, in message order. `cite` resolves an id prefix written
/// as `#prefix` in a text.
pub fn candidates(c: &Consent, cite: &dyn Fn(&str) -> Cited) -> Vec<Candidate> {
    let approvals: BTreeSet<RecordId> = c
        .pins
        .values()
        .flatten()
        .filter_map(|v| v.set.approved_by)
        .collect();
    let mut out: BTreeMap<RecordId, Candidate> = BTreeMap::new();
    let add =
        |out: &mut BTreeMap<RecordId, Candidate>, m: &Message, s: Settled, kind: MatchKind| {
            let e = out.entry(m.id).or_insert_with(|| Candidate {
                id: m.id,
                settled_by: Vec::new(),
                claimed_by: Vec::new(),
                kind,
            });
            if let Settled::Key { key, .. } = &s {
                e.claimed_by.push(key.clone());
            }
            e.kind = e.kind.min(kind);
            e.settled_by.push(s);
        };
    let live = || {
        c.messages
            .values()
            .filter(|m| m.is_live() && !approvals.contains(&m.id))
    };
    for m in live() {
        // Key claims.
        if m.is_proposal() {
            for (key, versions) in &c.pins {
                let Some(head) = versions.last() else {
                    continue;
                };
                if head.key <= m.created_key() {
                    continue;
                }
                let matched_by = match m.send.pin_key.as_deref() {
                    Some(k) if k == key => "pin_key",
                    None if m.text.mentions(key) => "text",
                    _ => continue,
                };
                add(
                    &mut out,
                    m,
                    Settled::Key {
                        key: key.clone(),
                        version: head.set.version.clone(),
                        at: head.key,
                        by: head.role.clone(),
                        matched_by,
                    },
                    MatchKind::Key,
                );
            }
        }
        // Dead targets.
        if let Some(t) = m.send.about {
            if let Some(reason) = c.messages.get(&t).and_then(dead) {
                add(
                    &mut out,
                    m,
                    Settled::Target {
                        target: t,
                        reason,
                        matched_by: "target",
                    },
                    MatchKind::Target,
                );
            }
        } else if m.is_proposal() {
            for prefix in citations(m) {
                if let Some((t, Some(reason))) = cite(&prefix)
                    && t != m.id
                {
                    add(
                        &mut out,
                        m,
                        Settled::Target {
                            target: t,
                            reason,
                            matched_by: "target_text",
                        },
                        MatchKind::Target,
                    );
                }
            }
        }
    }
    // References, one level deep, to what is already a candidate.
    let first: BTreeSet<RecordId> = out.keys().copied().collect();
    for m in live().filter(|m| m.is_proposal()) {
        for prefix in citations(m) {
            if let Some((t, _)) = cite(&prefix)
                && first.contains(&t)
                && t != m.id
            {
                add(
                    &mut out,
                    m,
                    Settled::Reference { cites: t },
                    MatchKind::Reference,
                );
            }
        }
    }
    for cand in out.values_mut() {
        cand.claimed_by.sort();
        cand.claimed_by.dedup();
    }
    let mut v: Vec<Candidate> = out.into_values().collect();
    v.sort_by_key(|cand| c.messages[&cand.id].created_key());
    v
}

fn dead(m: &Message) -> Option<&'static str> {
    if m.deleted.is_some() {
        Some("deleted")
    } else if m.retired.is_some() {
        Some("superseded")
    } else {
        None
    }
}

/// The `#id` citations in a message's text (6 to 64 hex characters).
pub fn citations(m: &Message) -> Vec<String> {
    let mut out = Vec::new();
    for text in [&m.text.topic, &m.text.body] {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'#' {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j].is_ascii_hexdigit() && !b[j].is_ascii_uppercase() {
                    j += 1;
                }
                let word_ends = j == b.len() || !b[j].is_ascii_alphanumeric();
                if (6..=64).contains(&(j - start)) && word_ends {
                    out.push(text[start..j].to_owned());
                }
                i = j.max(i + 1);
            } else {
                i += 1;
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlc::Hlc;
    use crate::op::Send;

    fn msg(topic: &str, body: &str) -> Message {
        let send = Send {
            to: vec![Role::new("b").unwrap()],
            topic: topic.into(),
            body: body.into(),
            decision_requested: true,
            ..Send::default()
        };
        let key = OrderKey {
            hlc: Hlc(1, 0),
            id: RecordId::of_body(b"m"),
        };
        Message::create(key, &Role::new("a").unwrap(), &send)
    }

    #[test]
    fn citations_are_hex_words_of_six_to_sixty_four_characters() {
        let m = msg(
            "see #abc123",
            "also #0123456789ab, not #12345 nor #ABCDEF12 nor #abc123x, and #abc123 again; \
             #deadbeef.",
        );
        assert_eq!(
            citations(&m),
            vec!["0123456789ab", "abc123", "deadbeef"],
            "too short, upper case and glued words are not citations; repeats count once"
        );
        assert!(citations(&msg("#", "#")).is_empty());
    }
}
