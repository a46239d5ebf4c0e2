//! Tools of consent: awaiting_ack, revise_message, pin_set, pin_get, pin_list,
//! pin_history, acknowledge, get_acknowledgements, backfill_superseded,
//! undo_backfill.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::Deserialize;

use super::Server;
use crate::app::backfill::{self, BackfillRequest, OneOrMany};
use crate::app::pin::{self, PinRequest};
use crate::app::revise::{self, ReviseRequest};
use crate::app::rows::{DatedListing, FieldsArg, Listing, MessageView, Projected};
use crate::app::vote;

fn hundred() -> i64 {
    100
}
fn yes() -> bool {
    true
}

/// Parameters of awaiting_ack.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AwaitingAckParams {
    /// Whose pending decisions (default: yours).
    #[serde(default)]
    pub to_role: Option<String>,
    /// How many of the oldest, 1 to 1000.
    #[serde(default = "hundred")]
    pub limit: i64,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
    /// Only proposals by this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only proposals for this pin key.
    #[serde(default)]
    pub pin_key: Option<String>,
}

/// Parameters of revise_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviseParams {
    /// Your message.
    pub message_id: String,
    /// The whole new body (or body_ref).
    #[serde(default)]
    pub body: String,
    /// Instead of body: a sealed upload's id.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// A new topic (omit to keep it).
    #[serde(default)]
    pub topic: Option<String>,
    /// What changed and why.
    #[serde(default)]
    pub note: Option<String>,
}

/// Parameters of pin_set.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PinSetParams {
    /// The pin key. team-charter, contract-version, glossary and any key once approved are
    /// protected.
    pub key: String,
    /// Title of this version (one line).
    pub title: String,
    /// A version label, e.g. "v3".
    pub version: String,
    /// The text (for an approved change, the agreed text), or body_ref.
    #[serde(default)]
    pub body: String,
    /// Instead of body: a sealed upload's id.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// The agreed proposal for this key; required on a protected key.
    #[serde(default)]
    pub approved_by: Option<String>,
    /// True: check only, write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Parameters of pin_get.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PinGetParams {
    /// The pin key.
    pub key: String,
}

/// Parameters of pin_list.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PinListParams {}

/// Parameters of pin_history.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PinHistoryParams {
    /// The pin key.
    pub key: String,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of acknowledge.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AcknowledgeParams {
    /// The message (not your own).
    pub message_id: String,
    /// agree, reject, needs_changes or void (the subject is gone).
    pub decision: String,
    /// Why.
    #[serde(default)]
    pub note: Option<String>,
    /// The body_sha256 you read: refused if the text changed since.
    #[serde(default)]
    pub expect_body_sha256: Option<String>,
}

/// Parameters of get_acknowledgements.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetAcknowledgementsParams {
    /// The message.
    pub message_id: String,
    /// "headers" (the tally without notes), or field names.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of backfill_superseded.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BackfillParams {
    /// True: preview only. False: apply (needs ids, expect_count, key, word_message_id).
    #[serde(default = "yes")]
    pub dry_run: bool,
    /// The messages to retire, as reviewed in the preview.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Field names of preview rows, or "headers".
    #[serde(default)]
    pub fields: Option<FieldsArg>,
    /// The pin key(s) this pass settles.
    #[serde(default)]
    pub key: Option<OneOrMany>,
    /// Per key, in order: the message where its owner agreed to this cleanup.
    #[serde(default)]
    pub word_message_id: Option<OneOrMany>,
    /// The number of ids, counted independently; a mismatch retires nothing.
    #[serde(default)]
    pub expect_count: Option<i64>,
    /// The preview's generated_at.
    #[serde(default)]
    pub snapshot_at: Option<String>,
    /// Also proposals that only cite a candidate as #id.
    #[serde(default)]
    pub include_by_reference: bool,
}

/// Parameters of undo_backfill.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UndoBackfillParams {
    /// Messages a cleanup pass retired.
    pub ids: Vec<String>,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

