//! The management tools of `countersign serve`: create_channel,
//! list_channels, rotate_token, add_role, board_link, revoke_board_access,
//! delete_channel — an MCP handler of their own, served over HTTP to the
//! admin token and to nothing else (a role's service adds board_link for its
//! own channel: `hosted`). The stdio server never lists them.
//!
//! Each tool is a thin adapter over one `app::hosting` function, run on a
//! blocking thread under one lock (two creates of one name never race);
//! arguments are checked against the derived input schema first, and
//! refusals travel as the mailbox tools' do (`isError` with `{error,
//! message}`). Who may call is decided before a request reaches this
//! handler (`http::identity`); a call here is the admin's.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_router};
use serde::Serialize;

use super::published::{Published, published_listing};
use crate::app::hosting::{
    BoardAccessRevoked, BoardLink, BoardLinkRequest, ChannelCreated, ChannelDeleted,
    ChannelRequest, ChannelRoleRequest, CreateChannelRequest, DeleteChannelRequest, Host,
    HostedChannel, RoleTokenAdded, TokenRotated,
};
use crate::app::info::VERSION;
use crate::app::{AppError, AppResult};
use crate::core::remote_target::RemoteKind;
use crate::store::Remote;

/// The management tools, in the protocol's registration order.
pub const ADMIN_TOOLS: [&str; 7] = [
    "create_channel",
    "list_channels",
    "rotate_token",
    "add_role",
    "board_link",
    "revoke_board_access",
    "delete_channel",
];

/// What the server does once a channel is created (given its name): start
/// what it runs for every hosted channel, such as its background sync.
pub type OnCreated = Arc<dyn Fn(&str) + Send + Sync>;

/// The handler of the management tools.
#[derive(Clone)]
pub struct Admin {
    host: Arc<Mutex<Host>>,
    tool_router: ToolRouter<Self>,
    published: Published,
    on_created: Option<OnCreated>,
}

/// What list_channels answers: a bare list, so it travels as `{result}`.
type Channels = Vec<HostedChannel>;

impl Admin {
    /// The management tools over the channels of `host`.
    pub fn new(host: Host) -> Self {
        let tool_router = Self::admin_router();
        let published = Published::lean(tool_router.list_all(), &ADMIN_TOOLS);
        Self {
            host: Arc::new(Mutex::new(host)),
            tool_router,
            published,
            on_created: None,
        }
    }

    /// Also calls `f` with the name of each channel created (in the
    /// server's runtime, after the channel is in place).
    pub fn on_created(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_created = Some(Arc::new(f));
        self
    }

    /// The board_link tool as published, for a role's service to list too.
    pub fn board_link_tool() -> Tool {
        let mut t = Self::admin_router()
            .get("board_link")
            .expect("board_link is a management tool")
            .clone();
        t.input_schema = Arc::new(super::schema::lean_input(&t.input_schema));
        t
    }

    /// Runs one use case on a blocking thread, under the host's lock.
    async fn run<T, F>(&self, f: F) -> Result<CallToolResult, McpError>
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Host) -> AppResult<T> + Send + 'static,
    {
        super::to_result(self.blocking(f).await?)
    }

    /// `f` on the host, on a blocking thread (SQLite and files block).
    async fn blocking<T, F>(&self, f: F) -> Result<AppResult<T>, McpError>
    where
        T: Send + 'static,
        F: FnOnce(&Host) -> AppResult<T> + Send + 'static,
    {
        let host = Arc::clone(&self.host);
        tokio::task::spawn_blocking(move || {
            let guard = host.lock().unwrap_or_else(PoisonError::into_inner);
            f(&guard)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))
    }
}

