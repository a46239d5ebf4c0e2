//! A feed's key: made when a device joins, replaced by its holder, or
//! replaced by the owner when it is lost (DESIGN §4).
//!
//! Owns the order of a replacement — the `replace_key` record first, then the
//! key file swap, with the new key waiting as `<role>.next.key` until the
//! record is durable, so a crash between the two is finished by the next
//! write (`identity::finish_key_swap`) — and the refusals of a replacement that
//! cannot be. Key files are the store's (`store::home`).

use super::identity::{finish_key_swap, owner_writer, whereabouts};
use super::refusal::{AppError, AppResult};
use crate::core::ids::{FeedId, Role};
use crate::core::op::{Op, ReplaceKey};
use crate::core::record::{self, Record};
use crate::store::Channel;
use crate::store::home::KeyName;

/// This device's key for `role`, made if missing (joining needs no owner).
/// Returns the feed, the hex public key and whether it was made now.
pub fn join_key(channel: &mut Channel, role: &Role) -> AppResult<(FeedId, String, bool)> {
    super::admission::catch_up(channel)?;
    finish_key_swap(channel, role)?;
    let ch = channel.dir().id().to_owned();
    let home = channel.home();
    let (key, created) = match home.load_key(&ch, KeyName::Role(role))? {
        Some(k) => (k, false),
        None => (home.create_key(&ch, KeyName::Role(role))?, true),
    };
    Ok((
        channel.own_feed(role),
        record::pubkey_hex(&key.verifying_key()),
        created,
    ))
}

/// Replaces this device's key of `role` by a new one: a `replace_key` record
/// signed by the old key, then the key file swap. Returns the record and the
/// new hex public key.
pub fn rotate_own_key(channel: &mut Channel, role: &Role) -> AppResult<(Record, String)> {
    let writer = super::announcement::announce(channel, role)?;
    let ch = channel.dir().id().to_owned();
    let next = channel.home().create_key(&ch, KeyName::NextRole(role))?;
    let pubkey = record::pubkey_hex(&next.verifying_key());
    let op = Op::ReplaceKey(ReplaceKey {
        feed: writer.feed().clone(),
        pubkey: pubkey.clone(),
        from_seq: None,
    });
    let (rec, ()) = channel.append(&writer, |_| Ok::<_, AppError>((op, ())))?;
    channel.home().swap_key(&ch, role)?;
    Ok((rec, pubkey))
}

/// Replaces the key of `role`'s feed on `device` when its old key is lost:
/// an owner-signed `replace_key` from seq `from_seq` on (default: the seq
/// after the last record this machine has of the feed). Without `pubkey`,
/// `device` must be this one and a new key is made here. Returns the
/// record, the feed and the new hex public key.
pub fn replace_lost_key(
    channel: &mut Channel,
    role: &Role,
    device: Option<&str>,
    pubkey: Option<&str>,
    from_seq: Option<u64>,
) -> AppResult<(Record, FeedId, String)> {
    let owner = owner_writer(channel)?;
    let this_device = channel.device().id.clone();
    let device = device.unwrap_or(&this_device).to_owned();
    let feed = FeedId::new(role.as_str(), &device).ok_or_else(|| {
        AppError::value(format!(
            "'device' must be a device id (1 to 64 lowercase letters, digits, '-' or '_'), got \
             '{device}'"
        ))
    })?;
    super::admission::catch_up(channel)?;
    if channel.admitted_key(&feed)?.is_none() {
        return Err(AppError::permission(format!(
            "feed {feed} was never admitted, so it has no key to replace: admit it with \
             `countersign admit {role} PUBKEY --device {device}`. {}",
            whereabouts(channel)
        )));
    }
    let ch = channel.dir().id().to_owned();
    let (pubkey, local) = match pubkey {
        Some(p) => {
            if let Err(why) = crate::core::signature::parse_key(p) {
                return Err(AppError::value(format!(
                    "'pubkey' must be the 64 hex characters `countersign join` printed on the new \
                     device; '{p}' is not a usable public key ({why})"
                )));
            }
            (p.to_owned(), false)
        }
        None if device == this_device => {
            let next = channel.home().create_key(&ch, KeyName::NextRole(role))?;
            (record::pubkey_hex(&next.verifying_key()), true)
        }
        None => {
            return Err(AppError::value(format!(
                "'pubkey' is needed: the new key of {feed} lives on device {device}: run \
                 `countersign join --role {role}` there and pass the key it prints with --pubkey"
            )));
        }
    };
    let from_seq = from_seq.unwrap_or(channel.head_seq(&feed)? + 1).max(1);
    let op = Op::ReplaceKey(ReplaceKey {
        feed: feed.clone(),
        pubkey: pubkey.clone(),
        from_seq: Some(from_seq),
    });
    let (rec, ()) = channel.append(&owner, |_| Ok::<_, AppError>((op, ())))?;
    if local {
        channel.home().swap_key(&ch, role)?;
    }
    Ok((rec, feed, pubkey))
}
