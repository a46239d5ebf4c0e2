//! `countersign inbox`: the messages addressed to a role.

use std::process::ExitCode;

use super::Cli;
use crate::app::inbox::read_inbox;

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

/// Prints the inbox, oldest first.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut session = cli.session_with_role()?;
    let out = read_inbox(&mut session, !a.all, a.limit, None)?;
    if a.json {
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    let rows = out["result"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("(no {}messages)", if a.all { "" } else { "unread " });
    }
    for r in rows {
        let flag = if r["action_required"] == true {
            " [action required]"
        } else {
            ""
        };
        println!(
            "#{} {} from {}{flag}\n  {}\n{}\n",
            r["id"].as_str().unwrap_or_default(),
            r["created_at"].as_str().unwrap_or_default(),
            r["from"].as_str().unwrap_or_default(),
            r["topic"].as_str().unwrap_or_default(),
            indent(r["body"].as_str().unwrap_or_default()),
        );
    }
    if let Some(t) = out.get("truncated") {
        println!("(more: {})", t["note"].as_str().unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
