//! `countersign status`: what a role has waiting, for people, scripts, hooks
//! and background watchers.
//!
//! Exit 0 nothing actionable, 1 something actionable, 2 the channel cannot be
//! read. An error is never reported as "clear": anything that goes wrong ends
//! in exit 2 with the reason on stderr (see `cli::run`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::Cli;
use super::remote_channel::{RemoteChannel, URL_VAR};
use crate::app::Session;
use crate::app::session::ROLE_VARS;
use crate::app::status::{ACTIONABLE, Summary, status_report, summary};
use crate::cli::output::{out, outln};
use crate::cli::terminal::{Paint, Table, age, colour, paint, stdout_is_terminal};
use crate::core::ids::Role;
use crate::core::peer_text::one_line;
use crate::core::timestamp::{format_rfc3339, parse_since};
use crate::store::Watcher;
use crate::store::now_ms;

/// What `status` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum View {
    /// What the role has waiting (the default).
    Status,
    /// The pinned rules, without their bodies.
    Pins,
    /// Keep running; print a line whenever something actionable arrives.
    Watch,
}

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `status` (default): what --role has waiting (in words on a terminal; as JSON with
    /// the counters, their messages and the open debts when piped); `pins`: the pinned rules;
    /// `watch` (or --watch): stay running and print a line with the time whenever something
    /// actionable arrives.
    #[arg(value_enum, default_value_t = View::Status)]
    pub view: View,
    /// Print text for a person (TSV for pins) instead of JSON; the default when stdout is
    /// a terminal.
    #[arg(long, conflicts_with = "json")]
    pub text: bool,
    /// Print JSON even on a terminal.
    #[arg(long)]
    pub json: bool,
    /// The same as `status watch`: stay running and print a line whenever something
    /// actionable arrives.
    #[arg(long)]
    pub watch: bool,
    /// Print the state digest of this device's index and exit 0: equal feeds give equal
    /// digests on every machine, and `reindex` does not change it.
    #[arg(long)]
    pub digest: bool,
    /// watch: seconds between two looks at the channel (at least 1).
    #[arg(long, default_value_t = 30, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: u64,
    /// watch: stop after N polls (for scripts and tests).
    #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_polls: Option<u64>,
    /// watch: remember in FILE what the last poll saw, so that successive runs (e.g. a
    /// script calling `--max-polls 1`) report only what grew (for scripts and tests).
    #[arg(long, hide = true, value_name = "FILE")]
    pub state: Option<PathBuf>,
}

/// Runs `status`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    if let Some(remote) = RemoteChannel::from_env()?
        && (a.digest || a.view == View::Pins)
    {
        anyhow::bail!(
            "{URL_VAR} is set ({}): through a server only `status` (JSON or --text) and \
             `status watch` are read; `status pins` and --digest read the channel folder (unset \
             {URL_VAR} for them)",
            remote.base()
        );
    }
    if a.digest {
        let mut channel = cli.open_channel()?;
        crate::app::admission::catch_up(&mut channel)?;
        outln!("{}", channel.index().digest()?);
        return Ok(ExitCode::SUCCESS);
    }
    let text = a.text || (!a.json && stdout_is_terminal());
    match (a.watch, a.view) {
        (true, View::Pins) => anyhow::bail!(
            "--watch watches what waits for the role, not the pins: run `status --watch` or \
             `status pins`"
        ),
        (true, _) | (false, View::Watch) => watch(cli, a),
        (false, View::Status) => status(cli, text),
        (false, View::Pins) => pins(cli, a.text),
    }
}

// ---------------------------------------------------------------------------------------
// status

fn status(cli: &Cli, text: bool) -> anyhow::Result<ExitCode> {
    if text {
        super::attention::print_block(cli)?;
    }
    let report = match RemoteChannel::from_env()? {
        Some(remote) => remote.status()?,
        None => {
            let mut s = cli.session_with_role()?.for_one_command();
            serde_json::to_value(status_report(&mut s)?.1)?
        }
    };
    show_status(&report, text)
}

