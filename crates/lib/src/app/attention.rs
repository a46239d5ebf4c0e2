//! What is stuck, and who must move: the attention strip of the board and
//! the first block of `status --text`.
//!
//! Owns [`Attention`], one fold over the index's bounded reads (open and
//! unconfirmed debts, live proposals and rounds, problems, lost decisions)
//! into typed items, each naming who must act, what it is about and since
//! when; and [`round_state`], where a live round stands. The rules of the
//! state (whose move a debt is, which votes count) are the index's and
//! `core`'s, read here, never restated. It writes nothing and draws
//! nothing: the board (`http::board::strip`) and the CLI
//! (`cli::attention`) render it.

use serde::Serialize;

use super::refusal::AppResult;
use super::rows::short;
use super::session::Session;
use crate::store::Index;
use crate::store::index::{ConflictTarget, DebtLine, DebtState, OpenProposal};

/// How many debts (open, and apart unconfirmed) are read; the board lists
/// as many (`app::board::DEBT_LIMIT`).
pub const DEBT_READ: usize = 200;
/// How many live proposals are read; the board lists as many.
pub const PROPOSAL_READ: usize = 50;
/// The most items of one kind listed (the count says how many there are).
pub const PER_KIND: usize = 10;
/// How many of the debts idle longest are listed.
pub const IDLE_SHOWN: usize = 5;
/// A resolution unconfirmed this long waits too long.
pub const CONFIRM_AFTER_MS: i64 = DAY_MS;
/// A debt nobody moved for this long is idle.
pub const IDLE_AFTER_MS: i64 = DAY_MS;
/// A round awaiting votes with no vote or change for this long is stalled.
pub const STALL_AFTER_MS: i64 = 2 * DAY_MS;
/// The most problems read to count them.
pub const PROBLEM_READ: usize = 1000;

const DAY_MS: i64 = 86_400_000;

/// Everything that waits on someone, as of `generated_ms`.
#[derive(Clone, Debug, Serialize)]
pub struct Attention {
    /// When it was read (ms).
    pub generated_ms: i64,
    /// The items, most urgent kinds first, oldest first within a kind.
    pub items: Vec<AttentionItem>,
    /// Per kind, how many there are when more than [`PER_KIND`] were found.
    pub left_out: Vec<(AttentionKind, usize)>,
    /// Alarms: the folder's problems that are alarms, and decisions lost to
    /// a conflict (the red count of the board's header).
    pub alarms: usize,
    /// Problems `verify` reports that are no alarm (files no feed uses,
    /// unreadable lines): harmless, but `verify` exits 1 on them.
    pub quiet_problems: usize,
}

/// What an item is.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// The folder has problems that are alarms (forks, quarantine …).
    Alarm,
    /// A decision lost to a concurrent one and stands as a conflict.
    Conflict,
    /// A task blocked on a person, not on another debt.
    BlockedOnPerson,
    /// A round a voter rejected or asked changes of.
    Contested,
    /// A round every voter agreed to, not pinned yet.
    ReadyToPin,
    /// A round awaiting votes with nothing moving.
    Stalled,
    /// A resolution waiting for confirmation over a day.
    Unconfirmed,
    /// Work done on both sides, the debt still open.
    DoneButOpen,
    /// An open debt nobody moved for over a day, longest first.
    Idle,
    /// Files or lines `verify` reports that are no alarm.
    Verify,
}

impl AttentionKind {
    /// How the kind reads to a person.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Alarm => "alarm",
            Self::Conflict => "decision lost",
            Self::BlockedOnPerson => "blocked on a person",
            Self::Contested => "contested round",
            Self::ReadyToPin => "ready to pin",
            Self::Stalled => "stalled round",
            Self::Unconfirmed => "to confirm",
            Self::DoneButOpen => "done, still open",
            Self::Idle => "idle",
            Self::Verify => "verify",
        }
    }
}

/// Who must act on an item.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "who", content = "roles", rename_all = "snake_case")]
pub enum Who {
    /// These roles.
    Roles(Vec<String>),
    /// A person (the note says who); the role holding the task waits.
    Person,
    /// Whoever keeps the channel folder (its owner).
    Keeper,
}

/// What an item is about: where its link goes.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "about", content = "id", rename_all = "snake_case")]
pub enum Subject {
    /// A message (short id).
    Message(String),
    /// The board's alarms.
    Alarms,
}

/// One thing that waits on someone.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct AttentionItem {
    /// What it is.
    pub kind: AttentionKind,
    /// Who must act.
    pub who: Who,
    /// What it is about.
    pub subject: Subject,
    /// The message's subject (peer text), or what the item counts.
    pub topic: String,
    /// Why, in the words of whoever moved it last (peer text), or ours.
    pub note: Option<String>,
    /// Since when it waits (ms).
    pub since_ms: i64,
    /// The role that holds it (a blocked task's owner), if another than
    /// whoever must act.
    pub held_by: Option<String>,
}

