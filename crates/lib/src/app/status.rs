//! channel_status and the counters behind it.
//!
//! [`summary`] is the one definition of what a role has waiting for it, and
//! [`ACTIONABLE`] the one definition of which of those counters call for
//! action. Everything that decides whether a session may rest (channel_status,
//! the wait tools, the status command, the stop hook) reads these two.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::info::{News, VERSION};
use super::pin::PinSummary;
use super::refusal::AppResult;
use super::rows::short;
use super::session::Session;
use crate::core::ids::Role;
use crate::core::timestamp::format_rfc3339;
use crate::store::Index;
use crate::store::home::prefs::Prefs;
use crate::store::index::{Ball, ConflictTarget, ProblemKind};

/// The counters that call for action: the protocol's seven, plus this role's
/// records that lost to a concurrent decision on another machine (until it
/// writes on that message again). Not actionable: blocked, in_progress, all
/// open_obligations (only the untaken ones), unopened/opened_unmarked (parts
/// of unread).
pub const ACTIONABLE: [&str; 8] = [
    "unread",
    "open_obligations_untaken",
    "awaiting_ack",
    "unblocked",
    "needs_you",
    "awaiting_done",
    "resolved_for_you",
    "conflicted",
];

/// The order a session works through what channel_status shows, each step
/// with what to do: the one triage order that the server's instructions, the
/// session-start hook and the CLAUDE.md / AGENTS.md note all give.
pub const TRIAGE: [(&str, &str); 8] = [
    (
        "unblocked",
        "your blocked tasks whose blocker is gone: resume them",
    ),
    (
        "open_obligations",
        "debts addressed to you: take them (set_work_status) or resolve them",
    ),
    (
        "awaiting_ack",
        "proposals waiting for your decision: acknowledge()",
    ),
    (
        "needs_you",
        "messages where another role handed the ball to you",
    ),
    (
        "resolved_for_you",
        "debts resolved for you: confirm_resolution() or reopen_message()",
    ),
    (
        "awaiting_done",
        "work another role reports done: check it, then confirm",
    ),
    (
        "unread",
        "read_inbox(); handle each message, then mark_read()",
    ),
    ("in_progress", "your own tasks under way: carry on"),
];

/// [`TRIAGE`]'s steps in one line: `unblocked, open_obligations, …`.
pub fn triage_order() -> String {
    TRIAGE.map(|(step, _)| step).join(", ")
}

/// Every counter, in the order channel_status shows them (each only when
/// non-zero, and `conflicted` after them).
pub const COUNTERS: [&str; 12] = [
    "unread",
    "unopened",
    "opened_unmarked",
    "open_obligations",
    "open_obligations_untaken",
    "awaiting_ack",
    "blocked",
    "unblocked",
    "in_progress",
    "needs_you",
    "awaiting_done",
    "resolved_for_you",
];

/// One message behind a counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Full id.
    pub id: String,
    /// Its subject.
    pub topic: String,
    /// Counter-specific details (blocked_by, resolved_by …).
    pub extra: Map<String, Value>,
}

/// What a role has waiting for it: each counter's number, what identifies
/// each of its items, and the first [`LISTED`] of them to show. A role may
/// have tens of thousands of open items; only the shown ones are kept whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Counter name → the first [`LISTED`] messages it counts, in the
    /// index's order.
    pub items: BTreeMap<&'static str, Vec<Item>>,
    /// Counter name → the [`Mark`] of every message it counts (their number
    /// is the count).
    pub marks: BTreeMap<&'static str, Vec<Mark>>,
    /// Counters kept as a number only (mail): counter → (count, a marker that
    /// changes whenever a new item enters the counter).
    pub tallies: BTreeMap<&'static str, (usize, String)>,
}

/// What tells one item of a counter from another, in 8 bytes: a hash of its
/// full id (or of a tally's marker). Compared within one process only (a
/// wait's snapshots), never stored.
pub type Mark = u64;

