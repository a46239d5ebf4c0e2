//! `countersign serve`: the hosted channels over HTTP (MCP at `/mcp`, the
//! board, `/status`). Parses the options into an [`http::Config`] and runs
//! the server until SIGINT or SIGTERM.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};

use super::Cli;
use crate::core::remote_target::RemotePattern;
use crate::http::{self, hosting::Hosting};
use crate::store::ChannelDir;

/// The default address: loopback only.
pub use crate::app::loopback::DEFAULT_LISTEN;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    countersign serve --channel .countersign\n  \
    COUNTERSIGN_ADMIN_TOKEN=… countersign serve --channels-dir /srv/channels\n  \
    countersign serve --listen 0.0.0.0:8765 --public --allow-host board.example.org\n\n\
    Agents reach /mcp with a role token (`countersign token create --role R`); people open the \
    board with `countersign board`. --channels-dir needs the admin token \
    (COUNTERSIGN_ADMIN_TOKEN in the environment), which reaches only the management tools over \
    /mcp: create_channel, list_channels, rotate_token, add_role, board_link, revoke_board_access, \
    delete_channel. --channel serves one channel without them and refuses an admin token. \
    Off loopback, put a TLS reverse proxy in front (docs/SERVE.md). Hosted channels that have \
    a remote sync with it by themselves, every 30 s and after each write (--sync-every).")]
pub struct Args {
    /// The address and port to listen on.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Serve every channel folder directly under DIR (each named by its folder), and let the
    /// admin token create channels there (COUNTERSIGN_ADMIN_TOKEN must be set). Without it, the one channel of --channel (or found as
    /// other commands find it) is served.
    #[arg(long, value_name = "DIR", conflicts_with = "channel")]
    pub channels_dir: Option<PathBuf>,
    /// Allow listening on an address other than loopback. Tokens then cross the network: put a
    /// TLS reverse proxy in front (docs/SERVE.md).
    #[arg(long)]
    pub public: bool,
    /// Also accept requests whose Host (or browser Origin) is NAME or NAME:PORT: the name a
    /// reverse proxy forwards. Repeatable. Loopback names of the port are always accepted.
    #[arg(long = "allow-host", value_name = "NAME[:PORT]")]
    pub allow_hosts: Vec<String>,
    /// The largest request body accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = http::BODY_LIMIT)]
    pub body_limit: usize,
    /// A reverse proxy's address (e.g. 127.0.0.1 for a proxy on this machine): from it, the
    /// last address of X-Forwarded-For that is not a trusted proxy counts as the caller's (for
    /// slowing down wrong tokens and for the per-address connection limit, which the proxy
    /// itself is exempt from). Repeatable. Anyone else's X-Forwarded-For is ignored.
    #[arg(long = "trusted-proxy", value_name = "IP")]
    pub trusted_proxies: Vec<IpAddr>,
    /// Sync every hosted channel that has a remote (`countersign remote set`, or a git clone's
    /// origin) in the background this often while idle (e.g. 30s, 2m) and about a second after
    /// each write, as `mcp` does; `off`: never.
    #[arg(long, value_name = "DURATION|off", default_value = super::mcp::DEFAULT_SYNC_EVERY,
          value_parser = super::mcp::parse_sync_every)]
    pub sync_every: super::mcp::SyncEvery,
    /// With --channels-dir: let the admin token give a new channel a sync remote matching
    /// KIND=PATTERN (git=… or rclone=…; `*` is any run without `/`, `**` any run). Repeatable.
    /// None by default: create_channel then refuses every remote. A path on this machine
    /// matches only a pattern that is itself a path (e.g. rclone=/srv/remotes/*).
    #[arg(long = "allow-remote", value_name = "KIND=PATTERN", value_parser = RemotePattern::parse)]
    pub allow_remotes: Vec<RemotePattern>,
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    super::mcp::log_to_stderr();
    if !a.listen.ip().is_loopback() && !a.public {
        bail!(
            "{} is not a loopback address: tokens would cross the network in the clear. Pass \
             --public to listen there anyway, behind a TLS reverse proxy (docs/SERVE.md)",
            a.listen
        );
    }
    let admin_token = std::env::var("COUNTERSIGN_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    let hosting = match &a.channels_dir {
        Some(dir) => {
            let meta = std::fs::symlink_metadata(dir)
                .with_context(|| format!("cannot read the channels folder {}", dir.display()))?;
            if !meta.is_dir() {
                bail!(
                    "{} is not a folder; pass --channels-dir the folder the hosted channels live \
                     in",
                    dir.display()
                );
            }
            // The channels under the folder are made and reached through the
            // management tools; without the token nobody could.
            if admin_token.is_none() {
                bail!(
                    "--channels-dir needs COUNTERSIGN_ADMIN_TOKEN: the management tools \
                     (create_channel, add_role, rotate_token, …) are how channels under {} are \
                     made and their tokens handed out. Set it to a long random secret in the \
                     server's environment, or serve one channel with --channel DIR",
                    dir.display()
                );
            }
            Hosting::Under(dir.clone())
        }
        None => {
            if admin_token.is_some() {
                bail!(
                    "COUNTERSIGN_ADMIN_TOKEN is set but the management tools need a folder to \
                     make channels in: pass --channels-dir DIR, or unset the variable"
                );
            }
            Hosting::One(cli.channel_dir()?)
        }
    };
    if let Some(t) = &admin_token
        && t.len() < 32
    {
        tracing::warn!(
            "COUNTERSIGN_ADMIN_TOKEN is shorter than 32 characters: use a long random one"
        );
    }
    let config = http::Config {
        listen: a.listen,
        home: cli.home()?,
        hosting,
        admin_token,
        allowed_hosts: a.allow_hosts.clone(),
        body_limit: a.body_limit,
        allowed_remotes: a.allow_remotes.clone(),
        trusted_proxies: a.trusted_proxies.clone(),
        limits: http::connections::Limits::default(),
        sync_every: a.sync_every.0,
    };
    // Held for the server's life: an `mcp` of this home then leaves
    // background compaction to this process (`mcp::summarizer`).
    let _serving = crate::store::FileLock::try_exclusive(&config.home.serve_lock())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let channels = channel_names(&config);
    let admin = config.admin_token.is_some();
    rt.block_on(http::serve(
        config,
        |at| {
            // The first line says where: with `--listen …:0` it is the one
            // place the chosen port shows.
            eprintln!(
                "countersign serve: listening on http://{at} — channels: {channels}{}",
                if admin {
                    "; management tools on (admin token set)"
                } else {
                    ""
                }
            );
        },
        stop_signal(),
    ))?;
    rt.shutdown_timeout(Duration::from_secs(2));
    eprintln!("countersign serve: stopped");
    Ok(ExitCode::SUCCESS)
}

/// The hosted channels' names, for the first line.
fn channel_names(config: &http::Config) -> String {
    let names: Vec<String> = config
        .hosting
        .channels()
        .iter()
        .map(|d: &ChannelDir| d.genesis().name.clone())
        .collect();
    if names.is_empty() {
        "none yet".to_owned()
    } else {
        names.join(", ")
    }
}

/// Resolves on the first SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
