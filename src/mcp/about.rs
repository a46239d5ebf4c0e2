//! Tools about the channel and this server: list_roles, server_build, get_protocol,
//! get_charter_template.

use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::Serialize;
use serde_json::Value;

use super::Server;
use crate::app::info::{self, CHARTER_TEMPLATE, PROTOCOL, ServerBuild};

/// What server_build answers: the build, and the toolsets this server serves.
#[derive(Serialize, JsonSchema)]
struct ServedBuild {
    #[serde(flatten)]
    build: ServerBuild,
    /// The toolsets served (`countersign mcp --tools`).
    toolsets: Vec<&'static str>,
}

#[tool_router(router = about_router, vis = "pub(super)")]
impl Server {
    /// Who is in this channel: {roles, you, devices}, every role even if it never spoke.
    #[tool(output_schema = super::catalogued_output::<crate::app::info::Roles>(), annotations(
        title = "List roles",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn list_roles(&self) -> Result<CallToolResult, McpError> {
        self.run(info::list_roles).await
    }

    /// This server: version, what it implements and not (yet), the toolsets it serves.
    #[tool(output_schema = super::catalogued_output::<ServedBuild>(), annotations(
        title = "Server build",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn server_build(&self) -> Result<CallToolResult, McpError> {
        self.answer(Ok(ServedBuild {
            build: info::server_build(),
            toolsets: self.served.names().to_vec(),
        }))
    }

    /// The full protocol: every tool, refusal and rule. Read it when a rule surprises you.
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

    /// A team charter to fill in, propose to every role (kind proc, pin_key team-charter) and
    /// pin once all agree.
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
