//! Tools about the channel and this server: list_roles, server_build, get_protocol,
//! get_charter_template.

use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde_json::Value;

use super::Server;
use crate::app::info::{self, CHARTER_TEMPLATE, PROTOCOL};

#[tool_router(router = about_router, vis = "pub(super)")]
impl Server {
    /// Who is in this channel: {roles, you, source, devices}. The roles come from the channel's
    /// definition (source "channel-registry"), so the list is complete even for roles that
    /// have never spoken. You need it to address anyone. `devices` gives, per role, the
    /// devices writing it and when each was last heard from on this machine.
    #[tool(output_schema = super::output_schema::<crate::app::info::Roles>(), annotations(
        title = "List roles",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn list_roles(&self) -> Result<CallToolResult, McpError> {
        self.run(info::list_roles).await
    }

    /// What this running server is: its version, what it implements and what it does not
    /// (yet), so "missing" and "refused" are not confused. Ask it rather than a source tree.
    #[tool(output_schema = super::output_schema::<crate::app::info::ServerBuild>(), annotations(
        title = "Server build",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn server_build(&self) -> Result<CallToolResult, McpError> {
        super::to_result(Ok(info::server_build()))
    }

    /// The channel protocol in full: every tool, its parameters, refusals and results, and the
    /// rules behind debts, votes and pins. Read it when a rule surprises you.
    #[tool(annotations(
        title = "Get the protocol",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_protocol(&self) -> Result<CallToolResult, McpError> {
        super::to_result(Ok(Value::String(PROTOCOL.to_owned())))
    }

    /// A starting team charter for a new channel, with placeholders and ten ground rules for
    /// agent teams. Fill it in, send it as a proposal to every role
    /// (send_message(to="*", kind="proc", pin_key="team-charter", voters="*",
    /// about_message_id=null, ...)), collect every agree, then pin it with
    /// pin_set("team-charter", ..., approved_by=<its id>).
    #[tool(annotations(
        title = "Get the charter template",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_charter_template(&self) -> Result<CallToolResult, McpError> {
        super::to_result(Ok(Value::String(CHARTER_TEMPLATE.to_owned())))
    }
}
