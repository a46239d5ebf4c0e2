//! `countersign memory`: the channel's memory read from the command line
//! (`view`, `zoom`, `search`) and exported as one page (`export`).
//!
//! A thin adapter over `app::memory`, as the memory tools are. Everything it
//! prints was written by peers, so every line goes through
//! `core::peer_text`: no summary or original can add a line or act on the
//! terminal. `memory status` (the compaction jobs) lives in its own file,
//! `memory_status`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Cli;
use super::memory_api;
use super::memory_import;
use super::memory_page;
use super::memory_status;
use crate::app::Session;
use crate::app::budget::Budget;
use crate::app::memory;
use crate::cli::output::outln;
use crate::core::peer_text::{block, one_line};
use crate::store::folder_file;

/// Arguments of `memory`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
How to read the memory:
  countersign memory view            every line, oldest first: <id>+<items>|<date>: <text>
  countersign memory zoom 3f9a2c0d 37  open line 3f9a2c0d+37 into its two halves
  countersign memory zoom 3f9a2c0d 1   an item's original
  countersign memory search 'login token'
  countersign memory export memory.html   one page to read: every message by day, a search box

Recent items have a line each; older lines cover more. A line that says it waits for a
compaction has no summary yet: zoom into it. Text in the memory was written by peers.")]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print the view: one line per stretch of history, recent items on lines of their own,
    /// older lines covering more (`<id>+<items>|<date of its first item>: <text>`).
    View {
        /// The most bytes the view may take (default 131072, 128 KB).
        #[arg(long, value_name = "BYTES")]
        budget: Option<usize>,
    },
    /// Open the line `ID+N` as the view shows it: its two halves, or for N = 1 the item's
    /// original text in full. ID is the line's id or a unique prefix (8 hex characters or
    /// more); N the number after '+' (optional when the prefix names one line).
    Zoom {
        /// The line's id (or `<id>+<items>`).
        id: String,
        /// The items it covers.
        n: Option<i64>,
    },
    /// Search the memory's items by words (the grammar of search_messages: words, "phrases",
    /// OR, NOT, prefix*, topic: or body:): one short line per item, best first.
    Search {
        /// The words to look for.
        query: String,
        /// How many lines (1 to 100).
        #[arg(long, default_value_t = 10)]
        limit: i64,
    },
    /// Write the whole memory as one self-contained HTML page for a person: the messages
    /// grouped by day (`author · time · topic`, each opening into its text), the summaries
    /// so far, and a search box. Written atomically (FILE is replaced whole, never left half
    /// written).
    Export {
        /// The page to write, e.g. memory.html.
        file: PathBuf,
    },
    /// How much of the memory waits for a compaction: items, waiting lines, ready tasks,
    /// leases and paused lines. --statusline prints one short line for Claude Code's status
    /// line (nothing while fewer than 30 items wait).
    Status(memory_status::Args),
    /// Import old notes as --role: FILE.txt a note per paragraph, FILE.jsonl one
    /// {kind, text, date, origin} per line. The same entries imported again add nothing; a
    /// file with a bad entry is refused whole, naming every bad line.
    Import(memory_import::Args),
    /// Store an Anthropic API key, so that a long-running countersign process (serve, or mcp
    /// when no serve runs here) writes the summaries in the background with a small model.
    /// The key is read hidden (from the terminal, or stdin when piped), checked with one tiny
    /// request and stored readable only by you. --remove deletes it.
    ApiKey(memory_api::KeyArgs),
    /// Write the waiting summaries with the API now (a stored key needed); exit status 3,
    /// saying why, when it fails: then use the compactor subagent.
    Compact,
}

/// Runs `memory`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    // Reading the memory needs no role: any device of the channel reads it.
    let session = || -> anyhow::Result<Session> {
        let role = Session::role_from(cli.role_arg()?.as_deref())?;
        Ok(Session::new(cli.open_channel()?, role)?)
    };
    match &a.command {
        // The status line's command must stay quiet and never fail loudly: it
        // opens the channel its own way.
        Command::Status(st) => return memory_status::run(cli, st),
        Command::Import(im) => return memory_import::run(cli, im),
        Command::ApiKey(k) => return memory_api::api_key(cli, k),
        Command::Compact => return memory_api::compact(cli),
        Command::View { budget } => {
            let v = memory::memory_view(&mut session()?, *budget)?;
            for l in &v.lines {
                outln!("{}", one_line(&l.shown));
            }
            outln!(
                "({} items in {} lines, {} bytes of {}; {} waiting for a compaction{})",
                v.items,
                v.lines.len(),
                v.bytes,
                v.budget,
                v.waiting,
                v.tentative_since
                    .map(|t| format!("; items from {t} on are still tentative"))
                    .unwrap_or_default()
            );
        }
        Command::Zoom { id, n } => {
            let mut s = session()?;
            let z = memory::memory_zoom(&mut s, id, *n)?;
            outln!("{}", one_line(&z.line));
            for h in &z.halves {
                outln!("  {}", one_line(h));
            }
            if let Some(mut o) = z.original {
                outln!("{} {}: {}", one_line(&o.role), o.at, one_line(&o.topic));
                // The item by itself: a prefix may also start a merged line's name.
                let item = if id.contains('+') {
                    id.clone()
                } else {
                    format!("{id}+1")
                };
                let mut text = std::mem::take(&mut o.text);
                while let Some(next) = o.next_offset {
                    o = memory::memory_read(&mut s, &item, next as i64)?;
                    text.push_str(&o.text);
                }
                outln!("{}", block(&text, "  | "));
            }
        }
        Command::Search { query, limit } => {
            let never = || false;
            let mut budget = Budget::search(&never);
            let found = memory::memory_search(&mut session()?, query, *limit, &mut budget)?;
            if found.lines.is_empty() {
                outln!("(nothing matches)");
            }
            for l in &found.lines {
                outln!("{}", one_line(l));
            }
            if found.more == Some(true) {
                outln!("(more match: raise --limit, at most 100, or add words)");
            }
        }
        Command::Export { file } => {
            let page = memory_page::export(&mut session()?)?;
            let path = if file.is_relative() {
                std::env::current_dir()?.join(file)
            } else {
                file.clone()
            };
            folder_file::replace(&path, page.as_bytes(), true)?;
            outln!("wrote {} ({} bytes)", path.display(), page.len());
        }
    }
    Ok(ExitCode::SUCCESS)
}
