//! Running the consent fold over the index, and writing what it derives.
//!
//! The messages that take part in consent (proposals, nudges, the targets of
//! nudges, the messages pin writes name) are loaded with every record acting on
//! them, plus the pin writes and cleanup passes that concern them, and folded
//! together by [`Consent::fold`]. Effects never leave a [`Scope`] (a closed set
//! of messages and keys), so a pass that touches one proposal re-folds only its
//! scope, not every proposal of the channel. Ingest calls [`refold`]; the app
//! calls [`load_around`] (or [`load`]) to check a write against the same state.
//! What the records mean is `core::consent`'s business.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{OptionalExtension as _, params};

use crate::core::consent::Consent;
use crate::core::ids::{RecordId, Role};
use crate::core::message::{Applied, Message};
use crate::core::op::Op;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::fold::body::{body_of, message_body};
use crate::store::fold::records::{Decoded, decode_row, decoded_row, send_row, target_records};
use crate::store::index::{Index, IndexTx};

/// The consent state as of the index, with each message's ingest sequence.
pub struct Loaded {
    /// The folded state.
    pub consent: Consent,
    /// Ingest sequence of each message's `send`.
    pub n: BTreeMap<RecordId, i64>,
}

/// The ids of every message taking part in consent, given the channel-wide
/// records (pin writes name the messages that approve them).
fn domain(index: &Index, channel_ops: &[Decoded]) -> StoreResult<BTreeSet<RecordId>> {
    let mut out = ids_of(
        index,
        "SELECT id FROM messages WHERE kind = 'proc' \
         UNION SELECT id FROM messages WHERE pin_key IS NOT NULL \
         UNION SELECT id FROM messages WHERE about IS NOT NULL \
         UNION SELECT about FROM messages WHERE about IS NOT NULL",
        params![],
    )?;
    for (_, _, op) in channel_ops {
        if let Op::PinSet(ps) = op
            && let Some(a) = ps.approved_by
        {
            out.insert(a);
        }
    }
    Ok(out)
}

/// Every pin write and cleanup pass, decoded.
pub fn channel_ops(index: &Index) -> StoreResult<Vec<Decoded>> {
    let p = index.path();
    let mut st = index
        .conn()
        .prepare_cached(
            // The partial index `records_consent_ops`, word for word.
            "SELECT id, role, ms, c, body FROM records \
             WHERE op = 'pin_set' OR op = 'backfill' OR op = 'undo_backfill'",
        )
        .db(p)?;
    let rows = st.query_map([], decoded_row).db(p)?;
    let mut out = Vec::new();
    for r in rows {
        if let Some(d) = decode_row(r.db(p)?) {
            out.push(d);
        }
    }
    Ok(out)
}

/// A part of the channel that consent effects cannot leave: a set of messages
/// and pin keys closed under every link the fold follows (a proposal's key,
/// the keys a key-less proposal names in any of its texts, a nudge's target
/// and the nudges about a message, a pin write's approval). Folding a scope
/// alone gives exactly what folding the whole channel gives for it.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The messages.
    pub ids: BTreeSet<RecordId>,
    /// The pin keys.
    pub keys: BTreeSet<String>,
}

