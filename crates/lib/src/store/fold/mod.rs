//! Read models folded from the index's records: one message, consent,
//! uploads, invitations, and the body a message shows.
//!
//! Owns loading records back out of the index and running `core`'s folds
//! over them; it decides no rule (that is `core`) and reads no file of the
//! folder (that is `ingest`).

pub mod body;
pub mod consent;
pub mod invitation;
pub mod message;
pub mod records;
pub mod upload;
