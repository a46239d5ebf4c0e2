//! Small JSON files of this device's state folder for a channel (never
//! synced): read whole and bounded, replaced atomically.
//!
//! Owns how such a file is read and written, not what it holds: `prefs`,
//! `sync_outcome` and the memory's kept counts say that. A missing,
//! oversized or unreadable file reads as absent, so a damaged file never
//! stops a command; the next write replaces it.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::store::error::{IoContext as _, StoreResult};

/// The most bytes such a file may take.
const MAX_BYTES: u64 = 1 << 20;

/// Reads `name` in `state_dir`; `None` when it is absent, larger than
/// 1 MiB, or not the JSON of a `T`.
pub fn load<T: DeserializeOwned>(state_dir: &Path, name: &str) -> Option<T> {
    use std::io::Read as _;
    let file = std::fs::File::open(state_dir.join(name)).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// Replaces `name` in `state_dir` with `value` (a temporary file, then a
/// rename), making the folder if needed.
pub fn save<T: Serialize>(state_dir: &Path, name: &str, value: &T) -> StoreResult<()> {
    std::fs::create_dir_all(state_dir).at(state_dir)?;
    let path = state_dir.join(name);
    let tmp = path.with_extension("json.tmp");
    let bytes = serde_json::to_vec_pretty(value).expect("state serializes");
    std::fs::write(&tmp, bytes).at(&tmp)?;
    std::fs::rename(&tmp, &path).at(&path)?;
    Ok(())
}
