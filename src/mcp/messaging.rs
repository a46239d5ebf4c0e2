//! Tools that write mail: send_message, read_inbox, mark_read, delete_message.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::Server;
use crate::app::delete::DeleteRequest;
use crate::app::inbox::{MarkReadRequest, ReadInboxRequest};
use crate::app::rows::{Listing, MessageView, Projected};
use crate::app::send::SendRequest;
use crate::app::{delete, inbox, send};

#[tool_router(router = messaging_router, vis = "pub(super)")]
impl Server {
    /// Post a message. Progress on an existing one is set_work_status, not a new message.
    /// action_required=true makes a debt, open until the addressee resolves it and you
    /// confirm. Refuses a topic over 80 characters.
    #[tool(output_schema = super::catalogued_output::<crate::app::send::Sent>(), annotations(
        title = "Send a message",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn send_message(
        &self,
        Parameters(req): Parameters<SendRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| send::send_message(s, req)).await
    }

    #[tool(output_schema = super::catalogued_output::<Listing<Projected<MessageView>>>(), description = concat!("Your mail, the newest `limit`, oldest first. Marks nothing read \
        (mark_read does). ",
        super::provenance!()),
        annotations(title = "Read your inbox", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn read_inbox(
        &self,
        Parameters(p): Parameters<ReadInboxRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| inbox::read_inbox(s, p.unread_only, p.page.limit, p.page.fields.as_ref()))
            .await
    }

    /// Mark your mail read: the only thing that lowers your unread count.
    #[tool(output_schema = super::catalogued_output::<crate::app::inbox::MarkRead>(), annotations(
        title = "Mark read",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn mark_read(
        &self,
        Parameters(p): Parameters<MarkReadRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| inbox::mark_read(s, p.message_id.as_deref(), p.message_ids.as_deref()))
            .await
    }

    /// Soft-delete a message you sent or received (a tombstone in get_thread). Not an open
    /// debt, nor others' proposals.
    #[tool(output_schema = super::catalogued_output::<crate::app::delete::Deletion>(), annotations(
        title = "Delete a message",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn delete_message(
        &self,
        Parameters(p): Parameters<DeleteRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| delete::delete_message(s, &p.message_id))
            .await
    }
}
