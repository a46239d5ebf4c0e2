//! Presence: which devices write for each role, and when each was last heard.
//!
//! A feed's `head.json` is its heartbeat: rewritten with every record its
//! device writes, and while it writes nothing by its long-running processes
//! with the time they last looked (`as_of`, `store::channel::heartbeat`), signed with
//! the feed's key. A device was last heard from at the later of its newest
//! record here and its verified head; a head that
//! fails its signature (a hand edit, a lie about its seq) is ignored, and a
//! head is never trusted over the records (it never applies anything).
//!
//! Owns the presence fields of `list_roles` and the `tentative_since` mark of
//! `channel_status`. It reads the index and the heads; it writes nothing.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::AppResult;
use super::session::Session;
use crate::core::ids::FeedId;
use crate::core::record::parse_pubkey;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::index::AdmittedFeed;

/// One device's feed of one role, as seen from here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// The feed (`<role>/<device>`).
    pub feed: FeedId,
    /// Records of the feed accepted here.
    pub records: u64,
    /// When it was last heard from (ms), from its newest record or its head.
    pub last_heard_ms: Option<i64>,
    /// The time of its newest record here (ms).
    pub last_record_ms: Option<i64>,
    /// Records its verified head announces that have not arrived here yet.
    pub missing: u64,
    /// Why the feed is frozen, if it is.
    pub frozen: Option<String>,
    /// True for this device's own feed.
    pub this_device: bool,
}

/// Every admitted role feed known to the index, with its presence.
pub fn devices(s: &Session) -> AppResult<Vec<Device>> {
    let ix = s.index();

    let me = s.channel().device().id.clone();
    let now = now_ms();
    let mut out = Vec::new();
    for AdmittedFeed {
        feed,
        pubkey,
        head_seq: seq,
        head_ms: ms,
        frozen,
    } in ix.admitted_feeds()?
    {
        let Ok(feed) = FeedId::try_from(feed) else {
            continue;
        };
        if feed.is_owner() {
            continue;
        }
        let records = seq.max(0) as u64;
        let head = parse_pubkey(&pubkey).and_then(|key| s.channel().feed_head(&feed, &key));
        // A heartbeat dated ahead of this machine's clock says no more than
        // "heard now": settling past our own clock would wait for nothing.
        let beat = head.map(|h| h.heard_ms().min(now.max(h.hlc.ms())));
        let last_heard_ms = match (ms, beat) {
            (Some(ms), Some(b)) => Some(ms.max(b)),
            (ms, b) => ms.or(b),
        };
        out.push(Device {
            this_device: feed.device() == me,
            missing: head.map_or(0, |h| h.seq.saturating_sub(records)),
            feed,
            records,
            last_heard_ms,
            last_record_ms: ms,
            frozen,
        });
    }
    Ok(out)
}

/// list_roles' `devices`: for every role of the roster, its devices.
pub fn devices_by_role(s: &Session) -> AppResult<BTreeMap<String, Vec<DeviceView>>> {
    let mut by_role: BTreeMap<String, Vec<DeviceView>> = s
        .roster()
        .into_iter()
        .map(|r| (r.to_string(), Vec::new()))
        .collect();
    for d in devices(s)? {
        let v = DeviceView {
            device: d.feed.device().to_owned(),
            feed: d.feed.to_string(),
            records: d.records,
            last_heard_at: d.last_heard_ms.map(format_rfc3339),
            this_device: d.this_device,
            missing: (d.missing > 0).then_some(d.missing),
            frozen: d.frozen,
        };
        by_role.entry(d.feed.role().to_owned()).or_default().push(v);
    }
    Ok(by_role)
}

/// One device of a role, as list_roles shows it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct DeviceView {
    /// Device id.
    pub device: String,
    /// Its feed for the role.
    pub feed: String,
    /// Records that arrived here.
    pub records: u64,
    /// The later of its newest record here and its verified head.
    pub last_heard_at: Option<String>,
    /// True for this machine.
    pub this_device: bool,
    /// Records its head announces that have not arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<u64>,
    /// Why the feed is frozen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frozen: Option<String>,
}

/// The time from which the channel's order is still tentative: the earliest
/// last-heard time among other devices' live feeds (for a device whose
/// heartbeat announces records not here yet, the time of its newest record
/// here), when records sorting after it are already here. Such a device may have written records we have
/// not received yet; they will sort from its last-heard time on, before some
/// of what is shown. `None` when every other device has been heard from since
/// the newest record (or there is no other device).
pub fn tentative_since(s: &Session) -> AppResult<Option<i64>> {
    // A device whose heartbeat announces records that have not arrived is
    // settled only up to its newest record here: the missing ones come after.
    let earliest = devices(s)?
        .into_iter()
        .filter(|d| !d.this_device && d.frozen.is_none())
        .filter_map(|d| {
            if d.missing > 0 {
                d.last_record_ms.or(Some(0))
            } else {
                d.last_heard_ms
            }
        })
        .min();
    let Some(earliest) = earliest else {
        return Ok(None);
    };
    let newest = s.index().newest_record_ms()?;
    Ok(newest.filter(|n| *n > earliest).map(|_| earliest))
}
