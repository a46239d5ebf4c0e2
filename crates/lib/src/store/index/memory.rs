//! The memory as the index holds it: the items of the sequence (messages
//! and notes) and the summaries ingested, by the line they name.
//!
//! Owns the queries the memory reads (its writes are `write::memory`). It keeps
//! every summary record (two of one line both stay); which one stands is
//! `core::memory::summary::winner`'s rule, applied here in SQL as "first in
//! the total order". It must not decide what the sequence or the tree is:
//! `core::memory` does.

use super::Index;
use super::rows::{At, FromRow, Named};
use crate::core::hlc::{Hlc, OrderKey};
use crate::core::ids::RecordId;
use crate::core::memory::provenance::Provenance;
use crate::core::memory::sequence::ItemKind;
use crate::store::error::StoreResult;

/// An item as the memory takes it in: a message or a note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryItem {
    /// Its place in the total order.
    pub key: OrderKey,
    /// A message or a note.
    pub kind: ItemKind,
    /// Its author's role.
    pub role: String,
    /// A message's topic; a note's kind (`prompt`, `reply`, `turn`, `note`).
    pub topic: String,
    /// Its text as it stands (a message's current body, a note's text).
    pub body: String,
    /// Where it came from: its role and device, and for a recorded note its
    /// folder, agent and session.
    pub from: Provenance,
}

impl From<super::NoteRow> for MemoryItem {
    /// A note as an item: its kind (`prompt`, `reply` …) stands where a
    /// message has its topic.
    fn from(n: super::NoteRow) -> Self {
        Self {
            key: n.key,
            kind: ItemKind::Note(n.kind),
            topic: n.kind.as_str().to_owned(),
            from: n.provenance(),
            role: n.role,
            body: n.text,
        }
    }
}

impl Index {
    /// Every summary of `line`, standing first: `(record id, text)`.
    pub fn summaries_of(&self, line: &RecordId) -> StoreResult<Vec<(RecordId, String)>> {
        let rows: Vec<SummaryText> = self.rows(
            "SELECT id, text FROM summaries WHERE line = ?1 ORDER BY ms, c, id",
            [line.hex()],
        )?;
        Ok(rows.into_iter().map(|s| (s.id, s.text)).collect())
    }

    /// The items of the memory, in the total order: the messages that are
    /// not deleted, with the text they stand with, and every note.
    pub fn memory_items(&self) -> StoreResult<Vec<MemoryItem>> {
        let mut items = self.memory_messages_where(
            "FROM messages m WHERE m.deleted_ms IS NULL ORDER BY m.ms, m.c, m.id",
            [],
        )?;
        let notes = self.notes()?;
        if notes.is_empty() {
            return Ok(items);
        }
        items.extend(notes.into_iter().map(MemoryItem::from));
        items.sort_by_key(|i| i.key);
        Ok(items)
    }
}

/// Where the index stands, as far as the memory can tell: it changes
/// whenever a record is taken in or taken back. Reading it costs two lookups
/// by key, whatever the size of the history.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemoryStamp {
    /// The newest record's ingest number and id (`None`: no record).
    pub last: Option<(i64, String)>,
    /// The newest problem's number: a fork, which takes records back, is
    /// always recorded as one.
    pub problems: i64,
}

/// A summary as taken in, with its ingest number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryRow {
    /// The record's ingest number.
    pub n: i64,
    /// The line it names.
    pub line: RecordId,
    /// Its place in the total order.
    pub key: OrderKey,
    /// Its text.
    pub text: String,
}

impl Index {
    /// Where the index stands ([`MemoryStamp`]).
    pub fn memory_stamp(&self) -> StoreResult<MemoryStamp> {
        let last: Option<(i64, String)> =
            self.row_opt("SELECT n, id FROM records ORDER BY n DESC LIMIT 1", [])?;
        let problems: i64 = self.scalar("SELECT COALESCE(MAX(n), 0) FROM problems", [])?;
        Ok(MemoryStamp { last, problems })
    }

    /// The id of the record ingested as `n`, if it is still there.
    pub fn record_id_at(&self, n: i64) -> StoreResult<Option<String>> {
        self.scalar_opt("SELECT id FROM records WHERE n = ?1", [n])
    }

