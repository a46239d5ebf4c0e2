//! One message as a person reads it on the board, and the channel's
//! activity, a page at a time.
//!
//! Owns [`MessageDetail`] (a message's text, bounded; its thread, bounded;
//! its state; every record that touched it, in order; its blockers and what
//! it blocks) and [`ActivityPage`] (the channel's moves, newest first, with
//! the cursor of the next page back). It reads the index through the
//! store's bounded queries and never writes; how a record reads ("voted
//! reject", "work status → blocked") is said once here, for every view.

use std::collections::BTreeSet;

use serde::Serialize;

use super::refusal::{AppError, AppResult};
use super::rows::short;
use super::session::{Named, Session, lookup};
use crate::core::ids::{RecordId, Role};
use crate::core::op::Op;
use crate::store::Index;
use crate::store::index::{Before, Touch};

/// Characters of a message's text shown on its page.
pub const BODY_CHARS: usize = 64 * 1024;
/// The most messages of its thread a page lists.
pub const THREAD_LIMIT: usize = 100;
/// The most records of one message's timeline listed.
pub const TOUCH_LIMIT: usize = 500;
/// Steps up a reply chain to its root, at most (a bound on a hostile chain).
pub const ROOT_STEPS: usize = 256;
/// Moves per page of the activity timeline.
pub const ACTIVITY_PAGE: usize = 40;
/// Characters of a sent text shown in the activity timeline.
pub const EXCERPT_CHARS: usize = 160;

/// One record, as a timeline shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Entry {
    /// Short id of the record.
    pub record: String,
    /// Who wrote it.
    pub role: String,
    /// When (ms).
    pub ms: i64,
    /// What it did, in our words (`sent`, `voted reject`, `work status → blocked`).
    pub what: String,
    /// Its note, or the start of the text it sent (peer text).
    pub note: Option<String>,
    /// The message it is about (short id), if any.
    pub subject: Option<String>,
    /// That message's subject (peer text), when it is here.
    pub subject_topic: Option<String>,
    /// The pin key it set, for a pin write.
    pub pin_key: Option<String>,
    /// Another message it names (a blocker), short id.
    pub names: Option<String>,
}

/// A message in a thread.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ThreadLine {
    /// Short id.
    pub id: String,
    /// Author.
    pub from: String,
    /// Subject.
    pub topic: String,
    /// When (ms).
    pub ms: i64,
    /// Deleted.
    pub deleted: bool,
    /// The message the page is about.
    pub this: bool,
}

/// A standing decision on a message.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct VoteLine {
    /// The voter.
    pub role: String,
    /// Its decision.
    pub decision: String,
    /// Its note.
    pub note: Option<String>,
    /// Cast on an earlier text.
    pub stale: bool,
}

/// A message whole, for its page.
#[derive(Clone, Debug, Serialize)]
pub struct MessageDetail {
    /// Short id.
    pub id: String,
    /// Full id.
    pub full_id: String,
    /// Subject.
    pub topic: String,
    /// Author.
    pub from: String,
    /// Recipients.
    pub to: Vec<String>,
    /// Kind, if any.
    pub kind: Option<String>,
    /// A debt?
    pub debt: bool,
    /// When it was sent (ms).
    pub ms: i64,
    /// Its current text, cut at [`BODY_CHARS`].
    pub body: String,
    /// Characters of the whole text.
    pub body_chars: i64,
    /// True when `body` is cut.
    pub body_cut: bool,
    /// Debt status (`open`, `resolved`).
    pub status: Option<String>,
    /// Work status.
    pub work_status: Option<String>,
    /// Who resolved it, and the note.
    pub resolved_by: Option<String>,
    /// The resolution's note.
    pub resolution_note: Option<String>,
    /// True once the resolution is confirmed.
    pub confirmed: bool,
    /// The blocker (short id) and its subject, if any.
    pub blocked_by: Option<(String, Option<String>)>,
    /// Tasks blocked on this one (short ids).
    pub blocks: Vec<String>,
    /// The pin key of a proposal.
    pub pin_key: Option<String>,
    /// Standing decisions.
    pub votes: Vec<VoteLine>,
    /// Deleted (ms).
    pub deleted_ms: Option<i64>,
    /// Retired (ms).
    pub retired_ms: Option<i64>,
    /// Its thread, oldest first.
    pub thread: Vec<ThreadLine>,
    /// True when the thread was cut at [`THREAD_LIMIT`].
    pub thread_cut: bool,
    /// Every record that touched it, oldest first.
    pub timeline: Vec<Entry>,
    /// True when the timeline was cut at [`TOUCH_LIMIT`].
    pub timeline_cut: bool,
}

