//! Membership across machines: joining with a new device, admitting it,
//! adding roles and replacing keys (DESIGN §4).
//!
//! Every change is an owner-signed record (`admit`, `add_role`, an owner
//! `replace_key`) or a record signed by the key being replaced; readers
//! apply them from the verified feeds, so nothing here is trusted because of
//! where it ran. Key files are the store's; this module validates requests
//! and words the answers.

use schemars::JsonSchema;
use serde::Serialize;

use super::identity::owner_writer;
use super::key_rotation;
use super::refusal::{AppError, AppResult};
use crate::core::ids::{FeedId, Role};
use crate::core::op::{AddRole, Admit, Op};
use crate::core::signature;
use crate::store::{Channel, StoreError};

fn role_in_roster(channel: &mut Channel, role: &str) -> AppResult<Role> {
    let role = Role::new(role).map_err(|e| AppError::value(e.to_string()))?;
    super::admission::catch_up(channel)?;
    if !channel.roster().contains(&role) {
        return Err(AppError::value(format!(
            "role '{role}' is not a role of this channel — its roles are {}; the owner adds one \
             with `countersign add-role {role}`. The channel folder used: {}",
            super::session::roles_list(&channel.roster()),
            channel.dir().describe()
        )));
    }
    Ok(role)
}

/// Makes (or finds) this device's key for `role` and says what the owner
/// must run to admit it. Needs no owner key.
pub fn join(channel: &mut Channel, role: &str) -> AppResult<Joined> {
    let role = role_in_roster(channel, role)?;
    let (feed, pubkey, created) = key_rotation::join_key(channel, &role)?;
    let admitted = channel.admitted_key(&feed)?;
    let device = feed.device().to_owned();
    let (state, command) = match admitted {
        Some(k) if k == pubkey => (JoinState::Admitted, None),
        Some(_) => (
            JoinState::KeyDiffers,
            Some(format!(
                "countersign rotate-key --role {role} --lost --device {device} --pubkey {pubkey} \
                 --from-seq {}",
                channel.head_seq(&feed)? + 1
            )),
        ),
        None => (
            JoinState::WaitingForAdmit,
            Some(format!(
                "countersign admit {role} {pubkey} --device {device}"
            )),
        ),
    };
    Ok(Joined {
        feed: feed.to_string(),
        role,
        device,
        pubkey,
        key_created: created,
        state,
        owner_command: command,
    })
}

/// What `join` found or made for this device.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Joined {
    /// The device's feed for the role.
    pub feed: String,
    /// The role.
    #[schemars(with = "String")]
    pub role: Role,
    /// This device's id.
    pub device: String,
    /// The feed's public key.
    pub pubkey: String,
    /// True if the key was made now.
    pub key_created: bool,
    /// Whether the owner has admitted this device's key.
    pub state: JoinState,
    /// What the owner runs next, if anything.
    pub owner_command: Option<String>,
}

/// Where a joining device stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JoinState {
    /// The feed is admitted with this device's key.
    Admitted,
    /// Nobody admitted the feed yet.
    WaitingForAdmit,
    /// The feed is admitted with another key.
    KeyDiffers,
}

/// What `admit` wrote.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Admitted {
    /// The feed admitted.
    pub feed: String,
    /// Its key.
    pub pubkey: String,
    /// False if it was already admitted with this key.
    pub written: bool,
    /// The admit record's full id, when written.
    pub record: Option<String>,
}

/// What `add-role` wrote.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RoleAdded {
    /// The new role.
    #[schemars(with = "String")]
    pub role: Role,
    /// The add_role record's full id.
    pub record: String,
    /// The roles now.
    #[schemars(with = "Vec<String>")]
    pub roles: Vec<Role>,
}

/// What `rotate-key` wrote.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct KeyRotated {
    /// The feed whose key changed.
    pub feed: String,
    /// The new key.
    pub pubkey: String,
    /// The replace_key record's full id.
    pub record: String,
    /// `owner` (a lost key) or `old key`.
    pub signed_by: &'static str,
}

