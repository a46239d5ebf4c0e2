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
    /// Whose pending decisions to list (default: your own role).
    #[serde(default)]
    pub to_role: Option<String>,
    /// How many of the oldest to return, 1 to 1000 (default 100).
    #[serde(default = "hundred")]
    pub limit: i64,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
    /// Only proposals written by this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only proposals for this pin key.
    #[serde(default)]
    pub pin_key: Option<String>,
}

/// Parameters of revise_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviseParams {
    /// Your message to re-issue (an unambiguous id prefix of 6+ hex characters).
    pub message_id: String,
    /// The complete new body (required unless body_ref is given; it replaces the old one).
    #[serde(default)]
    pub body: String,
    /// Instead of body: the id of a sealed upload (anyone's) whose text becomes the new body
    /// exactly. Pass body or body_ref, not both.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// A new topic (one line of plain text, at most 80 characters); omit it to keep the current
    /// one.
    #[serde(default)]
    pub topic: Option<String>,
    /// What changed and why (at most 4000 characters); kept in message_history.
    #[serde(default)]
    pub note: Option<String>,
}

/// Parameters of pin_set.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PinSetParams {
    /// The pin key (at most 80 characters). 'team-charter', 'contract-version' and 'glossary'
    /// are protected from their first version; a key ever written with approved_by stays
    /// protected.
    pub key: String,
    /// Title of this version (one line of plain text, at most 200 characters).
    pub title: String,
    /// A free version label (at most 80 characters), e.g. "v3" or "2026-11-30".
    pub version: String,
    /// The verbatim text of this version: for an approved change, the text that was agreed.
    /// Required unless body_ref is given.
    #[serde(default)]
    pub body: String,
    /// Instead of body: the id of a sealed upload (anyone's) whose text is this version's body
    /// exactly. Pass body or body_ref, not both.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// Id of the proposal (kind='proc', pin_key=key) every needed role agreed to. Required on
    /// a protected key; one proposal approves one version.
    #[serde(default)]
    pub approved_by: Option<String>,
    /// True: run every check and write nothing; answers {ok, problem, missing_agrees} or
    /// {ok, would_write}.
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
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of acknowledge.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AcknowledgeParams {
    /// The message you decide on (not your own).
    pub message_id: String,
    /// agree, reject, needs_changes, or void (the subject is gone: from a voter it ends the
    /// round; it never counts as agreement).
    pub decision: String,
    /// Why (at most 4000 characters).
    #[serde(default)]
    pub note: Option<String>,
    /// The body_sha256 of the text you read. If the author revised it since, the vote is
    /// refused instead of landing on a text you did not read.
    #[serde(default)]
    pub expect_body_sha256: Option<String>,
}

/// Parameters of get_acknowledgements.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetAcknowledgementsParams {
    /// The message.
    pub message_id: String,
    /// "headers" for the tally only (agreed, needed, missing, decisions, voters, …) without the
    /// notes, or a list of field names.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of backfill_superseded.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BackfillParams {
    /// True (default): preview only, nothing changes. False: apply (needs ids, expect_count,
    /// key and word_message_id).
    #[serde(default = "yes")]
    pub dry_run: bool,
    /// The messages to retire: exactly those you reviewed in the preview (narrows a preview).
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Projection of the preview rows: a list of field names, or "headers".
    #[serde(default)]
    pub fields: Option<FieldsArg>,
    /// The pin key(s) this pass settles: one key or a list (narrows the key rows of a preview).
    #[serde(default)]
    pub key: Option<OneOrMany>,
    /// One message per key, in the same order: where the key's owner (the role that wrote its
    /// current version) agreed to this cleanup.
    #[serde(default)]
    pub word_message_id: Option<OneOrMany>,
    /// The number of ids, taken independently from the message carrying the owner's word; a
    /// mismatch retires nothing.
    #[serde(default)]
    pub expect_count: Option<i64>,
    /// The preview's generated_at: ids retired by someone else since then are named.
    #[serde(default)]
    pub snapshot_at: Option<String>,
    /// Also show (and allow retiring) proposals that only cite a candidate as #id.
    #[serde(default)]
    pub include_by_reference: bool,
}

/// Parameters of undo_backfill.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UndoBackfillParams {
    /// The messages a cleanup pass retired that should be live again.
    pub ids: Vec<String>,
    /// Why (at most 4000 characters); kept in message_history.
    #[serde(default)]
    pub reason: Option<String>,
}

