//! countersign's library below the transports: the store, sync and the use
//! cases every transport shares.
//!
//! Arrows point down only: [`app`] → [`store`] → [`core`], with [`sync`]
//! beside `store`. The transports (`mcp`, `http`, `cli`) live in the
//! `countersign` crate above this one and cannot be imported from here.
//! - [`core`]: `countersign-core`, re-exported so paths read the same in every crate.
//! - [`store`]: feeds on disk, keys, the SQLite index and ingest.
//! - [`sync`]: moving the folder between machines (git, rclone).
//! - [`app`]: the use cases shared by the MCP server, the HTTP server and the CLI.

pub use countersign_core as core;

pub mod app;
pub mod store;
pub mod sync;
