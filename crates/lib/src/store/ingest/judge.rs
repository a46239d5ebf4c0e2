//! The judge: what to do with one record read from a feed's files. Pure: it
//! reads no file and no index and has no clock. Everything it weighs is
//! handed in: what the pass knows of the feed ([`FeedView`]: its key, a key
//! replacement waiting, its head, whether it is frozen, the id already held
//! at the record's seq), local time, and what is known of the signature
//! ([`Checked`]: a check made ahead, the records this process signed).
//!
//! The order of the checks is part of the rule, and every machine keeps it:
//! channel and feed first, then the admission, then the chain (a record
//! already known costs one lookup, not a verification), then the signature
//! under the key that applies at its seq, then a fork or a broken chain, the
//! time (held, never rejected), the op and where it was found.
//!
//! It decides only; the pass acts on the [`Judgment`] (problems, waits, a
//! fork taken back, a record applied).

use std::collections::HashSet;
use std::convert::Infallible;

use ed25519_dalek::VerifyingKey;

use super::feeds::FeedState;
use super::{Vouch, vouch};
use crate::core::chain::{self, Fit};
use crate::core::ids::{FeedId, RecordId};
use crate::core::memory;
use crate::core::op::{self, Op};
use crate::core::peer_text::{describe, first_hazard};
use crate::core::record::{Record, parse_pubkey};
use crate::core::signature;
use crate::store::fold::invitation;

/// A record dated more than this far past local time is held.
pub const HOLD_AHEAD_MS: i64 = 5 * 60 * 1000;
/// A record dated more than this far past local time also raises a clock alarm.
pub const CLOCK_ALARM_MS: i64 = 24 * 60 * 60 * 1000;

/// What the judge is told of the feed a record was read from.
pub(super) struct FeedView<'v, 'r> {
    /// The channel's id.
    pub channel: &'v str,
    /// The feed whose folder the record was read from.
    pub feed: &'v FeedId,
    /// What the pass knows of that feed now.
    pub state: &'r FeedState,
    /// The id of the record applied at the record's seq, when that seq is
    /// at or below the feed's head (the caller looks it up): `None` when
    /// there is none, or the seq is past the head.
    pub known_at: Option<RecordId>,
}

/// What is known of a record's signature before it is judged. A record not
/// covered here is verified by the judge itself.
pub(super) struct Checked<'v> {
    /// A check made ahead ([`super::read_ahead`]) and the key it used: it
    /// holds only if that key is the one that applies at the record's seq.
    pub ahead: Option<(VerifyingKey, bool)>,
    /// Records this process signed a moment ago ([`Vouch`]).
    pub vouched: &'v HashSet<Vouch>,
}

/// Why a record is quarantined: kept in the files as it is, never applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Quarantine {
    /// It names another channel.
    OtherChannel,
    /// It is signed for another feed than the folder it lies in.
    ForeignFeed,
    /// Its signature does not verify under the key that applies.
    BadSignature,
    /// It claims to be next but does not link to the head, or its clock goes back.
    BrokenChain(String),
    /// Its op does not belong where it was found (see [`misplaced`]).
    Misplaced(String),
    /// A one-line field holds what no tool writes there (see [`unprintable`]).
    Unprintable(String),
}

impl Quarantine {
    /// The problem's text, for `rec` found in `feed`.
    pub(super) fn reason(&self, feed: &FeedId, rec: &Record) -> String {
        match self {
            Self::OtherChannel => format!(
                "record of another channel ({}…)",
                rec.header.ch.get(..12).unwrap_or(&rec.header.ch)
            ),
            Self::ForeignFeed => format!(
                "record signed for feed {} found in feed {feed}",
                rec.header.feed
            ),
            Self::BadSignature => "bad signature".into(),
            Self::BrokenChain(why) => format!("broken chain: {why}"),
            Self::Misplaced(why) | Self::Unprintable(why) => why.clone(),
        }
    }
}

