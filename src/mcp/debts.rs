//! Tools of the debt lifecycle and the channel's counters: resolve_message,
//! confirm_resolution, reopen_message, open_obligations, set_work_status,
//! ready_work, message_history, channel_status.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::Server;
use crate::app::lifecycle::{
    ConfirmRequest, HistoryRequest, ReopenRequest, ResolveRequest, WorkStatusRequest,
};
use crate::app::obligations::ObligationsRequest;
use crate::app::request::{LIMIT_FIFTY, Page};
use crate::app::rows::{DatedListing, Listing, MessageView, Projected};
use crate::app::{lifecycle, obligations, status};

#[tool_router(router = debts_router, vis = "pub(super)")]
impl Server {
    /// Resolve a debt you are party to: done (addressee) or withdrawn (author). The other side
    /// then confirms or reopens it. Returns the resolution and `unblocked` tasks.
    #[tool(output_schema = super::catalogued_output::<crate::app::lifecycle::Resolution>(), annotations(
        title = "Resolve a debt",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn resolve_message(
        &self,
        Parameters(p): Parameters<ResolveRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::resolve_message(s, &p.message_id, p.resolution_note))
            .await
    }

    /// Confirm the other side's resolution of a debt, closing it. Never your own.
    #[tool(output_schema = super::catalogued_output::<crate::app::lifecycle::Confirmation>(), annotations(
        title = "Confirm a resolution",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn confirm_resolution(
        &self,
        Parameters(p): Parameters<ConfirmRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::confirm_resolution(s, &p.message_id, p.note))
            .await
    }

    /// Reopen a resolved (or confirmed) debt whose work is not done.
    #[tool(output_schema = super::catalogued_output::<crate::app::lifecycle::Reopening>(), annotations(
        title = "Reopen a debt",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn reopen_message(
        &self,
        Parameters(p): Parameters<ReopenRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::reopen_message(s, &p.message_id, p.reason))
            .await
    }

    /// A role's open debts, newest first, with age_days and idle_days (since it last moved:
    /// what finds forgotten work).
    #[tool(output_schema = super::catalogued_output::<DatedListing<Projected<MessageView>>>(), annotations(
        title = "Open obligations",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn open_obligations(
        &self,
        Parameters(p): Parameters<ObligationsRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            obligations::open_obligations(
                s,
                p.to_role.as_deref(),
                p.page.limit,
                p.page.fields.as_ref(),
            )
        })
        .await
    }

    /// Move a message's work status (either party). 'done' needs 'done_local' first, set by
    /// the OTHER side; 'needs_you' hands the ball over; 'blocked' may name blocked_by.
    #[tool(output_schema = super::catalogued_output::<crate::app::lifecycle::WorkStatusSet>(), annotations(
        title = "Set work status",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn set_work_status(
        &self,
        Parameters(p): Parameters<WorkStatusRequest>,
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

    /// What you can start now: your open debts not behind a live blocker, oldest first.
    #[tool(output_schema = super::catalogued_output::<Listing<Projected<MessageView>>>(), annotations(
        title = "Ready work",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn ready_work(
        &self,
        Parameters(p): Parameters<Page<LIMIT_FIFTY>>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| obligations::ready_work(s, p.limit, p.fields.as_ref()))
            .await
    }

    /// A message's audit trail, oldest first: resolves, reopens, confirmations, status moves,
    /// revisions.
    #[tool(output_schema = super::catalogued_output::<Listing<crate::app::lifecycle::Event>>(), annotations(
        title = "Message history",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn message_history(
        &self,
        Parameters(p): Parameters<HistoryRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| lifecycle::message_history(s, &p.message_id))
            .await
    }

    /// Call first and before you finish: `counts` (unread, open debts, votes owed), lists of
    /// what has the ball with you, `alarms` to tell your user. Lean: a zero counter or an
    /// empty list is absent.
    #[tool(output_schema = super::catalogued_output::<crate::app::status::ChannelStatus>(), annotations(
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
