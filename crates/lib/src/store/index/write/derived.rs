//! Emptying what the feeds fold into, before a rebuild folds it again.
//!
//! Owns the list of derived tables' emptying; must not decide when a
//! rebuild runs (`Channel::reindex_rows` does).

use super::super::schema::{BUILT_AFTER_A_REBUILD, DERIVED_TABLES, SCHEMA};
use super::IndexTx;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Empties every table folded from the feeds (inside the caller's transaction).
    pub fn clear_derived(&self) -> StoreResult<()> {
        for t in DERIVED_TABLES {
            self.conn
                .execute(&format!("DELETE FROM {t}"), [])
                .db(&self.path)?;
        }
        self.conn
            .execute("INSERT INTO notes_fts(notes_fts) VALUES ('delete-all')", [])
            .db(&self.path)?;
        self.forget_search_index()
    }

    /// Drops the indexes no fold reads ([`BUILT_AFTER_A_REBUILD`]), before
    /// a rebuild folds every record; [`Self::make_missing_indexes`] makes
    /// them again. Inside the caller's transaction, so a rebuild that fails
    /// leaves them as they were.
    pub fn drop_query_indexes(&self) -> StoreResult<()> {
        for name in BUILT_AFTER_A_REBUILD {
            self.conn
                .execute(&format!("DROP INDEX IF EXISTS {name}"), [])
                .db(&self.path)?;
        }
        Ok(())
    }

    /// Makes every table and index of the schema that is missing: the
    /// indexes a rebuild dropped, each from one sort of its rows.
    pub fn make_missing_indexes(&self) -> StoreResult<()> {
        self.conn.execute_batch(SCHEMA).db(&self.path)
    }
}
