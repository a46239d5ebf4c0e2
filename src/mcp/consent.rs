//! Tools of consent: awaiting_ack, revise_message, pin_set, pin_get, pin_list,
//! pin_history, acknowledge, get_acknowledgements, backfill_superseded,
//! undo_backfill.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::Server;
use crate::app::backfill::{self, BackfillRequest, UndoBackfillRequest};
use crate::app::pin::{self, PinHistoryRequest, PinKeyRequest, PinRequest};
use crate::app::revise::{self, ReviseRequest};
use crate::app::rows::{DatedListing, Listing, MessageView, Projected};
use crate::app::vote::{self, AckRequest, AwaitingRequest, TallyRequest};

#[tool_router(router = consent_router, vis = "pub(super)")]
impl Server {
    #[tool(output_schema = super::catalogued_output::<DatedListing<Projected<MessageView>>>(), description = concat!("Proposals awaiting a decision from `to_role` (default: you) on \
        their current text, oldest first, with acks {agreed, needed, missing}. ", super::provenance!()),
        annotations(title = "Proposals awaiting your decision", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn awaiting_ack(
        &self,
        Parameters(p): Parameters<AwaitingRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            vote::awaiting_ack(
                s,
                p.to_role.as_deref(),
                p.page.limit,
                p.page.fields.as_ref(),
                p.from_role.as_deref(),
                p.pin_key.as_deref(),
            )
        })
        .await
    }

    /// Re-issue YOUR OWN message's body (and topic) under the same id instead of a second
    /// version. Earlier votes go stale and voters are asked again.
    #[tool(output_schema = super::catalogued_output::<crate::app::revise::Revision>(), annotations(
        title = "Revise your message",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn revise_message(
        &self,
        Parameters(req): Parameters<ReviseRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| revise::revise_message(s, req)).await
    }

    /// Write a new version of a pin (a versioned rule everyone reads). A protected key needs
    /// approved_by: a proposal for it every needed role agreed to; one proposal, one version.
    /// Retires the key's live proposals.
    #[tool(output_schema = super::catalogued_output::<crate::app::pin::PinWrite>(), annotations(
        title = "Set a pin",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn pin_set(
        &self,
        Parameters(req): Parameters<PinRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_set(s, req)).await
    }

    #[tool(output_schema = super::catalogued_output::<crate::app::pin::PinLookup>(), description = concat!("A pin's current version with body and digests, or null. ",
        super::provenance!()),
        annotations(title = "Read a pin", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn pin_get(
        &self,
        Parameters(p): Parameters<PinKeyRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_get(s, &p.key)).await
    }

    /// Every pin's current version, without bodies, by key.
    #[tool(output_schema = super::catalogued_output::<Listing<crate::app::pin::PinSummary>>(), annotations(
        title = "List pins",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn pin_list(&self) -> Result<CallToolResult, McpError> {
        self.run(pin::pin_list).await
    }

    #[tool(output_schema = super::catalogued_output::<Listing<Projected<crate::app::pin::PinVersion>>>(), description = concat!("Every version of a pin, newest first. ", super::provenance!()),
        annotations(title = "Pin history", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn pin_history(
        &self,
        Parameters(p): Parameters<PinHistoryRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_history(s, &p.key, p.fields.as_ref()))
            .await
    }

    /// Vote on a message's current text: agree, reject, needs_changes or void. A revision
    /// makes it stale; voting again replaces it. Not on your own message.
    #[tool(output_schema = super::catalogued_output::<crate::app::vote::Vote>(), annotations(
        title = "Acknowledge (vote)",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn acknowledge(
        &self,
        Parameters(p): Parameters<AckRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            vote::acknowledge(
                s,
                &p.message_id,
                &p.decision,
                p.note,
                p.expect_body_sha256.as_deref(),
            )
        })
        .await
    }

    /// The votes on a message and `missing`: who still owes an agree (declared voters, else
    /// recipients). Votes on an earlier text are under quenched_by_revision.
    #[tool(output_schema = super::catalogued_output::<Projected<crate::app::vote::Tally>>(), annotations(
        title = "Votes on a message",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_acknowledgements(
        &self,
        Parameters(p): Parameters<TallyRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| vote::get_acknowledgements(s, &p.message_id, p.fields.as_ref()))
            .await
    }

    /// One-off cleanup: retire old proposals settled by a pin version and messages about a
    /// dead target. Previews by default; applying needs the reviewed ids, their count and each
    /// key owner's go-ahead. undo_backfill reverses it.
    #[tool(output_schema = super::catalogued_output::<crate::app::backfill::BackfillOutcome>(), annotations(
        title = "Cleanup pass (preview or apply)",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn backfill_superseded(
        &self,
        Parameters(req): Parameters<BackfillRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| backfill::backfill_superseded(s, req))
            .await
    }

    /// Restore messages backfill_superseded retired (only those). For the role that ran it or a
    /// key's owner.
    #[tool(output_schema = super::catalogued_output::<crate::app::backfill::Restoration>(), annotations(
        title = "Undo a cleanup pass",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn undo_backfill(
        &self,
        Parameters(p): Parameters<UndoBackfillRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| backfill::undo_backfill(s, &p.ids, p.reason))
            .await
    }
}
