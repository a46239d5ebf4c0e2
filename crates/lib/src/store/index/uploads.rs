//! Uploads as the index names them (the fold and the text are
//! `store::fold::upload`'s).

use rusqlite::params;

use super::Index;
use crate::store::error::StoreResult;

impl Index {
    /// Upload ids in `[lo, hi)` (an id prefix and the bound past it), at
    /// most `max` of them.
    pub fn uploads_with_prefix(&self, lo: &str, hi: &str, max: usize) -> StoreResult<Vec<String>> {
        self.values(
            "SELECT id FROM uploads WHERE id >= ?1 AND id < ?2 LIMIT ?3",
            params![lo, hi, max as i64],
        )
    }
}
