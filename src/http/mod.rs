//! `countersign serve`: the channel over HTTP, for agents that cannot run
//! `countersign mcp` beside the folder and for a person watching the board.
//!
//! The server is one more machine of each channel it hosts: it opens the
//! folder with its own home and acts through the same `app` functions and
//! `store` as a stdio session. It owns the routes, who may call which
//! (identity from a bearer token, never from arguments: `identity`), and
//! the checks every request passes first (`guard`: Host and Origin, body
//! size, the caller's address; `throttle`: slowing down an address that
//! keeps failing), and what a caller without a good secret may hold
//! (`connections`: timeouts and connection limits). It decides nothing
//! about messages: that is `app`.
//!
//! Routes: `/healthz`; `/mcp` (MCP over streamable HTTP: the mailbox tools
//! for a role token, the management tools for the admin token); the rest
//! (`/status`, `/hook-status`, `/board…`) are added by their modules.

pub mod board;
pub mod connections;
pub mod guard;
pub mod hosting;
pub mod identity;
pub mod mcp;
pub mod status;
pub mod syncing;
pub mod throttle;
pub mod watchers;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::Router;
use axum::routing::{any, get};
use tokio_util::sync::CancellationToken;

use crate::core::remote_target::RemotePattern;
use crate::store::Home;
use crate::store::access::Access;
use hosting::Hosting;

/// How a server is set up (from `countersign serve`'s options).
#[derive(Debug)]
pub struct Config {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The home the server acts with (keys, index, access database).
    pub home: Home,
    /// The channel or channels served.
    pub hosting: Hosting,
    /// The admin token (`COUNTERSIGN_ADMIN_TOKEN`), if management is on.
    pub admin_token: Option<String>,
    /// Host names (with or without port) accepted besides the loopback
    /// names of the listening port: the names a reverse proxy forwards.
    pub allowed_hosts: Vec<String>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// The sync remotes the admin token may give a new channel
    /// (`--allow-remote`); none when empty.
    pub allowed_remotes: Vec<RemotePattern>,
    /// The reverse proxies (`--trusted-proxy`) whose `X-Forwarded-For`
    /// names the caller; nobody else's is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// How many connections the server holds (by default
    /// [`connections::Limits::default`]).
    pub limits: connections::Limits,
    /// Sync each hosted channel with its remote this often (and after own
    /// writes); `None`: never.
    pub sync_every: Option<std::time::Duration>,
}

/// The default largest request body: room for an upload chunk and its JSON.
pub const BODY_LIMIT: usize = 4 << 20;

/// What every request handler shares.
pub struct State {
    /// The address listened on (the port chosen, when asked for port 0).
    pub listen: SocketAddr,
    /// The home the server acts with.
    pub home: Home,
    /// The channels served.
    pub hosting: Hosting,
    access: Mutex<Access>,
    /// The admin token's check.
    pub admin: identity::AdminToken,
    /// Host and Origin rules and the body limit.
    pub guard: guard::Guard,
    /// Failed authentications per address.
    pub throttle: throttle::Throttle,
    /// The MCP services, one per identity.
    pub mcp: mcp::Services,
    /// The background syncs of the hosted channels.
    pub syncing: syncing::Syncing,
    /// The sync remotes the admin token may choose.
    pub allowed_remotes: Vec<RemotePattern>,
    /// Cancelled when the server shuts down: long-lived streams end.
    pub shutdown: CancellationToken,
    /// The channels the board has opened.
    pub board: board::reader::Readers,
    /// The sessions and waiting places of `/status` and `/hook-status`.
    pub status: status::Status,
    /// The folder watcher of each channel, shared by all of the above.
    pub watchers: watchers::Watchers,
}

impl State {
    /// The access database (tokens and view keys), locked for one use.
    pub fn access(&self) -> MutexGuard<'_, Access> {
        self.access.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The shared state handlers receive.
pub type Shared = Arc<State>;

impl State {
    /// The state of a server set up by `config`.
    pub fn new(config: &Config) -> anyhow::Result<Shared> {
        let access = Access::open(&config.home.access_db())?;
        let guard = guard::Guard::new(
            config.listen,
            &config.allowed_hosts,
            config.body_limit,
            &config.trusted_proxies,
        );
        Ok(Arc::new(Self {
            listen: config.listen,
            home: config.home.clone(),
            hosting: config.hosting.clone(),
            access: Mutex::new(access),
            admin: identity::AdminToken::new(config.admin_token.as_deref()),
            mcp: mcp::Services::new(&guard),
            syncing: syncing::Syncing::new(config.sync_every),
            allowed_remotes: config.allowed_remotes.clone(),
            guard,
            throttle: throttle::Throttle::default(),
            shutdown: CancellationToken::new(),
            board: board::reader::Readers::default(),
            status: status::Status::default(),
            watchers: watchers::Watchers::default(),
        }))
    }
}

/// The routes of a server sharing `state`.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/mcp", any(mcp::handle))
        .merge(board::routes())
        .route("/status", get(status::status))
        .route("/hook-status", get(status::hook))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::check,
        ))
        .with_state(state)
}

/// `GET /healthz`: the server is up (no authentication, no Host check).
async fn healthz() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"ok": true}))
}

/// Serves until `stop` resolves, then finishes the requests under way (no
/// write is cut short: each runs to its answer) and returns. Connections
/// are accepted and held by `connections` (timeouts, limits). `ready` is
/// told the address listened on (the port chosen when `listen` has port 0)
/// once requests are accepted.
pub async fn serve(
    config: Config,
    ready: impl FnOnce(SocketAddr),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
    let config_limits = config.limits;
    let state = State::new(&Config {
        listen: listener.local_addr()?,
        ..config
    })?;
    for dir in state.hosting.channels() {
        state
            .syncing
            .start(&dir, &state.home, state.watchers.of(&dir));
    }
    ready(listener.local_addr()?);
    let shutdown = state.shutdown.clone();
    let trusted = state.guard.trusted_proxies().to_vec();
    let app = router(state);
    connections::serve(listener, app, config_limits, trusted, async move {
        stop.await;
        // The board's event streams and long-polls of /status would
        // hold the shutdown forever; MCP calls are plain requests that
        // finish and answer.
        shutdown.cancel();
    })
    .await;
    Ok(())
}
