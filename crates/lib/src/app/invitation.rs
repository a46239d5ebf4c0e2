//! Joining by invitation: the owner's `invite` and the new machine's
//! `join --invite` (issue 14, point 9; supersedes DESIGN §4's owner-signed
//! grant).
//!
//! `invite` writes the owner's `invite` record (role, expiry and the
//! commitment to the code's secret) and hands back the code; the secret is
//! printed once and kept nowhere, not even in the owner's home: the owner's
//! machine needs only the owner key and the folder to admit a claim. `join`
//! with a code checks it against the folder, makes this device's key and
//! writes the claim as its feed's first record. The admit itself is written
//! by `app::admission` whenever the owner's machine catches up.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult};
use crate::core::ids::{FeedId, RecordId, Role};
use crate::core::invitation::{InviteCode, Standing};
use crate::core::op::{Claim, Invite, Op};
use crate::store::clock::now_ms;
use crate::store::{Channel, fold::invitation};

/// The longest an invitation may stay open.
pub const MAX_EXPIRY: Duration = Duration::from_secs(30 * 24 * 3600);

/// What `invite` wrote and the code to hand over.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Invited {
    /// The role the code admits to.
    #[schemars(with = "String")]
    pub role: Role,
    /// The one-time code (carries the secret: shown once, stored nowhere).
    pub code: String,
    /// The invitation's id (full id of the `invite` record).
    pub invitation: String,
    /// When it stops admitting, ms since the Unix epoch.
    pub expires_ms: i64,
}

/// Owner: invites one machine to join as `role` within `expires`.
pub fn invite(channel: &mut Channel, role: &str, expires: Duration) -> AppResult<Invited> {
    let role = Role::new(role).map_err(|e| AppError::value(e.to_string()))?;
    if expires.is_zero() || expires > MAX_EXPIRY {
        return Err(AppError::value(
            "--expires must be more than 0 and at most 30 days (e.g. 30m, 24h, 7d)",
        ));
    }
    let owner = super::identity::owner_writer(channel)?;
    super::admission::catch_up(channel)?;
    if !channel.roster().contains(&role) {
        return Err(AppError::value(format!(
            "role '{role}' is not a role of this channel — its roles are {}; add it first with \
             `countersign add-role {role}`",
            super::session::roles_list(&channel.roster())
        )));
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).expect("the OS random source works");
    let code = InviteCode::new(channel.dir().id(), secret);
    let expires_ms = now_ms().saturating_add(expires.as_millis() as i64);
    let op = Op::Invite(Invite {
        role: role.clone(),
        key: code.key_hex(),
        expires_ms,
    });
    let (rec, ()) = channel.append(&owner, |_| Ok::<_, AppError>((op, ())))?;
    Ok(Invited {
        role,
        code: code.to_text(),
        invitation: rec.id.hex(),
        expires_ms,
    })
}

/// Where a machine joining by invitation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimState {
    /// The claim is written; the owner's machine admits it when it reads it.
    Claimed,
    /// The owner's machine admitted this device: it can write.
    Admitted,
}

/// What `join --invite` wrote or found.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Claimed {
    /// The device's feed.
    pub feed: String,
    /// The role joined as.
    #[schemars(with = "String")]
    pub role: Role,
    /// The feed's public key.
    pub pubkey: String,
    /// The claim record's full id (`None` when an earlier claim stands).
    pub record: Option<String>,
    /// Where the device stands.
    pub state: ClaimState,
}