impl Scope {
    /// The smallest scope holding `ids` (those that take part in consent) and `keys`.
    pub fn around(
        index: &Index,
        channel: &[Decoded],
        ids: impl IntoIterator<Item = RecordId>,
        keys: impl IntoIterator<Item = String>,
    ) -> StoreResult<Self> {
        let sets: Vec<(&str, Option<RecordId>)> = channel
            .iter()
            .filter_map(|(_, _, op)| match op {
                Op::PinSet(ps) => Some((ps.key.as_str(), ps.approved_by)),
                _ => None,
            })
            .collect();
        let all_keys: BTreeSet<&str> = sets.iter().map(|(k, _)| *k).collect();
        let mut scope = Self::default();
        let mut todo_ids: Vec<RecordId> = ids.into_iter().collect();
        let mut todo_keys: Vec<String> = keys.into_iter().collect();
        while !todo_ids.is_empty() || !todo_keys.is_empty() {
            while let Some(key) = todo_keys.pop() {
                if !scope.keys.insert(key.clone()) {
                    continue;
                }
                todo_ids.extend(ids_of(
                    index,
                    "SELECT id FROM messages WHERE pin_key = ?1 UNION \
                     SELECT m.id FROM messages m WHERE m.kind = 'proc' AND m.pin_key IS NULL \
                     AND EXISTS (SELECT 1 FROM bodies b WHERE b.message_id = m.id \
                     AND (instr(b.topic, ?1) > 0 OR instr(b.body, ?1) > 0))",
                    params![key],
                )?);
                todo_ids.extend(
                    sets.iter()
                        .filter(|(k, _)| *k == key)
                        .filter_map(|(_, a)| *a),
                );
            }
            while let Some(id) = todo_ids.pop() {
                if scope.ids.contains(&id) {
                    continue;
                }
                let Some(link) = Link::of(index, &id)? else {
                    continue;
                };
                let approves: Vec<&str> = sets
                    .iter()
                    .filter(|(_, a)| *a == Some(id))
                    .map(|(k, _)| *k)
                    .collect();
                if !link.takes_part() && approves.is_empty() {
                    continue;
                }
                scope.ids.insert(id);
                todo_keys.extend(approves.iter().map(|k| (*k).to_owned()));
                todo_keys.extend(link.pin_key.clone());
                if link.proposal && link.pin_key.is_none() {
                    for k in &all_keys {
                        if link.texts.iter().any(|t| t.contains(k)) {
                            todo_keys.push((*k).to_owned());
                        }
                    }
                }
                todo_ids.extend(link.about);
                todo_ids.extend(link.nudges);
            }
        }
        Ok(scope)
    }

    /// Every message and key that takes part in consent.
    pub fn everything(index: &Index, channel: &[Decoded]) -> StoreResult<Self> {
        let keys: Vec<String> = channel
            .iter()
            .filter_map(|(_, _, op)| match op {
                Op::PinSet(ps) => Some(ps.key.clone()),
                _ => None,
            })
            .collect();
        Self::around(index, channel, domain(index, channel)?, keys)
    }

    /// True when nothing takes part.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.keys.is_empty()
    }
}

/// What the scope walk needs to know about one message.
struct Link {
    proposal: bool,
    pin_key: Option<String>,
    about: Option<RecordId>,
    nudges: Vec<RecordId>,
    /// Every text it ever had (topic and body of the send and of each revision).
    texts: Vec<String>,
}

