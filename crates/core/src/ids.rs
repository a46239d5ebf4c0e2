//! Identifiers: record ids, message ids, roles, devices and feed ids.
//!
//! Owns the newtypes and their validation rules. It does not know where ids
//! are stored or how they are looked up (the index resolves prefixes).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Number of hex characters of a record id that agents see as a message id.
pub const MESSAGE_ID_LEN: usize = 12;
/// Shortest prefix a tool accepts when looking a message up.
pub const MIN_PREFIX_LEN: usize = 6;

/// The id of a record: sha256 of the exact bytes of its `body`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId([u8; 32]);

impl RecordId {
    /// The id of the record whose body has exactly these bytes.
    pub fn of_body(body: &[u8]) -> Self {
        Self(Sha256::digest(body).into())
    }

    /// Parses 64 lowercase hex characters.
    pub fn parse(hex_id: &str) -> Option<Self> {
        if hex_id.len() != 64 || hex_id.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(hex_id, &mut out).ok()?;
        Some(Self(out))
    }

    /// The full 64-character hex form.
    pub fn hex(&self) -> String {
        digest_hex(&self.0)
    }

    /// The id made of these 32 bytes (a digest computed elsewhere).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 bytes of the digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The short form agents see (first [`MESSAGE_ID_LEN`] hex characters).
    pub fn short(&self) -> String {
        let mut s = self.hex();
        s.truncate(MESSAGE_ID_LEN);
        s
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordId({})", self.short())
    }
}

impl Serialize for RecordId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for RecordId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| serde::de::Error::custom("expected a 64-character hex id"))
    }
}

/// Hex sha256 of arbitrary bytes (bodies, channel.json).
pub fn sha256_hex(bytes: &[u8]) -> String {
    digest_hex(&Sha256::digest(bytes).into())
}

/// The 64 lowercase hex digits of a 32-byte digest. Written into a buffer
/// rather than by `hex::encode`, which pushes one `char` at a time: ids and
/// body digests go into every row an ingest makes, and that was 3% of a
/// rebuild.
fn digest_hex(digest: &[u8; 32]) -> String {
    let mut digits = [0u8; 64];
    hex::encode_to_slice(digest, &mut digits).expect("64 digits hold 32 bytes");
    String::from_utf8_lossy(&digits).into_owned()
}

/// Why a name is not a valid role slug.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a valid role: a role is a lowercase slug of 1 to 64 characters, \
     letters, digits, '-' or '_', starting with a letter or digit"
)]
pub struct BadRole(pub String);

/// A role name no role may take, with why: the home and the folder use the
/// name for something else, and a role so named would share a path or a word
/// with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is reserved and cannot be a role: countersign uses the name for {1}. Choose another \
     name (reserved: owner, feeds, keys, journal, state)"
)]
pub struct ReservedRole(pub String, pub &'static str);

/// The reserved names and what each is used for. `owner` is the channel
/// owner's key and feed: a role of that name once shared the owner's key file.
pub const RESERVED_ROLES: [(&str, &str); 5] = [
    ("owner", "the channel owner's key and feed"),
    ("feeds", "the channel folder's feeds directory"),
    ("keys", "the home's keys directory"),
    ("journal", "the home's journals"),
    ("state", "the home's state directory"),
];

/// The reason `name` is reserved, if it is.
pub fn reserved_role(name: &str) -> Option<ReservedRole> {
    RESERVED_ROLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, why)| ReservedRole((*n).to_owned(), why))
}

/// A role name: `^[a-z0-9][a-z0-9_-]{0,63}$`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Role(String);

impl Role {
    /// Validates a role slug.
    pub fn new(name: &str) -> Result<Self, BadRole> {
        if is_slug(name) {
            Ok(Self(name.to_owned()))
        } else {
            Err(BadRole(name.to_owned()))
        }
    }

    /// The role as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when the name is reserved ([`RESERVED_ROLES`]): no new role may
    /// take it (init, add-role), and ingest quarantines a grant of it.
    pub fn is_reserved(&self) -> bool {
        reserved_role(&self.0).is_some()
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// True for `^[a-z0-9][a-z0-9_-]{0,63}$`; shared by roles, device names and channel names.
pub fn is_slug(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_')
}

/// Turns free text (a host or folder name) into a slug of at most `max`
/// characters: lowercased, other characters become `-`, leading `-`/`_`
/// dropped. `None` if nothing usable is left.
pub fn slugify(raw: &str, max: usize) -> Option<String> {
    let s: String = raw
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .skip_while(|c| *c == '-' || *c == '_')
        .take(max.min(64))
        .collect();
    is_slug(&s).then_some(s)
}

/// The pseudo-role of the channel owner's feed (membership records).
pub const OWNER_FEED_ROLE: &str = "_owner";

/// A feed: one role on one device, written `<role>/<device>`.
///
/// Held as that text, with where the role ends: the index binds it as a key
/// at every record it stores, and the text is then a borrow, not a format.
/// Ordered by role, then device, as a pair (not as the text: `a-b/x` sorts
/// after `a/y`).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FeedId {
    text: String,
    role_len: usize,
}

impl FeedId {
    /// The feed of `role` (or [`OWNER_FEED_ROLE`]) on `device`.
    pub fn new(role: &str, device: &str) -> Option<Self> {
        let role_ok = role == OWNER_FEED_ROLE || is_slug(role);
        (role_ok && is_slug(device)).then(|| {
            let mut text = String::with_capacity(role.len() + 1 + device.len());
            text.push_str(role);
            text.push('/');
            text.push_str(device);
            Self {
                text,
                role_len: role.len(),
            }
        })
    }