/// Prints a status report (read here or through a server, the same JSON)
/// and gives the exit code its actionable counters call for.
fn show_status(report: &Value, text: bool) -> anyhow::Result<ExitCode> {
    let shown = Shown::deserialize(report)
        .context("the status report is not understood (no channel, role or counts)")?;
    let pending = shown.pending();
    if text {
        out!("{}", status_text(&shown, &pending));
    } else {
        outln!("{}", serde_json::to_string_pretty(report)?);
    }
    Ok(if pending.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What the text form shows of a status report (`app::status::StatusReport`,
/// read back from its JSON).
#[derive(Deserialize)]
struct Shown {
    channel: String,
    role: String,
    counts: Map<String, Value>,
    #[serde(default)]
    debts: Vec<Line>,
    #[serde(default)]
    needs_you: Vec<Line>,
    #[serde(default)]
    resolved_for_you: Vec<Line>,
    #[serde(default)]
    awaiting_done: Vec<Line>,
    #[serde(default)]
    unblocked: Vec<Line>,
    tentative_since: Option<String>,
    held: Option<i64>,
    sync_failed: Option<SyncFailedLine>,
    alarms: Option<Vec<AlarmLine>>,
    /// The lists cut short: list → how many it left out.
    #[serde(default)]
    more: Map<String, Value>,
}

/// A message in a list (a debt's header, or a counter's item).
#[derive(Deserialize)]
struct Line {
    id: String,
    #[serde(default)]
    topic: String,
    from: Option<String>,
    created_at: Option<String>,
    work_status: Option<String>,
    resolved_by: Option<String>,
}

/// `sync_failed` of a status report.
#[derive(Deserialize)]
struct SyncFailedLine {
    at: String,
    error: String,
    #[serde(default)]
    fix: String,
}

#[derive(Deserialize)]
struct AlarmLine {
    kind: String,
    feed: Option<String>,
    reason: String,
}

impl Shown {
    fn pending(&self) -> Counts {
        counts_pending(&self.counts)
    }
}

/// The non-zero actionable counters of a `counts` object (as the status
/// report and `/hook-status` carry it).
pub(super) fn counts_pending(counts: &Map<String, Value>) -> Counts {
    ACTIONABLE
        .iter()
        .filter_map(|c| {
            counts
                .get(*c)
                .and_then(Value::as_u64)
                .filter(|n| *n > 0)
                .map(|n| ((*c).to_owned(), n))
        })
        .collect()
}

/// What a counter means to a person, for `n` of its items: `2 debts owed
/// to you not yet taken up`.
pub(super) fn counter_words(counter: &str, n: u64) -> String {
    let s = |one: &str, many: &str| {
        if n == 1 {
            one.to_owned()
        } else {
            many.to_owned()
        }
    };
    let what = match counter {
        "unread" => s("unread message", "unread messages"),
        "open_obligations_untaken" => s("debt", "debts") + " owed to you not yet taken up",
        "awaiting_ack" => s("proposal", "proposals") + " waiting for your decision",
        "unblocked" => s("task", "tasks") + " of yours no longer blocked: resume",
        "needs_you" => s("message", "messages") + " handing the ball to you",
        "awaiting_done" => s("piece", "pieces") + " of work reported done, for you to check",
        "resolved_for_you" => s("debt", "debts") + " resolved for you to confirm or reopen",
        "conflicted" => s("record", "records") + " of yours lost to a concurrent decision",
        other => other.replace('_', " "),
    };
    format!("{n} {what}")
}

/// The status as a person reads it: who and where, what waits (one line
/// per counter, in words), then one section per non-empty list, a line per
/// message (debts with sender, age and state in aligned columns), then the
/// folder's troubles. Topics (and the channel's name and alarm reasons,
/// which name files of the folder) are peers' text: shown on one line,
/// escaped (`core::peer_text`); so is everything a server sent. Alarm lines
/// stay `  kind feed: reason` under `alarms:`, for scripts that look for
/// them.
fn status_text(shown: &Shown, pending: &Counts) -> String {
    let on = colour();
    let mut t = String::new();
    let who = format!(
        "{} in channel '{}'",
        paint(&one_line(&shown.role), Paint::Cyan, on),
        one_line(&shown.channel)
    );
    if pending.is_empty() {
        t.push_str(&format!("{who}: nothing waits for you\n"));
    } else {
        t.push_str(&format!(
            "{who}, {}\n",
            paint("waiting for you:", Paint::Bold, on)
        ));
        for c in ACTIONABLE {
            if let Some(n) = pending.get(c) {
                t.push_str(&format!("  {}\n", counter_words(c, *n)));
            }
        }
    }
    if !shown.debts.is_empty() {
        t.push_str("\nDebts owed to you:\n");
        let now = now_ms();
        let mut table = Table::new().indent(2);
        for d in &shown.debts {
            let age = d
                .created_at
                .as_deref()
                .and_then(|c| parse_since(c).ok())
                .map(|ms| age(ms, now))
                .unwrap_or_default();
            let state = match d.work_status.as_deref().filter(|w| *w != "none") {
                Some(w) => format!("owed, {}", one_line(w)),
                None => "owed, not taken".to_owned(),
            };
            table.row(vec![
                (format!("#{}", one_line(&d.id)), Paint::Yellow),
                (one_line(d.from.as_deref().unwrap_or("?")), Paint::Cyan),
                (age, Paint::Dim),
                (state, Paint::Red),
                (one_line(&d.topic), Paint::Plain),
            ]);
        }
        t.push_str(&table.render(on));
        t.push_str(&left_out(shown, "debts"));
    }
    let sections = [
        ("needs_you", "Handed to you", &shown.needs_you),
        (
            "resolved_for_you",
            "Resolved for you (confirm or reopen)",
            &shown.resolved_for_you,
        ),
        (
            "awaiting_done",
            "Reported done (check, then confirm)",
            &shown.awaiting_done,
        ),
        ("unblocked", "No longer blocked", &shown.unblocked),
    ];
    for (list, title, rows) in sections {
        if rows.is_empty() {
            continue;
        }
        t.push_str(&format!("\n{title}:\n"));
        let mut table = Table::new().indent(2);
        for l in rows {
            let by = l
                .resolved_by
                .as_deref()
                .map(|b| format!("by {}", one_line(b)))
                .unwrap_or_default();
            table.row(vec![
                (format!("#{}", one_line(&l.id)), Paint::Yellow),
                (one_line(&l.topic), Paint::Plain),
                (by, Paint::Cyan),
            ]);
        }
        t.push_str(&table.render(on));
        t.push_str(&left_out(shown, list));
    }
    let mut tail = String::new();
    if let Some(since) = &shown.tentative_since {
        tail.push_str(&format!(
            "tentative since: {} (a device not heard from since may still bring earlier records)\n",
            one_line(since)
        ));
    }
    if let Some(n) = shown.held {
        tail.push_str(&format!(
            "held: {n} record(s) dated ahead of this machine's clock\n"
        ));
    }
    if let Some(f) = &shown.sync_failed {
        tail.push_str(&format!(
            "sync failed at {}: {}\n  {}\n",
            one_line(&f.at),
            one_line(&f.error),
            one_line(&f.fix)
        ));
    }
    let alarms = shown.alarms.as_deref().unwrap_or_default();
    if !alarms.is_empty() {
        tail.push_str(&format!("{}\n", paint("alarms:", Paint::Red, on)));
        for a in alarms {
            tail.push_str(&format!(
                "  {} {}: {}\n",
                one_line(&a.kind),
                one_line(a.feed.as_deref().unwrap_or_default()),
                one_line(&a.reason)
            ));
        }
        tail.push_str(&left_out(shown, "alarms"));
    }
    if !tail.is_empty() {
        t.push('\n');
        t.push_str(&tail);
    }
    t
}

/// `  … and N more` under a list the report cut short, else nothing.
fn left_out(shown: &Shown, list: &str) -> String {
    match shown.more.get(list).and_then(Value::as_u64) {
        Some(n) => format!("  … and {n} more\n"),
        None => String::new(),
    }
}

// ---------------------------------------------------------------------------------------
// pins

fn pins(cli: &Cli, text: bool) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    crate::app::admission::catch_up(&mut channel)?;
    // pin_list()'s rows: the current version of every key, without bodies.
    let rows = crate::app::pin::current_pins(channel.index())?;
    if text {
        for r in &rows {
            // The TSV's columns: key, version, updated_at, updated_by,
            // approved_by, body_sha256, body_length_bytes.
            let cells = [
                one_line(&r.key),
                one_line(&r.version),
                one_line(&r.updated_at),
                one_line(&r.updated_by),
                r.approved_by.as_deref().map(one_line).unwrap_or_default(),
                one_line(&r.body_sha256),
                r.body_length_bytes.to_string(),
            ];
            outln!("{}", cells.join("\t"));
        }
    } else {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------
// Shared with the hooks: the actionable counters as a map.

/// Non-zero actionable counters by name.
pub(super) type Counts = BTreeMap<String, u64>;

/// The non-zero actionable counters of a summary.
pub(super) fn actionable(sum: &Summary) -> Counts {
    sum.pending()
        .into_iter()
        .map(|(k, n)| (k.to_owned(), n as u64))
        .collect()
}

/// `k=v` for each non-zero counter, in the order of [`ACTIONABLE`], joined by `sep`.
pub(super) fn pending_text(counts: &Counts, sep: &str) -> String {
    ACTIONABLE
        .iter()
        .filter_map(|c| {
            counts
                .get(*c)
                .filter(|n| **n > 0)
                .map(|n| format!("{c}={n}"))
        })
        .collect::<Vec<_>>()
        .join(sep)
}

/// True if some counter of `now` is above its value in `before` (absent = 0).
pub(super) fn grew(now: &Counts, before: &Counts) -> bool {
    now.iter()
        .any(|(k, n)| *n > before.get(k).copied().unwrap_or(0))
}

/// The refusal for a missing role, naming where a role comes from.
pub(super) fn no_role() -> String {
    format!(
        "no role: pass --role ROLE or set {} (or {})",
        ROLE_VARS[0], ROLE_VARS[1]
    )
}

// ---------------------------------------------------------------------------------------
// watch

/// What a watch remembers between polls (and, with `--state`, between runs).
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct WatchState {
    /// The actionable counters at the last readable poll; none before the first.
    last: Option<Counts>,
    /// Polls in a row that could not read the channel.
    failures: u32,
    /// The ids of the messages the last readable poll listed.
    #[serde(default)]
    listed: std::collections::BTreeSet<String>,
}

/// One readable look at the channel: the actionable counters and the
/// newest messages behind them (who sent what), as far as the look can tell.
#[derive(Debug, Default)]
struct Seen {
    counts: Counts,
    messages: Vec<Seen1>,
}

/// A message a look listed.
#[derive(Debug)]
struct Seen1 {
    id: String,
    from: Option<String>,
    topic: String,
}

/// The most messages a watch names under one line.
const NAMED: usize = 5;

/// `HH:MM:SSZ` of `ms`.
fn clock(ms: i64) -> String {
    let t = format_rfc3339(ms);
    t.get(11..19).map(|c| format!("{c}Z")).unwrap_or(t)
}

/// `2 unread messages, 1 debt owed to you …` for the counters of `counts`.
fn in_words(counts: &Counts) -> String {
    ACTIONABLE
        .iter()
        .filter_map(|c| counts.get(*c).map(|n| counter_words(c, *n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The longest pause between two polls during an outage.
const MAX_BACKOFF_S: u64 = 300;

impl WatchState {
    fn load(path: &Path) -> Self {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn save(&self, path: &Path) {
        // A state file that cannot be written only costs the next run its memory.
        let _ = std::fs::write(
            path,
            serde_json::to_vec(self).expect("the state serializes"),
        );
    }

    /// Takes one poll's outcome at `now_ms`; returns the lines to print and
    /// the pause before the next poll. Each line starts with the time; the
    /// first poll says what is already waiting, a later one what grew (by
    /// how much, and the new messages it can name with their senders).
    fn step(
        &mut self,
        poll: Result<Seen, String>,
        interval_s: u64,
        now_ms: i64,
    ) -> (Vec<String>, Duration) {
        let at = clock(now_ms);
        match poll {
            Ok(seen) => {
                let now = seen.counts;
                let mut lines = Vec::new();
                if self.failures > 0 {
                    let n = self.failures;
                    lines.push(format!(
                        "{at} channel readable again after {n} failure{}",
                        if n == 1 { "" } else { "s" }
                    ));
                    self.failures = 0;
                }
                let fresh: Vec<&Seen1> = seen
                    .messages
                    .iter()
                    .filter(|m| !self.listed.contains(&m.id))
                    .collect();
                match &self.last {
                    None if !now.is_empty() => {
                        lines.push(format!("{at} waiting: {}", in_words(&now)));
                    }
                    Some(before) if grew(&now, before) => {
                        let more: Counts = now
                            .iter()
                            .filter_map(|(k, n)| {
                                let was = before.get(k).copied().unwrap_or(0);
                                (*n > was).then(|| (k.clone(), n - was))
                            })
                            .collect();
                        lines.push(format!("{at} new: {}", in_words(&more)));
                        for m in fresh.iter().take(NAMED) {
                            lines.push(format!(
                                "  from {} #{} {}",
                                one_line(m.from.as_deref().unwrap_or("?")),
                                one_line(&m.id),
                                one_line(&m.topic)
                            ));
                        }
                    }
                    _ => {}
                }
                self.listed = seen.messages.into_iter().map(|m| m.id).collect();
                self.last = Some(now);
                (lines, Duration::from_secs(interval_s))
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let lines = if self.failures == 1 {
                    vec![format!("{at} cannot read the channel ({e}); retrying")]
                } else {
                    Vec::new()
                };
                (lines, backoff(interval_s, self.failures))
            }
        }
    }
}

/// The pause after `failures` unreadable polls in a row: the interval doubled
/// per failure (at most 8 times), never above [`MAX_BACKOFF_S`].
fn backoff(interval_s: u64, failures: u32) -> Duration {
    Duration::from_secs(
        interval_s
            .saturating_mul(1 << failures.min(8))
            .min(MAX_BACKOFF_S),
    )
}

/// The loop of `status watch`. Only a missing role stops it before it starts;
/// everything else (no folder yet, a broken index, a stranger role) is an
/// outage, reported once and retried with backoff. Ctrl-C ends it with 0.
fn watch(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let remote = RemoteChannel::from_env()?;
    let role = match &remote {
        Some(_) => None,
        None => Some(Session::role_from(cli.role_arg()?.as_deref())?.with_context(no_role)?),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ended = rt.block_on(async {
        let looping = async {
            match (&remote, &role) {
                (Some(remote), _) => watch_remote(a, remote).await,
                (None, Some(role)) => watch_loop(cli, a, role).await,
                (None, None) => unreachable!("a local watch has a role"),
            }
        };
        tokio::select! {
            biased;
            r = tokio::signal::ctrl_c() => r.map(|()| ExitCode::SUCCESS).context("cannot catch Ctrl-C"),
            r = looping => r,
        }
    });
    // A long poll may still be under way: it is not waited for.
    rt.shutdown_background();
    ended
}

/// How long one look through a server may be held (`/status?wait=`).
const LONG_POLL_S: u64 = 50;

/// The loop of `status watch` through a server: each look is a long poll
/// the server holds until something actionable waits (or 50 s pass). A
/// poll held to its end with nothing found is followed by the next at
/// once; any other by the interval (or the backoff of an outage), so a
/// standing backlog is not asked about in a tight loop.
async fn watch_remote(a: &Args, remote: &RemoteChannel) -> anyhow::Result<ExitCode> {
    let mut state = a.state.as_deref().map(WatchState::load).unwrap_or_default();
    let mut polls = 0u64;
    loop {
        let started = std::time::Instant::now();
        let r = remote.clone();
        let seen = tokio::task::spawn_blocking(move || r.status_wait(LONG_POLL_S))
            .await
            .context("the poll stopped")?
            .map(|report| seen_in(&report))
            .map_err(|e| one_line(&e.to_string()));
        let held = matches!(&seen, Ok(c) if c.counts.is_empty())
            && started.elapsed() >= Duration::from_secs(LONG_POLL_S - 1);
        let (lines, pause) = state.step(seen, a.interval, now_ms());
        emit(&state, a, lines)?;
        polls += 1;
        if a.max_polls.is_some_and(|m| polls >= m) {
            return Ok(ExitCode::SUCCESS);
        }
        if !held {
            tokio::time::sleep(pause).await;
        }
    }
}

/// Saves the state (with --state) and prints a poll's lines.
fn emit(state: &WatchState, a: &Args, lines: Vec<String>) -> anyhow::Result<()> {
    if let Some(path) = &a.state {
        state.save(path);
    }
    for l in lines {
        outln!("{l}");
    }
    Ok(())
}

/// How long a wake-up from the folder waits for the rest of a write (a
/// record and its head.json) before looking.
const SETTLE: Duration = Duration::from_millis(150);

/// Polls, prints what grew, pauses: until the next interval, or sooner when
/// the folder watcher sees a feed change (so a write on this machine is
/// reported at once; the interval covers folders that give no events).
async fn watch_loop(cli: &Cli, a: &Args, role: &Role) -> anyhow::Result<ExitCode> {
    let mut state = a.state.as_deref().map(WatchState::load).unwrap_or_default();
    let mut session = None;
    let mut folder: Option<(Watcher, watch::Receiver<u64>)> = None;
    let mut polls = 0u64;
    loop {
        if let Some((_, rx)) = &mut folder {
            rx.borrow_and_update();
        }
        let seen = poll(cli, role, &mut session).map_err(|e| one_line(&format!("{e:#}")));
        let (lines, pause) = state.step(seen, a.interval, now_ms());
        emit(&state, a, lines)?;
        polls += 1;
        if a.max_polls.is_some_and(|m| polls >= m) {
            return Ok(ExitCode::SUCCESS);
        }
        if folder.is_none()
            && let Some(s) = &session
        {
            // Unwatchable folders (some network mounts) just keep the interval.
            folder = Watcher::start(&s.channel().dir().feeds()).ok().map(|w| {
                let rx = w.subscribe();
                (w, rx)
            });
        }
        match &mut folder {
            // During an outage the backoff holds, whatever the folder does.
            Some((_, rx)) if state.failures == 0 => {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    changed = rx.changed() => match changed {
                        Ok(()) => tokio::time::sleep(SETTLE).await,
                        Err(_) => folder = None,
                    },
                }
            }
            _ => tokio::time::sleep(pause).await,
        }
    }
}

/// What a status report read through a server tells a watch: its counters
/// and the messages its lists name (the debts with their senders).
fn seen_in(report: &Value) -> Seen {
    let counts = counts_pending(report["counts"].as_object().unwrap_or(&Map::new()));
    let mut messages = Vec::new();
    for list in [
        "debts",
        "needs_you",
        "resolved_for_you",
        "awaiting_done",
        "unblocked",
    ] {
        for m in report[list].as_array().into_iter().flatten() {
            let Some(id) = m["id"].as_str() else { continue };
            messages.push(Seen1 {
                id: id.to_owned(),
                from: m["from"].as_str().map(str::to_owned),
                topic: m["topic"].as_str().unwrap_or_default().to_owned(),
            });
        }
    }
    Seen { counts, messages }
}

/// How many of the newest unread messages a look names.
const UNREAD_NAMED: usize = 10;

/// One look at the channel: catch up, count, and name the newest unread
/// messages and the items of the actionable lists. The session is opened
/// on the first poll and again after a failure, so an outage heals by
/// itself.
fn poll(cli: &Cli, role: &Role, session: &mut Option<Session>) -> anyhow::Result<Seen> {
    if session.is_none() {
        *session = Some(Session::new(cli.open_channel()?, Some(role.clone()))?);
    }
    let s = session.as_mut().expect("opened above");
    let seen = s.catch_up().and_then(|()| {
        let sum = summary(s.index(), role)?;
        let mut messages: Vec<Seen1> = s
            .index()
            .inbox_page(role.as_str(), true, UNREAD_NAMED)?
            .into_iter()
            .map(|r| Seen1 {
                id: r.id.short(),
                from: Some(r.from.to_string()),
                topic: r.topic,
            })
            .collect();
        for c in ACTIONABLE {
            for i in sum.items.get(c).into_iter().flatten() {
                let short = crate::app::rows::short(&i.id);
                if messages.iter().any(|m| m.id == short) {
                    continue;
                }
                let from = s.index().message_row(&i.id)?.map(|r| r.from.to_string());
                messages.push(Seen1 {
                    id: short,
                    from,
                    topic: i.topic.clone(),
                });
            }
        }
        Ok::<_, crate::app::AppError>(Seen {
            counts: actionable(&sum),
            messages,
        })
    });
    match seen {
        Ok(seen) => Ok(seen),
        Err(e) => {
            *session = None;
            Err(e.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> Counts {
        pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
    }

    #[test]
    fn pending_text_follows_the_actionable_order() {
        let c = counts(&[("resolved_for_you", 2), ("unread", 1), ("awaiting_ack", 0)]);
        assert_eq!(pending_text(&c, ", "), "unread=1, resolved_for_you=2");
        assert_eq!(pending_text(&Counts::new(), ","), "");
    }

    fn seen(pairs: &[(&str, u64)], messages: &[(&str, &str, &str)]) -> Result<Seen, String> {
        Ok(Seen {
            counts: counts(pairs),
            messages: messages
                .iter()
                .map(|(id, from, topic)| Seen1 {
                    id: (*id).to_owned(),
                    from: Some((*from).to_owned()),
                    topic: (*topic).to_owned(),
                })
                .collect(),
        })
    }

    /// 2026-12-04T10:20:30Z.
    const T: i64 = 1_796_379_630_000;

    #[test]
    fn a_watch_speaks_on_growth_and_outages_only() {
        assert_eq!(clock(T), "10:20:30Z");
        let mut w = WatchState::default();
        let (l, _) = w.step(seen(&[], &[]), 1, T);
        assert!(l.is_empty(), "a quiet first pass says nothing");
        let (l, p) = w.step(
            seen(
                &[("unread", 1)],
                &[("0123456789ab", "frontend", "Login API")],
            ),
            1,
            T,
        );
        assert_eq!(
            l,
            vec![
                "10:20:30Z new: 1 unread message",
                "  from frontend #0123456789ab Login API"
            ]
        );
        assert_eq!(p, Duration::from_secs(1));
        assert!(
            w.step(
                seen(
                    &[("unread", 1)],
                    &[("0123456789ab", "frontend", "Login API")]
                ),
                1,
                T
            )
            .0
            .is_empty(),
            "unchanged"
        );
        assert!(w.step(seen(&[], &[]), 1, T).0.is_empty(), "a decrease");
        let (l, p) = w.step(Err("gone".into()), 5, T);
        assert_eq!(
            l,
            vec!["10:20:30Z cannot read the channel (gone); retrying"]
        );
        assert_eq!(p, Duration::from_secs(10));
        let (l, p) = w.step(Err("gone".into()), 5, T);
        assert!(l.is_empty(), "an outage is reported once");
        assert_eq!(p, Duration::from_secs(20));
        let (l, _) = w.step(seen(&[("needs_you", 1), ("unread", 2)], &[]), 5, T);
        assert_eq!(l[0], "10:20:30Z channel readable again after 2 failures");
        assert_eq!(
            l[1], "10:20:30Z new: 2 unread messages, 1 message handing the ball to you",
            "{l:?}"
        );
    }

    #[test]
    fn the_first_pass_reports_a_backlog_once_as_waiting() {
        let mut w = WatchState::default();
        let (l, _) = w.step(
            seen(&[("unread", 3), ("needs_you", 1)], &[("a", "b", "c")]),
            30,
            T,
        );
        assert_eq!(
            l,
            vec!["10:20:30Z waiting: 3 unread messages, 1 message handing the ball to you"]
        );
        assert!(
            w.step(seen(&[("unread", 3), ("needs_you", 1)], &[]), 30, T)
                .0
                .is_empty()
        );
    }

    #[test]
    fn counters_read_as_words() {
        assert_eq!(
            counter_words("open_obligations_untaken", 2),
            "2 debts owed to you not yet taken up"
        );
        assert_eq!(counter_words("unread", 1), "1 unread message");
        for c in ACTIONABLE {
            assert!(!counter_words(c, 2).contains('_'), "{c}");
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1, 1), Duration::from_secs(2));
        assert_eq!(backoff(1, 3), Duration::from_secs(8));
        assert_eq!(backoff(1, 8), Duration::from_secs(256));
        assert_eq!(backoff(1, 20), Duration::from_secs(256), "2^8 at most");
        assert_eq!(backoff(30, 1), Duration::from_secs(60));
        assert_eq!(backoff(30, 5), Duration::from_secs(300));
        assert_eq!(backoff(u64::MAX, 8), Duration::from_secs(300));
    }
}
