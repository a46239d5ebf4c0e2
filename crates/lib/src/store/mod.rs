//! Everything on disk: the channel folder and its feeds, this device's home
//! and keys, the SQLite index and the ingest that fills it, and the read
//! model of messages folded from it.
//!
//! Depends on `core` only. It decides how bytes are stored and found, never
//! what an operation means or whether a tool may perform it (that is `app`).
//!
//! One folder per concern: `channel` (open, catch up, append), `ingest`
//! (every feed into the index), `writer` (this device's appends), `folder`
//! (reading the shared folder), `home` (this device's own files), `index`
//! (SQLite), `fold` (read models from the index) and `hosting` (`serve`'s
//! own databases). They are private to this crate: what the transports,
//! the bench and the tests may use is re-exported below.

pub(crate) mod channel;
pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod fold;
pub(crate) mod folder;
pub mod folder_file;
pub(crate) mod home;
pub(crate) mod hosting;
pub(crate) mod index;
pub(crate) mod ingest;
mod path_error;
pub(crate) mod writer;

// The surface the transports, the bench and the tests use; everything else
// in the store is private to this crate.
pub use channel::heartbeat::KEEP_ALIVE;
pub use channel::recovery::RECOVERED_BOOT;
pub use channel::{BulkFeed, Channel, Writer, now_ms};
pub use error::{IoContext, PathError, StoreError, StoreResult};
pub use fold::message::load_message;
pub use folder::layout::{ChannelDir, DEFAULT_DIR};
pub use folder::watcher::Watcher;
pub use folder::{archive, listing, segments, survey};
pub use home::lock::FileLock;
pub use home::prefs::Remote;
pub use home::{Home, KeyName, api_key, backup, binding, spool};
pub use hosting::access;
pub use index::{Index, MemoryItem, ProblemKind, RecordLine};
pub use ingest::{Ingest, IngestReport, ScanCache};
pub use writer::seal::gzip_sealed_segments;
