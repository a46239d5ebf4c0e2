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
    /// A stored value of a local database does not decode: the file was
    /// damaged (or written by something else).
    #[error("database {}: {source}. {fix}", path.display())]
    CorruptColumn {
        /// The database file.
        path: PathBuf,
        /// Which table, column and row, and why (boxed: every store result
        /// carries this enum, and the variant is rare).
        #[source]
        source: Box<CorruptColumn>,
        /// The way out, one sentence.
        fix: &'static str,
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

/// The way out of a damaged index: it is a cache of the feeds.
const REINDEX: &str = "The index is a cache of the feeds: run `countersign reindex` to rebuild it";

/// Result alias of the store layer.
pub type StoreResult<T> = Result<T, StoreError>;

/// Attaches the database path to rusqlite errors.
pub trait SqlContext<T> {
    /// Turns the error into [`StoreError::Sqlite`] naming `path`.
    fn db(self, path: &Path) -> StoreResult<T>;
}

impl<T> SqlContext<T> for rusqlite::Result<T> {
    fn db(self, path: &Path) -> StoreResult<T> {
        self.map_err(|source| {
            let path = path.to_path_buf();
            match source {
                // A row mapper's decode failure names its column: keep it typed.
                rusqlite::Error::FromSqlConversionFailure(i, t, e) => {
                    match e.downcast::<CorruptColumn>() {
                        Ok(c) => StoreError::CorruptColumn {
                            path,
                            source: c,
                            fix: REINDEX,
                        },
                        Err(e) => StoreError::Sqlite {
                            path,
                            source: rusqlite::Error::FromSqlConversionFailure(i, t, e),
                        },
                    }
                }
                source => StoreError::Sqlite { path, source },
            }
        })
    }
}

/// A stored value that does not decode as its column's type: the index file
/// was damaged (or written by something else), and reading on would answer
/// from a default instead of the feeds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {table}.{column} of row {row} does not decode: {reason}")]
pub struct CorruptColumn {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// The row's key (a full id, a name).
    pub row: String,
    /// What is wrong with the value.
    pub reason: String,
}
