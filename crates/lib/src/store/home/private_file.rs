//! A file of this home that only its user may read (mode 0600), replaced
//! whole or not at all: the API key, the install records.
//!
//! Owns the write: a temporary file of this writer's own, made private
//! before a byte is written, synced, then renamed over the old file, so a
//! reader never sees a half-written or briefly world-readable file. What
//! the file holds is its caller's.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use crate::store::error::{IoContext as _, StoreResult};

/// Replaces `path` with `bytes`, creating its folder if need be.
pub fn replace(path: &Path, bytes: &[u8]) -> StoreResult<()> {
    let dir = path.parent().expect("a private file has a folder");
    fs::create_dir_all(dir).at(dir)?;
    let mut rnd = [0u8; 8];
    getrandom::fill(&mut rnd).expect("the OS random source works");
    let tmp = path.with_extension(format!("tmp-{}", hex::encode(rnd)));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .at(&tmp)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    drop(f);
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e).at(&tmp)?;
    }
    fs::rename(&tmp, path).at(path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn the_file_is_replaced_whole_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub/secret");
        replace(&path, b"one").unwrap();
        replace(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // No temporary file is left beside it.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }
}
