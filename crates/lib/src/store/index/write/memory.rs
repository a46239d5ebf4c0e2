//! The memory's summaries as ingest stores them.
//!
//! Owns every write on `summaries`; must not decide which summary stands
//! (`index::memory` reads that, `core::memory` rules it).

use rusqlite::params;

use super::IndexTx;
use crate::core::hlc::OrderKey;
use crate::core::ids::RecordId;
use crate::core::op::Summary;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Stores a summary record (already checked), ingested as record `n`.
    pub fn record_summary(
        &self,
        n: i64,
        key: OrderKey,
        line: &RecordId,
        s: &Summary,
    ) -> StoreResult<()> {
        let covers: Vec<String> = s.covers.iter().map(RecordId::hex).collect();
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO summaries(n, line, id, ms, c, covers, text) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    n,
                    line.hex(),
                    key.id.hex(),
                    key.hlc.0,
                    key.hlc.1,
                    covers.join(","),
                    s.text
                ])
            })
            .db(&self.path)?;
        Ok(())
    }

    /// Forgets the summary ingested as record `n` (a fork took it back).
    pub fn forget_summary(&self, n: i64) -> StoreResult<()> {
        self.conn
            .prepare_cached("DELETE FROM summaries WHERE n = ?1")
            .and_then(|mut st| st.execute([n]))
            .db(&self.path)?;
        Ok(())
    }
}
