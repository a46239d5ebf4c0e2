//! Install records: each file outside the channel that `countersign install`
//! changed, whether install created it and how the last change left it,
//! kept in one folder of the home (`<state>/install/`), never beside the
//! file in the project tree.
//!
//! No copy of a file as it was before install is kept: files other programs
//! also write (`~/.claude.json`, Codex's config) are never restored from a
//! copy, since a copy is stale as soon as the other program writes. The
//! record says whether a file that holds nothing more after uninstall goes
//! (install created it) or stays. This module only stores and finds the
//! records; what they mean to a client is the command line's business.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::store::error::{IoContext as _, StoreError, StoreResult};
use crate::store::home::Home;
use crate::store::home::private_file;

/// One file's record.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(from = "Record")]
pub struct Saved {
    /// The file (absolute).
    pub path: PathBuf,
    /// True when there was no such file before countersign first wrote it.
    pub created: bool,
    /// Its content as countersign last left it (`None`: removed).
    pub after: Option<String>,
    /// The clients installed through this file (for a project binding:
    /// `claude`, `codex`), so a shared entry stays while another uses it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// A record as stored, also as earlier versions stored it: they kept the
/// whole file as it was before (`before`, `null` for no file) instead of
/// `created`.
#[derive(Deserialize)]
struct Record {
    path: PathBuf,
    #[serde(default)]
    created: Option<bool>,
    #[serde(default = "absent")]
    before: serde_json::Value,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    tools: Vec<String>,
}

/// What a record without `before` reads as: not `null`, so not created.
fn absent() -> serde_json::Value {
    serde_json::Value::Bool(false)
}

impl From<Record> for Saved {
    fn from(r: Record) -> Self {
        Self {
            path: r.path,
            created: r.created.unwrap_or(r.before.is_null()),
            after: r.after,
            tools: r.tools,
        }
    }
}

/// The backup folder of a home.
#[derive(Clone, Debug)]
pub struct Backups {
    dir: PathBuf,
}

/// The most a saved record may hold (the files are configuration files).
const MAX_BYTES: u64 = 64 * 1024 * 1024;

impl Backups {
    /// The backups of `home`.
    pub fn of(home: &Home) -> Self {
        Self {
            dir: home.install_dir(),
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the record of `path` is kept.
    pub fn record_path(&self, path: &Path) -> PathBuf {
        let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
        self.dir
            .join(format!("{}.json", hex::encode(&digest[..12])))
    }

    /// The saved states of `path`, `None` if install never changed it.
    pub fn get(&self, path: &Path) -> StoreResult<Option<Saved>> {
        let rec = self.record_path(path);
        let saved = match read_record(&rec)? {
            Some(s) if s.path == path => Some(s),
            _ => None,
        };
        Ok(saved)
    }

    /// Stores `saved` (atomically, mode 0600: it may hold private settings).
    pub fn put(&self, saved: &Saved) -> StoreResult<PathBuf> {
        let rec = self.record_path(&saved.path);
        let bytes = serde_json::to_vec_pretty(saved).expect("a record serializes");
        private_file::replace(&rec, &bytes)?;
        Ok(rec)
    }

    /// Stores `saved`, or drops the record of `path` (`None`).
    pub fn set(&self, path: &Path, saved: Option<&Saved>) -> StoreResult<()> {
        match saved {
            Some(s) => self.put(s).map(drop),
            None => self.forget(path),
        }
    }

    /// Drops the record of `path` (the file is gone).
    pub fn forget(&self, path: &Path) -> StoreResult<()> {
        let rec = self.record_path(path);
        match fs::remove_file(&rec) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).at(&rec)?,
        }
    }

    /// Every record, in no particular order.
    pub fn all(&self) -> StoreResult<Vec<Saved>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).at(&self.dir)?,
        };
        let mut out = Vec::new();
        for entry in entries {
            let path = entry.at(&self.dir)?.path();
            if path.extension().is_some_and(|x| x == "json")
                && let Some(s) = read_record(&path)?
            {
                out.push(s);
            }
        }
        Ok(out)
    }
}

fn read_record(rec: &Path) -> StoreResult<Option<Saved>> {
    let bytes = match crate::store::folder_file::read(rec, MAX_BYTES) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(source) => {
            return Err(StoreError::Unreadable {
                path: rec.to_path_buf(),
                source,
                fix: "it is an install backup: move it away to go on",
            });
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::CorruptFile {
            path: rec.to_path_buf(),
            reason: format!("not valid as an install backup ({e}); move it away to go on"),
        })
}
