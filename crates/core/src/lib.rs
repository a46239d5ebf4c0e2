//! The pure heart of countersign: ids, the record format and its signatures,
//! the chain and order rules, the fold that derives message state, and how
//! text written by peers is shown.
//!
//! Nothing here touches files, SQLite, tokio or the wall clock; callers pass
//! bytes and times in. Every other layer depends on this one, never the reverse.

pub mod api_pause;
pub mod api_presence;
pub mod backfill;
pub mod bm25;
pub mod chain;
pub mod consent;
pub mod genesis;
pub mod hlc;
pub mod ids;
pub mod invitation;
pub mod memory;
pub mod message;
pub mod message_fold;
pub mod op;
pub mod peer_text;
pub mod proof;
pub mod query;
pub mod record;
pub mod remote_target;
pub mod rules;
pub mod sealed_key;
pub mod signature;
pub mod signed_file;
pub mod snippet;
pub mod strict_json;
pub mod timestamp;
pub mod trigram;
pub mod upload;
pub mod vocab;
