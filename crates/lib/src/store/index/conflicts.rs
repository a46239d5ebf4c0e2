//! Conflicted records that still stand for their author: lost at their place
//! in the order to a concurrent decision on another machine.
//!
//! A record stands until its author writes again on that message (read
//! receipts aside), and a lost pin write until its author writes that key
//! again. The conflicts themselves are folded by `core` and stored with the
//! message (`conflicts`) or in `pin_conflicts`.

use rusqlite::params;

use super::Index;
use super::rows::{At, FromRow, Named};
use crate::store::error::StoreResult;

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

/// One entry of a message's `conflicts` column, as `super::conflicts_json`
/// writes it.
#[derive(serde::Deserialize)]
struct StoredConflict {
    record: String,
    role: String,
    op: String,
    reason: String,
    winner: Option<String>,
}

/// A message's id and its decoded `conflicts`.
struct Conflicted {
    id: String,
    list: Vec<StoredConflict>,
}

impl FromRow for Conflicted {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "messages",
            row: &id,
        };
        Ok(Self {
            list: at.json(r, "conflicts")?,
            id,
        })
    }
}

/// A row of `pin_conflicts`, as a standing conflict.
struct LostPinWrite(StandingConflict);

impl FromRow for LostPinWrite {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self(StandingConflict {
            record: r.get("record")?,
            op: "pin_set".to_owned(),
            target: ConflictTarget::PinKey(r.get("key")?),
            reason: r.get("reason")?,
            winner: r.get("winner")?,
        }))
    }
}

impl Index {
    /// `role`'s conflicted records still standing: message records first,
    /// in the order of their messages, then pin writes. Read receipts
    /// (`read`, and `opened`, which read_inbox writes on its own) do not
    /// supersede a conflict: they decide nothing, and must not hide a lost
    /// decision unseen.
    pub fn standing_conflicts(&self, role: &str) -> StoreResult<Vec<StandingConflict>> {
        let rows: Vec<Conflicted> = self.rows(
            "SELECT id, conflicts FROM messages WHERE conflicts IS NOT NULL ORDER BY ms, c, id",
            [],
        )?;
        let mut out = Vec::new();
        for Conflicted { id: target, list } in rows {
            for c in list.into_iter().filter(|c| c.role == role) {
                let superseded: bool = self.scalar(
                    "SELECT EXISTS (SELECT 1 FROM targets t JOIN records r ON r.n = t.n \
                     JOIN records c ON c.id = ?2 WHERE t.target = ?1 AND r.role = ?3 \
                     AND r.op NOT IN ('read', 'opened') \
                     AND (r.ms > c.ms OR (r.ms = c.ms AND r.c > c.c)))",
                    params![target, c.record, role],
                )?;
                if !superseded {
                    out.push(StandingConflict {
                        record: c.record,
                        op: c.op,
                        target: ConflictTarget::Message(target.clone()),
                        reason: c.reason,
                        winner: c.winner,
                    });
                }
            }
        }
        // Pin writes that lost, until the role writes that key again.
        let lost: Vec<LostPinWrite> = self.rows(
            "SELECT c.record, c.key, c.reason, c.winner FROM pin_conflicts c WHERE c.role = ?1 \
             AND NOT EXISTS (SELECT 1 FROM pin_conflicts l WHERE l.key = c.key AND l.role = c.role \
             AND (l.ms > c.ms OR (l.ms = c.ms AND l.c > c.c))) \
             AND NOT EXISTS (SELECT 1 FROM pins p WHERE p.key = c.key AND p.role = c.role \
             AND p.ms >= c.ms) ORDER BY c.ms, c.c",
            [role],
        )?;
        out.extend(lost.into_iter().map(|l| l.0));
        Ok(out)
    }
}
