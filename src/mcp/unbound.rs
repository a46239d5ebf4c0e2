//! The server `countersign mcp` runs in a folder no channel is bound to.
//!
//! A client with one server entry for every project (Codex's per-user
//! `[mcp_servers.channel]`) starts `countersign mcp` in projects that have
//! nothing to do with a channel. There the server neither exits (the client
//! would report a failed server every session) nor opens anything: it
//! serves one tool, `channel_status`, whose answer says that this folder is
//! not bound and how to bind it. Owns that answer only; it must not read or
//! write a channel, a home or a device.

use std::path::PathBuf;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{
    ErrorData as McpError, ServerHandler, ServiceExt as _, tool, tool_handler, tool_router,
};
use serde_json::json;

use crate::app::info::VERSION;
use crate::store::binding;

/// The server of an unbound folder.
#[derive(Clone)]
pub struct Unbound {
    /// The folder the server was started in.
    folder: PathBuf,
    /// A channel folder found above it, when there is one (bound to no role here).
    channel_above: Option<PathBuf>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Unbound {
    /// The server of `folder`, where `channel_above` is the nearest channel
    /// folder above it (a project with a channel this user has no role in).
    pub fn new(folder: PathBuf, channel_above: Option<PathBuf>) -> Self {
        Self {
            folder,
            channel_above,
            tool_router: Self::tool_router(),
        }
    }

    /// Whether this folder is bound to a countersign channel; here it is not, and the answer
    /// says how to bind it.
    #[tool(annotations(
        title = "Channel status",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn channel_status(&self) -> Result<CallToolResult, McpError> {
        super::to_result(Ok(json!({
            "bound": false,
            "folder": self.folder.display().to_string(),
            "message": self.explanation(),
        })))
    }

    /// What the folder lacks and how to give it a channel, in two sentences.
    pub fn explanation(&self) -> String {
        let what = match &self.channel_above {
            Some(ch) => format!(
                "The folder {} has no countersign role: the channel {} above it is not bound \
                 to this folder (there is no {} here or above).",
                self.folder.display(),
                ch.display(),
                binding::FILE
            ),
            None => format!(
                "The folder {} is not bound to a countersign channel (there is no {} here or \
                 above), so this session has no channel tools.",
                self.folder.display(),
                binding::FILE
            ),
        };
        format!(
            "{what} To work on a channel here, run `countersign --role ROLE --channel DIR \
             install codex --apply` (or `install claude`) in this folder, then start a new \
             session; nothing else is needed if this project does not use one."
        )
    }

    /// Serves on stdin/stdout until the client disconnects.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        let running = self
            .serve(super::line_transport::LineTransport::stdio())
            .await?;
        running.waiting().await?;
        Ok(())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Unbound {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("countersign", VERSION))
            .with_instructions(self.explanation())
    }
}
