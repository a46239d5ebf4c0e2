//! The board: one read-only view of a whole channel for a person.
//!
//! Owns [`Board`], what a person watching the channel sees at once: each
//! role's counters, every open debt with whose court it is in, resolutions
//! waiting for confirmation, open proposals and their votes, the pins,
//! recent traffic, each device and its sync health, every alarm, and the
//! data of a chart of open debts per role over the last [`CHART_DAYS`] days.
//!
//! It reads the index through the store's typed queries, each bounded by a
//! limit (the page must come quickly at 100k messages), and never writes a
//! record. It also issues board access ([`issue_link`]) in the home's
//! access store, for `countersign board` and the management tools. How the
//! view is drawn is the transport's (`http::board`); the counters' rules
//! are the index's and `app::status`'s, never restated here.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::attention::{self, Attention, RoundState, round_state};
use super::presence;
use super::refusal::AppResult;
use super::rows::short;
use super::session::Session;
use super::timeline::{self, ActivityPage};
use crate::store::home::sync_outcome::SyncOutcome;
use crate::store::hosting::access::{Access, ChannelRef, NONCE_TTL};
use crate::store::index::{DebtLine, DebtState, PinSelect};

/// Days the chart of open debts covers (today included).
pub const CHART_DAYS: usize = 14;
/// The most open debts (and, apart, unconfirmed resolutions) listed: as
/// many as the attention strip reads.
pub const DEBT_LIMIT: usize = attention::DEBT_READ;
/// The most open proposals listed: as many as the attention strip reads.
pub const PROPOSAL_LIMIT: usize = attention::PROPOSAL_READ;
/// The most pins listed.
pub const PIN_LIMIT: usize = 100;
/// How many of the newest messages the traffic shows.
pub const TRAFFIC_LIMIT: usize = 40;
/// Characters of a message's text shown in the traffic.
pub const EXCERPT_CHARS: usize = 160;
/// The most alarms listed.
pub const ALARM_LIMIT: usize = 200;
/// The most debt spans the chart reads (of open debts, and apart of those
/// resolved within its days): a bound on its cost, far above any channel a
/// person reads a chart of.
pub const SPAN_LIMIT: usize = 50_000;

const DAY_MS: i64 = 86_400_000;

/// Everything the board shows, as of `generated_ms`.
#[derive(Clone, Debug, Serialize)]
pub struct Board {
    /// The channel's name (from `channel.json`: peer-written).
    pub channel: String,
    /// When the view was read (ms).
    pub generated_ms: i64,
    /// This machine's sync remote, if it has one.
    pub remote: Option<String>,
    /// One card per role of the roster.
    pub roles: Vec<RoleCard>,
    /// Open debts, oldest first.
    pub open_debts: Section<DebtItem>,
    /// Resolved debts waiting for confirmation, oldest first.
    pub unconfirmed: Section<DebtItem>,
    /// Proposals still waiting for decisions, and live rounds on a pin
    /// key (contested, or ready to pin), newest first.
    pub proposals: Section<ProposalItem>,
    /// The current version of every pin, by key.
    pub pins: Section<PinItem>,
    /// The newest messages, newest first.
    pub traffic: Vec<TrafficItem>,
    /// Every device writing for a role.
    pub devices: Vec<DeviceItem>,
    /// Trouble in the folder and lost decisions.
    pub alarms: Section<AlarmItem>,
    /// Open debts per role over the last days.
    pub chart: Chart,
    /// What is stuck and who must move.
    pub attention: Attention,
    /// The newest moves of the channel, with the cursor of older ones.
    pub activity: ActivityPage,
}

/// A bounded list: its items, and whether more were left out.
#[derive(Clone, Debug, Serialize)]
pub struct Section<T> {
    /// The items shown.
    pub items: Vec<T>,
    /// True when the limit left some out.
    pub more: bool,
}

impl<T> Section<T> {
    /// Keeps at most `limit` of `items` (read as `limit + 1`).
    fn cut(mut items: Vec<T>, limit: usize) -> Self {
        let more = items.len() > limit;
        items.truncate(limit);
        Self { items, more }
    }
}

