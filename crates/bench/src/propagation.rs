//! The bench's propagation measurement: a `send_message` through machine A's
//! MCP server until a blocked `wait_for_mail` returns on machine B's server,
//! both running `--sync-every 1s`, through a bare git repository on local disk
//! and through rclone with a local-backend remote. Two machines are two homes
//! and two copies of the channel on this machine; everything between them is
//! the real background sync, the real remote and the real folder watcher.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::json;

use countersign::app::init::create_channel;
use countersign::app::sync::{WhenBusy, set_remote, sync_now};
use countersign::mcp_client::{call, spawn_with};
use countersign::store::Remote;
use countersign::store::{Channel, ChannelDir, Home};

/// How many sends are timed per mode.
pub const SENDS: usize = 10;
/// The background sync interval of both servers.
pub const EVERY: &str = "1s";

/// What was measured (`None`: the tool is not installed).
pub struct Propagation {
    /// Send on A → wait_for_mail returns on B, through git.
    pub git: Option<Vec<Duration>>,
    /// The same through rclone.
    pub rclone: Option<Vec<Duration>>,
}

fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    ensure!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

impl Propagation {
    /// Measures both modes in folders under `scratch`.
    pub async fn measure(exe: &Path, scratch: &Path) -> anyhow::Result<Self> {
        let git = if installed("git") {
            Some(mode(exe, &scratch.join("propagation-git"), Mode::Git).await?)
        } else {
            None
        };
        let rclone = if installed("rclone") {
            Some(mode(exe, &scratch.join("propagation-rclone"), Mode::Rclone).await?)
        } else {
            None
        };
        Ok(Self { git, rclone })
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Git,
    Rclone,
}

/// Two machines sharing one channel through `mode`'s remote; A writes as
/// frontend, B waits as backend.
async fn mode(exe: &Path, root: &Path, mode: Mode) -> anyhow::Result<Vec<Duration>> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let (home_a, home_b) = (root.join("home-a"), root.join("home-b"));
    let (dir_a, dir_b) = (root.join("channel-a"), root.join("channel-b"));
    let remote = match mode {
        Mode::Git => {
            let bare = root.join("remote.git");
            run(Command::new("git")
                .args(["init", "-q", "--bare"])
                .arg(&bare))?;
            Remote::Git(path_str(&bare)?)
        }
        Mode::Rclone => Remote::Rclone(format!(":local:{}", path_str(&root.join("remote"))?)),
    };
    create_channel(
        &dir_a,
        &["backend", "frontend"],
        "propagation",
        &Home::at(home_a.clone()),
    )?;
    let mut a = Channel::open(ChannelDir::open(&dir_a)?, Home::at(home_a.clone()))?;
    set_remote(&a, remote.clone())?;
    sync_now(&mut a, WhenBusy::Wait)?;
    drop(a);
    match &remote {
        Remote::Git(url) => run(Command::new("git").args(["clone", "-q", url]).arg(&dir_b))?,
        Remote::Rclone(t) => run(Command::new("rclone").args(["copy", "-q", t]).arg(&dir_b))?,
    }
    let b = Channel::open(ChannelDir::open(&dir_b)?, Home::at(home_b.clone()))?;
    set_remote(&b, remote)?;
    drop(b);
    let every = ["--sync-every", EVERY];
    let (writer, _) = spawn_with(exe, &dir_a, &home_a, "frontend", &every).await?;
    let (waiter, _) = spawn_with(exe, &dir_b, &home_b, "backend", &every).await?;
    let mut samples = Vec::with_capacity(SENDS);
    for i in 0..SENDS {
        let waiting = {
            let waiter = &waiter;
            async move {
                call(
                    waiter,
                    "wait_for_mail",
                    json!({"timeout_s": 50, "poll_interval_s": 60}),
                )
                .await
            }
        };
        tokio::pin!(waiting);
        // Let the wait start, and let the last round's syncs finish.
        let settle = tokio::time::sleep(Duration::from_millis(1500));
        tokio::select! {
            r = &mut waiting => anyhow::bail!("wait_for_mail returned before anything was sent: {r:?}"),
            () = settle => {}
        }
        let start = Instant::now();
        call(
            &writer,
            "send_message",
            json!({"to": "backend", "topic": format!("propagation {i}"), "body": "across machines"}),
        )
        .await?;
        let answer = waiting.await?;
        samples.push(start.elapsed());
        ensure!(
            answer["timed_out"] == false,
            "the wait timed out instead of waking: {answer}"
        );
    }
    writer.cancel().await.ok();
    waiter.cancel().await.ok();
    Ok(samples)
}

fn path_str(p: &Path) -> anyhow::Result<String> {
    p.to_str()
        .map(str::to_owned)
        .with_context(|| format!("{} is not UTF-8", PathBuf::from(p).display()))
}