/// Owner: admits `pubkey` to write `role` from `device` (an `admit` record).
/// Admitting the same key again writes nothing.
pub fn admit(channel: &mut Channel, role: &str, pubkey: &str, device: &str) -> AppResult<Admitted> {
    let role = role_in_roster(channel, role)?;
    if let Err(why) = signature::parse_key(pubkey) {
        return Err(AppError::value(format!(
            "'{pubkey}' is not a usable public key ({why}); pass the 64 hex characters \
             `countersign join` printed"
        )));
    }
    let feed = FeedId::new(role.as_str(), device).ok_or_else(|| {
        AppError::value(format!(
            "'{device}' is not a device id (a lowercase slug); pass the device id \
             `countersign join` printed"
        ))
    })?;
    let owner = owner_writer(channel)?;
    let admit = Admit {
        feed: feed.clone(),
        pubkey: pubkey.to_owned(),
        role: role.clone(),
    };
    let (rec, ()) = channel.append_if(&owner, |ix| {
        let current = admitted(ix, &feed)?;
        match current {
            None => Ok((Some(Op::Admit(admit)), ())),
            Some(k) if k == pubkey => Ok((None, ())),
            Some(k) => Err(AppError::value(format!(
                "feed {feed} is already admitted with key {k}; to give it another key use \
                 `countersign rotate-key --role {role} --lost --device {device} --pubkey {pubkey}`"
            ))),
        }
    })?;
    Ok(Admitted {
        feed: feed.to_string(),
        pubkey: pubkey.to_owned(),
        written: rec.is_some(),
        record: rec.map(|r| r.id.hex()),
    })
}

fn admitted(ix: &crate::store::Index, feed: &FeedId) -> Result<Option<String>, StoreError> {
    ix.feed_key(&feed.to_string())
}

/// Owner: adds `role` to the roster (an `add_role` record).
pub fn add_role(channel: &mut Channel, role: &str) -> AppResult<RoleAdded> {
    let role = Role::new(role).map_err(|e| AppError::value(e.to_string()))?;
    if let Some(reserved) = crate::core::ids::reserved_role(role.as_str()) {
        return Err(AppError::value(reserved.to_string()));
    }
    let owner = owner_writer(channel)?;
    super::admission::catch_up(channel)?;
    if channel.roster().contains(&role) {
        return Err(AppError::value(format!(
            "role '{role}' is already a role of this channel; there is nothing to add, and \
             `countersign invite --role {role}` brings in a device for it"
        )));
    }
    let (rec, ()) = channel.append(&owner, |_| {
        Ok::<_, AppError>((Op::AddRole(AddRole { role: role.clone() }), ()))
    })?;
    Ok(RoleAdded {
        role,
        record: rec.id.hex(),
        roles: channel.roster(),
    })
}

/// Replaces a feed's key. Without `lost`: this device's key of `role`, by a
/// record signed with the old key. With `lost` (owner): the key of `role` on
/// `device` (default this one) becomes `pubkey` (default a new key made here)
/// from seq `from_seq` on (default: after the last record this machine has).
pub fn rotate_key(
    channel: &mut Channel,
    role: &str,
    lost: bool,
    device: Option<&str>,
    pubkey: Option<&str>,
    from_seq: Option<u64>,
) -> AppResult<KeyRotated> {
    let role = role_in_roster(channel, role)?;
    let (rec, feed, new_key) = if lost {
        key_rotation::replace_lost_key(channel, &role, device, pubkey, from_seq)?
    } else {
        if device.is_some() || pubkey.is_some() || from_seq.is_some() {
            return Err(AppError::value(
                "--device, --pubkey and --from-seq go with --lost (an owner replacing a lost key); without \
                 it the key of this device's own feed is replaced",
            ));
        }
        let (rec, key) = key_rotation::rotate_own_key(channel, &role)?;
        let feed = rec.header.feed.clone();
        (rec, feed, key)
    };
    Ok(KeyRotated {
        feed: feed.to_string(),
        pubkey: new_key,
        record: rec.id.hex(),
        signed_by: if lost { "owner" } else { "old key" },
    })
}
