//! Lifecycle events of messages, as folded (`core::message::Event`).

use super::Index;
use crate::store::error::{SqlContext as _, StoreResult};

/// One lifecycle event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRow {
    /// What happened (`resolved`, `work_status:done` …).
    pub event: String,
    /// Who did it.
    pub role: String,
    /// Its note.
    pub note: Option<String>,
    /// When (ms).
    pub ms: i64,
}

impl Index {
    /// Every lifecycle event of message `id`, oldest first.
    pub fn events_of(&self, id: &str) -> StoreResult<Vec<EventRow>> {
        self.conn
            .prepare_cached(
                "SELECT event, role, note, ms FROM events WHERE message_id = ?1 ORDER BY pos",
            )
            .and_then(|mut st| {
                st.query_map([id], |r| {
                    Ok(EventRow {
                        event: r.get(0)?,
                        role: r.get(1)?,
                        note: r.get(2)?,
                        ms: r.get(3)?,
                    })
                })?
                .collect()
            })
            .db(&self.path)
    }

    /// The messages (full ids, in order) that record `by` retired.
    pub fn retired_by(&self, by: &str) -> StoreResult<Vec<String>> {
        self.conn
            .prepare_cached(
                "SELECT e.message_id FROM events e JOIN messages m ON m.id = e.message_id \
                 WHERE e.record = ?1 AND e.event IN ('superseded', 'superseded_backfill') \
                 ORDER BY m.ms, m.c, m.id",
            )
            .and_then(|mut st| st.query_map([by], |r| r.get::<_, String>(0))?.collect())
            .db(&self.path)
    }
}