/// A page of the channel's activity, newest first.
#[derive(Clone, Debug, Serialize)]
pub struct ActivityPage {
    /// The moves.
    pub entries: Vec<Entry>,
    /// The cursor of the next page back (`?before=`), when there is one.
    pub next: Option<String>,
}

/// The message `raw` names (an id prefix of 6 to 64 hex characters), for
/// its page; `Ok(None)` when none matches. A malformed or ambiguous prefix
/// is refused, naming the parameter `id`.
pub fn message_detail(s: &mut Session, raw: &str) -> AppResult<Option<MessageDetail>> {
    s.catch_up()?;
    let ix = s.index();
    let Some(found) = lookup(ix, Named::Message, "id", raw)? else {
        return Ok(None);
    };
    let full = found.id.hex();
    let Some(m) = ix.message_row(&full)? else {
        return Ok(None);
    };
    let body_cut = m.body.chars().count() > BODY_CHARS;
    let body = m.body.chars().take(BODY_CHARS).collect();
    let blocked_by = match &m.blocked_by {
        Some(b) => Some((b.short(), ix.topic_of(&b.hex())?)),
        None => None,
    };
    let votes = ix
        .votes_of(&full)?
        .into_iter()
        .map(|v| VoteLine {
            role: v.role,
            decision: v.decision,
            note: v.note,
            stale: v.stale,
        })
        .collect();
    let (thread, thread_cut) = thread(ix, &full)?;
    let mut touches = ix.touches_of(&full, TOUCH_LIMIT)?;
    let timeline_cut = touches.len() > TOUCH_LIMIT;
    touches.truncate(TOUCH_LIMIT);
    let timeline = touches.iter().map(|t| entry(t, None)).collect();
    Ok(Some(MessageDetail {
        id: short(&full),
        topic: m.topic,
        from: m.from.to_string(),
        to: m.to.iter().map(Role::to_string).collect(),
        kind: m.kind.map(|k| k.as_str().to_owned()),
        debt: m.action_required,
        ms: m.ms,
        body,
        body_chars: m.body_chars,
        body_cut,
        status: m.status.map(|s| s.as_str().to_owned()),
        work_status: m.work_status.map(|w| w.as_str().to_owned()),
        resolved_by: m.resolved_by.as_ref().map(Role::to_string),
        resolution_note: m.resolution_note,
        confirmed: m.confirmed,
        blocked_by,
        blocks: ix.blocked_on(&full)?.iter().map(|b| short(b)).collect(),
        pin_key: m.pin_key,
        votes,
        deleted_ms: m.deleted_ms,
        retired_ms: m.retired_ms,
        thread,
        thread_cut,
        timeline,
        timeline_cut,
        full_id: full,
    }))
}

/// The thread of message `full`: up to its root (at most [`ROOT_STEPS`]),
/// then down, at most [`THREAD_LIMIT`] messages, oldest first.
fn thread(ix: &Index, full: &str) -> AppResult<(Vec<ThreadLine>, bool)> {
    let mut root = full.to_owned();
    let mut seen = BTreeSet::from([root.clone()]);
    for _ in 0..ROOT_STEPS {
        match ix.parent_of(&root)? {
            Some(p) if seen.insert(p.clone()) => root = p,
            _ => break,
        }
    }
    let mut tree = vec![root];
    let mut at = 0;
    let mut cut = false;
    while at < tree.len() {
        for child in ix.children_of(&tree[at])? {
            if tree.len() >= THREAD_LIMIT {
                cut = true;
                break;
            }
            if !tree.contains(&child) {
                tree.push(child);
            }
        }
        at += 1;
    }
    let mut lines = Vec::with_capacity(tree.len());
    for id in &tree {
        if let Some(h) = ix.message_head(id)? {
            lines.push((
                (h.ms, h.c),
                ThreadLine {
                    id: short(id),
                    from: h.from,
                    topic: h.topic,
                    ms: h.ms,
                    deleted: h.deleted,
                    this: id == full,
                },
            ));
        }
    }
    lines.sort_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
    Ok((lines.into_iter().map(|(_, l)| l).collect(), cut))
}