#[tool_router(router = admin_router, vis = "pub(super)")]
impl Admin {
    /// Create a channel folder under --channels-dir, owned by this server, optionally synced
    /// through git or rclone; returns one token per role (shown only now).
    #[tool(output_schema = super::output_schema::<ChannelCreated>(), annotations(
        title = "Create a channel",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn create_channel(
        &self,
        Parameters(p): Parameters<CreateChannelRequest>,
    ) -> Result<CallToolResult, McpError> {
        let out = self.blocking(move |h| {
            let remote = p
                .remote
                .map(|r| match RemoteKind::parse(&r.kind) {
                    Some(kind) => Ok(Remote::new(kind, r.target)),
                    None => Err(AppError::value(format!(
                        "'remote.kind' must be git or rclone (got '{}')",
                        r.kind.escape_debug()
                    ))),
                })
                .transpose()?;
            h.create_channel(&p.name, &p.roles, remote)
        });
        let out = out.await?;
        if let (Ok(made), Some(f)) = (&out, &self.on_created) {
            f(&made.name);
        }
        super::to_result(out)
    }

    /// The channels this server hosts, by name: [{name, roles, created_at}].
    #[tool(output_schema = super::output_schema::<Channels>(), annotations(
        title = "List channels",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn list_channels(&self) -> Result<CallToolResult, McpError> {
        self.run(Host::list_channels).await
    }

    /// Replace a role's tokens with a new one (shown only now); the old ones and the board
    /// keys the role issued stop working.
    #[tool(output_schema = super::output_schema::<TokenRotated>(), annotations(
        title = "Rotate a role's token",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn rotate_token(
        &self,
        Parameters(p): Parameters<ChannelRoleRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |h| h.rotate_token(&p.channel, &p.role)).await
    }

    /// Add a role to a channel (at most 12) and return a token for it (shown only now).
    #[tool(output_schema = super::output_schema::<RoleTokenAdded>(), annotations(
        title = "Add a role",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn add_role(
        &self,
        Parameters(p): Parameters<ChannelRoleRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |h| h.add_role(&p.channel, &p.role)).await
    }

    /// A one-time link (60 s) to a channel's board, behind a view key that lasts 30 days.
    #[tool(output_schema = super::output_schema::<BoardLink>(), annotations(
        title = "Link to the board",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn board_link(
        &self,
        Parameters(p): Parameters<BoardLinkRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |h| h.board_link(&p.channel, &p.label)).await
    }

    /// End every view key of a channel's board, and the board sessions opened with them.
    #[tool(output_schema = super::output_schema::<BoardAccessRevoked>(), annotations(
        title = "Revoke board access",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn revoke_board_access(
        &self,
        Parameters(p): Parameters<ChannelRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |h| h.revoke_board_access(&p.channel)).await
    }

    /// Delete a channel: its tokens and view keys end, it is no longer served, its name is
    /// never used again; the folder is kept, renamed (see path).
    #[tool(output_schema = super::output_schema::<ChannelDeleted>(), annotations(
        title = "Delete a channel",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn delete_channel(
        &self,
        Parameters(p): Parameters<DeleteChannelRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |h| h.delete_channel(&p.name)).await
    }
}

impl ServerHandler for Admin {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("countersign", VERSION))
            .with_instructions(
                "countersign serve, management: create and delete the channels this server \
                 hosts, add roles, hand out and rotate role tokens, and issue or revoke board \
                 links. The mailbox tools need a role token, not the admin token.",
            )
    }

    published_listing!(published);

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let Some(tool) = self.tool_router.get(&name) else {
            return Ok(super::refused(
                "PermissionError",
                format!(
                    "{name} is not a management tool: the admin token reaches only {}. The \
                     mailbox tools need a role token (create_channel and rotate_token hand them \
                     out)",
                    ADMIN_TOOLS.join(", ")
                ),
            )
            .into());
        };
        if let Some(why) =
            super::arguments::refusal(&name, &tool.input_schema, request.arguments.as_ref())
        {
            return Ok(super::refused("ValueError", why).into());
        }
        let tcc = ToolCallContext::new(self, request, context);
        super::shaped(self.tool_router.call(tcc).await)
    }
}
