//! Taking back a forked feed's records: a fork (two valid records at one
//! seq) leaves neither branch standing, so every record this machine applied
//! from the forked seq on goes, with what it did to messages and uploads.

use rusqlite::{OptionalExtension as _, params};

use super::Ingest;
use crate::core::chain::Head;
use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, RecordId};
use crate::core::op::OpKind;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::fold::upload;

impl Ingest<'_, '_> {
    /// Takes back every accepted record of `feed` from `seq` on (a fork):
    /// their rows go, the messages they touched are folded again, and
    /// messages they created vanish. Returns the feed's new head.
    pub(super) fn rollback_from(&mut self, feed: &FeedId, seq: u64) -> StoreResult<Option<Head>> {
        let p = self.index.path();
        let conn = self.index.conn();
        let gone: Vec<(i64, String, String)> = conn
            .prepare_cached("SELECT n, id, op FROM records WHERE feed = ?1 AND seq >= ?2")
            .and_then(|mut s| {
                s.query_map(params![feed.to_string(), seq as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<Result<_, _>>()
            })
            .db(p)?;
        for (n, id, op) in &gone {
            let targets: Vec<String> = conn
                .prepare_cached("SELECT target FROM targets WHERE n = ?1")
                .and_then(|mut s| s.query_map([n], |r| r.get(0))?.collect::<Result<_, _>>())
                .db(p)?;
            self.index.forget_record(*n)?;
            self.acting.forget(*n);
            let kind = OpKind::parse(op);
            if kind == Some(OpKind::Summary) {
                self.index.forget_summary(*n)?;
            }
            if kind == Some(OpKind::Note) {
                self.index.forget_note(*n)?;
            }
            self.touched
                .extend(targets.iter().filter_map(|t| RecordId::parse(t)));
            if kind == Some(OpKind::Send)
                && let Some(rid) = RecordId::parse(id)
            {
                self.touched.remove(&rid);
                self.fresh.forget(&rid);
                self.index.remove_message(&rid)?;
            }
            // An upload's chunk or seal: the upload is folded again (and goes
            // if its first chunk went), and so are the messages showing it.
            let table = match kind {
                Some(OpKind::UploadChunk) => "upload_chunks",
                Some(OpKind::Seal) => "upload_seals",
                _ => continue,
            };
            let upload: Option<String> = conn
                .prepare_cached(&format!("SELECT upload FROM {table} WHERE n = ?1"))
                .and_then(|mut s| s.query_row([n], |r| r.get(0)).optional())
                .db(p)?;
            self.index.forget_upload_record(table, *n)?;
            if let Some(u) = upload.as_deref().and_then(RecordId::parse) {
                self.index.forget_upload(&u)?;
                self.touched
                    .extend(upload::waiting_messages(self.index, &u)?);
                self.uploads.insert(u);
            }
        }
        // A taken-back record may have been a pin write, a vote or a
        // proposal: consent, which crosses messages, is folded again whole.
        self.refold_all |= !gone.is_empty();
        let head: Option<(i64, String, i64, i64)> = conn
            .prepare_cached(
                "SELECT seq, id, ms, c FROM records WHERE feed = ?1 ORDER BY seq DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row([feed.to_string()], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()
            })
            .db(p)?;
        Ok(head.and_then(|(seq, id, ms, c)| {
            Some(Head {
                seq: seq as u64,
                id: RecordId::parse(&id)?,
                hlc: Hlc(ms, c as u32),
            })
        }))
    }
}
