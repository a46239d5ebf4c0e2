//! Syncing the channel with its remote, and choosing that remote.
//!
//! One sync takes this machine's sync lock of the channel, exchanges the
//! folder with the remote (`crate::sync`), and folds what arrived into the
//! index. A failed sync changes nothing locally: the channel keeps working
//! and the next sync retries.

use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult};
use crate::core::peer_text::one_line;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::home::prefs::{Prefs, Remote};
use crate::store::home::sync_outcome::SyncOutcome;
use crate::store::{Channel, ChannelDir};
use crate::sync::{self, SyncReport};

/// What to do when another process on this machine is syncing the channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenBusy {
    /// Wait for it, then sync (a person asked for a sync).
    Wait,
    /// Skip this round (a background task with this period: the other sync
    /// does the work); skip it too when a sync here less than a period ago
    /// already published this device's feeds as they are now (it ended
    /// while this round waited its turn).
    Background(Duration),
}

/// The remote chosen for this channel on this device, if any.
pub fn remote(channel: &Channel) -> Option<Remote> {
    Prefs::load(channel.state_dir()).remote
}

/// Chooses `remote` for this channel on this device and prepares the folder
/// for it (git: makes it its own repository with `origin`). Returns a note
/// for the person when there is something left to do.
pub fn set_remote(channel: &Channel, remote: Remote) -> AppResult<Option<String>> {
    if let Err(e) = remote.check() {
        return Err(AppError::value(format!(
            "the remote '{}' is refused: {e}. Give a git URL or an rclone REMOTE:PATH",
            remote.target().escape_debug()
        )));
    }
    let note = {
        let _lock = sync::lock(channel.state_dir())?;
        sync::attach(channel.dir(), &channel.device().id, &remote)?
    };
    keep_remote(channel, remote)?;
    Ok(note)
}

/// Records `remote` as this channel's remote on this device.
fn keep_remote(channel: &Channel, remote: Remote) -> AppResult<()> {
    let mut prefs = Prefs::load(channel.state_dir());
    prefs.remote = Some(remote);
    prefs.save(channel.state_dir())?;
    Ok(())
}

/// Syncs once and catches the index up with what arrived. `Ok(None)` when
/// `busy` is [`WhenBusy::Background`] and another process holds the sync
/// lock or has just done the work.
/// Races lost to other machines are tried again for up to
/// [`DEFAULT_BUDGET`](sync::backoff::DEFAULT_BUDGET).
pub fn sync_now(channel: &mut Channel, busy: WhenBusy) -> AppResult<Option<SyncReport>> {
    sync_within(channel, busy, sync::backoff::DEFAULT_BUDGET)
}

/// [`sync_now`], trying again after lost races while less than `budget` has
/// passed (zero: one try).
pub fn sync_within(
    channel: &mut Channel,
    busy: WhenBusy,
    budget: Duration,
) -> AppResult<Option<SyncReport>> {
    let (remote, adopted_origin) = match remote(channel) {
        Some(r) => (r, false),
        None => (adopt_origin(channel)?, true),
    };
    let lock = match busy {
        WhenBusy::Wait => sync::lock(channel.state_dir())?,
        WhenBusy::Background(_) => match sync::try_lock(channel.state_dir())? {
            Some(l) => l,
            None => return Ok(None),
        },
    };
    if let WhenBusy::Background(period) = busy {
        let own = own_fingerprint(channel.dir(), &channel.device().id);
        if covered_for(channel.state_dir(), own, period).is_some() {
            return Ok(None);
        }
    }
    // A stale copy of this device's own feeds (a restored backup, a file
    // that lost its end) is put right from the journals before it travels.
    // A feed someone else wrote is reported by reading, so it does not stop
    // the exchange.
    if let Err(e) = channel.reconcile_own_feeds() {
        tracing::warn!("before sync: {e}");
    }
    // On an rclone remote, sealed segments travel gzip-compressed (git
    // compresses and deltas its own objects, so there they stay plain).
    if matches!(remote, Remote::Rclone(_))
        && let Err(e) = channel.gzip_own_segments()
    {
        tracing::warn!("before sync: {e}");
    }
    // What this device has written up to now: once the exchange succeeds,
    // a sync by any process here has nothing more of it to publish.
    let published = own_fingerprint(channel.dir(), &channel.device().id);
    let result = sync::run(
        channel.dir(),
        channel.state_dir(),
        &channel.device().id,
        &remote,
        budget,
    );
    record_outcome(channel, &result, published);
    // Whatever happened, fold what is in the folder now: a merge that did
    // land before a failed push still brought records.
    let folded = super::admission::catch_up(channel);
    // On the owner's machine that fold may have admitted a claim of an
    // invitation: it travels now, so the new machine need not wait for the
    // next round.
    if result.is_ok()
        && folded.as_ref().is_ok_and(|r| r.admitted > 0)
        && let Err(e) = sync::run(
            channel.dir(),
            channel.state_dir(),
            &channel.device().id,
            &remote,
            budget,
        )
    {
        tracing::warn!("publishing an admit: {e}");
    }
    drop(lock);
    folded?;
    Ok(Some(SyncReport {
        adopted_origin,
        ..result?
    }))
}

