//! Tools of the debt lifecycle and the channel's counters: resolve_message,
//! confirm_resolution, reopen_message, open_obligations, set_work_status,
//! ready_work, message_history, channel_status.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::Deserialize;

use super::Server;
use crate::app::rows::{DatedListing, FieldsArg, Listing, MessageView, Projected};
use crate::app::{lifecycle, obligations, status};

fn hundred() -> i64 {
    100
}
fn fifty() -> i64 {
    50
}

/// Parameters of resolve_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResolveParams {
    /// The debt to resolve (an unambiguous id prefix of 6+ hex characters).
    pub message_id: String,
    /// What was done, or why it is withdrawn (at most 4000 characters).
    #[serde(default)]
    pub resolution_note: Option<String>,
}

/// Parameters of confirm_resolution.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConfirmParams {
    /// The resolved debt to confirm.
    pub message_id: String,
    /// Optional remark (at most 4000 characters).
    #[serde(default)]
    pub note: Option<String>,
}

/// Parameters of reopen_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReopenParams {
    /// The resolved debt to reopen.
    pub message_id: String,
    /// Why it is not done (at most 4000 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Parameters of open_obligations.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenObligationsParams {
    /// Whose debts to list (default: your own role); any role may look at any other.
    #[serde(default)]
    pub to_role: Option<String>,
    /// How many of the newest to return, 1 to 1000 (default 100).
    #[serde(default = "hundred")]
    pub limit: i64,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of set_work_status.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SetWorkStatusParams {
    /// The message whose work moves.
    pub message_id: String,
    /// One of proposed, in_progress, done_local, needs_you, done, blocked. 'done' needs the
    /// current status to be 'done_local', set by the other side.
    pub work_status: String,
    /// Why (at most 4000 characters); kept in message_history.
    #[serde(default)]
    pub note: Option<String>,
    /// With 'blocked' only: the open debt this work waits for.
    #[serde(default)]
    pub blocked_by: Option<String>,
}

/// Parameters of ready_work.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadyWorkParams {
    /// How many to return, oldest first, 1 to 1000 (default 50).
    #[serde(default = "fifty")]
    pub limit: i64,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of message_history.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryParams {
    /// The message (an unambiguous id prefix of 6+ hex characters).
    pub message_id: String,
}

#[tool_router(router = debts_router, vis = "pub(super)")]
impl Server {
    /// Resolve a debt (an action_required message) you are party to: the addressee when the
    /// work is done, or the author withdrawing it. The other side then confirms it
    /// (confirm_resolution) or reopens it; until then it stays in their resolved_for_you.
    /// Returns the resolution and `unblocked`: tasks that were blocked on this debt. Resolving
    /// twice keeps the first note (already_resolved=true).
    #[tool(output_schema = super::output_schema::<crate::app::lifecycle::Resolution>(), annotations(
        title = "Resolve a debt",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn resolve_message(
        &self,
        Parameters(p): Parameters<ResolveParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::resolve_message(s, &p.message_id, p.resolution_note))
            .await
    }

    /// Confirm the other side's resolution of a debt, closing it for good. The resolver can
    /// never confirm its own resolution. Refused when the debt is not resolved.
    #[tool(output_schema = super::output_schema::<crate::app::lifecycle::Confirmation>(), annotations(
        title = "Confirm a resolution",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn confirm_resolution(
        &self,
        Parameters(p): Parameters<ConfirmParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::confirm_resolution(s, &p.message_id, p.note))
            .await
    }

    /// Reopen a resolved debt (also after it was confirmed) when the work is not actually
    /// done. It goes back to open for its addressee; its work status is left as it is.
    #[tool(output_schema = super::output_schema::<crate::app::lifecycle::Reopening>(), annotations(
        title = "Reopen a debt",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn reopen_message(
        &self,
        Parameters(p): Parameters<ReopenParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::reopen_message(s, &p.message_id, p.reason))
            .await
    }

    /// How much a role owes: its open debts, newest first, each with age_days (since it was
    /// raised) and idle_days (since it last moved: a resolve, reopen or status change). Idle is
    /// the number that finds forgotten work. Nothing ever closes on either number.
    #[tool(output_schema = super::output_schema::<DatedListing<Projected<MessageView>>>(), annotations(
        title = "Open obligations",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn open_obligations(
        &self,
        Parameters(p): Parameters<OpenObligationsParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            obligations::open_obligations(s, p.to_role.as_deref(), p.limit, p.fields.as_ref())
        })
        .await
    }

    /// Move the work status of an existing message (do not send a new message for progress).
    /// Either party may; a third role may not. Any value may follow any other, except 'done',
    /// which needs 'done_local' first and the OTHER side to set it. 'needs_you' puts the ball
    /// with the other participant. Re-setting the current value is a no-op for whoever set it
    /// and a real, audited move for the other side. 'blocked' may name blocked_by: an open debt;
    /// when it is resolved the task shows up as unblocked and in ready_work.
    #[tool(output_schema = super::output_schema::<crate::app::lifecycle::WorkStatusSet>(), annotations(
        title = "Set work status",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn set_work_status(
        &self,
        Parameters(p): Parameters<SetWorkStatusParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            lifecycle::set_work_status(
                s,
                &p.message_id,
                &p.work_status,
                p.note,
                p.blocked_by.as_deref(),
            )
        })
        .await
    }

    /// What you can start now: your open debts that are not waiting behind a live blocker,
    /// oldest first, with age_days and idle_days. A blocked task whose blocker was resolved or
    /// deleted is included: resuming it is your move (set_work_status).
    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), annotations(
        title = "Ready work",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn ready_work(
        &self,
        Parameters(p): Parameters<ReadyWorkParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| obligations::ready_work(s, p.limit, p.fields.as_ref()))
            .await
    }

    /// The audit trail of a message, oldest first: every resolve, reopen, confirmation and
    /// work-status move (a status given at send time included), with who, when and the note.
    #[tool(output_schema = super::output_schema::<Listing<crate::app::lifecycle::Event>>(), annotations(
        title = "Message history",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn message_history(
        &self,
        Parameters(p): Parameters<HistoryParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::message_history(s, &p.message_id))
            .await
    }

    /// Call this first in a session and before you finish. NUMBERS in `counts`: unread mail,
    /// open debts (and the untaken ones), proposals awaiting your vote; LISTS of what has the
    /// ball with you: unblocked, needs_you, awaiting_done, resolved_for_you, plus your
    /// in_progress and blocked work. unread, open_obligations and awaiting_ack are counts —
    /// fetch them with read_inbox, open_obligations and awaiting_ack. `conflicted` lists your
    /// moves that lost to a concurrent one on another machine; `alarms` reports trouble in the
    /// channel folder (tell your user); `held` counts records dated ahead of this machine's
    /// clock; `tentative_since` says from when the order may still change as devices sync.
    #[tool(output_schema = super::output_schema::<crate::app::status::ChannelStatus>(), annotations(
        title = "Channel status",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn channel_status(&self) -> Result<CallToolResult, McpError> {
        self.run(status::channel_status).await
    }
}
