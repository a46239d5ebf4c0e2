//! `countersign mcp`: serve one agent session over stdio (in a folder bound
//! to no channel, the one tool that says so: `mcp::unbound`).

use std::process::ExitCode;
use std::time::Duration;

use super::Cli;
use crate::mcp::Server;
use crate::mcp::toolset::{self, Toolsets};
use crate::mcp::unbound::Unbound;

/// Arguments of `mcp` (the role and channel are global options).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  countersign mcp --role backend\n  \
    countersign mcp --role backend --sync-every 30s\n  \
    countersign mcp --role backend --tools mail,debts\n\n\
    With --sync-every, the channel is synced with its remote (`countersign remote set`) in the \
    background: every interval and about a second after each own write. One process per machine \
    and channel syncs at a time; a failed sync is logged to stderr and retried.")]
pub struct Args {
    /// Sync with the channel's remote in the background this often (e.g. 30s, 2m, 500ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub sync_every: Option<Duration>,
    /// Serve only these toolsets: mail, debts, consent, uploads, jobs (the compactor's,
    /// never in all), all (the default).
    #[arg(long, value_name = "SET[,SET...]", default_value = "all",
          value_parser = Toolsets::parse, long_help = toolset::help())]
    pub tools: Toolsets,
}

/// Parses a sync interval: a duration of at least 100ms.
pub(super) fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = super::duration::parse(s)?;
    if d < Duration::from_millis(100) {
        return Err("the sync interval must be at least 100ms".into());
    }
    Ok(d)
}

/// Logs go to stderr (stdout may be the protocol), filtered by
/// `COUNTERSIGN_LOG` (default `warn`).
pub fn log_to_stderr() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("COUNTERSIGN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
}

/// Serves until the client closes stdin.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    log_to_stderr();
    // The per-user entry of a client starts this in every project: where
    // nothing names a channel, serve the one tool that says so and exit 0.
    if cli.unbound() {
        let folder = std::env::current_dir()?;
        let channel_above = folder
            .ancestors()
            .map(|d| d.join(crate::store::channel_dir::DEFAULT_DIR))
            .find(|d| d.join("channel.json").is_file());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(Unbound::new(folder, channel_above).serve_stdio())?;
        return Ok(ExitCode::SUCCESS);
    }
    // A server that did not get COUNTERSIGN_HOME lands in the default home
    // and makes a new device there: say so where the client logs stderr.
    let home = cli.home()?;
    let fresh = home.is_default() && !home.has_device();
    let session = cli.session_with_role()?;
    if fresh {
        tracing::warn!(
            "made a new device in the default home {}: if this device's keys live in another \
             home, COUNTERSIGN_HOME did not reach this server — set it in the client's server \
             entry (`countersign install` does)",
            home.describe()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut server = Server::with_toolsets(session, a.tools.clone());
    if let Some(every) = a.sync_every {
        server = server.with_sync_every(every);
    }
    let served = rt.block_on(server.serve_stdio());
    // A background sync may be waiting on a slow remote: the session is over,
    // so do not wait for it long (its next run, anywhere, picks the work up).
    rt.shutdown_timeout(Duration::from_secs(2));
    served?;
    Ok(ExitCode::SUCCESS)
}