/// The [`Mark`] of an id or marker.
pub fn mark(id: &str) -> Mark {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

impl Summary {
    /// The number behind a counter.
    pub fn count(&self, counter: &str) -> usize {
        match self.tallies.get(counter) {
            Some((n, _)) => *n,
            None => self.marks.get(counter).map_or(0, Vec::len),
        }
    }

    /// What identifies the contents of a counter: the marks of the ids
    /// behind it, or for a tallied counter of its marker (none when the
    /// counter is zero). A new item always brings a new mark.
    pub fn marks(&self, counter: &str) -> Vec<Mark> {
        match self.tallies.get(counter) {
            Some((0, _)) => Vec::new(),
            Some((_, marker)) => vec![mark(marker)],
            None => self.marks.get(counter).cloned().unwrap_or_default(),
        }
    }

    /// Counts `item` under `counter`, keeping it whole while fewer than
    /// [`LISTED`] are.
    fn push(&mut self, counter: &'static str, item: Item) {
        self.marks.entry(counter).or_default().push(mark(&item.id));
        let shown = self.items.entry(counter).or_default();
        if shown.len() < LISTED {
            shown.push(item);
        }
    }

    /// The non-zero actionable counters.
    pub fn pending(&self) -> BTreeMap<&'static str, usize> {
        ACTIONABLE
            .iter()
            .map(|c| (*c, self.count(c)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// All counters ([`COUNTERS`], then `conflicted` when non-zero).
    pub fn counts(&self) -> Counts {
        let conflicted = self.count("conflicted");
        Counts {
            unread: self.count("unread"),
            unopened: self.count("unopened"),
            opened_unmarked: self.count("opened_unmarked"),
            open_obligations: self.count("open_obligations"),
            open_obligations_untaken: self.count("open_obligations_untaken"),
            awaiting_ack: self.count("awaiting_ack"),
            blocked: self.count("blocked"),
            unblocked: self.count("unblocked"),
            in_progress: self.count("in_progress"),
            needs_you: self.count("needs_you"),
            awaiting_done: self.count("awaiting_done"),
            resolved_for_you: self.count("resolved_for_you"),
            conflicted: (conflicted > 0).then_some(conflicted),
        }
    }
}

/// Every counter of a role, in [`COUNTERS`] order. Lean like a message row:
/// a counter at zero is absent (absent means 0).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// Mail not marked read.
    #[serde(skip_serializing_if = "is_zero")]
    pub unread: usize,
    /// Unread and never handed over.
    #[serde(skip_serializing_if = "is_zero")]
    pub unopened: usize,
    /// Handed over, not marked read.
    #[serde(skip_serializing_if = "is_zero")]
    pub opened_unmarked: usize,
    /// Open debts addressed to the role.
    #[serde(skip_serializing_if = "is_zero")]
    pub open_obligations: usize,
    /// Those the role has not taken.
    #[serde(skip_serializing_if = "is_zero")]
    pub open_obligations_untaken: usize,
    /// Proposals waiting for the role's decision.
    #[serde(skip_serializing_if = "is_zero")]
    pub awaiting_ack: usize,
    /// The role's work blocked on a live debt.
    #[serde(skip_serializing_if = "is_zero")]
    pub blocked: usize,
    /// The role's work whose blocker is gone.
    #[serde(skip_serializing_if = "is_zero")]
    pub unblocked: usize,
    /// The role's work in progress.
    #[serde(skip_serializing_if = "is_zero")]
    pub in_progress: usize,
    /// The ball passed to the role.
    #[serde(skip_serializing_if = "is_zero")]
    pub needs_you: usize,
    /// Work marked done elsewhere, waiting for the role.
    #[serde(skip_serializing_if = "is_zero")]
    pub awaiting_done: usize,
    /// Resolutions waiting for the role's confirmation.
    #[serde(skip_serializing_if = "is_zero")]
    pub resolved_for_you: usize,
    /// The role's records that lost to a concurrent decision (when any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicted: Option<usize>,
}

/// Whether a counter is zero, which a lean answer leaves out.
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One message behind a counter, as channel_status lists it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CounterItem {
    /// Short id.
    pub id: String,
    /// Subject line.
    pub topic: String,
    /// Counter-specific details (blocked_by, resolved_by …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Computes the summary of `role` from the index, every counter from one
/// snapshot (a message and its delivery, committed together, count together).
/// The rules behind each counter are the index's (`store::index`: debts,
/// proposals, the ball); this only sorts what they find into counters.
pub fn summary(ix: &Index, role: &Role) -> AppResult<Summary> {
    ix.snapshot(|ix| summary_now(ix, role))
}

fn summary_now(ix: &Index, role: &Role) -> AppResult<Summary> {
    let me = role.as_str();
    let mut sum = Summary::default();
    let none = Map::new;

    // Mail delivered and not marked read, split by whether it was handed over.
    let mail = ix.unread_mail(me)?;
    let (unread, unopened) = (mail.unread, mail.unopened);
    sum.tallies
        .insert("unread", (unread, format!("n{}", mail.newest_n)));
    sum.tallies.insert("unopened", (unopened, String::new()));
    sum.tallies
        .insert("opened_unmarked", (unread - unopened, String::new()));
    let mut push = |counter: &'static str, item: Item| sum.push(counter, item);

    // Open debts addressed to the role; untaken = not (yet) taken by it.
    ix.each_open_debt_for(me, |debt| {
        let item = Item {
            id: debt.id,
            topic: debt.topic,
            extra: none(),
        };
        if !debt.taken {
            push("open_obligations_untaken", item.clone());
        }
        push("open_obligations", item);
    })?;

    // Proposals waiting for this role's decision.
    for p in ix.awaiting_votes(me)? {
        push(
            "awaiting_ack",
            Item {
                id: p.id,
                topic: p.topic,
                extra: none(),
            },
        );
    }

    // The ball: work whose next move is the role's.
    ix.each_ball_with(me, |b| {
        let counter = match b.ball {
            Ball::InProgress => "in_progress",
            Ball::Unblocked => "unblocked",
            Ball::Blocked => "blocked",
            Ball::NeedsYou => "needs_you",
            Ball::AwaitingDone => "awaiting_done",
        };
        // Lean like a message row: a block that names no blocker has no
        // `blocked_by` (absent means null).
        let mut extra = none();
        if let Some(blocker) = b.blocked_by.as_deref() {
            extra.insert("blocked_by".into(), json!(short(blocker)));
        }
        push(
            counter,
            Item {
                id: b.id,
                topic: b.topic,
                extra,
            },
        );
    })?;

    // Resolutions by the other side that wait for this role's confirmation.
    for r in ix.resolutions_for(me)? {
        let mut extra = none();
        extra.insert("resolved_by".into(), json!(r.resolved_by));
        extra.insert("resolved_at".into(), json!(format_rfc3339(r.resolved_ms)));
        if let Some(note) = r.note {
            extra.insert("resolution_note".into(), json!(note));
        }
        push(
            "resolved_for_you",
            Item {
                id: r.id,
                topic: r.topic,
                extra,
            },
        );
    }

    for c in conflicts_of(ix, role)? {
        let record = c["record"].as_str().unwrap_or_default().to_owned();
        let extra = c.as_object().cloned().unwrap_or_default();
        push(
            "conflicted",
            Item {
                id: record,
                topic: String::new(),
                extra,
            },
        );
    }
    Ok(sum)
}

/// The most items channel_status lists under one counter (and of `conflicted`
/// and `alarms`): a role with thousands of open items gets an answer of a
/// bounded size. The counts stay exact, and `more` says what was left out.
pub const LISTED: usize = 50;

/// The first [`LISTED`] of `items`, noting in `more` how many were left out.
fn bounded<T>(
    items: impl ExactSizeIterator<Item = T>,
    name: &'static str,
    more: &mut BTreeMap<&'static str, usize>,
) -> Vec<T> {
    if items.len() > LISTED {
        more.insert(name, items.len() - LISTED);
    }
    items.take(LISTED).collect()
}

/// The items of `counter` kept to be shown, noting in `more` how many it
/// counts beyond them.
fn shown<'s>(
    sum: &'s Summary,
    counter: &'static str,
    more: &mut BTreeMap<&'static str, usize>,
) -> &'s [Item] {
    let shown = sum
        .items
        .get(counter)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let left_out = sum.count(counter) - shown.len();
    if left_out > 0 {
        more.insert(counter, left_out);
    }
    shown
}

/// The items behind `counter` as channel_status lists them.
fn list(
    sum: &Summary,
    counter: &'static str,
    more: &mut BTreeMap<&'static str, usize>,
) -> Vec<CounterItem> {
    shown(sum, counter, more)
        .iter()
        .map(|i| CounterItem {
            id: short(&i.id),
            topic: i.topic.clone(),
            extra: i.extra.clone(),
        })
        .collect()
}

/// What this role has waiting, plus the pinned rules and what is new in this build.
pub fn channel_status(s: &mut Session) -> AppResult<ChannelStatus> {
    let me = s.role()?;
    let (_, view) = status_view(s)?;
    let mut out = ChannelStatus {
        view,
        pins: super::pin::current_pins(s.index())?,
        server: ServerNote {
            build: format!("countersign {VERSION}"),
            contract: "get_protocol(): the rules",
            changes: "server_build(): what this build does",
            whats_new: None,
            note: None,
        },
    };
    // What is new in this build, shown once per role on this device.
    let state_dir = s.channel().state_dir().to_path_buf();
    let mut prefs = Prefs::load(&state_dir);
    let build = format!("countersign {VERSION}");
    if prefs.seen_build.get(me.as_str()) != Some(&build) {
        out.server.whats_new = Some(super::info::server_build().whats_new);
        out.server.note = Some("shown once per role and build; server_build() repeats it");
        prefs.seen_build.insert(me.to_string(), build);
        prefs.save(&state_dir)?;
    }
    Ok(out)
}

/// What channel_status answers: the status view, the pins, and the build.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChannelStatus {
    /// Counters and lists.
    #[serde(flatten)]
    pub view: StatusView,
    /// The current version of every pin, without bodies (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<PinSummary>,
    /// This build, where its rules are, and once what is new.
    pub server: ServerNote,
}

