//! Everything on disk: the channel folder and its feeds, this device's home
//! and keys, the SQLite index and the ingest that fills it, and the read
//! model of messages folded from it.
//!
//! Depends on `core` only. It decides how bytes are stored and found, never
//! what an operation means or whether a tool may perform it (that is `app`).

pub mod access;
pub mod api_key;
pub mod archive;
pub mod backup;
pub mod binding;
pub mod body;
pub mod channel;
pub mod channel_dir;
pub mod clock;
pub mod consent;
pub mod error;
pub mod feed;
pub mod folder_file;
pub mod fts_layout;
pub mod heads;
pub mod heartbeat;
pub mod home;
pub mod index;
pub mod ingest;
pub mod invitation;
pub mod leases;
pub mod listing;
pub mod lock;
pub mod message;
mod path_error;
pub mod prefs;
pub mod private_file;
pub mod records;
pub mod spool;
pub mod state_file;
pub mod sync_outcome;
pub mod upload;
pub mod watcher;

pub use channel::{Channel, Writer};
pub use channel_dir::ChannelDir;
pub use error::{StoreError, StoreResult};
pub use home::Home;
pub use index::Index;
