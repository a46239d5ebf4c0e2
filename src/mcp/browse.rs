//! Tools that read the history: list_messages, search_messages, get_thread.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::Server;
use crate::app::budget::Budget;
use crate::app::listing::{ListRequest, list_messages};
use crate::app::rows::{Listing, MessageView, Projected};
use crate::app::search::{SearchRequest, search_messages};
use crate::app::thread::{ThreadRequest, get_thread};

#[tool_router(router = browse_router, vis = "pub(super)")]
impl Server {
    /// Filter the whole history on fields and substrings, newest first, unranked (ranked:
    /// search_messages). `truncated` says when more matched.
    #[tool(output_schema = super::catalogued_output::<Listing<Projected<MessageView>>>(), annotations(
        title = "List messages",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn list_messages(
        &self,
        Parameters(p): Parameters<ListRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| list_messages(s, &p.filter, p.page.limit, p.page.fields.as_ref()))
            .await
    }

    /// Full-text search of topic and body, best first, each hit with a [highlighted] snippet.
    /// truncated.reason="work" means narrow the query.
    #[tool(output_schema = super::catalogued_output::<Listing<Projected<MessageView>>>(), annotations(
        title = "Search messages",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn search_messages(
        &self,
        Parameters(p): Parameters<SearchRequest>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        // A client that cancels (or times out) stops the search at its next
        // step, so the session is free for the next call.
        let ct = context.ct;
        self.run(move |s| {
            let cancelled = || ct.is_cancelled();
            let mut budget = Budget::search(&cancelled);
            search_messages(
                s,
                &p.query,
                &p.filter,
                p.page.limit,
                p.page.fields.as_ref(),
                &mut budget,
            )
        })
        .await
    }

    #[tool(output_schema = super::catalogued_output::<Listing<Projected<MessageView>>>(), description = concat!("A message's whole reply tree, oldest first. ", super::provenance!()),
        annotations(title = "Get a thread", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn get_thread(
        &self,
        Parameters(p): Parameters<ThreadRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| get_thread(s, &p.message_id, p.fields.as_ref()))
            .await
    }
}
