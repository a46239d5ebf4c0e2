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

/// A proposal behind the `awaiting_ack` counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwaitedProposal {
    /// Full id.
    pub id: String,
    /// Subject.
    pub topic: String,
}

impl Index {
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
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, d.read_ms, d.opened_ms FROM messages m \
             JOIN deliveries d ON d.message_id = m.id AND d.role = ?1 \
             WHERE {AWAITING} AND (?2 IS NULL OR m.from_role = ?2) AND (?3 IS NULL OR m.pin_key = ?3) \
             ORDER BY m.ms, m.c, m.id LIMIT ?4"
        );
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