/// Where a live proposal stands.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RoundState {
    /// Some decisions are still awaited.
    Waiting {
        /// How many.
        n: usize,
    },
    /// A voter rejected it, or asked for changes, on its current text.
    Contested {
        /// The first such voter.
        by: String,
        /// Its decision.
        decision: String,
        /// Its note.
        note: Option<String>,
    },
    /// Every voter agreed to its current text: the author may pin it.
    Ready,
    /// Declared void by its electorate: it holds nothing.
    Void,
}

/// Where the live proposal `p` stands: contested as soon as a standing
/// decision on its current text rejects it or asks for changes, else
/// waiting while decisions are awaited, else ready.
pub fn round_state(p: &OpenProposal) -> RoundState {
    let standing = || p.votes.iter().filter(|v| !v.stale);
    if standing().any(|v| v.decision == "void") {
        return RoundState::Void;
    }
    if let Some(v) = standing().find(|v| matches!(v.decision.as_str(), "reject" | "needs_changes"))
    {
        return RoundState::Contested {
            by: v.role.clone(),
            decision: v.decision.clone(),
            note: v.note.clone(),
        };
    }
    match p.awaiting.len() {
        0 => RoundState::Ready,
        n => RoundState::Waiting { n },
    }
}

/// Catches the index up with the folder, then reads what needs attention.
pub fn attention(s: &mut Session, now_ms: i64) -> AppResult<Attention> {
    s.catch_up()?;
    read(s, now_ms)
}

/// What needs attention in the index as it stands.
pub fn read(s: &Session, now_ms: i64) -> AppResult<Attention> {
    let ix = s.index();
    let mut items = Vec::new();

    let alarms = ix.alarm_problems(PROBLEM_READ)?;
    if !alarms.is_empty() {
        items.push(AttentionItem {
            kind: AttentionKind::Alarm,
            who: Who::Keeper,
            subject: Subject::Alarms,
            topic: count_by_kind(alarms.iter().map(|p| p.kind.as_str())),
            note: alarms.first().map(|p| p.reason.clone()),
            since_ms: now_ms,
            held_by: None,
        });
    }
    let mut conflicts = 0;
    for role in s.roster() {
        for c in ix.standing_conflicts(role.as_str())? {
            conflicts += 1;
            let (subject, topic) = match &c.target {
                ConflictTarget::Message(id) => (
                    Subject::Message(short(id)),
                    ix.topic_of(id)?.unwrap_or_default(),
                ),
                ConflictTarget::PinKey(key) => (Subject::Alarms, format!("pin {key}")),
            };
            items.push(AttentionItem {
                kind: AttentionKind::Conflict,
                who: Who::Roles(vec![role.to_string()]),
                subject,
                topic,
                note: Some(format!("its {} lost: {}", c.op, c.reason)),
                since_ms: now_ms,
                held_by: None,
            });
        }
    }

    let open = ix.debt_lines(DebtState::Open, DEBT_READ)?;
    for d in &open {
        match d.work_status.as_deref() {
            Some("blocked") if d.blocked_by.is_none() => items.push(AttentionItem {
                kind: AttentionKind::BlockedOnPerson,
                who: Who::Person,
                subject: Subject::Message(short(&d.id)),
                topic: d.topic.clone(),
                note: blocked_note(ix, &d.id)?,
                since_ms: d.last_move_ms,
                held_by: d.ws_by.clone(),
            }),
            Some("done") => items.push(AttentionItem {
                kind: AttentionKind::DoneButOpen,
                who: Who::Roles(d.to.clone()),
                subject: Subject::Message(short(&d.id)),
                topic: d.topic.clone(),
                note: Some("the work is done on both sides: resolve the debt".into()),
                since_ms: d.last_move_ms,
                held_by: None,
            }),
            _ => {}
        }
    }

    for p in ix.open_proposals(PROPOSAL_READ)? {
        if p.pin_key.is_none() {
            continue;
        }
        let last_ms = p.votes.iter().map(|v| v.ms).fold(p.ms, i64::max);
        let (kind, who, note) = match round_state(&p) {
            RoundState::Contested { by, decision, note } => (
                AttentionKind::Contested,
                Who::Roles(vec![p.from.clone()]),
                Some(match note {
                    Some(n) => format!("{by}: {decision} — {n}"),
                    None => format!("{by}: {decision}"),
                }),
            ),
            RoundState::Ready => (
                AttentionKind::ReadyToPin,
                Who::Roles(vec![p.from.clone()]),
                Some("every voter agreed: pin it (pin_set with approved_by)".into()),
            ),
            RoundState::Waiting { n } if now_ms - last_ms > STALL_AFTER_MS => (
                AttentionKind::Stalled,
                Who::Roles(p.awaiting.clone()),
                Some(format!("waiting for {n} decision(s)")),
            ),
            RoundState::Waiting { .. } | RoundState::Void => continue,
        };
        items.push(AttentionItem {
            kind,
            who,
            subject: Subject::Message(short(&p.id)),
            topic: p.topic.clone(),
            note,
            since_ms: last_ms,
            held_by: None,
        });
    }

    for d in ix.debt_lines(DebtState::Unconfirmed, DEBT_READ)? {
        let at = d.resolved_ms.unwrap_or(d.last_move_ms);
        if now_ms - at <= CONFIRM_AFTER_MS {
            continue;
        }
        let by = d.resolved_by.clone().unwrap_or_default();
        items.push(AttentionItem {
            kind: AttentionKind::Unconfirmed,
            who: Who::Roles(parties(&d).into_iter().filter(|p| *p != by).collect()),
            subject: Subject::Message(short(&d.id)),
            topic: d.topic.clone(),
            note: Some(format!("resolved by {by}: confirm or reopen")),
            since_ms: at,
            held_by: None,
        });
    }

    let listed: Vec<String> = items
        .iter()
        .filter_map(|i| match &i.subject {
            Subject::Message(id) => Some(id.clone()),
            Subject::Alarms => None,
        })
        .collect();
    let mut idle: Vec<&DebtLine> = open
        .iter()
        .filter(|d| now_ms - d.last_move_ms > IDLE_AFTER_MS && !listed.contains(&short(&d.id)))
        .collect();
    idle.sort_by_key(|d| (d.last_move_ms, d.ms));
    for d in idle.into_iter().take(IDLE_SHOWN) {
        items.push(AttentionItem {
            kind: AttentionKind::Idle,
            who: Who::Roles(court(d)),
            subject: Subject::Message(short(&d.id)),
            topic: d.topic.clone(),
            note: None,
            since_ms: d.last_move_ms,
            held_by: None,
        });
    }

    let quiet = ix.quiet_problems(PROBLEM_READ)?;
    if !quiet.is_empty() {
        items.push(AttentionItem {
            kind: AttentionKind::Verify,
            who: Who::Keeper,
            subject: Subject::Alarms,
            topic: count_by_kind(quiet.iter().map(|p| p.kind.as_str())),
            note: quiet.first().map(|p| format!("{}: {}", p.path, p.reason)),
            since_ms: now_ms,
            held_by: None,
        });
    }

    // Most urgent kinds first, the longest waiting first within a kind
    // (the idle ones are already longest first).
    items.sort_by_key(|i| (i.kind, i.since_ms));
    let mut left_out = Vec::new();
    let mut kept: Vec<AttentionItem> = Vec::with_capacity(items.len());
    for item in items {
        let n = kept.iter().filter(|k| k.kind == item.kind).count();
        if n < PER_KIND {
            kept.push(item);
        } else {
            match left_out.iter_mut().find(|(k, _)| *k == item.kind) {
                Some((_, total)) => *total += 1,
                None => left_out.push((item.kind, PER_KIND + 1)),
            }
        }
    }
    Ok(Attention {
        generated_ms: now_ms,
        items: kept,
        left_out,
        alarms: alarms.len().min(PROBLEM_READ) + conflicts,
        quiet_problems: quiet.len().min(PROBLEM_READ),
    })
}

