//! `countersign pin show KEY`: a pinned rule whole, as a person reads it.

use std::process::ExitCode;

use super::Cli;
use crate::app::Session;
use crate::app::pin::versions;
use crate::cli::output::{out, outln};
use crate::core::peer_text::{block, one_line};

/// Arguments of `pin`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  countersign pin show style\n  \
    countersign pin show style --version v1\n\n`status pins` lists every key.")]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Print the current text of a pin with its version, sha256, author and approval
    /// (exit 1 if nothing is pinned under KEY).
    Show {
        /// The pin key.
        key: String,
        /// Print this version (its label) instead of the current one.
        #[arg(long, value_name = "LABEL")]
        version: Option<String>,
    },
}

/// Runs `pin show`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let Action::Show { key, version } = &a.action;
    let mut s = Session::new(cli.open_channel()?, None)?;
    let all = versions(&mut s, key)?;
    let chosen = match version {
        Some(label) => all.iter().find(|v| v.version == *label),
        None => all.first(),
    };
    let Some(v) = chosen else {
        let what = match version {
            Some(label) => format!(
                "no version '{}' of pin '{}'",
                one_line(label),
                one_line(key)
            ),
            None => format!("nothing is pinned under '{}'", one_line(key)),
        };
        eprintln!("countersign: {what}; `countersign status pins` lists the pinned keys");
        return Ok(ExitCode::from(1));
    };
    // Names and labels are peers' text: one line each, escaped; the text
    // keeps its own line breaks and nothing else that could act on a
    // terminal (`core::peer_text`).
    outln!("pin {} — {}", one_line(&v.key), one_line(&v.title));
    outln!(
        "version {} of {} · sha256 {} · {} bytes",
        one_line(&v.version),
        all.len(),
        v.body_sha256,
        v.body_length_bytes
    );
    outln!(
        "set by {} at {}{}",
        one_line(&v.updated_by),
        v.updated_at,
        v.approved_by
            .as_deref()
            .map(|id| format!(", approved by #{id}"))
            .unwrap_or_else(|| ", set directly".to_owned())
    );
    outln!();
    out!("{}", block(&v.body, ""));
    if !v.body.ends_with('\n') {
        outln!();
    }
    Ok(ExitCode::SUCCESS)
}