/// What to do with one record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Judgment<'r> {
    /// Never applied; its line is consumed and a `quarantine` problem names why.
    Quarantine(Quarantine),
    /// The feed has no key: its records wait for an admit. `claim` is the
    /// record's claim of an invitation when it is one, signed by the key it
    /// names, so the owner's machine can admit the feed.
    Unadmitted { claim: Option<&'r op::Claim> },
    /// Already applied (a rescan, a duplicated line): skipped.
    Seen,
    /// The feed is frozen (a fork, an op this version does not know): its
    /// records wait. Holds the freeze's reason.
    Frozen(&'r str),
    /// A record is missing before this one: it waits for seq `expected`.
    Gap { expected: u64, found: u64 },
    /// Another valid record was applied at this seq: a fork. Neither
    /// branch stands from this seq on and the feed freezes.
    Fork { existing: RecordId },
    /// Dated `ahead_ms` past local time, more than [`HOLD_AHEAD_MS`]: held
    /// until the clock catches up; `alarm` past [`CLOCK_ALARM_MS`].
    Hold { ahead_ms: i64, alarm: bool },
    /// An op this version does not know: the feed freezes until an upgrade.
    UnknownOp,
    /// Applied: `op`, with the feed's key first replaced by `new_key` when
    /// an owner's key replacement starts at this record's seq.
    Accept {
        op: &'r Op,
        new_key: Option<VerifyingKey>,
    },
}

/// Judges `rec`, read from the folder of `view.feed`, at local time
/// `now_ms` (ms), with what is known of its signature in `checked`.
pub(super) fn judge<'r>(
    view: &FeedView<'_, 'r>,
    rec: &'r Record,
    now_ms: i64,
    checked: &Checked<'_>,
) -> Judgment<'r> {
    if rec.header.ch != view.channel {
        return Judgment::Quarantine(Quarantine::OtherChannel);
    }
    if &rec.header.feed != view.feed {
        return Judgment::Quarantine(Quarantine::ForeignFeed);
    }
    let state = view.state;
    let Some(key) = state.pubkey else {
        // A feed joining by invitation starts with its claim, signed by the
        // key it names.
        return Judgment::Unadmitted {
            claim: invitation::self_signed_claim(rec, rec.op.as_ref()),
        };
    };
    // The chain is checked before the signature: a record already known
    // (a rescan, a duplicated line) costs one lookup, not a verification.
    let fit = match chain::fit(state.head, &rec.header, rec.id, |_| {
        Ok::<_, Infallible>(view.known_at)
    }) {
        Ok(fit) => fit,
        Err(never) => match never {},
    };
    if fit == Fit::Known {
        return Judgment::Seen;
    }
    if let Some(frozen) = state.frozen.as_deref() {
        return Judgment::Frozen(frozen);
    }
    if let Fit::Gap { expected } = fit {
        return Judgment::Gap {
            expected,
            found: rec.header.seq,
        };
    }
    // From an owner's key replacement on, the feed's records carry the new key.
    let switch = state
        .pending_key
        .filter(|(from, _)| rec.header.seq >= *from)
        .map(|(_, k)| k);
    let key = switch.unwrap_or(key);
    // A check made ahead holds only if it used the key that applies now
    // (a key replacement earlier in the run changes it).
    let verified = checked
        .ahead
        .filter(|(k, _)| *k == key)
        .map(|(_, ok)| ok)
        .or_else(|| checked.vouched.contains(&vouch(rec, &key)).then_some(true));
    if !verified.unwrap_or_else(|| rec.verify(&key)) {
        return Judgment::Quarantine(Quarantine::BadSignature);
    }
    match fit {
        Fit::Next | Fit::Known | Fit::Gap { .. } => {}
        Fit::Broken(why) => return Judgment::Quarantine(Quarantine::BrokenChain(why)),
        Fit::Fork { existing } => return Judgment::Fork { existing },
    }
    let ahead_ms = rec.header.hlc.ms().saturating_sub(now_ms);
    if ahead_ms > HOLD_AHEAD_MS {
        return Judgment::Hold {
            ahead_ms,
            alarm: ahead_ms > CLOCK_ALARM_MS,
        };
    }
    let Some(op) = rec.op.as_ref() else {
        return Judgment::UnknownOp;
    };
    if let Some(why) = misplaced(view.feed, rec, op, &key) {
        return Judgment::Quarantine(Quarantine::Misplaced(why));
    }
    if let Some(why) = unprintable(op) {
        return Judgment::Quarantine(Quarantine::Unprintable(why));
    }
    Judgment::Accept {
        op,
        new_key: switch,
    }
}

