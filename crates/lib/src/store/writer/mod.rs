//! Appending this device's records: the journal that makes a write
//! durable (its fsync is the only one a write waits for, run on the
//! [`syncer`] thread while the writer folds the record), the feed writer
//! that publishes it to the shared folder, bulk appends, the recovery of a
//! feed after the machine stopped, and compressing sealed segments.
//!
//! Owns the order of a write (journal first, then the folder) and the
//! repair of a feed from its journal; it never reads other devices' feeds
//! (that is `folder` and `ingest`).

mod batch;
pub mod feed;
mod journal;
pub mod recovery;
pub mod seal;
mod syncer;
pub(in crate::store) mod tail;
