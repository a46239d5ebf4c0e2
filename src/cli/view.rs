//! `countersign view ID`: one message as a person reads it: its header,
//! its body, and the thread it belongs to, one line per message.
//!
//! Reads only: viewing records nothing (no delivery, no read), whoever
//! looks. Peer text goes through `core::peer_text`: the body's lines sit
//! behind `  | `, so none of them can pass for a line of ours.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Cli;
use super::message_table;
use super::terminal::{Paint, colour, page, paint};
use crate::app::Session;
use crate::app::rows::{MessageView, Projected, Recipients};
use crate::app::thread::get_thread;
use crate::cli::output::outln;
use crate::core::peer_text::{block, one_line};
use crate::store::now_ms;

/// Arguments of `view`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The message's id, or a unique prefix of it (8 hex characters or more).
    pub id: String,
    /// Print the thread as get_thread's JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Prints the message and its thread.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    // Viewing needs no role: any device of the channel reads it.
    let role = Session::role_from(cli.role_arg()?.as_deref())?;
    let mut s = Session::new(cli.open_channel()?, role)?;
    let wanted = a.id.trim().trim_start_matches('#');
    let thread = get_thread(&mut s, wanted, None)?;
    if a.json {
        outln!("{}", serde_json::to_string(&thread)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<&MessageView> = thread.result.iter().filter_map(Projected::whole).collect();
    let wanted = wanted.to_ascii_lowercase();
    let m = rows
        .iter()
        .find(|r| wanted.starts_with(&r.id) || r.id.starts_with(&wanted))
        .context("the message is not in its own thread")?;
    let now = now_ms();
    let on = colour();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{}  {}",
        paint(&format!("#{}", m.id), Paint::Yellow, on),
        paint(&one_line(&m.topic), Paint::Bold, on)
    );
    let to = match &m.to {
        Recipients::One(r) => r.as_deref().map(one_line).unwrap_or_default(),
        Recipients::Many(rs) => rs
            .iter()
            .map(|r| one_line(r))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let (state, how) = message_table::state(m);
    let cells = message_table::cells(m, now);
    let _ = writeln!(
        t,
        "from {} to {to} · {} ({} ago) · {}",
        paint(&one_line(&m.from), Paint::Cyan, on),
        m.created_at,
        cells[2].0,
        paint(&state, how, on)
    );
    let mut facts = Vec::new();
    if let Some(k) = &m.kind {
        facts.push(format!("kind {}", one_line(k)));
    }
    if let Some(p) = &m.reply_to {
        facts.push(format!("reply to #{}", one_line(p)));
    }
    if let Some(b) = &m.blocked_by {
        facts.push(format!("blocked by #{}", one_line(b)));
    }
    if let Some(k) = &m.pin_key {
        facts.push(format!("proposal for pin '{}'", one_line(k)));
    }
    if let Some(r) = &m.revised_at {
        facts.push(format!("revised {r}"));
    }
    if !facts.is_empty() {
        let _ = writeln!(t, "{}", facts.join(" · "));
    }
    if let (Some(by), Some(at)) = (&m.resolved_by, &m.resolved_at) {
        let note = m
            .resolution_note
            .as_deref()
            .map(|n| format!(": {}", one_line(n)))
            .unwrap_or_default();
        let _ = writeln!(t, "resolved by {} at {at}{note}", one_line(by));
    }
    let _ = writeln!(t, "\n{}\n", block(&m.body, "  | "));
    if rows.len() > 1 {
        let _ = writeln!(t, "thread ({} messages):", rows.len());
        let mut table = message_table::table(rows.iter().copied(), now).indent(2);
        // The message shown above is marked in its thread.
        table.mark(rows.iter().position(|r| r.id == m.id));
        t.push_str(&table.render(on));
    }
    page(&t);
    Ok(ExitCode::SUCCESS)
}
