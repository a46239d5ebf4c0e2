//! `countersign bench`: seeds a throwaway channel and measures the budgets.
//!
//! Setup (timed, but not part of the table) creates a channel with four roles
//! in a temporary folder with its own home — the user's home and channels are
//! never touched — and writes N messages with realistic bodies through the
//! store's bulk path ([`BulkFeed`]): records chained and signed exactly as a
//! normal append makes them, but fsynced once per file per batch. Then it
//! measures, each against its budget where one is set:
//! - a full rebuild (`Channel::reindex`), with a rough breakdown (decoding,
//!   signature checks, the full-text index) to explain where the time goes;
//! - the ingest of one record another writer appended (`Channel::catch_up`);
//! - tool latencies through the real MCP server (this executable's `mcp`,
//!   spawned over stdio and driven with rmcp's client), the time from spawn
//!   to the first tools/list answer, and the server's peak RSS;
//! - last, a search over a hostile body (256 KiB of one character, where the
//!   phrase `xxx` occurs at every offset), whose p99 must stay within 5× the
//!   ordinary search's p50.

use std::collections::VecDeque;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use ed25519_dalek::VerifyingKey;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

use super::Cli;
use super::bench_hostile::Hostile;
use super::bench_sync::Propagation;
use super::bench_wake::Wake;
use super::mcp_client::{self, Client, call};
use crate::app::Session;
use crate::app::budget::Budget;
use crate::app::init::create_channel;
use crate::app::listing::{ListFilter, list_messages};
use crate::app::search::{SearchFilter, search_messages};
use crate::core::hlc::Hlc;
use crate::core::ids::{RecordId, Role};
use crate::core::op::{Ids, Op, Send};
use crate::core::record::{SIG_DOMAIN, parse_pubkey};
use crate::core::vocab::{Kind, WorkStatus};
use crate::store::channel::{BulkFeed, now_ms};
use crate::store::error::StoreError;
use crate::store::home::KeyName;
use crate::store::{Channel, ChannelDir, Home, feed};

/// Arguments of `bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How many messages to seed the channel with, spread over its 4 roles.
    #[arg(long, default_value_t = 100_000)]
    pub messages: usize,
    /// How many calls of each MCP tool to time.
    #[arg(long, default_value_t = 300)]
    pub calls: usize,
    /// Where to create the throwaway channel (default: the system's temporary folder). Pick a
    /// disk like the one real channels live on: the cost of fsync is part of the result.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the throwaway channel and home afterwards (their path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Measure only propagation between two machines (a send on A until wait_for_mail wakes
    /// on B, both `mcp --sync-every 1s`, through a local bare git remote and through rclone).
    #[arg(long)]
    pub propagation: bool,
}

/// The roster of the bench channel, sorted (recipients are kept sorted).
const ROLES: [&str; 4] = ["backend", "frontend", "infra", "qa"];
/// The role the measured MCP server acts as.
const SERVER_ROLE: &str = "frontend";
/// A term planted in about 0.2% of the messages: the selective search.
const RARE_TERM: &str = "idempotency";
/// A word of the common vocabulary (in about half of the messages).
const COMMON_TERM: &str = "migration";
/// The body of the hostile search: the largest inline body, one character.
const RUN_BYTES: usize = 256 * 1024;
/// What is searched in it: a phrase found at every offset of the run.
const RUN_QUERY: &str = "xxx";
/// The hostile search's p99 may be at most this many times the ordinary
/// search's p50.
const RUN_FACTOR: f64 = 5.0;
/// Records per bulk write (one fsync per file each).
const BATCH: usize = 2048;
/// Repetitions of the incremental ingest.
const INGEST_REPS: usize = 50;
/// Spawns timed for the first answer.
const SPAWNS: usize = 7;
/// Calls per tool before timing starts.
const WARMUP: usize = 5;
/// A tool stops being timed after this long (with at least `MIN_CALLS` samples),
/// so a slow query cannot make the bench run for hours.
const TIME_CAP: Duration = Duration::from_secs(20);
/// Fewest timed calls per tool, whatever the time cap.
const MIN_CALLS: usize = 10;
/// A call this slow ends the warm-up: one untimed call is enough for it.
const SLOW_CALL: Duration = Duration::from_millis(200);

/// `bench --propagation`: only the two-machine measurement.
fn propagation_only(scratch: &Scratch) -> anyhow::Result<ExitCode> {
    let machine = Machine::probe(&scratch.root)?;
    println!("countersign bench --propagation");
    println!("machine: {}", machine.describe());
    let exe = std::env::current_exe().context("finding this executable")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    eprintln!("measuring propagation between two machines (git, then rclone)…");
    let prop = rt.block_on(Propagation::measure(&exe, &scratch.root))?;
    print_propagation(&prop);
    Ok(ExitCode::SUCCESS)
}

fn print_propagation(prop: &Propagation) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "Propagation: send_message on machine A → wait_for_mail returns on machine B, both \
         servers `mcp --sync-every {}` (no budget):",
        super::bench_sync::EVERY
    );
    for (name, samples) in [
        ("through a bare git repository on local disk", &prop.git),
        ("through rclone, local-backend remote", &prop.rclone),
    ] {
        match samples {
            Some(v) => println!(
                "  {name:<46} p50 {:>8.0} ms   min {:>6.0} ms   max {:>6.0} ms   (n={})",
                ms(p(v, 50)),
                ms(v.iter().copied().min().unwrap_or_default()),
                ms(v.iter().copied().max().unwrap_or_default()),
                v.len()
            ),
            None => println!("  {name:<46} not measured (the tool is not installed)"),
        }
    }
}