/// One role's counters.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RoleCard {
    /// The role.
    pub role: String,
    /// Mail not marked read.
    pub unread: usize,
    /// Open debts addressed to it.
    pub owed: usize,
    /// Resolutions by another role waiting for its confirmation.
    pub to_confirm: usize,
    /// Proposals waiting for its decision.
    pub votes_awaited: usize,
}

/// A debt, with whose court it is in and since when.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DebtItem {
    /// Short id.
    pub id: String,
    /// Subject.
    pub topic: String,
    /// Its author.
    pub from: String,
    /// Its recipients.
    pub to: Vec<String>,
    /// Where it stands (`open`, `taken`, `in_progress`, `blocked`,
    /// `needs_you`, `done_local`, `done`, `resolved`).
    pub state: String,
    /// The roles whose move it is.
    pub court: Vec<String>,
    /// Since when it has been in that court (ms).
    pub since_ms: i64,
    /// When it was sent (ms).
    pub sent_ms: i64,
    /// The role that resolved it (an unconfirmed resolution).
    pub resolved_by: Option<String>,
    /// The blocker (short id), for a blocked task.
    pub blocked_by: Option<String>,
}

/// A proposal with the votes cast and awaited.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ProposalItem {
    /// Short id.
    pub id: String,
    /// Subject.
    pub topic: String,
    /// Its author.
    pub from: String,
    /// When it was sent (ms).
    pub sent_ms: i64,
    /// The pin key it would set.
    pub pin_key: Option<String>,
    /// Standing decisions: role, decision, cast on an older text.
    pub votes: Vec<VoteItem>,
    /// Roles whose decision it still waits for.
    pub awaiting: Vec<String>,
    /// Where it stands (waiting, contested, ready to pin).
    pub state: RoundState,
}

/// One role's standing decision.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct VoteItem {
    /// The voter.
    pub role: String,
    /// Its decision.
    pub decision: String,
    /// Cast on a text a revision replaced.
    pub stale: bool,
}

/// A pin's current version.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PinItem {
    /// The key.
    pub key: String,
    /// Its title.
    pub title: String,
    /// The version label.
    pub version: String,
    /// sha256 of the body.
    pub sha256: String,
    /// Who wrote it.
    pub by: String,
    /// When (ms).
    pub ms: i64,
    /// The approving message (short id), if any.
    pub approved_by: Option<String>,
    /// That message's subject, when it is here.
    pub approved_topic: Option<String>,
}

/// A message in the recent traffic.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct TrafficItem {
    /// Short id.
    pub id: String,
    /// Author.
    pub from: String,
    /// Recipients.
    pub to: Vec<String>,
    /// Subject.
    pub topic: String,
    /// Kind, if any.
    pub kind: Option<String>,
    /// A debt?
    pub debt: bool,
    /// When (ms).
    pub ms: i64,
    /// The start of its text.
    pub excerpt: String,
}

/// One device of one role.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DeviceItem {
    /// The role.
    pub role: String,
    /// The device id.
    pub device: String,
    /// Records of its feed here.
    pub records: u64,
    /// When it was last heard from (ms).
    pub last_heard_ms: Option<i64>,
    /// True for the machine that reads the board.
    pub this_device: bool,
    /// Its sync health, as far as this machine knows it.
    pub sync: SyncHealth,
}

/// What this machine knows of a device's sync.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SyncHealth {
    /// Everything its signed head announces is here.
    Current,
    /// Its signed head announces records that have not arrived.
    Behind {
        /// How many.
        missing: u64,
    },
    /// Its feed is frozen (a fork, an unknown op).
    Frozen {
        /// Why.
        reason: String,
    },
    /// This machine, whose last sync succeeded.
    Synced {
        /// When it ended (ms).
        at_ms: i64,
    },
    /// This machine, whose last sync failed.
    Failed {
        /// When it ended (ms).
        at_ms: i64,
        /// Why (bounded).
        error: String,
    },
    /// This machine, with no remote: its channel is not synced.
    NotSynced,
    /// This machine, with a remote and no sync recorded yet.
    Unknown,
}

