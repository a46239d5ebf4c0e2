//! Uploads in the index: the rows of their chunk and seal records, the fold
//! of one upload from those rows, and the text of a document.
//!
//! Ingest records each chunk and seal as it accepts them (the writes are
//! `index::write::uploads`) and re-folds here the uploads a pass touched;
//! the rules live in `core::upload`. This module
//! does not decide what a message's body is (`body` does) and never writes
//! feed files.

use rusqlite::OptionalExtension as _;

use crate::core::hlc::{Hlc, OrderKey};
use crate::core::ids::{RecordId, Role};
use crate::core::message::Applied;
use crate::core::op::{Op, Seal, UploadChunk};
use crate::core::upload::Upload;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::index::{Index, IndexTx};

/// The current state of one upload, folded from its records (`None` when its
/// first chunk is not in the index).
pub fn load_upload(ix: &Index, id: &RecordId) -> StoreResult<Option<Upload>> {
    let p = ix.path();
    let conn = ix.conn();
    let first: Option<(String, i64, i64, String, Option<String>)> = conn
        .prepare_cached(
            "SELECT role, ms, c, text, label FROM upload_chunks WHERE record = ?1 AND upload = ?1",
        )
        .and_then(|mut s| {
            s.query_row([id.hex()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()
        })
        .db(p)?;
    let Some((role, ms, c, text, label)) = first else {
        return Ok(None);
    };
    let Ok(uploader) = Role::new(&role) else {
        return Ok(None);
    };
    let key_of = |rid: &str, ms: i64, c: i64| {
        RecordId::parse(rid).map(|id| OrderKey {
            hlc: Hlc(ms, c as u32),
            id,
        })
    };
    let mut ops: Vec<(OrderKey, Role, Op)> = Vec::new();
    let mut st = conn
        .prepare_cached(
            "SELECT record, role, ms, c, text FROM upload_chunks WHERE upload = ?1 AND record != ?1",
        )
        .db(p)?;
    let rows = st
        .query_map([id.hex()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
            ))
        })
        .db(p)?;
    for row in rows {
        let (rid, rrole, rms, rc, text) = row.db(p)?;
        if let (Some(k), Ok(r)) = (key_of(&rid, rms, rc), Role::new(&rrole)) {
            let op = Op::UploadChunk(UploadChunk {
                upload: Some(*id),
                text,
                label: None,
            });
            ops.push((k, r, op));
        }
    }
    let mut st = conn
        .prepare_cached(
            "SELECT record, role, ms, c, sha256, length_bytes, length_chars, chunks \
             FROM upload_seals WHERE upload = ?1",
        )
        .db(p)?;
    let rows = st
        .query_map([id.hex()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
                r.get::<_, i64>(7)?,
            ))
        })
        .db(p)?;
    for row in rows {
        let (rid, rrole, rms, rc, sha256, bytes, chars, chunks) = row.db(p)?;
        if let (Some(k), Ok(r)) = (key_of(&rid, rms, rc), Role::new(&rrole)) {
            let op = Op::Seal(Seal {
                upload: *id,
                sha256,
                length_bytes: bytes as u64,
                length_chars: chars as u64,
                chunks: chunks as u64,
            });
            ops.push((k, r, op));
        }
    }
    let first_key = OrderKey {
        hlc: Hlc(ms, c as u32),
        id: *id,
    };
    let first = UploadChunk {
        upload: None,
        text,
        label,
    };
    Ok(Some(Upload::fold(
        first_key,
        &uploader,
        &first,
        ops.iter().map(|(k, r, op)| Applied {
            key: *k,
            role: r,
            op,
        }),
    )))
}

/// Re-folds one upload and writes its state row and the places of its
/// chunks (inside the caller's transaction). `None` when its first chunk is
/// not in the index yet.
pub fn refold_upload(ix: &IndexTx<'_>, id: &RecordId) -> StoreResult<Option<Upload>> {
    let Some(u) = load_upload(ix, id)? else {
        return Ok(None);
    };
    ix.write_upload(id, &u)?;
    Ok(Some(u))
}

/// The text of an upload as folded: its chunks in order.
pub fn upload_text(ix: &Index, id: &RecordId) -> StoreResult<String> {
    let p = ix.path();
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT text FROM upload_chunks WHERE upload = ?1 AND pos IS NOT NULL ORDER BY pos",
        )
        .db(p)?;
    let mut out = String::new();
    let mut rows = st.query([id.hex()]).db(p)?;
    while let Some(r) = rows.next().db(p)? {
        out.push_str(&r.get::<_, String>(0).db(p)?);
    }
    Ok(out)
}

/// The messages whose text is (or was) upload `id`: when it is sealed here,
/// the ones that arrived first can show its text.
pub fn waiting_messages(ix: &Index, id: &RecordId) -> StoreResult<Vec<RecordId>> {
    let p = ix.path();
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT r.message_id FROM body_refs r JOIN messages m ON m.id = r.message_id \
             WHERE r.upload = ?1 AND m.body_bytes = 0",
        )
        .db(p)?;
    let ids: Vec<String> = st
        .query_map([id.hex()], |r| r.get(0))
        .db(p)?
        .collect::<Result<_, _>>()
        .db(p)?;
    Ok(ids.iter().filter_map(|s| RecordId::parse(s)).collect())
}

/// True if a pin version's body is upload `id`.
pub fn named_by_pins(ix: &Index, id: &RecordId) -> StoreResult<bool> {
    // body_ref is kept as its JSON, `{"upload":"<hex>",…}`.
    let pattern = format!("%\"upload\":\"{}\"%", id.hex());
    Ok(ix
        .conn()
        .prepare_cached("SELECT 1 FROM pins WHERE body_ref LIKE ?1 LIMIT 1")
        .and_then(|mut s| s.query_row([pattern], |_| Ok(())).optional())
        .db(ix.path())?
        .is_some())
}

/// The folded state of an upload as the index keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadRow {
    /// Full id.
    pub id: RecordId,
    /// The uploader's role.
    pub uploader: String,
    /// Its label.
    pub label: Option<String>,
    /// Creation time (ms).
    pub ms: i64,
    /// Seal time (ms), once sealed.
    pub sealed_ms: Option<i64>,
    /// Hex sha256 of the text (so far, until sealed).
    pub sha256: String,
    /// Length in bytes.
    pub length_bytes: i64,
    /// Length in characters.
    pub length_chars: i64,
    /// Chunks that make the text.
    pub chunks: i64,
}

/// The state row of upload `id`, without its text.
pub fn upload_row(ix: &Index, id: &RecordId) -> StoreResult<Option<UploadRow>> {
    ix.conn()
        .prepare_cached(
            "SELECT uploader, label, ms, sealed_ms, sha256, length_bytes, length_chars, chunks \
             FROM uploads WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([id.hex()], |r| {
                Ok(UploadRow {
                    id: *id,
                    uploader: r.get(0)?,
                    label: r.get(1)?,
                    ms: r.get(2)?,
                    sealed_ms: r.get(3)?,
                    sha256: r.get(4)?,
                    length_bytes: r.get(5)?,
                    length_chars: r.get(6)?,
                    chunks: r.get(7)?,
                })
            })
            .optional()
        })
        .db(ix.path())
}
