//! Emptying what the feeds fold into, before a rebuild folds it again.
//!
//! Owns the list of derived tables' emptying; must not decide when a
//! rebuild runs (`Channel::reindex_rows` does).

use super::super::schema::DERIVED_TABLES;
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
            .execute(
                "INSERT INTO bodies_fts(bodies_fts) VALUES ('delete-all')",
                [],
            )
            .db(&self.path)?;
        self.conn
            .execute("INSERT INTO notes_fts(notes_fts) VALUES ('delete-all')", [])
            .db(&self.path)?;
        self.conn
            .execute("DELETE FROM meta WHERE key = 'fts_rowid'", [])
            .db(&self.path)?;
        Ok(())
    }
}
