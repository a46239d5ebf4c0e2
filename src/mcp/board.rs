//! board_link in a stdio session: a one-time link to the channel's board
//! for the session's person, from a loopback server of this machine
//! (`app::loopback`: reused, or started as `countersign board` does). A thin
//! adapter: the tool's parameters are the hosted board_link's said leaner
//! (`app::loopback::LinkRequest`), and a
//! channel other than the session's own is refused.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::Serialize;

use super::Server;
use crate::app::AppError;
use crate::app::loopback::{LinkRequest, link_for};

/// What board_link answers in a session.
#[derive(Serialize, JsonSchema)]
struct Link {
    /// Open once, within 60 s.
    url: String,
    /// What to tell the person.
    note: String,
}

#[tool_router(router = board_router, vis = "pub(super)")]
impl Server {
    /// A one-time link to this channel's board for your person (a browser on this machine).
    #[tool(output_schema = super::catalogued_output::<Link>(), annotations(
        title = "Board link",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn board_link(
        &self,
        Parameters(p): Parameters<LinkRequest>,
    ) -> Result<CallToolResult, McpError> {
        let listen = self.board_listen;
        self.run(move |s| {
            let own = s.channel().dir().genesis().name.clone();
            if !p.channel.is_empty() && p.channel != own {
                return Err(AppError::permission(format!(
                    "a session can only issue a board link for its own channel ('{own}'), not \
                     '{}' — leave 'channel' out",
                    p.channel
                )));
            }
            link_for(s, &p.label, listen).map(|l| Link {
                url: l.url,
                note: l.note,
            })
        })
        .await
    }
}
