//! `COUNTERSIGN_HOME`: this device's id, its keys and its per-channel state.
//!
//! Owns the local (never synced) side of countersign: `device.json`, signing
//! keys (mode 0600) and the folder holding each channel's index, journal,
//! locks and prefs. It knows nothing of feeds or records.

pub mod api_key;
pub mod backup;
pub mod binding;
pub mod lock;
pub mod prefs;
pub mod private_file;
pub mod spool;
pub mod state_file;
pub mod sync_outcome;

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use crate::core::ids::{Role, is_slug};
use crate::store::error::{IoContext as _, StoreError, StoreResult};

/// The local installation: where keys and state live.
#[derive(Clone, Debug)]
pub struct Home {
    config: PathBuf,
    state: PathBuf,
    /// Where this home is and how it was chosen, in words, for refusals
    /// about keys and membership.
    chosen: String,
    /// True when neither `--home` nor `COUNTERSIGN_HOME` chose it.
    default: bool,
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
        Self::choose(None)
    }

    /// The home `explicit` names (`--home`), else the one from the
    /// environment (see [`Self::from_env`]), remembering how it was chosen.
    pub fn choose(explicit: Option<&Path>) -> StoreResult<Self> {
        if let Some(root) = explicit.filter(|p| !p.as_os_str().is_empty()) {
            let mut home = Self::at(root.to_path_buf());
            home.chosen = format!("{} (from --home)", root.display());
            return Ok(home);
        }
        if let Some(root) = std::env::var_os("COUNTERSIGN_HOME").filter(|v| !v.is_empty()) {
            let root = PathBuf::from(root);
            let mut home = Self::at(root.clone());
            home.chosen = format!("{} (from COUNTERSIGN_HOME)", root.display());
            return Ok(home);
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = |var: &str, fallback: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(|v| (PathBuf::from(v), var.to_owned()))
                .or_else(|| {
                    home.as_ref()
                        .map(|h| (h.join(fallback), format!("~/{fallback}")))
                })
        };
        match (
            xdg("XDG_CONFIG_HOME", ".config"),
            xdg("XDG_STATE_HOME", ".local/state"),
        ) {
            (Some((c, c_from)), Some((s, s_from))) => {
                let (config, state) = (c.join("countersign"), s.join("countersign"));
                Ok(Self {
                    chosen: format!(
                        "{} and {} (the default, under {c_from} and {s_from}: neither --home nor \
                         COUNTERSIGN_HOME is set in this process's environment)",
                        config.display(),
                        state.display()
                    ),
                    config,
                    state,
                    default: true,
                })
            }
            _ => Err(StoreError::NoHome),
        }
    }

    /// A home with one root (what `COUNTERSIGN_HOME` selects; used by tests).
    pub fn at(root: PathBuf) -> Self {
        Self {
            chosen: root.display().to_string(),
            config: root.clone(),
            state: root,
            default: false,
        }
    }

    /// Where this home is and how it was chosen, e.g. `/h (from
    /// COUNTERSIGN_HOME)`.
    pub fn describe(&self) -> &str {
        &self.chosen
    }

    /// True when the home is the default one: nothing chose it, which is
    /// also what a process started without `COUNTERSIGN_HOME` gets.
    pub fn is_default(&self) -> bool {
        self.default
    }

    /// The one root of a home chosen by `--home` or `COUNTERSIGN_HOME`
    /// (what a client's server entry passes on as `COUNTERSIGN_HOME`);
    /// `None` for the default home.
    pub fn root(&self) -> Option<&Path> {
        (!self.default).then_some(self.config.as_path())
    }

    /// The folder where `install` keeps what it changed outside the home
    /// (the files as they were, to put back byte for byte).
    pub fn install_dir(&self) -> PathBuf {
        self.state.join("install")
    }

    /// The access database of `countersign serve` (hashes of role tokens and
    /// view keys), kept with the keys.
    pub fn access_db(&self) -> PathBuf {
        self.config.join("access.sqlite3")
    }

    /// The Anthropic API key stored by `countersign memory api-key` (mode
    /// 0600, `store::home::api_key`), kept with the keys.
    pub fn api_key_file(&self) -> PathBuf {
        self.config.join("anthropic-api-key")
    }

    /// The lock a running `countersign serve` holds for its whole life, so
    /// that an `mcp` server of this home leaves background compaction to it.
    pub fn serve_lock(&self) -> PathBuf {
        self.state.join("serve.lock")
    }

    /// True when this home has a device already (`device` would not make one).
    pub fn has_device(&self) -> bool {
        self.config.join("device.json").is_file()
    }

    /// This device, created on first use.
    pub fn device(&self) -> StoreResult<Device> {
        let path = self.config.join("device.json");
        match fs::read(&path) {
            Ok(bytes) => {
                let d: Device =
                    serde_json::from_slice(&bytes).map_err(|e| StoreError::CorruptFile {
                        path: path.clone(),
                        reason: format!("not valid as a device file ({e})"),
                    })?;
                if !is_slug(&d.id) {
                    return Err(StoreError::CorruptFile {
                        reason: format!("holds an invalid device id '{}'", d.id),
                        path,
                    });
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

    /// The file naming this device (`device.json`).
    pub fn device_file(&self) -> PathBuf {
        self.config.join("device.json")
    }

    /// Folder of the keys of one channel.
    pub fn keys_dir(&self, channel_id: &str) -> PathBuf {
        self.config.join("keys").join(channel_id)
    }

    /// Folder of what this device remembers of channels read through a
    /// server (`COUNTERSIGN_URL`): the stop hook's snapshots, named by server
    /// and token.
    pub fn remote_dir(&self) -> PathBuf {
        self.state.join("remote")
    }

    /// Folder of the recording spool: hook events kept until they are
    /// delivered as notes (`store::home::spool`).
    pub fn spool_dir(&self) -> PathBuf {
        self.state.join("spool")
    }

    /// Folder of the index, journal, locks and prefs of one channel.
    pub fn state_dir(&self, channel_id: &str) -> PathBuf {
        self.state.join("state").join(channel_id)
    }

    /// Loads a signing key, `None` if absent. A role key still in the
    /// layout of earlier versions (`keys/<channel>/<role>.key`, beside the
    /// owner key) is moved to its own folder first.
    pub fn load_key(&self, channel_id: &str, name: KeyName<'_>) -> StoreResult<Option<SigningKey>> {
        let path = name.path(&self.keys_dir(channel_id));
        self.migrate_key(channel_id, name, &path)?;
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

    /// Moves a role key of the old layout, where role keys and the owner key
    /// shared one folder (so a role named `owner` took the owner's key
    /// file), to `path`. A key named like the owner's is never moved: it is
    /// the owner's.
    fn migrate_key(&self, channel_id: &str, name: KeyName<'_>, path: &Path) -> StoreResult<()> {
        let Some(old) = name.legacy_path(&self.keys_dir(channel_id)) else {
            return Ok(());
        };
        if path.exists() || !old.exists() {
            return Ok(());
        }
        let dir = path.parent().expect("a key has a folder");
        fs::create_dir_all(dir).at(dir)?;
        match fs::rename(&old, path) {
            Ok(()) => {}
            // Another process moved it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).at(path)?,
        }
        fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
        Ok(())
    }

    /// Creates and stores a new signing key (mode 0600), or returns the one that
    /// already stands: a key is never overwritten.
    pub fn create_key(&self, channel_id: &str, name: KeyName<'_>) -> StoreResult<SigningKey> {
        self.store_key(channel_id, name, &new_signing_key())
    }

    /// Stores `key` (mode 0600) unless a key already stands there; returns
    /// the key that stands.
    pub fn store_key(
        &self,
        channel_id: &str,
        name: KeyName<'_>,
        key: &SigningKey,
    ) -> StoreResult<SigningKey> {
        let path = name.path(&self.keys_dir(channel_id));
        self.migrate_key(channel_id, name, &path)?;
        let dir = path.parent().expect("a key has a folder");
        fs::create_dir_all(dir).at(dir)?;
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

/// Which key of a channel. Role keys live in a folder of their own
/// (`keys/<channel>/roles/`), apart from the owner key
/// (`keys/<channel>/owner.key`), so no role name can ever name the owner's
/// file, whatever names the roster allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyName<'a> {
    /// The channel owner's key.
    Owner,
    /// This device's key of a role.
    Role(&'a Role),
    /// A role's new key, waiting for its `replace_key` record to be durable.
    NextRole(&'a Role),
}

impl KeyName<'_> {
    /// The key file in the channel's keys folder `keys`.
    fn path(self, keys: &Path) -> PathBuf {
        match self {
            Self::Owner => keys.join("owner.key"),
            Self::Role(r) => keys.join("roles").join(format!("{r}.key")),
            Self::NextRole(r) => keys.join("roles").join(format!("{r}.next.key")),
        }
    }

    /// Where earlier versions kept this key, for a role whose name cannot be
    /// mistaken for the owner's key.
    fn legacy_path(self, keys: &Path) -> Option<PathBuf> {
        match self {
            Self::Owner => None,
            Self::Role(r) if r.is_reserved() => None,
            Self::Role(r) => Some(keys.join(format!("{r}.key"))),
            Self::NextRole(r) => Some(keys.join(format!("{r}.next.key"))),
        }
    }
}

impl Home {
    /// Makes the role's waiting next key its key, atomically (a rename over
    /// the old file, so a reader sees the old key or the new one, never
    /// none). The old key is kept beside it as `<role>.replaced-<ms>.key`:
    /// the feed's older records stay verifiable by hand.
    pub fn swap_key(&self, channel_id: &str, role: &Role) -> StoreResult<()> {
        let keys = self.keys_dir(channel_id);
        let path = KeyName::Role(role).path(&keys);
        let next_path = KeyName::NextRole(role).path(&keys);
        self.migrate_key(channel_id, KeyName::Role(role), &path)?;
        self.migrate_key(channel_id, KeyName::NextRole(role), &next_path)?;
        let dir = path.parent().expect("a key has a folder").to_path_buf();
        if path.exists() {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let backup = dir.join(format!("{role}.replaced-{ms}.key"));
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
        let alpha = Role::new("alpha").unwrap();
        assert!(home.load_key("c", KeyName::Role(&alpha)).unwrap().is_none());
        let k = home.create_key("c", KeyName::Role(&alpha)).unwrap();
        let path = home.keys_dir("c").join("roles/alpha.key");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            home.load_key("c", KeyName::Role(&alpha))
                .unwrap()
                .unwrap()
                .to_bytes(),
            k.to_bytes()
        );
    }

    #[test]
    fn role_keys_never_share_a_path_with_the_owner_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().to_path_buf());
        let owner = home.create_key("c", KeyName::Owner).unwrap();
        // A role of that name (refused for new channels, possible in old
        // ones) gets a key of its own, never the owner's.
        let named_owner = Role::new("owner").unwrap();
        let role = home.create_key("c", KeyName::Role(&named_owner)).unwrap();
        assert_ne!(owner.to_bytes(), role.to_bytes());
        assert_eq!(
            home.load_key("c", KeyName::Owner)
                .unwrap()
                .unwrap()
                .to_bytes(),
            owner.to_bytes()
        );
    }

    #[test]
    fn role_keys_of_the_old_layout_are_moved_on_first_use() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().to_path_buf());
        let keys = home.keys_dir("c");
        fs::create_dir_all(&keys).unwrap();
        let seed = [7u8; 32];
        fs::write(keys.join("alpha.key"), format!("{}\n", hex::encode(seed))).unwrap();
        fs::write(
            keys.join("owner.key"),
            format!("{}\n", hex::encode([9u8; 32])),
        )
        .unwrap();
        let alpha = Role::new("alpha").unwrap();
        let k = home.load_key("c", KeyName::Role(&alpha)).unwrap().unwrap();
        assert_eq!(k.to_bytes(), seed);
        assert!(!keys.join("alpha.key").exists());
        assert!(keys.join("roles/alpha.key").exists());
        // The owner key stays where it is, and is not taken for a role's.
        let owner = Role::new("owner").unwrap();
        assert!(home.load_key("c", KeyName::Role(&owner)).unwrap().is_none());
        assert!(keys.join("owner.key").exists());
    }
}
