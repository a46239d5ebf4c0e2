//! The Anthropic API key of this home (`countersign memory api-key`): one
//! file beside the signing keys, readable only by its user (mode 0600),
//! written whole or not at all.
//!
//! Owns where the key lives and how it is written and removed; it never
//! checks a key against the API (that is `app::compaction_api`) and never
//! logs or prints it.

use std::fs;

use crate::store::error::{IoContext as _, StoreResult};
use crate::store::home::Home;
use crate::store::home::private_file;

/// The most bytes read of the key file (a key is about a hundred).
const MAX_KEY_BYTES: usize = 4096;

/// The stored key, `None` when there is none (or the file holds nothing
/// that could be one).
pub fn load(home: &Home) -> StoreResult<Option<String>> {
    let path = home.api_key_file();
    match fs::read(&path) {
        Ok(bytes) if bytes.len() <= MAX_KEY_BYTES => {
            let text = String::from_utf8_lossy(&bytes).trim().to_owned();
            Ok((!text.is_empty()).then_some(text))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).at(&path)?,
    }
}

/// Stores `key` (mode 0600): a temporary file made private before a byte
/// is written, then renamed over the old key.
pub fn save(home: &Home, key: &str) -> StoreResult<()> {
    private_file::replace(&home.api_key_file(), format!("{key}\n").as_bytes())
}

/// Removes the stored key; true when there was one.
pub fn remove(home: &Home) -> StoreResult<bool> {
    let path = home.api_key_file();
    match fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).at(&path)?,
    }
}

/// A short fingerprint of a key (12 hex digits of its SHA-256), to tell
/// whether the key changed since it was rejected without keeping the key.
pub fn fingerprint(key: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(key.as_bytes()))[..12].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_key_is_private_replaced_whole_and_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path().to_path_buf());
        assert_eq!(load(&home).unwrap(), None);
        save(&home, "sk-ant-one").unwrap();
        save(&home, "sk-ant-two").unwrap();
        assert_eq!(load(&home).unwrap().as_deref(), Some("sk-ant-two"));
        let mode = fs::metadata(home.api_key_file())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(remove(&home).unwrap());
        assert!(!remove(&home).unwrap());
        assert_eq!(load(&home).unwrap(), None);
        assert_ne!(fingerprint("a"), fingerprint("b"));
    }
}