/// channel_status's word on the build.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ServerNote {
    /// `countersign <version>`.
    pub build: String,
    /// Where the rules are.
    pub contract: &'static str,
    /// Where the changes are.
    pub changes: &'static str,
    /// What is new, once per role and build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whats_new: Option<Vec<News>>,
    /// Why whats_new is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

/// The role's conflicted records still standing: lost at their place in the
/// order, listed until the role writes again on that message. Read receipts
/// (`read`, and `opened`, which read_inbox writes on its own) do not count:
/// they decide nothing, and must not hide a lost decision unseen.
fn conflicts_of(ix: &Index, me: &Role) -> AppResult<Vec<Value>> {
    Ok(ix
        .standing_conflicts(me.as_str())?
        .into_iter()
        .map(|c| {
            json!({
                "record": short(&c.record),
                "op": c.op,
                "target": match &c.target {
                    ConflictTarget::Message(id) => short(id),
                    ConflictTarget::PinKey(key) => key.clone(),
                },
                "reason": c.reason,
                "winner": c.winner.as_deref().map(short),
            })
        })
        .collect())
}

/// Records held because they are dated too far ahead of local time.
fn held(ix: &Index) -> AppResult<i64> {
    Ok(ix.problem_count(ProblemKind::Held)?)
}

/// Local evidence of trouble in the folder: quarantined records, forks,
/// frozen feeds, feeds nobody admitted, second claims of a feed, refused
/// claims of an invitation, held records and clocks far ahead, files of the
/// wrong type or too large, and feeds cut short of their signed head. Unreadable lines and stray files
/// (harmless, ignored) are left to `verify`.
fn alarms(ix: &Index) -> AppResult<Vec<Alarm>> {
    Ok(ix
        .alarm_problems(usize::MAX)?
        .into_iter()
        .map(|p| Alarm {
            kind: p.kind.to_string(),
            feed: p.feed,
            r#where: format!("{}:{}", p.path, p.offset),
            reason: p.reason,
        })
        .collect())
}

