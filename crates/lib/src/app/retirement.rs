//! Which messages a write retired, for the answers that report it.

use super::refusal::AppResult;
use super::rows::short;
use crate::core::ids::RecordId;
use crate::store::Index;

/// The messages (short ids, in order) that record `by` retired.
pub fn retired_by(ix: &Index, by: &RecordId) -> AppResult<Vec<String>> {
    Ok(ix.retired_by(&by.hex())?.iter().map(|i| short(i)).collect())
}