/// New machine: takes the invitation `code` opens, as this device.
/// Refused, with nothing written, when the code is damaged, for another
/// channel, not in this copy of the folder, expired or already used.
pub fn join_invite(channel: &mut Channel, code: &str) -> AppResult<Claimed> {
    let code = InviteCode::parse(code).map_err(|e| AppError::value(e.to_string()))?;
    let ch = channel.dir().id().to_owned();
    if !code.is_for(&ch) {
        return Err(refuse(
            channel,
            format!(
                "this invitation code is for another channel (id {}…), not '{}' (id {}…). Run \
                 `countersign join --invite CODE` with --channel naming the folder of the channel \
                 it was made for.",
                code.channel_prefix(),
                channel.dir().genesis().name,
                &ch[..16],
            ),
        ));
    }
    super::admission::catch_up(channel)?;
    let key = code.key_hex();
    let inv = invitation::invitations(channel.index())?
        .into_iter()
        .find(|i| i.key == key)
        .ok_or_else(|| {
            refuse(
                channel,
                format!(
                    "no invitation in this copy of channel '{}' matches the code. Sync the folder \
                     (`countersign sync`, or `git pull` in a clone) and try again; if it still \
                     does not match, ask the owner for a new code (`countersign invite`).",
                    channel.dir().genesis().name
                ),
            )
        })?;
    let role = inv.role.clone();
    let feed = channel.own_feed(&role);
    if let Some(c) = own_claim(channel, &inv.id, &feed)? {
        return Ok(c);
    }
    if let Some(r) = invitation::review(channel.index(), &ch, now_ms())?
        .into_iter()
        .find(|r| r.noted.claim.invitation == inv.id && r.standing == Standing::Admitted)
    {
        return Err(refuse(
            channel,
            format!(
                "this invitation was used already (feed {} joined with it). Ask the owner for a \
                 new one (`countersign invite`).",
                r.noted.claim.feed
            ),
        ));
    }
    if now_ms() > inv.expires_ms {
        return Err(refuse(
            channel,
            "this invitation has expired. Ask the owner for a new one (`countersign invite`)."
                .into(),
        ));
    }
    if let Some(other) = invitation::claims(channel.index())?
        .into_iter()
        .find(|c| c.claim.feed == feed)
    {
        return Err(refuse(
            channel,
            format!(
                "feed {feed} of this device already starts with a claim of invitation {}, and a \
                 feed has only one first record. `countersign status` on the owner's machine says \
                 why it was not admitted; the owner can still admit this device's key by hand: \
                 `countersign admit {role} {} --device {}`.",
                other.claim.invitation.short(),
                other.claim.pubkey,
                feed.device()
            ),
        ));
    }
    if channel.admitted_key(&feed)?.is_some() || channel.head_seq(&feed)? > 0 {
        return Err(refuse(
            channel,
            format!(
                "this device already writes feed {feed} as '{role}', so it needs no invitation. \
                 Use the role as it is (`countersign --role {role} status`)."
            ),
        ));
    }
    let (_, pubkey, _) = super::key_rotation::join_key(channel, &role)?;
    let writer = super::identity::role_writer(channel, &role)?;
    let claim = Claim {
        invitation: inv.id,
        role: role.clone(),
        proof: code.prove(&ch, &inv.id, &feed, &pubkey),
        pubkey: pubkey.clone(),
        device_name: channel.device().name.clone(),
    };
    let (rec, ()) = channel.append_if(&writer, |ix| {
        // A feed with a first record already (a claim written by an
        // earlier run) is not claimed twice.
        let fresh = invitation::claims(ix)?.iter().all(|c| c.claim.feed != feed);
        Ok::<_, AppError>((fresh.then_some(Op::Claim(claim)), ()))
    })?;
    Ok(Claimed {
        feed: feed.to_string(),
        role,
        pubkey,
        record: rec.map(|r| r.id.hex()),
        state: ClaimState::Claimed,
    })
}

/// A refusal about joining: the sentence and its fix, then on a line of
/// its own the home, device and channel folder used (what joins is this
/// home's device, in that folder).
fn refuse(channel: &Channel, msg: String) -> AppError {
    AppError::value(format!(
        "{msg}\n(this device: '{}' of the home {}; the channel folder: {})",
        channel.device().id,
        channel.home().describe(),
        channel.dir().describe()
    ))
}

/// This device's claim of `invitation`, when it wrote one already.
fn own_claim(
    channel: &Channel,
    invitation_id: &RecordId,
    feed: &FeedId,
) -> AppResult<Option<Claimed>> {
    let Some(c) = invitation::claims(channel.index())?
        .into_iter()
        .find(|c| c.claim.invitation == *invitation_id && c.claim.feed == *feed)
    else {
        return Ok(None);
    };
    let admitted = channel.admitted_key(feed)?.as_deref() == Some(c.claim.pubkey.as_str());
    let role = Role::new(feed.role()).map_err(|e| AppError::value(e.to_string()))?;
    Ok(Some(Claimed {
        feed: feed.to_string(),
        role,
        pubkey: c.claim.pubkey,
        record: None,
        state: if admitted {
            ClaimState::Admitted
        } else {
            ClaimState::Claimed
        },
    }))
}