#[tool_router(router = consent_router, vis = "pub(super)")]
impl Server {
    #[tool(output_schema = super::output_schema::<DatedListing<Projected<MessageView>>>(), description = concat!("Proposals (kind='proc') waiting for a decision from `to_role` \
        (default: you), oldest first: addressed to it, live, asking for a decision, not a nudge, it \
        is among the declared voters (if any), and it has not voted on the current text. Any \
        decision (void included) takes one off the list; a revision puts it back. Rows carry acks \
        {agreed, needed, missing}, age_days and `obligation` (the debt side, if any), plus \
        generated_at. ", super::provenance!()),
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

    /// Re-issue the body (and optionally the topic) of YOUR OWN message under the same id,
    /// instead of sending a second version. Every earlier vote goes stale (it was cast on other
    /// bytes) and the proposal returns to those voters' awaiting_ack. Refused for someone else's
    /// message (PermissionError) and for a proposal that already approved a pin version.
    /// Returns {id, unchanged, revised_at, previous_body_sha256, quenched_votes, body_sha256, …};
    /// the same text again is {unchanged: true} and records nothing.
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

    /// Write a new version of a pin (a versioned rule everyone reads). Free keys accept any
    /// write; a protected key needs approved_by: a proposal for this key that every needed role
    /// agreed to on its current text, while the current version was in place; one proposal
    /// approves one version. dry_run=true runs the very same checks and writes nothing. A
    /// successful write retires the live proposals for the key and their nudges. Returns {key,
    /// version, updated_by, updated_at, approved_by, body_sha256, body_length_bytes,
    /// body_length_chars, superseded}.
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

    #[tool(output_schema = super::output_schema::<crate::app::pin::PinLookup>(), description = concat!("The current version of a pin with its body and digests \
        (body_sha256, body_length_bytes, body_length_chars), or null for a key never written. ",
        super::provenance!()),
        annotations(title = "Read a pin", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn pin_get(
        &self,
        Parameters(p): Parameters<PinGetParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_get(s, &p.key)).await
    }

    /// The current version of every pin, without bodies, ordered by key: compare the digests
    /// with your local copies in one call.
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

    #[tool(output_schema = super::output_schema::<Listing<Projected<crate::app::pin::PinVersion>>>(), description = concat!("Every version of a pin, newest first ([] for a key never \
        written). ", super::provenance!()),
        annotations(title = "Pin history", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn pin_history(
        &self,
        Parameters(p): Parameters<PinHistoryParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| pin::pin_history(s, &p.key, p.fields.as_ref()))
            .await
    }

    /// Record your decision on a message (any kind; proposals are what awaiting_ack lists): agree,
    /// reject, needs_changes, or void (the subject is gone; from a voter it ends the round). The
    /// vote is bound to the exact text (its digest): a later revision makes it stale. Repeating
    /// replaces your previous vote. You cannot vote on your own message. Side effect: your nudges
    /// about this message retire. Returns {message_id, role, decision, note, created_at,
    /// superseded}.
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

    /// The consent state of a message: the votes on record and, more usefully, `missing` (the
    /// electorate members without a current agree). needed counts the electorate: declared
    /// voters, else recipients, never the author. Votes from outside it are listed
    /// (from_non_voters / from_non_recipients), never counted; votes on an earlier text are under
    /// quenched_by_revision. fields="headers" gives the tally without notes.
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

    /// A one-off cleanup applying the retirement rules to history written before they
    /// existed: live proposals settled by a pin version (key rows), messages about a dead
    /// target (target rows), and, on request, proposals citing those (reference rows). Never
    /// retires by age; approval records are never candidates. dry_run=true (default) previews
    /// {would_retire, count, would_cascade, not_candidates, multi_claimed, total_candidates,
    /// excluded, generated_at}. Applying needs ids (those reviewed), expect_count (counted
    /// independently), and key + word_message_id (each key's owner's go-ahead); any mismatch
    /// retires nothing. The only retirement that undo_backfill can reverse.
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

    /// Restore messages a cleanup pass (backfill_superseded) retired, and only those:
    /// retirements by the live rules (a pin write, a vote, a deletion) stay. Allowed to the role
    /// that ran the pass or the owner of a key it named. Returns {restored, refused}; refused
    /// when nothing could be restored.
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