/// An alarm.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct AlarmItem {
    /// Its kind (`fork`, `wrong_type`, `held`, `conflict` …).
    pub kind: String,
    /// The feed or role it concerns.
    pub feed: Option<String>,
    /// `path:offset`, or the record that lost.
    pub r#where: String,
    /// What is wrong.
    pub reason: String,
}

/// Open debts per role at the end of each of the last days.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Chart {
    /// The start of each day (UTC, ms), oldest first.
    pub days: Vec<i64>,
    /// Per role, the open debts it owed at the end of each day (today: now).
    pub series: Vec<(String, Vec<u32>)>,
}

/// Catches the index up with the folder, then reads the board.
pub fn board(s: &mut Session, now_ms: i64) -> AppResult<Board> {
    s.catch_up()?;
    view(s, now_ms)
}

/// Reads the board from the index as it stands.
pub fn view(s: &Session, now_ms: i64) -> AppResult<Board> {
    let ix = s.index();
    let roster: Vec<String> = s.roster().iter().map(ToString::to_string).collect();

    let mut roles = Vec::new();
    for role in &roster {
        // Counted row by row: a role may owe tens of thousands.
        let mut owed = 0;
        ix.each_open_debt_for(role, |_| owed += 1)?;
        roles.push(RoleCard {
            role: role.clone(),
            unread: ix.unread_mail(role)?.unread,
            owed,
            to_confirm: ix.resolutions_for(role)?.len(),
            votes_awaited: ix.awaiting_votes(role)?.len(),
        });
    }

    let debts = |state| -> AppResult<Section<DebtItem>> {
        let lines = ix.debt_lines(state, DEBT_LIMIT)?;
        Ok(Section::cut(
            lines.into_iter().map(|d| debt_item(d, state)).collect(),
            DEBT_LIMIT,
        ))
    };
    let open_debts = debts(DebtState::Open)?;
    let unconfirmed = debts(DebtState::Unconfirmed)?;

    let proposals = ix
        .open_proposals(PROPOSAL_LIMIT)?
        .into_iter()
        .map(|p| ProposalItem {
            state: round_state(&p),
            id: short(&p.id),
            topic: p.topic,
            from: p.from,
            sent_ms: p.ms,
            pin_key: p.pin_key,
            votes: p
                .votes
                .into_iter()
                .map(|v| VoteItem {
                    role: v.role,
                    decision: v.decision,
                    stale: v.stale,
                })
                .collect(),
            awaiting: p.awaiting,
        })
        .collect();

    let mut pins = Vec::new();
    for p in ix
        .pin_versions(PinSelect::Current)?
        .into_iter()
        .take(PIN_LIMIT + 1)
    {
        let approved_topic = match &p.approved_by {
            Some(id) if pins.len() < PIN_LIMIT => ix.message_row(id)?.map(|m| m.topic),
            _ => None,
        };
        pins.push(PinItem {
            key: p.key,
            title: p.title,
            version: p.version,
            sha256: p.sha256,
            by: p.role,
            ms: p.ms,
            approved_by: p.approved_by.as_deref().map(short),
            approved_topic,
        });
    }

    let traffic = ix
        .recent_traffic(TRAFFIC_LIMIT, EXCERPT_CHARS)?
        .into_iter()
        .map(|t| TrafficItem {
            id: short(&t.id),
            from: t.from,
            to: t.to,
            topic: t.topic,
            kind: t.kind,
            debt: t.action_required,
            ms: t.ms,
            excerpt: t.excerpt,
        })
        .collect();

    let own_sync = own_sync_health(s);
    let devices = presence::devices(s)?
        .into_iter()
        .map(|d| DeviceItem {
            role: d.feed.role().to_owned(),
            device: d.feed.device().to_owned(),
            records: d.records,
            last_heard_ms: d.last_heard_ms,
            this_device: d.this_device,
            sync: match (d.frozen, d.missing) {
                (Some(reason), _) => SyncHealth::Frozen { reason },
                (None, n) if n > 0 => SyncHealth::Behind { missing: n },
                (None, _) if d.this_device => own_sync.clone(),
                (None, _) => SyncHealth::Current,
            },
        })
        .collect();

    let mut alarms: Vec<AlarmItem> = ix
        .alarm_problems(ALARM_LIMIT)?
        .into_iter()
        .map(|p| AlarmItem {
            kind: p.kind.to_string(),
            feed: p.feed,
            r#where: format!("{}:{}", p.path, p.offset),
            reason: p.reason,
        })
        .collect();
    for role in &roster {
        for c in ix.standing_conflicts(role)? {
            alarms.push(AlarmItem {
                kind: "conflict".into(),
                feed: Some(role.clone()),
                r#where: short(&c.record),
                reason: format!("{} lost: {}", c.op, c.reason),
            });
        }
    }

    Ok(Board {
        channel: s.channel().dir().genesis().name.clone(),
        generated_ms: now_ms,
        remote: super::sync::remote(s.channel()).map(|r| r.to_string()),
        chart: chart(s, &roster, now_ms)?,
        attention: attention::read(s, now_ms)?,
        activity: timeline::activity_page(s, None)?,
        roles,
        open_debts,
        unconfirmed,
        proposals: Section::cut(proposals, PROPOSAL_LIMIT),
        pins: Section::cut(pins, PIN_LIMIT),
        traffic,
        devices,
        alarms: Section::cut(alarms, ALARM_LIMIT),
    })
}