/// A problem in the folder worth an alarm.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Alarm {
    /// Its kind (fork, quarantine, cut …).
    pub kind: String,
    /// The feed it concerns.
    pub feed: Option<String>,
    /// `path:offset`.
    pub r#where: String,
    /// What is wrong.
    pub reason: String,
}

// ---------------------------------------------------------------------------------------
// The `countersign status` command's view.

/// What `countersign status` prints for the session's role: channel_status's
/// counters and lists (plus `conflicted` and `alarms` when non-empty), read
/// after a catch-up, without the pins, the build news and their
/// once-per-build bookkeeping (a status check must not consume whats_new).
/// The summary comes back too, for the exit code.
pub fn status_view(s: &mut Session) -> AppResult<(Summary, StatusView)> {
    let me = s.role()?;
    s.catch_up()?;
    let sum = summary(s.index(), &me)?;
    let mut more = BTreeMap::new();
    let conflicted: Vec<Map<String, Value>> = shown(&sum, "conflicted", &mut more)
        .iter()
        .map(|i| i.extra.clone())
        .collect();
    let alarms = bounded(alarms(s.index())?.into_iter(), "alarms", &mut more);
    let held = held(s.index())?;
    let out = StatusView {
        counts: sum.counts(),
        unread: sum.count("unread"),
        open_obligations: sum.count("open_obligations"),
        awaiting_ack: sum.count("awaiting_ack"),
        blocked: list(&sum, "blocked", &mut more),
        unblocked: list(&sum, "unblocked", &mut more),
        in_progress: list(&sum, "in_progress", &mut more),
        needs_you: list(&sum, "needs_you", &mut more),
        awaiting_done: list(&sum, "awaiting_done", &mut more),
        resolved_for_you: list(&sum, "resolved_for_you", &mut more),
        conflicted: (!conflicted.is_empty()).then_some(conflicted),
        alarms: (!alarms.is_empty()).then_some(alarms),
        more: (!more.is_empty()).then_some(more),
        held: (held > 0).then_some(held),
        tentative_since: super::presence::tentative_since(s)?.map(format_rfc3339),
        sync_failed: super::sync::last_failure(s.channel()),
        role: me,
    };
    Ok((sum, out))
}

