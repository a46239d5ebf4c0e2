//! The memory of a channel for a session: the view of its summary tree, the
//! lines and originals the reading tools open, and writing a summary of one
//! line.
//!
//! Owns turning the index's messages and summaries into `core::memory`'s
//! sequence, tree and view, keeping what it built for the next call
//! ([`Cache`], held by the session), and the checks before a `summary`
//! record is written. The tools of the memory (docs/MEMORY.md) are thin
//! adapters over these functions. It never decides the order or the tree
//! itself.
//!
//! What is kept between calls: every item held here (tentative ones too) as
//! its order key and its own line, the standing summaries, the tree over the
//! settled items and the views rendered from it. A call checks where the
//! index stands ([`MemoryStamp`]: two lookups by key) and where the horizon
//! falls among the items (a binary search); when neither moved, nothing is
//! read again. New summaries and newly sent messages are added to what is
//! kept; a record that may change an item held (a deletion, a revision, a
//! sealed upload, an op it does not know: `memory_effect` in
//! `core::memory::sequence` says which) reads the items again; a fork
//! (records taken back) reads everything again.

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use super::budget::Budget;
use super::presence::devices;
use super::refusal::{AppError, AppResult};
use super::search::{SearchFilter, search_messages};
use super::session::Session;
use crate::core::hlc::OrderKey;
use crate::core::ids::RecordId;
use crate::core::memory::note::NoteKind;
use crate::core::memory::notice;
use crate::core::memory::sequence::{self, ItemKind, MemoryEffect, Peer, memory_effect, own_line};
use crate::core::memory::summary::{self, line_of, winner};
use crate::core::memory::tree::{self, LineText, Tree, ViewLine};
use crate::core::op::{Op, OpKind, Summary};
use crate::core::peer_text::one_line;
use crate::core::query::SearchQuery;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::index::{MemoryItem, MemoryStamp};

/// Every item held here, tentative ones included, in the total order: its
/// key and its own line (`None` when it is too long to be one).
#[derive(Clone, Debug, Default)]
struct Items {
    keys: Vec<OrderKey>,
    own: Vec<Option<String>>,
}

impl Items {
    fn of(messages: &[MemoryItem]) -> Self {
        let items = sequence::sequence(messages, |m: &MemoryItem| m.key, None);
        Self {
            keys: items.iter().map(|m| m.key).collect(),
            own: items
                .iter()
                .map(|m| own_line(m.kind, &m.from.shown(), line_topic(m), &m.body))
                .collect(),
        }
    }

    /// Adds new items (sent messages, notes; in any order).
    fn add(&mut self, messages: &[MemoryItem]) {
        let new = Self::of(messages);
        if new.keys.is_empty() {
            return;
        }
        // Most arrive after every item held: appended. A late one is merged
        // into its place.
        if self.keys.last().is_none_or(|last| *last < new.keys[0]) {
            self.keys.extend(new.keys);
            self.own.extend(new.own);
            return;
        }
        let old_keys = std::mem::take(&mut self.keys);
        let old_own = std::mem::take(&mut self.own);
        let mut a = old_keys.into_iter().zip(old_own).peekable();
        let mut b = new.keys.into_iter().zip(new.own).peekable();
        loop {
            let take_a = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => x.0 <= y.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (k, o) = if take_a { a.next() } else { b.next() }.expect("peeked");
            if self.keys.last() != Some(&k) {
                self.keys.push(k);
                self.own.push(o);
            }
        }
    }

    /// How many items are settled under `horizon` (they come first).
    fn settled(&self, horizon: Option<i64>) -> usize {
        self.keys.partition_point(|k| sequence::settled(k, horizon))
    }
}

/// The standing summary of each line that has one, and its place in the
/// total order (a later summary of the same line stands only if it sorts
/// first: `summary::winner`).
type Standing = HashMap<RecordId, (OrderKey, String)>;

/// Every line's name with its node, sorted by name (lookups by prefix).
type Names = Vec<(RecordId, usize)>;

/// The memory as it stands here: the settled items, their tree, their own
/// lines and the standing summaries. Cheap to clone: its parts are shared.
#[derive(Clone)]
pub struct Memory {
    items: Arc<Items>,
    tree: Arc<Tree>,
    names: Arc<Names>,
    summaries: Arc<Standing>,
    horizon: Option<i64>,
}

/// What a session keeps of the memory between calls (see the module docs).
#[derive(Default)]
pub struct Cache {
    stamp: Option<MemoryStamp>,
    items: Arc<Items>,
    summaries: Arc<Standing>,
    /// The newest summary record taken in (its ingest number).
    summaries_to: i64,
    /// The tree over the first `.0` items, and its names.
    tree: Option<(usize, Arc<Tree>, Arc<Names>)>,
    /// Bumped whenever what a view shows may have changed.
    generation: u64,
    /// Views rendered at this generation, by budget.
    views: Vec<(usize, Arc<Rendered>)>,
    /// The view being paged through by `memory_view` (its first page took it).
    paged: Option<Arc<Rendered>>,
}

