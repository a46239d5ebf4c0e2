//! `countersign memory …`: the channel's memory from the command line.
//! Only `status` is here for now (`memory_status`); the reading commands
//! (view, zoom, search, export) join this enum.

use std::process::ExitCode;

use super::Cli;
use super::memory_status;

/// Arguments of `memory`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

/// What `memory` does.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// How much of the memory waits for a compaction: items, waiting lines, ready tasks,
    /// leases and paused lines. --statusline prints one short line for Claude Code's status
    /// line (nothing while fewer than 30 items wait).
    Status(memory_status::Args),
}

/// Runs `memory`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    match &a.command {
        Command::Status(s) => memory_status::run(cli, s),
    }
}
