//! Deliveries: which role received which message, and its read state.
//!
//! Rows are written from the folded message (`Message::deliveries`); these
//! queries only read them.

use rusqlite::params;

use super::Index;
use crate::store::error::StoreResult;

/// Counts role ?1's unread mail; covered by `deliveries_unread_cover`.
pub(super) const UNREAD_MAIL: &str = "SELECT count(*), coalesce(sum(opened_ms IS NULL), 0), \
    coalesce(max(n), 0) FROM deliveries WHERE role = ?1 AND deleted = 0 AND read_ms IS NULL";

/// A role's mail that is delivered and not marked read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnreadMail {
    /// How many messages.
    pub unread: usize,
    /// How many of them were never handed over (`opened`).
    pub unopened: usize,
    /// The highest local ingest number among them (0 when none): a new
    /// unread message always raises it.
    pub newest_n: i64,
}

impl Index {
    /// Counts `role`'s unread mail. Mail can be plentiful, so it is counted,
    /// not listed (from one covering index).
    pub fn unread_mail(&self, role: &str) -> StoreResult<UnreadMail> {
        let (unread, unopened, newest_n): (i64, i64, i64) = self.row(UNREAD_MAIL, [role])?;
        Ok(UnreadMail {
            unread: unread as usize,
            unopened: unopened as usize,
            newest_n,
        })
    }

    /// `Some(read_ms)` if message `id` is delivered to `role`, `None` if not.
    pub fn read_state(&self, id: &str, role: &str) -> StoreResult<Option<Option<i64>>> {
        self.scalar_opt(
            "SELECT read_ms FROM deliveries WHERE role = ?1 AND message_id = ?2",
            params![role, id],
        )
    }
}
