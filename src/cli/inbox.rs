//! `countersign inbox`: the messages addressed to a role.

use std::process::ExitCode;

use super::Cli;
use crate::app::inbox::read_inbox;
use crate::app::rows::{MessageView, Projected};
use crate::cli::output::outln;
use crate::core::peer_text;

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
}

/// Prints the inbox, oldest first. Each message is a header line (`#id time
/// from role`), its topic on one indented line and its body with every line
/// behind `  | `: whatever a peer wrote, no line of it can pass for a header,
/// and nothing in it acts on the terminal (`core::peer_text`).
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut session = cli.session_with_role()?;
    let out = read_inbox(&mut session, !a.all, a.limit, None)?;
    if a.json {
        outln!("{}", serde_json::to_string(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    // No projection was asked for, so every row is whole.
    let rows: Vec<&MessageView> = out.result.iter().filter_map(Projected::whole).collect();
    if rows.is_empty() {
        outln!("(no {}messages)", if a.all { "" } else { "unread " });
    }
    for r in rows {
        let flag = if r.action_required {
            " [action required]"
        } else {
            ""
        };
        outln!(
            "#{} {} from {}{flag}\n  {}\n{}\n",
            r.id,
            r.created_at,
            r.from,
            peer_text::one_line(&r.topic),
            peer_text::block(&r.body, "  | "),
        );
    }
    if let Some(t) = &out.truncated {
        outln!("(more: {})", t.note);
    }
    Ok(ExitCode::SUCCESS)
}
