//! Advisory file locks (the standard library's `File::lock`), held until dropped.
//!
//! Locks only order processes on this machine; across machines nothing is
//! locked, which is why every file in the shared folder has a single writer.

use std::fs::{self, File, OpenOptions};
use std::path::Path;

use crate::store::error::{IoContext as _, StoreResult};

/// An exclusive lock on a lock file; released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Waits for and takes the exclusive lock on `path` (created if missing).
    /// The lock file is never deleted: every process must lock the same inode.
    pub fn exclusive(path: &Path) -> StoreResult<Self> {
        let file = open(path)?;
        file.lock().at(path)?;
        Ok(Self { _file: file })
    }

    /// Takes the exclusive lock on `path` if nobody holds it; `None` when
    /// another process (or another handle in this one) does.
    pub fn try_exclusive(path: &Path) -> StoreResult<Option<Self>> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e).at(path)?,
        }
    }
}

/// Opens (creating if missing) a lock file; its folder is made only when the
/// file cannot be opened for lack of it, so a lock taken on every write costs
/// no `mkdir`.
fn open(path: &Path) -> StoreResult<File> {
    let options = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
    };
    match options() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).at(parent)?;
            }
            Ok(options().at(path)?)
        }
        other => Ok(other.at(path)?),
    }
}