/// A view rendered once: its lines, and the text the pages cut.
pub struct Rendered {
    view: MemoryView,
    /// Where each line starts in the view's text (lines end with `\n`).
    starts: Vec<usize>,
    text: String,
    generation: u64,
}

fn standing_of(rows: Vec<crate::store::index::SummaryRow>, into: &mut Standing) {
    for r in rows {
        match into.get(&r.line) {
            Some((k, _)) if winner(*k, r.key) == *k => {}
            _ => {
                into.insert(r.line, (r.key, r.text));
            }
        }
    }
}

impl Cache {
    /// Brings what is kept up to where the index stands (`stamp`), reading
    /// as little as it can.
    fn refresh(&mut self, s: &Session, stamp: MemoryStamp) -> AppResult<()> {
        if self.stamp.as_ref() == Some(&stamp) {
            return Ok(());
        }
        let ix = s.index();
        let grown_from = match (&self.stamp, &stamp.last) {
            (Some(old), Some((n, _))) if old.problems == stamp.problems => match &old.last {
                None => Some(0),
                Some((old_n, old_id)) if old_n <= n => {
                    (ix.record_id_at(*old_n)?.as_ref() == Some(old_id)).then_some(*old_n)
                }
                Some(_) => None,
            },
            _ => None,
        };
        // What the new records may do to the items: nothing, add sent
        // messages and notes, or anything (a deletion, a revision, a sealed
        // upload shown as a body, an op this version does not know, records
        // taken back): then they are all read again.
        let effect = match grown_from {
            Some(from) => ix
                .ops_after(from)?
                .iter()
                .map(|op| OpKind::parse(op).map_or(MemoryEffect::Changes, memory_effect))
                .max()
                .unwrap_or(MemoryEffect::Leaves),
            None => MemoryEffect::Changes,
        };
        match effect {
            MemoryEffect::Leaves => {}
            MemoryEffect::Adds => {
                let from = grown_from.expect("ops are read after a known record");
                let sent = ix.memory_items_after(from)?;
                Arc::make_mut(&mut self.items).add(&sent);
                self.tree = None;
            }
            MemoryEffect::Changes => {
                self.items = Arc::new(Items::of(&ix.memory_items()?));
                self.tree = None;
            }
        }
        match grown_from {
            Some(_) => {
                let rows = ix.summaries_after(self.summaries_to)?;
                if !rows.is_empty() {
                    self.summaries_to = rows.last().map_or(self.summaries_to, |r| r.n);
                    standing_of(rows, Arc::make_mut(&mut self.summaries));
                }
            }
            None => {
                let rows = ix.summaries_after(0)?;
                self.summaries_to = rows.iter().map(|r| r.n).max().unwrap_or(0);
                let mut fresh = Standing::new();
                standing_of(rows, &mut fresh);
                self.summaries = Arc::new(fresh);
            }
        }
        self.generation += 1;
        self.views.clear();
        self.stamp = Some(stamp);
        Ok(())
    }

    /// The memory under `horizon`, building the tree only when the settled
    /// items changed.
    fn memory(&mut self, horizon: Option<i64>) -> Memory {
        let settled = self.items.settled(horizon);
        let (tree, names) = match &self.tree {
            Some((n, t, names)) if *n == settled => (Arc::clone(t), Arc::clone(names)),
            _ => {
                let tree = Tree::build(self.items.keys[..settled].to_vec());
                let mut names: Names = tree
                    .nodes()
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.line, i))
                    .collect();
                names.sort_unstable();
                let (tree, names) = (Arc::new(tree), Arc::new(names));
                self.tree = Some((settled, Arc::clone(&tree), Arc::clone(&names)));
                self.generation += 1;
                self.views.clear();
                (tree, names)
            }
        };
        Memory {
            items: Arc::clone(&self.items),
            tree,
            names,
            summaries: Arc::clone(&self.summaries),
            horizon,
        }
    }

    /// The view within `budget` of `memory` (built from this cache), rendered
    /// once per generation.
    fn rendered(&mut self, memory: &Memory, budget: usize) -> Arc<Rendered> {
        if let Some((_, r)) = self.views.iter().find(|(b, _)| *b == budget) {
            return Arc::clone(r);
        }
        let view = memory.view(budget);
        let mut text = String::with_capacity(view.bytes as usize);
        let mut starts = Vec::with_capacity(view.lines.len());
        for l in &view.lines {
            starts.push(text.len());
            text.push_str(&l.shown);
            text.push('\n');
        }
        let r = Arc::new(Rendered {
            view,
            starts,
            text,
            generation: self.generation,
        });
        // A few budgets at most are asked for; keep the newest ones.
        if self.views.len() >= 4 {
            self.views.remove(0);
        }
        self.views.push((budget, Arc::clone(&r)));
        r
    }
}

impl Memory {
    /// The memory as it stands for the session: it catches up, then reuses
    /// what the session kept from its last call as far as nothing changed.
    pub fn load(s: &mut Session) -> AppResult<Self> {
        s.catch_up()?;
        let horizon = horizon(s)?;
        Self::kept(s, horizon)
    }

