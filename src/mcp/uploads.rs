//! Tools for documents: upload_content, seal_content, get_content.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::Server;
use crate::app::upload::{self, ContentRequest, SealRequest, UploadRequest};

#[tool_router(router = uploads_router, vis = "pub(super)")]
impl Server {
    /// Store a document too large for a message (over 256 KiB): start an upload, append to
    /// it, seal_content it, then pass its id as body_ref. Returns the upload's state.
    #[tool(output_schema = super::catalogued_output::<crate::app::upload::UploadState>(), annotations(
        title = "Upload content",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn upload_content(
        &self,
        Parameters(p): Parameters<UploadRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            upload::upload_content(s, &p.text, p.upload_id.as_deref(), p.label.as_deref())
        })
        .await
    }

    /// Seal your upload: final bytes and sha256, usable as body_ref. Returns its state.
    #[tool(output_schema = super::catalogued_output::<crate::app::upload::UploadState>(), annotations(
        title = "Seal an upload",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn seal_content(
        &self,
        Parameters(p): Parameters<SealRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| upload::seal_content(s, &p.upload_id))
            .await
    }

    #[tool(output_schema = super::catalogued_output::<crate::app::upload::UploadState>(), description = concat!("Any upload's state and digests, and its text with with_body=true. ", super::provenance!()),
        annotations(title = "Get an upload", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn get_content(
        &self,
        Parameters(p): Parameters<ContentRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| upload::get_content(s, &p.upload_id, p.with_body))
            .await
    }
}
