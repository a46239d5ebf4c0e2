//! A role's MCP service over HTTP: the mailbox tools of [`Server`], as a
//! stdio session gets them, plus `board_link` for the role's own channel
//! (protocol §3.39: over HTTP a role may issue a link to its board), in
//! place of the stdio session's own board_link (`mcp::board`, which starts
//! a loopback server on the session's machine).
//!
//! Owns only that one added tool and the refusal of the other management
//! tools; everything else is handed to the inner server as it came. A link
//! remembers the role token that asked for it (the HTTP layer puts the
//! caller's [`RoleToken`] in the request's extensions), so revoking that
//! token ends the link's key and the board sessions opened with it.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ServerConfig, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::Server;
use super::admin::{ADMIN_TOOLS, Admin};
use super::published::{Published, published_listing};
use crate::app::AppError;
use crate::app::hosting::{BoardLinkRequest, issue_link};
use crate::store::access::{Access, ChannelRef, RoleToken};

/// The service of one role of one hosted channel.
#[derive(Clone)]
pub struct Hosted {
    inner: Server,
    access_db: PathBuf,
    channel: ChannelRef,
    role: String,
    board_link: Arc<Tool>,
    published: Published,
}

impl Hosted {
    /// `inner` acting as `role` in `channel`, with board links kept in the
    /// access database at `access_db`.
    pub fn new(inner: Server, access_db: PathBuf, channel: ChannelRef, role: String) -> Self {
        let board_link = Admin::board_link_tool();
        // The stdio board_link (a loopback server of the session's machine)
        // gives way to this one, in its place, so both transports list the
        // same tools in one order: over HTTP the link is to this server.
        let mut published = inner.published().tools().to_vec();
        match published.iter_mut().find(|t| t.name == "board_link") {
            Some(stdio) => *stdio = board_link.clone(),
            None => published.push(board_link.clone()),
        }
        Self {
            inner,
            access_db,
            channel,
            role,
            board_link: Arc::new(board_link),
            published: Published::new(published),
        }
    }

    /// board_link for this role: its own channel only.
    async fn board_link(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(why) = super::arguments::refusal(
            "board_link",
            &self.board_link.input_schema,
            request.arguments.as_ref(),
        ) {
            return Ok(super::refused("ValueError", why).into());
        }
        let args = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        let p: BoardLinkRequest = match serde_json::from_value(args) {
            Ok(p) => p,
            Err(e) => return Ok(super::refused("ValueError", e.to_string()).into()),
        };
        // The token that called: a link nobody could end with the token
        // would outlive it, so without one no link is made.
        let Some(token) = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<RoleToken>())
            .filter(|t| t.channel == self.channel && t.role == self.role)
            .map(|t| t.id.clone())
        else {
            return Err(McpError::internal_error(
                "board_link cannot tell which token called it",
                None,
            ));
        };
        let (db, channel, role) = (
            self.access_db.clone(),
            self.channel.clone(),
            self.role.clone(),
        );
        let out = tokio::task::spawn_blocking(move || {
            if !p.channel.is_empty() && p.channel != channel.name {
                return Err(AppError::permission(format!(
                    "role '{role}' can only issue a board link for its own channel \
                     ('{}'), not '{}' — leave 'channel' out",
                    channel.name, p.channel
                )));
            }
            let access = Access::open(&db)?;
            issue_link(&access, &channel, &p.label, (&role, Some(&token)))
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?;
        super::to_result(out).map(Into::into)
    }
}

impl ServerHandler for Hosted {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    published_listing!(published);

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if name == "board_link" {
            return self.board_link(&request, &context).await;
        }
        if ADMIN_TOOLS.contains(&name.as_str()) {
            return Ok(super::refused(
                "PermissionError",
                format!(
                    "{name} is a management tool: only the server's admin token \
                     (COUNTERSIGN_ADMIN_TOKEN) reaches it. A role token may call board_link for \
                     its own channel"
                ),
            )
            .into());
        }
        self.inner.call_tool(request, context).await
    }
}