#[tool_router(router = consent_router, vis = "pub(super)")]
impl Server {
    #[tool(output_schema = super::output_schema::<DatedListing<Projected<MessageView>>>(), description = concat!("Proposals awaiting a decision from `to_role` (default: you) on \
        their current text, oldest first, with acks {agreed, needed, missing}. ", super::provenance!()),
        annotations(title = "Proposals awaiting your decision", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn awaiting_ack(
        &self,
        Parameters(p): Parameters<AwaitingAckParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            vote::awaiting_ack(
                s,
                p.to_role.as_deref(),
                p.limit,
                p.fields.as_ref(),
                p.from_role.as_deref(),
                p.pin_key.as_deref(),
            )
        })
        .await
    }

    /// Re-issue YOUR OWN message's body (and topic) under the same id instead of a second
    /// version. Earlier votes go stale and voters are asked again.
    #[tool(output_schema = super::output_schema::<crate::app::revise::Revision>(), annotations(
        title = "Revise your message",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn revise_message(
        &self,
        Parameters(p): Parameters<ReviseParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            revise::revise_message(
                s,
                ReviseRequest {
                    message_id: p.message_id,
                    body: p.body,
                    body_ref: p.body_ref,
                    topic: p.topic,
                    note: p.note,
                },
            )
        })
        .await
    }

    /// Write a new version of a pin (a versioned rule everyone reads). A protected key needs
    /// approved_by: a proposal for it every needed role agreed to; one proposal, one version.
    /// Retires the key's live proposals.
    #[tool(output_schema = super::output_schema::<crate::app::pin::PinWrite>(), annotations(
        title = "Set a pin",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn pin_set(
        &self,
        Parameters(p): Parameters<PinSetParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            pin::pin_set(
                s,
                PinRequest {
                    key: p.key,
                    title: p.title,
                    version: p.version,
                    body: p.body,
                    body_ref: p.body_ref,
                    approved_by: p.approved_by,
                    dry_run: p.dry_run,
                },
            )
        })
        .await
    }

    #[tool(output_schema = super::output_schema::<crate::app::pin::PinLookup>(), description = concat!("A pin's current version with body and digests, or null. ",
        super::provenance!()),
        annotations(title = "Read a pin", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn pin_get(
        &self,
        Parameters(p): Parameters<PinGetParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_get(s, &p.key)).await
    }

    /// Every pin's current version, without bodies, by key.
    #[tool(output_schema = super::output_schema::<Listing<crate::app::pin::PinSummary>>(), annotations(
        title = "List pins",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn pin_list(
        &self,
        Parameters(_p): Parameters<PinListParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(pin::pin_list).await
    }

    #[tool(output_schema = super::output_schema::<Listing<Projected<crate::app::pin::PinVersion>>>(), description = concat!("Every version of a pin, newest first. ", super::provenance!()),
        annotations(title = "Pin history", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn pin_history(
        &self,
        Parameters(p): Parameters<PinHistoryParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_history(s, &p.key, p.fields.as_ref()))
            .await
    }

    /// Vote on a message's current text: agree, reject, needs_changes or void. A revision
    /// makes it stale; voting again replaces it. Not on your own message.
    #[tool(output_schema = super::output_schema::<crate::app::vote::Vote>(), annotations(
        title = "Acknowledge (vote)",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn acknowledge(
        &self,
        Parameters(p): Parameters<AcknowledgeParams>,
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
    #[tool(output_schema = super::output_schema::<Projected<crate::app::vote::Tally>>(), annotations(
        title = "Votes on a message",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn get_acknowledgements(
        &self,
        Parameters(p): Parameters<GetAcknowledgementsParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| vote::get_acknowledgements(s, &p.message_id, p.fields.as_ref()))
            .await
    }

    /// One-off cleanup: retire old proposals settled by a pin version and messages about a
    /// dead target. Previews by default; applying needs the reviewed ids, their count and each
    /// key owner's go-ahead. undo_backfill reverses it.
    #[tool(output_schema = super::output_schema::<crate::app::backfill::BackfillOutcome>(), annotations(
        title = "Cleanup pass (preview or apply)",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn backfill_superseded(
        &self,
        Parameters(p): Parameters<BackfillParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            backfill::backfill_superseded(
                s,
                BackfillRequest {
                    dry_run: p.dry_run,
                    ids: p.ids,
                    fields: p.fields,
                    key: p.key,
                    word_message_id: p.word_message_id,
                    expect_count: p.expect_count,
                    snapshot_at: p.snapshot_at,
                    include_by_reference: p.include_by_reference,
                },
            )
        })
        .await
    }

    /// Restore messages backfill_superseded retired (only those). For the role that ran it or a
    /// key's owner.
    #[tool(output_schema = super::output_schema::<crate::app::backfill::Restoration>(), annotations(
        title = "Undo a cleanup pass",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn undo_backfill(
        &self,
        Parameters(p): Parameters<UndoBackfillParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| backfill::undo_backfill(s, &p.ids, p.reason))
            .await
    }
}
