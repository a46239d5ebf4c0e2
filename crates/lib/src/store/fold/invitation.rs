//! Invitations in the index: the claims seen, what each is worth, and the
//! `invitation` alarms.
//!
//! A claim is the first record of a feed nobody admitted yet, so ingest
//! cannot apply it; it notes it in the index (`IndexTx::note_claim`) once
//! its own key's signature holds, and again when the feed is admitted and
//! the record is accepted. [`review`] reads every invitation, claim and admit and asks
//! `core::invitation::review` what each claim is worth; [`settle_alarms`]
//! keeps one `invitation` problem per refused claim. This module never
//! writes a record: the owner's machine admits through `Channel`.

use std::collections::BTreeSet;

use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, RecordId, Role};
use crate::core::invitation::{self, Claim, Invitation, Standing};
use crate::core::op::{self, Op};
use crate::core::record::Record;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::index::{Index, IndexTx, ProblemKind};

/// True if some claim is neither admitted nor refused: its standing can
/// change with time alone (an invitation expires), so a pass reviews it
/// again. Other changes come with records, which set `claims_changed`.
pub(in crate::store) fn any_open(ix: &Index) -> StoreResult<bool> {
    let n: i64 = ix
        .conn()
        .prepare_cached(
            "SELECT count(*) FROM claims c WHERE NOT EXISTS (SELECT 1 FROM records r \
             WHERE r.feed >= '_owner/' AND r.feed < '_owner0' AND r.op = 'admit' \
               AND json_extract(r.body, '$.data.feed') = c.feed \
               AND json_extract(r.body, '$.data.pubkey') = c.pubkey) \
             AND NOT EXISTS (SELECT 1 FROM problems p WHERE p.kind = 'invitation' \
               AND p.record = c.id)",
        )
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .db(ix.path())?;
    Ok(n > 0)
}

/// Every invitation in the owner's feeds.
pub fn invitations(ix: &Index) -> StoreResult<Vec<Invitation>> {
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT id, json_extract(body, '$.data.role'), json_extract(body, '$.data.key'), \
             json_extract(body, '$.data.expires_ms') FROM records \
             WHERE feed >= '_owner/' AND feed < '_owner0' AND op = 'invite'",
        )
        .db(ix.path())?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .db(ix.path())?;
    let mut out = Vec::new();
    for row in rows {
        let (id, role, key, expires) = row.db(ix.path())?;
        if let (Some(id), Some(role), Some(key), Some(expires_ms)) = (
            RecordId::parse(&id),
            role.and_then(|r| Role::new(&r).ok()),
            key,
            expires,
        ) {
            out.push(Invitation {
                id,
                role,
                key,
                expires_ms,
            });
        }
    }
    Ok(out)
}

/// A claim as noted, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotedClaim {
    /// The claim.
    pub claim: Claim,
    /// Its segment, relative to the channel folder, and offset.
    pub path: String,
    /// Byte offset of its line.
    pub offset: u64,
}

/// Every claim noted.
pub fn claims(ix: &Index) -> StoreResult<Vec<NotedClaim>> {
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT id, feed, invitation, pubkey, proof, ms, c, path, offset FROM claims",
        )
        .db(ix.path())?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, i64>(8)?,
            ))
        })
        .db(ix.path())?;
    let mut out = Vec::new();
    for row in rows {
        let (id, feed, inv, pubkey, proof, ms, c, path, offset) = row.db(ix.path())?;
        let feed = feed.split_once('/').and_then(|(r, d)| FeedId::new(r, d));
        if let (Some(id), Some(feed), Some(invitation)) =
            (RecordId::parse(&id), feed, RecordId::parse(&inv))
        {
            out.push(NotedClaim {
                claim: Claim {
                    id,
                    hlc: Hlc(ms, c as u32),
                    feed,
                    invitation,
                    pubkey,
                    proof,
                },
                path,
                offset: offset as u64,
            });
        }
    }
    Ok(out)
}

/// Every (feed, key) an owner's `admit` names.
fn admits(ix: &Index) -> StoreResult<BTreeSet<(FeedId, String)>> {
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT json_extract(body, '$.data.feed'), json_extract(body, '$.data.pubkey') \
             FROM records WHERE feed >= '_owner/' AND feed < '_owner0' AND op = 'admit'",
        )
        .db(ix.path())?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<String>>(1)?,
            ))
        })
        .db(ix.path())?;
    let mut out = BTreeSet::new();
    for row in rows {
        if let (Some(feed), Some(key)) = row.db(ix.path())?
            && let Some(feed) = feed.split_once('/').and_then(|(r, d)| FeedId::new(r, d))
        {
            out.insert((feed, key));
        }
    }
    Ok(out)
}

/// One claim and what it is worth now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reviewed {
    /// The claim, where it was found.
    pub noted: NotedClaim,
    /// Its standing.
    pub standing: Standing,
    /// The role its invitation admits to, when the invitation is known.
    pub role: Option<Role>,
}

/// What every claim noted is worth at `now_ms`.
pub fn review(ix: &Index, channel_id: &str, now_ms: i64) -> StoreResult<Vec<Reviewed>> {
    let invs = invitations(ix)?;
    let noted = claims(ix)?;
    if noted.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<Claim> = noted.iter().map(|n| n.claim.clone()).collect();
    let standings = invitation::review(channel_id, &invs, &list, &admits(ix)?, now_ms);
    let mut out = Vec::with_capacity(noted.len());
    for (id, standing) in standings {
        if let Some(n) = noted.iter().find(|n| n.claim.id == id) {
            let role = invs
                .iter()
                .find(|i| i.id == n.claim.invitation)
                .map(|i| i.role.clone());
            out.push(Reviewed {
                noted: n.clone(),
                standing,
                role,
            });
        }
    }
    Ok(out)
}

/// Keeps exactly one `invitation` alarm per refused claim, worded as the
/// review words it; returns how many are new.
pub(in crate::store) fn settle_alarms(
    ix: &IndexTx<'_>,
    reviewed: &[Reviewed],
) -> StoreResult<usize> {
    let mut new = 0;
    for r in reviewed {
        let id = r.noted.claim.id.hex();
        let reason = match &r.standing {
            Standing::Refused(why) => Some(why.as_str()),
            _ => None,
        };
        // A reason that changed (a second claim whose first was then
        // admitted) replaces the old one.
        ix.clear_invitation_alarm(&id, reason)?;
        if let Some(reason) = reason {
            new += ix.record_problem(
                ProblemKind::Invitation,
                &r.noted.path,
                r.noted.offset,
                Some(&id),
                &r.noted.claim.feed.to_string(),
                reason,
            )?;
        }
    }
    Ok(new)
}

/// The claim in `op`, when `rec` is the first record of a feed and signed
/// by the key the claim names: what ingest may note for a feed nobody
/// admitted yet.
pub(in crate::store) fn self_signed_claim<'r>(
    rec: &Record,
    op: Option<&'r Op>,
) -> Option<&'r op::Claim> {
    let Some(Op::Claim(c)) = op else {
        return None;
    };
    let key = crate::core::record::parse_pubkey(&c.pubkey)?;
    (rec.header.seq == 1 && c.role.as_str() == rec.header.feed.role() && rec.verify(&key))
        .then_some(c)
}
