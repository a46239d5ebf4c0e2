//! Records as the index holds them, decoded for the folds: a message's
//! `send`, and every record that acts on a message.
//!
//! Owns the reading of `records` rows back into ops; it folds nothing (that
//! is `core`, driven by `store::fold::message` and `store::fold::consent`). A row that
//! cannot be decoded was never stored by ingest, so it is skipped here.

use std::collections::HashMap;

use rusqlite::OptionalExtension as _;

use crate::core::hlc::{Hlc, OrderKey};
use crate::core::ids::{RecordId, Role};
use crate::core::op::{Op, Send};
use crate::core::record;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::index::Index;

/// A decoded `send` with what the fold needs about its record.
pub(in crate::store) struct SendRow {
    /// Local ingest sequence.
    pub n: i64,
    /// Author.
    pub from: Role,
    /// Place in the order.
    pub key: OrderKey,
    /// What was sent.
    pub send: Send,
}

/// The sends one ingest pass accepted, kept decoded so that folding their
/// messages needs no second read and parse of their records.
///
/// Kept up to [`FRESH_TEXT_MAX`] bytes of text: a rebuild, or a device's
/// first pass, would otherwise hold every message of the channel at once
/// (2.5 GB at a million messages, in a folder whoever pushes to the remote
/// may fill). A send past the bound is read back from the index when its
/// message is folded ([`send_row`]), as any later pass reads it.
#[derive(Default)]
pub(in crate::store) struct Fresh {
    rows: HashMap<RecordId, SendRow>,
    /// What the kept sends cost: their text and [`FRESH_ROW_COST`] each.
    bytes: usize,
}

/// How many bytes [`Fresh`] keeps: the sends' text and [`FRESH_ROW_COST`]
/// each (small under test, so the unit tests' passes take both ways).
const FRESH_TEXT_MAX: usize = if cfg!(test) { 4 << 10 } else { 1 << 30 };

/// What a kept send costs beside its text: its slot in the map (a
/// `SendRow` is a few hundred bytes, and the map keeps room free) and the
/// send's other fields.
const FRESH_ROW_COST: usize = 640;

impl Fresh {
    /// Keeps `send`, accepted as record `n` of `from` at `key`, for message
    /// `id`, if the bound leaves room for it.
    pub fn keep(&mut self, id: RecordId, n: i64, from: Role, key: OrderKey, send: &Send) {
        let cost = Self::cost(send);
        if self.bytes + cost > FRESH_TEXT_MAX {
            return;
        }
        self.bytes += cost;
        let send = send.clone();
        self.rows.insert(id, SendRow { n, from, key, send });
    }

    /// The kept send of message `id`, if it was kept.
    pub fn get(&self, id: &RecordId) -> Option<&SendRow> {
        self.rows.get(id)
    }

    /// Forgets the send of message `id` (its record was taken back), and
    /// what it cost.
    pub fn forget(&mut self, id: &RecordId) {
        if let Some(row) = self.rows.remove(id) {
            self.bytes -= Self::cost(&row.send);
        }
    }

    /// What keeping `send` costs: its text and [`FRESH_ROW_COST`].
    fn cost(send: &Send) -> usize {
        send.body.len()
            + send.topic.len()
            + send.addenda.values().map(String::len).sum::<usize>()
            + FRESH_ROW_COST
    }

    /// How many sends are kept.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
}

