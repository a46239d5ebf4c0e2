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
    /// Literal, case-insensitive substring of the topic (at most 200 characters).
    #[serde(default)]
    pub topic: Option<String>,
    /// Only messages written by this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only messages addressed to this role (multi-recipient messages included).
    #[serde(default)]
    pub to_role: Option<String>,
    /// Only unread messages: per recipient together with to_role; without it, a message's own
    /// read state (a multi-recipient message always looks unread then).
    #[serde(default)]
    pub unread_only: bool,
    /// ISO-8601 time; only messages created at or after it (e.g. 2026-08-09T10:00:00Z, a bare
    /// date, or with an offset).
    #[serde(default)]
    pub since: Option<String>,
    /// How many of the newest matches to return, 1 to 1000 (default 100).
    #[serde(default = "hundred")]
    pub limit: i64,
    /// Debt status: open or resolved.
    #[serde(default)]
    pub status: Option<String>,
    /// One of bug, feat, proc, status, question, answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// One of proposed, in_progress, done_local, needs_you, done, blocked.
    #[serde(default)]
    pub work_status: Option<String>,
    /// Literal, case-insensitive substring of topic OR body (at most 200 characters).
    #[serde(default)]
    pub text: Option<String>,
    /// Only proposals structurally linked to this pin key (mentions in the text do not count;
    /// use text= for those).
    #[serde(default)]
    pub pin_key: Option<String>,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of search_messages.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchMessagesParams {
    /// The query: words (all must match), "exact phrases", OR, NOT, parentheses, a trailing *
    /// for a prefix, and topic: or body: to look in one field. Matching is by substring and
    /// case-insensitive. Text that does not parse is searched literally.
    pub query: String,
    /// Only messages written by this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only messages addressed to this role.
    #[serde(default)]
    pub to_role: Option<String>,
    /// One of bug, feat, proc, status, question, answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// Debt status: open or resolved.
    #[serde(default)]
    pub status: Option<String>,
    /// How many hits to return, 1 to 1000 (default 50).
    #[serde(default = "fifty")]
    pub limit: i64,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of get_thread.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetThreadParams {
    /// Any message of the thread (an unambiguous id prefix of 6+ hex characters).
    pub message_id: String,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

#[tool_router(router = browse_router, vis = "pub(super)")]
impl Server {
    /// Filter the whole history on exact fields and literal substrings, newest first: topic=
    /// (in the subject), text= (subject or body), from_role, to_role, since, status, kind,
    /// work_status, pin_key (structural link only). Unranked; for "where did we discuss X" use
    /// search_messages. `fields` projects rows; `truncated` says when more matched.
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

    /// Full-text search over topic and body, best match first, each hit with a [highlighted]
    /// snippet and match="fts". A query holding a term shorter than 3 characters is answered
    /// by a scan with the same rules (match="substring", newest first). Deleted messages are
    /// never found. A search that had to examine too much text answers with the hits found so
    /// far and truncated.reason="work": narrow it. For unranked filtering use
    /// list_messages(text=...).
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

    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), description = concat!("The whole conversation around a message: walks reply_to up to the \
        root, then returns the full reply tree, oldest first. Deleted messages stay in as \
        tombstones (deleted_at set) so the chain never breaks. ", super::provenance!()),
        annotations(title = "Get a thread", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn get_thread(
        &self,
        Parameters(p): Parameters<GetThreadParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| get_thread(s, &p.message_id, p.fields.as_ref()))
            .await
    }
}
