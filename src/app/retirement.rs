//! Which messages a write retired, for the answers that report it.

use super::refusal::AppResult;
use super::rows::short;
use crate::core::ids::RecordId;
use crate::store::Index;
use crate::store::error::SqlContext as _;

/// The messages (short ids, in order) that record `by` retired.
pub fn retired_by(ix: &Index, by: &RecordId) -> AppResult<Vec<String>> {
    let p = ix.path();
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT e.message_id FROM events e JOIN messages m ON m.id = e.message_id \
             WHERE e.record = ?1 AND e.event IN ('superseded', 'superseded_backfill') \
             ORDER BY m.ms, m.c, m.id",
        )
        .db(p)?;
    let ids = st
        .query_map([by.hex()], |r| r.get::<_, String>(0))
        .db(p)?
        .collect::<Result<Vec<_>, _>>()
        .db(p)?;
    Ok(ids.iter().map(|i| short(i)).collect())
}
