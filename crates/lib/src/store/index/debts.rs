//! Debts (messages sent with `action_required`): the open ones a role owes,
//! the resolutions waiting for its confirmation, and blockers.
//!
//! Owns the one definition of a live blocker ([`BLOCKER_ALIVE`]), which the
//! ball (`super::ball`) and ready work share. A debt's own lifecycle is
//! folded by `core` and stored with its row; these queries only read it.

use rusqlite::params;

use super::Index;
use super::messages::{MESSAGE_COLUMNS, MessageRow, VIEWER_STATE};
use super::rows::{At, FromRow, Named};
use crate::store::error::StoreResult;

/// "The blocker of `m` is alive": it exists, is not deleted, and is not a
/// debt that was resolved (status NULL or open; protocol §3.14). A task
/// blocked on a live blocker stays blocked; on a dead one it is the owner's
/// to resume (`unblocked`, ready work). The one definition.
pub(super) const BLOCKER_ALIVE: &str = "EXISTS (SELECT 1 FROM messages b \
    WHERE b.id = m.blocked_by AND b.deleted_ms IS NULL \
    AND (b.status IS NULL OR b.status = 'open'))";

/// "Message `m` is addressed to role ?1", decided from the message row alone:
/// `to_json` is the JSON list of its recipients, exactly the roles that have
/// a row in `deliveries` for it, and role names are slugs (never a quote).
/// The covering indexes of the counters carry `to_json`, so this costs no
/// lookup in `deliveries` per message (thousands of them on a busy channel,
/// mostly uncached in a fresh process such as the status command or a hook).
pub(super) const ADDRESSED: &str = "instr(m.to_json, '\"' || ?1 || '\"') > 0";

/// Every open, live debt addressed to role ?1, oldest first; covered by
/// `messages_debts_to`.
pub(super) fn open_debts_sql() -> String {
    format!(
        "SELECT m.id, m.topic, m.taken FROM messages m WHERE m.status = 'open' \
         AND m.deleted_ms IS NULL AND {ADDRESSED} ORDER BY m.ms, m.c, m.id"
    )
}

/// Which page of a role's open debts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebtPage {
    /// Every open debt, newest first (open_obligations).
    Open,
    /// The ones it can start now, oldest first (ready_work): a task blocked
    /// on a live blocker (or blocked without one) is left out.
    Ready,
}

/// An open debt behind the counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenDebt {
    /// Full id.
    pub id: String,
    /// Subject.
    pub topic: String,
    /// Taken by its addressee (`core::message::Message::taken`, stored).
    pub taken: bool,
}

/// A resolution by the other side, waiting for confirmation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingResolution {
    /// Full id.
    pub id: String,
    /// Subject.
    pub topic: String,
    /// Who resolved it.
    pub resolved_by: String,
    /// When (ms).
    pub resolved_ms: i64,
    /// The resolution's note.
    pub note: Option<String>,
}

/// Which debts [`Index::debt_lines`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebtState {
    /// Open (never resolved, or reopened), oldest first.
    Open,
    /// Resolved and not yet confirmed, oldest debt first.
    Unconfirmed,
}

/// A live debt with who owes it and where its ball lies (the board's rows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebtLine {
    /// Full id.
    pub id: String,
    /// Its author.
    pub from: String,
    /// Its recipients, sorted.
    pub to: Vec<String>,
    /// Subject.
    pub topic: String,
    /// When it was sent (ms).
    pub ms: i64,
    /// Taken by its addressee.
    pub taken: bool,
    /// Its work status, if any.
    pub work_status: Option<String>,
    /// The role that made the last work-status move.
    pub ws_by: Option<String>,
    /// The blocker (full id), for a blocked task.
    pub blocked_by: Option<String>,
    /// Time of its latest lifecycle event (ms).
    pub last_move_ms: i64,
    /// Who resolved it (an unconfirmed resolution).
    pub resolved_by: Option<String>,
    /// When (ms).
    pub resolved_ms: Option<i64>,
}

/// The spans behind [`Index::debt_spans`] (?1 since, ?2 limit): the open
/// debts from `messages_debts_to`, the ones resolved since ?1 from
/// `messages_debt_closed`, neither reading a row.
pub(super) const DEBT_SPANS: &str = "SELECT * FROM (SELECT m.rowid AS row, m.to_json, m.ms AS opened_ms, \
    NULL AS closed_ms FROM messages m \
    WHERE m.status = 'open' AND m.deleted_ms IS NULL ORDER BY m.ms DESC LIMIT ?2) \
    UNION ALL SELECT * FROM (SELECT m.rowid, m.to_json, m.ms, m.resolved_ms FROM messages m \
    INDEXED BY messages_debt_closed WHERE m.status = 'resolved' \
    AND m.resolved_ms >= ?1 AND m.deleted_ms IS NULL ORDER BY m.resolved_ms DESC LIMIT ?2)";