    /// The role part (may be [`OWNER_FEED_ROLE`]).
    pub fn role(&self) -> &str {
        &self.text[..self.role_len]
    }

    /// The device part.
    pub fn device(&self) -> &str {
        &self.text[self.role_len + 1..]
    }

    /// The feed as written: `<role>/<device>`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True for the owner's membership feed.
    pub fn is_owner(&self) -> bool {
        self.role() == OWNER_FEED_ROLE
    }
}

impl Ord for FeedId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.role(), self.device()).cmp(&(other.role(), other.device()))
    }
}

impl PartialOrd for FeedId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for FeedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for FeedId {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.split_once('/')
            .and_then(|(r, d)| Self::new(r, d))
            .ok_or_else(|| format!("'{s}' is not a feed id (<role>/<device>)"))
    }
}

impl From<FeedId> for String {
    fn from(f: FeedId) -> Self {
        f.text
    }
}

/// A message id as an agent typed it: a hex prefix of at least [`MIN_PREFIX_LEN`] characters.
/// Resolving it to one record is the index's job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdPrefix(String);

impl IdPrefix {
    /// Normalizes (trim, lowercase, optional leading `#`) and validates a prefix.
    pub fn parse(raw: &str) -> Option<Self> {
        let s = raw.trim().trim_start_matches('#').to_ascii_lowercase();
        let ok =
            (MIN_PREFIX_LEN..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then_some(Self(s))
    }

    /// The normalized hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True if `id` starts with this prefix.
    pub fn matches(&self, id: &RecordId) -> bool {
        id.hex().starts_with(&self.0)
    }
}

/// Roles as refusals name them: `['a', 'b']`.
pub fn roles_list(roles: &[Role]) -> String {
    let inner: Vec<String> = roles.iter().map(|r| format!("'{r}'")).collect();
    format!("[{}]", inner.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_slugs() {
        assert!(Role::new("backend").is_ok());
        assert!(Role::new("a").is_ok());
        assert!(reserved_role("owner").is_some());
        assert!(Role::new("owner").unwrap().is_reserved());
        assert!(!Role::new("owners").unwrap().is_reserved());
        assert!(Role::new("9-x_y").is_ok());
        for bad in [
            "",
            "Backend",
            "-x",
            "_x",
            "a b",
            "a/b",
            &"a".repeat(65),
            "*",
        ] {
            assert!(Role::new(bad).is_err(), "{bad:?} accepted");
        }
        assert!(Role::new(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn record_id_round_trip() {
        let id = RecordId::of_body(b"{}");
        assert_eq!(
            id.hex(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(RecordId::parse(&id.hex()), Some(id));
        assert_eq!(sha256_hex(b"{}"), id.hex());
        assert_eq!(id.short(), "44136fa355b3");
        assert_eq!(RecordId::parse(&id.hex().to_uppercase()), None);
        assert_eq!(RecordId::parse("44136f"), None);
    }

    #[test]
    fn feed_ids() {
        let f: FeedId = "backend/laptop-3f9a2c".to_owned().try_into().unwrap();
        assert_eq!(f.role(), "backend");
        assert_eq!(f.to_string(), "backend/laptop-3f9a2c");
        assert!(FeedId::new("_owner", "laptop").unwrap().is_owner());
        assert!(FeedId::try_from("nope".to_owned()).is_err());
        assert!(FeedId::try_from("a/b/c".to_owned()).is_err());
        assert_eq!(f.device(), "laptop-3f9a2c");
        assert_eq!(f.as_str(), "backend/laptop-3f9a2c");
        assert_eq!(String::from(f), "backend/laptop-3f9a2c");
    }

    #[test]
    fn feed_ids_order_by_role_then_device_not_by_their_text() {
        let feed = |r: &str, d: &str| FeedId::new(r, d).unwrap();
        // As text, "a-b/x" < "a/y" ('-' sorts before '/'); as a pair, the
        // role "a" comes first.
        assert!(feed("a", "y") < feed("a-b", "x"));
        assert!(feed("a", "x") < feed("a", "y"));
        assert!(feed("_owner", "z") < feed("a", "a"));
        assert_eq!(
            feed("a", "x").cmp(&feed("a", "x")),
            std::cmp::Ordering::Equal
        );
    }

    #[test]
    fn slugs_from_free_text() {
        assert_eq!(slugify("My Project!", 64).as_deref(), Some("my-project-"));
        assert_eq!(slugify("__x.local", 4).as_deref(), Some("x-lo"));
        assert_eq!(slugify("  ", 10), None);
        assert_eq!(slugify("éé", 10), None);
    }

    #[test]
    fn prefixes() {
        let id = RecordId::of_body(b"{}");
        let p = IdPrefix::parse(" #44136FA355 ").unwrap();
        assert!(p.matches(&id));
        assert!(IdPrefix::parse("44136").is_none());
        assert!(IdPrefix::parse("zzzzzz").is_none());
    }
}
