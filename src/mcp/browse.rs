//! Tools that read the history: list_messages, search_messages, get_thread.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use serde::Deserialize;

use super::Server;
use crate::app::budget::Budget;
use crate::app::listing::{ListFilter, list_messages};
use crate::app::rows::{FieldsArg, Listing, MessageView, Projected};
use crate::app::search::{SearchFilter, search_messages};
use crate::app::thread::get_thread;

fn hundred() -> i64 {
    100
}
fn fifty() -> i64 {
    50
}

/// Parameters of list_messages.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListMessagesParams {
    /// Substring of the topic.
    #[serde(default)]
    pub topic: Option<String>,
    /// Only from this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only to this role.
    #[serde(default)]
    pub to_role: Option<String>,
    /// Only unread ones (per recipient with to_role).
    #[serde(default)]
    pub unread_only: bool,
    /// Only since this ISO-8601 time or date.
    #[serde(default)]
    pub since: Option<String>,
    /// How many of the newest, 1 to 1000.
    #[serde(default = "hundred")]
    pub limit: i64,
    /// Debt status: open or resolved.
    #[serde(default)]
    pub status: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// proposed, in_progress, done_local, needs_you, done or blocked.
    #[serde(default)]
    pub work_status: Option<String>,
    /// Substring of topic or body.
    #[serde(default)]
    pub text: Option<String>,
    /// Only proposals for this pin key.
    #[serde(default)]
    pub pin_key: Option<String>,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of search_messages.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchMessagesParams {
    /// Words (all must match), "phrases", OR, NOT, (), prefix*, topic: or body:.
    pub query: String,
    /// Only from this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only to this role.
    #[serde(default)]
    pub to_role: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// Debt status: open or resolved.
    #[serde(default)]
    pub status: Option<String>,
    /// How many hits, 1 to 1000.
    #[serde(default = "fifty")]
    pub limit: i64,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of get_thread.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetThreadParams {
    /// Any message of the thread.
    pub message_id: String,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

#[tool_router(router = browse_router, vis = "pub(super)")]
impl Server {
    /// Filter the whole history on fields and substrings, newest first, unranked (ranked:
    /// search_messages). `truncated` says when more matched.
    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), annotations(
        title = "List messages",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn list_messages(
        &self,
        Parameters(p): Parameters<ListMessagesParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            let f = ListFilter {
                topic: p.topic,
                from_role: p.from_role,
                to_role: p.to_role,
                unread_only: p.unread_only,
                since: p.since,
                status: p.status,
                kind: p.kind,
                work_status: p.work_status,
                text: p.text,
                pin_key: p.pin_key,
            };
            list_messages(s, &f, p.limit, p.fields.as_ref())
        })
        .await
    }

    /// Full-text search of topic and body, best first, each hit with a [highlighted] snippet.
    /// truncated.reason="work" means narrow the query.
    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), annotations(
        title = "Search messages",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn search_messages(
        &self,
        Parameters(p): Parameters<SearchMessagesParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        // A client that cancels (or times out) stops the search at its next
        // step, so the session is free for the next call.
        let ct = context.ct;
        self.run(move |s| {
            let f = SearchFilter {
                from_role: p.from_role,
                to_role: p.to_role,
                kind: p.kind,
                status: p.status,
            };
            let cancelled = || ct.is_cancelled();
            let mut budget = Budget::search(&cancelled);
            search_messages(s, &p.query, &f, p.limit, p.fields.as_ref(), &mut budget)
        })
        .await
    }

    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), description = concat!("A message's whole reply tree, oldest first. ", super::provenance!()),
        annotations(title = "Get a thread", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn get_thread(
        &self,
        Parameters(p): Parameters<GetThreadParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| get_thread(s, &p.message_id, p.fields.as_ref()))
            .await
    }
}
