//! The memory's notes as ingest stores them, with their full-text rows.
//!
//! Owns every write on `notes` and `notes_fts`; must not decide whether a
//! note may be written (the app does).

use rusqlite::{OptionalExtension as _, params};

use super::IndexTx;
use crate::core::hlc::OrderKey;
use crate::core::op::MemoryNote;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Stores a note record (already checked) of `role`, ingested as record
    /// `n`, and indexes its text.
    pub fn record_note(
        &self,
        n: i64,
        key: OrderKey,
        role: &str,
        note: &MemoryNote,
    ) -> StoreResult<()> {
        let added = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO notes(n, id, role, ms, c, kind, text, event, agent, session, \
                 folder, folder_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    n,
                    key.id.hex(),
                    role,
                    key.hlc.0,
                    key.hlc.1,
                    note.kind.as_str(),
                    note.text,
                    note.event,
                    note.agent,
                    note.session,
                    note.folder,
                    note.folder_hash
                ])
            })
            .db(&self.path)?;
        if added == 1 {
            self.conn
                .prepare_cached("INSERT INTO notes_fts(rowid, text) VALUES (?1, ?2)")
                .and_then(|mut st| st.execute(params![n, note.text]))
                .db(&self.path)?;
        }
        Ok(())
    }

    /// Forgets the note ingested as record `n` (a fork took it back), from
    /// the full-text table too.
    pub fn forget_note(&self, n: i64) -> StoreResult<()> {
        let text: Option<String> = self
            .conn
            .prepare_cached("SELECT text FROM notes WHERE n = ?1")
            .and_then(|mut st| st.query_row([n], |r| r.get(0)).optional())
            .db(&self.path)?;
        let Some(text) = text else {
            return Ok(());
        };
        self.conn
            .prepare_cached(
                "INSERT INTO notes_fts(notes_fts, rowid, text) VALUES ('delete', ?1, ?2)",
            )
            .and_then(|mut st| st.execute(params![n, text]))
            .db(&self.path)?;
        self.conn
            .prepare_cached("DELETE FROM notes WHERE n = ?1")
            .and_then(|mut st| st.execute([n]))
            .db(&self.path)?;
        Ok(())
    }
}
