//! The memory of a channel for a session: the view of its summary tree, and
//! writing a summary of one line.
//!
//! Owns turning the index's messages and summaries into `core::memory`'s
//! sequence, tree and view, and the checks before a `summary` record is
//! written. The tools of the memory (docs/MEMORY.md) are thin adapters over
//! these functions. It never decides the order or the tree itself.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::presence::devices;
use super::refusal::{AppError, AppResult};
use super::session::Session;
use crate::core::hlc::OrderKey;
use crate::core::ids::RecordId;
use crate::core::memory::sequence::{self, Peer, own_line};
use crate::core::memory::summary::{self, line_of};
use crate::core::memory::tree::{self, Tree};
use crate::core::op::{Op, Summary};
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::index::MemoryItem;

/// The memory as it stands here: the settled items, their tree, their own
/// lines and the standing summaries.
pub struct Memory {
    tree: Tree,
    own: Vec<Option<String>>,
    summaries: HashMap<RecordId, String>,
    horizon: Option<i64>,
}

impl Memory {
    /// Reads the memory from the session's index (after a catch-up), with
    /// the items that are settled here.
    pub fn load(s: &mut Session) -> AppResult<Self> {
        s.catch_up()?;
        let horizon = horizon(s)?;
        Self::load_at(s, horizon)
    }

    /// Reads the memory with the items before `horizon` (all of them with
    /// `None`), as the index holds them now.
    pub fn load_at(s: &Session, horizon: Option<i64>) -> AppResult<Self> {
        let all = s.index().memory_items()?;
        let items = sequence::sequence(&all, |m: &MemoryItem| m.key, horizon);
        let own = items
            .iter()
            .map(|m| own_line(m.kind, &m.role, &m.topic, &m.body))
            .collect();
        let keys: Vec<OrderKey> = items.iter().map(|m| m.key).collect();
        Ok(Self {
            tree: Tree::build(keys),
            own,
            summaries: s.index().all_standing_summaries()?,
            horizon,
        })
    }

    /// The tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The view within `budget` bytes.
    pub fn view(&self, budget: usize) -> MemoryView {
        let lines = self.tree.view(
            budget,
            |i| self.own[i].as_deref(),
            |l| self.summaries.get(l).map(String::as_str),
        );
        let bytes = lines.iter().map(tree::ViewLine::bytes).sum::<usize>() as u64;
        MemoryView {
            items: self.tree.keys().len() as u64,
            waiting: lines.iter().filter(|l| l.text.waits()).count() as u64,
            bytes,
            budget: budget as u64,
            tentative_since: self.horizon.map(format_rfc3339),
            lines: lines
                .into_iter()
                .map(|l| MemoryLine {
                    line: l.line.hex(),
                    items: (l.hi - l.lo) as u64,
                    first_at: format_rfc3339(self.tree.keys()[l.lo].hlc.ms()),
                    waits: l.text.waits(),
                    shown: l.shown,
                })
                .collect(),
        }
    }
}

/// The time from which the memory is still tentative here
/// (`core::memory::sequence::horizon` over this machine's view of the other
/// devices), `None` when nothing is.
pub fn horizon(s: &Session) -> AppResult<Option<i64>> {
    let peers: Vec<Peer> = devices(s)?
        .into_iter()
        .filter(|d| !d.this_device && d.frozen.is_none())
        .filter_map(|d| {
            let last_heard_ms = d.last_heard_ms?;
            Some(Peer {
                last_heard_ms,
                settled_to_ms: (d.missing > 0).then(|| d.last_record_ms.unwrap_or(0)),
            })
        })
        .collect();
    Ok(sequence::horizon(
        &peers,
        now_ms(),
        s.index().newest_record_ms()?,
    ))
}

/// The memory's view for a session, within `budget` bytes
/// (`tree::DEFAULT_BUDGET` when `None`).
pub fn memory_view(s: &mut Session, budget: Option<usize>) -> AppResult<MemoryView> {
    Ok(Memory::load(s)?.view(budget.unwrap_or(tree::DEFAULT_BUDGET)))
}

