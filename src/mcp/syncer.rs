//! Background sync of a long-running process (`countersign mcp`, and
//! `countersign serve` for each hosted channel), on by default: about a
//! second after this device's feeds change (its own writes, from this server
//! or another process on the machine), and every period while idle (at most
//! `store::KEEP_ALIVE`). Each round first writes this device's
//! heartbeat when one is due (`store::channel::heartbeat`), so the other machines
//! hear from it within a period even while it writes nothing, with a remote
//! or without one (a folder shared by other means).
//!
//! A channel with no remote (none chosen, and no git clone's origin) is left
//! alone, silently: it is looked for again every period. Several processes
//! on one machine do not each ask the remote: a sync on the machine that
//! succeeded less than a period ago, with nothing of this device's written
//! since, serves them all (its outcome is kept in the channel's state
//! folder, `store::home::sync_outcome`), and a busy sync lock means another one is
//! doing the work now. A failed sync is logged to stderr and kept for
//! channel_status; the next try waits longer after each failure in a row
//! (`sync::backoff::after_failures`), own writes included. It never stops
//! the server. What a pull brings lands in `feeds/`, where the folder
//! watcher sees it and wakes waiting calls like any other change.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep, sleep_until};

use crate::app::sync::{
    WhenBusy, covered_for, has_remote, own_fingerprint, published_already, sync_now, sync_within,
};
use crate::store::KEEP_ALIVE;
use crate::store::{Channel, ChannelDir, Home};
use crate::sync::SyncReport;
use crate::sync::backoff::after_failures;

/// How long after a change of this device's feeds the sync starts, so that a
/// burst of writes travels in one sync.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// How soon to look again when another process was syncing the channel: its
/// sync may have started before this device's last write.
const AFTER_BUSY: Duration = Duration::from_secs(2);

/// What one round came to.
enum Round {
    /// The channel has no remote on this device.
    NoRemote,
    /// Another process on the machine is syncing it, or has just synced
    /// what this round would have.
    Busy,
    /// Synced.
    Synced(SyncReport),
}

/// Runs forever (until the runtime stops): syncs the channel every `every`
/// and soon after own writes. `changes` is the folder watcher's generation
/// (`None` when the folder cannot be watched: the interval alone then).
pub async fn run(
    dir: ChannelDir,
    home: Home,
    every: Duration,
    mut changes: Option<watch::Receiver<u64>>,
) {
    let device = match home.device() {
        Ok(d) => d.id,
        Err(e) => {
            tracing::warn!("background sync disabled: {e}");
            return;
        }
    };
    let state_dir = home.state_dir(dir.id());
    // Idle rounds come often enough for the heartbeat, whatever the period.
    let idle = every.min(KEEP_ALIVE);
    let mut next = Instant::now();
    let mut failures = 0u32;
    // Until when a channel found with no remote is not looked at again for
    // a write (a remote chosen meanwhile is found at the next idle round).
    let mut no_remote_until: Option<Instant> = None;
    loop {
        let own_write = tokio::select! {
            () = sleep_until(next) => false,
            changed = wait_change(&mut changes) => changed,
        };
        if own_write {
            sleep(DEBOUNCE).await;
            if let Some(rx) = changes.as_mut() {
                rx.borrow_and_update();
            }
            if failures > 0 && Instant::now() < next {
                continue; // backing off: the write travels with the retry
            }
            if no_remote_until.is_some_and(|t| Instant::now() < t) {
                continue;
            }
        }
        // The heartbeat first, so that it travels with this round's sync.
        let (d, h) = (dir.clone(), home.clone());
        if let Err(e) = tokio::task::spawn_blocking(move || beat(d, h, idle)).await {
            tracing::warn!("heartbeat task failed: {e}");
        }
        let (d, s, dev) = (dir.clone(), state_dir.clone(), device.clone());
        let (published, covered) = tokio::task::spawn_blocking(move || {
            let own = own_fingerprint(&d, &dev);
            (published_already(&s, own), covered_for(&s, own, every))
        })
        .await
        .unwrap_or((false, None));
        if own_write && published {
            continue; // the change was not ours (a pull, another writer)
        }
        if !own_write && let Some(left) = covered {
            // Another process here synced a moment ago: that serves this one.
            failures = 0;
            next = Instant::now() + left;
            continue;
        }
        let (d, h, s) = (dir.clone(), home.clone(), state_dir.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            if !has_remote(&d, &s) {
                return Ok(Round::NoRemote);
            }
            let mut channel = Channel::open(d, h)?;
            Ok(match sync_now(&mut channel, WhenBusy::Background(every))? {
                Some(report) => Round::Synced(report),
                None => Round::Busy,
            })
        })
        .await;
        no_remote_until = None;
        next = Instant::now()
            + match outcome {
                Ok(Ok(Round::NoRemote)) => {
                    no_remote_until = Some(Instant::now() + idle);
                    idle
                }
                Ok(Ok(Round::Busy)) => AFTER_BUSY.min(every),
                Ok(Ok(Round::Synced(report))) => {
                    if report.adopted_origin {
                        tracing::info!(
                            "background sync: no remote was chosen on this device; using the git clone's origin and keeping it"
                        );
                    }
                    log_report(&report);
                    failures = 0;
                    idle
                }
                Ok(Err::<_, crate::app::AppError>(e)) => {
                    failures = failures.saturating_add(1);
                    let wait = after_failures(every, failures);
                    tracing::warn!(
                        "background sync failed ({failures} in a row; retried in {wait:?}): {e}"
                    );
                    wait
                }
                Err(e) => {
                    tracing::warn!("background sync task failed: {e}");
                    idle
                }
            };
    }
}