/// Keeps how this sync ended for this machine's own sync health (the
/// board). Failing to keep it never fails the sync.
fn record_outcome(
    channel: &Channel,
    result: &Result<SyncReport, sync::SyncError>,
    published: Option<u64>,
) {
    let outcome = match result {
        Ok(r) => SyncOutcome::new(now_ms(), None, r.attempts).with_published(published),
        Err(e) => {
            let tries = match e {
                sync::SyncError::GaveUp { tries, .. } => *tries,
                _ => 1,
            };
            SyncOutcome::new(now_ms(), Some(&e.to_string()), tries)
        }
    };
    if let Err(e) = outcome.save(channel.state_dir()) {
        tracing::warn!("keeping the sync's outcome: {e}");
    }
}

/// The remote of a channel that has none chosen on this device: a git clone
/// of the channel already knows its remote, so its `origin` is taken and
/// saved (the next sync finds it chosen, and nothing is said again).
fn adopt_origin(channel: &Channel) -> AppResult<Remote> {
    let Some(remote) = sync::clone_origin(channel.dir())? else {
        return Err(AppError::value(
            "this channel has no sync remote on this device: choose one with `countersign \
             remote set git URL` or `countersign remote set rclone REMOTE:PATH`",
        ));
    };
    keep_remote(channel, remote.clone())?;
    Ok(remote)
}

/// Whether the channel in `dir`, whose state folder on this device is
/// `state_dir`, has a remote: one chosen, or the `origin` of a git clone of
/// the channel (which the next sync adopts). A folder git cannot read (or
/// no git at all) has none.
pub fn has_remote(dir: &ChannelDir, state_dir: &Path) -> bool {
    Prefs::load(state_dir).remote.is_some() || matches!(sync::clone_origin(dir), Ok(Some(_)))
}

/// Whether the last sync on this machine succeeded having found this
/// device's feeds as they are now (`own`, their fingerprint): there is then
/// nothing of this device's left to publish.
pub fn published_already(state_dir: &Path, own: Option<u64>) -> bool {
    SyncOutcome::load(state_dir).is_some_and(|last| {
        last.error.is_none() && last.published.is_some() && last.published == own
    })
}

/// The fingerprint of this device's feed files now (`None` when they
/// cannot be listed).
pub fn own_fingerprint(dir: &ChannelDir, device: &str) -> Option<u64> {
    sync::own_feeds(dir, device)
        .ok()
        .map(|f| sync::own_fingerprint(dir.root(), &f))
}

/// How much of `period` is left since the last sync of the channel on this
/// machine (made by any process: a server, `countersign sync`), if that sync
/// succeeded less than `period` ago and this device has written nothing
/// since (`own` is the fingerprint of its feeds now). Until then another
/// sync would only ask the remote again what it was just asked: one sync
/// serves every process on the machine for a period.
pub fn covered_for(state_dir: &Path, own: Option<u64>, period: Duration) -> Option<Duration> {
    if !published_already(state_dir, own) {
        return None;
    }
    let last = SyncOutcome::load(state_dir)?;
    let age_ms = u64::try_from(now_ms().saturating_sub(last.at_ms)).ok()?;
    period.checked_sub(Duration::from_millis(age_ms))
}

/// The last sync of the channel on this machine, when it failed: what
/// channel_status and `countersign status` show until a sync succeeds.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct SyncFailure {
    /// When it failed (this machine's clock).
    pub at: String,
    /// Tries it made.
    pub tries: u32,
    /// What failed, with git's or rclone's own words (on one line, control
    /// characters escaped).
    pub error: String,
    /// What to do about it.
    pub fix: &'static str,
}

/// What to do about a failed sync.
const FAILURE_FIX: &str = "nothing written here is lost, and sync is retried in the background; \
    fix the cause (network, credentials, the remote: `countersign remote show`), then run \
    `countersign sync` to see it succeed";

/// How the last sync on this machine failed, if it did.
pub fn last_failure(channel: &Channel) -> Option<SyncFailure> {
    let last = SyncOutcome::load(channel.state_dir())?;
    let error = last.error?;
    Some(SyncFailure {
        at: format_rfc3339(last.at_ms),
        tries: last.attempts,
        error: one_line(&error),
        fix: FAILURE_FIX,
    })
}