/// When a debt was open, for a chart of open debts over time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebtSpan {
    /// Its recipients (the roles that owe it).
    pub to: Vec<String>,
    /// When it was sent (ms).
    pub opened_ms: i64,
    /// When it was resolved (ms); `None` while it is open.
    pub closed_ms: Option<i64>,
}

impl FromRow for OpenDebt {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get("id")?,
            topic: r.get("topic")?,
            taken: r.get("taken")?,
        })
    }
}

impl FromRow for PendingResolution {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get("id")?,
            topic: r.get("topic")?,
            resolved_by: r.get("resolved_by")?,
            resolved_ms: r.get("resolved_ms")?,
            note: r.get("note")?,
        })
    }
}

impl FromRow for DebtLine {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "messages",
            row: &id,
        };
        Ok(Self {
            from: r.get("from_role")?,
            to: at.json(r, "to_json")?,
            topic: r.get("topic")?,
            ms: r.get("ms")?,
            taken: r.get("taken")?,
            work_status: r.get("work_status")?,
            ws_by: r.get("ws_by")?,
            blocked_by: r.get("blocked_by")?,
            last_move_ms: r.get("last_move_ms")?,
            resolved_by: r.get("resolved_by")?,
            resolved_ms: r.get("resolved_ms")?,
            id,
        })
    }
}

impl FromRow for DebtSpan {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        // The covering indexes hold the rowid, not the id.
        let row = format!("with rowid {}", r.get::<_, i64>("row")?);
        let at = At {
            table: "messages",
            row: &row,
        };
        Ok(Self {
            to: at.json(r, "to_json")?,
            opened_ms: r.get("opened_ms")?,
            closed_ms: r.get("closed_ms")?,
        })
    }
}

impl Index {
    /// The oldest `limit + 1` live debts in `state`, channel-wide. Each row
    /// is found in `messages_debts_to` and read whole; the limit bounds the
    /// cost on a channel of any size.
    pub fn debt_lines(&self, state: DebtState, limit: usize) -> StoreResult<Vec<DebtLine>> {
        let (cond, order) = match state {
            DebtState::Open => ("m.status = 'open'", "m.ms, m.c, m.id"),
            // Read in the order of `messages_debts_to`, which holds
            // `confirmed`: no row is read but the ones listed.
            DebtState::Unconfirmed => (
                "m.status = 'resolved' AND m.confirmed = 0",
                "m.ms, m.c, m.id",
            ),
        };
        let sql = format!(
            "SELECT m.id, m.from_role, m.to_json, m.topic, m.ms, m.taken, m.work_status, m.ws_by, \
             m.blocked_by, m.last_move_ms, m.resolved_by, m.resolved_ms FROM messages m \
             WHERE {cond} AND m.deleted_ms IS NULL ORDER BY {order} LIMIT ?1"
        );
        self.rows(&sql, [limit as i64 + 1])
    }

    /// The spans of the live debts that were open at some time from
    /// `since_ms` on: every open debt (from `messages_debts_to`, no row
    /// read) and the ones resolved since then (from `messages_debt_closed`),
    /// at most `limit` of each. A reopened debt counts from when it was
    /// sent; a deleted one not at all.
    pub fn debt_spans(&self, since_ms: i64, limit: usize) -> StoreResult<Vec<DebtSpan>> {
        self.rows(DEBT_SPANS, params![since_ms, limit as i64])
    }
}

