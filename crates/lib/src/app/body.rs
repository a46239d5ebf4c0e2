//! The body argument of the tools that write one (send_message, and the
//! revise_message and pin_set tools): inline text, or `body_ref`, a sealed
//! upload whose text becomes the body.
//!
//! [`op_body`] is the one place that turns `(body, body_ref)` into what an op
//! stores, with the refusals every such tool shares. It reads the index but
//! writes nothing.

use super::refusal::{AppError, AppResult};
use super::upload::find_upload;
use crate::core::ids::sha256_hex;
use crate::core::op::BodyRef;
use crate::store::Index;
use crate::store::fold::upload::upload_row;

/// Largest inline body, in bytes; larger documents go through upload_content.
pub const INLINE_BODY_MAX: usize = 256 * 1024;

/// What an op stores as its body: the text, or (with the text empty) the
/// sealed upload that is the text; with the digests of the body either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpBody {
    /// Inline text (empty with `body_ref`).
    pub body: String,
    /// The sealed upload that is the body.
    pub body_ref: Option<BodyRef>,
    /// Hex sha256 of the body's bytes.
    pub sha256: String,
    /// Its length in bytes.
    pub length_bytes: u64,
    /// Its length in characters.
    pub length_chars: u64,
}

/// Checks `body` and `body_ref` (an upload id prefix) and answers what the op
/// stores. Refused: both given, neither given, an inline body over 256 KiB, an
/// unknown upload, an upload that is not sealed.
pub fn op_body(ix: &Index, body: String, body_ref: Option<&str>) -> AppResult<OpBody> {
    let body_ref = body_ref.map(str::trim).filter(|r| !r.is_empty());
    let Some(raw) = body_ref else {
        if body.is_empty() {
            return Err(AppError::value(
                "'body' is required — it must not be empty (or pass body_ref, a sealed upload)",
            ));
        }
        if body.len() > INLINE_BODY_MAX {
            return Err(AppError::value(format!(
                "'body' is {} bytes; inline bodies are limited to {INLINE_BODY_MAX} bytes — upload \
                 the document with upload_content and seal_content, then send it as body_ref",
                body.len()
            )));
        }
        return Ok(OpBody {
            sha256: sha256_hex(body.as_bytes()),
            length_bytes: body.len() as u64,
            length_chars: body.chars().count() as u64,
            body,
            body_ref: None,
        });
    };
    if !body.is_empty() {
        return Err(AppError::value(
            "pass either 'body' or 'body_ref', not both — body_ref names a sealed upload whose \
             text becomes the whole body",
        ));
    }
    let id = find_upload(ix, "body_ref", raw)?;
    let u = upload_row(ix, &id)?.ok_or_else(|| {
        AppError::value(format!(
            "upload {raw} not found; pass the upload_id that upload_content answered"
        ))
    })?;
    if u.sealed_ms.is_none() {
        return Err(AppError::value(format!(
            "upload {} is not sealed — seal_content it first (its uploader '{}' does), then pass \
             it as body_ref",
            id.short(),
            u.uploader
        )));
    }
    Ok(OpBody {
        body: String::new(),
        body_ref: Some(BodyRef {
            upload: id,
            sha256: u.sha256.clone(),
        }),
        sha256: u.sha256,
        length_bytes: u.length_bytes as u64,
        length_chars: u.length_chars as u64,
    })
}
