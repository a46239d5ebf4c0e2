//! The bench's measurements of waking and of the harness-facing commands:
//! how long a blocked `wait_for_mail` takes to return after another process
//! appended a record, and how long `countersign status` and `countersign hook
//! stop` take end to end (process start to exit) on the seeded channel.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::invocation::Countersign;
use countersign::app::Session;
use countersign::app::send::{SendRequest, send_message};
use countersign::core::ids::Role;
use countersign::mcp_client::{call, spawn};
use countersign::store::{Channel, ChannelDir, Home};

/// How many wake-ups are timed.
const WAKES: usize = 30;
/// How many runs of each command are timed.
const RUNS: usize = 15;

/// What was measured.
pub struct Wake {
    /// Start of an append by another process → the blocked wait_for_mail
    /// returns at the client.
    pub wake: Vec<Duration>,
    /// `countersign status` as a process, start to exit.
    pub status: Vec<Duration>,
    /// `countersign hook stop` with JSON on stdin, start to exit.
    pub stop_hook: Vec<Duration>,
}

impl Wake {
    /// Measures on the channel in `dir` with `home_path`. The waiting server
    /// acts as `waiter`; this process appends as `writer`.
    pub async fn measure(
        exe: &Countersign,
        dir: &Path,
        home_path: &Path,
        waiter: &str,
        writer: &str,
    ) -> anyhow::Result<Self> {
        let (client, _) = spawn(exe.path(), dir, home_path, waiter).await?;
        let channel = Channel::open(ChannelDir::open(dir)?, Home::at(home_path.to_path_buf()))?;
        let mut session = Session::new(channel, Some(Role::new(writer)?))?;
        let mut wake = Vec::with_capacity(WAKES);
        for i in 0..WAKES {
            let waiting = {
                let client = &client;
                async move {
                    call(
                        client,
                        "wait_for_mail",
                        json!({"timeout_s": 50, "poll_interval_s": 30}),
                    )
                    .await
                }
            };
            tokio::pin!(waiting);
            // Let the call reach its wait before the record is written.
            let settle = tokio::time::sleep(Duration::from_millis(80));
            tokio::select! {
                r = &mut waiting => anyhow::bail!("wait_for_mail returned before anything was written: {r:?}"),
                () = settle => {}
            }
            let req =
                SendRequest::new(waiter, format!("wake {i}"), "a record from another process");
            // Timed from before the append: the writer's own send (~1–2 ms) is
            // included, so this is an upper bound on the wake-up itself.
            let start = Instant::now();
            let sent = send_message(&mut session, req)?;
            let answer = waiting.await?;
            wake.push(start.elapsed());
            anyhow::ensure!(
                answer["timed_out"] == false,
                "the wait timed out instead of waking: {answer} ({})",
                serde_json::to_string(&sent)?
            );
        }
        client.cancel().await.ok();
        let run = |args: &[&str], stdin| exe.time(dir, home_path, waiter, args, stdin);
        let status = (0..RUNS)
            .map(|_| run(&["status"], None))
            .collect::<anyhow::Result<_>>()?;
        let stop_hook = (0..RUNS)
            .map(|_| run(&["hook", "stop"], Some("{}")))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            wake,
            status,
            stop_hook,
        })
    }
}