/// Runs the benchmark and prints the table.
pub fn run(_cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    ensure!(a.messages >= 100, "--messages must be at least 100");
    ensure!(a.calls >= 10, "--calls must be at least 10");
    let scratch = Scratch::new(a.dir.as_deref(), a.keep)?;
    if a.propagation {
        return propagation_only(&scratch);
    }
    let machine = Machine::probe(&scratch.root)?;
    println!(
        "countersign bench: {} messages over {} roles",
        a.messages,
        ROLES.len()
    );
    println!("machine: {}", machine.describe());
    println!(
        "scratch: {}{}",
        scratch.root.display(),
        if a.keep {
            " (kept)"
        } else {
            " (removed at the end)"
        }
    );

    // 1. Setup.
    let started = Instant::now();
    let seeded = seed(&scratch.root, a.messages)?;
    let setup = started.elapsed();
    println!(
        "setup: {:.1} s — {} records ({} messages: {} replies, {} multi-recipient, {} with '{RARE_TERM}'; \
         {} read/opened records), {:.1} MB of feeds in {} segments",
        setup.as_secs_f64(),
        seeded.records,
        seeded.messages,
        seeded.replies,
        seeded.multi,
        seeded.rare,
        seeded.reads,
        seeded.feed_bytes as f64 / 1e6,
        seeded.segments,
    );

    // 2. Full rebuild.
    let mut channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
    let t = Instant::now();
    let report = channel.reindex(None)?;
    let rebuild = t.elapsed();
    let problems = channel.index().problems()?.len();
    ensure!(
        problems == 0 && report.waiting.is_empty(),
        "the seeded channel did not ingest cleanly: {report:?}"
    );
    let index_bytes = fs::metadata(channel.index().path()).map_or(0, |m| m.len());
    let rate = report.accepted as f64 / rebuild.as_secs_f64();
    println!(
        "rebuild: {} records accepted, {} signatures verified (verify_strict, no cache on a rebuild), \
         {} messages folded in {:.2} s; index {:.1} MB",
        report.accepted,
        report.accepted,
        report.refolded,
        rebuild.as_secs_f64(),
        index_bytes as f64 / 1e6
    );
    eprintln!("measuring the parts of a rebuild…");
    let parts = RebuildParts::measure(&seeded, &scratch.root)?;

    // 3. Incremental ingest.
    eprintln!("measuring incremental ingest…");
    let inc = Incremental::measure(&mut channel)?;
    drop(channel);
    eprintln!("measuring the read tools in-process…");
    let local = InProcess::measure(&seeded, a.calls)?;

    // 4 and 5. Through the real MCP server.
    eprintln!("measuring through the MCP server…");
    let exe = std::env::current_exe().context("finding this executable")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mcp = rt.block_on(Mcp::measure(&exe, &seeded, a.calls))?;
    // The channel now holds the run the MCP section sent.
    let (local_run, local_run_bytes) = InProcess::search(&seeded, a.calls, RUN_QUERY)?;
    eprintln!("measuring wake-ups and the status command and stop hook…");
    let wake = rt.block_on(Wake::measure(
        &exe,
        seeded.dir.root(),
        &seeded.home_path,
        "backend",
        SERVER_ROLE,
    ))?;
    eprintln!("measuring propagation between two machines (git, then rclone)…");
    let prop = rt.block_on(Propagation::measure(&exe, &scratch.root))?;
    drop(rt);
    eprintln!("measuring a call with an 8 GiB sparse file in a feed folder…");
    let hostile = Hostile::measure(&exe, seeded.dir.root(), &seeded.home_path, "backend")?;
    let own_hwm = vm_hwm_kb("self");

    // The table.
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut t = Table::default();
    t.row(
        "full rebuild (reindex)",
        format!("{rate:.0} records/s"),
        "",
        "≥ 50,000 records/s",
        Some(rate >= 50_000.0),
        rate / 50_000.0,
    );
    t.row(
        "ingest 1 new record (catch_up)",
        format!("{:.3} ms", ms(p(&inc.fresh, 50))),
        format!("{:.3} ms (n={})", ms(p(&inc.fresh, 99)), inc.fresh.len()),
        "—",
        None,
        0.0,
    );
    for (name, samples, budget) in [
        ("send_message (durable)", &mcp.send, 1.0),
        ("read_inbox", &mcp.inbox, 0.5),
        ("list_messages", &mcp.list, 0.5),
        ("search_messages", &mcp.search, 3.0),
    ] {
        let p50 = ms(p(samples, 50));
        t.row(
            name,
            format!("{p50:.3} ms"),
            format!("{:.3} ms (n={})", ms(p(samples, 99)), samples.len()),
            &format!("p50 ≤ {budget} ms"),
            Some(p50 <= budget),
            budget / p50,
        );
    }
    let (search_p50, run_p99) = (ms(p(&mcp.search, 50)), ms(p(&mcp.search_run, 99)));
    let run_budget = RUN_FACTOR * search_p50;
    t.row(
        &format!(
            "search_messages '{RUN_QUERY}', a {} KiB run of x",
            RUN_BYTES / 1024
        ),
        format!("{:.3} ms", ms(p(&mcp.search_run, 50))),
        format!("{run_p99:.3} ms (n={})", mcp.search_run.len()),
        &format!("p99 ≤ {RUN_FACTOR}× search p50 = {run_budget:.1} ms"),
        Some(run_p99 <= run_budget),
        run_budget / run_p99,
    );
    let first = ms(median(&mcp.first_answer));
    t.row(
        "spawn → first tools/list answer",
        format!("{first:.1} ms"),
        "",
        "≤ 30 ms",
        Some(first <= 30.0),
        30.0 / first,
    );
    for (name, samples, p50_budget, p99_budget) in [
        (
            "wake: append → wait_for_mail returns",
            &wake.wake,
            50.0,
            Some(200.0),
        ),
        ("countersign status (process)", &wake.status, 20.0, None),
        (
            "countersign hook stop (process)",
            &wake.stop_hook,
            20.0,
            None,
        ),
    ] {
        let (p50, p99) = (ms(p(samples, 50)), ms(p(samples, 99)));
        let ok = p50 <= p50_budget && p99_budget.is_none_or(|b| p99 <= b);
        let budget = match p99_budget {
            Some(b) => format!("p50 ≤ {p50_budget} ms, p99 ≤ {b} ms"),
            None => format!("≤ {p50_budget} ms"),
        };
        t.row(
            name,
            format!("{p50:.1} ms"),
            format!("{p99:.1} ms (n={})", samples.len()),
            &budget,
            Some(ok),
            p50_budget / p50,
        );
    }
    let (clean, planted) = (ms(p(&hostile.clean, 50)), ms(p(&hostile.after, 50)));
    t.row(
        "status with an 8 GiB file in feeds/ (after discovery)",
        format!("{planted:.1} ms"),
        format!(
            "{:.1} ms (n={}; clean {clean:.1} ms, discovery {:.1} ms)",
            ms(p(&hostile.after, 99)),
            hostile.after.len(),
            ms(hostile.discovery)
        ),
        "≤ 2× clean",
        Some(planted <= 2.0 * clean),
        2.0 * clean / planted,
    );
    let rss_mb = mcp.server_hwm_kb as f64 * 1024.0 / 1e6;
    t.row(
        "server peak RSS (VmHWM)",
        format!("{rss_mb:.1} MB"),
        "",
        "≤ 40 MB",
        Some(rss_mb <= 40.0),
        40.0 / rss_mb,
    );
    println!();
    t.print();
    println!();
    print_propagation(&prop);

    println!("\nDetails (no budget):");
    let line = |what: &str, v: &[Duration]| {
        println!(
            "  {what:<62} p50 {:>9.3} ms   p99 {:>9.3} ms   (n={})",
            ms(p(v, 50)),
            ms(p(v, 99)),
            v.len()
        );
    };
    println!("  Over MCP:");
    line(
        &format!(
            "search_messages '{COMMON_TERM}' ({} hits, limit 50)",
            mcp.common_hits
        ),
        &mcp.search_common,
    );
    println!(
        "  {:<62} {}",
        format!("search_messages '{RARE_TERM}' hits"),
        mcp.rare_hits
    );
    line(
        "read_inbox fields=\"headers\" (same rows, no bodies)",
        &mcp.inbox_headers,
    );
    line(
        "server_build (transport floor: no SQLite, tiny answer)",
        &mcp.floor,
    );
    line(
        &format!(
            "get_protocol (carriage floor: {:.1} kB of text, no SQLite)",
            crate::app::info::PROTOCOL.len() as f64 / 1000.0
        ),
        &mcp.document,
    );
    line(
        "first tool call after spawn (read_inbox limit 1)",
        &mcp.first_call,
    );
    println!(
        "  {:<62} {}",
        "spawn → first answer, each spawn (ms)",
        fmt_ms_list(&mcp.first_answer)
    );
    println!("  The same app functions in-process (no MCP, no JSON text):");
    line(
        &format!(
            "read_inbox (answer {:.1} kB as JSON)",
            local.inbox_bytes as f64 / 1e3
        ),
        &local.inbox,
    );
    line(
        &format!(
            "list_messages (answer {:.1} kB as JSON)",
            local.list_bytes as f64 / 1e3
        ),
        &local.list,
    );
    line(
        &format!(
            "search_messages '{RARE_TERM}' (answer {:.1} kB)",
            local.search_bytes as f64 / 1e3
        ),
        &local.search,
    );
    line(
        &format!(
            "search_messages '{RUN_QUERY}' over the run (answer {:.1} kB)",
            local_run_bytes as f64 / 1e3
        ),
        &local_run,
    );
    println!("  Store:");
    line(
        "ingest 1 record already ingested by its writer (catch_up)",
        &inc.known,
    );
    line(
        "Channel::append (locks, catch-up, sign, fsync ×2, ingest)",
        &inc.append,
    );
    line(
        "bulk append of 1 record, files only (journal + feed fsync)",
        &inc.fs_append,
    );
    println!(
        "  {:<62} {:.3} ms",
        "fsync (4 KiB append + fdatasync) p50, scratch disk",
        ms(machine.fsync_p50)
    );
    println!(
        "  {:<62} {:.1} MB",
        "bench process peak RSS (VmHWM)",
        own_hwm.unwrap_or(0) as f64 * 1024.0 / 1e6
    );
    parts.print(rebuild, report.accepted);
    println!("\nload average at the end: {}", load_average());
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------
// Setup: a seeded channel.
// ---------------------------------------------------------------------------

/// The throwaway folder; removed on drop unless kept.
struct Scratch {
    root: PathBuf,
    keep: bool,
}

impl Scratch {
    fn new(base: Option<&Path>, keep: bool) -> anyhow::Result<Self> {
        let base = base.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let root = base.join(format!(
            "countersign-bench-{}-{}",
            std::process::id(),
            now_ms()
        ));
        fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        Ok(Self { root, keep })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// What setup made.
struct Seeded {
    dir: ChannelDir,
    home: Home,
    home_path: PathBuf,
    messages: usize,
    records: usize,
    replies: usize,
    multi: usize,
    rare: usize,
    reads: usize,
    feed_bytes: u64,
    segments: usize,
}

/// A message the generator remembers, to reply to it.
struct Recent {
    id: RecordId,
    from: usize,
    to: Vec<usize>,
    topic: String,
    kind: Option<Kind>,
}

/// Creates the channel and writes `n` messages over 45 days ending ten
/// minutes ago, with replies, status broadcasts and read state.
fn seed(root: &Path, n: usize) -> anyhow::Result<Seeded> {
    let home_path = root.join("home");
    let home = Home::at(home_path.clone());
    let dir = create_channel(&root.join("channel"), &ROLES, "bench", &home)?;
    let mut channel = Channel::open(dir.clone(), home.clone())?;
    let roles: Vec<Role> = ROLES
        .iter()
        .map(|r| Role::new(r))
        .collect::<Result<_, _>>()?;
    let span: i64 = 45 * 86_400_000;
    let t0 = now_ms() - 600_000 - span;
    let step = (span / n as i64).max(1);
    let mut runs: Vec<BulkFeed> = Vec::new();
    for r in &roles {
        runs.push(channel.bulk(r, t0 - 60_000)?);
    }
    let bar = ProgressBar::new(n as u64).with_style(
        ProgressStyle::with_template("{spinner} seeding [{bar:40}] {pos}/{len} messages ({eta})")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    let mut rng = Rng(0x5eed_cafe);
    let mut seen = Hlc::default();
    let mut recent: VecDeque<Recent> = VecDeque::with_capacity(64);
    let mut inbox: Vec<Vec<RecordId>> = vec![Vec::new(); roles.len()];
    let (mut records, mut replies, mut multi, mut rare, mut reads) = (0, 0, 0, 0, 0);
    // The last 3% of the history stays unread, as a live inbox would.
    let reads_until = n - n * 3 / 100;
    for i in 0..n {
        let now = t0 + i as i64 * step + rng.below(step as u64) as i64;
        let from = rng.below(roles.len() as u64) as usize;
        let run = &mut runs[from];

        // Now and then the author catches up on its mail: delivery, then reads.
        if i < reads_until && rng.chance(0.2) && !inbox[from].is_empty() {
            let ids = std::mem::take(&mut inbox[from]);
            let read: Vec<RecordId> = ids.iter().copied().filter(|_| rng.chance(0.85)).collect();
            seen = run.push(&Op::Opened(Ids { ids }), now, seen).header.hlc;
            reads += 1;
            if !read.is_empty() {
                seen = run.push(&Op::Read(Ids { ids: read }), now, seen).header.hlc;
                reads += 1;
            }
        }

        let roll = rng.below(100);
        let parent = if roll < 25 {
            recent.iter().rev().find(|m| m.to.contains(&from))
        } else {
            None
        };
        let (to, topic, kind, reply_to, work_status, decision) = if let Some(m) = parent {
            replies += 1;
            let to: Vec<usize> = if m.to.len() > 1 && rng.chance(0.5) {
                let mut aud: Vec<usize> =
                    m.to.iter()
                        .copied()
                        .chain([m.from])
                        .filter(|r| *r != from)
                        .collect();
                aud.sort_unstable();
                aud.dedup();
                aud
            } else {
                vec![m.from]
            };
            let topic: String = if m.topic.starts_with("Re: ") {
                m.topic.clone()
            } else {
                format!("Re: {}", m.topic)
            };
            let kind = (m.kind == Some(Kind::Question)).then_some(Kind::Answer);
            (
                to,
                topic.chars().take(80).collect(),
                kind,
                Some(m.id),
                None,
                true,
            )
        } else if roll < 33 {
            let to: Vec<usize> = (0..roles.len()).filter(|r| *r != from).collect();
            let ws = [
                None,
                Some(WorkStatus::InProgress),
                Some(WorkStatus::DoneLocal),
                Some(WorkStatus::Blocked),
            ];
            (
                to,
                topic(&mut rng, "status:"),
                Some(Kind::Status),
                None,
                ws[rng.below(4) as usize],
                false,
            )
        } else {
            let mut to = rng.below(roles.len() as u64 - 1) as usize;
            if to >= from {
                to += 1;
            }
            let kinds = [
                None,
                None,
                Some(Kind::Bug),
                Some(Kind::Feat),
                Some(Kind::Question),
                Some(Kind::Question),
            ];
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            (vec![to], topic(&mut rng, ""), kind, None, None, true)
        };
        if to.len() > 1 {
            multi += 1;
        }
        let planted = rng.chance(0.002);
        rare += usize::from(planted);
        let len = 50 + (1950.0 * rng.unit().powi(2)) as usize;
        let send = Send {
            to: to.iter().map(|r| roles[*r].clone()).collect(),
            topic: topic.clone(),
            body: body(&mut rng, len, planted),
            action_required: kind.is_some() && to.len() == 1 && rng.chance(0.1),
            reply_to,
            kind,
            work_status,
            addenda: Default::default(),
            decision_requested: decision,
            ..Send::default()
        };
        let rec = run.push(&Op::Send(send), now, seen);
        seen = rec.header.hlc;
        let id = rec.id;
        for r in &to {
            inbox[*r].push(id);
        }
        if recent.len() == 64 {
            recent.pop_front();
        }
        recent.push_back(Recent {
            id,
            from,
            to,
            topic,
            kind,
        });
        if run.pending() >= BATCH {
            records += run.flush()?;
        }
        bar.inc(1);
    }
    for run in &mut runs {
        records += run.flush()?;
    }
    bar.finish_and_clear();
    drop(runs);
    let (mut feed_bytes, mut segments) = (0, 0);
    for (_, path) in feed::list_feeds(&dir.feeds())? {
        for seg in feed::list_segments(&path)? {
            feed_bytes += fs::metadata(&seg.path)?.len();
            segments += 1;
        }
    }
    // The owner's admits (one per role) were written by `bulk` itself.
    records += roles.len();
    Ok(Seeded {
        dir,
        home,
        home_path,
        messages: n,
        records,
        replies,
        multi,
        rare,
        reads,
        feed_bytes,
        segments,
    })
}

/// A tiny deterministic generator (splitmix64): the same channel every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len() as u64) as usize]
    }
}

const AREAS: &[&str] = &[
    "auth",
    "billing",
    "search",
    "ingest",
    "sync",
    "the board",
    "the CLI",
    "onboarding",
    "payments",
    "the API gateway",
    "notifications",
    "the scheduler",
    "exports",
    "the admin panel",
    "rate limits",
    "session storage",
    "the web client",
    "mobile",
    "CI",
    "the staging cluster",
];
const HEADS: &[&str] = &[
    "flaky test in",
    "schema change for",
    "review request:",
    "deploy plan for",
    "question about",
    "regression in",
    "perf budget for",
    "refactor of",
    "incident follow-up:",
    "API contract for",
    "rollout of",
    "design note:",
    "cleanup in",
    "bug in",
    "docs for",
];
const WORDS: &[&str] = &[
    "the",
    "a",
    "we",
    "it",
    "this",
    "that",
    "should",
    "could",
    "will",
    "now",
    "after",
    "before",
    "because",
    "and",
    "but",
    "or",
    "not",
    "only",
    "still",
    "again",
    "first",
    "then",
    "also",
    "maybe",
    "schema",
    "migration",
    "endpoint",
    "cache",
    "latency",
    "deploy",
    "rollback",
    "retry",
    "token",
    "session",
    "index",
    "query",
    "review",
    "build",
    "pipeline",
    "flaky",
    "test",
    "fixture",
    "config",
    "timeout",
    "header",
    "payload",
    "client",
    "server",
    "queue",
    "worker",
    "lock",
    "transaction",
    "commit",
    "branch",
    "release",
    "feature",
    "flag",
    "metric",
    "dashboard",
    "alert",
    "log",
    "trace",
    "error",
    "panic",
    "crash",
    "memory",
    "leak",
    "thread",
    "async",
    "handler",
    "route",
    "request",
    "response",
    "field",
    "column",
    "table",
    "row",
    "batch",
    "job",
    "cron",
    "backfill",
    "replica",
    "primary",
    "failover",
    "quota",
    "limit",
    "budget",
    "p99",
    "regression",
    "benchmark",
    "profile",
    "allocation",
    "buffer",
    "stream",
    "socket",
    "reconnect",
    "backoff",
    "jitter",
    "version",
    "upgrade",
    "dependency",
    "lockfile",
    "vendor",
    "license",
    "audit",
    "permission",
    "role",
    "scope",
    "secret",
    "rotation",
    "certificate",
    "expiry",
    "staging",
    "production",
    "canary",
    "rollout",
    "percent",
    "users",
    "tenant",
    "region",
    "latency",
    "is",
    "was",
    "looks",
    "broken",
    "fixed",
    "green",
    "red",
    "blocked",
    "done",
    "pending",
    "merged",
    "reverted",
    "landed",
];
const VERBS: &[&str] = &[
    "parse", "load", "flush", "retry", "open", "sync", "verify", "fold", "render", "spawn",
];
const NOUNS: &[&str] = &[
    "config", "session", "segment", "token", "batch", "inbox", "cursor", "thread", "index", "head",
];

fn topic(rng: &mut Rng, prefix: &str) -> String {
    let head = if prefix.is_empty() {
        rng.pick(HEADS)
    } else {
        prefix
    };
    let mut t = format!("{head} {}", rng.pick(AREAS));
    if rng.chance(0.3) {
        t.push_str(&format!(" (CS-{})", 1000 + rng.below(9000)));
    }
    t
}

/// Prose of exactly `len` characters: sentences of the common vocabulary with
/// file paths, ticket numbers and function names mixed in; `planted` puts the
/// rare search term in.
fn body(rng: &mut Rng, len: usize, planted: bool) -> String {
    let mut out = String::with_capacity(len + 120);
    let mut plant = planted;
    while out.len() < len {
        let words = 6 + rng.below(11);
        for w in 0..words {
            let word = match rng.below(40) {
                0 => format!("src/{}/{}.rs", rng.pick(NOUNS), rng.pick(VERBS)),
                1 => format!("CS-{}", 1000 + rng.below(9000)),
                2 => format!("{}_{}()", rng.pick(VERBS), rng.pick(NOUNS)),
                _ => rng.pick(WORDS).to_owned(),
            };
            if w == 0 {
                let mut c = word.chars();
                let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or(' ');
                out.push(first);
                out.push_str(c.as_str());
            } else {
                out.push(' ');
                out.push_str(&word);
            }
            if plant && w == 2 {
                out.push(' ');
                out.push_str(RARE_TERM);
                plant = false;
            }
        }
        out.push_str(if rng.chance(0.2) { ".\n" } else { ". " });
    }
    if planted && !out[..len.min(out.len())].contains(RARE_TERM) {
        // Keep the term whole inside the cut.
        out = format!("{RARE_TERM} {out}");
    }
    out.truncate(len);
    out.trim_end().to_owned() + "."
}

// ---------------------------------------------------------------------------
// Where a rebuild spends its time.
// ---------------------------------------------------------------------------

/// The parts of a rebuild measured on their own, over the same files.
struct RebuildParts {
    records: usize,
    decode: Duration,
    verify: Duration,
    verify_two_threads: Duration,
    verify_batch: Duration,
    fts_bodies: usize,
    plain_insert: Duration,
    fts_insert: Duration,
    commit: Duration,
}

impl RebuildParts {
    fn measure(seeded: &Seeded, scratch: &Path) -> anyhow::Result<Self> {
        let dir = &seeded.dir;
        let ch = dir.id();
        let owner = parse_pubkey(&dir.genesis().owner_pubkey).context("owner key")?;
        let key_of = |role: &str| -> anyhow::Result<VerifyingKey> {
            if role.starts_with('_') {
                return Ok(owner);
            }
            let role = Role::new(role)?;
            let k = seeded
                .home
                .load_key(ch, KeyName::Role(&role))?
                .with_context(|| format!("key of {role}"))?;
            Ok(k.verifying_key())
        };
        // The body rows, then the full-text index fed from them in one
        // statement, as ingest does at the end of a pass.
        let db = rusqlite::Connection::open(scratch.join("parts.sqlite3"))?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.pragma_update(None, "synchronous", "NORMAL")?;
        db.pragma_update(None, "cache_size", -64 * 1024)?;
        db.execute_batch(
            "CREATE TABLE bodies(rowid INTEGER PRIMARY KEY, message_id TEXT NOT NULL, \
             topic TEXT NOT NULL, body TEXT NOT NULL);
             CREATE VIRTUAL TABLE bodies_fts USING fts5(topic, body, content='bodies', \
             content_rowid='rowid', tokenize='trigram');
             BEGIN;",
        )?;
        let mut me = Self {
            records: 0,
            decode: Duration::ZERO,
            verify: Duration::ZERO,
            verify_two_threads: Duration::ZERO,
            verify_batch: Duration::ZERO,
            fts_bodies: 0,
            plain_insert: Duration::ZERO,
            fts_insert: Duration::ZERO,
            commit: Duration::ZERO,
        };
        for (feed_id, path) in feed::list_feeds(&dir.feeds())? {
            let key = key_of(feed_id.role())?;
            for seg in feed::list_segments(&path)? {
                let t = Instant::now();
                let lines = feed::read_lines(&seg.path, 0)?;
                let recs: Vec<_> = lines.into_iter().filter_map(|l| l.record.ok()).collect();
                me.decode += t.elapsed();
                me.records += recs.len();
                let t = Instant::now();
                ensure!(
                    recs.iter().all(|r| r.verify(&key)),
                    "a signature failed in {}",
                    seg.path.display()
                );
                me.verify += t.elapsed();
                let t = Instant::now();
                let (left, right) = recs.split_at(recs.len() / 2);
                let ok = std::thread::scope(|s| {
                    let h = s.spawn(|| left.iter().all(|r| r.verify(&key)));
                    let b = right.iter().all(|r| r.verify(&key));
                    h.join().unwrap_or(false) && b
                });
                ensure!(ok, "a signature failed in {}", seg.path.display());
                me.verify_two_threads += t.elapsed();
                // Batch verification (one thread, batches of 64), for comparison:
                // it is not verify_strict, so it could only be a fast path.
                let t = Instant::now();
                for batch in recs.chunks(64) {
                    let msgs: Vec<Vec<u8>> = batch
                        .iter()
                        .map(|r| [SIG_DOMAIN, r.body.as_bytes()].concat())
                        .collect();
                    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
                    let sigs: Vec<_> = batch.iter().map(|r| r.sig).collect();
                    let keys = vec![key; batch.len()];
                    ensure!(
                        ed25519_dalek::verify_batch(&refs, &sigs, &keys).is_ok(),
                        "a batch failed in {}",
                        seg.path.display()
                    );
                }
                me.verify_batch += t.elapsed();
                let t = Instant::now();
                let mut st = db.prepare_cached(
                    "INSERT INTO bodies(message_id, topic, body) VALUES (?1, ?2, ?3)",
                )?;
                for r in &recs {
                    if let Some(Op::Send(s)) = &r.op {
                        st.execute(rusqlite::params![r.id.hex(), s.topic, s.body])?;
                    }
                }
                me.plain_insert += t.elapsed();
                me.fts_bodies += recs
                    .iter()
                    .filter(|r| matches!(r.op, Some(Op::Send(_))))
                    .count();
            }
        }
        let t = Instant::now();
        db.execute_batch(
            "INSERT INTO bodies_fts(rowid, topic, body) SELECT rowid, topic, body FROM bodies",
        )?;
        me.fts_insert = t.elapsed();
        let t = Instant::now();
        db.execute_batch("COMMIT")?;
        me.commit = t.elapsed();
        Ok(me)
    }

    fn print(&self, rebuild: Duration, accepted: usize) {
        let s = |d: Duration| d.as_secs_f64();
        let per_record = |d: Duration| s(d) * 1e6 / self.records.max(1) as f64;
        let row = |label: &str, d: Duration, note: String| {
            let pct = 100.0 * s(d) / s(rebuild);
            let line = format!("  {label:<48} {:>7.2} s {pct:>5.1}%   {note}", s(d));
            println!("{}", line.trim_end());
        };
        println!(
            "\nWhere a rebuild goes ({accepted} records in {:.2} s; parts measured alone over the \
             same files):",
            s(rebuild)
        );
        row(
            "read + decode every line (strict JSON)",
            self.decode,
            String::new(),
        );
        row(
            "verify_strict every signature, 2 threads",
            self.verify_two_threads,
            format!(
                "(1 thread: {:.2} s, {:.1} µs/record; verify_batch of 64, 1 thread, not used: \
                 {:.2} s, {:.1} µs/record)",
                s(self.verify),
                per_record(self.verify),
                s(self.verify_batch),
                per_record(self.verify_batch),
            ),
        );
        row(
            &format!("FTS5 trigram index of {} bodies", self.fts_bodies),
            self.fts_insert,
            format!(
                "(one INSERT…SELECT; the body rows alone {:.2} s, commit {:.2} s)",
                s(self.plain_insert),
                s(self.commit)
            ),
        );
        let rest = rebuild.saturating_sub(self.decode + self.verify_two_threads + self.fts_insert);
        row(
            "the rest: rows, per-message fold (by difference)",
            rest,
            String::new(),
        );
    }
}

// ---------------------------------------------------------------------------
// Incremental ingest.
// ---------------------------------------------------------------------------

struct Incremental {
    /// catch_up of one record nobody on this device had ingested.
    fresh: Vec<Duration>,
    /// catch_up of one record its writer (another Channel) already ingested.
    known: Vec<Duration>,
    /// The bulk write of that one record (journal + feed fsync).
    fs_append: Vec<Duration>,
    /// Channel::append of one record (the writer's whole store path).
    append: Vec<Duration>,
}

impl Incremental {
    fn measure(channel: &mut Channel) -> anyhow::Result<Self> {
        let mut rng = Rng(42);
        let to = Role::new(SERVER_ROLE)?;
        let mut next_send = |i: usize| {
            let len = 200 + rng.below(800) as usize;
            Op::Send(Send {
                to: vec![to.clone()],
                topic: format!("incremental {i}"),
                body: body(&mut rng, len, false),
                decision_requested: true,
                ..Send::default()
            })
        };
        let mut me = Self {
            fresh: Vec::new(),
            known: Vec::new(),
            fs_append: Vec::new(),
            append: Vec::new(),
        };

        // A record written by a writer that did not ingest it (as from another
        // machine after a sync): this process verifies, inserts and folds it.
        let mut run = channel.bulk(&Role::new("qa")?, now_ms())?;
        for i in 0..INGEST_REPS + 3 {
            run.push(&next_send(i), now_ms(), Hlc::default());
            let t = Instant::now();
            run.flush()?;
            let fs_t = t.elapsed();
            let t = Instant::now();
            let r = channel.catch_up()?;
            let ingest_t = t.elapsed();
            ensure!(r.accepted == 1, "expected one new record, ingest saw {r:?}");
            if i >= 3 {
                me.fs_append.push(fs_t);
                me.fresh.push(ingest_t);
            }
        }
        drop(run);

        // A record written through the normal path by another process on this
        // device, which ingested it into the shared index itself.
        let mut other = Channel::open(channel.dir().clone(), channel.home().clone())?;
        let writer = other.writer(&Role::new("infra")?)?;
        for i in 0..INGEST_REPS + 3 {
            let op = next_send(1000 + i);
            let t = Instant::now();
            other.append(&writer, |_| Ok::<_, StoreError>((op, ())))?;
            let append_t = t.elapsed();
            let t = Instant::now();
            channel.catch_up()?;
            let ingest_t = t.elapsed();
            if i >= 3 {
                me.append.push(append_t);
                me.known.push(ingest_t);
            }
        }
        Ok(me)
    }
}

// ---------------------------------------------------------------------------
// Through the MCP server.
// ---------------------------------------------------------------------------

struct Mcp {
    first_answer: Vec<Duration>,
    first_call: Vec<Duration>,
    send: Vec<Duration>,
    inbox: Vec<Duration>,
    inbox_headers: Vec<Duration>,
    list: Vec<Duration>,
    search: Vec<Duration>,
    search_common: Vec<Duration>,
    search_run: Vec<Duration>,
    floor: Vec<Duration>,
    document: Vec<Duration>,
    rare_hits: usize,
    common_hits: String,
    server_hwm_kb: u64,
}

impl Mcp {
    async fn measure(exe: &Path, seeded: &Seeded, calls: usize) -> anyhow::Result<Self> {
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
        let list = timed(&client, "list_messages", calls, MIN_CALLS, |_| json!({})).await?;
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
        let hits = |v: &Value| v["result"].as_array().map_or(0, Vec::len);
        let rare = call(
            &client,
            "search_messages",
            json!({"query": RARE_TERM, "limit": 1000}),
        )
        .await?;
        let common = call(
            &client,
            "search_messages",
            json!({"query": COMMON_TERM, "limit": 1000}),
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
        let server_hwm_kb = pid
            .and_then(|p| vm_hwm_kb(&p.to_string()))
            .context("reading the server's VmHWM")?;
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
            first_call,
            send: send.0,
            inbox: inbox.0,
            inbox_headers: inbox_headers.0,
            list: list.0,
            search: search.0,
            search_common: search_common.0,
            search_run,
            floor: floor.0,
            document: document.0,
            rare_hits: hits(&rare),
            common_hits,
            server_hwm_kb,
        })
    }
}

/// Spawns `countersign mcp` for `role` on the seeded channel, with the
/// seeded home, and completes the MCP handshake.
async fn spawn(exe: &Path, seeded: &Seeded, role: &str) -> anyhow::Result<(Client, Option<u32>)> {
    mcp_client::spawn(exe, seeded.dir.root(), &seeded.home_path, role).await
}

/// Decides which calls are timed: up to [`WARMUP`] untimed calls first (only
/// one when calls are slow), then `calls` timed ones — fewer, but at least
/// `min`, once the timed ones have taken [`TIME_CAP`].
struct Sampler {
    calls: usize,
    min: usize,
    warm: usize,
    started: Option<Instant>,
    out: Vec<Duration>,
}

impl Sampler {
    fn new(calls: usize, min: usize) -> Self {
        Self {
            calls,
            min,
            warm: 0,
            started: None,
            out: Vec::with_capacity(calls),
        }
    }

    fn more(&self) -> bool {
        let capped = self.started.is_some_and(|t| t.elapsed() > TIME_CAP);
        self.out.len() < self.calls && !(capped && self.out.len() >= self.min)
    }

    fn record(&mut self, d: Duration) {
        if self.warm < WARMUP && (self.warm == 0 || d < SLOW_CALL) {
            self.warm += 1;
            return;
        }
        self.started.get_or_insert_with(Instant::now);
        self.out.push(d);
    }
}

/// Times calls of `tool` (see [`Sampler`]); returns the samples and the last answer.
async fn timed(
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
    Ok((sampler.out, last))
}

/// The same, for a function called in this process; returns the samples and
/// the size of the last answer as JSON text.
fn timed_local<T: serde::Serialize>(
    calls: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let mut sampler = Sampler::new(calls, MIN_CALLS / 2);
    let mut bytes = 0;
    while sampler.more() {
        let t = Instant::now();
        let v = f()?;
        sampler.record(t.elapsed());
        bytes = serde_json::to_string(&v).map_or(0, |s| s.len());
    }
    Ok((sampler.out, bytes))
}

/// The read tools' app functions timed in this process: what MCP adds is the
/// difference with the same calls over stdio.
struct InProcess {
    inbox: Vec<Duration>,
    list: Vec<Duration>,
    search: Vec<Duration>,
    inbox_bytes: usize,
    list_bytes: usize,
    search_bytes: usize,
}

impl InProcess {
    /// `search_messages` for `query` as the MCP section calls it, in this
    /// process; the samples and the answer's size as JSON text.
    fn search(
        seeded: &Seeded,
        calls: usize,
        query: &str,
    ) -> anyhow::Result<(Vec<Duration>, usize)> {
        let channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
        let mut s = Session::new(channel, Some(Role::new(SERVER_ROLE)?))?;
        let never = || false;
        let filter = SearchFilter::default();
        timed_local(calls, || {
            let mut budget = Budget::search(&never);
            search_messages(&mut s, query, &filter, 50, None, &mut budget)
                .map_err(|e| anyhow::anyhow!("{e}"))
        })
    }

    fn measure(seeded: &Seeded, calls: usize) -> anyhow::Result<Self> {
        let channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
        let mut s = Session::new(channel, Some(Role::new(SERVER_ROLE)?))?;
        let err = |e: crate::app::AppError| anyhow::anyhow!("{e}");
        let (inbox, inbox_bytes) = timed_local(calls, || {
            crate::app::inbox::read_inbox(&mut s, true, 50, None).map_err(err)
        })?;
        let (list, list_bytes) = timed_local(calls, || {
            list_messages(&mut s, &ListFilter::default(), 100, None).map_err(err)
        })?;
        let (search, search_bytes) = timed_local(calls, || {
            let never = || false;
            let mut budget = Budget::search(&never);
            let filter = SearchFilter::default();
            search_messages(&mut s, RARE_TERM, &filter, 50, None, &mut budget).map_err(err)
        })?;
        Ok(Self {
            inbox,
            list,
            search,
            inbox_bytes,
            list_bytes,
            search_bytes,
        })
    }
}

// ---------------------------------------------------------------------------
// Machine, statistics, output.
// ---------------------------------------------------------------------------

struct Machine {
    cpu: String,
    cores: usize,
    memory_gb: f64,
    kernel: String,
    fs: String,
    fsync_p50: Duration,
}

impl Machine {
    fn probe(scratch: &Path) -> anyhow::Result<Self> {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split(':').nth(1))
            })
            .map_or_else(|| "unknown CPU".to_owned(), |s| s.trim().to_owned());
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_gb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb * 1024.0 / 1e9);
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "?".into(), |s| s.trim().to_owned());
        let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
        let root = fs::canonicalize(scratch).unwrap_or_else(|_| scratch.to_path_buf());
        let fs = mounts
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 3 && root.starts_with(f[1]))
                    .then(|| (f[1].len(), format!("{} on {} ({})", f[2], f[1], f[0])))
            })
            .max_by_key(|(n, _)| *n)
            .map_or_else(|| "unknown filesystem".to_owned(), |(_, s)| s);
        // fsync: what every durable append pays twice.
        let probe = scratch.join("fsync.probe");
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&probe)?;
        let mut samples = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            f.write_all(&[b'x'; 4096])?;
            f.sync_data()?;
            samples.push(t.elapsed());
        }
        drop(f);
        let _ = fs::remove_file(&probe);
        Ok(Self {
            cpu,
            cores,
            memory_gb,
            kernel,
            fs,
            fsync_p50: p(&samples, 50),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} × {} cores, {:.1} GB RAM, Linux {}, {}; fsync p50 {:.3} ms; load {}",
            self.cpu,
            self.cores,
            self.memory_gb,
            self.kernel,
            self.fs,
            self.fsync_p50.as_secs_f64() * 1e3,
            load_average()
        )
    }
}

