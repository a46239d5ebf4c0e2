//! The tools through the real MCP server: `countersign mcp` spawned over
//! stdio and driven with rmcp's client; the time to the first answer, each
//! tool's latency, and the server's peak memory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use super::corpus::{Rng, body};
use super::machine::vm_hwm_kb;
use super::sampler::{MIN_CALLS, Sampler, WARMUP};
use super::seed::Seeded;
use super::{COMMON_TERM, RARE_TERM, RUN_BYTES, RUN_QUERY, SERVER_ROLE};
use countersign::mcp_client::{self, Client, call};
use countersign::store::binding::{self, Binding};

/// Spawns timed for the first answer.
const SPAWNS: usize = 7;

pub struct Mcp {
    pub first_answer: Vec<Duration>,
    /// The same, the server started as `countersign install` wires Codex
    /// (and Claude Code's local scope): `mcp` alone, in a project whose
    /// binding names the role and the channel.
    pub first_answer_bound: Vec<Duration>,
    pub first_call: Vec<Duration>,
    pub send: Vec<Duration>,
    pub inbox: Vec<Duration>,
    pub inbox_headers: Vec<Duration>,
    pub list: Vec<Duration>,
    pub resolve: Vec<Duration>,
    pub obligations: Vec<Duration>,
    pub status: Vec<Duration>,
    pub search: Vec<Duration>,
    pub search_common: Vec<Duration>,
    pub search_run: Vec<Duration>,
    pub floor: Vec<Duration>,
    pub document: Vec<Duration>,
    pub rare_hits: usize,
    pub common_hits: String,
    /// The server's peak resident memory after the timed calls.
    pub server_hwm_kb: u64,
    /// The same after the two 1,000-hit searches that count hits.
    pub server_hwm_counted_kb: u64,
}

impl Mcp {
    pub async fn measure(exe: &Path, seeded: &Seeded, calls: usize) -> anyhow::Result<Self> {
        let mut first_answer = Vec::new();
        let mut first_call = Vec::new();
        for _ in 0..SPAWNS {
            let t = Instant::now();
            let (client, _) = spawn(exe, seeded, SERVER_ROLE).await?;
            client.list_all_tools().await.context("tools/list")?;
            first_answer.push(t.elapsed());
            let t = Instant::now();
            call(&client, "read_inbox", json!({"limit": 1})).await?;
            first_call.push(t.elapsed());
            let _ = client.cancel().await;
        }
        let project = bound_project(seeded, SERVER_ROLE)?;
        let mut first_answer_bound = Vec::new();
        for _ in 0..SPAWNS {
            let t = Instant::now();
            let (client, _) =
                mcp_client::spawn_command(bound_command(exe, seeded, &project)).await?;
            client.list_all_tools().await.context("tools/list")?;
            first_answer_bound.push(t.elapsed());
            let _ = client.cancel().await;
        }

        let (client, pid) = spawn(exe, seeded, SERVER_ROLE).await?;
        let mut rng = Rng(7);
        let send = timed(&client, "send_message", calls, MIN_CALLS, |i| {
            let len = 100 + rng.below(900) as usize;
            json!({"to": "backend", "topic": format!("bench {i}"), "body": body(&mut rng, len, false)})
        })
        .await?;
        let inbox = timed(&client, "read_inbox", calls, MIN_CALLS, |_| json!({})).await?;
        let inbox_headers = timed(
            &client,
            "read_inbox",
            calls,
            MIN_CALLS,
            |_| json!({"fields": "headers"}),
        )
        .await?;
        let list = timed(
            &client,
            "list_messages",
            calls,
            MIN_CALLS,
            |_| json!({"limit": LIST_LIMIT}),
        )
        .await?;
        let resolve = resolve_debts(exe, seeded, &client, calls).await?;
        let obligations = timed(
            &client,
            "open_obligations",
            calls,
            MIN_CALLS,
            |_| json!({"limit": LIST_LIMIT}),
        )
        .await?;
        let status = timed(&client, "channel_status", calls, MIN_CALLS, |_| json!({})).await?;
        let search = timed(
            &client,
            "search_messages",
            calls,
            MIN_CALLS,
            |_| json!({"query": RARE_TERM}),
        )
        .await?;
        let common = |_| json!({"query": COMMON_TERM});
        let search_common = timed(&client, "search_messages", calls, 3, common).await?;
        let floor = timed(&client, "server_build", calls, MIN_CALLS, |_| json!({})).await?;
        let document = timed(&client, "get_protocol", calls, MIN_CALLS, |_| json!({})).await?;
        // The peak of the workload above; the counting below is the bench's
        // own (a search of a thousand hits holds them all, about 6 MB more:
        // `server_hwm_counted_kb`).
        let server_hwm_kb = pid
            .and_then(|p| vm_hwm_kb(&p.to_string()))
            .context("reading the server's VmHWM")?;
        let hits = |v: &Value| v["result"].as_array().map_or(0, Vec::len);
        let rare = call(
            &client,
            "search_messages",
            json!({"query": RARE_TERM, "limit": 1000, "fields": ["id"]}),
        )
        .await?;
        let common = call(
            &client,
            "search_messages",
            json!({"query": COMMON_TERM, "limit": 1000, "fields": ["id"]}),
        )
        .await?;
        let common_hits = match common.get("truncated") {
            Some(_) => format!("≥ {}", hits(&common)),
            None => hits(&common).to_string(),
        };
        ensure!(
            hits(&rare) > 0,
            "the search term '{RARE_TERM}' found nothing"
        );
        let server_hwm_counted_kb = pid.and_then(|p| vm_hwm_kb(&p.to_string())).unwrap_or(0);
        // Last, so the rows above see the channel as seeded: a body of 256 KiB
        // of one character, which holds the phrase `xxx` at every offset.
        let run = "x".repeat(RUN_BYTES);
        call(
            &client,
            "send_message",
            json!({"to": "backend", "topic": "a run of one character", "body": run}),
        )
        .await?;
        let (search_run, last) = timed(
            &client,
            "search_messages",
            calls,
            MIN_CALLS,
            |_| json!({"query": RUN_QUERY}),
        )
        .await?;
        ensure!(
            hits(&last) == 1 && last.get("truncated").is_none(),
            "search_messages '{RUN_QUERY}' did not find the run whole: {}",
            last.get("truncated").unwrap_or(&Value::Null)
        );
        let _ = client.cancel().await;
        Ok(Self {
            first_answer,
            first_answer_bound,
            first_call,
            send: send.0,
            inbox: inbox.0,
            inbox_headers: inbox_headers.0,
            list: list.0,
            resolve,
            obligations: obligations.0,
            status: status.0,
            search: search.0,
            search_common: search_common.0,
            search_run,
            floor: floor.0,
            document: document.0,
            rare_hits: hits(&rare),
            common_hits,
            server_hwm_kb,
            server_hwm_counted_kb,
        })
    }
}

