//! Tools for documents: upload_content, seal_content, get_content.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData as McpError, tool, tool_router};
use serde::Deserialize;

use super::Server;
use crate::app::upload;

/// Parameters of upload_content.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UploadContentParams {
    /// The text to store (required, non-empty). Counted in UTF-8 bytes against the 8 MiB
    /// (8388608 bytes) limit of one upload; it is stored exactly, with no trimming or newline
    /// conversion.
    pub text: String,
    /// Omit to start a new upload holding `text`; pass the id of your own unsealed upload
    /// (any unambiguous prefix of 6+ hex characters) to append `text` to it.
    #[serde(default)]
    pub upload_id: Option<String>,
    /// A short name for a new upload, at most 80 characters (ignored when appending).
    #[serde(default)]
    pub label: Option<String>,
}

/// Parameters of seal_content.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SealContentParams {
    /// Your upload to seal (any unambiguous prefix of 6+ hex characters).
    pub upload_id: String,
}

/// Parameters of get_content.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetContentParams {
    /// The upload to read, anyone's (any unambiguous prefix of 6+ hex characters).
    pub upload_id: String,
    /// True to include the text as `body`; by default only the state and digests.
    #[serde(default)]
    pub with_body: bool,
}

#[tool_router(router = uploads_router, vis = "pub(super)")]
impl Server {
    /// Store a document too large for one message (inline bodies stop at 256 KiB), or one
    /// whose digest should be published on its own. Without upload_id, starts a new upload
    /// holding text; with it, appends text to your own unsealed upload. Then seal_content it
    /// and pass its id as body_ref. Returns {upload_id, uploaded_by, label, sealed, created_at,
    /// sealed_at, sha256, length_bytes, length_chars, note}. Refuses: an unknown upload,
    /// someone else's upload (PermissionError), a sealed upload, and an append that would take
    /// the upload over 8 MiB (the refusal gives the size it would reach; nothing is appended).
    #[tool(output_schema = super::output_schema::<crate::app::upload::UploadState>(), annotations(
        title = "Upload content",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn upload_content(
        &self,
        Parameters(p): Parameters<UploadContentParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            upload::upload_content(s, &p.text, p.upload_id.as_deref(), p.label.as_deref())
        })
        .await
    }

    /// Seal your upload: its bytes never change again and its sha256 and lengths are final,
    /// so it can be used as body_ref by send_message, revise_message and pin_set. Uploader
    /// only (PermissionError otherwise). Sealing a sealed upload again writes nothing. Returns
    /// the upload's state.
    #[tool(output_schema = super::output_schema::<crate::app::upload::UploadState>(), annotations(
        title = "Seal an upload",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn seal_content(
        &self,
        Parameters(p): Parameters<SealContentParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| upload::seal_content(s, &p.upload_id))
            .await
    }

    #[tool(output_schema = super::output_schema::<crate::app::upload::UploadState>(), description = concat!("Read any upload back: its state and digests {upload_id, \
        uploaded_by, label, sealed, created_at, sealed_at, sha256, length_bytes, length_chars, \
        note}, plus the text as `body` with with_body=true. The upload's sha256 covers the \
        document alone. An unknown upload is refused. ", super::provenance!()),
        annotations(title = "Get an upload", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn get_content(
        &self,
        Parameters(p): Parameters<GetContentParams>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| upload::get_content(s, &p.upload_id, p.with_body))
            .await
    }
}
