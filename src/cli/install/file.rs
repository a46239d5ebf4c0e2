//! Reading and writing the files `install` edits: a missing file reads as
//! `None`, and a write is atomic and keeps an existing file's permissions.
//! It must not decide what goes in them.

use std::fs;
use std::path::Path;

use anyhow::Context as _;

/// Writes `text` to `path` atomically, keeping an existing file's permissions.
pub(super) fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let ctx = || format!("cannot write {}", path.display());
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).with_context(ctx)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent).with_context(ctx)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).with_context(ctx)?;
    let perms = match fs::metadata(path) {
        Ok(m) => m.permissions(),
        Err(_) => default_permissions(),
    };
    fs::set_permissions(tmp.path(), perms).with_context(ctx)?;
    tmp.persist(path).map_err(|e| e.error).with_context(ctx)?;
    Ok(())
}

#[cfg(unix)]
pub(super) fn default_permissions() -> fs::Permissions {
    use std::os::unix::fs::PermissionsExt as _;
    fs::Permissions::from_mode(0o644)
}

#[cfg(not(unix))]
pub(super) fn default_permissions() -> fs::Permissions {
    fs::metadata(".")
        .map(|m| m.permissions())
        .expect("the working directory exists")
}

pub(super) fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}
