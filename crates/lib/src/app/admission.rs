//! Catching up on the owner's machine: a pass that finds a valid claim of an
//! invitation admits it at once, so no other machine ever waits for a person
//! there (issue 14, point 9).
//!
//! Owns when a claim is admitted: the fold judges claims
//! (`store::fold::invitation::review`), this module writes the ordinary
//! owner-signed `admit` for each one still admissible under the write lock.
//! Every use case and transport catches up through [`catch_up`], not
//! `Channel::catch_up` (which folds and writes nothing). Must not write
//! anything but those admits.

use super::refusal::{AppError, AppResult};
use crate::core::invitation::Standing;
use crate::core::op::{Admit, Op};
use crate::store::Channel;
use crate::store::clock::now_ms;
use crate::store::fold::invitation;
use crate::store::ingest::IngestReport;

/// Folds whatever changed in the folder since the last pass into the index
/// ([`Channel::catch_up`]); on the owner's machine, then admits the claims
/// that pass found admissible and folds again, so the admitted feeds'
/// records are read now, not at the next call.
pub fn catch_up(channel: &mut Channel) -> AppResult<IngestReport> {
    let report = channel.catch_up()?;
    let admitted = if report.admissible.is_empty() {
        0
    } else {
        admit_claims(channel, &report.admissible)?
    };
    if admitted == 0 {
        return Ok(report);
    }
    let again = channel.catch_up()?;
    Ok(IngestReport {
        admitted,
        accepted: report.accepted + again.accepted,
        new_problems: report.new_problems + again.new_problems,
        refolded: report.refolded + again.refolded,
        listed: report.listed + again.listed,
        looked: report.looked + again.looked,
        ..again
    })
}

/// Owner's machine only (elsewhere it does nothing): writes the ordinary
/// `admit` for each claim that `claims` names as admissible and that still
/// is, once reviewed again under the write lock after a catch-up (another
/// process may have admitted a claim of the same invitation meanwhile).
/// Returns how many admits were written.
fn admit_claims(channel: &mut Channel, claims: &[invitation::Reviewed]) -> AppResult<usize> {
    let Some(owner) = channel.owner_writer()? else {
        return Ok(0);
    };
    let ch = channel.dir().id().to_owned();
    let mut written = 0;
    for r in claims {
        let (claim, Some(role)) = (&r.noted.claim, r.role.clone()) else {
            continue;
        };
        let (rec, ()) = channel.append_if(&owner, |ix| {
            let still = invitation::review(ix, &ch, now_ms())?
                .iter()
                .any(|x| x.noted.claim.id == claim.id && x.standing == Standing::Admissible);
            let op = still.then(|| {
                Op::Admit(Admit {
                    feed: claim.feed.clone(),
                    pubkey: claim.pubkey.clone(),
                    role,
                })
            });
            Ok::<_, AppError>((op, ()))
        })?;
        if rec.is_some() {
            tracing::info!(
                "admitted {} by its claim of invitation {}",
                claim.feed,
                claim.invitation.short()
            );
            written += 1;
        }
    }
    Ok(written)
}
