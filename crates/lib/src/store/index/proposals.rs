//! Proposals (`kind="proc"`) waiting for a role's decision.
//!
//! The rule is `core::message::Message::awaits`: the index stores, with each
//! message's row, the roles it waits for (`awaiting`), so these queries only
//! read what core decided and hold no rule of their own.

use rusqlite::params;

use super::Index;
use super::messages::{MESSAGE_COLUMNS, MessageRow, VIEWER_STATE};
use super::rows::{At, FromRow, Named};
use crate::store::error::StoreResult;

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

impl FromRow for OpenProposal {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "messages",
            row: &id,
        };
        Ok(Self {
            from: r.get("from_role")?,
            topic: r.get("topic")?,
            ms: r.get("ms")?,
            pin_key: r.get("pin_key")?,
            // Null for a round nobody is awaited on.
            awaiting: at.json_opt(r, "awaiting")?.unwrap_or_default(),
            votes: Vec::new(),
            id,
        })
    }
}

impl FromRow for CastVote {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            role: r.get("role")?,
            decision: r.get("decision")?,
            stale: r.get("stale")?,
            ms: r.get("ms")?,
            note: r.get("note")?,
        })
    }
}

impl FromRow for AwaitedProposal {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get("id")?,
            topic: r.get("topic")?,
        })
    }
}

impl Index {
    /// The newest `limit + 1` live proposals that still wait for someone's
    /// decision or hold a round on a pin key (not retired: a pin write
    /// settles the rounds on its key), each with its votes. A round nobody
    /// is awaited on (contested, or agreed and not pinned yet) is listed too:
    /// it still holds its key.
    pub fn open_proposals(&self, limit: usize) -> StoreResult<Vec<OpenProposal>> {
        let mut out: Vec<OpenProposal> = self.rows(
            "SELECT m.id, m.from_role, m.topic, m.ms, m.pin_key, m.awaiting FROM messages m \
             WHERE m.kind = 'proc' AND m.deleted_ms IS NULL AND (m.awaiting IS NOT NULL \
             OR (m.pin_key IS NOT NULL AND m.retired_ms IS NULL)) \
             ORDER BY m.ms DESC, m.c DESC, m.id DESC LIMIT ?1",
            [limit as i64 + 1],
        )?;
        for prop in &mut out {
            prop.votes = self.rows(
                "SELECT role, decision, stale, ms, note FROM votes WHERE message_id = ?1 \
                 ORDER BY role",
                [&prop.id],
            )?;
        }
        Ok(out)
    }

    /// Every proposal waiting for `role`'s decision, oldest first.
    pub fn awaiting_votes(&self, role: &str) -> StoreResult<Vec<AwaitedProposal>> {
        let sql = format!(
            "SELECT m.id, m.topic FROM messages m WHERE {AWAITING} ORDER BY m.ms, m.c, m.id"
        );
        self.rows(&sql, [role])
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
        self.rows(
            &awaiting_page_sql(),
            params![role, from_role, pin_key, limit as i64 + 1],
        )
    }
}

/// The statement of [`Index::awaiting_votes_page`]. CROSS JOIN keeps the
/// messages outside: the planner walks the partial index of awaiting
/// messages in page order and stops at the limit. Left to choose, it walked
/// every delivery of the role (all of its mail: 6 ms at 10k messages, none
/// of them awaiting) and sorted what it found.
pub(super) fn awaiting_page_sql() -> String {
    format!(
        "SELECT {MESSAGE_COLUMNS}, {VIEWER_STATE} FROM messages m \
         CROSS JOIN deliveries d ON d.message_id = m.id AND d.role = ?1 \
         WHERE {AWAITING} AND (?2 IS NULL OR m.from_role = ?2) AND (?3 IS NULL OR m.pin_key = ?3) \
         ORDER BY m.ms, m.c, m.id LIMIT ?4"
    )
}
