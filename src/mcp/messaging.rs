//! Tools that write mail: send_message, read_inbox, mark_read, delete_message.

use std::collections::BTreeMap;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::Deserialize;

use super::Server;
use crate::app::rows::{FieldsArg, Listing, MessageView, Projected};
use crate::app::send::{SendRequest, ToArg};
use crate::app::{delete, inbox, send};

fn yes() -> bool {
    true
}
fn fifty() -> i64 {
    50
}

/// Parameters of send_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendMessageParams {
    /// Recipient: one role name, a list of role names, or "*" for every other role. Several
    /// recipients are allowed for kind 'proc' or 'status', or for a reply that keeps the
    /// audience of a multi-recipient parent.
    pub to: ToArg,
    /// Subject line: one line of plain text (no line breaks, tabs or control characters), at
    /// most 80 characters (required). Details and formatting belong in the body.
    pub topic: String,
    /// The message text (required and non-empty unless body_ref is given; at most 256 KiB
    /// inline).
    #[serde(default)]
    pub body: String,
    /// Instead of body: the id of a sealed upload (upload_content, then seal_content), anyone's.
    /// Its text becomes the body exactly, so the message's body_sha256 equals the upload's
    /// sha256. Pass body or body_ref, not both.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// True makes the message a debt for its single addressee: it stays open until resolved
    /// and confirmed. Cannot go to several roles.
    #[serde(default)]
    pub action_required: bool,
    /// Id of the message this one answers (any unambiguous prefix of 6+ hex characters).
    #[serde(default)]
    pub reply_to: Option<String>,
    /// One of bug, feat, proc, status, question, answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// Initial work status: proposed, in_progress, done_local, needs_you, done or blocked.
    /// Recorded as a transition by you.
    #[serde(default)]
    pub work_status: Option<String>,
    /// Per-recipient additions to the shared body: {role: text}, each at most 4000 characters.
    /// Every key must be a recipient.
    #[serde(default)]
    pub addenda: Option<BTreeMap<String, String>>,
    /// False when you want no decision from the recipients (they owe no vote). Default true.
    #[serde(default = "yes")]
    pub decision_requested: bool,
    /// The pin key this proposal would change, or null if it changes none. kind='proc' must
    /// pass it explicitly (null is an answer; omitting it is refused). With a key, the message
    /// must go to every other role, must declare 'voters', and no other round may be open on
    /// that key.
    #[serde(default, deserialize_with = "super::present")]
    #[schemars(with = "Option<String>")]
    pub pin_key: Option<Option<String>>,
    /// The message this one is about (a nudge: it owes no decision of its own and retires when
    /// its target is voted on, settled or deleted), or null if it stands on its own. kind='proc'
    /// must pass it explicitly.
    #[serde(default, deserialize_with = "super::present")]
    #[schemars(with = "Option<String>")]
    pub about_message_id: Option<Option<String>>,
    /// With pin_key: whose 'agree' the round needs — "*" for every other role, or a list of
    /// roles (the others still receive it and may vote, without blocking). Required with a
    /// pin_key; refused without one.
    #[serde(default, deserialize_with = "super::present")]
    #[schemars(with = "Option<ToArg>")]
    pub voters: Option<Option<ToArg>>,
}

/// Parameters of read_inbox.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadInboxParams {
    /// Only messages you have not marked read (default true).
    #[serde(default = "yes")]
    pub unread_only: bool,
    /// How many of the newest messages to return, 1 to 1000 (default 50).
    #[serde(default = "fifty")]
    pub limit: i64,
    /// Projection: a list of field names, or "headers" for everything but the bodies.
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of mark_read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MarkReadParams {
    /// One message to mark read. Pass this or message_ids, not both.
    #[serde(default)]
    pub message_id: Option<String>,
    /// Several messages to mark read at once; all are checked first and nothing is marked if
    /// one is refused.
    #[serde(default)]
    pub message_ids: Option<Vec<String>>,
}

/// Parameters of delete_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteMessageParams {
    /// The message to delete (any unambiguous id prefix of 6+ hex characters).
    pub message_id: String,
}

#[tool_router(router = messaging_router, vis = "pub(super)")]
impl Server {
    /// Post a message to one role, a list of roles, or "*" (every other role). For progress on
    /// an existing message do not send a new one. With action_required=true the message is a
    /// debt that stays open until the addressee resolves it and you confirm. Returns {id,
    /// created_at} (and recipients when there are several). Refuses: a topic over
    /// 80 characters or holding a line break or control character, an empty body, body and
    /// body_ref together, an unknown or unsealed upload as body_ref, unknown roles, sending to
    /// yourself, a broadcast debt, an unknown or ambiguous reply_to.
    #[tool(output_schema = super::output_schema::<crate::app::send::Sent>(), annotations(
        title = "Send a message",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn send_message(
        &self,
        Parameters(p): Parameters<SendMessageParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            send::send_message(
                s,
                SendRequest {
                    to: p.to,
                    topic: p.topic,
                    body: p.body,
                    body_ref: p.body_ref,
                    action_required: p.action_required,
                    reply_to: p.reply_to,
                    kind: p.kind,
                    work_status: p.work_status,
                    addenda: p.addenda,
                    decision_requested: p.decision_requested,
                    pin_key: p.pin_key,
                    about_message_id: p.about_message_id,
                    voters: p.voters,
                },
            )
        })
        .await
    }

    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), description = concat!("Read messages addressed to your role: the newest `limit` of them, \
        oldest first, unread only by default. Reading records delivery (opened_at), which splits the \
        unopened and opened-but-unmarked counts; it never marks anything read — only mark_read does. \
        If more match than fit, a `truncated` note says how to page the rest with list_messages. ",
        super::provenance!()),
        annotations(title = "Read your inbox", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn read_inbox(
        &self,
        Parameters(p): Parameters<ReadInboxParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| inbox::read_inbox(s, p.unread_only, p.limit, p.fields.as_ref()))
            .await
    }

    /// Mark one message (message_id) or a batch (message_ids) addressed to you as read — the
    /// only thing that lowers your unread count. A batch is checked whole first: an unknown id
    /// or someone else's mail refuses it and nothing is marked. Returns {id, read_at,
    /// already_read}, or a list of them for a batch.
    #[tool(output_schema = super::output_schema::<crate::app::inbox::MarkRead>(), annotations(
        title = "Mark read",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn mark_read(
        &self,
        Parameters(p): Parameters<MarkReadParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| inbox::mark_read(s, p.message_id.as_deref(), p.message_ids.as_deref()))
            .await
    }

    /// Soft-delete a message you sent or received: it becomes a tombstone, gone from inbox,
    /// listings and search, but kept in get_thread so reply chains stay whole. Refuses: a
    /// message you are not a party to, someone else's proposal (vote on it instead), and an
    /// open debt (resolve it first; deleting must not silently close it).
    #[tool(output_schema = super::output_schema::<crate::app::delete::Deletion>(), annotations(
        title = "Delete a message",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn delete_message(
        &self,
        Parameters(p): Parameters<DeleteMessageParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| delete::delete_message(s, &p.message_id))
            .await
    }
}
