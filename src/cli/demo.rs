//! `countersign demo`: a throwaway channel, two roles, a short exchange
//! through the real MCP server, printed.

use std::process::ExitCode;

use super::Cli;

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the demo.
pub fn run(_cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("demo is not written yet")
}
