//! Use cases shared by the MCP server and the CLI: one function per tool.
//!
//! Each function validates its input in the protocol's order, reads or writes
//! through `store`, and returns the tool's result as a typed value
//! (`Serialize` for the wire, `JsonSchema` for the tool's declared output
//! schema): its field names and order are the protocol's. Refusals are
//! [`AppError::Value`] or [`AppError::Permission`] and write nothing. This
//! layer knows nothing of MCP, clap or terminals.

pub mod admission;
pub mod announcement;
pub mod attention;
pub mod backfill;
pub mod backlog;
pub mod board;
pub mod body;
pub mod budget;
pub mod compaction;
pub mod compaction_api;
pub mod delete;
pub mod hosting;
pub mod identity;
pub mod import;
pub mod inbox;
pub mod info;
pub mod init;
pub mod invitation;
pub mod key_rotation;
pub mod key_share;
pub mod lifecycle;
pub mod listing;
pub mod loopback;
pub mod membership;
pub mod memory;
pub mod memory_request;
pub mod note;
pub mod obligations;
pub mod pin;
pub mod presence;
pub mod recording;
pub mod refusal;
pub mod request;
pub mod retirement;
pub mod revise;
pub mod rows;
pub mod search;
pub mod send;
pub mod session;
pub mod status;
pub mod sync;
pub mod thread;
pub mod timeline;
pub mod upload;
pub mod vote;
pub mod wait;

pub use refusal::{AppError, AppResult};
pub use session::Session;
