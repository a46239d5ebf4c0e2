//! `countersign hook record EVENT`: the recording hooks `install --record`
//! wires into Claude Code and Codex, and `hook deliver`, which drains the
//! spool they fill.
//!
//! A recording hook reads the client's hook input (JSON on stdin, bounded),
//! makes the notes of the event and writes each to the spool of this home,
//! fsynced, before anything else. On `UserPromptSubmit`: the prompt; a
//! message from another session as a `peer` note; nothing for a notice the
//! client made itself (`core::memory::notice`), but a background subagent's
//! report inside one as a `report` note. Nothing for an event of a Codex
//! thread that keeps no transcript (the app's task suggestions). On `Stop`: the final reply, one
//! short record of the turn's tool calls, and the answers, reports and
//! approved plans the turn brought in, from the input and the end of the
//! transcript file it names. Every note names the folder the session worked
//! in, relative to the project root, with a short hash of the absolute
//! folder (never the path). Then it starts a detached `hook deliver` and
//! returns: a turn never waits for the channel. Whatever fails, the hook
//! exits 0 and says why on stderr and in `spool/record.log`. An input that
//! makes no event (not a notice: one it cannot read) is kept in
//! `spool/failed/`.
//!
//! Each event has an id made from the agent, its session, the event, what
//! tells two events of a session apart (the client's own id of the turn or
//! prompt where it gives one: Codex's `turn_id`, Claude Code's `prompt_id`;
//! else the transcript's length when the hook ran) and a hash of what the
//! event records; a note taken from one transcript entry has that entry's
//! id in place of the turn's. So a second delivery of one event adds nothing, and two
//! different events are never taken for one: two prompts while the
//! transcript did not grow, or a second Stop of one turn that a Stop hook
//! sent on. With `COUNTERSIGN_SPOOL_ONLY`
//! set the hook spools and starts no delivery, as if it had crashed there:
//! the next hook run (or `countersign note`) delivers what it left.

use std::fs::OpenOptions;
use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;
use serde_json::Value;

use super::super::Cli;
use super::transcript::{self, Turn};
use crate::app::Session;
use crate::app::recording;
use crate::core::memory::note::{self, NoteKind};
use crate::core::memory::{notice, provenance};
use crate::core::peer_text::one_line;
use crate::store::spool::{Spool, SpooledEvent};
use crate::store::{Home, binding};

/// The most of stdin a recording hook reads (a prompt is at most what the
/// client accepts; past this the input is cut and the event fails).
const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// The environment variable that makes a recording hook spool only.
pub const SPOOL_ONLY_VAR: &str = "COUNTERSIGN_SPOOL_ONLY";

/// The log of the recording hooks and of the deliveries they start, in the
/// spool folder; cut when it passes this size.
const MAX_LOG: u64 = 1024 * 1024;

/// The agent clients whose hooks record.
const AGENTS: [&str; 2] = ["claude", "codex"];

/// Runs `hook record EVENT`: spools the event's notes and starts their
/// delivery. Never fails.
pub fn record(cli: &Cli, event: Option<&str>, agent: Option<&str>) {
    let home = match cli.home() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("countersign hook record: no home ({e:#}); nothing was recorded");
            return;
        }
    };
    let spool = Spool::of(&home);
    let raw = read_raw();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        spool_event(cli, &spool, &raw, event, agent)
    }));
    let outcome = match result {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err("internal error".to_owned()),
    };
    match outcome {
        Ok(_) => {}
        Err(why) => {
            let why = one_line(&why);
            let kept = spool
                .put_failed(&raw, &why)
                .map(|p| format!("the input is kept in {}", p.display()))
                .unwrap_or_else(|e| format!("the input could not be kept ({e})"));
            log(&spool, &format!("hook record: {why}; {kept}"));
            eprintln!("countersign hook record: {why}; {kept}");
        }
    }
    // Delivered by a detached child: what this run spooled, and whatever
    // an earlier run left (a crash, a channel that was out of reach).
    if std::env::var_os(SPOOL_ONLY_VAR).is_none_or(|v| v.is_empty())
        && let Err(e) = start_delivery(&home, &spool)
    {
        let why = one_line(&format!("{e:#}"));
        log(&spool, &format!("hook record: no delivery started ({why})"));
        eprintln!("countersign hook record: no delivery started ({why}); the next run will");
    }
}