/// Ops that do not belong where they were found: only the owner admits, only
/// role feeds carry messages, and a feed_init must match the admitted key.
fn misplaced(feed: &FeedId, rec: &Record, op: &Op, key: &VerifyingKey) -> Option<String> {
    match op {
        Op::Admit(_) if !feed.is_owner() => {
            Some("only the channel owner's feed may admit feeds".into())
        }
        Op::Admit(a) if a.feed.role() != a.role.as_str() => {
            Some(format!("admit of {} names role '{}'", a.feed, a.role))
        }
        Op::Admit(a) if a.role.is_reserved() => Some(format!(
            "admit of {} names the reserved role '{}'",
            a.feed, a.role
        )),
        Op::Admit(a) => unusable_key(&a.pubkey)
            .map(|why| format!("admit of {} carries no usable public key: {why}", a.feed)),
        Op::AddRole(_) if !feed.is_owner() => {
            Some("only the channel owner's feed may add roles".into())
        }
        Op::AddRole(a) if a.role.is_reserved() => {
            Some(format!("add_role names the reserved role '{}'", a.role))
        }
        Op::AddRole(_) => None,
        Op::ReplaceKey(r) if r.feed.is_owner() => {
            Some("the owner's key is fixed by channel.json and cannot be replaced".into())
        }
        Op::ReplaceKey(r) if !feed.is_owner() && &r.feed != feed => Some(format!(
            "replace_key for feed {} found in feed {feed}",
            r.feed
        )),
        Op::ReplaceKey(r) if feed.is_owner() && r.from_seq.is_none_or(|s| s == 0) => Some(format!(
            "the owner's replace_key for {} names no from_seq",
            r.feed
        )),
        Op::ReplaceKey(r) if !feed.is_owner() && r.from_seq.is_some() => {
            Some("a feed's own replace_key takes effect at its next record: no from_seq".into())
        }
        Op::ReplaceKey(r) => unusable_key(&r.pubkey)
            .map(|why| format!("replace_key carries no usable public key: {why}")),
        Op::Invite(_) if !feed.is_owner() => {
            Some("only the channel owner's feed may invite".into())
        }
        Op::Invite(i) if i.role.is_reserved() => {
            Some(format!("invite names the reserved role '{}'", i.role))
        }
        Op::Invite(i) => unusable_key(&i.key)
            .map(|why| format!("invite carries no usable invitation key: {why}")),
        Op::Summary(sm) if !feed.is_owner() => memory::summary::check(sm)
            .err()
            .map(|e| format!("summary refused: {e}")),
        Op::Note(note) if !feed.is_owner() => memory::note::check(note)
            .err()
            .map(|e| format!("note refused: {e}")),
        _ if feed.is_owner() => Some(format!(
            "op '{}' does not belong in the owner's feed",
            rec.op_name
        )),
        Op::FeedInit(_) if rec.header.seq != 1 => {
            Some(format!("feed_init at seq {} (must be 1)", rec.header.seq))
        }
        Op::FeedInit(fi) if fi.role.as_str() != feed.role() => {
            Some(format!("feed_init names role '{}' in feed {feed}", fi.role))
        }
        Op::FeedInit(fi) if parse_pubkey(&fi.pubkey).as_ref() != Some(key) => {
            Some(unusable_key(&fi.pubkey).map_or_else(
                || "feed_init carries a key other than the admitted one".into(),
                |why| format!("feed_init carries no usable public key: {why}"),
            ))
        }
        Op::FeedInit(_) => None,
        // A claim takes feed_init's place, under the same rules.
        Op::Claim(_) if rec.header.seq != 1 => {
            Some(format!("claim at seq {} (must be 1)", rec.header.seq))
        }
        Op::Claim(c) if c.role.as_str() != feed.role() => {
            Some(format!("claim names role '{}' in feed {feed}", c.role))
        }
        Op::Claim(c) if parse_pubkey(&c.pubkey).as_ref() != Some(key) => {
            Some(unusable_key(&c.pubkey).map_or_else(
                || "claim carries a key other than the admitted one".into(),
                |why| format!("claim carries no usable public key: {why}"),
            ))
        }
        Op::Claim(_) => None,
        _ if rec.header.seq == 1 => {
            Some("a role feed must start with feed_init (or a claim)".into())
        }
        _ => None,
    }
}

