//! Everything on disk: the channel folder and its feeds, this device's home
//! and keys, the SQLite index and the ingest that fills it, and the read
//! model of messages folded from it.
//!
//! Depends on `core` only. It decides how bytes are stored and found, never
//! what an operation means or whether a tool may perform it (that is `app`).

pub mod channel;
pub mod clock;
pub mod error;
pub mod fold;
pub mod folder;
pub mod folder_file;
pub mod home;
pub mod hosting;
pub mod index;
pub mod ingest;
mod path_error;
pub mod writer;

pub use channel::{Channel, Writer};
pub use error::{StoreError, StoreResult};
pub use folder::layout::ChannelDir;
pub use home::Home;
pub use index::Index;
