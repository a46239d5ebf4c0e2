//! Errors of the store layer. Every I/O error names its path.

use std::path::{Path, PathBuf};

pub use super::path_error::{IoContext, PathError};

/// What can go wrong below the app layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// File system trouble, with its path.
    #[error(transparent)]
    Io(#[from] PathError),
    /// A file of the channel folder is not what it must be, or too large.
    #[error(transparent)]
    Folder(#[from] super::folder_file::FolderError),
    /// The index database.
    #[error("index database {}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// No channel folder could be found or it is not one.
    #[error("{0}")]
    NoChannel(String),
    /// A channel already exists where one would be created.
    #[error("{0}")]
    ChannelExists(String),
    /// The channel definition is invalid.
    #[error("{} is not a valid channel definition: {reason}", path.display())]
    BadGenesis {
        /// channel.json.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A key file is unusable.
    #[error("key file {}: {reason}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// This device may not write the role's feed (yet).
    #[error("{0}")]
    NotAdmitted(String),
    /// The published feed was written by someone else (a second copy of this home).
    #[error("{0}")]
    ForeignWriter(String),
    /// The linked SQLite's FTS5 does not store or compute what search reads
    /// of it the way search reads it (see `store::fts_layout`).
    #[error(
        "SQLite {sqlite}, linked into this build, keeps its full-text index otherwise than \
         countersign's search reads it (written against SQLite {checked}): {what}. Searches would \
         rank and cut snippets wrongly, so the index is not opened. Install countersign with \
         `cargo install --locked` (Cargo.lock pins the SQLite it was checked with), or port \
         core::bm25, core::snippet and store::fts_layout to this SQLite."
    )]
    FtsLayout {
        /// The linked SQLite's version.
        sqlite: String,
        /// The SQLite release the search code follows.
        checked: &'static str,
        /// What differs.
        what: String,
    },
}

/// Result alias of the store layer.
pub type StoreResult<T> = Result<T, StoreError>;

/// Attaches the database path to rusqlite errors.
pub trait SqlContext<T> {
    /// Turns the error into [`StoreError::Sqlite`] naming `path`.
    fn db(self, path: &Path) -> StoreResult<T>;
}

impl<T> SqlContext<T> for rusqlite::Result<T> {
    fn db(self, path: &Path) -> StoreResult<T> {
        self.map_err(|source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        })
    }
}
