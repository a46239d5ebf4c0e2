//! A feed's first-use announcement: before this device's first record of a
//! role, the owner's `admit` of its key (on the owner's machine) and the
//! feed's `feed_init` (DESIGN §4).
//!
//! Owns when a feed is announced and the refusals of a device that cannot
//! write the role yet, with the command that fixes each. The announcement is
//! an explicit step: `store::Channel::writer` only looks a writer up, and
//! every caller that writes calls [`announce`] first (through
//! `Session::announce` for the use cases). Must not write anything but those
//! two records, each only once.

use super::identity::{finish_key_swap, whereabouts};
use super::refusal::{AppError, AppResult};
use crate::core::ids::{FeedId, Role};
use crate::core::op::{Admit, FeedInit, Op};
use crate::store::fold::invitation;
use crate::store::home::KeyName;
use crate::store::{Channel, Writer};

/// Readies this device's feed of `role` for writing and returns its writer:
/// on the owner's machine the role key is made if missing, admitted by the
/// owner unless it is already, and announced with `feed_init` unless the feed
/// holds a record; elsewhere a device whose key is missing, not admitted or
/// not the feed's key is refused with the way out. Writes nothing once the
/// feed is begun.
pub fn announce(channel: &mut Channel, role: &Role) -> AppResult<Writer> {
    super::admission::catch_up(channel)?;
    finish_key_swap(channel, role)?;
    let ch = channel.dir().id().to_owned();
    let owner = channel.owner_writer()?;
    if channel.home().load_key(&ch, KeyName::Role(role))?.is_none() {
        if owner.is_none() {
            return Err(AppError::permission(format!(
                "this device holds no key for role '{role}' in channel '{}' and is not the \
                 channel owner's machine: run `countersign join --role {role}` here, then the \
                 `countersign admit` command it prints on the owner's machine, and sync. {}",
                channel.dir().genesis().name,
                whereabouts(channel)
            )));
        }
        channel.home().create_key(&ch, KeyName::Role(role))?;
    }
    let writer = super::identity::role_writer(channel, role)?;
    let feed = writer.feed().clone();
    let pubkey = writer.pubkey();
    if let Some(k) = channel.admitted_key(&feed)? {
        if k != pubkey {
            return Err(AppError::permission(format!(
                "feed {feed} is admitted with key {k}, but this device holds key {pubkey} for \
                 role '{role}'. If the key was replaced elsewhere, sync first; to make this \
                 device's key the feed's key, run on the owner's machine: `countersign \
                 rotate-key --role {role} --lost --device {} --pubkey {pubkey} --from-seq {}`. \
                 {}",
                feed.device(),
                channel.head_seq(&feed)? + 1,
                whereabouts(channel)
            )));
        }
    } else {
        let Some(owner) = owner else {
            return Err(not_admitted(channel, &feed, role, &pubkey)?);
        };
        let admit = Admit {
            feed: feed.clone(),
            pubkey: pubkey.clone(),
            role: role.clone(),
        };
        channel.append_if(&owner, |ix| {
            let op = ix
                .feed_key(&feed.to_string())?
                .is_none()
                .then_some(Op::Admit(admit));
            Ok::<_, AppError>((op, ()))
        })?;
    }
    let init = FeedInit {
        role: role.clone(),
        pubkey,
        device_name: channel.device().name.clone(),
    };
    channel.append_first(&writer, Op::FeedInit(init))?;
    Ok(writer)
}

/// The refusal for a feed nobody admitted, on a machine without the owner
/// key: waiting for the owner's machine to read its claim of an invitation,
/// or for the owner to admit its key by hand.
fn not_admitted(
    channel: &Channel,
    feed: &FeedId,
    role: &Role,
    pubkey: &str,
) -> AppResult<AppError> {
    if let Some(c) = invitation::claims(channel.index())?
        .into_iter()
        .find(|c| c.claim.feed == *feed)
    {
        return Ok(AppError::permission(format!(
            "feed {feed} claimed invitation {} and waits for the owner's machine to admit it, \
             which it does as soon as it reads the claim: sync here (`countersign sync`, or keep \
             `countersign mcp --sync-every 30s` running) and on the owner's machine; \
             `countersign status` there shows an `invitation` alarm if the claim was refused. {}",
            c.claim.invitation.short(),
            whereabouts(channel)
        )));
    }
    Ok(AppError::permission(format!(
        "feed {feed} (role '{role}', key {pubkey}) is not admitted by the channel owner yet, and \
         this device does not hold the owner key that would admit it: on the owner's machine \
         run `countersign admit {role} {pubkey} --device {}`, then `countersign sync` there and \
         here. {}",
        feed.device(),
        whereabouts(channel)
    )))
}
