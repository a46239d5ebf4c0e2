//! open_obligations and ready_work: what a role owes, and what it can start.

use super::refusal::{AppResult, check_limit};
use super::rows::{
    DatedListing, FieldsArg, Listing, MESSAGE_COLUMNS, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow,
    MessageView, Projected, Projection, listing, project,
};
use super::session::Session;
use crate::core::ids::Role;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::error::SqlContext as _;

/// SQL: the blocker of `m` is alive (exists, not deleted, still an open debt).
pub const BLOCKER_ALIVE: &str = "EXISTS (SELECT 1 FROM messages b WHERE b.id = m.blocked_by \
    AND b.deleted_ms IS NULL AND (b.status IS NULL OR b.status = 'open'))";

fn debts(
    s: &mut Session,
    role: &str,
    extra: &str,
    order: &str,
    limit: usize,
) -> AppResult<Vec<MessageRow>> {
    s.catch_up()?;
    let ix = s.index();
    // The page is chosen first from the covering index of open debts, in
    // its own order, and only its rows are then read whole: driving the join
    // from the role's deliveries (tens of thousands) and sorting every open
    // debt among them with its body cost ten times more. A delivery is
    // deleted exactly when its message is (both are written from the one
    // folded message), so `m.deleted_ms IS NULL` only lets the index range
    // start where the rows are.
    let sql = format!(
        "WITH page(id) AS (SELECT m.id FROM messages m WHERE m.status = 'open' \
         AND m.deleted_ms IS NULL AND EXISTS (SELECT 1 FROM deliveries d WHERE d.role = ?1 \
         AND d.message_id = m.id AND d.deleted = 0) {extra} ORDER BY {order} LIMIT ?2) \
         SELECT {MESSAGE_COLUMNS}, d.read_ms, d.opened_ms FROM page \
         JOIN messages m ON m.id = page.id JOIN deliveries d ON d.role = ?1 AND d.message_id = m.id \
         ORDER BY {order}"
    );
    Ok(ix
        .conn()
        .prepare_cached(&sql)
        .and_then(|mut st| {
            st.query_map(
                rusqlite::params![role, limit as i64 + 1],
                MessageRow::from_sql,
            )?
            .collect()
        })
        .db(ix.path())?)
}

/// Open debts addressed to `to_role` (default: the caller), newest first.
pub fn open_obligations(
    s: &mut Session,
    to_role: Option<&str>,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<DatedListing<Projected<MessageView>>> {
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let role = match to_role {
        Some(r) => r.trim().to_owned(),
        None => s.role()?.to_string(),
    };
    let mut rows = debts(s, &role, "", "m.ms DESC, m.c DESC, m.id DESC", limit)?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let now = now_ms();
    let viewer = Role::new(&role).ok();
    let out = rows
        .iter()
        .map(|r| project(proj.as_ref(), r.view_aged(viewer.as_ref(), now)))
        .collect();
    Ok(DatedListing {
        listing: listing(
            out,
            limit,
            overflow,
            "more debts are open; raise 'limit' (at most 1000)",
        ),
        generated_at: format_rfc3339(now),
    })
}

/// The caller's open debts it can start now, oldest first: a task blocked on
/// a live blocker (or blocked without one) is left out; one whose blocker was
/// resolved or deleted is in, because resuming it is the caller's move.
pub fn ready_work(
    s: &mut Session,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<MessageView>>> {
    let me = s.role()?;
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let extra = format!(
        "AND NOT (m.work_status IS 'blocked' AND (m.blocked_by IS NULL OR {BLOCKER_ALIVE}))"
    );
    let mut rows = debts(s, me.as_str(), &extra, "m.ms, m.c, m.id", limit)?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let now = now_ms();
    let out = rows
        .iter()
        .map(|r| project(proj.as_ref(), r.view_aged(Some(&me), now)))
        .collect();
    Ok(listing(
        out,
        limit,
        overflow,
        "more work is ready; raise 'limit' (at most 1000)",
    ))
}
