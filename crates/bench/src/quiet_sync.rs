//! The bench's quiet sync: `countersign sync` as a process on the seeded
//! channel when neither side has anything new, through a bare git repository
//! on local disk and through rclone with a local-backend remote.
//!
//! This is what a machine pays on every background round (`mcp
//! --sync-every`) while nobody writes, so it grows with the channel only as
//! much as git's and rclone's own look at the files does. The channel is
//! attached to each remote in turn and synced once untimed (the first push or
//! copy carries the whole history); the timed syncs follow. It changes the
//! seeded folder (a git repository of its own, gzipped sealed segments after
//! rclone's turn), so it runs after every other measurement of that folder.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};

use super::invocation::Countersign;
use super::seed::Seeded;
use countersign::app::sync::set_remote;
use countersign::store::Channel;
use countersign::store::Remote;

/// Timed syncs per remote.
pub const RUNS: usize = 9;

/// What was measured (`None`: the tool is not installed).
pub struct QuietSync {
    /// Through git: the untimed first sync, then the quiet ones.
    pub git: Option<(Duration, Vec<Duration>)>,
    /// Through rclone, the same.
    pub rclone: Option<(Duration, Vec<Duration>)>,
}

fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl QuietSync {
    /// Measures both remotes, made under `scratch`.
    pub fn measure(exe: &Countersign, seeded: &Seeded, scratch: &Path) -> anyhow::Result<Self> {
        let git = if installed("git") {
            let bare = scratch.join("quiet-sync-remote.git");
            let out = Command::new("git")
                .args(["init", "-q", "--bare"])
                .arg(&bare)
                .output()
                .context("running git init --bare")?;
            ensure!(
                out.status.success(),
                "git init --bare failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(remote(exe, seeded, Remote::Git(utf8(&bare)?))?)
        } else {
            None
        };
        let rclone = if installed("rclone") {
            let folder = scratch.join("quiet-sync-remote");
            Some(remote(
                exe,
                seeded,
                Remote::Rclone(format!(":local:{}", utf8(&folder)?)),
            )?)
        } else {
            None
        };
        Ok(Self { git, rclone })
    }
}

/// Attaches the seeded channel to `target`, syncs once untimed, then times
/// [`RUNS`] syncs with nothing new.
fn remote(
    exe: &Countersign,
    seeded: &Seeded,
    target: Remote,
) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
    set_remote(&channel, target)?;
    drop(channel);
    let first = sync(exe, seeded)?;
    let quiet = (0..RUNS)
        .map(|_| sync(exe, seeded))
        .collect::<anyhow::Result<_>>()?;
    Ok((first, quiet))
}

/// One `countersign sync`, required to succeed.
fn sync(exe: &Countersign, seeded: &Seeded) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let out = Command::new(exe.path())
        .arg("--channel")
        .arg(seeded.dir.root())
        .arg("sync")
        .env("COUNTERSIGN_HOME", &seeded.home_path)
        .stdin(Stdio::null())
        .output()
        .context("running countersign sync")?;
    let took = start.elapsed();
    ensure!(
        out.status.success(),
        "countersign sync failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(took)
}

fn utf8(p: &Path) -> anyhow::Result<String> {
    p.to_str()
        .map(str::to_owned)
        .with_context(|| format!("{} is not UTF-8", p.display()))
}
