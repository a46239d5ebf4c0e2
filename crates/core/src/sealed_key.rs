//! The API key shared through the channel folder, sealed to each device:
//! `api-key.json` beside a feed's head, signed by that feed's key.
//!
//! Each recipient is an admitted feed (a role on a device); its ed25519
//! key, taken as X25519 (`VerifyingKey::to_montgomery`, whose secret is the
//! signing key's `to_scalar_bytes`), gets its own sealed copy: a fresh
//! ephemeral X25519 key, HKDF-SHA256 over the shared secret (salt: the
//! ephemeral and the recipient's public keys) and ChaCha20-Poly1305 with the
//! recipient feed as associated data — the construction of age's X25519
//! recipients. Whoever reads the folder without one of those device keys
//! learns that a key was shared, when, and to whom; never the key. The whole
//! file is signed by the sharing feed's key, so a planted file is ignored.
//! Pure: randomness and time are passed in.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use curve25519_dalek::montgomery::MontgomeryPoint;
use ed25519_dalek::{SigningKey, VerifyingKey};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, Salt};
use serde::{Deserialize, Serialize};

use super::ids::FeedId;
use super::signed_file;

/// The file's name in a feed's folder.
pub const KEY_FILE: &str = "api-key.json";
/// Domain separation prefix of its signature.
pub const KEY_DOMAIN: &[u8] = b"countersign/api-key/v1\0";
/// HKDF's info for a sealed copy.
const INFO: &[u8] = b"countersign/api-key/seal/v1";
/// The most bytes such a file may take (a copy per device).
pub const MAX_KEY_FILE: u64 = 256 * 1024;

/// One sealed copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Copy {
    /// The recipient feed.
    pub feed: FeedId,
    /// The ephemeral X25519 public key (base64).
    pub eph: String,
    /// The sealed key with its tag (base64).
    pub ct: String,
}

/// What a shared-key file says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedKey {
    /// The feed whose key signed it.
    pub feed: FeedId,
    /// When the key was shared or removed (ms): the newest wins.
    pub date: i64,
    /// True when the key was removed (no copies).
    pub removed: bool,
    /// A copy per recipient.
    pub to: Vec<Copy>,
}

fn key_for(shared: &[u8; 32], eph: &[u8; 32], recipient: &[u8; 32]) -> Option<LessSafeKey> {
    // A low-order point gives an all-zero secret: refused, as X25519 says.
    if shared.iter().all(|b| *b == 0) {
        return None;
    }
    let mut salt = Vec::with_capacity(64);
    salt.extend_from_slice(eph);
    salt.extend_from_slice(recipient);
    let prk = Salt::new(HKDF_SHA256, &salt).extract(shared);
    let okm = prk.expand(&[INFO], &CHACHA20_POLY1305).ok()?;
    Some(LessSafeKey::new(UnboundKey::from(okm)))
}

/// A copy of `plain` sealed to `recipient` (the feed `feed`), with the
/// ephemeral secret `eph_seed` (32 random bytes, fresh for each copy).
pub fn seal(plain: &[u8], feed: &FeedId, recipient: &VerifyingKey, eph_seed: [u8; 32]) -> Copy {
    let eph = SigningKey::from_bytes(&eph_seed);
    let eph_pub = eph.verifying_key().to_montgomery().to_bytes();
    let to = recipient.to_montgomery();
    let shared = to.mul_clamped(eph.to_scalar_bytes()).to_bytes();
    let mut ct = plain.to_vec();
    if let Some(k) = key_for(&shared, &eph_pub, &to.to_bytes()) {
        // The key is used once: a zero nonce is safe.
        let aad = Aad::from(feed.to_string().into_bytes());
        k.seal_in_place_append_tag(Nonce::assume_unique_for_key([0; 12]), aad, &mut ct)
            .expect("a short plaintext seals");
    } else {
        ct.clear();
    }
    Copy {
        feed: feed.clone(),
        eph: B64.encode(eph_pub),
        ct: B64.encode(ct),
    }
}

/// The plain text of `copy` for the holder of `key`, `None` when it is
/// not sealed to that key (or was altered).
pub fn open(copy: &Copy, key: &SigningKey) -> Option<Vec<u8>> {
    let eph: [u8; 32] = B64.decode(&copy.eph).ok()?.try_into().ok()?;
    let mut ct = B64.decode(&copy.ct).ok()?;
    let me = key.verifying_key().to_montgomery().to_bytes();
    let shared = MontgomeryPoint(eph)
        .mul_clamped(key.to_scalar_bytes())
        .to_bytes();
    let k = key_for(&shared, &eph, &me)?;
    let aad = Aad::from(copy.feed.to_string().into_bytes());
    let plain = k
        .open_in_place(Nonce::assume_unique_for_key([0; 12]), aad, &mut ct)
        .ok()?;
    Some(plain.to_vec())
}

/// The file's bytes, signed with the sharing feed's `key`.
pub fn encode(shared: &SharedKey, key: &SigningKey) -> String {
    signed_file::encode(shared, KEY_DOMAIN, key)
}

/// The file's content if it is signed by `key` for `feed`.
pub fn decode(text: &[u8], feed: &FeedId, key: &VerifyingKey) -> Option<SharedKey> {
    let shared: SharedKey = signed_file::decode(text, KEY_DOMAIN, key)?;
    (&shared.feed == feed).then_some(shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(s: &str) -> FeedId {
        FeedId::try_from(s.to_owned()).unwrap()
    }

    #[test]
    fn only_the_recipient_opens_its_copy() {
        let alice = SigningKey::from_bytes(&[1; 32]);
        let bob = SigningKey::from_bytes(&[2; 32]);
        let to = feed("web/dev-a");
        let copy = seal(b"sk-ant-secret", &to, &alice.verifying_key(), [9; 32]);
        assert!(!copy.ct.contains("sk-ant"));
        assert_eq!(open(&copy, &alice).as_deref(), Some(&b"sk-ant-secret"[..]));
        assert_eq!(open(&copy, &bob), None, "not a recipient");
        // Moved to another feed, or altered: refused.
        let mut moved = copy.clone();
        moved.feed = feed("web/dev-b");
        assert_eq!(open(&moved, &alice), None);
        let mut ct = B64.decode(&copy.ct).unwrap();
        ct[0] ^= 1;
        let altered = Copy {
            ct: B64.encode(ct),
            ..copy.clone()
        };
        assert_eq!(open(&altered, &alice), None);
        // A low-order ephemeral key opens nothing.
        let zero = Copy {
            eph: B64.encode([0u8; 32]),
            ..copy
        };
        assert_eq!(open(&zero, &alice), None);
    }

    #[test]
    fn the_file_is_signed_by_the_sharing_feed() {
        let sharer = SigningKey::from_bytes(&[5; 32]);
        let f = feed("web/dev-s");
        let shared = SharedKey {
            feed: f.clone(),
            date: 1,
            removed: false,
            to: vec![seal(
                b"k",
                &feed("api/dev-r"),
                &SigningKey::from_bytes(&[6; 32]).verifying_key(),
                [7; 32],
            )],
        };
        let text = encode(&shared, &sharer);
        assert_eq!(
            decode(text.as_bytes(), &f, &sharer.verifying_key()),
            Some(shared)
        );
        let other = SigningKey::from_bytes(&[8; 32]);
        assert_eq!(decode(text.as_bytes(), &f, &other.verifying_key()), None);
        let forged = text.replace("\"date\":1", "\"date\":2");
        assert_eq!(decode(forged.as_bytes(), &f, &sharer.verifying_key()), None);
    }
}