/// A role's counters and the messages behind them (channel_status without
/// the pins and the build, and `countersign status`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StatusView {
    /// The role.
    #[schemars(with = "String")]
    pub role: Role,
    /// Every counter.
    pub counts: Counts,
    /// Mail not marked read (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub unread: usize,
    /// Open debts addressed to the role (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub open_obligations: usize,
    /// Proposals waiting for the role's decision (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub awaiting_ack: usize,
    /// The role's work blocked on a live debt (absent when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<CounterItem>,
    /// The role's work whose blocker is gone (absent when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unblocked: Vec<CounterItem>,
    /// The role's work in progress (absent when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_progress: Vec<CounterItem>,
    /// The ball passed to the role (absent when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_you: Vec<CounterItem>,
    /// Work marked done elsewhere, waiting for the role (absent when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub awaiting_done: Vec<CounterItem>,
    /// Resolutions waiting for the role's confirmation (absent when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resolved_for_you: Vec<CounterItem>,
    /// The role's records that lost to a concurrent decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicted: Option<Vec<Map<String, Value>>>,
    /// Trouble found in the folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alarms: Option<Vec<Alarm>>,
    /// The lists cut at [`LISTED`] items: list → how many it left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<BTreeMap<&'static str, usize>>,
    /// Records held for being dated ahead of this clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<i64>,
    /// Records sorting after this time may still be joined by earlier ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tentative_since: Option<String>,
    /// The last sync with the remote on this machine failed: when, why, and
    /// what to do (absent once a sync succeeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_failed: Option<super::sync::SyncFailure>,
}

// ---------------------------------------------------------------------------------------
// The status report: what `countersign status` prints, here or through a server.

/// What `countersign status` prints as JSON, and what `serve` answers on
/// `/status` for a role token: the channel's name, the role's status view,
/// and its open debts as headers (at most 100, the rest counted in `more`).
/// One type for both, so a status read through a server is the one read
/// beside the folder.
#[derive(Clone, Debug, Serialize)]
pub struct StatusReport {
    /// The channel's name (channel.json).
    pub channel: String,
    /// Counters and lists.
    #[serde(flatten)]
    pub view: StatusView,
    /// The open debts addressed to the role, as headers.
    pub debts: Vec<super::rows::Projected<super::rows::MessageView>>,
}

/// The most open debts a status report lists.
pub const REPORT_DEBTS: i64 = 100;

/// The status report of the session's role, after a catch-up; the summary
/// comes back too, for the exit code or a wait.
pub fn status_report(s: &mut Session) -> AppResult<(Summary, StatusReport)> {
    use super::rows::FieldsArg;
    let (sum, mut view) = status_view(s)?;
    let headers = FieldsArg::One("headers".into());
    let debts = super::obligations::open_obligations(s, None, REPORT_DEBTS, Some(&headers))?
        .listing
        .result;
    let owed = sum.count("open_obligations");
    if owed > debts.len() {
        let more = view.more.get_or_insert_default();
        more.insert("debts", owed - debts.len());
    }
    let report = StatusReport {
        channel: s.channel().dir().genesis().name.clone(),
        view,
        debts,
    };
    Ok((sum, report))
}

/// What a stop hook needs of a role (`/hook-status`): whose counters they
/// are, and every counter.
#[derive(Clone, Debug, Serialize)]
pub struct HookStatus {
    /// The channel's name (channel.json).
    pub channel: String,
    /// The role.
    pub role: String,
    /// Every counter; the actionable ones are [`ACTIONABLE`].
    pub counts: Counts,
}

/// The hook status of the session's role, after a catch-up.
pub fn hook_status(s: &mut Session) -> AppResult<(Summary, HookStatus)> {
    let me = s.role()?;
    s.catch_up()?;
    let sum = summary(s.index(), &me)?;
    let out = HookStatus {
        channel: s.channel().dir().genesis().name.clone(),
        role: me.to_string(),
        counts: sum.counts(),
    };
    Ok((sum, out))
}