/// How many messages the listing rows ask for (`limit`), as the reference's
/// figures were taken.
const LIST_LIMIT: usize = 50;

/// `resolve_message` timed: a server for `backend` sends `frontend` one debt
/// per call (untimed), then `frontend` resolves each, newest first. Returns
/// the samples.
async fn resolve_debts(
    exe: &Path,
    seeded: &Seeded,
    client: &Client,
    calls: usize,
) -> anyhow::Result<Vec<Duration>> {
    let (author, _) = spawn(exe, seeded, "backend").await?;
    let mut ids = Vec::with_capacity(calls + WARMUP);
    for i in 0..calls + WARMUP {
        let sent = call(
            &author,
            "send_message",
            json!({"to": SERVER_ROLE, "topic": format!("debt {i}"),
                   "body": "please look at the retry path", "action_required": true}),
        )
        .await?;
        let id = sent["id"].as_str().context("send_message answered no id")?;
        ids.push(id.to_owned());
    }
    let _ = author.cancel().await;
    let (samples, last) = timed(client, "resolve_message", calls, calls, |_| {
        let id = ids.pop().unwrap_or_default();
        json!({"message_id": id, "resolution_note": "done"})
    })
    .await?;
    ensure!(
        last["already_resolved"] == Value::Bool(false),
        "resolve_message did not resolve a fresh debt: {last}"
    );
    Ok(samples)
}

/// A project folder beside the channel, bound to it as `role` the way
/// `countersign install` binds one (`.countersign.local.json`), and a git
/// work tree when git is there, so that the server asks git whether the
/// binding is tracked as it would in a real project.
fn bound_project(seeded: &Seeded, role: &str) -> anyhow::Result<PathBuf> {
    let project = seeded.home_path.with_file_name("project");
    std::fs::create_dir_all(&project).with_context(|| project.display().to_string())?;
    let _ = std::process::Command::new("git")
        .arg("-C")
        .arg(&project)
        .args(["init", "-q"])
        .status();
    let binding = Binding {
        role: role.to_owned(),
        channel: seeded.dir.root().to_path_buf(),
    };
    let path = project.join(binding::FILE);
    std::fs::write(&path, binding.to_text()).with_context(|| path.display().to_string())?;
    Ok(project)
}

/// `exe mcp` alone, started in `project` with the channel's home.
fn bound_command(exe: &Path, seeded: &Seeded, project: &Path) -> std::process::Command {
    let mut c = mcp_client::mcp_command(exe, &seeded.home_path, &[]);
    c.current_dir(project);
    c
}

/// Spawns `countersign mcp` for `role` on the seeded channel, with the
/// seeded home, and completes the MCP handshake.
async fn spawn(exe: &Path, seeded: &Seeded, role: &str) -> anyhow::Result<(Client, Option<u32>)> {
    mcp_client::spawn(exe, seeded.dir.root(), &seeded.home_path, role).await
}

/// Times calls of `tool` (see [`Sampler`]); returns the samples and the last answer.
pub async fn timed(
    client: &Client,
    tool: &str,
    calls: usize,
    min: usize,
    mut args: impl FnMut(usize) -> Value,
) -> anyhow::Result<(Vec<Duration>, Value)> {
    let mut last = Value::Null;
    let mut sampler = Sampler::new(calls, min);
    let mut i = 0;
    while sampler.more() {
        let a = args(i);
        let t = Instant::now();
        last = call(client, tool, a).await?;
        sampler.record(t.elapsed());
        i += 1;
    }
    Ok((sampler.into_samples(), last))
}