/// A page of the channel's moves, newest first, before the cursor
/// `before` (from a previous page's `next`), each with the subject of the
/// message it is about. A malformed cursor is refused, naming `before`.
pub fn activity(s: &mut Session, before: Option<&str>) -> AppResult<ActivityPage> {
    let before = match before {
        Some(raw) => Some(parse_cursor(raw).ok_or_else(|| {
            AppError::value(format!(
                "'before' must be a cursor from an 'older' link (time.counter.record id), got \
                 '{}'",
                raw.chars().take(80).collect::<String>()
            ))
        })?),
        None => None,
    };
    s.catch_up()?;
    activity_page(s, before.as_ref())
}

/// [`activity`] of the index as it stands, before `before`.
pub fn activity_page(s: &Session, before: Option<&Before>) -> AppResult<ActivityPage> {
    let ix = s.index();
    let mut touches = ix.history_page(before, ACTIVITY_PAGE)?;
    let more = touches.len() > ACTIVITY_PAGE;
    touches.truncate(ACTIVITY_PAGE);
    let next = more
        .then(|| touches.last())
        .flatten()
        .map(|t| format!("{}.{}.{}", t.ms, t.c, t.record));
    let mut entries = Vec::with_capacity(touches.len());
    for t in &touches {
        let mut e = entry(t, Some(EXCERPT_CHARS));
        if let Op::Send(send) = &t.op {
            e.subject_topic = Some(send.topic.clone());
        } else if let Some(full) = subject_of(t) {
            e.subject_topic = ix.topic_of(&full.hex())?;
        }
        entries.push(e);
    }
    Ok(ActivityPage { entries, next })
}

/// `ms.c.id` → the place before which a page starts.
fn parse_cursor(raw: &str) -> Option<Before> {
    let mut parts = raw.splitn(3, '.');
    let ms = parts.next()?.parse().ok()?;
    let c = parts.next()?.parse().ok()?;
    let record = parts.next()?;
    let hex = !record.is_empty()
        && record.len() <= 64
        && record
            .chars()
            .all(|ch| ch.is_ascii_digit() || ('a'..='f').contains(&ch));
    hex.then(|| Before {
        ms,
        c,
        record: record.to_owned(),
    })
}

/// The message record `t` is about: itself for a send, its target, or
/// the proposal a pin write carries out.
fn subject_of(t: &Touch) -> Option<RecordId> {
    match &t.op {
        Op::Send(_) => RecordId::parse(&t.record),
        Op::PinSet(p) => p.approved_by,
        op => op.targets().first().copied(),
    }
}

/// How record `t` reads; with `excerpt`, a send's note is the start of its
/// text.
fn entry(t: &Touch, excerpt: Option<usize>) -> Entry {
    let mut e = Entry {
        record: short(&t.record),
        role: t.role.clone(),
        ms: t.ms,
        what: String::new(),
        note: None,
        subject: subject_of(t).map(|id| id.short()),
        subject_topic: None,
        pin_key: None,
        names: None,
    };
    let (what, note) = match &t.op {
        Op::Send(s) => (
            if s.action_required {
                format!("sent a debt to {}", join(&s.to))
            } else {
                format!("sent to {}", join(&s.to))
            },
            excerpt.map(|n| s.body.chars().take(n).collect()),
        ),
        Op::Opened(ids) => (format!("opened ({} message(s))", ids.ids.len()), None),
        Op::Read(ids) => (format!("marked read ({} message(s))", ids.ids.len()), None),
        Op::Delete(_) => ("deleted".to_owned(), None),
        Op::Resolve(n) => ("resolved".to_owned(), n.note.clone()),
        Op::Confirm(n) => ("confirmed the resolution".to_owned(), n.note.clone()),
        Op::Reopen(n) => ("reopened".to_owned(), n.note.clone()),
        Op::WorkStatus(w) => {
            e.names = w.blocked_by.map(|b| b.short());
            (format!("work status → {}", w.value), w.note.clone())
        }
        Op::Revise(r) => ("revised the text".to_owned(), r.note.clone()),
        Op::Ack(a) => (format!("voted {}", a.decision), a.note.clone()),
        Op::PinSet(p) => {
            e.pin_key = Some(p.key.clone());
            (format!("pinned {} version {}", p.key, p.version), None)
        }
        other => (other.name().replace('_', " "), None),
    };
    e.what = what;
    e.note = note.filter(|n| !n.is_empty());
    e
}

fn join(roles: &[crate::core::ids::Role]) -> String {
    roles
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