/// The view of the memory.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemoryView {
    /// The lines, oldest first; together they cover every item once.
    pub lines: Vec<MemoryLine>,
    /// Items in the memory.
    pub items: u64,
    /// Lines of the view that wait for a compaction.
    pub waiting: u64,
    /// Bytes of the view (each shown line and its newline).
    pub bytes: u64,
    /// The budget it was built for.
    pub budget: u64,
    /// Items from this time on are not in the memory yet: a device may
    /// still send records that sort before them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tentative_since: Option<String>,
}

/// One line of the view.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemoryLine {
    /// The line's name (an item's record id, or the digest of its halves).
    pub line: String,
    /// How many items it covers.
    pub items: u64,
    /// When its first item was written.
    pub first_at: String,
    /// True when it waits for a compaction (no summary yet).
    pub waits: bool,
    /// The line as shown: `<line>+<items>|<date>: <text>`.
    pub shown: String,
}

/// Writes a summary of one line of the memory: `covers` is the item (for a
/// line of one long item) or the two halves of the line, by full id, as the
/// tree has them; `text` is one line of at most 512 bytes.
pub fn summarize(s: &mut Session, covers: &[String], text: &str) -> AppResult<Summarized> {
    let covers: Vec<RecordId> = covers
        .iter()
        .map(|c| {
            RecordId::parse(c).ok_or_else(|| {
                AppError::value(format!("covers: '{c}' is not a full 64-character id"))
            })
        })
        .collect::<AppResult<_>>()?;
    let op = Summary {
        covers,
        text: text.to_owned(),
    };
    summary::check(&op).map_err(|e| AppError::value(format!("{e}. Nothing was written")))?;
    let line = line_of(&op).expect("a checked summary names a line");
    // Checked against every item held here, tentative ones included: a line
    // a late record renames later keeps its summary unused, never wrong.
    s.catch_up()?;
    let memory = Memory::load_at(s, None)?;
    let Some(node) = memory.tree().find(&line) else {
        return Err(AppError::value(format!(
            "covers names no line of the memory here (line {}): read the view again",
            line.short()
        )));
    };
    if memory.tree().covers(node) != op.covers {
        return Err(AppError::value(
            "covers must list the line's item, or its two halves in order",
        ));
    }
    if memory.summaries.contains_key(&line) {
        return Err(AppError::value(format!(
            "line {} has a summary already: the first one stands",
            line.short()
        )));
    }
    let items = node.items() as u64;
    let writer = s.writer()?;
    let (rec, ()) = s
        .channel_mut()
        .append(&writer, |_| Ok::<_, AppError>((Op::Summary(op), ())))?;
    Ok(Summarized {
        line: line.hex(),
        items,
        record: rec.id.hex(),
    })
}

/// What writing a summary answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Summarized {
    /// The line summarized.
    pub line: String,
    /// How many items it covers.
    pub items: u64,
    /// The summary record.
    pub record: String,
}

// used by compaction
impl Memory {
    /// Item `i`'s own line, when it is short enough to have one.
    pub fn own_line(&self, i: usize) -> Option<&str> {
        self.own.get(i).and_then(Option::as_deref)
    }

    /// The standing summary of `line`, when it has one.
    pub fn summary_of(&self, line: &RecordId) -> Option<&str> {
        self.summaries.get(line).map(String::as_str)
    }

    /// The view's lines within `budget` bytes, with their nodes in the tree.
    pub fn view_lines(&self, budget: usize) -> Vec<tree::ViewLine> {
        self.tree
            .view(budget, |i| self.own_line(i), |l| self.summary_of(l))
    }

    /// The full text of the items `ids` held here, by id: author, topic and
    /// body as they stand.
    pub fn originals(s: &Session, ids: &[RecordId]) -> AppResult<HashMap<RecordId, MemoryItem>> {
        let wanted: std::collections::HashSet<&RecordId> = ids.iter().collect();
        Ok(s.index()
            .memory_items()?
            .into_iter()
            .filter(|m| wanted.contains(&m.key.id))
            .map(|m| (m.key.id, m))
            .collect())
    }
}