/// Why a key a record carries cannot be used (not hex, not a point, not
/// canonical, of small order), if it cannot: where a key enters the channel
/// it must be one that signatures can be trusted under (`signature`).
fn unusable_key(hex: &str) -> Option<String> {
    signature::parse_key(hex).err().map(|e| e.to_string())
}

/// A one-line field that holds what no tool writes there (a line break, a
/// control, bidirectional or invisible character): such a field could pass
/// for two lines, or read otherwise than it is stored, wherever it is shown.
fn unprintable(op: &Op) -> Option<String> {
    op.one_line_fields().into_iter().find_map(|(field, value)| {
        let (at, c) = first_hazard(value)?;
        Some(format!(
            "'{field}' holds {} (U+{:04X}) at character {at}: a one-line field is plain text",
            describe(c),
            c as u32
        ))
    })
}

/// A duration in words for alarms: "2 d 0 h", "1 h 0 min", "7 min".
pub(super) fn span(ms: i64) -> String {
    let min = (ms + 30_000) / 60_000;
    match min {
        m if m >= 24 * 60 => format!("{} d {} h", m / (24 * 60), m % (24 * 60) / 60),
        m if m >= 60 => format!("{} h {} min", m / 60, m % 60),
        m => format!("{m} min"),
    }
}

#[cfg(test)]
mod tests {
    //! Each case of the judgment, on records made here and a feed state
    //! written out by hand: no folder, no index, no clock.

    use ed25519_dalek::SigningKey;

    use super::*;
    use crate::core::chain::Head;
    use crate::core::hlc::Hlc;
    use crate::core::ids::Role;
    use crate::core::op::{Admit, FeedInit};
    use crate::core::record::{self, Header, pubkey_hex};

    const CH: &str = "c0ffee00c0ffee00c0ffee00";
    /// Local time of every judgment here (ms).
    const NOW: i64 = 1_800_000_000_000;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn feed() -> FeedId {
        FeedId::new("backend", "laptop-1").unwrap()
    }

    fn owner() -> FeedId {
        FeedId::new(crate::core::ids::OWNER_FEED_ROLE, "laptop-1").unwrap()
    }

    fn feed_init(signer: &SigningKey) -> Op {
        Op::FeedInit(FeedInit {
            role: Role::new("backend").unwrap(),
            pubkey: pubkey_hex(&signer.verifying_key()),
            device_name: "laptop".into(),
        })
    }

    fn send(topic: &str) -> Op {
        let data = serde_json::json!({"to": ["frontend"], "topic": topic, "body": "hello"});
        Op::decode("send", &data.to_string()).unwrap().unwrap()
    }

    /// A record of `feed` at `seq` after `prev`, dated `ms`, signed by `signer`.
    fn rec_of(
        feed: &FeedId,
        seq: u64,
        prev: Option<&Record>,
        ms: i64,
        op: &Op,
        signer: &SigningKey,
    ) -> Record {
        let header = Header {
            ch: CH.into(),
            feed: feed.clone(),
            seq,
            prev: prev.map(|p| p.id),
            hlc: Hlc(ms, 0),
        };
        record::encode(&header, op, signer)
    }

    /// The first record of the test feed, by `signer`.
    fn first(signer: &SigningKey) -> Record {
        rec_of(&feed(), 1, None, NOW - 1000, &feed_init(signer), signer)
    }

    /// A feed admitted with `signer`'s key, its head at `head`.
    fn admitted(signer: &SigningKey, head: Option<&Record>) -> FeedState {
        FeedState {
            role: "backend".into(),
            pubkey: Some(signer.verifying_key()),
            pending_key: None,
            head: head.map(|r| Head {
                seq: r.header.seq,
                id: r.id,
                hlc: r.header.hlc,
            }),
            frozen: None,
            dirty: false,
        }
    }