    /// The ops of the records ingested after `n`, each once.
    pub fn ops_after(&self, n: i64) -> StoreResult<Vec<String>> {
        self.values("SELECT DISTINCT op FROM records WHERE n > ?1", [n])
    }

    /// The items that records ingested after `n` added: messages sent (not
    /// deleted, with the text they stand with) and notes, in no order.
    pub fn memory_items_after(&self, n: i64) -> StoreResult<Vec<MemoryItem>> {
        let mut items = self.memory_messages_sent_after(n)?;
        items.extend(self.notes_after(n)?.into_iter().map(MemoryItem::from));
        Ok(items)
    }

    fn memory_messages_sent_after(&self, n: i64) -> StoreResult<Vec<MemoryItem>> {
        self.memory_messages_where(
            "FROM records r JOIN messages m ON m.id = r.id \
             WHERE r.n > ?1 AND r.op = 'send' AND m.deleted_ms IS NULL",
            [n],
        )
    }

    /// Every summary ingested after `n`, in ingest order.
    pub fn summaries_after(&self, n: i64) -> StoreResult<Vec<SummaryRow>> {
        self.rows(
            "SELECT n, line, id, ms, c, text FROM summaries WHERE n > ?1 ORDER BY n",
            [n],
        )
    }

    /// One item of the memory with the text it stands with (a message not
    /// deleted, or a note), `None` when it is not here.
    pub fn memory_item(&self, id: &RecordId) -> StoreResult<Option<MemoryItem>> {
        if let Some(m) = self.memory_message(id)? {
            return Ok(Some(m));
        }
        Ok(self.note(id)?.map(MemoryItem::from))
    }

    fn memory_message(&self, id: &RecordId) -> StoreResult<Option<MemoryItem>> {
        Ok(self
            .memory_messages_where(
                "FROM messages m WHERE m.id = ?1 AND m.deleted_ms IS NULL",
                [id.hex()],
            )?
            .pop())
    }

    /// Messages as items, with the text they stand with: `from` is the
    /// query's FROM and WHERE over `messages m`.
    fn memory_messages_where(
        &self,
        from: &str,
        params: impl rusqlite::Params,
    ) -> StoreResult<Vec<MemoryItem>> {
        let rows: Vec<MemoryMessage> = self.rows(
            &format!(
                "SELECT m.id, m.ms, m.c, m.from_role, m.topic, COALESCE((SELECT body FROM bodies b \
                 WHERE b.message_id = m.id ORDER BY b.rowid DESC LIMIT 1), '') AS body {from}"
            ),
            params,
        )?;
        Ok(rows.into_iter().map(|m| m.0).collect())
    }
}

/// A summary's record id and text.
struct SummaryText {
    id: RecordId,
    text: String,
}

impl FromRow for SummaryText {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let at = At {
            table: "summaries",
            row: &id,
        };
        Ok(Self {
            id: at.decode("id", &id)?,
            text: r.get("text")?,
        })
    }
}

impl FromRow for SummaryRow {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let line: String = r.get("line")?;
        let at = At {
            table: "summaries",
            row: &id,
        };
        Ok(Self {
            n: r.get("n")?,
            line: at.decode("line", &line)?,
            key: OrderKey {
                hlc: Hlc(r.get("ms")?, r.get("c")?),
                id: at.decode("id", &id)?,
            },
            text: r.get("text")?,
        })
    }
}

/// A message as an item of the memory.
struct MemoryMessage(MemoryItem);

impl FromRow for MemoryMessage {
    fn from_row(r: &Named<'_, '_>) -> rusqlite::Result<Self> {
        let id: String = r.get("id")?;
        let role: String = r.get("from_role")?;
        let at = At {
            table: "messages",
            row: &id,
        };
        Ok(Self(MemoryItem {
            key: OrderKey {
                hlc: Hlc(r.get("ms")?, r.get("c")?),
                id: at.decode("id", &id)?,
            },
            kind: ItemKind::Message,
            // A message was sent, not recorded: its role is where it came from.
            from: Provenance {
                role: role.clone(),
                ..Provenance::default()
            },
            role,
            topic: r.get("topic")?,
            body: r.get("body")?,
        }))
    }
}
