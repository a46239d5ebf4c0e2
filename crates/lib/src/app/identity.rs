//! Which keys this device holds for a channel, and the refusals when the one
//! a use case needs is missing.
//!
//! Owns the words of those refusals (which command fixes it, and where this
//! process looked: [`whereabouts`]), and finishing a key swap a crash
//! interrupted. Key files are the store's (`store::home`); this module must
//! not write records.

use super::refusal::{AppError, AppResult};
use crate::core::ids::Role;
use crate::core::record;
use crate::store::home::KeyName;
use crate::store::{Channel, Writer};

/// Which home and channel folder this process used and how each was chosen,
/// for every refusal about keys and membership: a process that did not get
/// `COUNTERSIGN_HOME` (clients start servers with a short environment) uses
/// the default home, makes a new device there and would be sent to `join` —
/// the wrong way.
pub fn whereabouts(channel: &Channel) -> String {
    let home = channel.home();
    let mut text = format!(
        "This process used the home {} as device '{}', and the channel folder {}.",
        home.describe(),
        channel.device().id,
        channel.dir().describe()
    );
    if home.is_default() {
        text.push_str(
            " If your keys live in another home (COUNTERSIGN_HOME where you ran `countersign \
             init` or `join`), COUNTERSIGN_HOME did not reach this process — MCP clients \
             start servers with a short environment: set it in the server entry's env \
             (`countersign install` does) instead of joining again.",
        );
    }
    text
}

/// The writer of this device's owner feed; refused on a machine without the
/// owner key.
pub fn owner_writer(channel: &Channel) -> AppResult<Writer> {
    channel.owner_writer()?.ok_or_else(|| {
        AppError::permission(format!(
            "this device does not hold the owner key of channel '{}': run this on the owner's \
             machine (the one that ran `countersign init`). {}",
            channel.dir().genesis().name,
            whereabouts(channel)
        ))
    })
}

/// The writer of this device's feed of `role` whether or not anyone admitted
/// it (for the claim that starts a feed joining by invitation); refused when
/// the device holds no key for the role.
pub fn role_writer(channel: &Channel, role: &Role) -> AppResult<Writer> {
    channel.writer(role)?.ok_or_else(|| {
        AppError::permission(format!(
            "this device holds no key for role '{role}' in channel '{}'. {}",
            channel.dir().genesis().name,
            whereabouts(channel)
        ))
    })
}

/// Finishes a key replacement a crash interrupted: once the feed's admitted
/// key is the waiting `<role>.next.key`, it becomes the role key.
pub fn finish_key_swap(channel: &Channel, role: &Role) -> AppResult<()> {
    let ch = channel.dir().id();
    let Some(next) = channel.home().load_key(ch, KeyName::NextRole(role))? else {
        return Ok(());
    };
    let next_pub = record::pubkey_hex(&next.verifying_key());
    if channel.admitted_key(&channel.own_feed(role))?.as_deref() == Some(next_pub.as_str()) {
        channel.home().swap_key(ch, role)?;
    }
    Ok(())
}
