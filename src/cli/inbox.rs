//! `countersign inbox`: the messages addressed to a role.
//!
//! One line per message (id, from, age, state, topic), bodies with `--full`.
//! Listing the inbox records delivery (`opened`) as the role, as read_inbox
//! does, except for a peek: `--peek`, and always at a person's terminal
//! (said on stderr), so that a person looking changes no agent's counters.

use std::fmt::Write as _;
use std::process::ExitCode;

use super::Cli;
use super::message_table;
use super::terminal::{self, colour, page};
use crate::app::inbox::{peek_inbox, read_inbox};
use crate::app::rows::{MessageView, Projected};
use crate::cli::output::outln;
use crate::core::peer_text;
use crate::store::now_ms;

/// Arguments of `inbox`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Include messages already marked read.
    #[arg(long)]
    pub all: bool,
    /// How many of the newest messages (1 to 1000).
    #[arg(long, default_value_t = 50)]
    pub limit: i64,
    /// Print the tool's JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Each message in full: a header line, its topic and its body.
    #[arg(long)]
    pub full: bool,
    /// Look without recording delivery, so the role's counters stay as they are (the
    /// default at a person's terminal).
    #[arg(long, conflicts_with = "deliver")]
    pub peek: bool,
    /// Record delivery as the role even at a person's terminal (as an agent's read_inbox
    /// does).
    #[arg(long)]
    pub deliver: bool,
}

/// Prints the inbox, oldest first: one line per message, or with `--full`
/// a header line (`#id time from role`), its topic on one indented line and
/// its body with every line behind `  | `: whatever a peer wrote, no line of
/// it can pass for a header, and nothing in it acts on the terminal
/// (`core::peer_text`).
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut session = cli.session_with_role()?;
    let person = !a.deliver && !a.peek && terminal::person_at_terminal();
    let out = if a.peek || person {
        if person {
            eprintln!(
                "(a look: nothing is recorded as delivered to {}; --deliver records it)",
                session.role()?
            );
        }
        peek_inbox(&mut session, !a.all, a.limit)?
    } else {
        read_inbox(&mut session, !a.all, a.limit, None)?
    };
    if a.json {
        outln!("{}", serde_json::to_string(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    // No projection was asked for, so every row is whole.
    let rows: Vec<&MessageView> = out.result.iter().filter_map(Projected::whole).collect();
    let mut text = String::new();
    if rows.is_empty() {
        let _ = writeln!(text, "(no {}messages)", if a.all { "" } else { "unread " });
    }
    if a.full {
        for r in rows {
            let flag = if r.action_required {
                " [action required]"
            } else {
                ""
            };
            let _ = writeln!(
                text,
                "#{} {} from {}{flag}\n  {}\n{}\n",
                r.id,
                r.created_at,
                peer_text::one_line(&r.from),
                peer_text::one_line(&r.topic),
                peer_text::block(&r.body, "  | "),
            );
        }
    } else {
        text.push_str(&message_table::table(rows, now_ms()).render(colour()));
    }
    if let Some(t) = &out.truncated {
        let _ = writeln!(text, "(more: {})", t.note);
    }
    page(&text);
    Ok(ExitCode::SUCCESS)
}
