//! `countersign mcp`: serve one agent session over stdio.

use std::process::ExitCode;

use super::Cli;
use crate::mcp::Server;

/// Arguments of `mcp` (the role and channel are global options).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Serves until the client closes stdin.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("COUNTERSIGN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let session = cli.session_with_role()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(Server::new(session).serve_stdio())?;
    Ok(ExitCode::SUCCESS)
}
