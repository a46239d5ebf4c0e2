//! wait_for_mail and wait_for_reply: the checks a waiting call repeats.
//!
//! The waiting itself (deadlines, wake-ups from the folder watcher) belongs to
//! the transport; this module decides, on each look, whether there is
//! something new. A wait wakes on new ids, not on counts: an item that left
//! and came back is new, and a count that nets out still wakes.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult};
use super::rows::MessageView;
use super::session::{Session, find_live};
use super::status::{ACTIONABLE, Mark, summary};
use crate::core::ids::RecordId;

/// The longest a single wait call blocks, below common client timeouts.
pub const WAIT_CAP_S: f64 = 50.0;

/// What wait_for_reply was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ReplyWaitRequest {
    /// Your message.
    pub message_id: String,
    /// Seconds to wait (one call waits at most 50).
    #[serde(default = "wait_cap")]
    pub timeout_s: f64,
    /// Seconds between folder rescans, 0.1 to 60.
    #[serde(default = "one_second")]
    pub poll_interval_s: f64,
    /// Only replies after this message.
    #[serde(default)]
    pub after_id: Option<String>,
    /// Also replies already marked read.
    #[serde(default)]
    pub include_read: bool,
}

/// What wait_for_mail was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct MailWaitRequest {
    /// Seconds to wait (one call waits at most 50).
    #[serde(default = "wait_cap")]
    pub timeout_s: f64,
    /// Seconds between folder rescans, 0.1 to 60.
    #[serde(default = "two_seconds")]
    pub poll_interval_s: f64,
    /// True: what already waited at entry does not wake you; false: it returns at once.
    #[serde(default = "super::request::yes")]
    pub ignore_backlog: bool,
}

fn wait_cap() -> f64 {
    WAIT_CAP_S
}
fn one_second() -> f64 {
    1.0
}
fn two_seconds() -> f64 {
    2.0
}

/// Checks the wait parameters.
pub fn check_wait(timeout_s: f64, poll_interval_s: f64) -> AppResult<()> {
    if !(0.0..=3600.0).contains(&timeout_s) {
        return Err(AppError::value(format!(
            "'timeout_s' must be between 0 and 3600 (got {timeout_s})"
        )));
    }
    if !(0.1..=60.0).contains(&poll_interval_s) {
        return Err(AppError::value(format!(
            "'poll_interval_s' must be between 0.1 and 60 (got {poll_interval_s})"
        )));
    }
    Ok(())
}

/// The ids behind each actionable counter, and the counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MailSnapshot {
    /// Counter → what identifies its contents (the marks of its ids, or of
    /// a tally's marker).
    pub ids: BTreeMap<&'static str, BTreeSet<Mark>>,
    /// Counter → count.
    pub counts: BTreeMap<&'static str, usize>,
}

impl MailSnapshot {
    /// Non-zero counts.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        self.counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (*k, *n))
            .collect()
    }

    /// Counters holding an id not in `known`, with their current counts.
    pub fn news_since(&self, known: &Self) -> BTreeMap<&'static str, usize> {
        self.ids
            .iter()
            .filter(|(k, v)| {
                v.iter()
                    .any(|id| known.ids.get(*k).is_none_or(|kn| !kn.contains(id)))
            })
            .map(|(k, _)| (*k, self.counts.get(k).copied().unwrap_or(0)))
            .collect()
    }

    /// Keeps only the ids still present now (so one that leaves and comes back is new).
    pub fn retain_present(&mut self, now: &Self) {
        for (k, v) in &mut self.ids {
            match now.ids.get(k) {
                Some(cur) => v.retain(|id| cur.contains(id)),
                None => v.clear(),
            }
        }
    }
}

/// Catches up and takes the snapshot of the caller's actionable counters.
pub fn mail_snapshot(s: &mut Session) -> AppResult<MailSnapshot> {
    let me = s.role()?;
    s.catch_up()?;
    let sum = summary(s.index(), &me)?;
    Ok(MailSnapshot {
        ids: ACTIONABLE
            .iter()
            .map(|c| (*c, sum.marks(c).into_iter().collect()))
            .collect(),
        counts: ACTIONABLE.iter().map(|c| (*c, sum.count(c))).collect(),
    })
}

/// What wait_for_reply waits on: the parent, and the local ingest number of
/// `after_id` (replies ingested after it count).
pub fn reply_target(
    s: &mut Session,
    message_id: &str,
    after_id: Option<&str>,
) -> AppResult<(RecordId, Option<i64>)> {
    s.catch_up()?;
    let ix = s.index();
    let parent = find_live(ix, "message_id", message_id)?;
    let after = match after_id {
        Some(raw) => {
            let id = find_live(ix, "after_id", raw)?;
            ix.ingest_number(&id.hex())?
        }
        None => None,
    };
    Ok((parent, after))
}

/// The earliest live reply to `parent` addressed to the caller (unread unless
/// `include_read`; ingested after `after_n` if given), as a message row.
pub fn reply_check(
    s: &mut Session,
    parent: &RecordId,
    after_n: Option<i64>,
    include_read: bool,
) -> AppResult<Option<MessageView>> {
    let me = s.role()?;
    s.catch_up()?;
    let ix = s.index();
    let row = ix.first_reply(&parent.hex(), me.as_str(), after_n, include_read)?;
    Ok(row.map(|r| MessageView::of(r, Some(&me))))
}

/// The answer of a wait that ran out of time.
pub fn timed_out(waited_s: f64, what: &str) -> TimedOut {
    TimedOut {
        timed_out: true,
        waited_s: (waited_s * 10.0).round() / 10.0,
        retry: true,
        note: format!(
            "nothing new {what} yet; call again to keep waiting — nothing is lost between calls"
        ),
        pending_at_entry: None,
    }
}

/// A wait that ended at its deadline.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TimedOut {
    /// Always true.
    pub timed_out: bool,
    /// Seconds waited, to a tenth.
    pub waited_s: f64,
    /// Always true: call again to keep waiting.
    pub retry: bool,
    /// What to do next.
    pub note: String,
    /// wait_for_mail: the actionable counters that were non-zero at entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_at_entry: Option<BTreeMap<&'static str, usize>>,
}

/// What wait_for_reply answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ReplyWait {
    /// The reply, as read_inbox shows it.
    Reply(Box<MessageView>),
    /// Nothing yet.
    TimedOut(TimedOut),
}

/// What wait_for_mail answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MailWait {
    /// Something new arrived.
    News(MailNews),
    /// Nothing new yet.
    TimedOut(TimedOut),
}

/// New items behind the actionable counters.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct MailNews {
    /// The counters with something new: counter → its count now.
    pub pending: BTreeMap<&'static str, usize>,
    /// The actionable counters that were non-zero at entry.
    pub pending_at_entry: BTreeMap<&'static str, usize>,
    /// Always false.
    pub timed_out: bool,
}