/// The 1, 5 and 15 minute load averages: other work on the machine skews
/// every number here, so the table says how busy it was.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "?".to_owned(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// Nearest-rank percentile.
fn p(samples: &[Duration], pct: usize) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = (pct * v.len()).div_ceil(100).max(1);
    v[rank - 1]
}

fn median(samples: &[Duration]) -> Duration {
    p(samples, 50)
}

fn fmt_ms_list(v: &[Duration]) -> String {
    v.iter()
        .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
        .collect::<Vec<_>>()
        .join(", ")
}

/// VmHWM (peak resident set) of a process, in kB, from /proc.
fn vm_hwm_kb(pid: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
}

#[derive(Default)]
struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    /// `ratio` is how far inside the budget the value is (> 1 inside).
    fn row(
        &mut self,
        metric: &str,
        value: String,
        p99: impl Into<String>,
        budget: &str,
        ok: Option<bool>,
        ratio: f64,
    ) {
        let verdict = match ok {
            None => String::new(),
            Some(true) => "ok".to_owned(),
            Some(false) => format!("MISSED ({:.1}× over)", 1.0 / ratio.max(1e-9)),
        };
        self.rows.push([
            metric.to_owned(),
            value,
            p99.into(),
            budget.to_owned(),
            verdict,
        ]);
    }

    fn print(&self) {
        let head = ["metric", "measured (p50)", "p99", "budget", "verdict"];
        let mut w = head.map(|h| h.chars().count());
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let fmt = |cells: [&str; 5]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                if i == 1 || i == 2 {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
                s.push_str(" | ");
            }
            format!("| {}", s.trim_end())
        };
        println!("{}", fmt(head));
        println!(
            "|{}|",
            w.iter()
                .map(|n| "-".repeat(n + 2))
                .collect::<Vec<_>>()
                .join("|")
        );
        for r in &self.rows {
            println!("{}", fmt([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        }
    }
}