/// The `send` record of message `id`, decoded.
pub(in crate::store) fn send_row(index: &Index, id: &RecordId) -> StoreResult<Option<SendRow>> {
    let send: Option<(i64, String, i64, i64, String)> = index
        .conn()
        .prepare_cached("SELECT n, role, ms, c, body FROM records WHERE id = ?1 AND op = 'send'")
        .and_then(|mut s| {
            s.query_row([id.hex()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()
        })
        .db(index.path())?;
    let Some((n, role, ms, c, body)) = send else {
        return Ok(None);
    };
    let Ok((_, _, Some(Op::Send(send)))) = record::decode_body(&body) else {
        return Ok(None);
    };
    let Ok(from) = Role::new(&role) else {
        return Ok(None);
    };
    Ok(Some(SendRow {
        n,
        from,
        key: OrderKey {
            hlc: Hlc(ms, c as u32),
            id: *id,
        },
        send,
    }))
}

/// A decoded record: its place in the order, its author's role, its op.
pub(in crate::store) type Decoded = (OrderKey, Role, Op);

/// Every record that acts on message `id`, decoded, in no particular order.
pub(in crate::store) fn target_records(index: &Index, id: &RecordId) -> StoreResult<Vec<Decoded>> {
    let p = index.path();
    // The CAST keeps the plan independent of the bound value. SQLite's
    // planner looks at a bare `?1` here (is it 0 or 1?) and marks the
    // statement to be compiled again once its bindings are cleared, which
    // rusqlite's statement cache does after every use: it was re-prepared
    // on every call. The plan is the same either way.
    let mut st = index
        .conn()
        .prepare_cached(
            "SELECT r.id, r.role, r.ms, r.c, r.body FROM targets t JOIN records r ON r.n = t.n \
             WHERE t.target = CAST(?1 AS TEXT)",
        )
        .db(p)?;
    let rows = st.query_map([id.hex()], decoded_row).db(p)?;
    let mut ops = Vec::new();
    for row in rows {
        if let Some(d) = decode_row(row.db(p)?) {
            ops.push(d);
        }
    }
    Ok(ops)
}

/// The records acting on messages (reads, resolutions, revisions…) that one
/// ingest pass accepted, kept decoded, with the messages each acts on.
///
/// A pass that began with no such record in the index (a rebuild, the first
/// pass over a folder) holds every one there is, so re-folding a message
/// takes them from here instead of reading and decoding its `targets` rows
/// again: [`Self::of`] answers only then. It mirrors the `targets` rows the
/// pass writes and takes back (a fork).
///
/// Kept up to [`ACTING_LINKS_MAX`] links from a record to a message it acts
/// on: past them it lets go of all it held, and every message is folded
/// from the index's rows, as a later pass folds it.
#[derive(Default)]
pub(in crate::store) struct Acting {
    /// True when the index held no `targets` row as the pass began, and
    /// the bound was not reached since.
    complete: bool,
    /// Links noted so far.
    links: usize,
    /// By local ingest number.
    ops: HashMap<i64, Decoded>,
    /// The ingest numbers acting on each message, in acceptance order.
    on: HashMap<RecordId, Vec<i64>>,
}

impl Acting {
    /// Starts a pass: [`Self::of`] will answer if the index holds no
    /// `targets` row yet.
    pub fn begin(index: &Index) -> StoreResult<Self> {
        let any: bool = index
            .conn()
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM targets)")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db(index.path())?;
        Ok(Self {
            complete: !any,
            ..Self::default()
        })
    }

    /// Notes record `n`, accepted with `targets` rows for each of
    /// `op.targets()`. Decoded as [`decode_row`] would decode its row: a
    /// role that is not one is skipped there, so here too.
    pub fn add(&mut self, n: i64, key: OrderKey, role: &str, op: &Op) {
        if !self.complete {
            return;
        }
        let Ok(role) = Role::new(role) else {
            return;
        };
        self.links += op.targets().len();
        if self.links > ACTING_LINKS_MAX {
            *self = Self::default();
            return;
        }
        for t in op.targets() {
            let list = self.on.entry(*t).or_default();
            // `targets` holds one row per (message, record).
            if !list.contains(&n) {
                list.push(n);
            }
        }
        self.ops.insert(n, (key, role, op.clone()));
    }

    /// Forgets record `n`, whose rows were taken back.
    pub fn forget(&mut self, n: i64) {
        let Some((_, _, op)) = self.ops.remove(&n) else {
            return;
        };
        for t in op.targets() {
            if let Some(list) = self.on.get_mut(t) {
                list.retain(|m| *m != n);
            }
        }
    }

    /// Every record acting on message `id`, as [`target_records`] would read
    /// them, or `None` when only the index knows them all.
    pub fn of(&self, id: &RecordId) -> Option<Vec<&Decoded>> {
        if !self.complete {
            return None;
        }
        let ns = self.on.get(id).map_or(&[][..], Vec::as_slice);
        Some(ns.iter().filter_map(|n| self.ops.get(n)).collect())
    }
}

/// How many links [`Acting`] keeps (small under test, so the unit tests'
/// passes take both ways). A link costs about 100 bytes with its share of
/// the op it belongs to.
const ACTING_LINKS_MAX: usize = if cfg!(test) { 64 } else { 4 << 20 };

/// The columns `id, role, ms, c, body` of a records row.
pub(in crate::store) type RecordRow = (String, String, i64, i64, String);

/// Reads the columns `id, role, ms, c, body`.
pub(in crate::store) fn decoded_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecordRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

/// Decodes a records row; `None` for what cannot be decoded (never stored).
pub(in crate::store) fn decode_row((rid, rrole, rms, rc, rbody): RecordRow) -> Option<Decoded> {
    let (Some(rid), Ok(rrole), Ok((_, _, Some(op)))) = (
        RecordId::parse(&rid),
        Role::new(&rrole),
        record::decode_body(&rbody),
    ) else {
        return None;
    };
    Some((
        OrderKey {
            hlc: Hlc(rms, rc as u32),
            id: rid,
        },
        rrole,
        op,
    ))
}

/// Records stored by hand, for the unit tests of the folds (ingest stores
/// real ones after checking them).
#[cfg(test)]
pub(in crate::store) mod fixture {
    use ed25519_dalek::SigningKey;
    use rusqlite::params;

    use crate::core::hlc::Hlc;
    use crate::core::ids::{FeedId, RecordId};
    use crate::core::op::Op;
    use crate::core::record::{self, Header, Record};
    use crate::store::index::Index;

    /// Signs `op` as the `seq`th record of `role`'s feed at time `ms`,
    /// stores it with the targets it names, and returns it.
    pub fn put(ix: &Index, role: &str, seq: u64, ms: i64, op: &Op) -> Record {
        let header = Header {
            ch: "c".repeat(64),
            feed: FeedId::new(role, "laptop-3f9a2c").unwrap(),
            seq,
            prev: None,
            hlc: Hlc(ms, 0),
        };
        let rec = record::encode(&header, op, &SigningKey::from_bytes(&[7u8; 32]));
        put_raw(ix, &rec.id, role, ms, op.name(), &rec.body);
        for t in op.targets() {
            put_target(ix, t, &rec.id);
        }
        rec
    }

    /// Stores a records row as given, whatever its body.
    pub fn put_raw(ix: &Index, id: &RecordId, role: &str, ms: i64, op: &str, body: &str) {
        ix.conn()
            .execute(
                "INSERT INTO records(id, feed, seq, ms, c, op, role, body, sig) \
                 VALUES (?1, ?2, ?3, ?4, 0, ?5, ?2, ?6, '')",
                params![id.hex(), role, ms, ms, op, body],
            )
            .unwrap();
    }

    /// Says that record `by` acts on message `target`.
    pub fn put_target(ix: &Index, target: &RecordId, by: &RecordId) {
        ix.conn()
            .execute(
                "INSERT INTO targets(target, n) SELECT ?1, n FROM records WHERE id = ?2",
                params![target.hex(), by.hex()],
            )
            .unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{put, put_raw, put_target};
    use super::*;
    use crate::core::ids::sha256_hex;
    use crate::core::op::{Ids, Note};

    fn debt() -> Op {
        Op::Send(Send {
            to: vec![Role::new("b").unwrap()],
            topic: "pay".into(),
            body: "pay 10".into(),
            action_required: true,
            ..Send::default()
        })
    }

    #[test]
    fn a_send_reads_back_with_its_author_and_place() {
        let ix = Index::in_memory("c").unwrap();
        let sent = put(&ix, "a", 1, 1_000, &debt());
        let row = send_row(&ix, &sent.id).unwrap().unwrap();
        assert_eq!(row.from.as_str(), "a");
        assert_eq!(row.key, sent.order_key());
        assert_eq!(row.send.topic, "pay");
        assert!(row.send.action_required);
        // Only a `send` is a message: the id of another record is none.
        let resolve = put(
            &ix,
            "b",
            1,
            2_000,
            &Op::Resolve(Note {
                id: sent.id,
                note: None,
            }),
        );
        assert!(send_row(&ix, &resolve.id).unwrap().is_none());
    }

    #[test]
    fn the_records_acting_on_a_message_are_decoded_and_the_undecodable_skipped() {
        let ix = Index::in_memory("c").unwrap();
        let sent = put(&ix, "a", 1, 1_000, &debt());
        let resolve = put(
            &ix,
            "b",
            1,
            2_000,
            &Op::Resolve(Note {
                id: sent.id,
                note: None,
            }),
        );
        // A row no ingest would store (its body is not a record).
        let junk = RecordId::parse(&sha256_hex(b"junk")).unwrap();
        put_raw(&ix, &junk, "b", 3_000, "resolve", "not json");
        put_target(&ix, &sent.id, &junk);
        let ops = target_records(&ix, &sent.id).unwrap();
        assert_eq!(ops.len(), 1, "{ops:?}");
        let (key, role, op) = &ops[0];
        assert_eq!(*key, resolve.order_key());
        assert_eq!(role.as_str(), "b");
        assert!(matches!(op, Op::Resolve(n) if n.id == sent.id));
    }

    #[test]
    fn a_pass_keeps_sends_and_acting_records_only_up_to_its_bounds() {
        let key = |ms| OrderKey {
            hlc: Hlc(ms, 0),
            id: RecordId::parse(&sha256_hex(&ms.to_be_bytes())).unwrap(),
        };
        let Op::Send(send) = debt() else {
            unreachable!()
        };
        let mut fresh = Fresh::default();
        for i in 0..100 {
            let k = key(i);
            fresh.keep(k.id, i, Role::new("a").unwrap(), k, &send);
        }
        let kept = fresh.len();
        assert!(kept > 0 && kept < 100, "{kept} of 100 kept");
        assert!(fresh.get(&key(0).id).is_some(), "the first are kept");
        assert!(fresh.get(&key(99).id).is_none(), "the last are read back");

        // Acting answers while it holds every link, and lets go of all
        // past its bound: the fold then reads the index's rows.
        let ix = Index::in_memory("c").unwrap();
        let mut acting = Acting::begin(&ix).unwrap();
        let ids: Vec<RecordId> = (0..ACTING_LINKS_MAX as i64 / 2)
            .map(|i| key(i).id)
            .collect();
        let read = Op::Read(Ids { ids: ids.clone() });
        acting.add(1, key(1_000), "b", &read);
        assert_eq!(acting.of(&ids[0]).map(|v| v.len()), Some(1));
        acting.add(2, key(1_001), "b", &read);
        assert_eq!(acting.of(&ids[0]).map(|v| v.len()), Some(2));
        acting.add(3, key(1_002), "b", &read);
        assert!(acting.of(&ids[0]).is_none(), "past the bound");
        acting.add(4, key(1_003), "b", &read);
        assert!(acting.of(&ids[0]).is_none(), "and from then on");
    }

    #[test]
    fn a_pass_s_acting_records_are_the_ones_the_index_would_give() {
        let ix = Index::in_memory("c").unwrap();
        let sent = put(&ix, "a", 1, 1_000, &debt());
        let resolve = |seq, ms| {
            let op = Op::Resolve(Note {
                id: sent.id,
                note: None,
            });
            let rec = put(&ix, "b", seq, ms, &op);
            (rec.order_key(), op)
        };
        let mut acting = Acting::begin(&ix).unwrap();
        assert_eq!(acting.of(&sent.id).map(|v| v.len()), Some(0));
        let (k1, op1) = resolve(1, 2_000);
        acting.add(1, k1, "b", &op1);
        // A read naming the message twice is one row, and one record here.
        let twice = Op::Read(crate::core::op::Ids {
            ids: vec![sent.id, sent.id],
        });
        acting.add(2, k1, "b", &twice);
        assert_eq!(acting.of(&sent.id).unwrap().len(), 2);
        // Taken back (a fork), then its number given to an unrelated record.
        acting.forget(2);
        acting.forget(1);
        let other = RecordId::parse(&sha256_hex(b"other")).unwrap();
        let unrelated = Op::Read(crate::core::op::Ids { ids: vec![other] });
        acting.add(1, k1, "b", &unrelated);
        assert_eq!(acting.of(&sent.id).unwrap().len(), 0);
        assert_eq!(acting.of(&other).unwrap().len(), 1);
        // A role the rows would not decode is left out, as `decode_row` does.
        acting.add(3, k1, "Not A Role", &op1);
        assert_eq!(acting.of(&sent.id).unwrap().len(), 0);
        // Once the index holds acting records from before, only it knows them all.
        put_target(&ix, &sent.id, &sent.id);
        let later = Acting::begin(&ix).unwrap();
        assert!(later.of(&sent.id).is_none());
    }

    #[test]
    fn a_row_with_a_bad_id_or_role_is_not_decoded() {
        let ix = Index::in_memory("c").unwrap();
        let sent = put(&ix, "a", 1, 1_000, &debt());
        let good = (sent.id.hex(), "a".to_owned(), 1_000, 0, sent.body);
        assert!(decode_row(good.clone()).is_some());
        assert!(decode_row(("xyz".into(), good.1.clone(), 1_000, 0, good.4.clone())).is_none());
        assert!(decode_row((good.0.clone(), "Not A Role".into(), 1_000, 0, good.4)).is_none());
    }
}