    /// Every item held here, tentative ones included (what a summary is
    /// checked against, and what the compaction jobs cover), reusing what
    /// the session kept like [`Self::load`].
    pub fn load_all(s: &mut Session) -> AppResult<Self> {
        s.catch_up()?;
        Self::kept(s, None)
    }

    fn kept(s: &mut Session, horizon: Option<i64>) -> AppResult<Self> {
        let stamp = s.index().memory_stamp()?;
        let mut cache = std::mem::take(s.kept::<Cache>());
        let refreshed = cache.refresh(s, stamp);
        let memory = refreshed.map(|()| cache.memory(horizon));
        *s.kept::<Cache>() = cache;
        memory
    }

    /// Reads the memory with the items before `horizon` (all of them with
    /// `None`), as the index holds them now, keeping nothing.
    pub fn load_at(s: &Session, horizon: Option<i64>) -> AppResult<Self> {
        let mut cache = Cache::default();
        cache.refresh(s, s.index().memory_stamp()?)?;
        Ok(cache.memory(horizon))
    }

    /// The tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Item `i`'s own line, when it is short enough to have one.
    pub fn own(&self, i: usize) -> Option<&str> {
        self.items.own[i].as_deref()
    }

    /// The standing summary of `line`, when it has one.
    pub fn summary(&self, line: &RecordId) -> Option<&str> {
        self.summaries.get(line).map(|(_, t)| t.as_str())
    }

    /// The view within `budget` bytes.
    pub fn view(&self, budget: usize) -> MemoryView {
        let lines = self.tree.view(budget, |i| self.own(i), |l| self.summary(l));
        let bytes = lines.iter().map(tree::ViewLine::bytes).sum::<usize>() as u64;
        MemoryView {
            items: self.tree.keys().len() as u64,
            waiting: lines.iter().filter(|l| l.text.waits()).count() as u64,
            bytes,
            budget: budget as u64,
            tentative_since: self.horizon.map(format_rfc3339),
            lines: lines.into_iter().map(|l| self.line_of(l)).collect(),
        }
    }

    fn line_of(&self, l: ViewLine) -> MemoryLine {
        MemoryLine {
            line: l.line.hex(),
            items: (l.hi - l.lo) as u64,
            first_at: format_rfc3339(self.tree.keys()[l.lo].hlc.ms()),
            waits: l.text.waits(),
            shown: l.shown,
        }
    }

    /// Node `i` as the view would show it.
    fn shown(&self, i: usize) -> ViewLine {
        self.tree
            .line_at(i, &|i| self.own(i), &|l: &RecordId| self.summary(l))
    }

    /// The node of the line `raw` names (its full name or a unique prefix of
    /// at least 8 hex characters, optionally written `<id>+<items>` as the
    /// view shows it) covering `items` items when given. `field` names the
    /// parameter in refusals.
    pub fn resolve(&self, field: &str, raw: &str, items: Option<usize>) -> AppResult<usize> {
        let raw = raw.trim();
        let (prefix, written) = match raw.split_once('+') {
            Some((p, n)) => {
                let n: usize = n.trim().parse().map_err(|_| {
                    AppError::value(format!(
                        "{field}: '{raw}' is not a line: write it as the view does, \
                         <id>+<items>, or the id alone"
                    ))
                })?;
                (p.trim().to_ascii_lowercase(), Some(n))
            }
            None => (raw.to_ascii_lowercase(), None),
        };
        if !(8..=64).contains(&prefix.len()) || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AppError::value(format!(
                "{field}: '{raw}' is not a line id: give the hex characters shown before '+' \
                 in memory_view or memory_search (at least 8 of them)"
            )));
        }
        let items = match (items, written) {
            (Some(a), Some(b)) if a != b => {
                return Err(AppError::value(format!(
                    "{field}: '{raw}' says {b} items but n is {a}: give one of them"
                )));
            }
            (a, b) => a.or(b),
        };
        let floor = RecordId::parse(&format!("{prefix:0<64}")).expect("64 hex characters");
        let from = self.names.partition_point(|(n, _)| *n < floor);
        let found: Vec<usize> = self.names[from..]
            .iter()
            .take_while(|(n, _)| n.hex().starts_with(&prefix))
            .map(|(_, i)| *i)
            .collect();
        let nodes = self.tree.nodes();
        let fitting: Vec<usize> = found
            .iter()
            .copied()
            .filter(|i| items.is_none_or(|n| nodes[*i].items() == n))
            .collect();
        let name = |i: usize| format!("{}+{}", nodes[i].line.short(), nodes[i].items());
        match fitting.as_slice() {
            [one] => Ok(*one),
            [] if !found.is_empty() => Err(AppError::value(format!(
                "n: line {} covers {}, not {}: give the number after '+' in the view",
                prefix,
                found
                    .iter()
                    .map(|i| format!("{} item(s) ({})", nodes[*i].items(), name(*i)))
                    .collect::<Vec<_>>()
                    .join(" or "),
                items.unwrap_or(0)
            ))),
            [] => Err(AppError::value(format!(
                "{field}: no line {prefix} in the memory here: it may still be tentative, \
                 deleted, or renamed by a late item; read memory_view (or memory_search) again"
            ))),
            many => Err(AppError::value(format!(
                "{field}: '{prefix}' is ambiguous: it names {}; give more characters or n",
                many.iter()
                    .map(|i| name(*i))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))),
        }
    }

    /// The node of the line named exactly `line`.
    fn node(&self, line: &RecordId) -> Option<usize> {
        let at = self.names.partition_point(|(n, _)| n < line);
        self.names
            .get(at)
            .filter(|(n, _)| n == line)
            .map(|(_, i)| *i)
    }

    /// The item at place `i` of the sequence, with its whole text, from the
    /// index.
    fn item(&self, s: &Session, i: usize) -> AppResult<MemoryItem> {
        let id = self.tree.keys()[i].id;
        s.index().memory_item(&id)?.ok_or_else(|| {
            AppError::value(format!(
                "id: item {} left the memory (deleted since): read memory_view again",
                id.short()
            ))
        })
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
    let budget = budget.unwrap_or(tree::DEFAULT_BUDGET);
    let memory = Memory::load(s)?;
    let mut view = s.kept::<Cache>().rendered(&memory, budget).view.clone();
    view.tentative_since = memory.horizon.map(format_rfc3339);
    Ok(view)
}

