//! The shared channel folder as files: its layout, the survey of its feed
//! folders and segments, the signed heads, the watcher that wakes waiting
//! sessions, the tripwire that spares the change check's `stat` calls, the
//! kept listing, and backup archives of it. Every read goes
//! through `store::folder_file`, the one bounded, no-symlink way to open a
//! file of the folder (it sits beside this module, since the home and the
//! writer use it too).
//!
//! Owns how the folder is found and read; it never appends a record (that
//! is `writer`) and never decides what a record means (that is `ingest`).

pub mod archive;
pub mod heads;
pub mod layout;
pub mod listing;
pub mod segments;
pub mod survey;
pub mod tripwire;
pub mod watcher;
