//! The feeds' signed `head.json` files as this process last verified them.
//!
//! Who was heard last (`channel_status`, the board) reads every feed's head
//! on each call, and checking a head's signature costs more than reading
//! the file: a status call on four feeds spent a fifth of its time in
//! ed25519. A head is read whole every time (a few hundred bytes, bounded by
//! [`MAX_HEAD_BYTES`](crate::store::folder::segments::MAX_HEAD_BYTES)) and its verdict is
//! reused only for the very same bytes and key, so a changed, replaced or
//! forged file is always checked again. Owns that memory; must not decide
//! what a head means (`core::record::decode_head` does).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ed25519_dalek::VerifyingKey;

use crate::core::ids::FeedId;
use crate::core::record::{self, HeadClaim};
use crate::store::folder::segments::{HEAD_FILE, MAX_HEAD_BYTES};
use crate::store::folder_file;

/// The last verdict per head file: the bytes and key it was reached for.
#[derive(Default)]
pub struct Heads {
    seen: Mutex<HashMap<PathBuf, Seen>>,
}

struct Seen {
    bytes: Vec<u8>,
    feed: FeedId,
    key: [u8; 32],
    claim: Option<HeadClaim>,
}

impl Heads {
    /// The head in `feed_dir`, if it is there and verifies with `key` for
    /// `feed` (as [`crate::store::folder::segments::read_head`]), checking the signature only
    /// when the file's bytes, the feed or the key differ from the last call.
    pub fn read(&self, feed_dir: &Path, feed: &FeedId, key: &VerifyingKey) -> Option<HeadClaim> {
        let path = feed_dir.join(HEAD_FILE);
        let bytes = folder_file::read(&path, MAX_HEAD_BYTES).ok()?;
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = seen.get(&path)
            && s.bytes == bytes
            && &s.feed == feed
            && s.key == key.to_bytes()
        {
            return s.claim;
        }
        let claim = record::decode_head(&bytes, feed, key);
        seen.insert(
            path,
            Seen {
                bytes,
                feed: feed.clone(),
                key: key.to_bytes(),
                claim,
            },
        );
        claim
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::folder::segments::read_head;
    use ed25519_dalek::SigningKey;

    #[test]
    fn a_remembered_verdict_holds_only_for_the_same_bytes_and_key() {
        let tmp = tempfile::tempdir().unwrap();
        let feed = FeedId::try_from("backend/dev1".to_owned()).unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]);
        let head = |seq: u64| {
            let id = crate::core::ids::RecordId::of_body(&seq.to_le_bytes());
            let hlc = crate::core::hlc::Hlc(1_700_000_000_000 + seq as i64, 0);
            record::encode_head(&feed, seq, id, hlc, &key)
        };
        let path = tmp.path().join(HEAD_FILE);
        let heads = Heads::default();
        std::fs::write(&path, head(3)).unwrap();
        let first = heads.read(tmp.path(), &feed, &key.verifying_key());
        assert_eq!(first.map(|c| c.seq), Some(3));
        assert_eq!(first, read_head(tmp.path(), &feed, &key.verifying_key()));
        // Another key: checked again, and refused.
        assert_eq!(heads.read(tmp.path(), &feed, &other.verifying_key()), None);
        // A newer head: read anew.
        std::fs::write(&path, head(4)).unwrap();
        assert_eq!(
            heads
                .read(tmp.path(), &feed, &key.verifying_key())
                .map(|c| c.seq),
            Some(4)
        );
        // A forged one (a byte of the signed body changed): refused.
        let forged = head(4).replacen("\"seq\":4", "\"seq\":5", 1);
        std::fs::write(&path, forged).unwrap();
        assert_eq!(heads.read(tmp.path(), &feed, &key.verifying_key()), None);
    }
}
