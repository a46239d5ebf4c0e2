//! `countersign mcp`: serve one agent session over stdio (in a folder bound
//! to no channel, the one tool that says so: `mcp::unbound`).

use std::process::ExitCode;
use std::time::Duration;

use super::Cli;
use crate::app::Session;
use crate::mcp::toolset::{self, Toolsets};
use crate::mcp::unbound::Unbound;
use crate::mcp::{Place, Server};
use crate::store::Channel;

/// Arguments of `mcp` (the role and channel are global options).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  countersign mcp --role backend\n  \
    countersign mcp --role backend --sync-every 2m\n  \
    countersign mcp --role backend --sync-every off\n  \
    countersign mcp --role backend --tools mail,debts\n\n\
    When the channel has a remote (`countersign remote set`, or the origin of a git clone of the \
    channel), the server syncs with it by default: about a second after each own write, and every \
    30 s while idle. A sync that any process on this machine made less than a period ago, with \
    nothing new of this device since, serves every process. A failed sync is retried after a \
    pause that doubles up to 10 minutes, and channel_status says what failed. A channel with no \
    remote is left alone.")]
pub struct Args {
    /// Sync with the channel's remote in the background this often while idle (e.g. 30s, 2m,
    /// 500ms), and about a second after each own write; `off`: never.
    #[arg(long, value_name = "DURATION|off", default_value = DEFAULT_SYNC_EVERY,
          value_parser = parse_sync_every)]
    pub sync_every: SyncEvery,
    /// Serve only these toolsets: mail, debts, consent, uploads, jobs (the compactor's,
    /// never in all), all (the default).
    #[arg(long, value_name = "SET[,SET...]", default_value = "all",
          value_parser = Toolsets::parse, long_help = toolset::help())]
    pub tools: Toolsets,
    /// Where the board_link tool finds (or starts) this home's board server, on loopback.
    #[arg(long, value_name = "ADDR:PORT", default_value = crate::app::loopback::DEFAULT_LISTEN)]
    pub board_listen: std::net::SocketAddr,
}

/// The period of background sync unless `--sync-every` says otherwise.
pub const DEFAULT_SYNC_EVERY: &str = "30s";

/// How often a long-running process syncs with the channel's remote:
/// `Some(period)`, or `None` for never (`--sync-every off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncEvery(pub Option<Duration>);

/// Parses `--sync-every`: `off`, or a duration of at least 100ms.
pub(super) fn parse_sync_every(s: &str) -> Result<SyncEvery, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(SyncEvery(None));
    }
    parse_interval(s).map(|d| SyncEvery(Some(d)))
}

/// Parses a sync interval: a duration of at least 100ms.
fn parse_interval(s: &str) -> Result<Duration, String> {
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
    // Whether git tracks the project binding is asked on the thread that
    // opens the session, beside the handshake: the binding only says where
    // to serve until then, and no call is answered before the answer.
    cli.check_binding_later();
    // The per-user entry of a client starts this in every project: where
    // nothing names a channel, serve the one tool that says so and exit 0.
    if cli.unbound() {
        let folder = std::env::current_dir()?;
        let channel_above = folder
            .ancestors()
            .map(|d| d.join(crate::store::DEFAULT_DIR))
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
    let place = Place {
        role: Some(cli.required_role()?),
        dir: cli.channel_dir()?,
        home,
    };
    if fresh {
        tracing::warn!(
            "made a new device in the default home {}: if this device's keys live in another \
             home, COUNTERSIGN_HOME did not reach this server — set it in the client's server \
             entry (`countersign install` does)",
            place.home.describe()
        );
    }
    // One thread for the protocol and the calls: the use cases run on it
    // (`Server::serve_stdio`), and only background work (sync, tidying)
    // goes to the blocking pool. Two workers cost two more threads and
    // malloc arenas (0.55 MB of a server's peak) and a hand-over per call
    // (read answers were 5-10% slower).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The session opens beside the handshake, which does not need it
    // (`mcp::opening`); a role the channel does not have still ends the
    // server with that error.
    let open = {
        let Place { dir, home, role } = place.clone();
        let binding = cli.binding_to_check();
        move || {
            if let Some(b) = binding {
                b.refuse_if_tracked()?;
            }
            Ok(Session::new(Channel::open(dir, home)?, role)?)
        }
    };
    let mut server = Server::stdio(place, a.tools.clone(), open)?.with_board_listen(a.board_listen);
    if let SyncEvery(Some(every)) = a.sync_every {
        server = server.with_sync_every(every);
    }
    let served = rt.block_on(server.serve_stdio());
    // A background sync may be waiting on a slow remote: the session is over,
    // so do not wait for it long (its next run, anywhere, picks the work up).
    rt.shutdown_timeout(Duration::from_secs(2));
    served?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_every_takes_a_period_or_off_and_refuses_too_short_a_one() {
        assert_eq!(
            parse_sync_every(DEFAULT_SYNC_EVERY),
            Ok(SyncEvery(Some(Duration::from_secs(30))))
        );
        assert_eq!(parse_sync_every("off"), Ok(SyncEvery(None)));
        assert_eq!(parse_sync_every(" OFF "), Ok(SyncEvery(None)));
        assert_eq!(
            parse_sync_every("2m"),
            Ok(SyncEvery(Some(Duration::from_secs(120))))
        );
        assert!(
            parse_sync_every("50ms")
                .unwrap_err()
                .contains("at least 100ms")
        );
        assert!(parse_sync_every("never").is_err());
    }
}
