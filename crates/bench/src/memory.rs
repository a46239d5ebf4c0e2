//! The memory at scale: how long building the memory of N messages takes,
//! `memory_view` through the real stdio server (the first call builds, the
//! next ones reuse what the server kept), and what summary records add to
//! ingest (a rebuild of the index before and after the bench writes a
//! summary for every line of the tree that needs one).

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::json;

use super::ROLES;
use super::SERVER_ROLE;
use super::sampler::MIN_CALLS;
use super::seed::Seeded;
use super::server::timed;
use countersign::app::Session;
use countersign::app::memory::Memory;
use countersign::core::hlc::Hlc;
use countersign::core::ids::Role;
use countersign::core::memory::sequence::{ItemKind, own_line};
use countersign::core::op::{Op, Summary};
use countersign::mcp_client::{self, call};
use countersign::store::Channel;
use countersign::store::now_ms;

/// Builds of the memory timed in this process.
const BUILDS: usize = 3;
/// Views timed right after a send.
const AFTER_SEND: usize = 10;
/// Summary records written per flush of the bulk feed.
const BATCH: usize = 2048;

pub struct MemoryBench {
    /// Rebuilding the index of the seeded channel, no summaries.
    pub ingest_plain: Duration,
    /// Records in the channel before the summaries.
    pub records_plain: usize,
    /// Summary records written.
    pub summaries: usize,
    /// Rebuilding the index with the summaries.
    pub ingest_with: Duration,
    /// Building the memory in this process (read every item, the tree).
    pub build: Vec<Duration>,
    /// The first memory_view through a fresh server (it builds).
    pub first_view: Duration,
    /// memory_view (page 0) again and again.
    pub view: Vec<Duration>,
    /// Every page of the view, one after the other (pages 1…).
    pub pages: Vec<Duration>,
    /// memory_zoom of the line over everything.
    pub zoom: Vec<Duration>,
    /// memory_view right after a send_message (the kept memory takes the
    /// new item in and builds the tree again).
    pub after_send: Vec<Duration>,
    /// Lines of the view and how many wait for a compaction.
    pub lines: usize,
    pub waiting: usize,
    pub items: usize,
}

impl MemoryBench {
    pub async fn measure(
        exe: &std::path::Path,
        seeded: &Seeded,
        calls: usize,
    ) -> anyhow::Result<Self> {
        let mut channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
        let t = Instant::now();
        let report = channel.reindex_rows(None)?;
        let ingest_plain = t.elapsed();
        channel.complete_search_index()?;
        let records_plain = report.accepted;

        let mut s = Session::new(channel, Some(Role::new(SERVER_ROLE)?))?;
        let mut build = Vec::new();
        let mut memory = None;
        for _ in 0..BUILDS {
            let t = Instant::now();
            memory = Some(Memory::load_at(&s, None)?);
            build.push(t.elapsed());
        }
        let memory = memory.expect("built at least once");
        let items = memory.tree().keys().len();

        eprintln!("writing a summary of every line of the memory that needs one…");
        let summaries = write_summaries(&mut s, &memory)?;
        drop(memory);
        let mut channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
        let t = Instant::now();
        let report = channel.reindex_rows(None)?;
        let ingest_with = t.elapsed();
        channel.complete_search_index()?;
        ensure!(
            report.accepted >= records_plain + summaries,
            "the summaries were not all ingested: {report:?}"
        );
        drop(channel);
        drop(s);

        eprintln!("measuring memory_view through the server…");
        let (client, _) =
            mcp_client::spawn(exe, seeded.dir.root(), &seeded.home_path, SERVER_ROLE).await?;
        let t = Instant::now();
        let first = call(&client, "memory_view", json!({})).await?;
        let first_view = t.elapsed();
        let (view, _) = timed(&client, "memory_view", calls, MIN_CALLS, |_| json!({})).await?;
        let mut text = first["view"].as_str().unwrap_or_default().to_owned();
        let mut pages = Vec::new();
        let mut next = first["next_offset"].as_u64();
        while let Some(offset) = next {
            let t = Instant::now();
            let page = call(&client, "memory_view", json!({"offset": offset})).await?;
            pages.push(t.elapsed());
            text.push('\n');
            text.push_str(page["view"].as_str().unwrap_or_default());
            next = page["next_offset"].as_u64();
        }
        let root = text
            .lines()
            .next()
            .and_then(|l| l.split_once('|'))
            .map(|(name, _)| name.to_owned())
            .context("an empty view")?;
        let (zoom, _) = timed(
            &client,
            "memory_zoom",
            calls,
            MIN_CALLS,
            |_| json!({"id": root}),
        )
        .await?;
        let mut after_send = Vec::new();
        for i in 0..AFTER_SEND {
            call(
                &client,
                "send_message",
                json!({"to": "backend", "topic": format!("memory bench {i}"), "body": "one more item"}),
            )
            .await?;
            let t = Instant::now();
            call(&client, "memory_view", json!({})).await?;
            after_send.push(t.elapsed());
        }
        let _ = client.cancel().await;
        Ok(Self {
            after_send,
            ingest_plain,
            records_plain,
            summaries,
            ingest_with,
            build,
            first_view,
            view,
            pages,
            zoom,
            lines: text.lines().count(),
            waiting: text
                .lines()
                .filter(|l| l.ends_with("waits for a compaction]"))
                .count(),
            items,
        })
    }
}

/// Writes, through the bulk path, a summary of every line that needs one:
/// every line of two or more items, and every item too long to be its own
/// line. The texts are generated; what they say does not matter here.
fn write_summaries(s: &mut Session, memory: &Memory) -> anyhow::Result<usize> {
    let long: std::collections::HashSet<_> = s
        .index()
        .memory_items()?
        .into_iter()
        .filter(|m| own_line(ItemKind::Message, &m.role, &m.topic, &m.body).is_none())
        .map(|m| m.key.id)
        .collect();
    let tree = memory.tree();
    let writer = Role::new(ROLES[2])?;
    let start = now_ms() - 120_000;
    let mut run = s.channel_mut().bulk(&writer, start)?;
    let mut seen = Hlc::default();
    let mut written = 0;
    for node in tree.nodes() {
        if node.halves.is_none() && !long.contains(&node.line) {
            continue;
        }
        let first = tree.keys()[node.lo].hlc.ms();
        let text = format!(
            "{} items from {}: the team agreed on the migration plan, fixed the login bug, \
             and left the cache question open for the next sprint",
            node.items(),
            countersign::core::timestamp::format_rfc3339(first)
        );
        let op = Op::Summary(Summary {
            covers: tree.covers(node),
            text,
        });
        seen = run
            .push(&op, start + (written / 64) as i64, seen)
            .header
            .hlc;
        written += 1;
        if run.pending() >= BATCH {
            run.flush()?;
        }
    }
    run.flush()?;
    Ok(written)
}