/// The most bytes of lines one page of `memory_view` holds (a longer line,
/// which a budget of its own may allow, is a page by itself). A line is
/// never split: 16 KB is a fair read for an agent, and the default view is
/// 8 pages.
pub const PAGE_BYTES: usize = 16 * 1024;

/// The most characters of an original one answer holds.
pub const ORIGINAL_CHARS: usize = 12_000;

/// The most bytes of text in a line of `memory_search` or `memory_thread`.
pub const SHORT_TEXT_BYTES: usize = 160;

/// The page of the memory's view from byte `offset` (0, or a `next_offset`
/// an earlier page gave). Page 0 takes a snapshot of the view; the pages
/// after it come from that snapshot even when the memory changed since
/// (they say so with `current: false`), so one read never mixes two views.
pub fn memory_view_page(s: &mut Session, offset: i64) -> AppResult<MemoryPage> {
    if offset < 0 {
        return Err(AppError::value(format!(
            "offset: {offset} is negative: pass 0 for a new view, or the next_offset a page gave"
        )));
    }
    let memory = Memory::load(s)?;
    let cache = s.kept::<Cache>();
    let snapshot = if offset == 0 {
        let r = cache.rendered(&memory, tree::DEFAULT_BUDGET);
        cache.paged = Some(Arc::clone(&r));
        r
    } else {
        cache.paged.clone().ok_or_else(|| {
            AppError::value(
                "offset: no view is being paged here (this server started since the first \
                 page): call memory_view without offset to take a new view",
            )
        })?
    };
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let first = match snapshot.starts.binary_search(&start) {
        Ok(i) => i,
        Err(_) if start == 0 => 0,
        Err(_) => {
            return Err(AppError::value(format!(
                "offset: {offset} is not where a page starts (the view is {} bytes): pass 0 or \
                 the next_offset a page gave",
                snapshot.text.len()
            )));
        }
    };
    let mut last = first;
    while last < snapshot.starts.len() {
        let end = snapshot
            .starts
            .get(last + 1)
            .copied()
            .unwrap_or(snapshot.text.len());
        if last > first && end - start > PAGE_BYTES {
            break;
        }
        last += 1;
    }
    let end = snapshot
        .starts
        .get(last)
        .copied()
        .unwrap_or(snapshot.text.len());
    Ok(MemoryPage {
        view: snapshot.text[start.min(end)..end]
            .trim_end_matches('\n')
            .to_owned(),
        next_offset: (end < snapshot.text.len()).then_some(end as u64),
        tentative_since: memory.horizon.map(format_rfc3339),
        changed: (snapshot.generation != cache.generation).then_some(true),
    })
}

/// A page of the memory's view.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MemoryPage {
    /// The page's lines, oldest first, one per line:
    /// `<id>+<items>|<date of its first item>: <text>`.
    pub view: String,
    /// Pass it as offset for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Items from this time on are not in the memory yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tentative_since: Option<String>,
    /// True when the memory changed since page 0 took this view (page 0
    /// again takes a new one); absent while it is current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
}

/// Opens line `id` covering `n` items: its two halves, or for one item
/// (n = 1) the original, up to [`ORIGINAL_CHARS`] characters.
pub fn memory_zoom(s: &mut Session, id: &str, n: Option<i64>) -> AppResult<Zoomed> {
    if n.is_some_and(|n| n < 1) {
        return Err(AppError::value(
            "n: a line covers at least 1 item: give the number after '+' in the view",
        ));
    }
    let memory = Memory::load(s)?;
    let i = memory.resolve("id", id, n.map(|n| n as usize))?;
    let node = memory.tree.nodes()[i].clone();
    let line = memory.shown(i).shown;
    Ok(match node.halves {
        Some((l, r)) => Zoomed {
            line,
            halves: vec![memory.shown(l).shown, memory.shown(r).shown],
            original: None,
        },
        None => Zoomed {
            line,
            halves: Vec::new(),
            original: Some(original(s, &memory, node.lo, 0)?),
        },
    })
}

