//! `COUNTERSIGN_HOME`: this device's id, its keys and its per-channel state.
//!
//! Owns the local (never synced) side of countersign: `device.json`, signing
//! keys (mode 0600) and the folder holding each channel's index, journal,
//! locks and prefs. It knows nothing of feeds or records.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use super::error::{IoContext as _, StoreError, StoreResult};
use crate::core::ids::is_slug;

/// The local installation: where keys and state live.
#[derive(Clone, Debug)]
pub struct Home {
    config: PathBuf,
    state: PathBuf,
}

/// `device.json`: this installation's id, created once.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Device {
    /// `<name>-<6 hex>`, a slug.
    pub id: String,
    /// The host name it was made on (informative).
    pub name: String,
}

impl Home {
    /// The home from the environment: `COUNTERSIGN_HOME` (one root for all),
    /// else `$XDG_CONFIG_HOME/countersign` for keys and the device and
    /// `$XDG_STATE_HOME/countersign` for the rest.
    pub fn from_env() -> StoreResult<Self> {
        if let Some(root) = std::env::var_os("COUNTERSIGN_HOME").filter(|v| !v.is_empty()) {
            return Ok(Self::at(PathBuf::from(root)));
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = |var: &str, fallback: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(fallback)))
        };
        match (
            xdg("XDG_CONFIG_HOME", ".config"),
            xdg("XDG_STATE_HOME", ".local/state"),
        ) {
            (Some(c), Some(s)) => Ok(Self {
                config: c.join("countersign"),
                state: s.join("countersign"),
            }),
            _ => Err(StoreError::NoChannel(
                "cannot find a home folder: set COUNTERSIGN_HOME or HOME".into(),
            )),
        }
    }

    /// A home with one root (what `COUNTERSIGN_HOME` selects; used by tests).
    pub fn at(root: PathBuf) -> Self {
        Self {
            config: root.clone(),
            state: root,
        }
    }

    /// This device, created on first use.
    pub fn device(&self) -> StoreResult<Device> {
        let path = self.config.join("device.json");
        match fs::read(&path) {
            Ok(bytes) => {
                let d: Device = serde_json::from_slice(&bytes).map_err(|e| {
                    StoreError::NoChannel(format!("{} is unreadable: {e}", path.display()))
                })?;
                if !is_slug(&d.id) {
                    return Err(StoreError::NoChannel(format!(
                        "{} holds an invalid device id '{}'",
                        path.display(),
                        d.id
                    )));
                }
                Ok(d)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let name = host_slug();
                let mut rnd = [0u8; 3];
                getrandom::fill(&mut rnd).expect("the OS random source works");
                let d = Device {
                    id: format!("{name}-{}", hex::encode(rnd)),
                    name,
                };
                fs::create_dir_all(&self.config).at(&self.config)?;
                let bytes = serde_json::to_vec_pretty(&d).expect("device serializes");
                write_new(&path, &bytes, 0o644)?;
                // Another process may have won the race: read back what stands.
                self.device()
            }
            Err(e) => Err(e).at(&path)?,
        }
    }

    /// Folder of the keys of one channel.
    pub fn keys_dir(&self, channel_id: &str) -> PathBuf {
        self.config.join("keys").join(channel_id)
    }

    /// Folder of the index, journal, locks and prefs of one channel.
    pub fn state_dir(&self, channel_id: &str) -> PathBuf {
        self.state.join("state").join(channel_id)
    }

    /// Loads a signing key (`<name>.key`), `None` if absent.
    pub fn load_key(&self, channel_id: &str, name: &str) -> StoreResult<Option<SigningKey>> {
        let path = self.keys_dir(channel_id).join(format!("{name}.key"));
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).at(&path)?,
        };
        let mut seed = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut seed).map_err(|_| StoreError::BadKey {
            path: path.clone(),
            reason: "expected 64 hex characters".into(),
        })?;
        Ok(Some(SigningKey::from_bytes(&seed)))
    }

    /// Creates and stores a new signing key (mode 0600), or returns the one that
    /// already stands: a key is never overwritten.
    pub fn create_key(&self, channel_id: &str, name: &str) -> StoreResult<SigningKey> {
        self.store_key(channel_id, name, &new_signing_key())
    }

    /// Stores `key` as `<name>.key` (mode 0600) unless a key already stands
    /// there; returns the key that stands.
    pub fn store_key(
        &self,
        channel_id: &str,
        name: &str,
        key: &SigningKey,
    ) -> StoreResult<SigningKey> {
        let dir = self.keys_dir(channel_id);
        fs::create_dir_all(&dir).at(&dir)?;
        let path = dir.join(format!("{name}.key"));
        write_new(
            &path,
            format!("{}\n", hex::encode(key.to_bytes())).as_bytes(),
            0o600,
        )?;
        // If another process created the key first, its key is the one that stands.
        self.load_key(channel_id, name)?
            .ok_or_else(|| StoreError::BadKey {
                path,
                reason: "vanished right after it was written".into(),
            })
    }
}

impl Home {
    /// Makes the key `<next>.key` the key `<name>.key`, atomically (a rename
    /// over the old file, so a reader sees the old key or the new one, never
    /// none). The old key is kept beside it as `<name>.replaced-<ms>.key`: the
    /// feed's older records stay verifiable by hand.
    pub fn swap_key(&self, channel_id: &str, name: &str, next: &str) -> StoreResult<()> {
        let dir = self.keys_dir(channel_id);
        let path = dir.join(format!("{name}.key"));
        let next_path = dir.join(format!("{next}.key"));
        if path.exists() {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let backup = dir.join(format!("{name}.replaced-{ms}.key"));
            match fs::hard_link(&path, &backup) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).at(&backup)?,
            }
        }
        fs::rename(&next_path, &path).at(&path)?;
        fs::File::open(&dir).and_then(|d| d.sync_all()).at(&dir)?;
        Ok(())
    }
}

/// A fresh key from the OS random source.
pub fn new_signing_key() -> SigningKey {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).expect("the OS random source works");
    SigningKey::from_bytes(&seed)
}

/// Creates `path` with `bytes`, durably and atomically: the content is written
/// to a private temporary file first and then hard-linked into place, which
/// fails if the path exists. So a reader never sees a half-written key, and
/// when two processes race, the first one's file stands whole.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> StoreResult<()> {
    let mut rnd = [0u8; 8];
    getrandom::fill(&mut rnd).expect("the OS random source works");
    let tmp = path.with_extension(format!("tmp-{}", hex::encode(rnd)));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .at(&tmp)?;
    f.write_all(bytes).at(&tmp)?;
    f.sync_all().at(&tmp)?;
    drop(f);
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).at(path)?,
    }
    if let Some(dir) = path.parent() {
        fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
    }
    Ok(())
}

/// The host name as a slug (device ids are slugs).
fn host_slug() -> String {
    let raw = fs::read_to_string("/etc/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    crate::core::ids::slugify(&raw, 40).unwrap_or_else(|| "device".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_is_created_once() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().to_path_buf());
        let a = home.device().unwrap();
        let b = home.device().unwrap();
        assert_eq!(a, b);
        assert!(is_slug(&a.id));
    }

    #[test]
    fn keys_are_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().to_path_buf());
        assert!(home.load_key("c", "alpha").unwrap().is_none());
        let k = home.create_key("c", "alpha").unwrap();
        let path = home.keys_dir("c").join("alpha.key");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            home.load_key("c", "alpha").unwrap().unwrap().to_bytes(),
            k.to_bytes()
        );
    }
}
