//! The channel's genesis document (`channel.json`) and the channel id.
//!
//! Owns the rules for a valid channel definition (2 to 12 distinct role
//! slugs) and the id derived from its exact bytes. Reading and writing the
//! file is the store's job.

use serde::{Deserialize, Serialize};

use super::ids::{Role, is_slug, sha256_hex};
use super::signature::{self, KeyError};

/// Format tag written into every genesis document.
pub const FORMAT: &str = "countersign/1";
/// Fewest roles a channel may have.
pub const MIN_ROLES: usize = 2;
/// Most roles a channel may have.
pub const MAX_ROLES: usize = 12;

/// The content of `channel.json`. It holds no id of its own: the id is the
/// hash of its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Genesis {
    /// Always [`FORMAT`].
    pub format: String,
    /// A human name for the channel (a slug).
    pub name: String,
    /// RFC 3339 creation time (informative).
    pub created_at: String,
    /// The founding roster.
    pub roles: Vec<Role>,
    /// Hex ed25519 public key of the owner.
    pub owner_pubkey: String,
    /// Random hex, so two channels with equal settings still differ.
    pub nonce: String,
}

/// Why a channel definition was refused; each message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenesisError {
    /// Fewer than [`MIN_ROLES`].
    #[error("a channel needs at least two roles (got {0}) — pass --roles a,b")]
    TooFewRoles(usize),
    /// More than [`MAX_ROLES`].
    #[error(
        "a channel has at most 12 roles (got {0}), as more participants than that need \
         an event bus, not a mailbox; pass at most 12 to --roles"
    )]
    TooManyRoles(usize),
    /// A name that is not a slug.
    #[error(transparent)]
    BadRole(#[from] super::ids::BadRole),
    /// A role name is reserved.
    #[error(transparent)]
    ReservedRole(#[from] super::ids::ReservedRole),
    /// The same role twice.
    #[error("roles must be different: '{0}' appears more than once; list each role once")]
    DuplicateRole(String),
    /// A channel name that is not a slug.
    #[error("channel name '{0}' must match ^[a-z0-9][a-z0-9_-]{{0,63}}$ (lowercase slug)")]
    BadName(String),
    /// The document does not parse.
    #[error("channel.json is not a valid channel definition: {0}")]
    Malformed(String),
    /// The owner's key is not one a signature can be trusted under.
    #[error(
        "channel.json's owner_pubkey is refused ({0}), so no record of this channel can be \
         trusted; use a channel made by `countersign init`"
    )]
    BadOwnerKey(KeyError),
}

impl Genesis {
    /// Validates a roster given as text: 2 to 12 distinct slugs.
    pub fn roster(names: &[&str]) -> Result<Vec<Role>, GenesisError> {
        let names: Vec<&str> = names.iter().map(|n| n.trim()).collect();
        let mut roles = Vec::with_capacity(names.len());
        for n in &names {
            let role = Role::new(n)?;
            if let Some(reserved) = super::ids::reserved_role(n) {
                return Err(reserved.into());
            }
            if roles.contains(&role) {
                return Err(GenesisError::DuplicateRole(role.to_string()));
            }
            roles.push(role);
        }
        if roles.len() < MIN_ROLES {
            return Err(GenesisError::TooFewRoles(roles.len()));
        }
        if roles.len() > MAX_ROLES {
            return Err(GenesisError::TooManyRoles(roles.len()));
        }
        Ok(roles)
    }

    /// Checks the channel name.
    pub fn check_name(name: &str) -> Result<(), GenesisError> {
        if is_slug(name) {
            Ok(())
        } else {
            Err(GenesisError::BadName(name.to_owned()))
        }
    }

    /// The bytes written to `channel.json` (pretty, with a final newline). They
    /// are written once and never rewritten: the channel id depends on them.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("a genesis serializes");
        v.push(b'\n');
        v
    }

    /// Parses `channel.json` bytes and checks the roster rules.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, GenesisError> {
        let g: Self =
            serde_json::from_slice(bytes).map_err(|e| GenesisError::Malformed(e.to_string()))?;
        if g.format != FORMAT {
            return Err(GenesisError::Malformed(format!(
                "unknown format '{}'",
                g.format
            )));
        }
        let names: Vec<&str> = g.roles.iter().map(Role::as_str).collect();
        Self::roster(&names)?;
        // Where the owner's key enters: one of small order would let anyone
        // sign as the owner (see `signature`).
        signature::parse_key(&g.owner_pubkey).map_err(GenesisError::BadOwnerKey)?;
        Ok(g)
    }
}

/// The channel id: hex sha256 of the exact bytes of `channel.json`.
pub fn channel_id(genesis_bytes: &[u8]) -> String {
    sha256_hex(genesis_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roster_rules_name_the_rule() {
        assert!(Genesis::roster(&["a", "b"]).is_ok());
        let e = Genesis::roster(&["a"]).unwrap_err().to_string();
        assert!(e.contains("at least two roles"), "{e}");
        let many: Vec<String> = (0..13).map(|i| format!("r{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(
            Genesis::roster(&many)
                .unwrap_err()
                .to_string()
                .contains("at most 12")
        );
        assert!(
            Genesis::roster(&["a", "a"])
                .unwrap_err()
                .to_string()
                .contains("different")
        );
        assert!(
            Genesis::roster(&["a", "B"])
                .unwrap_err()
                .to_string()
                .contains("lowercase slug")
        );
    }

    #[test]
    fn id_is_hash_of_bytes() {
        let g = genesis(&[1; 32]);
        let bytes = g.to_bytes();
        assert_eq!(Genesis::from_bytes(&bytes).unwrap(), g);
        assert_eq!(channel_id(&bytes), sha256_hex(&bytes));
    }

    fn genesis(owner: &[u8; 32]) -> Genesis {
        Genesis {
            format: FORMAT.into(),
            name: "demo".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            roles: Genesis::roster(&["a", "b"]).unwrap(),
            owner_pubkey: hex::encode(owner),
            nonce: "ab".into(),
        }
    }

    #[test]
    fn an_owner_key_of_small_order_or_not_canonical_is_refused() {
        let real = ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key();
        assert!(Genesis::from_bytes(&genesis(real.as_bytes()).to_bytes()).is_ok());
        // All zeros: the point of order 4 whose y is 0.
        let e = Genesis::from_bytes(&genesis(&[0; 32]).to_bytes()).unwrap_err();
        assert_eq!(e, GenesisError::BadOwnerKey(KeyError::SmallOrder));
        assert!(e.to_string().contains("small order"), "{e}");
        // The identity written with y = p + 1.
        let mut high = [0xff; 32];
        high[0] = 0xee;
        high[31] = 0x7f;
        let e = Genesis::from_bytes(&genesis(&high).to_bytes()).unwrap_err();
        assert_eq!(e, GenesisError::BadOwnerKey(KeyError::NonCanonical));
    }
}