/// Where a debt stands and whose move it is. An open debt is its
/// addressees' until a work status moves the ball (protocol §5.3): a task
/// taken, under way or blocked stays with the role that moved it;
/// `needs_you` and `done_local` pass it to every other party. A resolution
/// waits on every party but the resolver.
fn debt_item(d: DebtLine, state: DebtState) -> DebtItem {
    let mut parties: Vec<String> = std::iter::once(d.from.clone())
        .chain(d.to.iter().cloned())
        .collect();
    parties.sort();
    parties.dedup();
    let others = |of: &str| -> Vec<String> {
        parties
            .iter()
            .filter(|p| p.as_str() != of)
            .cloned()
            .collect()
    };
    let (label, court, since) = match state {
        DebtState::Unconfirmed => {
            let by = d.resolved_by.clone().unwrap_or_default();
            (
                "resolved".to_owned(),
                others(&by),
                d.resolved_ms.unwrap_or(d.last_move_ms),
            )
        }
        DebtState::Open => match (d.work_status.as_deref(), d.ws_by.as_deref()) {
            (Some(ws @ ("needs_you" | "done_local")), Some(by)) => {
                (ws.to_owned(), others(by), d.last_move_ms)
            }
            (Some(ws @ ("in_progress" | "blocked")), Some(by)) => {
                (ws.to_owned(), vec![by.to_owned()], d.last_move_ms)
            }
            // Done on both sides and still open: the addressees resolve it.
            (Some(ws @ "done"), _) => (ws.to_owned(), d.to.clone(), d.last_move_ms),
            _ if d.taken => ("taken".to_owned(), d.to.clone(), d.last_move_ms),
            _ => ("open".to_owned(), d.to.clone(), d.ms),
        },
    };
    DebtItem {
        id: short(&d.id),
        blocked_by: (label == "blocked")
            .then(|| d.blocked_by.as_deref().map(short))
            .flatten(),
        topic: d.topic,
        from: d.from,
        to: d.to,
        state: label,
        court,
        since_ms: since,
        sent_ms: d.ms,
        resolved_by: d.resolved_by,
    }
}

