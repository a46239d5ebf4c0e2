//! `/mcp`: MCP over streamable HTTP, with the identity of the bearer token.
//!
//! Each role of each hosted channel gets its own MCP service, built the
//! first time a token of that role calls, around the same `mcp::Server` a
//! stdio session runs (so names, parameters, results and refusals are the
//! stdio ones). A request is authenticated before its body is read and
//! before it reaches any service, and it reaches only its identity's. The services are stateless: every
//! call is one request answered with one JSON body, so there is no session
//! id to carry an identity across, and a stop lets each call under way
//! finish and answer. A role's service is the stdio tools plus
//! board_link for its own channel (`mcp::hosted`). The admin token reaches
//! the management tools' service only (`mcp::admin`, made on first use over
//! `--channels-dir`); a view key reaches none.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::connections::Admitted;
use super::guard::{Guard, read_body, refuse};
use super::hosting::{not_hosted, role_session};
use super::identity::{Identity, authenticate};
use crate::app::hosting::Host;
use crate::mcp::Server;
use crate::mcp::admin::Admin;
use crate::mcp::hosted::Hosted;
use crate::store::access::RoleToken;

type Service = StreamableHttpService<Hosted, LocalSessionManager>;
type AdminService = StreamableHttpService<Admin, LocalSessionManager>;

/// The MCP services of a server, one per (channel id, role), and the
/// management tools' one.
pub struct Services {
    by_role: Mutex<HashMap<(String, String), Service>>,
    admin: Mutex<Option<AdminService>>,
    config: StreamableHttpServerConfig,
}

impl Services {
    /// No service yet; each will follow `guard`'s body limit.
    pub fn new(guard: &Guard) -> Self {
        Self {
            by_role: Mutex::new(HashMap::new()),
            admin: Mutex::new(None),
            config: service_config(guard, CancellationToken::new()),
        }
    }

    /// The rmcp configuration of a service, with `cancel` ending its
    /// sessions.
    pub fn config(&self, cancel: CancellationToken) -> StreamableHttpServerConfig {
        self.config.clone().with_cancellation_token(cancel)
    }
}

/// How every service of this server is set up. Host and Origin are checked
/// once for every route by `guard`, so rmcp's own check of them is off (it
/// would know nothing of `--allow-host`).
fn service_config(guard: &Guard, cancel: CancellationToken) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        // Every call is one request with one JSON answer: no session, no
        // stream held open. So a stop lets each call under way finish and
        // deliver its answer (the server waits for open requests), and an
        // answer is never left in a stream cut by the stop.
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(guard.body_limit())
        .with_cancellation_token(cancel)
}

/// `/mcp` (any method): authenticate, then hand the request to the caller's
/// service.
pub async fn handle(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let connection = request.extensions().get::<Arc<Admitted>>().cloned();
    let identity = match authenticate(&state, peer, request.headers(), connection.as_deref()).await
    {
        Ok(i) => i,
        Err(refusal) => return refusal,
    };
    // Only now is the body read: a stranger's never is.
    let (parts, body) = request.into_parts();
    let request = match read_body(&state.guard, body).await {
        Ok(bytes) => Request::from_parts(parts, Body::from(bytes)),
        Err(refusal) => return refusal,
    };
    match identity {
        Identity::Role(token) => match role_service(&state, &token).await {
            Ok(service) => {
                // The service is shared by every token of the role; the
                // tools that must know which one called (board_link) read
                // it here.
                let mut request = request;
                request.extensions_mut().insert(token);
                service.handle(request).await.map(Body::new)
            }
            Err(refusal) => refusal,
        },
        Identity::Admin => admin(&state, request).await,
        Identity::Viewer(_) => refuse(
            StatusCode::FORBIDDEN,
            "view tokens are only valid for GET /board: calling tools needs a role token; ask the \
             server's owner for one (`countersign token create --role R`)",
        ),
    }
}

/// The management tools, for the admin token: one service, made on first
/// use, over the channels folder.
async fn admin(state: &Shared, request: Request) -> Response {
    let Some(root) = state.hosting.channels_dir().map(Path::to_path_buf) else {
        return refuse(
            StatusCode::FORBIDDEN,
            "the management tools need a channels folder: this server hosts one channel \
             (--channel); start it with --channels-dir DIR",
        );
    };
    let existing = lock(&state.mcp.admin).clone();
    let service = match existing {
        Some(s) => s,
        None => {
            let home = state.home.clone();
            let allowed = state.allowed_remotes.clone();
            let opened = tokio::task::spawn_blocking(move || {
                Host::open(&root, home).map(|h| h.allowing_remotes(allowed))
            })
            .await;
            let host = match opened {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => {
                    return refuse(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &format!("cannot open the channels folder: {e}"),
                    );
                }
                Err(e) => {
                    return refuse(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &format!("cannot open the channels folder: {e}"),
                    );
                }
            };
            // A new channel gets what the server runs for every hosted one
            // (its background sync). Weak: the service lives in the state.
            let weak = Arc::downgrade(state);
            let admin = Admin::new(host).on_created(move |name| {
                if let Some(state) = weak.upgrade()
                    && let Some(dir) = state.hosting.find(name)
                {
                    state
                        .syncing
                        .start(&dir, &state.home, state.watchers.of(&dir));
                }
            });
            let service = AdminService::new(
                move || Ok(admin.clone()),
                Arc::new(LocalSessionManager::default()),
                state.mcp.config(CancellationToken::new()),
            );
            lock(&state.mcp.admin).get_or_insert(service).clone()
        }
    };
    service.handle(request).await.map(Body::new)
}

/// The service of `token`'s role, made on first use.
async fn role_service(state: &Shared, token: &RoleToken) -> Result<Service, Response> {
    let key = (token.channel.id.clone(), token.role.clone());
    if let Some(s) = lock(&state.mcp.by_role).get(&key) {
        return Ok(s.clone());
    }
    let dir = state
        .hosting
        .find_ref(&token.channel)
        .ok_or_else(|| not_hosted(token))?;
    let watcher = state.watchers.of(&dir);
    let session = role_session(&state.home, dir, token).await?;
    let server = Hosted::new(
        Server::new(session).with_watcher(watcher),
        state.home.access_db(),
        token.channel.clone(),
        token.role.clone(),
    );
    let service = Service::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        state.mcp.config(CancellationToken::new()),
    );
    Ok(lock(&state.mcp.by_role)
        .entry(key)
        .or_insert(service)
        .clone())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
