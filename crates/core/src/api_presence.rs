//! Whether a device's model API works, as it tells the other devices: a
//! signed `api.json` beside a feed's `head.json`, so that the devices of a
//! channel elect one writer of background summaries.
//!
//! `{"body":{"feed","works","ms","why"},"sig"}`: signed by the feed's key
//! under its own domain (it can never pass for a head or a record). Like a
//! head it is a hint: it changes nothing in the channel, and one that fails
//! its check (a hand edit, another feed's file, a torn write) is ignored.
//! Pure: the caller reads and writes the file and passes the time in.

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::ids::FeedId;
use super::peer_text::one_line;
use super::signed_file;

/// The file's name in a feed's folder.
pub const API_FILE: &str = "api.json";
/// Domain separation prefix of its signature.
pub const API_DOMAIN: &[u8] = b"countersign/api/v1\0";
/// The most bytes of `why` kept.
const MAX_WHY: usize = 200;

/// What a device says of its API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiClaim {
    /// The feed whose key signed it.
    pub feed: FeedId,
    /// True when a key is stored and the API is not paused.
    pub works: bool,
    /// When it was said (ms).
    pub ms: i64,
    /// Why it does not work, in a few words (peer text: escape it to show it).
    pub why: String,
}

/// The file's bytes for `claim`, signed with `key`.
pub fn encode(claim: &ApiClaim, key: &SigningKey) -> String {
    let mut claim = claim.clone();
    claim.why = claim.why.chars().take(MAX_WHY).collect();
    signed_file::encode(&claim, API_DOMAIN, key)
}

/// The claim in `text` if it is signed by `key` for `feed`; `None` for
/// anything else.
pub fn decode(text: &[u8], feed: &FeedId, key: &VerifyingKey) -> Option<ApiClaim> {
    let mut claim: ApiClaim = signed_file::decode(text, API_DOMAIN, key)?;
    claim.why = one_line(&claim.why.chars().take(MAX_WHY).collect::<String>());
    (&claim.feed == feed).then_some(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_feeds_own_signed_claim_reads() {
        let feed = FeedId::try_from("web/dev-a".to_owned()).unwrap();
        let other = FeedId::try_from("web/dev-b".to_owned()).unwrap();
        let key = SigningKey::from_bytes(&[3; 32]);
        let claim = ApiClaim {
            feed: feed.clone(),
            works: true,
            ms: 1_700_000_000_000,
            why: String::new(),
        };
        let text = encode(&claim, &key);
        assert_eq!(
            decode(text.as_bytes(), &feed, &key.verifying_key()),
            Some(claim)
        );
        assert_eq!(decode(text.as_bytes(), &other, &key.verifying_key()), None);
        let wrong = SigningKey::from_bytes(&[4; 32]);
        assert_eq!(decode(text.as_bytes(), &feed, &wrong.verifying_key()), None);
        let forged = text.replace("\"works\":true", "\"works\":false");
        assert_eq!(decode(forged.as_bytes(), &feed, &key.verifying_key()), None);
    }
}
