//! Background sync of `countersign mcp --sync-every`: every interval, and
//! about a second after this device's feeds change (its own writes, from this
//! server or another process on the machine).
//!
//! Only one process per machine and channel syncs at a time: a busy sync lock
//! means another one is doing the work, and this round is skipped. A failed
//! sync is logged to stderr and retried on the next round; it never stops the
//! server. What a pull brings lands in `feeds/`, where the folder watcher
//! sees it and wakes waiting calls like any other change.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep, sleep_until};

use crate::app::AppError;
use crate::app::sync::{WhenBusy, sync_now};
use crate::store::{Channel, ChannelDir, Home};
use crate::sync::{SyncReport, own_feeds, own_fingerprint};

/// How long after a change of this device's feeds the sync starts, so that a
/// burst of writes travels in one sync.
const DEBOUNCE: Duration = Duration::from_secs(1);

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
    let mut next = Instant::now();
    let mut synced_state: Option<u64> = None;
    let mut said_no_remote = false;
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
            let now = fingerprint(&dir, &device).await;
            if now.is_some() && now == synced_state {
                continue; // the change was not ours (a pull, another writer)
            }
        }
        let before = fingerprint(&dir, &device).await;
        let (d, h) = (dir.clone(), home.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let mut channel = Channel::open(d, h)?;
            sync_now(&mut channel, WhenBusy::Skip)
        })
        .await;
        match outcome {
            Ok(Ok(Some(report))) => {
                if report.adopted_origin {
                    tracing::info!(
                        "background sync: no remote was chosen on this device; using the git clone's origin and keeping it"
                    );
                }
                log_report(&report);
                synced_state = before;
            }
            Ok(Ok(None)) => {} // another process is syncing this channel
            // No remote chosen yet: said once, and looked for again every round.
            Ok(Err(e @ AppError::Value(_))) => {
                if !said_no_remote {
                    tracing::warn!("background sync waits for a remote: {e}");
                    said_no_remote = true;
                }
            }
            Ok(Err(e)) => tracing::warn!("background sync failed (retried in {every:?}): {e}"),
            Err(e) => tracing::warn!("background sync task failed: {e}"),
        }
        next = Instant::now() + every;
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

async fn fingerprint(dir: &ChannelDir, device: &str) -> Option<u64> {
    let (dir, device) = (dir.clone(), device.to_owned());
    tokio::task::spawn_blocking(move || {
        own_feeds(&dir, &device)
            .ok()
            .map(|f| own_fingerprint(dir.root(), &f))
    })
    .await
    .ok()
    .flatten()
}