/// Reads the original of item `id` from character `offset` on, up to
/// [`ORIGINAL_CHARS`] characters.
pub fn memory_read(s: &mut Session, id: &str, offset: i64) -> AppResult<Original> {
    let memory = Memory::load(s)?;
    let i = memory.resolve("id", id, None)?;
    let node = &memory.tree.nodes()[i];
    if node.items() != 1 {
        return Err(AppError::value(format!(
            "id: line {}+{} covers {} items, and memory_read reads one item's original: open \
             the line with memory_zoom down to an item (n = 1)",
            node.line.short(),
            node.items(),
            node.items()
        )));
    }
    let offset = u64::try_from(offset).map_err(|_| {
        AppError::value(format!(
            "offset: {offset} is negative: pass 0, or the next_offset the page before gave"
        ))
    })?;
    original(s, &memory, node.lo, offset)
}

fn original(s: &Session, memory: &Memory, item: usize, offset: u64) -> AppResult<Original> {
    let m = memory.item(s, item)?;
    let chars = m.body.chars().count() as u64;
    if offset > chars {
        return Err(AppError::value(format!(
            "offset: the original has {chars} characters: pass an offset from 0 to {chars}"
        )));
    }
    let text: String = m
        .body
        .chars()
        .skip(offset as usize)
        .take(ORIGINAL_CHARS)
        .collect();
    let end = offset + text.chars().count() as u64;
    Ok(Original {
        role: m.role,
        topic: m.topic,
        at: format_rfc3339(m.key.hlc.ms()),
        text,
        more: (end < chars).then_some(chars - end),
        next_offset: (end < chars).then_some(end),
    })
}

/// A line opened.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Zoomed {
    /// The line, as the view shows it.
    pub line: String,
    /// Its two halves as view lines, older first (none for one item).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub halves: Vec<String>,
    /// For one item: its original.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original: Option<Original>,
}

/// An item's original text, or a page of it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Original {
    /// Who wrote it.
    pub role: String,
    /// Its topic.
    pub topic: String,
    /// When it was written.
    pub at: String,
    /// The text from `offset` on.
    pub text: String,
    /// Characters after this page; absent at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<u64>,
    /// Pass it to memory_read for the rest; absent at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

/// The topic an item's lines show: a message's; none for a note, whose kind
/// opens the line already.
fn line_topic(m: &MemoryItem) -> &str {
    match m.kind {
        ItemKind::Message => &m.topic,
        ItemKind::Note(_) => "",
    }
}

/// True when `m` is a prompt the client made itself (a notice, recorded by
/// an earlier version): search and thread leave it out.
fn is_notice(kind: ItemKind, text: &str) -> bool {
    kind == ItemKind::Note(NoteKind::Prompt) && notice::is_generated(text)
}

/// A short line naming one item: `id|kind@from date: text` (`from`: where
/// it came from, `core::memory::provenance` as shown), the text on one line
/// and cut at [`SHORT_TEXT_BYTES`].
pub fn short_line(id: &str, kind: ItemKind, from: &str, at: &str, text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut = flat.as_str();
    if cut.len() > SHORT_TEXT_BYTES {
        let mut end = SHORT_TEXT_BYTES;
        while !cut.is_char_boundary(end) {
            end -= 1;
        }
        cut = &cut[..end];
    }
    let more = if cut.len() < flat.len() { "…" } else { "" };
    let id = id.get(..12).unwrap_or(id);
    let from = one_line(from);
    format!("{id}|{}@{from} {at}: {cut}{more}", kind.as_str())
}

fn topic_and(topic: &str, text: &str) -> String {
    if topic.trim().is_empty() {
        text.to_owned()
    } else {
        format!("{topic} — {text}")
    }
}

