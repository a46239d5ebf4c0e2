//! Notes of the memory as the index holds them: the `notes` table, its
//! full-text table, and the lookups recording and the memory make.
//!
//! Owns every read of `notes` and `notes_fts` (the writes are
//! `write::notes`). A note is stored as
//! ingested (already checked by `core::memory::note`); it must not decide
//! whether a note may be written (the app does) nor where it sits in the
//! memory (`core::memory` does).

use rusqlite::params;

use super::Index;
use super::rows::{At, FromRow, Named, Stored};
use crate::core::hlc::{Hlc, OrderKey};
use crate::core::ids::RecordId;
use crate::core::memory::note::NoteKind;
use crate::core::memory::provenance::Provenance;
use crate::store::error::StoreResult;

/// A note as the index holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteRow {
    /// Its place in the total order (its record id and clock).
    pub key: OrderKey,
    /// The role whose feed holds it.
    pub role: String,
    /// What it records.
    pub kind: NoteKind,
    /// The text.
    pub text: String,
    /// The recorded event, if a hook wrote it.
    pub event: Option<String>,
    /// The agent that recorded it.
    pub agent: Option<String>,
    /// The short hash of the agent's session.
    pub session: Option<String>,
    /// The folder the session worked in, relative to the project root.
    pub folder: Option<String>,
    /// The short hash of that folder's absolute path.
    pub folder_hash: Option<String>,
    /// The device whose feed holds it.
    pub device: Option<String>,
}

impl NoteRow {
    /// Where the note came from.
    pub fn provenance(&self) -> Provenance {
        Provenance {
            role: self.role.clone(),
            device: self.device.clone(),
            folder: self.folder.clone(),
            folder_hash: self.folder_hash.clone(),
            agent: self.agent.clone(),
            session: self.session.clone(),
        }
    }
}

/// The columns of a [`NoteRow`], over `notes n` joined with the record it
/// came in (`records r`, for the feed and so the device).
const NOTE_COLUMNS: &str = "n.id, n.ms, n.c, n.role, n.kind, n.text, n.event, n.agent, n.session, n.folder, \
     n.folder_hash, r.feed";

/// `FROM` the notes with their records.
const NOTES_FROM: &str = "FROM notes n LEFT JOIN records r ON r.n = n.n";

/// Adds `notes.folder` and `notes.folder_hash` to an index made before
/// notes recorded their folder (every note it holds has none).
pub(super) fn add_folder_columns(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    for column in ["folder", "folder_hash"] {
        let has: bool = conn
            .prepare("SELECT 1 FROM pragma_table_info('notes') WHERE name = ?1")?
            .exists([column])?;
        if !has {
            conn.execute_batch(&format!("ALTER TABLE notes ADD COLUMN {column} TEXT"))?;
        }
    }
    Ok(())
}

impl Stored for NoteKind {
    fn parse_stored(text: &str) -> Result<Self, String> {
        NoteKind::parse(text).ok_or_else(|| format!("'{text}' is not a kind of note"))
    }
}

impl FromRow for NoteRow {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let kind: String = r.get("kind")?;
        let at = At {
            table: "notes",
            row: &id,
        };
        Ok(Self {
            key: OrderKey {
                hlc: Hlc(r.get("ms")?, r.get("c")?),
                id: at.decode("id", &id)?,
            },
            role: r.get("role")?,
            kind: at.decode("kind", &kind)?,
            text: r.get("text")?,
            event: r.get("event")?,
            agent: r.get("agent")?,
            session: r.get("session")?,
            folder: r.get("folder")?,
            folder_hash: r.get("folder_hash")?,
            device: r
                .get::<_, Option<String>>("feed")?
                .and_then(|f| f.split_once('/').map(|(_, d)| d.to_owned())),
        })
    }
}

/// A note's id and clock time, as `Index::note_of_event` answers.
struct NoteAt(RecordId, i64);

impl FromRow for NoteAt {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "notes",
            row: &id,
        };
        Ok(Self(at.decode("id", &id)?, r.get("ms")?))
    }
}

impl Index {
    /// The note of `role` that recorded `event`, if one arrived: its id and
    /// its clock time (ms).
    pub fn note_of_event(&self, role: &str, event: &str) -> StoreResult<Option<(RecordId, i64)>> {
        let row: Option<NoteAt> = self.row_opt(
            "SELECT id, ms FROM notes WHERE role = ?1 AND event = ?2 ORDER BY ms, c, id LIMIT 1",
            [role, event],
        )?;
        Ok(row.map(|NoteAt(id, ms)| (id, ms)))
    }

    /// Every note, in the total order.
    pub fn notes(&self) -> StoreResult<Vec<NoteRow>> {
        self.rows(
            &format!("SELECT {NOTE_COLUMNS} {NOTES_FROM} ORDER BY n.ms, n.c, n.id"),
            [],
        )
    }

    /// The notes ingested after record `n`, in no order.
    pub fn notes_after(&self, n: i64) -> StoreResult<Vec<NoteRow>> {
        self.rows(
            &format!("SELECT {NOTE_COLUMNS} {NOTES_FROM} WHERE n.n > ?1"),
            [n],
        )
    }

    /// The note with record id `id`, if one is here.
    pub fn note(&self, id: &RecordId) -> StoreResult<Option<NoteRow>> {
        self.row_opt(
            &format!("SELECT {NOTE_COLUMNS} {NOTES_FROM} WHERE n.id = ?1"),
            [id.hex()],
        )
    }

    /// The notes of `role`'s session `session` after `after` in the total
    /// order, oldest first, at most `limit`.
    pub fn session_notes_after(
        &self,
        role: &str,
        session: &str,
        after: &OrderKey,
        limit: usize,
    ) -> StoreResult<Vec<NoteRow>> {
        self.rows(
            &format!(
                "SELECT {NOTE_COLUMNS} {NOTES_FROM} WHERE n.role = ?1 AND n.session = ?2 \
                 AND (n.ms, n.c, n.id) > (?3, ?4, ?5) ORDER BY n.ms, n.c, n.id LIMIT ?6"
            ),
            params![
                role,
                session,
                after.hlc.0,
                after.hlc.1,
                after.id.hex(),
                limit as i64
            ],
        )
    }

    /// The notes whose text matches `fts` (an FTS5 query over the trigram
    /// table), best first, at most `limit`. The message search never reads
    /// this table; a memory search reads it beside the messages'.
    pub fn search_notes(&self, fts: &str, limit: usize) -> StoreResult<Vec<NoteRow>> {
        self.rows(
            &format!(
                "SELECT {NOTE_COLUMNS} FROM notes_fts JOIN notes n ON n.n = notes_fts.rowid \
                 LEFT JOIN records r ON r.n = n.n \
                 WHERE notes_fts MATCH ?1 ORDER BY bm25(notes_fts), n.ms DESC, n.c DESC, n.id DESC \
                 LIMIT ?2"
            ),
            params![fts, limit as i64],
        )
    }
}
