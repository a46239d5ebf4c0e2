//! Conflicted records that still stand for their author: lost at their place
//! in the order to a concurrent decision on another machine.
//!
//! A record stands until its author writes again on that message (read
//! receipts aside), and a lost pin write until its author writes that key
//! again. The conflicts themselves are folded by `core` and stored with the
//! message (`conflicts`) or in `pin_conflicts`.

use rusqlite::params;

use super::Index;
use crate::store::error::{SqlContext as _, StoreResult};

/// What a conflicted record acted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConflictTarget {
    /// A message (full id).
    Message(String),
    /// A pin key (a pin write).
    PinKey(String),
}

/// One conflicted record of a role, still standing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandingConflict {
    /// The record that lost (full id).
    pub record: String,
    /// Its op.
    pub op: String,
    /// What it acted on.
    pub target: ConflictTarget,
    /// Why it lost.
    pub reason: String,
    /// The record that won (full id), when one did.
    pub winner: Option<String>,
}

impl Index {
    /// `role`'s conflicted records still standing: message records first,
    /// in the order of their messages, then pin writes. Read receipts
    /// (`read`, and `opened`, which read_inbox writes on its own) do not
    /// supersede a conflict: they decide nothing, and must not hide a lost
    /// decision unseen.
    pub fn standing_conflicts(&self, role: &str) -> StoreResult<Vec<StandingConflict>> {
        let p = &self.path;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, conflicts FROM messages WHERE conflicts IS NOT NULL ORDER BY ms, c, id",
            )
            .db(p)?;
        let rows: Vec<(String, String)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .db(p)?
            .collect::<Result<_, _>>()
            .db(p)?;
        let mut out = Vec::new();
        for (target, json) in rows {
            let list: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap_or_default();
            for c in list.into_iter().filter(|c| c["role"] == role) {
                let record = c["record"].as_str().unwrap_or_default().to_owned();
                let superseded: bool = self
                    .conn
                    .prepare_cached(
                        "SELECT EXISTS (SELECT 1 FROM targets t JOIN records r ON r.n = t.n \
                         JOIN records c ON c.id = ?2 WHERE t.target = ?1 AND r.role = ?3 \
                         AND r.op NOT IN ('read', 'opened') \
                         AND (r.ms > c.ms OR (r.ms = c.ms AND r.c > c.c)))",
                    )
                    .and_then(|mut st| st.query_row(params![target, record, role], |r| r.get(0)))
                    .db(p)?;
                if !superseded {
                    out.push(StandingConflict {
                        record,
                        op: c["op"].as_str().unwrap_or_default().to_owned(),
                        target: ConflictTarget::Message(target.clone()),
                        reason: c["reason"].as_str().unwrap_or_default().to_owned(),
                        winner: c["winner"].as_str().map(str::to_owned),
                    });
                }
            }
        }
        // Pin writes that lost, until the role writes that key again.
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT c.record, c.key, c.reason, c.winner FROM pin_conflicts c WHERE c.role = ?1 \
                 AND NOT EXISTS (SELECT 1 FROM pin_conflicts l WHERE l.key = c.key AND l.role = c.role \
                 AND (l.ms > c.ms OR (l.ms = c.ms AND l.c > c.c))) \
                 AND NOT EXISTS (SELECT 1 FROM pins p WHERE p.key = c.key AND p.role = c.role \
                 AND p.ms >= c.ms) ORDER BY c.ms, c.c",
            )
            .db(p)?;
        let rows = st
            .query_map([role], |r| {
                Ok(StandingConflict {
                    record: r.get(0)?,
                    op: "pin_set".to_owned(),
                    target: ConflictTarget::PinKey(r.get(1)?),
                    reason: r.get(2)?,
                    winner: r.get(3)?,
                })
            })
            .db(p)?;
        for r in rows {
            out.push(r.db(p)?);
        }
        Ok(out)
    }
}