/// The note of the move that blocked task `id`, if it had one.
fn blocked_note(ix: &Index, id: &str) -> AppResult<Option<String>> {
    Ok(ix
        .events_of(id)?
        .into_iter()
        .rev()
        .find(|e| e.event.starts_with("work_status:"))
        .filter(|e| e.event == "work_status:blocked")
        .and_then(|e| e.note))
}

/// The author and the recipients of a debt, sorted, once each.
fn parties(d: &DebtLine) -> Vec<String> {
    let mut p: Vec<String> = std::iter::once(d.from.clone())
        .chain(d.to.iter().cloned())
        .collect();
    p.sort();
    p.dedup();
    p
}

/// Whose move an open debt is (as the board's rows say it): a `needs_you`
/// or `done_local` hands it to every other party; a task under way or
/// blocked stays with whoever moved it; else its addressees'.
fn court(d: &DebtLine) -> Vec<String> {
    match (d.work_status.as_deref(), d.ws_by.as_deref()) {
        (Some("needs_you" | "done_local"), Some(by)) => {
            parties(d).into_iter().filter(|p| p != by).collect()
        }
        (Some("in_progress" | "blocked"), Some(by)) => vec![by.to_owned()],
        _ => d.to.clone(),
    }
}

/// `fork ×2, wrong_type ×1`: how many problems of each kind.
fn count_by_kind<'a>(kinds: impl Iterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for k in kinds {
        match counts.iter_mut().find(|(c, _)| *c == k) {
            Some((_, n)) => *n += 1,
            None => counts.push((k, 1)),
        }
    }
    counts
        .iter()
        .map(|(k, n)| format!("{} ×{n}", k.replace('_', " ")))
        .collect::<Vec<_>>()
        .join(", ")
}
