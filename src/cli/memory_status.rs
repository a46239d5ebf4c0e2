//! `countersign memory status [--statusline]`: what the memory waits for
//! here, for people and for Claude Code's status line.
//!
//! The status line form must be quick and must never fail loudly: Claude
//! Code shows whatever it prints, so any trouble (no channel here, an
//! unreadable index) prints nothing of ours, exits 0 and keeps the status
//! line that was there before (`--with`, run first with the same input).

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use serde_json::Value;

use super::Cli;
use crate::app::Session;
use crate::app::compaction::{CompactionStatus, compaction_status, items_waiting, now_ms};
use crate::app::compaction_api::{ApiStatus, api_status, api_word};
use crate::cli::output::{out, outln};

/// Items that must wait before the status line shows anything.
pub const STATUSLINE_FROM: u64 = 30;

/// The most of stdin read: Claude Code's status line input is a few KB.
const MAX_INPUT: u64 = 1024 * 1024;

/// Arguments of `memory status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one short line for Claude Code's status line, or nothing while fewer than 30
    /// items wait; never fails (reads Claude Code's JSON on stdin for the session's folder).
    #[arg(long)]
    pub statusline: bool,
    /// With --statusline: the status line command that was there before, run first with the
    /// same input; its output is kept and ours appended (`install claude` writes this).
    #[arg(long, value_name = "COMMAND", requires = "statusline")]
    pub with: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "statusline")]
    pub json: bool,
}

/// Runs `memory status`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    if a.statusline {
        statusline(cli, a.with.as_deref());
        return Ok(ExitCode::SUCCESS);
    }
    let (st, api) = status(cli)?;
    if a.json {
        let mut v = serde_json::to_value(&st)?;
        v["api"] = serde_json::to_value(&api)?;
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!(
            "items:          {}\n\
             lines waiting:  {} in the view, over {} items\n\
             lines to write: {} ({} ready now, {} being written)\n\
             paused:         {}\n",
            st.items,
            st.lines_waiting,
            st.items_waiting,
            st.wanted,
            st.ready,
            st.leased,
            st.paused
        );
        out!("{}", super::memory_api::status_lines(&api));
    }
    Ok(ExitCode::SUCCESS)
}

fn status(cli: &Cli) -> anyhow::Result<(CompactionStatus, ApiStatus)> {
    let role = Session::role_from(cli.role_arg()?.as_deref())?;
    let mut s = Session::new(cli.open_channel()?, role)?;
    let now = now_ms();
    let st = compaction_status(&mut s, now)?;
    Ok((st, api_status(&mut s, now)?))
}

/// The items waiting, and the API's word while it rests.
fn waiting(cli: &Cli) -> anyhow::Result<(u64, Option<String>)> {
    let mut s = Session::new(cli.open_channel()?, None)?;
    Ok((items_waiting(&mut s)?, api_word(&s, now_ms())))
}

/// The status line: the previous one's output, then ours when enough waits.
fn statusline(cli: &Cli, with: Option<&str>) {
    let input = read_input();
    let before = with.and_then(|c| run_previous(c, &input));
    if let Ok(v) = serde_json::from_slice::<Value>(&input) {
        let dir = v["workspace"]["current_dir"]
            .as_str()
            .or_else(|| v["cwd"].as_str());
        if let Some(d) = dir.map(Path::new).filter(|d| d.is_absolute()) {
            let _ = std::env::set_current_dir(d);
        }
    }
    let ours = waiting(cli)
        .ok()
        .filter(|(n, _)| *n >= STATUSLINE_FROM)
        .map(|(n, api)| match api {
            Some(api) => format!("memory: {n} items wait (/countersign-compact), {api}"),
            None => format!("memory: {n} items wait (/countersign-compact)"),
        });
    let line = match (before, ours) {
        (Some(b), Some(o)) => format!("{b} · {o}"),
        (Some(b), None) => b,
        (None, Some(o)) => o,
        (None, None) => return,
    };
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn read_input() -> Vec<u8> {
    let stdin = std::io::stdin();
    let mut raw = Vec::new();
    if !stdin.is_terminal() {
        let _ = stdin.lock().take(MAX_INPUT).read_to_end(&mut raw);
    }
    raw
}

/// Runs the previous status line command with the same input; its output
/// without the trailing line break, `None` when it printed nothing.
fn run_previous(command: &str, input: &[u8]) -> Option<String> {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let out = child.wait_with_output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
    (!text.is_empty()).then_some(text)
}
