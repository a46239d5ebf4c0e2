//! Errors of the store layer. Every I/O error names its path; each variant
//! names what failed (the file, the feed, the argument), never how a caller
//! should show it: whether it is a refusal or a fault is decided in one place
//! above, `From<StoreError> for app::AppError`.

use std::path::{Path, PathBuf};

pub use crate::store::path_error::{IoContext, PathError};

use crate::core::ids::FeedId;
use crate::store::folder_file::FolderError;

/// What can go wrong below the app layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// File system trouble, with its path.
    #[error(transparent)]
    Io(#[from] PathError),
    /// A file of the channel folder is not what it must be, or too large.
    #[error(transparent)]
    Folder(#[from] FolderError),
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
    /// An argument the caller passed is unusable; `reason` says what it
    /// must be and names the value.
    #[error("'{field}' {reason}")]
    InvalidArgument {
        /// The argument, as the caller names it.
        field: &'static str,
        /// What is wrong and the way out.
        reason: String,
    },
    /// A local file (a project binding, an install backup, the device file,
    /// a journal) does not hold what it must.
    #[error("{}: {reason}", path.display())]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and the way out.
        reason: String,
    },
    /// A local file that must be read cannot be (refused or unreadable).
    #[error("cannot read {}: {source}; {fix}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: FolderError,
        /// The way out, one sentence.
        fix: &'static str,
    },
    /// A journal could not be cut back after publishing its new records
    /// failed (`failed`): they stay in it and the feed's next write publishes
    /// them.
    #[error(
        "{failed}; and the journal {} could not be cut back ({source}): record(s) {} will be \
         published by this feed's next write, do not write them again",
        path.display(),
        records.join(", ")
    )]
    Journal {
        /// The journal.
        path: PathBuf,
        /// Why the cut failed.
        #[source]
        source: std::io::Error,
        /// What failed first, publishing.
        failed: Box<StoreError>,
        /// The short ids of the records left in the journal.
        records: Vec<String>,
    },
    /// The channel folder cannot be watched for changes.
    #[error("cannot watch {} for changes: {source}", path.display())]
    Watch {
        /// The folder.
        path: PathBuf,
        /// The watcher's error.
        #[source]
        source: notify::Error,
    },
    /// No channel folder was named and none was found walking up from the
    /// working directory.
    #[error(
        "no channel found: pass --channel DIR, set COUNTERSIGN_CHANNEL, or run from inside a \
         project holding a {folder}/ folder (create one with `countersign init`) or a {binding} \
         (`countersign install` writes one); searched upwards from {}",
        searched_from.display()
    )]
    NoChannel {
        /// The working directory the search started from.
        searched_from: PathBuf,
        /// The name of the channel folder looked for.
        folder: &'static str,
        /// The name of the project binding looked for.
        binding: &'static str,
    },
    /// The folder named as the channel holds no `channel.json`.
    #[error(
        "{} is not a countersign channel (no channel.json) — create one with `countersign init`",
        path.display()
    )]
    NotAChannel {
        /// The folder.
        path: PathBuf,
    },
    /// Neither the environment nor the system names a home folder.
    #[error("cannot find a home folder: set COUNTERSIGN_HOME or HOME")]
    NoHome,
    /// A project binding is tracked by git: it came with a checkout, and is
    /// someone else's choice of role and channel.
    #[error(
        "the project binding {} is committed to git: a binding is personal (it picks the role \
         and channel of whoever works here), so one that comes with a checkout is not used. \
         Remove it from git (`git rm --cached {}`) and run `countersign install` again",
        path.display(),
        path.file_name().unwrap_or_default().to_string_lossy()
    )]
    TrackedBinding {
        /// The binding file.
        path: PathBuf,
    },
    /// A channel would be created in a folder that is not free.
    #[error("{}{}", path.display(), holds.phrase())]
    ChannelExists {
        /// The folder.
        path: PathBuf,
        /// What is already there.
        holds: Occupant,
    },
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
    /// A feed this device would begin is not admitted, and this device does
    /// not hold the owner key that would admit it.
    #[error(
        "feed {feed} is not admitted by the channel owner, and this device does not hold the \
         owner key that would admit it"
    )]
    NotAdmitted {
        /// The feed.
        feed: FeedId,
    },
    /// The published feed was written by someone else (a second copy of this home).
    #[error(
        "feed {feed} holds records this device did not write (published seq {published}, \
         journal seq {journal}): two copies of one countersign home are writing the same feed. \
         Stop the other copy; never copy a home to another machine"
    )]
    ForeignWriter {
        /// The feed.
        feed: FeedId,
        /// The last seq of the published feed.
        published: u64,
        /// The last seq of this device's journal of it.
        journal: u64,
    },
    /// The linked SQLite's FTS5 does not store or compute what search reads
    /// of it the way search reads it (see `store::index::fts_layout`).
    #[error(
        "SQLite {sqlite}, linked into this build, keeps its full-text index otherwise than \
         countersign's search reads it (written against SQLite {checked}): {what}. Searches would \
         rank and cut snippets wrongly, so the index is not opened. Install countersign with \
         `cargo install --locked` (Cargo.lock pins the SQLite it was checked with), or port \
         core::bm25, core::snippet and store::index::fts_layout to this SQLite."
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

/// What stands in a folder where a channel would be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occupant {
    /// A channel (`channel.json`).
    Channel,
    /// Other files.
    Files,
}

impl Occupant {
    fn phrase(self) -> &'static str {
        match self {
            Occupant::Channel => " already holds a channel; nothing was changed",
            Occupant::Files => {
                " is not empty; a channel needs a folder of its own. Nothing was changed"
            }
        }
    }
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
