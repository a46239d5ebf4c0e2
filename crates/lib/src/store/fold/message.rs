//! The read model of one message: its state folded from its records
//! (`core::message::Message::fold`), as the use cases read it and as ingest
//! writes its rows.
//!
//! Owns loading and re-folding one message; it reads no files (that is
//! ingest) and decides no rule (that is `core`). A message that takes part
//! in consent gets the facets only the consent fold knows from
//! `store::fold::consent`.

use crate::core::ids::{RecordId, Role};
use crate::core::message::{Applied, Message};
use crate::store::error::StoreResult;
use crate::store::fold::body::message_body;
use crate::store::fold::consent;
use crate::store::fold::records::{Acting, SendRow, send_row, target_records};
use crate::store::index::{Index, IndexTx};

/// The current state of one message, folded from its records (`None` when
/// its `send` is not in the index). Use cases check their rules against it.
pub fn load_message(index: &Index, roster: &[Role], id: &RecordId) -> StoreResult<Option<Message>> {
    Ok(load_message_alone(index, roster, id)?.map(|(m, _)| m))
}

/// [`load_message`], and whether the state is the message's own fold alone:
/// false when it takes part in consent, whose facets (approval, retirement)
/// come from other messages and the pins. Only a fold alone gives, with a
/// later record applied ([`Message::apply`]), what folding it again gives.
pub fn load_message_alone(
    index: &Index,
    roster: &[Role],
    id: &RecordId,
) -> StoreResult<Option<(Message, bool)>> {
    let Some((m, _)) = fold_message(index, id, None, None)? else {
        return Ok(None);
    };
    Ok(Some(match consent::message(index, roster, id)? {
        Some(with_facets) => (with_facets, false),
        None => (m, true),
    }))
}

/// Re-folds one message from its records and writes its rows. `false` when
/// its `send` is not in the index (yet). `known` is its `send` and `acting`
/// the records an ingest pass accepted, when the caller has them decoded.
pub(in crate::store) fn refold_with(
    index: &IndexTx<'_>,
    id: &RecordId,
    known: Option<&SendRow>,
    acting: Option<&Acting>,
) -> StoreResult<bool> {
    let Some((m, n)) = fold_message(index, id, known, acting)? else {
        return Ok(false);
    };
    // What the body shows: inline text, or a sealed upload's (empty with
    // the upload's digest while that upload is not sealed here).
    let body = message_body(index, &m.text)?;
    index.write_message(&m, n, &body)?;
    Ok(true)
}

fn fold_message(
    index: &Index,
    id: &RecordId,
    known: Option<&SendRow>,
    acting: Option<&Acting>,
) -> StoreResult<Option<(Message, i64)>> {
    let loaded;
    let row = match known {
        Some(row) => row,
        None => match send_row(index, id)? {
            Some(r) => {
                loaded = r;
                &loaded
            }
            None => return Ok(None),
        },
    };
    let read;
    let ops = match acting.and_then(|a| a.of(id)) {
        Some(ops) => ops,
        None => {
            read = target_records(index, id)?;
            read.iter().collect()
        }
    };
    let m = Message::fold(
        row.key,
        &row.from,
        &row.send,
        ops.into_iter().map(|(k, r, op)| Applied {
            key: *k,
            role: r,
            op,
        }),
    );
    Ok(Some((m, row.n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::op::{Note, Op, Send};
    use crate::core::vocab::DebtStatus;
    use crate::store::fold::records::fixture::put;

    /// The ids of every open debt addressed to `role`.
    fn open_debts_for(ix: &Index, role: &str) -> Vec<String> {
        let mut owed = Vec::new();
        ix.each_open_debt_for(role, |d| owed.push(d.id)).unwrap();
        owed
    }

    fn roles() -> Vec<Role> {
        ["a", "b"].iter().map(|r| Role::new(r).unwrap()).collect()
    }

    #[test]
    fn a_message_is_its_send_folded_with_the_records_acting_on_it() {
        let ix = Index::in_memory("c").unwrap();
        let sent = put(
            &ix,
            "a",
            1,
            1_000,
            &Op::Send(Send {
                to: vec![Role::new("b").unwrap()],
                topic: "pay".into(),
                body: "pay 10".into(),
                action_required: true,
                ..Send::default()
            }),
        );
        let open = load_message(&ix, &roles(), &sent.id).unwrap().unwrap();
        assert_eq!(open.debt.as_ref().unwrap().status, DebtStatus::Open);
        put(
            &ix,
            "b",
            1,
            2_000,
            &Op::Resolve(Note {
                id: sent.id,
                note: Some("paid".into()),
            }),
        );
        let resolved = load_message(&ix, &roles(), &sent.id).unwrap().unwrap();
        let debt = resolved.debt.unwrap();
        assert_eq!(debt.status, DebtStatus::Resolved);
        assert_eq!(debt.resolved.unwrap().by.as_str(), "b");
        // What is not a message loads as none.
        let other = crate::core::ids::RecordId::parse(&"0".repeat(64)).unwrap();
        assert!(load_message(&ix, &roles(), &other).unwrap().is_none());
    }

    #[test]
    fn a_refold_writes_the_rows_the_queries_read() {
        let ix = Index::in_memory("c").unwrap();
        let sent = put(
            &ix,
            "a",
            1,
            1_000,
            &Op::Send(Send {
                to: vec![Role::new("b").unwrap()],
                topic: "pay".into(),
                body: "pay 10".into(),
                action_required: true,
                ..Send::default()
            }),
        );
        assert!(
            ix.write(|tx| refold_with(tx, &sent.id, None, None))
                .unwrap()
        );
        let owed = open_debts_for(&ix, "b");
        assert_eq!(owed.len(), 1);
        assert_eq!(owed[0], sent.id.hex());
        assert!(ix.resolutions_for("a").unwrap().is_empty());
        put(
            &ix,
            "b",
            1,
            2_000,
            &Op::Resolve(Note {
                id: sent.id,
                note: None,
            }),
        );
        assert!(
            ix.write(|tx| refold_with(tx, &sent.id, None, None))
                .unwrap()
        );
        assert!(open_debts_for(&ix, "b").is_empty());
        let waiting = ix.resolutions_for("a").unwrap();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].resolved_by, "b");
        // A message whose send is not here is not written.
        let other = crate::core::ids::RecordId::parse(&"0".repeat(64)).unwrap();
        assert!(!ix.write(|tx| refold_with(tx, &other, None, None)).unwrap());
    }
}