/// Runs `hook deliver`: drains the spool, waiting for a delivery running
/// elsewhere. Never fails; what it did goes to stderr.
pub fn deliver(cli: &Cli) {
    let Ok(home) = cli.home() else {
        eprintln!("countersign hook deliver: no home");
        return;
    };
    let spool = Spool::of(&home);
    match recording::deliver(&home, true) {
        Ok(Some(d)) => {
            for (path, why) in &d.failed {
                log(
                    &spool,
                    &format!("deliver: {} failed: {why}", path.display()),
                );
            }
            for (path, why) in &d.left {
                log(
                    &spool,
                    &format!("deliver: {} left for later: {why}", path.display()),
                );
            }
        }
        Ok(None) => {}
        Err(e) => log(&spool, &format!("deliver: {}", one_line(&e.to_string()))),
    }
}

/// Stdin, bounded; empty from a terminal.
fn read_raw() -> Vec<u8> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Vec::new();
    }
    let mut raw = Vec::new();
    let _ = stdin.lock().take(MAX_INPUT).read_to_end(&mut raw);
    raw
}

/// Makes the event's notes and spools them; returns how many.
fn spool_event(
    cli: &Cli,
    spool: &Spool,
    raw: &[u8],
    event: Option<&str>,
    agent: Option<&str>,
) -> anyhow::Result<usize> {
    let input: Value = serde_json::from_slice(raw).context("the hook input is not JSON")?;
    anyhow::ensure!(input.is_object(), "the hook input is not a JSON object");
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    let event = event
        .or(s("hook_event_name"))
        .context("no event: name it (`hook record UserPromptSubmit`) or pass hook_event_name")?;
    // Codex gives every turn-scoped hook a turn id; Claude Code gives none.
    let agent = match agent {
        Some(a) => a,
        None if input.get("turn_id").is_some() => "codex",
        None => "claude",
    };
    anyhow::ensure!(
        AGENTS.contains(&agent),
        "unknown agent '{agent}' (claude or codex)"
    );
    super::enter_session_folder(&input);
    // A folder no channel is bound to (Codex's per-user hooks run in every
    // project): nothing to record there.
    if cli.unbound() {
        return Ok(0);
    }
    let role = Session::role_from(cli.role_arg()?.as_deref())?
        .context("no role: this folder has no project binding (run `countersign install`)")?;
    let root = cli.channel_dir()?.root().to_path_buf();
    let channel = root.canonicalize().unwrap_or(root);
    let session_id = s("session_id").unwrap_or_default();
    let transcript_path = s("transcript_path")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    // A Codex thread that keeps no rollout file (`transcript_path` null) is
    // one nobody returns to: the app's background threads, such as the one
    // asking the model for task suggestions, and `codex exec --ephemeral`.
    // Every thread a person works in has its rollout, so no typed prompt is
    // lost by skipping these.
    if agent == "codex" && transcript_path.is_none() {
        return Ok(0);
    }
    // What tells two events of one session apart: the client's own id of
    // the turn or prompt, else the transcript's length; with the content
    // (below), as either can stand still between two events.
    let when = match CLIENT_IDS
        .iter()
        .find_map(|k| s(k).filter(|v| !v.is_empty()))
    {
        Some(id) => format!("id:{id}"),
        None => format!(
            "size:{}",
            transcript_path.as_deref().map_or(0, transcript::size)
        ),
    };
    let cwd = s("cwd").unwrap_or_default();
    let (folder, folder_hash) = match folder_of(cwd) {
        Some((f, h)) => (Some(f), Some(h)),
        None => (None, None),
    };
    // Each note: its kind, text, the part of the event it is, and the
    // client's id of the transcript entry it came from when it has its own.
    let mut notes: Vec<(NoteKind, String, &str, Option<String>)> = Vec::new();
    match event {
        "UserPromptSubmit" => {
            let prompt = s("prompt").context("UserPromptSubmit without a prompt")?;
            if let Some((from, text)) = notice::peer_message(prompt) {
                let text = match from {
                    Some(f) => format!("from {f}:\n{text}"),
                    None => text,
                };
                notes.push((NoteKind::Peer, note::cut_chars(&text), "peer", None));
            } else if notice::is_generated(prompt) {
                // The client's own notice, not a prompt: only a background
                // subagent's report in it is kept.
                if let Some(r) = transcript::background_report(prompt) {
                    notes.push((NoteKind::Report, r, "report", None));
                }
            } else {
                notes.push((NoteKind::Prompt, prompt.to_owned(), "prompt", None));
            }
        }
        "Stop" => {
            let lines = transcript_path
                .as_deref()
                .map(transcript::tail_lines)
                .unwrap_or_default();
            let turn = match agent {
                "codex" => transcript::codex_turn(&lines, cwd),
                _ => transcript::claude_turn(&lines, cwd),
            };
            let reply = s("last_assistant_message")
                .map(str::to_owned)
                .or_else(|| turn.reply.clone());
            if let Some(r) = reply.filter(|r| !r.trim().is_empty()) {
                notes.push((NoteKind::Reply, r, "reply", None));
            }
            if let Some(t) = Turn::record(&turn) {
                notes.push((NoteKind::Turn, t, "turn", None));
            }
            for k in turn.kept {
                let entry = (!k.entry.is_empty()).then_some(k.entry);
                notes.push((k.kind, k.text, k.kind.as_str(), entry));
            }
        }
        other => anyhow::bail!(
            "'{other}' is no event that records (UserPromptSubmit, Stop); run `countersign \
             install` again to set the hooks right"
        ),
    }
    let session = (!session_id.is_empty()).then(|| note::session_hash(session_id));
    let mut spooled = 0;
    for (kind, text, part, entry) in notes {
        let content = content_hash(&text);
        // A note from one transcript entry is that entry's, whichever Stop
        // reads it: its id is the entry's, so a later Stop that reads it
        // again adds nothing.
        let event_id = match &entry {
            Some(uuid) => note::event_id(&[agent, session_id, "entry", uuid, part, &content]),
            None => note::event_id(&[agent, session_id, event, &when, part, &content]),
        };
        let e = SpooledEvent {
            channel: channel.clone(),
            role: role.to_string(),
            kind: kind.as_str().to_owned(),
            text: note::cut(&text),
            event: event_id,
            agent: agent.to_owned(),
            session: session.clone(),
            folder: folder.clone(),
            folder_hash: folder_hash.clone(),
        };
        spool.put(&e)?;
        spooled += 1;
    }
    Ok(spooled)
}

