//! How much work SQLite does on the index connection, counted in
//! virtual-machine instructions rather than timed: tests and the bench tell
//! a cost that grows with the folder from one that grows with its square
//! (a query per feed that scans a table holding a row per feed) on a
//! loaded machine, where a clock cannot. Owns the connection's progress
//! handler; it only counts and never interrupts a statement.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Index;
use crate::store::error::{SqlContext as _, StoreResult};

/// Instructions between two calls of the progress handler: coarse enough to
/// cost nothing measurable, fine enough for any pass over a folder.
const TICK: u32 = 1000;

/// A running count of the index connection's SQLite instructions
/// ([`Index::count_work`]), in steps of [`TICK`].
#[derive(Clone, Debug, Default)]
pub struct IndexWork {
    ticks: Arc<AtomicU64>,
}

impl IndexWork {
    /// SQLite instructions run since counting started (a multiple of 1,000).
    pub fn instructions(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed) * u64::from(TICK)
    }
}

impl Index {
    /// Starts counting the SQLite instructions this connection runs, in
    /// place of any earlier count.
    pub fn count_work(&mut self) -> StoreResult<IndexWork> {
        let work = IndexWork::default();
        let ticks = Arc::clone(&work.ticks);
        self.conn
            .progress_handler(
                TICK as i32,
                Some(move || {
                    ticks.fetch_add(1, Ordering::Relaxed);
                    false
                }),
            )
            .db(&self.path)?;
        Ok(work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_of_more_rows_counts_more_work() {
        let mut ix = Index::in_memory("c").unwrap();
        let work = ix.count_work().unwrap();
        let scan = |ix: &Index, rows: i64| {
            ix.conn
                .query_row(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
                     SELECT count(*) FROM n",
                    [rows],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
        };
        assert_eq!(scan(&ix, 10_000), 10_000);
        let small = work.instructions();
        scan(&ix, 100_000);
        let large = work.instructions() - small;
        assert!(small > 0, "no work counted");
        assert!(large > 5 * small, "{small} then {large}");
    }
}
