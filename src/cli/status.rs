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
use crate::core::ids::Role;
use crate::core::peer_text::one_line;
use crate::store::watcher::Watcher;

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
    /// `status` (default): what --role has waiting, as JSON with the counters, their
    /// messages and the open debts; `pins`: the pinned rules; `watch`: stay running and
    /// print one line whenever something actionable arrives (for a background task).
    #[arg(value_enum, default_value_t = View::Status)]
    pub view: View,
    /// Print greppable text (TSV for pins) instead of JSON.
    #[arg(long)]
    pub text: bool,
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
        channel.catch_up()?;
        outln!("{}", channel.index().digest()?);
        return Ok(ExitCode::SUCCESS);
    }
    match a.view {
        View::Status => status(cli, a.text),
        View::Pins => pins(cli, a.text),
        View::Watch => watch(cli, a),
    }
}

// ---------------------------------------------------------------------------------------
// status

fn status(cli: &Cli, text: bool) -> anyhow::Result<ExitCode> {
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
    unblocked: Vec<Line>,
    tentative_since: Option<String>,
    held: Option<i64>,
    sync_failed: Option<SyncFailedLine>,
    alarms: Option<Vec<AlarmLine>>,
    /// The lists cut short: list → how many it left out.
    #[serde(default)]
    more: Map<String, Value>,
}

/// A message in a list: `  #id topic`.
#[derive(Deserialize)]
struct Line {
    id: String,
    #[serde(default)]
    topic: String,
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

/// `channel=… role=…`, `pending: …`, then one section per non-empty list
/// with a `  #id topic` line per message. Topics (and the channel's name and
/// alarm reasons, which name files of the folder) are peers' text: shown on
/// one line, escaped (`core::peer_text`); so is everything a server sent.
fn status_text(shown: &Shown, pending: &Counts) -> String {
    let mut t = format!(
        "channel={} role={}\n",
        one_line(&shown.channel),
        one_line(&shown.role)
    );
    if pending.is_empty() {
        t.push_str("pending: nothing\n");
    } else {
        t.push_str(&format!("pending: {}\n", pending_text(pending, ",")));
    }
    let sections = [
        ("debts", &shown.debts),
        ("needs_you", &shown.needs_you),
        ("resolved_for_you", &shown.resolved_for_you),
        ("unblocked", &shown.unblocked),
    ];
    for (section, rows) in sections {
        if rows.is_empty() {
            continue;
        }
        t.push_str(&format!("{section}:\n"));
        for l in rows {
            t.push_str(&format!("  #{} {}\n", one_line(&l.id), one_line(&l.topic)));
        }
        t.push_str(&left_out(shown, section));
    }
    if let Some(since) = &shown.tentative_since {
        t.push_str(&format!(
            "tentative since: {} (a device not heard from since may still bring earlier records)\n",
            one_line(since)
        ));
    }
    if let Some(n) = shown.held {
        t.push_str(&format!(
            "held: {n} record(s) dated ahead of this machine's clock\n"
        ));
    }
    if let Some(f) = &shown.sync_failed {
        t.push_str(&format!(
            "sync failed at {}: {}\n  {}\n",
            one_line(&f.at),
            one_line(&f.error),
            one_line(&f.fix)
        ));
    }
    let alarms = shown.alarms.as_deref().unwrap_or_default();
    if !alarms.is_empty() {
        t.push_str("alarms:\n");
        for a in alarms {
            t.push_str(&format!(
                "  {} {}: {}\n",
                one_line(&a.kind),
                one_line(a.feed.as_deref().unwrap_or_default()),
                one_line(&a.reason)
            ));
        }
        t.push_str(&left_out(shown, "alarms"));
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
    channel.catch_up()?;
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

    /// Takes one poll's outcome; returns the lines to print and the pause
    /// before the next poll.
    fn step(&mut self, poll: Result<Counts, String>, interval_s: u64) -> (Vec<String>, Duration) {
        match poll {
            Ok(now) => {
                let mut lines = Vec::new();
                if self.failures > 0 {
                    let n = self.failures;
                    lines.push(format!(
                        "countersign: channel readable again after {n} failure{}",
                        if n == 1 { "" } else { "s" }
                    ));
                    self.failures = 0;
                }
                let wake = match &self.last {
                    None => !now.is_empty(),
                    Some(before) => grew(&now, before),
                };
                if wake {
                    lines.push(format!(
                        "countersign: mail arrived — {}. Nothing is required this second; read it \
                         when it fits, or at the latest before you finish.",
                        pending_text(&now, ", ")
                    ));
                }
                self.last = Some(now);
                (lines, Duration::from_secs(interval_s))
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let lines = if self.failures == 1 {
                    vec![format!(
                        "countersign: cannot read the channel ({e}) — retrying"
                    )]
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
            .map(|report| counts_pending(report["counts"].as_object().unwrap_or(&Map::new())))
            .map_err(|e| one_line(&e.to_string()));
        let held = matches!(&seen, Ok(c) if c.is_empty())
            && started.elapsed() >= Duration::from_secs(LONG_POLL_S - 1);
        let (lines, pause) = state.step(seen, a.interval);
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
        let (lines, pause) = state.step(seen, a.interval);
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

/// One look at the channel: catch up, count. The session is opened on the
/// first poll and again after a failure, so an outage heals by itself.
fn poll(cli: &Cli, role: &Role, session: &mut Option<Session>) -> anyhow::Result<Counts> {
    if session.is_none() {
        *session = Some(Session::new(cli.open_channel()?, Some(role.clone()))?);
    }
    let s = session.as_mut().expect("opened above");
    let seen = s.catch_up().and_then(|()| summary(s.index(), role));
    match seen {
        Ok(sum) => Ok(actionable(&sum)),
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

    #[test]
    fn a_watch_speaks_on_growth_and_outages_only() {
        let mut w = WatchState::default();
        let (l, _) = w.step(Ok(Counts::new()), 1);
        assert!(l.is_empty(), "a quiet first pass says nothing");
        let (l, p) = w.step(Ok(counts(&[("unread", 1)])), 1);
        assert_eq!(l.len(), 1);
        assert!(
            l[0].starts_with("countersign: mail arrived — unread=1. Nothing is required"),
            "{l:?}"
        );
        assert_eq!(p, Duration::from_secs(1));
        assert!(
            w.step(Ok(counts(&[("unread", 1)])), 1).0.is_empty(),
            "unchanged"
        );
        assert!(w.step(Ok(Counts::new()), 1).0.is_empty(), "a decrease");
        let (l, p) = w.step(Err("gone".into()), 5);
        assert_eq!(
            l,
            vec!["countersign: cannot read the channel (gone) — retrying"]
        );
        assert_eq!(p, Duration::from_secs(10));
        let (l, p) = w.step(Err("gone".into()), 5);
        assert!(l.is_empty(), "an outage is reported once");
        assert_eq!(p, Duration::from_secs(20));
        let (l, _) = w.step(Ok(counts(&[("needs_you", 1)])), 5);
        assert_eq!(l[0], "countersign: channel readable again after 2 failures");
        assert!(l[1].contains("needs_you=1"), "{l:?}");
    }

    #[test]
    fn the_first_pass_reports_a_backlog_once() {
        let mut w = WatchState::default();
        let (l, _) = w.step(Ok(counts(&[("unread", 3), ("needs_you", 1)])), 30);
        assert_eq!(l.len(), 1);
        assert!(l[0].contains("unread=3, needs_you=1"), "{l:?}");
        assert!(
            w.step(Ok(counts(&[("unread", 3), ("needs_you", 1)])), 30)
                .0
                .is_empty()
        );
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