/// Searches the memory's items by words, with the grammar of
/// search_messages and its full-text index: up to `limit` short lines, best
/// first, messages and notes taking turns.
pub fn memory_search(
    s: &mut Session,
    query: &str,
    limit: i64,
    budget: &mut Budget<'_>,
) -> AppResult<ItemLines> {
    if !(1..=100).contains(&limit) {
        return Err(AppError::value(format!(
            "limit: between 1 and 100 (got {limit})"
        )));
    }
    let found = search_messages(s, query, &SearchFilter::default(), limit, None, budget)?;
    let messages: Vec<String> = found
        .result
        .iter()
        .filter_map(|p| p.whole())
        .map(|m| {
            // A text short enough is shown whole; a longer one by the
            // snippet around what matched.
            let whole = topic_and(&m.topic, &m.body);
            let text = match m.snippet.as_deref() {
                Some(cut) if whole.len() > SHORT_TEXT_BYTES => cut,
                _ => &m.body,
            };
            short_line(
                &m.id,
                ItemKind::Message,
                &m.from,
                &m.created_at,
                &topic_and(&m.topic, text),
            )
        })
        .collect();
    let q = SearchQuery::parse(query).map_err(|e| AppError::value(e.to_string()))?;
    let notes: Vec<String> = note_hits(s, &q, limit as usize + 1)?
        .into_iter()
        .map(|n| {
            short_line(
                &n.key.id.hex(),
                ItemKind::Note(n.kind),
                &n.provenance().shown(),
                &format_rfc3339(n.key.hlc.ms()),
                &n.text,
            )
        })
        .collect();
    let limit = limit as usize;
    let more = found.truncated.is_some() || messages.len() + notes.len() > limit;
    // The two indexes rank apart, so neither list's best hides the other's.
    let (mut m, mut n) = (messages.into_iter(), notes.into_iter());
    let mut lines = Vec::with_capacity(limit);
    while lines.len() < limit {
        match (m.next(), n.next()) {
            (None, None) => break,
            (a, b) => lines.extend(a.into_iter().chain(b)),
        }
    }
    lines.truncate(limit);
    Ok(ItemLines {
        lines,
        more: more.then_some(true),
    })
}

/// The longest phrase looked for among the notes: a long phrase over
/// repetitive text is what makes a trigram match costly (the message search
/// weighs it and scans instead; the notes are not scanned).
const NOTE_PHRASE_CHARS: usize = 64;

/// How many notes the full-text table offers before each is checked
/// against the whole query.
const NOTE_CANDIDATES: usize = 200;

/// The notes matching `q`, best first, at most `limit`: candidates from the
/// notes' full-text table (any of the query's phrases), each checked against
/// the whole query as the scan checks a message. None when the index cannot
/// answer the query (a term under 3 characters) or a phrase is too long.
fn note_hits(
    s: &Session,
    q: &SearchQuery,
    limit: usize,
) -> AppResult<Vec<crate::store::index::NoteRow>> {
    let needles = q.shown_needles();
    let answerable = !q.needs_scan()
        && !needles.is_empty()
        && needles
            .iter()
            .all(|n| (3..=NOTE_PHRASE_CHARS).contains(&n.chars().count()));
    if !answerable {
        return Ok(Vec::new());
    }
    let fts = needles
        .iter()
        .map(|n| format!("\"{}\"", n.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ");
    Ok(s.index()
        .search_notes(&fts, NOTE_CANDIDATES)?
        .into_iter()
        .filter(|n| q.matches(n.kind.as_str(), &n.text))
        .filter(|n| !is_notice(ItemKind::Note(n.kind), &n.text))
        .take(limit)
        .collect())
}

/// The `n` items after line `id` (after its last item), as short lines:
/// when `id` is one note of a recorded session, the next notes of that
/// session (one conversation); otherwise the next items of the channel.
/// Prompts the client made itself are left out of both.
pub fn memory_thread(s: &mut Session, id: &str, n: i64) -> AppResult<ItemLines> {
    if !(1..=30).contains(&n) {
        return Err(AppError::value(format!("n: between 1 and 30 (got {n})")));
    }
    let n = n as usize;
    let memory = Memory::load(s)?;
    let i = memory.resolve("id", id, None)?;
    let node = &memory.tree.nodes()[i];
    let from = node.hi;
    if node.items() == 1 {
        let key = memory.tree.keys()[node.lo];
        if let Some(note) = s.index().note(&key.id)?
            && let Some(session) = note.session.as_deref()
        {
            return session_thread(s, &memory, &note.role, session, key, n);
        }
    }
    let total = memory.tree.keys().len();
    let mut lines = Vec::with_capacity(n);
    let mut j = from;
    while j < total && lines.len() < n {
        let id = memory.tree.keys()[j].id;
        j += 1;
        // An item deleted since the memory was read is left out.
        let Some(m) = s.index().memory_item(&id)? else {
            continue;
        };
        if is_notice(m.kind, &m.body) {
            continue;
        }
        lines.push(item_line(&m));
    }
    Ok(ItemLines {
        lines,
        more: (j < total).then_some(true),
    })
}

/// The notes of `role`'s session `session` after `after` that are in the
/// memory, at most `n`, as short lines.
fn session_thread(
    s: &Session,
    memory: &Memory,
    role: &str,
    session: &str,
    mut after: OrderKey,
    n: usize,
) -> AppResult<ItemLines> {
    let mut lines = Vec::with_capacity(n);
    loop {
        let batch = s
            .index()
            .session_notes_after(role, session, &after, n + 1)?;
        let full = batch.len() > n;
        for note in batch {
            after = note.key;
            if !sequence::settled(&note.key, memory.horizon) {
                // Tentative: not in the memory yet, and nothing after it is.
                return Ok(ItemLines { lines, more: None });
            }
            if is_notice(ItemKind::Note(note.kind), &note.text) {
                continue;
            }
            if lines.len() == n {
                return Ok(ItemLines {
                    lines,
                    more: Some(true),
                });
            }
            lines.push(item_line(&MemoryItem::from(note)));
        }
        if !full {
            return Ok(ItemLines { lines, more: None });
        }
    }
}

/// An item as a short line.
fn item_line(m: &MemoryItem) -> String {
    short_line(
        &m.key.id.short(),
        m.kind,
        &m.from.shown(),
        &format_rfc3339(m.key.hlc.ms()),
        &topic_and(line_topic(m), &m.body),
    )
}

/// Items as short lines.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ItemLines {
    /// `id|kind@from date: text`, one item each.
    pub lines: Vec<String>,
    /// True when more items follow (or match); absent when none do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<bool>,
}

/// When the items of line `id` were written.
pub fn memory_date(s: &mut Session, id: &str) -> AppResult<Dated> {
    let memory = Memory::load(s)?;
    let i = memory.resolve("id", id, None)?;
    let node = &memory.tree.nodes()[i];
    let keys = memory.tree.keys();
    Ok(Dated {
        first_at: format_rfc3339(keys[node.lo].hlc.ms()),
        last_at: format_rfc3339(keys[node.hi - 1].hlc.ms()),
    })
}

/// When a line's items were written.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Dated {
    /// When its first item was written.
    pub first_at: String,
    /// When its last item was written (the same for one item).
    pub last_at: String,
}

