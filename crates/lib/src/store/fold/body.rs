//! The body a message shows: its inline text, or the text of the sealed
//! upload its `body_ref` names.
//!
//! Every place the index writes a message's body (the `bodies` rows that
//! listings, search and the digest read, and the body digest columns) takes
//! it from [`message_body`] over the message's text as it stands (the send's
//! or the latest revision's), so what a body is gets decided once. A body
//! whose upload has not been sealed on this machine yet (another feed, sync
//! order) is pending: the digest is already known from the reference, the
//! text comes when the seal is ingested. This module does not fold anything.

use rusqlite::{OptionalExtension as _, params};

use crate::core::ids::{RecordId, sha256_hex};
use crate::core::message::Text;
use crate::core::op::BodyRef;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::fold::upload::upload_text;
use crate::store::index::{Index, ShownBody};

/// A body as the index stores it: its digests, and where its text is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// Hex sha256 of the text.
    pub sha256: String,
    /// Length in bytes (0 while pending).
    pub bytes: i64,
    /// Length in characters (0 while pending).
    pub chars: i64,
    source: Source,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    Inline(String),
    Upload(RecordId),
    /// The upload it names is not sealed here (yet).
    Pending,
}

impl Body {
    fn of(text: &str) -> Self {
        Self::inline(text, sha256_hex(text.as_bytes()))
    }

    /// Inline `text`, whose digest the caller already has.
    fn inline(text: &str, sha256: String) -> Self {
        Self {
            sha256,
            bytes: text.len() as i64,
            chars: text.chars().count() as i64,
            source: Source::Inline(text.to_owned()),
        }
    }

    /// The text (empty while pending). An upload's text is read from its
    /// chunks only here, so a re-fold that keeps the text never reads it.
    pub fn text(&self, ix: &Index) -> StoreResult<String> {
        match &self.source {
            Source::Inline(t) => Ok(t.clone()),
            Source::Upload(id) => upload_text(ix, id),
            Source::Pending => Ok(String::new()),
        }
    }
}

impl ShownBody for Body {
    fn sha256(&self) -> &str {
        &self.sha256
    }

    fn bytes(&self) -> i64 {
        self.bytes
    }

    fn chars(&self) -> i64 {
        self.chars
    }

    fn text(&self, ix: &Index) -> StoreResult<String> {
        Body::text(self, ix)
    }
}

/// The body of a message's text as it stands (sent or revised). An inline
/// text's digest is the one `core` took when it made the text: hashing it
/// again took 6% of a rebuild's final fold.
pub fn message_body(ix: &Index, text: &Text) -> StoreResult<Body> {
    match &text.body_ref {
        None => Ok(Body::inline(&text.body, text.sha256.clone())),
        Some(r) => body_of(ix, &text.body, Some(r)),
    }
}

/// The body an op stores as `body` and `body_ref` (a message text, a pin
/// version).
pub fn body_of(ix: &Index, body: &str, body_ref: Option<&BodyRef>) -> StoreResult<Body> {
    let Some(r) = body_ref else {
        return Ok(Body::of(body));
    };
    // Sealed here, with the digest the reference carries.
    let sealed: Option<(i64, i64)> = ix
        .conn()
        .prepare_cached(
            "SELECT length_bytes, length_chars FROM uploads \
             WHERE id = ?1 AND sealed_ms IS NOT NULL AND sha256 = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![r.upload.hex(), r.sha256], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
        })
        .db(ix.path())?;
    Ok(match sealed {
        Some((bytes, chars)) => Body {
            sha256: r.sha256.clone(),
            bytes,
            chars,
            source: Source::Upload(r.upload),
        },
        None => Body {
            sha256: r.sha256.clone(),
            bytes: 0,
            chars: 0,
            source: Source::Pending,
        },
    })
}
