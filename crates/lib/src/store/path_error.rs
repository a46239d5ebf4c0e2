//! An I/O error with the path it happened on, and the one way to attach it.
//!
//! Owns [`PathError`] and [`IoContext::at`]; every module of the store that
//! touches the file system names its path through them. It sits apart from
//! `store::error` so that the folder's own error (`folder_file`), which
//! `StoreError` wraps, can carry one without importing `StoreError`'s module.

use std::io;
use std::path::{Path, PathBuf};

/// An I/O error with the path it happened on.
#[derive(Debug, thiserror::Error)]
#[error("cannot access {}: {source}", path.display())]
pub struct PathError {
    /// The file or folder.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

/// Attaches a path to an `io::Result`.
pub trait IoContext<T> {
    /// Turns the error into a [`PathError`] naming `path`.
    fn at(self, path: impl AsRef<Path>) -> Result<T, PathError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: impl AsRef<Path>) -> Result<T, PathError> {
        self.map_err(|source| PathError {
            path: path.as_ref().to_path_buf(),
            source,
        })
    }
}
