//! Invitation claims as ingest notes them, and the `invitation` alarms'
//! rewording.
//!
//! Owns every write on `claims` and the `DELETE` of a stale invitation
//! alarm; must not judge a claim (`core::invitation::review` does,
//! `store::fold::invitation` keeps one alarm per refused claim).

use rusqlite::params;

use super::super::ProblemKind;
use super::IndexTx;
use crate::core::op;
use crate::core::record::Record;
use crate::store::error::{SqlContext as _, StoreResult};

impl IndexTx<'_> {
    /// Notes `rec`, a claim at `offset` of the segment `path`; true if it was new.
    pub fn note_claim(
        &self,
        rec: &Record,
        claim: &op::Claim,
        path: &str,
        offset: u64,
    ) -> StoreResult<bool> {
        let n = self
            .conn()
            .prepare_cached(
                "INSERT OR IGNORE INTO claims(id, feed, invitation, pubkey, proof, ms, c, path, offset) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    rec.id.hex(),
                    rec.header.feed.to_string(),
                    claim.invitation.hex(),
                    claim.pubkey,
                    claim.proof,
                    rec.header.hlc.0,
                    rec.header.hlc.1,
                    path,
                    offset as i64
                ])
            })
            .db(self.path())?;
        Ok(n > 0)
    }

    /// Drops the `invitation` alarm of claim `id` unless it gives `reason`
    /// (`None`: drops it whatever it says), so a reason that changed is
    /// replaced rather than kept beside the new one.
    pub(in crate::store) fn clear_invitation_alarm(
        &self,
        id: &str,
        reason: Option<&str>,
    ) -> StoreResult<()> {
        self.conn()
            .prepare_cached(
                "DELETE FROM problems WHERE kind = ?1 AND record = ?2 AND reason IS NOT ?3",
            )
            .and_then(|mut s| s.execute(params![ProblemKind::Invitation, id, reason]))
            .db(self.path())?;
        Ok(())
    }
}
