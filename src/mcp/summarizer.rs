//! Background compaction with a model, in a long-running process: `serve`
//! for each hosted channel, or `mcp` when no `serve` runs with this home.
//!
//! Every [`TICK`] it takes the channel's summarizer lock (one worker per
//! channel per home at a time) and runs `app::compaction_api::background_tick`:
//! say whether the API works here, and, when this device is elected and a
//! round is due, send the jobs. A running `serve` holds the home's serve
//! lock for its whole life (`cli::serve`); an `mcp` server that finds it
//! held leaves the work to it. Nothing here ever stops the server: a
//! problem is logged and the next tick tries again.

use std::time::Duration;

use crate::app::Session;
use crate::app::compaction_api::{Round, background_tick, may_work};
use crate::core::ids::Role;
use crate::store::FileLock;
use crate::store::{Channel, ChannelDir, Home};

/// How often a tick runs.
pub const TICK: Duration = Duration::from_secs(30);
/// The first tick, soon after the start.
const FIRST: Duration = Duration::from_secs(2);
/// The lock file in the channel's state folder.
const LOCK_FILE: &str = "summarizer.lock";

/// Runs until the runtime stops. `role`: the role the summaries are written
/// as (else the first role this device has a key of); `serve`: true in
/// `countersign serve`, which never defers to another process.
pub async fn run(dir: ChannelDir, home: Home, role: Option<Role>, serve: bool) {
    tokio::time::sleep(FIRST).await;
    loop {
        let (d, h, r) = (dir.clone(), home.clone(), role.clone());
        let done = tokio::task::spawn_blocking(move || tick(&d, &h, r, serve)).await;
        match done {
            Ok(Ok(Some(round))) => tracing::info!("background compaction: {round:?}"),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::warn!("background compaction: {e}"),
            Err(e) => tracing::warn!("background compaction stopped a tick: {e}"),
        }
        tokio::time::sleep(TICK).await;
    }
}

fn tick(
    dir: &ChannelDir,
    home: &Home,
    role: Option<Role>,
    serve: bool,
) -> anyhow::Result<Option<Round>> {
    if !may_work(home, dir) {
        return Ok(None);
    }
    if !serve && FileLock::try_exclusive(&home.serve_lock())?.is_none() {
        // A serve of this home runs: the work is its.
        return Ok(None);
    }
    let Some(_held) = FileLock::try_exclusive(&home.state_dir(dir.id()).join(LOCK_FILE))? else {
        return Ok(None);
    };
    let channel = Channel::open(dir.clone(), home.clone())?;
    let role = role.or_else(|| Session::keyed_role(&channel));
    let mut s = Session::new(channel, role)?;
    Ok(background_tick(&mut s)?)
}