    /// Judges `rec` as found in the test feed's folder, its signature not
    /// checked ahead.
    fn judged<'r>(
        state: &'r FeedState,
        rec: &'r Record,
        known_at: Option<RecordId>,
    ) -> Judgment<'r> {
        judged_in(&feed(), state, rec, known_at)
    }

    fn judged_in<'r>(
        feed: &FeedId,
        state: &'r FeedState,
        rec: &'r Record,
        known_at: Option<RecordId>,
    ) -> Judgment<'r> {
        let vouched = HashSet::new();
        let view = FeedView {
            channel: CH,
            feed,
            state,
            known_at,
        };
        let checked = Checked {
            ahead: None,
            vouched: &vouched,
        };
        judge(&view, rec, NOW, &checked)
    }

    fn quarantined(j: Judgment<'_>) -> Quarantine {
        match j {
            Judgment::Quarantine(q) => q,
            other => panic!("expected a quarantine, got {other:?}"),
        }
    }

    #[test]
    fn the_next_record_signed_by_the_feeds_key_is_accepted() {
        let k = key(1);
        let state = admitted(&k, None);
        let rec = first(&k);
        assert_eq!(
            judged(&state, &rec, None),
            Judgment::Accept {
                op: rec.op.as_ref().unwrap(),
                new_key: None
            }
        );
        let next = rec_of(&feed(), 2, Some(&rec), NOW, &send("hi"), &k);
        let state = admitted(&k, Some(&rec));
        assert!(matches!(
            judged(&state, &next, None),
            Judgment::Accept { new_key: None, .. }
        ));
    }

    #[test]
    fn a_record_of_another_channel_is_quarantined() {
        let k = key(1);
        let mut rec = first(&k);
        rec.header.ch = "another-channel-id".into();
        let state = admitted(&k, None);
        let q = quarantined(judged(&state, &rec, None));
        assert_eq!(q, Quarantine::OtherChannel);
        assert_eq!(
            q.reason(&feed(), &rec),
            "record of another channel (another-chan…)"
        );
    }

    #[test]
    fn a_record_signed_for_another_feed_is_quarantined() {
        let k = key(1);
        let elsewhere = FeedId::new("backend", "desktop-2").unwrap();
        let rec = rec_of(&elsewhere, 1, None, NOW, &feed_init(&k), &k);
        let state = admitted(&k, None);
        let q = quarantined(judged(&state, &rec, None));
        assert_eq!(q, Quarantine::ForeignFeed);
        assert_eq!(
            q.reason(&feed(), &rec),
            "record signed for feed backend/desktop-2 found in feed backend/laptop-1"
        );
    }

    #[test]
    fn a_feed_nobody_admitted_waits_unadmitted() {
        let k = key(1);
        let state = FeedState {
            pubkey: None,
            ..admitted(&k, None)
        };
        let rec = first(&k);
        assert_eq!(
            judged(&state, &rec, None),
            Judgment::Unadmitted { claim: None }
        );
    }

    #[test]
    fn an_unadmitted_feeds_self_signed_claim_is_named_for_the_owner() {
        let k = key(1);
        let state = FeedState {
            pubkey: None,
            ..admitted(&k, None)
        };
        let claim = |pubkey: String| {
            Op::Claim(op::Claim {
                invitation: first(&key(9)).id,
                role: Role::new("backend").unwrap(),
                pubkey,
                device_name: "laptop".into(),
                proof: "not checked here".into(),
            })
        };
        let own = claim(pubkey_hex(&k.verifying_key()));
        let rec = rec_of(&feed(), 1, None, NOW, &own, &k);
        let Judgment::Unadmitted { claim: Some(c) } = judged(&state, &rec, None) else {
            panic!("a claim signed by the key it names is noted");
        };
        assert_eq!(Some(&Op::Claim(c.clone())), rec.op.as_ref());
        // Signed by another key than the one it names: not a claim.
        let forged = rec_of(&feed(), 1, None, NOW, &own, &key(2));
        assert_eq!(
            judged(&state, &forged, None),
            Judgment::Unadmitted { claim: None }
        );
    }

    #[test]
    fn a_record_the_index_holds_at_its_seq_is_seen() {
        let k = key(1);
        let rec = first(&k);
        let state = admitted(&k, Some(&rec));
        assert_eq!(judged(&state, &rec, Some(rec.id)), Judgment::Seen);
        // Below the head but unknown to the index: taken as seen.
        assert_eq!(judged(&state, &rec, None), Judgment::Seen);
    }

    #[test]
    fn a_record_already_seen_is_not_verified_again() {
        // The chain comes first: a line known by id costs no verification,
        // so even a bad signature on it is no news.
        let k = key(1);
        let rec = first(&k);
        let state = admitted(&key(2), Some(&rec));
        assert_eq!(judged(&state, &rec, Some(rec.id)), Judgment::Seen);
    }

    #[test]
    fn a_frozen_feed_waits_with_the_reason_it_froze() {
        let k = key(1);
        let rec = first(&k);
        let state = FeedState {
            frozen: Some("fork at seq 2".into()),
            ..admitted(&k, Some(&rec))
        };
        let next = rec_of(&feed(), 2, Some(&rec), NOW, &send("hi"), &k);
        assert_eq!(
            judged(&state, &next, None),
            Judgment::Frozen("fork at seq 2")
        );
        // What it holds already is still seen.
        assert_eq!(judged(&state, &rec, Some(rec.id)), Judgment::Seen);
    }

    #[test]
    fn a_seq_gap_waits_for_the_missing_seq() {
        let k = key(1);
        let rec = first(&k);
        let state = admitted(&k, Some(&rec));
        let far = rec_of(&feed(), 5, Some(&rec), NOW, &send("hi"), &k);
        assert_eq!(
            judged(&state, &far, None),
            Judgment::Gap {
                expected: 2,
                found: 5
            }
        );
    }

    #[test]
    fn a_prev_that_does_not_name_the_head_is_a_broken_chain() {
        let k = key(1);
        let rec = first(&k);
        let state = admitted(&k, Some(&rec));
        let stranger = rec_of(&feed(), 1, None, NOW - 5, &feed_init(&k), &k);
        let next = rec_of(&feed(), 2, Some(&stranger), NOW, &send("hi"), &k);
        let q = quarantined(judged(&state, &next, None));
        assert!(
            matches!(&q, Quarantine::BrokenChain(why) if why.starts_with("prev does not name record")),
            "{q:?}"
        );
        assert!(q.reason(&feed(), &next).starts_with("broken chain: prev"));
    }

    #[test]
    fn a_clock_that_goes_back_is_a_broken_chain() {
        let k = key(1);
        let rec = first(&k);
        let state = admitted(&k, Some(&rec));
        let back = rec_of(
            &feed(),
            2,
            Some(&rec),
            rec.header.hlc.ms() - 1,
            &send("hi"),
            &k,
        );
        assert!(matches!(
            quarantined(judged(&state, &back, None)),
            Quarantine::BrokenChain(why) if why.starts_with("hlc")
        ));
    }

    #[test]
    fn a_first_record_with_a_prev_or_seq_zero_is_a_broken_chain() {
        let k = key(1);
        let state = admitted(&k, None);
        let other = first(&key(2));
        let with_prev = rec_of(&feed(), 1, Some(&other), NOW, &feed_init(&k), &k);
        assert!(matches!(
            quarantined(judged(&state, &with_prev, None)),
            Quarantine::BrokenChain(_)
        ));
        let zero = rec_of(&feed(), 0, None, NOW, &feed_init(&k), &k);
        assert!(matches!(
            quarantined(judged(&state, &zero, None)),
            Quarantine::BrokenChain(why) if why == "seq must start at 1"
        ));
    }

    #[test]
    fn a_record_signed_by_another_key_is_a_bad_signature() {
        let state = admitted(&key(1), None);
        let rec = first(&key(2));
        assert_eq!(
            quarantined(judged(&state, &rec, None)),
            Quarantine::BadSignature
        );
    }

    #[test]
    fn a_bad_signature_is_named_before_a_broken_chain() {
        // Nothing a stranger writes may pass for the feed's own mistake.
        let k = key(1);
        let rec = first(&k);
        let state = admitted(&k, Some(&rec));
        let stranger = first(&key(3));
        let next = rec_of(&feed(), 2, Some(&stranger), NOW, &send("hi"), &key(3));
        assert_eq!(
            quarantined(judged(&state, &next, None)),
            Quarantine::BadSignature
        );
    }

    #[test]
    fn another_valid_record_at_a_taken_seq_is_a_fork() {
        let k = key(1);
        let rec = first(&k);
        let second = rec_of(&feed(), 2, Some(&rec), NOW, &send("one"), &k);
        let branch = rec_of(&feed(), 2, Some(&rec), NOW, &send("two"), &k);
        let state = admitted(&k, Some(&second));
        assert_eq!(
            judged(&state, &branch, Some(second.id)),
            Judgment::Fork {
                existing: second.id
            }
        );
    }

    #[test]
    fn a_forged_record_at_a_taken_seq_is_a_bad_signature_not_a_fork() {
        let k = key(1);
        let rec = first(&k);
        let second = rec_of(&feed(), 2, Some(&rec), NOW, &send("one"), &k);
        let forged = rec_of(&feed(), 2, Some(&rec), NOW, &send("two"), &key(4));
        let state = admitted(&k, Some(&second));
        assert_eq!(
            quarantined(judged(&state, &forged, Some(second.id))),
            Quarantine::BadSignature
        );
    }

    #[test]
    fn a_record_dated_past_the_hold_limit_is_held() {
        let k = key(1);
        let state = admitted(&k, None);
        let ahead = HOLD_AHEAD_MS + 1;
        let rec = rec_of(&feed(), 1, None, NOW + ahead, &feed_init(&k), &k);
        assert_eq!(
            judged(&state, &rec, None),
            Judgment::Hold {
                ahead_ms: ahead,
                alarm: false
            }
        );
        // Up to the limit it is applied.
        let near = rec_of(&feed(), 1, None, NOW + HOLD_AHEAD_MS, &feed_init(&k), &k);
        assert!(matches!(
            judged(&state, &near, None),
            Judgment::Accept { .. }
        ));
    }

    #[test]
    fn a_record_dated_past_the_alarm_limit_is_held_with_a_clock_alarm() {
        let k = key(1);
        let state = admitted(&k, None);
        let ahead = CLOCK_ALARM_MS + 1;
        let rec = rec_of(&feed(), 1, None, NOW + ahead, &feed_init(&k), &k);
        assert_eq!(
            judged(&state, &rec, None),
            Judgment::Hold {
                ahead_ms: ahead,
                alarm: true
            }
        );
    }

    #[test]
    fn an_op_this_version_does_not_know_freezes_the_feed() {
        let k = key(1);
        let rec = first(&k);
        let mut next = rec_of(&feed(), 2, Some(&rec), NOW, &send("hi"), &k);
        // As `decode` leaves a record whose op it does not know (the signed
        // body is untouched).
        next.op = None;
        next.op_name = "teleport".into();
        let state = admitted(&k, Some(&rec));
        assert_eq!(judged(&state, &next, None), Judgment::UnknownOp);
    }

    #[test]
    fn a_role_feed_that_does_not_start_with_feed_init_is_misplaced() {
        let k = key(1);
        let state = admitted(&k, None);
        let rec = rec_of(&feed(), 1, None, NOW, &send("hi"), &k);
        assert_eq!(
            quarantined(judged(&state, &rec, None)),
            Quarantine::Misplaced("a role feed must start with feed_init (or a claim)".into())
        );
    }

    #[test]
    fn a_feed_init_with_another_key_than_the_admitted_one_is_misplaced() {
        let k = key(1);
        let state = admitted(&k, None);
        let rec = rec_of(&feed(), 1, None, NOW, &feed_init(&key(2)), &k);
        assert_eq!(
            quarantined(judged(&state, &rec, None)),
            Quarantine::Misplaced("feed_init carries a key other than the admitted one".into())
        );
    }

    #[test]
    fn an_admit_outside_the_owners_feed_is_misplaced() {
        let k = key(1);
        let rec = first(&k);
        let admit = Op::Admit(Admit {
            feed: FeedId::new("frontend", "desk-2").unwrap(),
            pubkey: pubkey_hex(&key(5).verifying_key()),
            role: Role::new("frontend").unwrap(),
        });
        let next = rec_of(&feed(), 2, Some(&rec), NOW, &admit, &k);
        let state = admitted(&k, Some(&rec));
        assert_eq!(
            quarantined(judged(&state, &next, None)),
            Quarantine::Misplaced("only the channel owner's feed may admit feeds".into())
        );
        // In the owner's feed it is applied.
        let o = key(7);
        let owner_state = FeedState {
            role: crate::core::ids::OWNER_FEED_ROLE.into(),
            ..admitted(&o, None)
        };
        let by_owner = rec_of(&owner(), 1, None, NOW, &admit, &o);
        assert!(matches!(
            judged_in(&owner(), &owner_state, &by_owner, None),
            Judgment::Accept { .. }
        ));
    }

    #[test]
    fn a_one_line_field_with_a_line_break_is_unprintable() {
        let k = key(1);
        let rec = first(&k);
        let next = rec_of(&feed(), 2, Some(&rec), NOW, &send("two\nlines"), &k);
        let state = admitted(&k, Some(&rec));
        assert!(matches!(
            quarantined(judged(&state, &next, None)),
            Quarantine::Unprintable(why) if why.starts_with("'topic' holds")
        ));
    }

    #[test]
    fn a_check_made_ahead_with_the_key_that_applies_is_taken() {
        let k = key(1);
        let state = admitted(&k, None);
        let rec = first(&k);
        let vouched = HashSet::new();
        let view = FeedView {
            channel: CH,
            feed: &feed(),
            state: &state,
            known_at: None,
        };
        // A failed check ahead stands: the record is not verified again.
        let failed = Checked {
            ahead: Some((k.verifying_key(), false)),
            vouched: &vouched,
        };
        assert_eq!(
            judge(&view, &rec, NOW, &failed),
            Judgment::Quarantine(Quarantine::BadSignature)
        );
        // Made with another key (replaced since): ignored, and verified here.
        let stale = Checked {
            ahead: Some((key(2).verifying_key(), false)),
            vouched: &vouched,
        };
        assert!(matches!(
            judge(&view, &rec, NOW, &stale),
            Judgment::Accept { .. }
        ));
    }

    #[test]
    fn a_record_this_process_signed_is_not_verified_again() {
        let k = key(1);
        let state = admitted(&k, None);
        // Its signature is another key's, but the vouch says this process
        // made it with the feed's key: trusted as such.
        let rec = rec_of(&feed(), 1, None, NOW, &feed_init(&k), &key(2));
        assert_eq!(
            quarantined(judged(&state, &rec, None)),
            Quarantine::BadSignature
        );
        let vouched: HashSet<Vouch> = [vouch(&rec, &k.verifying_key())].into();
        let view = FeedView {
            channel: CH,
            feed: &feed(),
            state: &state,
            known_at: None,
        };
        let checked = Checked {
            ahead: None,
            vouched: &vouched,
        };
        assert!(matches!(
            judge(&view, &rec, NOW, &checked),
            Judgment::Accept { new_key: None, .. }
        ));
    }

    #[test]
    fn an_owners_key_replacement_applies_from_its_seq_on() {
        let (old, new) = (key(1), key(2));
        let rec = first(&old);
        let state = FeedState {
            pending_key: Some((2, new.verifying_key())),
            ..admitted(&old, Some(&rec))
        };
        let by_new = rec_of(&feed(), 2, Some(&rec), NOW, &send("hi"), &new);
        assert_eq!(
            judged(&state, &by_new, None),
            Judgment::Accept {
                op: by_new.op.as_ref().unwrap(),
                new_key: Some(new.verifying_key())
            }
        );
        // From that seq on, the old key no longer signs for the feed.
        let by_old = rec_of(&feed(), 2, Some(&rec), NOW, &send("hi"), &old);
        assert_eq!(
            quarantined(judged(&state, &by_old, None)),
            Quarantine::BadSignature
        );
    }
}