/// Rewrites this device's heads as heartbeats when one is due
/// (`store::channel::heartbeat`), after folding in what the folder holds now (a
/// peer's newer record makes one due). Trouble is logged, never raised: a
/// missed beat only makes the other machines wait a little longer.
fn beat(dir: ChannelDir, home: Home, next_in: Duration) {
    let beats = Channel::open(dir, home)
        .map_err(crate::app::AppError::from)
        .and_then(|mut channel| {
            crate::app::admission::catch_up(&mut channel)?;
            Ok(channel.beat(next_in)?)
        });
    match beats {
        Ok(0) => {}
        Ok(n) => tracing::debug!("heartbeat: {n} head(s) rewritten"),
        Err(e) => tracing::warn!("heartbeat not written: {e}"),
    }
}

/// How long the last sync of a server whose client went away may take: a
/// session that wrote and quit at once still publishes, yet a remote that
/// does not answer never keeps the process alive for long.
const LAST_SYNC_BUDGET: Duration = Duration::from_secs(10);

/// When the client has gone: publishes what this device wrote and no sync
/// has carried yet (a session that sends and quits within the debounce), so
/// the other machines see it without waiting for the next session here. Does
/// nothing when there is no remote or nothing unpublished.
pub async fn flush(dir: ChannelDir, home: Home) {
    let done = tokio::task::spawn_blocking(move || -> Result<bool, crate::app::AppError> {
        let device = home.device()?.id;
        let state_dir = home.state_dir(dir.id());
        if !has_remote(&dir, &state_dir)
            || published_already(&state_dir, own_fingerprint(&dir, &device))
        {
            return Ok(false);
        }
        let mut channel = Channel::open(dir, home)?;
        sync_within(&mut channel, WhenBusy::Wait, LAST_SYNC_BUDGET)?;
        Ok(true)
    });
    match tokio::time::timeout(LAST_SYNC_BUDGET * 2, done).await {
        Ok(Ok(Ok(true))) => tracing::info!("last sync before exit: done"),
        Ok(Ok(Ok(false))) => {}
        Ok(Ok(Err(e))) => tracing::warn!("last sync before exit failed: {e}"),
        Ok(Err(e)) => tracing::warn!("last sync before exit failed: {e}"),
        Err(_) => tracing::warn!("last sync before exit: gave up after {LAST_SYNC_BUDGET:?}"),
    }
}

/// Says what a sync did, with its tries (more than one: other machines won
/// races to the remote meanwhile), at info level (`COUNTERSIGN_LOG=info`).
fn log_report(r: &SyncReport) {
    let what = format!(
        "committed {}, received {}, published {}; {} {} in {:.1} s",
        r.committed,
        r.pulled,
        r.pushed,
        r.attempts,
        if r.attempts == 1 { "try" } else { "tries" },
        r.spent.as_secs_f64()
    );
    tracing::info!("background sync: {what}");
}

/// Waits for the next change of the folder; never returns without a watcher.
async fn wait_change(changes: &mut Option<watch::Receiver<u64>>) -> bool {
    match changes {
        Some(rx) => {
            if rx.changed().await.is_err() {
                *changes = None; // the watcher stopped: the interval alone from now on
            }
            true
        }
        None => std::future::pending().await,
    }
}
