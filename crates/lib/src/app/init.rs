//! Creating a channel: the genesis document, the owner key and the folder.

use std::path::Path;

use super::refusal::{AppError, AppResult};
use crate::core::genesis::{FORMAT, Genesis, channel_id};
use crate::core::record::pubkey_hex;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::home::{KeyName, new_signing_key};
use crate::store::{ChannelDir, Home};

/// Creates a channel in `root` with `roles` and `name`, storing the owner key
/// in `home`. Refuses, changing nothing, when the roster or name breaks a rule
/// or `root` is not free.
pub fn create_channel(
    root: &Path,
    roles: &[&str],
    name: &str,
    home: &Home,
) -> AppResult<ChannelDir> {
    let roles = Genesis::roster(roles).map_err(|e| AppError::value(e.to_string()))?;
    Genesis::check_name(name).map_err(|e| AppError::value(e.to_string()))?;
    ChannelDir::check_free(root)?;
    let owner = new_signing_key();
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).expect("the OS random source works");
    let genesis = Genesis {
        format: FORMAT.to_owned(),
        name: name.to_owned(),
        created_at: format_rfc3339(now_ms()),
        roles,
        owner_pubkey: pubkey_hex(&owner.verifying_key()),
        nonce: hex::encode(nonce),
    };
    // The key first: a folder without its owner key could never admit anyone.
    home.store_key(&channel_id(&genesis.to_bytes()), KeyName::Owner, &owner)?;
    Ok(ChannelDir::create(root, &genesis)?)
}
