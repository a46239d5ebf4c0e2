//! Lifecycle events of messages, as folded (`core::message::Event`).

use super::Index;
use super::rows::{FromRow, Named};
use crate::store::error::StoreResult;

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

impl FromRow for EventRow {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            event: r.get("event")?,
            role: r.get("role")?,
            note: r.get("note")?,
            ms: r.get("ms")?,
        })
    }
}

impl Index {
    /// Every lifecycle event of message `id`, oldest first.
    pub fn events_of(&self, id: &str) -> StoreResult<Vec<EventRow>> {
        self.rows(
            "SELECT event, role, note, ms FROM events WHERE message_id = ?1 ORDER BY pos",
            [id],
        )
    }

    /// The messages (full ids, in order) that record `by` retired.
    pub fn retired_by(&self, by: &str) -> StoreResult<Vec<String>> {
        self.values(
            "SELECT e.message_id FROM events e JOIN messages m ON m.id = e.message_id \
             WHERE e.record = ?1 AND e.event IN ('superseded', 'superseded_backfill') \
             ORDER BY m.ms, m.c, m.id",
            [by],
        )
    }
}