/// The folder a session works in (`cwd`, absolute) as a note records it:
/// relative to the project root (the folder of the nearest project binding,
/// else `cwd` itself), and a short hash of the absolute folder. `None` when
/// the hook input names no absolute folder.
fn folder_of(cwd: &str) -> Option<(String, String)> {
    let dir = Path::new(cwd);
    if !dir.is_absolute() {
        return None;
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let root = binding::find(&dir)
        .ok()
        .flatten()
        .and_then(|f| f.path.parent().map(Path::to_path_buf))
        .map(|r| r.canonicalize().unwrap_or(r))
        .unwrap_or_else(|| dir.clone());
    let relative = dir
        .strip_prefix(&root)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some((
        provenance::folder_label(&relative),
        provenance::folder_hash(&dir.to_string_lossy()),
    ))
}

/// The fields of a hook input that carry the client's own id of the turn
/// or prompt an event belongs to, in the order they are taken: Codex's turn
/// id, Claude Code's prompt id.
const CLIENT_IDS: [&str; 2] = ["turn_id", "prompt_id"];

/// A hash of what an event records, for its id when the client gives none.
fn content_hash(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Starts `countersign hook deliver` detached: its own process group, no
/// terminal, stdin closed, stderr to the log, nobody waiting for it.
fn start_delivery(home: &Home, spool: &Spool) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe().context("cannot find this executable")?;
    std::fs::create_dir_all(spool.dir())?;
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(spool))?;
    let mut c = Command::new(exe);
    if let Some(root) = home.root() {
        c.arg("--home").arg(root);
    }
    c.args(["hook", "deliver"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0);
    c.spawn().context("cannot start the delivery")?;
    Ok(())
}

fn log_path(spool: &Spool) -> PathBuf {
    spool.dir().join("record.log")
}

/// Appends a line to the spool's log (cut when too large); a log that
/// cannot be written is not worth failing over.
fn log(spool: &Spool, line: &str) {
    let path = log_path(spool);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG) {
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::fs::create_dir_all(spool.dir());
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&path) {
        let _ = writeln!(
            f,
            "{} {line}",
            crate::core::timestamp::format_rfc3339(crate::store::now_ms())
        );
    }
}
