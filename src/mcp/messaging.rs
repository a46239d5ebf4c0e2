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
    /// A role, a list of roles, or "*" (every other role).
    pub to: ToArg,
    /// One plain line, at most 80 characters.
    pub topic: String,
    /// The text (non-empty unless body_ref; at most 256 KiB).
    #[serde(default)]
    pub body: String,
    /// Instead of body: a sealed upload's id.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// True: a debt for the single addressee, open until resolved and confirmed.
    #[serde(default)]
    pub action_required: bool,
    /// The message this answers.
    #[serde(default)]
    pub reply_to: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// Initial work status (proposed, in_progress, done_local, needs_you, done, blocked).
    #[serde(default)]
    pub work_status: Option<String>,
    /// {role: text} added to the body for that recipient.
    #[serde(default)]
    pub addenda: Option<BTreeMap<String, String>>,
    /// False: recipients owe no vote.
    #[serde(default = "yes")]
    pub decision_requested: bool,
    /// The pin key a proposal changes, or null; kind=proc must pass it.
    #[serde(default, deserialize_with = "super::present")]
    #[schemars(with = "super::schema::NullIsAnAnswer<String>")]
    pub pin_key: Option<Option<String>>,
    /// The message this nudges, or null; kind=proc must pass it.
    #[serde(default, deserialize_with = "super::present")]
    #[schemars(with = "super::schema::NullIsAnAnswer<String>")]
    pub about_message_id: Option<Option<String>>,
    /// With pin_key: whose agree it needs, "*" or roles.
    #[serde(default, deserialize_with = "super::present")]
    #[schemars(with = "super::schema::NullIsAnAnswer<ToArg>")]
    pub voters: Option<Option<ToArg>>,
}

/// Parameters of read_inbox.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadInboxParams {
    /// Only messages not marked read.
    #[serde(default = "yes")]
    pub unread_only: bool,
    /// How many of the newest, 1 to 1000.
    #[serde(default = "fifty")]
    pub limit: i64,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

/// Parameters of mark_read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MarkReadParams {
    /// One message (or message_ids).
    #[serde(default)]
    pub message_id: Option<String>,
    /// Several messages, all or none.
    #[serde(default)]
    pub message_ids: Option<Vec<String>>,
}

/// Parameters of delete_message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteMessageParams {
    /// The message to delete.
    pub message_id: String,
}

#[tool_router(router = messaging_router, vis = "pub(super)")]
impl Server {
    /// Post a message. Progress on an existing one is set_work_status, not a new message.
    /// action_required=true makes a debt, open until the addressee resolves it and you
    /// confirm. Refuses a topic over 80 characters.
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

    #[tool(output_schema = super::output_schema::<Listing<Projected<MessageView>>>(), description = concat!("Your mail, the newest `limit`, oldest first. Marks nothing read \
        (mark_read does). ",
        super::provenance!()),
        annotations(title = "Read your inbox", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn read_inbox(
        &self,
        Parameters(p): Parameters<ReadInboxParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| inbox::read_inbox(s, p.unread_only, p.limit, p.fields.as_ref()))
            .await
    }

    /// Mark your mail read: the only thing that lowers your unread count.
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

    /// Soft-delete a message you sent or received (a tombstone in get_thread). Not an open
    /// debt, nor others' proposals.
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
