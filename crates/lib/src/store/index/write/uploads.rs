//! Uploads in the index: the rows of their chunk and seal records as
//! ingest accepts them, and each upload's folded state.
//!
//! Owns every write on `upload_chunks`, `upload_seals` and `uploads`; must
//! not fold (`core::upload` does, `store::fold::upload` reads the records for it).

use rusqlite::params;

use super::super::conflicts_json;
use super::IndexTx;
use crate::core::hlc::OrderKey;
use crate::core::ids::RecordId;
use crate::core::op::{Seal, UploadChunk};
use crate::core::upload::Upload;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Keeps an accepted `upload_chunk` record (inside the caller's transaction)
    /// and answers the upload it belongs to.
    pub fn record_chunk(
        &self,
        n: i64,
        key: OrderKey,
        role: &str,
        chunk: &UploadChunk,
    ) -> StoreResult<RecordId> {
        let upload = chunk.upload.unwrap_or(key.id);
        self.conn()
            .prepare_cached(
                "INSERT OR IGNORE INTO upload_chunks(n, record, upload, role, ms, c, text, label) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    n,
                    key.id.hex(),
                    upload.hex(),
                    role,
                    key.hlc.0,
                    key.hlc.1,
                    chunk.text,
                    chunk.label
                ])
            })
            .db(self.path())?;
        Ok(upload)
    }

    /// Keeps an accepted `seal` record (inside the caller's transaction).
    pub fn record_seal(&self, n: i64, key: OrderKey, role: &str, seal: &Seal) -> StoreResult<()> {
        self.conn()
            .prepare_cached(
                "INSERT OR IGNORE INTO upload_seals(n, record, upload, role, ms, c, sha256, \
                 length_bytes, length_chars, chunks) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    n,
                    key.id.hex(),
                    seal.upload.hex(),
                    role,
                    key.hlc.0,
                    key.hlc.1,
                    seal.sha256,
                    seal.length_bytes as i64,
                    seal.length_chars as i64,
                    seal.chunks as i64
                ])
            })
            .db(self.path())?;
        Ok(())
    }

    /// Writes the state row of upload `id` as folded, and the places of its
    /// chunks (`NULL` for a chunk that conflicted).
    pub fn write_upload(&self, id: &RecordId, u: &Upload) -> StoreResult<()> {
        let p = self.path();
        let conflicts = conflicts_json(&u.conflicts);
        self.conn()
            .prepare_cached(
                "INSERT OR REPLACE INTO uploads(id, uploader, label, ms, c, chunks, length_bytes, \
                 length_chars, sha256, sealed_ms, seal, conflicts) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    id.hex(),
                    u.uploader.as_str(),
                    u.label,
                    u.created.0,
                    u.created.1,
                    u.chunks.len() as i64,
                    u.length_bytes as i64,
                    u.length_chars as i64,
                    u.sha256,
                    u.sealed.as_ref().map(|s| s.key.hlc.ms()),
                    u.sealed.as_ref().map(|s| s.key.id.hex()),
                    conflicts,
                ])
            })
            .db(p)?;
        self.conn()
            .prepare_cached("UPDATE upload_chunks SET pos = NULL WHERE upload = ?1")
            .and_then(|mut s| s.execute([id.hex()]))
            .db(p)?;
        let mut place = self
            .conn()
            .prepare_cached("UPDATE upload_chunks SET pos = ?2 WHERE record = ?1")
            .db(p)?;
        for (pos, rec) in u.chunks.iter().enumerate() {
            place.execute(params![rec.hex(), pos as i64]).db(p)?;
        }
        Ok(())
    }

    /// Forgets the chunk or seal ingested as record `n` (`table` is
    /// `upload_chunks` or `upload_seals`): a fork took it back.
    pub fn forget_upload_record(&self, table: &str, n: i64) -> StoreResult<()> {
        self.conn()
            .prepare_cached(&format!("DELETE FROM {table} WHERE n = ?1"))
            .and_then(|mut s| s.execute([n]))
            .db(self.path())?;
        Ok(())
    }

    /// Forgets the folded state of upload `u` (folded again after a fork).
    pub fn forget_upload(&self, u: &RecordId) -> StoreResult<()> {
        self.conn()
            .prepare_cached("DELETE FROM uploads WHERE id = ?1")
            .and_then(|mut s| s.execute([u.hex()]))
            .db(self.path())?;
        Ok(())
    }
}
