//! Running the consent fold over the index, and writing what it derives.
//!
//! The messages that take part in consent (proposals, nudges, the targets of
//! nudges, the messages pin writes name) are loaded with every record acting on
//! them, plus every pin write and cleanup pass, and folded together by
//! [`Consent::fold`]. Ingest calls [`refold`] whenever a pass brings a record
//! that touches any of them; the app calls [`load`] to check a write against
//! the same state. What the records mean is `core::consent`'s business.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::params;

use super::error::{SqlContext as _, StoreResult};
use super::index::Index;
use super::ingest::{Decoded, decode_row, decoded_row, send_row, target_records};
use crate::core::consent::Consent;
use crate::core::ids::{RecordId, Role};
use crate::core::message::{Applied, Message};
use crate::core::op::Op;

/// The consent state as of the index, with each message's ingest sequence.
pub struct Loaded {
    /// The folded state.
    pub consent: Consent,
    /// Ingest sequence of each message's `send`.
    pub n: BTreeMap<RecordId, i64>,
}

/// The ids of the messages taking part in consent, given the channel-wide
/// records (pin writes name the messages that approve them).
pub fn domain(index: &Index, channel_ops: &[Decoded]) -> StoreResult<BTreeSet<RecordId>> {
    let p = index.path();
    let mut st = index
        .conn()
        .prepare_cached(
            "SELECT id FROM messages WHERE kind = 'proc' \
             UNION SELECT id FROM messages WHERE pin_key IS NOT NULL \
             UNION SELECT id FROM messages WHERE about IS NOT NULL \
             UNION SELECT about FROM messages WHERE about IS NOT NULL",
        )
        .db(p)?;
    let mut out: BTreeSet<RecordId> = st
        .query_map([], |r| r.get::<_, String>(0))
        .db(p)?
        .filter_map(|r| r.ok().and_then(|s| RecordId::parse(&s)))
        .collect();
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
            "SELECT id, role, ms, c, body FROM records \
             WHERE op IN ('pin_set', 'backfill', 'undo_backfill')",
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

/// Folds the consent state from the index.
pub fn load(index: &Index, roster: &[Role]) -> StoreResult<Loaded> {
    load_including(index, roster, None)
}

/// Like [`load`], with one more message taking part (a pin write about to
/// name it as its approval).
pub fn load_including(
    index: &Index,
    roster: &[Role],
    extra: Option<RecordId>,
) -> StoreResult<Loaded> {
    let channel = channel_ops(index)?;
    let mut ids = domain(index, &channel)?;
    ids.extend(extra);
    let mut recs: Vec<Decoded> = channel;
    let mut sends = Vec::new();
    let mut n = BTreeMap::new();
    for id in &ids {
        let Some(row) = send_row(index, id)? else {
            continue;
        };
        n.insert(*id, row.n);
        sends.push((row.key, row.from, Op::Send(row.send)));
        recs.extend(target_records(index, id)?);
    }
    recs.extend(sends);
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

/// Re-folds consent and rewrites its rows: every message taking part, the
/// pins and the pin conflicts. Call after the messages' own rows exist.
pub fn refold(index: &Index, roster: &[Role]) -> StoreResult<()> {
    let Loaded { consent, n } = load(index, roster)?;
    for (id, m) in &consent.messages {
        if let Some(seq) = n.get(id) {
            index.write_message(m, *seq)?;
        }
    }
    write_pins(index, &consent)
}

/// True if any of `ids` takes part in consent (by the messages' rows).
pub fn touches(index: &Index, ids: &BTreeSet<RecordId>) -> StoreResult<bool> {
    if ids.is_empty() {
        return Ok(false);
    }
    let d = domain(index, &[])?;
    Ok(ids.iter().any(|i| d.contains(i)))
}

/// The message `id` with its consent facets, when it takes part in consent.
pub fn message(index: &Index, roster: &[Role], id: &RecordId) -> StoreResult<Option<Message>> {
    let loaded = load(index, roster)?;
    Ok(loaded.consent.messages.get(id).cloned())
}

fn write_pins(index: &Index, c: &Consent) -> StoreResult<()> {
    let p = index.path();
    let conn = index.conn();
    conn.execute("DELETE FROM pins", []).db(p)?;
    conn.execute("DELETE FROM pin_conflicts", []).db(p)?;
    let mut ins = conn
        .prepare_cached(
            "INSERT INTO pins(record, key, pos, title, version, body, body_ref, approved_by, role, \
             ms, sha256, bytes, chars) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )
        .db(p)?;
    for (key, versions) in &c.pins {
        for (pos, v) in versions.iter().enumerate() {
            let s = &v.set;
            ins.execute(params![
                v.key.id.hex(),
                key,
                pos as i64,
                s.title,
                s.version,
                s.body,
                s.body_ref
                    .as_ref()
                    .map(|r| serde_json::to_string(r).expect("body_ref serializes")),
                s.approved_by.map(|a| a.hex()),
                v.role.as_str(),
                v.key.hlc.ms(),
                v.sha256(),
                s.body.len() as i64,
                s.body.chars().count() as i64,
            ])
            .db(p)?;
        }
    }
    let mut ins = conn
        .prepare_cached(
            "INSERT INTO pin_conflicts(record, key, role, reason, winner, ms, c) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .db(p)?;
    for pc in &c.conflicts {
        let k = &pc.conflict;
        ins.execute(params![
            k.record.id.hex(),
            pc.pin_key,
            k.role.as_str(),
            k.reason,
            k.winner.map(|w| w.hex()),
            k.record.hlc.ms(),
            k.record.hlc.1,
        ])
        .db(p)?;
    }
    Ok(())
}