impl Index {
    /// A page of the open debts delivered to `role` (`limit + 1` rows), read
    /// whole with the role's read state.
    pub fn debts_page(
        &self,
        role: &str,
        page: DebtPage,
        limit: usize,
    ) -> StoreResult<Vec<MessageRow>> {
        let (extra, order) = match page {
            DebtPage::Open => (String::new(), "m.ms DESC, m.c DESC, m.id DESC"),
            DebtPage::Ready => (
                format!(
                    "AND NOT (m.work_status IS 'blocked' AND (m.blocked_by IS NULL OR {BLOCKER_ALIVE}))"
                ),
                "m.ms, m.c, m.id",
            ),
        };
        // The page is chosen first from the covering index of open debts, in
        // its own order, and only its rows are then read whole: driving the join
        // from the role's deliveries (tens of thousands) and sorting every open
        // debt among them with its body cost ten times more. A delivery is
        // deleted exactly when its message is (both are written from the one
        // folded message), so `m.deleted_ms IS NULL` only lets the index range
        // start where the rows are. Whether the debt is addressed to the role
        // is read from the index first ([`ADDRESSED`]), so only those debts
        // are looked up in `deliveries` (a lookup per debt of every role
        // took a third of the call). The page's rows come back in no set
        // order and are put in the page's here: SQLite sorted them whole, the
        // bodies copied into its sorter and out (a tenth of the query). The
        // page names its rows by rowid, which the index carries: each is then
        // read without a search by its text id.
        let sql = format!(
            "WITH page(row) AS (SELECT m.rowid FROM messages m WHERE m.status = 'open' \
             AND m.deleted_ms IS NULL AND {ADDRESSED} AND EXISTS (SELECT 1 FROM deliveries d \
             WHERE d.role = ?1 AND d.message_id = m.id AND d.deleted = 0) {extra} \
             ORDER BY {order} LIMIT ?2) \
             SELECT {MESSAGE_COLUMNS}, {VIEWER_STATE} FROM page \
             JOIN messages m ON m.rowid = page.row JOIN deliveries d ON d.role = ?1 AND d.message_id = m.id"
        );
        let mut rows: Vec<MessageRow> = self.rows(&sql, params![role, limit as i64 + 1])?;
        rows.sort_unstable_by_key(|m| (m.ms, m.c, m.id));
        if page == DebtPage::Open {
            rows.reverse();
        }
        Ok(rows)
    }

    /// Hands each open, live debt addressed to `role` to `each`, oldest
    /// first, one row at a time (a role may owe tens of thousands).
    pub fn each_open_debt_for(
        &self,
        role: &str,
        mut each: impl FnMut(OpenDebt),
    ) -> StoreResult<()> {
        self.each_row(&open_debts_sql(), [role], |debt| {
            each(debt);
            Ok::<_, crate::store::StoreError>(true)
        })
    }

    /// Live debts `role` is a party to, resolved by another role and not yet
    /// confirmed, oldest first.
    pub fn resolutions_for(&self, role: &str) -> StoreResult<Vec<PendingResolution>> {
        let sql = format!(
            "SELECT m.id, m.topic, m.resolved_by, m.resolved_ms, m.resolution_note AS note \
             FROM messages m \
             WHERE m.status = 'resolved' AND m.confirmed = 0 AND m.deleted_ms IS NULL \
             AND m.resolved_by != ?1 AND (m.from_role = ?1 OR {ADDRESSED}) ORDER BY m.ms, m.c, m.id"
        );
        self.rows(&sql, [role])
    }

    /// Live tasks whose work status is `blocked` on `id` (full ids, in
    /// order), from `messages_blocked_on`: what they cost is theirs, not
    /// every blocked task's.
    pub fn blocked_on(&self, id: &str) -> StoreResult<Vec<String>> {
        self.values(
            "SELECT id FROM messages WHERE blocked_by = ?1 AND work_status = 'blocked' \
             AND deleted_ms IS NULL ORDER BY ms, c, id",
            [id],
        )
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::params;

    use super::*;

    #[test]
    fn the_tasks_blocked_on_a_message_cost_what_they_are_not_every_blocked_task() {
        let mut ix = Index::in_memory("c").unwrap();
        // Task i is blocked on message i % 1000; tasks 0 and 1000 both wait
        // on message 0, and task 2000 waits on it but was deleted.
        for i in 0..3000_i64 {
            ix.conn()
                .execute(
                    "INSERT INTO messages(id, n, from_role, to_json, multi, topic, \
                     action_required, decision_requested, ms, c, body_sha256, body_bytes, \
                     body_chars, last_move_ms, work_status, blocked_by, deleted_ms) \
                     VALUES (?1, ?2, 'a', '[\"b\"]', 0, 't', 0, 0, ?2, 0, '', 0, 0, ?2, \
                     'blocked', ?3, ?4)",
                    params![
                        format!("{i:064x}"),
                        i,
                        format!("{:064x}", i % 1000),
                        (i == 2000).then_some(i)
                    ],
                )
                .unwrap();
        }
        let work = ix.count_work().unwrap();
        let blocked = ix.blocked_on(&format!("{:064x}", 0)).unwrap();
        let instructions = work.instructions();
        assert_eq!(
            blocked,
            [format!("{:064x}", 0), format!("{:064x}", 1000)],
            "the live ones, oldest first"
        );
        // Two rows cost a few hundred instructions (counted per thousand);
        // reading the 3,000 blocked tasks costs far more.
        assert!(instructions < 5_000, "{instructions} instructions");
    }
}