/// Open debts per role at the end of each of the last [`CHART_DAYS`] days,
/// from the spans of the debts open at some time in them.
fn chart(s: &Session, roster: &[String], now_ms: i64) -> AppResult<Chart> {
    let today = now_ms.div_euclid(DAY_MS) * DAY_MS;
    let days: Vec<i64> = (0..CHART_DAYS as i64)
        .rev()
        .map(|back| today - back * DAY_MS)
        .collect();
    let first = days[0];
    let spans = s.index().debt_spans(first, SPAN_LIMIT)?;
    let mut series: BTreeMap<&str, Vec<u32>> = roster
        .iter()
        .map(|r| (r.as_str(), vec![0; CHART_DAYS]))
        .collect();
    for span in &spans {
        for (i, day) in days.iter().enumerate() {
            let at = (day + DAY_MS - 1).min(now_ms);
            let open = span.opened_ms <= at && span.closed_ms.is_none_or(|c| c > at);
            if !open {
                continue;
            }
            for role in &span.to {
                if let Some(counts) = series.get_mut(role.as_str()) {
                    counts[i] += 1;
                }
            }
        }
    }
    Ok(Chart {
        days,
        series: roster
            .iter()
            .map(|r| (r.clone(), series.remove(r.as_str()).unwrap_or_default()))
            .collect(),
    })
}

// ---------------------------------------------------------------------------------------
// Access: view keys and the links that carry them.

/// How long a view key issued for a board link lasts.
pub const VIEW_KEY_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A link to a channel's board and the view key behind it, as issued.
#[derive(Clone, Debug)]
pub struct IssuedLink {
    /// `/board/<channel>?n=<nonce>`: opens the board once, within
    /// `link_expires_at`, and leaves a cookie for the rest. Relative: the
    /// server it is opened on goes in front.
    pub path: String,
    /// The view key's public id.
    pub key_id: String,
    /// The view key itself: it opens this channel's board (and nothing
    /// else) as `Authorization: Bearer <key>`.
    pub view_key: String,
    /// When the link's one-time nonce stops working (ms).
    pub link_expires_ms: i64,
    /// When the view key stops working (ms).
    pub key_expires_ms: i64,
}

/// Issues a view key labelled `label` for `channel`'s board (by
/// `issued_by`: a role, `admin` or `cli`) and a one-time link to it, both
/// or neither, through no role token ([`issue_link_as`]).
pub fn issue_link(
    access: &Access,
    channel: &ChannelRef,
    label: &str,
    issued_by: &str,
    now_ms: i64,
) -> AppResult<IssuedLink> {
    issue_link_as(access, channel, label, (issued_by, None), now_ms)
}

/// [`issue_link`], by `issued_by` through the role token whose public id is
/// `issued_token`, if one asked: revoking that token ends the key. The one
/// function that makes board links: `countersign board` and the
/// `board_link` tool both come here.
pub fn issue_link_as(
    access: &Access,
    channel: &ChannelRef,
    label: &str,
    issuer: (&str, Option<&str>),
    now_ms: i64,
) -> AppResult<IssuedLink> {
    let (view_key, key, nonce) =
        access.create_board_link(channel, label, issuer, VIEW_KEY_TTL, now_ms)?;
    let nonce_ttl = i64::try_from(NONCE_TTL.as_millis()).unwrap_or(i64::MAX);
    Ok(IssuedLink {
        path: format!("/board/{}?n={nonce}", channel.name),
        key_id: key.id,
        view_key,
        link_expires_ms: now_ms.saturating_add(nonce_ttl),
        key_expires_ms: key.expires_ms,
    })
}

/// This machine's own sync health: how its last sync here ended, which no
/// record in the folder can tell.
fn own_sync_health(s: &Session) -> SyncHealth {
    let channel = s.channel();
    match SyncOutcome::load(channel.state_dir()) {
        Some(SyncOutcome {
            at_ms, error: None, ..
        }) => SyncHealth::Synced { at_ms },
        Some(SyncOutcome {
            at_ms,
            error: Some(error),
            ..
        }) => SyncHealth::Failed { at_ms, error },
        // A git clone with no remote chosen yet adopts its origin at its
        // first sync; until then it reads as not synced.
        None if super::sync::remote(channel).is_none() => SyncHealth::NotSynced,
        None => SyncHealth::Unknown,
    }
}
