//! Proposals (`kind="proc"`) waiting for a role's decision.
//!
//! The rule is `core::message::Message::awaits`: the index stores, with each
//! message's row, the roles it waits for (`awaiting`), so these queries only
//! read what core decided and hold no rule of their own.

use rusqlite::params;

use super::Index;
use super::messages::{MESSAGE_COLUMNS, MessageRow};
use crate::store::error::{SqlContext as _, StoreResult};

/// "This proposal waits for the decision of role ?1" (a condition on
/// `messages m`), read from core's verdict.
const AWAITING: &str = "m.awaiting IS NOT NULL \
    AND EXISTS (SELECT 1 FROM json_each(m.awaiting) WHERE value = ?1)";

/// A proposal still waiting for decisions, with the votes cast on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenProposal {
    /// Full id.
    pub id: String,
    /// Its author.
    pub from: String,
    /// Subject.
    pub topic: String,
    /// When it was sent (ms).
    pub ms: i64,
    /// The pin key it would set, if any.
    pub pin_key: Option<String>,
    /// The roles it waits for (core's verdict, stored).
    pub awaiting: Vec<String>,
    /// Each role's standing decision, by role.
    pub votes: Vec<CastVote>,
}

/// One role's standing decision on a proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CastVote {
    /// The voter.
    pub role: String,
    /// Its decision (`agree`, `object` …).
    pub decision: String,
    /// Cast on a text a revision has since replaced.
    pub stale: bool,
    /// When (ms).
    pub ms: i64,
    /// The note cast with it.
    pub note: Option<String>,
}

/// A proposal behind the `awaiting_ack` counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwaitedProposal {
    /// Full id.
    pub id: String,
    /// Subject.
    pub topic: String,
}

impl Index {
    /// The newest `limit + 1` live proposals that still wait for someone's
    /// decision or hold a round on a pin key (not retired: a pin write
    /// settles the rounds on its key), each with its votes. A round nobody
    /// is awaited on (contested, or agreed and not pinned yet) is listed too:
    /// it still holds its key.
    pub fn open_proposals(&self, limit: usize) -> StoreResult<Vec<OpenProposal>> {
        let p = &self.path;
        let mut out: Vec<OpenProposal> = self
            .conn
            .prepare_cached(
                "SELECT m.id, m.from_role, m.topic, m.ms, m.pin_key, m.awaiting FROM messages m \
                 WHERE m.kind = 'proc' AND m.deleted_ms IS NULL AND (m.awaiting IS NOT NULL \
                 OR (m.pin_key IS NOT NULL AND m.retired_ms IS NULL)) \
                 ORDER BY m.ms DESC, m.c DESC, m.id DESC LIMIT ?1",
            )
            .and_then(|mut st| {
                st.query_map([limit as i64 + 1], |r| {
                    // Null for a round nobody is awaited on.
                    let awaiting: Option<String> = r.get(5)?;
                    Ok(OpenProposal {
                        id: r.get(0)?,
                        from: r.get(1)?,
                        topic: r.get(2)?,
                        ms: r.get(3)?,
                        pin_key: r.get(4)?,
                        awaiting: awaiting
                            .and_then(|a| serde_json::from_str(&a).ok())
                            .unwrap_or_default(),
                        votes: Vec::new(),
                    })
                })?
                .collect()
            })
            .db(p)?;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT role, decision, stale, ms, note FROM votes WHERE message_id = ?1 \
                 ORDER BY role",
            )
            .db(p)?;
        for prop in &mut out {
            prop.votes = st
                .query_map([&prop.id], |r| {
                    Ok(CastVote {
                        role: r.get(0)?,
                        decision: r.get(1)?,
                        stale: r.get(2)?,
                        ms: r.get(3)?,
                        note: r.get(4)?,
                    })
                })
                .and_then(|rows| rows.collect())
                .db(p)?;
        }
        Ok(out)
    }

    /// Every proposal waiting for `role`'s decision, oldest first.
    pub fn awaiting_votes(&self, role: &str) -> StoreResult<Vec<AwaitedProposal>> {
        let sql = format!(
            "SELECT m.id, m.topic FROM messages m WHERE {AWAITING} ORDER BY m.ms, m.c, m.id"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_map([role], |r| {
                    Ok(AwaitedProposal {
                        id: r.get(0)?,
                        topic: r.get(1)?,
                    })
                })?
                .collect()
            })
            .db(&self.path)
    }

    /// The oldest `limit + 1` proposals waiting for `role`'s decision (by
    /// `from_role`, on `pin_key`, when given), read whole with the role's
    /// read state.
    pub fn awaiting_votes_page(
        &self,
        role: &str,
        from_role: Option<&str>,
        pin_key: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<MessageRow>> {
        let sql = awaiting_page_sql();
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_map(
                    params![role, from_role, pin_key, limit as i64 + 1],
                    MessageRow::from_sql,
                )?
                .collect()
            })
            .db(&self.path)
    }
}

/// The statement of [`Index::awaiting_votes_page`]. CROSS JOIN keeps the
/// messages outside: the planner walks the partial index of awaiting
/// messages in page order and stops at the limit. Left to choose, it walked
/// every delivery of the role (all of its mail: 6 ms at 10k messages, none
/// of them awaiting) and sorted what it found.
pub(super) fn awaiting_page_sql() -> String {
    format!(
        "SELECT {MESSAGE_COLUMNS}, d.read_ms, d.opened_ms FROM messages m \
         CROSS JOIN deliveries d ON d.message_id = m.id AND d.role = ?1 \
         WHERE {AWAITING} AND (?2 IS NULL OR m.from_role = ?2) AND (?3 IS NULL OR m.pin_key = ?3) \
         ORDER BY m.ms, m.c, m.id LIMIT ?4"
    )
}