/// One step of a walk over every line of the tree ([`memory_walk`]).
pub enum Walked<'a> {
    /// A line opens: as the view would show it, and how deep it is (0: the
    /// line over everything).
    Open {
        /// Its depth.
        depth: usize,
        /// The line as shown.
        shown: &'a str,
        /// True when it waits for a compaction.
        waits: bool,
        /// Its summary, or the short lines it joins (none for an item's
        /// own line, and while it waits).
        text: Option<&'a str>,
        /// How many items it covers.
        items: usize,
        /// When its first item was written (ms).
        first_ms: i64,
        /// When its last item was written (ms).
        last_ms: i64,
    },
    /// The original of the item the open line is.
    Original(&'a MemoryItem),
    /// The open line closes (after its halves or its original).
    Close,
}

/// Walks every line of the memory's tree, top down, older half first, with
/// each item's original: every level of the tree and every original, for an
/// export. Reads every message once; bounded only by the channel's size.
pub fn memory_walk(
    s: &mut Session,
    mut f: impl FnMut(Walked<'_>) -> AppResult<()>,
) -> AppResult<()> {
    let memory = Memory::load(s)?;
    let originals: HashMap<RecordId, MemoryItem> = s
        .index()
        .memory_items()?
        .into_iter()
        .map(|m| (m.key.id, m))
        .collect();
    let Some(root) = memory.tree.root_index() else {
        return Ok(());
    };
    // Depth-first with a stack: the tree is at most one level per bit of a
    // key deep, but a stack costs nothing.
    enum Step {
        Enter(usize, usize),
        Leave,
    }
    let mut stack = vec![Step::Enter(root, 0)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Leave => f(Walked::Close)?,
            Step::Enter(i, depth) => {
                let line = memory.shown(i);
                let keys = memory.tree.keys();
                let text = match &line.text {
                    LineText::Summary(t) | LineText::Joined(t) => Some(t.as_str()),
                    LineText::Own(_) | LineText::Waiting => None,
                };
                f(Walked::Open {
                    depth,
                    shown: &line.shown,
                    waits: line.text.waits(),
                    text,
                    items: line.hi - line.lo,
                    first_ms: keys[line.lo].hlc.ms(),
                    last_ms: keys[line.hi - 1].hlc.ms(),
                })?;
                stack.push(Step::Leave);
                let node = &memory.tree.nodes()[i];
                match node.halves {
                    Some((l, r)) => {
                        stack.push(Step::Enter(r, depth + 1));
                        stack.push(Step::Enter(l, depth + 1));
                    }
                    None => {
                        if let Some(m) = originals.get(&node.line) {
                            f(Walked::Original(m))?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
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
                AppError::value(format!(
                    "covers: '{c}' is not a full 64-character id; copy the ids as the job \
                     gives them"
                ))
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
    // The kept memory (settled items) is asked first, so a compaction run
    // does not read the history once per summary; only a line it lacks is
    // looked for among the tentative items too.
    let mut memory = Memory::load(s)?;
    if memory.node(&line).is_none() && memory.horizon.is_some() {
        memory = Memory::load_at(s, None)?;
    }
    let Some(node) = memory.node(&line).map(|i| &memory.tree().nodes()[i]) else {
        return Err(AppError::value(format!(
            "covers names no line of the memory here (line {}): read the view again",
            line.short()
        )));
    };
    if memory.tree().covers(node) != op.covers {
        return Err(AppError::value(
            "covers must list the line's item, or its two halves in order; copy them as the job \
             gives them",
        ));
    }
    if memory.summary(&line).is_some() {
        return Err(AppError::value(format!(
            "line {} has a summary already, and the first one stands; leave this line out",
            line.short()
        )));
    }
    let items = node.items() as u64;
    let writer = s.announce()?;
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
    /// The view's lines within `budget` bytes, with their nodes in the tree.
    pub fn view_lines(&self, budget: usize) -> Vec<ViewLine> {
        self.tree.view(budget, |i| self.own(i), |l| self.summary(l))
    }

    /// The full text of the items `ids` held here, by id: author, topic and
    /// body as they stand (one lookup each, never a pass over the history).
    pub fn originals(s: &Session, ids: &[RecordId]) -> AppResult<HashMap<RecordId, MemoryItem>> {
        let mut out = HashMap::with_capacity(ids.len());
        for id in ids {
            if let Some(item) = s.index().memory_item(id)? {
                out.insert(*id, item);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::hlc::Hlc;
    use crate::core::memory::provenance::Provenance;

    fn memory_of(ids: &[[u8; 32]]) -> Memory {
        let keys: Vec<OrderKey> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| OrderKey {
                hlc: Hlc(1_000 + i as i64 * 1000, 0),
                id: RecordId::from_bytes(*id),
            })
            .collect();
        let mut cache = Cache {
            items: Arc::new(Items {
                own: keys.iter().map(|_| Some("msg@a: x".to_owned())).collect(),
                keys,
            }),
            ..Cache::default()
        };
        cache.memory(None)
    }

    fn refusal(r: AppResult<usize>) -> String {
        match r {
            Err(AppError::Value(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_prefix_naming_two_lines_is_refused_naming_both() {
        let mut a = [0x11u8; 32];
        let mut b = [0x11u8; 32];
        a[4] = 0x22;
        b[4] = 0x33;
        let m = memory_of(&[a, b, [0x44; 32]]);
        let both = refusal(m.resolve("id", "11111111", None));
        assert!(
            both.contains("'11111111' is ambiguous")
                && both.contains("1111111122")
                && both.contains("1111111133"),
            "{both}"
        );
        let one = m.resolve("id", "1111111133", None).unwrap();
        assert_eq!(m.tree().nodes()[one].line, RecordId::from_bytes(b));
        // The full id, upper case, and the `<id>+<items>` form are taken.
        let full = RecordId::from_bytes(a).hex().to_uppercase();
        assert!(m.resolve("id", &full, Some(1)).is_ok());
        assert!(m.resolve("id", "1111111122+1", None).is_ok());
        let wrong = refusal(m.resolve("id", "1111111122", Some(3)));
        assert!(
            wrong.starts_with("n: line 1111111122 covers 1 item(s)"),
            "{wrong}"
        );
    }

    fn message(ms: i64, tag: u8, body: &str) -> MemoryItem {
        MemoryItem {
            key: OrderKey {
                hlc: Hlc(ms, 0),
                id: RecordId::from_bytes([tag; 32]),
            },
            kind: ItemKind::Message,
            role: "a".into(),
            topic: String::new(),
            body: body.into(),
            from: Provenance {
                role: "a".into(),
                ..Provenance::default()
            },
        }
    }

    #[test]
    fn sent_messages_join_the_kept_items_in_their_place() {
        let mut items = Items::of(&[message(10, 1, "one"), message(30, 3, "three")]);
        // After everything held: appended.
        items.add(&[message(40, 4, "four")]);
        // Late, and one already held: merged into place, once.
        items.add(&[message(20, 2, "two"), message(30, 3, "three")]);
        let ms: Vec<i64> = items.keys.iter().map(|k| k.hlc.ms()).collect();
        assert_eq!(ms, [10, 20, 30, 40]);
        let own: Vec<&str> = items.own.iter().map(|o| o.as_deref().unwrap()).collect();
        assert_eq!(
            own,
            ["msg@a: one", "msg@a: two", "msg@a: three", "msg@a: four"]
        );
        // The same as reading them all at once.
        let all = Items::of(&[
            message(40, 4, "four"),
            message(20, 2, "two"),
            message(10, 1, "one"),
            message(30, 3, "three"),
        ]);
        assert_eq!(all.keys, items.keys);
        assert_eq!(all.own, items.own);
    }

    #[test]
    fn the_kept_memory_changes_only_when_the_settled_items_do() {
        let m = memory_of(&[[1; 32], [2; 32], [3; 32]]);
        let mut cache = Cache {
            items: Arc::clone(&m.items),
            ..Cache::default()
        };
        let all = cache.memory(None);
        let again = cache.memory(None);
        assert!(Arc::ptr_eq(&all.tree, &again.tree), "nothing built again");
        let generation = cache.generation;
        // A horizon that settles the same items keeps the tree.
        let same = cache.memory(Some(10_000));
        assert!(Arc::ptr_eq(&all.tree, &same.tree));
        assert_eq!(cache.generation, generation);
        // One that leaves the newest item tentative builds it again.
        let fewer = cache.memory(Some(3_000));
        assert_eq!(fewer.tree().keys().len(), 2);
        assert!(cache.generation > generation);
    }
}