impl Link {
    fn of(index: &Index, id: &RecordId) -> StoreResult<Option<Self>> {
        let p = index.path();
        let row: Option<(Option<String>, Option<String>, Option<String>)> = index
            .conn()
            .prepare_cached("SELECT kind, pin_key, about FROM messages WHERE id = ?1")
            .and_then(|mut st| {
                st.query_row([id.hex()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .db(p)?;
        let Some((kind, pin_key, about)) = row else {
            return Ok(None);
        };
        let proposal = kind.as_deref() == Some("proc");
        let nudges = ids_of(
            index,
            "SELECT id FROM messages WHERE about = ?1",
            params![id.hex()],
        )?
        .into_iter()
        .collect();
        let texts = if proposal && pin_key.is_none() {
            let mut st = index
                .conn()
                .prepare_cached(
                    "SELECT topic || char(10) || body FROM bodies WHERE message_id = ?1",
                )
                .db(p)?;
            st.query_map([id.hex()], |r| r.get::<_, String>(0))
                .db(p)?
                .collect::<Result<_, _>>()
                .db(p)?
        } else {
            Vec::new()
        };
        Ok(Some(Self {
            proposal,
            pin_key,
            about: about.as_deref().and_then(RecordId::parse),
            nudges,
            texts,
        }))
    }

    fn takes_part(&self) -> bool {
        self.proposal || self.pin_key.is_some() || self.about.is_some() || !self.nudges.is_empty()
    }
}

fn ids_of(
    index: &Index,
    sql: &str,
    args: impl rusqlite::Params,
) -> StoreResult<BTreeSet<RecordId>> {
    let p = index.path();
    let mut st = index.conn().prepare_cached(sql).db(p)?;
    let out = st
        .query_map(args, |r| r.get::<_, String>(0))
        .db(p)?
        .filter_map(|r| r.ok().and_then(|s| RecordId::parse(&s)))
        .collect();
    Ok(out)
}

/// Folds the consent state of every message and key that takes part.
pub fn load(index: &Index, roster: &[Role]) -> StoreResult<Loaded> {
    let channel = channel_ops(index)?;
    let scope = Scope::everything(index, &channel)?;
    fold_scope(index, roster, &channel, &scope)
}

/// Folds the consent state of the scope around `ids` and `keys`.
pub fn load_around(
    index: &Index,
    roster: &[Role],
    ids: impl IntoIterator<Item = RecordId>,
    keys: impl IntoIterator<Item = String>,
) -> StoreResult<Loaded> {
    let channel = channel_ops(index)?;
    let scope = Scope::around(index, &channel, ids, keys)?;
    fold_scope(index, roster, &channel, &scope)
}

fn fold_scope(
    index: &Index,
    roster: &[Role],
    channel: &[Decoded],
    scope: &Scope,
) -> StoreResult<Loaded> {
    let mut recs: Vec<Decoded> = channel
        .iter()
        .filter(|(_, _, op)| match op {
            Op::PinSet(ps) => scope.keys.contains(&ps.key),
            Op::Backfill(b) => b.ids.iter().any(|i| scope.ids.contains(i)),
            Op::UndoBackfill(u) => u.ids.iter().any(|i| scope.ids.contains(i)),
            _ => false,
        })
        .cloned()
        .collect();
    let mut n = BTreeMap::new();
    for id in &scope.ids {
        let Some(row) = send_row(index, id)? else {
            continue;
        };
        n.insert(*id, row.n);
        recs.push((row.key, row.from, Op::Send(row.send)));
        recs.extend(target_records(index, id)?);
    }
    let consent = Consent::fold(
        roster,
        recs.iter().map(|(k, r, op)| Applied {
            key: *k,
            role: r,
            op,
        }),
    );
    Ok(Loaded { consent, n })
}

/// Re-folds the scope around `ids` (the messages a pass touched) and `keys`
/// (the keys of the pin writes it brought; `None` for a pass that brought a
/// cleanup pass or too much to walk: everything is re-folded) and rewrites its
/// rows: the messages, and the pins and pin conflicts of its keys.
pub fn refold(
    index: &IndexTx<'_>,
    roster: &[Role],
    ids: &BTreeSet<RecordId>,
    keys: Option<BTreeSet<String>>,
) -> StoreResult<()> {
    // Most passes touch no message that takes part: find out before reading
    // every pin write.
    if let Some(k) = &keys
        && k.is_empty()
        && !ids.iter().try_fold(false, |any, id| {
            Ok::<_, crate::store::error::StoreError>(
                any || Link::of(index, id)?.is_some_and(|l| l.takes_part()),
            )
        })?
    {
        return Ok(());
    }
    let channel = channel_ops(index)?;
    let scope = match keys {
        Some(keys) => Scope::around(index, &channel, ids.iter().copied(), keys)?,
        None => Scope::everything(index, &channel)?,
    };
    if scope.is_empty() {
        return Ok(());
    }
    let Loaded { consent, n } = fold_scope(index, roster, &channel, &scope)?;
    for (id, m) in &consent.messages {
        if let Some(seq) = n.get(id) {
            index.write_message(m, *seq, &message_body(index, &m.text)?)?;
        }
    }
    index.write_pins(&consent, &scope.keys, body_of)
}

/// The message `id` with its consent facets, when it takes part in consent.
pub fn message(index: &Index, roster: &[Role], id: &RecordId) -> StoreResult<Option<Message>> {
    // Most messages take no part: answer without reading every pin write. (A
    // message that only a pin write names is not a proposal, so the fold gives
    // it no facet of its own either.)
    if !Link::of(index, id)?.is_some_and(|l| l.takes_part()) {
        return Ok(None);
    }
    let loaded = load_around(index, roster, [*id], [])?;
    Ok(loaded.consent.messages.get(id).cloned())
}
